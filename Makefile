# vmm — top-level build. `make run` boots the bundled guest, `make test` runs
# every test; both install missing Debian packages first (see `deps`).

CC       ?= gcc
BUILD    ?= build
CFLAGS   ?= -O2 -g
# override: `make CFLAGS=...` (the sanitizer builds) keeps these
override CFLAGS += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -I. -MMD -MP
LDLIBS   += -lfdt -lseccomp -luring -ljansson -lpthread -lm
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

HOST_DIRS := vmm vcpu sched hypercalls devices lib
HOST_SRCS := $(filter-out vmm/main.c,$(shell find $(HOST_DIRS) -name '*.c' | sort))
HOST_OBJS := $(HOST_SRCS:%.c=$(BUILD)/obj/%.o)
FW_BLOB_OBJ := $(BUILD)/obj/vmm/firmware_blob.o

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)

VMM := $(BUILD)/vmm

.PHONY: layout all deps run run-nested test test-nested test-unit test-integration sanitize tsan fuzz fuzz-bins build-tests clean bench bench-linux
all: deps $(VMM) test-guests

# Debian packages this project needs: the libraries it links, and the tools
# the tests use. Installed with apt-get when missing (we run as root), or one
# line naming the command. libjansson-dev: JSON reading and the reports (vmm/bench, vmm/report).
# qemu-system-x86: the nested KVM stage (tests/nested/run); it fetches its
# kernel and busybox with apt-get download, nothing else is downloaded.
# rt-tests, sysbench: hackbench and sysbench, copied with their libraries into
# the Linux workload initramfs (tests/linux/mkworkload.py). valgrind, strace:
# the cost guard (tests/cost_guard.py: instructions and system calls counted).
DEB_PKGS := libfdt-dev libseccomp-dev liburing-dev libjansson-dev python3 gnuplot-nox clang libclang-rt-14-dev acpica-tools \
	qemu-system-x86 rt-tests sysbench valgrind strace
deps:
	@./tests/deps.sh $(DEB_PKGS)

include firmware/firmware.mk
include tests/guests/guests.mk
include tests/checks.mk

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(FW_BLOB_OBJ): vmm/boot/firmware_blob.S $(FW_ELF)
	@mkdir -p $(dir $@)
	$(CC) -c -DFW_PATH='"$(FW_ELF)"' -o $@ $<

$(VMM): $(BUILD)/obj/vmm/main.o $(HOST_OBJS) $(FW_BLOB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# $(BUILD)/vmm-test: $(VMM) plus the test hooks (-DVMM_TEST_HOOKS), for the
# integration tests that force a seccomp violation or a lost event-loop
# request (test_faults.py), for test_virtio_blk_faults (the disk ring's
# file swapped for a pipe), for test_blk_reset_bound (the disk's cancel
# made to fail, its drain bound shortened) and for test_domain_link (a domain slot thread
# held between its look at the grants and its offline calls), and for a
# KVM_RUN that fails as a host's would (test_faults.py); the shipped
# $(VMM) has none. Only the files that hold a hook are compiled twice.
HOOK_SRCS := vmm/sandbox/seccomp_filters.c vmm/host/event_loop.c devices/blk_backend_uring.c \
	vmm/domain/member_slots.c vcpu/vcpu.c
HOOK_OBJS := $(HOOK_SRCS:%.c=$(BUILD)/obj-hooks/%.o)
VMM_TEST := $(BUILD)/vmm-test

$(BUILD)/obj-hooks/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DVMM_TEST_HOOKS -c -o $@ $<

$(VMM_TEST): $(BUILD)/obj/vmm/main.o $(filter-out $(HOOK_SRCS:%.c=$(BUILD)/obj/%.o),$(HOST_OBJS)) $(HOOK_OBJS) \
		$(FW_BLOB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(HOST_OBJS) $(FW_BLOB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# The unit tests that set a test hook's variable link the hooked objects.
HOOK_UNITS := $(BUILD)/tests/unit/test_virtio_blk_faults $(BUILD)/tests/unit/test_blk_reset_bound \
	$(BUILD)/tests/unit/test_domain_link
$(HOOK_UNITS): $(BUILD)/tests/unit/%: tests/unit/%.c $(filter-out $(HOOK_SRCS:%.c=$(BUILD)/obj/%.o),$(HOST_OBJS)) \
		$(HOOK_OBJS) $(FW_BLOB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# Where this machine has no usable /dev/kvm, `make run` says so and boots
# the guest on the nested KVM instead (`vmm run` alone names the cause).
run: all
	@if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then $(VMM) run; else \
		echo "make run: no usable /dev/kvm here; running on kvm_amd nested in QEMU (tests/nested/run)" >&2; \
		tests/nested/run -- $(VMM) run; fi

# The bundled guest on mainstream KVM (kvm_amd nested in QEMU's emulator),
# on any machine, /dev/kvm or not: tests/nested/run -- CMD runs any command.
run-nested: all
	tests/nested/run -- $(VMM) run

# The default benchmark matrix (a few minutes on 2 CPUs); see BENCHMARKS.md.
bench: all
	$(VMM) bench --out bench-results

# Linux guests against QEMU+KVM (vmm bench --preset linux): Debian's cloud
# kernel and the workload initramfs, fetched and built into build/linux. On
# a machine without a usable /dev/kvm, in the nested KVM with a small size
# (speeds there mean nothing; it shows the harness works).
LINUX_BENCH_OPTS ?=
bench-linux: all
	@set -e; files=$$(python3 tests/linux/fetch_kernel.py --workload); set -- $$files; \
	if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then \
		$(VMM) bench --preset linux --kernel $$1 --initrd $$2 --out bench-results/linux $(LINUX_BENCH_OPTS); \
	else \
		echo "make bench-linux: no usable /dev/kvm here; running on kvm_amd nested in QEMU (tests/nested/run)" >&2; \
		tests/nested/run -- $(VMM) bench --preset linux --kernel $$1 --initrd $$2 --linux-size 20 --reps 3 \
			--no-micro --out bench-results/linux-nested $(LINUX_BENCH_OPTS); \
	fi

# BENCHMARKS.md's measured tables and its targets summary, printed again
# from the committed bench/results/*.json (`vmm bench tables`); the test
# test_benchmarks_md fails while the document and its data differ.
.PHONY: benchmarks-md
benchmarks-md: all
	python3 tests/benchmarks_md.py

build-tests: all $(UNIT_BINS) $(VMM_TEST)

# The scheduler core's own cost at 8..4096 vCPUs (docs/benchmarks-history.md, "The
# scheduler's own cost"): the pure sched/ core on a synthetic stream, no KVM.
SCHED_BENCH := $(BUILD)/bench/sched_scale
$(SCHED_BENCH): tests/bench/sched_scale.c $(filter $(BUILD)/obj/sched/% $(BUILD)/obj/lib/%,$(HOST_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)
.PHONY: bench-sched
bench-sched: $(SCHED_BENCH)
	$(SCHED_BENCH) --csv $(BUILD)/bench/sched_scale.csv

# The slot hand-off's kernel work (docs/benchmarks-history.md, "The slot hand-off"): two
# threads pass one slot back and forth by yield through sched.c; futex calls
# counted by perf (the syscall tracepoint; per yield, and every yield is a
# hand-off: the harness counts them), context switches by getrusage.
HANDOFF_BENCH := $(BUILD)/bench/handoff
HANDOFF_N ?= 20000
$(HANDOFF_BENCH): tests/bench/handoff.c $(filter $(BUILD)/obj/sched/% $(BUILD)/obj/lib/%,$(HOST_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)
.PHONY: bench-handoff
bench-handoff: $(HANDOFF_BENCH)
	@for cpu in -1 0; do \
		if ! perf stat -x, -e syscalls:sys_enter_futex,context-switches -o $(BUILD)/bench/handoff.perf \
			true 2>/dev/null; then \
			echo "bench-handoff: no perf (or no syscall tracepoints): context switches only" >&2; \
			$(HANDOFF_BENCH) --n $(HANDOFF_N) --cpu $$cpu || exit 1; continue; \
		fi; \
		perf stat -x, -e syscalls:sys_enter_futex,context-switches,task-clock -o $(BUILD)/bench/handoff.perf \
			$(HANDOFF_BENCH) --n $(HANDOFF_N) --cpu $$cpu || exit 1; \
		awk -F, -v n=$$((2 * $(HANDOFF_N))) '/sys_enter_futex|context-switches|task-clock/ \
			{ printf "handoff: %s per yield (perf, whole process): %.3f%s\n", $$3, $$1 / n, \
			  $$3 == "task-clock" ? " ms" : "" }' $(BUILD)/bench/handoff.perf; \
	done

# The tests run both (tests/integration/test_bench_tools.py), so they are built with them.
build-tests: $(SCHED_BENCH) $(HANDOFF_BENCH)

# ---- the security stages (SECURITY.md) ----
# `make test` runs the suite, then the suite again under ASan+UBSan, the
# scheduler's and vcpu_kick's unit tests under TSan, and every fuzzer for FUZZ_SECONDS each
# (0 skips fuzzing; SECURITY_STAGES=0 skips all three); one closing total.
FUZZ_SECONDS    ?= 60
SECURITY_STAGES ?= 1
SAN_BUILD  := build-san
TSAN_BUILD := build-tsan
FUZZ_BUILD := build-fuzz
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
TSAN_UNITS := test_sched_core test_sched_slots test_sched_threads test_vcpu_kick test_domain_link
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%)
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# what the fuzzers link: the parsers and what they call, nothing of KVM
FUZZ_LIB_SRCS := vmm/boot/elf_loader.c $(wildcard vmm/cli/*.c) vmm/boot/fdt_build.c \
	vmm/boot/layout.c vmm/linux/boot_linux.c vcpu/x86/boot_tables.c devices/virtqueue.c $(wildcard vcpu/x86/cpuid*.c) $(wildcard hypercalls/*.c sched/*.c) \
	vmm/core/sched_hc_ops.c $(shell find vmm/bench -name '*.c' | sort) vmm/host/file.c \
	$(wildcard vmm/domain/agent*.c) vmm/domain/shm.c vmm/domain/confine.c vmm/domain/paths.c \
	vmm/domain/dir_trust.c lib/json_out.c
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfuzzvmm.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/libfuzzvmm.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libfuzzvmm.a $(LDLIBS)

fuzz-bins: $(FUZZ_BINS)

ifeq ($(SECURITY_STAGES),0)
SEC_BUILDS :=
SEC_ARGS :=
else
SEC_BUILDS := sanitize-build tsan-build $(if $(filter 0,$(FUZZ_SECONDS)),,fuzz-build)
SEC_ARGS := --sanitize-build $(SAN_BUILD) --tsan-build $(TSAN_BUILD) --tsan-units "$(TSAN_UNITS)" \
	$(if $(filter 0,$(FUZZ_SECONDS)),,--fuzz-build $(FUZZ_BUILD) --fuzz-seconds $(FUZZ_SECONDS))
endif

.PHONY: sanitize-build tsan-build fuzz-build
sanitize-build: deps
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CFLAGS="-O1 -g $(SAN_FLAGS)" build-tests
tsan-build: deps
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) CFLAGS="-O1 -g $(TSAN_FLAGS)" \
		$(TSAN_UNITS:%=$(TSAN_BUILD)/tests/unit/%)
fuzz-build: deps
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang CFLAGS="$(FUZZ_CFLAGS)" fuzz-bins

test: build-tests $(SEC_BUILDS)
	@python3 tests/run_all.py --build $(BUILD) $(SEC_ARGS)

# Only the nested stage: every integration test and the KVM unit binaries,
# inside the nested KVM.
test-nested: build-tests
	@python3 tests/run_all.py --build $(BUILD) --nested only

# The whole suite again, built with ASan+UBSan in its own build folder.
sanitize: sanitize-build
	@python3 tests/run_all.py --build $(SAN_BUILD)

# The scheduler's unit tests, vcpu_kick against vCPU start and the domain
# members' links under ThreadSanitizer.
tsan: tsan-build
	@python3 tests/run_all.py --build $(TSAN_BUILD) --unit-only --only "^(test_sched_|test_vcpu_kick|test_domain_link)"

# Every fuzzer for FUZZ_SECONDS (corpora: tests/fuzz/corpus/<target>/).
fuzz: fuzz-build
	@python3 tests/run_all.py --fuzz-only --fuzz-build $(FUZZ_BUILD) --fuzz-seconds $(FUZZ_SECONDS)

# Each folder's role, floor by floor (from tests/check_includes.py's tables).
layout:
	@python3 tests/check_includes.py --layout

clean:
	rm -rf build build-san build-tsan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
