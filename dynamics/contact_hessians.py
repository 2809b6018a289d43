"""Second derivatives of the contact velocities and drifts, contracted with a weight.

For weights ν (nc,) this computes the Hessians of the scalars

    level 1:  ν·X(q, x)       X = J(q) x, the contact velocity at joint velocity x
    level 2:  ν·a_c(q, v, q̈)  a_c = J q̈ + γ, the contact acceleration (Baumgarte terms included)

with respect to q (local coordinates, ε ↦ f(q ⊕ ε) at 0) and v, q̈ and x held fixed. The
first derivatives along column k, D_k X, are the closed forms of :mod:`dynamics.contact`
(eq. 2–6 there), polynomial in the world quantities S_k, v_b, a_b, v_λ, a_λ, v_k, o and
R_c. Their derivative along a second column j is taken by forward-mode (dual) arithmetic
on those formulas, with the same rules for the quantities themselves (for j ⪯ i, the
bodies on the contact's support; zero otherwise):

    D_j S_k = S_j × S_k (j ⪯ k),   D_j v_i = S_j × (v_i − v_λ(j)),
    D_j a_i = S_j × (a_i − a_λ(j)) + (v_λ(j) × S_j) × (v_i − v_λ(j)),
    D_j o = S_j,lin + S_j,ang × o,   D_j (R_cᵀ y) = R_cᵀ (D_j y − ω_j × y)            (1)
    ∂v_i/∂v_j = S_j,   ∂a_i/∂v_j = S_j × (v_i − v_λ(j)) + v_j × S_j                  (2)

(Carpentier & Mansard 2018; Singh, Russell & Wensing 2023 eq. 22). Two columns of one joint
do not commute; the q-Hessian is the mean of the two iterated derivatives (the second
derivative of ε ↦ f(q ⊕ ε)), as in :mod:`dynamics.rnea_second_derivatives`.
"""
from __future__ import annotations

from ._compile import allocation_free
from .contact import BODY, DIM, KD, KP, LOCAL, ROW, TARGET
from .model import IDX_V, NV, PARENT

# offsets in the rows of the dual scratch W (2, SIZE): row 0 values, row 1 derivatives along j
SK, RV, RA, DV, DA, TMP, VL, XV, XA, BV, BA, AL, VJ, OUTV, OUTA, TMP2, SJ, RELV, RELA = range(0, 114, 6)
E, DO, O = 114, 117, 120
SIZE = 123


@allocation_free(inline="always")
def _dlin(W, out, a, b, sb, n):
    """Dual W[:, out:out+n] = W[:, a:a+n] + sb · W[:, b:b+n] (a or b < 0: that term is 0),
    in loops: numba's slice expressions would allocate temporaries."""
    for r in range(2):
        for i in range(n):
            W[r, out + i] = (W[r, a + i] if a >= 0 else 0.0) + (sb * W[r, b + i] if b >= 0 else 0.0)


@allocation_free(inline="always")
def _row(W, ro, out, ri, a, n):
    """W[ro, out:out+n] = W[ri, a:a+n] (a < 0: zeros)."""
    for i in range(n):
        W[ro, out + i] = W[ri, a + i] if a >= 0 else 0.0


@allocation_free(inline="always")
def _cross(W, ra, a, rb, b, ro, out, s):
    """W[ro, out:out+3] += s · W[ra, a:a+3] × W[rb, b:b+3]."""
    W[ro, out] += s * (W[ra, a + 1] * W[rb, b + 2] - W[ra, a + 2] * W[rb, b + 1])
    W[ro, out + 1] += s * (W[ra, a + 2] * W[rb, b] - W[ra, a] * W[rb, b + 2])
    W[ro, out + 2] += s * (W[ra, a] * W[rb, b + 1] - W[ra, a + 1] * W[rb, b])


@allocation_free(inline="always")
def _crm(W, ra, a, rb, b, ro, out):
    """W[ro, out:out+6] += W[ra, a:a+6] × W[rb, b:b+6] (motion cross product, [ω; v])."""
    _cross(W, ra, a, rb, b, ro, out, 1.0)
    _cross(W, ra, a, rb, b + 3, ro, out + 3, 1.0)
    _cross(W, ra, a + 3, rb, b, ro, out + 3, 1.0)


@allocation_free(inline="always")
def _dcross(W, a, b, out, s):
    """Dual W[:, out:out+3] += s · a × b."""
    _cross(W, 1, a, 0, b, 1, out, s)
    _cross(W, 0, a, 1, b, 1, out, s)
    _cross(W, 0, a, 0, b, 0, out, s)


@allocation_free(inline="always")
def _dcrm(W, a, b, out):
    """Dual W[:, out:out+6] = a × b."""
    _dlin(W, out, -1, -1, 0.0, 6)
    _crm(W, 1, a, 0, b, 1, out)
    _crm(W, 0, a, 1, b, 1, out)
    _crm(W, 0, a, 0, b, 0, out)


@allocation_free(inline="always")
def _dat_point(W, x, out):
    """Dual W[:, out:out+3] = x_lin + x_ang × o."""
    _dlin(W, out, x + 3, -1, 0.0, 3)
    _dcross(W, x, O, out, 1.0)


@allocation_free
def _dlocal(W, Rc, c, d, x, n, turns, along_q):
    """Dual W[:, d:d+n] ← R_cᵀ (d − ω_k × x) (the −ω_k × x term if ``turns``, ω_k = W[:, SK]),
    its derivative with the rotation term of eq. 1 if ``along_q`` (ω_j = W[0, SJ])."""
    for blk in range(0, n, 3):
        if turns:
            _dcross(W, SK, x + blk, d + blk, -1.0)
        if along_q:
            _cross(W, 0, SJ, 0, d + blk, 1, d + blk, -1.0)
        for r in range(2):  # R_cᵀ on both rows
            x0, x1, x2 = W[r, d + blk], W[r, d + blk + 1], W[r, d + blk + 2]
            for i in range(3):
                W[r, d + blk + i] = Rc[c, 0, i] * x0 + Rc[c, 1, i] * x1 + Rc[c, 2, i] * x2


@allocation_free
def _motion_tangents(W, vel, acc, gravity, i, bj, lamj, along_q, out_v, out_a):
    """W[1, out_v], W[1, out_a]: the derivatives of v_i and a_i (gravity removed) along
    column j (S_j = W[0, SJ], of body bj with parent lamj) by eq. 1–2; zero unless
    bj ⪯ i (i and bj on one path to the root: bj ⪯ i ⟺ bj ≤ i)."""
    _row(W, 1, out_v, 0, -1, 6)
    _row(W, 1, out_a, 0, -1, 6)
    if i < 0 or bj > i:
        return
    for r in range(6):  # v_i − v_λ(j),  a_i − a_λ(j)
        W[0, RELV + r] = vel[i, r] - (vel[lamj, r] if lamj >= 0 else 0.0)
        W[0, RELA + r] = acc[i, r] - (acc[lamj, r] if lamj >= 0 else -(gravity[r - 3] if r >= 3 else 0.0))
    if along_q:
        _crm(W, 0, SJ, 0, RELV, 1, out_v)  # S_j × (v_i − v_λ)
        _crm(W, 0, SJ, 0, RELA, 1, out_a)  # S_j × (a_i − a_λ) + (v_λ × S_j) × (v_i − v_λ)
        if lamj >= 0:
            _row(W, 0, TMP2, 0, -1, 6)
            for r in range(6):
                W[0, TMP + r] = vel[lamj, r]
            _crm(W, 0, TMP, 0, SJ, 0, TMP2)
            _crm(W, 0, TMP2, 0, RELV, 1, out_a)
    else:
        _row(W, 1, out_v, 0, SJ, 6)  # S_j
        _crm(W, 0, SJ, 0, RELV, 1, out_a)  # S_j × (v_i − v_λ) + v_j × S_j
        for r in range(6):
            W[0, TMP + r] = vel[bj, r]
        _crm(W, 0, TMP, 0, SJ, 1, out_a)


