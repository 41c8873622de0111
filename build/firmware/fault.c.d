build/firmware/fault.c.o: firmware/fault.c firmware/console.h \
 firmware/fw.h firmware/hypercall.h hypercalls/abi.h
firmware/console.h:
firmware/fw.h:
firmware/hypercall.h:
hypercalls/abi.h:
