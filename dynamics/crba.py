"""Composite rigid-body algorithm (CRBA): the joint-space inertia matrix M(q).

Featherstone Table 6.2 in ground coordinates, where no transforms are needed:

    I_i^C = I_i + Σ_{children c} I_c^C
    F = I_i^C S_i,  M_ii = S_iᵀ F,  M_ij = M_ji = S_jᵀ F  for every ancestor j of i.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import as_vector
from .kinematics import kinematics_and_inertias
from .model import PARENT, Model
from .spatial import add_to_parent, dot6_at, mat6_vec_at


@njit(cache=True)
def crba_kernel(topology, joint_placement, axis, inertia, q):
    """M (n, n), full symmetric, and the composite inertias I^C (n, 6, 6); q checked for NaN/inf."""
    _, _, S, IC = kinematics_and_inertias(topology, joint_placement, axis, inertia, q)
    n = topology.shape[0]
    M = np.zeros((n, n))
    F = np.empty((1, 6))
    for i in range(n - 1, -1, -1):
        mat6_vec_at(IC, i, S, i, F, 0)
        M[i, i] = dot6_at(S, i, F, 0)
        j = topology[i, PARENT]
        while j >= 0:
            M[i, j] = M[j, i] = dot6_at(S, j, F, 0)
            j = topology[j, PARENT]
        add_to_parent(topology, IC, i)
    return M, IC


def crba(model: Model, q) -> np.ndarray:
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric."""
    q = as_vector(q, model.nq, "q")
    return crba_kernel(model.topology, model.joint_placement, model.axis, model.inertia, q)[0]
