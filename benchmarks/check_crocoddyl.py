"""Is bench_crocoddyl.py's Panda reach our task? Our cost and rollout at Crocoddyl's trajectories.

    .venv/bin/python benchmarks/check_crocoddyl.py   (optdyn's venv, after bench_crocoddyl.py)

Reads benchmarks/crocoddyl_panda.npz and .json (written in the Crocoddyl venv) and compares, for the
frames "panda_hand_tcp" and "panda_hand": our Problem.cost with Crocoddyl's total cost (variant
"exact", dt·ℓ(x_k, u_k)) at three random trajectories and at the solutions of Crocoddyl's solvers;
one interval of ours against theirs from the random knots and along the solutions; our rollout of
their controls against their states. The
problem is ``arm_reach`` of bench_convergence.py (the convergence benchmark's Panda reach) with the
frame as a parameter. Writes the section "crocoddyl check" of docs/benchmarks/.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
from _common import ROOT, machine, table, write_section
from bench_convergence import arm_reach

import optdyn


def panda_reach(frame: str) -> optdyn.Problem:
    """The convergence benchmark's Panda reach with ``frame`` as the hand."""
    return arm_reach("panda_description/urdf/panda.urdf", frame, (0.4, 0.2, 0.5), "panda-reach")


def main() -> None:
    warnings.filterwarnings("ignore", message="urdf: mesh")  # the visuals are not needed
    data = np.load(ROOT / "benchmarks" / "crocoddyl_panda.npz")
    runs = json.loads((ROOT / "benchmarks" / "crocoddyl_panda.json").read_text())
    rx, ru = data["random_xs"], data["random_us"]
    rows, solutions = [], []
    for frame in ("panda_hand_tcp", "panda_hand"):
        prob = panda_reach(frame)
        ours = np.array([prob.cost(x, u) for x, u in zip(rx, ru)])
        for variant in ("exact", "stock"):
            theirs = data[f"random_cost_{variant}_{frame}"]
            rows.append([frame, f"cost, Crocoddyl '{variant}'", ", ".join(f"{c:.6g}" for c in ours),
                         f"{np.max(np.abs(ours - theirs) / np.abs(theirs)):.1e}"])
        for r in runs["results"]:
            if r["frame"] == frame and r["variant"] == "exact":
                key = f"{r['solver']}_{r['th_stop']:g}_{frame}"
                xs, us = data[f"xs_{key}"], data[f"us_{key}"]
                c, ours = prob.cost(xs, us), prob.rollout(us)
                beyond = np.max(np.abs(us) - prob.u_upper).clip(0)
                gap = np.abs(prob.step(xs[:-1], us) - xs[1:]).max()
                solutions.append([frame, r["solver"], f"{r['th_stop']:g}", f"{r['cost']:.10f}", f"{c:.10f}",
                                  f"{abs(c - r['cost']):.1e}", f"{gap:.1e}", f"{np.abs(ours - xs).max():.1e}",
                                  f"{prob.cost(ours, us):.10f}", f"{beyond:.3g}"])
    step = np.array([prob.step(x[:-1], u) for x, u in zip(rx, ru)])
    scale = np.abs(step).max(axis=(1, 2))
    rows.append(["any", "one RK4 step x⁺ from each (x_k, u_k)", ", ".join(f"‖x⁺‖∞ {s:.3g}" for s in scale),
                 f"{(np.abs(step - data['random_steps']).max(axis=(1, 2)) / scale).max():.1e}"])
    body = ("## Crocoddyl's Panda reach is ours: the check\n\n"
            f"{machine()}; Crocoddyl's figures from {runs['machine']}. `benchmarks/check_crocoddyl.py` "
            "(optdyn's venv) reads the trajectories `benchmarks/bench_crocoddyl.py` saved in the Crocoddyl venv "
            "and evaluates our `Problem.cost` and `Problem.rollout` at them. Random trajectories: three pairs "
            "(xs, us) of normal entries, scales (0.1, 1), (0.5, 5), (1, 20), and one interval from each of their "
            "knots (random controls are no use for whole rollouts: the Panda's open-loop RK4 rollout at dt = 0.05 "
            "diverges under most of them, in Crocoddyl as in ours). At the solutions, F(x_k, u_k) − x_{k+1} "
            "compares one interval of ours with Crocoddyl's; our whole rollout from x0 differs more, by "
            "roundoff grown over 40 intervals (the costs at it agree to 10 digits).\n\n"
            + table(["frame", "quantity", "ours", "largest relative difference"], rows)
            + "\n\nOur cost at the solutions of Crocoddyl's solvers (variant \"exact\"):\n\n"
            + table(["frame", "solver", "th_stop", "Crocoddyl's cost", "our cost", "difference",
                     "‖F(x_k, u_k) − x_{k+1}‖∞", "‖our rollout of us − xs‖∞", "our cost, our rollout",
                     "largest excess of u over the limits"], solutions))
    write_section("crocoddyl check", body)


if __name__ == "__main__":
    main()
