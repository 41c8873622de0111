build/obj/sched/hist.o: sched/hist.c sched/hist.h
sched/hist.h:
