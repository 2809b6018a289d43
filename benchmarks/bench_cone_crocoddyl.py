"""iLQR per knot-iteration on Solo-12's trot with its friction pyramids, against Crocoddyl's
FDDP on its own trot, in the same run → docs/benchmarks/solvers.md, section "cone-crocoddyl".

    .venv/bin/python benchmarks/bench_cone_crocoddyl.py [--rounds 5] [--crocoddyl .crocoddyl-venv/bin/python]

Each round runs three fresh processes in turn, one thread each (``OMP_NUM_THREADS=1``,
``OPTDYN_NUM_THREADS=1``): Crocoddyl 3.2's FDDP on the trot of ``bench_crocoddyl_locomotion.py``
(the "stock" variant: the trot written with Crocoddyl's own models, without a friction cone,
54 nodes: 50 intervals and 4 impulse nodes; in Crocoddyl's environment, the venv of
``bench_crocoddyl.py``), then optdyn's iLQR on ``problems.get("quadruped", scenario="trot")``
(50 intervals, the friction pyramids as constraints), then the same without them
(``mu=None``). Each process solves once to load or compile, then three times; the fastest wall
time per iteration is kept. Per knot-iteration: that time over the horizon's nodes. The
target (the issue's): ours with the pyramids ≤ 1.0× Crocoddyl's per knot-iteration; and an
iteration with the pyramids ≤ 1.3× one without.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from _common import ROOT, machine, run_in_tree, table, write_section

SOLVES = 3

CROCODDYL = """
import json
import crocoddyl
import bench_crocoddyl_locomotion as b
problem, x0, us0, _, _ = b.trot(b.solo12(), "stock")
xs0 = [x0.copy() for _ in range(problem.T + 1)]
best = float("inf")
for i in range({solves} + 1):
    (wall, _), solver, count, converged = b.solve_once(problem, crocoddyl.SolverFDDP, None, xs0, us0)
    if i:
        best = min(best, wall / count.iterations)
print("RESULT" + json.dumps({{"ms": best * 1e3, "iterations": count.iterations, "nodes": problem.T,
                             "converged": bool(converged)}}))
"""

OURS = """
import json, time
import optdyn, problems
p = problems.get("quadruped", scenario="trot", **{params})
best = float("inf")
for i in range({solves} + 1):
    t = time.perf_counter()
    r = optdyn.solve(p, "ilqr")
    if i:
        best = min(best, (time.perf_counter() - t) / r.iterations)
print("RESULT" + json.dumps({{"ms": best * 1e3, "iterations": r.iterations, "nodes": p.N, "converged": r.converged}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crocoddyl", default=os.path.join(ROOT, ".crocoddyl-venv", "bin", "python"),
                        help="the Python of Crocoddyl's environment")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"  # Crocoddyl's processes, one thread as ours
    rows, ratios, cone = [], [], []
    for r in range(args.rounds):
        croc = run_in_tree(ROOT, CROCODDYL.format(solves=SOLVES), 1, args.crocoddyl)
        ours = run_in_tree(ROOT, OURS.format(params="{}", solves=SOLVES), 1)
        free = run_in_tree(ROOT, OURS.format(params='{"mu": None}', solves=SOLVES), 1)
        ratios.append((ours["ms"] / ours["nodes"]) / (croc["ms"] / croc["nodes"]))
        cone.append(ours["ms"] / free["ms"])
        rows.append([r + 1, f"{croc['ms']:.2f} ({croc['iterations']}, {croc['nodes']} nodes)",
                     f"{ours['ms']:.2f} ({ours['iterations']}, {ours['nodes']} intervals)",
                     f"{free['ms']:.2f} ({free['iterations']})", f"{ratios[-1]:.3f}", f"{cone[-1]:.3f}"])
        print(rows[-1], flush=True)
    body = (f"## Solo-12's trot with its friction pyramids against Crocoddyl\n\n{machine()}, load average at the end "
            f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}. `benchmarks/bench_cone_crocoddyl.py --rounds "
            f"{args.rounds}` (the processes and the measure in its docstring); ms per iteration, the iterations in "
            "parentheses.\n\n"
            + table(["round", "Crocoddyl FDDP, its trot", "optdyn iLQR, trot with pyramids",
                     "optdyn iLQR, trot without", "per knot-iteration: ours with pyramids ÷ Crocoddyl",
                     "ours: with ÷ without"], rows)
            + f"\n\nMedian (range) over the rounds: ours with the pyramids ÷ Crocoddyl per knot-iteration "
              f"{np.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}), target ≤ 1.0; an iteration with the "
              f"pyramids ÷ one without {np.median(cone):.2f} ({min(cone):.2f}–{max(cone):.2f}), target ≤ 1.3.")
    write_section("cone-crocoddyl", body)


if __name__ == "__main__":
    main()
