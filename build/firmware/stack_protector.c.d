build/firmware/stack_protector.c.o: firmware/stack_protector.c \
 firmware/console.h firmware/fw.h firmware/hypercall.h hypercalls/abi.h
firmware/console.h:
firmware/fw.h:
firmware/hypercall.h:
hypercalls/abi.h:
