"""The state manifold of the optimal-control layer: x = [q; v], tangent δx = [δq; δv].

A configuration lives on the joints' Lie groups (:mod:`dynamics.joints`, Pinocchio's
conventions), a velocity in a vector space, so the state has ``nx = nq + nv`` coordinates
and a tangent space of dimension ``ndx = 2·nv`` (Mastalli et al., "Crocoddyl: An Efficient
and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, Sec. IV-A):

    x ⊕ δx = [q ⊕ δq; v + δv],        x₁ ⊖ x₀ = [q₁ ⊖ q₀; v₁ − v₀].

Every derivative "with respect to x" in optdyn is taken in the chart of the point itself,
∂/∂δx f(x ⊕ δx) at δx = 0 — the convention of the dynamics' derivatives. For a model
whose joints are all revolute or prismatic, ⊕ is + and ⊖ is −, and everything here
reduces to the vector-space formulas. :class:`StateChart` holds states in the chart of a
reference trajectory (the multiple-shooting NLP's variables).

The Lie-group second derivatives the integrator, costs and constraints need (the curvature
of ⊕ and ⊖ on each joint) live beside the joints, in :mod:`dynamics.lie`.
"""
from __future__ import annotations

import numpy as np

from dynamics._compile import allocation_free, njit
from dynamics.joints import configuration_error, difference_into, integrate_into, lie_jacobian_batch, unit_block
from dynamics.lie import exp_curvature, lie_blocks, lie_scratch, log_curvature
from dynamics.model import Model

__all__ = ["state_integrate_into", "state_difference", "state_integrate_batch", "state_difference_batch",
           "check_state", "StateChart",
           # the curvatures of the charts x̃ ⊕ ξ and of the defects' ⊖, for the solvers (from dynamics.lie)
           "lie_blocks", "lie_scratch", "exp_curvature", "log_curvature"]


@allocation_free
def state_integrate_into(topology, nq, x, dx, out):
    """out (nq + nv,) = x ⊕ dx for x = [q; v] and dx = [δq; δv] (2·nv,)."""
    nv = dx.shape[0] // 2
    integrate_into(topology, x[:nq], dx[:nv], out[:nq])
    for i in range(nv):
        out[nq + i] = x[nq + i] + dx[nv + i]


@allocation_free
def state_difference(topology, nq, x0, x1, out):
    """out (2·nv,) = x1 ⊖ x0 = [q1 ⊖ q0; v1 − v0]."""
    nv = out.shape[0] // 2
    difference_into(topology, x0[:nq], x1[:nq], out[:nv])
    for i in range(nv):
        out[nv + i] = x1[nq + i] - x0[nq + i]


@njit(cache=True)
def state_integrate_batch(topology, nq, X, DX):
    """Rows x_k ⊕ dx_k (K, nq + nv) of X (K, nq + nv) and DX (K, 2·nv)."""
    out = np.empty(X.shape)
    for k in range(X.shape[0]):
        state_integrate_into(topology, nq, X[k], DX[k], out[k])
    return out


@njit(cache=True)
def state_difference_batch(topology, nq, X0, X1):
    """Rows x1_k ⊖ x0_k (K, 2·nv) of X0, X1 (K, nq + nv)."""
    out = np.empty((X0.shape[0], 2 * (X0.shape[1] - nq)))
    for k in range(X0.shape[0]):
        state_difference(topology, nq, X0[k], X1[k], out[k])
    return out


