"""Optimal control with a floating base: the state manifold, its sensitivities, the solvers
on the space manipulator, momentum conservation and bad input."""
import numpy as np
import pytest
from agreement import assert_same_optimum
from momentum import world_momentum
from numdiff import central

import dynamics as dyn
import optdyn
import problems
from optdyn import Problem
from optdyn.ocp.constraints import OrientationBound
from optdyn.costs import FramePositionCost, StateCost
from optdyn.solvers.ipopt import MultipleShootingNLP

MODEL = dyn.models.space_manipulator()
NQ, NV = MODEL.nq, MODEL.nv


def _state(seed, speed=0.6):
    rng = np.random.default_rng(seed)
    return np.concatenate([dyn.random_configuration(MODEL, rng), speed * rng.normal(size=NV)])


def _hessian_fd(f, n, h=4e-3):
    """Second differences of f (R^n → R^m) at 0, Richardson-extrapolated (O(h⁴)): (m, n, n).
    (h balances truncation against the ~1e-10 rounding of one RK4 interval on the manifold.)"""
    def second(h):
        E = np.eye(n) * h
        H = np.empty((np.size(f(np.zeros(n))), n, n))
        for i in range(n):
            for j in range(i, n):
                d = f(E[i] + E[j]) - f(E[i] - E[j]) - f(E[j] - E[i]) + f(-E[i] - E[j])
                H[:, i, j] = H[:, j, i] = d / (4 * h * h)
        return H
    return (4.0 * second(h / 2) - second(h)) / 3.0


def _problem(x0, **kw):
    return Problem(MODEL, x0, N=2, dt=0.1, substeps=2, **kw)


def test_state_integrate_and_difference_are_inverse_and_reduce_to_vector_ops():
    prob = _problem(_state(0))
    x, y = _state(1), _state(2)
    d = prob.state_difference(x, y)
    assert d.shape == (2 * NV,)
    assert np.allclose(prob.state_difference(y, prob.state_integrate(x, d)), 0.0, atol=1e-12)  # q ≡ −q
    assert np.allclose(d[NV:], y[NQ:] - x[NQ:])  # velocities: a vector space
    assert np.allclose(d[6:NV], y[7:NQ] - x[7:NQ])  # the arm's revolute joints: plain differences
    ur5 = dyn.models.ur5()
    fixed = Problem(ur5, np.zeros(12), N=2, dt=0.1)
    a, b = np.arange(12.0), np.linspace(-1, 1, 12)
    assert np.array_equal(fixed.state_difference(a, b), b - a) and np.array_equal(fixed.state_integrate(a, b), a + b)


def test_interval_sensitivities_on_the_manifold_against_finite_differences():
    """First order, the full second order and the contracted Hessian of one interval (2 RK4
    steps) of the space manipulator, against differences of δ ↦ F(x ⊕ δx, u + δu) ⊖ F(x, u)."""
    x = _state(3)
    prob = _problem(x)
    u = np.random.default_rng(4).normal(size=(1, prob.nu)) * 5.0
    nd = prob.ndx
    A, B, Fxx, Fxu, Fuu = prob.step_derivatives(x[None], u, second_order=True)
    y = prob.step(x[None], u)[0]

    def F(z):
        return prob.state_difference(y, prob.step(prob.state_integrate(x, z[:nd])[None], u + z[nd:])[0])

    z0 = np.zeros(nd + prob.nu)
    Fz = np.concatenate([A[0], B[0]], axis=1)
    assert np.allclose(Fz, central(F, z0, 1e-6), atol=1e-7)
    Fzz = np.empty((nd, nd + prob.nu, nd + prob.nu))
    Fzz[:, :nd, :nd], Fzz[:, :nd, nd:], Fzz[:, nd:, nd:] = Fxx[0], Fxu[0], Fuu[0]
    Fzz[:, nd:, :nd] = Fxu[0].transpose(0, 2, 1)
    ref = _hessian_fd(F, nd + prob.nu)
    assert np.max(np.abs(Fzz - ref)) < 1e-5 * max(1.0, np.max(np.abs(ref)))
    # the group curvature enters the base pose's second derivatives w.r.t. the base velocity
    # (q⁺ = q·exp(h Σ b_s v_s)): they are far above the tolerance
    assert np.max(np.abs(Fzz[:6, 12:18, 12:18])) > 1e-3
    lam = np.random.default_rng(5).normal(size=(1, nd))
    Hc = prob.step_hessians(x[None], u, lam)[0]
    assert np.allclose(Hc, np.einsum("i,ijk->jk", lam[0], Fzz), rtol=1e-12, atol=1e-12)


def test_costs_and_constraints_derivatives_along_the_manifold():
    x = _state(6)
    ref = _state(7)
    rng = np.random.default_rng(8)
    q0 = ref[:NQ]
    terms = [
        StateCost(rng.uniform(0.5, 2.0, 2 * NV), ref, model=MODEL),
        FramePositionCost(MODEL, "tool0", (0.3, 0.2, 0.9), 3.0),
    ]
    prob = _problem(x)
    for cost in terms:
        l, lx, _, lxx, _, _ = cost.evaluate(x[None], np.zeros((1, 6)))

        def f(d):
            return cost.value(prob.state_integrate(x, d)[None], np.zeros((1, 6)))

        d0 = np.zeros(2 * NV)
        assert np.allclose(lx[0], central(f, d0, 1e-6)[0], atol=1e-6), type(cost).__name__
        assert np.allclose(lxx[0], _hessian_fd(f, 2 * NV)[0], atol=1e-5), type(cost).__name__
    bound = OrientationBound(MODEL, "root_joint", q0, 2.5)
    c, cx, cxx = bound.evaluate(x[None])

    def g(d):
        return bound.evaluate(prob.state_integrate(x, d)[None])[0][0]

    assert np.allclose(cx[0], central(g, np.zeros(2 * NV), 1e-6), atol=1e-6)
    assert np.allclose(cxx[0], _hessian_fd(g, 2 * NV), atol=1e-5)


def test_ipopt_derivatives_in_the_chart_of_the_reference():
    """Gradient, Jacobian and Hessian of the Lagrangian of the floating-base NLP (state
    variables ξ, x = x̃ ⊕ ξ) against finite differences in z, at a point away from x̃."""
    prob = problems.get("space-manipulator", N=2, attitude_bound=0.3)
    rng = np.random.default_rng(9)
    ref = np.array([_state(10 + k, 0.3) for k in range(prob.N + 1)])
    nlp = MultipleShootingNLP(prob, reference=ref)
    xs = np.array([_state(20 + k, 0.3) for k in range(prob.N + 1)])
    z = nlp.pack(xs, rng.normal(size=(prob.N, prob.nu)))
    assert np.allclose(prob.state_difference(xs, nlp.unpack(z)[0]), 0.0, atol=1e-12)
    g = nlp.gradient(z)
    assert np.max(np.abs(g - central(nlp.objective, z, 1e-6))) < 1e-8 * np.max(np.abs(g))  # f ~ 1e4 here
    J = np.zeros((nlp.m, nlp.n))
    J[nlp.jacobianstructure()] = nlp.jacobian(z)
    assert np.allclose(J, central(nlp.constraints, z, 1e-6), atol=1e-6)
    lam, sigma = rng.normal(size=nlp.m), 0.7

    def grad_L(w):
        Jw = np.zeros((nlp.m, nlp.n))
        Jw[nlp.jacobianstructure()] = nlp.jacobian(w)
        return sigma * nlp.gradient(w) + Jw.T @ lam

    H = np.zeros((nlp.n, nlp.n))
    H[nlp.hessianstructure()] = nlp.hessian(z, lam, sigma)
    H = H + np.tril(H, -1).T
    ref_H = central(grad_L, z, 1e-5)
    assert np.max(np.abs(H - ref_H)) < 1e-8 * np.max(np.abs(ref_H))


@pytest.fixture(scope="module")
def solutions():
    prob = problems.get("space-manipulator", N=20)
    return prob, {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}


def test_ddp_ilqr_and_ipopt_reach_the_same_optimum(solutions):
    prob, res = solutions
    assert_same_optimum(res)
    for r in res.values():
        tool = dyn.frame_placement(MODEL, r.xs[-1, :NQ], "tool0")[1]
        assert np.linalg.norm(tool - prob.params["target"]) < 2e-3
    assert np.max(np.abs(prob.state_difference(res["ipopt"].xs[0], res["ddp"].xs[0]))) == 0.0
    # the base is free: it moves (position and attitude) in reaction to the arm
    base = res["ddp"].xs[:, :7]
    assert np.linalg.norm(base[-1, :3] - base[0, :3]) > 1e-3 and abs(base[-1, 6]) < 1.0 - 1e-6


def test_momentum_is_conserved_along_the_optimum(solutions):
    """No gravity, no external force: the momentum of the re-simulated optimal trajectory
    stays at its initial value (zero, from rest), up to the integration error — which a
    four times finer re-simulation of the same controls divides by about 4⁴."""
    prob, res = solutions
    us = res["ddp"].us
    coarse = prob.rollout(us)
    fine_prob = problems.get("space-manipulator", N=prob.N * 4, dt=prob.dt / 4)
    fine = fine_prob.rollout(np.repeat(us, 4, axis=0))
    assert np.max(np.abs(fine[::4] - coarse)) < 1e-3
    # the scale: the momentum the arm's motion alone carries (which the base's motion cancels)
    moving = max(np.linalg.norm(dyn.crba(MODEL, x[:NQ])[:6, 6:] @ x[NQ + 6:]) for x in coarse)

    def momentum(x):
        return world_momentum(MODEL, x, "satellite")
    drift = max(np.linalg.norm(momentum(x) - momentum(coarse[0])) for x in coarse)
    drift_fine = max(np.linalg.norm(momentum(x) - momentum(fine[0])) for x in fine)
    assert moving > 1.0
    assert drift < 1e-5 * moving
    assert drift_fine < drift / 20 or drift_fine < 1e-12 * moving


def test_attitude_bound_is_respected_and_active():
    free = optdyn.solve(problems.get("space-manipulator", N=20), solver="ilqr")
    angle = np.linalg.norm(dyn.difference(MODEL, free.xs[0, :NQ], free.xs[-1, :NQ])[3:6])
    bound = 0.5 * angle
    res = optdyn.solve(problems.get("space-manipulator", N=20, attitude_bound=bound), solver="ilqr")
    assert res.converged, res.message
    angles = [np.linalg.norm(dyn.difference(MODEL, res.xs[0, :NQ], x[:NQ])[3:6]) for x in res.xs]
    assert max(angles) < bound + 1e-5 and max(angles) > bound - 1e-3


def test_the_task_ships_ipopts_option_only_with_the_attitude_bound_where_the_default_does_not_serve():
    """Without the bound the task ships no solver options (the defaults reach one optimum: the
    test above). With it, IPOPT's gradient-based NLP scaling, its default, ends in a costlier
    local optimum (measured at 0.02 rad: 0.2052 against 0.0617 without the scaling, which the
    task ships; DDP 0.0775): the option is kept while this holds."""
    assert problems.get("space-manipulator").solver_options == {}
    prob = problems.get("space-manipulator", attitude_bound=0.02)
    assert prob.solver_options == {"ipopt": {"nlp_scaling_method": "none"}}
    shipped, ddp = optdyn.solve(prob, "ipopt"), optdyn.solve(prob, "ddp")
    default = optdyn.solve(prob, "ipopt", nlp_scaling_method="gradient-based")
    assert shipped.converged and default.converged and ddp.converged
    assert shipped.cost <= ddp.cost * (1 + 1e-6) and default.cost > 2 * shipped.cost, (shipped.cost, default.cost)


def test_actuation_default_names_and_selection():
    x0 = _state(30)
    prob = _problem(x0)
    assert prob.nu == 6 and list(prob.actuated) == list(range(6, 12)) and prob.ndx == 24 and prob.nx == 25
    named = _problem(x0, actuated=["elbow_joint", "shoulder_pan_joint"])
    assert list(named.actuated) == [6, 8]
    B = np.zeros((NV, 2))
    B[6, 0] = B[8, 1] = 1.0
    assert np.array_equal(_problem(x0, actuated=B).actuation, B)
    full = _problem(x0, actuated=list(MODEL.joint_names))
    assert full.nu == NV  # a thrusted base: every DoF actuated
    # the unactuated base gets no torque: u moves the arm only, the base reacts
    A, Bu = prob.step_derivatives(x0[None], np.zeros((1, 6)))
    Af, Bf = full.step_derivatives(x0[None], np.zeros((1, NV)))
    assert np.allclose(Bu[0], Bf[0][:, 6:], rtol=0, atol=1e-14) and np.allclose(A, Af, rtol=0, atol=1e-14)


@pytest.mark.parametrize("actuated, what", [
    (["elbow", "wrist_1_joint"], "unknown joint"),
    (np.ones((NV, 2)), "selection"),
    (np.eye(NV)[:, :3][:5], "shape"),
    ([["a"]], "actuated"),
])
def test_bad_actuation_is_refused_naming_actuated(actuated, what):
    with pytest.raises(ValueError, match="actuated") as e:
        _problem(_state(31), actuated=actuated)
    assert what in str(e.value) or what == "actuated"


def test_unnormalised_quaternions_are_refused():
    x0 = _state(32)
    bad = x0.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="x0.*root_joint.*normalis"):
        _problem(bad)
    prob = problems.get("space-manipulator", N=4)
    xs = np.tile(prob.x0, (5, 1))
    xs[2, 3:7] = (0.1, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="xs_init"):
        optdyn.solve(prob, solver="ipopt", xs_init=xs)
    with pytest.raises(ValueError, match="x0"):
        prob.rollout(np.zeros((4, 6)), x0=bad)
    # the evaluations of a trajectory a user hands in: cost, constraints, violation
    us = np.zeros((4, prob.nu))
    for evaluate, name, row in ((lambda: prob.cost(xs, us), "xs", " at row 2"),
                                (lambda: prob.violation(xs, us), "xs", " at row 2"),
                                (lambda: prob.path_constraint_terms(xs[1:]), "xs", " at row 1"),
                                (lambda: prob.terminal_cost_terms(xs[2]), "x", ""),
                                (lambda: prob.terminal_constraint_terms(xs[2]), "x", "")):
        with pytest.raises(ValueError, match=f"^{name}: the quaternion .* of joint 'root_joint' has norm "
                                             f"1.00498756{row}, expected 1"):
            evaluate()


def test_viewer_moves_the_base(solutions, tmp_path):
    """The replay's animation places the satellite at its pose from q at every frame: the
    base's track starts at q0's position and ends at the drifted one."""
    from optdyn import viz
    prob, res = solutions
    r = res["ddp"]
    scene = viz.scene_of(r)
    anim = next(c for c in (c.lower() for c in scene.commands) if c["type"] == "set_animation")
    base = "/meshcat/" + scene.body_paths[0]
    track = next(t for a in anim["animations"] if a["path"] == base for t in a["clip"]["tracks"]
                 if t["name"] == ".position")
    values = np.array([k["value"] for k in track["keys"]], dtype=float)
    assert np.allclose(values[0], r.xs[0, :3], atol=1e-6) and np.allclose(values[-1], r.xs[-1, :3], atol=1e-6)
    assert np.linalg.norm(values[-1] - values[0]) > 1e-3
    assert viz.save_html(r, tmp_path / "space.html").endswith("space.html")


@pytest.mark.parametrize("solver", ["ilqr", "ipopt"])
def test_command_line_solves_and_reopens_the_task(solver, capsys, tmp_path):
    from optdyn.apps.cli import main
    saved = tmp_path / "space.npz"
    assert main(["solve", "space-manipulator", "--param", "N=10", "--solver", solver, "--quiet",
                 "--save", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and "tool0" in out
    assert main(["show", str(saved), "--html", str(tmp_path / "space.html")]) == 0
    assert (tmp_path / "space.html").stat().st_size > 0
