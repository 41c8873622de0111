build/obj/vmm/json_writer.o: vmm/json_writer.c vmm/json_writer.h
vmm/json_writer.h:
