"""Contact phases and impulses in the discrete problem (issue 40, item 1).

A floating body on four 2-DoF legs with point feet (:mod:`legged_robot`): the interval map through
contact phases and touchdown impulses against finite differences of ``Problem.step``
(first order, full second order, contracted Hessians), the impulse at touchdown against
impulse dynamics, a contact-free sequence against the free dynamics, the three solvers on one
standing problem with a touchdown, the contact forces along a trajectory, and bad input.
"""
from __future__ import annotations

import numpy as np
import pytest
from agreement import assert_same_optimum
from legged_robot import Q_STAND, legged
from numdiff import richardson, second_differences

import dynamics as dyn
import optdyn
from optdyn import Problem
from optdyn.costs import ControlCost, StateCost
from optdyn.ocp.contact_phases import PhasedDynamics, knot_contact_forces, knot_forces_batch
from optdyn.ocp.integrators import IntervalDynamics
from optdyn.ocp.shooting import transition_hessian, transition_work
from optdyn.solvers.ddp import linearize
from optdyn.solvers.riccati import SECOND_ORDER, contracted_tensor

MODEL = legged()
NQ, NV = MODEL.nq, MODEL.nv
FEET = [dyn.Contact(f"foot{i}") for i in range(4)]
Q0 = Q_STAND
X0 = np.r_[Q0, np.zeros(NV)]
# flight, touchdown of two feet (impulse), stance on two, touchdown of the third (impulse)
SEQUENCE = [[], FEET[:2], FEET[:2], FEET[:3]]


def _state(seed: int, speed: float = 0.4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = dyn.integrate(MODEL, Q0, 0.1 * rng.normal(size=NV))
    return np.r_[q, speed * rng.normal(size=NV)]


def _problem(**kw) -> Problem:
    return Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, substeps=2, contacts=SEQUENCE, **kw)


def _knot_map(prob: Problem, k: int, x: np.ndarray, u: np.ndarray):
    """δz ↦ F_k(x ⊕ δx, u + δu) ⊖ F_k(x, u) (tangent space at F_k(x, u))."""
    ndx = prob.ndx
    y = prob.step(x[None], u[None], start=k)[0]

    def f(dz):
        x1 = prob.state_integrate(x, dz[:ndx])
        return prob.state_difference(y, prob.step(x1[None], (u + dz[ndx:])[None], start=k)[0])
    return f


