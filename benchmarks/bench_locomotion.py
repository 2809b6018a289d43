"""The Solo-12 gaits of ``problems/quadruped.py`` and Talos' walk of ``problems/biped.py``:
iterations, cost, wall time per solve and per iteration of DDP (exact second order), iLQR and
IPOPT, and how far apart their optima are.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_locomotion.py [--rounds 3]

Each solver runs with the task's own options (multiple shooting from the standing guess for
DDP and iLQR) to its default tolerance, at most MAX_ITER = 200 iterations, after one warm-up solve
(compilation apart). Wall times are the best of ``--rounds`` interleaved solves; the time per
iteration is the wall time over the iterations (line searches included). "Optimum apart" is
the largest state difference from DDP's trajectory (tangent space, any knot). Writes the
section "locomotion" of docs/benchmarks/, with the issue's target: a DDP iteration ≤ 1.7× an
iLQR iteration; with ``benchmarks/crocoddyl_trot.json`` (bench_crocoddyl_locomotion.py, in
Crocoddyl's own environment, on the trot without the friction cone) Crocoddyl's FDDP rows
beside ours.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _common import machine, table, write_section

import optdyn
import problems

SOLVERS = ("ddp", "ilqr", "ipopt")
MAX_ITER = 200
GAITS = {"trot, 2 cycles": ("quadruped", dict(scenario="trot")),
         "trot, 2 cycles, no friction cone": ("quadruped", dict(scenario="trot", mu=None)),
         "walk, 2 cycles": ("quadruped", dict(scenario="walk")), "jump": ("quadruped", dict(scenario="jump")),
         "biped walk, 2 steps": ("biped", dict(scenario="walk"))}
CROCODDYL = Path(__file__).with_name("crocoddyl_trot.json")


def measure(rounds: int) -> list[list]:
    rows = []
    for label, (name, params) in GAITS.items():
        prob = problems.get(name, **params)
        results = {s: optdyn.solve(prob, solver=s, max_iter=MAX_ITER) for s in SOLVERS}  # warm-up
        best = dict.fromkeys(SOLVERS, np.inf)
        for _ in range(rounds):
            for s in SOLVERS:
                t = time.perf_counter()
                optdyn.solve(prob, solver=s, max_iter=MAX_ITER)
                best[s] = min(best[s], time.perf_counter() - t)
        ref = results["ddp"].xs
        for s, r in results.items():
            apart = float(np.abs(prob.state_difference(r.xs, ref)).max())
            rows.append([label, prob.N, s, r.status, r.iterations, f"{r.cost:.8g}", best[s],
                         1e3 * best[s] / max(r.iterations, 1), f"{apart:.1e}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = measure(args.rounds)
    per_it = {(r[0], r[2]): r[7] for r in rows}
    ratios = [f"{g}: {per_it[(g, 'ddp')] / per_it[(g, 'ilqr')]:.2f}×" for g in GAITS]
    body = "\n\n".join([
        "## Locomotion: Solo-12 gaits and Talos' walk (`benchmarks/bench_locomotion.py`)",
        f"Machine: {machine()}; best of {args.rounds} interleaved solves after a warm-up.",
        table(["gait", "N", "solver", "status", "iterations", "cost", "wall s", "ms / iteration",
               "optimum apart from DDP's"], rows),
        "A DDP iteration against an iLQR iteration (target ≤ 1.7×): " + ", ".join(ratios) + ".",
    ])
    if CROCODDYL.exists():
        croc = json.loads(CROCODDYL.read_text())
        body += "\n\n" + "\n\n".join([
            f"Crocoddyl {croc['crocoddyl']} (Pinocchio {croc['pinocchio']}) on the trot without the friction cone "
            f"({croc['machine']}; `benchmarks/crocoddyl_trot.json`): \"stock\" integrates the running cost over "
            "the RK4 stages (another objective, all C++), \"exact\" is ours through a Python action model.",
            table(["variant", "solver", "iterations", "cost", "wall s", "ms / iteration", "CPU ms / iteration"],
                  [[r["variant"], r["solver"], r["iterations"], f"{r['cost']:.8g}", r["wall_s"], r["per_iteration_ms"],
                    r["per_iteration_cpu_ms"]] for r in croc["results"]])])
    write_section("locomotion", body)
    print(body)


if __name__ == "__main__":
    main()
