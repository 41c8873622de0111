#!/usr/bin/env python3
"""Every exported function has a user outside its own file (issue 33).

A function another unit never calls is either dead (remove it) or private
to its file (make it static): exported, it widens the surface a reader must
keep in mind and hides dead code from the compiler's unused-function
warning. The check reads the objects of a build with nm: each text symbol
defined (T) in BUILD/obj/**.o must be undefined (U, called) in another of
them, or named in a test's source under tests/ (an API the unit tests
drive is an API). One line per offender, then "N passed, N failed" over
every exported function.

  tests/check_exports.py [--build DIR]     (default: build)
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Called by something that is not an object of the build: said why.
ENTRY_POINTS = {
    "main": "the program's entry",
}


def symbols(objs):
    defs, users = {}, {}
    for o in objs:
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] == "T":
                defs[f[2]] = o
            elif len(f) == 2 and f[0] == "U":
                users.setdefault(f[1], set()).add(o)
    return defs, users


def test_sources():
    text = []
    for pat in ("tests/**/*.c", "tests/**/*.h", "tests/**/*.S"):
        for f in glob.glob(os.path.join(ROOT, pat), recursive=True):
            with open(f, errors="replace") as fh:
                text.append(fh.read())
    return "\n".join(text)


def main(argv):
    build = "build"
    if "--build" in argv:
        build = argv[argv.index("--build") + 1]
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    # only objects whose source is still in the tree: a moved file's old
    # object left in a build folder would define and call things no more
    objs = sorted(o for o in glob.glob(os.path.join(build, "obj", "**", "*.o"), recursive=True)
                  if any(os.path.exists(os.path.join(ROOT, os.path.relpath(o, os.path.join(build, "obj"))[:-2] + ext))
                         for ext in (".c", ".S")))
    if not objs:
        print(f"check_exports: no objects under {build}/obj: build first")
        print("0 passed, 1 failed")
        return 1
    defs, users = symbols(objs)
    tests = test_sources()
    passed = failed = 0
    for sym, obj in sorted(defs.items()):
        if sym in ENTRY_POINTS or users.get(sym, set()) - {obj} or re.search(r"\b%s\b" % re.escape(sym), tests):
            passed += 1
            continue
        failed += 1
        print(f"{os.path.relpath(obj, build)}: {sym} is exported but no other unit uses it: make it static or remove it")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
