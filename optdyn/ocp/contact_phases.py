"""Contact phases and impulses: the interval dynamics of a problem with a contact sequence.

A problem with contacts owns one contact set C_k per interval k = 0 … N−1 (the phase
sequence; Mastalli et al., *Crocoddyl: an efficient and versatile framework for multi-contact
optimal control*, ICRA 2020). Interval k maps

    x_{k+1} = F_k(x_k, u_k) = R_k(Γ_k(x_k), u_k)

where

- R_k is ``substeps`` explicit RK4 (or Euler) steps of the contact dynamics of C_k with
  u_k held: ẋ = [v; q̈(q, v, B u)], M q̈ + b = B u + Jᵀλ, J q̈ + γ = 0
  (:mod:`optdyn.ocp.contact_ode`; on a floating base in the tangent space of each step's
  start, as the free dynamics: :mod:`optdyn.ocp.integrators`);
- Γ_k is the impulse map where interval k gains contacts over interval k−1 (a foot
  touching down): Γ_k(q, v) = [q; v⁺(q, v)] with M(v⁺ − v) = JᵀΛ, J v⁺ = 0 (impulse dynamics
  of all of C_k, restitution 0: :func:`dynamics.impulse_dynamics`); the identity elsewhere
  and at k = 0 (the initial state is given as it is).

Derivatives. With z = (δx, u), δx in the chart of x (x ⊕ δx), Γ moves x along
x ⊕ δx ↦ Γ(x) ⊕ [δq; v⁺(q ⊕ δq, v + δv) − v⁺(q, v)], so in the charts of x and Γ(x)

    P = ∂Γ/∂x = [I 0; ∂v⁺/∂q ∂v⁺/∂v],     ∂²Γ/∂x² = [0; ∂²v⁺/∂x²]

(:func:`dynamics.impulse_dynamics_derivatives`, second order in local coordinates as every
Hessian of the package). The chain rule through F = R ∘ (Γ, id) gives

    F_x = R_x P,   F_u = R_u,
    λᵀF_zz = Gᵀ (λᵀR_zz) G + [μᵀΓ_xx 0; 0 0],   G = [P 0; 0 I],   μ = R_xᵀλ,

where λᵀR_zz is the contracted second-order adjoint of the Runge–Kutta stages
(:func:`optdyn.ocp.integrators.interval_hessian`, with the contracted contact second order
of each stage: :mod:`optdyn.ocp.contact_ode`) and μᵀΓ_xx = Σ_i μ_{nv+i} ∂²v⁺_i/∂x² is one
contracted impulse second order (:func:`dynamics.impulse_dynamics_second_derivatives_contracted`,
weights [μ_v; 0] on [v⁺; Λ]). The analytical derivatives of the contact and impulse
dynamics are those of Carpentier & Mansard, *Analytical derivatives of rigid body dynamics
algorithms* (RSS 2018), in their constrained form. Nothing forms a third-order tensor
except the full tensors of :func:`step_derivatives_batch` (order 2: validation and DDP's
"tensor" mode).

Records: the problem's interval dynamics is a :data:`PhasedDynamics` (the packed contacts
of every phase, the rows of each interval's set, the impulse flags); interval k's own
:data:`~optdyn.ocp.integrators.IntervalDynamics` (:func:`knot_dynamics`) is built from it
in compiled code, so every phase is the same numba type and the kernels compile once. The
compiled entry points of :mod:`optdyn.ocp.shooting` dispatch on the record
(:func:`transition`, :func:`transition_hessian`, :func:`transition_work`); the first-order
pass keeps :data:`PhasedStages` (the stage records of R and, per knot, x_k, P and R_x).

Forces kept: the first Runge–Kutta stage of interval k solves the contact dynamics at
(Γ_k(x_k), B u_k), which gives the contact forces at the interval's start — those the
contact-force residuals constrain. A problem with such residuals has its kernels keep them
(:data:`KnotForces`: λ_k from a step, a rollout or a line search, with λ_z from a
linearisation), and the residuals take them there (:class:`ContactKnots`) instead of solving
the contact dynamics once more.

Consecutive intervals with the same contact set form a phase; :func:`phase_sequence` packs
them once. No contacts in an interval (flight) is a phase too: q̈ is then the free
acceleration, computed by the same contact kernels with no rows.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import numpy as np

import dynamics as dyn_pkg
from dynamics._compile import at_order, njit
from dynamics.contact import Contact, contact_rows, pack_contacts
from dynamics.contact_dynamics import OK, contact_dynamics_passes
from dynamics.contact_dynamics_derivatives import contact_dynamics_derivative_passes
from dynamics.contact_dynamics_second_derivatives_contracted import contact_so_contracted_passes
from dynamics.contact_workspace import new_contact_work
from dynamics.impulse_dynamics import impulse_dynamics_passes
from dynamics.impulse_dynamics_derivatives import impulse_dynamics_derivative_passes
from dynamics.impulse_dynamics_second_derivatives_contracted import impulse_so_contracted_passes
from dynamics.kinematics import tangent_size
from dynamics.model import Model
from dynamics.parallel import first_chunk, next_chunk, run_chunks
from dynamics.rnea_second_derivatives_contracted import new_so_work
from dynamics.spatial import mirror_upper
from dynamics.workspace import new_data

from .contact_ode import DEPENDENT, ContactODE, actuated_torques, place_blocks
from .integrators import IntervalDynamics, interval, interval_hessian_part, interval_work, stage_records, tangent_dim

PhasedDynamics = namedtuple("PhasedDynamics", ["ode", "a", "b", "dt", "substeps", "f_ext", "ci", "cf", "bounds",
                                               "impulse", "forces"])
"""The intervals x_{k+1} = R_k(Γ_k(x_k), u_k) of a problem with contacts (module docstring):
``ode`` a :data:`~optdyn.ocp.contact_ode.ContactODE` with no contacts (the robot: model,
actuation, Lie blocks, damping), the tableau (``a``, ``b``), ``dt``, ``substeps`` and
``f_ext`` as in :data:`~optdyn.ocp.integrators.IntervalDynamics`; the packed contacts of
every phase one after the other (``ci`` (r, 4), ``cf`` (r, FLOATS)), the rows
``bounds[k]`` = [start, end) of interval k's contacts (K, 2) and ``impulse`` (K,) (True
where interval k starts with the impulse map), and ``forces`` the :data:`KnotForces` the
kernels leave the knots' contact forces in (with no rows: none are kept)."""

KnotForces = namedtuple("KnotForces", ["x", "u", "order", "lam", "lam_z"])
"""The contact forces the interval kernels computed at the knots, as
:func:`knot_forces_batch` gives them: row k the knot's (x_k (nx,), u_k (nu,)) they were
computed at, up to which ``order`` (0: λ_k, 1: and λ_z; −1: none), λ_k in ``lam[k, :nc_k]``
(K, nc_max) and its Jacobian through the impulse map in ``lam_z[k, :nc_k]``
(K, nc_max, ndx + nu). An interval's first Runge–Kutta stage solves the contact dynamics at
(Γ_k(x_k), B u_k) — the forces at the interval's start — so the kernels that run it (a step,
a rollout, a line search's forward pass, a linearisation) leave them here for the residuals
on the forces (:class:`ContactKnots`), which then need not solve for them again."""

DAMPING = "contact_damping"
"""The key under which a problem tells its residuals (``check_problem``'s ``shared``) the
damping μ of its contact dynamics (:class:`optdyn.Problem`'s ``contact_damping``)."""

PhasedStages = namedtuple("PhasedStages", ["y", "rk", "xi", "P", "Rx"])
"""What the first-order pass keeps for :func:`transition_hessian`: ``rk`` the Runge–Kutta
stage records (:func:`optdyn.ocp.integrators.stage_records`, m·s rows per knot) and ``y``
its stage inputs (rk.y); per knot k the state x_k (``xi`` (K, nx)), the impulse Jacobian
P_k (``P`` (K, ndx, ndx); the identity without impulse) and R_x at Γ(x_k) (``Rx``
(K, ndx, ndx))."""


# ---- the sequence, from Python --------------------------------------------------------------

def check_contact_sequence(model: Model, contacts, N: int) -> list[list[Contact]]:
    """``contacts`` as N lists of :class:`dynamics.Contact` (one per interval); ValueError
    naming ``contacts`` for a wrong length, a non-contact item, an unknown frame, a frame
    twice in one interval or a held contact whose reference point jumps."""
    if isinstance(contacts, (str, Contact)) or not isinstance(contacts, Sequence):
        raise ValueError(f"contacts: expected one list of dynamics.Contact per interval ({N} lists), "
                         f"got {contacts!r}")
    if len(contacts) != N:
        raise ValueError(f"contacts: expected one list of dynamics.Contact per interval, {N} lists, "
                         f"got {len(contacts)}")
    out = []
    for k, cs in enumerate(contacts):
        if isinstance(cs, Contact) or not isinstance(cs, Sequence):
            raise ValueError(f"contacts[{k}]: expected a list of dynamics.Contact, got {cs!r}")
        for i, c in enumerate(cs):
            if not isinstance(c, Contact):
                raise ValueError(f"contacts[{k}][{i}]: expected a dynamics.Contact, got {c!r}")
            try:
                model.frame(c.frame)
            except ValueError as e:
                raise ValueError(f"contacts[{k}][{i}]: {e}") from None
        frames = [c.frame for c in cs]
        if len(set(frames)) != len(frames):
            raise ValueError(f"contacts[{k}]: a frame is in contact twice in {frames}")
        if out:
            _check_held(out[-1], cs, k)
        out.append(list(cs))
    return out


def _check_held(previous: list[Contact], cs: Sequence[Contact], k: int) -> None:
    """ValueError naming ``contacts[k]`` where a frame in contact over intervals k−1 and k
    changes its reference point (``target``): a foot that stays on the ground cannot move the
    point its position error is measured from."""
    held = {c.frame: c for c in previous}
    for c in cs:
        p = held.get(c.frame)
        if p is not None and p.target != c.target:
            raise ValueError(f"contacts[{k}]: frame {c.frame!r} stays in contact from interval {k - 1} but its "
                             f"reference point (target) would jump from {p.target} to {c.target}; end the "
                             f"contact for an interval to move it")


def phase_sequence(model: Model, contacts: list[list[Contact]]) -> tuple[np.ndarray, ...]:
    """(ci (r, 4), cf (r, FLOATS), bounds (N, 2), impulse (N,)) of :data:`PhasedDynamics` from
    the checked per-interval ``contacts``: consecutive equal sets share one packed phase; an
    interval whose frames are not all in the previous interval's gains contacts (impulse),
    never interval 0."""
    cis, cfs, bounds, impulse, start = [], [], [], [], 0
    previous = None
    for k, cs in enumerate(contacts):
        if previous is None or cs != previous:
            try:
                ci, cf = pack_contacts(model, cs)
            except ValueError as e:
                raise ValueError(f"contacts[{k}]: {e}") from None
            cis.append(ci)
            cfs.append(cf)
            lo, start = start, start + len(cs)
        bounds.append((lo, start))
        gained = previous is not None and bool({c.frame for c in cs} - {c.frame for c in previous})
        impulse.append(gained)
        previous = cs
    ci = np.ascontiguousarray(np.concatenate(cis + [np.zeros((0, 4), np.int64)]), dtype=np.int64)
    cf = np.ascontiguousarray(np.concatenate(cfs + [np.zeros((0, cfs[0].shape[1] if cfs else 17))]))
    return ci, cf, np.array(bounds, dtype=np.int64).reshape(-1, 2), np.array(impulse, dtype=np.bool_)


def impulses_at(impulse: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(n,) the impulses of the intervals ``rows`` of a sequence with impulses ``impulse``:
    each row's own, but none where a row repeats the one before (a held interval gains no
    contacts)."""
    return impulse[rows] & np.r_[True, rows[1:] != rows[:-1]]


def knot_forces_record(K: int, nx: int, nu: int, ndx: int, nc_max: int) -> KnotForces:
    """A :data:`KnotForces` of K knots with nothing kept yet (K = 0: none will be)."""
    return KnotForces(np.empty((K, nx)), np.empty((K, nu)), np.full(K, -1, dtype=np.int64), np.empty((K, nc_max)),
                      np.empty((K, nc_max, ndx + nu)))


def knot_forces_like(kept: KnotForces, K: int) -> KnotForces:
    """A :data:`KnotForces` of K knots shaped as ``kept`` (none if ``kept`` keeps none), nothing kept yet."""
    return knot_forces_record(K if kept.order.size else 0, kept.x.shape[1], kept.u.shape[1],
                              kept.lam_z.shape[2] - kept.u.shape[1], kept.lam.shape[1])


def phased_dynamics(model: Model, actuated: np.ndarray, lie: np.ndarray, a: np.ndarray, b: np.ndarray, dt: float,
                    substeps: int, f_ext: np.ndarray, contacts: list[list[Contact]],
                    damping: float = 0.0, keep_forces: bool = False) -> PhasedDynamics:
    """The :data:`PhasedDynamics` of the checked per-interval ``contacts``; with
    ``keep_forces`` its kernels keep the knots' contact forces (:data:`KnotForces`)."""
    ci, cf, bounds, impulse = phase_sequence(model, contacts)
    ode = ContactODE(model.arrays, actuated, lie, ci[:0].copy(), cf[:0].copy(), float(damping))
    nc_max = max(sum(c.dim for c in cs) for cs in contacts)
    forces = knot_forces_record(len(contacts) if keep_forces else 0, model.nq + model.nv, actuated.size, 2 * model.nv,
                                nc_max)
    return PhasedDynamics(ode, a, b, dt, substeps, f_ext, ci, cf, bounds, impulse, forces)


def sliced(dyn: PhasedDynamics, K: int, start: int) -> PhasedDynamics:
    """``dyn`` for K knots that are intervals start … start + K − 1 (its kept forces: their rows)."""
    rows = slice(start, start + K) if dyn.forces.order.size else slice(0, 0)
    return dyn._replace(bounds=dyn.bounds[start:start + K], impulse=dyn.impulse[start:start + K],
                        forces=KnotForces(*(a[rows] for a in dyn.forces)))


def at_rows(dyn: PhasedDynamics, rows: np.ndarray) -> PhasedDynamics:
    """``dyn`` for the intervals ``rows`` (an index array, repeats allowed) in their order:
    an interval gains contacts (its impulse) only where it follows another (:func:`impulses_at`);
    kept forces start afresh."""
    return dyn._replace(bounds=np.ascontiguousarray(dyn.bounds[rows]), impulse=impulses_at(dyn.impulse, rows),
                        forces=knot_forces_like(dyn.forces, rows.size))


def stage_records_for(dyn: PhasedDynamics, K: int, nx: int, nz: int) -> PhasedStages:
    """:data:`PhasedStages` for K knots."""
    rk = stage_records(dyn.ode, K * dyn.substeps * dyn.b.shape[0], nx, nz, dyn.b.shape[0])
    ndx = nz - dyn.ode.actuated.shape[0]
    return PhasedStages(rk.y, rk, np.empty((K, nx)), np.empty((K, ndx, ndx)), np.empty((K, ndx, ndx)))


# ---- compiled: one knot -----------------------------------------------------------------------

@njit(cache=True, _nrt=True)
def knot_dynamics(dyn, k):
    """The :data:`~optdyn.ocp.integrators.IntervalDynamics` of interval k (its phase's
    :data:`~optdyn.ocp.contact_ode.ContactODE`)."""
    ode = dyn.ode
    b0, b1 = dyn.bounds[k, 0], dyn.bounds[k, 1]
    phase = ContactODE(ode.model, ode.actuated, ode.lie, dyn.ci[b0:b1], dyn.cf[b0:b1], ode.damping)
    return IntervalDynamics(phase, dyn.a, dyn.b, dyn.dt, dyn.substeps, dyn.f_ext)


@njit(cache=True, _nrt=True)
def impulse_map(ode, x, order, xt, P):
    """xt = Γ(x) = [q; v⁺(q, v)] under the contacts of ``ode`` (restitution 0) and, for
    order 1, its Jacobian P (ndx, ndx) (module docstring). ValueError for dependent
    contacts."""
    m = ode.model
    topology = m.topology
    n = tangent_size(topology)
    nq = x.shape[0] - n
    q, v = x[:nq], x[nq:]
    d, cw = new_data(topology), new_contact_work(topology, ode.ci, order, True)
    if order == 0:
        status = impulse_dynamics_passes(m, d, cw, q, v, ode.ci, ode.cf, 0.0, ode.damping)
    else:
        status = impulse_dynamics_derivative_passes(m, d, cw, q, v, ode.ci, ode.cf, 0.0, ode.damping)
    if status != OK:
        raise ValueError(DEPENDENT)
    xt[:nq] = q
    for i in range(n):
        xt[nq + i] = cw.z[i, 0]
    if order == 0:
        return
    P[:] = 0.0
    for i in range(n):
        P[i, i] = 1.0  # q passes unchanged
        for j in range(2 * n):
            P[n + i, j] = cw.Z[i, j]  # ∂v⁺/∂q, ∂v⁺/∂v


