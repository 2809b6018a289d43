"""Rigid contacts: their description, Jacobians, drifts and the derivatives of the drifts.

A contact holds a frame of the robot (origin o, world rotation R_c) still, with
Pinocchio's rigid-constraint conventions (Carpentier, Budhiraja & Mansard, *Proximal and
sparse resolution of constrained dynamic equations*, RSS 2021):

- ``kind="3d"``: a point contact, 3 rows. Its velocity is the velocity of the point,
  u = v_O + ω × o, its acceleration the *classical* acceleration of the point,
  s + ω × u with s = a_O + α × o (Featherstone 2008, eq. 2.37);
- ``kind="6d"``: a frame contact, 6 rows [linear; angular]: the spatial velocity [u; ω]
  and the *spatial* acceleration [s; α] of the frame at its origin;
- ``reference="local_world_aligned"``: those vectors in world axes; ``"local"``: in the
  frame's axes, R_cᵀ times them. The contact force λ is expressed in the same axes, at o.

Here [ω; v_O] = v_b and [α; a_O] = a_b are the spatial velocity and acceleration of the
contact's body b at the world origin (gravity excluded), as the recursions of this package
hold them. With them, the contact Jacobian J (J v = contact velocity) has the columns

    J_k = [S_k,lin + S_k,ang × o; S_k,ang]   (k ⪯ b, rotated by R_cᵀ for "local")      (1)

and the drift γ = J̇ v is the contact acceleration at q̈ = 0. Baumgarte's stabilisation
(Baumgarte 1972; Pinocchio's corrector) adds k_d times the contact velocity and, for 3d
contacts, k_p times the position error o − o* (o* the ``target``; in local axes for
"local"): the contact then obeys J q̈ + γ = 0 with γ = J̇ v + k_d J v + k_p e.

Derivatives along the tangent direction of column k (Carpentier & Mansard 2018; Singh,
Russell & Wensing 2023 eq. 22): a joint k moves its subtree rigidly, ∂S_j/∂q_k = S_k × S_j
for k ⪯ j, so with λ the parent body of column k's body (v_λ = a_λ = 0 at the root),

    ∂v_b/∂q_k = S_k × (v_b − v_λ)                                            (2)
    ∂a_b/∂q_k = S_k × (a_b − a_λ) + Ψ̇_k × (v_b − v_λ),   Ψ̇_k = v_λ × S_k     (3)
    ∂o/∂q_k = S_k,lin + S_k,ang × o                                          (4)
    ∂v_b/∂v_k = S_k,   ∂a_b/∂v_k = S_k × (v_b − v_λ) + Ṡ_k,   Ṡ_k = v_k × S_k (5)

((3): the relative part of a_b turns with the subtree, the term v_λ × S_j q̇_j of each
descendant column only with S_j; the Jacobi identity collects the rest), and
∂(R_cᵀ x)/∂q_k = R_cᵀ (∂x/∂q_k − ω_k × x) for a vector x in world axes.            (6)
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ._compile import allocation_free
from .model import IDX_V, NV, PARENT, Model

KINDS = {"3d": 3, "6d": 6}
REFERENCES = {"local_world_aligned": 0, "local": 1}

# columns of the packed integer record of a contact (one row per contact)
BODY, DIM, LOCAL, ROW = range(4)
# columns of the packed float record: the frame's rotation in its body (row-major), its
# origin in its body, the gains and the 3d target
ROT, ORIGIN, KP, KD, TARGET = 0, 9, 12, 13, 14
FLOATS = 17


@dataclass(frozen=True)
class Contact:
    """A rigid contact at the frame ``frame`` (Pinocchio's ``RigidConstraintModel``).

    ``kind``: ``"3d"`` (point contact, force (3,)) or ``"6d"`` (frame contact, wrench
    [force; torque] (6,)); ``reference``: ``"local_world_aligned"`` (world axes at the
    frame origin) or ``"local"`` (the frame's axes); ``baumgarte=(kp, kd)``: the gains of
    Baumgarte's stabilisation on the position and velocity errors (kp on 3d contacts
    only); ``target`` (3,): the world point a 3d contact's position error is measured
    from (Pinocchio's default: the world origin).
    """

    frame: str
    kind: str = "3d"
    reference: str = "local_world_aligned"
    baumgarte: tuple[float, float] = (0.0, 0.0)
    target: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if not isinstance(self.frame, str):
            raise ValueError(f"frame: expected a frame name (str), got {self.frame!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(map(repr, KINDS))}, got {self.kind!r}")
        if self.reference not in REFERENCES:
            raise ValueError(f"reference: expected one of {', '.join(map(repr, REFERENCES))}, got {self.reference!r}")
        object.__setattr__(self, "baumgarte", _finite_tuple(self.baumgarte, 2, "baumgarte"))
        object.__setattr__(self, "target", _finite_tuple(self.target, 3, "target"))
        if self.kind == "6d" and self.baumgarte[0] != 0.0:
            raise ValueError("baumgarte: kp (a position gain) is supported on 3d contacts only; use kp = 0 on 6d")

    @property
    def dim(self) -> int:
        """Number of constraint rows (and force components): 3 or 6."""
        return KINDS[self.kind]


def _finite_tuple(x, n: int, name: str) -> tuple[float, ...]:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {n} finite numbers, got {x!r}") from None
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected {n} finite numbers, got {x!r}")
    return tuple(float(e) for e in a)


_PACKED: dict[tuple, tuple] = {}
"""(id(model), ids of the contacts) → (weak reference to the model, the contacts, their
records): a call with the same (immutable) contacts skips :func:`pack_contacts`, whose
frame look-ups cost more than the contact dynamics of a quadruped."""


def packed_contacts(model: Model, contacts) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack_contacts`, cached by the identity of the model and of each contact."""
    key = (id(model), *map(id, contacts)) if type(contacts) is list or type(contacts) is tuple else None
    hit = _PACKED.get(key)
    if hit is not None and hit[0]() is model:  # a dead model's id may be reused: check it is this one
        return hit[2], hit[3]
    ci, cf = pack_contacts(model, contacts)
    if len(_PACKED) >= 256:
        _PACKED.clear()
    _PACKED[key] = (weakref.ref(model), tuple(contacts), ci, cf)  # the contacts kept: their ids stay theirs
    return ci, cf


def pack_contacts(model: Model, contacts) -> tuple[np.ndarray, np.ndarray]:
    """The records the kernels take, (int64 (nc, 4), float64 (nc, FLOATS)): body, rows,
    reference and first row of each contact; its placement in the body, gains and target.
    ValueError naming ``contacts`` for anything but a sequence of :class:`Contact` on
    moving bodies."""
    if isinstance(contacts, Contact) or not isinstance(contacts, (list, tuple)):
        raise ValueError(f"contacts: expected a list of dynamics.Contact, got {contacts!r}")
    ints, floats = np.zeros((len(contacts), 4), np.int64), np.zeros((len(contacts), FLOATS))
    row = 0
    for i, c in enumerate(contacts):
        if not isinstance(c, Contact):
            raise ValueError(f"contacts: item {i} is not a dynamics.Contact: {c!r}")
        try:
            fr = model.frame(c.frame)
        except ValueError as e:
            raise ValueError(f"contacts[{i}]: {e}") from None
        if fr.body < 0:
            raise ValueError(f"contacts[{i}]: frame {c.frame!r} is fixed on the base (world); nothing moves there")
        ints[i] = fr.body, c.dim, REFERENCES[c.reference], row
        floats[i, ROT:ROT + 9] = fr.placement[:3, :3].ravel()
        floats[i, ORIGIN:ORIGIN + 3] = fr.placement[:3, 3]
        floats[i, KP], floats[i, KD] = c.baumgarte
        floats[i, TARGET:TARGET + 3] = c.target
        row += c.dim
    return ints, floats


@allocation_free
def contact_rows(ci):
    """Total number of constraint rows nc of the packed contacts."""
    n = ci.shape[0]
    return 0 if n == 0 else ci[n - 1, ROW] + ci[n - 1, DIM]


@allocation_free
def contact_frames(R, p, ci, cf, Rc, o):
    """World rotation Rc (nc, 3, 3) and origin o (nc, 3) of every contact frame, from the
    joint poses R (n, 3, 3), p (n, 3) of the forward kinematics."""
    for c in range(ci.shape[0]):
        b = ci[c, BODY]
        for r in range(3):
            o[c, r] = p[b, r]
            for k in range(3):
                o[c, r] += R[b, r, k] * cf[c, ORIGIN + k]
                Rc[c, r, k] = R[b, r, 0] * cf[c, ROT + k] + R[b, r, 1] * cf[c, ROT + 3 + k] + R[b, r, 2] * cf[c, ROT + 6 + k]


@allocation_free(inline="always")
def _cross_add(a, ia, b, ib, out, r, scale):
    """out[r:r+3] += scale · a[ia:ia+3] × b[ib:ib+3] (flat 1-d operands)."""
    out[r] += scale * (a[ia + 1] * b[ib + 2] - a[ia + 2] * b[ib + 1])
    out[r + 1] += scale * (a[ia + 2] * b[ib] - a[ia] * b[ib + 2])
    out[r + 2] += scale * (a[ia] * b[ib + 1] - a[ia + 1] * b[ib])


@allocation_free(inline="always")
def _to_local(Rc, c, x, r):
    """x[r:r+3] ← R_cᵀ x[r:r+3]."""
    x0, x1, x2 = x[r], x[r + 1], x[r + 2]
    for k in range(3):
        x[r + k] = Rc[c, 0, k] * x0 + Rc[c, 1, k] * x1 + Rc[c, 2, k] * x2


@allocation_free
def contact_jacobian(topology, S, ci, Rc, o, J, w):
    """J (nc, nv) of eq. 1, every row of every contact; w (6,) scratch."""
    J[:, :] = 0.0
    for c in range(ci.shape[0]):
        r0, dim, local = ci[c, ROW], ci[c, DIM], ci[c, LOCAL]
        j = ci[c, BODY]
        while j >= 0:
            for k in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                # J_k = [S_k,lin + S_k,ang × o; S_k,ang]
                _at_point(S[k], 0, o, c, w, 0)
                w[3], w[4], w[5] = S[k, 0], S[k, 1], S[k, 2]
                if local:
                    _to_local(Rc, c, w, 0)
                    _to_local(Rc, c, w, 3)
                for r in range(dim):
                    J[r0 + r, k] = w[r]
            j = topology[j, PARENT]


@allocation_free
def contact_values(ci, cf, Rc, o, vel, acc, gravity, level, x, w):
    """Write into x (nc,) each contact's velocity (``level`` 1) or its drift γ (``level``
    2: acceleration at the given body accelerations, plus the Baumgarte terms), from the
    body velocities ``vel`` and accelerations ``acc`` (n, 6; acc with a_0 = −[0; g], as the
    RNEA holds it). w (12,) scratch."""
    for c in range(ci.shape[0]):
        b, r0, dim = ci[c, BODY], ci[c, ROW], ci[c, DIM]
        # w[0:3] = u = v_O + ω × o,  w[3:6] = ω
        _at_point(vel[b], 0, o, c, w, 0)
        w[3], w[4], w[5] = vel[b, 0], vel[b, 1], vel[b, 2]
        if level == 2:
            # w[6:9] = s = a_O + α × o (gravity removed),  w[9:12] = α
            _at_point(acc[b], 0, o, c, w, 6)
            for k in range(3):
                w[6 + k] += gravity[k]
                w[9 + k] = acc[b, k]
            if dim == 3:  # classical acceleration s + ω × u
                _cross_add(w, 3, w, 0, w, 6, 1.0)
        _finish(ci, cf, Rc, o, c, w, 6 * (level - 1), x, r0, dim)


@allocation_free(inline="always")
def _finish(ci, cf, Rc, o, c, w, start, x, r0, dim):
    """x[r0:r0+dim] = the contact vector w[start:start+dim] in the contact's axes, plus (for
    the drift, start 6) the Baumgarte terms k_d·(velocity w[0:dim]) + k_p·e."""
    if ci[c, LOCAL]:
        _to_local(Rc, c, w, start)
        _to_local(Rc, c, w, start + 3)
        if start > 0:
            _to_local(Rc, c, w, 0)
            _to_local(Rc, c, w, 3)
    for r in range(dim):
        x[r0 + r] = w[start + r]
    if start > 0:
        kp, kd = cf[c, KP], cf[c, KD]
        for r in range(dim):
            x[r0 + r] += kd * w[r]
        if kp != 0.0:  # e = o − o* (3d only), in the contact's axes
            for r in range(3):
                w[r] = o[c, r] - cf[c, TARGET + r]
            if ci[c, LOCAL]:
                _to_local(Rc, c, w, 0)
            for r in range(3):
                x[r0 + r] += kp * w[r]


# offsets in the flat scratch vector of contact_value_derivatives
SK, RV, RA, DV, DA, TMP, VL = 0, 6, 12, 18, 24, 30, 36      # 6-vectors
XV, XA, E, DO, OUTV, OUTA, BV, BA = 42, 48, 54, 57, 60, 66, 72, 78
SCRATCH = 84


@allocation_free(inline="always")
def _crm(a, ia, b, ib, out, io):
    """out[io:io+6] = a × b, the motion cross product of flat 6-vectors [ω; v]."""
    out[io], out[io + 1], out[io + 2] = 0.0, 0.0, 0.0
    _cross_add(a, ia, b, ib, out, io, 1.0)
    out[io + 3], out[io + 4], out[io + 5] = 0.0, 0.0, 0.0
    _cross_add(a, ia, b, ib + 3, out, io + 3, 1.0)
    _cross_add(a, ia + 3, b, ib, out, io + 3, 1.0)


@allocation_free(inline="always")
def _at_point(x, ix, o, c, out, io):
    """out[io:io+3] = x_lin + x_ang × o[c] for the flat 6-vector x[ix:ix+6] = [x_ang; x_lin]."""
    out[io] = x[ix + 3] + x[ix + 1] * o[c, 2] - x[ix + 2] * o[c, 1]
    out[io + 1] = x[ix + 4] + x[ix + 2] * o[c, 0] - x[ix] * o[c, 2]
    out[io + 2] = x[ix + 5] + x[ix] * o[c, 1] - x[ix + 1] * o[c, 0]


@allocation_free(inline="always")
def _local_derivative(Rc, c, w, d, x, n, turns):
    """w[d:d+n] ← R_cᵀ (w[d:d+n] − ω_k × w[x:x+n]) by blocks of 3 (eq. 6; ω_k = w[SK:SK+3]),
    the −ω_k × x term only if ``turns`` (a q-derivative)."""
    for blk in range(0, n, 3):
        if turns:
            _cross_add(w, SK, w, x + blk, w, d + blk, -1.0)
        _to_local(Rc, c, w, d + blk)


@allocation_free
def contact_value_derivatives(topology, S, ci, cf, Rc, o, vel, acc, gravity, level, out, w):
    """out = [∂x/∂q] (nc, nv) (``level`` 1) or [∂x/∂q, ∂x/∂v] (nc, 2nv) (``level`` 2) of
    :func:`contact_values` (q̈ held fixed) at the body velocities ``vel`` and accelerations
    ``acc`` (n, 6; acc as the RNEA holds it), by eq. 2–6; w (SCRATCH,) scratch. Columns
    off the contacts' supports are zero."""
    nv = S.shape[0]
    out[:, :] = 0.0
    for c in range(ci.shape[0]):
        b = ci[c, BODY]
        _contact_world_values(ci, cf, o, vel, acc, gravity, c, b, w)
        j = b
        while j >= 0:
            lam = topology[j, PARENT]
            for r in range(6):  # v_λ, v_b − v_λ, a_b − a_λ  (a_λ = 0 at the root)
                w[VL + r] = vel[lam, r] if lam >= 0 else 0.0
                w[RV + r] = w[BV + r] - w[VL + r]
                w[RA + r] = w[BA + r] - ((acc[lam, r] + (gravity[r - 3] if r >= 3 else 0.0)) if lam >= 0 else 0.0)
            for k in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                for r in range(6):
                    w[SK + r] = S[k, r]
                # ∂v_b/∂q_k = S_k × (v_b − v_λ),  ∂a_b/∂q_k = S_k × (a_b − a_λ) + (v_λ × S_k) × (v_b − v_λ)
                _crm(w, SK, w, RV, w, DV)
                _crm(w, SK, w, RA, w, DA)
                _crm(w, VL, w, SK, w, TMP)
                _crm(w, TMP, w, RV, w, OUTV)
                for r in range(6):
                    w[DA + r] += w[OUTV + r]
                # ∂o/∂q_k = S_k,lin + S_k,ang × o   (eq. 4)
                _at_point(w, SK, o, c, w, DO)
                _column(ci, cf, Rc, o, c, level, True, w, out, k)
                if level == 2:
                    # ∂v_b/∂v_k = S_k,  ∂a_b/∂v_k = S_k × (v_b − v_λ) + v_j × S_k,  ∂o/∂v_k = 0   (eq. 5)
                    for r in range(6):
                        w[DV + r] = w[SK + r]
                        w[TMP + r] = vel[j, r]
                    _crm(w, SK, w, RV, w, DA)
                    _crm(w, TMP, w, SK, w, OUTV)
                    for r in range(6):
                        w[DA + r] += w[OUTV + r]
                    w[DO], w[DO + 1], w[DO + 2] = 0.0, 0.0, 0.0
                    _column(ci, cf, Rc, o, c, level, False, w, out, nv + k)
            j = lam


@allocation_free(inline="always")
def _contact_world_values(ci, cf, o, vel, acc, gravity, c, b, w):
    """w[BV], w[BA]: v_b and a_b (gravity removed); w[XV] = [u; ω], w[XA] = the contact
    acceleration in world axes (3d: classical; 6d: [s; α]), w[E] = o − o*."""
    for r in range(6):
        w[BV + r] = vel[b, r]
        w[BA + r] = acc[b, r] + (gravity[r - 3] if r >= 3 else 0.0)
    _at_point(w, BV, o, c, w, XV)
    _at_point(w, BA, o, c, w, XA)
    for r in range(3):
        w[XV + 3 + r] = w[BV + r]
        w[XA + 3 + r] = w[BA + r]
        w[E + r] = o[c, r] - cf[c, TARGET + r]
    if ci[c, DIM] == 3:  # classical acceleration s + ω × u
        _cross_add(w, BV, w, XV, w, XA, 1.0)


@allocation_free(inline="always")
def _column(ci, cf, Rc, o, c, level, turns, w, out, k):
    """out[rows of contact c, k] from ∂v_b = w[DV], ∂a_b = w[DA], ∂o = w[DO]: the velocity
    [∂u; ∂ω] (level 1) or the drift's derivative (level 2), in the contact's axes."""
    dim, r0 = ci[c, DIM], ci[c, ROW]
    # ∂u = ∂v_O + ∂ω × o + ω × ∂o,   ∂ω
    _at_point(w, DV, o, c, w, OUTV)
    _cross_add(w, BV, w, DO, w, OUTV, 1.0)
    for r in range(3):
        w[OUTV + 3 + r] = w[DV + r]
    if level == 2:
        # ∂s = ∂a_O + ∂α × o + α × ∂o,   ∂α
        _at_point(w, DA, o, c, w, OUTA)
        _cross_add(w, BA, w, DO, w, OUTA, 1.0)
        for r in range(3):
            w[OUTA + 3 + r] = w[DA + r]
        if dim == 3:  # ∂(s + ω × u) = ∂s + ∂ω × u + ω × ∂u
            _cross_add(w, DV, w, XV, w, OUTA, 1.0)
            _cross_add(w, BV, w, OUTV, w, OUTA, 1.0)
    if ci[c, LOCAL]:
        _local_derivative(Rc, c, w, OUTV, XV, 6, turns)
        if level == 2:
            _local_derivative(Rc, c, w, OUTA, XA, 6, turns)
            _local_derivative(Rc, c, w, DO, E, 3, turns)
    if level == 1:
        for r in range(dim):
            out[r0 + r, k] = w[OUTV + r]
        return
    kp, kd = cf[c, KP], cf[c, KD]
    for r in range(dim):  # Baumgarte: k_d ∂(velocity) + k_p ∂e  (∂e = ∂o, eq. 6 in local axes)
        out[r0 + r, k] = w[OUTA + r] + kd * w[OUTV + r] + (kp * w[DO + r] if r < 3 else 0.0)


@allocation_free
def add_contact_forces(R, p, ci, Rc, o, lam, f):
    """f[b] += the contact forces λ (nc,) as external forces of their bodies b: [f; n] in
    joint b's axes about its origin (Pinocchio's ``fext``, :mod:`dynamics.rnea`), from
    the world force F and moment M about o of each contact (λ rotated by R_c if local)."""
    for c in range(ci.shape[0]):
        b, r0, dim, local = ci[c, BODY], ci[c, ROW], ci[c, DIM], ci[c, LOCAL]
        F0, F1, F2 = _world(Rc, c, lam, r0, local)
        M0, M1, M2 = _world(Rc, c, lam, r0 + 3, local) if dim == 6 else (0.0, 0.0, 0.0)
        # M += (o − p_b) × F: the moment about the joint origin
        x0, x1, x2 = o[c, 0] - p[b, 0], o[c, 1] - p[b, 1], o[c, 2] - p[b, 2]
        M0 += x1 * F2 - x2 * F1
        M1 += x2 * F0 - x0 * F2
        M2 += x0 * F1 - x1 * F0
        for r in range(3):  # f = R_bᵀ F,  n = R_bᵀ M
            f[b, r] += R[b, 0, r] * F0 + R[b, 1, r] * F1 + R[b, 2, r] * F2
            f[b, 3 + r] += R[b, 0, r] * M0 + R[b, 1, r] * M1 + R[b, 2, r] * M2


@allocation_free(inline="always")
def _world(Rc, c, x, r, local):
    """x[r:r+3] in world axes: R_c x[r:r+3] if ``local``, else x[r:r+3]."""
    if not local:
        return x[r], x[r + 1], x[r + 2]
    return (Rc[c, 0, 0] * x[r] + Rc[c, 0, 1] * x[r + 1] + Rc[c, 0, 2] * x[r + 2],
            Rc[c, 1, 0] * x[r] + Rc[c, 1, 1] * x[r + 1] + Rc[c, 1, 2] * x[r + 2],
            Rc[c, 2, 0] * x[r] + Rc[c, 2, 1] * x[r + 1] + Rc[c, 2, 2] * x[r + 2])


@allocation_free
def world_force_derivative(topology, S, ci, J, lam, dtau_dq, w):
    """dtau_dq += the term that makes ID's ∂/∂q hold the forces of world-aligned contacts
    fixed in world axes rather than in their body (how ``f_ext`` turns, :mod:`dynamics.rnea`):
    the body-fixed λ turns by ω_k × λ along column k ⪯ b, so for ID = ... − Jᵀλ,

        ∂ID/∂q_k (world-fixed λ) = ∂ID/∂q_k (body-fixed λ) + J_cᵀ (ω_k × λ_c)   (per 3-block).

    w (6,) scratch."""
    nv = J.shape[1]
    for c in range(ci.shape[0]):
        if ci[c, LOCAL]:
            continue
        r0, dim = ci[c, ROW], ci[c, DIM]
        j = ci[c, BODY]
        while j >= 0:
            for k in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                for blk in range(0, dim, 3):  # w = ω_k × λ_c
                    w[blk] = S[k, 1] * lam[r0 + blk + 2] - S[k, 2] * lam[r0 + blk + 1]
                    w[blk + 1] = S[k, 2] * lam[r0 + blk] - S[k, 0] * lam[r0 + blk + 2]
                    w[blk + 2] = S[k, 0] * lam[r0 + blk + 1] - S[k, 1] * lam[r0 + blk]
                for i in range(nv):
                    s = 0.0
                    for r in range(dim):
                        s += J[r0 + r, i] * w[r]
                    dtau_dq[i, k] += s
            j = topology[j, PARENT]
