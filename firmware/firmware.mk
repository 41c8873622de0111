# The bundled guest firmware: a freestanding x86-64 ELF linked at 1 MiB,
# embedded into the vmm binary (vmm/boot/firmware_blob.S). Included by the top
# Makefile; uses its own flags, never CFLAGS (sanitizers cannot run here).

FW_ELF    := $(BUILD)/firmware/firmware.elf
FW_SRCS   := $(wildcard firmware/*.c) $(wildcard firmware/*.S)
FW_OBJS   := $(patsubst firmware/%,$(BUILD)/firmware/%.o,$(FW_SRCS))
FW_LDS    := firmware/linker.ld
FW_LIBFDT := /usr/lib/x86_64-linux-gnu/libfdt.a

# -mgeneral-regs-only: code that also runs at CPL0 (fault path, console) may
# be run by the host's instruction emulator, which lacks most SSE. libfdt.a
# (CPL3 only) may still use SSE.
FW_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -I. -MMD -MP \
	-ffreestanding -fno-pie -fno-pic -mcmodel=small -march=x86-64 -mtune=generic \
	-mno-red-zone -mgeneral-regs-only -fno-stack-protector -fcf-protection=none \
	-fno-strict-aliasing -fno-tree-loop-distribute-patterns \
	-fno-asynchronous-unwind-tables -fno-omit-frame-pointer
FW_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,$(FW_LDS) -Wl,--build-id=none \
	-Wl,-z,noexecstack -Wl,-z,max-page-size=4096

$(BUILD)/firmware/%.c.o: firmware/%.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(FW_CFLAGS) -c -o $@ $<

$(BUILD)/firmware/%.S.o: firmware/%.S | deps
	@mkdir -p $(dir $@)
	$(CC) $(FW_CFLAGS) -c -o $@ $<

$(FW_ELF): $(FW_OBJS) $(FW_LDS) firmware/firmware.mk | deps
	$(CC) $(FW_CFLAGS) $(FW_LDFLAGS) -o $@ $(FW_OBJS) $(FW_LIBFDT)
