build/sched/policy_gang.o: sched/policy_gang.c sched/policy.h \
 sched/core.h sched/types.h sched/hist.h
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
