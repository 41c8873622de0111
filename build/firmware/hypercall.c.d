build/firmware/hypercall.c.o: firmware/hypercall.c firmware/hypercall.h \
 hypercalls/abi.h
firmware/hypercall.h:
hypercalls/abi.h:
