"""Reusable workspace of the contact and impulse algorithms (Pinocchio's Data, for contacts).

The contact passes (:mod:`dynamics.contact_dynamics`, :mod:`dynamics.impulse_dynamics`,
their derivatives and contracted second orders) write every contact-sized intermediate
array — the contact frames and Jacobian, the factors of the KKT system
(:mod:`dynamics.contact_kkt`), its right-hand sides and solutions, the terms of the adjoint
— into a :data:`ContactWork` made by :func:`new_contact_work`: one float64 buffer cut into
views, and the DoF parents of the sparse LTDL factor. A loop over the knots of a trajectory
makes it once (once per thread when they run in parallel, as the workspace of
:mod:`dynamics.workspace`), and every evaluation after that allocates nothing.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ._compile import njit, read_only
from .contact import SCRATCH, contact_rows
from .contact_hessians import SIZE
from .kinematics import tangent_size
from .ltdl import dof_parents
from .workspace import _block

ContactWork = namedtuple("ContactWork", [
    "Rc", "o", "J",          # contact rotations (ncon, 3, 3) and origins (ncon, 3), Jacobian J (nc, nv)
    "scratch", "gamma",      # scratch vector (SCRATCH,) of the contact helpers, the drift γ (nc,)
    "H", "lam", "Wt", "L",   # LTDL factor of M (nv, nv), DoF parents (nv,), Wᵀ = L⁻ᵀJᵀ (nv, nc), Cholesky of Λ (nc, nc)
    "z", "t",                # [q̈; λ] or [v⁺; Λ] (nv + nc, 1), scratch of one right-hand side (nv, 1)
    "Z", "tZ",               # their derivatives (nv + nc, cols), scratch (nv, cols); cols = 3nv, 2nv or 0
    "fx", "da",              # external forces (n, 6), ∂a_c/∂[q, v] (nc, 2nv) or ∂c/∂q (nc, nv)
    "vec", "zeros", "no_force",   # a joint-space vector (nv,); zeros (nv,), (3,); no external force (0, 6)
    "zero3",
    # the contracted second order (sized 0 below order 2)
    "y", "neg",              # the adjoint [μ̂; ν] (nv + nc, 1), −λ (nc,)
    "Ha", "R", "G",          # Hessians of ν·a_c (3, nv, nv), of μ̂ᵀID (4, nv, nv), G_qq, G_qv, G_vv (3, nv, nv)
    "Hb", "Hc",              # ∂²_qq(−λᵀJμ̂), ∂²_qq(νᵀJw) (1, nv, nv)
    "dJmu", "Gqz", "N", "P",  # ∂(Jμ̂)/∂q (nc, nv), G_qz (nv, nv + nc), ∂(Jᵀν)/∂q (nv, nv), G_qz Z (nv, cols)
    "out", "dual",           # the Hessians (Hqq, Hvv, Hqv[, Hqτ]) (4 or 3, nv, nv), dual scratch (2, SIZE)
])
"""The views of a contact workspace (shapes beside the names; ncon contacts of nc rows, n
bodies, nv DoF columns). ``zeros``, ``zero3`` and ``no_force`` are zero and never written.
``zero3`` is the gravity of the passes that have none, typed read-only
(:func:`dynamics._compile.read_only`) as the model record's gravity is: the passes are
compiled once for both."""


@njit(cache=True)
def new_contact_work(topology, ci, order, impulse):
    """A :data:`ContactWork` for the contacts ``ci`` on the model of ``topology``, for the
    passes of derivative ``order`` (0, 1, 2) of contact (or, if ``impulse``, impulse)
    dynamics: one buffer and the DoF parents, two allocations."""
    n, nv, nc, ncon = topology.shape[0], tangent_size(topology), contact_rows(ci), ci.shape[0]
    cols = 0 if order == 0 else (2 if impulse else 3) * nv
    so = nv if order == 2 else 0
    nh = (3 if impulse else 4) if order == 2 else 0  # the Hessians of the second order
    size = (12 * ncon + nc * nv + SCRATCH + nc + nv * nv + nv * nc + nc * nc + 2 * nv + nc + (2 * nv + nc) * cols
            + 6 * n + (1 if impulse else 2) * nc * nv + 2 * nv + 3)
    if so:
        size += 2 * nc + nv + (14 + nh) * nv * nv + 2 * nc * nv + nv * cols + 2 * SIZE
    w = np.empty(size)
    Rc, k = _block(w, 0, (ncon, 3, 3))
    o, k = _block(w, k, (ncon, 3))
    J, k = _block(w, k, (nc, nv))
    scratch, k = _block(w, k, (SCRATCH,))
    gamma, k = _block(w, k, (nc,))
    H, k = _block(w, k, (nv, nv))
    Wt, k = _block(w, k, (nv, nc))
    L, k = _block(w, k, (nc, nc))
    z, k = _block(w, k, (nv + nc, 1))
    t, k = _block(w, k, (nv, 1))
    Z, k = _block(w, k, (nv + nc, cols))
    tZ, k = _block(w, k, (nv, cols))
    fx, k = _block(w, k, (n, 6))
    da, k = _block(w, k, (nc, nv if impulse else 2 * nv))
    vec, k = _block(w, k, (nv,))
    zeros, k = _block(w, k, (nv,))
    no_force, k = _block(w, k, (0, 6))
    zero3, k = _block(w, k, (3,))
    mc = nc if so else 0  # the contact rows of the second-order blocks
    y, k = _block(w, k, (so + mc, 1))
    neg, k = _block(w, k, (mc,))
    Ha, k = _block(w, k, (3, so, so))
    R, k = _block(w, k, (4, so, so))
    G, k = _block(w, k, (3, so, so))
    Hb, k = _block(w, k, (1, so, so))
    Hc, k = _block(w, k, (1, so, so))
    dJmu, k = _block(w, k, (mc, so))
    Gqz, k = _block(w, k, (so, so + mc))
    N, k = _block(w, k, (so, so))
    P, k = _block(w, k, (so, cols if so else 0))
    out, k = _block(w, k, (nh, so, so))
    dual, k = _block(w, k, (2 if so else 0, SIZE))
    assert k == size
    zeros[:] = 0.0
    zero3[:] = 0.0
    return ContactWork(Rc, o, J, scratch, gamma, H, dof_parents(topology), Wt, L, z, t, Z, tZ, fx, da, vec, zeros,
                       no_force, read_only(zero3), y, neg, Ha, R, G, Hb, Hc, dJmu, Gqz, N, P, out, dual)

