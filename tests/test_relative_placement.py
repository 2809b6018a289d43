"""Placement of one frame relative to another (optdyn.ocp.relative_residuals): values against
independent formulas, r_x and the contracted Hessians against differences along x ⊕ δx with
one reference per knot, on a floating base (the space manipulator), a fixed arm (UR5) and a
branched tree (frames on two branches, one frame an ancestor of the other)."""
import numpy as np
import pytest
from numdiff import central, rel_error, second_differences
from scipy.linalg import expm
from test_residuals import _plus, _state, saved_and_rebuilt

import dynamics as dyn
from optdyn.costs import (FramePlacementResidual, FramePositionResidual, RelativePlacementCost,
                          RelativePlacementResidual, RelativePositionCost, RelativePositionResidual)

FLOAT = dyn.models.space_manipulator()
UR5 = dyn.models.ur5()
TREE = dyn.models.binary_tree(7, seed=3)  # link1 at the root; link2 → link4, link5; link3 → link6, link7
MODELS = {"floating": FLOAT, "ur5": UR5, "tree": TREE}
K = 3  # knots, each with its own reference

PAIRS = [  # (model, frame f, relative to frame b)
    ("floating", "tool0", "satellite"),  # the satellite's DoFs support both: they cancel
    ("floating", "satellite", "wrist_1_link"),  # f an ancestor of b
    ("ur5", "tool0", "upper_arm_link"),
    ("ur5", "forearm_link", "world"),  # b on the fixed base
    ("tree", "link7", "link5"),  # two branches below link1
    ("tree", "link2", "link5"),  # f an ancestor of b
    ("tree", "link5", "link2"),  # b an ancestor of f
]


def _transform(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _relative(model, x, frame, relative_to):
    """M_b⁻¹ M_f (4, 4) from the world placements of the two frames."""
    q = x[: model.nq]
    return np.linalg.inv(_transform(*dyn.frame_placement(model, q, relative_to))) @ _transform(
        *dyn.frame_placement(model, q, frame))


def _residual(which, frame, relative_to, kind):
    """The relative residual with one reference per knot: near the relative placement at
    random states (placement) or random points (position)."""
    model = MODELS[which]
    if kind == "placement":
        targets = np.array([_relative(model, _state(model, 60 + k), frame, relative_to) for k in range(K)])
        return RelativePlacementResidual(model, frame, relative_to, targets)
    return RelativePositionResidual(model, frame, relative_to, np.random.default_rng(8).normal(size=(K, 3)))


def _derivative_errors(model, residual, seed):
    """(error of r_x, error of the Hessian of ρᵀr) worst over the knots, against differences
    of the residual's value at that knot (its own reference) along x ⊕ δx."""
    ndx, nu = 2 * model.nv, 2
    xs = np.array([_state(model, seed + k) for k in range(K)])
    us = np.zeros((K, nu))
    t = residual.evaluate(xs, us)
    rho = np.random.default_rng(seed).normal(size=(K, residual.size))
    Hxx, Hux, Huu = t.hessians(rho)
    assert not np.any(Hux) and not np.any(Huu) and not np.any(t.ru)
    errors = []
    for k in range(K):
        def f(dx):
            moved = xs.copy()
            moved[k] = _plus(model, xs[k], dx)
            return residual.value(moved, us)[k]
        rx = central(f, np.zeros(ndx))
        H = second_differences(lambda e: rho[k] @ f(e), ndx)
        assert np.allclose(Hxx[k], Hxx[k].T, atol=1e-10)
        errors.append((rel_error(t.rx[k], rx), rel_error(Hxx[k], H)))
    return np.max(errors, axis=0)


CASES = [(w, f, b, kind) for w, f, b in PAIRS for kind in ("placement", "position")]


@pytest.mark.parametrize("which,frame,relative_to,kind", CASES, ids=[f"{w}-{f}-in-{b}-{k}" for w, f, b, k in CASES])
def test_jacobian_and_contracted_hessian_match_differences_with_a_reference_per_knot(which, frame, relative_to, kind):
    model = MODELS[which]
    residual = _residual(which, frame, relative_to, kind)
    rx_error, H_error = _derivative_errors(model, residual, seed=20)
    assert rx_error < 1e-7 and H_error < 1e-6, (rx_error, H_error)


def test_the_signed_pair_weights_are_needed():
    """The test above can fail: dropping the pairs (a on b's branch, d on f's) of the
    second-order twist (−½ S_B ε × S_F ε) on the tree's two branches, or giving the pairs on
    b's branch the sign of f's (satellite in wrist_1_link: f an ancestor of b, F empty),
    leaves the Hessian wrong while r_x stays right."""
    for which, frame, relative_to, change in (("tree", "link7", "link5", "cross"),
                                              ("floating", "satellite", "wrist_1_link", "sign")):
        residual = _residual(which, frame, relative_to, "placement")
        m = residual.motion
        assert (m.F.any(), m.B.any()) == ((True, True) if change == "cross" else (False, True))
        if change == "cross":
            m.ancestors = m.ancestors + np.outer(m.B, m.F)  # the B×F weights −1 → 0
        else:
            m.ancestors = np.abs(m.ancestors)  # the B×B weights −1 → +1
        rx_error, H_error = _derivative_errors(MODELS[which], residual, seed=20)
        assert rx_error < 1e-7 and H_error > 1e-3, (which, H_error)


@pytest.mark.parametrize("which,frame,relative_to", PAIRS, ids=[f"{w}-{f}-in-{b}" for w, f, b in PAIRS])
def test_values_against_the_world_placements_of_the_two_frames(which, frame, relative_to):
    """M* exp(r̂) = M_b⁻¹ M_f (matrix exponential) and p = R_bᵀ(p_f − p_b) − p*, per knot."""
    model = MODELS[which]
    xs = np.array([_state(model, 30 + k) for k in range(K)])
    placement, position = (_residual(which, frame, relative_to, kind) for kind in ("placement", "position"))
    r, e = placement.value(xs, np.zeros((K, 1))), position.value(xs, np.zeros((K, 1)))
    for k in range(K):
        M = _relative(model, xs[k], frame, relative_to)
        assert np.allclose(placement.target[k] @ expm(_hat(r[k])), M, atol=1e-10)
        assert np.allclose(e[k], M[:3, 3] - position.target[k], atol=1e-12)
    assert np.abs(r).max() > 0.1  # the states are not those of the references


def _hat(r):
    """4×4 matrix of the twist r = (linear, angular) in se(3)."""
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -r[5], r[4]], [r[5], 0, -r[3]], [-r[4], r[3], 0]]
    X[:3, 3] = r[:3]
    return X


def test_the_joints_supporting_both_frames_do_not_move_the_relative_placement():
    """tool0 in the satellite's frame: r_x is zero in the satellite's six columns (and in every
    velocity column) and so is every Hessian entry touching them, at any satellite pose."""
    residual = _residual("floating", "tool0", "satellite", "placement")
    xs = np.array([_state(FLOAT, 40 + k) for k in range(K)])
    t = residual.evaluate(xs, np.zeros((K, 6)))
    Hxx = t.hessians(np.random.default_rng(1).normal(size=(K, 6)))[0]
    assert np.all(t.rx[:, :, :6] == 0) and np.all(t.rx[:, :, FLOAT.nv:] == 0)
    assert np.abs(t.rx[:, :, 6:12]).max() > 0.1
    assert np.all(Hxx[:, :6] == 0) and np.all(Hxx[:, :, :6] == 0)
    moved = xs.copy()
    moved[:, :7] = np.array([_state(FLOAT, 50 + k)[:7] for k in range(K)])  # another satellite pose
    assert np.allclose(residual.value(moved, np.zeros((K, 6))), t.r, atol=1e-12)


@pytest.mark.parametrize("which,frame,root", [("ur5", "tool0", "world"), ("ur5", "wrist_2_link", "base_link"),
                                              ("tree", "link6", "base")])
def test_relative_to_a_frame_of_the_fixed_base_is_the_world_residual(which, frame, root):
    model = MODELS[which]
    xs = np.array([_state(model, 70 + k) for k in range(K)])
    us, rho = np.zeros((K, 1)), np.random.default_rng(2).normal(size=(K, 6))
    T = np.array([_transform(*dyn.frame_placement(model, _state(model, 80 + k)[: model.nq], frame)) for k in range(K)])
    for relative, world, w in ((RelativePlacementResidual(model, frame, root, T), FramePlacementResidual(model, frame, T),
                                rho),
                               (RelativePositionResidual(model, frame, root, T[:, :3, 3]),
                                FramePositionResidual(model, frame, T[:, :3, 3]), rho[:, :3])):
        a, b = relative.evaluate(xs, us), world.evaluate(xs, us)
        assert np.abs(a.r).max() > 0.05
        np.testing.assert_allclose(a.r, b.r, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.rx, b.rx, rtol=0, atol=1e-11)
        np.testing.assert_allclose(a.hessians(w)[0], b.hessians(w)[0], rtol=0, atol=1e-10)


