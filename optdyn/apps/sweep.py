"""Parameter sweeps and multi-start on Dask distributed: ``sweep(factory, grid, starts=K, out=DIR)``.

    import optdyn, problems
    summary = optdyn.sweep(problems.pendulum.make_pendulum, grid={"u_max": [3.0, 4.0, 5.0]},
                           starts=8, solver="ddp", out="runs/pendulum")
    print(summary)                      # best cost per grid point, distinct local optima
    summary.rows                        # one dict per job, as in DIR/summary.csv

**Problem factory.** ``optdyn`` does not know the ``problems`` package (dependencies point
``dynamics`` ← ``optdyn`` ← ``problems``), so a sweep takes a *factory*: a picklable
callable ``factory(**params) -> Problem``, such as ``problems.arm_obstacle.make`` or
``problems.factory("pendulum")``. Each job builds its own problem on the worker with
``factory(**params, **point)``: ``params`` are the fixed keywords (``scenario`` is one of
them, given separately for convenience), ``point`` one point of the grid.

**Jobs.** The grid ``{key: [v1, v2, ...], ...}`` spans the Cartesian product of its values
(keys in the given order); every point is solved from ``starts`` initial guesses, so there
are ``len(points) × starts`` jobs. Start 0 uses the problem's own initial guess
(``problem.xs_init``, ``problem.us_init``); start s > 0 the reproducible perturbation of
:func:`perturbed_guess` seeded by :func:`job_seed` (point, s). DDP/iLQR receive the
perturbed ``us_init`` (their states are the rollout), IPOPT ``xs_init`` and ``us_init``.

**Engine.** Without ``scheduler`` an embedded :class:`distributed.LocalCluster` is started
(worker processes, one per core unless ``workers`` says otherwise, one thread each, on
127.0.0.1); with ``scheduler="tcp://host:port"`` the jobs go to an existing cluster
(``dask scheduler`` / ``dask worker``; workers must have optdyn installed). Jobs go to the
workers in Dask tasks (:func:`run_jobs`), :data:`IN_FLIGHT` per worker thread at a time: one job
each until a job's time is known, then as many as take :data:`BATCH_SECONDS` at the mean time
so far (a task costs some 9 ms of Dask's own, a quarter of a 45 ms pendulum solve), but never so
many that the last jobs gather on a few workers (:func:`_batch_size`). A worker that dies
mid-task has its tasks rescheduled on the others (a task
survives ``ALLOWED_FAILURES`` worker deaths on the embedded cluster; an external
scheduler uses its own ``distributed.scheduler.allowed-failures``, 3 by default). An
exception inside a job (factory or solver) is caught on the worker and recorded as a row
with status ``"error"`` and its message; so is a task lost for good (``KilledWorker``).
With no worker left at all, the sweep waits for one (Ctrl-C stops it; finished jobs stay
on disk and a re-run resumes).

**Results on disk as they arrive** (written by the client, so workers need no shared
file system): ``DIR/<job>.npz`` per successful job (:func:`optdyn.apps.io.save_result`, written
atomically, reopened by ``optdyn show``), ``DIR/summary.csv`` with one row per job
(:data:`COLUMNS` after the grid keys; rows are appended as jobs finish and the file is
rewritten in job order at the end), ``DIR/sweep.json`` (the manifest) and
``DIR/cost.png`` (best cost over the grid). The saved result's ``extra`` holds
``sweep_point``, ``sweep_start``, ``sweep_seed``, ``sweep_worker``, ``sweep_time``, ``sweep_cpu``.

**Resume.** Re-running the same sweep on the same DIR solves only the jobs without a
readable result file: finished jobs are read back from DIR; jobs that failed are tried
again. A grid with more values or more starts extends the sweep. A DIR whose manifest
records a different sweep identity (problem, factory, fixed parameters and scenario,
solver and options, grid keys, perturbation scale) is refused with ValueError.

**Distinct local optima.** Among the *converged* results of one grid point, sorted by cost,
a result belongs to the first group whose lowest-cost member b satisfies
``|J − J_b| ≤ cost_rtol·|J_b|`` and ``max_k ‖x_k − x_b,k‖∞ ≤ state_tol`` (defaults
:data:`COST_RTOL` = 1e-3 and :data:`STATE_TOL` = 1e-2, in the state's units: rad, m,
rad/s, m/s); otherwise it starts a new group. Each group is one local optimum.
"""
from __future__ import annotations

import csv
import hashlib
import inspect
import itertools
import json
import logging
import math
import os
import re
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynamics.parallel import set_num_threads

from .io import load_result, save_result
from .warmup import CompileJob, warm_once
from ..ocp.problem import Problem
from ..solvers.riccati import Expansion, Value, lqr
from ..solvers.result import Result
from ..solvers.solve import CHOICES

FORMAT, VERSION = "optdyn.sweep", 1
MANIFEST, SUMMARY, PLOT = "sweep.json", "summary.csv", "cost.png"
COLUMNS = ("start", "seed", "status", "converged", "cost", "iterations", "wall_time", "cpu_time", "worker", "file",
           "error")
"""Columns of summary.csv after the grid keys. ``wall_time`` is the job's time on its
worker (building the problem, the guess and solving), s, and ``cpu_time`` its CPU time;
``file`` the result's name in DIR (empty for errors); ``error`` the exception's type and
message for status ``"error"``; ``seed`` is empty for start 0."""
PERTURBATION = 0.3
"""Default amplitude (rad) of the joint-space wave that perturbs the guess of starts s > 0."""
LQR_WEIGHTS = (1.0, 0.1, 1e-4, 10.0)
"""Weights of the tracking LQR in :func:`perturbed_guess`: q, v, u, terminal factor."""
BASIS = 3
"""Number of modes sin²(mπτ) in the perturbation (smooth, at rest at both ends of the horizon)."""
COST_RTOL, STATE_TOL = 1e-3, 1e-2
"""Tolerances that decide whether two converged results are the same local optimum."""
ALLOWED_FAILURES = 5
"""Worker deaths a task may see on the embedded cluster before it is given up (KilledWorker)."""
RETRIES = 2
"""Re-runs of a task whose execution raised outside the solve (e.g. unpickling on a worker)."""
TIMEOUT = 10.0
"""Default time allowed to reach a scheduler, s."""
BATCH_SECONDS = 0.25
"""The work a Dask task is given once job times are known, s: a task costs some 9 ms of Dask's
own (scheduler, worker, transfer; measured on a local cluster), under 4 % of it."""
IN_FLIGHT = 2
"""Tasks kept submitted per worker thread, so that no worker waits for the client."""


# ------------------------------------------------------------------------- jobs

def _canonical(point: Mapping) -> str:
    """The JSON text identifying a grid point (keys sorted)."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


def job_seed(point: Mapping, start: int) -> int:
    """Seed of start ``start`` at grid point ``point``: the first 63 bits of
    SHA-256(canonical JSON of the point + "|" + start), the same on every machine."""
    digest = hashlib.sha256(f"{_canonical(point)}|{int(start)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def job_name(point: Mapping, start: int) -> str:
    """File stem of a job: readable ``key=value`` pairs, a hash of the point, the start."""
    slug = "_".join(f"{k}={json.dumps(v)}" for k, v in point.items())
    slug = re.sub(r"[^A-Za-z0-9.=+-]+", "_", slug).strip("_")[:60] or "point"
    digest = hashlib.sha1(_canonical(point).encode()).hexdigest()[:8]
    return f"{slug}-{digest}-s{int(start):03d}"


def perturbed_guess(problem: Problem, seed: int, scale: float = PERTURBATION) -> tuple[np.ndarray, np.ndarray]:
    """The initial guess of a multi-start job: the default guess's path moved by a smooth
    wave in the actuated joints, turned into a dynamically consistent trajectory by LQR
    tracking.

    1. Wave: with c ~ N(0, 1) of shape (BASIS, nv) drawn from ``np.random.default_rng(seed)``,
       normalised time τ = t/T and modes m = 1..BASIS, the tangent coordinate j of the
       configuration is displaced by ``δq_j(τ) = scale · Σ_m c[m, j] · sin²(mπτ)`` (rad, or m
       if prismatic) if it is actuated, not at all otherwise (an unactuated base is left to
       follow: the tracking below moves it as the dynamics let it); it starts and ends at
       rest (δq = δq̇ = 0 at τ = 0 and 1).
    2. Reference at the nodes: ``x_ref = x_init ⊕ [δq; δq̇]`` (the problem's
       ``state_integrate``; ``xs_init + [δq; δq̇]`` on a vector space); feed-forward
       ``u_ff,k = clip(Bᵀ RNEA(q_ref,k, v_ref,k, (v_ref,k+1 − v_ref,k)/dt))``, B the actuation.
    3. Tracking: the finite-horizon discrete LQR of the problem's own discretisation
       linearised along (x_ref, u_ff), in its tangent coordinates (weights
       :data:`LQR_WEIGHTS`: 1 on δq, 0.1 on δv, 1e-4 on u, terminal ×10), closes the loop from
       x0: ``u_k = clip(u_ff,k + K_k (x_k ⊖ x_ref,k))``, ``x_k+1 = step(x_k, u_k)``, with the
       gains K_k of :func:`_lqr_gains`.

    The returned ``(xs (N+1, nx), us (N, nu))`` is that closed-loop run: ``us`` within the
    bounds, ``xs`` exactly its open-loop rollout, so the guess means the same to DDP/iLQR
    (which use ``us``) and to IPOPT (both), even for open-loop unstable robots whose
    rollout of a perturbed torque sequence would diverge.

    With contacts the guess is the reference itself, ``(x_ref, the problem's us_init)``:
    every solver starts a problem with contacts by multiple shooting (its defaults), which
    closes the gaps, and tracking a wave in stance legs through rigid contacts diverges.
    """
    from dynamics import rnea

    model = problem.model
    rng = np.random.default_rng(seed)
    N, nv, ndx, T, dt = problem.N, model.nv, problem.ndx, problem.T, problem.dt
    c = scale * rng.standard_normal((BASIS, nv))
    c[:, np.setdiff1d(np.arange(nv), problem.actuated)] = 0.0
    w = np.pi * np.arange(1, BASIS + 1)                      # mπ
    tau = np.arange(N + 1) / N
    dq = np.sin(np.outer(tau, w)) ** 2 @ c
    dv = (w / T * np.sin(2 * np.outer(tau, w))) @ c
    x_ref = problem.state_integrate(np.asarray(problem.xs_init, float), np.hstack([dq, dv]))
    if problem.contacts is not None:
        return x_ref, problem.us_init.copy()
    nq = model.nq
    a_ref = np.diff(x_ref[:, nq:], axis=0) / dt
    lo, hi = problem.u_lower, problem.u_upper
    u_ff = np.clip([rnea(model, x_ref[k, :nq], x_ref[k, nq:], a_ref[k])[problem.actuated] for k in range(N)], lo, hi)
    A, B = problem.step_derivatives(x_ref[:-1], u_ff)
    wq, wv, wu, wN = LQR_WEIGHTS
    Q = np.diag(np.r_[np.full(nv, wq), np.full(ndx - nv, wv)])
    K = _lqr_gains(A, B, Q, wu * np.eye(problem.nu), wN * Q, problem)
    xs, us = np.empty((N + 1, problem.nx)), np.empty((N, problem.nu))
    xs[0] = problem.x0
    for k in range(N):
        us[k] = np.clip(u_ff[k] + K[k] @ problem.state_difference(x_ref[k], xs[k]), lo, hi)
        xs[k + 1] = problem.step(xs[k][None], us[k][None], start=k)[0]
    return xs, us


def _lqr_gains(A: np.ndarray, B: np.ndarray, Q: np.ndarray, R: np.ndarray, QN: np.ndarray,
               problem: Problem) -> np.ndarray:
    """Feedback gains K (N, nu, ndx) of the finite-horizon discrete LQR

        min ½ Σ_k (δx_kᵀ Q δx_k + δu_kᵀ R δu_k) + ½ δx_Nᵀ QN δx_N,  δx_k+1 = A_k δx_k + B_k δu_k,

    whose optimal policy is δu_k = K_k δx_k: the Riccati recursion
    K_k = −(R + B_kᵀP_k+1 B_k)⁻¹ B_kᵀP_k+1 A_k (:func:`optdyn.solvers.riccati.lqr`).
    A (N, ndx, ndx), B (N, ndx, nu); ``problem``: whose interval dynamics A and B linearise.
    """
    N, ndx, nu = B.shape
    lq = Expansion(A, B, np.zeros((N, ndx)), np.zeros((N, nu)), np.repeat(Q[None], N, axis=0), np.zeros((N, nu, ndx)),
                   np.repeat(R[None], N, axis=0))
    try:
        return lqr(problem, lq, Value(np.zeros(ndx), QN)).K
    except ValueError as e:
        raise ValueError(f"problem: the tracking LQR of the perturbed guess fails ({e}; non-finite dynamics along "
                         "the reference?)") from None


def _worker_address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return ""


def run_job(factory: Callable[..., Problem], params: dict, point: dict, start: int, solver: str,
            options: dict, scale: float) -> dict:
    """Build and solve one job (this runs on a worker); never raises for a failing job.

    Returns ``{"result": Result, "worker": address, "time": s, "cpu": s}`` or, if the factory
    or the solver raised, ``{"error": "Type: message", "worker": ..., "time": ..., "cpu": ...}``.
    The job's kernels run on one thread: a sweep is parallel over jobs (one per worker
    core), and threads within a job on top of that would oversubscribe the cores.
    """
    from ..solvers.solve import solve

    set_num_threads(1)
    worker = _worker_address()
    try:  # the kernels: compiled by one worker of this machine, loaded by the others
        warm_once(CompileJob(f"{factory.__module__}.{factory.__qualname__} {solver}", factory, solver,
                             tuple({**params, **point}.items())))
    except Exception:  # noqa: BLE001 — the job below fails the same way and records why
        pass
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        problem = factory(**params, **point)
        if not isinstance(problem, Problem):
            raise ValueError(f"factory: returned {type(problem).__name__}, expected an optdyn Problem")
        init = {}
        if start > 0:  # the states serve the solvers that shoot multiply (solve drops them for single shooting)
            xs, us = perturbed_guess(problem, job_seed(point, start), scale)
            init = {"us_init": us, "xs_init": xs}
        result = solve(problem, solver=solver, **options, **init)
    except Exception as e:  # noqa: BLE001 — every failure of a job is recorded, not raised
        return {"error": _one_line(e), "worker": worker, "time": time.perf_counter() - t0,
                "cpu": time.thread_time() - c0}
    result.source = None
    return {"result": result, "worker": worker, "time": time.perf_counter() - t0, "cpu": time.thread_time() - c0}


def run_jobs(factory: Callable[..., Problem], params: dict, jobs: list[tuple[dict, int]], solver: str,
             options: dict, scale: float) -> list[dict]:
    """:func:`run_job` for each (point, start) of ``jobs``, one after the other on this worker:
    one Dask task for several short jobs (:func:`_batch_size`)."""
    return [run_job(factory, params, point, start, solver, options, scale) for point, start in jobs]


def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


@dataclass(frozen=True)
class _Setup:
    """What every job of a sweep shares: ``factory(**params, **point)`` builds its problem,
    ``solve(problem, solver=solver, **options)`` solves it, from a guess perturbed by
    ``perturbation`` for starts s > 0 (the arguments of :func:`run_job` but the job's own)."""

    factory: Callable[..., Problem]
    params: dict
    solver: str
    options: dict
    perturbation: float


@dataclass(frozen=True)
class _Engine:
    """Where the jobs run: an existing ``scheduler`` (address) or, if None, an embedded
    cluster of ``workers`` processes; ``timeout`` (s) to reach the scheduler and to close."""

    scheduler: str | None
    workers: int | None
    timeout: float


@dataclass(frozen=True)
class Job:
    """One grid point × one start."""

    point: dict
    start: int

    @property
    def name(self) -> str:
        return job_name(self.point, self.start)

    @property
    def seed(self) -> int | None:
        return job_seed(self.point, self.start) if self.start > 0 else None


# ------------------------------------------------------------------- validation

def _scalar(value, key: str):
    """A grid value as a JSON-able Python value, else ValueError."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    try:
        json.dumps(value)
    except TypeError:
        raise ValueError(f"grid: value {value!r} of {key!r} is not a number, string, bool or list of them") from None
    return value


def _check_grid(grid, accepted: Sequence[str] | None, fixed: Mapping) -> dict[str, list]:
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid: expected a non-empty dict {{parameter: [values, ...]}}, got {grid!r}")
    out = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"grid: parameter names must be non-empty strings, got {key!r}")
        if accepted is not None and key not in accepted:
            raise ValueError(f"grid: the problem factory takes no parameter {key!r}; its parameters: "
                             f"{', '.join(accepted) or 'none'}")
        if key in fixed:
            raise ValueError(f"grid: {key!r} is also a fixed parameter (params/scenario); give it in one place")
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
            raise ValueError(f"grid: values of {key!r} must be a list, tuple or 1-D array, got {values!r}")
        values = [_scalar(v, key) for v in values]
        if not values:
            raise ValueError(f"grid: parameter {key!r} has no values")
        texts = [json.dumps(v, sort_keys=True) for v in values]
        if len(set(texts)) != len(texts):
            raise ValueError(f"grid: parameter {key!r} repeats a value: {values!r}")
        out[key] = values
    return out


def _accepted_parameters(factory: Callable) -> list[str] | None:
    """Keyword names the factory takes; None if it takes ``**kwargs`` or cannot be inspected."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return [n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _factory_name(factory: Callable) -> str:
    inner = getattr(factory, "func", factory)  # functools.partial
    name = f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', type(inner).__name__)}"
    if inner is not factory:
        name += f"(*{list(getattr(factory, 'args', ()))!r}, **{getattr(factory, 'keywords', {})!r})"
    return name


def _check_arguments(factory, grid, starts, solver, out, scenario, params, options, perturbation, scheduler,
                     workers, timeout) -> tuple[dict, dict, dict]:
    if isinstance(factory, str):
        raise ValueError(f"factory: expected a callable params → Problem (e.g. problems.arm_obstacle.make or "
                         f"problems.factory({factory!r})), got the string {factory!r}")
    if not callable(factory):
        raise ValueError(f"factory: expected a callable params → Problem, got {type(factory).__name__}")
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 1:
        raise ValueError(f"starts: expected an integer ≥ 1, got {starts!r}")
    if solver not in CHOICES:
        raise ValueError(f"solver: expected one of {', '.join(CHOICES)}, got {solver!r}")
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise ValueError(f"out: expected a directory path, got {out!r}")
    if Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out: {out} exists and is not a directory")
    if not (isinstance(perturbation, (int, float, np.floating)) and not isinstance(perturbation, bool)
            and math.isfinite(perturbation) and perturbation > 0):
        raise ValueError(f"perturbation: expected a finite scale > 0, got {perturbation!r}")
    if scheduler is not None and (not isinstance(scheduler, str) or "://" not in scheduler):
        raise ValueError(f"scheduler: expected an address like 'tcp://127.0.0.1:8786' or None, got {scheduler!r}")
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
            raise ValueError(f"workers: expected an integer ≥ 1 or None, got {workers!r}")
        if scheduler is not None:
            raise ValueError("workers: sets the size of the embedded cluster; an existing cluster "
                             "(scheduler=...) brings its own workers")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout: expected a time > 0 s, got {timeout!r}")
    params = dict(params or {})
    if not all(isinstance(k, str) for k in params):
        raise ValueError(f"params: expected a dict of keyword parameters, got {params!r}")
    accepted = _accepted_parameters(factory)
    if scenario is not None:
        if not isinstance(scenario, str):
            raise ValueError(f"scenario: expected a string, got {scenario!r}")
        if accepted is not None and "scenario" not in accepted:
            raise ValueError(f"scenario: the problem factory takes no scenario; its parameters: {', '.join(accepted)}")
        if "scenario" in params and params["scenario"] != scenario:
            raise ValueError("scenario: given both as scenario= and in params, with different values")
        params["scenario"] = scenario
    if accepted is not None:
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ValueError(f"params: the problem factory takes no parameter {', '.join(map(repr, unknown))}; "
                             f"its parameters: {', '.join(accepted)}")
    params = {k: _scalar(v, k) for k, v in params.items()}
    grid = _check_grid(grid, accepted, params)
    options = dict(options or {})
    for reserved in ("us_init", "xs_init", "callback"):
        if reserved in options:
            raise ValueError(f"options: {reserved!r} is set by the sweep itself and cannot be given")
    try:
        import cloudpickle
        cloudpickle.dumps((factory, options))
    except Exception as e:  # noqa: BLE001 — anything that stops shipping the job to a worker
        raise ValueError(f"factory: cannot be pickled for the workers ({_one_line(e)}); use a module-level "
                         f"function such as problems.pendulum.make_pendulum") from None
    return grid, params, options


# ----------------------------------------------------------------- the directory

def _identity(problem_name: str, setup: _Setup, grid: dict) -> dict:
    """What must match for a DIR to be resumed (JSON-able)."""
    opts = {}
    for k, v in sorted(setup.options.items()):
        try:
            opts[k] = _scalar(v, k)
        except ValueError:
            opts[k] = repr(v)
    return {"problem": problem_name, "factory": _factory_name(setup.factory), "params": setup.params,
            "solver": setup.solver, "options": opts, "grid_keys": list(grid),
            "perturbation": float(setup.perturbation)}


def _claim_directory(out: Path, identity: dict, grid: dict, starts: int) -> None:
    """Create DIR or check that its manifest records the same sweep; then (re)write the manifest."""
    path = out / MANIFEST
    if path.exists():
        try:
            old = json.loads(path.read_text())
            old_identity = old["identity"]
            if old.get("format") != FORMAT:
                raise KeyError("format")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"out: {path} is not an optdyn sweep manifest ({_one_line(e)})") from None
        if old_identity != identity:
            diff = [f"{k}: {old_identity.get(k)!r} there, {identity.get(k)!r} here"
                    for k in sorted(set(old_identity) | set(identity)) if old_identity.get(k) != identity.get(k)]
            raise ValueError(f"out: {out} holds a different sweep ({'; '.join(diff)}); use another directory")
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"format": FORMAT, "version": VERSION, "identity": identity, "grid": grid, "starts": int(starts),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, allow_nan=True) + "\n")
    os.replace(tmp, path)


def _row(job: Job, status: str, **fields) -> dict:
    row = dict(job.point)
    row.update({"start": job.start, "seed": "" if job.seed is None else job.seed, "status": status,
                "converged": "", "cost": "", "iterations": "", "wall_time": "", "cpu_time": "", "worker": "",
                "file": "",
                "error": ""})
    row.update(fields)
    return row


def _result_row(job: Job, result: Result) -> dict:
    extra = result.extra
    return _row(job, result.status, converged=bool(result.converged), cost=float(result.cost),
                iterations=int(result.iterations), wall_time=round(float(extra.get("sweep_time", np.nan)), 6),
                cpu_time=round(float(extra.get("sweep_cpu", np.nan)), 6), worker=extra.get("sweep_worker", ""),
                file=f"{job.name}.npz")


class _Summary:
    """summary.csv: appended as jobs finish, rewritten in job order by :meth:`finish`."""

    def __init__(self, path: Path, keys: list[str]):
        self.path, self.fields = path, keys + list(COLUMNS)
        self.rows: dict[str, dict] = {}

    def start(self, rows: dict[str, dict]) -> None:
        self.rows = dict(rows)
        self._rewrite(list(rows.values()))

    def add(self, job: Job, row: dict) -> None:
        self.rows[job.name] = row
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, self.fields, lineterminator="\n").writerow(row)

    def finish(self, jobs: list[Job]) -> list[dict]:
        ordered = [self.rows[j.name] for j in jobs if j.name in self.rows]
        self._rewrite(ordered)
        return ordered

    def _rewrite(self, rows: list[dict]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, self.fields, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)


def _read_back(out: Path, job: Job) -> Result | None:
    """The saved result of ``job`` if DIR holds a readable one for exactly this job."""
    path = out / f"{job.name}.npz"
    if not path.exists():
        return None
    try:
        result = load_result(path)
    except ValueError:
        return None
    if result.extra.get("sweep_point") != job.point or result.extra.get("sweep_start") != job.start:
        return None
    return result


def _save(out: Path, job: Job, result: Result) -> None:
    path = out / f"{job.name}.npz"
    tmp = path.with_name(path.name + ".part")
    save_result(result, tmp)
    os.replace(tmp, path)


# ----------------------------------------------------------------- the summary

@dataclass
class Optimum:
    """One distinct local optimum of a grid point: its lowest cost, the starts that reached it."""

    cost: float
    starts: list[int]
    file: str


@dataclass
class PointSummary:
    """Outcome of one grid point: best converged job, distinct optima, start 0's cost."""

    point: dict
    jobs: int
    converged: int
    failed: int
    best: dict | None
    default_cost: float | None
    optima: list[Optimum] = field(default_factory=list)


@dataclass
class SweepSummary:
    """What :func:`sweep` returns.

    Attributes:
        out: the result directory.
        rows: one dict per job, in job order (grid points in product order, then starts),
            as in summary.csv (grid keys, then :data:`COLUMNS`).
        points: one :class:`PointSummary` per grid point, in order.
        solved: jobs run by this call; reused: jobs read back from ``out``; failed: jobs
            with status "error" (after this call).
        plot: path of the cost plot, None if no job converged.
        text: the printed summary (also ``str(summary)``).
    """

    out: Path
    rows: list[dict]
    points: list[PointSummary]
    solved: int
    reused: int
    failed: int
    plot: Path | None
    text: str = ""

    def __str__(self) -> str:
        return self.text


def distinct_optima(entries: Sequence[tuple[int, float, np.ndarray, str]], cost_rtol: float = COST_RTOL,
                    state_tol: float = STATE_TOL) -> list[Optimum]:
    """Group converged results ``(start, cost, xs (N+1, nx), file)`` into distinct local optima.

    Sorted by cost, a result joins the first group whose lowest-cost member b has
    ``|J − J_b| ≤ cost_rtol·|J_b|`` and ``max_k ‖x_k − x_b,k‖∞ ≤ state_tol``, else it
    founds a new group. Returns the groups by increasing cost.
    """
    groups: list[tuple[Optimum, np.ndarray]] = []
    for start, cost, xs, file in sorted(entries, key=lambda e: (e[1], e[0])):
        for opt, xs_b in groups:
            if abs(cost - opt.cost) <= cost_rtol * abs(opt.cost) and np.max(np.abs(xs - xs_b)) <= state_tol:
                opt.starts.append(start)
                break
        else:
            groups.append((Optimum(float(cost), [start], file), np.asarray(xs)))
    return [g for g, _ in groups]


def _summarise(points: list[dict], starts: int, rows: dict[str, dict], xs: dict[str, np.ndarray],
               cost_rtol: float, state_tol: float) -> list[PointSummary]:
    out = []
    for point in points:
        jobs = [Job(point, s) for s in range(starts)]
        prs = [(j, rows[j.name]) for j in jobs if j.name in rows]
        conv = [(j, r) for j, r in prs if r["converged"] is True and math.isfinite(r["cost"])]
        best = min(conv, key=lambda jr: jr[1]["cost"])[1] if conv else None
        r0 = rows.get(Job(point, 0).name)
        default = r0["cost"] if r0 is not None and r0["status"] != "error" else None
        optima = distinct_optima([(j.start, r["cost"], xs[j.name], r["file"]) for j, r in conv if j.name in xs],
                                 cost_rtol, state_tol)
        out.append(PointSummary(point, len(jobs), len(conv), sum(r["status"] == "error" for _, r in prs),
                                best, default, optima))
    return out


def _fmt(x) -> str:
    if x is None or x == "":
        return "—"
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _text(label: str, keys: list[str], summaries: list[PointSummary], solved: int, reused: int, failed: int,
          out: Path, plot: Path | None) -> str:
    total = sum(s.jobs for s in summaries)
    header = keys + ["best cost", "best start", "converged", "optima", "start-0 cost", "errors"]
    body = [[_fmt(s.point[k]) for k in keys]
            + [_fmt(s.best["cost"] if s.best else None), _fmt(s.best["start"] if s.best else None),
               f"{s.converged}/{s.jobs}", str(len(s.optima)), _fmt(s.default_cost), str(s.failed)]
            for s in summaries]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = [f"sweep {label}: {total} jobs ({len(summaries)} grid points × {total // max(len(summaries), 1)} starts); "
             f"solved {solved}, reused {reused}, errors {failed} → {out}",
             "  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    multi = [s for s in summaries if len(s.optima) > 1]
    for s in multi:
        where = ", ".join(f"{k}={_fmt(s.point[k])}" for k in keys)
        costs = "; ".join(f"{o.cost:.6g} (starts {','.join(map(str, o.starts))})" for o in s.optima)
        lines.append(f"optima at {where}: {costs}")
    lines.append(f"summary  {out / SUMMARY}")
    if plot is not None:
        lines.append(f"plot     {plot}")
    return "\n".join(lines)


def _numeric(values: list) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def plot_costs(path: Path, grid: dict[str, list], summaries: list[PointSummary], rows: dict[str, dict],
               starts: int) -> Path | None:
    """Draw the best cost over the first grid key (one line per combination of the other
    keys) with every converged start as a dot; write a PNG to ``path``. None if nothing converged."""
    from matplotlib.figure import Figure

    if not any(s.best for s in summaries):
        return None
    keys = list(grid)
    first = keys[0]
    values = grid[first]
    numeric = _numeric(values)
    xpos = {json.dumps(v): (v if numeric else i) for i, v in enumerate(values)}
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    series: dict[str, list[PointSummary]] = {}
    for s in summaries:
        label = ", ".join(f"{k}={_fmt(s.point[k])}" for k in keys[1:])
        series.setdefault(label, []).append(s)
    for label, group in series.items():
        best = [(xpos[json.dumps(s.point[first])], s.best["cost"]) for s in group if s.best]
        if best:
            line, = ax.plot(*zip(*best), "o-", label=f"best{' — ' + label if label else ''}")
            dots = [(xpos[json.dumps(s.point[first])], r["cost"]) for s in group for st in range(starts)
                    if (r := rows.get(Job(s.point, st).name)) and r["converged"] is True]
            ax.plot(*zip(*dots), ".", color=line.get_color(), alpha=0.35, markersize=6)
    if not numeric:
        ax.set_xticks(range(len(values)), [str(v) for v in values])
    ax.set_xlabel(first)
    ax.set_ylabel("cost")
    ax.set_title(f"best cost over the grid ({starts} start{'s' * (starts > 1)} per point; dots: converged starts)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


# ----------------------------------------------------------------- the engine

def local_cluster(workers: int | None = None):
    """The embedded cluster of :func:`sweep`, to keep one alive across several sweeps.

    A :class:`distributed.LocalCluster` of ``workers`` processes (default: one per core),
    one thread each, on 127.0.0.1 without dashboard (nor the workers' profiler), whose tasks
    survive :data:`ALLOWED_FAILURES` worker deaths. Use it as
    ``sweep(..., scheduler=cluster.scheduler_address)``; close it with ``cluster.close()``.
    """
    import dask
    from distributed import LocalCluster

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                or workers < 1):
        raise ValueError(f"workers: expected an integer ≥ 1 or None, got {workers!r}")
    config = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
              # no dashboard, so no use for the workers' statistical profiler (it samples every 10 ms)
              "distributed.worker.profile.enabled": False}
    with dask.config.set(config), warnings.catch_warnings():
        # the scheduler's HTTP server (127.0.0.1 only) falls back to a free port when 8787 is taken
        warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)
        return LocalCluster(n_workers=int(workers or os.cpu_count() or 1), threads_per_worker=1, processes=True,
                            host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)


