"""The Riccati iteration's step on the augmented Lagrangian's piecewise-quadratic rows
(:meth:`optdyn.solvers.ddp.RiccatiSolver.step_on`), checked on a linear system with linear
inequality rows, where the Gauss–Newton model of the merit is the merit itself."""
import numpy as np
import pytest
from scipy.optimize import minimize

from dynamics import ModelBuilder
from optdyn.costs import ControlCost, StateCost
from optdyn.ocp.constraints import JointLimits
from optdyn.ocp.problem import Problem
from optdyn.solvers.augmented_lagrangian import ALObjective
from optdyn.solvers.ddp import DDP, ILQR, Log
from optdyn.solvers.riccati import linear_path
from optdyn.solvers.workspace import Workspace

pytestmark = pytest.mark.cost(4)

V_MAX, RHO = 0.3, 100.0


def limited_slider() -> Problem:
    """A 2 kg cart on a prismatic joint without gravity (s̈ = τ/m: linear, and RK4 exact for
    it), driven from rest to s = 1 in 1.5 s under the velocity limit |ṡ| ≤ 0.3 m/s: its rows
    are linear in the state, so the augmented Lagrangian is piecewise quadratic in u."""
    b = ModelBuilder("slider")
    b.add_link("base")
    b.add_link("cart", mass=2.0, inertia=0.1 * np.eye(3))
    b.add_joint("slide", "prismatic", "base", "cart", axis=(1.0, 0.0, 0.0), velocity=V_MAX)
    model = b.build(gravity=(0.0, 0.0, 0.0))
    return Problem(model, [0.0, 0.0], N=15, dt=0.1, running_cost=StateCost(1.0, [1.0, 0.0]) + ControlCost(0.1, nu=1),
                   terminal_cost=StateCost(100.0, [1.0, 0.0]), path_constraints=[JointLimits(model, position=False)])


def first_step(solver, prob: Problem, rounds: int, rho: float = RHO):
    """(objective, iterate, the step at the rest trajectory and its path Δz) of ``solver`` with
    ``active_set_rounds`` = ``rounds`` on the merit at λ = 0 and ``rho``."""
    objective = ALObjective(prob, np.zeros((prob.N, prob.nc)), np.zeros(0), rho,
                            gauss_newton=solver.objective(prob).gauss_newton)
    solver.active_set_rounds = rounds
    ws = Workspace(prob)
    it = solver.start(prob, objective, np.zeros((prob.N, prob.nu)), None, ws)
    it.J = objective.value(it.xs, it.us)
    models = solver.expand(prob, objective, it, ws)
    step, failed = solver.step_on(objective, models, it, ws)
    assert failed < 0
    return objective, it, step, linear_path(models[-1].lq, step.k, step.K, step.gaps, ws.path).copy()


def merit_minimiser(prob: Problem, objective: ALObjective) -> np.ndarray:
    """The controls that minimise the merit at fixed λ, ρ, by quasi-Newton on its value alone
    (the rollout and the rows' max(0, ·)², no Riccati pass: an independent reference)."""
    res = minimize(lambda u: objective.value(prob.rollout(u[:, None]), u[:, None]), np.zeros(prob.N),
                   method="BFGS", options={"gtol": 1e-10, "maxiter": 2000})
    return res.x[:, None]


@pytest.mark.parametrize("solver", [ILQR, DDP])
def test_the_step_with_the_rows_it_crosses_lands_on_the_merits_minimiser(solver):
    """Newton's step on a piecewise-quadratic function with its pieces chosen where the step
    lands (Hintermüller, Ito & Kunisch 2002) is that function's minimiser once the pieces
    hold there; the first step alone, on the rows' sides at rest (all flat), runs past the
    limit by the penalty it does not see."""
    prob = limited_slider()
    objective, it, step, path = first_step(solver(), prob, rounds=3)
    u_star = merit_minimiser(prob, objective)
    np.testing.assert_allclose(it.us + path[:-1, prob.ndx:], u_star, atol=1e-5)
    v = (it.xs[:, 1] + path[:, 1])[1:]
    assert v.max() > V_MAX  # the penalty's optimum lies past the limit, by O(1/ρ)
    _, it0, _, plain = first_step(solver(), prob, rounds=0)
    assert np.abs(it0.us + plain[:-1, prob.ndx:] - u_star).max() > 0.1


@pytest.mark.parametrize("rho", [RHO, 0.01])
def test_the_steps_model_change_is_the_merits_along_it(rho):
    """ΔV(α) = α dV1 + α² dV2 of the step taken, the rows' kinks in it: its slope is the
    merit's at α = 0 (where the rows the step crosses are still flat) and its full-step change
    the merit's change, the merit being its own Gauss–Newton model here (linear dynamics,
    linear rows). At ρ = 100 the step crosses the limit with the rows brought in; at 0.01
    the first step crosses it too, but its penalty there is below half its decrease
    (:data:`~optdyn.solvers.ddp.KINKS_SHARE`), and that step is taken."""
    prob = limited_slider()
    objective, it, step, path = first_step(ILQR(), prob, 3, rho)
    dx, du = path[:, :prob.ndx], path[:-1, prob.ndx:]

    def merit(a):
        return objective.value(prob.state_integrate(it.xs, a * dx), it.us + a * du)

    assert merit(1.0) - merit(0.0) == pytest.approx(step.dV1 + step.dV2, rel=1e-9)
    h = 1e-6
    assert (merit(h) - merit(0.0)) / h == pytest.approx(step.dV1, rel=1e-4)
    assert step.dV1 + step.dV2 < 0  # a descent step of the merit
    assert (it.xs[:, 1] + path[:, 1]).max() > V_MAX  # a step across the rows' kinks
