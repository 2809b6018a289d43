"""Residuals and activations: Jacobians and contracted Hessians against differences along
x ⊕ δx, on a fixed base (UR5) and a floating base (the space manipulator)."""
import numpy as np
import pytest
from numdiff import central, rel_error, second_differences
from scipy.linalg import expm

import dynamics as dyn
import problems
from optdyn.ocp import activations as act
from optdyn.ocp import residuals as res
from optdyn.ocp.state import state_integrate_batch

pytestmark = pytest.mark.cost(33)

UR5 = dyn.models.ur5()
FLOAT = dyn.models.space_manipulator()


def _state(model, seed, speed=0.7):
    rng = np.random.default_rng(seed)
    return np.concatenate([dyn.random_configuration(model, rng), speed * rng.normal(size=model.nv)])


def _plus(model, x, dx):
    return state_integrate_batch(model.topology, model.nq, x[None], dx[None])[0]


def _pose(model, seed):
    """A rigid transform near the pose of tool0 at a random state (a target)."""
    R, p = dyn.frame_placement(model, _state(model, seed)[: model.nq], "tool0")
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _residuals(model):
    nu = model.nv - (6 if model is FLOAT else 0)
    rng = np.random.default_rng(11)
    return {
        "state": res.StateResidual(model, _state(model, 1)),
        "joint_position": res.JointPositionResidual(model, _state(model, 2)[: model.nq],
                                                    joints=model.joint_names[-3:]),
        "joint_velocity": res.JointVelocityResidual(model, rng.normal(size=model.nv), joints=model.joint_names[:2]),
        "control": res.ControlResidual(nu, rng.normal(size=nu), ndx=2 * model.nv),
        "frame_position": res.FramePositionResidual(model, "wrist_2_link", (0.3, 0.1, 0.4), offset=(0.0, 0.1, 0.05)),
        "frame_orientation": res.FrameOrientationResidual(model, "tool0", _pose(model, 3)[:3, :3]),
        "frame_placement": res.FramePlacementResidual(model, "tool0", _pose(model, 4)),
        "com": res.CoMPositionResidual(model, (0.1, 0.0, 0.3)),
        "frame_velocity_local": res.FrameVelocityResidual(model, "wrist_3_link", rng.normal(size=6)),
        "frame_velocity_world": res.FrameVelocityResidual(model, "tool0", rng.normal(size=6), reference="world"),
        "sphere_clearance": res.SphereClearanceResidual(model, [("wrist_1_link", (0.0, 0.1, 0.0)),
                                                                ("tool0", (0.02, 0.0, 0.05))], (0.3, 0.1, 0.4), 0.1, 0.02),
    }


CASES = [(m, name) for m in ("ur5", "floating") for name in _residuals(UR5)]


@pytest.mark.parametrize("which,name", CASES, ids=[f"{m}-{n}" for m, n in CASES])
def test_residual_jacobian_and_contracted_hessian_match_differences(which, name):
    model = UR5 if which == "ur5" else FLOAT
    residual = _residuals(model)[name]
    ndx = 2 * model.nv
    nu = model.nv - (6 if model is FLOAT else 0)
    rng = np.random.default_rng(5)
    for seed in (20, 21):
        x, u = _state(model, seed), rng.normal(size=nu)
        t = residual.evaluate(x[None], u[None])
        assert np.allclose(t.r, residual.value(x[None], u[None]), atol=1e-12)
        rho = rng.normal(size=residual.size)
        Hxx, Hux, Huu = (h[0] for h in t.hessians(rho[None]))

        def f(dx, du):
            return residual.value(_plus(model, x, dx)[None], (u + du)[None])[0]
        rx = central(lambda d: f(d, np.zeros(nu)), np.zeros(ndx))
        ru = central(lambda d: f(np.zeros(ndx), d), np.zeros(nu))
        assert rel_error(t.rx[0], rx) < 1e-7, (name, np.abs(t.rx[0] - rx).max())
        assert rel_error(t.ru[0], ru) < 1e-7
        H = second_differences(lambda e: rho @ f(e[:ndx], e[ndx:]), ndx + nu)
        assert rel_error(Hxx, H[:ndx, :ndx]) < 1e-6, (name, np.abs(Hxx - H[:ndx, :ndx]).max())
        assert rel_error(Hux, H[ndx:, :ndx]) < 1e-6
        assert rel_error(Huu, H[ndx:, ndx:]) < 1e-6
        assert np.allclose(Hxx, Hxx.T, atol=1e-10)


def _hat6(r):
    """4×4 matrix of the twist r = (linear, angular) in se(3)."""
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -r[5], r[4]], [r[5], 0, -r[3]], [-r[4], r[3], 0]]
    X[:3, 3] = r[:3]
    return X


@pytest.mark.parametrize("model", [UR5, FLOAT], ids=["ur5", "floating"])
def test_residual_values_against_independent_formulas(model):
    """log₆ and log₃ by the matrix exponential (T exp(r̂) = M), frame velocities by the frame
    Jacobian (J v, rotated into the frame for "local"), the CoM by the bodies' masses."""
    x = _state(model, 30)
    q, v, u = x[: model.nq], x[model.nq:], np.zeros((1, 1))
    R, p = dyn.frame_placement(model, q, "tool0")
    M = np.eye(4)
    M[:3, :3], M[:3, 3] = R, p
    T = _pose(model, 31)
    r = res.FramePlacementResidual(model, "tool0", T).value(x[None], u)[0]
    assert np.allclose(T @ expm(_hat6(r)), M, atol=1e-10)
    w = res.FrameOrientationResidual(model, "tool0", T[:3, :3]).value(x[None], u)[0]
    assert np.allclose(T[:3, :3] @ expm(_hat6(np.r_[0, 0, 0, w]))[:3, :3], R, atol=1e-10)
    V = dyn.frame_jacobian(model, q, "tool0") @ v
    assert np.allclose(res.FrameVelocityResidual(model, "tool0", reference="world").value(x[None], u)[0], V)
    assert np.allclose(res.FrameVelocityResidual(model, "tool0").value(x[None], u)[0], np.r_[R.T @ V[:3], R.T @ V[3:]])
    mass = model.inertia[:, 0]
    com = sum(m * dyn.point_position(model, q, model.body_names[i], model.inertia[i, 1:4]) for i, m in enumerate(mass))
    assert np.allclose(res.CoMPositionResidual(model).value(x[None], u)[0], com / mass.sum())


ACTIVATIONS = {
    "quadratic": act.WeightedQuadratic(4, [1.0, 2.0, 0.5, 3.0]),
    "barrier": act.QuadraticBarrier([-0.5, -1.0, 0.2, -np.inf], [0.5, 0.0, 0.4, 0.1], [1.0, 2.0, 3.0, 0.5]),
    "pseudo_huber": act.PseudoHuber(4, delta=0.3, weights=[1.0, 2.0, 0.5, 3.0]),
    "log_barrier": act.LogBarrier([-2.0, -np.inf, -3.0, -2.5], [2.0, 2.5, np.inf, 2.5], [1.0, 2.0, 0.5, 3.0]),
    "softplus": act.Softplus(4, width=0.4, weights=[1.0, 2.0, 0.5, 3.0]),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_gradient_and_hessian_match_differences(name):
    a = ACTIVATIONS[name]
    r = np.random.default_rng(2).uniform(-1.5, 1.5, (6, 4))
    value, grad, hess = a.evaluate(r)
    np.testing.assert_allclose(a.value(r), value, rtol=1e-13)  # a value-only path gives evaluate's
    for k in range(r.shape[0]):
        assert np.allclose(grad[k], central(lambda y: a.value(y[None])[0], r[k]), atol=1e-7)
        assert np.allclose(np.diag(hess[k]), central(lambda y: a.evaluate(y[None])[1][0], r[k]), atol=1e-6)
    assert np.any(hess != 0)


def test_quadratic_barrier_is_zero_between_and_log_barrier_infinite_outside_the_bounds():
    inside, outside = np.array([[0.0, -0.5, 0.3, 0.0]]), np.array([[0.0, 0.0, 0.0, 3.0]])
    assert ACTIVATIONS["barrier"].value(inside)[0] == 0.0 < ACTIVATIONS["barrier"].value(outside)[0]
    assert np.isfinite(ACTIVATIONS["log_barrier"].value(inside)[0])
    assert ACTIVATIONS["log_barrier"].value(outside)[0] == np.inf


# ---------------------------------------------------------------- residual costs
from optdyn import Problem, solve  # noqa: E402
from optdyn.costs import (CoMPositionCost, ControlCost, FrameOrientationCost, FramePlacementCost,  # noqa: E402
                          FramePositionCost, FrameVelocityCost, ObstacleCost, ResidualCost, StateCost)


def _cost_cases(model):
    nu = model.nv - (6 if model is FLOAT else 0)
    K = 3
    refs = np.array([_state(model, 40 + k) for k in range(K)])
    points = [("wrist_2_link", (0.0, 0.0, 0.1)), ("tool0", (0.0, 0.05, 0.0))]
    cases = {
        "state": StateCost(np.linspace(0.5, 2.0, 2 * model.nv), refs[0], model=model),
        "frame_position": FramePositionCost(model, "tool0", (0.3, 0.2, 0.1), 7.0, offset=(0, 0, 0.1)),
        "obstacle": ObstacleCost(model, points, (0.2, 0.1, 0.5), 0.3, 4.0, margin=0.05, width=0.1),
        "placement": FramePlacementCost(model, "tool0", _pose(model, 7), 3.0),
        "orientation": FrameOrientationCost(model, "tool0", _pose(model, 8)[:3, :3], 2.0),
        "velocity": FrameVelocityCost(model, "tool0", 1.5, target=np.arange(6.0) / 10, reference="world"),
        "com": CoMPositionCost(model, (0.1, 0.2, 0.3), 4.0),
        "tracking": ResidualCost(res.StateResidual(model, refs), act.PseudoHuber(2 * model.nv, 0.5),
                                 weight=[1.0, 2.0, 0.5]),
        "barrier": ResidualCost(res.FramePositionResidual(model, "tool0"), act.QuadraticBarrier(-0.2, 0.3, size=3), 5.0),
        "sum": FramePlacementCost(model, "tool0", _pose(model, 9), 1.0)
        + ResidualCost(res.ControlResidual(nu, np.ones(nu)), act.WeightedQuadratic(nu, 0.1)),
    }
    if model is UR5:  # without a model, x is a plain vector (x − x̄, and lx as wide as x): a fixed base
        cases["state_vector"] = StateCost(np.linspace(0.5, 2.0, 12), refs[1])
        cases["control"] = ControlCost(np.linspace(0.1, 1.0, nu), np.ones(nu))
    return cases


COST_CASES = [(m, n) for m, model in (("ur5", UR5), ("floating", FLOAT)) for n in _cost_cases(model)]


@pytest.mark.parametrize("which,name", COST_CASES, ids=[f"{m}-{n}" for m, n in COST_CASES])
def test_residual_cost_gradient_and_hessian_match_differences(which, name):
    model = UR5 if which == "ur5" else FLOAT
    cost = _cost_cases(model)[name]
    nu, ndx = model.nv - (6 if model is FLOAT else 0), 2 * model.nv
    xs = np.array([_state(model, 50 + k) for k in range(3)])
    us = np.random.default_rng(4).normal(size=(3, nu))
    l, lx, lu, lxx, lux, luu = cost.evaluate(xs, us)
    assert np.allclose(l, cost.value(xs, us), atol=1e-12)
    for k in range(3):
        def f(e):
            xk = _plus(model, xs[k], e[:ndx])[None]
            return np.sum(cost.value(np.repeat(xk, 3, 0), np.repeat((us[k] + e[ndx:])[None], 3, 0))
                          * (np.arange(3) == k))
        g = central(f, np.zeros(ndx + nu))
        H = second_differences(f, ndx + nu)
        assert rel_error(np.r_[lx[k], lu[k]], g) < 1e-7
        assert rel_error(lxx[k], H[:ndx, :ndx]) < 1e-6, np.abs(lxx[k] - H[:ndx, :ndx]).max()
        assert rel_error(lux[k], H[ndx:, :ndx]) < 1e-6 and rel_error(luu[k], H[ndx:, ndx:]) < 1e-6


@pytest.mark.parametrize("which,name", COST_CASES, ids=[f"{m}-{n}" for m, n in COST_CASES])
def test_gauss_newton_hessian_is_the_residual_jacobians_product(which, name):
    """Cost.gauss_newton: ℓ, ℓ_x, ℓ_u as evaluate, Hessians w_k J_kᵀ a_rr J_k with J_k = [r_x r_u]
    by differences of the residual (the residuals' curvature left out); a sum is its terms'."""
    model = UR5 if which == "ur5" else FLOAT
    cost = _cost_cases(model)[name]
    nu, ndx = model.nv - (6 if model is FLOAT else 0), 2 * model.nv
    xs = np.array([_state(model, 60 + k) for k in range(3)])
    us = np.random.default_rng(5).normal(size=(3, nu))
    exact, gn = cost.evaluate(xs, us), cost.gauss_newton(xs, us)
    for a, b in zip(exact[:3], gn[:3]):
        assert np.array_equal(a, b)
    expected = [np.zeros_like(H) for H in gn[3:]]
    for w, term in (cost.terms if hasattr(cost, "terms") else [(1.0, cost)]):
        arr = term.activation.evaluate(term.residual.value(xs, us))[2]
        weights = np.broadcast_to(term.weight, (3,))
        for k in range(3):
            def r(e):  # knot k moved (a residual may have a reference per knot)
                x, u = xs.copy(), us.copy()
                x[k], u[k] = _plus(model, xs[k], e[:ndx]), us[k] + e[ndx:]
                return term.residual.value(x, u)[k]
            J = central(r, np.zeros(ndx + nu))
            G = w * weights[k] * J.T @ (arr[k][:, None] * J)
            for H, block in zip(expected, (G[:ndx, :ndx], G[ndx:, :ndx], G[ndx:, ndx:])):
                if H.shape[1:] == block.shape:  # a control cost's x-blocks are zero either way
                    H[k] += block
    for H, E in zip(gn[3:], expected):
        assert rel_error(H, E) < 1e-7, np.abs(H - E).max()
    if name in ("frame_position", "placement", "orientation"):  # these residuals are curved: exact ≠ GN
        assert rel_error(exact[3], gn[3]) > 1e-3


def test_the_state_control_frame_position_and_obstacle_costs_are_residual_costs_with_their_formulas():
    """The costs that predate the residuals are residual × activation (one implementation)
    and still give their closed forms: ½ Σ w (x ⊖ x̄)², ½ Σ w (u − ū)², ½ w ‖p − p*‖²,
    Σ_j w β log(1 + exp(−d_j/β)) (p and d from the frame placement, independently)."""
    cases = _cost_cases(UR5)
    xs, us = np.array([_state(UR5, 61), _state(UR5, 62)]), np.random.default_rng(6).normal(size=(2, 6))
    refs = np.array([_state(UR5, 40 + k) for k in range(3)])
    w = np.linspace(0.5, 2.0, 12)

    def point(x, frame, offset):
        R, t = dyn.frame_placement(UR5, x[:6], frame)
        return R @ np.array(offset) + t
    p = np.array([point(x, "tool0", (0.0, 0.0, 0.1)) for x in xs])
    clear = np.array([[np.linalg.norm(point(x, f, o) - np.array([0.2, 0.1, 0.5])) - 0.3 - 0.05
                       for f, o in (("wrist_2_link", (0.0, 0.0, 0.1)), ("tool0", (0.0, 0.05, 0.0)))] for x in xs])
    expected = {
        "state_vector": 0.5 * np.sum(w * (xs - refs[1]) ** 2, axis=1),
        "state": 0.5 * np.sum(w * (xs - refs[0]) ** 2, axis=1),  # revolute joints: x ⊖ x̄ = x − x̄
        "control": 0.5 * np.sum(np.linspace(0.1, 1.0, 6) * (us - 1.0) ** 2, axis=1),
        "frame_position": 0.5 * 7.0 * np.sum((p - np.array([0.3, 0.2, 0.1])) ** 2, axis=1),
        "obstacle": 4.0 * 0.1 * np.sum(np.log1p(np.exp(-clear / 0.1)), axis=1),
    }
    for name, value in expected.items():
        cost = cases[name]
        assert isinstance(cost, ResidualCost), name
        assert np.allclose(cost.evaluate(xs, us)[0], value, rtol=1e-12, atol=1e-14), name
        assert np.allclose(cost.value(xs, us), value, rtol=1e-12, atol=1e-14), name


def _pose_task(N=20):
    """UR5 from rest to a 6D pose of tool0, arriving at rest (velocity cost at the end)."""
    q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    x0 = np.r_[q0, np.zeros(6)]
    R, p = dyn.frame_placement(UR5, q0 + np.array([0.5, 0.3, -0.4, 0.2, -0.3, 0.6]), "tool0")
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    g0 = dyn.gravity_torques(UR5, q0)
    running = (StateCost(np.r_[np.zeros(6), 1e-2 * np.ones(6)], x0) + ControlCost(1e-3, g0)
               + FramePlacementCost(UR5, "tool0", T, 1.0))
    terminal = FramePlacementCost(UR5, "tool0", T, 1e3) + FrameVelocityCost(UR5, "tool0", 10.0)
    return Problem(UR5, x0, N, 0.05, running, terminal, us_init=np.tile(g0, (N, 1))), T


def test_ddp_ilqr_and_ipopt_agree_on_a_pose_task():
    prob, T = _pose_task()
    runs = {s: solve(prob, s, tol=1e-9) if s != "ipopt" else solve(prob, s, tol=1e-10) for s in ("ddp", "ilqr", "ipopt")}
    assert all(r.converged for r in runs.values()), {s: r.status for s, r in runs.items()}
    costs = np.array([r.cost for r in runs.values()])
    assert np.ptp(costs) < 1e-6 * costs.min()
    for s in ("ilqr", "ipopt"):
        assert np.allclose(runs[s].us, runs["ddp"].us, atol=1e-3)
    R, p = dyn.frame_placement(UR5, runs["ddp"].xs[-1, :6], "tool0")
    assert np.linalg.norm(p - T[:3, 3]) < 0.02 and np.linalg.norm(runs["ddp"].xs[-1, 6:]) < 0.2


# ---------------------------------------------------------------- constraints on residuals, joint limits
from dataclasses import replace  # noqa: E402

from optdyn.constraints import JointLimits, ResidualConstraint, ResidualEquality  # noqa: E402
from optdyn.ocp import residual_records  # noqa: E402


@pytest.mark.parametrize("model", [UR5, FLOAT], ids=["ur5", "floating"])
def test_residual_constraint_rows_match_differences(model):
    cons = [ResidualConstraint(res.FramePlacementResidual(model, "tool0", _pose(model, 70)), -0.1, [0.2] * 6),
            ResidualConstraint(res.FramePlacementResidual(model, "tool0", _pose(model, 70)), -0.1, [0.2] * 6,
                               scale=[1.0, 2.0, 0.5, 3.0, 1.0, 0.25]),
            ResidualEquality(res.FrameVelocityResidual(model, "tool0", reference="world"), scale=9.81),
            JointLimits(model, margin=0.01)]
    x, ndx = _state(model, 71), 2 * model.nv
    for c in cons:
        v, cx, cxx = (t[0] for t in c.evaluate(x[None]))
        f = lambda e: c.value(_plus(model, x, e)[None])[0]  # noqa: E731
        assert np.allclose(v, f(np.zeros(ndx)), atol=1e-14)
        assert v.shape == (c.size,) and rel_error(cx, central(f, np.zeros(ndx))) < 1e-7
        assert rel_error(cxx, second_differences(f, ndx)) < 1e-6


def test_a_scaled_constraint_states_the_same_rows_in_its_unit():
    """ResidualConstraint(..., scale=s) has the rows (r − lower)/s and (upper − r)/s of the
    unscaled one, with their derivatives and contracted Hessians divided by s entry by entry;
    a saved problem keeps the scale."""
    r = res.FramePlacementResidual(UR5, "tool0", _pose(UR5, 70))
    s = np.array([1.0, 2.0, 0.5, 3.0, 1.0, 0.25])
    plain, scaled = ResidualConstraint(r, -0.1, [0.2] * 6), ResidualConstraint(r, -0.1, [0.2] * 6, scale=s)
    xs = np.array([_state(UR5, 72 + k) for k in range(3)])
    per_row = np.r_[s, s]  # the lower bounds' rows, then the upper bounds'
    for a, b in zip(plain.evaluate(xs), scaled.evaluate(xs)):
        np.testing.assert_allclose(b, a / per_row.reshape((1, -1) + (1,) * (a.ndim - 2)), rtol=1e-14, atol=1e-15)
    w = np.random.default_rng(3).normal(size=(3, plain.size))
    us = np.zeros((3, 0))
    np.testing.assert_allclose(scaled.contracted_knots(xs, us)[2](w), plain.contracted_knots(xs, us)[2](w / per_row),
                               rtol=1e-13, atol=1e-14)
    again = residual_records.make_constraint(UR5, residual_records.constraint_record(scaled))
    np.testing.assert_array_equal(again.value(xs), scaled.value(xs))
    assert "scale" not in residual_records.constraint_record(plain)  # the first format where unscaled


def test_joint_limits_rows_are_the_models_limits():
    lim = JointLimits(UR5, margin=0.1)
    x = np.r_[UR5.upper_limit - 0.1, -UR5.velocity_limit + 0.1]
    c = lim.evaluate(x[None])[0][0]
    assert lim.size == 24 and np.allclose(np.sort(c)[:12], 0.0) and np.all(c >= -1e-12)
    assert JointLimits(FLOAT).size == 24  # the arm's joints; the free-flyer has no limits


def _limited_pose_task(constraint=None):
    """The pose task on a UR5 whose limits its free optimum breaks: velocities capped at 70 % of
    its own top speeds, the joint j that moves furthest capped at 85 % of its excursion.
    Returns (free optimum, limited problem, model, j, vmax, upper); its path constraint is
    JointLimits, or ``constraint(model)``."""
    prob, _ = _pose_task()
    free = solve(prob, "ddp", tol=1e-9)
    q, v = free.xs[1:, :6], free.xs[1:, 6:]
    vmax = 0.7 * np.abs(v).max(axis=0)
    upper = UR5.upper_limit.copy()
    j = int(np.argmax(q.max(axis=0) - prob.x0[:6]))
    upper[j] = prob.x0[j] + 0.85 * (q[:, j].max() - prob.x0[j])
    model = replace(UR5, velocity_limit=vmax, upper_limit=upper)
    limited = Problem(model, prob.x0, prob.N, prob.dt, prob.running_cost, prob.terminal_cost, us_init=prob.us_init,
                      path_constraints=[JointLimits(model) if constraint is None else constraint(model)])
    return free, limited, model, j, vmax, upper


def test_joint_limits_hold_at_every_knot_where_the_free_optimum_violates_them():
    """The pose task's unconstrained optimum is faster than 70 % of its own top speed on every
    joint and goes beyond a position limit set at 85 % of its excursion; with JointLimits the DDP, iLQR (augmented
    Lagrangian) and IPOPT (variable bounds) optima respect every limit at every knot and agree."""
    free, limited, model, j, vmax, upper = _limited_pose_task()
    assert limited.violation(free.xs, free.us) > 0.1
    runs = {s: solve(limited, s, tol=1e-8, max_iter=1500) for s in ("ddp", "ilqr", "ipopt")}
    for s, r in runs.items():
        assert r.converged, (s, r.status)
        qs, vs = r.xs[1:, :6], r.xs[1:, 6:]
        assert np.all(np.abs(vs) <= vmax + 1e-5) and np.all(qs[:, j] <= upper[j] + 1e-5), s
        assert np.max(qs[:, j]) > upper[j] - 1e-3  # active
    costs = np.array([r.cost for r in runs.values()])
    assert np.ptp(costs) < 1e-4 * costs.min() and costs.min() > free.cost


def test_ipopt_reports_the_joint_limit_bound_multipliers_as_those_of_the_same_rows_as_constraints():
    """IPOPT takes JointLimits as variable bounds; its result's path multipliers hold, for those
    rows, what IPOPT finds for the same rows posed as general inequalities (a ResidualConstraint
    on the same state entries with the same bounds): zero where inactive, nonzero where active."""
    _, bounds, model, _, _, _ = _limited_pose_task()
    lim = bounds.path_constraints[0]
    general = Problem(model, bounds.x0, bounds.N, bounds.dt, bounds.running_cost, bounds.terminal_cost,
                      us_init=bounds.us_init,
                      path_constraints=[ResidualConstraint(res.StateResidual(model, rows=lim.tangent), lim.lower,
                                                           lim.upper)])
    a, b = (solve(p, "ipopt", tol=1e-10, max_iter=1500) for p in (bounds, general))
    assert a.converged and b.converged and np.max(np.abs(a.xs - b.xs)) < 1e-5
    ma, mb = a.extra["multipliers"]["path"], b.extra["multipliers"]["path"]
    assert ma.shape == mb.shape == (bounds.N, lim.size)
    c = bounds.path_constraint_values(a.xs[1:])
    assert np.max(np.abs(mb)) > 1e-2 and np.max(np.abs(ma - mb)) < 1e-4 * np.max(np.abs(mb))
    assert np.all(np.abs(ma[c > 1e-3]) < 1e-6)  # inactive rows


# ---------------------------------------------------------------- user terms, check_derivatives, bad input
import optdyn  # noqa: E402


def _height(scale=1.0, shapes=None):
    """The UR5 tool height as a user residual (Jacobian scaled by ``scale``; ``shapes`` a list
    of output sizes returned by successive calls of ``value``)."""
    def value(x, u):
        n = shapes.pop(0) if shapes else 1
        return np.repeat(dyn.frame_placement(UR5, x[:6], "tool0")[1][2:], n)

    def jacobian(x, u):
        rx = np.zeros((1, 12))
        rx[0, :6] = scale * dyn.frame_jacobian(UR5, x[:6], "tool0")[2]
        return rx, np.zeros((1, 0))
    return optdyn.UserResidual(UR5, 1, value, jacobian, name="height")


def test_user_residual_hessian_by_differences_matches_the_exact_one_and_check_derivatives_sees_errors(capsys):
    x = _state(UR5, 80)
    user, exact = _height(), res.FramePositionResidual(UR5, "tool0")
    rho = np.array([[1.7]])
    Hu = user.evaluate(x[None], np.zeros((1, 0))).hessians(rho)[0]
    He = exact.evaluate(x[None], np.zeros((1, 0))).hessians(np.array([[0.0, 0.0, 1.7]]))[0]
    assert user.approximate_hessian and rel_error(Hu, He) < 1e-6
    assert optdyn.check_derivatives(user, x) < 1e-5
    assert "r_x" in capsys.readouterr().out
    assert optdyn.check_derivatives(_height(scale=1.1), x, verbose=False) > 0.01
    assert optdyn.check_derivatives(FramePlacementCost(FLOAT, "tool0", _pose(FLOAT, 3), 2.0), _state(FLOAT, 81),
                                    np.ones(6), verbose=False) < 1e-5
    assert optdyn.check_derivatives(JointLimits(FLOAT), _state(FLOAT, 82), verbose=False) < 1e-5


BAD = [
    (lambda: FramePlacementCost(UR5, "tool0", np.eye(4), -1.0), "weight"),
    (lambda: FrameOrientationCost(UR5, "no_such_frame", np.eye(3), 1.0), "frame"),
    (lambda: CoMPositionCost(UR5, (0.0, 0.0), 1.0), "target"),
    (lambda: FrameVelocityCost(UR5, "tool0", 1.0, target=np.zeros(5)), "target"),
    (lambda: FrameVelocityCost(UR5, "tool0", 1.0, reference="body"), "reference"),
    (lambda: res.StateResidual(UR5, np.zeros(11)), "reference"),
    (lambda: act.QuadraticBarrier([0.0, 1.0], [1.0, 0.5]), "lower"),
    (lambda: ResidualConstraint(res.CoMPositionResidual(UR5), 1.0, 0.0), "lower"),
    (lambda: FramePlacementCost(UR5, "tool0", np.diag([1.0, 1.0, 2.0, 1.0]), 1.0), "target"),
    (lambda: FramePlacementCost(UR5, "tool0", np.diag([1.0, 1.0, -1.0, 1.0]), 1.0), "target"),
    (lambda: FrameOrientationCost(UR5, "tool0", np.ones((3, 3)), 1.0), "rotation"),
    (lambda: ResidualConstraint(object(), 0.0), "residual"),
    (lambda: ResidualConstraint(res.CoMPositionResidual(UR5), 0.0, scale=0.0), "scale"),
    (lambda: ResidualEquality(res.CoMPositionResidual(UR5), scale=[1.0, np.nan, 1.0]), "scale"),
    (lambda: ResidualConstraint(res.CoMPositionResidual(UR5), 0.0, scale=[1.0, 2.0]), "scale"),
    (lambda: JointLimits(UR5, margin=-0.1), "margin"),
    (lambda: _height(shapes=[1, 2]).evaluate(np.zeros((2, 12)), np.zeros((2, 0))), "value"),
]


@pytest.mark.parametrize("make,name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_bad_input_raises_a_value_error_naming_the_argument(make, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        make()


def test_per_knot_weights_and_references_must_match_the_knots():
    refs = np.array([_state(UR5, 90 + k) for k in range(3)])
    cost = ResidualCost(res.StateResidual(UR5, refs), weight=[1.0, 2.0, 3.0])
    xs = np.array([_state(UR5, 95 + k) for k in range(3)])
    e = np.array([xs[k] - refs[k] for k in range(3)])
    assert np.allclose(cost.value(xs, np.zeros((3, 6))), 0.5 * np.array([1.0, 2.0, 3.0]) * np.sum(e * e, axis=1))
    with pytest.raises(ValueError, match="^reference"):
        ResidualCost(res.StateResidual(UR5, refs)).value(xs[:2], np.zeros((2, 6)))
    with pytest.raises(ValueError, match="^weight"):
        ResidualCost(res.StateResidual(UR5), weight=[1.0, 2.0]).value(xs, np.zeros((3, 6)))


# ---------------------------------------------------------------- saved results rebuild the new terms
from optdyn.apps.clearance import constraint_margins, substep_states  # noqa: E402
from optdyn.apps.cli import main  # noqa: E402
from optdyn.apps.io import load_result, save_result  # noqa: E402
from optdyn.ocp import task  # noqa: E402
from optdyn.solvers.result import Result  # noqa: E402
from optdyn.viz.plots import trajectory_figure  # noqa: E402
from optdyn.viz.scene import scene_of  # noqa: E402


def _every_term_problem(N=6):
    prob, T = _pose_task(N)
    x0 = prob.x0
    refs = np.tile(x0, (N, 1)) + np.linspace(0, 0.2, N)[:, None]
    running = (prob.running_cost + FrameOrientationCost(UR5, "wrist_3_link", T[:3, :3], 0.5)
               + CoMPositionCost(UR5, (0.1, 0.1, 0.4), 0.3)
               + ResidualCost(res.StateResidual(UR5, refs), act.PseudoHuber(12, 0.3), np.linspace(1, 2, N))
               + ResidualCost(res.JointVelocityResidual(UR5), act.QuadraticBarrier(-0.5, 0.5, size=6), 2.0)
               + ResidualCost(res.JointPositionResidual(UR5), act.RelaxedLogBarrier(-4.0, 4.0, 0.5, size=6), 0.1))
    return Problem(UR5, x0, N, prob.dt, running, prob.terminal_cost, name="every-term",
                   path_constraints=[JointLimits(UR5, margin=0.1),
                                     ResidualConstraint(res.FramePositionResidual(UR5, "tool0"), lower=[-1, -1, 0.05])],
                   terminal_constraints=[ResidualEquality(res.FrameVelocityResidual(UR5, "tool0", reference="world"))]), T


def saved_and_rebuilt(problem, us, path):
    """(the rollout xs of us, its result saved to ``path`` with the problem's record, the
    problem rebuilt from the file)."""
    xs = problem.rollout(us)
    result = Result(xs=xs, us=us, cost=problem.cost(xs, us), converged=True, iterations=1, status="converged",
                    solver="ddp", problem=problem.name)
    result.source = problem
    save_result(result, path)
    return xs, result, task.problem_of(load_result(path))


def test_saved_results_rebuild_the_residual_terms_for_show_and_plot(tmp_path, capsys):
    problem, T = _every_term_problem()
    us = problem.us_init + np.random.default_rng(0).normal(scale=3.0, size=problem.us_init.shape)
    xs, result, again = saved_and_rebuilt(problem, us, tmp_path / "r.npz")
    assert again.cost(xs, us) == pytest.approx(problem.cost(xs, us), rel=1e-12)
    assert again.violation(xs, us) == pytest.approx(problem.violation(xs, us), rel=1e-12) and again.violation(xs, us) > 0
    assert again.nc == problem.nc and again.nh == problem.nh == 6
    poses = [t for t in task.frame_targets(again) if t.rotation is not None]
    assert len(poses) == 1 and np.allclose(poses[0].rotation, T[:3, :3]) and np.allclose(poses[0].target, T[:3, 3])
    assert scene_of(result, again).objects["targets/pose_0"] == "triad"
    html, png = tmp_path / "r.html", tmp_path / "r.png"
    assert main(["show", str(tmp_path / "r.npz"), "--html", str(html)]) == 0
    g = constraint_margins(problem, xs, us)
    assert f"margins     min {g.nodes:+.4g} at the nodes, {g.substeps:+.4g} at the worst RK sub-step" \
        in capsys.readouterr().out
    assert main(["plot", str(tmp_path / "r.npz"), "--out", str(png)]) == 0
    assert html.stat().st_size > 10_000 and png.stat().st_size > 10_000
    fig = trajectory_figure(result, again)  # the constraint margins panel: one line per path constraint
    labels = [line.get_label() for line in fig.axes[3].get_lines()]
    margins = {label: line.get_ydata() for label, line in zip(labels, fig.axes[3].get_lines())}
    assert {"JointLimits", "ResidualConstraint"} <= set(labels)
    assert np.allclose(margins["JointLimits"], JointLimits(UR5, margin=0.1).evaluate(xs[1:])[0].min(axis=1))


def test_joint_velocity_limits_on_a_floating_base_in_ipopt_bounds_and_the_augmented_lagrangian():
    """The space manipulator (IPOPT's variables in the chart of its initial guess): arm joint
    speeds capped at 70 % of the free optimum's, held at every knot by both solvers."""
    prob = problems.space_manipulator.make(N=10, dt=0.2)
    free = solve(prob, "ddp")
    nq = prob.model.nq
    vmax = prob.model.velocity_limit.copy()
    vmax[6:] = 0.7 * np.abs(free.xs[1:, nq + 6:]).max(axis=0)
    model = replace(prob.model, velocity_limit=vmax)
    limited = Problem(model, prob.x0, prob.N, prob.dt, prob.running_cost, prob.terminal_cost, us_init=prob.us_init,
                      path_constraints=[JointLimits(model, position=False)])
    assert limited.violation(free.xs, free.us) > 0.05
    runs = [solve(limited, s, max_iter=1000) for s in ("ddp", "ipopt")]
    for r in runs:
        assert r.converged and np.all(np.abs(r.xs[1:, nq + 6:]) <= vmax[6:] + 1e-6), r.solver
    assert abs(runs[0].cost - runs[1].cost) < 5e-4 * runs[0].cost and runs[0].cost > free.cost


def test_constraint_margins_find_the_worst_rk_substep_between_the_nodes():
    """A position limit that every node respects but a sub-step between two nodes breaks: the
    base joint is pushed, then braked twice as hard, so that it turns back mid-interval."""
    prob, _ = _pose_task(N=6)
    us = prob.us_init.copy()
    us[0, 0], us[1, 0], us[2, 0] = 20.0, -40.0, 20.0
    sub = Problem(UR5, prob.x0, prob.N, prob.dt, substeps=4, us_init=us)
    xs = sub.rollout(us)
    q = substep_states(sub, xs, us)[:, :, 0]
    upper = UR5.upper_limit.copy()
    upper[0] = 0.5 * (q.max() + xs[1:, 0].max())  # between: above the nodes, below a sub-step
    assert q.max() > upper[0] > xs[1:, 0].max()
    model = replace(UR5, upper_limit=upper)
    limited = Problem(model, prob.x0, prob.N, prob.dt, substeps=4, us_init=us,
                      path_constraints=[JointLimits(model, velocity=False)])
    g = constraint_margins(limited, xs, us)
    k, s = np.unravel_index(int(np.argmax(q)), q.shape)
    assert g.nodes > 0 > g.substeps and (g.interval, g.substep) == (k, s) and g.constraint == "JointLimits"
    assert 0 < s < 4 and g.substeps == pytest.approx(upper[0] - q.max(), abs=1e-12)


def test_the_report_lists_every_target_term_with_its_error_at_the_final_node():
    """Pose, orientation, velocity and centre-of-mass targets (one a reference trajectory)
    each get a line whose error is computed independently here at the final state."""
    from optdyn.apps.report import task_errors, task_lines
    prob, T = _pose_task(N=6)
    R_goal = _pose(UR5, 33)[:3, :3]
    com_path = np.tile([0.1, 0.0, 0.3], (6, 1)) + np.linspace(0, 0.1, 6)[:, None]
    running = prob.running_cost + CoMPositionCost(UR5, com_path, 1.0)
    terminal = prob.terminal_cost + FrameOrientationCost(UR5, "wrist_2_link", R_goal, 1.0)
    prob = Problem(UR5, prob.x0, 6, prob.dt, running, terminal, us_init=prob.us_init)
    xs = prob.rollout(prob.us_init + 0.5)
    q, v = xs[-1, :6], xs[-1, 6:]
    errors = {t.kind: t for t in task_errors(prob, xs, prob.us_init).targets}
    assert set(errors) == {"pose", "velocity", "com", "orientation"}

    def angle(R):
        return np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
    R, p = dyn.frame_placement(UR5, q, "tool0")
    assert errors["pose"].distance == pytest.approx(np.linalg.norm(p - T[:3, 3]), rel=1e-9)
    assert errors["pose"].angle == pytest.approx(angle(T[:3, :3].T @ R), rel=1e-9)
    R2, _ = dyn.frame_placement(UR5, q, "wrist_2_link")
    assert errors["orientation"].angle == pytest.approx(angle(R_goal.T @ R2), rel=1e-9)
    assert errors["velocity"].distance == pytest.approx(np.linalg.norm(dyn.frame_jacobian(UR5, q, "tool0") @ v),
                                                        rel=1e-9)  # ‖local twist‖ = ‖world-aligned twist‖
    mass = UR5.inertia[:, 0]
    com = sum(m * dyn.point_position(UR5, q, UR5.body_names[i], UR5.inertia[i, 1:4]) for i, m in enumerate(mass))
    assert errors["com"].distance == pytest.approx(np.linalg.norm(com / mass.sum() - com_path[-1]), rel=1e-9)
    lines = task_lines(task_errors(prob, xs, prob.us_init))
    assert sum(line.startswith("target") for line in lines) == 4
    assert any("tool0 pose:" in line and " rad " in line for line in lines)


def test_a_problems_point_residuals_are_valued_in_one_pass(monkeypatch):
    """The frame-position and centre-of-mass residuals of a problem take their values from one
    pass over the knots for all their points (the trot's four swing feet: one forward
    kinematics per knot, not four): the values of residuals built alone, bit for bit, and of
    their own derivative pass."""
    from dynamics import batch

    model = dyn.models.ur5()
    alone = [res.FramePositionResidual(model, "tool0", (0.4, 0.3, 0.4)),
             res.FramePositionResidual(model, "wrist_2_link", (0.3, 0.1, 0.4), offset=(0.0, 0.1, 0.05)),
             res.CoMPositionResidual(model, (0.1, 0.0, 0.3))]
    shared = [res.FramePositionResidual(model, "tool0", (0.4, 0.3, 0.4)),
              res.FramePositionResidual(model, "wrist_2_link", (0.3, 0.1, 0.4), offset=(0.0, 0.1, 0.05)),
              res.CoMPositionResidual(model, (0.1, 0.0, 0.3))]
    x0 = np.r_[0.0, -1.2, 1.5, -0.3, 1.57, 0.0, np.zeros(6)]
    cost = sum((ResidualCost(r, weight=1.0) for r in shared[1:]), ResidualCost(shared[0], weight=1.0))
    prob = Problem(model, x0, N=7, dt=0.05, running_cost=cost)
    rng = np.random.default_rng(3)
    xs, us = x0 + 0.3 * rng.standard_normal((7, 12)), rng.standard_normal((7, 6))
    passes, kinematics = [], batch.point_kinematics_knots
    monkeypatch.setattr(res, "point_kinematics_knots", lambda *a: passes.append(a[2].size) or kinematics(*a))
    values = [r.value(xs, us) for r in shared]
    assert passes == [2 + model.njoints]
    for a, b in zip(alone, values):
        np.testing.assert_array_equal(a.value(xs, us), b)
        np.testing.assert_allclose(a.evaluate(xs, us).r, b, rtol=0, atol=1e-15)
    assert len(passes) == 1 + 2 * len(alone)  # then each alone residual's value and derivatives
    prob.cost(np.vstack([xs, xs[-1:]]), us)
    assert len(passes) == 1 + 2 * len(alone)  # the problem's costs at the same knots: the pass above serves them
