"""Direct multiple shooting with IPOPT (optdyn.solvers.ipopt): exact NLP derivatives, options,
logging, and clear failures on infeasible problems.

The NLP derivatives are checked two independent ways: central finite differences of our
own objective/constraint callbacks, and IPOPT's built-in derivative checker.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

import problems
from optdyn.ocp.constraints import StateEquality
from optdyn.solvers.ipopt import IPOPT, LINEAR_SOLVER, MultipleShootingNLP
from optdyn.ocp.problem import Problem


def solve_ipopt(problem, us_init=None, xs_init=None, **options):
    """The IPOPT type with ``options`` (its own, or IPOPT's by name) on ``problem``."""
    return IPOPT.with_options(**options).solve(problem, us_init, xs_init)


def small_arm(**kw):
    """Arm-obstacle transcription small enough for dense finite differences (n = 66)."""
    return problems.get("arm-obstacle", scenario="bent", intervals=3, substeps=2, horizon=0.6, **kw)


def dense_jacobian(nlp: MultipleShootingNLP, z: np.ndarray) -> np.ndarray:
    rows, cols = nlp.jacobianstructure()
    return sp.coo_matrix((nlp.jacobian(z), (rows, cols)), shape=(nlp.m, nlp.n)).toarray()


def dense_hessian(nlp: MultipleShootingNLP, z, lam, sigma) -> np.ndarray:
    rows, cols = nlp.hessianstructure()
    L = sp.coo_matrix((nlp.hessian(z, lam, sigma), (rows, cols)), shape=(nlp.n, nlp.n)).toarray()
    return L + np.tril(L, -1).T


def central_difference(f, z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Columns ∂f/∂z_j (rows = outputs) by central differences."""
    cols = [(np.atleast_1d(f(z + h * e)) - np.atleast_1d(f(z - h * e))) / (2 * h) for e in np.eye(z.size)]
    return np.array(cols).T


@pytest.fixture(scope="module")
def nlp_point():
    prob = small_arm()
    nlp = MultipleShootingNLP(prob)
    rng = np.random.default_rng(7)
    z = nlp.pack(prob.xs_init, prob.us_init) + 0.05 * rng.standard_normal(nlp.n)
    return prob, nlp, z, rng


def test_sparsity_patterns_are_valid(nlp_point):
    _, nlp, z, _ = nlp_point
    rows, cols = nlp.jacobianstructure()
    assert len(set(zip(rows, cols))) == rows.size == nlp.jacobian(z).size
    assert rows.max() < nlp.m and cols.max() < nlp.n
    hr, hc = nlp.hessianstructure()
    assert np.all(hr >= hc), "Hessian pattern must be the lower triangle"
    assert len(set(zip(hr, hc))) == hr.size


def test_layout_round_trip_and_defects_of_a_rollout(nlp_point):
    prob, nlp, _, rng = nlp_point
    us = prob.us_init + rng.standard_normal(prob.us_init.shape)
    xs = prob.rollout(us)
    z = nlp.pack(xs, us)
    xs2, us2 = nlp.unpack(z)
    np.testing.assert_array_equal(xs2, xs)
    np.testing.assert_array_equal(us2, us)
    g = nlp.constraints(z)
    assert np.abs(g[: prob.N * prob.nx]).max() < 1e-12  # a rollout has no defects
    np.testing.assert_allclose(g[prob.N * prob.nx: prob.N * (prob.nx + prob.nc)],
                               prob.path_constraint_terms(xs[1:])[0].ravel())
    np.testing.assert_allclose(g[-prob.nh:], xs[-1] - prob.x_goal)
    assert nlp.objective(z) == pytest.approx(prob.cost(xs, us), rel=1e-14)


def test_gradient_matches_central_differences(nlp_point):
    _, nlp, z, _ = nlp_point
    fd = central_difference(nlp.objective, z)[0]
    np.testing.assert_allclose(nlp.gradient(z), fd, rtol=0, atol=1e-7 * (1 + np.abs(fd).max()))


def test_constraint_jacobian_matches_central_differences(nlp_point):
    _, nlp, z, _ = nlp_point
    fd = central_difference(nlp.constraints, z)
    J = dense_jacobian(nlp, z)
    assert np.abs(J - fd).max() <= 1e-7 * (1 + np.abs(fd).max())


@pytest.mark.parametrize("sigma", [1.0, 0.3, 0.0])
def test_lagrangian_hessian_matches_differences_of_its_gradient(nlp_point, sigma):
    """∇²L = ∂/∂z (σ∇f + Jᵀλ), with random multipliers on every constraint block."""
    _, nlp, z, rng = nlp_point
    lam = rng.standard_normal(nlp.m)

    def grad_lagrangian(w):
        return sigma * nlp.gradient(w) + dense_jacobian(nlp, w).T @ lam

    fd = central_difference(grad_lagrangian, z)
    H = dense_hessian(nlp, z, lam, sigma)
    assert np.abs(H - fd).max() <= 1e-6 * (1 + np.abs(fd).max())


def test_contracted_and_tensor_lagrangian_hessians_agree(nlp_point):
    prob, nlp, z, rng = nlp_point
    lam = rng.standard_normal(nlp.m)
    tensor = MultipleShootingNLP(prob, second_order="tensor")
    H, H_ref = nlp.hessian(z, lam, 0.7), tensor.hessian(z, lam, 0.7)
    assert np.abs(H - H_ref).max() <= 1e-10 * np.abs(H_ref).max()


@pytest.mark.parametrize("task, kw", [("arm-obstacle", {}), ("space-manipulator", {"attitude_bound": 0.05})])
def test_full_size_hessian_times_directions_matches_differences_of_the_gradient(task, kw):
    """The whole tasks' NLPs (20 and 30 knots: the Hessian kernel's parallel chunks span many
    knots, and on the space manipulator both charts), ∇²L·v against central differences of
    σ∇f + Jᵀλ along random directions v, at a perturbed initial guess with random multipliers."""
    prob = problems.get(task, **kw)
    rng = np.random.default_rng(5)
    nlp = MultipleShootingNLP(prob)
    z = nlp.pack(prob.xs_init, prob.us_init + 0.1 * rng.standard_normal(prob.us_init.shape))
    z += 0.01 * rng.standard_normal(nlp.n)
    lam, sigma = rng.standard_normal(nlp.m), 0.8

    def grad_lagrangian(w):
        J = sp.coo_matrix((nlp.jacobian(w), nlp.jacobianstructure()), shape=(nlp.m, nlp.n)).tocsr()
        return sigma * nlp.gradient(w) + J.T @ lam

    L = sp.coo_matrix((nlp.hessian(z, lam, sigma), nlp.hessianstructure()), shape=(nlp.n, nlp.n)).tocsr()
    for v in rng.standard_normal((3, nlp.n)):
        fd = (grad_lagrangian(z + 1e-6 * v) - grad_lagrangian(z - 1e-6 * v)) / 2e-6
        Hv = L @ v + L.T @ v - L.diagonal() * v
        assert np.abs(Hv - fd).max() <= 1e-7 * np.abs(fd).max()


def _checker_errors(text: str) -> list[tuple[float, float]]:
    """(exact, finite-difference) pairs of the entries IPOPT's checker flagged with '*'."""
    number = r"([-+]?\d\.\d+e[-+]\d+)"
    pattern = re.compile(r"^\*\s+.*?\]\s+=\s+" + number + r"\s+v?\s+~\s+" + number, re.M)
    return [(float(a), float(b)) for a, b in pattern.findall(text)]


def test_ipopt_derivative_checker_agrees(tmp_path):
    """IPOPT's own second-order derivative checker (forward differences, step 1e-7).

    Forward differences with step 1e-7 carry errors of ~1e-7·|third derivative| (a few
    1e-6 on the wrist rows, whose M⁻¹ entries are ~60), so the entries it flags are
    accepted only at that noise level; a wrong term is off by its own size (up to ~50).
    """
    log = tmp_path / "ipopt.txt"
    prob = problems.get("arm-obstacle", scenario="straight", intervals=2, substeps=2, horizon=0.4)
    res = solve_ipopt(prob, max_iter=0, derivative_test="second-order",
                      point_perturbation_radius=0.0, output_file=str(log), file_print_level=4)
    assert res.status == "max_iter"
    text = log.read_text()
    assert "Starting derivative checker for second derivatives" in text
    errors = _checker_errors(text)
    assert "No errors detected by derivative checker" in text or errors
    worst = max((abs(a - b) for a, b in errors), default=0.0)
    assert worst < 2e-5, f"derivative checker: worst flagged absolute error {worst:.2e}"


def test_checker_parser_catches_a_flagged_entry():
    line = "* jac_g [    3,    1] = -4.9518925788296797e-01 v  ~ -4.9534100895106314e-01  [ 3.064e-04]\n"
    assert _checker_errors(line) == [(-4.9518925788296797e-01, -4.9534100895106314e-01)]


def test_pendulum_solved_with_exact_and_lbfgs_hessians():
    prob = problems.get("pendulum", N=30, dt=0.1)
    exact = solve_ipopt(prob, hessian="exact")
    lbfgs = solve_ipopt(prob, hessian="lbfgs", max_iter=2000)
    for res in (exact, lbfgs):
        assert res.converged, res.message
        assert prob.violation(res.xs, res.us) < 1e-6
        assert np.abs(res.xs[1:] - prob.step(res.xs[:-1], res.us)).max() < 1e-6
        assert res.cost == pytest.approx(prob.cost(res.xs, res.us))
    assert exact.cost == pytest.approx(lbfgs.cost, rel=1e-4)
    assert exact.iterations <= lbfgs.iterations


def _user_options(log) -> dict[str, str]:
    """The options IPOPT lists as set by its user (``print_user_options``) in the file ``log``."""
    return dict(re.findall(r"^\s+(\w+) = (\S+)\s+(?:yes|no)$", log.read_text(), re.M))


def test_mumps_workspace_margin_is_ours_unless_the_options_say_otherwise(tmp_path):
    """LINEAR_SOLVER's MUMPS workspace margin reaches IPOPT, a user's own value replaces it, and
    the margin changes no iterate: the solve with IPOPT's default 1000 % is the same to the bit."""
    prob = problems.get("pendulum", N=30, dt=0.1)
    results, margins = {}, {}
    for name, options in (("ours", {}), ("ipopt's", {"mumps_mem_percent": 1000})):
        log = tmp_path / f"{name}.txt"
        results[name] = solve_ipopt(prob, print_user_options="yes", output_file=str(log), file_print_level=5, **options)
        margins[name] = _user_options(log)["mumps_mem_percent"]
    assert margins == {"ours": str(LINEAR_SOLVER["mumps_mem_percent"]), "ipopt's": "1000"}
    ours, ipopts = results["ours"], results["ipopt's"]
    assert ours.converged and ours.iterations == ipopts.iterations
    assert np.array_equal(ours.xs, ipopts.xs) and np.array_equal(ours.us, ipopts.us)


def test_result_history_log_and_callback():
    prob = small_arm()
    seen = []
    res = solve_ipopt(prob, callback=seen.append)
    assert res.solver == "ipopt" and res.problem == "arm-obstacle" and res.gains is None
    assert res.converged and res.status == "converged" and res.extra["status_code"] == 0
    n = len(res.history["cost"])
    assert n == res.iterations + 1 == len(seen)
    assert all(len(v) == n for v in res.history.values())
    assert set(res.history) >= {"cost", "violation", "gradient", "time"}
    assert np.all(np.diff(res.history["time"]) >= 0)
    assert res.history["cost"][-1] == pytest.approx(res.cost, rel=1e-8)
    assert seen[-1]["xs"].shape == (prob.N + 1, prob.nx) and seen[-1]["us"].shape == (prob.N, prob.nu)
    np.testing.assert_allclose(seen[-1]["xs"], res.xs)
    mult = res.extra["multipliers"]
    assert mult["defects"].shape == (prob.N, prob.nx) and mult["path"].shape == (prob.N, prob.nc)
    assert mult["terminal"].shape == (prob.nh,)


def test_callback_returning_false_stops():
    res = solve_ipopt(small_arm(), callback=lambda info: info["iteration"] < 2)
    assert res.status == "user_stop" and not res.converged and res.iterations == 2


def test_silent_by_default(capfd):
    solve_ipopt(small_arm(), max_iter=3)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_bad_arguments_raise_value_error():
    prob = small_arm()
    with pytest.raises(ValueError, match="problem"):
        solve_ipopt("arm-obstacle")
    with pytest.raises(ValueError, match="hessian"):
        solve_ipopt(prob, hessian="bfgs")
    with pytest.raises(ValueError, match="no_such_option"):
        solve_ipopt(prob, no_such_option=1)
    with pytest.raises(ValueError, match="max_cpu_time"):
        solve_ipopt(prob, max_cpu_time="soon")
    with pytest.raises(ValueError, match="xs_init"):
        solve_ipopt(prob, xs_init=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="us_init"):
        solve_ipopt(prob, us_init=np.full((prob.N, prob.nu), np.nan))
    with pytest.raises(ValueError, match="callback"):
        solve_ipopt(prob, callback=3)


def test_goal_inside_the_obstacle_is_reported_infeasible():
    """Terminal state whose configuration puts collision points inside the sphere."""
    arm = problems.get("arm-obstacle", scenario="bent", intervals=10, substeps=2)
    q_mid = 0.5 * (arm.q_start + arm.q_goal)  # the sphere sits on this configuration's forearm
    x_bad = np.concatenate([q_mid, np.zeros(arm.model.nv)])
    assert arm.path_constraint_terms(x_bad[None])[0].min() < 0
    prob = Problem(arm.model, arm.x0, arm.N, arm.dt, arm.running_cost, substeps=arm.substeps,
                   u_lower=arm.u_lower, u_upper=arm.u_upper, path_constraints=arm.path_constraints,
                   terminal_constraints=[StateEquality(x_bad)], xs_init=arm.xs_init, us_init=arm.us_init)
    res = solve_ipopt(prob, max_iter=200, max_cpu_time=60.0)
    assert not res.converged
    assert res.status in ("infeasible", "restoration_failed", "max_iter", "max_cpu_time")
    assert res.message
    assert prob.violation(res.xs, res.us) > 1e-3


def test_torque_bounds_too_tight_are_reported():
    """0.1 N·m cannot swing a 1 kg, 1 m pendulum up (that needs 19.6 J) in 3 s."""
    prob = problems.get("pendulum", u_max=0.1)
    res = solve_ipopt(prob, max_iter=300, max_cpu_time=60.0)
    assert not res.converged
    assert res.status in ("infeasible", "restoration_failed", "max_iter", "max_cpu_time")
    assert res.message
    assert np.all(np.abs(res.us) <= 0.1 + 1e-8)  # bounds hold even when the goal is not reached


def test_same_optimum_as_ddp_on_the_reaching_benchmark():
    """ur5-reach (no constraints, tool-position costs): the NLP's optimum and DDP's coincide."""
    from optdyn.solvers.solve import solve

    prob = problems.get("ur5-reach")
    ipopt = solve(prob, "ipopt")
    ddp = solve(prob, "ddp")
    assert ipopt.solver == "ipopt" and ipopt.converged and ddp.converged
    assert ipopt.cost == pytest.approx(ddp.cost, rel=1e-8)
    assert np.abs(ipopt.xs - ddp.xs).max() < 1e-4
    assert np.abs(ipopt.us - ddp.us).max() < 1e-3  # N·m, torques up to ~130 N·m


@pytest.mark.parametrize("task, params, iterations", [("ur5-reach", {}, None), ("quadruped", {"scenario": "trot"}, 8)])
def test_the_c_interface_gives_cyipopts_iterates_to_the_bit(task, params, iterations, monkeypatch):
    """The solver drives Ipopt through its C interface, on the library cyipopt loads (found
    here, on Linux); with that library hidden, through cyipopt's own wrapper: the same
    iterates, multipliers, history, status and message, bit for bit (a floating base with
    contacts and cone rows, and an arm)."""
    from optdyn.solvers import ipopt_interface

    assert ipopt_interface.library() is not None
    prob = problems.get(task, **params)
    options = {} if iterations is None else {"max_iter": iterations}
    ours = IPOPT.with_options(**options).solve(prob)
    monkeypatch.setattr(ipopt_interface, "library", lambda: None)
    theirs = IPOPT.with_options(**options).solve(prob)
    assert (ours.status, ours.message, ours.iterations) == (theirs.status, theirs.message, theirs.iterations)
    assert np.array_equal(ours.xs, theirs.xs) and np.array_equal(ours.us, theirs.us)
    for key in ("cost", "violation", "gradient", "mu", "step"):
        assert np.array_equal(ours.history[key], theirs.history[key]), key
    for key, value in ours.extra["duals"].items():
        assert np.array_equal(value, theirs.extra["duals"][key]), key


@pytest.mark.parametrize("hidden", [False, True])
def test_an_exception_in_a_callback_stops_the_solve_and_is_raised(hidden, monkeypatch):
    """An exception of the user's callback (not an evaluation error) stops IPOPT and is raised
    by the solve, on the C interface and on cyipopt's wrapper alike."""
    from optdyn.solvers import ipopt_interface

    if hidden:
        monkeypatch.setattr(ipopt_interface, "library", lambda: None)
    seen = []

    def callback(record):
        seen.append(record["iteration"])
        if len(seen) == 3:
            raise RuntimeError("the user's callback failed")
    with pytest.raises(RuntimeError, match="the user's callback failed"):
        IPOPT.with_options(callback=callback).solve(problems.get("pendulum"))
    assert len(seen) == 3


def test_a_solve_frees_ipopts_problem_and_its_nlp_without_the_garbage_collector(monkeypatch):
    """When a solve returns, IPOPT's problem is freed and the NLP (its evaluations at the last
    point: megabytes on a long horizon) goes by reference counting alone, so that repeated
    solves (an MPC's) do not hold each solve's memory until the next garbage collection."""
    import gc
    import weakref

    from optdyn.solvers import ipopt_interface

    nlps, made = [], []
    init, problem = MultipleShootingNLP.__init__, ipopt_interface.problem

    def recorded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        nlps.append(weakref.ref(self))
    monkeypatch.setattr(MultipleShootingNLP, "__init__", recorded)
    monkeypatch.setattr(ipopt_interface, "problem", lambda *args: made.append(problem(*args)) or made[-1])
    gc.disable()
    try:
        res = IPOPT.with_options(max_iter=3).solve(problems.get("ur5-reach"))
        assert res.iterations == 3 and nlps[-1]() is None and made[-1].handle is None
        message = ""
        try:  # a solve refused before it runs (an unknown option): nothing left for the collector either
            IPOPT.with_options(no_such_option=1).solve(problems.get("ur5-reach"))
        except ValueError as e:
            message = str(e)
        refused = weakref.ref(made.pop())
        assert "no_such_option" in message and nlps[-1]() is None and refused() is None
    finally:
        gc.enable()


def test_the_ipopt_library_is_the_one_installed_with_cyipopt(monkeypatch, tmp_path):
    """Among the Ipopt libraries the process has loaded, the driver takes the one nearest
    cyipopt's extension module (another package may load its own Ipopt: here a copy of it
    elsewhere); one that cannot be opened is passed over; none found, cyipopt's wrapper drives
    Ipopt."""
    import shutil

    from optdyn.solvers import ipopt_interface

    ours = ipopt_interface.library()._name
    (tmp_path / "elsewhere").mkdir()
    copy, broken = tmp_path / "elsewhere" / "libipopt-copy.so.3", tmp_path / "elsewhere" / "libipopt.so.3"
    shutil.copy(ours, copy)
    broken.write_bytes(b"not a shared library")
    found = ipopt_interface.library.__wrapped__
    for loaded, chosen in (([str(copy), ours], ours), ([ours, str(copy)], ours), ([str(broken), str(copy)], str(copy)),
                           ([str(broken)], None)):
        monkeypatch.setattr(ipopt_interface, "_loaded_libraries", lambda: loaded)
        lib = found()
        assert (None if lib is None else lib._name) == chosen, loaded
