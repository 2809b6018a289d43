"""The feasibility-driven DDP and iLQR (Mastalli et al. 2020): the gaps in the backward pass,
the model's change along a step with gaps, the forward pass closing them, and the iterates of a
rollout when there are none."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import optdyn
import problems
from optdyn.solvers import FDDP, FILQR, ddp, riccati


@pytest.fixture(scope="module")
def reach():
    return problems.get("ur5-reach")


def _perturbed_states(prob, seed: int = 0, scale: float = 0.3) -> np.ndarray:
    """The rollout of the problem's guess moved off by random tangent displacements (x_0 kept):
    states with gaps between every interval."""
    rng = np.random.default_rng(seed)
    dx = scale * rng.normal(size=(prob.N + 1, prob.ndx))
    dx[0] = 0.0
    return prob.state_integrate(prob.rollout(prob.us_init), dx)


@pytest.mark.parametrize("kind", [FDDP, FILQR])
def test_without_gaps_the_iterates_are_single_shootings(reach, kind):
    """From states that are the rollout of the controls the gap terms vanish: the iterates
    are those of the same type started from the rollout (its every other step unchanged)."""
    rollout = dataclass(type("Rollout" + kind.__name__, (kind,), {"feasibility_driven": False}))
    single = optdyn.solve(reach, rollout(max_iter=6))
    multiple = optdyn.solve(reach, kind(max_iter=6), xs_init=reach.rollout(reach.us_init))
    assert single.extra["initial_guess"] == "problem" and multiple.solver == kind.name
    for key in ("cost", "step", "regularization", "expected_decrease"):
        np.testing.assert_array_equal(multiple.history[key], single.history[key], err_msg=key)
    np.testing.assert_array_equal(multiple.xs, single.xs)
    np.testing.assert_array_equal(multiple.us, single.us)


def test_the_models_change_along_a_step_with_gaps_matches_differences(reach):
    """With gaps, the backward pass's model change m(1) and its slope g·Δz (iLQR: the model
    is the cost's own second-order expansion along the linear path Δz, which
    :func:`riccati.linear_path` writes) equal the first and
    second differences of the cost along x̄ + αΔx, ū + αΔu (for any gains: the model
    follows the gains of a regularised pass as well)."""
    prob = reach
    xs, us = _perturbed_states(prob), prob.us_init.copy()
    gaps = ddp.gaps_of(prob, xs, us)
    assert np.abs(gaps).max() > 0.1
    A, B, second = ddp.linearize(prob, xs, us, 0)
    objective = ddp.Objective(prob)
    lq = riccati.Expansion(A, B, *objective.running(xs[:-1], us)[1:])
    terminal = riccati.Value(*objective.terminal(xs[-1])[1:])
    k, K = np.zeros((prob.N, prob.nu)), np.zeros((prob.N, prob.nu, prob.ndx))
    free = np.full(prob.nu, np.inf)
    mu = 1e-3
    while (result := riccati.backward_pass(lq, terminal, us, -free, free, mu, second, k, K, gaps, False))[0] >= 0:
        mu *= 10.0  # the terminal cost's Hessian is indefinite away from the optimum: regularise
    dV1, dV2 = result[1:]
    path = np.empty((prob.N + 1, prob.ndx + prob.nu))
    slope = riccati.model_slope(lq, terminal.Vx, k, K, gaps, path)
    DX, DU, dx = np.zeros_like(xs[:, :prob.ndx]), np.zeros_like(us), np.zeros(prob.ndx)
    for t in range(prob.N):
        DU[t] = k[t] + K[t] @ dx
        dx = A[t] @ dx + B[t] @ DU[t] + gaps[t]
        DX[t + 1] = dx
    np.testing.assert_allclose(path[:, :prob.ndx], DX, rtol=1e-12, atol=1e-12)  # the linear path it follows
    np.testing.assert_allclose(path[:-1, prob.ndx:], DU, rtol=1e-12, atol=1e-12)
    assert not path[-1, prob.ndx:].any()

    def J(a):
        return prob.cost(prob.state_integrate(xs, a * DX), us + a * DU)

    h = 1e-3
    first, second_ = (J(h) - J(-h)) / (2 * h), (J(h) - 2 * J(0.0) + J(-h)) / (2 * h * h)
    assert slope == pytest.approx(first, rel=1e-6)
    assert dV1 + dV2 - slope == pytest.approx(second_, rel=1e-5)
    assert dV1 + dV2 < 0  # the step decreases the model


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_from_states_with_gaps_it_closes_them_and_reaches_the_optimum(reach, solver):
    single = optdyn.solve(reach, solver)
    res = optdyn.solve(reach, "f" + solver, xs_init=_perturbed_states(reach))
    assert res.converged and single.converged, res.message
    assert res.history["step"][1:].max() == 1.0  # a full step closed the gaps
    np.testing.assert_allclose(res.xs, reach.rollout(res.us), atol=1e-12, rtol=0)
    assert res.cost == pytest.approx(single.cost, rel=1e-6)


def test_floating_base_gaps_close_on_the_group():
    prob = problems.get("space-manipulator")
    xs0 = _perturbed_states(prob, seed=1, scale=0.05)
    res = optdyn.solve(prob, "fddp", xs_init=xs0, max_iter=40)
    assert res.history["cost"][-1] < res.history["cost"][0]
    np.testing.assert_allclose(res.xs, prob.rollout(res.us), atol=1e-10, rtol=0)
    q = res.xs[:, 3:7]
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)


def test_shooting_option_is_checked(reach):
    with pytest.raises(ValueError, match="^options: unknown option.s. shooting for DDP"):
        optdyn.solve(reach, "ddp", shooting="multiple")
    bad = reach.rollout(reach.us_init)
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="^xs_init"):
        optdyn.solve(reach, "filqr", xs_init=bad)


def test_inside_the_augmented_lagrangian_from_the_tasks_own_states():
    """arm-obstacle's own guess interpolates the joint positions (states with gaps): iLQR
    shooting multiply in the augmented-Lagrangian loop closes them and meets the clearance."""
    prob = problems.get("arm-obstacle")
    assert np.abs(ddp.gaps_of(prob, prob.xs_init, prob.us_init)).max() > 1e-3
    res = optdyn.solve(prob, "filqr")
    assert res.converged, res.message
    assert res.extra["violation"] <= 1e-6
    np.testing.assert_allclose(res.xs, prob.rollout(res.us), atol=1e-10, rtol=0)