@pytest.mark.parametrize("k", [1, 2, 3])
def test_interval_derivatives_through_phases_and_impulses_match_finite_differences(k):
    """F_x, F_u, the full second order and the contracted Hessian λᵀF_zz at a knot with an
    impulse (k = 1, 3) and without (k = 2), against differences of ``Problem.step``."""
    prob = _problem()
    assert prob.impulses.tolist() == [False, True, False, True]
    x, u = _state(k), np.random.default_rng(10 + k).normal(size=prob.nu)
    ndx, nz = prob.ndx, prob.ndx + prob.nu
    f = _knot_map(prob, k, x, u)
    J = richardson(f, np.zeros(nz), 1e-3)
    A, B, Fxx, Fxu, Fuu = (a[0] for a in prob.step_derivatives(x[None], u[None], second_order=True, start=k))
    scale = np.max(np.abs(J))
    assert np.max(np.abs(np.hstack([A, B]) - J)) < 1e-7 * scale
    H_fd = second_differences(f, nz, 2e-3)
    H = np.concatenate([np.concatenate([Fxx, Fxu], 2), np.concatenate([Fxu.transpose(0, 2, 1), Fuu], 2)], 1)
    assert np.max(np.abs(H - H_fd)) < 1e-5 * np.max(np.abs(H_fd))
    if prob.impulses[k]:  # without the impulse's own curvature μᵀΓ_xx the test above fails
        cs = prob.contacts_at(k)
        v_plus = dyn.impulse_dynamics(MODEL, x[:NQ], x[NQ:], cs)[0]
        dv_dq, dv_dv = dyn.impulse_dynamics_derivatives(MODEL, x[:NQ], x[NQ:], cs)[:2]
        G = np.eye(nz)
        G[NV:ndx, :ndx] = np.hstack([dv_dq, dv_dv])
        held = Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, substeps=2, contacts=[cs] * len(SEQUENCE))
        R = held.step_derivatives(np.r_[x[:NQ], v_plus][None], u[None], second_order=True, start=k)[2:]
        R = np.concatenate([np.concatenate([R[0], R[1]], 3), np.concatenate([R[1].transpose(0, 1, 3, 2), R[2]], 3)],
                           2)[0]
        first_order_only = np.einsum("pj,ipq,qk->ijk", G, R, G)
        assert np.max(np.abs(first_order_only - H_fd)) > 1e3 * 1e-5 * np.max(np.abs(H_fd))
        # … which the full impulse tensor (an independent code path) makes up
        Gqq, _, Gqv = (t[:NV] for t in dyn.impulse_dynamics_second_derivatives(MODEL, x[:NQ], x[NQ:], cs))
        Gxx = np.zeros((NV, nz, nz))
        Gxx[:, :NV, :NV], Gxx[:, :NV, NV:ndx], Gxx[:, NV:ndx, :NV] = Gqq, Gqv, Gqv.transpose(0, 2, 1)
        Rx = held.step_derivatives(np.r_[x[:NQ], v_plus][None], u[None], start=k)[0][0]
        full = first_order_only + np.einsum("ij,jpq->ipq", Rx[:, NV:], Gxx)
        assert np.max(np.abs(full - H_fd)) < 1e-5 * np.max(np.abs(H_fd))
    A1, B1 = (a[0] for a in prob.step_derivatives(x[None], u[None], start=k))
    assert np.max(np.abs(A1 - A)) == 0.0 and np.max(np.abs(B1 - B)) == 0.0
    lam = np.random.default_rng(20 + k).normal(size=ndx)
    A2, B2, stages = prob.step_stages(x[None], u[None], start=k)
    assert np.max(np.abs(A2 - A)) < 1e-12 * np.max(np.abs(A))
    Hc = prob.step_hessians(x[None], u[None], lam[None], stages, start=k)[0]
    ref = np.einsum("i,ijk->jk", lam, H)
    assert np.max(np.abs(Hc - ref)) < 1e-9 * np.max(np.abs(ref))
    assert np.array_equal(Hc, Hc.T)


@pytest.mark.parametrize("k", [1, 2])
def test_damped_contact_dynamics_and_their_derivatives_through_the_problem(k):
    """``contact_damping`` μ reaches the intervals (J q̈ + γ = −μλ, and the impulse map's
    damped counterpart at a touchdown, k = 1): the step differs from the rigid one, F_x, F_u
    and the contracted Hessian λᵀF_zz match differences of the damped ``Problem.step``, and
    the knot forces are the damped contact dynamics'."""
    mu = 0.05
    prob, rigid = _problem(contact_damping=mu), _problem()
    assert prob.contact_damping == mu and rigid.contact_damping == 0.0
    x, u = _state(k), np.random.default_rng(10 + k).normal(size=prob.nu)
    y, y0 = prob.step(x[None], u[None], start=k)[0], rigid.step(x[None], u[None], start=k)[0]
    assert np.max(np.abs(prob.state_difference(y0, y))) > 1e-4
    ndx, nz = prob.ndx, prob.ndx + prob.nu
    f = _knot_map(prob, k, x, u)
    J = richardson(f, np.zeros(nz), 1e-3)
    A, B, stages = prob.step_stages(x[None], u[None], start=k)
    assert np.max(np.abs(np.hstack([A[0], B[0]]) - J)) < 1e-7 * np.max(np.abs(J))
    lam = np.random.default_rng(20 + k).normal(size=ndx)
    Hc = prob.step_hessians(x[None], u[None], lam[None], stages, start=k)[0]
    H_fd = second_differences(lambda dz: lam @ f(dz), nz, 2e-3)
    assert np.max(np.abs(Hc - H_fd)) < 1e-5 * np.max(np.abs(H_fd))
    q, v, cs = x[:NQ], x[NQ:], prob.contacts_at(k)
    if prob.impulses[k]:
        v = dyn.impulse_dynamics(MODEL, q, v, cs, 0.0, mu)[0]
    ref = dyn.contact_dynamics(MODEL, q, v, prob.actuation @ u, cs, damping=mu)[1]
    forces = optdyn.report.contact_forces(prob, np.stack([x] * (prob.N + 1)), np.stack([u] * prob.N))
    np.testing.assert_allclose(np.concatenate([forces[c.frame][k] for c in cs]), ref, rtol=1e-12, atol=1e-12)


def test_bad_contact_damping_is_refused_naming_it():
    for bad in (-1e-3, float("nan"), float("inf"), "1e-3", True, None):
        with pytest.raises(ValueError, match=r"^contact_damping: expected a finite number ≥ 0, got "):
            _problem(contact_damping=bad)
    with pytest.raises(ValueError, match=r"^contact_damping: 0.001 regularises contacts, and the problem has none"):
        Problem(MODEL, X0, N=2, dt=0.05, contact_damping=1e-3)


def test_the_compiled_knot_forces_match_the_contact_dynamics_and_their_differences():
    """λ_k at every knot of a sequence with flight, impulses and stance (compiled, over the
    knots) equals the contact dynamics of the public functions after the impulse map, and its
    Jacobian w.r.t. (δx, u) — through the impulse map where there is one — equals differences
    of that function; order 0 gives the same forces."""
    prob = _problem()
    K, ndx, nu = prob.N, prob.ndx, prob.nu
    xs = np.stack([_state(30 + k) for k in range(K)])
    us = np.random.default_rng(7).normal(size=(K, nu))
    lam, lam_z, lam0 = np.full((K, 9), np.nan), np.full((K, 9, ndx + nu), np.nan), np.full((K, 9), np.nan)
    knot_forces_batch(prob.dynamics, xs, us, 1, lam, lam_z)
    knot_forces_batch(prob.dynamics, xs, us, 0, lam0, np.empty((K, 0, 0)))

    def forces(k, x, u):
        return knot_contact_forces(MODEL, [SEQUENCE[k]], prob.impulses[k:k + 1], prob.actuated, x[None], u[None])[0]
    for k, cs in enumerate(SEQUENCE):
        nc = 3 * len(cs)
        assert np.all(np.isnan(lam[k, nc:])) and np.array_equal(lam0[k, :nc], lam[k, :nc])
        if not nc:
            continue
        ref = forces(k, xs[k], us[k])
        np.testing.assert_allclose(lam[k, :nc], ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        J = richardson(lambda dz: forces(k, prob.state_integrate(xs[k], dz[:ndx]), us[k] + dz[ndx:]),
                       np.zeros(ndx + nu), 1e-4)
        assert np.max(np.abs(lam_z[k, :nc] - J)) < 1e-6 * np.max(np.abs(J)), k


def test_ddp_sees_the_same_second_order_contracted_and_as_tensors():
    """DDP's V'_x·F_zz through the compiled entry points (shooting.transition_hessian on the
    phased record and its stage records) equals the contraction of the full tensors, at
    every knot of a rollout: flight, touchdowns (impulses) and stance."""
    prob = _problem()
    rng = np.random.default_rng(4)
    us = prob.us_init + 0.5 * rng.normal(size=(prob.N, prob.nu))
    xs = prob.rollout(us)
    assert np.isfinite(xs).all()
    _, _, contracted = linearize(prob, xs, us, SECOND_ORDER["contracted"])
    _, _, tensor = linearize(prob, xs, us, SECOND_ORDER["tensor"])
    work = transition_work(prob.dynamics, prob.nx, prob.nu, 1)
    H1, H2 = np.empty((2, prob.ndx + prob.nu, prob.ndx + prob.nu))
    for k in range(prob.N):
        Vx = rng.normal(size=prob.ndx)
        transition_hessian(contracted.dynamics, k, us[k], contracted.stages, Vx, H1, work)
        contracted_tensor(tensor.Fzz, k, Vx, H2)
        assert np.abs(H1 - H2).max() <= 1e-9 * np.abs(H2).max()


def test_the_derivatives_can_fail():
    """The comparison above sees a wrong impulse: the same knot without its impulse map
    (a problem whose sequence starts in that phase) has other derivatives."""
    prob = _problem()
    held = Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, substeps=2, contacts=[FEET[:2]] * 4)
    x, u = _state(1), np.zeros(prob.nu)
    A = prob.step_derivatives(x[None], u[None], start=1)[0][0]
    A_held = held.step_derivatives(x[None], u[None], start=1)[0][0]
    assert np.max(np.abs(A - A_held)) > 1e-2 * np.max(np.abs(A))


