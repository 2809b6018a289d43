"""Solver benchmarks → docs/benchmarks/, section "ocp".

* ur5-reach (the reaching benchmark): iLQR and DDP iterations, time per
  iteration and total, warm (a first solve compiles); DDP/iLQR cost per iteration as the
  in-run ratio.
* DDP vs iLQR convergence (optdyn.compare) on ur5-reach, pendulum and double pendulum.
* arm-obstacle (the case study of Neunert et al. (2016)): every solver × scenario — status, iterations,
  time per iteration, total, cost, minimum clearance over every RK4 sub-step; IPOPT with
  the exact Hessian and with L-BFGS.
* The command line end to end: `optdyn solve arm-obstacle --html` cold (empty numba
  cache) and warm.

Run: .venv/bin/python benchmarks/bench_ocp.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import optdyn
import problems
from _common import machine, table, write_section

ARM_RUNS = [("ddp", {}), ("ilqr", {}), ("ipopt", {"hessian": "exact"}), ("ipopt", {"hessian": "lbfgs"})]


def warm_solve(problem, solver: str, **options):
    """Best-of-3 solve after one warm-up (compilation) solve."""
    optdyn.solve(problem, solver=solver, **options)
    return min((optdyn.solve(problem, solver=solver, **options) for _ in range(3)), key=lambda r: r.wall_time)


def reach_table() -> str:
    prob = problems.get("ur5-reach")
    rows, per_it = [], {}
    for solver in ("ilqr", "ddp"):
        r = warm_solve(prob, solver)
        per_it[solver] = r.wall_time / r.iterations * 1e3
        rows.append([solver, r.status, r.iterations, f"{r.cost:.10f}", r.wall_time * 1e3, per_it[solver]])
    ratio = per_it["ddp"] / per_it["ilqr"]
    return ("### ur5-reach (targets: ≤ 5 ms per iLQR iteration, ≤ 15 ms per DDP iteration)\n\n"
            + table(["solver", "status", "iterations", "cost", "total ms", "ms / iteration"], rows)
            + f"\n\nDDP's iteration (contracted second-order dynamics terms) costs {ratio:.1f}× an iLQR iteration.")


def comparison_tables() -> str:
    out = ["### DDP vs iLQR convergence (`optdyn.compare`)"]
    for name in ("ur5-reach", "pendulum", "double-pendulum"):
        c = optdyn.compare(problems.get(name))
        out.append(f"```\n{c.text}\n```")
    return "\n\n".join(out)


def arm_table() -> str:
    rows = []
    for scenario in ("bent", "straight"):
        prob = problems.get("arm-obstacle", scenario=scenario)
        for solver, opts in ARM_RUNS:
            r = warm_solve(prob, solver, **opts)
            label = solver + (f" ({opts['hessian']})" if opts else "")
            clear = optdyn.clearances(prob, r.xs, r.us).min
            rows.append([scenario, label, r.status, r.iterations, r.wall_time * 1e3,
                         r.wall_time / max(r.iterations, 1) * 1e3, f"{r.cost:.6f}", f"{clear * 1e3:.1f}"])
    return ("### arm-obstacle, 20 intervals × 4 RK4 steps (target: IPOPT exact ≤ 10 ms per iteration, "
            "no more iterations than L-BFGS)\n\n"
            + table(["scenario", "solver", "status", "iterations", "total ms", "ms / iteration", "cost",
                     "min clearance mm (margin 50)"], rows))


def cli_times() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"))
        cmd = [sys.executable, "-m", "optdyn", "solve", "arm-obstacle", "--html", os.path.join(tmp, "a.html")]
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    return (f"### Command line\n\n`optdyn solve arm-obstacle --html out.html` end to end (import, solve, "
            f"write HTML): cold, empty numba cache {times[0]:.1f} s (target ≤ 90 s); warm {times[1]:.1f} s "
            "(target ≤ 10 s).")


def main() -> None:
    body = "\n\n".join([
        "## Optimal control",
        f"Machine: {machine()}. Script: `benchmarks/bench_ocp.py`. Warm (a first solve compiles), best of 3.",
        reach_table(), comparison_tables(), arm_table(), cli_times(),
    ])
    write_section("ocp", body)


if __name__ == "__main__":
    main()
