#!/usr/bin/env python3
"""No function longer than MAX_LINES (issue 33): reads every C source below
ROOTS and fails on a function whose body, from its opening brace to its
closing one, is longer.

    python3 tests/check_function_length.py            the tree this script lives in
    python3 tests/check_function_length.py --root DIR another tree (same layout)
    python3 tests/check_function_length.py --self-test
                                                      proves the check on synthetic files

A function's body is what the house style writes: the opening brace alone
on the line after the signature, the closing one alone at column 0. One line
per long function ("file:line: name() is N lines, more than MAX_LINES"),
then "N passed, N failed" (files without / with one) as the last line,
which tests/run_all.py counts; exit status 1 on any. Built into
build/tests/unit/test_function_length{,_self} by tests/checks.mk.
"""
import contextlib
import io
import os
import re
import sys
import tempfile

MAX_LINES = 80
# Where the check looks: every folder of the product (tests/ may be long:
# a test reads top to bottom).
ROOTS = ["vmm", "vcpu", "sched", "hypercalls", "devices", "lib", "firmware"]

NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def long_functions(text, limit=MAX_LINES):
    """[(line of the signature, name, length)] of the functions over limit."""
    lines = text.split("\n")
    out, start = [], None
    for i, line in enumerate(lines):
        if line == "{" and start is None:
            start = i
        elif line.startswith("}") and start is not None:
            n = i - start + 1
            if n > limit:
                j = start - 1
                while j > 0 and not NAME.search(lines[j]):
                    j -= 1
                m = NAME.search(lines[j]) if j >= 0 else None
                # the signature's first line: walk up while the previous line continues it
                while j > 0 and lines[j - 1].strip() and not lines[j - 1].rstrip().endswith((";", "}", "*/")) \
                        and not lines[j - 1].startswith("#"):
                    j -= 1
                out.append((j + 1, m.group(1) if m else "?", n))
            start = None
    return out


def sources(root):
    for top in ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".c"):
                    yield os.path.relpath(os.path.join(d, f), root)


def main_check(root):
    files = bad = 0
    for src in sources(root):
        files += 1
        with open(os.path.join(root, src), errors="replace") as f:
            found = long_functions(f.read())
        for line, name, n in found:
            print(f"{src}:{line}: {name}() is {n} lines, more than {MAX_LINES}")
        bad += bool(found)
    print(f"{files - bad} passed, {bad} failed")
    return 1 if bad else 0


def body(n):
    return "{\n" + "\tx++;\n" * (n - 2) + "}\n"


SELF_CASES = [
    # (name, {path: text}, files expected to fail)
    ("short functions pass", {"vmm/bench/a.c": "int f(void)\n" + body(80) + "\nstatic int g(int x)\n" + body(3)}, []),
    ("81 lines fail", {"vmm/bench/a.c": "int f(void)\n" + body(81), "vmm/bench/b.c": "void h(void)\n" + body(10)},
     ["vmm/bench/a.c"]),
    ("a table's braces are not a body", {"vmm/bench/t.c": "static const int t[] = {\n" + "\t1,\n" * 100 + "};\n"}, []),
    ("a long function in a subfolder fails", {"vmm/bench/exec/c.c": "static void\nrun(int a,\n    int b)\n" + body(90)},
     ["vmm/bench/exec/c.c"]),
    ("outside ROOTS is not looked at", {"tests/unit/t.c": "int f(void)\n" + body(200)}, []),
]


def self_test():
    passed = failed = 0

    def ok(cond, what):
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print(f"FAIL: {what}")

    ok(long_functions("int f(void)\n" + body(81)) == [(1, "f", 81)], "the signature's line and name are found")
    ok(long_functions("static void\nrun(int a,\n    int b)\n" + body(90)) == [(1, "run", 90)],
       "a signature over several lines is named from its first")
    for name, tree, expect in SELF_CASES:
        with tempfile.TemporaryDirectory() as root:
            for path, text in tree.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w") as f:
                    f.write(text)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = main_check(root)
            lines = out.getvalue().splitlines()
            looked = sum(1 for p in tree if any(p.startswith(r + "/") for r in ROOTS))
            ok(rc == (1 if expect else 0) and lines[-1] == f"{looked - len(expect)} passed, {len(expect)} failed",
               f"{name}: exit {rc}, last line {lines[-1]!r}")
            ok(sorted(l.split(":")[0] for l in lines[:-1]) == sorted(expect), f"{name}: {lines[:-1]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--self-test" in argv:
        return self_test()
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    return main_check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
