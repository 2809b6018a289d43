"""Core rigid-body algorithms against independent references.

RNEA, ABA, CRBA, Carpentier's M⁻¹, energies and frame kinematics are checked against
each other's definitions (ID∘FD = identity, M = ∂τ/∂a, M⁻¹M = 1), closed forms (double
pendulum), conservation laws (energy balance of a simulated motion) and finite
differences (gravity = ∇V, frame Jacobians).
"""
from __future__ import annotations

import gc

import numba
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import dynamics as dyn
from conftest import make_model, random_state
from dynamics.workspace import _BUFFERS, model_workspace

SEEDS = [0, 1, 2]


def rel_err(x, ref) -> float:
    return float(np.max(np.abs(np.asarray(x) - ref)) / max(1.0, np.max(np.abs(ref))))


# ---------------------------------------------------------------- ID and FD


@pytest.mark.parametrize("seed", SEEDS)
def test_aba_inverts_rnea(model, seed):
    q, v, a = random_state(model, seed)
    tau = dyn.rnea(model, q, v, a)
    assert rel_err(dyn.aba(model, q, v, tau), a) < 1e-10


@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_inverts_aba(model, seed):
    q, v, _ = random_state(model, seed)
    tau = np.random.default_rng(seed + 100).normal(scale=5.0, size=model.nv)
    assert rel_err(dyn.rnea(model, q, v, dyn.aba(model, q, v, tau)), tau) < 1e-10


@pytest.mark.parametrize("seed", SEEDS)
def test_crba_is_symmetric_positive_definite_and_equals_dtau_da(model, seed):
    q, v, a = random_state(model, seed)
    M = dyn.crba(model, q)
    assert M.shape == (model.nv, model.nv)
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M)[0] > 0
    # τ is affine in a, so a central difference with a unit step is exact.
    E = np.eye(model.nv)
    dtau_da = np.column_stack([(dyn.rnea(model, q, v, a + e) - dyn.rnea(model, q, v, a - e)) / 2 for e in E])
    assert rel_err(M, dtau_da) < 1e-11


@pytest.mark.parametrize("seed", SEEDS)
def test_minv_inverts_crba(model, seed):
    q, _, _ = random_state(model, seed)
    M, Minv = dyn.crba(model, q), dyn.minv(model, q)
    assert np.array_equal(Minv, Minv.T)
    assert np.max(np.abs(Minv @ M - np.eye(model.nv))) < 1e-10
    assert np.max(np.abs(M @ Minv - np.eye(model.nv))) < 1e-10


@pytest.mark.parametrize("seed", SEEDS)
def test_nonlinear_effects_and_gravity_are_rnea_at_zero(model, seed):
    q, v, _ = random_state(model, seed)
    z = np.zeros(model.nv)
    np.testing.assert_array_equal(dyn.nonlinear_effects(model, q, v), dyn.rnea(model, q, v, z))
    np.testing.assert_array_equal(dyn.gravity_torques(model, q), dyn.rnea(model, q, z, z))


# ---------------------------------------------------------------- closed form


def double_pendulum_dynamics(m1, m2, l1, l2, q, v, g0=9.81):
    """M, Coriolis/centrifugal C(q, v)·v and gravity g of the textbook double pendulum."""
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    M = np.array([
        [(m1 + m2) * l1**2 + m2 * l2**2 + 2 * m2 * l1 * l2 * c2, m2 * l2**2 + m2 * l1 * l2 * c2],
        [m2 * l2**2 + m2 * l1 * l2 * c2, m2 * l2**2],
    ])
    h = m2 * l1 * l2 * s2
    Cv = np.array([-h * (2 * v[0] * v[1] + v[1] ** 2), h * v[0] ** 2])
    g = g0 * np.array([(m1 + m2) * l1 * np.sin(q[0]) + m2 * l2 * np.sin(q[0] + q[1]),
                       m2 * l2 * np.sin(q[0] + q[1])])
    return M, Cv, g


@pytest.mark.parametrize("params", [(1.0, 1.0, 1.0, 1.0), (0.7, 2.3, 0.4, 1.3)])
@pytest.mark.parametrize("seed", SEEDS)
def test_double_pendulum_matches_closed_form(params, seed):
    model = dyn.models.double_pendulum(*params)
    rng = np.random.default_rng(seed)
    q, v, a = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2), rng.normal(size=2)
    M, Cv, g = double_pendulum_dynamics(*params, q, v)
    tau = M @ a + Cv + g
    assert rel_err(dyn.crba(model, q), M) < 1e-13
    assert rel_err(dyn.gravity_torques(model, q), g) < 1e-13
    assert rel_err(dyn.rnea(model, q, v, a), tau) < 1e-13
    assert rel_err(dyn.aba(model, q, v, tau), a) < 1e-12
    assert rel_err(dyn.minv(model, q), np.linalg.inv(M)) < 1e-12


def test_pendulum_matches_closed_form():
    m, l = 1.7, 0.6
    model = dyn.models.pendulum(m, l)
    q, v, a = np.array([0.8]), np.array([-1.3]), np.array([0.4])
    tau = m * l**2 * a + m * 9.81 * l * np.sin(q)
    np.testing.assert_allclose(dyn.rnea(model, q, v, a), tau, rtol=1e-14)
    np.testing.assert_allclose(dyn.kinetic_energy(model, q, v), 0.5 * m * l**2 * v[0] ** 2, rtol=1e-14)
    np.testing.assert_allclose(dyn.potential_energy(model, q), -m * 9.81 * l * np.cos(q[0]), rtol=1e-14)


# ---------------------------------------------------------------- energy


def simulate_energy_balance(model, q0, v0, torque, T, dt):
    """RK4 of (q, v, W) with q̈ = ABA and Ẇ = vᵀτ (W = work done by the torques)."""
    n = model.nv

    def f(t, y):
        q, v = y[:n], y[n:2 * n]
        tau = torque(t)
        return np.concatenate([v, dyn.aba(model, q, v, tau), [v @ tau]])

    y, t = np.concatenate([q0, v0, [0.0]]), 0.0
    for _ in range(int(round(T / dt))):
        k1 = f(t, y)
        k2 = f(t + dt / 2, y + dt / 2 * k1)
        k3 = f(t + dt / 2, y + dt / 2 * k2)
        k4 = f(t + dt, y + dt * k3)
        y, t = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + dt
    return y[:n], y[n:2 * n], y[-1]


@pytest.mark.parametrize("spec", [("ur5", 6, 0), ("serial_chain", 5, 4), ("binary_tree", 7, 2),
                                  ("serial_chain", 5, 4, True)])
def test_energy_change_equals_work_of_torques(spec):
    model = make_model(*spec)
    q0, v0, _ = random_state(model, 7)
    rng = np.random.default_rng(3)
    amp, freq, phase = rng.uniform(1, 5, model.nv), rng.uniform(1, 4, model.nv), rng.uniform(0, 6, model.nv)

    def torque(t):
        return amp * np.sin(freq * t + phase)

    def energy(q, v):
        return dyn.kinetic_energy(model, q, v) + dyn.potential_energy(model, q)

    q1, v1, work = simulate_energy_balance(model, q0, v0, torque, T=0.25, dt=5e-4)
    change = energy(q1, v1) - energy(q0, v0)
    scale = abs(work) + dyn.kinetic_energy(model, q0, v0) + 1.0
    assert abs(change - work) < 1e-8 * scale
    assert abs(work) > 1e-3 * scale  # the torques really do work


