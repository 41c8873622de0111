build/firmware/dt_config.c.o: firmware/dt_config.c firmware/console.h \
 firmware/dt_config.h firmware/fw.h firmware/hypercall.h hypercalls/abi.h
firmware/console.h:
firmware/dt_config.h:
firmware/fw.h:
firmware/hypercall.h:
hypercalls/abi.h:
