# Test guests, written from hypercalls/ABI.md alone. Included by the top-level
# Makefile. Built with their own flags: never the host CFLAGS, which may carry
# sanitizer options.

TG_SRC := tests/guests
TG_OUT := $(BUILD)/tests/guests
TG_CC  ?= gcc
# guest.ld: code segment + data segment (abi_guest); guest_text.ld: code only.
TG_LDS_abi_guest       := $(TG_SRC)/guest.ld
TG_LDS_exit_port_guest := $(TG_SRC)/guest_text.ld
TG_LDS_fault_guest     := $(TG_SRC)/guest_text.ld
TG_LDS_spin_guest      := $(TG_SRC)/guest_text.ld
TG_LDS_deadlock_guest  := $(TG_SRC)/guest_text.ld
TG_LDS_pingpong_guest  := $(TG_SRC)/guest.ld
TG_LDS_hcfuzz_guest    := $(TG_SRC)/guest.ld
TG_LDS_steal_guest     := $(TG_SRC)/guest.ld
TG_LDS_trap_guest      := $(TG_SRC)/guest.ld
TG_LDS_conformance_guest := $(TG_SRC)/guest.ld
TG_LDS_v2layout_guest  := $(TG_SRC)/guest.ld

TG_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-builtin -fno-pic -fno-pie \
	-fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-fcf-protection=none -mno-red-zone -mgeneral-regs-only -m64 \
	-Wall -Wextra -Werror -MMD -MP
TG_ASFLAGS := -g -m64 -MMD -MP
TG_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none \
	-Wl,-z,max-page-size=4096 -Wl,-z,noexecstack

TG_GUESTS := abi_guest exit_port_guest fault_guest spin_guest deadlock_guest pingpong_guest hcfuzz_guest \
	steal_guest trap_guest conformance_guest v2layout_guest
TEST_GUEST_ELFS := $(TG_GUESTS:%=$(TG_OUT)/%.elf)

TG_OBJS_abi_guest       := $(TG_OUT)/abi_entry.o $(TG_OUT)/abi_guest.o
TG_OBJS_exit_port_guest := $(TG_OUT)/exit_port_guest.o
TG_OBJS_fault_guest     := $(TG_OUT)/fault_guest.o
TG_OBJS_spin_guest      := $(TG_OUT)/spin_guest.o
TG_OBJS_deadlock_guest  := $(TG_OUT)/deadlock_guest.o
TG_OBJS_pingpong_guest  := $(TG_OUT)/abi_entry.o $(TG_OUT)/pingpong_guest.o
TG_OBJS_hcfuzz_guest    := $(TG_OUT)/abi_entry.o $(TG_OUT)/hcfuzz_guest.o
TG_OBJS_steal_guest     := $(TG_OUT)/steal_guest.o
TG_OBJS_trap_guest      := $(TG_OUT)/trap_guest.o
TG_OBJS_conformance_guest := $(TG_OUT)/abi_entry.o $(TG_OUT)/conformance_guest.o
TG_OBJS_v2layout_guest  := $(TG_OUT)/abi_entry.o $(TG_OUT)/v2layout_guest.o

.PHONY: test-guests
test-guests: $(TEST_GUEST_ELFS)

# Static pattern rules: these win over the top-level `$(BUILD)/%.o: %.c`.
TG_C_OBJS := $(TG_OUT)/abi_guest.o $(TG_OUT)/pingpong_guest.o $(TG_OUT)/hcfuzz_guest.o \
	$(TG_OUT)/conformance_guest.o $(TG_OUT)/v2layout_guest.o
TG_S_OBJS := $(TG_OUT)/abi_entry.o $(TG_OUT)/exit_port_guest.o \
	$(TG_OUT)/fault_guest.o $(TG_OUT)/spin_guest.o $(TG_OUT)/deadlock_guest.o $(TG_OUT)/steal_guest.o \
	$(TG_OUT)/trap_guest.o

$(TG_C_OBJS): $(TG_OUT)/%.o: $(TG_SRC)/%.c $(TG_SRC)/guests.mk | deps
	@mkdir -p $(dir $@)
	$(TG_CC) $(TG_CFLAGS) -c -o $@ $<

$(TG_S_OBJS): $(TG_OUT)/%.o: $(TG_SRC)/%.S $(TG_SRC)/guests.mk | deps
	@mkdir -p $(dir $@)
	$(TG_CC) $(TG_ASFLAGS) -c -o $@ $<

# One link rule per guest (no .SECONDEXPANSION: it would leak into the
# rules of the including Makefile).
define TG_LINK
$(TG_OUT)/$(1).elf: $$(TG_OBJS_$(1)) $$(TG_LDS_$(1)) $(TG_SRC)/guests.mk
	$$(TG_CC) $$(TG_LDFLAGS) -Wl,-T,$$(TG_LDS_$(1)) -o $$@ $$(TG_OBJS_$(1))
endef
$(foreach g,$(TG_GUESTS),$(eval $(call TG_LINK,$(g))))
