"""Every test hook (compiled with -DVMM_TEST_HOOKS into build/vmm-test only,
Makefile HOOK_SRCS) is in the test build and absent from the shipped vmm
(issue 31, item 8): a hook left in the shipped binary would let anyone with
its environment make a run fail on purpose (lose an event-loop request,
swap the disk ring's file, fail or shorten the disk's reset drain, break the
seccomp filter, fail a KVM_RUN) or stall a domain's
slot threads. Checked by the hook's environment name in the binary's bytes
and, for the function-pointer hook, by its symbol (nm)."""
import subprocess

import harness

ENV_HOOKS = [b"VMM_TEST_SECCOMP_VIOLATE", b"VMM_TEST_EVLOOP_LOSE_AFTER", b"VMM_TEST_BLK_RING_FD",
             b"VMM_TEST_KVM_RUN_ERRNO", b"VMM_TEST_BLK_CANCEL", b"VMM_TEST_BLK_DRAIN_MS"]
SYMBOL_HOOKS = ["dlink_test_gap"]


def symbols(path):
    p = subprocess.run(["nm", path], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout, f"nm {path}: {p.stderr}"
    return {ln.split()[-1] for ln in p.stdout.splitlines() if ln.split()}


def test_every_hook_is_in_the_test_build_only():
    with open(harness.vmm_path(), "rb") as f:
        shipped = f.read()
    with open(harness.vmm_test_path(), "rb") as f:
        test = f.read()
    for hook in ENV_HOOKS:
        assert hook not in shipped, f"the shipped vmm carries the test hook {hook.decode()}"
        assert hook in test, f"vmm-test lacks the test hook {hook.decode()}"
    shipped_syms, test_syms = symbols(harness.vmm_path()), symbols(harness.vmm_test_path())
    for hook in SYMBOL_HOOKS:
        assert hook not in shipped_syms, f"the shipped vmm carries the test hook {hook}"
        assert hook in test_syms, f"vmm-test lacks the test hook {hook}"
