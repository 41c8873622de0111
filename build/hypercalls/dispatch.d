build/hypercalls/dispatch.o: hypercalls/dispatch.c \
 hypercalls/hypercalls.h hypercalls/abi.h
hypercalls/hypercalls.h:
hypercalls/abi.h:
