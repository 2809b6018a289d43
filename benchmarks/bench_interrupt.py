"""Stopping a solve: Ctrl-C-to-exit latency of the command line and max_time overshoot.

* Ctrl-C: ``python -m optdyn solve PROBLEM --solver S`` is started, SIGINT is sent once
  the 3rd iteration line is printed, and the time until the process has exited (summary
  printed, exit code 130) is measured.
* max_time: ``optdyn.solve(problem, solver, max_time=T)`` in process (kernels warm);
  overshoot = wall_time − T of the runs that stopped with status "time_limit".

Writes the section "interrupt" of docs/benchmarks/.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

from _common import machine, table, write_section

REPEAT = 5
PROBLEMS = (("arm-obstacle", ()), ("ur5-reach", ()))
SOLVERS = ("ddp", "ilqr", "ipopt")
LIMITS = (0.05, 0.2, 1.0)


def ctrl_c_latency(problem: str, solver: str) -> float:
    """Seconds from SIGINT (sent at iteration 3) to the exit of the command line."""
    proc = subprocess.Popen([sys.executable, "-m", "optdyn", "solve", problem, "--solver", solver,
                             "--max-iter", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    for line in proc.stdout:
        if re.match(r"^\s+3\s+cost ", line):
            break
    else:
        raise RuntimeError(f"{problem}/{solver}: ended before iteration 3: {proc.stderr.read()}")
    t = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    latency = time.perf_counter() - t
    if proc.returncode != 130:
        raise RuntimeError(f"{problem}/{solver}: exit code {proc.returncode}, expected 130")
    return latency


def overshoot(problem, solver: str, limit: float) -> float | None:
    """wall_time − max_time of one run stopped by the limit (None if it ended first)."""
    import optdyn

    res = optdyn.solve(problem, solver, max_time=limit, max_iter=100000)
    return res.wall_time - limit if res.status == "time_limit" else None


def main() -> None:
    import problems

    rows = []
    for name, _ in PROBLEMS:
        for solver in SOLVERS:
            lat = [ctrl_c_latency(name, solver) for _ in range(REPEAT)]
            rows.append([name, solver, float(np.median(lat)), float(np.max(lat))])
    over = []
    for name, _ in PROBLEMS:
        prob = problems.get(name)
        for solver in SOLVERS:
            overshoot(prob, solver, LIMITS[0])  # warm-up (loads the cached kernels)
            for limit in LIMITS:
                o = [x for x in (overshoot(prob, solver, limit) for _ in range(REPEAT)) if x is not None]
                over.append([name, solver, limit, len(o), float(np.median(o)) if o else "–",
                             float(np.max(o)) if o else "–"])
    body = "\n".join([
        "## Stopping a solve", "", machine(), "",
        f"### Ctrl-C to exit of `optdyn solve` (SIGINT at iteration 3, {REPEAT} runs; s)", "",
        table(["problem", "solver", "median", "max"], rows), "",
        "Includes printing the summary (task errors, clearance) and the interpreter's exit.", "",
        f"### `max_time` overshoot: wall_time − max_time (s, {REPEAT} runs per limit, kernels warm)", "",
        table(["problem", "solver", "max_time", "runs stopped", "median", "max"], over), "",
        "DDP/iLQR check the clock between iterations and between line-search trials, IPOPT at "
        "every iteration (and its own max_wall_time): the overshoot is at most about one "
        "derivative evaluation plus one backward pass.",
    ])
    write_section("interrupt", body)


if __name__ == "__main__":
    main()
