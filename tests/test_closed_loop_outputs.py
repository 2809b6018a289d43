"""A closed loop (issue 41, item 2) saves, reopens, plots and replays in the viewer."""
import numpy as np
import pytest
from matplotlib import image

import dynamics as dyn
import optdyn
import problems
from optdyn import viz
from optdyn.apps.io import load_closed_loop, load_result, save_closed_loop
from optdyn.apps.report import tracking_errors
from optdyn.costs import FramePositionCost
from optdyn.ocp.task import problem_of
from optdyn.viz.plots import plot_closed_loop

PUSH = optdyn.Push("tool0", (0.0, 30.0, 0.0), start=0.2, duration=0.1)


@pytest.fixture(scope="module")
def loop():
    """0.5 s of one-iteration iLQR MPC on a 1 s ur5-reach horizon, pushed at 0.2 s."""
    return optdyn.simulate(optdyn.MPC(problems.get("ur5-reach", N=20), "ilqr"), 0.5, disturbances=[PUSH])


def test_the_loop_records_its_controller_and_problem(loop):
    assert (loop.solver, loop.iteration_limit, loop.warm_start, loop.problem) == ("ilqr", 1, "policy", "ur5-reach")
    assert loop.params["N"] == 20 and loop.source.name == "ur5-reach"
    np.testing.assert_array_equal(loop.source.x0, loop.xs[0])  # as started, not the controller's last x0


def test_save_and_reopen_is_exact(loop, tmp_path):
    path = tmp_path / "loop.npz"
    save_closed_loop(loop, path)
    back = load_closed_loop(path)
    assert loop.margins.shape == (len(loop.us), 0)  # ur5-reach has no constraint
    for name in ("t", "xs", "us", "gains", "solve_time", "cost", "margins", "iterations"):
        np.testing.assert_array_equal(getattr(back, name), getattr(loop, name))
        assert getattr(back, name).dtype == getattr(loop, name).dtype, name
    for name in ("status", "dt", "disturbances", "stopped", "solver", "iteration_limit", "warm_start", "horizon",
                 "problem"):
        assert getattr(back, name) == getattr(loop, name), name
    assert back.params == {"N": 20, "dt": 0.05, "target": [0.4, 0.3, 0.4]} and back.source is None
    rebuilt = problem_of(back)  # from the record it stores (the command line looks the name up first)
    assert rebuilt.N == 20 and np.array_equal(rebuilt.x0, loop.xs[0])
    assert isinstance(optdyn.load(path), optdyn.ClosedLoop)  # whichever the file holds
    with pytest.raises(ValueError, match="it is a closed loop: optdyn.load_closed_loop"):
        load_result(path)
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files if k != "gains"}
    np.savez(tmp_path / "cut.npz", **arrays)
    with pytest.raises(ValueError, match=r"corrupt closed-loop file, missing arrays \['gains'\]"):
        load_closed_loop(tmp_path / "cut.npz")
    arrays["gains"] = np.zeros((3, 6, 12))
    np.savez(tmp_path / "wrong.npz", **arrays)
    with pytest.raises(ValueError, match="corrupt closed-loop file, array shapes"):
        load_closed_loop(tmp_path / "wrong.npz")
    with pytest.raises(ValueError, match="no such file"):
        load_closed_loop(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="loop"):
        save_closed_loop(object(), path)


def test_tracking_errors_follow_the_target(loop):
    prob = loop.source
    errors = tracking_errors(prob, loop.xs)
    assert list(errors) == ["tool0 to (0.4, 0.3, 0.4) [m]"]
    (d,) = errors.values()
    assert d.shape == loop.t.shape and d[0] > 0.3 and d[-1] < d[0]
    goal = problems.get("arm-obstacle", scenario="bent")
    (label,) = tracking_errors(goal, np.tile(goal.x0, (3, 1)))
    assert label.startswith("state to the goal")
    with pytest.raises(ValueError, match="xs"):
        tracking_errors(prob, np.zeros((3, 5)))


