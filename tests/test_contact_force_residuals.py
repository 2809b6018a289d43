"""Residuals on the contact forces (issue 40, item 3): ContactForceResidual,
FrictionConeResidual, SmoothFrictionConeResidual, WrenchConeResidual on the legged robot of
:mod:`legged_robot`.

Their Jacobians and contracted Hessians against differences of their own values at a flight
knot, a touchdown knot (through the impulse map) and a stance knot; their values against
``optdyn.report.contact_forces``; the touchdown's chain rule shown necessary; the friction
pyramid's geometry; the wrench cone against a linear program over the sole's corner forces; bad input; a standing problem solved by IPOPT with the friction pyramid
as a constraint, every force inside it. The work shared through a problem's ContactKnots:
one compiled pass over the knots for the residuals of the problem and for value and
evaluate, never another sequence's or other knots'; the forces the dynamics' kernels keep
(those of an interval's first stage) equal to that pass's and taken instead of it, never
stale ones; the compiled second order against the
chain rule evaluated knot by knot with the dynamics' public functions.
"""
from __future__ import annotations

import numpy as np
import pytest
from legged_robot import Q_STAND, legged
from numdiff import richardson, second_differences

import dynamics as dyn
import optdyn
from optdyn import Problem
from optdyn.constraints import ResidualConstraint, ResidualEquality
from optdyn.costs import (ContactForceResidual, ControlCost, ControlResidual, FrictionConeResidual, QuadraticBarrier,
                          RelaxedLogBarrier, ResidualCost, SmoothFrictionConeResidual, StateCost, WrenchConeResidual)
from optdyn.ocp import contact_phases as cp
from optdyn.ocp import contact_residuals as cr
from optdyn.ocp.contact_residuals import ContactKnots, friction_pyramid, wrench_cone

pytestmark = pytest.mark.cost(204)

MODEL = legged()
NQ, NV, NU = MODEL.nq, MODEL.nv, MODEL.nv - 6
FEET = [dyn.Contact(f"foot{i}") for i in range(4)]
X0 = np.r_[Q_STAND, np.zeros(NV)]
# knot 0 flight, 1 touchdown of feet 0 and 1 (impulse), 2 stance, 3 touchdown of foot 2 on a
# frame contact (6d, local axes)
FOOT2_6D = dyn.Contact("foot2", kind="6d", reference="local")
SEQUENCE = [[], FEET[:2], FEET[:2], FEET[:2] + [FOOT2_6D]]


def _knots(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(xs (4, nx), us (4, nu)): random states near the stance, moving, random controls."""
    rng = np.random.default_rng(seed)
    xs = np.stack([np.r_[dyn.integrate(MODEL, Q_STAND, 0.1 * rng.normal(size=NV)), 0.4 * rng.normal(size=NV)]
                   for _ in SEQUENCE])
    return xs, rng.normal(size=(len(SEQUENCE), NU))


def _at_knot(residual, xs, us, k):
    """δz ↦ r_k(x_k ⊕ δx, u_k + δu), the other knots held."""
    prob = Problem(MODEL, X0, N=1, dt=0.05)

    def f(dz):
        x, u = xs.copy(), us.copy()
        x[k] = prob.state_integrate(xs[k], dz[: 2 * NV])
        u[k] = us[k] + dz[2 * NV:]
        return residual.value(x, u)[k]
    return f


RESIDUALS = {
    "force": lambda: ContactForceResidual(MODEL, SEQUENCE, "foot0", reference=np.arange(12.0).reshape(4, 3)),
    "wrench": lambda: ContactForceResidual(MODEL, SEQUENCE, "foot2", reference=np.ones(6)),
    "pyramid": lambda: FrictionConeResidual(MODEL, SEQUENCE, "foot1", mu=0.6, facets=5),
    "pyramid_6d": lambda: FrictionConeResidual(MODEL, SEQUENCE, "foot2", normal=(0.0, 0.3, 1.0)),
    "smooth_cone": lambda: SmoothFrictionConeResidual(MODEL, SEQUENCE, "foot0", mu=0.5, eps=0.5),
    "wrench_cone": lambda: WrenchConeResidual(MODEL, SEQUENCE, "foot2", mu=0.6, half_lengths=(0.1, 0.04)),
}
CASES = [("force", 0), ("force", 1), ("force", 2), ("wrench", 3), ("pyramid", 1), ("pyramid", 2),
         ("pyramid_6d", 3), ("smooth_cone", 1), ("smooth_cone", 2), ("wrench_cone", 3)]


@pytest.mark.parametrize("name,k", CASES)
def test_derivatives_match_differences_of_the_value(name, k):
    """r_x, r_u and the Hessians of ρᵀr in z = (δx, u) at a flight knot (k = 0: all zero), a
    touchdown (k = 1, 3: through the impulse map) and a stance knot (k = 2)."""
    residual = RESIDUALS[name]()
    xs, us = _knots(k)
    t = residual.evaluate(xs, us)
    assert np.array_equal(t.r, residual.value(xs, us))
    f = _at_knot(residual, xs, us, k)
    nz = 2 * NV + NU
    J = richardson(f, np.zeros(nz), 1e-3)
    rho = np.random.default_rng(10 + k).normal(size=(len(SEQUENCE), residual.size))
    Hxx, Hux, Huu = (h[k] for h in t.hessians(rho))
    H = np.block([[Hxx, Hux.T], [Hux, Huu]])
    if k == 0:  # flight: no force
        assert not np.any(t.r[k]) and not np.any(t.rx[k]) and not np.any(t.ru[k]) and not np.any(H)
        assert not np.any(J)
        return
    assert np.max(np.abs(np.hstack([t.rx[k], t.ru[k]]) - J)) < 1e-8 * np.max(np.abs(J))
    H_fd = second_differences(lambda dz: rho[k] @ f(dz), nz, 2e-3)
    assert np.max(np.abs(H - H_fd)) < 1e-6 * np.max(np.abs(H_fd))
    if name != "smooth_cone":
        assert np.max(np.abs(Huu)) == 0.0  # λ is affine in τ, the residual affine in λ


def test_values_are_the_forces_of_the_report():
    """ContactForceResidual (reference 0) gives optdyn.report.contact_forces at the knots in
    contact (after the impulse where there is one), 0 elsewhere; the pyramid is A times them."""
    prob = Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, substeps=2, contacts=SEQUENCE)
    us = prob.us_init + np.random.default_rng(3).normal(size=(prob.N, prob.nu))
    xs = prob.rollout(us, _knots(3)[0][0])
    forces = optdyn.report.contact_forces(prob, xs, us)
    for frame, f in forces.items():
        r = ContactForceResidual(MODEL, SEQUENCE, frame).value(xs[:-1], us)
        assert np.array_equal(r, np.nan_to_num(f, nan=0.0))
        cone = FrictionConeResidual(MODEL, SEQUENCE, frame, mu=0.4, facets=6)
        A = friction_pyramid(0.4, 6)
        assert np.allclose(cone.value(xs[:-1], us), np.nan_to_num(f[:, :3], nan=0.0) @ A.T, rtol=1e-13, atol=1e-12)
    assert np.isnan(forces["foot2"][:3]).all() and np.isfinite(forces["foot2"][3]).all()


def test_a_damped_problems_residuals_read_its_damped_forces():
    """In a problem whose contact dynamics are damped (``contact_damping`` μ: J q̈ + γ = −μλ),
    a contact-force residual gives the damped dynamics' forces, not the rigid ones (μ = 0.05
    moves them by a few percent here), and its Jacobian is the differences of those values."""
    mu, k = 0.05, 2
    residual = ContactForceResidual(MODEL, SEQUENCE, "foot0")
    xs, us = _knots(k)
    rigid = residual.value(xs, us)[k]
    Problem(MODEL, X0, N=len(SEQUENCE), dt=0.05, contacts=SEQUENCE, contact_damping=mu,
            running_cost=ResidualCost(residual))
    damped = residual.value(xs, us)[k]
    q, v, tau = xs[k, :NQ], xs[k, NQ:], np.r_[np.zeros(6), us[k]]
    for m, lam in ((0.0, rigid), (mu, damped)):
        ref = dyn.contact_dynamics(MODEL, q, v, tau, SEQUENCE[k], damping=m)[1][:3]
        np.testing.assert_allclose(lam, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert np.max(np.abs(damped - rigid)) > 1e-3 * np.max(np.abs(rigid))
    t = residual.evaluate(xs, us)
    J = richardson(_at_knot(residual, xs, us, k), np.zeros(2 * NV + NU), 1e-3)
    assert np.max(np.abs(np.hstack([t.rx[k], t.ru[k]]) - J)) < 1e-8 * np.max(np.abs(J))


def test_the_touchdown_needs_the_chain_rule_through_the_impulse():
    """At a touchdown the force is λ(Γ(x), u): the same residual on a sequence that starts in
    that phase (no impulse) has other values and Jacobians at x, those of λ(x, u); at
    x̃ = Γ(x) its Jacobian times P = ∂Γ/∂x is ours, and its Hessian PᵀH̃P misses μᵀΓ_xx."""
    held_sequence = [FEET[:2]] * len(SEQUENCE)
    ours, held = (ContactForceResidual(MODEL, s, "foot0") for s in (SEQUENCE, held_sequence))
    xs, us = _knots(1)
    k = 1
    t, h = ours.evaluate(xs, us), held.evaluate(xs, us)
    assert np.max(np.abs(t.r[k] - h.r[k])) > 1e-3 * np.max(np.abs(t.r[k]))
    assert np.max(np.abs(t.rx[k] - h.rx[k])) > 0.05 * np.max(np.abs(t.rx[k]))
    q, v = xs[k, :NQ], xs[k, NQ:]
    xt = xs.copy()
    xt[k, NQ:] = dyn.impulse_dynamics(MODEL, q, v, FEET[:2])[0]
    P = np.eye(2 * NV)
    P[NV:] = np.hstack(dyn.impulse_dynamics_derivatives(MODEL, q, v, FEET[:2])[:2])
    ht = held.evaluate(xt, us)
    assert np.allclose(ht.r[k], t.r[k], rtol=1e-12) and np.allclose(ht.rx[k] @ P, t.rx[k], rtol=1e-10, atol=1e-9)
    rho = np.random.default_rng(7).normal(size=(len(SEQUENCE), 3))
    Hxx, Hxx_held = t.hessians(rho)[0][k], ht.hessians(rho)[0][k]
    H_fd = second_differences(lambda dz: rho[k] @ _at_knot(ours, xs, us, k)(np.r_[dz, np.zeros(NU)]), 2 * NV, 2e-3)
    tol = 1e-6 * np.max(np.abs(H_fd))
    assert np.max(np.abs(Hxx - H_fd)) < tol
    assert np.max(np.abs(P.T @ Hxx_held @ P - H_fd)) > 1e3 * tol


def test_the_pyramid_is_inside_the_cone_and_touches_it():
    """A f ≤ 0 ⇒ ‖f_t‖ ≤ μ f_n (inner approximation), with equality at the pyramid's edges;
    the rows are facets + 1, the last −f_n."""
    mu, n = 0.6, np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
    for facets in (3, 4, 7):
        A = friction_pyramid(mu, facets, n)
        assert A.shape == (facets + 1, 3) and np.allclose(A[-1], -n)
        f = np.random.default_rng(facets).normal(size=(20000, 3))
        inside = np.all(f @ A.T <= 0.0, axis=1)
        fn = f @ n
        ft = np.linalg.norm(f - fn[:, None] * n, axis=1)
        assert inside.sum() > 100 and np.all(ft[inside] <= mu * fn[inside] + 1e-12)
        # an edge: where two consecutive facets meet, on the cone
        edge = np.cross(A[0], A[1])
        edge *= np.sign(edge @ n)
        assert abs(np.linalg.norm(edge - (edge @ n) * n) - mu * (edge @ n)) < 1e-12
        assert np.max(A[:-1] @ edge) < 1e-12


def test_the_wrench_cone_holds_the_wrenches_of_corner_forces_in_their_pyramids():
    """A w ≤ 0 exactly where a linear program (scipy's HiGHS) finds four forces at the sole's
    corners (±X, ±Y, 0), each in the inscribed pyramid |f_x|, |f_y| ≤ μ cos(π/4) f_z, whose
    wrench about the centre is w = [f; τ] (Caron et al. 2015: the cone is their sum)."""
    from scipy.optimize import linprog
    mu, (X, Y) = 0.7, (0.1, 0.05)
    A, m = wrench_cone(mu, (X, Y)), mu * np.cos(np.pi / 4)
    assert A.shape == (17, 6) and np.array_equal(A[-1], [0, 0, -1, 0, 0, 0])
    corners = [np.array([sx * X, sy * Y, 0.0]) for sx in (1, -1) for sy in (1, -1)]
    G = np.vstack([np.hstack([np.eye(3)] * 4), np.hstack([np.cross(p, np.eye(3)).T for p in corners])])
    pyramids = np.kron(np.eye(4), [[1, 0, -m], [-1, 0, -m], [0, 1, -m], [0, -1, -m]])
    rng = np.random.default_rng(0)
    inside = 0
    for _ in range(400):
        w = rng.normal(size=6) * [0.3, 0.3, 1.0, 0.04, 0.08, 0.03]
        w[2] = abs(w[2])
        lp = linprog(np.zeros(12), A_ub=pyramids, b_ub=np.zeros(16), A_eq=G, b_eq=w,
                     bounds=[(None, None)] * 12, method="highs")
        assert lp.status in (0, 2)  # solved or infeasible
        assert (lp.status == 0) == (np.max(A @ w) <= 1e-12)
        inside += lp.status == 0
    assert 50 < inside < 350  # both sides sampled
    # corner forces on their pyramids' edges, each turning the sole the same way about z: the
    # largest yaw torque, on the cone's boundary (the τ_max row tight), 4 μ cos(π/4) (X + Y) f_z
    F = np.concatenate([[-p[1] / Y * m, p[0] / X * m, 1.0] for p in corners])
    w = G @ F
    assert np.allclose(w, [0, 0, 4, 0, 0, 4 * m * (X + Y)]) and abs(np.max(A @ w)) < 1e-12


def test_the_wrench_cones_rows_in_units_of_a_weight_are_its_shares():
    """Divided by units(W), the rows of a sole carrying the weight W with its centre of
    pressure at (a X, b Y), a tangential force (t_x, t_y) W and no yaw torque are shares of it:
    friction ±t − μ̄, centre of pressure ±b − 1 and ±a − 1 (its distance to each edge as a
    fraction of the half-length), the yaw rows' moments over X + Y, the unilateral −1."""
    r = WrenchConeResidual(MODEL, SEQUENCE, "foot2", mu=0.6, half_lengths=(0.1, 0.04))
    (X, Y), m, W = r.half_lengths, 0.6 * np.cos(np.pi / 4), 37.5
    a, b, tx, ty = 0.3, -0.8, 0.1, -0.2
    w = W * np.array([tx, ty, 1.0, b * Y, -a * X, 0.0])  # τ = p × f for f_z at p = (a X, b Y): (b Y, −a X) f_z
    rows = (r.A @ w) / r.units(W)
    np.testing.assert_allclose(rows[[0, 1, 4, 5]], [tx - m, ty - m, -tx - m, -ty - m], rtol=1e-14)
    np.testing.assert_allclose(rows[[2, 3, 6, 7]], [b - 1, -a - 1, -b - 1, a - 1], rtol=1e-14)
    yaw = [(sx * (Y * tx - m * b * Y) + sy * (X * ty + m * a * X) - m * (X + Y)) / (X + Y)
           for sx in (1, -1) for sy in (1, -1)]  # the rows τ_min ≤ τ_z
    np.testing.assert_allclose(rows[8:16:2], yaw, rtol=1e-13)
    assert rows[16] == -1.0 and np.array_equal(r.units(2.0), 2.0 * r.units(1.0))
    with pytest.raises(ValueError, match=r"^force: "):
        r.units(0.0)


def test_bad_input_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"^mu: expected a finite friction coefficient > 0, got 0"):
        FrictionConeResidual(MODEL, SEQUENCE, "foot0", mu=0)
    with pytest.raises(ValueError, match=r"^mu: "):
        SmoothFrictionConeResidual(MODEL, SEQUENCE, "foot0", mu=-0.5)
    with pytest.raises(ValueError, match=r"^facets: expected an integer ≥ 3, got 2"):
        FrictionConeResidual(MODEL, SEQUENCE, "foot0", facets=2)
    with pytest.raises(ValueError, match=r"^normal: expected a nonzero vector"):
        FrictionConeResidual(MODEL, SEQUENCE, "foot0", normal=(0, 0, 0))
    with pytest.raises(ValueError, match=r"^half_lengths: expected the sole's two half-lengths > 0"):
        WrenchConeResidual(MODEL, SEQUENCE, "foot2", half_lengths=(0.1, 0.0))
    with pytest.raises(ValueError, match=r"^half_lengths: expected shape \(2,\)"):
        WrenchConeResidual(MODEL, SEQUENCE, "foot2", half_lengths=(0.1, 0.05, 0.02))
    with pytest.raises(ValueError, match=r"^frame: 'foot0' is a point contact \(3d\)"):
        WrenchConeResidual(MODEL, SEQUENCE, "foot0")
    with pytest.raises(ValueError, match=r"^mu: "):
        WrenchConeResidual(MODEL, SEQUENCE, "foot2", mu=float("nan"))
    with pytest.raises(ValueError, match=r"^eps: "):
        SmoothFrictionConeResidual(MODEL, SEQUENCE, "foot0", eps=0.0)
    with pytest.raises(ValueError, match=r"^frame: 'foot3' is in contact in no interval of contacts"):
        ContactForceResidual(MODEL, SEQUENCE, "foot3")
    with pytest.raises(ValueError, match=r"^frame: unknown frame 'hand'"):
        ContactForceResidual(MODEL, SEQUENCE, "hand")
    with pytest.raises(ValueError, match=r"^contacts: expected one list of dynamics.Contact per interval"):
        ContactForceResidual(MODEL, [], "foot0")
    with pytest.raises(ValueError, match=r"^contacts\[1\]\[0\]: expected a dynamics.Contact"):
        ContactForceResidual(MODEL, [[], ["foot0"]], "foot0")
    with pytest.raises(ValueError, match=r"^contacts: frame 'foot0' is a 3d contact in some intervals"):
        ContactForceResidual(MODEL, [[FEET[0]], [dyn.Contact("foot0", kind="6d")]], "foot0")
    with pytest.raises(ValueError, match=r"^reference: expected shape \(3,\)"):
        ContactForceResidual(MODEL, SEQUENCE, "foot0", reference=np.zeros(6))
    with pytest.raises(ValueError, match=r"^reference: one reference per knot was given for 3 knots, but 4"):
        ContactForceResidual(MODEL, SEQUENCE, "foot0", reference=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"^actuated: unknown joint"):
        ContactForceResidual(MODEL, SEQUENCE, "foot0", actuated=["elbow"])
    r = ContactForceResidual(MODEL, SEQUENCE, "foot0")
    xs, us = _knots()
    with pytest.raises(ValueError, match=r"^xs: ContactForceResidual holds at the 4 knots of its contact sequence"):
        r.value(xs[:3], us[:3])
    # the problem checks the residual's sequence and actuation against its own
    cost = ResidualCost(r, weight=1e-3)
    with pytest.raises(ValueError, match=r"^running_cost: ContactForceResidual was built for its own contact"):
        Problem(MODEL, X0, N=4, dt=0.05, contacts=[FEET[:2]] * 4, running_cost=cost)
    with pytest.raises(ValueError, match=r"^running_cost: .* the problem has no contacts"):
        Problem(MODEL, X0, N=4, dt=0.05, running_cost=cost)
    with pytest.raises(ValueError, match=r"^path_constraints: FrictionConeResidual was built for actuated DoFs"):
        Problem(MODEL, X0, N=4, dt=0.05, contacts=SEQUENCE, actuated=["hip1", "knee1"],
                path_constraints=[ResidualConstraint(FrictionConeResidual(MODEL, SEQUENCE, "foot0",
                                                                          actuated=["hip0", "knee0"]), upper=0)])
    with pytest.raises(ValueError, match=r"^terminal_cost: ContactForceResidual holds at the running knots"):
        Problem(MODEL, X0, N=4, dt=0.05, contacts=SEQUENCE, terminal_cost=cost)
    Problem(MODEL, X0, N=4, dt=0.05, contacts=list(SEQUENCE), running_cost=cost)  # an equal sequence will do


def test_standing_with_the_friction_pyramid_as_a_constraint():
    """On three feet, touch down with the fourth and raise the base by 2 cm (the standing
    problem of the contact-phase tests): its optimum pushes the feet outwards beyond μ = 0.5;
    IPOPT with the pyramid of every foot as a stage constraint keeps every force inside it."""
    N, mu = 12, 0.5
    seq = [FEET[:3]] * 3 + [FEET] * (N - 3)
    x_ref = X0.copy()
    x_ref[2] += 0.02
    w = np.r_[np.full(6, 10.0), np.full(NV - 6, 1.0), np.full(NV, 0.1)]
    cones = [FrictionConeResidual(MODEL, seq, f.frame, mu=mu) for f in FEET]

    def problem(constraints):
        return Problem(MODEL, X0, N=N, dt=0.05, contacts=seq, path_constraints=constraints,
                       running_cost=StateCost(w, reference=x_ref, model=MODEL) + ControlCost(1e-3, nu=NU),
                       terminal_cost=StateCost(10.0 * w, reference=x_ref, model=MODEL))
    free = optdyn.solve(problem([]), solver="ilqr")
    assert free.converged
    assert max(np.max(c.value(free.xs[:-1], free.us)) for c in cones) > 1.0  # newtons outside
    prob = problem([ResidualConstraint(c, upper=0.0) for c in cones])
    assert prob.ng == 4 * 5 and not prob.nc
    res = optdyn.solve(prob, solver="ipopt")
    assert res.status in ("converged", "acceptable"), res.message
    forces = optdyn.report.contact_forces(prob, res.xs, res.us)
    weight = -MODEL.gravity[2] * sum(MODEL.inertia[:, 0])
    for frame, f in forces.items():
        f = f[~np.isnan(f[:, 0])]
        assert np.all(np.linalg.norm(f[:, :2], axis=1) <= mu * f[:, 2] + 1e-6 * weight)
    assert prob.violation(res.xs, res.us) < 1e-6 * weight
    assert res.cost >= free.cost - 1e-9


def _counted(monkeypatch, module, name: str) -> list:
    """The calls of ``module.name`` from now on (one entry per call), counted by a wrapper."""
    calls, f = [], getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(None)
        return f(*args, **kwargs)
    monkeypatch.setattr(module, name, counting)
    return calls


def _sharing(residuals: list, shared: dict | None = None) -> list:
    """``residuals`` made to share their knots as a problem makes them (through
    ``check_problem`` with one dict of what its residuals share)."""
    shared = {} if shared is None else shared
    for r in residuals:
        r.check_problem(r.contacts, r.actuated, "running_cost", False, shared)
    return residuals


def test_a_problem_makes_its_contact_residuals_share_their_knots():
    """The four feet's pyramids and a force bound of a problem hold one ContactKnots, which
    its windows share; residuals outside a problem have their own."""
    seq = [FEET[:2], FEET[:2], FEET[:3], FEET]
    cones = [FrictionConeResidual(MODEL, seq, f.frame, mu=0.6) for f in FEET]
    assert len({id(c.shared) for c in cones}) == 4
    cost = sum((ResidualCost(c) for c in cones[1:]), ResidualCost(cones[0]))
    prob = Problem(MODEL, X0, len(seq), 0.02, cost, contacts=seq, path_constraints=[ResidualConstraint(
        ContactForceResidual(MODEL, seq, "foot0"), upper=100.0)])
    residuals = prob.running_cost.residuals() + prob.stage_constraints[0].residuals()
    assert len({id(r.shared) for r in residuals}) == 1 and isinstance(residuals[0].shared, ContactKnots)
    window = prob.window(1, 3)
    assert {id(r.shared) for r in window.running_cost.residuals()} == {id(residuals[0].shared)}


def test_the_residuals_of_one_sequence_share_their_knots_and_never_stale_ones(monkeypatch):
    """The four feet's pyramids sharing their knots compute the forces and their Jacobians at
    every knot in one compiled pass, once for the four, and each frame's second order in one
    compiled pass over its knots in contact; they give bit for bit what each gives alone;
    knots that differ in a state, a control or the window are computed afresh."""
    xs, us = _knots(3)
    seq = [FEET[:2], FEET[:2], FEET[:3], FEET]
    cones = _sharing([FrictionConeResidual(MODEL, seq, f.frame, mu=0.6) for f in FEET])

    def alone(i, x, u, rows=None):
        c = FrictionConeResidual(MODEL, seq, FEET[i].frame, mu=0.6)
        c = c if rows is None else c.window(rows)
        t = c.evaluate(x, u)
        return t.r, t.rx, t.ru, t.hessians(np.ones_like(t.r))[0], c.value(x, u)

    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    second = _counted(monkeypatch, cr, "knot_force_hessians")
    together = [c.evaluate(xs, us) for c in cones]
    assert (len(passes), len(second)) == (1, 0)  # every knot at once, for the four frames
    hessians = [t.hessians(np.ones_like(t.r))[0] for t in together]
    assert len(second) == 4  # one pass over its knots in contact per frame
    for i, t in enumerate(together):
        mine = (t.r, t.rx, t.ru, hessians[i], cones[i].value(xs, us))
        for a, b in zip(mine, alone(i, xs, us)):
            np.testing.assert_array_equal(a, b)
    x2, u2 = xs.copy(), us.copy()
    x2[2, -1] += 0.1
    u2[3, 0] += 1.0
    rows = np.array([1, 2, 3, 3])
    for x, u, r in ((x2, us, None), (xs, u2, None), (xs[rows], us[rows], rows)):
        cones[0].evaluate(xs, us), cones[0].value(xs, us)  # the shared knots now hold (xs, us)'s
        c = cones[2] if r is None else cones[2].window(r)
        got = (c.evaluate(x, u).r, c.value(x, u))
        want = alone(2, x, u, r)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[4])
    assert not np.array_equal(alone(2, x2, us)[0], alone(2, xs, us)[0])


def test_two_sequences_evaluated_in_turn_keep_their_own_knots(monkeypatch):
    """Two problems' residuals (two sequences, each sharing within its problem) evaluated in
    turn at the same (xs, us) give each its own forces, and the second round computes nothing
    (no cache of one evicts the other's knots); residuals of both sequences sharing one cache,
    wrongly, still give each its own (the knots are keyed on the sequence too)."""
    xs, us = _knots(4)
    sequences = (SEQUENCE, [FEET[:2]] * len(SEQUENCE))  # the same feet, without the touchdown's impulse

    def fresh(seq):
        r = ContactForceResidual(MODEL, seq, "foot0")
        return r.evaluate(xs, us).rx, r.value(xs, us)
    want = [fresh(seq) for seq in sequences]
    assert not np.allclose(want[0][1], want[1][1])
    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    for one in (False, True):
        shared = {}
        residuals = [_sharing([ContactForceResidual(MODEL, seq, "foot0")], shared if one else None)[0]
                     for seq in sequences]
        assert (residuals[0].shared is residuals[1].shared) == one
        for turn in range(2):
            calls = len(passes)
            for r, (rx, value) in zip(residuals, want):
                np.testing.assert_array_equal(r.evaluate(xs, us).rx, rx)
                np.testing.assert_array_equal(r.value(xs, us), value)
            if turn and not one:
                assert len(passes) == calls


def test_value_and_evaluate_at_the_same_knots_compute_the_forces_once(monkeypatch):
    """value after evaluate at the same knots reuses the knots' forces λ (no pass over the
    knots again, the same values bit for bit); evaluate after value makes the one pass that
    adds the Jacobians, with the same forces."""
    xs, us = _knots(2)
    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    residual = RESIDUALS["pyramid"]()
    t = residual.evaluate(xs, us)
    assert len(passes) == 1
    np.testing.assert_array_equal(residual.value(xs, us), t.r)
    assert len(passes) == 1
    other = RESIDUALS["pyramid"]()
    r = other.value(xs, us)
    assert len(passes) == 2
    np.testing.assert_array_equal(other.evaluate(xs, us).r, r)
    np.testing.assert_array_equal(other.value(xs, us), r)
    assert len(passes) == 3


def _pyramids_problem() -> Problem:
    """SEQUENCE's problem with a friction pyramid cost on each foot in contact."""
    cost = sum((ResidualCost(FrictionConeResidual(MODEL, SEQUENCE, f, mu=0.6)) for f in ("foot1", "foot2")),
               ResidualCost(FrictionConeResidual(MODEL, SEQUENCE, "foot0", mu=0.6)))
    return Problem(MODEL, X0, len(SEQUENCE), 0.02, cost, contacts=SEQUENCE)


def test_the_dynamics_keep_the_forces_the_residuals_pass_computes():
    """A step, a rollout, the first-order pass, the stage-recording pass and the full second
    order each keep, at every knot in contact, the forces of the interval's first stage (and
    from order 1 their Jacobian through the impulse map): bit for bit those of the residuals'
    own pass, with the knot they were computed at; a flight knot keeps nothing; a step at the
    same knots keeps the Jacobians, at other knots replaces them."""
    prob = _pyramids_problem()
    kept, residual = prob.dynamics.forces, prob.running_cost.residuals()[0]
    xs, us = _knots(5)
    lam, lam_z = np.empty_like(kept.lam), np.empty_like(kept.lam_z)
    cp.knot_forces_batch(residual.dynamics, xs, us, 1, lam, lam_z)
    on, rows = [1, 2, 3], [6, 6, 12]

    def check(order, x=xs, u=us):
        assert kept.order[0] == -1 and np.all(kept.order[on] == order)
        np.testing.assert_array_equal(kept.x[on], x[on])
        np.testing.assert_array_equal(kept.u[on], u[on])
        for k, nc in zip(on, rows):
            np.testing.assert_array_equal(kept.lam[k, :nc], lam[k, :nc])
            if order:
                np.testing.assert_array_equal(kept.lam_z[k, :nc], lam_z[k, :nc])
    for make, order in ((lambda: prob.step(xs, us), 0), (lambda: prob.step_derivatives(xs, us), 1),
                        (lambda: prob.step_stages(xs, us), 1), (lambda: prob.step_derivatives(xs, us, True), 1)):
        kept.order[:] = -1
        make()
        check(order)
    prob.step(xs, us)
    check(1)
    xr = prob.rollout(us)
    lam, lam_z = np.empty_like(kept.lam), np.empty_like(kept.lam_z)
    cp.knot_forces_batch(residual.dynamics, xr[:-1], us, 0, lam, lam_z)
    check(0, xr[:-1])


def test_the_residuals_take_the_kept_forces_and_never_stale_ones(monkeypatch):
    """After the problem's first-order pass its pyramids compute no forces of their own and
    give bit for bit what residuals without kept forces give; knots the kernels did not
    compute, or not to the order asked, are computed afresh; a window keeps its own."""
    prob = _pyramids_problem()
    cones = prob.running_cost.residuals()
    (xs, us), other, third = _knots(6), _knots(7)[0], _knots(8)[0]

    def alone(i, x, u, rows=None):
        c = FrictionConeResidual(MODEL, SEQUENCE, cones[i].frame, mu=0.6)
        t = (c if rows is None else c.window(rows)).evaluate(x, u)
        return t.r, t.rx, t.ru
    want, at_other, at_third = [alone(i, xs, us) for i in range(3)], alone(0, other, us), alone(1, third, us)
    in_window = alone(2, xs[1:], us[1:], np.arange(1, 4))
    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    prob.step_derivatives(xs, us)
    for c, w in zip(cones, want):
        t = c.evaluate(xs, us)
        for a, b in zip((t.r, t.rx, t.ru), w):
            np.testing.assert_array_equal(a, b)
    assert len(passes) == 0
    prob.step(other, us)  # kept to order 0 at other knots
    np.testing.assert_array_equal(cones[0].value(other, us), at_other[0])
    assert len(passes) == 0
    np.testing.assert_array_equal(cones[0].evaluate(other, us).rx, at_other[1])
    assert len(passes) == 1  # the Jacobians were not kept
    np.testing.assert_array_equal(cones[1].value(third, us), at_third[0])
    assert len(passes) == 2  # nor the forces at knots no kernel computed
    window = prob.window(1, 3)
    window.step_derivatives(xs[1:], us[1:])
    np.testing.assert_array_equal(window.running_cost.residuals()[2].evaluate(xs[1:], us[1:]).rx, in_window[1])
    assert len(passes) == 2
    assert window.dynamics.forces.x is not prob.dynamics.forces.x and np.array_equal(prob.dynamics.forces.x[3], other[3])


def test_a_rollout_keeping_its_forces_elsewhere_leaves_the_problems_until_adopted(monkeypatch):
    """A kernel given another record (a line search's rollout begun on another thread) keeps
    its forces there and leaves the problem's record as it was; adopted, the residuals take
    them: no pass of their own, the values bit for bit those of a residual without kept forces."""
    from optdyn.ocp.shooting import rollout

    prob = _pyramids_problem()
    cone, us = prob.running_cost.residuals()[1], _knots(9)[1]
    kept, own = prob.forces_record(), prob.dynamics.forces
    own.order[:] = -1
    xs = rollout(prob.dynamics_keeping(kept), X0, us)
    assert np.all(own.order == -1) and np.all(kept.order[1:] == 0) and kept.order[0] == -1
    want = FrictionConeResidual(MODEL, SEQUENCE, cone.frame, mu=0.6).value(xs[:-1], us)
    prob.adopt_forces(kept)
    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    np.testing.assert_array_equal(cone.value(xs[:-1], us), want)
    assert len(passes) == 0 and np.array_equal(own.x[1:], xs[1:-1])


def test_ipopt_takes_the_forces_its_dynamics_kept(monkeypatch):
    """IPOPT evaluates the stage rows at a point after the dynamics there: the constraint
    values after the step (which keeps λ), their Jacobians and Hessians after the first-order
    pass (λ and λ_z), so that the contact-force rows compute no forces of their own; without
    kept forces, the same iterates bit for bit."""
    cones = [ResidualConstraint(FrictionConeResidual(MODEL, SEQUENCE, f, mu=0.6), upper=0.0)
             for f in ("foot0", "foot1", "foot2")]

    def solved():
        prob = Problem(MODEL, X0, len(SEQUENCE), 0.02, ControlCost(1e-3, nu=NU), contacts=SEQUENCE,
                       path_constraints=cones)
        return optdyn.solve(prob, "ipopt", max_iter=3)
    passes = _counted(monkeypatch, cp, "knot_forces_batch")
    kept = solved()
    assert kept.iterations == 3 and len(passes) == 0
    monkeypatch.setattr(ContactKnots, "_take_kept", lambda *args: False)
    own = solved()
    assert len(passes) > 0
    np.testing.assert_array_equal(own.us, kept.us)
    np.testing.assert_array_equal(own.xs, kept.xs)


def test_the_relaxed_log_barrier_is_curved_inside_and_finite_outside():
    """Hauser & Saccon's relaxed barrier: −log(z/δ) inside, a quadratic within δ of a bound,
    C² at z = δ; its derivatives match differences of its value; where the quadratic barrier
    is flat (inside, no curvature), it is curved; a bad δ or a row without a bound is refused."""
    from optdyn.ocp.activations import QuadraticBarrier, RelaxedLogBarrier
    a = RelaxedLogBarrier([-1.0, -np.inf, 0.5], [1.0, 2.0, np.inf], delta=0.3, weights=[1.0, 2.0, 0.5])
    r = np.random.default_rng(1).normal(size=(200, 3)) * 2
    value, grad, hess = a.evaluate(r)
    assert np.all(np.isfinite(value))
    for i in range(3):
        e = np.zeros(3)
        e[i] = 1e-6
        (vp, gp, _), (vm, gm, _) = a.evaluate(r + e), a.evaluate(r - e)
        np.testing.assert_allclose((vp - vm) / 2e-6, grad[:, i], atol=1e-6)
        np.testing.assert_allclose((gp[:, i] - gm[:, i]) / 2e-6, hess[:, i], atol=1e-6)
    one = RelaxedLogBarrier(-np.inf, 0.0, delta=0.3, size=1)
    z = np.array([[-0.3 - 1e-9], [-0.3 + 1e-9]])  # r = −δ ∓ ε: either side of the joint
    v, g, h = one.evaluate(z)
    np.testing.assert_allclose(v, [0.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(g[:, 0], [1 / 0.3, 1 / 0.3], rtol=1e-6)
    np.testing.assert_allclose(h[:, 0], [1 / 0.09, 1 / 0.09], rtol=1e-6)
    inside = np.array([[-2.0]])
    assert QuadraticBarrier(-np.inf, 0.0, size=1).evaluate(inside)[2][0, 0] == 0.0
    assert one.evaluate(inside)[2][0, 0] == pytest.approx(0.25)
    assert one.evaluate(np.array([[1.0]]))[0][0] == pytest.approx(0.5 * ((1.3 + 0.3) ** 2 / 0.09 - 1))
    with pytest.raises(ValueError, match="^delta: expected a number > 0"):
        RelaxedLogBarrier(-np.inf, 0.0, delta=0.0, size=1)
    with pytest.raises(ValueError, match="^lower: every entry needs a finite"):
        RelaxedLogBarrier([-np.inf, 0.0], [np.inf, 1.0])


def _public_second_order(residual, xs, us, rho) -> np.ndarray:
    """∇²_z(ρ_kᵀ r_k) (K, nz, nz) knot by knot from the dynamics' public functions (the chain
    rule of the module docstring): the contact dynamics' contracted second order with
    ρ̂ = φ_fᵀρ congruent with G = blockdiag(P, B), plus μᵀΓ_xx at a touchdown and
    (S λ_z G)ᵀ Φ (S λ_z G) for a curved φ."""
    ndx, nz = 2 * NV, 2 * NV + NU
    out = np.zeros((xs.shape[0], nz, nz))
    for k, cs in enumerate(SEQUENCE):
        row = residual._row[k]
        if row < 0:
            continue
        rows = slice(row, row + residual.dim)
        q, v_minus = xs[k, :NQ], xs[k, NQ:]
        v, P = v_minus, np.eye(ndx)
        if residual.impulses[k]:
            v = dyn.impulse_dynamics(MODEL, q, v_minus, cs)[0]
            P[NV:] = np.hstack(dyn.impulse_dynamics_derivatives(MODEL, q, v_minus, cs)[:2])
        tau = np.r_[np.zeros(6), us[k]]
        F = dyn.contact_dynamics(MODEL, q, v, tau, cs)[1][rows]
        phi_f = np.broadcast_to(residual._outer(F[None], np.array([k]))[1], (1, residual.size, residual.dim))[0]
        rho_hat = phi_f.T @ rho[k]
        w = np.zeros(NV + sum(c.dim for c in cs))
        w[NV + row: NV + row + residual.dim] = rho_hat
        Hqq, Hvv, Hqv, Hqt = dyn.contact_dynamics_second_derivatives_contracted(MODEL, q, v, tau, cs, w)
        H = np.block([[Hqq, Hqv, Hqt[:, 6:]], [Hqv.T, Hvv, np.zeros((NV, NU))],
                      [Hqt[:, 6:].T, np.zeros((NU, NV + NU))]])
        G = np.eye(nz)
        G[:ndx, :ndx] = P
        H = G.T @ H @ G
        lam_q, lam_v, lam_tau = dyn.contact_dynamics_derivatives(MODEL, q, v, tau, cs)[3:]
        if residual.impulses[k]:
            mu = np.r_[lam_v[rows].T @ rho_hat, np.zeros(w.size - NV)]
            Gqq, _, Gqv = dyn.impulse_dynamics_second_derivatives_contracted(MODEL, q, v_minus, cs, mu)
            H[:NV, :NV] += Gqq
            H[:NV, NV:ndx] += Gqv
            H[NV:ndx, :NV] += Gqv.T
        C = residual._outer_curvature(F[None], rho[k][None])
        if C is not None:
            SlG = np.hstack([np.hstack([lam_q[rows], lam_v[rows]]) @ P, lam_tau[rows][:, 6:]])
            H += SlG.T @ C[0] @ SlG
        out[k] = H
    return out


@pytest.mark.parametrize("name", list(RESIDUALS))
def test_the_compiled_second_order_equals_the_public_functions_knot_by_knot(name):
    """The Hessians of ρᵀr from the compiled pass over the knots in contact equal, to
    round-off, the chain rule evaluated knot by knot with the dynamics' public functions (the
    contact dynamics' and impulse dynamics' contracted second orders), at a flight knot, two
    touchdowns (one onto a 6d contact) and a stance knot; on 1 and 2 threads bit for bit."""
    xs, us = _knots(11)
    residual = RESIDUALS[name]()
    rho = np.random.default_rng(12).normal(size=(len(SEQUENCE), residual.size))
    t = residual.evaluate(xs, us)
    n = dyn.get_num_threads()
    try:
        dyn.set_num_threads(1)
        one = t.hessians(rho)
        dyn.set_num_threads(min(2, dyn.parallel.max_threads()))
        for a, b in zip(one, t.hessians(rho)):
            np.testing.assert_array_equal(a, b)
    finally:
        dyn.set_num_threads(n)
    Hxx, Hux, Huu = one
    got = np.concatenate([np.concatenate([Hxx, Hux.transpose(0, 2, 1)], 2), np.concatenate([Hux, Huu], 2)], 1)
    want = _public_second_order(residual, xs, us, rho)
    assert np.abs(want).max() > 0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("name", list(RESIDUALS))
def test_contracted_row_hessians_equal_the_weighted_sum_of_the_rows(name, monkeypatch):
    """A residual constraint's rows' Hessians contracted with weights (a Lagrangian's or a
    penalty's part: one contracted second order of the residual) equal the weighted sum of its
    per-row Hessians, a lower and an upper bound on one entry included, from one evaluation
    of the residual with the first-order terms; so does the problem's stage-constraint
    Hessian."""
    xs, us = _knots(8)
    residual = RESIDUALS[name]()
    c = ResidualConstraint(residual, lower=np.full(residual.size, -1e3), upper=np.full(residual.size, 1e3))
    w = np.random.default_rng(9).normal(size=(xs.shape[0], c.size))
    g, gz, gzz = c.evaluate_knots(xs, us)
    want = np.einsum("kr,krab->kab", w, gzz)
    evaluations = _counted(monkeypatch, residual, "evaluate")
    c_, cz_, hessian = c.contracted_knots(xs, us)
    got = hessian(w)
    assert len(evaluations) == 1  # the first order and the contracted Hessian from one evaluation
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
    assert np.abs(want).max() > 0
    for a, b in zip((c_, cz_), (g, gz)):
        np.testing.assert_array_equal(a, b)
    prob = Problem(MODEL, X0, len(SEQUENCE), 0.02, ControlCost(1.0, nu=NU), contacts=SEQUENCE, path_constraints=[c])
    g, gz, gzz = prob.stage_constraint_terms(xs, us)
    g_, gz_, hessian = prob.stage_constraint_contracted(xs, us)
    for a, b in zip((g_, gz_), (g, gz)):
        np.testing.assert_array_equal(a, b)
    want = np.einsum("kr,krab->kab", w, gzz)
    np.testing.assert_allclose(hessian(w), want, rtol=0, atol=1e-10 * np.abs(want).max())
    with pytest.raises(ValueError, match=r"^weights: expected shape \(4, "):
        hessian(w[:, 1:])


@pytest.mark.parametrize("name", list(RESIDUALS))
def test_knots_without_weight_are_skipped_and_the_others_unchanged(name, monkeypatch):
    """Weights ρ zero at a knot in contact (an inequality's inactive rows in an augmented
    Lagrangian): the compiled pass skips that knot, whose Hessians are zero, and the other
    knots' Hessians are those of the full weights, bit for bit."""
    xs, us = _knots(13)
    residual = RESIDUALS[name]()
    rho = np.random.default_rng(14).normal(size=(len(SEQUENCE), residual.size))
    t = residual.evaluate(xs, us)
    full = t.hessians(rho)
    stance = [k for k in range(len(SEQUENCE)) if np.any(full[0][k])]  # the knots in contact
    assert stance
    zero = rho.copy()
    zero[stance[0]] = 0.0
    calls, compiled = [], cr.knot_force_hessians

    def recording(dyn_, xs_, us_, knots, *rest):
        calls.append(knots.copy())
        return compiled(dyn_, xs_, us_, knots, *rest)
    monkeypatch.setattr(cr, "knot_force_hessians", recording)
    part = t.hessians(zero)
    assert all(stance[0] not in knots for knots in calls) and (len(calls) > 0) == (len(stance) > 1)
    for a, b in zip(full, part):
        assert not np.any(b[stance[0]])
        keep = [k for k in range(len(SEQUENCE)) if k != stance[0]]
        np.testing.assert_array_equal(a[keep], b[keep])


def _all_residuals() -> list:
    """Every kind of contact-force residual on SEQUENCE, sharing their knots as a problem's
    do: two on foot 0, one on foot 1, three on foot 2 (a frame contact at the last knot)."""
    return _sharing([make() for make in RESIDUALS.values()])


def test_the_summed_second_order_is_one_pass_and_the_sum_of_the_parts(monkeypatch):
    """The contact-force residuals of one sequence contract their second orders together: one
    compiled pass over the knots for the sum Σ_j ρ_jᵀ r_j of six residuals on three frames
    (two and three on one frame, a point and a frame contact, a touchdown through the impulse
    map, the smooth cone's curvature), equal to the sum of each residual's own Hessians to
    rounding; a residual of another sequence has another key."""
    xs, us = _knots(21)
    residuals = _all_residuals()
    assert len({r.pool_key for r in residuals}) == 1
    assert ContactForceResidual(MODEL, [FEET[:2]] * len(SEQUENCE), "foot0").pool_key != residuals[0].pool_key
    rng = np.random.default_rng(22)
    parts = [(r.evaluate(xs, us), rng.normal(size=(len(SEQUENCE), r.size))) for r in residuals]
    passes = _counted(monkeypatch, cr, "knot_force_hessians")
    pooled = parts[0][0].pooled.contract([(t.pooled.part, rho) for t, rho in parts])
    assert len(passes) == 1
    alone = [t.hessians(rho) for t, rho in parts]
    assert len(passes) == 1 + len(parts)
    want = tuple(sum(h[i] for h in alone) for i in range(3))
    for got, ref in zip(pooled, want):
        assert np.abs(ref).max() > 0
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    assert not any(np.any(h[0]) for h in pooled)  # the flight knot


def test_the_summed_second_order_equals_differences_of_the_summed_gradient():
    """At a touchdown (through the impulse map) and at a stance knot, the pooled Hessian of
    Σ_j ρ_jᵀ r_j in z = (δx, u) equals the symmetric part of the central differences of its
    gradient Σ_j ρ_jᵀ [r_x r_u](x ⊕ δx, u + δu) (a gradient in the chart at x ⊕ δx: the
    chart's change adds −½ gᵀ[d, e] to the differences, antisymmetric in the directions)."""
    residuals = _all_residuals()
    nz = 2 * NV + NU
    for k, seed in ((1, 23), (2, 24), (3, 25)):
        xs, us = _knots(seed)
        rhos = [np.random.default_rng(seed + 100 + j).normal(size=(len(SEQUENCE), r.size))
                for j, r in enumerate(residuals)]
        terms = [r.evaluate(xs, us) for r in residuals]
        Hxx, Hux, Huu = (h[k] for h in terms[0].pooled.contract([(t.pooled.part, rho)
                                                                 for t, rho in zip(terms, rhos)]))
        H = np.block([[Hxx, Hux.T], [Hux, Huu]])
        prob = Problem(MODEL, X0, N=1, dt=0.05)

        def gradient(dz):
            x, u = xs.copy(), us.copy()
            x[k] = prob.state_integrate(xs[k], dz[: 2 * NV])
            u[k] = us[k] + dz[2 * NV:]
            return sum(rho[k] @ np.hstack([t.rx[k], t.ru[k]])
                       for rho, t in zip(rhos, (r.evaluate(x, u) for r in residuals)))
        D = richardson(gradient, np.zeros(nz), 1e-3)  # D[i, j] = ∂g_i/∂z_j
        H_fd = 0.5 * (D + D.T)
        assert np.abs(H_fd).max() > 0
        np.testing.assert_allclose(H, H_fd, rtol=0, atol=1e-6 * np.abs(H_fd).max())


def test_the_problems_contact_constraints_contract_in_one_pass(monkeypatch):
    """A problem's stage constraints on contact forces (every kind, lower and upper bounds,
    an equality, beside a constraint on another residual) give their contracted Hessian with
    one compiled pass over the knots, equal to the weighted sum of the per-row Hessians and to
    the sum of each constraint's own contracted Hessian, to rounding."""
    xs, us = _knots(26)
    residuals = [make() for make in RESIDUALS.values()]
    constraints = [ResidualConstraint(r, lower=np.full(r.size, -1e3), upper=np.full(r.size, 1e3))
                   for r in residuals[1:]]
    constraints += [ResidualEquality(residuals[0]), ResidualConstraint(ControlResidual(NU), upper=5.0)]
    prob = Problem(MODEL, X0, len(SEQUENCE), 0.02, ControlCost(1.0, nu=NU), contacts=SEQUENCE,
                   path_constraints=constraints)
    w = np.random.default_rng(27).normal(size=(len(SEQUENCE), prob.ng))
    _, _, gzz = prob.stage_constraint_terms(xs, us)
    rows = np.einsum("kr,krab->kab", w, gzz)
    ends = np.cumsum([0] + [c.size for c in constraints])
    each = sum(c.contracted_knots(xs, us, prob.ndx)[2](w[:, a:b]) for c, a, b in zip(constraints, ends[:-1], ends[1:]))
    _, _, hessian = prob.stage_constraint_contracted(xs, us)
    passes = _counted(monkeypatch, cr, "knot_force_hessians")
    got = hessian(w)
    assert len(passes) == 1
    for want in (rows, each):
        assert np.abs(want).max() > 0
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_the_problems_contact_costs_contract_in_one_pass(monkeypatch):
    """A problem's running costs on contact forces (barriers on the cones, a quadratic on a
    force, beside a control cost) add their exact Hessians with one compiled pass over the
    knots, equal to the sum of each cost's own terms (each residual's second order alone) to
    rounding; their Gauss–Newton terms need none."""
    xs, us = _knots(28)
    residuals = [make() for make in RESIDUALS.values()]
    costs = [ResidualCost(residuals[0], weight=0.3), ControlCost(1.0, nu=NU)]
    costs += [ResidualCost(r, RelaxedLogBarrier(-np.inf, 0.0, 0.5, size=r.size), 2.0) for r in residuals[2:4]]
    costs += [ResidualCost(r, QuadraticBarrier(-1.0, 1.0, size=r.size)) for r in (residuals[1], *residuals[4:])]
    total = costs[0]
    for c in costs[1:]:
        total = total + c
    prob = Problem(MODEL, X0, len(SEQUENCE), 0.02, total, contacts=SEQUENCE)
    want = [prob.dt * t for t in total.evaluate(xs, us)]  # the first term's own terms, then each other's added
    passes = _counted(monkeypatch, cr, "knot_force_hessians")
    got = prob.running_cost_terms(xs, us)
    assert len(passes) == 1
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * max(np.abs(b).max(), 1e-300))
    assert np.abs(want[3]).max() > 0 and np.abs(want[4]).max() > 0
    prob.running_cost_terms(xs, us, gauss_newton=True)
    assert len(passes) == 1


def test_the_running_terms_that_read_no_contact_forces_are_expanded_apart(monkeypatch):
    """The running terms in two parts — those that read no contact forces (a control cost,
    which a solver expands while it linearises the dynamics), then those that read the kept
    forces (the pyramids) — add up bitwise to the whole, the second added into the first's
    arrays; the first part asks for no force, the second does."""
    prob = Problem(MODEL, X0, len(SEQUENCE), 0.02, ControlCost(1.0, nu=NU) + _pyramids_problem().running_cost,
                   contacts=SEQUENCE)
    xs, us = _knots(29)
    whole = prob.running_cost_terms(xs, us)
    first = prob.running_cost_terms(xs, us, forces=False)
    assert np.abs(first[5]).max() > 0 and not np.array_equal(first[1], whole[1])  # both parts are there
    both = prob.running_cost_terms(xs, us, out=tuple(a.copy() for a in first), forces=True)
    for a, b in zip(whole, both):
        np.testing.assert_array_equal(a, b)

    def asked(*args, **kwargs):
        raise AssertionError("a contact force was asked for")

    monkeypatch.setattr(ContactKnots, "forces", asked)
    xs2, us2 = _knots(30)
    prob.running_cost_terms(xs2, us2, forces=False)
    with pytest.raises(AssertionError, match="a contact force"):
        prob.running_cost_terms(xs2, us2, forces=True)
