"""Costs and constraints: exact gradients/Hessians against central finite differences."""
import numpy as np
from numdiff import central
import pytest

from dynamics.models import ur5
from optdyn.ocp.constraints import FramePositionEquality, SphereClearance, StateEquality, stack_constraints
from optdyn.costs import ControlCost, FramePositionCost, ObstacleCost, StateCost, Sum

MODEL = ur5()
NV = MODEL.nv
NX = 2 * NV
POINTS = [("forearm_link", (0.0, 0.0, 0.2)), ("wrist_2_link", (0.0, 0.0, 0.0)), ("tool0", (0.0, 0.05, 0.0))]
rng = np.random.default_rng(3)
XS = np.concatenate([rng.uniform(-1.5, 1.5, (4, NV)), rng.normal(size=(4, NV))], axis=1)
US = rng.normal(size=(4, NV)) * 5




def _costs():
    p_mid = np.array([0.3, 0.2, 0.5])
    return {
        "state": StateCost(rng.uniform(0.1, 2, NX), rng.normal(size=NX)),
        "control": ControlCost(0.3, rng.normal(size=NV)),
        "frame": FramePositionCost(MODEL, "tool0", (0.4, 0.3, 0.4), 7.0, offset=(0.0, 0.0, 0.1)),
        "obstacle": ObstacleCost(MODEL, POINTS, p_mid, 0.3, weight=5.0, margin=0.02, width=0.2),
        "sum": 2.0 * StateCost(1.0, np.zeros(NX)) + FramePositionCost(MODEL, "wrist_3_link", (0.1, 0.2, 0.3), 3.0)
        + ControlCost(1e-2, nu=NV),
    }


@pytest.mark.parametrize("name", ["state", "control", "frame", "obstacle", "sum"])
def test_cost_derivatives_match_finite_differences(name):
    cost = _costs()[name]
    l, lx, lu, lxx, lux, luu = cost.evaluate(XS, US)
    assert np.allclose(l, cost.value(XS, US), rtol=1e-12, atol=1e-12)
    for k in range(XS.shape[0]):
        x, u = XS[k], US[k]
        fx = lambda y: cost.evaluate(y[None], u[None])  # noqa: E731
        fu = lambda w: cost.evaluate(x[None], w[None])  # noqa: E731
        assert np.allclose(lx[k], central(lambda y: fx(y)[0][0], x), rtol=1e-6, atol=1e-6)
        assert np.allclose(lu[k], central(lambda w: fu(w)[0][0], u), rtol=1e-6, atol=1e-6)
        assert np.allclose(lxx[k], central(lambda y: fx(y)[1][0], x), rtol=1e-5, atol=1e-5)
        assert np.allclose(luu[k], central(lambda w: fu(w)[2][0], u), rtol=1e-5, atol=1e-5)
        assert np.allclose(lux[k], central(lambda y: fx(y)[2][0], x), rtol=1e-5, atol=1e-5)
        assert np.allclose(lxx[k], lxx[k].T, atol=1e-10)
    assert np.any(lxx != 0) or np.any(luu != 0)


def test_frame_cost_is_half_weighted_squared_distance():
    target = np.array([0.4, 0.3, 0.4])
    cost = FramePositionCost(MODEL, "tool0", target, 7.0)
    import dynamics as dyn
    p = dyn.frame_placement(MODEL, XS[0, :NV], "tool0")[1]
    assert np.isclose(cost.value(XS[:1], US[:1])[0], 3.5 * np.sum((p - target) ** 2), rtol=1e-12)


def test_obstacle_cost_is_smooth_one_sided_penalty():
    center = np.array([0.0, 0.0, 0.0])
    far = ObstacleCost(MODEL, POINTS, center + 100.0, 0.1, weight=1.0, width=0.01)
    assert np.all(far.value(XS, US) < 1e-12)
    inside = ObstacleCost(MODEL, POINTS, center, 50.0, weight=2.0, width=0.01)
    d = SphereClearance(MODEL, POINTS, center, 50.0).clearance(XS)
    assert np.allclose(inside.value(XS, US), 2.0 * np.sum(-d, axis=1), rtol=1e-6)


def _constraints():
    return {
        "sphere": SphereClearance(MODEL, POINTS, (0.3, 0.2, 0.5), 0.2, margin=0.05),
        "state": StateEquality(rng.normal(size=NX)),
        "state_indices": StateEquality(rng.normal(size=3), indices=[0, 4, 7], nx=NX),
        "frame": FramePositionEquality(MODEL, "tool0", (0.4, 0.3, 0.4), offset=(0.0, 0.1, 0.0)),
    }


@pytest.mark.parametrize("name", ["sphere", "state", "state_indices", "frame"])
def test_constraint_derivatives_match_finite_differences(name):
    con = _constraints()[name]
    c, cx, cxx = con.evaluate(XS)
    assert c.shape == (XS.shape[0], con.size)
    for k in range(XS.shape[0]):
        assert np.allclose(cx[k], central(lambda y: con.evaluate(y[None])[0][0], XS[k]), rtol=1e-6, atol=1e-7)
        assert np.allclose(cxx[k], central(lambda y: con.evaluate(y[None])[1][0], XS[k]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sphere", "state", "state_indices", "frame"])
def test_constraint_value_is_that_of_its_evaluation(name):
    con = _constraints()[name]  # value() computes no derivatives: the same numbers without them
    assert np.allclose(con.value(XS), con.evaluate(XS)[0], rtol=1e-13, atol=1e-14)


def test_sum_adds_its_terms_expansions_into_given_arrays():
    a = StateCost(np.arange(1.0, NX + 1), rng.normal(size=NX))
    b, c = ControlCost(2.0, nu=NV), FramePositionCost(MODEL, "tool0", (0.3, 0.1, 0.4), 5.0)
    total = 0.5 * a + b + 3.0 * c
    out = tuple(np.full_like(t, 1.0) for t in total.evaluate(XS, US))  # add_to adds to what is there
    total.add_to(XS, US, 2.0, out)
    parts = [(0.5, a.evaluate(XS, US)), (1.0, b.evaluate(XS, US)), (3.0, c.evaluate(XS, US))]
    for i, acc in enumerate(out):
        expected = 1.0 + 2.0 * sum(w * t[i] for w, t in parts if i in (0, 2, 5) or t[i].shape == acc.shape)
        assert np.allclose(acc, expected, rtol=1e-12, atol=1e-12)
    assert np.all(b.evaluate(XS, US)[1] == 0.0)  # a control cost adds nothing to the x-derivatives


def test_a_residual_cost_evaluated_twice_keeps_the_first_result():
    cost = FramePositionCost(MODEL, "tool0", (0.3, 0.1, 0.4), 5.0)
    first = [t.copy() for t in cost.evaluate(XS, US)]
    kept = cost.evaluate(XS, US)
    cost.evaluate(XS[::-1].copy(), US)  # the residual's kept Jacobians are overwritten, not the results
    for a, b in zip(first, kept):
        assert np.array_equal(a, b)


def test_sphere_clearance_values_are_distances_minus_radius_and_margin():
    import dynamics as dyn
    con = SphereClearance(MODEL, [("tool0", (0.0, 0.0, 0.0))], (0.3, 0.2, 0.5), 0.2, margin=0.05)
    p = dyn.frame_placement(MODEL, XS[1, :NV], "tool0")[1]
    assert np.isclose(con.evaluate(XS[1:2])[0][0, 0], np.linalg.norm(p - [0.3, 0.2, 0.5]) - 0.25, rtol=1e-12)


def test_stack_concatenates_constraint_rows():
    cons = list(_constraints().values())
    c, cx, cxx = stack_constraints(cons, XS, NX)
    assert c.shape == (4, sum(k.size for k in cons))
    assert np.array_equal(c[:, : cons[0].size], cons[0].evaluate(XS)[0])


def test_sum_of_costs_is_the_weighted_sum():
    a, b = StateCost(1.0, np.ones(NX)), ControlCost(2.0, nu=NV)
    s = 3.0 * a + b
    assert isinstance(s, Sum) and len(s.terms) == 2
    assert np.allclose(s.value(XS, US), 3.0 * a.value(XS, US) + b.value(XS, US))


@pytest.mark.parametrize("make, match", [
    (lambda: StateCost([1.0, 2.0], np.zeros(3)), "weight"),
    (lambda: StateCost(-1.0, np.zeros(3)), "weight"),
    (lambda: ControlCost(1.0, [np.nan, 0.0]), "reference"),
    (lambda: FramePositionCost(MODEL, "no_such_frame", (0, 0, 0), 1.0), "frame"),
    (lambda: FramePositionCost(MODEL, "tool0", (0, 0), 1.0), "target"),
    (lambda: ObstacleCost(MODEL, POINTS, (0, 0, 0), 0.1, weight=1.0, width=0.0), "width"),
    (lambda: SphereClearance(MODEL, [("tool0", (0.0, 0.0))], (0, 0, 0), 0.1), "points"),
    (lambda: SphereClearance(MODEL, POINTS, (0, 0, 0), -0.1), "radius"),
    (lambda: StateEquality(np.zeros(2), indices=[0, 99], nx=NX), "indices"),
    (lambda: 2.0 * StateCost(1.0, np.zeros(2)) + 3, "unsupported"),
])
def test_bad_cost_and_constraint_arguments_raise(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_point_at_the_sphere_centre_gives_zero_derivatives_not_nan():
    import dynamics as dyn
    p = dyn.frame_placement(MODEL, XS[0, :NV], "tool0")[1]
    con = SphereClearance(MODEL, [("tool0", (0.0, 0.0, 0.0))], p, 0.1)
    c, cx, cxx = con.evaluate(XS[:1])
    assert c[0, 0] == pytest.approx(-0.1, abs=1e-12)
    assert np.all(cx == 0.0) and np.all(cxx == 0.0)
