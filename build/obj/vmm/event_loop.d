build/obj/vmm/event_loop.o: vmm/event_loop.c vmm/event_loop.h
vmm/event_loop.h:
