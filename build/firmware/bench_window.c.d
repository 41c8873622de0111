build/firmware/bench_window.c.o: firmware/bench_window.c \
 firmware/bench_window.h firmware/cpu.h firmware/dt_config.h \
 hypercalls/abi.h firmware/tsc.h
firmware/bench_window.h:
firmware/cpu.h:
firmware/dt_config.h:
hypercalls/abi.h:
firmware/tsc.h:
