build/firmware/entry.S.o: firmware/entry.S firmware/fw.h
firmware/fw.h:
