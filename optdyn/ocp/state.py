"""The state manifold of the optimal-control layer: x = [q; v], tangent δx = [δq; δv].

A configuration lives on the joints' Lie groups (:mod:`dynamics.joints`, Pinocchio's
conventions), a velocity in a vector space, so the state has ``nx = nq + nv`` coordinates
and a tangent space of dimension ``ndx = 2·nv`` (Mastalli et al., "Crocoddyl: An Efficient
and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, Sec. IV-A):

    x ⊕ δx = [q ⊕ δq; v + δv],        x₁ ⊖ x₀ = [q₁ ⊖ q₀; v₁ − v₀].

Every derivative "with respect to x" in optdyn is taken in the chart of the point itself,
∂/∂δx f(x ⊕ δx) at δx = 0 — the convention of the dynamics' derivatives. For a model
whose joints are all revolute or prismatic, ⊕ is + and ⊖ is −, and everything here
reduces to the vector-space formulas.

The Lie-group second derivatives the integrator, costs and constraints need (the curvature
of ⊕ and ⊖ on each joint) live beside the joints, in :mod:`dynamics.lie`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dynamics._compile import allocation_free
from dynamics.joints import configuration_error, difference_into, integrate_into, unit_block
from dynamics.model import Model


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
