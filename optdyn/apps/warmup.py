"""Compile ahead of time: fill the disk cache of the kernels that a set of solves needs, on
every core.

numba compiles a kernel the first time it is called, in the calling process, one kernel
at a time. Solves of different problems or solvers need partly different kernels, so
:func:`warm` runs one short solve (a single iteration) per job, each in its own process,
as many at once as there are cores; every process writes what it compiled to the shared
disk cache (:mod:`dynamics._cache`) and later solves, in any process, load it from there.

The command line's ``optdyn warmup [PROBLEM ...] [--solver S] [--all]`` calls it. The Dask
sweep's workers warm themselves before their first job (:func:`warm_once`): one worker
per machine compiles, holding a lock file, while the others wait for it
and then load, instead of every worker compiling the same kernels at once.
"""
from __future__ import annotations

import fcntl
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ..ocp.problem import SOLVERS


@dataclass(frozen=True)
class CompileJob:
    """One solve to compile for: ``factory(**params)`` solved by ``solver``."""

    label: str
    factory: Callable
    solver: str = "ddp"
    params: tuple = ()  # (name, value) pairs of the factory's parameters (hashable)


def compile_for(job: CompileJob) -> float:
    """Solve ``job`` for one iteration (compiling what it needs, or loading it from the disk
    cache); returns the seconds it took."""
    from ..solvers.solve import solve

    if job.solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {job.solver!r}")
    t0 = time.perf_counter()
    solve(job.factory(**dict(job.params)), job.solver, max_iter=1, verbose=False)
    return time.perf_counter() - t0


def warm(jobs: Sequence[CompileJob], processes: int | None = None, progress: bool = True) -> dict[str, float]:
    """Run :func:`compile_for` on every job, ``processes`` at a time (default: one per core,
    at most one per job), each in a fresh process; returns each job's seconds by label.
    A job that fails raises its exception here, naming the job."""
    if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int) or processes < 1):
        raise ValueError(f"processes: expected a positive integer or None, got {processes!r}")
    if not jobs:
        return {}
    processes = min(len(jobs), processes or os.cpu_count() or 1)
    seconds = {}
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool, \
            tqdm(total=len(jobs), desc="compiling", unit="job", file=sys.stderr, disable=not progress) as bar:
        futures = {pool.submit(compile_for, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                seconds[job.label] = future.result()
            except Exception as e:
                raise RuntimeError(f"warmup of {job.label}: {type(e).__name__}: {e}") from e
            bar.set_postfix_str(f"{job.label} {seconds[job.label]:.0f} s")
            bar.update(1)
    return seconds


_WARMED: set[str] = set()  # labels of the jobs this process has compiled for


def warm_once(job: CompileJob) -> None:
    """:func:`compile_for` ``job`` once per process, holding a lock file of this machine's
    user: processes of one machine that share the kernel cache compile once, the others
    wait and then load it."""
    if job.label in _WARMED:
        return
    with open(Path(tempfile.gettempdir()) / f"optdyn-warmup-{os.getuid()}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            compile_for(job)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _WARMED.add(job.label)
