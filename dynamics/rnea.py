"""Recursive Newton–Euler algorithm (RNEA): inverse dynamics τ = ID(q, v, a).

Featherstone's RNEA in ground coordinates (Carpentier & Mansard 2018 Alg. 1, Singh, Russell & Wensing 2023 Sec. II):

    v_i = v_λ(i) + S_i q̇_i
    a_i = a_λ(i) + S_i q̈_i + v_i × S_i q̇_i          (Ṡ_i = v_i × S_i)
    f_i = I_i a_i + v_i ×* I_i v_i
    τ_i = S_iᵀ f_i^C,   f_λ(i)^C += f_i^C

Gravity enters as a fictitious base acceleration a_0 = −[0; g] (Featherstone 2008, Sec. 5.3; a classic pitfall:
the base accelerates *upwards*).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import as_vector
from .kinematics import all_finite, kinematics_and_inertias
from .model import PARENT, Model
from .spatial import crf_at, crm_at, dot6_at, mat6_vec_at


@njit(cache=True)
def check_state(q, v, w, w_name):
    """Raise ValueError naming the first of q, v, w holding NaN or inf."""
    if not all_finite(q):
        raise ValueError("q: expected finite values, got NaN or inf")
    if not all_finite(v):
        raise ValueError("v: expected finite values, got NaN or inf")
    if not all_finite(w):
        raise ValueError(w_name)


@njit(cache=True)
def rnea_passes(topology, joint_placement, axis, inertia, gravity, q, v, a):
    """Both RNEA passes; returns (S, I, vel, acc, fC, tau) in world coordinates.

    ``fC[i]`` is the composite force f_i^C transmitted across joint i.
    """
    R, p, S, I = kinematics_and_inertias(topology, joint_placement, axis, inertia, q)
    n = topology.shape[0]
    vel, acc, fC = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    work = np.empty((2, 6))
    for i in range(n):
        lam = topology[i, PARENT]
        for k in range(6):
            if lam < 0:
                vel[i, k] = S[i, k] * v[i]
                acc[i, k] = S[i, k] * a[i] - (gravity[k - 3] if k >= 3 else 0.0)
            else:
                vel[i, k] = vel[lam, k] + S[i, k] * v[i]
                acc[i, k] = acc[lam, k] + S[i, k] * a[i]
        crm_at(vel, i, S, i, work, 0)
        for k in range(6):
            acc[i, k] += work[0, k] * v[i]
        mat6_vec_at(I, i, acc, i, fC, i)
        mat6_vec_at(I, i, vel, i, work, 0)
        crf_at(vel, i, work, 0, work, 1)
        for k in range(6):
            fC[i, k] += work[1, k]
    tau = np.empty(n)
    for i in range(n - 1, -1, -1):
        tau[i] = dot6_at(S, i, fC, i)
        lam = topology[i, PARENT]
        if lam >= 0:
            for k in range(6):
                fC[lam, k] += fC[i, k]
    return S, I, vel, acc, fC, tau


@njit(cache=True)
def rnea_kernel(topology, joint_placement, axis, inertia, gravity, q, v, a):
    """τ = ID(q, v, a), inputs checked for NaN/inf."""
    check_state(q, v, a, "a: expected finite values, got NaN or inf")
    return rnea_passes(topology, joint_placement, axis, inertia, gravity, q, v, a)[5]


def rnea(model: Model, q, v, a) -> np.ndarray:
    """Inverse dynamics τ (nv,) = M(q)·a + C(q, v)·v + g(q), gravity included."""
    q, v, a = as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v"), as_vector(a, model.nv, "a")
    return rnea_kernel(model.topology, model.joint_placement, model.axis, model.inertia, model.gravity, q, v, a)


def nonlinear_effects(model: Model, q, v) -> np.ndarray:
    """Coriolis, centrifugal and gravity torques C(q, v)·v + g(q) = ID(q, v, 0)."""
    return rnea(model, q, v, np.zeros(model.nv))


def gravity_torques(model: Model, q) -> np.ndarray:
    """Generalised gravity torques g(q) = ID(q, 0, 0)."""
    z = np.zeros(model.nv)
    return rnea(model, q, z, z)
