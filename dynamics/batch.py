"""Batched dynamics over the knots of a trajectory (leading axis = knots).

Each function evaluates the single-point algorithm at K states in one compiled call, so a
whole trajectory costs one Python→numba transition instead of K. The first-order kernels,
the point kinematics (positions, Jacobians, Hessians of points fixed on the bodies) and the
contact and impulse kernels run on the threads of :func:`dynamics.parallel.run_chunks`,
which claim chunks of knots; each thread makes one workspace (and contact workspace,
:mod:`dynamics.workspace`, :mod:`dynamics.contact_workspace`) for its chunks:
allocation-free per knot, bitwise identical for any number of threads. Every
configuration is checked before the threads start (:func:`check_knots`).
Inputs are (K, nq) configurations and (K, nv) arrays; a non-finite entry raises
ValueError naming the array and the knot. ``F_EXT`` (K, njoints, 6), optional, gives knot k the
external forces ``F_EXT[k]`` (the ``f_ext`` of :func:`dynamics.rnea`); None: no external force.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import NO_FORCE, InputError, as_batch
from ._compile import njit
from .aba import NOT_POSITIVE, aba_into
from .aba_derivatives import aba_derivatives_into
from .aba_second_derivatives_contracted import fdsva_so_contracted_kernel
from .contact import contact_rows
from .contact_dynamics import check_contacts, contact_dynamics_passes, raise_if_dependent
from .contact_dynamics_derivatives import contact_dynamics_derivative_passes
from .contact_dynamics_second_derivatives_contracted import contact_so_contracted_passes
from .contact_workspace import new_contact_work
from .impulse_dynamics import check_restitution, impulse_dynamics_passes
from .impulse_dynamics_derivatives import impulse_dynamics_derivative_passes
from .impulse_dynamics_second_derivatives_contracted import impulse_so_contracted_passes
from .joints import configuration_error
from .kinematics import forward_kinematics, kinematics_work, tangent_size
from .kinematics_derivatives import body_point, body_point_position, point_kinematics
from .model import Model
from .parallel import first_chunk, next_chunk, run_chunks
from .rnea_derivatives import rnea_derivatives_into
from .rnea_second_derivatives_contracted import idsva_so_contracted_kernel, new_so_work
from .workspace import new_data


NO_FORCES = NO_FORCE[None]
"""The ``F_EXT`` the batch kernels receive when no external force is applied (any K)."""


@njit(cache=True)
def knot_force(F_EXT, k):
    """The f_ext of knot k: F_EXT[k] for F_EXT (K, n, 6), F_EXT[0] if it has one row (a (0, 6)
    F_EXT[0] = none)."""
    return F_EXT[k] if F_EXT.shape[0] > 1 else F_EXT[0]


@njit(cache=True)
def check_knots(topology, Q):
    """Raise ValueError naming the first knot whose configuration is not valid
    (:func:`dynamics.joints.check_configuration`): before the threads start, so that the
    first invalid knot is the one named, whichever thread would have met it."""
    for k in range(Q.shape[0]):
        i = configuration_error(topology, Q[k])
        if i >= 0:
            raise InputError("Q: at knot", k, "the unit quaternion (or planar cos, sin) of joint number", i,
                             "has a norm off 1; use dynamics.normalize")
        if i == -2:
            raise InputError("Q: expected finite values, got NaN or inf at knot", k)


@njit(cache=True)
def check_flags(ok):
    """Raise :data:`dynamics.aba.NOT_POSITIVE` with the first knot whose flag is False."""
    for k in range(ok.shape[0]):
        if not ok[k]:
            raise InputError(NOT_POSITIVE, "at knot", k)


@njit(cache=True, nogil=True)
def _rnea_derivatives_chunk(m, Q, V, A, F_EXT, out, claims):
    """(∂τ/∂q, ∂τ/∂q̇) into out[0, k], out[1, k] at the knots the thread claims."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    d = new_data(m.topology)
    while k0 < k1:
        for k in range(k0, k1):
            rnea_derivatives_into(m, d, Q[k], V[k], A[k], knot_force(F_EXT, k), out[0, k], out[1, k])
        k0, k1 = next_chunk(claims)


@njit(cache=True, nogil=True)
def _aba_chunk(m, Q, V, TAU, F_EXT, qdd, ok, claims):
    """q̈ into qdd[k] (ok[k]: M positive definite) at the knots the thread claims."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    d = new_data(m.topology)
    while k0 < k1:
        for k in range(k0, k1):
            ok[k] = aba_into(m, d, Q[k], V[k], TAU[k], knot_force(F_EXT, k), qdd[k])
        k0, k1 = next_chunk(claims)


@njit(cache=True, nogil=True)
def _aba_derivatives_chunk(m, Q, V, TAU, F_EXT, qdd, out, ok, claims):
    """q̈ into qdd[k], (∂q̈/∂q, ∂q̈/∂q̇, M⁻¹) into out[:, k] (ok[k]: M positive definite) at
    the knots the thread claims."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    d = new_data(m.topology)
    while k0 < k1:
        for k in range(k0, k1):
            ok[k] = aba_derivatives_into(m, d, Q[k], V[k], TAU[k], knot_force(F_EXT, k), qdd[k], out[0, k],
                                         out[1, k], out[2, k])
        k0, k1 = next_chunk(claims)


@njit(cache=True)
def contracted_batch_kernel(m, Q, V, X, MU, F_EXT, forward):
    """Four (K, nv, nv) arrays: contracted FDSVA-SO at (Q[k], V[k], τ = X[k]) if ``forward``,
    else contracted IDSVA-SO at (Q[k], V[k], a = X[k]), with the weights μ = MU[k]."""
    K, nv = V.shape
    out = np.empty((4, K, nv, nv))
    for k in range(K):
        f = knot_force(F_EXT, k)
        if forward:
            out[0, k], out[1, k], out[2, k], out[3, k] = fdsva_so_contracted_kernel(m, Q[k], V[k], X[k], f, MU[k])
        else:
            out[0, k], out[1, k], out[2, k], out[3, k] = idsva_so_contracted_kernel(m, Q[k], V[k], X[k], f, MU[k])
    return out[0], out[1], out[2], out[3]


@njit(cache=True, nogil=True)
def _points_chunk(m, Q, bodies, offsets, P, J, H, claims):
    """Positions P[k] (p, 3) and, unless J has no knots, Jacobians J[k] (p, 3, nv) and
    Hessians H[k] (p, 3, nv, nv) of p points at the knots the thread claims; one forward
    kinematics per knot serves all points (point i is ``offsets[i]`` (3,) in the frame of
    body ``bodies[i]``)."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    R, pos, S = kinematics_work(m.topology)
    derivatives = J.shape[0] > 0
    while k0 < k1:
        for k in range(k0, k1):
            forward_kinematics(m, Q[k], R, pos, S)
            for i in range(bodies.shape[0]):
                if derivatives:
                    point_kinematics(m.topology, R, pos, S, bodies[i], offsets[i], P[k, i], J[k, i], H[k, i])
                else:
                    body_point_position(R, pos, bodies[i], offsets[i], P[k, i])
        k0, k1 = next_chunk(claims)


def point_kinematics_knots(m, Q: np.ndarray, bodies: np.ndarray, offsets: np.ndarray, derivatives: bool = True
                           ) -> tuple[np.ndarray, ...]:
    """Positions (K, p, 3), and with ``derivatives`` Jacobians (K, p, 3, nv) and Hessians
    (K, p, 3, nv, nv), of p points fixed on the bodies (point i is ``offsets[i]`` (3,) in the
    frame of body ``bodies[i]``) at the K configurations Q (K, nq), valid (checked here);
    ``m`` is the model's arrays (``Model.arrays``). Without ``derivatives``, the positions
    alone."""
    topology = m.topology
    K, nv, npts = Q.shape[0], tangent_size(topology), bodies.shape[0]
    check_knots(topology, Q)
    P = np.empty((K, npts, 3))
    J = np.empty((K, npts, 3, nv)) if derivatives else np.empty((0, npts, 3, nv))
    H = np.empty((K, npts, 3, nv, nv)) if derivatives else np.empty((0, npts, 3, nv, nv))
    run_chunks(_points_chunk, K, m, Q, bodies, offsets, P, J, H)
    return (P, J, H) if derivatives else P


def _knots(model: Model, **arrays) -> list[np.ndarray]:
    """The (K, nq) array Q and (K, nv) others, checked for shape, equal K and finiteness."""
    out = [as_batch(x, model.nq if name == "Q" else model.nv, name) for name, x in arrays.items()]
    for (name, x) in zip(arrays, out):
        if x.shape[0] != out[0].shape[0]:
            raise ValueError(f"{name}: expected {out[0].shape[0]} knots like {next(iter(arrays))}, got {x.shape[0]}")
        bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
        if bad.size:
            raise ValueError(f"{name}: expected finite values, got NaN or inf at knot {bad[0]}")
    return out


def _forces(model: Model, F_EXT, K: int) -> np.ndarray:
    """``F_EXT`` as a (K, njoints, 6) float64 array of finite forces, :data:`NO_FORCES` for None."""
    if F_EXT is None:
        return NO_FORCES
    try:
        f_exts = np.ascontiguousarray(F_EXT, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"F_EXT: expected an array of shape ({K}, {model.njoints}, 6), got {F_EXT!r}") from None
    if f_exts.shape != (K, model.njoints, 6):
        raise ValueError(f"F_EXT: expected shape ({K}, {model.njoints}, 6) (one f_ext per knot), got {f_exts.shape}")
    bad = np.flatnonzero(~np.isfinite(f_exts).all(axis=(1, 2)))
    if bad.size:
        raise ValueError(f"F_EXT: expected finite values, got NaN or inf at knot {bad[0]}")
    return f_exts


def rnea_derivatives_batch(model: Model, Q, V, A, F_EXT=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dynamics.rnea_derivatives` at K knots: (dtau_dq, dtau_dv), each (K, nv, nv)."""
    Q, V, A = _knots(model, Q=Q, V=V, A=A)
    check_knots(model.topology, Q)
    out = np.empty((2, Q.shape[0], model.nv, model.nv))
    run_chunks(_rnea_derivatives_chunk, Q.shape[0], model.arrays, Q, V, A, _forces(model, F_EXT, Q.shape[0]), out)
    return out[0], out[1]


