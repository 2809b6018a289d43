"""One entry point for every solver: ``solve(problem, solver="ddp"|"ilqr"|"ipopt")``.

A solver is a type that owns its options (:mod:`optdyn.solvers.ddp`: :class:`DDP`,
:class:`ILQR` and their feasibility-driven forms :class:`FDDP`, :class:`FILQR`;
:class:`~optdyn.solvers.ipopt.IPOPT`); ``solve`` takes one by name, with its default options,
or an instance. DDP and iLQR handle control bounds in their box-QP backward pass and, when the
problem has path, stage or terminal constraints, run inside the augmented-Lagrangian outer loop
(:class:`~optdyn.solvers.augmented_lagrangian.AugmentedLagrangian`), so all solvers solve the
same constrained discrete-time problem. IPOPT (direct multiple shooting) is imported only when
asked for.
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np

from ..ocp.problem import SOLVERS, Problem
from .augmented_lagrangian import AugmentedLagrangian
from .bcl import ALDDP, ALFDDP, ALFILQR, ALILQR, BCL
from .compile_ahead import Ahead
from .ddp import DDP, FDDP, FILQR, ILQR, RiccatiSolver
from .result import Result
from .workspace import Workspace

RICCATI_SOLVERS = {"ddp": DDP, "ilqr": ILQR, "fddp": FDDP, "filqr": FILQR,
                   "al-ddp": ALDDP, "al-ilqr": ALILQR, "al-fddp": ALFDDP, "al-filqr": ALFILQR}
"""The DDP-type solvers :func:`solve` knows by name ("al-…": the constraints inside the
iteration, :mod:`optdyn.solvers.bcl`)."""
INSIDE = "al-"
"""The prefix of the names of the solvers that revise the multipliers inside the iteration."""
FEASIBILITY_DRIVEN = {"ddp": "fddp", "ilqr": "filqr", "al-ddp": "al-fddp", "al-ilqr": "al-filqr"}
"""The feasibility-driven form of each solver name: what a problem with contacts is solved by
(its guess is a standing state at every knot, not a rollout), and the warm start "shift" of
:class:`optdyn.MPC`."""
FAMILY = {form: name for name, form in FEASIBILITY_DRIVEN.items()}
"""The name whose ``solver_options`` a problem ships for a feasibility-driven form."""
AL_SETTINGS = tuple(f.name for f in fields(AugmentedLagrangian))
CHOICES = (*SOLVERS, "al-ddp", "al-ilqr")
"""The names a user picks a solver by (the command line's choices): a problem with contacts is
solved by each one's feasibility-driven form (:func:`solver_name`)."""
NAMES = (*CHOICES, *FAMILY)


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
    if np.all(np.isfinite(xs)):  # IPOPT and the feasibility-driven solvers use it
        options["xs_init"] = xs


def solver_name(problem: Problem, solver: str, feasibility_driven: bool | None = None) -> str:
    """The name of the type that solves ``problem`` as ``solver``: its feasibility-driven form
    (:data:`FEASIBILITY_DRIVEN`) if ``feasibility_driven`` or, when that is None, if the problem
    has contacts; ValueError naming ``solver`` if it is no solver's name."""
    if not isinstance(solver, str) or solver not in NAMES:
        raise ValueError(f"solver: expected one of {', '.join(NAMES)} or a solver instance, got {solver!r}")
    family = FAMILY.get(solver, solver)
    if feasibility_driven is None:
        feasibility_driven = solver in FAMILY or problem.contacts is not None
    return FEASIBILITY_DRIVEN.get(family, family) if feasibility_driven else family


START_TOL = 1e-6
"""How far the initial state may violate a path constraint before a solve that stops short says so."""


def start_violation(problem: Problem) -> str:
    """Where the problem's x0 violates a path constraint by more than :data:`START_TOL` (the
    likely reason a constrained solve stops short: the path constraints hold at nodes 1..N, so
    the first interval must bring the state within them; :meth:`~optdyn.ocp.constraints.Constraint.violation_at`), as a
    clause for the result's message; "" if it does not."""
    violation, what = max((c.violation_at(problem.x0) for c in problem.path_constraints), default=(0.0, ""),
                          key=lambda found: found[0])
    if violation <= START_TOL:
        return ""
    return (f"; x0 violates a path constraint by {violation:.3g} ({what}): the path constraints hold "
            f"from node 1 on, so the first interval must bring the state within them")


def solver_of(solver, options: dict):
    """The solver instance ``solver`` names (:data:`NAMES`) with ``options``, or the instance
    ``solver`` (a :class:`~optdyn.solvers.ddp.RiccatiSolver` or an
    :class:`~optdyn.solvers.ipopt.IPOPT`) with ``options`` replacing its own; ValueError naming
    ``solver`` or the option it does not know or cannot take."""
    if isinstance(solver, str):
        if solver not in NAMES:
            raise ValueError(f"solver: expected one of {', '.join(NAMES)} or a solver instance, got {solver!r}")
        if solver == "ipopt":
            from .ipopt import IPOPT
            return IPOPT.with_options(**options)
        return RICCATI_SOLVERS[solver].with_options(**options)
    from .ipopt import IPOPT
    if not isinstance(solver, (RiccatiSolver, IPOPT)):
        raise ValueError(f"solver: expected one of {', '.join(SOLVERS)} or a solver instance (optdyn.solvers.DDP, "
                         f"ILQR, FDDP, FILQR, ALDDP, ALILQR, ALFDDP, ALFILQR, IPOPT), got {type(solver).__name__}")
    own = {f.name: getattr(solver, f.name) for f in fields(solver)}
    return type(solver).with_options(**{**own, **options})


def solve(problem: Problem, solver="ddp", *, init: Result | None = None, max_time: float | None = None,
          workspace: Workspace | None = None, feasibility_driven: bool | None = None, **options) -> Result:
    """Solve ``problem`` with ``solver``: "ddp", "ilqr" or "ipopt" (that type with its default
    options, :mod:`optdyn.solvers`; "fddp", "filqr" name the feasibility-driven forms, which a
    problem with contacts gets for "ddp" and "ilqr"; "al-ddp", "al-ilqr" the types that revise
    the multipliers inside the iteration, :mod:`optdyn.solvers.bcl`, with the task's options of
    "ddp" and "ilqr"), or a solver instance.

    ``options``: the solver's own (e.g. ``max_iter``, ``tol``, ``verbose``, ``callback``:
    called with a dict once per iteration, returning False stops the solve; see each type),
    replacing those of an instance; a problem's own ``solver_options`` for a solver named
    apply first (their ``"solver"``, if any, names the type the task is solved by, e.g.
    ``{"ddp": {"solver": "fddp"}}``). Besides them: ``us_init``/``xs_init`` (the guess; DDP and iLQR start from the
    rollout of ``us_init`` and check ``xs_init`` without using it, their feasibility-driven
    forms and IPOPT start from both), ``init`` (a previous :class:`Result` to warm-start from:
    its ``us`` and ``xs``), ``max_time`` (wall-clock limit in s: status "time_limit" with the
    last iterate) and ``multipliers`` (a constrained result's extra: the multipliers to start
    from). Ctrl-C during a solve returns the last iterate with status "interrupted"
    (:mod:`optdyn.solvers.runtime`). The other DDP-type solvers of a constrained problem take the
    settings of :class:`~optdyn.solvers.augmented_lagrangian.AugmentedLagrangian` too
    (``constraint_tol``, ``rho_init``, …); the al- types have theirs
    (:class:`~optdyn.solvers.bcl.BCL`). ``workspace`` (DDP-type): a
    :class:`~optdyn.solvers.workspace.Workspace` of the problem's size whose arrays the solve
    writes into instead of allocating its own (the same result), kept by a caller that solves
    one problem after another of that size (:class:`optdyn.MPC`). ``feasibility_driven`` (a
    solver given by name): True for its feasibility-driven (multiple-shooting) form, False for
    its single-shooting one, None (default) for the form the problem takes (:func:`solver_name`),
    the problem's shipped options applying either way. Unknown solvers or options
    raise ValueError. The result carries the problem as ``source`` (for plotting and
    visualisation).
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    if isinstance(solver, str):
        family = FAMILY.get(solver, solver)
        prefix = INSIDE if family.startswith(INSIDE) else ""  # the al- forms take the task's options of their family
        shipped = dict(problem.solver_options.get(family.removeprefix(INSIDE), {}))
        named = shipped.pop("solver", None)
        solver = solver_name(problem, solver if named is None else prefix + named, feasibility_driven)
        options = {**shipped, **options}
    elif feasibility_driven is not None:
        raise ValueError("feasibility_driven: only with a solver given by name (an instance is the form it is)")
    if init is not None:
        _warm_start(problem, init, options)
    if max_time is not None:
        options["max_time"] = max_time
    guess = {k: options.pop(k, None) for k in ("us_init", "xs_init")}
    multipliers = options.pop("multipliers", None)
    inside = isinstance(solver, BCL) or (isinstance(solver, str) and solver.startswith(INSIDE))
    settings = {} if inside else {k: options.pop(k) for k in AL_SETTINGS if k in options}
    instance = solver_of(solver, options)
    if settings and not isinstance(instance, RiccatiSolver):
        raise ValueError(f"{next(iter(settings))}: a setting of DDP's and iLQR's augmented Lagrangian, not of "
                         f"{instance.name}")
    outer = AugmentedLagrangian(**settings) if isinstance(instance, RiccatiSolver) else None
    if workspace is not None and not (isinstance(workspace, Workspace) and isinstance(instance, RiccatiSolver)
                                      and workspace.fits(problem)):
        raise ValueError(f"workspace: expected an optdyn.solvers.workspace.Workspace of the problem's size (N, nx, "
                         f"nu, ndx) = {(problem.N, problem.nx, problem.nu, problem.ndx)} for DDP or iLQR, got "
                         f"{getattr(workspace, 'size', type(workspace).__name__)} for {instance.name!r}")
    with Ahead(problem, instance.name):  # on a cold cache, helpers compile the later kernels meanwhile
        if isinstance(instance, BCL):  # constrained or not, the type solves it
            result = instance.solve(problem, **guess, multipliers=multipliers, workspace=workspace)
        elif not isinstance(instance, RiccatiSolver):
            result = instance.solve(problem, **guess, multipliers=multipliers)
        elif problem.nc or problem.ng or problem.nh:
            result = outer.solve(problem, instance, **guess, multipliers=multipliers, workspace=workspace)
        else:
            result = instance.solve(problem, **guess, workspace=workspace)
    result.source = problem
    if not result.converged:
        result.message = result.message.rstrip(". ") + start_violation(problem)
    differenced = problem.differenced_hessians
    if differenced:
        result.extra["differenced_hessians"] = differenced
        result.message += f" (Hessians of {', '.join(differenced)} by differences of their Jacobians)"
    return result
