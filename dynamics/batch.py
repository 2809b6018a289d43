"""Batched dynamics over the knots of a trajectory (leading axis = knots).

Each function evaluates the single-point algorithm at K states in one compiled call (a
plain loop over knots, no threads), so a whole trajectory costs one Python→numba
transition instead of K. Inputs are (K, nv) arrays; a non-finite entry raises
ValueError naming the array and the knot.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ._checks import as_batch
from .aba import aba_kernel
from .aba_derivatives import aba_derivatives_kernel
from .aba_second_derivatives_contracted import fdsva_so_contracted_kernel
from .kinematics import forward_kinematics
from .kinematics_derivatives import body_point, body_point_position, point_kinematics
from .model import Model
from .rnea_derivatives import rnea_derivatives_into
from .rnea_second_derivatives_contracted import idsva_so_contracted_kernel


@njit(cache=True)
def rnea_derivatives_batch_kernel(topology, joint_placement, axis, inertia, gravity, Q, V, A):
    """(∂τ/∂q, ∂τ/∂q̇), each (K, n, n), at the K states (Q[k], V[k], A[k])."""
    K, n = Q.shape
    out = np.empty((2, K, n, n))
    for k in range(K):
        rnea_derivatives_into(topology, joint_placement, axis, inertia, gravity, Q[k], V[k], A[k],
                              out[0, k], out[1, k])
    return out[0], out[1]


@njit(cache=True)
def aba_batch_kernel(topology, joint_placement, axis, inertia, gravity, Q, V, TAU):
    """q̈ (K, n) at the K states (Q[k], V[k], TAU[k])."""
    K, n = Q.shape
    qdd = np.empty((K, n))
    for k in range(K):
        qdd[k] = aba_kernel(topology, joint_placement, axis, inertia, gravity, Q[k], V[k], TAU[k])
    return qdd


@njit(cache=True)
def aba_derivatives_batch_kernel(topology, joint_placement, axis, inertia, gravity, Q, V, TAU):
    """(q̈ (K, n), ∂q̈/∂q, ∂q̈/∂q̇, M⁻¹ (K, n, n)) at the K states."""
    K, n = Q.shape
    qdd, out = np.empty((K, n)), np.empty((3, K, n, n))
    for k in range(K):
        qdd[k], out[0, k], out[1, k], out[2, k] = aba_derivatives_kernel(
            topology, joint_placement, axis, inertia, gravity, Q[k], V[k], TAU[k])
    return qdd, out[0], out[1], out[2]


@njit(cache=True)
def contracted_batch_kernel(topology, joint_placement, axis, inertia, gravity, Q, V, X, W, forward):
    """Four (K, n, n) arrays: contracted FDSVA-SO at (Q[k], V[k], τ = X[k]) with λ = W[k]
    if ``forward``, else contracted IDSVA-SO at (Q[k], V[k], a = X[k]) with μ = W[k]."""
    K, n = Q.shape
    out = np.empty((4, K, n, n))
    for k in range(K):
        if forward:
            out[0, k], out[1, k], out[2, k], out[3, k] = fdsva_so_contracted_kernel(
                topology, joint_placement, axis, inertia, gravity, Q[k], V[k], X[k], W[k])
        else:
            out[0, k], out[1, k], out[2, k], out[3, k] = idsva_so_contracted_kernel(
                topology, joint_placement, axis, inertia, gravity, Q[k], V[k], X[k], W[k])
    return out[0], out[1], out[2], out[3]


@njit(cache=True)
def point_kinematics_batch_kernel(topology, joint_placement, axis, Q, bodies, offsets):
    """Positions (K, m, 3), Jacobians (K, m, 3, n) and Hessians (K, m, 3, n, n) of m points.

    Point i is ``offsets[i]`` (3,) in the frame of body ``bodies[i]``; one forward
    kinematics per knot serves all points.
    """
    K, n = Q.shape
    m = bodies.shape[0]
    R, pos, S = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6))
    P, J, H = np.empty((K, m, 3)), np.empty((K, m, 3, n)), np.empty((K, m, 3, n, n))
    for k in range(K):
        forward_kinematics(topology, joint_placement, axis, Q[k], R, pos, S)
        for i in range(m):
            point_kinematics(topology, R, pos, S, bodies[i], offsets[i], P[k, i], J[k, i], H[k, i])
    return P, J, H


@njit(cache=True)
def point_positions_batch_kernel(topology, joint_placement, axis, Q, bodies, offsets):
    """Positions (K, m, 3) only of the points of :func:`point_kinematics_batch_kernel`."""
    K, n = Q.shape
    m = bodies.shape[0]
    R, pos, S = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6))
    P = np.empty((K, m, 3))
    for k in range(K):
        forward_kinematics(topology, joint_placement, axis, Q[k], R, pos, S)
        for i in range(m):
            body_point_position(R, pos, bodies[i], offsets[i], P[k, i])
    return P


def _knots(model: Model, **arrays) -> list[np.ndarray]:
    """The (K, nv) arrays, checked for shape, equal K and finiteness."""
    out = [as_batch(x, model.nv, name) for name, x in arrays.items()]
    for (name, x) in zip(arrays, out):
        if x.shape[0] != out[0].shape[0]:
            raise ValueError(f"{name}: expected {out[0].shape[0]} knots like {next(iter(arrays))}, got {x.shape[0]}")
        bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
        if bad.size:
            raise ValueError(f"{name}: expected finite values, got NaN or inf at knot {bad[0]}")
    return out


def _model_args(model: Model) -> tuple:
    return model.topology, model.joint_placement, model.axis, model.inertia, model.gravity


def rnea_derivatives_batch(model: Model, Q, V, A) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dynamics.rnea_derivatives` at K knots: (dtau_dq, dtau_dv), each (K, nv, nv)."""
    return rnea_derivatives_batch_kernel(*_model_args(model), *_knots(model, Q=Q, V=V, A=A))


def aba_batch(model: Model, Q, V, TAU) -> np.ndarray:
    """:func:`dynamics.aba` at K knots: q̈ (K, nv)."""
    return aba_batch_kernel(*_model_args(model), *_knots(model, Q=Q, V=V, TAU=TAU))


def aba_derivatives_batch(model: Model, Q, V, TAU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`dynamics.aba_derivatives` at K knots: (dqdd_dq, dqdd_dv, dqdd_dtau), each (K, nv, nv).

    :func:`aba_derivatives_batch_kernel` also returns q̈ (K, nv) for compiled callers.
    """
    return aba_derivatives_batch_kernel(*_model_args(model), *_knots(model, Q=Q, V=V, TAU=TAU))[1:]


def rnea_second_derivatives_contracted_batch(model: Model, Q, V, A, MU) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.rnea_second_derivatives_contracted` at K knots: (Hqq, Hvv, Hqv, Mq),
    each (K, nv, nv), contracting knot k with MU[k] (MU (K, nv))."""
    return contracted_batch_kernel(*_model_args(model), *_knots(model, Q=Q, V=V, A=A, MU=MU), False)


def aba_second_derivatives_contracted_batch(model: Model, Q, V, TAU, LAM) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.aba_second_derivatives_contracted` at K knots: (Hqq, Hvv, Hqv, Hqtau),
    each (K, nv, nv), contracting knot k with LAM[k] (LAM (K, nv))."""
    return contracted_batch_kernel(*_model_args(model), *_knots(model, Q=Q, V=V, TAU=TAU, LAM=LAM), True)


def point_kinematics_batch(model: Model, Q, frames: Sequence[str], offsets=None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (K, m, 3), Jacobians (K, m, 3, nv), Hessians (K, m, 3, nv, nv) of m points.

    Point i is ``offsets[i]`` (3,) expressed in frame ``frames[i]`` (``offsets`` (m, 3),
    default: the frame origins); layouts as :func:`dynamics.kinematics_derivatives.point_hessian`.
    """
    (Q,) = _knots(model, Q=Q)
    if isinstance(frames, str):
        raise ValueError(f"frames: expected a sequence of frame names, got the string {frames!r}")
    m = len(frames)
    offsets = np.zeros((m, 3)) if offsets is None else np.asarray(offsets, dtype=float)
    if offsets.shape != (m, 3):
        raise ValueError(f"offsets: expected shape ({m}, 3) (one offset per frame), got {offsets.shape}")
    if not np.all(np.isfinite(offsets)):
        raise ValueError("offsets: expected finite values, got NaN or inf")
    points = [body_point(model, f, o) for f, o in zip(frames, offsets)]
    bodies = np.array([b for b, _ in points], dtype=np.int64)
    in_body = np.array([o for _, o in points], dtype=float).reshape(m, 3)
    return point_kinematics_batch_kernel(model.topology, model.joint_placement, model.axis, Q, bodies, in_body)
