"""Results of problems written in a script reopen (show, plot); the trajectory plot; CLI polish."""
import re

import numpy as np
import pytest

import dynamics as dyn
import optdyn
import problems
from dynamics.models import ur5
from optdyn.ocp import task
from optdyn.apps.cli import Progress, build_parser, main
from optdyn.apps.clearance import clearances
from optdyn.apps.compare import iterates
from optdyn.ocp.constraints import FramePositionEquality, SphereClearance, StateEquality
from optdyn.costs import ControlCost, FramePositionCost, ObstacleCost, StateCost
from optdyn.apps.io import load_result, save_result
from optdyn.viz.plots import trajectory_figure
from optdyn.ocp.problem import Problem
from optdyn.solvers.result import Result

POINTS = [("wrist_2_link", (0.0, 0.0, 0.0)), ("tool0", (0.0, 0.0, 0.0))]


def custom_problem(model=None) -> Problem:
    model = ur5() if model is None else model
    q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    running = (StateCost(np.r_[np.zeros(6), np.full(6, 1e-2)]) + 0.5 * ControlCost(1e-3, np.ones(6))
               + FramePositionCost(model, "tool0", (0.4, 0.3, 0.4), 10.0)
               + ObstacleCost(model, POINTS, (0.1, 0.5, 0.2), 0.05, 2.0, margin=0.01))
    terminal = FramePositionCost(model, "tool0", (0.4, 0.3, 0.4), 1e4, offset=(0.0, 0.0, 0.02))
    return Problem(model, np.r_[q0, np.zeros(6)], 8, 0.05, running, terminal, substeps=2,
                   u_lower=-model.effort_limit, u_upper=np.full(6, np.inf),
                   path_constraints=[SphereClearance(model, POINTS, (0.47, 0.25, 0.36), 0.05, margin=0.02)],
                   terminal_constraints=[StateEquality(np.zeros(6), indices=range(6, 12), nx=12),
                                         FramePositionEquality(model, "wrist_1_link", (0.3, 0.1, 0.5))],
                   name="my-ur5")


def some_result(problem: Problem, seed: int = 0) -> Result:
    rng = np.random.default_rng(seed)
    us = problem.us_init + rng.normal(scale=2.0, size=problem.us_init.shape)
    xs = problem.rollout(us)
    history = {"cost": np.array([5.0, 3.0, 3.0, 2.0]), "gradient": np.array([1.0, 0.1, 0.2, 0.01]),
               "violation": np.array([0.1, 0.05, 0.05, 0.0]), "outer": np.array([1, 1, 2, 2]),
               "time": np.array([0.0, 0.1, 0.2, 0.3])}
    res = Result(xs=xs, us=us, cost=problem.cost(xs, us), converged=True, iterations=2, status="converged",
                 solver="ddp", problem=problem.name, history=history)
    res.source = problem
    return res


def test_a_saved_custom_problem_is_rebuilt_from_its_record(tmp_path):
    problem = custom_problem()
    res = some_result(problem)
    save_result(res, tmp_path / "r.npz")
    loaded = load_result(tmp_path / "r.npz")
    again = task.problem_of(loaded)
    assert again.model.source == problem.model.source and again.name == "my-ur5"
    assert (again.N, again.dt, again.substeps, again.integrator) == (8, 0.05, 2, "rk4")
    np.testing.assert_array_equal(again.u_upper, np.inf)
    # the same costs and constraints: same values on the trajectory
    assert again.cost(res.xs, res.us) == pytest.approx(problem.cost(res.xs, res.us), rel=1e-12)
    assert again.violation(res.xs, res.us) == pytest.approx(problem.violation(res.xs, res.us), rel=1e-12)
    assert clearances(again, res.xs, res.us).min == pytest.approx(clearances(problem, res.xs, res.us).min)
    assert [t.frame for t in task.frame_targets(again)] == ["wrist_1_link", "tool0", "tool0"]
    assert len(task.obstacles(again)) == 2 and len(task.collision_points(again)) == 2


def test_the_cost_records_keep_the_format_results_were_saved_in():
    """State, control, frame-position and obstacle costs (now residual × activation) are
    written as before, so results saved by earlier versions rebuild the same terms."""
    rec = task.record(custom_problem())
    assert rec["running_cost"] == [
        {"type": "StateCost", "weight": [0.0] * 6 + [0.01] * 6, "reference": [0.0] * 12, "scale": 1.0},
        {"type": "ControlCost", "weight": [0.001] * 6, "reference": [1.0] * 6, "scale": 0.5},
        {"type": "FramePositionCost", "frame": "tool0", "offset": [0.0, 0.0, 0.0], "target": [0.4, 0.3, 0.4],
         "weight": 10.0, "scale": 1.0},
        {"type": "ObstacleCost", "points": [["wrist_2_link", [0.0, 0.0, 0.0]], ["tool0", [0.0, 0.0, 0.0]]],
         "center": [0.1, 0.5, 0.2], "radius": 0.05, "weight": 2.0, "margin": 0.01, "width": 0.02, "scale": 1.0}]
    assert rec["terminal_cost"] == [{"type": "FramePositionCost", "frame": "tool0", "offset": [0.0, 0.0, 0.02],
                                     "target": [0.4, 0.3, 0.4], "weight": 1e4, "scale": 1.0}]


def test_problem_of_takes_the_first_source_that_has_the_problem(tmp_path):
    problem, other = custom_problem(), custom_problem()
    res = some_result(problem)
    res.params = {"width": 2}
    assert task.problem_of(res) is problem and task.problem_of(res, other) is other
    with pytest.raises(ValueError, match="problem: expected an optdyn.Problem, got str"):
        task.problem_of(res, "my-ur5")
    save_result(res, tmp_path / "r.npz")
    loaded = load_result(tmp_path / "r.npz")
    asked = []

    def named(name, params):
        asked.append((name, params))
        return other if name == "my-ur5" else None

    assert task.problem_of(loaded, make=named) is other and asked == [("my-ur5", {"width": 2})]
    # the viewer and the plot find a loaded result's problem without problem=
    assert "my-ur5 · ddp" in open(optdyn.save_html(loaded, tmp_path / "r.html")).read()
    assert optdyn.plot_trajectory(loaded, tmp_path / "r.png") == str(tmp_path / "r.png")
    loaded.problem = "not-registered"
    assert task.problem_of(loaded, make=named).name == "my-ur5"  # from the record
    del loaded.extra["problem_record"]
    for make in (None, named):
        with pytest.raises(ValueError, match="problem: cannot rebuild problem 'not-registered': none was given"):
            task.problem_of(loaded, make=make)

    def broken(name, params):
        raise ValueError("params: no parameter 'width'")

    with pytest.raises(ValueError, match=r"problem: cannot rebuild problem 'not-registered' \(params: no param"):
        task.problem_of(loaded, make=broken)


def test_a_model_built_in_code_has_no_record():
    b = dyn.ModelBuilder("one")
    b.add_link("base")
    b.add_link("l1", 1.0, np.eye(3) * 1e-2)
    b.add_joint("j1", "revolute", "base", "l1", np.eye(4), (0, 0, 1))
    assert task.record(Problem(b.build(), np.zeros(2), 3, 0.1)) is None


def test_rebuild_refuses_a_moved_model(tmp_path):
    rec = task.record(custom_problem())
    rec["model"]["source"] = str(tmp_path / "gone.urdf")
    with pytest.raises(ValueError, match="no longer exists"):
        task.rebuild(rec)
    with pytest.raises(ValueError, match="record"):
        task.rebuild({"version": 1})


def test_show_and_plot_reopen_a_custom_problem(tmp_path, capsys):
    problem = custom_problem()
    res = some_result(problem)
    path, html, png = tmp_path / "own.npz", tmp_path / "own.html", tmp_path / "own.png"
    save_result(res, path)
    assert main(["show", str(path), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    c = clearances(problem, res.xs, res.us)
    assert f"clearance   min {c.min:+.4f} m" in out and "target      tool0" in out
    page = html.read_text()
    assert "my-ur5 · ddp" in page and "MeshCat.Viewer" in page
    assert main(["show", str(path), "--html", str(html), "--path-frame", "no_such_frame"]) == 1
    assert "no_such_frame" in capsys.readouterr().err
    assert main(["plot", str(path), "--out", str(png)]) == 0
    from matplotlib import image
    pixels = image.imread(png)
    assert pixels.shape[1] >= 1000 and pixels.std() > 0.05


def test_corrupt_result_files_give_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 this is not a zip archive")
    for argv in (["show", str(bad)], ["plot", str(bad), "--out", str(tmp_path / "x.png")]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "bad.npz" in err and "not an npz archive" in err


def test_trajectory_figure_shows_the_trajectory_and_its_limits():
    import matplotlib.pyplot as plt

    problem = custom_problem()
    res = some_result(problem)
    fig = trajectory_figure(res)
    try:
        q_ax, v_ax, u_ax = fig.axes[:3]
        t = problem.dt * np.arange(problem.N + 1)
        curves = [line for line in q_ax.get_lines() if len(line.get_xdata()) > 2]
        np.testing.assert_allclose(np.array([line.get_ydata() for line in curves]).T, res.xs[:, :6])
        np.testing.assert_allclose(curves[0].get_xdata(), t)
        limits = {round(float(line.get_ydata()[0]), 6) for line in q_ax.get_lines() if len(line.get_xdata()) == 2}
        assert limits == {round(float(v), 6) for v in np.r_[problem.model.lower_limit, problem.model.upper_limit]}
        # torques: only the finite lower bounds are drawn
        bounds = {round(float(line.get_ydata()[0]), 6) for line in u_ax.get_lines() if len(line.get_xdata()) == 2}
        assert bounds == {round(float(v), 6) for v in -problem.model.effort_limit}
        clearance_ax = fig.axes[3]
        smallest = clearance_ax.get_lines()[0].get_ydata()
        assert np.min(smallest) == pytest.approx(clearances(problem, res.xs, res.us).min)
        # convergence: the multiplier-update row is not an iteration (3 iterates, not 4 rows)
        np.testing.assert_allclose(fig.axes[4].get_lines()[0].get_ydata(), [5.0, 3.0, 2.0])
    finally:
        plt.close(fig)


def test_multiplier_updates_are_marked_not_counted(capsys):
    rows = [{"cost": c, "violation": 0.1, "gradient": 0.1, "time": 0.0, "outer": o, "iteration": i}
            for i, (c, o) in enumerate([(5.0, 1), (3.0, 1), (3.0, 2), (2.0, 2), (1.0, 3)])]
    progress = Progress()
    for row in rows:
        progress(row)
    lines = capsys.readouterr().out.splitlines()
    numbered = [int(m.group(1)) for m in (re.match(r"^\s+(\d+)\s+cost", line) for line in lines) if m]
    assert numbered == [0, 1, 2]
    assert [line for line in lines if "multipliers updated" in line][1].count("outer iteration 3") == 1
    np.testing.assert_array_equal(iterates({"cost": np.zeros(5), "outer": np.array([1, 1, 2, 2, 3])}),
                                  [True, True, False, True, False])
    np.testing.assert_array_equal(iterates({"cost": np.zeros(3), "outer": np.zeros(3)}), [True] * 3)


def test_version_and_every_option_states_its_default(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and re.fullmatch(r"optdyn \S+\n", capsys.readouterr().out)
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict)).choices
    for name, sub in subparsers.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if not action.option_strings or action.dest == "help":
                continue
            text = formatter._expand_help(action) if action.help else ""
            assert "default" in text or "required" in text, (name, action.option_strings, text)


def test_quiet_drops_the_iteration_log(capsys):
    code = main(["solve", "ur5-reach", "--param", "N=10", "--param", "dt=0.1", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and not re.search(r"^\s+\d+\s+cost ", out, flags=re.M) and "cost        " in out


def test_compare_plot_puts_like_with_like_and_counts_as_the_table():
    import matplotlib.pyplot as plt

    from optdyn.apps.compare import convergence_figure

    def result(solver, cost, gradient, outer, iterations):
        n = len(cost)
        return Result(xs=np.zeros((2, 2)), us=np.zeros((1, 1)), cost=cost[-1], converged=True,
                      iterations=iterations, status="converged", solver=solver,
                      history={"cost": np.array(cost), "gradient": np.array(gradient),
                               "outer": np.array(outer), "time": np.linspace(0, 1, n)})

    ddp = result("ddp", [4.0, 2.0, 2.0, 1.0], [1.0, 0.1, 0.3, 1e-6], [1, 1, 2, 2], 2)
    ipopt = result("ipopt", [5.0, 3.0, 1.5, 1.0, 1.0], [9.0, 1.0, 0.1, 1e-3, 1e-9], [0] * 5, 4)
    fig = convergence_figure({"ddp": ddp, "ipopt": ipopt}, 1.0)
    try:
        axes = np.array(fig.axes).reshape(3, 2)
        assert [line.get_label() for line in axes[1, 0].get_lines()] == ["ddp"]
        assert [line.get_label() for line in axes[2, 0].get_lines()] == ["ipopt"]
        assert "gradient" in axes[1, 0].get_ylabel() and "KKT" in axes[2, 0].get_ylabel()
        # iteration axes end where the table's iteration counts do (the update row dropped)
        np.testing.assert_array_equal(axes[1, 0].get_lines()[0].get_xdata(), [0, 1, 2])
        np.testing.assert_allclose(axes[1, 0].get_lines()[0].get_ydata(), [1.0, 0.1, 1e-6])
        assert [line.get_xdata()[-1] for line in axes[0, 0].get_lines()] == [2, 4]
        lo, hi = axes[0, 0].get_xlim()
        assert lo < 0 and 4 < hi < 5
    finally:
        plt.close(fig)


def test_clearances_of_any_problem_with_clearance_constraints():
    """Two constraints with their own spheres, points and margins: one column per point of each."""
    model = ur5()
    a = SphereClearance(model, POINTS, (0.47, 0.25, 0.36), 0.05, margin=0.02)
    b = SphereClearance(model, [("forearm_link", (0.0, 0.0, 0.2))], (0.0, -0.4, 0.3), 0.1, margin=0.07)
    q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    problem = Problem(model, np.r_[q0, np.zeros(6)], 4, 0.05, substeps=3, path_constraints=[a, b], name="two")
    res = some_result(problem, seed=3)
    c = clearances(problem, res.xs, res.us)
    np.testing.assert_array_equal(c.margins, [0.02, 0.02, 0.07])
    assert c.margin == 0.07 and c.substeps.shape == (4, 4, 3)
    for k in range(problem.N + 1):
        q = res.xs[k, :6]
        expected = [np.linalg.norm(dyn.frame_placement(model, q, f)[1] - np.array([0.47, 0.25, 0.36])) - 0.05
                    for f, _ in POINTS]
        R, p = dyn.frame_placement(model, q, "forearm_link")
        expected.append(np.linalg.norm(p + R @ [0.0, 0.0, 0.2] - np.array([0.0, -0.4, 0.3])) - 0.1)
        np.testing.assert_allclose(c.nodes[k], expected, atol=1e-12)
    np.testing.assert_allclose(c.substeps[:, 0], c.nodes[:-1], atol=1e-12)
    assert c.min == pytest.approx(c.substeps.min())


def test_a_problem_of_ones_own_named_like_a_task_reopens_as_itself(tmp_path):
    """A result of one's own problem that shares a registered task's name comes back from its
    record (what was solved), not as the task; a result of the task itself, as the task."""
    own = problems.get("ur5-reach", N=10, target=(0.3, -0.2, 0.5))
    own.params = {"N": 10}  # as if written by hand: the name and the horizon of the task, another target
    registry = lambda name, params: problems.get(name, **params)  # noqa: E731 — the command line's lookup
    for prob, target in ((own, (0.3, -0.2, 0.5)), (problems.get("ur5-reach", N=10), (0.4, 0.3, 0.4))):
        res = some_result(prob)
        res.problem, res.params = prob.name, prob.params
        save_result(res, tmp_path / "r.npz")
        again = task.problem_of(load_result(tmp_path / "r.npz"), make=registry)
        np.testing.assert_allclose(task.frame_targets(again)[0].target, target)
        assert (again.params == {"N": 10, "dt": 0.05, "target": (0.4, 0.3, 0.4)}) == (prob is not own)
