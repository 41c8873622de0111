build/sched/core.o: sched/core.c sched/core.h sched/types.h sched/hist.h \
 sched/policy.h
sched/core.h:
sched/types.h:
sched/hist.h:
sched/policy.h:
