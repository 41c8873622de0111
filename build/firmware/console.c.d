build/firmware/console.c.o: firmware/console.c firmware/console.h \
 firmware/hypercall.h hypercalls/abi.h
firmware/console.h:
firmware/hypercall.h:
hypercalls/abi.h:
