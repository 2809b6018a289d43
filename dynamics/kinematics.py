"""Forward kinematics in world coordinates, frame placements and frame Jacobians.

``forward_kinematics`` is the first pass shared by every algorithm: for each body i it
computes the world pose ⁰T_i of joint frame i, the world motion subspace S_i and the
spatial inertia I_i at the world origin (Featherstone ch. 4, in ground coordinates as in
Singh, Russell & Wensing 2023 Sec. II).
"""
from __future__ import annotations

import numpy as np

from ._checks import as_vector, check_frame
from ._compile import allocation_free, njit
from .joints import check_configuration, joint_transform, motion_subspace
from .model import IDX_Q, IDX_V, NQ, NV, PARENT, Model
from .spatial import world_inertia


@allocation_free
def all_finite(x) -> bool:
    """True if no entry of the array is NaN or ±inf (compiled, allocation-free)."""
    for e in x.flat:
        if not np.isfinite(e):
            return False
    return True


@allocation_free
def tangent_size(topology):
    """nv, the number of velocity variables (DoF columns) of the model."""
    n = topology.shape[0]
    return 0 if n == 0 else topology[n - 1, IDX_V] + topology[n - 1, NV]


@allocation_free
def configuration_size(topology):
    """nq, the number of configuration variables of the model."""
    n = topology.shape[0]
    return 0 if n == 0 else topology[n - 1, IDX_Q] + topology[n - 1, NQ]


@allocation_free
def check_configuration_size(topology, q):
    """Raise ValueError unless q has nq entries (for kernels called on unchecked arrays,
    whose caller then names the argument: :func:`dynamics._compile.entry_point`)."""
    if q.shape[0] != configuration_size(topology):
        raise ValueError("q has the wrong size")


@allocation_free
def forward_kinematics(m, q, R, p, S):
    """World poses (R (n,3,3), p (n,3)) of the joint frames and world S (nv, 6)."""
    topology, joint_placement, axis = m.topology, m.joint_placement, m.axis
    for i in range(topology.shape[0]):
        joint_transform(topology, joint_placement, axis, q, i, R, p)
        motion_subspace(topology, axis, i, R, p, S)


@njit(cache=True)
def world_kinematics(m, q):
    """(R (n,3,3), p (n,3), S (nv,6)) of :func:`forward_kinematics`; q checked
    (NaN/inf, unit quaternions)."""
    check_configuration(m.topology, q)
    R, p, S = kinematics_work(m.topology)
    forward_kinematics(m, q, R, p, S)
    return R, p, S


@njit(cache=True)
def kinematics_work(topology):
    """(R (n, 3, 3), p (n, 3), S (nv, 6)), uninitialised: the outputs of :func:`forward_kinematics`."""
    n = topology.shape[0]
    return np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((tangent_size(topology), 6))


@allocation_free(inline="always")
def kinematics_into(m, q, d):
    """Forward kinematics and world spatial inertias into the workspace ``d``
    (:mod:`dynamics.workspace`): d.R, d.p, d.S and the body inertias d.I (n, 6, 6); q
    checked (NaN/inf, unit quaternions)."""
    kinematics_inertias_into(m, q, d, d.I)


@allocation_free(inline="always")
def kinematics_inertias_into(m, q, d, inertias):
    """:func:`kinematics_into` with the world body inertias written into ``inertias``
    (n, 6, 6) instead of d.I: into d.IA for ABA and M⁻¹, whose articulated inertias start
    as the body inertias and are formed in place."""
    check_configuration(m.topology, q)
    forward_kinematics(m, q, d.R, d.p, d.S)
    inertia = m.inertia
    for i in range(inertia.shape[0]):
        world_inertia(inertia, i, d.R, d.p, inertias)


@njit(cache=True)
def _frame_pose(m, q, body, placement):
    R, p, S = world_kinematics(m, q)
    Rb, pb = (np.eye(3), np.zeros(3)) if body < 0 else (R[body], p[body])
    Rf, pf = np.empty((3, 3)), np.empty(3)
    for r in range(3):
        pf[r] = pb[r]
        for c in range(3):
            pf[r] += Rb[r, c] * placement[c, 3]
            Rf[r, c] = Rb[r, 0] * placement[0, c] + Rb[r, 1] * placement[1, c] + Rb[r, 2] * placement[2, c]
    return Rf, pf, S


@njit(cache=True)
def _frame_jacobian(m, q, body, placement):
    """World-aligned Jacobian (6, nv) of the frame origin, rows [linear; angular]."""
    topology = m.topology
    Rf, pf, S = _frame_pose(m, q, body, placement)
    J = np.zeros((6, S.shape[0]))
    j = body
    while j >= 0:
        for c in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
            w, vo = S[c, :3], S[c, 3:]
            J[0, c] = vo[0] + w[1] * pf[2] - w[2] * pf[1]
            J[1, c] = vo[1] + w[2] * pf[0] - w[0] * pf[2]
            J[2, c] = vo[2] + w[0] * pf[1] - w[1] * pf[0]
            J[3:, c] = w
        j = topology[j, PARENT]
    return J


@njit(cache=True)
def frame_motion_batch_kernel(m, Q, body, placement):
    """World poses (R (K,3,3), p (K,3)) of a frame of body ``body`` at configurations Q
    (K, nq), and the world motion subspace columns S (K, nv, 6) = [ω; v] of the joints that
    move it (the support of ``body``; zero elsewhere): the frame's spatial velocity in world
    coordinates at the world origin is S[k]ᵀ v."""
    topology = m.topology
    K = Q.shape[0]
    R, p, S = np.empty((K, 3, 3)), np.empty((K, 3)), np.zeros((K, topology[:, NV].sum(), 6))
    for k in range(K):
        R[k], p[k], Sk = _frame_pose(m, Q[k], body, placement)
        j = body
        while j >= 0:  # S_j for j ∈ κ(body)
            for c in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                S[k, c] = Sk[c]
            j = topology[j, PARENT]
    return R, p, S


def frame_placement(model: Model, q, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """World rotation (3, 3) and position (3,) of the frame named ``frame``."""
    q = as_vector(q, model.nq, "q")
    f = check_frame(model, frame)
    R, p, _ = _frame_pose(model.arrays, q, f.body, f.placement)
    return R, p


def frame_jacobian(model: Model, q, frame: str) -> np.ndarray:
    """Jacobian (6, nv) of frame ``frame``: world-aligned, rows [linear; angular].

    Column j is the velocity of the frame origin and the angular velocity, both in
    world axes, caused by unit velocity v_j (Pinocchio's LOCAL_WORLD_ALIGNED).
    """
    q = as_vector(q, model.nq, "q")
    f = check_frame(model, frame)
    return _frame_jacobian(model.arrays, q, f.body, f.placement)
