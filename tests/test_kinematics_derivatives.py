"""Position, Jacobian and Hessian of points fixed on bodies (dynamics.kinematics_derivatives).

References: frame_placement / frame_jacobian (independent code paths), Richardson
central differences of the position (for J) and of the Jacobian (for H), symmetry of
the Hessian, zero derivatives for points on the fixed base, and the batched kernel
against single calls.
"""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn
from conftest import random_state
from dynamics.batch import point_kinematics_batch, point_kinematics_knots
from dynamics.kinematics_derivatives import body_point, point_hessian, point_jacobian, point_position
from numdiff import rel_error, richardson

FD_TOL = 1e-8


def _frames_and_offsets(model: dyn.Model, seed: int):
    rng = np.random.default_rng(seed)
    return [(f, rng.uniform(-0.3, 0.3, 3)) for f in model.frame_names]


def test_position_and_jacobian_agree_with_frame_kinematics(model):
    q, _, _ = random_state(model, 0)
    for frame, offset in _frames_and_offsets(model, 1):
        R, p = dyn.frame_placement(model, q, frame)
        np.testing.assert_allclose(point_position(model, q, frame, offset), p + R @ offset, rtol=0, atol=1e-14)
        np.testing.assert_allclose(point_position(model, q, frame), p, rtol=0, atol=1e-14)
        np.testing.assert_allclose(point_jacobian(model, q, frame), dyn.frame_jacobian(model, q, frame)[:3],
                                   rtol=0, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1])
def test_jacobian_and_hessian_match_finite_differences(model, seed):
    q, _, _ = random_state(model, seed)
    for frame, offset in _frames_and_offsets(model, seed + 5):
        J = point_jacobian(model, q, frame, offset)
        H = point_hessian(model, q, frame, offset)
        assert rel_error(J, richardson(lambda x: point_position(model, x, frame, offset), q)) < FD_TOL
        assert rel_error(H, richardson(lambda x: point_jacobian(model, x, frame, offset), q)) < FD_TOL
        assert np.array_equal(H, H.transpose(0, 2, 1))


def test_hessian_is_not_trivially_zero_and_respects_the_support(ur5):
    q, _, _ = random_state(ur5, 3)
    H = point_hessian(ur5, q, "wrist_1_link", [0.05, 0.1, 0.0])
    body = ur5.frame("wrist_1_link").body
    support = ur5.support(body)
    off = [j for j in range(ur5.nv) if j not in support]
    assert np.max(np.abs(H[:, support][:, :, support])) > 0.1
    assert np.max(np.abs(H[:, off])) == 0.0 and np.max(np.abs(H[:, :, off])) == 0.0


def test_point_on_the_fixed_base_does_not_move(ur5):
    q, _, _ = random_state(ur5, 4)
    frame = next(f.name for f in ur5.frames if f.body < 0)
    offset = np.array([0.1, 0.2, 0.3])
    R, p = dyn.frame_placement(ur5, q, frame)
    np.testing.assert_allclose(point_position(ur5, q, frame, offset), p + R @ offset, atol=1e-15)
    assert not point_jacobian(ur5, q, frame, offset).any()
    assert not point_hessian(ur5, q, frame, offset).any()


def test_batch_matches_single_calls(model):
    K = 4
    Q = np.array([random_state(model, 30 + k)[0] for k in range(K)])
    pts = _frames_and_offsets(model, 9)
    frames, offsets = [f for f, _ in pts], np.array([o for _, o in pts])
    P, J, H = point_kinematics_batch(model, Q, frames, offsets)
    m = len(frames)
    assert P.shape == (K, m, 3) and J.shape == (K, m, 3, model.nv) and H.shape == (K, m, 3, model.nv, model.nv)
    for k in range(K):
        for i, (frame, offset) in enumerate(pts):
            np.testing.assert_allclose(P[k, i], point_position(model, Q[k], frame, offset), rtol=1e-15, atol=1e-15)
            np.testing.assert_allclose(J[k, i], point_jacobian(model, Q[k], frame, offset), rtol=1e-15, atol=1e-15)
            np.testing.assert_allclose(H[k, i], point_hessian(model, Q[k], frame, offset), rtol=1e-15, atol=1e-15)
    P0 = point_kinematics_batch(model, Q, frames)[0]
    np.testing.assert_allclose(P0[1, 0], point_position(model, Q[1], frames[0]), atol=1e-15)
    bodies, local = zip(*(body_point(model, f, o) for f, o in pts))
    P_only = point_kinematics_knots(model.arrays, Q, np.array(bodies, dtype=np.int64), np.array(local), False)
    np.testing.assert_allclose(P_only, P, rtol=1e-15, atol=1e-15)


def test_body_point_expresses_the_offset_in_the_body_frame(ur5):
    q, _, _ = random_state(ur5, 6)
    body, o = body_point(ur5, "tool0", [0.0, 0.0, 0.1])
    assert body == ur5.frame("tool0").body
    body_frame = next(f.name for f in ur5.frames if f.body == body and np.array_equal(f.placement, np.eye(4)))
    R, p = dyn.frame_placement(ur5, q, body_frame)
    np.testing.assert_allclose(p + R @ o, point_position(ur5, q, "tool0", [0.0, 0.0, 0.1]), atol=1e-14)


@pytest.mark.parametrize("func", [point_position, point_jacobian, point_hessian])
def test_bad_input_names_the_argument(ur5, func):
    q = np.zeros(6)
    with pytest.raises(ValueError, match=r"^q: expected shape \(6,\)"):
        func(ur5, np.zeros(7), "tool0")
    with pytest.raises(ValueError, match=r"^q: expected finite"):
        func(ur5, np.full(6, np.nan), "tool0")
    with pytest.raises(ValueError, match=r"^frame: unknown frame 'nope'"):
        func(ur5, q, "nope")
    with pytest.raises(ValueError, match=r"^frame: expected a frame name"):
        func(ur5, q, 3)
    with pytest.raises(ValueError, match=r"^offset: expected shape \(3,\)"):
        func(ur5, q, "tool0", [0.0, 1.0])
    with pytest.raises(ValueError, match=r"^offset: expected 3 finite"):
        func(ur5, q, "tool0", [0.0, np.inf, 1.0])


def test_batch_bad_input_names_the_argument(ur5):
    Q = np.zeros((3, 6))
    with pytest.raises(ValueError, match=r"^Q: expected shape \(K, 6\)"):
        point_kinematics_batch(ur5, np.zeros(6), ["tool0"])
    Q_bad = Q.copy()
    Q_bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"^Q: expected finite values, got NaN or inf at knot 1"):
        point_kinematics_batch(ur5, Q_bad, ["tool0"])
    with pytest.raises(ValueError, match=r"^frames: expected a sequence"):
        point_kinematics_batch(ur5, Q, "tool0")
    with pytest.raises(ValueError, match=r"^offsets: expected shape \(2, 3\)"):
        point_kinematics_batch(ur5, Q, ["tool0", "ee_link"], np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"^offsets: expected finite"):
        point_kinematics_batch(ur5, Q, ["tool0"], [[0.0, np.nan, 0.0]])
    with pytest.raises(ValueError, match=r"^frame: unknown frame 'nope'"):
        point_kinematics_batch(ur5, Q, ["tool0", "nope"])