@pytest.mark.parametrize("seed", SEEDS)
def test_kinetic_energy_is_half_vMv(model, seed):
    q, v, _ = random_state(model, seed)
    M = dyn.crba(model, q)
    np.testing.assert_allclose(dyn.kinetic_energy(model, q, v), 0.5 * v @ M @ v, rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_gravity_torques_are_potential_gradient(model, seed):
    q, _, _ = random_state(model, seed)
    h = 1e-5
    E = np.eye(model.nq)
    grad = np.array([(dyn.potential_energy(model, q + h * e) - dyn.potential_energy(model, q - h * e)) / (2 * h)
                     for e in E])
    g = dyn.gravity_torques(model, q)
    assert rel_err(grad, g) < 1e-7


def test_gravity_setting_is_used():
    model = dyn.models.double_pendulum()
    q = np.array([0.3, -0.4])
    g0 = dyn.gravity_torques(model, q)
    np.testing.assert_allclose(dyn.gravity_torques(model.with_gravity((0.0, 0.0, -2 * 9.81)), q), 2 * g0,
                               rtol=1e-14)
    np.testing.assert_array_equal(dyn.gravity_torques(dyn.models.double_pendulum(gravity=(0, 0, 0)), q), np.zeros(2))
    np.testing.assert_array_equal(dyn.gravity_torques(model, q), g0)


# ---------------------------------------------------------------- frames


def rotation_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector of R (independent of the library: scipy)."""
    return Rotation.from_matrix(R).as_rotvec()


@pytest.mark.parametrize("seed", [0, 1])
def test_frame_jacobian_matches_finite_differences(model, seed):
    q, _, _ = random_state(model, seed)
    h = 1e-6
    for frame in model.frame_names:
        J = dyn.frame_jacobian(model, q, frame)
        assert J.shape == (6, model.nv)
        J_fd = np.empty((6, model.nv))
        for j in range(model.nv):
            dq = np.zeros(model.nq)
            dq[j] = h
            Rp, pp = dyn.frame_placement(model, q + dq, frame)
            Rm, pm = dyn.frame_placement(model, q - dq, frame)
            J_fd[:3, j] = (pp - pm) / (2 * h)
            J_fd[3:, j] = rotation_log(Rp @ Rm.T) / (2 * h)
        assert np.max(np.abs(J - J_fd)) < 1e-7, frame


def test_frame_placement_is_a_rigid_transform(model):
    q, _, _ = random_state(model, 11)
    for frame in model.frame_names:
        R, p = dyn.frame_placement(model, q, frame)
        assert np.max(np.abs(R @ R.T - np.eye(3))) < 1e-13
        assert abs(np.linalg.det(R) - 1.0) < 1e-13
        assert np.all(np.isfinite(p))


def test_double_pendulum_tip_position():
    l1, l2 = 0.7, 1.1
    model = dyn.models.double_pendulum(1.0, 1.0, l1, l2)
    q = np.array([0.4, 0.9])
    _, p = dyn.frame_placement(model, q, "tip")
    expected = np.array([-l1 * np.sin(q[0]) - l2 * np.sin(q[0] + q[1]), 0.0,
                         -l1 * np.cos(q[0]) - l2 * np.cos(q[0] + q[1])])
    np.testing.assert_allclose(p, expected, atol=1e-15)


# ---------------------------------------------------------------- bad input


def _calls(model):
    q, v, a = random_state(model, 0)
    return {
        "rnea": (dyn.rnea, {"q": q, "v": v, "a": a}),
        "aba": (dyn.aba, {"q": q, "v": v, "tau": a}),
        "crba": (dyn.crba, {"q": q}),
        "minv": (dyn.minv, {"q": q}),
        "nonlinear_effects": (dyn.nonlinear_effects, {"q": q, "v": v}),
        "gravity_torques": (dyn.gravity_torques, {"q": q}),
        "kinetic_energy": (dyn.kinetic_energy, {"q": q, "v": v}),
        "potential_energy": (dyn.potential_energy, {"q": q}),
        "frame_placement": (lambda m, q: dyn.frame_placement(m, q, "tool0"), {"q": q}),
        "frame_jacobian": (lambda m, q: dyn.frame_jacobian(m, q, "tool0"), {"q": q}),
    }


BAD_VALUES = {
    "short": lambda x: x[:-1],
    "long": lambda x: np.append(x, 0.0),
    "matrix": lambda x: x[None, :],
    "nan": lambda x: np.where(np.arange(x.size) == 1, np.nan, x),
    "inf": lambda x: np.where(np.arange(x.size) == 0, -np.inf, x),
    "text": lambda x: ["a"] * x.size,
    "none": lambda x: None,
}


@pytest.mark.parametrize("bad", list(BAD_VALUES))
@pytest.mark.parametrize("func", list(_calls(dyn.models.ur5())))
def test_bad_arguments_raise_value_error_naming_them(ur5, func, bad):
    f, args = _calls(ur5)[func]
    for name in args:
        kwargs = dict(args)
        kwargs[name] = BAD_VALUES[bad](args[name])
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            f(ur5, *kwargs.values())


@pytest.mark.parametrize("frame", ["tool1", "", 3, None, b"tool0"])
def test_unknown_or_non_string_frame_raises(ur5, frame):
    q = np.zeros(ur5.nq)
    for f in (dyn.frame_placement, dyn.frame_jacobian):
        with pytest.raises(ValueError, match="frame"):
            f(ur5, q, frame)


def test_valid_inputs_of_other_types_are_accepted(ur5):
    q = [0.1, -0.2, 0.3, 0.0, 0.5, 1]  # list of mixed int/float
    qf = np.array(q, dtype=np.float32)
    np.testing.assert_allclose(dyn.crba(ur5, q), dyn.crba(ur5, np.asarray(q, float)), rtol=0, atol=0)
    np.testing.assert_allclose(dyn.crba(ur5, qf), dyn.crba(ur5, qf.astype(float)), rtol=0, atol=0)


SINGLE_STATE = {  # the public single-state functions that call a kernel on the user's arrays
    "rnea": (lambda m, q, v, a: dyn.rnea(m, q, v, a), "dynamics.rnea", "rnea_call"),
    "aba": (lambda m, q, v, a: dyn.aba(m, q, v, a), "dynamics.aba", "aba_call"),
    "crba": (lambda m, q, v, a: dyn.crba(m, q), "dynamics.crba", "crba_call"),
    "minv": (lambda m, q, v, a: dyn.minv(m, q), "dynamics.minv", "minv_call"),
    "rnea_derivatives": (lambda m, q, v, a: np.stack(dyn.rnea_derivatives(m, q, v, a)),
                         "dynamics.rnea_derivatives", "rnea_derivatives_call"),
    "aba_derivatives": (lambda m, q, v, a: np.stack(dyn.aba_derivatives(m, q, v, a)),
                        "dynamics.aba_derivatives", "aba_derivatives_call"),
}


def _read_only(x):
    x = x.copy()
    x.flags.writeable = False
    return x


@pytest.mark.parametrize("func", list(SINGLE_STATE))
def test_arrays_of_other_types_and_layouts_give_the_same_result_and_compile_nothing_for_them(ur5, func):
    """Lists, strided, read-only and integer arrays are converted in Python (read-only
    ones compiled for once); the kernel is never compiled for a foreign type."""
    import importlib

    f, module, kernel_name = SINGLE_STATE[func]
    kernel = getattr(importlib.import_module(module), kernel_name)
    q, v, a = random_state(ur5, 3)
    ref = f(ur5, q, v, a)
    for convert in (list, lambda x: np.repeat(x, 2)[::2], _read_only):
        np.testing.assert_array_equal(f(ur5, convert(q), convert(v), convert(a)), ref)
    q, v, a = (np.round(3 * x) for x in (q, v, a))
    np.testing.assert_array_equal(f(ur5, *(x.astype(np.int64) for x in (q, v, a))), f(ur5, q, v, a))
    for signature in kernel.signatures:
        assert all(isinstance(t, numba.types.Array) and t.dtype == numba.float64 for t in signature), signature


def test_the_single_state_functions_share_the_models_buffer_without_stale_results():
    """Interleaved calls on two models, and on a copy under another gravity, see their own model."""
    ur5, pendulum = dyn.models.ur5(), dyn.models.double_pendulum()
    q, v, a = random_state(ur5, 4)
    qp, vp, ap = random_state(pendulum, 4)
    tau, taup = dyn.rnea(ur5, q, v, a), dyn.rnea(pendulum, qp, vp, ap)
    for _ in range(2):
        np.testing.assert_array_equal(dyn.rnea(ur5, q, v, a), tau)
        np.testing.assert_array_equal(dyn.rnea(pendulum, qp, vp, ap), taup)
    M = dyn.crba(ur5, q)
    ur5 = ur5.with_gravity((0.0, 0.0, 0.0))
    np.testing.assert_allclose(dyn.rnea(ur5, q, v, a), tau - dyn.gravity_torques(dyn.models.ur5(), q), atol=1e-12)
    np.testing.assert_array_equal(dyn.crba(ur5, q), M)


def test_the_call_buffer_lives_beside_the_model_and_goes_with_it():
    """Pinocchio's Model/Data split: the model holds no workspace; the buffer made on its
    first call is kept beside it and released when the model is collected."""
    model = dyn.models.double_pendulum()
    assert "workspace" not in vars(model)
    dyn.rnea(model, np.zeros(2), np.zeros(2), np.zeros(2))
    key, buffer = id(model), model_workspace(model)
    assert _BUFFERS[key] is buffer and not any(v is buffer for v in vars(model).values())
    del model
    gc.collect()
    assert key not in _BUFFERS
