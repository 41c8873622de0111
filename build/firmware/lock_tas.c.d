build/firmware/lock_tas.c.o: firmware/lock_tas.c firmware/lock.h \
 firmware/cpu.h firmware/dt_config.h hypercalls/abi.h firmware/pv.h \
 firmware/hypercall.h firmware/spin.h firmware/tsc.h
firmware/lock.h:
firmware/cpu.h:
firmware/dt_config.h:
hypercalls/abi.h:
firmware/pv.h:
firmware/hypercall.h:
firmware/spin.h:
firmware/tsc.h:
