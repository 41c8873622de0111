build/firmware/lock_ticket.c.o: firmware/lock_ticket.c firmware/lock.h \
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
