"""Compile ahead of time: the kernels a problem's solves will need, in this process
(:func:`warmup`), or those of a set of solves on every core, into the disk cache (:func:`warm`).

numba compiles a kernel the first time it is called, in the calling process, one kernel
at a time, or loads it from the disk cache (:mod:`dynamics._cache`) if an earlier process
compiled it. :func:`warmup` makes the next solve of a problem — the one a user times —
compile and load nothing: it runs every path of the solvers' calls into compiled code, a
short solve per solver and the rollout of the initial controls (a solve of two iterations
alone leaves the rollout that DDP makes once multiple shooting's gaps close: on a cold
cache, seconds of compilation inside the timed solve).

Solves of different problems or solvers need partly different kernels, so :func:`warm` runs
:func:`warmup` per job, each in its own process, as many at once as there are cores; every
process writes what it compiled to the shared disk cache and later solves, in any process,
load it from there.

The command line's ``optdyn warmup [PROBLEM ...] [--solvers S,...] [--all]`` calls it, and
``optdyn warmup --script FILE`` calls :func:`warmup` on the problems a script of one's own
defines at module level (:func:`script_problems`). The Dask sweep's workers warm themselves
before their first job (:func:`warm_once`): one worker per machine compiles, holding a lock
file, while the others wait for it and then load, instead of every worker compiling the
same kernels at once.
"""
from __future__ import annotations

import fcntl
import multiprocessing
import os
import runpy
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ..ocp.problem import SOLVERS, Problem


@dataclass(frozen=True)
class CompileJob:
    """One solve to compile for: ``factory(**params)`` solved by ``solver``."""

    label: str
    factory: Callable
    solver: str = "ddp"
    params: tuple = ()  # (name, value) pairs of the factory's parameters (hashable)


WARMUP_ITERATIONS = 2
"""Iterations of each solver's warm-up solve (a first one, and one from an accepted step)."""


def warmup(problem: Problem, solvers: str | Sequence[str] = SOLVERS, **options) -> dict[str, float]:
    """Compile, or load from the disk cache, every kernel that solving ``problem`` with each
    of ``solvers`` ("ddp", "ilqr", "ipopt", or one of them) will call, so that the next
    :func:`optdyn.solve` of it compiles and loads nothing: a solve of
    :data:`WARMUP_ITERATIONS` iterations per solver, with ``options`` (those the timed solve
    will take; the problem's own solver options apply, as in :func:`optdyn.solve`), and the
    rollout of the problem's initial controls. Returns the seconds each solver's warm-up took.
    ValueError naming ``problem`` or ``solvers``."""
    from ..solvers.solve import solve

    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    solvers = (solvers,) if isinstance(solvers, str) else tuple(solvers)
    unknown = [s for s in solvers if s not in SOLVERS]
    if not solvers or unknown:
        raise ValueError(f"solvers: expected some of {', '.join(SOLVERS)}, got {solvers!r}")
    seconds = {}
    for solver in solvers:
        t0 = time.perf_counter()
        solve(problem, solver, **{**options, "max_iter": WARMUP_ITERATIONS, "verbose": False})
        if solver != "ipopt":
            _rollout(problem)
        seconds[solver] = time.perf_counter() - t0
    return seconds


def _rollout(problem: Problem) -> None:
    """The rollout of ``problem``'s initial controls, which DDP and iLQR make when multiple
    shooting's gaps close (a state the model refuses on the way compiled it all the same)."""
    try:
        problem.rollout(problem.us_init)
    except ValueError:
        pass


def script_problems(path: str | os.PathLike) -> dict[str, Problem]:
    """{variable name: problem} of the :class:`Problem` objects the Python script ``path``
    defines at module level, running it under the module name ``__optdyn_warmup__`` (its
    ``if __name__ == "__main__":`` block does not run); ValueError naming ``--script`` if the
    file does not exist or defines none."""
    if not os.path.isfile(path):
        raise ValueError(f"--script: no such file {os.fspath(path)!r}")
    namespace = runpy.run_path(os.fspath(path), run_name="__optdyn_warmup__")
    found = {name: value for name, value in namespace.items() if isinstance(value, Problem)}
    if not found:
        raise ValueError(f"--script: {os.fspath(path)!r} defines no optdyn.Problem at module level")
    return found


def compile_for(job: CompileJob) -> float:
    """:func:`warmup` of ``job``'s problem for its solver (compiling what it needs, or loading
    it from the disk cache); returns the seconds it took."""
    if job.solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {job.solver!r}")
    t0 = time.perf_counter()
    warmup(job.factory(**dict(job.params)), job.solver)
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