def _connect(engine: _Engine):
    """(client, cluster or None): an embedded LocalCluster, or a client of ``engine.scheduler``."""
    from distributed import Client

    scheduler, timeout = engine.scheduler, engine.timeout
    if scheduler is None:
        cluster = local_cluster(engine.workers)
        try:
            return Client(cluster, set_as_default=False), cluster
        except BaseException:
            cluster.close()
            raise
    try:
        return Client(scheduler, timeout=timeout, set_as_default=False), None
    except (OSError, TimeoutError) as e:
        raise ConnectionError(f"scheduler: cannot reach {scheduler} within {timeout:g} s ({_one_line(e)})") from None


def _receive(future, jobs: int) -> list[dict]:
    """The ``jobs`` job records of a finished Dask future of :func:`run_jobs` (an error of the
    task itself, e.g. a task lost with its workers, recorded for each of its jobs)."""
    if future.status == "finished":
        return future.result()
    if future.status == "error":
        error = _one_line(future.exception())
    else:
        error = f"task {future.status} (scheduler or client lost?)"
    return [{"error": error, "worker": "", "time": float("nan")} for _ in range(jobs)]


def _batch_size(times: list[float], remaining: int, threads: int) -> int:
    """Jobs for the next task: one until a job's time is known, then as many as take
    :data:`BATCH_SECONDS` at the mean time so far, but no more than leave each of the
    ``threads`` worker threads :data:`IN_FLIGHT` tasks of the ``remaining`` jobs (the last
    ones stay spread over the workers)."""
    if not times:
        return 1
    mean = max(sum(times) / len(times), 1e-3)
    return max(1, min(math.ceil(BATCH_SECONDS / mean), math.ceil(remaining / (IN_FLIGHT * threads))))


def _threads(client) -> int:
    """The worker threads of ``client``'s cluster now (at least 1: with none, tasks wait)."""
    return max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values()))


def sweep(factory: Callable[..., Problem], grid: Mapping[str, Sequence], *, out: str | os.PathLike,
          starts: int = 1, solver: str = "ddp", scenario: str | None = None, params: Mapping | None = None,
          options: Mapping | None = None, perturbation: float = PERTURBATION, scheduler: str | None = None,
          workers: int | None = None, progress: bool = True, timeout: float = TIMEOUT,
          cost_rtol: float = COST_RTOL, state_tol: float = STATE_TOL) -> SweepSummary:
    """Solve ``factory(**params, **point)`` for every grid point from ``starts`` initial guesses on Dask.

    Args:
        factory: picklable callable ``(**params) -> Problem`` (e.g. ``problems.arm_obstacle.make``).
        grid: ``{parameter: [values, ...]}``, non-empty; every key a parameter of the factory.
        out: result directory (created; resumed if it holds the same sweep).
        starts: initial guesses per point (≥ 1): start 0 the problem's own, s > 0 perturbed
            (:func:`perturbed_guess`, seeded by :func:`job_seed`).
        solver: "ddp" | "ilqr" | "ipopt"; ``options``: further :func:`optdyn.solve` options
            (``max_iter``, ``tol``, ...; not ``us_init``/``xs_init``/``callback``).
        scenario, params: fixed keywords of the factory (``scenario`` joins ``params``).
        perturbation: amplitude (rad) of the joint-space wave perturbing starts s > 0.
        scheduler: address of an existing Dask scheduler; None starts an embedded
            LocalCluster of ``workers`` processes (default: one per core), 1 thread each.
        progress: show a tqdm progress bar on stderr (jobs done, failed (status "error"), remaining).
        timeout: seconds allowed to reach ``scheduler`` (ConnectionError afterwards).
        cost_rtol, state_tol: tolerances of :func:`distinct_optima`.

    Every argument is checked (ValueError naming it) and the first grid point's problem is
    built before any cluster starts. Returns a :class:`SweepSummary`; the files are described
    in the module docstring. Jobs that raise are rows with status "error", not exceptions.
    """
    grid, params, options = _check_arguments(factory, grid, starts, solver, out, scenario, params, options,
                                             perturbation, scheduler, workers, timeout)
    for name, tol in (("cost_rtol", cost_rtol), ("state_tol", state_tol)):
        if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
            raise ValueError(f"{name}: expected a finite tolerance ≥ 0, got {tol!r}")
    keys = list(grid)
    points = [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())]
    try:
        first = factory(**params, **points[0])
    except TypeError as e:
        raise ValueError(f"params: the problem factory rejected its parameters ({_one_line(e)})") from None
    if not isinstance(first, Problem):
        raise ValueError(f"factory: returned {type(first).__name__} for {points[0]}, expected an optdyn Problem")
    out = Path(out)
    setup = _Setup(factory, params, solver, options, perturbation)
    identity = _identity(first.name, setup, grid)
    _claim_directory(out, identity, grid, starts)

    jobs = [Job(p, s) for p in points for s in range(starts)]
    summary = _Summary(out / SUMMARY, keys)
    rows, xs, pending = {}, {}, []
    for job in jobs:
        result = _read_back(out, job)
        if result is None:
            pending.append(job)
            continue
        rows[job.name] = _result_row(job, result)
        if result.converged:
            xs[job.name] = result.xs
    reused = len(rows)
    summary.start(rows)

    failed = 0
    if pending:
        failed = _run(pending, setup, _Engine(scheduler, workers, timeout), progress, out, summary, xs, len(jobs),
                      reused)
    ordered = summary.finish(jobs)
    rows = summary.rows
    summaries = _summarise(points, starts, rows, xs, cost_rtol, state_tol)
    plot = plot_costs(out / PLOT, grid, summaries, rows, starts)
    label = f"{first.name}{' ' + params['scenario'] if 'scenario' in params else ''} ({solver})"
    text = _text(label, keys, summaries, len(pending), reused, failed, out, plot)
    return SweepSummary(out, ordered, summaries, len(pending), reused, failed, plot, text)


def _run(pending: list[Job], setup: _Setup, engine: _Engine, progress: bool, out: Path, summary: _Summary, xs: dict,
         total: int, reused: int) -> int:
    """Submit ``pending`` to ``engine``, write each job's files as it finishes; returns the error count."""
    from distributed import as_completed
    from tqdm import tqdm

    client, cluster = _connect(engine)
    token = uuid.uuid4().hex[:8]
    failed = done = 0
    bar = tqdm(total=total, initial=reused, unit="job", desc="sweep", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    queue, futures, times = list(reversed(pending)), {}, []
    finished = as_completed(loop=client.loop)

    def submit(n: int) -> None:
        batch = [queue.pop() for _ in range(min(n, len(queue)))]
        f = client.submit(run_jobs, setup.factory, setup.params, [(job.point, job.start) for job in batch],
                          setup.solver, setup.options, setup.perturbation, key=f"optdyn-sweep-{batch[0].name}-{token}",
                          retries=RETRIES, pure=False)
        futures[f] = batch
        finished.add(f)

    def top_up() -> None:
        threads = _threads(client)
        while queue and len(futures) < IN_FLIGHT * threads:
            submit(_batch_size(times, len(queue), threads))

    try:
        top_up()
        for future in finished:
            batch = futures.pop(future)
            records = _receive(future, len(batch))
            future.release()
            times += [r["time"] for r in records if "result" in r]
            top_up()
            for job, record in zip(batch, records):
                solved = _record(job, record, out, summary, xs)
                done, failed = done + solved, failed + (not solved)
                bar.set_postfix_str(f"done {reused + done}, failed {failed}, "
                                    f"remaining {len(pending) - done - failed}", refresh=False)
                bar.update(1)
    finally:
        bar.close()
        client.close(timeout=engine.timeout)
        if cluster is not None:
            cluster.close(timeout=engine.timeout)
    return failed


def _record(job: Job, record: dict, out: Path, summary: _Summary, xs: dict) -> bool:
    """Write ``job``'s ``record`` (:func:`run_job`'s) to ``out`` and ``summary`` (its converged
    states into ``xs``); whether the job was solved (False: an error row)."""
    if "result" not in record:
        wall, cpu = record["time"], record.get("cpu", float("nan"))
        summary.add(job, _row(job, "error", worker=record["worker"], error=record["error"],
                              wall_time=round(wall, 6) if math.isfinite(wall) else "",
                              cpu_time=round(cpu, 6) if math.isfinite(cpu) else ""))
        return False
    result: Result = record["result"]
    result.extra.update({"sweep_point": job.point, "sweep_start": job.start,
                         "sweep_seed": job.seed if job.seed is not None else -1, "sweep_worker": record["worker"],
                         "sweep_time": float(record["time"]), "sweep_cpu": float(record["cpu"])})
    _save(out, job, result)
    summary.add(job, _result_row(job, result))
    if result.converged:
        xs[job.name] = result.xs
    return True
