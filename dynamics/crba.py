"""Composite rigid-body algorithm (CRBA): the joint-space inertia matrix M(q).

Featherstone Table 6.2 in ground coordinates, where no transforms are needed:

    I_i^C = I_i + Σ_{children c} I_c^C
    F = I_i^C S_i,  M_ii = S_iᵀ F,  M_ij = M_ji = S_jᵀ F  for every ancestor j of i.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, entry_point
from .kinematics import check_configuration_size, kinematics_into
from .model import IDX_V, NV, PARENT, Model
from .spatial import add_to_parent, dot6_at, mat6_vec_at
from .workspace import call_on_configuration, call_views


@entry_point
def crba_call(buffer, q, M):
    """M(q) into ``M`` (nv, nv), model and workspace cut from ``buffer`` (a
    :func:`dynamics.workspace.call_buffer`); q checked."""
    m, d = call_views(buffer)
    check_configuration_size(m.topology, q)
    crba_into(m, d, q, M)


@allocation_free
def crba_into(m, d, q, M):
    """Write M(q) (nv, nv) into ``M`` and the composite inertias I^C into d.IC (summed in
    place over the body inertias d.I, see :data:`dynamics.workspace.Data`), every
    intermediate in the workspace ``d`` (:mod:`dynamics.workspace`); q checked."""
    kinematics_into(m, q, d)
    crba_passes(m.topology, m.armature, d.S, d.IC, M, d.h)


@allocation_free
def crba_passes(topology, armature, S, IC, M, F):
    """M (nv, nv) from the world motion subspaces S (nv, 6), the body inertias ``IC``
    (n, 6, 6), which become the composite inertias (summed in place), and the reflected
    rotor inertias ``armature`` (nv,) on the diagonal; F (≥ 1, 6) scratch."""
    M[:, :] = 0.0
    for i in range(topology.shape[0] - 1, -1, -1):  # leaves to root: I_i^C is complete on arrival
        for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            # F = I_i^C S_c
            mat6_vec_at(IC, i, S, c, F, 0)
            j = i
            while j >= 0:  # M_ce = M_ec = S_eᵀ F for the columns e of every j ⪯ i
                for e in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                    M[c, e] = M[e, c] = dot6_at(S, e, F, 0)
                j = topology[j, PARENT]
            M[c, c] += armature[c]
        # I_λ(i)^C += I_i^C
        add_to_parent(topology, IC, i)


def crba(model: Model, q) -> np.ndarray:
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric."""
    return call_on_configuration(crba_call, model, q, np.empty((model.nv, model.nv)))