def test_touchdown_passes_the_impulse_map_first():
    """At a knot that gains contacts, F(x, u) = R(Γ(x), u): the same interval started from
    [q; v⁺] without an impulse; v⁺ stops the feet (J v⁺ = 0) and they stay still over the
    interval (the contact dynamics keeps J v = 0, up to the integrator's error)."""
    prob = _problem()
    x, u = _state(5), np.zeros(prob.nu)
    v_plus, _ = dyn.impulse_dynamics(MODEL, x[:NQ], x[NQ:], FEET[:2])
    held = Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, substeps=2, contacts=[FEET[:2]] * 4)
    y = prob.step(x[None], u[None], start=1)[0]
    y_held = held.step(np.r_[x[:NQ], v_plus][None], u[None], start=1)[0]
    assert np.max(np.abs(y - y_held)) < 1e-14 * np.max(np.abs(y))
    for c in FEET[:2]:
        J = dyn.frame_jacobian(MODEL, x[:NQ], c.frame)[:3]
        assert np.linalg.norm(J @ v_plus) < 1e-10
        assert np.linalg.norm(J @ x[NQ:]) > 1e-2  # it did move before the impact
        J1 = dyn.frame_jacobian(MODEL, y[:NQ], c.frame)[:3]
        assert np.linalg.norm(J1 @ y[NQ:]) < 1e-3
    assert not prob.impulses[0]  # interval 0 never starts with one
    us = np.zeros((4, prob.nu))
    xs = prob.rollout(us, x)
    assert np.array_equal(xs[1:], prob.step(xs[:-1], us))


def test_a_sequence_without_contacts_is_the_free_problem():
    """contacts=[[]]·N runs the contact kernels with no rows: the free dynamics again (to
    rounding), while a problem without ``contacts`` keeps the free record and kernels."""
    free = Problem(MODEL, X0, N=3, dt=0.05, substeps=2)
    flight = Problem(MODEL, X0, N=3, dt=0.05, substeps=2, contacts=[[], [], []])
    assert isinstance(free.dynamics, IntervalDynamics) and free.contacts is None
    assert isinstance(flight.dynamics, PhasedDynamics) and not flight.impulses.any()
    assert free.contacts_at(1) == [] and flight.contacts_at(2) == []
    xs = np.stack([_state(s) for s in range(3)])
    us = np.random.default_rng(0).normal(size=(3, free.nu))
    lam = np.random.default_rng(1).normal(size=(3, free.ndx))
    a, b = free.step(xs, us), flight.step(xs, us)
    assert np.max(np.abs(a - b)) < 1e-12
    second = [p.step_derivatives(xs, us, second_order=True) for p in (free, flight)]
    for p, q in zip(*second):
        assert np.max(np.abs(p - q)) < 1e-9 * max(1.0, np.max(np.abs(p)))
    Ha, Hb = free.step_hessians(xs, us, lam), flight.step_hessians(xs, us, lam)
    assert np.max(np.abs(Ha - Hb)) < 1e-9 * np.max(np.abs(Ha))


@pytest.fixture(scope="module")
def standing():
    """On three feet, touch down with the fourth at k = 3 and raise the base by 2 cm, from the
    controls that hold the start at rest (the default guess)."""
    N = 12
    seq = [FEET[:3]] * 3 + [FEET] * (N - 3)
    x_ref = X0.copy()
    x_ref[2] += 0.02
    w = np.r_[np.full(6, 10.0), np.full(NV - 6, 1.0), np.full(NV, 0.1)]
    prob = Problem(MODEL, X0, N=N, dt=0.05, contacts=seq,
                   running_cost=StateCost(w, reference=x_ref, model=MODEL) + ControlCost(1e-3, nu=NV - 6),
                   terminal_cost=StateCost(10.0 * w, reference=x_ref, model=MODEL))
    return prob, {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}


def test_ddp_ilqr_and_ipopt_reach_the_same_optimum_with_contacts(standing):
    prob, res = standing
    xs = prob.rollout(prob.us_init)  # the default guess holds x0 (on two feet, then three)
    assert np.max(np.abs(prob.state_difference(xs, np.tile(X0, (prob.N + 1, 1))))) < 1e-8
    assert prob.impulses.tolist() == [False] * 3 + [True] + [False] * 8
    assert_same_optimum(res)
    for r in res.values():
        assert np.max(np.abs(prob.rollout(r.us) - r.xs)) < 1e-6


def test_contact_forces_at_the_knots(standing):
    prob, res = standing
    r = res["ddp"]
    forces = optdyn.report.contact_forces(prob, r.xs, r.us)
    assert sorted(forces) == ["foot0", "foot1", "foot2", "foot3"]
    assert all(f.shape == (prob.N, 3) for f in forces.values())
    assert np.isnan(forces["foot3"][:3]).all() and np.isfinite(forces["foot3"][3:]).all()
    assert np.isfinite(forces["foot0"]).all()
    for k in (0, 3, 7):
        q, v = r.xs[k, :NQ], r.xs[k, NQ:]
        cs = prob.contacts_at(k)
        if prob.impulses[k]:
            v = dyn.impulse_dynamics(MODEL, q, v, cs)[0]
        tau = prob.actuation @ r.us[k]
        lam = dyn.contact_dynamics(MODEL, q, v, tau, cs)[1]
        assert np.allclose(np.concatenate([forces[c.frame][k] for c in cs]), lam, rtol=1e-12, atol=1e-12)
    # standing nearly still: the feet carry the weight
    weight = -MODEL.gravity[2] * sum(MODEL.inertia[:, 0])
    assert abs(sum(forces[f][-1, 2] for f in forces) - weight) < 0.05 * weight
    assert optdyn.report.contact_forces(Problem(MODEL, X0, N=2, dt=0.1), r.xs[:3], r.us[:2]) == {}


def test_bad_contact_sequences_are_refused_naming_contacts():
    with pytest.raises(ValueError, match=r"^contacts: expected one list .* 4 lists, got 3"):
        Problem(MODEL, X0, N=4, dt=0.05, contacts=SEQUENCE[:3])
    with pytest.raises(ValueError, match=r"^contacts\[1\]\[0\]: frame: unknown frame 'hand'"):
        Problem(MODEL, X0, N=2, dt=0.05, contacts=[[], [dyn.Contact("hand")]])
    with pytest.raises(ValueError, match=r"^contacts\[0\]: expected a list of dynamics.Contact"):
        Problem(MODEL, X0, N=2, dt=0.05, contacts=[FEET[0], []])
    with pytest.raises(ValueError, match=r"^contacts\[1\]\[1\]: expected a dynamics.Contact"):
        Problem(MODEL, X0, N=2, dt=0.05, contacts=[[], [FEET[0], "foot1"]])
    with pytest.raises(ValueError, match=r"^contacts\[0\]: a frame is in contact twice"):
        Problem(MODEL, X0, N=1, dt=0.05, contacts=[[FEET[0], FEET[0]]])
    with pytest.raises(ValueError, match=r"^contacts: expected one list"):
        Problem(MODEL, X0, N=1, dt=0.05, contacts=FEET[0])
    moved = dyn.Contact("foot0", target=(0.0, 0.1, 0.0))
    with pytest.raises(ValueError, match=r"^contacts\[2\]: frame 'foot0' stays in contact .* would jump"):
        Problem(MODEL, X0, N=3, dt=0.05, contacts=[[], FEET[:1], [moved]])
    Problem(MODEL, X0, N=3, dt=0.05, contacts=[FEET[:1], [], [moved]])  # lifted in between: allowed
    with pytest.raises(ValueError, match=r"^f_ext: .*not supported together with contacts"):
        Problem(MODEL, X0, N=1, dt=0.05, contacts=[FEET], f_ext=np.zeros((MODEL.njoints, 6)))
    with pytest.raises(ValueError, match=r"^k: expected an interval 0 … 3"):
        _problem().contacts_at(4)
    with pytest.raises(ValueError, match=r"^start: the problem's contacts vary per interval"):
        _problem().step(X0[None], np.zeros((1, NV - 6)), start=4)
