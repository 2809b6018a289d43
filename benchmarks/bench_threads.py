"""Threads that never cost: the solvers' time per iteration in three conditions → BENCHMARKS.md,
section "threads".

    .venv/bin/python benchmarks/bench_threads.py [--rounds 3] [--quick]

Each measurement runs in a fresh process (warm kernel cache: the first solve of the process
is left out, then ``SOLVES`` solves are timed and the fastest per-iteration wall time is
kept), in three conditions:

* ``one thread``: ``OPTDYN_NUM_THREADS=1``, nothing else running;
* ``default``: the default thread count (every core), nothing else running;
* ``default + neighbour``: the default thread count beside one CPU-bound neighbour, a plain
  busy loop in another process at normal priority, started before the measured process and
  stopped after it.

Cases: DDP, iLQR and IPOPT on ur5-reach, arm-obstacle and the quadruped trot, and the MPC
step on ur5-reach (DDP, one iteration per step, a 40-interval horizon of 50 ms: the control
period; 3 s of closed loop, the worst and median step after the first five). The conditions
are interleaved: every round runs every case in every condition, so a drift of the machine
meets all three alike; the table gives the median over the rounds and the range.

The targets (the issue's): default idle ≤ 1.0× one thread on every case and ≥ 1.3× faster
on the trot; default beside the neighbour ≤ 1.5× the idle one-thread time; the MPC's worst
step after the first five ≤ 0.5× the period, idle and beside the neighbour.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from _common import ROOT, machine, table, write_section

SOLVES = 3
CASES = [("ur5-reach", "ddp"), ("ur5-reach", "ilqr"), ("ur5-reach", "ipopt"),
         ("arm-obstacle", "ddp"), ("arm-obstacle", "ilqr"), ("arm-obstacle", "ipopt"),
         ("quadruped", "ddp"), ("quadruped", "ilqr"), ("quadruped", "ipopt"),
         ("ur5-reach", "mpc")]
CONDITIONS = ("one thread", "default", "default + neighbour")
PARAMS = {"quadruped": {"scenario": "trot"}}

SOLVE = """
import json, sys, time
import optdyn, problems
task, solver, solves, params = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
prob = problems.get(task, **params)
optdyn.solve(prob, solver)
best = float("inf")
for _ in range(solves):
    t = time.perf_counter()
    res = optdyn.solve(prob, solver)
    best = min(best, (time.perf_counter() - t) / max(res.iterations, 1))
print("RESULT" + json.dumps({"ms": best * 1e3, "iterations": res.iterations, "cost": res.cost,
                             "threads": optdyn.get_num_threads()}))
"""

MPC = """
import json
import numpy as np
import optdyn, problems
prob = problems.get("ur5-reach", N=40)
optdyn.simulate(optdyn.MPC(prob, "ddp", 1), 0.5)  # kernels loaded
loop = optdyn.simulate(optdyn.MPC(prob, "ddp", 1), 3.0)
later = np.asarray(loop.solve_time[5:]) / loop.dt
print("RESULT" + json.dumps({"worst": float(later.max()), "median": float(np.median(later)),
                             "threads": optdyn.get_num_threads()}))
"""


def neighbour() -> subprocess.Popen:
    """A CPU-bound process at normal priority: a plain busy loop."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def measure(task: str, solver: str, condition: str) -> dict:
    """One fresh process of the case in the condition (module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("OPTDYN_NUM_THREADS", None)
    if condition == "one thread":
        env["OPTDYN_NUM_THREADS"] = "1"
    args = ["-c", MPC] if solver == "mpc" else ["-c", SOLVE, task, solver, str(SOLVES), json.dumps(PARAMS.get(task, {}))]
    busy = neighbour() if condition == "default + neighbour" else None
    try:
        if busy is not None:
            time.sleep(0.5)
        out = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.split("RESULT", 1)[1])


def span(values) -> str:
    return f"{min(values):.3g}–{max(values):.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="ur5-reach and the MPC only")
    parser.add_argument("--machine-state", default="otherwise idle",
                        help="what else ran on the machine (written beside the table)")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.quick or c[0] == "ur5-reach"]
    results = {(c, k): [] for c in cases for k in CONDITIONS}
    for r in range(args.rounds):
        for case in cases:
            for condition in CONDITIONS:
                res = measure(*case, condition)
                results[case, condition].append(res)
                print(f"round {r}: {case} {condition}: {res}", flush=True)
    solve_rows, mpc_rows = [], []
    for case in cases:
        one, default, busy = (results[case, k] for k in CONDITIONS)
        if case[1] == "mpc":
            mpc_rows.append(["ur5-reach, DDP, 1 iteration"] + [
                f"{np.median([x['median'] for x in v]):.3g} ({span([x['worst'] for x in v])})" for v in (one, default, busy)])
            continue
        t1, t2, t3 = ([x["ms"] for x in v] for v in (one, default, busy))
        # ratios per round (the conditions of a round ran back to back)
        idle = [b / a for a, b in zip(t1, t2)]
        loaded = [b / a for a, b in zip(t1, t3)]
        solve_rows.append([case[0] + (" (trot)" if case[0] == "quadruped" else ""), case[1], one[0]["iterations"],
                           f"{np.median(t1):.3g} ({span(t1)})", f"{np.median(t2):.3g} ({span(t2)})",
                           f"{np.median(t3):.3g} ({span(t3)})", f"{np.median(idle):.2f} ({span(idle)})",
                           f"{np.median(loaded):.2f} ({span(loaded)})"])
    threads = results[cases[0], "default"][0]["threads"]
    body = [
        "## Threads: the default against one thread, idle and beside a busy neighbour",
        "",
        f"{machine()}; default threads here: {threads}. `benchmarks/bench_threads.py --rounds {args.rounds}`: "
        "each value from a fresh process (warm kernel cache), the three conditions interleaved in every round; "
        "medians over the rounds, the range in parentheses. The neighbour is a plain busy loop "
        "(`python -c 'while True: pass'`) at normal priority. "
        f"The machine: {args.machine_state} (\"idle\" below means no neighbour of ours).",
        "",
        table(["task", "solver", "iterations", "one thread, idle (ms/iter)", "default, idle",
               "default + neighbour", "default idle / one thread", "default + neighbour / one thread idle"],
              solve_rows),
        "",
        "Targets: default idle ≤ 1.0× one thread everywhere and ≥ 1.3× faster on the trot "
        "(ratio ≤ 0.77); default beside the neighbour ≤ 1.5× the idle one-thread time.",
    ]
    if mpc_rows:
        body += ["", "MPC step on ur5-reach (40 intervals of 50 ms, the control period; 3 s closed loop): "
                 "median step after the first five as a fraction of the period, the range of the worst "
                 "step over the rounds in parentheses. Target: worst ≤ 0.5.", "",
                 table(["case", "one thread, idle", "default, idle", "default + neighbour"], mpc_rows)]
    write_section("threads", "\n".join(body))


if __name__ == "__main__":
    main()
