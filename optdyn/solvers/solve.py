"""One entry point for every solver: ``solve(problem, solver="ddp"|"ilqr"|"ipopt")``.

DDP and iLQR (:mod:`optdyn.solvers.ddp`) handle control bounds in their box-QP backward pass and,
when the problem has path, stage or terminal constraints, run inside the augmented-Lagrangian
outer loop (:mod:`optdyn.solvers.augmented_lagrangian`), so all three solvers solve the same
constrained discrete-time problem. IPOPT (:mod:`optdyn.solvers.ipopt`, direct multiple shooting)
is imported only when asked for.
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np

from .augmented_lagrangian import solve_al
from .compile_ahead import Ahead
from .ddp import Options, Workspace, solve_ddp
from ..ocp.problem import SOLVERS, Problem
from ..ocp.state import check_state
from .result import Result
from .runtime import check_max_time

AL_OPTIONS = ("constraint_tol", "rho_init", "rho_factor", "rho_max", "decrease", "max_outer", "inner_tol0",
              "inner_tol_factor", "multipliers")
DDP_OPTIONS = tuple(f.name for f in fields(Options)) + ("xs_init", "us_init") + AL_OPTIONS
CHOICES = {"shooting": ("single", "multiple"), "cost_hessian": ("exact", "gauss_newton"),
           "box": ("always", "after_full_step"), "regularization": ("state", "state_and_controls"),
           "second_order": ("contracted", "tensor"), "indefinite": ("regularize", "gauss_newton")}
"""The DDP/iLQR options that take one of a few names (:class:`~optdyn.solvers.ddp.Options`)."""


def _warm_start(problem: Problem, init, options: dict) -> None:
    """Put a previous Result's trajectory into ``options`` as xs_init/us_init."""
    if not isinstance(init, Result):
        raise ValueError(f"init: expected an optdyn Result to warm-start from, got {type(init).__name__}")
    if options.get("xs_init") is not None or options.get("us_init") is not None:
        raise ValueError("init: give either init or xs_init/us_init, not both")
    xs, us = np.asarray(init.xs, dtype=float), np.asarray(init.us, dtype=float)
    if xs.shape != (problem.N + 1, problem.nx) or us.shape != (problem.N, problem.nu):
        raise ValueError(f"init: expected a result with xs {(problem.N + 1, problem.nx)} and us "
                         f"{(problem.N, problem.nu)} for this problem, got xs {xs.shape} and us {us.shape}")
    if not np.all(np.isfinite(us)):
        raise ValueError("init: the result's controls are not finite")
    options["us_init"] = us
    if np.all(np.isfinite(xs)):  # IPOPT and multiple-shooting DDP/iLQR use it
        options["xs_init"] = xs


def _check_ddp_options(problem: Problem, options: dict) -> None:
    unknown = sorted(set(options) - set(DDP_OPTIONS))
    if unknown:
        raise ValueError(f"options: unknown option(s) {', '.join(unknown)} for DDP/iLQR; "
                         f"known: {', '.join(DDP_OPTIONS)}")
    for name in ("max_iter", "max_outer"):
        n = options.get(name, 1)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{name}: expected an integer ≥ 0, got {n!r}")
    for name in ("tol", "gtol", "constraint_tol", "rho_init", "rho_max", "mu_max", "delta0", "rho_factor",
                 "inner_tol0", "inner_tol_factor"):
        if name in options and not (np.isfinite(options[name]) and options[name] > 0):
            raise ValueError(f"{name}: expected a finite number > 0, got {options[name]!r}")
    for name, choices in CHOICES.items():  # the first choice is the default
        if options.get(name, choices[0]) not in choices:
            raise ValueError(f"{name}: expected {' or '.join(map(repr, choices))}, got {options[name]!r}")
    cb = options.get("callback")
    if cb is not None and not callable(cb):
        raise ValueError(f"callback: expected a callable taking a dict, or None, got {cb!r}")
    for name, shape in (("us_init", (problem.N, problem.nu)), ("xs_init", (problem.N + 1, problem.nx))):
        if options.get(name) is not None:
            a = np.asarray(options[name], dtype=float)
            if a.shape != shape or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected finite values of shape {shape}, got shape {a.shape}")
            if name == "xs_init":
                check_state(problem.model, a, name)


def solve(problem: Problem, solver: str = "ddp", *, init: Result | None = None, max_time: float | None = None,
          workspace: Workspace | None = None, **options) -> Result:
    """Solve ``problem`` with ``solver`` ("ddp", "ilqr" or "ipopt").

    Common options: ``max_iter``, ``tol``, ``us_init``/``xs_init`` (warm start),
    ``init`` (a previous :class:`Result` to warm-start from: DDP/iLQR take its ``us``,
    IPOPT its ``xs`` and ``us``), ``max_time`` (wall-clock limit in s: status
    "time_limit" with the last iterate), ``verbose``, ``callback`` (called with a dict
    once per iteration; returning False stops the solve). Ctrl-C during a solve returns
    the last iterate with status "interrupted" (:mod:`optdyn.solvers.runtime`). DDP/iLQR
    shoot singly by default: their states are the rollout of ``us_init`` from x0, so they
    check ``xs_init`` but do not use it; with ``shooting="multiple"`` they start from
    ``xs_init`` and ``us_init`` and close the gaps between the intervals as they go
    (feasibility-driven DDP).
    DDP/iLQR accept the fields of :class:`optdyn.solvers.ddp.Options` and the augmented-Lagrangian
    settings ``constraint_tol`` (1e-6), ``rho_init``, ``rho_factor``, ``rho_max``,
    ``decrease``, ``max_outer``, ``inner_tol0``, ``inner_tol_factor`` and ``multipliers`` (the
    multipliers and penalty to start from: :func:`optdyn.solvers.augmented_lagrangian.solve_al`); IPOPT accepts
    ``hessian`` ("exact"|"lbfgs"), ``multipliers`` (an IPOPT result's extra: its multipliers
    to start from) and IPOPT options (:func:`optdyn.solvers.ipopt.solve_ipopt`).
    DDP and IPOPT's exact Hessian take ``second_order``: "contracted" (default: the
    dynamics' second-order terms by a second-order adjoint, no tensor formed) or "tensor"
    (the full second-order tensors, same result, for validation).
    ``workspace`` (DDP/iLQR): a :class:`optdyn.solvers.ddp.Workspace` of the problem's size
    whose arrays the solve writes into instead of allocating its own (the same result), kept by
    a caller that solves one problem after another of that size (:class:`optdyn.MPC`).
    A problem's own ``solver_options`` for ``solver`` apply first; ``options`` override them.
    Unknown solvers or options raise ValueError. The result carries the problem as
    ``source`` (for plotting and visualisation).
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    options = {**(problem.solver_options.get(solver, {}) if isinstance(solver, str) else {}), **options}
    if init is not None:
        _warm_start(problem, init, options)
    options["max_time"] = check_max_time(max_time)
    if workspace is not None and not (isinstance(workspace, Workspace) and solver in ("ddp", "ilqr")
                                      and workspace.fits(problem)):
        raise ValueError(f"workspace: expected an optdyn.solvers.ddp.Workspace of the problem's size (N, nx, nu, "
                         f"ndx) = {(problem.N, problem.nx, problem.nu, problem.ndx)} for DDP or iLQR, got "
                         f"{getattr(workspace, 'size', type(workspace).__name__)} for {solver!r}")
    with Ahead(problem, solver):  # on a cold cache, helpers compile the later kernels meanwhile
        result = _dispatch(problem, solver, options, workspace)
    result.source = problem
    differenced = problem.differenced_hessians
    if differenced:
        result.extra["differenced_hessians"] = differenced
        result.message += f" (Hessians of {', '.join(differenced)} by differences of their Jacobians)"
    return result


def _dispatch(problem: Problem, solver: str, options: dict, workspace: Workspace | None = None) -> Result:
    """Run the solver of :func:`solve` (DDP/iLQR in the arrays of ``workspace``)."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {solver!r}")
    if solver == "ipopt":
        if isinstance(options.get("max_iter", 0), (int, np.integer)) and options.get("max_iter", 0) < 0:
            raise ValueError(f"max_iter: expected an integer ≥ 0, got {options['max_iter']!r}")
        from .ipopt import solve_ipopt
        return solve_ipopt(problem, **options)
    _check_ddp_options(problem, options)
    if options.get("shooting", "single") == "single":
        options.pop("xs_init", None)
    ddp = solver == "ddp"
    if problem.nc or problem.ng or problem.nh:
        return solve_al(problem, ddp, workspace=workspace, **options)
    al = sorted(set(options) & set(AL_OPTIONS))
    for name in al:
        options.pop(name)
    return solve_ddp(problem, ddp, workspace=workspace, **options)
