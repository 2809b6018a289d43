"""Memory layouts at power-of-two sizes → docs/benchmarks/, section "layout".

A loop that strides by n (or n²) doubles over a power-of-two n touches addresses that
map to a few cache sets and evicts its own data: the cost per call then jumps at
n = 32, 64 against n ± 1. This script looks for such jumps where they can occur:

* per call, on serial chains n ∈ {15, 16, 17, 31, 32, 33, 63, 64, 65}: the dense
  second-order tensors (IDSVA-SO, FDSVA-SO, whose O(n⁴) products are the loops most
  exposed), the contracted second order and the first-order functions;
* per state, the batched kernels over K ∈ {255, 256, 257} knots (outputs (K, n, n)).

Each power-of-two n is quoted against its neighbours measured in the same run:
t(n) / √(t(n−1)·t(n+1)), about 1 without a cache effect. FDSVA-SO is also timed at
``BASELINE`` (the commit before its loops were reordered), from a temporary git worktree,
in turn with this tree over the same rounds.

Run: ``python benchmarks/bench_layout.py`` (a few minutes; git for the baseline).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import machine, table, write_section

BASELINE = "4fc9a48"
ROOT = Path(__file__).resolve().parent.parent
SIZES = (15, 16, 17, 31, 32, 33, 63, 64, 65)
BATCH_SIZES = (15, 16, 17, 31, 32, 33)
KNOTS = (255, 256, 257)
ROUNDS = 3

# Timings in a fresh process for a given tree (this one or the baseline's worktree);
# prints RESULT and a JSON {function: {n: µs}}.
PER_CALL_SNIPPET = r"""
import json, sys
import numpy as np
sys.path.insert(0, "benchmarks")
import dynamics as dyn
from _common import per_call_us
names = sys.argv[1].split(",")
sizes = [int(n) for n in sys.argv[2].split(",")]
rng = np.random.default_rng(0)
out = {name: {} for name in names}
for n in sizes:
    m = dyn.models.serial_chain(n)
    q, v, a, lam = rng.standard_normal((4, n))
    calls = {
        "rnea_second_derivatives": lambda: dyn.rnea_second_derivatives(m, q, v, a),
        "aba_second_derivatives": lambda: dyn.aba_second_derivatives(m, q, v, a),
        "aba_second_derivatives_contracted": lambda: dyn.aba_second_derivatives_contracted(m, q, v, a, lam),
        "aba_derivatives": lambda: dyn.aba_derivatives(m, q, v, a),
        "minv": lambda: dyn.minv(m, q),
    }
    for name in names:
        out[name][n] = per_call_us(calls[name], min_time=0.05, repeat=3)
print("RESULT" + json.dumps(out))
"""


def per_call(tree: Path, names: list[str], sizes=SIZES) -> dict:
    """{function: {n: µs}} measured in a fresh process on ``tree`` (one thread)."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPTDYN_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", PER_CALL_SNIPPET, ",".join(names), ",".join(map(str, sizes))],
                         cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return {name: {int(n): t for n, t in times.items()} for name, times in
            json.loads(out.stdout.split("RESULT", 1)[1]).items()}


def fastest(runs: list[dict]) -> dict:
    """Per function and size, the fastest of the rounds."""
    return {name: {n: min(r[name][n] for r in runs) for n in runs[0][name]} for name in runs[0]}


def neighbour_ratio(t: dict, n: int) -> float:
    """t(n) ÷ √(t(n−1)·t(n+1)): about 1 unless n itself is slow."""
    return t[n] / (t[n - 1] * t[n + 1]) ** 0.5


def per_call_rows() -> tuple[list[list], list[list]]:
    """Rows of the per-call table (this tree) and of FDSVA-SO before/after."""
    names = ["rnea_second_derivatives", "aba_second_derivatives", "aba_second_derivatives_contracted",
             "aba_derivatives", "minv"]
    after, before = [], []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), BASELINE],
                       check=True, capture_output=True)
        try:
            per_call(base, ["aba_second_derivatives"], (15,))  # compiles the baseline's kernels into its cache
            per_call(ROOT, names, (15,))
            for _ in range(ROUNDS):
                before.append(per_call(base, ["aba_second_derivatives"]))
                after.append(per_call(ROOT, names))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    now, then = fastest(after), fastest(before)["aba_second_derivatives"]
    rows = [[name] + [now[name][n] for n in SIZES] + [f"{neighbour_ratio(now[name], p):.2f}" for p in (16, 32, 64)]
            for name in names]
    fd = now["aba_second_derivatives"]
    ab = [[label] + [t[n] for n in SIZES] + [f"{neighbour_ratio(t, p):.2f}" for p in (16, 32, 64)]
          for label, t in ((f"before ({BASELINE})", then), ("after", fd))]
    ab.append(["after ÷ before"] + [f"{fd[n] / then[n]:.2f}" for n in SIZES] + ["", "", ""])
    return rows, ab


BATCH_SNIPPET = r"""
import json, sys
import numpy as np
sys.path.insert(0, "benchmarks")
import dynamics as dyn
from dynamics import batch
from _common import per_call_us
sizes = [int(n) for n in sys.argv[1].split(",")]
knots = [int(k) for k in sys.argv[2].split(",")]
rng = np.random.default_rng(0)
out = {}
for n in sizes:
    m = dyn.models.serial_chain(n)
    for K in knots:
        Q, V, T, L = rng.standard_normal((4, K, n))
        out[f"aba_derivatives_batch {n} {K}"] = per_call_us(lambda: batch.aba_derivatives_batch(m, Q, V, T),
                                                            min_time=0.05, repeat=3) / K
        out[f"aba_second_derivatives_contracted_batch {n} {K}"] = per_call_us(
            lambda: batch.aba_second_derivatives_contracted_batch(m, Q, V, T, L), min_time=0.05, repeat=3) / K
print("RESULT" + json.dumps(out))
"""


def batch_rows() -> list[list]:
    """µs per state of the batched kernels, one thread, by n and knot count K."""
    env = dict(os.environ, OPTDYN_NUM_THREADS="1")
    runs = []
    for _ in range(ROUNDS):
        out = subprocess.run([sys.executable, "-c", BATCH_SNIPPET, ",".join(map(str, BATCH_SIZES)),
                              ",".join(map(str, KNOTS))], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=3600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-2000:])
        runs.append(json.loads(out.stdout.split("RESULT", 1)[1]))
    best = {key: min(r[key] for r in runs) for key in runs[0]}
    rows = []
    for kernel in ("aba_derivatives_batch", "aba_second_derivatives_contracted_batch"):
        for n in BATCH_SIZES:
            t = [best[f"{kernel} {n} {K}"] for K in KNOTS]
            rows.append([kernel, n] + t + [f"{t[1] / (t[0] * t[2]) ** 0.5:.2f}"])
        t = {n: best[f"{kernel} {n} 256"] for n in BATCH_SIZES}
        rows.append([kernel, "n = 16, 32 ÷ neighbours (K = 256)", "", "", "",
                     f"{neighbour_ratio(t, 16):.2f}, {neighbour_ratio(t, 32):.2f}"])
    return rows


def main() -> None:
    calls, ab = per_call_rows()
    batched = batch_rows()
    sizes = [f"n={n}" for n in SIZES]
    ratios = ["16 ÷ nbrs", "32 ÷ nbrs", "64 ÷ nbrs"]
    body = [
        "## Memory layouts at power-of-two sizes",
        f"Machine: {machine()}. Script: `benchmarks/bench_layout.py`. One thread, warm, fastest of {ROUNDS} "
        "rounds, each in a fresh process; \"÷ nbrs\" is t(n) ÷ √(t(n−1)·t(n+1)), about 1 when n itself is not "
        "slow.",
        "### Per call on serial chains (µs)",
        table(["function"] + sizes + ratios, calls),
        f"### FDSVA-SO tensors before (`{BASELINE}`) and after the loop reordering, same rounds (µs)",
        "Before, the Inner-Term products strode by n along ∂M/∂q and the output, and the Outer-Term by n² "
        "across the output: at n = 32 and 64 those strides fall into a few cache sets.",
        table(["tree"] + sizes + ratios, ab),
        "### Batched kernels, µs per state by knot count K (outputs (K, n, n))",
        table(["kernel", "n"] + [f"K={k}" for k in KNOTS] + ["K=256 ÷ nbrs"], batched),
    ]
    write_section("layout", "\n\n".join(body))


if __name__ == "__main__":
    main()