def test_tracking_errors_follow_a_reference_path_in_time():
    """A target per knot (a reference trajectory): given the states' times, the error is the
    distance to the path's point at that time — its knot's at k·dt, the mean of two knots'
    halfway between (the path is linear there), the last one's after the end; knots the cost
    does not weight are left out — and without times, the distance to the path's end."""
    base = problems.get("ur5-reach", N=4)
    model, dt = base.model, base.dt
    path = np.array([[0.3, 0.1, 0.4], [0.35, 0.15, 0.45], [0.4, 0.2, 0.5], [0.45, 0.25, 0.55]])
    prob = optdyn.Problem(model, base.x0, 4, dt, FramePositionCost(model, "tool0", path, 1.0))
    xs = np.tile(base.x0, (6, 1))
    xs[:, 1] += np.linspace(0.0, 0.5, 6)  # the shoulder turning: the tool moves
    t = np.array([0.0, 1.0, 1.5, 3.0, 7.0, 9.0]) * dt
    tool = np.stack([dyn.frame_placement(model, x[: model.nq], "tool0")[1] for x in xs])
    ref = np.array([path[0], path[1], 0.5 * (path[1] + path[2]), path[3], path[3], path[3]])
    (label, e), = tracking_errors(prob, xs, t).items()
    assert label == "tool0 to its reference path, ending at (0.45, 0.25, 0.55) [m]"
    np.testing.assert_allclose(e, np.linalg.norm(tool - ref, axis=1), rtol=1e-12)
    (label, e), = tracking_errors(prob, xs).items()
    assert label == "tool0 to (0.45, 0.25, 0.55) [m]"
    np.testing.assert_allclose(e, np.linalg.norm(tool - path[-1], axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match="t: expected the 6 finite times"):
        tracking_errors(prob, xs, t[:3])
    unweighted = path.copy()
    unweighted[2] = 0.0  # a knot the cost does not weight (a swing foot's arc outside its swing) is no reference
    prob = optdyn.Problem(model, base.x0, 4, dt, FramePositionCost(model, "tool0", unweighted, [1.0, 1.0, 0.0, 1.0]))
    (e,) = tracking_errors(prob, xs, t).values()
    ref[2] = 0.75 * path[1] + 0.25 * path[3]  # t = 1.5 dt between the knots 1 and 3
    np.testing.assert_allclose(e, np.linalg.norm(tool - ref, axis=1), rtol=1e-12)


def test_plot_of_a_reopened_loop(loop, tmp_path):
    path = tmp_path / "loop.npz"
    save_closed_loop(loop, path)
    png = plot_closed_loop(load_closed_loop(path), tmp_path / "loop.png")
    pixels = image.imread(png)
    assert pixels.ndim == 3 and pixels.shape[0] > 300 and pixels.std() > 0.01  # a drawn figure, not blank
    with pytest.raises(ValueError, match="loop"):
        plot_closed_loop(object(), tmp_path / "x.png")


def test_replay_draws_the_push_as_an_arrow_while_it_acts(loop, tmp_path):
    scene = viz.scene_of(loop)
    assert {"pushes/push_0/shaft", "pushes/push_0/head"} <= set(scene.objects)
    animation = next(c.animation for c in scene.commands if hasattr(c, "animation"))
    clip = next(c for p, c in animation.clips.items() if p.lower().endswith("push_0"))
    visible = clip.tracks["visible"]
    shown = [t / 30 for t, v in zip(visible.frames, visible.values) if v]
    assert shown and min(shown) >= PUSH.start - 1e-9 and max(shown) < PUSH.start + PUSH.duration
    assert "MPC ilqr, 1 iteration(s) per step" in scene.caption and "push tool0 30 N" in scene.caption
    html = viz.save_html(loop, tmp_path / "loop.html")
    assert "MeshCat.Viewer" in open(html).read()
