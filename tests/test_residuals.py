"""Residuals and activations: Jacobians and contracted Hessians against differences along
x ⊕ δx, on a fixed base (UR5) and a floating base (the space manipulator)."""
import numpy as np
import pytest
from numdiff import central, rel_error

import dynamics as dyn
from optdyn.ocp import activations as act
from optdyn.ocp import residuals as res
from optdyn.ocp.state import state_integrate_batch

UR5 = dyn.models.ur5()
FLOAT = dyn.models.space_manipulator()


def _state(model, seed, speed=0.7):
    rng = np.random.default_rng(seed)
    return np.concatenate([dyn.random_configuration(model, rng), speed * rng.normal(size=model.nv)])


def _plus(model, x, dx):
    return state_integrate_batch(model.topology, model.nq, x[None], dx[None])[0]


def _second_differences(f, n, h=2e-3):
    """Hessian (n, n) of a scalar f(ε) at ε = 0 by second differences, Richardson-extrapolated."""
    def second(h):
        E, H = np.eye(n) * h, np.empty((n, n))
        for i in range(n):
            for j in range(i, n):
                H[i, j] = H[j, i] = (f(E[i] + E[j]) - f(E[i] - E[j]) - f(E[j] - E[i]) + f(-E[i] - E[j])) / (4 * h * h)
        return H
    return (4.0 * second(h / 2) - second(h)) / 3.0


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
        H = _second_differences(lambda e: rho @ f(e[:ndx], e[ndx:]), ndx + nu)
        assert rel_error(Hxx, H[:ndx, :ndx]) < 1e-6, (name, np.abs(Hxx - H[:ndx, :ndx]).max())
        assert rel_error(Hux, H[ndx:, :ndx]) < 1e-6
        assert rel_error(Huu, H[ndx:, ndx:]) < 1e-6
        assert np.allclose(Hxx, Hxx.T, atol=1e-10)
