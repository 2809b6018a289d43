"""Position, Jacobian and Hessian of a point fixed on a body, in world coordinates.

For a point p fixed on body b (``offset`` in a frame of b) and world motion subspaces
S_j = [ω_j; v_j] (v_j = velocity of the body point at the world origin), the support
κ(b) of b (the joints from b to the root) moves p and

    ∂p/∂q_j = J_j = v_j + ω_j × p                          (j ∈ κ(b), else 0)

Differentiating J_j with ∂S_j/∂q_k = S_k × S_j for k ⪯ j (Singh, Russell & Wensing 2023 eq. 22) and
∂p/∂q_k = J_k gives, for k ⪯ j,

    ∂J_j/∂q_k = (ω_k × ω_j) × p + ω_k × v_j + v_k × ω_j + ω_j × J_k = ω_k × J_j

(the Jacobi identity collapses the terms), and for k ≻ j, where S_j does not depend on
q_k, ∂J_j/∂q_k = ω_j × J_k. Both are the same closed form: with a the ancestor and d the
descendant of the pair {j, k} ⊂ κ(b),

    H[:, j, k] = H[:, k, j] = ∂²p/∂q_j∂q_k = ω_a × J_d,

which is symmetric by construction, zero when the ancestor joint a is prismatic
(ω_a = 0) and zero for joints off the support. For two DoF columns a, d of one
multi-DoF joint both are "ancestors" of each other (the columns move with the body), and
the second derivative of p(q ⊕ ε) at ε = 0 is the symmetric ½ (ω_a × J_d + ω_d × J_a).

``point_kinematics`` works from precomputed forward kinematics so compiled callers can
evaluate many points at one configuration; ``point_kinematics_kernel`` does the forward
kinematics itself.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_vector, check_frame
from ._compile import allocation_free, njit
from .kinematics import world_kinematics
from .model import IDX_V, NV, PARENT, Model


@allocation_free
def body_point_position(R, pos, body, offset, p):
    """Write the world position p (3,) of the point ``offset`` (3,) fixed on body ``body``
    (``body = -1``: the fixed base, ``offset`` is then a world point)."""
    if body < 0:
        for r in range(3):
            p[r] = offset[r]
        return
    for r in range(3):
        p[r] = pos[body, r] + R[body, r, 0] * offset[0] + R[body, r, 1] * offset[1] + R[body, r, 2] * offset[2]


@allocation_free
def point_kinematics(topology, R, pos, S, body, offset, p, J, H):
    """Write p (3,), J (3, nv) and H (3, nv, nv) of the point ``offset`` (3,) of body ``body``.

    ``R`` (n, 3, 3), ``pos`` (n, 3), ``S`` (nv, 6) are the outputs of
    :func:`dynamics.kinematics.forward_kinematics`; ``body = -1`` is the fixed base
    (``offset`` then is a world point). J and H are overwritten entirely.
    """
    J[:, :] = 0.0
    H[:, :, :] = 0.0
    body_point_position(R, pos, body, offset, p)
    j = body
    while j >= 0:  # J_c = v_c + ω_c × p
        for c in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
            J[0, c] = S[c, 3] + S[c, 1] * p[2] - S[c, 2] * p[1]
            J[1, c] = S[c, 4] + S[c, 2] * p[0] - S[c, 0] * p[2]
            J[2, c] = S[c, 5] + S[c, 0] * p[1] - S[c, 1] * p[0]
        j = topology[j, PARENT]
    d = body
    while d >= 0:  # H[:, d, a] = H[:, a, d] = ω_a × J_d for a ⪯ d
        a = d
        while a >= 0:
            for cd in range(topology[d, IDX_V], topology[d, IDX_V] + topology[d, NV]):
                for ca in range(topology[a, IDX_V], topology[a, IDX_V] + topology[a, NV]):
                    h0 = S[ca, 1] * J[2, cd] - S[ca, 2] * J[1, cd]
                    h1 = S[ca, 2] * J[0, cd] - S[ca, 0] * J[2, cd]
                    h2 = S[ca, 0] * J[1, cd] - S[ca, 1] * J[0, cd]
                    if a == d:  # same joint: the mirror entry adds ω_d × J_a, halved below
                        H[0, cd, ca] += 0.5 * h0
                        H[1, cd, ca] += 0.5 * h1
                        H[2, cd, ca] += 0.5 * h2
                        H[0, ca, cd] += 0.5 * h0
                        H[1, ca, cd] += 0.5 * h1
                        H[2, ca, cd] += 0.5 * h2
                    else:
                        H[0, cd, ca], H[1, cd, ca], H[2, cd, ca] = h0, h1, h2
                        H[0, ca, cd], H[1, ca, cd], H[2, ca, cd] = h0, h1, h2
            a = topology[a, PARENT]
        d = topology[d, PARENT]


@njit(cache=True)
def point_kinematics_kernel(m, q, body, offset):
    """(p (3,), J (3, nv), H (3, nv, nv)) of a point fixed on a body; q checked for NaN/inf."""
    R, pos, S = world_kinematics(m, q)
    nv = S.shape[0]
    p, J, H = np.empty(3), np.empty((3, nv)), np.empty((3, nv, nv))
    point_kinematics(m.topology, R, pos, S, body, offset, p, J, H)
    return p, J, H


def body_point(model: Model, frame: str, offset=None) -> tuple[int, np.ndarray]:
    """Body index and position in that body's frame (3,) of point ``offset`` of ``frame``.

    ``offset`` (3,) is expressed in the frame (default: the frame origin).
    """
    f = check_frame(model, frame)
    o = np.zeros(3) if offset is None else as_vector(offset, 3, "offset")
    if not np.all(np.isfinite(o)):
        raise ValueError(f"offset: expected 3 finite numbers, got {o}")
    return f.body, f.placement[:3, :3] @ o + f.placement[:3, 3]


def _point(model: Model, q, frame: str, offset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = as_vector(q, model.nq, "q")
    body, o = body_point(model, frame, offset)
    return point_kinematics_kernel(model.arrays, q, body, o)


def point_position(model: Model, q, frame: str, offset=None) -> np.ndarray:
    """World position (3,) of the point ``offset`` (3,, in ``frame``; default origin)."""
    return _point(model, q, frame, offset)[0]


def point_jacobian(model: Model, q, frame: str, offset=None) -> np.ndarray:
    """Jacobian (3, nv) of the world position of the point: J[i, j] = ∂p_i/∂q_j."""
    return _point(model, q, frame, offset)[1]


def point_hessian(model: Model, q, frame: str, offset=None) -> np.ndarray:
    """Hessian (3, nv, nv) of the world position of the point: H[i, j, k] = ∂²p_i/∂q_j∂q_k."""
    return _point(model, q, frame, offset)[2]
