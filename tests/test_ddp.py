"""DDP / iLQR (solver types on one iteration), the augmented-Lagrangian loop and ``solve``."""
import numpy as np
import pytest
from scipy.optimize import lsq_linear

from dynamics import ModelBuilder
from dynamics.models import double_pendulum
from dynamics.parallel import UNMARKED
from optdyn.ocp.constraints import SphereClearance, StateEquality
from optdyn.costs import ControlCost, StateCost
from optdyn.ocp.shooting import transition_hessian, transition_work
from optdyn.solvers.ddp import forward_pass, linearize
from optdyn.solvers.riccati import SECOND_ORDER, Expansion, Value, backward_pass, contracted_tensor
from optdyn.solvers.linalg import box_qp, cholesky, cholesky_solve, cholesky_solve_rows
from optdyn.ocp.problem import Problem
from optdyn.solvers.solve import solve
import problems
from problems import pendulum, ur5_reach

pytestmark = pytest.mark.cost(37)

MASS, DT, N, SUB = 2.0, 0.1, 15, 2
WX, WU, WN = 1.0, 0.1, 100.0
REF = np.array([1.0, 0.0])


def slider(u_max=np.inf):
    """A cart on a prismatic joint without gravity: s̈ = τ/m, a genuinely linear system."""
    b = ModelBuilder("slider")
    b.add_link("base")
    b.add_link("cart", mass=MASS, inertia=0.1 * np.eye(3))
    b.add_joint("slide", "prismatic", "base", "cart", axis=(1.0, 0.0, 0.0))
    m = b.build(gravity=(0.0, 0.0, 0.0))
    return Problem(m, [0.0, 0.0], N=N, dt=DT, running_cost=StateCost(WX, REF) + ControlCost(WU, nu=1),
                   terminal_cost=StateCost(WN, REF), substeps=SUB, u_lower=[-u_max], u_upper=[u_max])


def exact_discretisation():
    """Double integrator with u held over h: exact, hence what RK4 must reproduce."""
    h = DT / SUB
    A1, B1 = np.array([[1.0, h], [0.0, 1.0]]), np.array([[h * h / (2 * MASS)], [h / MASS]])
    A, B = np.eye(2), np.zeros((2, 1))
    for _ in range(SUB):
        A, B = A1 @ A, A1 @ B + B1
    return A, B


def lq_least_squares(u_max):
    """The LQ problem as a (bounded) linear least-squares problem in u (independent reference)."""
    A, B = exact_discretisation()
    Phi, Gam = [np.eye(2)], [np.zeros((2, N))]
    for k in range(N):
        Phi.append(A @ Phi[-1])
        G = A @ Gam[-1]
        G[:, k:k + 1] += B
        Gam.append(G)
    rows, rhs = [], []
    for k in range(N + 1):
        w = np.sqrt(DT * WX) if k < N else np.sqrt(WN)
        rows.append(w * Gam[k])
        rhs.append(w * (REF - Phi[k] @ np.zeros(2)))
    rows.append(np.sqrt(DT * WU) * np.eye(N))
    rhs.append(np.zeros(N))
    res = lsq_linear(np.vstack(rows), np.concatenate(rhs), bounds=(-u_max, u_max), tol=1e-14,
                     lsmr_tol="auto", method="bvls")
    return res.x


def riccati_gains():
    A, B = exact_discretisation()
    P, Ks = WN * np.eye(2), []
    for _ in range(N):
        K = -np.linalg.solve(DT * WU + B.T @ P @ B, B.T @ P @ A)
        P = DT * WX * np.eye(2) + A.T @ P @ A + A.T @ P @ B @ K
        Ks.append(K)
    return np.array(Ks[::-1])


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_linear_quadratic_problem_is_solved_in_one_iteration(solver):
    prob = slider()
    A, B = exact_discretisation()
    Ak, Bk = prob.step_derivatives(np.zeros((1, 2)), np.zeros((1, 1)))
    assert np.allclose(Ak[0], A, atol=1e-14) and np.allclose(Bk[0], B, atol=1e-14)
    res = solve(prob, solver)
    assert res.converged and res.iterations == 1
    assert np.allclose(res.us[:, 0], lq_least_squares(np.inf), rtol=1e-8, atol=1e-8)
    assert np.allclose(res.gains, riccati_gains(), rtol=1e-8, atol=1e-8)
    assert res.gains.shape == (N, 1, 2)
    lengths = {len(v) for v in res.history.values()}
    assert lengths == {res.iterations + 1}


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_control_limits_give_the_box_constrained_optimum(solver):
    u_max = 1.5
    reference = lq_least_squares(u_max)
    assert np.abs(reference).max() == pytest.approx(u_max)  # the bound is active
    res = solve(slider(u_max), solver)
    assert res.converged
    assert np.all(np.abs(res.us) <= u_max)
    assert np.allclose(res.us[:, 0], reference, atol=1e-6)


def test_box_qp_matches_bounded_least_squares():
    rng = np.random.default_rng(0)
    for _ in range(20):
        R = rng.normal(size=(6, 4))
        H = R.T @ R + 0.1 * np.eye(4)
        g = rng.normal(size=4) * 3
        lo, hi = -rng.uniform(0.1, 1, 4), rng.uniform(0.1, 1, 4)
        x, idx, L = np.zeros(4), np.empty(4, np.int64), np.empty((4, 4))
        nf = box_qp(H, g, lo, hi, x, idx, L, np.empty((4, 4)))
        Lh = np.linalg.cholesky(H)  # ½xᵀHx + gᵀx = ½‖Lhᵀx + Lh⁻¹g‖² + const
        ref = lsq_linear(Lh.T, -np.linalg.solve(Lh, g), bounds=(lo, hi), method="bvls", tol=1e-14).x
        assert nf >= 0 and np.allclose(x, ref, atol=1e-8)
    H = np.diag([1.0, -1.0])
    assert box_qp(H, np.ones(2), -np.ones(2) * np.inf, np.ones(2) * np.inf, np.zeros(2),
                  np.empty(2, np.int64), np.empty((2, 2)), np.empty((4, 2))) == -1


def test_cholesky_solve_rows_solves_each_column_bit_for_bit_as_cholesky_solve():
    rng = np.random.default_rng(1)
    R = rng.normal(size=(9, 6))
    H = R.T @ R + 0.1 * np.eye(6)
    idx, L = np.array([4, 0, 5, 2, 1, 3]), np.empty((6, 6))
    for nf in (6, 4):  # all rows free; two of them clamped (rows 1 and 3 untouched)
        assert cholesky(H, idx, nf, L)
        X = rng.normal(size=(6, 7))
        Y = X.copy()
        cholesky_solve_rows(L, nf, idx, Y)
        for j in range(7):
            b = X[idx[:nf], j].copy()
            cholesky_solve(L, nf, b)
            assert np.array_equal(Y[idx[:nf], j], b)
        free = idx[:nf]
        assert np.allclose(Y[free], np.linalg.solve(H[np.ix_(free, free)], X[free]), rtol=1e-12, atol=1e-12)
        assert np.array_equal(Y[idx[nf:]], X[idx[nf:]])


@pytest.fixture(scope="module")
def reach():
    prob = ur5_reach.make()
    return prob, solve(prob, "ddp"), solve(prob, "ilqr")


def test_ur5_reach_ddp_and_ilqr_reach_the_same_optimum(reach):
    prob, ddp, ilqr = reach
    assert ddp.converged and ilqr.converged
    assert ddp.cost == pytest.approx(ilqr.cost, rel=1e-7)
    assert np.allclose(ddp.us, ilqr.us, atol=1e-3 * np.abs(ddp.us).max())
    assert ddp.cost < 0.01 * prob.cost(prob.xs_init, prob.us_init)
    assert np.allclose(prob.rollout(ddp.us), ddp.xs, atol=1e-12)
    assert np.all(np.diff(ddp.history["cost"]) <= 1e-12)  # monotone descent
    assert ddp.history["gradient"][-1] < 1e-2 * ddp.history["gradient"][0]


def test_ur5_reach_optimum_is_the_one_recorded_before_the_manifold_state(reach):
    """DDP and iLQR find the optimum recorded (by all three solvers) before the optimal-control
    state moved onto the joints' manifold (BENCHMARKS.md, contracted second-order section,
    2026-11-22): on a fixed base the manifold code reduces to plain vector operations."""
    _, ddp, ilqr = reach
    assert ddp.cost == pytest.approx(0.7739977183, rel=1e-9)
    assert ilqr.cost == pytest.approx(0.7739977183, rel=1e-9)


def test_gauss_newton_cost_hessians_reach_the_same_optimum(reach):
    """The feasibility-driven forms model the costs by their Gauss–Newton Hessians: another
    model, the same fixed points — they reach the optimum of the exact Hessians (the
    frame-position cost's residual is curved)."""
    prob, ddp, _ = reach
    for solver in ("fddp", "filqr"):
        res = solve(prob, solver)
        assert res.converged and res.cost == pytest.approx(ddp.cost, rel=1e-9)
        assert np.allclose(res.us, ddp.us, atol=1e-4 * np.abs(ddp.us).max())


@pytest.mark.parametrize("make", [lambda: ur5_reach.make(N=6),
                                  lambda: problems.get("arm-obstacle", intervals=4, horizon=0.8)])
def test_contracted_and_tensor_second_order_give_the_same_backward_pass(make):
    """V'_x·F_zz by the second-order adjoint equals the tensor contraction (Q_xx, Q_ux, Q_uu
    terms), and the whole backward pass (k, K, ΔV) agrees to 1e-10 relative."""
    prob = make()
    rng = np.random.default_rng(3)
    us = prob.us_init + 0.1 * rng.normal(size=(prob.N, prob.nu))
    xs = prob.rollout(us)
    costs = prob.running_cost_terms(xs[:-1], us)[1:]
    terminal = Value(*prob.terminal_cost_terms(xs[-1])[1:])
    out = {}
    for name in ("contracted", "tensor"):
        A, B, second = linearize(prob, xs, us, SECOND_ORDER[name])
        Vx = rng.normal(size=prob.ndx) if name == "contracted" else Vx
        Hz = np.empty((prob.ndx + prob.nu,) * 2)
        if name == "contracted":
            transition_hessian(second.dynamics, 1, us[1], second.stages, Vx, Hz,
                               transition_work(prob.dynamics, prob.nx, prob.nu, 1))
        else:
            contracted_tensor(second.Fzz, 1, Vx, Hz)
        k, K = np.zeros((prob.N, prob.nu)), np.zeros((prob.N, prob.nu, prob.ndx))
        res = backward_pass(Expansion(A, B, *costs), terminal, us, prob.u_lower, prob.u_upper, 10.0, second, k, K,
                            np.zeros((0, prob.ndx)), False)
        out[name] = Hz, k, K, np.array(res[1:]), res[0]
    (H1, k1, K1, dv1, f1), (H2, k2, K2, dv2, f2) = out["contracted"], out["tensor"]
    assert f1 == f2 == -1
    assert np.abs(H1).max() > 0
    for x, y in ((H1, H2), (k1, k2), (K1, K2), (dv1, dv2)):
        assert np.abs(x - y).max() <= 1e-10 * np.abs(y).max()


def test_kept_curvature_is_the_contracted_pass_own():
    """A contracted pass keeps each knot's V'_x·F_zz (at the last knot: the tensors contracted
    with the terminal V_x), and a pass in mode "kept" on the same terms takes them: the same
    k, K and ΔV; with other cost terms it keeps the first pass's curvature, not the new V'_x's."""
    prob = ur5_reach.make(N=6)
    rng = np.random.default_rng(4)
    us = prob.us_init + 0.1 * rng.normal(size=(prob.N, prob.nu))
    xs = prob.rollout(us)
    costs = prob.running_cost_terms(xs[:-1], us)[1:]
    terminal = Value(*prob.terminal_cost_terms(xs[-1])[1:])
    A, B, second = linearize(prob, xs, us, SECOND_ORDER["contracted"])
    Fzz = linearize(prob, xs, us, SECOND_ORDER["tensor"])[2].Fzz
    nz = prob.ndx + prob.nu
    second = second._replace(Hz=np.full((prob.N, nz, nz), np.nan))

    def run(mode, end):
        k, K = np.zeros((prob.N, prob.nu)), np.zeros((prob.N, prob.nu, prob.ndx))
        res = backward_pass(Expansion(A, B, *costs), end, us, prob.u_lower, prob.u_upper, 10.0,
                            second._replace(mode=SECOND_ORDER[mode]), k, K, np.zeros((0, prob.ndx)), False)
        assert res[0] == -1
        return k, K, np.array(res[1:])

    contracted = run("contracted", terminal)
    H_end = np.empty((nz, nz))
    contracted_tensor(Fzz, prob.N - 1, terminal.Vx, H_end)
    assert np.abs(H_end).max() > 0
    assert np.abs(second.Hz[-1] - H_end).max() <= 1e-10 * np.abs(H_end).max()
    for x, y in zip(run("kept", terminal), contracted):
        assert np.array_equal(x, y)
    moved = Value(2.0 * terminal.Vx, terminal.Vxx)
    kept, again = run("kept", moved), run("contracted", moved)
    assert np.abs(kept[1] - again[1]).max() > 1e-6 * np.abs(again[1]).max()


def test_ddp_iterates_are_the_same_with_contracted_and_tensor_terms():
    prob = ur5_reach.make(N=10)
    a, b = solve(prob, "ddp", max_iter=4), solve(prob, "ddp", max_iter=4, second_order="tensor")
    assert a.iterations == b.iterations == 4
    assert np.allclose(a.us, b.us, rtol=1e-9, atol=1e-9 * np.abs(b.us).max())
    assert a.history["cost"] == pytest.approx(b.history["cost"], rel=1e-12)


def test_warm_start_from_the_optimum_stops_immediately(reach):
    prob, ddp, _ = reach
    res = solve(prob, "ddp", us_init=ddp.us)
    assert res.converged and res.iterations == 0 and res.cost == pytest.approx(ddp.cost, rel=1e-12)


def test_iteration_cap_and_callback(reach):
    prob, _, _ = reach
    rows = []
    res = solve(prob, "ilqr", max_iter=2, callback=rows.append)
    assert not res.converged and res.status == "max_iter" and res.iterations == 2
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert {"cost", "gradient", "step", "regularization", "violation", "time", "solver"} <= set(rows[0])
    stopped = solve(prob, "ddp", callback=lambda row: row["iteration"] < 1)
    assert stopped.status == "user_stop" and stopped.iterations == 1 and not stopped.converged


def test_diverging_rollouts_are_rejected_by_the_line_search():
    prob = ur5_reach.make(N=8, dt=0.5)  # full Newton steps blow RK4 up at this step size
    res = solve(prob, "ilqr", max_iter=100)
    assert res.extra["rejected_rollouts"] > 0
    assert res.converged and np.all(np.isfinite(res.xs)) and np.all(np.isfinite(res.us))
    assert np.all(np.isfinite(res.history["cost"]))


@pytest.mark.parametrize("terminal", ["constraint", "cost"])
def test_pendulum_swing_up_with_torque_limits(terminal):
    prob = pendulum.make_pendulum(terminal=terminal)
    ddp, ilqr = solve(prob, "ddp", max_iter=500), solve(prob, "ilqr", max_iter=500)
    for res in (ddp, ilqr):
        assert res.converged, res.message
        assert np.all(np.abs(res.us) <= 5.0 + 1e-12) and np.abs(res.us).max() == pytest.approx(5.0)
        assert np.allclose(res.xs[-1], [np.pi, 0.0], atol=1e-6 if terminal == "constraint" else 1e-3)
        assert prob.violation(res.xs, res.us) <= 1e-6
    assert ddp.cost == pytest.approx(ilqr.cost, rel=1e-5)


def test_constrained_double_pendulum_ends_collision_free_at_the_goal():
    model = double_pendulum()
    goal = np.array([np.pi, 0.0, 0.0, 0.0])
    points = [("tip", (0.0, 0.0, 0.0)), ("link2", (0.0, 0.0, -0.5))]
    common = dict(model=model, x0=np.zeros(4), N=40, dt=0.05,
                  running_cost=ControlCost(1e-2, nu=2) + StateCost(1e-3, goal),
                  terminal_constraints=[StateEquality(goal)])
    free = solve(Problem(**common), "ddp", max_iter=300)
    # a sphere centred on the unconstrained tip path, halfway
    tip = SphereClearance(model, points[:1], (0.0, 0.0, 0.0), 0.0).points.positions(free.xs[20:21, :2])[0, 0]
    sphere = SphereClearance(model, points, center=tip, radius=0.2, margin=0.05)
    assert free.converged and sphere.clearance(free.xs).min() < -0.2  # the obstacle is in the way
    prob = Problem(**common, path_constraints=[sphere])
    for solver in ("ddp", "ilqr"):
        res = solve(prob, solver, max_iter=1000)
        # a KKT point of the same discrete problem: IPOPT (multiple shooting) started there,
        # with a tiny barrier and no push into the interior, stays there
        check = solve(prob, "ipopt", xs_init=res.xs, us_init=res.us, mu_init=1e-9, bound_push=1e-12,
                      bound_frac=1e-12, slack_bound_push=1e-12, slack_bound_frac=1e-12)
        assert check.converged and check.iterations <= 5
        assert check.cost == pytest.approx(res.cost, rel=1e-6)
        assert res.converged, res.message
        assert sphere.clearance(res.xs[1:]).min() >= -1e-6
        assert np.abs(res.xs[-1] - goal).max() <= 1e-6
        assert prob.violation(res.xs, res.us) <= 1e-6
        assert res.extra["lambda"].shape == (40, 2) and np.all(res.extra["lambda"] >= 0)
        assert res.cost > free.cost


@pytest.mark.parametrize("kwargs, match", [
    (dict(solver="sqp"), "solver"),
    (dict(solver="ddp", max_iter=-1), "max_iter"),
    (dict(solver="ilqr", max_iter=2.5), "max_iter"),
    (dict(solver="ipopt", max_iter=-3), "max_iter"),
    (dict(solver="ddp", learning_rate=0.1), "learning_rate"),
    (dict(solver="ddp", tol=-1.0), "tol"),
    (dict(solver="ddp", second_order="full"), "second_order"),
    (dict(solver="ilqr", cost_hessian="bfgs"), "cost_hessian"),
    (dict(solver="ilqr", box="never"), "box"),
    (dict(solver="ilqr", short_step=0.8), "short_step"),
    (dict(solver="ddp", alphas=(1.0, 2.0)), "alphas"),
    (dict(solver="fddp", delta0=1.0), "delta0"),
    (dict(solver="ipopt", hessian="bfgs"), "hessian"),
    (dict(solver="ilqr", max_outer=-1), "max_outer"),
    (dict(solver="newton"), "solver"),
    (dict(solver="ipopt", second_order="full"), "second_order"),
    (dict(solver="ddp", callback=3), "callback"),
    (dict(solver="ilqr", us_init=np.zeros((3, 1))), "us_init"),
    (dict(solver="ddp", us_init=np.full((N, 1), np.nan)), "us_init"),
    (dict(solver="ddp", xs_init=np.zeros((N, 2))), "xs_init"),
])
def test_solve_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve(slider(), **kwargs)


def test_a_problem_ships_its_solver_options_and_the_callers_take_precedence():
    prob = ur5_reach.make(N=6)
    prob.solver_options = {"ilqr": {"max_iter": 2}}
    assert solve(prob, "ilqr").iterations == 2 and solve(prob, "ilqr", max_iter=3).iterations == 3
    assert solve(prob, "ddp", max_iter=50).converged  # another solver's options do not apply
    with pytest.raises(ValueError, match="solver_options"):
        Problem(prob.model, prob.x0, 6, 0.1, solver_options={"sqp": {}})
    with pytest.raises(ValueError, match="solver_options"):
        Problem(prob.model, prob.x0, 6, 0.1, solver_options={"ddp": 3})


def test_solve_rejects_non_problem_and_falls_back_from_a_diverging_initial_guess():
    with pytest.raises(ValueError, match="problem"):
        solve("pendulum")
    prob = ur5_reach.make(N=8, dt=0.5)
    res = solve(prob, "ddp", us_init=np.full((8, 6), 1e6), max_iter=0)
    assert res.extra["rejected_guesses"] == ["us_init"] and res.extra["initial_guess"] == "problem"
    assert np.all(np.isfinite(res.xs)) and np.allclose(res.xs, prob.rollout(prob.us_init))


def test_a_diverging_problem_guess_falls_back_to_rest():
    base = ur5_reach.make(N=8, dt=0.5)
    prob = Problem(base.model, base.x0, base.N, base.dt, base.running_cost, base.terminal_cost,
                   us_init=np.full((8, 6), 1e6))
    assert not np.all(np.isfinite(prob.rollout(prob.us_init)))
    res = solve(prob, "ilqr", max_iter=0)
    assert res.extra["initial_guess"] == "rest"
    assert np.allclose(res.xs, prob.x0, atol=1e-6)  # gravity compensation holds the arm at rest


def test_compare_table_and_plot(tmp_path, reach):
    from optdyn.apps.compare import compare, local_iterations, time_to_gap
    prob, ddp, _ = reach
    out = compare(prob, ("ddp", "ilqr"), plot=tmp_path / "conv.png")
    assert [r["solver"] for r in out.rows] == ["ddp", "ilqr"]
    assert all(r["converged"] for r in out.rows)
    assert out.rows[0]["cost"] == pytest.approx(ddp.cost, rel=1e-9)
    assert "ddp" in out.text and "ilqr" in out.text and "Local convergence" in out.text
    assert "Wall time to a relative gap of 1e-09" in out.text
    for r in out.rows:  # both reach the optimum: the 1e-9 gap is met at or before the end
        assert 0 < r["time_to_gap"] <= out.results[r["solver"]].history["time"][-1]
    assert (tmp_path / "conv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    costs = np.array([10.0, 1.0 + 1e-2, 1.0 + 1e-4, 1.0 + 1e-8, 1.0 + 1e-12, 1.0])
    fake = type(ddp)(xs=ddp.xs, us=ddp.us, cost=1.0, converged=True, iterations=5, status="converged",
                     history={"cost": costs})
    assert local_iterations(fake) == 2  # gap 5e-5 at row 2, ≤ 1e-9 first at row 4
    fake.history["time"] = np.arange(6) * 0.5
    assert time_to_gap(fake, 1.0) == 2.0 and time_to_gap(fake, 0.5) is None
    with pytest.raises(ValueError, match="solvers"):
        compare(prob, ("ddp", "newton"))


def panda_reach():
    """The ``panda-reach`` task: the Franka Panda (9 joints, the fingers' tiny inertias
    included) from q = 0 at rest to p_hand = (0.4, 0.2, 0.5), torque box at the effort limits;
    IPOPT and Crocoddyl's BoxFDDP end at the optimum 1.0024794 (a lower one, 0.9454068,
    exists: BENCHMARKS.md, "convergence")."""
    pytest.importorskip("example_robot_data")
    return problems.get("panda-reach")


@pytest.mark.parametrize("bounded", [True, False])
def test_the_forward_pass_fails_on_a_plan_with_non_finite_states(bounded):
    """A plan x̄ whose states turn NaN (the shifted plan of an MPC whose last states diverged)
    gives a non-finite feedback control there: the closed-loop rollout reports failure (False)
    instead of clamping NaN to a torque bound or raising from the dynamics, and the knots
    before it are rolled out."""
    prob = ur5_reach.make(N=10)
    lower, upper = (prob.u_lower, prob.u_upper) if bounded else (np.full(prob.nu, -np.inf), np.full(prob.nu, np.inf))
    xs, us = prob.rollout(prob.us_init), prob.us_init.copy()
    plan = xs.copy()
    plan[5:] = np.nan
    K, k = np.ones((prob.N, prob.nu, prob.ndx)), np.zeros((prob.N, prob.nu))
    xs_new, us_new = np.empty_like(xs), np.empty_like(us)
    none = np.zeros((0, prob.ndx))
    assert forward_pass(prob.dynamics, plan, us, k, K, 0.0, lower, upper, xs_new, us_new, none, UNMARKED) is False
    np.testing.assert_allclose(xs_new[:6], xs[:6], rtol=0, atol=1e-12)  # the plan's own knots, δx = 0
    assert forward_pass(prob.dynamics, xs, us, k, K, 0.0, lower, upper, xs_new, us_new, none, UNMARKED) is True


def test_the_panda_reach_converges_with_the_solvers_it_ships():
    """``optdyn.solve`` on the task as shipped: the feasibility-driven DDP within 60 iterations
    (its first steps from iLQR's Gauss–Newton model, the last ones DDP's own), the
    feasibility-driven iLQR within 100 and IPOPT within 120 reach 1.0024794 (measured: 56, 66,
    111), within the box."""
    prob = panda_reach()
    runs = {s: solve(prob, s) for s in ("ddp", "ilqr", "ipopt")}
    assert (runs["ddp"].solver, runs["ilqr"].solver) == ("fddp", "filqr")
    for s, limit in (("ddp", 60), ("ilqr", 100), ("ipopt", 120)):
        r = runs[s]
        assert r.converged and r.iterations <= limit and r.cost == pytest.approx(1.0024794, rel=1e-6), \
            (s, r.iterations, r.cost)
        assert np.all(r.us >= prob.u_lower - 1e-9) and np.all(r.us <= prob.u_upper + 1e-9)
    assert 0 < runs["ddp"].extra["first_order_steps"] < runs["ddp"].iterations


@pytest.mark.parametrize("task, params", [("arm-pose", {}), ("space-manipulator", {})])
def test_the_augmented_lagrangian_counts_its_inner_first_order_steps(task, params):
    """DDP's "first_order_steps" counts the steps taken along iLQR's model (its exact model
    indefinite there), in the augmented Lagrangian's outer loop as in a plain solve: with a
    control box it never meets (|u| ≤ 1e6) the outer loop takes DDP's iterates to the same cost
    and reports the same count (measured: 53 of 54 steps on arm-pose, 11 of 23 on the space
    manipulator), where counting every direction computed, as before, added the inner solves'
    last ones, not taken (55 and 12)."""
    from optdyn.constraints import ResidualConstraint
    from optdyn.ocp.residuals import ControlResidual

    p = problems.get(task, **params)
    box = ResidualConstraint(ControlResidual(p.nu), -1e6, 1e6)
    boxed = Problem(p.model, p.x0, p.N, p.dt, p.running_cost, p.terminal_cost, u_lower=p.u_lower, u_upper=p.u_upper,
                    path_constraints=[box])
    plain, outer = solve(p, "ddp"), solve(boxed, "ddp")
    assert outer.extra["outer_iterations"] > 1 and outer.iterations == plain.iterations and outer.cost == plain.cost
    assert 0 < outer.extra["first_order_steps"] == plain.extra["first_order_steps"] < plain.iterations
