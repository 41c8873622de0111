build/firmware/libc.c.o: firmware/libc.c