@allocation_free
def _contact_primitives(W, ci, cf, o, vel, acc, gravity, c, bj, lamj, along_q):
    """Dual v_b, a_b (gravity removed), o, and the world contact vectors X_v = [u; ω],
    X_a (3d: classical; 6d: [s; α]) and e = o − o* of contact c."""
    b = ci[c, BODY]
    for r in range(6):
        W[0, BV + r] = vel[b, r]
        W[0, BA + r] = acc[b, r] + (gravity[r - 3] if r >= 3 else 0.0)
    _motion_tangents(W, vel, acc, gravity, b, bj, lamj, along_q, BV, BA)
    for r in range(3):
        W[0, O + r] = o[c, r]
        W[1, O + r] = 0.0
        W[0, E + r] = o[c, r] - cf[c, TARGET + r]
    if along_q:  # D_j o = S_j,lin + S_j,ang × o
        _row(W, 1, O, 0, SJ + 3, 3)
        _cross(W, 0, SJ, 0, O, 1, O, 1.0)
    _row(W, 1, E, 1, O, 3)
    _dat_point(W, BV, XV)
    _dat_point(W, BA, XA)
    _dlin(W, XV + 3, BV, -1, 0.0, 3)
    _dlin(W, XA + 3, BA, -1, 0.0, 3)
    if ci[c, DIM] == 3:
        _dcross(W, BV, XV, XA, 1.0)


@allocation_free
def _column_primitives(W, topology, S, vel, acc, gravity, k, bk, bj, lamj, along_q):
    """Dual S_k, v_λ(k), a_λ(k) (gravity removed; 0 at the root) and v_k (the velocity of
    column k's body bk)."""
    lamk = topology[bk, PARENT]
    for r in range(6):
        W[0, SK + r] = S[k, r]
    _row(W, 1, SK, 0, -1, 6)
    if along_q and bj <= bk:  # D_j S_k = S_j × S_k
        _crm(W, 0, SJ, 0, SK, 1, SK)
    _motion_tangents(W, vel, acc, gravity, lamk, bj, lamj, along_q, VL, AL)
    _motion_tangents(W, vel, acc, gravity, bk, bj, lamj, along_q, VJ, TMP)  # a_k unused
    for r in range(6):
        W[0, VL + r] = vel[lamk, r] if lamk >= 0 else 0.0
        W[0, AL + r] = (acc[lamk, r] + (gravity[r - 3] if r >= 3 else 0.0)) if lamk >= 0 else 0.0
        W[0, VJ + r] = vel[bk, r]


@allocation_free
def _dual_column(W, ci, cf, Rc, c, level, k_along_q, j_along_q, nu):
    """The derivative along j of ν_c · (D_k of the contact vector): the dual evaluation of
    :func:`dynamics.contact._column` (same lines, with derivatives)."""
    dim, r0 = ci[c, DIM], ci[c, ROW]
    _dlin(W, RV, BV, VL, -1.0, 6)
    _dlin(W, RA, BA, AL, -1.0, 6)
    if k_along_q:
        _dcrm(W, SK, RV, DV)
        _dcrm(W, SK, RA, DA)
        _dcrm(W, VL, SK, TMP)
        _dcrm(W, TMP, RV, TMP2)
        _dlin(W, DA, DA, TMP2, 1.0, 6)
        _dat_point(W, SK, DO)
    else:
        _dlin(W, DV, SK, -1, 0.0, 6)
        _dcrm(W, SK, RV, DA)
        _dcrm(W, VJ, SK, TMP)
        _dlin(W, DA, DA, TMP, 1.0, 6)
        _dlin(W, DO, -1, -1, 0.0, 3)
    _dat_point(W, DV, OUTV)
    _dcross(W, BV, DO, OUTV, 1.0)
    _dlin(W, OUTV + 3, DV, -1, 0.0, 3)
    if level == 2:
        _dat_point(W, DA, OUTA)
        _dcross(W, BA, DO, OUTA, 1.0)
        _dlin(W, OUTA + 3, DA, -1, 0.0, 3)
        if dim == 3:
            _dcross(W, DV, XV, OUTA, 1.0)
            _dcross(W, BV, OUTV, OUTA, 1.0)
    if ci[c, LOCAL]:
        _dlocal(W, Rc, c, OUTV, XV, 6, k_along_q, j_along_q)
        if level == 2:
            _dlocal(W, Rc, c, OUTA, XA, 6, k_along_q, j_along_q)
            _dlocal(W, Rc, c, DO, E, 3, k_along_q, j_along_q)
    s = 0.0
    for r in range(dim):
        if level == 1:
            s += nu[r0 + r] * W[1, OUTV + r]
        else:
            s += nu[r0 + r] * (W[1, OUTA + r] + cf[c, KD] * W[1, OUTV + r] + (cf[c, KP] * W[1, DO + r] if r < 3 else 0.0))
    return s


@allocation_free
def contact_value_hessians(topology, S, ci, cf, frames, vel, acc, gravity, level, nu, out, W):
    """out[0] = Hqq, and for ``level`` 2 out[1] = Hqv, out[2] = Hvv (nv, nv): the Hessians
    of ν·X (level 1, at the body velocities ``vel`` of x) or of ν·a_c (level 2, at the body
    velocities and accelerations of (v, q̈); acc as the RNEA holds it). ``frames`` = (Rc, o),
    the contact frames; W (2, SIZE) scratch."""
    Rc, o = frames
    out[:, :, :] = 0.0
    W[:, :] = 0.0
    for c in range(ci.shape[0]):
        bj = ci[c, BODY]
        while bj >= 0:
            lamj = topology[bj, PARENT]
            for j in range(topology[bj, IDX_V], topology[bj, IDX_V] + topology[bj, NV]):
                for r in range(6):
                    W[0, SJ + r] = S[j, r]
                for j_along_q in (True, False):
                    if level == 1 and not j_along_q:
                        continue
                    _contact_primitives(W, ci, cf, o, vel, acc, gravity, c, bj, lamj, j_along_q)
                    # Hqq: D_j D_k = D_k D_j for columns of two joints, so only k on or above j's
                    # body, mirrored; Hvv: symmetric, only k ≤ j, mirrored; Hqv: every k
                    bk = bj if j_along_q else ci[c, BODY]
                    while bk >= 0:
                        for k in range(topology[bk, IDX_V], topology[bk, IDX_V] + topology[bk, NV]):
                            _column_primitives(W, topology, S, vel, acc, gravity, k, bk, bj, lamj, j_along_q)
                            if j_along_q:  # (k along q, j along q) → Hqq[k, j]
                                h = _dual_column(W, ci, cf, Rc, c, level, True, True, nu)
                                out[0, k, j] += h
                                if bk != bj:
                                    out[0, j, k] += h
                                continue
                            # (k along q, j along v) → Hqv[k, j]; (v, v) → Hvv[k, j]
                            out[1, k, j] += _dual_column(W, ci, cf, Rc, c, level, True, False, nu)
                            if k <= j:
                                h = _dual_column(W, ci, cf, Rc, c, level, False, False, nu)
                                out[2, k, j] += h
                                if k != j:
                                    out[2, j, k] += h
                        bk = topology[bk, PARENT]
            bj = lamj
    for a in range(S.shape[0]):  # the mean of the two iterated q-derivatives
        for b in range(a):
            out[0, a, b] = out[0, b, a] = 0.5 * (out[0, a, b] + out[0, b, a])
