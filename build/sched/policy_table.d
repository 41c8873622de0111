build/sched/policy_table.o: sched/policy_table.c sched/policy.h \
 sched/core.h sched/types.h sched/hist.h
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
