build/obj/devices/debug_exit.o: devices/debug_exit.c devices/debug_exit.h
devices/debug_exit.h:
