build/obj/devices/uart8250.o: devices/uart8250.c devices/uart8250.h
devices/uart8250.h:
