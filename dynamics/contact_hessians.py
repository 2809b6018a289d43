"""Second derivatives of the contact velocities and drifts, contracted with a weight.

For weights ν (nc,) this computes the Hessians of the scalars

    level 1:  ν·X(q, x)       X = J(q) x, the contact velocity at joint velocity x
    level 2:  ν·a_c(q, v, q̈)  a_c = J q̈ + γ, the contact acceleration (Baumgarte terms included)

with respect to q (local coordinates, ε ↦ f(q ⊕ ε) at 0) and v, q̈ and x held fixed. The
first derivatives along column k, g_k = ν·D_k X, are the closed forms of :mod:`dynamics.contact`
(eq. 2–6 there), polynomial in the world quantities S_k, v_b, a_b, v_λ, a_λ, v_k, o and
R_c. Their derivative along a second column j follows from the same rules for the
quantities themselves (for j ⪯ i, the bodies on the contact's support; zero otherwise):

    D_j S_k = S_j × S_k (j ⪯ k),   D_j v_i = S_j × (v_i − v_λ(j)),
    D_j a_i = S_j × (a_i − a_λ(j)) + (v_λ(j) × S_j) × (v_i − v_λ(j)),
    D_j o = S_j,lin + S_j,ang × o,   D_j (R_cᵀ y) = R_cᵀ (D_j y − ω_j × y)            (1)
    ∂v_i/∂v_j = S_j,   ∂a_i/∂v_j = S_j × (v_i − v_λ(j)) + v_j × S_j                  (2)

(Carpentier & Mansard 2018; Singh, Russell & Wensing 2023 eq. 22). Each is linear in S_j,
so D_j g_k = Σ_P ⟨P̄, D_j P⟩ with P̄ = ∂g_k/∂P the adjoints of the quantities, and with
⟨f, S × r⟩ = ⟨S, r ×* f⟩ every term becomes S_jᵀ times a force:

    D_j g_k = S_jᵀ Y_k,
    Y_k = Σ_i [(v_i − v_λ(j)) ×* v̄_i + (a_i − a_λ(j)) ×* ā_i − v_λ(j) ×* ((v_i − v_λ(j)) ×* ā_i)]
          + S_k ×* S̄_k [j ⪯ k] + [o × ō + Σ ȳ × y; ō]                  (q-direction, 3)
    Y_k = Σ_i [v̄_i + (v_i − v_λ(j) − v_j) ×* ā_i]                        (v-direction, 4)

(the sums over the bodies i whose motion g_k reads and j moves: the contact's body b, the
parent λ(k) of column k's body, and (v-column k) that body; Σ ȳ × y over the contact
vectors y in world axes and their world weights ȳ = R_c ν, for "local" contacts). The
adjoints come from one reverse sweep through the formulas of g_k per contact and column
(:func:`_column_adjoint`); Y_k depends on j only through its body (v_λ(j), a_λ(j), v_j), so
the columns of one joint (the free-flyer's six) share it, and each pair (j, k) costs a
dot product. Two columns of one joint do not commute; the q-Hessian is the mean of the two
iterated derivatives (the second derivative of ε ↦ f(q ⊕ ε)), as in
:mod:`dynamics.rnea_second_derivatives`.
"""
from __future__ import annotations

from ._compile import allocation_free
from .contact import BODY, DIM, KD, KP, LOCAL, ROW, TARGET
from .model import IDX_V, NV, PARENT

# offsets in the scratch W (2, SIZE): row 0 values, row 1 adjoints (∂g_k/∂ of the value)
SK, RV, RA, DV, DA, TMP, VL, AL, VJ, XV, XA, BV, BA, OUTV, OUTA, WV, WA, YQ, Y, REL, RELA, VLJ, T6 = range(0, 138, 6)
O, E, DO, WO, T3 = range(138, 153, 3)
SIZE = 153


@allocation_free(inline="always")
def _cross(W, ra, a, rb, b, ro, out, s):
    """W[ro, out:out+3] += s · W[ra, a:a+3] × W[rb, b:b+3]."""
    W[ro, out] += s * (W[ra, a + 1] * W[rb, b + 2] - W[ra, a + 2] * W[rb, b + 1])
    W[ro, out + 1] += s * (W[ra, a + 2] * W[rb, b] - W[ra, a] * W[rb, b + 2])
    W[ro, out + 2] += s * (W[ra, a] * W[rb, b + 1] - W[ra, a + 1] * W[rb, b])


@allocation_free(inline="always")
def _crm(W, a, b, out):
    """W[0, out:out+6] = W[0, a:a+6] × W[0, b:b+6] (motion cross product, [ω; v])."""
    for r in range(6):
        W[0, out + r] = 0.0
    _cross(W, 0, a, 0, b, 0, out, 1.0)
    _cross(W, 0, a, 0, b + 3, 0, out + 3, 1.0)
    _cross(W, 0, a + 3, 0, b, 0, out + 3, 1.0)


@allocation_free(inline="always")
def _crf(W, ra, a, rb, b, ro, out, s):
    """W[ro, out:out+6] += s · W[ra, a:a+6] ×* W[rb, b:b+6] (motion × force, [n; f])."""
    _cross(W, ra, a, rb, b, ro, out, s)
    _cross(W, ra, a + 3, rb, b + 3, ro, out, s)
    _cross(W, ra, a, rb, b + 3, ro, out + 3, s)


@allocation_free(inline="always")
def _crm_adjoint(W, a, b, out, adjoint_a, adjoint_b):
    """The adjoints of out = a × b (motion): ā += b ×* ō, b̄ −= a ×* ō (row 1)."""
    if adjoint_a:
        _crf(W, 0, b, 1, out, 1, a, 1.0)
    if adjoint_b:
        _crf(W, 0, a, 1, out, 1, b, -1.0)


@allocation_free(inline="always")
def _at_point(W, x, out):
    """W[0, out:out+3] = x_lin + x_ang × o (values)."""
    for r in range(3):
        W[0, out + r] = W[0, x + 3 + r]
    _cross(W, 0, x, 0, O, 0, out, 1.0)


@allocation_free(inline="always")
def _at_point_adjoint(W, x, out):
    """The adjoints of W[out:out+3] = x_lin + x_ang × o: x̄_lin += ō, x̄_ang += o × ō,
    ō_o += ō × x_ang."""
    for r in range(3):
        W[1, x + 3 + r] += W[1, out + r]
    _cross(W, 0, O, 1, out, 1, x, 1.0)
    _cross(W, 1, out, 0, x, 1, O, 1.0)


@allocation_free
def _contact_values(W, ci, cf, Rc, o, vel, acc, gravity, level, nu, c):
    """Row 0: v_b, a_b (gravity removed), o, the world contact vectors X_v = [u; ω],
    X_a (3d: classical; 6d: [s; α]) and e = o − o* of contact c, and the world weights
    ȳ of the contact vectors (R_c ν for "local"): of a_c (WA), the velocity (WV), e (WO)."""
    b, dim, r0 = ci[c, BODY], ci[c, DIM], ci[c, ROW]
    for r in range(6):
        W[0, BV + r] = vel[b, r]
        W[0, BA + r] = acc[b, r] + (gravity[r - 3] if r >= 3 else 0.0)
        n = nu[r0 + r] if r < dim else 0.0
        W[0, WA + r] = n if level == 2 else 0.0
        W[0, WV + r] = cf[c, KD] * n if level == 2 else n
    for r in range(3):
        W[0, O + r] = o[c, r]
        W[0, E + r] = o[c, r] - cf[c, TARGET + r]
        W[0, WO + r] = cf[c, KP] * W[0, WA + r]
    _at_point(W, BV, XV)  # X_v = [v_O + ω × o; ω]
    for r in range(3):
        W[0, XV + 3 + r] = W[0, BV + r]
    if level == 2:  # X_a = [a_O + α × o (+ ω × u for 3d); α]
        _at_point(W, BA, XA)
        for r in range(3):
            W[0, XA + 3 + r] = W[0, BA + r]
        if dim == 3:
            _cross(W, 0, BV, 0, XV, 0, XA, 1.0)
    if ci[c, LOCAL]:  # ȳ = R_c ν per block of 3
        for x in (WA, WA + 3, WV, WV + 3, WO):
            y0, y1, y2 = W[0, x], W[0, x + 1], W[0, x + 2]
            for i in range(3):
                W[0, x + i] = Rc[c, i, 0] * y0 + Rc[c, i, 1] * y1 + Rc[c, i, 2] * y2


@allocation_free
def _turned(W, d, x, n, k_along_q):
    """For a "local" contact, whose vector is R_cᵀ (y − ω_k × x) (y = W[0, d:d+n] in world
    axes; the ω_k term along a q-column k, :mod:`dynamics.contact` eq. 6): W[1, T3] +=
    Σ ȳ × (y − ω_k × x) by blocks of 3 (the last term of eq. 3), and the adjoints of the
    ω_k term, ω̄_k −= x × ȳ and x̄ −= ȳ × ω_k (ȳ = W[1, d:d+n], the world weights)."""
    for blk in range(0, n, 3):
        for r in range(3):
            W[0, T3 + r] = W[0, d + blk + r]
        if k_along_q:
            _cross(W, 0, SK, 0, x + blk, 0, T3, -1.0)
            _cross(W, 0, x + blk, 1, d + blk, 1, SK, -1.0)
            _cross(W, 1, d + blk, 0, SK, 1, x + blk, -1.0)
        _cross(W, 1, d + blk, 0, T3, 1, T3, 1.0)


@allocation_free
def _column_adjoint(W, ci, c, level, k_along_q):
    """g_k = ν·D_k X of :func:`dynamics.contact._column` (the same lines) at the values of
    row 0 (S_k, v_λ(k), a_λ(k), v_k and those of :func:`_contact_values`), then the
    reverse sweep: the adjoints S̄_k, v̄_b, ā_b, ō, v̄_λ(k), ā_λ(k), v̄_k in row 1, and in
    W[0, YQ] the terms of eq. 3 that do not depend on j's body, [o × ō + Σ ȳ × y; ō]."""
    dim = ci[c, DIM]
    for r in range(SIZE):
        W[1, r] = 0.0
    for r in range(6):
        W[0, RV + r] = W[0, BV + r] - W[0, VL + r]
        W[0, RA + r] = W[0, BA + r] - W[0, AL + r]
    if k_along_q:  # D_k v_b = S_k × (v_b − v_λ),  D_k a_b = S_k × (a_b − a_λ) + (v_λ × S_k) × (v_b − v_λ)
        _crm(W, SK, RV, DV)
        if level == 2:
            _crm(W, SK, RA, DA)
            _crm(W, VL, SK, TMP)
            _crm(W, TMP, RV, T6)
            for r in range(6):
                W[0, DA + r] += W[0, T6 + r]
        _at_point(W, SK, DO)  # D_k o = S_k,lin + S_k,ang × o
    else:  # ∂v_b/∂v_k = S_k,  ∂a_b/∂v_k = S_k × (v_b − v_λ) + v_k × S_k,  ∂o/∂v_k = 0
        for r in range(6):
            W[0, DV + r] = W[0, SK + r]
        _crm(W, SK, RV, DA)
        _crm(W, VJ, SK, T6)
        for r in range(6):
            W[0, DA + r] += W[0, T6 + r]
        for r in range(3):
            W[0, DO + r] = 0.0
    # D_k u = D_k v_O + D_k ω × o + ω × D_k o,  D_k ω
    _at_point(W, DV, OUTV)
    _cross(W, 0, BV, 0, DO, 0, OUTV, 1.0)
    for r in range(3):
        W[0, OUTV + 3 + r] = W[0, DV + r]
    if level == 2:  # D_k s = D_k a_O + D_k α × o + α × D_k o (+ D_k(ω × u) for 3d),  D_k α
        _at_point(W, DA, OUTA)
        _cross(W, 0, BA, 0, DO, 0, OUTA, 1.0)
        for r in range(3):
            W[0, OUTA + 3 + r] = W[0, DA + r]
        if dim == 3:
            _cross(W, 0, DV, 0, XV, 0, OUTA, 1.0)
            _cross(W, 0, BV, 0, OUTV, 0, OUTA, 1.0)
    # the reverse sweep, from the world weights ȳ
    for r in range(6):
        W[1, OUTV + r] = W[0, WV + r]
        W[1, OUTA + r] = W[0, WA + r]
    for r in range(3):
        W[1, DO + r] = W[0, WO + r]
    if ci[c, LOCAL]:
        _turned(W, OUTV, XV, 6, k_along_q)
        if level == 2:
            _turned(W, OUTA, XA, 6, k_along_q)
            _turned(W, DO, E, 3, k_along_q)
    if level == 2:  # D_k s: (a × b adjoints: ā += b × ō, b̄ += ō × a)
        _at_point_adjoint(W, DA, OUTA)  # D_k a_O + D_k α × o
        _cross(W, 0, DO, 1, OUTA, 1, BA, 1.0)  # α × D_k o
        _cross(W, 1, OUTA, 0, BA, 1, DO, 1.0)
        for r in range(3):  # D_k α
            W[1, DA + r] += W[1, OUTA + 3 + r]
        if dim == 3:
            _cross(W, 0, XV, 1, OUTA, 1, DV, 1.0)  # D_k ω × u
            _cross(W, 1, OUTA, 0, DV, 1, XV, 1.0)
            _cross(W, 0, OUTV, 1, OUTA, 1, BV, 1.0)  # ω × D_k u
            _cross(W, 1, OUTA, 0, BV, 1, OUTV, 1.0)
    _at_point_adjoint(W, DV, OUTV)  # D_k u = D_k v_O + D_k ω × o + ω × D_k o
    _cross(W, 0, DO, 1, OUTV, 1, BV, 1.0)
    _cross(W, 1, OUTV, 0, BV, 1, DO, 1.0)
    for r in range(3):  # D_k ω
        W[1, DV + r] += W[1, OUTV + 3 + r]
    if k_along_q:
        _at_point_adjoint(W, SK, DO)  # D_k o = S_k,lin + S_k,ang × o
        if level == 2:  # D_k a_b = S_k × r_a + (v_λ × S_k) × r_v
            _crm_adjoint(W, SK, RA, DA, True, True)
            _crm_adjoint(W, TMP, RV, DA, True, True)
            _crm_adjoint(W, VL, SK, TMP, True, True)
        _crm_adjoint(W, SK, RV, DV, True, True)  # D_k v_b = S_k × r_v
    elif level == 2:  # ∂a_b/∂v_k = S_k × r_v + v_k × S_k (S_k held: no S̄_k along v)
        _crm_adjoint(W, SK, RV, DA, False, True)
        _crm_adjoint(W, VJ, SK, DA, True, False)
    for r in range(6):  # r_v = v_b − v_λ,  r_a = a_b − a_λ
        W[1, BV + r] += W[1, RV + r]
        W[1, VL + r] -= W[1, RV + r]
        W[1, BA + r] += W[1, RA + r]
        W[1, AL + r] -= W[1, RA + r]
    if level == 2:  # X_a, then X_v and e
        _at_point_adjoint(W, BA, XA)
        for r in range(3):
            W[1, BA + r] += W[1, XA + 3 + r]
        if dim == 3:
            _cross(W, 0, XV, 1, XA, 1, BV, 1.0)
            _cross(W, 1, XA, 0, BV, 1, XV, 1.0)
    _at_point_adjoint(W, BV, XV)
    for r in range(3):
        W[1, BV + r] += W[1, XV + 3 + r]
        W[1, O + r] += W[1, E + r]  # e = o − o*
    for r in range(3):  # [o × ō + Σ ȳ × y; ō]
        W[0, YQ + r] = W[1, T3 + r]
        W[0, YQ + 3 + r] = W[1, O + r]
    _cross(W, 0, O, 1, O, 0, YQ, 1.0)


@allocation_free(inline="always")
def _relative(W, vel, i, lamj):
    """W[0, REL] = v_i − v_λ(j) (v_λ = 0 at the root)."""
    for r in range(6):
        W[0, REL + r] = vel[i, r] - (vel[lamj, r] if lamj >= 0 else 0.0)


@allocation_free
def _pull_q(W, vel, acc, gravity, level, i, lamj, v, a):
    """W[0, Y] += (v_i − v_λ(j)) ×* v̄ + (a_i − a_λ(j)) ×* ā − v_λ(j) ×* ((v_i − v_λ(j)) ×* ā)
    (eq. 3), v̄ = W[1, v], ā = W[1, a]."""
    _relative(W, vel, i, lamj)
    _crf(W, 0, REL, 1, v, 0, Y, 1.0)
    if level == 2:
        for r in range(6):  # a_i − a_λ(j), gravity removed (a_λ = 0 at the root)
            W[0, RELA + r] = acc[i, r] - (acc[lamj, r] if lamj >= 0 else -(gravity[r - 3] if r >= 3 else 0.0))
        _crf(W, 0, RELA, 1, a, 0, Y, 1.0)
        if lamj >= 0:
            for r in range(6):
                W[0, T6 + r] = 0.0
                W[0, VLJ + r] = vel[lamj, r]
            _crf(W, 0, REL, 1, a, 0, T6, 1.0)
            _crf(W, 0, VLJ, 0, T6, 0, Y, -1.0)


@allocation_free
def _pull_v(W, vel, i, bj, lamj, v, a):
    """W[0, Y] += v̄ + (v_i − v_λ(j) − v_j) ×* ā (eq. 4)."""
    _relative(W, vel, i, lamj)
    for r in range(6):
        W[0, REL + r] -= vel[bj, r]
        W[0, Y + r] += W[1, v + r]
    _crf(W, 0, REL, 1, a, 0, Y, 1.0)


@allocation_free(inline="always")
def _dot_y(W, S, j):
    """S_jᵀ W[0, Y:Y+6]."""
    s = 0.0
    for r in range(6):
        s += S[j, r] * W[0, Y + r]
    return s


@allocation_free
def _pairs(topology, S, W, vel, acc, gravity, level, b, k, bk, k_along_q, out):
    """Add D_j g_k (g_k the column of :func:`_column_adjoint`, its adjoints in W) for every
    column j of the contact's support: Hqq[k, j] (j along q, on or below k's body, mirrored
    across bodies), Hqv[k, j] (k along q, j along v), Hvv[k, j] (both along v, k ≤ j,
    mirrored)."""
    lamk = topology[bk, PARENT]
    bj = b
    while bj >= 0:
        lamj = topology[bj, PARENT]
        j0, j1 = topology[bj, IDX_V], topology[bj, IDX_V] + topology[bj, NV]
        if k_along_q and bj >= bk:  # eq. 3; λ(k) is above j's body
            for r in range(6):
                W[0, Y + r] = W[0, YQ + r]
            _pull_q(W, vel, acc, gravity, level, b, lamj, BV, BA)
            if bj == bk:
                _crf(W, 0, SK, 1, SK, 0, Y, 1.0)
            for j in range(j0, j1):
                h = _dot_y(W, S, j)
                out[0, k, j] += h
                if bk != bj:
                    out[0, j, k] += h
        if level == 2:  # eq. 4
            for r in range(6):
                W[0, Y + r] = 0.0
            _pull_v(W, vel, b, bj, lamj, BV, BA)
            if bj < bk:
                _pull_v(W, vel, lamk, bj, lamj, VL, AL)
            if bj <= bk and not k_along_q:
                for r in range(6):
                    W[0, Y + r] += W[1, VJ + r]
            for j in range(j0, j1):
                if k_along_q:
                    out[1, k, j] += _dot_y(W, S, j)
                elif k <= j:
                    h = _dot_y(W, S, j)
                    out[2, k, j] += h
                    if k != j:
                        out[2, j, k] += h
        bj = lamj


@allocation_free
def contact_value_hessians(topology, S, ci, cf, frames, vel, acc, gravity, level, nu, out, W):
    """out[0] = Hqq, and for ``level`` 2 out[1] = Hqv, out[2] = Hvv (nv, nv): the Hessians
    of ν·X (level 1, at the body velocities ``vel`` of x) or of ν·a_c (level 2, at the body
    velocities and accelerations of (v, q̈); acc as the RNEA holds it). ``frames`` = (Rc, o),
    the contact frames; W (2, SIZE) scratch."""
    Rc, o = frames
    out[:, :, :] = 0.0
    for c in range(ci.shape[0]):
        b = ci[c, BODY]
        _contact_values(W, ci, cf, Rc, o, vel, acc, gravity, level, nu, c)
        bk = b
        while bk >= 0:
            lamk = topology[bk, PARENT]
            for r in range(6):  # v_λ(k), a_λ(k) (gravity removed; 0 at the root), v_k
                W[0, VL + r] = vel[lamk, r] if lamk >= 0 else 0.0
                W[0, AL + r] = (acc[lamk, r] + (gravity[r - 3] if r >= 3 else 0.0)) if lamk >= 0 else 0.0
                W[0, VJ + r] = vel[bk, r]
            for k in range(topology[bk, IDX_V], topology[bk, IDX_V] + topology[bk, NV]):
                for r in range(6):
                    W[0, SK + r] = S[k, r]
                for k_along_q in (True, False):
                    if level == 1 and not k_along_q:
                        continue
                    _column_adjoint(W, ci, c, level, k_along_q)
                    _pairs(topology, S, W, vel, acc, gravity, level, b, k, bk, k_along_q, out)
            bk = lamk
    for a in range(S.shape[0]):  # the mean of the two iterated q-derivatives
        for b in range(a):
            out[0, a, b] = out[0, b, a] = 0.5 * (out[0, a, b] + out[0, b, a])
