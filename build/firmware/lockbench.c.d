build/firmware/lockbench.c.o: firmware/lockbench.c \
 firmware/bench_window.h firmware/cpu.h firmware/dt_config.h \
 hypercalls/abi.h firmware/console.h firmware/fw.h firmware/hypercall.h \
 firmware/lock.h firmware/pv.h firmware/spin.h firmware/tsc.h \
 firmware/workload.h
firmware/bench_window.h:
firmware/cpu.h:
firmware/dt_config.h:
hypercalls/abi.h:
firmware/console.h:
firmware/fw.h:
firmware/hypercall.h:
firmware/lock.h:
firmware/pv.h:
firmware/spin.h:
firmware/tsc.h:
firmware/workload.h:
