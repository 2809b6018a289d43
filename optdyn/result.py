"""The result every solver returns (DDP, iLQR and IPOPT alike)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Result:
    """Solution of an optimal-control problem.

    Attributes:
        xs: states at the N+1 nodes, (N+1, nx).
        us: controls of the N intervals, (N, nu).
        cost: objective at (xs, us).
        converged: True if the solver's convergence test passed.
        iterations: number of (outer) iterations taken.
        status: short machine-readable status, e.g. "converged", "max_iter",
            "infeasible", "line_search_failed".
        message: one human-readable sentence explaining ``status``.
        history: per-iteration arrays of equal length, e.g. "cost",
            "expected_decrease", "step", "regularization", "violation",
            "gradient", "time" (wall time since the start, s).
        solver: "ddp", "ilqr" or "ipopt".
        problem: name of the problem solved; ``params`` its construction parameters.
        wall_time: total solve time, s.
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

    def __repr__(self) -> str:
        return (f"Result(solver={self.solver!r}, problem={self.problem!r}, status={self.status!r}, "
                f"cost={self.cost:.6g}, iterations={self.iterations}, converged={self.converged})")