def aba_batch(model: Model, Q, V, TAU, F_EXT=None) -> np.ndarray:
    """:func:`dynamics.aba` at K knots: q̈ (K, nv)."""
    Q, V, TAU = _knots(model, Q=Q, V=V, TAU=TAU)
    check_knots(model.topology, Q)
    qdd, ok = np.empty((Q.shape[0], model.nv)), np.empty(Q.shape[0], dtype=np.bool_)
    run_chunks(_aba_chunk, Q.shape[0], model.arrays, Q, V, TAU, _forces(model, F_EXT, Q.shape[0]), qdd, ok)
    check_flags(ok)
    return qdd


def aba_derivatives_batch(model: Model, Q, V, TAU, F_EXT=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`dynamics.aba_derivatives` at K knots: (dqdd_dq, dqdd_dv, dqdd_dtau), each (K, nv, nv)."""
    Q, V, TAU = _knots(model, Q=Q, V=V, TAU=TAU)
    check_knots(model.topology, Q)
    K, nv = Q.shape[0], model.nv
    qdd, out, ok = np.empty((K, nv)), np.empty((3, K, nv, nv)), np.empty(K, dtype=np.bool_)
    run_chunks(_aba_derivatives_chunk, K, model.arrays, Q, V, TAU, _forces(model, F_EXT, K), qdd, out, ok)
    check_flags(ok)
    return out[0], out[1], out[2]


def rnea_second_derivatives_contracted_batch(model: Model, Q, V, A, MU, F_EXT=None) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.rnea_second_derivatives_contracted` at K knots: (Hqq, Hvv, Hqv, Mq),
    each (K, nv, nv), contracting knot k with MU[k] (MU (K, nv))."""
    Q, V, A, MU = _knots(model, Q=Q, V=V, A=A, MU=MU)
    return contracted_batch_kernel(model.arrays, Q, V, A, MU, _forces(model, F_EXT, Q.shape[0]), False)


def aba_second_derivatives_contracted_batch(model: Model, Q, V, TAU, MU, F_EXT=None) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.aba_second_derivatives_contracted` at K knots: (Hqq, Hvv, Hqv, Hqtau),
    each (K, nv, nv), contracting knot k with MU[k] (MU (K, nv))."""
    Q, V, TAU, MU = _knots(model, Q=Q, V=V, TAU=TAU, MU=MU)
    return contracted_batch_kernel(model.arrays, Q, V, TAU, MU, _forces(model, F_EXT, Q.shape[0]), True)


def point_kinematics_batch(model: Model, Q, frames: Sequence[str], offsets=None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (K, m, 3), Jacobians (K, m, 3, nv), Hessians (K, m, 3, nv, nv) of m points.

    Point i is ``offsets[i]`` (3,) expressed in frame ``frames[i]`` (``offsets`` (m, 3),
    default: the frame origins); layouts as :func:`dynamics.kinematics_derivatives.point_hessian`.
    """
    (Q,) = _knots(model, Q=Q)
    if isinstance(frames, str):
        raise ValueError(f"frames: expected a sequence of frame names, got the string {frames!r}")
    n_frames = len(frames)
    offsets = np.zeros((n_frames, 3)) if offsets is None else np.asarray(offsets, dtype=float)
    if offsets.shape != (n_frames, 3):
        raise ValueError(f"offsets: expected shape ({n_frames}, 3) (one offset per frame), got {offsets.shape}")
    if not np.all(np.isfinite(offsets)):
        raise ValueError("offsets: expected finite values, got NaN or inf")
    points = [body_point(model, f, o) for f, o in zip(frames, offsets)]
    bodies = np.array([b for b, _ in points], dtype=np.int64)
    in_body = np.array([o for _, o in points], dtype=float).reshape(n_frames, 3)
    return point_kinematics_knots(model.arrays, Q, bodies, in_body)


# ---- contacts and impacts ---------------------------------------------------------------------
# One compiled kernel for the six functions, a workspace and a contact workspace per thread
# (allocation-free per knot); dependent contacts are reported by a status per knot.

@njit(cache=True, nogil=True)
def contact_chunk(m, knots, contacts, W, impulse, order, out, status, claims):
    """Contact dynamics (or, if ``impulse``, impulse dynamics: TAU and F_EXT unused) at the
    knots the thread claims of ``knots`` = (Q, V, TAU, F_EXT), into out[k] and status[k] (−1:
    solved; a chunk stops at its first knot with dependent contacts). ``out`` (K, ·, ·)
    serves the three orders: 0: [q̈; λ] (or [v⁺; Λ]) (K, nv + nc, 1); 1: their derivatives with
    respect to [q, v, τ] (or [q, v]) (K, nv + nc, 3nv or 2nv); 2: the Hessians (Hqq, Hvv,
    Hqv[, Hqτ]) of W[k]·z side by side (K, nv, 4nv or 3nv). ``contacts`` = (ci, cf, damping,
    restitution)."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    Q, V, TAU, F_EXT = knots
    ci = contacts[0]
    d = new_data(m.topology)
    cw = new_contact_work(m.topology, ci, order, impulse)
    sow = new_so_work(m.topology if order == 2 else m.topology[:0])
    while k0 < k1:
        for k in range(k0, k1):
            if not _contact_knot(m, (d, cw, sow), (Q[k], V[k], TAU[k], knot_force(F_EXT, k)), contacts, W, impulse,
                                 order, out[k], status, k):
                break
        k0, k1 = next_chunk(claims)


@njit(cache=True, nogil=True, inline="always")
def _contact_knot(m, work, knot, contacts, W, impulse, order, out, status, k):
    """One knot k of :func:`contact_chunk`, ``knot`` = (q, v, τ, f_ext), into ``out`` (its row
    k) and status[k], ``work`` = (Data, contact workspace, second-order scratch); False if its
    contacts are dependent."""
    d, cw, sow = work
    q, v, tau, f_ext = knot
    ci, cf, damping, restitution = contacts
    nv = v.shape[0]
    if order == 0:
        if impulse:
            status[k] = impulse_dynamics_passes(m, d, cw, q, v, ci, cf, restitution, damping)
        else:
            status[k] = contact_dynamics_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
        out[:] = cw.z
    elif order == 1:
        if impulse:
            status[k] = impulse_dynamics_derivative_passes(m, d, cw, q, v, ci, cf, restitution, damping)
        else:
            status[k] = contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
        out[:] = cw.Z
    else:
        if impulse:
            status[k] = impulse_so_contracted_passes(m, d, cw, sow, q, v, ci, cf, restitution, damping, W[k])
        else:
            status[k] = contact_so_contracted_passes(m, d, cw, sow, q, v, tau, f_ext, ci, cf, damping, W[k])
        for b in range(cw.out.shape[0]):
            out[:, b * nv:(b + 1) * nv] = cw.out[b]
    return status[k] == -1


def _contact_knots(model: Model, **arrays) -> list[np.ndarray]:
    """:func:`_knots`, and every configuration checked (:func:`check_knots`) before the
    contact kernels, whose per-knot passes would name q rather than Q and the knot."""
    out = _knots(model, **arrays)
    check_knots(model.topology, out[0])
    return out


def _raise_at_knot(contacts, ci: np.ndarray, status: np.ndarray) -> None:
    """Raise ValueError naming the contacts and the first knot whose KKT system is singular."""
    bad = np.flatnonzero(status != -1)
    if bad.size:
        raise_if_dependent(contacts, ci, int(status[bad[0]]), f" at knot {bad[0]}")


def _contacts(model: Model, impulse: bool, Q, V, TAU, contacts, F_EXT, damping, restitution, W, order: int
              ) -> np.ndarray:
    """The output of :func:`contact_chunk` for ``order`` at all knots, arguments checked (TAU
    and F_EXT ignored for ``impulse``)."""
    ci, cf, damping = check_contacts(model, contacts, damping)
    knots = _contact_knots(model, Q=Q, V=V) if impulse else _contact_knots(model, Q=Q, V=V, TAU=TAU)
    Q, V, K = knots[0], knots[1], knots[0].shape[0]
    W = np.zeros((K, 0)) if W is None else _weights(W, model.nv + contact_rows(ci), K)
    F_EXT = NO_FORCES if impulse else _forces(model, F_EXT, K)
    nv, u = model.nv, 2 if impulse else 3
    out = np.empty((K, nv if order == 2 else nv + contact_rows(ci), (1, u * nv, (u + 1) * nv)[order]))
    status, packed = np.full(K, -1), (ci, cf, damping, check_restitution(restitution))
    run_chunks(contact_chunk, K, model.arrays, (Q, V, knots[-1], F_EXT), packed, W, impulse, order, out, status)
    _raise_at_knot(contacts, ci, status)
    return out


def contact_dynamics_batch(model: Model, Q, V, TAU, contacts, F_EXT=None, damping: float = 0.0
                           ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dynamics.contact_dynamics` at K knots: (qdd (K, nv), lam (K, nc))."""
    out, nv = _contacts(model, False, Q, V, TAU, contacts, F_EXT, damping, 0.0, None, 0), model.nv
    return out[:, :nv, 0], out[:, nv:, 0]


def contact_dynamics_derivatives_batch(model: Model, Q, V, TAU, contacts, F_EXT=None, damping: float = 0.0
                                       ) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.contact_dynamics_derivatives` at K knots: the six arrays with a leading
    axis of K knots."""
    x, nv = _contacts(model, False, Q, V, TAU, contacts, F_EXT, damping, 0.0, None, 1), model.nv
    x, y = x[:, :nv], x[:, nv:]
    return x[..., :nv], x[..., nv:2 * nv], x[..., 2 * nv:], y[..., :nv], y[..., nv:2 * nv], y[..., 2 * nv:]


def contact_dynamics_second_derivatives_contracted_batch(model: Model, Q, V, TAU, contacts, W, F_EXT=None,
                                                         damping: float = 0.0) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.contact_dynamics_second_derivatives_contracted` at K knots, knot k
    contracted with W[k] (W (K, nv + nc)): (Hqq, Hvv, Hqv, Hqtau), each (K, nv, nv)."""
    out, nv = _contacts(model, False, Q, V, TAU, contacts, F_EXT, damping, 0.0, W, 2), model.nv
    return out[:, :, :nv], out[:, :, nv:2 * nv], out[:, :, 2 * nv:3 * nv], out[:, :, 3 * nv:]


def _weights(W, n: int, K: int) -> np.ndarray:
    """W as a (K, n) array of finite weights; ValueError naming it otherwise."""
    W = as_batch(W, n, "W")
    if W.shape[0] != K:
        raise ValueError(f"W: expected {K} knots like Q, got {W.shape[0]}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W: expected finite values, got NaN or inf")
    return W


def impulse_dynamics_batch(model: Model, Q, V, contacts, restitution: float = 0.0, damping: float = 0.0
                           ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dynamics.impulse_dynamics` at K knots: (v_plus (K, nv), impulse (K, nc))."""
    out = _contacts(model, True, Q, V, None, contacts, None, damping, restitution, None, 0)
    return out[:, :model.nv, 0], out[:, model.nv:, 0]


def impulse_dynamics_derivatives_batch(model: Model, Q, V, contacts, restitution: float = 0.0,
                                       damping: float = 0.0) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.impulse_dynamics_derivatives` at K knots: (dvplus_dq, dvplus_dv,
    dimp_dq, dimp_dv) with a leading axis of K knots."""
    out, nv = _contacts(model, True, Q, V, None, contacts, None, damping, restitution, None, 1), model.nv
    return out[:, :nv, :nv], out[:, :nv, nv:], out[:, nv:, :nv], out[:, nv:, nv:]


def impulse_dynamics_second_derivatives_contracted_batch(model: Model, Q, V, contacts, W, restitution: float = 0.0,
                                                         damping: float = 0.0) -> tuple[np.ndarray, ...]:
    """:func:`dynamics.impulse_dynamics_second_derivatives_contracted` at K knots, knot k
    contracted with W[k] (W (K, nv + nc)): (Hqq, Hvv, Hqv), each (K, nv, nv)."""
    out, nv = _contacts(model, True, Q, V, None, contacts, None, damping, restitution, W, 2), model.nv
    return out[:, :, :nv], out[:, :, nv:2 * nv], out[:, :, 2 * nv:]
