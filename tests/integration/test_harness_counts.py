"""The suite counts honestly: tests/unit/check.h counts test cases (RUN) as
well as checks, a skipped part makes its case a skip, and tests/run_all.py
reports tests and checks apart, on fake unit binaries whose output is known."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FAKE_UNIT = r'''
#include "tests/unit/check.h"
static void passes(void) { CHECK(1); CHECK_EQ(2, 2); CHECK(1); }
static void skips_a_part(void) { CHECK(1); SKIP("no such device here"); }
static void fails(void) { CHECK(1); CHECK_EQ(1, 2); }
int main(void)
{
	RUN(passes);
	RUN(skips_a_part);
	if (getenv("FAIL"))
		RUN(fails);
	CHECK(1); /* outside every RUN: one more case */
	return check_summary();
}
'''


def compile_fake(d, src, name):
    cc = shutil.which("cc")
    if not cc:
        raise harness.Skip("no C compiler to build the fake unit binary")
    c = os.path.join(d, name + ".c")
    with open(c, "w") as f:
        f.write("#include <stdlib.h>\n" + src)
    exe = os.path.join(d, name)
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", ROOT, "-o", exe, c], check=True)
    return exe


def test_check_h_counts_cases_and_checks():
    with tempfile.TemporaryDirectory() as d:
        exe = compile_fake(d, FAKE_UNIT, "fake")
        p = subprocess.run([exe], capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        assert p.returncode == 0, p
        assert lines[-2:] == ["tests: 2 passed, 0 failed, 1 skipped", "5 passed, 0 failed, 1 skipped"], lines
        p = subprocess.run([exe], capture_output=True, text=True, env={**os.environ, "FAIL": "1"})
        lines = p.stdout.strip().splitlines()
        assert p.returncode == 1, p
        assert lines[-2:] == ["tests: 2 passed, 1 failed, 1 skipped", "6 passed, 1 failed, 1 skipped"], lines
        assert "FAIL test fails: 1 of its checks failed" in p.stderr, p.stderr


def fake_script(path, text, rc=0):
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncat <<'END'\n" + text + "\nEND\nexit " + str(rc) + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def run_all(build):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "run_all.py"), "--build", build,
                        "--unit-only", "--nested", "off"], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout.strip().splitlines()


def test_run_all_reports_tests_apart_from_checks():
    with tempfile.TemporaryDirectory() as d:
        unit = os.path.join(d, "tests", "unit")
        os.makedirs(unit)
        # 13,637 checks in 4 tests, one of them skipped
        fake_script(os.path.join(unit, "test_many_checks"),
                    "skipped: no /dev/kvm\ntests: 3 passed, 0 failed, 1 skipped\n13637 passed, 0 failed, 1 skipped")
        # no tests line (check_cases.h before, Python checks): the binary is one test
        fake_script(os.path.join(unit, "test_plain"), "12 passed, 0 failed")
        # a binary that says it skipped, with no tests line: one skipped test
        fake_script(os.path.join(unit, "test_plain_skip"), "skipped: x\n3 passed, 0 failed, 1 skipped")
        rc, lines = run_all(d)
        assert rc == 0, lines
        assert lines[-2:] == ["tests: 4 passed, 0 failed, 2 skipped", "13652 passed, 0 failed, 2 skipped"], lines
        # a crash after its checks passed is a failed test, whatever it printed
        fake_script(os.path.join(unit, "test_crashes"), "tests: 5 passed, 0 failed\n50 passed, 0 failed", rc=139)
        # a binary that prints nothing it can count is a failed test
        fake_script(os.path.join(unit, "test_says_nothing"), "hello")
        # failed checks count even where the exit status says 0
        fake_script(os.path.join(unit, "test_zero_exit"), "4 passed, 2 failed")
        rc, lines = run_all(d)
        assert rc == 1, lines
        assert lines[-2:] == ["tests: 9 passed, 3 failed, 2 skipped", "13706 passed, 4 failed, 2 skipped"], lines
        assert any(ln.startswith("unit test_crashes: FAILED (exit 139)") for ln in lines), lines


def test_speed_checks_skip_where_timing_means_nothing():
    """need_timing raises Skip (a skip, never a pass) in the nested KVM, under
    the sanitizers and with VMM_NO_TIMING=1; elsewhere it lets the test run."""
    saved = {k: os.environ.pop(k, None) for k in ("VMM_NESTED", "VMM_SANITIZED", "VMM_NO_TIMING")}
    try:
        harness.need_timing("nothing")  # plain host: runs
        for var, value in (("VMM_NESTED", "kvm_amd"), ("VMM_SANITIZED", "1"), ("VMM_NO_TIMING", "1")):
            os.environ[var] = value
            try:
                harness.need_timing("a ratio")
                raise AssertionError(f"need_timing did not skip with {var}={value}")
            except harness.Skip as e:
                assert "a ratio" in str(e), e
            finally:
                del os.environ[var]
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v
