"""Windows of a problem (issue 41: the references move with time): Problem.window on the legged
robot of :mod:`legged_robot` with a contact sequence, per-knot references and weights, and
contact-force terms; on a problem whose intervals are all alike; bad input."""
from __future__ import annotations

import numpy as np
import pytest
from legged_robot import Q_STAND, legged

import dynamics as dyn
from optdyn import Problem
from optdyn.constraints import ResidualConstraint
from optdyn.costs import (ContactForceResidual, ControlCost, FramePositionCost, FrictionConeResidual, ResidualCost,
                          StateCost)

MODEL = legged()
NV, NU = MODEL.nv, MODEL.nv - 6
FEET = [dyn.Contact(f"foot{i}") for i in range(4)]
X0 = np.r_[Q_STAND, np.zeros(NV)]
# flight, touchdown of feet 0 and 1 at interval 2, of feet 2 and 3 at interval 5
SEQUENCE = [[]] * 2 + [FEET[:2]] * 3 + [FEET] * 3
N = len(SEQUENCE)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    refs = np.stack([np.r_[dyn.integrate(MODEL, Q_STAND, 0.05 * rng.normal(size=NV)), np.zeros(NV)]
                     for _ in range(N)])
    targets = rng.normal(size=(N, 3))
    weights = rng.uniform(0.5, 2.0, N)
    running = (StateCost(1.0, refs, model=MODEL) + ControlCost(1e-3, nu=NU)
               + FramePositionCost(MODEL, "foot3", targets, weights)
               + ResidualCost(ContactForceResidual(MODEL, SEQUENCE, "foot0", reference=rng.normal(size=(N, 3)))))
    cone = ResidualConstraint(FrictionConeResidual(MODEL, SEQUENCE, "foot1", mu=0.5), upper=0.0)
    xs_init = np.stack([np.r_[dyn.integrate(MODEL, Q_STAND, 0.1 * rng.normal(size=NV)), 0.3 * rng.normal(size=NV)]
                        for _ in range(N + 1)])
    return Problem(MODEL, X0, N, 0.05, running, StateCost(10.0, refs[-1], model=MODEL), contacts=SEQUENCE,
                   path_constraints=[cone], xs_init=xs_init, us_init=rng.normal(size=(N, NU)))


@pytest.mark.parametrize("start,n", [(0, N), (1, 4), (2, 3), (5, 2), (6, 5), (N + 3, 2)])
def test_a_window_is_the_task_at_its_intervals(task, start, n):
    """Costs, stage constraints, steps and their derivatives of window(start, n) at its knots
    are the task's at intervals start … start + n − 1 — the last one repeated past N — with
    the impulse of an interval that gains contacts, also as the window's first (2, 5), and
    none where an interval repeats; terminal terms and guesses follow."""
    w = task.window(start, n)
    rows = np.minimum(np.arange(start, start + n), N - 1)
    xs, us = task.xs_init[:-1][rows], task.us_init[rows]
    assert w.N == n and len(w.contacts) == n and w.terminal_cost is task.terminal_cost
    np.testing.assert_array_equal(w.impulses, task.impulses[rows] & np.r_[True, rows[1:] != rows[:-1]])
    assert w.impulses.any() == (start in (2, 5) or (start, n) in ((0, N), (1, 4)))
    np.testing.assert_array_equal(w.running_cost.value(xs, us), task.running_cost.value(task.xs_init[:-1],
                                                                                        task.us_init)[rows])
    np.testing.assert_array_equal(w.stage_constraint_values(xs, us),
                                  task.stage_constraint_values(task.xs_init[:-1], task.us_init)[rows])
    for got, want in zip(w.running_cost_terms(xs, us), task.running_cost_terms(task.xs_init[:-1], task.us_init)):
        np.testing.assert_array_equal(got, np.asarray(want)[rows])
    for j, k in enumerate(rows):  # one interval at a time: the task's own interval k
        got = w.step_derivatives(xs[j:j + 1], us[j:j + 1], start=j)
        want = task.step_derivatives(task.xs_init[k:k + 1], task.us_init[k:k + 1], start=int(k))
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(w.xs_init, task.xs_init[np.r_[rows, rows[-1] + 1]])
    np.testing.assert_array_equal(w.x0, task.x0 if start == 0 else task.xs_init[rows[0]])


def test_past_the_end_the_last_interval_holds(task):
    w = task.window(N + 3, 2)
    assert w.contacts == [SEQUENCE[-1]] * 2 and not w.impulses.any()
    np.testing.assert_array_equal(w.running_cost.value(task.xs_init[[N - 1] * 2], task.us_init[[N - 1] * 2]),
                                  np.repeat(task.running_cost.value(task.xs_init[:-1], task.us_init)[-1:], 2))


def test_a_window_of_a_problem_whose_intervals_are_alike_shares_its_terms():
    rng = np.random.default_rng(1)
    running = StateCost(1.0, np.r_[Q_STAND, np.zeros(NV)], model=MODEL) + ControlCost(1e-3, nu=NU)
    p = Problem(MODEL, X0, 6, 0.05, running, None, us_init=rng.normal(size=(6, NU)))
    w = p.window(4, 5)
    assert w.running_cost is p.running_cost and w.N == 5 and w.dynamics is p.dynamics
    np.testing.assert_array_equal(w.us_init, p.us_init[[4, 5, 5, 5, 5]])
    x = w.xs_init[:-1]
    np.testing.assert_array_equal(w.step(x, w.us_init), p.step(x, w.us_init))


def test_a_window_leaves_the_task_unchanged(task):
    before = task.running_cost.value(task.xs_init[:-1], task.us_init)
    w = task.window(3, 4)
    w.x0 = task.xs_init[3]
    np.testing.assert_array_equal(task.running_cost.value(task.xs_init[:-1], task.us_init), before)
    assert task.N == N and len(task.contacts) == N


@pytest.mark.parametrize("start,n,name", [(-1, 2, "start"), (1.5, 2, "start"), (True, 2, "start"), (0, 0, "n"),
                                          (0, 2.0, "n"), (0, None, "n")])
def test_bad_windows_are_refused_naming_the_argument(task, start, n, name):
    with pytest.raises(ValueError, match=f"^{name}: expected an integer"):
        task.window(start, n)


def test_a_terminal_reference_per_node_ends_every_window_on_the_trajectory():
    """A terminal cost with one reference and one weight per node 0 … N (a frame position
    target, a state reference): the problem uses node N's, as a problem given node N's alone
    does, and window(start, n) the node start + n's (node N's past the end); a terminal term
    with a single reference stays as it is."""
    rng = np.random.default_rng(2)
    nodes = np.stack([np.r_[dyn.integrate(MODEL, Q_STAND, 0.1 * rng.normal(size=NV)), np.zeros(NV)]
                      for _ in range(N + 1)])
    targets, weights = rng.normal(size=(N + 1, 3)), rng.uniform(1.0, 2.0, N + 1)
    fixed = FramePositionCost(MODEL, "foot1", rng.normal(size=3), 3.0)

    def terminal(k=None):
        if k is None:
            return StateCost(2.0, nodes, model=MODEL) + FramePositionCost(MODEL, "foot3", targets, weights) + fixed
        return StateCost(2.0, nodes[k], model=MODEL) + FramePositionCost(MODEL, "foot3", targets[k], weights[k]) + fixed

    running = ControlCost(1e-3, nu=NU)
    p = Problem(MODEL, X0, N, 0.05, running, terminal(), contacts=SEQUENCE)
    x = np.r_[dyn.integrate(MODEL, Q_STAND, 0.2 * rng.normal(size=NV)), rng.normal(size=NV)][None]
    u = np.zeros((1, NU))
    assert p.terminal_nodes is not None
    np.testing.assert_array_equal(p.terminal_cost.value(x, u), terminal(N).value(x, u))
    for start, n, node in ((0, 3, 3), (2, 4, 6), (6, 5, N)):
        np.testing.assert_array_equal(p.window(start, n).terminal_cost.value(x, u), terminal(node).value(x, u))
    assert p.window(2, 4).terminal_cost.value(x, u) != p.terminal_cost.value(x, u)
    alike = Problem(MODEL, X0, N, 0.05, running, terminal(N), contacts=SEQUENCE)
    assert alike.terminal_nodes is None and alike.window(2, 4).terminal_cost is alike.terminal_cost


def test_windows_keep_their_residuals_arrays_in_the_tasks_and_each_gets_its_own_values(task):
    """An MPC makes a window per step: the residuals copied for it (per-knot references, the
    contact sequence) keep their Jacobians in the arrays of the task's residual, not made
    again per window, and each window's expansion is still its own: a contact force's rows at
    knots in contact in one window and in flight in the next are zeroed, not left over."""
    full = task.running_cost_terms(task.xs_init[:-1], task.us_init)
    for start in (0, 2, 5, 0):  # flight then touchdown, stance on two feet, on four, flight again
        w = task.window(start, 3)
        rows = np.arange(start, start + 3)
        for got, want in zip(w.running_cost_terms(task.xs_init[:-1][rows], task.us_init[rows]), full):
            np.testing.assert_array_equal(got, want[rows])
    force = ContactForceResidual(MODEL, SEQUENCE, "foot0")  # never evaluated before its windows
    windows = [force.window(np.arange(start, start + 3)) for start in (0, 2)]
    jacobians = [w.evaluate_shared(task.xs_init[:3], task.us_init[:3]).rx for w in windows]
    assert jacobians[0] is jacobians[1]
