"""Reusable workspace of the first-order algorithms: Pinocchio's Model/Data split.

The model record (``Model.arrays``) holds what never changes; a workspace (:data:`Data`,
made by :func:`new_data`) holds every intermediate array of forward kinematics, RNEA,
CRBA, ABA, M⁻¹ and the first-order derivatives. The ``*_into`` kernels take one and
allocate nothing, so a loop over the knots of a trajectory allocates its workspace once
(once per chunk of knots when they run in parallel: no two threads share one) and every
evaluation after that is allocation-free.

A single call from Python makes a workspace for itself: eleven allocations, one per block
of equally shaped arrays whose rows are the fields (about 0.5 µs on a 6-DoF arm, no more
than the arrays it replaces). It is not handed over from Python because numba unboxes
every array of an argument on each call (about 0.1 µs per array, more than allocating it).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .kinematics import tangent_size

Data = namedtuple("Data", [
    "R", "p", "S", "I",          # world poses (n, 3, 3), (n, 3), subspaces (nv, 6), inertias (n, 6, 6)
    "IA", "Dinv", "BC",          # articulated / composite inertias, D_i⁻¹ blocks, B^C (n, 6, 6)
    "vel", "acc", "fC", "pA",    # body velocities, accelerations, forces, biases (n, 6)
    "da",                        # acceleration and force increments (2, n, 6)
    "U", "UD", "rates",          # U = I^A S, U D⁻¹ (nv, 6); Ψ̇, Ψ̈, Ṡ (3, nv, 6)
    "u", "tau",                  # joint-space vectors (nv,)
    "Minv", "dq", "dv",          # (nv, nv) matrices
    "F", "P",                    # force and motion sets of M⁻¹, one 6-vector per column (n, nv, 6)
    "T",                         # joint vectors of the derivative passes (nv, 6, 6)
    "h", "gauss",                # scratch rows (4, 6) and the D_i elimination tableau (6, 12)
])
"""The views of a workspace (see the shapes above; n bodies, nv DoF columns)."""


@njit(cache=True)
def new_data(topology):
    """A fresh workspace (uninitialised) for the model of ``topology``: one allocation per
    block of equally shaped arrays, whose rows are the :data:`Data` fields."""
    n, nv = topology.shape[0], tangent_size(topology)
    B66, B6, C6 = np.empty((4, n, 6, 6)), np.empty((6, n, 6)), np.empty((6, nv, 6))
    vec, NN, FP = np.empty((2, nv)), np.empty((3, nv, nv)), np.empty((2, n, nv, 6))
    return Data(np.empty((n, 3, 3)), np.empty((n, 3)), C6[0], B66[0], B66[1], B66[2], B66[3],
                B6[0], B6[1], B6[2], B6[3], B6[4:6], C6[1], C6[2], C6[3:6], vec[0], vec[1],
                NN[0], NN[1], NN[2], FP[0], FP[1], np.empty((nv, 6, 6)), np.empty((4, 6)), np.empty((6, 12)))