@njit(cache=True, _nrt=True)
def impulse_hessian(ode, x, mu_v):
    """(ndx, ndx): Σ_i μ_v,i ∂²v⁺_i/∂x² at x (the contracted impulse second order with
    weights [μ_v; 0] on [v⁺; Λ]; ∂²/∂v² = 0)."""
    m = ode.model
    topology = m.topology
    n = tangent_size(topology)
    nq = x.shape[0] - n
    d, cw, sow = new_data(topology), new_contact_work(topology, ode.ci, 2, True), new_so_work(topology)
    w = np.zeros(n + contact_rows(ode.ci))
    w[:n] = mu_v
    if impulse_so_contracted_passes(m, d, cw, sow, x[:nq], x[nq:], ode.ci, ode.cf, 0.0, ode.damping, w) != OK:
        raise ValueError(DEPENDENT)
    H = np.zeros((2 * n, 2 * n))
    for j in range(n):
        for l in range(n):
            H[j, l] = cw.out[0, j, l]
            H[n + j, n + l] = cw.out[1, j, l]
            H[j, n + l] = H[n + l, j] = cw.out[2, j, l]
    return H


@njit(cache=True, _nrt=True)
def _chain_hessian(ode, x, P, Rx, lam, Hz):
    """Hz ← Gᵀ Hz G + [μᵀΓ_xx 0; 0 0], G = [P 0; 0 I], μ = R_xᵀλ (module docstring)."""
    ndx = P.shape[0]
    n = ndx // 2
    mu = Rx.T.copy() @ lam
    Hxx = np.ascontiguousarray(Hz[:ndx, :ndx])
    Hxu = np.ascontiguousarray(Hz[:ndx, ndx:])
    Pt = P.T.copy()
    Hxx = Pt @ Hxx @ P + impulse_hessian(ode, x, mu[n:].copy())
    Hxu = Pt @ Hxu
    Hz[:ndx, :ndx] = 0.5 * (Hxx + Hxx.T)
    Hz[:ndx, ndx:] = Hxu
    Hz[ndx:, :ndx] = Hxu.T


@njit(cache=True, _nrt=True)
def phased_work(dyn, nx, nu, order):
    """The workspace of :func:`transition` and :func:`transition_hessian` (the interval
    workspace of :mod:`optdyn.ocp.integrators`, shared by every phase; its contact record
    sized for the phase with the most contact rows)."""
    widest, rows = 0, -1
    for k in range(dyn.bounds.shape[0]):
        r = contact_rows(dyn.ci[dyn.bounds[k, 0]:dyn.bounds[k, 1]])
        if r > rows:
            widest, rows = k, r
    return interval_work(knot_dynamics(dyn, widest), nx, nu, order)


@njit(cache=True, _nrt=True)
def _keeps(dyn, k, x, u, order):
    """Whether knot k's forces, computed at (x, u) to ``order``, go into ``dyn.forces``
    (:data:`KnotForces`): where it keeps forces and the interval has contacts, unless the row
    already holds those of (x, u) to a higher order."""
    kept = dyn.forces
    if kept.order.shape[0] == 0 or dyn.bounds[k, 0] == dyn.bounds[k, 1]:
        return False
    if kept.order[k] <= min(order, 1):
        return True
    for i in range(x.shape[0]):
        if kept.x[k, i] != x[i]:
            return True
    for i in range(u.shape[0]):
        if kept.u[k, i] != u[i]:
            return True
    return False


@njit(cache=True, inline="always")
def _force_jacobian(Z, row, nc, act, jump, P, out):
    """out[:nc] (nc, ndx + nu) = ∂λ/∂z of the nc force rows of Z (∂[·]/∂[q, v, τ]) from
    ``row`` on: [λ_q λ_ṽ] P where the interval starts with an impulse ([λ_q λ_v] where it
    does not), then λ_τ B."""
    ndx = P.shape[0]
    n = ndx // 2
    for i in range(nc):
        for j in range(ndx):
            if jump:
                s = 0.0
                for l in range(ndx):
                    s += Z[row + i, l] * P[l, j]
                out[i, j] = s
            else:
                out[i, j] = Z[row + i, j]
        for c in range(act.shape[0]):
            out[i, ndx + c] = Z[row + i, 2 * n + act[c]]


@njit(cache=True, _nrt=True)
def _keep_knot(dyn, k, x, u, order, jump, P, work):
    """Row k of ``dyn.forces`` ← the forces the interval's first stage left in ``work``
    (:data:`~optdyn.ocp.contact_ode.ContactODEWork`) and, for order ≥ 1, their Jacobian
    through the impulse map (P its Jacobian where ``jump``), with (x, u) and the order."""
    kept = dyn.forces
    nc = contact_rows(dyn.ci[dyn.bounds[k, 0]:dyn.bounds[k, 1]])
    for i in range(nc):
        kept.lam[k, i] = work.lam[i]
    if order >= 1:
        _force_jacobian(work.Z, 0, nc, dyn.ode.actuated, jump, P, kept.lam_z[k])
    kept.x[k] = x
    kept.u[k] = u
    kept.order[k] = min(order, 1)


@njit(cache=True, _nrt=True)
def transition(dyn, k, x, u, y, work):
    """y = F_k(x, u) = R_k(Γ_k(x), u); False (y NaN) if a state diverged. Keeps the knot's
    forces (:func:`_keeps`)."""
    kd = knot_dynamics(dyn, k)
    keep = _keeps(dyn, k, x, u, 0)
    work.ode.keep[0] = keep
    xt = x
    if dyn.impulse[k]:
        xt = np.empty_like(x)
        impulse_map(kd.ode, x, 0, xt, work.no_Y)
    ok = interval(kd, k, xt, u, 0, y, work.no_Y, work.no_H, work.no_stages, 0, work)
    if keep and ok:
        _keep_knot(dyn, k, x, u, 0, False, work.no_Y, work.ode)
    return ok


@njit(cache=True, _nrt=True)
def transition_hessian(dyn, k, u, stages, lam, Hz, work):
    """Hz (nz, nz) = ∇²_z(λᵀF_k) at knot k of the trajectory recorded in ``stages``
    (:data:`PhasedStages`), λ = ``lam`` (ndx,)."""
    transition_hessian_part(dyn, k, u, stages, lam, Hz, work, 0, 1)
    transition_hessian_close(dyn, k, stages, lam, Hz)


@njit(cache=True, _nrt=True)
def transition_hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts):
    """Part ``part`` of ``parts`` of the Runge–Kutta interval's Hessian at knot k (upper
    triangle, :func:`~optdyn.ocp.integrators.interval_hessian_part`): the parts summed and
    :func:`transition_hessian_close`'d give :func:`transition_hessian`."""
    interval_hessian_part(knot_dynamics(dyn, k), u, stages.rk, k * dyn.substeps * dyn.b.shape[0], lam, Hz, work,
                          part, parts)


@njit(cache=True, _nrt=True)
def transition_hessian_close(dyn, k, stages, lam, Hz):
    """Hz, the sum of the parts of :func:`transition_hessian_part`, made ∇²_z(λᵀF_k): its upper
    triangle mirrored, then the impulse's chain rule where knot k has one."""
    mirror_upper(Hz)
    if dyn.impulse[k]:
        _chain_hessian(knot_dynamics(dyn, k).ode, stages.xi[k], stages.P[k], stages.Rx[k], lam, Hz)


# ---- whole trajectories (knot k = interval start + k of the sliced record) ----------------------
# Each runs a chunk kernel on the threads of dynamics.parallel.run_chunks: every knot is
# computed by the same code whichever thread claims it, with the thread's own workspace.

def step_batch(dyn, xs, us) -> np.ndarray:
    """x⁺ (K, nx) from every (x_k, u_k); NaN rows where it diverged."""
    out = np.empty(xs.shape)
    run_chunks(_step_chunk, xs.shape[0], dyn, xs, us, out)
    return out


@njit(cache=True, nogil=True, _nrt=True)
def _step_chunk(dyn, xs, us, out, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    work = phased_work(dyn, xs.shape[1], us.shape[1], 0)
    while k0 < k1:
        for k in range(k0, k1):
            transition(dyn, k, xs[k], us[k], out[k], work)
        k0, k1 = next_chunk(claims)


@njit(cache=True, _nrt=True)
def _start(dyn, k, x, order, P):
    """(Γ_k(x), whether there is an impulse), with P = ∂Γ/∂x for order ≥ 1."""
    kd = knot_dynamics(dyn, k)
    if dyn.impulse[k]:
        xt = np.empty_like(x)
        impulse_map(kd.ode, x, 1 if order >= 1 else 0, xt, P)
        return xt, True
    return x.copy(), False


def step_derivatives_batch(dyn, xs, us, order, y, Fz, run=run_chunks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x⁺ (K, nx), Fz (K, ndx, nz) into y and Fz, and for order 2 Fzz (K, ndx, nz, nz) ((K, 0, 0, 0)
    for order 1): the derivatives of F_k = R_k ∘ Γ_k (module docstring; the full impulse
    tensor Γ_xx from nv contractions with unit weights). ``run``: :func:`~dynamics.parallel.run_chunks`,
    or an :class:`~dynamics.parallel.Ahead`'s ``start`` (the outputs written once it is joined)."""
    K, ndx, nz = Fz.shape
    Fzz = np.empty((K, ndx, nz, nz)) if order >= 2 else np.empty((K, 0, 0, 0))
    chunk = _step_second_derivatives_chunk if order >= 2 else _step_derivatives_chunk
    run(chunk, K, dyn, xs, us, y, Fz, Fzz)
    return y, Fz, Fzz


@njit(cache=True, nogil=True, _nrt=True)
def _step_derivatives_chunk(dyn, xs, us, y, Fz, Fzz, claims):
    _derivatives_of_chunks(dyn, xs, us, 1, y, Fz, Fzz, claims)


@njit(cache=True, nogil=True, _nrt=True)
def _step_second_derivatives_chunk(dyn, xs, us, y, Fz, Fzz, claims):
    _derivatives_of_chunks(dyn, xs, us, 2, y, Fz, Fzz, claims)


@njit(cache=True, _nrt=True, literal=("order",))
def _derivatives_of_chunks(dyn, xs, us, order, y, Fz, Fzz, claims):
    """The knots of the chunks claimed from ``claims`` to derivative order ``order``, a
    constant: compiled per order, so that order 1 compiles no second-order code."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    work = phased_work(dyn, xs.shape[1], us.shape[1], order)
    P = np.empty((Fz.shape[1], Fz.shape[1]))
    while k0 < k1:
        for k in range(k0, k1):
            _knot_derivatives(dyn, k, xs[k], us[k], order, y[k], Fz[k], Fzz[k] if order >= 2 else work.no_H, P,
                              work)
        k0, k1 = next_chunk(claims)


@njit(cache=True, _nrt=True, literal=("order",))
def _knot_derivatives(dyn, k, x, u, order, y, Fz, Fzz, P, work):
    """x⁺ into y, F_z into Fz and for order 2 F_zz into Fzz at knot k, through the impulse map
    where the interval starts with one (P (ndx, ndx) its Jacobian, scratch). Keeps the knot's
    forces and their Jacobian (:func:`_keeps`)."""
    ndx = Fz.shape[0]
    kd = knot_dynamics(dyn, k)
    keep = _keeps(dyn, k, x, u, order)
    work.ode.keep[0] = keep
    xt, jump = _start(dyn, k, x, 1, P)
    if interval(kd, k, xt, u, order, y, Fz, Fzz, work.no_stages, 0, work) and keep:
        _keep_knot(dyn, k, x, u, order, jump, P, work.ode)
    if not jump:
        return
    Rx = np.ascontiguousarray(Fz[:, :ndx])
    Fz[:, :ndx] = Rx @ P
    at_order(order, 2, _impulse_second_order, (kd, x, Rx, P, Fzz))


@njit(cache=True, _nrt=True)
def _impulse_second_order(kd, x, Rx, P, Fzz):
    """F_zz of an interval that starts with an impulse, from R's (in Fzz, overwritten):
    Gᵀ R_zz G with the impulse's own second order added through R_v (module docstring)."""
    ndx = Rx.shape[1]
    n = ndx // 2
    Gxx = np.zeros((n, ndx, ndx))  # ∂²v⁺_i/∂x²
    e = np.zeros(n)
    for i in range(n):
        e[i] = 1.0
        Gxx[i] = impulse_hessian(kd.ode, x, e)
        e[i] = 0.0
    Pt = P.T.copy()
    for i in range(ndx):
        Hxx = np.ascontiguousarray(Fzz[i, :ndx, :ndx])
        Hxu = np.ascontiguousarray(Fzz[i, :ndx, ndx:])
        Hxx = Pt @ Hxx @ P
        for j in range(n):
            Hxx += Rx[i, n + j] * Gxx[j]
        Hxu = Pt @ Hxu
        Fzz[i, :ndx, :ndx] = Hxx
        Fzz[i, :ndx, ndx:] = Hxu
        Fzz[i, ndx:, :ndx] = Hxu.T


def step_stages_batch(dyn, xs, us, stages, y, Fz, run=run_chunks) -> tuple[np.ndarray, np.ndarray]:
    """x⁺ (K, nx) and Fz (K, ndx, nz) at every knot into y and Fz, recording into ``stages``
    (:data:`PhasedStages`) what :func:`transition_hessian` needs; ``run`` as
    :func:`step_derivatives_batch` takes it."""
    run(_step_stages_chunk, xs.shape[0], dyn, xs, us, stages, y, Fz)
    return y, Fz


@njit(cache=True, nogil=True, _nrt=True)
def _step_stages_chunk(dyn, xs, us, stages, y, Fz, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    ndx = Fz.shape[1]
    work = phased_work(dyn, xs.shape[1], us.shape[1], 1)
    ms = dyn.substeps * dyn.b.shape[0]
    while k0 < k1:
        for k in range(k0, k1):
            kd = knot_dynamics(dyn, k)
            P = stages.P[k]
            keep = _keeps(dyn, k, xs[k], us[k], 1)
            work.ode.keep[0] = keep
            xt, jump = _start(dyn, k, xs[k], 1, P)
            if not jump:
                P[:] = 0.0
                for i in range(ndx):
                    P[i, i] = 1.0
            stages.xi[k] = xs[k]
            if interval(kd, k, xt, us[k], 1, y[k], Fz[k], work.no_H, stages.rk, k * ms, work) and keep:
                _keep_knot(dyn, k, xs[k], us[k], 1, jump, P, work.ode)
            stages.Rx[k] = Fz[k, :, :ndx]
            if jump:
                Fz[k, :, :ndx] = np.ascontiguousarray(stages.Rx[k]) @ P
        k0, k1 = next_chunk(claims)


def interval_hessians_batch(dyn, us, stages, lams) -> np.ndarray:
    """(K, nz, nz): ∇²_z(λ_kᵀF_k) at every knot, from the records of :func:`step_stages_batch`."""
    K, nz = us.shape[0], stages.rk.G.shape[2]
    Hz = np.empty((K, nz, nz))
    run_chunks(_interval_hessians_chunk, K, dyn, us, stages, lams, Hz)
    return Hz


@njit(cache=True, nogil=True, _nrt=True)
def _interval_hessians_chunk(dyn, us, stages, lams, Hz, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    work = phased_work(dyn, stages.y.shape[1], us.shape[1], 1)
    while k0 < k1:
        for k in range(k0, k1):
            transition_hessian(dyn, k, us[k], stages, lams[k], Hz[k], work)
        k0, k1 = next_chunk(claims)


def knot_forces_batch(dyn, xs, us, order, lam, lam_z) -> None:
    """The contact forces of every knot: λ_k of interval k's contacts at (Γ_k(x_k), B u_k)
    into ``lam[k, :nc_k]`` (K, nc_max), and for order 1 their Jacobian w.r.t. z = (δx, u)
    through the impulse map into ``lam_z[k, :nc_k]`` (K, nc_max, ndx + nu): [λ_q λ_ṽ] P and
    λ_τ B (the constrained derivatives of Carpentier & Mansard, RSS 2018; module docstring).
    ``dyn`` a :data:`PhasedDynamics` (only its robot, contacts, rows and impulses are read).
    Rows past nc_k are left as they are. ValueError for dependent contacts."""
    xs, us = np.ascontiguousarray(xs), np.ascontiguousarray(us)
    run_chunks(_knot_forces_chunk, xs.shape[0], dyn, xs, us, order, lam, lam_z)


@njit(cache=True, nogil=True, _nrt=True)
def _knot_forces_chunk(dyn, xs, us, order, lam, lam_z, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    ndx = tangent_dim(dyn.ode, xs.shape[1])
    P = np.empty((ndx, ndx))
    d = new_data(dyn.ode.model.topology)
    while k0 < k1:
        for k in range(k0, k1):
            _knot_forces(dyn, k, xs[k], us[k], order, lam[k], lam_z, P, d)
        k0, k1 = next_chunk(claims)


@njit(cache=True, _nrt=True)
def _knot_forces(dyn, k, x, u, order, lam, lam_z, P, d):
    """λ_k into lam and for order 1 its Jacobian into lam_z[k] at knot k (:func:`knot_forces_batch`;
    P (ndx, ndx) and the :data:`dynamics.workspace.Data` d are scratch)."""
    m, act = dyn.ode.model, dyn.ode.actuated
    ndx = P.shape[0]
    n, nq = ndx // 2, x.shape[0] - ndx // 2
    phase = knot_dynamics(dyn, k).ode
    ci, cf = phase.ci, phase.cf
    nc = contact_rows(ci)
    if nc == 0:
        return
    xt, jump = _start(dyn, k, x, order, P)
    tau = actuated_torques(act, u, n)
    cw = new_contact_work(m.topology, ci, order, False)
    if order == 0:
        status = contact_dynamics_passes(m, d, cw, xt[:nq], xt[nq:], tau, cw.no_force, ci, cf, phase.damping)
    else:
        status = contact_dynamics_derivative_passes(m, d, cw, xt[:nq], xt[nq:], tau, cw.no_force, ci, cf,
                                                    phase.damping)
    if status != OK:
        raise ValueError(DEPENDENT)
    for i in range(nc):
        lam[i] = cw.z[n + i, 0]
    if order == 0:
        return
    _force_jacobian(cw.Z, n, nc, act, jump, P, lam_z[k])  # cw.Z: ∂[q̈; λ]/∂[q, v, τ]


def knot_force_hessians(dyn, xs, us, knots, W) -> np.ndarray:
    """(S, nz, nz), nz = ndx + nu: H_s = ∇²_z(W_s[:nc_k]ᵀ λ_k) at the knots k = ``knots[s]``
    (S,) of the trajectory (xs, us) (K, ·), z = (δx, u): the contact forces' second order
    contracted with the weights W (S, nc_max) on the nc_k rows of λ_k (the rest of a row of W
    unread) through the impulse map where interval k starts with one — the weights of every
    contact-force residual of a knot at once (:func:`optdyn.ocp.contact_residuals.contact_force_hessians`:
    the contraction is linear in W). ``dyn`` a :data:`PhasedDynamics` (its robot, contacts
    and impulses are read). ValueError for dependent contacts."""
    xs, us, W = np.ascontiguousarray(xs), np.ascontiguousarray(us), np.ascontiguousarray(W)
    nz = tangent_dim(dyn.ode, xs.shape[1]) + us.shape[1]
    H = np.empty((knots.shape[0], nz, nz))
    run_chunks(_knot_force_hessians_chunk, knots.shape[0], dyn, xs, us, knots, W, H)
    return H


@njit(cache=True, nogil=True, _nrt=True)
def _knot_force_hessians_chunk(dyn, xs, us, knots, W, H, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    topology = dyn.ode.model.topology
    ndx = tangent_dim(dyn.ode, xs.shape[1])
    P, d, sow = np.empty((ndx, ndx)), new_data(topology), new_so_work(topology)
    while k0 < k1:
        for s in range(k0, k1):
            k = knots[s]
            _knot_force_hessian(dyn, k, xs[k], us[k], W[s], H[s], P, d, sow)
        k0, k1 = next_chunk(claims)


@njit(cache=True, _nrt=True)
def _knot_force_hessian(dyn, k, x, u, w, H, P, d, sow):
    """H (nz, nz) = ∇²_z(w[:nc]ᵀ λ_k) at knot k, nc the rows of interval k's contacts
    (:func:`knot_force_hessians`): the contracted second order of the contact dynamics in
    z̃ = (δq, δṽ, u) at (Γ_k(x), B u), with weights [0; w[:nc]] on [q̈; λ] (λ is affine in τ:
    its (v, τ) and (τ, τ) blocks vanish), then through the impulse map
    (:func:`_chain_hessian`, with the forces' Jacobian λ_x̃ in place of the interval's).
    P (ndx, ndx), the Data d and the second-order scratch sow are scratch."""
    m, act = dyn.ode.model, dyn.ode.actuated
    ndx = P.shape[0]
    n, nq = ndx // 2, x.shape[0] - ndx // 2
    phase = knot_dynamics(dyn, k).ode
    nc = contact_rows(phase.ci)
    xt, jump = _start(dyn, k, x, 1, P)
    cw = new_contact_work(m.topology, phase.ci, 2, False)
    weights = np.zeros(n + nc)
    weights[n:] = w[:nc]
    if contact_so_contracted_passes(m, d, cw, sow, xt[:nq], xt[nq:], actuated_torques(act, u, n), cw.no_force,
                                    phase.ci, phase.cf, phase.damping, weights) != OK:
        raise ValueError(DEPENDENT)
    H[:] = 0.0
    place_blocks(cw.out, act, n, H)
    if jump:
        _chain_hessian(phase, x, P, np.ascontiguousarray(cw.Z[n:, :ndx]), weights[n:], H)  # laid out as stages.Rx


class ContactKnots:
    """The contact forces of the knots of one sequence at the knots (xs, us) last asked for,
    for the contact-force residuals of a problem (:mod:`optdyn.ocp.contact_residuals`): λ of
    every knot and, once asked for, their Jacobians. A problem gives one to all its
    contact-force residuals (one per foot), so that they get them once, not once per frame, nor
    once for ``value`` and again for ``evaluate``. They come from the forces the problem's own
    kernels kept (:data:`KnotForces` of the dynamics :meth:`watch` names) where those were
    computed at (xs, us), else from one compiled pass over the knots (:func:`knot_forces_batch`).
    It keeps the last knots only, keyed on the model, the residual's contact sequence, impulses
    and actuation, and the bytes of xs and us: residuals of another
    sequence, or a window of the sequence (:meth:`~optdyn.ocp.residuals.Residual.window`: its
    copies share their parent's object), start afresh rather than read knots not theirs. Its
    arrays are overwritten at other knots: a caller takes what it needs at once. Like
    :class:`~optdyn.ocp.residuals.KeptArrays`, it serves one caller at a time."""

    WATCHED = 8
    """How many problems' kept forces it looks in (the latest: an MPC makes a window per step)."""

    def __init__(self) -> None:
        self._key, self._model, self._order = None, None, -1
        self._lam, self._lam_z = np.empty((0, 0)), np.empty((0, 0, 0))
        self._watched: list[tuple[PhasedDynamics, Model]] = []

    def watch(self, dynamics: PhasedDynamics, model: Model) -> None:
        """Look in the forces ``dynamics`` keep (of ``model``): those of a problem with these
        residuals, or of a window of it."""
        others = [(d, m) for d, m in self._watched if d is not dynamics]
        self._watched = others[len(others) + 1 - self.WATCHED:] + [(dynamics, model)]

    def _at(self, residual, xs: np.ndarray, us: np.ndarray) -> None:
        """Forget the knots held unless they are (xs, us) of ``residual``'s sequence."""
        key = (residual.sequence_key, xs.shape, us.shape, xs.tobytes(), us.tobytes())
        if residual.model is not self._model or key != self._key:
            self._key, self._model, self._order = key, residual.model, -1

    def forces(self, residual, xs: np.ndarray, us: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
        """(λ (K, nc_max), and for ``order`` 1 λ_z (K, nc_max, ndx + nu)) at the knots (xs, us)
        of ``residual``'s sequence: row k holds λ_k of interval k's contacts (nc_k rows; the
        rest, and the knots without contacts, unset)."""
        self._at(residual, xs, us)
        if self._order < order:
            shape = (xs.shape[0], residual.nc_max)
            if self._lam.shape != shape:
                self._lam = np.empty(shape)
            if order and self._lam_z.shape != shape + (residual.ndx + residual.nu,):
                self._lam_z = np.empty(shape + (residual.ndx + residual.nu,))
            if not self._take_kept(residual, xs, us, order):
                knot_forces_batch(residual.dynamics, xs, us, order, self._lam, self._lam_z)
            self._order = order
        return self._lam, self._lam_z

    def _take_kept(self, residual, xs: np.ndarray, us: np.ndarray, order: int) -> bool:
        """Whether the forces kept by watched dynamics of ``residual``'s robot and sequence
        hold every knot in contact at (xs, us) to ``order``; if so, copied into the arrays held."""
        mine = residual.dynamics
        on = mine.bounds[:, 1] > mine.bounds[:, 0]  # the knots with contacts
        for dynamics, model in reversed(self._watched):
            kept = dynamics.forces
            if (model is residual.model and kept.order.shape[0] == xs.shape[0] and _same_sequence(dynamics, mine)
                    and np.all(kept.order[on] >= order) and np.array_equal(kept.x[on], xs[on])
                    and np.array_equal(kept.u[on], us[on])):
                self._lam[on] = kept.lam[on]
                if order:
                    self._lam_z[on] = kept.lam_z[on]
                return True
        return False


def _same_sequence(a: PhasedDynamics, b: PhasedDynamics) -> bool:
    """Whether ``a`` and ``b`` have the same contacts, phases, impulses and actuation."""
    return all(np.array_equal(x, y) for x, y in ((a.bounds, b.bounds), (a.impulse, b.impulse), (a.ci, b.ci),
                                                  (a.cf, b.cf), (a.ode.actuated, b.ode.actuated)))


# ---- from Python: the controls holding a pose, the forces at the knots ----------------------------

def _set_key(cs: list[Contact]) -> tuple:
    """What tells a contact set from another (the same set at two intervals has one key)."""
    return tuple((c.frame, c.kind, c.reference, c.baumgarte, c.target) for c in cs)


def check_independent(model: Model, q0: np.ndarray, contacts: list[list[Contact]], damping: float = 0.0) -> None:
    """:class:`dynamics.contact_dynamics.DependentContacts` naming the contacts unless each
    distinct contact set of ``contacts`` is independent at q0 under ``damping`` (once per set)."""
    zero = np.zeros(model.nv)
    for cs in {_set_key(cs): cs for cs in contacts}.values():
        dyn_pkg.contact_dynamics(model, q0, zero, zero, cs, damping=damping)


def rest_controls(model: Model, actuated: np.ndarray, q0: np.ndarray, contacts: list[list[Contact]],
                  damping: float = 0.0) -> np.ndarray:
    """(N, nu): for each interval the controls u of least norm minimising ‖q̈(q0, 0, B u)‖ under
    its contacts, the contact dynamics damped by ``damping`` (q̈ is affine in τ:
    q̈ = q̈(q0, 0, 0) + ∂q̈/∂τ B u; zero where some u holds q0 at rest). Computed once per
    distinct contact set."""
    zero, out, seen = np.zeros(model.nv), [], {}
    for cs in contacts:
        key = _set_key(cs)
        if key not in seen:
            a0 = dyn_pkg.contact_dynamics(model, q0, zero, zero, cs, damping=damping)[0]
            D = dyn_pkg.contact_dynamics_derivatives(model, q0, zero, zero, cs, damping=damping)[2][:, actuated]
            seen[key] = np.linalg.lstsq(D, -a0, rcond=None)[0]
        out.append(seen[key])
    return np.array(out).reshape(len(contacts), actuated.size)


def knot_contact_forces(model: Model, contacts: list[list[Contact]], impulse: np.ndarray, actuated: np.ndarray,
                        xs: np.ndarray, us: np.ndarray, damping: float = 0.0) -> list[np.ndarray]:
    """λ_k (nc_k,) at every knot k = 0 … N−1: the contact dynamics of interval k's contacts at
    (Γ_k(x_k), B u_k) (after the impulse where interval k starts with one)."""
    nq, nv = model.nq, model.nv
    out = []
    for k, cs in enumerate(contacts):
        q, v = xs[k, :nq], xs[k, nq:]
        if not cs:
            out.append(np.zeros(0))
            continue
        if impulse[k]:
            v = dyn_pkg.impulse_dynamics(model, q, v, cs, 0.0, damping)[0]
        tau = np.zeros(nv)
        tau[actuated] = us[k]
        out.append(dyn_pkg.contact_dynamics(model, q, v, tau, cs, damping=damping)[1])
    return out
