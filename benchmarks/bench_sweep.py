"""Sweep benchmarks → docs/benchmarks/, section "sweep".

* Throughput: one pendulum sweep (6 grid points × 4 starts = 24 DDP jobs) on a warm
  LocalCluster of 1 worker and of 2 workers (1 thread each); jobs per second and the
  2-vs-1 ratio (target ≥ 1.7×).
* Per-job overhead: pendulum sweeps of 1 and 36 grid points (start 0 only) on 1 warm worker
  against a plain in-process `optdyn.solve` of the same problems (target ≤ 5 %), in CPU time
  (worker processes + this process, which holds the client and the scheduler), which other
  load on the machine disturbs far less than wall time. The marginal cost of a job,
  (C36 − C1)/35, is everything the sweep spends per job — building the problem on the
  worker, Dask's scheduling and transfers, npz and CSV — and C1 minus it the sweep's fixed
  cost (connecting, manifest, summary, plot). Wall time per job of the 36-job sweep is given
  beside it.
* Multi-start on arm-obstacle: 8 starts per scenario with DDP and with IPOPT; distinct
  local optima found, best cost against the cost reached from the default guess (start 0).

Clusters are pre-warmed (each worker runs `optdyn.apps.warmup.warm_once` on the pendulum's DDP and
arm-obstacle's IPOPT: a short solve of each, loading the numba kernels from the disk cache) so that compilation is not timed; the
sweeps reach them by address, as a user's sweep reaches a running cluster.

Run: .venv/bin/python benchmarks/bench_sweep.py     (a few minutes on 2 cores)
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import optdyn
import problems
from _common import machine, table, write_section
from optdyn.apps.sweep import SweepSummary, local_cluster
from optdyn.apps.warmup import CompileJob, warm_once

PENDULUM = problems.factory("pendulum")
THROUGHPUT_GRID = {"u_max": [4.5, 5.0, 5.5, 6.0, 6.5, 7.0]}
THROUGHPUT_STARTS = 4
OVERHEAD_GRIDS = ({"u_max": [5.0]}, {"u_max": [round(5.0 + 0.1 * i, 1) for i in range(36)]})
ARM_STARTS = 8
REPEAT = 3
REPEAT_THROUGHPUT = 5


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


def cpu_sweep(client, address: str, grid: dict) -> tuple[float, float, float]:
    """(wall s, CPU s of the workers and of this process, mean CPU s of a job on its worker)
    of one start-0 sweep."""
    w0, c0 = sum(client.run(time.process_time).values()), time.process_time()
    wall, summary = timed_sweep(address, grid, 1)
    w1, c1 = sum(client.run(time.process_time).values()), time.process_time()
    return wall, (w1 - w0) + (c1 - c0), float(np.mean([r["cpu_time"] for r in summary.rows]))


def plain_solves(grid: dict) -> tuple[float, float]:
    """(wall s, CPU s) of in-process `optdyn.solve` on every point of a one-key grid (start 0),
    on one thread as a sweep job solves (:func:`optdyn.apps.sweep.run_job`)."""
    (key, values), = grid.items()
    probs = [PENDULUM(**{key: v}) for v in values]
    threads = optdyn.get_num_threads()
    optdyn.set_num_threads(1)
    try:
        optdyn.solve(probs[0])  # warm
        t, c = time.perf_counter(), time.process_time()
        for p in probs:
            optdyn.solve(p)
        return time.perf_counter() - t, time.process_time() - c
    finally:
        optdyn.set_num_threads(threads)


def multistart_note(rows: list[list]) -> str:
    """One sentence on what multi-start found on arm-obstacle (from the table rows)."""
    worse = [float(r[4].split("; ")[-1].split(" ")[0]) / float(r[5]) for r in rows if r[3] > 1]
    default_best = all(r[7] == "1.000" for r in rows)
    return (("The default guess (start 0) already reaches the best optimum found; "
             if default_best else "Multi-start improved on the default guess where best / start 0 < 1; ")
            + (f"the perturbed starts also land in {'another local optimum' if len(worse) else 'no other optimum'}"
               + (f", {min(worse):.2f}–{max(worse):.2f}× its cost, and DDP and IPOPT find the same optima "
                  f"(costs equal to 6 digits)." if worse else ".")))


def main() -> None:
    from distributed import Client

    load_before = os.getloadavg()[0]
    cpu_model = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    clusters = {}
    try:
        for n in (1, 2):
            cluster = local_cluster(n)  # the embedded cluster of optdyn.sweep, kept alive
            client = Client(cluster, set_as_default=False)
            client.run(warm_once, CompileJob("bench_sweep pendulum ddp", PENDULUM, "ddp"))
            client.run(warm_once, CompileJob("bench_sweep arm-obstacle ipopt", problems.arm_obstacle.make, "ipopt"))
            clusters[n] = (cluster, client)
        njobs = len(THROUGHPUT_GRID["u_max"]) * THROUGHPUT_STARTS
        walls = {1: [], 2: []}
        for _ in range(REPEAT_THROUGHPUT):  # interleaved, best of REPEAT_THROUGHPUT (the machine is shared)
            for n in (1, 2):
                walls[n].append(timed_sweep(clusters[n][0].scheduler_address, THROUGHPUT_GRID, THROUGHPUT_STARTS)[0])
        best = {n: min(w) for n, w in walls.items()}
        speedup = best[1] / best[2]

        arm_rows = []
        for solver in ("ddp", "ipopt"):
            wall, summary = timed_sweep(clusters[2][0].scheduler_address, {"scenario": ["bent", "straight"]},
                                        ARM_STARTS, factory=problems.arm_obstacle.make, solver=solver)
            for ps in summary.points:
                optima = "; ".join(f"{o.cost:.6f} ({len(o.starts)})" for o in ps.optima)
                arm_rows.append([ps.point["scenario"], solver, f"{ps.converged}/{ps.jobs}", len(ps.optima), optima,
                                 f"{ps.best['cost']:.6f}", f"{ps.default_cost:.6f}",
                                 f"{ps.best['cost'] / ps.default_cost:.3f}", wall])

        cluster, client = clusters.pop(2)  # overhead: only the 1-worker cluster runs
        client.close()
        cluster.close()
        one = clusters[1]
        small, large = (len(g["u_max"]) for g in OVERHEAD_GRIDS)
        runs = {"small": [], "large": [], "plain": []}
        for _ in range(REPEAT):
            runs["small"].append(cpu_sweep(one[1], one[0].scheduler_address, OVERHEAD_GRIDS[0]))
            runs["large"].append(cpu_sweep(one[1], one[0].scheduler_address, OVERHEAD_GRIDS[1]))
            wall, cpu = plain_solves(OVERHEAD_GRIDS[1])
            runs["plain"].append((wall / large, cpu / large))
        c_small, c_large = min(r[1] for r in runs["small"]), min(r[1] for r in runs["large"])
        per_job_cpu = (c_large - c_small) / (large - small)
        fixed_cpu = c_small - per_job_cpu
        pl_wall, pl_cpu = min(r[0] for r in runs["plain"]), min(r[1] for r in runs["plain"])
        sweep_wall = min(r[0] for r in runs["large"]) / large
        job_cpu = min(r[2] for r in runs["large"])
        overhead_cpu, overhead_wall = per_job_cpu / pl_cpu - 1.0, sweep_wall / pl_wall - 1.0
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()

    load_after = os.getloadavg()[0]
    body = f"""## Sweeps (Dask)

