"""Recursive Newton–Euler algorithm (RNEA): inverse dynamics τ = ID(q, v, a).

Featherstone's RNEA in ground coordinates (Carpentier & Mansard 2018 Alg. 1, Singh, Russell & Wensing 2023 Sec. II):

    v_i = v_λ(i) + S_i q̇_i
    a_i = a_λ(i) + S_i q̈_i + v_i × S_i q̇_i          (Ṡ_i = v_i × S_i)
    f_i = I_i a_i + v_i ×* I_i v_i
    τ_i = S_iᵀ f_i^C,   f_λ(i)^C += f_i^C

For a joint of nv_j DoF, S_i is 6 × nv_j (its DoF columns) and q̇_i, q̈_i, τ_i have nv_j
entries; the motion subspaces of every joint type are fixed in the body, so Ṡ_i = v_i × S_i
holds for all of them.

Gravity enters as a fictitious base acceleration a_0 = −[0; g] (Featherstone 2008, Sec. 5.3; a classic pitfall:
the base accelerates *upwards*).

External forces (Pinocchio's ``fext``): ``f_ext[i]`` = [f; n] is the force and moment
about the origin of joint frame i, in joint frame i's axes, applied to body i. In world
coordinates it is f_i^ext = [R n + p × R f; R f] (Featherstone's force transform), and
the body's net force becomes f_i = I_i a_i + v_i ×* I_i v_i − f_i^ext. The force is
fixed in the body frame, so it turns with the body like every body quantity and the
derivative passes need no further term.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, entry_point, njit
from .kinematics import all_finite, check_configuration_size, kinematics_into, tangent_size
from .model import IDX_V, NV, PARENT, Model
from .spatial import copy_into, crf_at, crm_at, dot6_at, joint_velocity, mat6_vec_at
from .workspace import call_on_state, call_views


@njit(cache=True, _nrt=True)  # raises a message passed at run time: needs NRT
def check_state(q, v, w, w_name):
    """Raise ValueError naming the first of v, w holding NaN or inf (q is checked by the
    kinematics)."""
    if not all_finite(v):
        raise ValueError("v: expected finite values, got NaN or inf")
    if not all_finite(w):
        raise ValueError(w_name)


@allocation_free
def check_sizes(topology, q, v, w, f_ext):
    """Raise ValueError unless q (nq,), v and w (nv,) and f_ext ((n, 6) or (0, 6)) have the
    model's sizes: the check of an :func:`dynamics._compile.entry_point`, whose caller then
    names the argument."""
    check_configuration_size(topology, q)
    nv, nf = tangent_size(topology), f_ext.shape[0]
    if v.shape[0] != nv or w.shape[0] != nv or f_ext.shape[1] != 6 or (nf != 0 and nf != topology.shape[0]):
        raise ValueError("an argument has the wrong size")


@allocation_free
def check_forces(f_ext):
    """Raise ValueError if f_ext holds NaN or inf (its shape is checked by the caller:
    :func:`dynamics._checks.as_forces` or :func:`check_sizes`)."""
    if not all_finite(f_ext):
        raise ValueError("f_ext: expected finite values, got NaN or inf")


@allocation_free
def rnea_passes(m, d, q, v, a, f_ext):
    """Forward kinematics and both RNEA passes into the workspace ``d``
    (:mod:`dynamics.workspace`), in world coordinates: d.S, d.I (body inertias), d.vel,
    d.acc, d.fC and τ in d.tau.

    ``fC[i]`` is the composite force f_i^C transmitted across joint i; ``f_ext`` is
    (n, 6) local external forces, or (0, 6) for none.
    """
    check_forces(f_ext)
    kinematics_into(m, q, d)
    rnea_passes_at(m.topology, m.gravity, m.armature, d, v, a, f_ext)


@allocation_free
def rnea_passes_at(topology, gravity, armature, d, v, a, f_ext):
    """:func:`rnea_passes` after the forward kinematics (d.R, d.p, d.S, d.I) is done
    (d.I is kept); the joints' reflected rotor inertias ``armature`` (nv,) add
    armature ⊙ q̈ to τ."""
    n = topology.shape[0]
    R, p, S, I, vel, acc, fC, work, tau = d.R, d.p, d.S, d.I, d.vel, d.acc, d.fC, d.h, d.tau
    for i in range(n):  # forward pass, root to leaves
        parent = topology[i, PARENT]
        # v_J = S_i q̇_i,  a_J = S_i q̈_i
        joint_velocity(topology, S, v, i, work, 0)
        joint_velocity(topology, S, a, i, work, 2)
        # v_i = v_λ(i) + S_i q̇_i,   a_i = a_λ(i) + S_i q̈_i   (a_0 = −[0; g])
        for k in range(6):
            if parent < 0:
                vel[i, k] = work[0, k]
                acc[i, k] = work[2, k] - (gravity[k - 3] if k >= 3 else 0.0)
            else:
                vel[i, k] = vel[parent, k] + work[0, k]
                acc[i, k] = acc[parent, k] + work[2, k]
        # a_i += v_i × S_i q̇_i   (Ṡ_i q̇_i)
        crm_at(vel, i, work, 0, work, 1)
        for k in range(6):
            acc[i, k] += work[1, k]
        # f_i = I_i a_i + v_i ×* I_i v_i
        mat6_vec_at(I, i, acc, i, fC, i)
        mat6_vec_at(I, i, vel, i, work, 0)
        crf_at(vel, i, work, 0, work, 1)
        for k in range(6):
            fC[i, k] += work[1, k]
        if f_ext.shape[0] > 0:
            # f_i −= f_i^ext (world coordinates)
            subtract_external_force(R, p, f_ext, i, fC)
    for i in range(n - 1, -1, -1):  # backward pass, leaves to root
        # τ_i = S_iᵀ f_i^C + armature_i ⊙ q̈_i
        for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            tau[c] = dot6_at(S, c, fC, i) + armature[c] * a[c]
        parent = topology[i, PARENT]
        # f_λ(i)^C += f_i^C
        if parent >= 0:
            for k in range(6):
                fC[parent, k] += fC[i, k]


@allocation_free
def subtract_external_force(R, p, f_ext, i, f):
    """f[i] −= the world spatial force [R n + p × R f; R f] of f_ext[i] = [f; n] (joint i's frame)."""
    for r in range(3):
        fw = R[i, r, 0] * f_ext[i, 0] + R[i, r, 1] * f_ext[i, 1] + R[i, r, 2] * f_ext[i, 2]
        nw = R[i, r, 0] * f_ext[i, 3] + R[i, r, 1] * f_ext[i, 4] + R[i, r, 2] * f_ext[i, 5]
        f[i, 3 + r] -= fw
        f[i, r] -= nw
    f0 = f_ext[i, 0] * R[i, 0, 0] + f_ext[i, 1] * R[i, 0, 1] + f_ext[i, 2] * R[i, 0, 2]
    f1 = f_ext[i, 0] * R[i, 1, 0] + f_ext[i, 1] * R[i, 1, 1] + f_ext[i, 2] * R[i, 1, 2]
    f2 = f_ext[i, 0] * R[i, 2, 0] + f_ext[i, 1] * R[i, 2, 1] + f_ext[i, 2] * R[i, 2, 2]
    f[i, 0] -= p[i, 1] * f2 - p[i, 2] * f1
    f[i, 1] -= p[i, 2] * f0 - p[i, 0] * f2
    f[i, 2] -= p[i, 0] * f1 - p[i, 1] * f0


@entry_point
def rnea_call(buffer, q, v, a, f_ext, tau):
    """τ = ID(q, v, a, f_ext) into ``tau``, model and workspace cut from ``buffer`` (a
    :func:`dynamics.workspace.call_buffer`); inputs checked."""
    m, d = call_views(buffer)
    check_sizes(m.topology, q, v, a, f_ext)
    check_state(q, v, a, "a: expected finite values, got NaN or inf")
    rnea_passes(m, d, q, v, a, f_ext)
    copy_into(tau, d.tau)


def rnea(model: Model, q, v, a, f_ext=None) -> np.ndarray:
    """Inverse dynamics τ (nv,) = M(q)·a + C(q, v)·v + g(q) − Σ_i J_iᵀ f_i^ext, gravity included.

    ``f_ext`` (njoints, 6), optional: one external spatial force [linear; angular] per
    joint's body, expressed in that joint's frame about its origin (Pinocchio's ``fext``).
    """
    return call_on_state(rnea_call, model, q, v, a, "a", f_ext, np.empty(model.nv))


def nonlinear_effects(model: Model, q, v) -> np.ndarray:
    """Coriolis, centrifugal and gravity torques C(q, v)·v + g(q) = ID(q, v, 0)."""
    return rnea(model, q, v, np.zeros(model.nv))


def gravity_torques(model: Model, q) -> np.ndarray:
    """Generalised gravity torques g(q) = ID(q, 0, 0)."""
    z = np.zeros(model.nv)
    return rnea(model, q, z, z)
