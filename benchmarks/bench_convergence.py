"""Iterations, cost reached and wall time of every solver on the reference arms.

    .venv/bin/python benchmarks/bench_convergence.py

Solvers: DDP and iLQR, each in single and multiple shooting (feasibility-driven, from the
problem's own guess: its xs_init and us_init), and IPOPT (exact Hessian), all from the
problem's default guess, at most 1000 iterations; DDP also with ``indefinite="gauss_newton"``
(with and without the box phase) and IPOPT also with three ``perturb_dec_fact`` of the
Panda's grid in BENCHMARKS.md (RUNS). Tasks:

* Panda reach (example-robot-data's Franka Panda, 9 joints with the two fingers; the task of
  the issue "Converge like the best on real robots"): x0 = 0 at rest, N = 40, dt = 0.05, one
  RK4 step per interval, running cost ½·1e-2‖x − x0‖² + ½·1e-3‖u − g(q0)‖² +
  ½·10‖p_hand − (0.4, 0.2, 0.5)‖², terminal ½·1e4‖p_hand − p*‖², torques within the
  effort limits (:func:`arm_reach`);
* Z1 reach (example-robot-data's Unitree Z1, 6 joints and the gripper), the same costs with
  the target (0.4, 0.1, 0.3) for ``gripperStator``;
* ur5-reach, arm-obstacle (both scenarios: DDP/iLQR through the augmented Lagrangian) and
  the space manipulator, as shipped.

Writes the section "convergence" of BENCHMARKS.md; iterations and costs do not depend on the
machine, wall times do (NUMBA_NUM_THREADS=1 recommended on a shared machine). If
``benchmarks/crocoddyl_panda.json`` exists (written by ``bench_crocoddyl.py`` in its own
environment) its rows are added beside ours.

    .venv/bin/python benchmarks/bench_convergence.py --family

IPOPT's option sets (FAMILY_SETS) on a family of Panda reaches (:func:`panda_family`: 30
targets and horizons drawn with a fixed seed), so that an option is judged by its effect on
the task class rather than on one task, where the iteration count jumps between
neighbouring settings; writes the section "convergence-family".
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import example_robot_data
import numpy as np
from _common import machine, table, write_section

import dynamics as dyn
import optdyn
import problems
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from problems import panda_reach

ROBOTS = Path(example_robot_data.getModelPath("panda_description/urdf/panda.urdf"))
CROCODDYL = Path(__file__).with_name("crocoddyl_panda.json")


def arm_reach(urdf: str, frame: str, target, name: str) -> optdyn.Problem:
    """The reach of the module docstring for the robot ``urdf`` (relative to example-robot-data's
    robots directory): ``frame`` to ``target`` from q = 0 at rest."""
    model = dyn.load_urdf(str(ROBOTS / urdf))
    x0 = np.zeros(model.nq + model.nv)
    g0 = dyn.gravity_torques(model, x0[:model.nq])
    target = np.asarray(target, dtype=float)
    return optdyn.Problem(model, x0, N=40, dt=0.05, substeps=1,
                          running_cost=StateCost(1e-2, x0) + ControlCost(1e-3, g0)
                          + FramePositionCost(model, frame, target, 10.0),
                          terminal_cost=FramePositionCost(model, frame, target, 1e4),
                          u_lower=-model.effort_limit, u_upper=model.effort_limit, name=name)


def tasks():
    yield "Panda reach", arm_reach("panda_description/urdf/panda.urdf", "panda_hand", (0.4, 0.2, 0.5), "panda-reach")
    yield "Z1 reach", arm_reach("z1_description/urdf/z1.urdf", "gripperStator", (0.4, 0.1, 0.3), "z1-reach")
    yield "ur5-reach", problems.get("ur5-reach")
    for scenario in ("bent", "straight"):
        yield f"arm-obstacle {scenario}", problems.get("arm-obstacle", scenario=scenario)
    yield "space-manipulator", problems.get("space-manipulator")


RUNS = (("ddp", {"shooting": "single"}), ("ddp", {"shooting": "multiple"}),
        ("ddp", {"shooting": "single", "cost_hessian": "gauss_newton"}),
        ("ilqr", {"shooting": "single"}), ("ilqr", {"shooting": "multiple"}),
        ("ilqr", {"shooting": "single", "cost_hessian": "gauss_newton"}),
        ("ilqr", {"shooting": "multiple", "cost_hessian": "gauss_newton"}),
        ("ddp", {"shooting": "single", "box": "after_full_step"}),
        ("ilqr", {"shooting": "single", "box": "after_full_step"}),
        ("ilqr", {"shooting": "single", "cost_hessian": "gauss_newton", "box": "after_full_step"}),
        ("ddp", {"shooting": "single", "indefinite": "gauss_newton"}),
        ("ddp", {"shooting": "single", "indefinite": "gauss_newton", "box": "after_full_step"}),
        ("ipopt", {}), ("ipopt", {"nlp_scaling_method": "none"}), ("ipopt", {"mu_strategy": "adaptive"}),
        ("ipopt", {"nlp_scaling_method": "none", "mu_strategy": "adaptive"}),
        ("ipopt", {"nlp_scaling_method": "none", "perturb_dec_fact": 0.01}),
        ("ipopt", {"nlp_scaling_method": "none", "perturb_dec_fact": 0.02}), ("ipopt", {"perturb_dec_fact": 0.05}))
"""Every solver × option set measured; a problem's own ``solver_options`` are overridden by
none of these unless named (the table shows the options in effect)."""


def crocoddyl_rows() -> list[list]:
    """Crocoddyl's solvers on the Panda reach with our cost (variant "exact"), to th_stop 1e-10."""
    if not CROCODDYL.exists():
        return []
    data = json.loads(CROCODDYL.read_text())
    return [["Panda reach", f"Crocoddyl {data['crocoddyl']} {r['solver']}",
             "converged" if r["converged"] else "max_iter", r["iterations"], f"{r['cost']:.7f}", f"{r['wall_s']:.2f}"]
            for r in data["results"]
            if r["frame"] == "panda_hand" and r["variant"] == "exact" and r["th_stop"] == 1e-10]


IPOPT_DEFAULTS = {"nlp_scaling_method": "gradient-based", "mu_strategy": "monotone", "perturb_dec_fact": 1 / 3}
"""IPOPT's own defaults for the options the sets below change (they override the Panda's shipped ones)."""
FAMILY_SETS = (("IPOPT's defaults", {}),
               ("nlp_scaling_method=none, mu_strategy=adaptive (shipped until 2026-11-28)",
                {"nlp_scaling_method": "none", "mu_strategy": "adaptive"}),
               ("nlp_scaling_method=none", {"nlp_scaling_method": "none"}),
               *((f"nlp_scaling_method=none, perturb_dec_fact={v:g}" + (" (shipped)" if v == 0.02 else ""),
                  {"nlp_scaling_method": "none", "perturb_dec_fact": v}) for v in (0.005, 0.01, 0.02, 0.05)),
               ("perturb_dec_fact=0.02", {"perturb_dec_fact": 0.02}))


def panda_family(n: int = 30, seed: int = 0):
    """``n`` Panda reaches (:func:`problems.panda_reach.make`): targets uniform in the box
    [0.3, 0.55] × [−0.2, 0.3] × [0.35, 0.65] m in front of the robot, N in {30, 40, 50}."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        target = tuple(float(t) for t in np.round(rng.uniform((0.3, -0.2, 0.35), (0.55, 0.3, 0.65)), 3))
        yield panda_reach.make(N=int(rng.choice([30, 40, 50])), target=target)


def family_main() -> None:
    """IPOPT's iterations on the Panda family under each of FAMILY_SETS: median, worst, how
    many within the issue's 120, how often the lowest cost any set found, total wall time."""
    runs = {label: [] for label, _ in FAMILY_SETS}
    for prob in panda_family():
        for label, options in FAMILY_SETS:
            t0 = time.perf_counter()
            res = optdyn.solve(prob, "ipopt", max_iter=500, **{**IPOPT_DEFAULTS, **options})
            runs[label].append((res.iterations if res.converged else np.inf, res.cost, time.perf_counter() - t0))
        print(prob.params, [r[-1][:2] for r in runs.values()], flush=True)
    best = np.min([[c for _, c, _ in r] for r in runs.values()], axis=0)
    rows = []
    for label, r in runs.items():
        its, costs, wall = (np.array(a) for a in zip(*r))
        rows.append([label, f"{np.median(its):g}", f"{its.max():g}", f"{np.sum(its <= 120)}/{len(its)}",
                     f"{np.sum(costs <= best * (1 + 1e-6))}/{len(its)}", f"{wall.sum():.1f}"])
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    body = (f"## IPOPT on a family of Panda reaches\n\n{machine()}, NUMBA_NUM_THREADS={threads}. "
            "`benchmarks/bench_convergence.py --family`: 30 Panda reaches (targets and horizons in `panda_family`'s "
            "docstring), IPOPT with the exact Hessian from the default guess, at most 500 iterations (a run that does "
            "not converge counts as infinitely many); \"lowest cost\": the runs that end within 1e-6 of the lowest "
            "cost any option set reached on that task.\n\n"
            + table(["IPOPT options", "median iterations", "worst", "≤ 120", "lowest cost", "wall s (all 30)"], rows))
    write_section("convergence-family", body)


def main() -> None:
    rows = []
    for task, prob in tasks():
        for solver, options in RUNS:
            optdyn.solve(prob, solver, max_iter=1, **options)  # compiled or loaded before timing
            t0 = time.perf_counter()
            res = optdyn.solve(prob, solver, max_iter=1000, **options)
            label = " ".join([solver] + [f"{k}={v}" for k, v in options.items()])
            rows.append([task, label, res.status, res.iterations, f"{res.cost:.7f}",
                         f"{time.perf_counter() - t0:.2f}"])
            print(rows[-1], flush=True)
    rows += crocoddyl_rows()
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    body = (f"## Convergence on the reference arms\n\n{machine()}, NUMBA_NUM_THREADS={threads}. "
            "`benchmarks/bench_convergence.py` (tasks and guesses in its docstring). Iterations of DDP/iLQR are "
            "backward passes; inside the augmented Lagrangian (arm-obstacle) they are summed over its outer "
            "iterations.\n\n" + table(["task", "solver", "status", "iterations", "cost", "wall s"], rows))
    write_section("convergence", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="store_true", help="IPOPT's option sets on the Panda family instead")
    family_main() if parser.parse_args().family else main()