def test_relative_costs_are_half_the_weighted_squared_residual_with_its_derivatives():
    M = _relative(FLOAT, _state(FLOAT, 90), "tool0", "satellite")
    xs = np.array([_state(FLOAT, 91 + k) for k in range(K)])
    us = np.zeros((K, 6))
    for cost, residual in ((RelativePlacementCost(FLOAT, "tool0", "satellite", M, 3.0),
                            RelativePlacementResidual(FLOAT, "tool0", "satellite", M)),
                           (RelativePositionCost(FLOAT, "wrist_3_link", "satellite", M[:3, 3], [1.0, 2.0, 0.5]),
                            RelativePositionResidual(FLOAT, "wrist_3_link", "satellite", M[:3, 3]))):
        l, lx, _, lxx, _, _ = cost.evaluate(xs, us)
        t = residual.evaluate(xs, us)
        w = np.broadcast_to(cost.weight, (K,))
        np.testing.assert_allclose(l, 0.5 * w * np.sum(t.r ** 2, axis=1), rtol=1e-12)
        np.testing.assert_allclose(lx, w[:, None] * np.einsum("ki,kia->ka", t.r, t.rx), rtol=0, atol=1e-12)
        exact = np.einsum("kia,kib->kab", t.rx, t.rx) + t.hessians(t.r)[0]
        np.testing.assert_allclose(lxx, w[:, None, None] * exact, rtol=0, atol=1e-10)


BAD = [
    (lambda: RelativePlacementResidual(FLOAT, "no_such_frame", "satellite", np.eye(4)), "frame"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "no_such_frame", np.eye(4)), "relative_to"),
    (lambda: RelativePositionResidual(FLOAT, "tool0", 3, (0, 0, 0)), "relative_to"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "tool0", np.eye(4)), "relative_to"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "ee_link", np.eye(4)), "relative_to"),  # one body
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "satellite", np.eye(3)), "target"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "satellite", np.diag([1.0, 1.0, -1.0, 1.0])), "target"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "satellite", np.zeros((2, 4, 3))), "target"),
    (lambda: RelativePositionResidual(FLOAT, "tool0", "satellite", (0.1, 0.2)), "target"),
    (lambda: RelativePositionCost(FLOAT, "tool0", "satellite", (0.1, 0.2, 0.3), -1.0), "weight"),
    (lambda: RelativePlacementResidual(FLOAT, "tool0", "satellite", np.tile(np.eye(4), (K, 1, 1)))
     .value(np.array([_state(FLOAT, 1)] * 2), np.zeros((2, 6))), "target"),  # K references, 2 knots
]


@pytest.mark.parametrize("make,name", BAD, ids=[f"{n}-{i}" for i, (_, n) in enumerate(BAD)])
def test_bad_input_raises_a_value_error_naming_the_argument(make, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        make()


@pytest.mark.parametrize("cost", ["placement", "position"])
def test_the_report_tracks_a_relative_target_in_its_frame(cost):
    """``optdyn.report.tracking_errors`` of a task whose target is relative to another frame:
    the distance in that frame's axes (the residual's own translation error), not to the target
    read as a world point."""
    import optdyn
    from optdyn.ocp.task import frame_targets

    target = np.array([0.2, 0.5, 1.0])
    M = np.eye(4)
    M[:3, 3] = target
    term = (RelativePlacementCost(FLOAT, "tool0", "satellite", M, 1.0) if cost == "placement"
            else RelativePositionCost(FLOAT, "tool0", "satellite", target, 1.0))
    prob = optdyn.Problem(FLOAT, _state(FLOAT, 40), 3, 0.1, None, term)
    xs = np.stack([_state(FLOAT, 41 + k) for k in range(4)])
    (label, error), = optdyn.report.tracking_errors(prob, xs).items()
    assert label.endswith("in satellite [m]") and frame_targets(prob)[0].relative_to == "satellite"
    want = np.linalg.norm([_relative(FLOAT, x, "tool0", "satellite")[:3, 3] - target for x in xs], axis=1)
    np.testing.assert_allclose(error, want, rtol=0, atol=1e-12)
    world = np.linalg.norm([dyn.frame_placement(FLOAT, x[:FLOAT.nq], "tool0")[1] - target for x in xs], axis=1)
    assert np.abs(error - world).max() > 1e-2


def test_saved_results_rebuild_the_relative_terms(tmp_path):
    """A result saved with its problem's record (a URDF robot) comes back with its relative
    placement and position costs (one target per knot): the same cost at a random trajectory."""
    import optdyn

    N = 4
    M = np.stack([_relative(UR5, _state(UR5, 50 + k), "tool0", "forearm_link") for k in range(N)])
    running = RelativePlacementCost(UR5, "tool0", "forearm_link", M, 2.0)
    terminal = RelativePositionCost(UR5, "wrist_1_link", "base_link", M[-1, :3, 3], 3.0)
    prob = optdyn.Problem(UR5, _state(UR5, 49), N, 0.1, running, terminal, name="relative")
    us = np.random.default_rng(5).normal(size=(N, prob.nu))
    xs, _, again = saved_and_rebuilt(prob, us, tmp_path / "r.npz")
    assert again.cost(xs, us) == pytest.approx(prob.cost(xs, us), rel=1e-12) and prob.cost(xs, us) > 0
