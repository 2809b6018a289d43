"""The result every solver returns (DDP, iLQR and IPOPT alike)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

STATUSES: dict[str, str] = {
    # the solver's own tolerance was met (says nothing about the task: see optdyn.apps.report)
    "converged": "the solver's convergence test passed (DDP/iLQR: expected decrease or projected gradient below "
                 "tol; with constraints also violation ≤ constraint_tol; IPOPT: 'Optimal Solution Found')",
    "acceptable": "IPOPT stopped at a point meeting its looser 'acceptable' tolerances",
    # stopped from outside
    "max_iter": "the iteration limit was reached",
    "max_outer": "DDP/iLQR: the augmented-Lagrangian outer-iteration limit was reached",
    "time_limit": "the wall-clock limit (max_time, or IPOPT's max_wall_time/max_cpu_time) was reached",
    "interrupted": "Ctrl-C (SIGINT) during the solve; the last accepted iterate is returned",
    "user_stop": "the callback returned False",
    # the solver could not make progress
    "line_search_failed": "DDP/iLQR: no step decreased the cost, even at the largest regularisation",
    "rollout_failed": "DDP/iLQR: every trial rollout diverged (non-finite states) or was invalid for the model "
                      "(an exception of the dynamics), even at the largest regularisation; or, at iteration 0, "
                      "no initial controls tried gave a finite rollout (then xs holds NaN after the divergence)",
    "regularization_failed": "DDP/iLQR: Q_uu stayed indefinite up to the largest regularisation",
    "infeasible": "IPOPT: the problem seems locally infeasible",
    "search_direction_too_small": "IPOPT: the search direction became too small",
    "diverging": "IPOPT: the iterates seem to diverge",
    "feasible_point_found": "IPOPT: a feasible point was found (square problem)",
    "restoration_failed": "IPOPT: the feasibility restoration phase failed",
    "error_in_step_computation": "IPOPT: the linear system could not be solved",
    "not_enough_degrees_of_freedom": "IPOPT: fewer variables than equality constraints",
    "invalid_problem_definition": "IPOPT: the problem definition is invalid",
    "invalid_option": "IPOPT: an option is invalid",
    "invalid_number": "IPOPT: the functions or derivatives could not be evaluated at the starting point "
                      "(non-finite values or an invalid model state)",
    "solver_error": "IPOPT failed internally (unrecoverable or non-IPOPT exception, memory, internal error)",
}
"""Every value ``Result.status`` can take, with its meaning. ``converged`` means only that the
solver's tolerance was met: whether the task was achieved (target distance, constraint
violation) is reported separately by :func:`optdyn.apps.report.task_errors`."""


@dataclass
class Result:
    """Solution of an optimal-control problem.

    Attributes:
        xs: states at the N+1 nodes, (N+1, nx).
        us: controls of the N intervals, (N, nu).
        cost: objective at (xs, us).
        converged: True if the solver's convergence test passed (status "converged" or
            "acceptable") — not that the task was achieved: see :mod:`optdyn.apps.report`.
        iterations: number of (outer) iterations taken.
        status: short machine-readable status, one of the keys of :data:`STATUSES`
            (e.g. "converged", "max_iter", "time_limit", "interrupted", "rollout_failed").
        message: one human-readable sentence explaining ``status``.
        history: per-iteration arrays of equal length, e.g. "cost",
            "expected_decrease", "step", "regularization", "violation",
            "gradient", "time" (wall time since the start, s).
        solver: "ddp", "ilqr" or "ipopt".
        problem: name of the problem solved; ``params`` its construction parameters.
        wall_time: total solve time, s; it includes ``extra["compile_time"]`` seconds of
            numba compilation (0.0 when every kernel came from the disk cache).
        gains: feedback gains K (N, nu, nx) of DDP/iLQR, None for IPOPT.
        extra: solver-specific data (IPOPT status code and log, multipliers, ...).
        source: the Problem instance solved, set by :func:`optdyn.solve` so that a
            fresh result can be viewed directly; not saved to disk.
    """

    xs: np.ndarray
    us: np.ndarray
    cost: float
    converged: bool
    iterations: int
    status: str
    message: str = ""
    history: dict[str, np.ndarray] = field(default_factory=dict)
    solver: str = ""
    problem: str = ""
    params: dict = field(default_factory=dict)
    wall_time: float = 0.0
    gains: np.ndarray | None = None
    extra: dict = field(default_factory=dict)
    source: object = field(default=None, repr=False, compare=False)

    @property
    def includes_compilation(self) -> bool:
        """True if ``wall_time`` includes numba compilation (``extra["compile_time"]`` > 0)."""
        return float(self.extra.get("compile_time", 0.0)) > 0.0

    def __repr__(self) -> str:
        return (f"Result(solver={self.solver!r}, problem={self.problem!r}, status={self.status!r}, "
                f"cost={self.cost:.6g}, iterations={self.iterations}, converged={self.converged})")


def multiplier_arrays(multipliers, shapes: dict[str, tuple[int, ...]], expected: str,
                      label: str = "") -> dict[str, np.ndarray]:
    """The arrays named in ``shapes`` from ``multipliers`` (a result's extra, or the part of it
    that holds them), finite and of those shapes, to start a solve from; ValueError naming
    ``multipliers``: "expected ``expected``" when one is missing or not numbers, else which
    (``label`` before its name) has the wrong shape or values."""
    try:
        arrays = {k: np.array(multipliers[k], dtype=float) for k in shapes}
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise ValueError(f"multipliers: expected {expected}") from None
    for k, shape in shapes.items():
        if arrays[k].shape != shape or not np.all(np.isfinite(arrays[k])):
            raise ValueError(f"multipliers: {label}{k} expected finite values of shape {shape}, "
                             f"got shape {arrays[k].shape}")
    return arrays