{machine()}; `lscpu`: {cpu_model.replace("Model name:", "").strip()}. 1-minute load average {load_before:.1f} at the
start and {load_after:.1f} at the end of the run (the machine was shared with other work: above 2 on 2 cores the
figures carry that noise). Timings are the best of {REPEAT_THROUGHPUT} (throughput) or {REPEAT} (overhead)
interleaved runs, ratios taken within this run.
Workers pre-warmed (kernels from the numba disk cache).

### Throughput (target: 2 workers ≥ 1.7× 1 worker)

{table(["workers", "jobs", "wall s", "jobs / s"],
       [[n, njobs, best[n], njobs / best[n]] for n in (1, 2)])}

2 local workers vs 1: **{speedup:.2f}×** the throughput (pendulum, 6 grid points × 4 starts, DDP).

### Per-job overhead (target ≤ 5 %)

{table(["per job (ms)", "CPU", "wall"],
       [["plain `optdyn.solve`, in-process, one thread", pl_cpu * 1e3, pl_wall * 1e3],
        ["of a sweep job: the job itself on its worker (build the problem + solve; thread CPU)", job_cpu * 1e3, ""],
        [f"sweep job, marginal (C{large} − C{small})/{large - small}; wall: W{large}/{large}", per_job_cpu * 1e3,
         sweep_wall * 1e3]])}

Overhead of a sweep job over a plain pendulum solve (1 warm worker, start 0 only): **{100 * overhead_cpu:+.1f} %**
in CPU time (wall time, fixed costs included: {100 * overhead_wall:+.1f} %). Fixed cost of a sweep (connect,
manifest, summary, plot): {fixed_cpu:.2f} CPU s.

### Multi-start on arm-obstacle ({ARM_STARTS} starts per scenario, 2 workers)

{table(["scenario", "solver", "converged", "distinct optima", "optima: cost (starts)", "best cost",
        "start-0 cost", "best / start 0", "sweep wall s"], arm_rows)}

Distinct optima: converged results grouped by cost (relative 1e-3) and trajectory (max state difference 1e-2).
{multistart_note(arm_rows)}
"""
    write_section("sweep", body)


if __name__ == "__main__":
    main()
