"""Kinetic and potential energy of the tree.

T = ½ Σ_i v_iᵀ I_i v_i + ½ Σ_j armature_j q̇_j² (world spatial velocities and inertias, and the
joints' reflected rotor inertias, as Pinocchio's ``computeKineticEnergy``),
V = −Σ_i m_i gᵀ c_i (c_i the world centre of mass of body i).
"""
from __future__ import annotations

import numpy as np

from ._compile import njit
from ._checks import as_vector
from .kinematics import all_finite, kinematics_into
from .model import PARENT, Model
from .spatial import dot6_at, joint_velocity, mat6_vec_at
from .workspace import new_data


@njit(cache=True)
def _energies(m, q, v):
    if not all_finite(v):
        raise ValueError("v: expected finite values, got NaN or inf")
    topology, inertia, gravity = m.topology, m.inertia, m.gravity
    d = new_data(topology)
    kinematics_into(m, q, d)
    R, p, S, I, vel, h = d.R, d.p, d.S, d.I, d.vel, d.h
    n = topology.shape[0]
    T = V = 0.0
    for i in range(n):
        parent = topology[i, PARENT]
        joint_velocity(topology, S, v, i, h, 1)
        for k in range(6):
            vel[i, k] = (0.0 if parent < 0 else vel[parent, k]) + h[1, k]
        mat6_vec_at(I, i, vel, i, h, 0)
        T += 0.5 * dot6_at(vel, i, h, 0)
        for r in range(3):
            c = p[i, r] + R[i, r, 0] * inertia[i, 1] + R[i, r, 1] * inertia[i, 2] + R[i, r, 2] * inertia[i, 3]
            V -= inertia[i, 0] * gravity[r] * c
    for j in range(v.shape[0]):
        T += 0.5 * m.armature[j] * v[j] * v[j]
    return T, V


def kinetic_energy(model: Model, q, v) -> float:
    """Kinetic energy ½ vᵀ M(q) v, J."""
    q, v = as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v")
    return _energies(model.arrays, q, v)[0]


def potential_energy(model: Model, q) -> float:
    """Gravitational potential energy −Σ m_i gᵀ c_i (zero at the world origin), J."""
    q = as_vector(q, model.nq, "q")
    return _energies(model.arrays, q, np.zeros(model.nv))[1]
