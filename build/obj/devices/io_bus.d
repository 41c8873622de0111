build/obj/devices/io_bus.o: devices/io_bus.c devices/io_bus.h
devices/io_bus.h:
