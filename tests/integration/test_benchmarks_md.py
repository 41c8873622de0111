"""BENCHMARKS.md against its data (issue 32): every generated block (each
`vmm bench tables FILE` and the targets summary) must be what
tests/benchmarks_md.py prints from the committed bench/results/ files; every
results file must be shown in the document; and a block edited by hand must
be caught."""
import os
import re
import sys

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import benchmarks_md  # noqa: E402


def doc():
    with open(os.path.join(ROOT, "BENCHMARKS.md")) as f:
        return f.read()


def test_benchmarks_md_tables_are_what_their_results_print():
    text = doc()
    _, changed = benchmarks_md.regenerate(text, harness.vmm_path())
    assert not changed, f"BENCHMARKS.md differs from its data in {changed} (make benchmarks-md)"
    shown = set(re.findall(r"<!-- vmm bench tables (\S+) -->", text))
    assert shown, "BENCHMARKS.md has no generated table"
    files = {f"{benchmarks_md.RESULTS}/{n}" for n in os.listdir(os.path.join(ROOT, benchmarks_md.RESULTS))
             if n.endswith(".json")}
    assert files <= shown, f"results no table shows: {sorted(files - shown)}"
    assert shown <= files, f"tables without their results file: {sorted(shown - files)}"
    assert "<!-- targets summary -->" in text


def test_a_table_edited_by_hand_is_caught():
    text = doc()
    m = re.search(r"<!-- vmm bench tables (\S+) -->\n```text\n", text)
    assert m, "no generated table"
    # one number in the first table's cells changed, as a hand edit would
    body = text[m.end():]
    num = re.search(r"\b(\d+\.\d{3})\b", body)
    assert num, "the table has no 3-decimal number"
    old = num.group(1)
    bumped = body[:num.start()] + ("1.234" if old != "1.234" else "4.321") + body[num.end():]
    _, changed = benchmarks_md.regenerate(text[:m.end()] + bumped, harness.vmm_path())
    assert m.group(1) in changed, changed
    tampered = text.replace("<!-- targets summary -->\n|", "<!-- targets summary -->\n| (edited)", 1)
    _, changed = benchmarks_md.regenerate(tampered, harness.vmm_path())
    assert "targets summary" in changed, changed
