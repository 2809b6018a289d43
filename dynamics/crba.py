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
from .model import IDX_V, NV, PARENT, Model
from .spatial import add_to_parent, dot6_at, mat6_vec_at


@njit(cache=True)
def crba_kernel(m, q):
    """M (nv, nv), full symmetric, and the composite inertias I^C (n, 6, 6); q checked."""
    topology = m[0]
    _, _, S, IC = kinematics_and_inertias(m, q)
    nv = S.shape[0]
    M = np.zeros((nv, nv))
    F = np.empty((1, 6))
    for i in range(topology.shape[0] - 1, -1, -1):
        for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            mat6_vec_at(IC, i, S, c, F, 0)
            j = i
            while j >= 0:  # M_cd = S_dᵀ I_i^C S_c for the columns d of every j ⪯ i
                for d in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                    M[c, d] = M[d, c] = dot6_at(S, d, F, 0)
                j = topology[j, PARENT]
        add_to_parent(topology, IC, i)
    return M, IC


def crba(model: Model, q) -> np.ndarray:
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric."""
    q = as_vector(q, model.nq, "q")
    return crba_kernel(model.arrays, q)[0]
