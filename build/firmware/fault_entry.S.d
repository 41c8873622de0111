build/firmware/fault_entry.S.o: firmware/fault_entry.S firmware/fw.h
firmware/fw.h:
