"""The bench's statistics recomputed from a results.json's raw runs, in
Python, the way vmm/bench/stats/ci.c and stats/stats.c define them: the
pooled 1x denominator, the order-statistic CI of a median and the fixed-seed
bootstrap CI of the efficiency. The tests compare them with what was written."""
import math

BOOT_SEED = 0x62656e6368636921
BOOT_RESAMPLES = 2000
CI_MIN_RUNS = 5
M64 = (1 << 64) - 1


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def ok_runs(cell):
    return [r["ops_per_s"] for r in cell["runs"] if r["ok"]]


def pooled(doc, cell):
    """The pooled runs, in ref_ids then run order, as bench_pool_runs."""
    by_id = {c["id"]: c for c in doc["cells"]}
    return [v for i in cell["ref_ids"] for v in ok_runs(by_id[i])]


def median_ci(v):
    """(lo, hi, coverage) or None below 5 runs."""
    n = len(v)
    if n < CI_MIN_RUNS:
        return None
    s = sorted(v)
    below = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * below(k + 1) >= 0.95:
        k += 1
    return s[k - 1], s[n - k], 1 - 2 * below(k)


def _splitmix(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return x, z ^ (z >> 31)


def ratio_ci(num, den, cell_id):
    if len(num) < CI_MIN_RUNS or len(den) < CI_MIN_RUNS:
        return None
    x = BOOT_SEED ^ cell_id
    ratios = []
    for _ in range(BOOT_RESAMPLES):
        meds = []
        for v in (num, den):
            pick = []
            for _ in v:
                x, z = _splitmix(x)
                pick.append(v[z % len(v)])
            meds.append(median(pick))
        ratios.append(meds[0] / meds[1])
    ratios.sort()
    return ratios[BOOT_RESAMPLES * 25 // 1000], ratios[BOOT_RESAMPLES * 975 // 1000 - 1]


def check_cell(doc, c):
    """Asserts c's pooled 1x, efficiency and both intervals follow from the raw runs."""
    raw, pool = ok_runs(c), pooled(doc, c)
    assert c["pooled_1x_ops_per_s"] == median(pool), (c["id"], c["pooled_1x_ops_per_s"], pool)
    assert c["efficiency"] == c["median_ops_per_s"] / median(pool), c["id"]
    ci = median_ci(raw)
    got = (c["median_lo"], c["median_hi"])
    assert got == (ci[:2] if ci else (None, None)), (c["id"], got, ci)
    if ci:
        # the coverage: the same sum, added up in another order
        assert abs(c["median_ci_level"] - ci[2]) < 1e-12 and ci[2] >= 0.93, (c["id"], ci)
        assert ci[0] <= c["median_ops_per_s"] <= ci[1], c["id"]
    eci = ratio_ci(raw, pool, c["id"])
    got = (c["eff_lo"], c["eff_hi"])
    assert got == (eci if eci else (None, None)), (c["id"], got, eci)
