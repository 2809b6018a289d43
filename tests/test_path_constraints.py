"""Path constraints on any residual: equalities at nodes 1..N, constraints on (x_k, u_k) at the
knots 0..N−1 ("stage constraints"); their rows against differences, the solvers' agreement,
the multipliers, saved results and bad input."""
import numpy as np
import pytest
from numdiff import central, rel_error, second_differences

import dynamics as dyn
import problems
from optdyn import solve
from optdyn.apps.clearance import constraint_margins, substep_states
from optdyn.constraints import JointLimits, ResidualConstraint, ResidualEquality, SphereClearance
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.ocp import residuals as res
from optdyn.ocp.problem import Problem
from optdyn.ocp.user_residual import UserResidual
from test_residuals import FLOAT, UR5, _plus, _state, saved_and_rebuilt  # x ⊕ δx, saved results


def _power(model, nu):
    """r = (½‖u‖², Σ_i u_i v_{a_i}, v_0 u_0²) of the last nu velocities v_a: a residual of (x, u)
    whose three Hessian blocks are nonzero (the user's exact Hessian)."""
    nq, nv = model.nq, model.nv
    a = nq + nv - nu  # the actuated velocities are the last nu coordinates of x

    def value(x, u):
        return np.array([0.5 * u @ u, u @ x[a:], x[nq] * u[0] ** 2])

    def jacobian(x, u):
        rx, ru = np.zeros((3, 2 * nv)), np.zeros((3, nu))
        rx[1, 2 * nv - nu:], rx[2, nv] = u, u[0] ** 2
        ru[0], ru[1], ru[2, 0] = u, x[a:], 2 * x[nq] * u[0]
        return rx, ru

    def hessian(x, u, rho):
        Hxx, Hux, Huu = np.zeros((2 * nv, 2 * nv)), np.zeros((nu, 2 * nv)), rho[0] * np.eye(nu)
        Hux[:, 2 * nv - nu:] = rho[1] * np.eye(nu)
        Hux[0, nv] += 2 * rho[2] * u[0]
        Huu[0, 0] += 2 * rho[2] * x[nq]
        return Hxx, Hux, Huu
    return UserResidual(model, 3, value, jacobian, hessian, nu=nu, name="power")


def _knot_constraints(model, nu):
    return [ResidualConstraint(_power(model, nu), [-1.0, -np.inf, -2.0], [3.0, 0.5, np.inf]),
            ResidualEquality(res.ControlResidual(nu, np.linspace(-1, 1, nu))),
            ResidualEquality(res.FrameVelocityResidual(model, "tool0", np.arange(6.0), reference="world")),
            ResidualConstraint(res.FramePlacementResidual(model, "tool0", np.eye(4)), -0.1, 0.2),
            SphereClearance(model, [("tool0", (0.0, 0.0, 0.05))], (0.3, 0.1, 0.4), 0.1)]


@pytest.mark.parametrize("model", [UR5, FLOAT], ids=["ur5", "floating"])
def test_knot_rows_match_differences_along_x_oplus_dx_and_u(model):
    """c, c_z and every row's Hessian c_zz in z = (δx, u) of constraints on (x, u) and of state
    constraints at knots, against central and second differences along (x ⊕ δx, u + δu)."""
    nu, ndx = model.nv - (6 if model is FLOAT else 0), 2 * model.nv
    x, u = _state(model, 3), np.random.default_rng(4).normal(size=nu)
    for c in _knot_constraints(model, nu):
        v, cz, czz = (t[0] for t in c.evaluate_knots(x[None], u[None], ndx))

        def f(z):
            return c.value_knots(_plus(model, x, z[:ndx])[None], (u + z[ndx:])[None])[0]
        name = type(c).__name__
        assert v.shape == (c.size,) and cz.shape == (c.size, ndx + nu) and czz.shape == (c.size, ndx + nu, ndx + nu)
        assert np.allclose(v, f(np.zeros(ndx + nu)), atol=1e-14), name
        assert rel_error(cz, central(f, np.zeros(ndx + nu))) < 1e-7, name
        assert rel_error(czz, second_differences(f, ndx + nu)) < 1e-6, name
        if c.depends_on_u and c.size == 3:  # the power rows: every second-order block is nonzero
            assert np.abs(czz[:, ndx:, :ndx]).max() > 0.1 and np.abs(czz[:, ndx:, ndx:]).max() > 0.1
        elif not c.depends_on_u:  # the state rows: curved in x
            assert np.abs(czz[:, :ndx, :ndx]).max() > 0.1, name


def test_check_derivatives_compares_the_control_blocks_of_a_stage_constraint(capsys):
    import optdyn
    x, u = _state(UR5, 8), np.random.default_rng(9).normal(size=6)
    good = ResidualConstraint(_power(UR5, 6), -1.0, 3.0)
    assert optdyn.check_derivatives(good, x, u) < 1e-6
    assert {"c_u", "c_ux", "c_uu"} <= set(capsys.readouterr().out.split())
    bad = _power(UR5, 6)
    exact = bad._hessian
    bad._hessian = lambda x, u, rho: tuple(1.1 * h for h in exact(x, u, rho))  # a 10 % error in the Hessian
    assert optdyn.check_derivatives(ResidualConstraint(bad, -1.0, 3.0), x, u, verbose=False) > 0.05


def test_the_problem_stacks_stage_rows_at_the_knots_and_state_rows_at_the_nodes():
    """A control residual without ``ndx`` on a floating base (nx ≠ ndx) gets a zero x-part of
    width ndx; state constraints stay path constraints (nodes 1..N), control ones become
    stage constraints (knots 0..N−1); equality rows are flagged."""
    prob = problems.space_manipulator.make(N=4, dt=0.2)
    nu, ndx = prob.nu, prob.ndx
    eq_v = ResidualEquality(res.FrameVelocityResidual(prob.model, "tool0"))
    box = ResidualConstraint(res.ControlResidual(nu), -2.0, 2.0)
    p = Problem(prob.model, prob.x0, prob.N, prob.dt, prob.running_cost, prob.terminal_cost,
                path_constraints=[box, eq_v, ResidualEquality(res.ControlResidual(nu))])
    assert p.path_constraints == (eq_v,) and p.nc == 6 and p.ng == 3 * nu and p.path_equalities.all()
    assert np.array_equal(p.stage_equalities, np.r_[np.zeros(2 * nu, bool), np.ones(nu, bool)])
    xs, us = prob.xs_init[:-1], np.random.default_rng(0).normal(size=(prob.N, nu))
    g, gz, gzz = p.stage_constraint_terms(xs, us)
    assert g.shape == (prob.N, 3 * nu) and gz.shape == (prob.N, 3 * nu, ndx + nu) and not gzz.any()
    assert np.allclose(g[:, :nu], us + 2.0) and np.allclose(g[:, 2 * nu:], us) and not gz[:, :, :ndx].any()
    assert np.allclose(gz[:, nu:2 * nu, ndx:], -np.eye(nu))
    us[1, 0] = 2.5
    v = p.violation(np.r_[xs, xs[-1:]], us)
    assert v >= 2.5 and v == pytest.approx(max(2.5, np.abs(p.path_constraint_values(xs[1:])).max()))


def test_shared_constraint_terms_and_values_are_those_of_fresh_evaluations():
    """The augmented Lagrangian's expansion takes the constraints' derivatives in arrays they
    keep (``shared``), its merit the values alone: the same numbers as a fresh evaluation, at
    other states too (kept blocks rewritten, not left from the call before)."""
    prob = problems.get("arm-obstacle")
    rng = np.random.default_rng(3)
    for xs in (prob.x0 + rng.normal(size=(prob.N + 1, prob.nx)) for _ in range(2)):  # states about x0
        fresh = prob.path_constraint_terms(xs[1:])
        for a, b in zip(prob.path_constraint_terms(xs[1:], shared=True), fresh):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(prob.path_constraint_values(xs[1:]), fresh[0], rtol=1e-13, atol=1e-14)
        for a, b in zip(prob.terminal_constraint_terms(xs[-1], shared=True), prob.terminal_constraint_terms(xs[-1])):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(prob.terminal_constraint_values(xs[-1]), prob.terminal_constraint_terms(xs[-1])[0])


def test_constraint_margins_check_stage_constraints_at_the_substeps_with_the_control_held():
    """u_k·v ≤ 0.5 on (x, u): its margin at every RK sub-step of interval k is 0.5 − u_k·v(t)
    with u_k held (computed here from the sub-step states), the knots' margin its s = 0 column."""
    p = Problem(UR5, np.zeros(12), 5, 0.1, substeps=3,
                path_constraints=[ResidualConstraint(_power(UR5, 6), None, [np.inf, 0.5, np.inf])])
    assert not p.path_constraints and len(p.stage_constraints) == 1
    us = np.random.default_rng(3).normal(scale=5.0, size=(5, 6))
    xs = p.rollout(us)
    expected = 0.5 - np.einsum("ki,ksi->ks", us, substep_states(p, xs, us)[:, :, 6:])
    g = constraint_margins(p, xs, us)
    k, s = np.unravel_index(int(np.argmin(expected)), expected.shape)
    assert g.substeps == pytest.approx(expected.min(), abs=1e-12) and (g.interval, g.substep) == (k, s)
    assert g.nodes == pytest.approx(expected[:, 0].min(), abs=1e-12) and g.constraint == "ResidualConstraint"
    assert expected.min() < expected[:, 0].min()  # the check between the knots sees more


# ---------------------------------------------------------------- IPOPT's rows: bounds, Jacobian, Hessian
def _central(f, z, h=1e-6):
    return np.array([(np.atleast_1d(f(z + h * e)) - np.atleast_1d(f(z - h * e))) / (2 * h) for e in np.eye(z.size)]).T


def test_ipopt_rows_of_path_equalities_and_stage_constraints_match_differences():
    """On the space manipulator (its state variables in the chart of the guess): the equality rows
    have g_l = g_u = 0, the stage rows sit on (x_k, u_k) for k = 0..N−1, and the sparse Jacobian
    and Lagrangian Hessian with random multipliers match central differences of the callbacks."""
    import scipy.sparse as sp

    from optdyn.solvers.ipopt import INF, MultipleShootingNLP
    base = problems.space_manipulator.make(N=3, dt=0.2)
    m, nu = base.model, base.nu
    cons = [ResidualEquality(res.FrameVelocityResidual(m, "tool0", np.full(6, 0.1))),
            ResidualConstraint(_power(m, nu), [-1.0, -np.inf, -2.0], [3.0, 0.5, np.inf]),
            ResidualEquality(res.ControlResidual(nu, np.ones(nu)))]
    prob = Problem(m, base.x0, base.N, base.dt, base.running_cost, base.terminal_cost, path_constraints=cons)
    nlp = MultipleShootingNLP(prob)
    N, ndx, nc, ng = prob.N, prob.ndx, prob.nc, prob.ng
    assert (nc, ng) == (6, 4 + nu) and nlp.m == N * (ndx + nc + ng) + prob.nh
    path_cu = nlp.cu[N * ndx: N * (ndx + nc)].reshape(N, nc)
    stage_cu = nlp.cu[N * (ndx + nc): N * (ndx + nc + ng)].reshape(N, ng)
    assert not path_cu.any() and np.all(stage_cu[:, :4] == INF) and not stage_cu[:, 4:].any()
    rng = np.random.default_rng(3)
    us = base.us_init + 0.3 * rng.standard_normal(base.us_init.shape)
    z = nlp.pack(prob.rollout(us), us) + 0.01 * rng.standard_normal(nlp.n)
    xs, us = nlp.unpack(z)
    g = nlp.constraints(z)
    assert np.allclose(g[N * (ndx + nc): N * (ndx + nc + ng)], prob.stage_constraint_values(xs[:-1], us).ravel())
    rows, cols = nlp.jacobianstructure()
    assert len(set(zip(rows, cols))) == rows.size

    def jac(w):
        return sp.coo_matrix((nlp.jacobian(w), (rows, cols)), shape=(nlp.m, nlp.n)).toarray()
    J, fd = jac(z), _central(nlp.constraints, z)
    assert np.abs(J - fd).max() <= 1e-7 * (1 + np.abs(fd).max())
    assert np.abs(J[N * (ndx + nc):, :]).max() > 0.1  # the stage rows are in the pattern
    lam, sigma = rng.standard_normal(nlp.m), 0.6
    hr, hc = nlp.hessianstructure()
    L = sp.coo_matrix((nlp.hessian(z, lam, sigma), (hr, hc)), shape=(nlp.n, nlp.n)).toarray()
    H = L + np.tril(L, -1).T
    fd = _central(lambda w: sigma * nlp.gradient(w) + jac(w).T @ lam, z)
    assert np.abs(H - fd).max() <= 1e-6 * (1 + np.abs(fd).max())


# ---------------------------------------------------------------- the solvers on a locked double pendulum
U_MAX = 8.0


def _locked_double_pendulum():
    """The double pendulum swing-up (terminal cost) with its elbow at rest at every node by a
    path equality v₂ = 0 (nodes 1..N) and its shoulder torque bounded by a stage constraint
    |u₁| ≤ U_MAX (knots 0..N−1, rows of a control residual, not bounds on the variables)."""
    base = problems.pendulum.make_double_pendulum(N=40, terminal="cost")
    m = base.model
    lock = ResidualEquality(res.JointVelocityResidual(m, joints=[m.joint_names[1]]))
    shoulder = ResidualConstraint(res.ControlResidual(2), [-U_MAX, -np.inf], [U_MAX, np.inf])
    return base, Problem(m, base.x0, base.N, base.dt, base.running_cost, base.terminal_cost,
                         path_constraints=[lock, shoulder], name="locked-double-pendulum")


@pytest.fixture(scope="module")
def locked():
    base, prob = _locked_double_pendulum()
    free = solve(base, "ddp")
    runs = {s: solve(prob, s, max_iter=1000) for s in ("ipopt", "ddp", "ilqr")}
    return base, prob, free, runs


def test_the_constraints_hold_at_every_knot_where_the_free_optimum_breaks_them_and_the_solvers_agree(locked):
    base, prob, free, runs = locked
    assert np.abs(free.xs[1:, 3]).max() > 1.0 and np.abs(free.us[:, 0]).max() > U_MAX + 1.0
    for s, r in runs.items():
        assert r.converged, (s, r.status, r.message)
        assert np.abs(r.xs[1:, 3]).max() < 1e-6 and np.abs(r.us[:, 0]).max() < U_MAX + 1e-6, s
        assert np.abs(r.us[:, 0]).max() > U_MAX - 1e-4, s  # the torque bound is active
        assert prob.violation(r.xs, r.us) < 1e-6
    costs = np.array([r.cost for r in runs.values()])
    assert np.ptp(costs) < 1e-5 * costs.min() and costs.min() > free.cost
    for s in ("ddp", "ilqr"):
        assert np.allclose(runs[s].us, runs["ipopt"].us, atol=2e-3), s


def test_ipopt_multipliers_of_the_equality_and_stage_rows_match_the_augmented_lagrangians(locked):
    """IPOPT's Lagrangian is f + Σ κ·row, the augmented Lagrangian's J − Σ λ·row: at the common
    optimum κ = −λ for the path equality (v₂ = 0) and the stage rows (zero where |u₁| < U_MAX)."""
    _, prob, _, runs = locked
    ip, al = runs["ipopt"].extra["multipliers"], runs["ddp"].extra
    assert ip["path"].shape == al["lambda"].shape == (prob.N, 1)
    assert ip["stage"].shape == al["lambda_stage"].shape == (prob.N, 2)
    scale = np.abs(ip["path"]).max()
    assert scale > 1.0 and np.abs(ip["path"] + al["lambda"]).max() < 1e-3 * scale
    stage_scale = np.abs(ip["stage"]).max()
    assert stage_scale > 1.0 and np.abs(ip["stage"] + al["lambda_stage"]).max() < 1e-3 * stage_scale
    g = prob.stage_constraint_values(runs["ipopt"].xs[:-1], runs["ipopt"].us)
    assert np.all(np.abs(ip["stage"][g > 1e-3]) < 1e-6) and np.all(ip["stage"] <= 1e-8)


def test_the_multipliers_of_a_solve_warm_start_the_next(locked):
    """``multipliers`` starts the augmented Lagrangian from a result's multipliers and penalty:
    from the optimum with its own, one outer iteration and a few inner ones find it again;
    from the optimum with zero multipliers the outer loop has to rebuild them."""
    _, prob, _, runs = locked
    r = runs["ilqr"]
    warm = solve(prob, "ilqr", us_init=r.us, multipliers=r.extra)
    cold = solve(prob, "ilqr", us_init=r.us)
    assert warm.converged and cold.converged
    assert warm.extra["outer_iterations"] == 1 and cold.extra["outer_iterations"] > 2
    assert warm.iterations < cold.iterations and abs(warm.cost - r.cost) < 1e-6 * r.cost
    assert np.allclose(warm.extra["lambda"], r.extra["lambda"], atol=1e-2 * np.abs(r.extra["lambda"]).max())
    bad = {"lambda": np.zeros((prob.N, 2)), "lambda_stage": r.extra["lambda_stage"], "mu": r.extra["mu"]}
    with pytest.raises(ValueError, match=r"^multipliers: lambda expected finite values of shape \(\d+, 1\)"):
        solve(prob, "ilqr", multipliers=bad)
    with pytest.raises(ValueError, match=r"^multipliers: expected a mapping with lambda"):
        solve(prob, "ilqr", multipliers=[1.0])
    with pytest.raises(ValueError, match=r"^multipliers: rho expected a finite penalty > 0"):
        solve(prob, "ilqr", multipliers={**r.extra, "rho": -1.0})


def test_an_end_effector_velocity_equality_holds_at_every_node_and_the_solvers_agree():
    """UR5 reaching a point at the tool's height: its free optimum moves the tool vertically; with
    the path equality v_z(tool0) = 0 (one row of a world-aligned frame velocity) at nodes 1..N,
    IPOPT, DDP and iLQR reach the same optimum with no vertical tool velocity at any node."""
    q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    x0, g0, N = np.r_[q0, np.zeros(6)], dyn.gravity_torques(UR5, q0), 20
    target = dyn.frame_placement(UR5, q0, "tool0")[1] + np.array([0.2, 0.15, 0.0])
    running = (StateCost(np.r_[np.zeros(6), 1e-2 * np.ones(6)], x0) + ControlCost(1e-3, g0)
               + FramePositionCost(UR5, "tool0", target, 1.0))
    terminal = FramePositionCost(UR5, "tool0", target, 1e3)
    velocity = res.FrameVelocityResidual(UR5, "tool0", reference="world")
    free, flat = (Problem(UR5, x0, N, 0.05, running, terminal, us_init=np.tile(g0, (N, 1)), path_constraints=c)
                  for c in ([], [ResidualEquality(velocity, rows=[2])]))
    assert flat.nc == 1 and flat.path_equalities.all()
    vz = lambda r: velocity.value(r.xs[1:], np.zeros((N, 0)))[:, 2]  # noqa: E731
    assert np.abs(vz(solve(free, "ddp"))).max() > 0.1
    runs = {s: solve(flat, s) for s in ("ipopt", "ddp", "ilqr")}
    for s, r in runs.items():
        assert r.converged and np.abs(vz(r)).max() < 1e-6, (s, r.status)
    costs = np.array([r.cost for r in runs.values()])
    assert np.ptp(costs) < 1e-6 * costs.min()
    for s in ("ddp", "ilqr"):
        assert np.allclose(runs[s].us, runs["ipopt"].us, atol=1e-4), s


# ---------------------------------------------------------------- saved results, bad input
def test_saved_results_record_the_path_equalities_and_stage_constraints(tmp_path):
    model = UR5
    x0 = np.r_[0.0, -1.2, 1.5, -0.3, 1.57, 0.0, np.zeros(6)]
    cons = [ResidualEquality(res.FrameVelocityResidual(model, "tool0", np.full(6, 0.1), reference="world"),
                             rows=[2, 0, 1, 3, 4, 5]),
            ResidualConstraint(res.ControlResidual(6, np.ones(6), ndx=12), -5.0, 5.0),
            ResidualEquality(res.ControlResidual(6, np.zeros(6), ndx=12))]
    prob = Problem(model, x0, 5, 0.05, path_constraints=cons, name="recorded")
    us = prob.us_init + 1.0
    xs, result, again = saved_and_rebuilt(prob, us, tmp_path / "r.npz")
    assert (again.nc, again.ng) == (prob.nc, prob.ng) == (6, 18)
    assert np.array_equal(again.stage_equalities, prob.stage_equalities)
    assert again.path_equalities.all() and again.violation(xs, us) == pytest.approx(prob.violation(xs, us), rel=1e-12)
    assert np.array_equal(again.path_constraints[0].rows, [2, 0, 1, 3, 4, 5])
    assert np.allclose(again.path_constraint_values(xs[1:]), prob.path_constraint_values(xs[1:]))
    assert np.allclose(again.stage_constraint_values(xs[:-1], us), prob.stage_constraint_values(xs[:-1], us))
    from optdyn.viz.plots import trajectory_figure
    lines = {line.get_label(): line.get_ydata() for line in trajectory_figure(result, again).axes[3].get_lines()}
    g = prob.stage_constraint_values(xs[:-1], us)
    assert np.allclose(lines["ResidualConstraint (on u)"], g[:, :12].min(axis=1))
    assert np.allclose(lines["ResidualEquality (on u)"], -np.abs(g[:, 12:]).max(axis=1))
    h = prob.path_constraint_values(xs[1:])
    assert np.allclose(lines["ResidualEquality"], -np.abs(h).max(axis=1)) and np.all(lines["ResidualEquality"] < 0)


def _problem(**kw):
    x0 = np.r_[0.0, -1.2, 1.5, -0.3, 1.57, 0.0, np.zeros(6)]
    return Problem(UR5, x0, 5, 0.05, **kw)


BAD = [
    (lambda: _problem(terminal_constraints=[ResidualEquality(res.ControlResidual(6))]), "terminal_constraints"),
    (lambda: _problem(path_constraints=[ResidualConstraint(res.ControlResidual(4), -1.0, 1.0)]), "path_constraints"),
    (lambda: ResidualConstraint(res.ControlResidual(6), 1.0, -1.0), "lower"),
    (lambda: ResidualConstraint(res.ControlResidual(6), np.nan, 1.0), "lower"),
    (lambda: ResidualConstraint(res.ControlResidual(6), -1.0, np.ones(5)), "upper"),
    (lambda: ResidualEquality(np.zeros(6)), "residual"),
    (lambda: ResidualEquality(res.ControlResidual(6), rows=[1, 1]), "rows"),
    (lambda: ResidualEquality(res.ControlResidual(6), rows=[6]), "rows"),
    (lambda: ResidualEquality(res.ControlResidual(6), rows=[0.5]), "rows"),
    (lambda: ResidualEquality(res.ControlResidual(6)).evaluate(np.zeros((2, 12))), "xs"),
    (lambda: _problem(path_constraints=[ResidualEquality(res.ControlResidual(6))]).stage_constraint_terms(
        np.zeros((2, 12)), np.zeros((2, 5))), "us"),
]


@pytest.mark.parametrize("make,name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_bad_input_raises_a_value_error_naming_the_argument(make, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        make()


def test_the_gauss_newton_model_of_the_augmented_lagrangian_leaves_out_the_rows_curvature():
    """The penalty's Hessian in the exact model (DDP's) is Σ_i ψ''_i c_z,i c_z,iᵀ + ψ'_i c_zz,i,
    in iLQR's (``gauss_newton``) the first sum alone, as its costs' are their Gauss–Newton parts:
    checked against the rows' own derivatives for the clearance rows of arm-obstacle (nodes),
    a nonlinear stage constraint (knots) and the terminal equality, at active multipliers."""
    from optdyn.solvers.augmented_lagrangian import ALObjective
    from optdyn.solvers.ddp import Objective
    task = problems.get("arm-obstacle")
    stage = ResidualConstraint(_power(UR5, 6), [-1.0, -np.inf, -2.0], [3.0, 0.5, np.inf])
    p = Problem(UR5, task.x0, task.N, task.dt, task.running_cost, task.terminal_cost,
                path_constraints=[*task.path_constraints, stage], terminal_constraints=task.terminal_constraints)
    rng = np.random.default_rng(5)
    us = task.us_init + rng.normal(scale=0.5, size=(p.N, p.nu))
    xs = p.x0 + rng.normal(scale=0.3, size=(p.N + 1, p.nx))  # states about x0
    lam, lam_g, mu, rho = rng.uniform(0, 5, (p.N, p.nc)), rng.uniform(0, 5, (p.N, p.ng)), rng.normal(size=p.nh), 10.0

    def weights(c, lam):  # ψ', ψ'' of inequality rows c ≥ 0
        t = np.maximum(0.0, lam - rho * c)
        return -t, rho * (t > 0)

    c, cx, cxx = p.path_constraint_terms(xs[1:-1])
    g, gz, gzz = p.stage_constraint_terms(xs[:-1], us)
    h, hx, hxx = p.terminal_constraint_terms(xs[-1])
    cN, cNx, cNxx = (t[0] for t in p.path_constraint_terms(xs[-1:]))  # node N's rows
    (c1, c2), (g1, g2), h1 = weights(c, lam[:-1]), weights(g, lam_g), mu + rho * h
    assert c2.any() and g2.any() and np.any(c1) and np.any(g1)  # active rows of both kinds
    n = p.ndx
    for gauss_newton in (False, True):
        own = np.array(not gauss_newton, dtype=float)
        al = ALObjective(p, lam, mu, rho, lam_g, gauss_newton=gauss_newton)
        base = Objective(p, gauss_newton)
        zz = np.einsum("ki,kia,kib->kab", g2, gz, gz) + own * np.einsum("ki,kiab->kab", g1, gzz)
        zz[1:, :n, :n] += np.einsum("ki,kia,kib->kab", c2, cx, cx) + own * np.einsum("ki,kiab->kab", c1, cxx)
        got = [a - b for a, b in zip(al.running(xs[:-1], us)[3:], base.running(xs[:-1], us)[3:])]
        for block, expected in zip(got, (zz[:, :n, :n], zz[:, n:, :n], zz[:, n:, n:])):
            np.testing.assert_allclose(block, expected, rtol=1e-10, atol=1e-9)
        terminal = al.terminal(xs[-1])[2] - base.terminal(xs[-1])[2]
        n1, n2 = weights(cN, lam[-1])
        expected = (rho * hx.T @ hx + own * np.einsum("i,iab->ab", h1, hxx) + np.einsum("i,ia,ib->ab", n2, cNx, cNx)
                    + own * np.einsum("i,iab->ab", n1, cNxx))
        np.testing.assert_allclose(terminal, expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("solver", ["ddp", "ilqr", "al-ddp", "al-ilqr"])
def test_a_trajectory_is_linearised_once_across_the_multiplier_updates(solver, monkeypatch):
    """The augmented Lagrangian revises its multipliers and penalty at the iterate an inner
    solve ended at (the outer loop) or between two steps (the BCL forms): the cost's expansion
    changes there, the dynamics' does not, and it is not made again — every linearisation of a
    solve is at a trajectory not linearised before — while the iterates are, bit for bit, those
    of a solve that linearises at every expansion."""
    import optdyn.solvers.ddp as ddp
    from optdyn.solvers.workspace import Workspace
    prob = _locked_double_pendulum()[1]
    calls, linearize = [], ddp.linearize

    def counted(problem, xs, us, *args):
        calls.append((xs.tobytes(), us.tobytes()))
        return linearize(problem, xs, us, *args)

    monkeypatch.setattr(ddp, "linearize", counted)
    held = solve(prob, solver, max_iter=1000)
    assert held.converged and len(calls) == len(set(calls))
    once = len(calls)
    calls.clear()
    monkeypatch.setattr(Workspace, "linearization_at", lambda self, *args: None)
    every = solve(prob, solver, max_iter=1000)
    assert len(calls) > once  # the revisions expanded trajectories linearised before
    assert every.iterations == held.iterations and np.array_equal(every.us, held.us)
    assert np.array_equal(every.xs, held.xs)


@pytest.mark.parametrize("solver", ["fddp", "filqr"])
def test_a_converged_feasibility_driven_inner_solve_starts_the_next_without_a_rollout(solver, monkeypatch):
    """A feasibility-driven inner solve converges with its gaps closed, its states then the
    rollout of its controls bit for bit: the outer loop's next inner solve starts from them
    without rolling the controls out again, and its iterates are, bit for bit, those of a
    solve that rolls out at every outer iteration."""
    from optdyn.solvers.workspace import Workspace
    prob = _locked_double_pendulum()[1]
    rollouts, rollout = [], Problem.rollout

    def counted(self, us, x0=None):
        rollouts.append(1)
        return rollout(self, us, x0)

    monkeypatch.setattr(Problem, "rollout", counted)
    held = solve(prob, solver, max_iter=1000)
    assert held.converged and held.extra["outer_iterations"] > 2
    assert not rollouts  # the guess gives the first states, each inner solve the next one's
    monkeypatch.setattr(Workspace, "rollout_of", lambda self, *args: None)
    every = solve(prob, solver, max_iter=1000)
    assert rollouts  # the outer iterations after the first rolled out again
    assert every.iterations == held.iterations and np.array_equal(every.us, held.us)
    assert np.array_equal(every.xs, held.xs) and np.array_equal(every.history["violation"], held.history["violation"])


def test_the_augmented_lagrangians_expansion_after_new_multipliers_is_a_new_objectives():
    """The augmented Lagrangian keeps the problem's running terms and the stage rows of the
    trajectory it expanded last, per kind of Hessians (DDP's exact model, iLQR's Gauss–Newton
    one): expanded again there after new multipliers and penalty (the outer loop's update) its
    terms are, bit for bit, those a new objective makes, and at another trajectory too."""
    from optdyn.solvers.augmented_lagrangian import ALObjective
    prob = _locked_double_pendulum()[1]
    rng = np.random.default_rng(4)
    trajectories = [(prob.rollout(us)[:-1], us) for us in rng.normal(scale=3.0, size=(2, prob.N, prob.nu))]
    for gauss_newton in (False, True):
        al = ALObjective(prob, np.zeros((prob.N, prob.nc)), np.zeros(0), 1.0, np.zeros((prob.N, prob.ng)),
                         gauss_newton=gauss_newton)
        al.running(*trajectories[0])
        al.lam, al.lam_stage, al.rho = rng.uniform(0, 5, al.lam.shape), rng.uniform(0, 5, al.lam_stage.shape), 30.0
        for xs, us in trajectories:
            new = ALObjective(prob, al.lam, al.mu, al.rho, al.lam_stage, gauss_newton=gauss_newton).running(xs, us)
            for got, expected in zip(al.running(xs, us), new):
                assert np.array_equal(got, expected)


def test_the_augmented_lagrangian_keeps_its_rows_values_for_that_trajectory_only():
    """What an augmented Lagrangian keeps of the trajectory it last evaluated — the problem's
    cost and rows there, for the value after new multipliers and penalty at the same iterate,
    for the multiplier update there (the outer loop's) and for the cost and largest violation
    the solvers' history records — gives what a new objective computes, and at another
    trajectory the problem's own values there."""
    from optdyn.solvers.augmented_lagrangian import ALObjective
    prob = _locked_double_pendulum()[1]
    rng = np.random.default_rng(3)
    al = ALObjective(prob, np.zeros((prob.N, prob.nc)), np.zeros(0), 10.0, np.zeros((prob.N, prob.ng)))
    trajectories = [(prob.rollout(us), us) for us in rng.normal(scale=3.0, size=(2, prob.N, prob.nu))]
    violations = [prob.violation(xs, us) for xs, us in trajectories]
    assert violations[0] != violations[1]
    al.value(*trajectories[0])
    al.lam, al.lam_stage, al.rho = rng.uniform(0, 5, al.lam.shape), rng.uniform(0, 5, al.lam_stage.shape), 100.0
    for (xs, us), v in zip(trajectories, violations):
        assert al.violation(xs, us) == v and al.cost(xs, us) == prob.cost(xs, us)
        assert al.value(xs, us) == ALObjective(prob, al.lam, al.mu, al.rho, al.lam_stage).value(xs, us)
    for xs, us in trajectories[::-1]:  # the last evaluated first
        fresh = ALObjective(prob, al.lam, al.mu, al.rho, al.lam_stage)
        fresh.update(xs, us)
        al.update(xs, us)
        assert np.array_equal(al.lam, fresh.lam) and np.array_equal(al.lam_stage, fresh.lam_stage)


def test_a_solve_that_stops_short_names_the_path_constraint_its_start_violates():
    """Path constraints hold at nodes 1..N: where x0 is outside one (an arm started with a
    joint's velocity past its limit), a solve that stops short says so, naming the joint and
    the limit; one that converges, or starts inside, says nothing of it (the Panda reach from
    q = 0, outside joint 4's range [-3.07, -0.07], ended "infeasible" or at the iteration
    limit with every solver, silently)."""
    reach = problems.get("ur5-reach")
    model, x0 = reach.model, reach.x0.copy()
    x0[model.nq + 2] = 10.0  # elbow_joint at 10 rad/s, its limit 3.15
    limits = [JointLimits(model)]
    started = Problem(model, x0, 10, reach.dt, reach.running_cost, reach.terminal_cost, path_constraints=limits)
    inside = Problem(model, reach.x0, 10, reach.dt, reach.running_cost, reach.terminal_cost, path_constraints=limits)
    for solver in ("ddp", "ipopt"):
        stopped = solve(started, solver, max_iter=2)
        assert not stopped.converged
        assert stopped.message.endswith("x0 violates a path constraint by 6.85 (JointLimits: elbow_joint velocity 10 "
                                        "outside [-3.15, 3.15]): the path constraints hold from node 1 on, so the "
                                        "first interval must bring the state within them"), stopped.message
        assert "x0 violates" not in solve(inside, solver, max_iter=2).message
    assert "x0 violates" not in solve(inside, "ddp").message
