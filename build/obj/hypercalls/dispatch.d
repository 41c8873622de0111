build/obj/hypercalls/dispatch.o: hypercalls/dispatch.c \
 hypercalls/hypercalls.h hypercalls/abi.h hypercalls/pv_calls.h
hypercalls/hypercalls.h:
hypercalls/abi.h:
hypercalls/pv_calls.h:
