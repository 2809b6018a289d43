"""State constraints with exact first and second derivatives.

A constraint maps states xs (K, nx) to values c (K, m) with Jacobians cx (K, m, nx) and
Hessians cxx (K, m, nx, nx). The problem reads path constraints as inequalities c ≥ 0
(imposed at nodes 1..N) and terminal constraints as equalities h = 0 (at node N).
Control bounds are not constraints objects: they are ``Problem.u_lower/u_upper``.

* :class:`SphereClearance`  c_j = ‖p_j(q) − center‖ − radius − margin ≥ 0 for points fixed on links
* :class:`StateEquality`    h = x[indices] − target (goal state, e.g. at rest)
* :class:`FramePositionEquality`  h = p(q) − target for a point fixed in a frame
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from dynamics.model import Model

from .costs import PointSet, _vector


class Constraint(ABC):
    """Abstract base: ``size`` values per state; subclasses implement ``evaluate``."""

    size: int = 0
    nx: int | None = None

    @abstractmethod
    def evaluate(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(c (K,size), cx (K,size,nx), cxx (K,size,nx,nx)) at every state of xs (K, nx)."""

    def check_dims(self, nx: int, name: str) -> None:
        """ValueError naming ``name`` if built for another state dimension."""
        if self.nx is not None and self.nx != nx:
            raise ValueError(f"{name}: {type(self).__name__} built for nx={self.nx}; the problem has nx={nx}")


def stack_constraints(constraints: Sequence[Constraint], xs: np.ndarray, nx: int):
    """Concatenate the constraints' (c, cx, cxx) along the constraint axis."""
    K = xs.shape[0]
    if not constraints:
        return np.zeros((K, 0)), np.zeros((K, 0, nx)), np.zeros((K, 0, nx, nx))
    parts = [c.evaluate(xs) for c in constraints]
    return tuple(np.concatenate([p[i] for p in parts], axis=1) for i in range(3))


class SphereClearance(Constraint):
    """c_j = ‖p_j(q) − center‖ − radius − margin ≥ 0 for every point j.

    ``points``: [(frame name, offset (3,) in that frame), ...] fixed on links.
    """

    def __init__(self, model: Model, points, center, radius: float, margin: float = 0.0) -> None:
        self.points = PointSet(model, points)
        self.center = _vector(center, 3, "center")
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a finite length ≥ 0, got {radius!r}")
        if not np.isfinite(margin):
            raise ValueError(f"margin: expected a finite length, got {margin!r}")
        self.radius, self.margin = float(radius), float(margin)
        self.size, self.nx, self.nv = len(self.points), 2 * model.nv, model.nv

    def evaluate(self, xs):
        K, nv = xs.shape[0], self.nv
        d, dd, ddd = self.points.sphere_distance(xs[:, :nv], self.center)
        cx, cxx = np.zeros((K, self.size, self.nx)), np.zeros((K, self.size, self.nx, self.nx))
        cx[:, :, :nv] = dd
        cxx[:, :, :nv, :nv] = ddd
        return d - self.radius - self.margin, cx, cxx

    def clearance(self, xs) -> np.ndarray:
        """c (K, P) only (for checkers and plots)."""
        d, _, _ = self.points.sphere_distance(np.asarray(xs, dtype=float)[:, : self.nv], self.center, False)
        return d - self.radius - self.margin


class StateEquality(Constraint):
    """h = x[indices] − target (all of x if ``indices`` is None)."""

    def __init__(self, target, indices=None, nx: int | None = None) -> None:
        if indices is None:
            target = np.array(target, dtype=float)
            self.nx = target.size if nx is None else nx
            indices = np.arange(self.nx)
        self.indices = np.array(indices, dtype=np.int64).ravel()
        self.size = self.indices.size
        self.target = _vector(target, self.size, "target")
        if nx is not None:
            self.nx = nx
        if self.nx is not None and np.any((self.indices < 0) | (self.indices >= self.nx)):
            raise ValueError(f"indices: expected state indices in [0, {self.nx}), got {self.indices}")

    def check_dims(self, nx: int, name: str) -> None:
        super().check_dims(nx, name)
        if np.any((self.indices < 0) | (self.indices >= nx)):
            raise ValueError(f"{name}: StateEquality indices {self.indices} out of range for nx={nx}")

    def evaluate(self, xs):
        K, nx = xs.shape
        cx = np.zeros((K, self.size, nx))
        cx[:, np.arange(self.size), self.indices] = 1.0
        return xs[:, self.indices] - self.target, cx, np.zeros((K, self.size, nx, nx))


class FramePositionEquality(Constraint):
    """h = p(q) − target (3 values) for the point ``offset`` fixed in frame ``frame``."""

    def __init__(self, model: Model, frame: str, target, offset=(0.0, 0.0, 0.0)) -> None:
        self.points = PointSet(model, [(frame, offset)])
        self.target = _vector(target, 3, "target")
        self.size, self.nx, self.nv = 3, 2 * model.nv, model.nv

    def evaluate(self, xs):
        K, nv = xs.shape[0], self.nv
        p, J, H = self.points.kinematics(xs[:, :nv])
        cx, cxx = np.zeros((K, 3, self.nx)), np.zeros((K, 3, self.nx, self.nx))
        cx[:, :, :nv] = J[:, 0]
        cxx[:, :, :nv, :nv] = H[:, 0]
        return p[:, 0] - self.target, cx, cxx
