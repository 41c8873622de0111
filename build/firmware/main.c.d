build/firmware/main.c.o: firmware/main.c firmware/console.h \
 firmware/dt_config.h firmware/fw.h firmware/hypercall.h hypercalls/abi.h \
 firmware/workload.h firmware/cpu.h
firmware/console.h:
firmware/dt_config.h:
firmware/fw.h:
firmware/hypercall.h:
hypercalls/abi.h:
firmware/workload.h:
firmware/cpu.h:
