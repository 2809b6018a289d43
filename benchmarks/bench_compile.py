"""Cold start: where numba's compile time goes, command by command → docs/benchmarks/, section
"cold start".

Runs, in a fresh numba cache directory and in this order, the README's main job and every
command of the command line, each in its own process under ``compile_profile.py`` (a
listener on numba's compile events), then optionally the whole test suite. A command
compiles only what the commands before it did not, so each kernel is charged to the first
command that needs it. Then the main job again, warm, and the time from ``import optdyn``
to the first iteration.

Run from the repository root:
    .venv/bin/python benchmarks/bench_compile.py            # commands only (~10 min cold)
    .venv/bin/python benchmarks/bench_compile.py --tests    # and the test suite (~20 min more)
    .venv/bin/python benchmarks/bench_compile.py --records  # only: compile time against a record's size
    .venv/bin/python benchmarks/bench_compile.py --warm     # only: warm main job and first iteration (3 runs)
    .venv/bin/python benchmarks/bench_compile.py --trees BEFORE AFTER --rounds 5
        # only: the main job cold then warm in two checkouts, alternating (wall and CPU seconds)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import ROOT, machine, table, write_section


PROFILE = ROOT / "benchmarks" / "compile_profile.py"
RESULTS = ROOT / "benchmarks" / "compile_results.json"
FIRST_ITERATION = r"""
import time
t0 = time.perf_counter()
import optdyn, problems
prob = problems.get("arm-obstacle")
seen = []
optdyn.solve(prob, solver="ddp", max_iter=1, callback=lambda *a: seen.append(time.perf_counter()))
print("RESULT", seen[0] - t0)
"""


RECORDS = r"""
import json, time
from collections import namedtuple
import numpy as np
from dynamics._compile import njit

@njit
def inner(t, x):
    return t[0][0, 0] + x

@njit
def outer(t):
    s = 0.0
    for i in range(3):
        s += inner(t, float(i))
    return s

out = {}
for n in (10, 40, 80, 145):
    R = namedtuple(f"R{n}", [f"a{i}" for i in range(n)])
    c0 = time.process_time()
    outer(R(*[np.zeros((2, 2)) for _ in range(n)]))
    out[n] = time.process_time() - c0
print("RESULT", json.dumps(out))
"""


def warm_table(runs: int = 3) -> str:
    """Warm: the README's main job and ``import optdyn`` to the first iteration, each in a
    new process on the tree's own cache (compiled first if needed), ``runs`` times."""
    main = [sys.executable, "-m", "optdyn", "solve", "arm-obstacle", "--html", "arm_obstacle.html", "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(main, cwd=tmp, capture_output=True, check=True)  # fills the cache if cold
        walls, firsts = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(main, cwd=tmp, capture_output=True, check=True)
            walls.append(time.perf_counter() - t0)
            proc = subprocess.run([sys.executable, "-c", FIRST_ITERATION], cwd=ROOT, capture_output=True, text=True,
                                  check=True)
            firsts.append(float(proc.stdout.split("RESULT", 1)[1]))
    rows = [["main job (`optdyn solve arm-obstacle --html ...`), process wall", round(min(walls), 2),
             round(max(walls), 2), "≤ 5"],
            ["`import optdyn` to the first DDP iteration", round(min(firsts), 2), round(max(firsts), 2), "≤ 2"]]
    return f"Warm cache, {runs} runs each ({machine()}):\n\n" + table(["", "fastest s", "slowest s", "target s"], rows)


def records_table() -> str:
    """CPU seconds to compile two trivial kernels, one calling the other, that take a named
    tuple of n arrays (no cache): the cost of a record crossing a kernel boundary."""
    proc = subprocess.run([sys.executable, "-c", RECORDS], cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [[n, round(s, 2)] for n, s in json.loads(proc.stdout.split("RESULT", 1)[1]).items()]
    return ("Two trivial kernels (one calls the other three times, the callee reads one entry) taking a named "
            f"tuple of n 2-D arrays, compiled uncached ({machine()}); `IntervalWork`, the workspace the "
            "interval kernels pass along, holds 145 arrays (1391 scalars once numba flattens it):\n\n"
            + table(["arrays in the record", "compile CPU s"], rows))


def commands(out: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of the README's main job, then each command of the command line."""
    saved = str(out / "arm.npz")
    return [("main job: solve arm-obstacle (ddp)", ["optdyn", "solve", "arm-obstacle", "--quiet",
                                                    "--html", str(out / "arm.html"), "--save", saved]),
            ("solve --solver ilqr", ["optdyn", "solve", "arm-obstacle", "--quiet", "--solver", "ilqr"]),
            ("solve --solver ipopt", ["optdyn", "solve", "arm-obstacle", "--quiet", "--solver", "ipopt"]),
            ("compare", ["optdyn", "compare", "ur5-reach"]),
            ("show", ["optdyn", "show", saved]),
            ("sweep (workers compile; not recorded)", ["optdyn", "sweep", "pendulum", "--grid", "u_max=5", "--starts", "2",
                                                         "--out", str(out / "sweep"), "--workers", "2",
                                                         "--no-progress", "--quiet"])]


def profile(argv: list[str], out: Path, cache: Path) -> dict:
    record = out / "profile.json"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(PROFILE), str(record), *argv], cwd=out, env=env,
                          capture_output=True, text=True, timeout=7200)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # pytest exits 1 when a test fails: still a profile
        raise RuntimeError(proc.stderr[-3000:])
    data = json.loads(record.read_text())
    data["process_wall"] = wall
    return data


def first_iteration(cache: Path) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", FIRST_ITERATION], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=3600, check=True)
    return float(proc.stdout.split("RESULT", 1)[1])


def run(with_tests: bool) -> dict:
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        out, cache = Path(tmp), Path(tmp) / "cache"
        steps = commands(out) + ([("test suite", ["pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests")])]
                                 if with_tests else [])
        for label, argv in steps:
            print(f"[{time.strftime('%H:%M:%S')}] {label}", flush=True)
            runs[label] = profile(argv, out, cache)
        main_label, main_argv = commands(out)[0]
        runs["warm main job"] = profile(main_argv, out, cache)
        runs["import to first iteration (warm)"] = {"process_wall": first_iteration(cache), "records": []}
    return runs


def summarise(runs: dict, top: int = 25) -> str:
    command_rows, kernels = [], defaultdict(lambda: {"cpu": 0.0, "wall": 0.0, "sigs": set(), "by": None})
    for label, data in runs.items():
        records = data["records"]
        command_rows.append([label, round(data["process_wall"], 1), round(sum(r["self_wall"] for r in records), 1),
                             round(sum(r["self_cpu"] for r in records), 1), len(records)])
        for r in records:
            k = kernels[r["kernel"]]
            k["cpu"] += r["self_cpu"]
            k["wall"] += r["self_wall"]
            k["sigs"].add(r["signature"])
            k["by"] = k["by"] or f"{label.split(':')[0]}: {r['trigger'].rsplit('.', 1)[-1]}"
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1]["cpu"])
    total = sum(k["cpu"] for _, k in ranked)
    kernel_rows = [[name, round(k["cpu"], 1), round(100 * k["cpu"] / total, 1), len(k["sigs"]), k["by"]]
                   for name, k in ranked[:top]]
    twice = [name.rsplit(".", 1)[-1] for name, k in ranked if len(k["sigs"]) > 1]
    return "\n\n".join([
        table(["step (in order, one numba cache)", "wall s", "compiling, wall s", "compiling, CPU s", "kernels compiled"],
              command_rows),
        f"Kernels by compile CPU time (exclusive of the callees they compiled; {len(kernels)} kernels, "
        f"{total:.0f} CPU s in all; the {top} largest):",
        table(["kernel", "CPU s", "%", "specialisations", "first needed by: (outermost kernel)"], kernel_rows),
        f"Kernels compiled for more than one signature: {', '.join(twice) or 'none'}."])


def main_job_in(tree: Path, cache: Path) -> tuple[float, float]:
    """The README's main job run from ``tree`` (its own packages) on the numba cache ``cache``:
    wall and CPU seconds (the process and the helpers it starts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "optdyn", "solve", "arm-obstacle", "--quiet", "--html",
                    str(cache / "arm_obstacle.html")], cwd=tree, check=True, capture_output=True,
                   env=dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(tree)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _median_range(ordered: list[float], digits: int) -> str:
    """"median [least, most]" of the sorted values ``ordered``."""
    return f"{ordered[len(ordered) // 2]:.{digits}f} [{ordered[0]:.{digits}f}, {ordered[-1]:.{digits}f}]"


def trees_table(trees: list[Path], rounds: int) -> str:
    """The main job cold (an empty cache) then warm in each tree, the trees alternating within
    each round."""
    runs = {tree: [] for tree in trees}
    for _ in range(rounds):
        for tree in trees:
            with tempfile.TemporaryDirectory() as cache:
                runs[tree].append(main_job_in(tree, Path(cache)) + main_job_in(tree, Path(cache)))
    rows = []
    for tree, got in runs.items():
        cold, cold_cpu, warm, _ = (sorted(column) for column in zip(*got))
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        rows.append([commit or str(tree), ", ".join(f"{t:.1f}" for t in (r[0] for r in got)),
                     _median_range(cold, 1), _median_range(cold_cpu, 1), _median_range(warm, 2)])
    return f"{machine()}, {rounds} rounds, the trees alternating:\n\n" + table(
        ["tree", "cold, wall s (per round)", "cold, wall s (median [range])", "cold, CPU s (median [range])",
         "warm, wall s (median [range])"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", action="store_true", help="also profile the whole test suite")
    parser.add_argument("--label", default="after", help="name of this run in compile_results.json")
    parser.add_argument("--section", default="cold start",
                        help="the BENCHMARKS.md section the saved runs are written to (one per era of the code)")
    parser.add_argument("--warm", action="store_true", help="instead: the warm main job and first iteration")
    parser.add_argument("--records", action="store_true", help="instead: compile time against a record's size")
    parser.add_argument("--trees", nargs=2, type=Path, help="instead: the main job cold and warm in two checkouts")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --trees")
    args = parser.parse_args()
    if args.trees:
        write_section("cold start trees", trees_table(args.trees, args.rounds))
        return
    if args.warm:
        write_section("cold start warm", warm_table())
        return
    if args.records:
        write_section("cold start records", records_table())
        return
    runs = run(args.tests)
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    saved[args.label] = {"machine": machine(), "runs": runs}
    RESULTS.write_text(json.dumps(saved))
    write_section(args.section, "\n\n".join(
        f"### {label} ({entry['machine']})\n\n{summarise(entry['runs'])}" for label, entry in saved.items()))


if __name__ == "__main__":
    main()
