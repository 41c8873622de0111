build/firmware/lock_ticket.c.o: firmware/lock_ticket.c firmware/lock.h \
 firmware/cpu.h firmware/dt_config.h hypercalls/abi.h firmware/tsc.h
firmware/lock.h:
firmware/cpu.h:
firmware/dt_config.h:
hypercalls/abi.h:
firmware/tsc.h:
