"""Sweep benchmarks (issue 14) → BENCHMARKS.md, section "sweep".

* Throughput: one pendulum sweep (6 grid points × 4 starts = 24 DDP jobs) on a warm
  LocalCluster of 1 worker and of 2 workers (1 thread each); jobs per second and the
  2-vs-1 ratio (target ≥ 1.7×).
* Per-job overhead: a 24-point pendulum grid (start 0 only) on 1 warm worker, wall time
  per job against a plain in-process `optdyn.solve` of the same 24 problems (target ≤ 5 %).
  The overhead is everything the sweep adds: building the problem on the worker, Dask's
  scheduling and transfer, writing the npz and the CSV row.
* Multi-start on arm-obstacle: 8 starts per scenario with DDP and with IPOPT; distinct
  local optima found, best cost against the cost reached from the default guess (start 0).

Clusters are pre-warmed (each worker imports optdyn and runs a 1-iteration pendulum solve,
loading the numba kernels from the disk cache) so that compilation is not timed; the
sweeps reach them by address, as a user's sweep reaches a running cluster.

Run: .venv/bin/python benchmarks/bench_sweep.py     (a few minutes on 2 cores)
"""
from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import optdyn
import problems
from _common import machine, table, write_section
from optdyn.sweep import SweepSummary

PENDULUM = problems.factory("pendulum")
THROUGHPUT_GRID = {"u_max": [4.5, 5.0, 5.5, 6.0, 6.5, 7.0]}
THROUGHPUT_STARTS = 4
OVERHEAD_GRID = {"u_max": [round(5.0 + 0.1 * i, 1) for i in range(24)]}
ARM_STARTS = 8
REPEAT = 2


def warm() -> str:
    """Run on each worker: import and solve a tiny problem (numba kernels from the disk cache)."""
    import optdyn as od
    import problems as pb

    od.solve(pb.get("pendulum", N=10), max_iter=1)
    return "warm"


def timed_sweep(address: str, grid: dict, starts: int, **kw) -> tuple[float, SweepSummary]:
    """Wall time of one sweep into a fresh directory, and its summary."""
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        summary = optdyn.sweep(kw.pop("factory", PENDULUM), grid, starts=starts, out=Path(tmp) / "out",
                               scheduler=address, progress=False, **kw)
        wall = time.perf_counter() - t
    if summary.failed:
        raise RuntimeError(f"benchmark sweep had {summary.failed} failed jobs")
    return wall, summary


def plain_solves(grid: dict) -> float:
    """Total in-process time of `optdyn.solve` on every point of a one-key grid (start 0)."""
    (key, values), = grid.items()
    probs = [PENDULUM(**{key: v}) for v in values]
    optdyn.solve(probs[0])  # warm
    t = time.perf_counter()
    for p in probs:
        optdyn.solve(p)
    return time.perf_counter() - t


def main() -> None:
    from distributed import Client, LocalCluster

    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    clusters = {}
    try:
        for n in (1, 2):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None)
            client = Client(cluster, set_as_default=False)
            client.run(warm)
            clusters[n] = (cluster, client)
        njobs = len(THROUGHPUT_GRID["u_max"]) * THROUGHPUT_STARTS
        walls = {1: [], 2: []}
        overhead_sweep, overhead_plain = [], []
        for _ in range(REPEAT):  # interleaved, best of REPEAT (the machine is shared)
            for n in (1, 2):
                walls[n].append(timed_sweep(clusters[n][0].scheduler_address, THROUGHPUT_GRID, THROUGHPUT_STARTS)[0])
            overhead_sweep.append(timed_sweep(clusters[1][0].scheduler_address, OVERHEAD_GRID, 1)[0])
            overhead_plain.append(plain_solves(OVERHEAD_GRID))
        best = {n: min(w) for n, w in walls.items()}
        speedup = best[1] / best[2]
        per_job_sweep = min(overhead_sweep) / len(OVERHEAD_GRID["u_max"])
        per_job_plain = min(overhead_plain) / len(OVERHEAD_GRID["u_max"])
        overhead = per_job_sweep / per_job_plain - 1.0

        arm_rows = []
        for solver in ("ddp", "ipopt"):
            wall, summary = timed_sweep(clusters[2][0].scheduler_address, {"scenario": ["bent", "straight"]},
                                        ARM_STARTS, factory=problems.arm_obstacle.make, solver=solver)
            for ps in summary.points:
                optima = "; ".join(f"{o.cost:.6f} ({len(o.starts)})" for o in ps.optima)
                arm_rows.append([ps.point["scenario"], solver, f"{ps.converged}/{ps.jobs}", len(ps.optima), optima,
                                 f"{ps.best['cost']:.6f}", f"{ps.default_cost:.6f}",
                                 f"{ps.best['cost'] / ps.default_cost:.3f}", wall])
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()

    body = f"""## Sweeps (Dask) (issue 14)

{machine()}; `lscpu`: {cpu.replace("Model name:", "").strip()}. Other work shared the machine; timings are best of {REPEAT}
interleaved runs, ratios taken within this run. Workers pre-warmed (kernels from the numba disk cache).

### Throughput (target: 2 workers ≥ 1.7× 1 worker)

{table(["workers", "jobs", "wall s", "jobs / s"],
       [[n, njobs, best[n], njobs / best[n]] for n in (1, 2)])}

2 local workers vs 1: **{speedup:.2f}×** the throughput (pendulum, 6 grid points × 4 starts, DDP).

### Per-job overhead (target ≤ 5 %)

{table(["", "per job ms"], [["plain `optdyn.solve` in-process", per_job_plain * 1e3],
                            ["sweep job on 1 warm worker (build, solve, Dask, npz + CSV)", per_job_sweep * 1e3]])}

Overhead of a sweep job over a plain pendulum solve: **{100 * overhead:+.1f} %** (24 grid points, start 0).

### Multi-start on arm-obstacle ({ARM_STARTS} starts per scenario, 2 workers)

{table(["scenario", "solver", "converged", "distinct optima", "optima: cost (starts)", "best cost",
        "start-0 cost", "best / start 0", "sweep wall s"], arm_rows)}

Distinct optima: converged results grouped by cost (relative 1e-3) and trajectory (max state difference 1e-2).
"""
    write_section("sweep", body)


if __name__ == "__main__":
    main()
