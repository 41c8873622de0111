build/firmware/x86_tables.S.o: firmware/x86_tables.S firmware/fw.h
firmware/fw.h:
