build/obj/sched/policy_random.o: sched/policy_random.c sched/policy.h \
 sched/core.h sched/types.h sched/hist.h
sched/policy.h:
sched/core.h:
sched/types.h:
sched/hist.h:
