build/firmware/lock.c.o: firmware/lock.c firmware/console.h \
 firmware/lock.h firmware/cpu.h firmware/dt_config.h hypercalls/abi.h \
 firmware/pv.h firmware/hypercall.h firmware/spin.h firmware/tsc.h
firmware/console.h:
firmware/lock.h:
firmware/cpu.h:
firmware/dt_config.h:
hypercalls/abi.h:
firmware/pv.h:
firmware/hypercall.h:
firmware/spin.h:
firmware/tsc.h:
