"""External forces f_ext (njoints, 6): Pinocchio's ``fext`` as the oracle for RNEA, ABA and
their first derivatives (fixed and floating UR5); second order against central
differences of first order with the same f_ext; the static balance τ = −Jᵀ w of a wrench at
the tool; :func:`dynamics.frame_force` and the batched variants."""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn
from dynamics import batch
from numdiff import central, richardson

pin = pytest.importorskip("pinocchio")

RNG = np.random.default_rng(16)


def _models():
    fixed = dyn.models.ur5()
    floating = dyn.load_urdf(fixed.source, root_joint="free-flyer")
    return {"fixed": (fixed, pin.buildModelFromUrdf(fixed.source)),
            "floating": (floating, pin.buildModelFromUrdf(fixed.source, pin.JointModelFreeFlyer()))}


MODELS = _models()


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = dyn.random_configuration(model, rng)
    v, w = rng.normal(size=model.nv), rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.njoints, 6)) * 5.0
    return q, v, w, f_ext


def _pin_fext(f_ext):
    out = pin.StdVec_Force()
    out.append(pin.Force.Zero())  # the universe
    for f in f_ext:
        out.append(pin.Force(f))
    return out


@pytest.mark.parametrize("kind", ["fixed", "floating"])
@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_aba_and_first_derivatives_match_pinocchio_with_fext(kind, seed):
    model, pmodel = MODELS[kind]
    assert list(pmodel.names)[1:] == list(model.joint_names) or kind == "floating"
    data = pmodel.createData()
    q, v, a, f_ext = _state(model, seed)
    fx = _pin_fext(f_ext)
    tau = dyn.rnea(model, q, v, a, f_ext)
    np.testing.assert_allclose(tau, pin.rnea(pmodel, data, q, v, a, fx), rtol=1e-9, atol=1e-9)
    assert not np.allclose(tau, dyn.rnea(model, q, v, a), atol=1e-3)  # the forces matter
    np.testing.assert_allclose(dyn.aba(model, q, v, tau, f_ext), a, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dyn.aba(model, q, v, a, f_ext), pin.aba(pmodel, data, q, v, a, fx),
                               rtol=1e-8, atol=1e-8)
    dq, dv = dyn.rnea_derivatives(model, q, v, a, f_ext)
    pq, pv, _ = pin.computeRNEADerivatives(pmodel, data, q, v, a, fx)
    np.testing.assert_allclose(dq, pq, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dv, pv, rtol=1e-8, atol=1e-8)
    fq, fv, fM = dyn.aba_derivatives(model, q, v, a, f_ext)
    pq, pv, pM = pin.computeABADerivatives(pmodel, data, q, v, a, fx)
    np.testing.assert_allclose(fq, pq, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(fv, pv, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(fM, pM, rtol=1e-8, atol=1e-8)


def _second_order_or_skip(fun, model, *args):
    try:
        return fun(model, *args)
    except ValueError as e:
        if "not yet available" in str(e):
            pytest.skip(f"{fun.__name__}: {e}")
        raise


def _chart(D):
    """Hessian in local coordinates from differences D[i, j, k] = ∂(∂f_i/∂q_j)/∂q_k of the
    first-order derivatives along q ⊕ ε: the symmetric part (the iterated Lie derivatives
    of two columns of one free-flyer differ by a bracket term, see dynamics.joints)."""
    return 0.5 * (D + D.transpose(0, 2, 1))


@pytest.mark.parametrize("kind", ["fixed", "floating"])
def test_second_derivatives_with_fext_are_central_differences_of_first(kind):
    model, _ = MODELS[kind]
    q, v, a, f_ext = _state(model, 3)
    h = 1e-6
    d2q, d2v, d2qv, dMq = _second_order_or_skip(dyn.rnea_second_derivatives, model, q, v, a, f_ext)
    at_q = lambda dx: np.stack(dyn.rnea_derivatives(model, dyn.integrate(model, q, dx), v, a, f_ext))
    Dq = central(at_q, np.zeros(model.nv), h)   # [0]: ∂(∂τ/∂q)/∂q, [1]: ∂(∂τ/∂v)/∂q
    Dv = central(lambda dv: dyn.rnea_derivatives(model, q, v + dv, a, f_ext)[1], np.zeros(model.nv), h)
    np.testing.assert_allclose(d2q, _chart(Dq[0]), atol=1e-5)
    np.testing.assert_allclose(d2v, Dv, atol=1e-5)
    np.testing.assert_allclose(d2qv, np.transpose(Dq[1], (0, 2, 1)), atol=1e-5)
    lam = RNG.normal(size=model.nv)
    tau = dyn.rnea(model, q, v, a, f_ext)
    F = _second_order_or_skip(dyn.aba_second_derivatives, model, q, v, tau, f_ext)
    at_q = lambda dx: np.stack(dyn.aba_derivatives(model, dyn.integrate(model, q, dx), v, tau, f_ext))
    Dq = richardson(at_q, np.zeros(model.nv), 1e-3)
    Dv = richardson(lambda dv: dyn.aba_derivatives(model, q, v + dv, tau, f_ext)[1], np.zeros(model.nv), 1e-3)
    for T, ref in ((F[0], _chart(Dq[0])), (F[1], Dv), (F[2], np.transpose(Dq[1], (0, 2, 1))),
                   (F[3], np.transpose(Dq[2], (0, 2, 1)))):  # differences of q̈'s derivatives: scale-aware
        np.testing.assert_allclose(T, ref, atol=1e-6 * max(1.0, np.abs(ref).max()))
    Hc = _second_order_or_skip(dyn.aba_second_derivatives_contracted, model, q, v, tau, lam, f_ext)
    for H, T in zip(Hc, F):
        np.testing.assert_allclose(H, np.einsum("i,ijk->jk", lam, T), atol=1e-8)


def test_static_wrench_at_the_tool_is_balanced_by_minus_J_transpose():
    """At rest with gravity off, τ = ID(q, 0, 0, f_ext) must balance the wrench:
    τ = −Jᵀ w with J the world-aligned frame Jacobian (moment about the frame origin)."""
    model = dyn.load_urdf(dyn.models.ur5().source, gravity=[0.0, 0.0, 0.0])
    zero = np.zeros(model.nv)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        q, w = dyn.random_configuration(model, rng), rng.normal(size=6) * [20, 20, 20, 2, 2, 2]
        f_ext = dyn.frame_force(model, q, "tool0", w)
        J = dyn.frame_jacobian(model, q, "tool0")
        np.testing.assert_allclose(dyn.rnea(model, q, zero, zero, f_ext), -J.T @ w, rtol=1e-10, atol=1e-10)
        # a pure force on another frame of the same body: the moment arm matters
        body = model.frame("tool0").body
        other = [f.name for f in model.frames if f.body == body and f.name != "tool0"]
        for name in other:
            Jo = dyn.frame_jacobian(model, q, name)
            np.testing.assert_allclose(dyn.rnea(model, q, zero, zero, dyn.frame_force(model, q, name, w)),
                                       -Jo.T @ w, rtol=1e-10, atol=1e-10)


def test_frame_force_puts_the_wrench_on_the_body_row_only():
    model = dyn.models.ur5()
    q = dyn.random_configuration(model, np.random.default_rng(4))
    w = np.array([1.0, -2.0, 20.0, 0.3, 0.1, -0.2])
    f = dyn.frame_force(model, q, "tool0", w)
    body = model.frame("tool0").body
    assert np.all(f[np.arange(model.njoints) != body] == 0.0)
    _, pt = dyn.frame_placement(model, q, "tool0")
    # back to world: R f = F and R n + p_body × R f = M + p_tool × F
    Rb, pb = _body_pose(model, q, body)
    np.testing.assert_allclose(Rb @ f[body, :3], w[:3], atol=1e-12)
    np.testing.assert_allclose(Rb @ f[body, 3:] + np.cross(pb, w[:3]), w[3:] + np.cross(pt, w[:3]), atol=1e-12)


def _body_pose(model, q, body):
    """World pose of joint ``body``'s frame through Pinocchio (independent of frame_force)."""
    pmodel = MODELS["fixed"][1]
    data = pmodel.createData()
    pin.forwardKinematics(pmodel, data, q)
    M = data.oMi[body + 1]
    return M.rotation, M.translation


def test_frame_force_rejects_bad_arguments():
    model = dyn.models.ur5()
    q = dyn.neutral(model)
    with pytest.raises(ValueError, match="frame: unknown frame 'nope'"):
        dyn.frame_force(model, q, "nope", np.zeros(6))
    with pytest.raises(ValueError, match="frame"):
        dyn.frame_force(model, q, 3, np.zeros(6))
    with pytest.raises(ValueError, match="wrench: expected shape"):
        dyn.frame_force(model, q, "tool0", np.zeros(3))
    with pytest.raises(ValueError, match="wrench: expected finite"):
        dyn.frame_force(model, q, "tool0", [0, 0, np.nan, 0, 0, 0])
    with pytest.raises(ValueError, match="wrench: expected 6 real"):
        dyn.frame_force(model, q, "tool0", "abc")
    with pytest.raises(ValueError, match="q: expected shape"):
        dyn.frame_force(model, q[:3], "tool0", np.zeros(6))
    base = [f.name for f in model.frames if f.body < 0]
    if not base:
        pytest.skip("the UR5 has no frame on the fixed base")
    with pytest.raises(ValueError, match="frame: .* fixed on the base"):
        dyn.frame_force(model, q, base[0], np.ones(6))


@pytest.mark.parametrize("kind", ["fixed", "floating"])
def test_batched_variants_with_F_EXT_equal_a_loop_of_single_calls(kind):
    model, _ = MODELS[kind]
    K = 3
    states = [_state(model, 10 + k) for k in range(K)]
    Q, V, A, F = (np.array([s[i] for s in states]) for i in range(4))
    W = RNG.normal(size=(K, model.nv))
    qdd = batch.aba_batch(model, Q, V, A, F)
    rq, rv = batch.rnea_derivatives_batch(model, Q, V, A, F)
    aq, av, aM = batch.aba_derivatives_batch(model, Q, V, A, F)
    for k in range(K):
        np.testing.assert_allclose(qdd[k], dyn.aba(model, Q[k], V[k], A[k], F[k]), rtol=1e-12, atol=1e-12)
        for x, y in zip((rq[k], rv[k]), dyn.rnea_derivatives(model, Q[k], V[k], A[k], F[k])):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
        for x, y in zip((aq[k], av[k], aM[k]), dyn.aba_derivatives(model, Q[k], V[k], A[k], F[k])):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    assert not np.allclose(qdd, batch.aba_batch(model, Q, V, A), atol=1e-3)  # None = no forces
    try:
        HI = batch.rnea_second_derivatives_contracted_batch(model, Q, V, A, W, F)
        HF = batch.aba_second_derivatives_contracted_batch(model, Q, V, A, W, F)
    except ValueError as e:
        if "not yet available" in str(e):
            pytest.skip(str(e))
        raise
    for k in range(K):
        for x, y in zip(HI, dyn.rnea_second_derivatives_contracted(model, Q[k], V[k], A[k], W[k], F[k])):
            np.testing.assert_allclose(x[k], y, rtol=1e-12, atol=1e-12)
        for x, y in zip(HF, dyn.aba_second_derivatives_contracted(model, Q[k], V[k], A[k], W[k], F[k])):
            np.testing.assert_allclose(x[k], y, rtol=1e-12, atol=1e-12)


def test_batched_F_EXT_is_checked():
    model = dyn.models.ur5()
    Q = np.tile(dyn.neutral(model), (2, 1))
    Z = np.zeros((2, model.nv))
    with pytest.raises(ValueError, match=r"F_EXT: expected shape \(2, 6, 6\)"):
        batch.aba_batch(model, Q, Z, Z, np.zeros((1, 6, 6)))
    F = np.zeros((2, 6, 6))
    F[1, 2, 3] = np.inf
    with pytest.raises(ValueError, match="F_EXT: expected finite values, got NaN or inf at knot 1"):
        batch.aba_batch(model, Q, Z, Z, F)


# ---- optimal control: Problem(f_ext=...) ------------------------------------------------

def _press_problem(per_interval: bool, integrator="rk4", N=4):
    from optdyn.costs import ControlCost, StateCost
    from optdyn.ocp.problem import Problem, frame_wrenches
    model = dyn.models.ur5()
    rng = np.random.default_rng(5)
    q0 = dyn.random_configuration(model, rng)
    x0 = np.r_[q0, rng.normal(size=6) * 0.3]
    q_ref = np.array([q0 + 0.1 * k for k in range(N)])
    w = np.c_[rng.normal(size=(N, 3)) * 20, rng.normal(size=(N, 3))] if per_interval else np.array([0, 0, 20.0, 0, 0, 0])
    F = frame_wrenches(model, "tool0", w, q_ref if per_interval else np.tile(q0, (N, 1)))
    f_ext = F if per_interval else F[0]
    prob = Problem(model, x0, N, 0.05, StateCost(1e-2, np.zeros(12)) + ControlCost(1e-3, np.zeros(6)),
                   StateCost(1.0, np.zeros(12)),
                   integrator=integrator, f_ext=f_ext)
    return prob, F


@pytest.mark.parametrize("per_interval", [False, True])
def test_problem_dynamics_use_the_forces_interval_by_interval(per_interval):
    prob, F = _press_problem(per_interval, "euler")
    model, dt = prob.model, prob.dt
    us = np.random.default_rng(1).normal(size=(prob.N, 6)) * 5
    xs = prob.rollout(us)
    for k in range(prob.N):  # Euler: x⁺ = x + dt [v; FD(q, v, τ, f_ext_k)] (revolute joints: q + dt v)
        q, v = xs[k, :6], xs[k, 6:]
        expected = np.r_[q + dt * v, v + dt * dyn.aba(model, q, v, us[k], F[k])]
        np.testing.assert_allclose(xs[k + 1], expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(prob.step(xs[k][None], us[k][None], start=k)[0], expected, atol=1e-12)
    np.testing.assert_allclose(prob.step(xs[:-1], us), xs[1:], atol=1e-12)
    no_force = prob.step(xs[:-1], us) - dt * np.c_[np.zeros((prob.N, 6)), [
        dyn.aba(model, x[:6], x[6:], u, f) - dyn.aba(model, x[:6], x[6:], u) for x, u, f in zip(xs[:-1], us, F)]]
    assert np.max(np.abs(no_force - prob.step(xs[:-1], us))) > 1e-3  # the forces matter


@pytest.mark.parametrize("per_interval", [False, True])
def test_problem_derivatives_with_forces_match_finite_differences(per_interval):
    prob, _ = _press_problem(per_interval)
    rng = np.random.default_rng(2)
    us = rng.normal(size=(prob.N, 6)) * 5
    xs = prob.rollout(us)[:-1]
    A, B = prob.step_derivatives(xs, us)
    lams = rng.normal(size=(prob.N, 12))
    H = prob.step_hessians(xs, us, lams)
    for k in (0, prob.N - 1):
        z = np.r_[xs[k], us[k]]
        step = lambda z: prob.step(z[None, :12], z[None, 12:], start=k)[0]
        Fz = central(step, z, 1e-6)
        np.testing.assert_allclose(np.c_[A[k], B[k]], Fz, rtol=1e-6, atol=1e-6)
        grad = lambda z: lams[k] @ np.concatenate(prob.step_derivatives(z[None, :12], z[None, 12:], start=k), axis=2)[0]
        np.testing.assert_allclose(H[k], central(grad, z, 1e-6), rtol=1e-5, atol=1e-5)


def test_problem_forces_are_checked_and_the_solvers_see_them():
    from optdyn.ocp.problem import Problem
    from optdyn.solvers.solve import solve
    prob, F = _press_problem(True)
    model = prob.model
    with pytest.raises(ValueError, match=r"f_ext: expected shape \(6, 6\) .* or \(4, 6, 6\)"):
        Problem(model, prob.x0, 4, 0.05, f_ext=np.zeros((3, 6, 6)))
    with pytest.raises(ValueError, match="f_ext: expected finite"):
        Problem(model, prob.x0, 4, 0.05, f_ext=np.full((6, 6), np.nan))
    with pytest.raises(ValueError, match="start: the problem's forces vary per interval"):
        prob.step(prob.xs_init[:2], prob.us_init[:2], start=3)
    free = Problem(model, prob.x0, prob.N, prob.dt, prob.running_cost, prob.terminal_cost)
    with_f, without = solve(prob, "ddp", max_iter=50), solve(free, "ddp", max_iter=50)
    assert with_f.status == "converged" and without.status == "converged"
    np.testing.assert_allclose(prob.rollout(with_f.us), with_f.xs, atol=1e-10)
    assert np.max(np.abs(with_f.us - without.us)) > 0.1  # the solver compensates the wrench


@pytest.mark.parametrize("fun", ["rnea", "aba", "rnea_derivatives", "aba_derivatives", "rnea_second_derivatives",
                                 "aba_second_derivatives", "rnea_second_derivatives_contracted",
                                 "aba_second_derivatives_contracted"])
def test_every_function_rejects_bad_f_ext(fun):
    model = dyn.models.ur5()
    q, v, a, _ = _state(model, 0)
    args = (q, v, a, v) if fun.endswith("contracted") else (q, v, a)
    f = np.zeros((model.njoints, 6))
    f[3, 4] = np.nan
    with pytest.raises(ValueError, match="f_ext: expected finite values"):
        getattr(dyn, fun)(model, *args, f)
    with pytest.raises(ValueError, match=r"f_ext: expected shape \(6, 6\)"):
        getattr(dyn, fun)(model, *args, np.zeros((5, 6)))
    with pytest.raises(ValueError, match="f_ext: expected an array"):
        getattr(dyn, fun)(model, *args, "force")
    f[3, 4] = 1.0  # list input is converted
    np.testing.assert_allclose(np.stack(np.atleast_1d(getattr(dyn, fun)(model, *args, f.tolist()))),
                               np.stack(np.atleast_1d(getattr(dyn, fun)(model, *args, f))), rtol=0, atol=0)


def test_default_initial_controls_hold_x0_at_rest_against_the_forces():
    from optdyn.ocp.problem import Problem
    model = dyn.models.ur5()
    q0 = dyn.random_configuration(model, np.random.default_rng(7))
    f = dyn.frame_force(model, q0, "tool0", [5.0, 0, 20.0, 0, 1.0, 0])
    for f_ext in (f, np.stack([f, 2 * f, 0 * f])):
        prob = Problem(model, np.r_[q0, np.zeros(6)], 3, 0.05, f_ext=f_ext, integrator="euler")
        xs = prob.rollout(prob.us_init)
        np.testing.assert_allclose(xs, np.tile(prob.x0, (4, 1)), atol=1e-12)  # stays at rest
    assert not np.allclose(prob.us_init[0], prob.us_init[1])