def state_plus(model: Model | None, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """x ⊕ dx for one state x (nq + nv,) and tangent dx (2·nv,) of ``model``; x + dx with no model."""
    if model is None:
        return x + dx
    return state_integrate_batch(model.topology, model.nq, x[None], np.ascontiguousarray(dx)[None])[0]


def check_state(model: Model, x: np.ndarray, name: str) -> None:
    """ValueError naming ``name`` (and the row of a trajectory) if a quaternion (or planar
    (cos, sin)) of the state x (nq + nv,) or states (K, nq + nv) is not of unit norm
    (tolerance of :func:`dynamics.normalize`'s check); NaN passes (a diverged rollout's
    rows). Normalise with ``dynamics.normalize`` first."""
    x = np.asarray(x, dtype=float)
    X = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    row, i = _off_unit(model.topology, model.nq, X)
    if i < 0:
        return
    k, m = unit_block(model.topology, i)
    where = f" at row {row}" if x.ndim > 1 else ""
    raise ValueError(f"{name}: the quaternion (or planar cos, sin) of joint {model.joint_names[i]!r} has norm "
                     f"{np.linalg.norm(X[row, k: k + m]):.9g}{where}, expected 1 — normalise it with "
                     "dynamics.normalize(model, q)")


@njit(cache=True)
def _off_unit(topology, nq, X):
    """(row, joint) of the first row of X whose configuration X[row, :nq] has a quaternion
    (or planar (cos, sin)) off unit norm (:func:`dynamics.joints.configuration_error`;
    rows with NaN or inf pass), (−1, −1) if none."""
    for r in range(X.shape[0]):
        i = configuration_error(topology, X[r, :nq])
        if i >= 0:
            return r, i
    return -1, -1


class StateChart:
    """Coordinates ξ_k of states in the chart x_k = x̃_k ⊕ ξ_k around a reference x̃ (K, nx)
    on a model with Lie-group joints; ξ = x (x̃ = 0, no arithmetic) otherwise — the state
    variables of the multiple-shooting NLP (:mod:`optdyn.solvers.ipopt`), with the charts'
    Jacobians that carry derivatives from x to ξ."""

    def __init__(self, model: Model, reference: np.ndarray) -> None:
        self.topology, self.nq, self.nv = model.topology, model.nq, model.nv
        lie = lie_blocks(model)
        self.manifold = lie.shape[0] > 0
        self.reference = np.ascontiguousarray(reference, dtype=float) if self.manifold else None
        # the Lie joints' tangent coordinates (indices of δq), and the joints' blocks renumbered within them:
        # the charts' Jacobians are the identity elsewhere and their curvatures vanish there
        self.dofs = np.concatenate([np.arange(m, m + n) for _, m, n in lie] + [np.zeros(0, np.int64)])
        self.lie = lie.copy()
        self.lie[:, 1] = np.cumsum(lie[:, 2]) - lie[:, 2]

    def states(self, xis: np.ndarray) -> np.ndarray:
        """x_k = x̃_k ⊕ ξ_k (N+1, nx)."""
        if not self.manifold:
            return xis
        return state_integrate_batch(self.topology, self.nq, self.reference, np.ascontiguousarray(xis))

    def coordinates(self, xs: np.ndarray, start: int = 0) -> np.ndarray:
        """ξ_k = x_k ⊖ x̃_k (K, ndx) for the nodes start … start + K − 1."""
        if not self.manifold:
            return np.asarray(xs, dtype=float)
        return state_difference_batch(self.topology, self.nq, self.reference[start: start + xs.shape[0]],
                                      np.ascontiguousarray(xs, dtype=float))

    def _lie_block(self, J: np.ndarray) -> np.ndarray:
        """The Lie coordinates' block (K, r, r) of joint Jacobians J (K, nv, nv)."""
        return np.ascontiguousarray(J[:, self.dofs[:, None], self.dofs])

    def jacobians(self, xis: np.ndarray) -> np.ndarray:
        """E_k = ∂(x̃_k ⊕ ξ)/∂ξ: its block (K, r, r) on the Lie coordinates ``dofs`` (J_r(ξ_q)
        per joint), the identity elsewhere."""
        return self._lie_block(lie_jacobian_batch(self.topology, np.ascontiguousarray(xis[:, :self.nv]), 1))

    def pullback(self, J: np.ndarray, g: np.ndarray) -> np.ndarray:
        """J_kᵀ g_k (K, ndx), a copy, for g (K, ndx) and a chart Jacobian J given by its block
        (K, r, r) on ``dofs``: only those entries change."""
        out = g.copy()
        out[:, self.dofs] = (g[:, None, self.dofs] @ J)[:, 0]
        return out

    def chain(self, M: np.ndarray, left: np.ndarray | None = None, right: np.ndarray | None = None) -> np.ndarray:
        """M_k ← L_k M_k R_k in place and returned, for M (K, a, b) whose rows (columns) start with
        δq, and chart Jacobians L, R given by their blocks (K, r, r) on ``dofs``: only those rows
        and columns change."""
        d = self.dofs
        if left is not None:
            M[:, d] = left @ M[:, d]
        if right is not None:
            M[:, :, d] = M[:, :, d] @ right
        return M

    def defect_terms(self, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(G_k = y_k ⊖ x̃_{k+1} (N, ndx), D_k = ∂G_k/∂y_k) for y_k = F(x_k, u_k), D by its
        block (N, r, r) on the Lie coordinates (J_r⁻¹ per joint; the identity elsewhere);
        (y, None) on a vector space."""
        if not self.manifold:
            return ys, None
        G = self.coordinates(ys, 1)
        return G, self._lie_block(lie_jacobian_batch(self.topology, np.ascontiguousarray(G[:, :self.nv]), 2))
