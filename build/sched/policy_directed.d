build/sched/policy_directed.o: sched/policy_directed.c sched/policy.h \
 sched/core.h sched/types.h sched/hist.h
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
