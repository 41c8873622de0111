build/obj/sched/policy_none.o: sched/policy_none.c sched/policy.h \
 sched/core.h sched/types.h sched/hist.h
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
