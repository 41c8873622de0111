build/obj/vmm/cli.o: vmm/cli.c vmm/cli.h vmm/config.h vmm/parse.h \
 vmm/workloads.h
vmm/cli.h:
vmm/config.h:
vmm/parse.h:
vmm/workloads.h:
