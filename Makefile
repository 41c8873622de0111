# vmm — top-level build. `make run` boots the bundled guest, `make test` runs
# every test; both install missing Debian packages first (see `deps`).

CC       ?= gcc
BUILD    ?= build
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -I. -MMD -MP
LDLIBS   += -lfdt -lseccomp -luring -lpthread -lm
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

HOST_DIRS := vmm vcpu sched hypercalls devices
HOST_SRCS := $(filter-out vmm/main.c,$(foreach d,$(HOST_DIRS),$(wildcard $(d)/*.c)))
HOST_OBJS := $(HOST_SRCS:%.c=$(BUILD)/obj/%.o)
FW_BLOB_OBJ := $(BUILD)/obj/vmm/firmware_blob.o

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)

VMM := $(BUILD)/vmm

.PHONY: all deps run test test-unit test-integration sanitize clean
all: deps $(VMM) test-guests

# Debian packages this project needs: the libraries it links, and the tools
# the tests use. Installed with apt-get when missing (we run as root), or one
# line naming the command.
DEB_PKGS := libfdt-dev libseccomp-dev liburing-dev python3 gnuplot-nox
deps:
	@./tests/deps.sh $(DEB_PKGS)

include firmware/firmware.mk
include tests/guests/guests.mk

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(FW_BLOB_OBJ): vmm/firmware_blob.S $(FW_ELF)
	@mkdir -p $(dir $@)
	$(CC) -c -DFW_PATH='"$(FW_ELF)"' -o $@ $<

$(VMM): $(BUILD)/obj/vmm/main.o $(HOST_OBJS) $(FW_BLOB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(HOST_OBJS) $(FW_BLOB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

run: all
	$(VMM) run

test: all $(UNIT_BINS)
	@python3 tests/run_all.py --build $(BUILD)

# The whole suite again, built with ASan+UBSan in its own build folder.
sanitize: deps
	$(MAKE) BUILD=build-san CFLAGS="-O1 -g $(SAN_FLAGS)" test

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
