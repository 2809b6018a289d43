"""The command line, called in-process (``main(argv)``) and once as ``python -m optdyn``."""
import re
import subprocess
import sys

import numpy as np
import pytest
from matplotlib import image

import dynamics as dyn
import problems
from optdyn.apps.cli import _parse_param, _progress_line, main
from optdyn.solvers.runtime import COMPILE_NOTICE
from optdyn.apps.io import load_result, save_result
from optdyn.solvers.result import Result


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *words):
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_list_names_problems_and_scenarios(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    for name in problems.names():
        assert re.search(rf"^{name}\s", out, flags=re.M), name
    assert "bent, straight" in out


@pytest.mark.parametrize("argv, words", [
    (("solve", "no-such-problem"), ("unknown problem", "arm-obstacle")),
    (("solve", "pendulum", "--scenario", "bent"), ("--scenario", "no scenario 'bent'")),
    (("solve", "arm-obstacle", "--scenario", "curly"), ("scenarios: bent, straight",)),
    (("solve", "pendulum", "--param", "colour=3"), ("--param", "colour")),
    (("compare", "no-such-problem"), ("unknown problem",)),
    (("compare", "pendulum", "--solvers", "ddp,newton"), ("solvers", "newton")),
    (("show", "/nonexistent/result.npz"), ("no such file",)),
    (("warmup", "no-such-problem"), ("unknown problem", "arm-obstacle")),
    (("warmup", "pendulum", "--solvers", "ddp,newton"), ("--solvers", "newton")),
    (("warmup", "pendulum", "--jobs", "0"), ("--jobs", "≥ 1")),
])
def test_bad_requests_fail_with_one_line(capsys, argv, words):
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, *words)


@pytest.mark.parametrize("text, value", [
    ("target=0.4,0.3,0.4", [0.4, 0.3, 0.4]),
    ("target=[0.4, 0.3, 0.4]", [0.4, 0.3, 0.4]),
    ("feet=FL_foot,FR_foot, RL_foot,RR_foot", ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]),
    ('feet=["FL_foot", "FR_foot"]', ["FL_foot", "FR_foot"]),
    ("model=/robots/a,b.urdf", "/robots/a,b.urdf"),  # a path is not a list of names
    ("mixed=1,FL_foot", "1,FL_foot"),
    ("dt=0.02", 0.02),
    ("N=20", 20),
    ("scenario=trot", "trot"),
])
def test_a_param_is_json_or_a_comma_list_of_numbers_or_names_or_else_text(text, value):
    key, parsed = _parse_param(text)
    assert key == text.partition("=")[0] and parsed == value and type(parsed) is type(value)


def test_warmup_compiles_each_job_in_its_own_process(capsys):
    """Two solves of the pendulum warmed in two processes at once: each reports its time,
    and this process, which compiled nothing, then solves from the disk cache."""
    from optdyn.solvers.runtime import COMPILATION

    code, out, _ = run(capsys, "warmup", "pendulum", "--solvers", "ddp,ipopt", "--jobs", "2", "--quiet")
    assert code == 0
    assert re.search(r"^pendulum \(ddp\)\s+\d+\.\d s$", out, flags=re.M)
    assert re.search(r"^pendulum \(ipopt\)\s+\d+\.\d s$", out, flags=re.M)
    assert "compiled for 2 solve(s)" in out
    count = COMPILATION.count
    code, _, _ = run(capsys, "solve", "pendulum", "--quiet", "--max-iter", "2")
    assert COMPILATION.count == count  # every kernel came from the disk cache


def test_argparse_rejects_unknown_solver(capsys):
    with pytest.raises(SystemExit) as e:
        main(["solve", "pendulum", "--solver", "newton"])
    assert e.value.code == 2


def test_show_rejects_foreign_file(tmp_path, capsys):
    path = tmp_path / "foreign.npz"
    np.savez(path, a=np.ones(3))
    code, _, err = run(capsys, "show", str(path))
    assert_one_line_error(code, err, "not an optdyn result file")


def test_show_summary_clearance_and_html(tmp_path, capsys):
    prob = problems.get("arm-obstacle", scenario="bent")
    res = Result(xs=prob.xs_init, us=prob.us_init, cost=prob.cost(prob.xs_init, prob.us_init), converged=False,
                 iterations=0, status="max_iter", message="initial guess only", solver="ddp",
                 problem="arm-obstacle", params=dict(prob.params), wall_time=0.5)
    path, html = tmp_path / "guess.npz", tmp_path / "guess.html"
    save_result(res, path)
    code, out, err = run(capsys, "show", str(path), "--html", str(html))
    assert code == 0, err
    assert "max_iter (initial guess only)" in out and f"{res.cost:.10g}" in out
    # the straight interpolation penetrates the obstacle: negative clearance reported
    clearance = float(re.search(r"clearance\s+min ([-+0-9.]+) m", out).group(1))
    assert clearance < 0
    assert "MeshCat.Viewer" in html.read_text()


def test_progress_line_reads_ddp_and_ipopt_records():
    ddp = {"iteration": 3, "cost": 1.5, "violation": 1e-3, "gradient": 2e-4, "time": 0.25}
    ipopt = {"iteration": 3, "objective": 1.5, "inf_pr": 1e-3, "inf_du": 2e-4, "time": 0.25}
    assert _progress_line(ddp) == _progress_line(ipopt)
    assert "1.50000000e+00" in _progress_line(ddp) and "1.00e-03" in _progress_line(ddp)


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_solve_progress_summary_and_outputs(tmp_path, capsys, solver):
    saved, html = tmp_path / "reach.npz", tmp_path / "reach.html"
    code, out, err = run(capsys, "solve", "ur5-reach", "--solver", solver, "--param", "N=20", "--param", "dt=0.1",
                         "--save", str(saved), "--html", str(html))
    assert code == 0, err
    res = load_result(saved)
    assert res.converged and res.solver == solver and res.problem == "ur5-reach"
    progress = [line for line in out.splitlines() if re.match(r"^\s+\d+\s+cost ", line)]
    assert len(progress) == len(res.history["cost"])  # one live line per recorded iteration
    assert f"{res.cost:.10g}" in out and f"iterations  {res.iterations}" in out
    assert "MeshCat.Viewer" in html.read_text()
    assert out.count(COMPILE_NOTICE) == 0 and err.count(COMPILE_NOTICE) <= 1  # stderr, once at most


def test_solve_progress_of_a_solver_that_revises_the_multipliers_inside_the_iteration(tmp_path, capsys):
    saved = tmp_path / "arm.npz"
    code, out, err = run(capsys, "solve", "arm-obstacle", "--solver", "al-ddp", "--save", str(saved))
    assert code == 0, err
    res = load_result(saved)
    progress = [line for line in out.splitlines() if re.match(r"^\s+\d+\s+cost ", line)]
    assert len(progress) == len(res.history["cost"])  # every row a step, none taken for an update
    revisions = int(res.history["outer"][-1])
    assert revisions > 0 and out.count("multipliers updated: revision") == revisions


def test_solve_not_converged_is_a_failure_but_writes_outputs(tmp_path, capsys):
    saved, plot = tmp_path / "short.npz", tmp_path / "short.png"
    code, out, err = run(capsys, "solve", "ur5-reach", "--param", "N=20", "--max-iter", "1", "--save", str(saved),
                         "--plot", str(plot))
    assert_one_line_error(code, err, "did not converge")
    assert not load_result(saved).converged
    assert plot.stat().st_size > 10_000 and f"plot        {plot}" in out


def test_info_runs_every_algorithm(capsys):
    code, out, err = run(capsys, "info")
    assert code == 0, err
    for name in ("rnea", "aba", "crba", "minv", "rnea_derivatives", "aba_derivatives",
                 "rnea_second_derivatives", "aba_second_derivatives"):
        assert re.search(rf"^{name}\s+[0-9.]+ µs ", out, flags=re.M), name
    assert float(re.search(r"‖M·minv\(q\) − 1‖∞ = (\S+)", out).group(1)) < 1e-10
    assert float(re.search(r"‖q̈ − a‖∞ = ([^)]+)\)", out).group(1)) < 1e-10


def test_python_dash_m():
    run_ = subprocess.run([sys.executable, "-m", "optdyn", "solve", "no-such-problem"], capture_output=True, text=True,
                          timeout=120)
    assert run_.returncode == 1 and run_.stderr.count("\n") == 1 and "unknown problem" in run_.stderr
    run_ = subprocess.run([sys.executable, "-m", "optdyn", "list"], capture_output=True, text=True, timeout=120)
    assert run_.returncode == 0 and "arm-obstacle" in run_.stdout


def test_compare_table_and_plot(tmp_path, capsys):
    png = tmp_path / "conv.png"
    code, out, err = run(capsys, "compare", "ur5-reach", "--param", "N=20", "--param", "dt=0.1", "--plot", str(png))
    assert code == 0, err
    assert re.search(r"^\s*ddp\s", out, flags=re.M) and re.search(r"^\s*ilqr\s", out, flags=re.M)
    assert "best cost J*" in out
    pixels = image.imread(png)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.std() > 0.01  # a drawn figure, not blank


def test_show_unknown_problem_summary_only(tmp_path, capsys):
    res = Result(xs=np.zeros((3, 2)), us=np.zeros((2, 1)), cost=2.0, converged=True, iterations=4,
                 status="converged", problem="my-own-problem")
    path = tmp_path / "own.npz"
    save_result(res, path)
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0 and "iterations  4" in out and "note" in out and "my-own-problem" in out
    code, _, err = run(capsys, "show", str(path), "--html", str(tmp_path / "own.html"))
    assert_one_line_error(code, err, "cannot rebuild problem 'my-own-problem'")
    assert not (tmp_path / "own.html").exists()


# ------------------------------------------------------------------------------ mpc

def test_push_syntax():
    from optdyn.apps.cli import CommandError, parse_push
    from optdyn.apps.simulate import Push

    assert parse_push("tool0:0,30,0@1.0+0.2") == Push("tool0", (0.0, 30.0, 0.0), 1.0, 0.2)
    assert parse_push("wrist_3_link:-1e+1,.5,2@1e-1+2E0") == Push("wrist_3_link", (-10.0, 0.5, 2.0), 0.1, 2.0)
    for bad in ("tool0", "tool0:0,30@1+0.2", "tool0:0,30,0@1", "tool0:0,30,0+0.2@1", "tool0:a,b,c@1+0.2",
                ":0,30,0@1+0.2", "tool0:0,30,0@1.0+0.2x"):
        with pytest.raises(CommandError, match=r"^--push: expected FRAME:FX,FY,FZ@START\+DURATION"):
            parse_push(bad)
    with pytest.raises(CommandError, match=r"^--push tool0:0,30,0@1\+-0.2: duration: expected a finite time ≥ 0"):
        parse_push("tool0:0,30,0@1+-0.2")


@pytest.mark.parametrize("argv, words", [
    (("mpc", "ur5-reach", "--push", "tool0:0,30,0"), ("--push", "FRAME:FX,FY,FZ@START+DURATION")),
    (("mpc", "ur5-reach", "--push", "tool0:0,30,0@1.0+-0.2"), ("--push", "duration")),
    (("mpc", "ur5-reach", "--push", "tool9:0,30,0@1.0+0.2"), ("--push tool9", "tool9")),
    (("mpc", "ur5-reach", "--push", "base_link:0,30,0@1.0+0.2"), ("--push", "fixed on the base")),
    (("mpc", "ur5-reach", "--iterations", "0"), ("--iterations", "'converge'")),
    (("mpc", "ur5-reach", "--duration", "-1"), ("--duration", "> 0 s")),
    (("mpc", "ur5-reach", "--html", "/nonexistent/dir/out.html"), ("--html", "does not exist")),
    (("mpc", "ur5-reach", "--solver", "ipopt", "--warm-start", "policy"), ("warm_start", "IPOPT")),
    (("mpc", "no-such-problem"), ("unknown problem",)),
])
def test_mpc_bad_requests_fail_with_one_line_before_any_solve(capsys, argv, words):
    from optdyn.solvers.runtime import COMPILATION

    count = COMPILATION.count
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert_one_line_error(code, err, *words)
    assert "simulating" not in out and COMPILATION.count == count


def test_mpc_refuses_a_horizon_longer_than_the_task(capsys):
    for horizon, words in (("30", ("optdyn mpc: error: horizon:", "1 … 10")),
                           ("long", ("optdyn mpc: error: --horizon:", "number of intervals"))):
        code, _, err = run(capsys, "mpc", "ur5-reach", "--param", "N=10", "--horizon", horizon)
        assert_one_line_error(code, err, *words)


def test_mpc_gives_a_task_done_at_its_end_a_shrinking_horizon(capsys):
    """The Panda reach, done at T = 2 s (its optimum swings through the target at 12 rad/s), gets a
    shrinking horizon and is simulated to T by default, and its hand ends at the target;
    --horizon receding is still taken, and there one iLQR iteration per step leaves the hand far
    from it. (Past T the task asks nothing; its one last interval held does not stop the hand:
    with the former default of 6 s the plant diverged at 3.65 s, measured.)"""
    def final_error(*argv):
        code, out, err = run(capsys, "mpc", "panda-reach", *argv)
        assert code == 0, err
        return out, float(re.search(r"tracking\s+panda_hand to \(.*\) \[m\]: (\S+) at t = 2 s", out)[1])
    out, shrinking = final_error()
    assert "simulating panda-reach for 2 s" in out
    assert "shrinking horizon, on panda-reach" in out and shrinking < 1e-3
    out, receding = final_error("--horizon", "receding", "--duration", "2")
    assert "receding horizon, on panda-reach" in out and receding > 0.1


def test_mpc_end_to_end(tmp_path, capsys):
    from optdyn.apps.io import load_closed_loop

    saved, html, png = tmp_path / "loop.npz", tmp_path / "loop.html", tmp_path / "loop.png"
    code, out, err = run(capsys, "mpc", "ur5-reach", "--param", "N=20", "--duration", "0.5", "--push",
                         "tool0:0,30,0@0.2+0.1", "--solver", "ilqr", "--iterations", "1", "--save", str(saved),
                         "--html", str(html), "--plot", str(png))
    assert code == 0, err
    loop = load_closed_loop(saved)
    assert loop.us.shape == (10, 6) and loop.solver == "ilqr" and loop.iteration_limit == 1
    assert "push        tool0: (0, 30, 0) N from 0.2 s for 0.1 s" in out
    median, ratio = re.search(r"real time\s+median step (\S+) ms = (\S+)× the control period \(50 ms\)", out).groups()
    assert float(ratio) == pytest.approx(float(median) / 50, rel=0.02)
    assert float(median) == pytest.approx(1e3 * np.median(loop.solve_time[1:]), rel=0.01)
    assert re.search(r"worst \S+ ms = \S+× at t = \S+ s; \d+ of 9 steps over the period", out)
    distance = float(re.search(r"tracking\s+tool0 to \(0.4, 0.3, 0.4\) \[m\]: (\S+) at t = 0.5 s", out).group(1))
    tool = dyn.frame_placement(dyn.models.ur5(), loop.xs[-1, :6], "tool0")[1]
    assert distance == pytest.approx(np.linalg.norm(tool - np.array([0.4, 0.3, 0.4])), rel=1e-3)
    assert "MeshCat.Viewer" in html.read_text()
    pixels = image.imread(png)
    assert pixels.ndim == 3 and pixels.std() > 0.01
    # reopened: the same summary, the replay and the plot again
    code, again, err = run(capsys, "show", str(saved), "--html", str(tmp_path / "again.html"))
    assert code == 0, err
    summary = [line for line in out.splitlines() if line[:12].strip() in ("controller", "horizon", "real time",
                                                                          "tracking", "push")]
    assert len(summary) == 5 and all(line in again for line in summary)
    assert "MeshCat.Viewer" in (tmp_path / "again.html").read_text()
    code, _, err = run(capsys, "plot", str(saved), "--out", str(tmp_path / "again.png"))
    assert code == 0 and image.imread(tmp_path / "again.png").std() > 0.01, err


def test_mpc_summary_gives_the_least_constraint_margin_over_every_plant_step(tmp_path, capsys):
    from optdyn.apps.io import load_closed_loop

    saved = tmp_path / "obstacle.npz"
    code, out, err = run(capsys, "mpc", "arm-obstacle", "--duration", "2.4", "--solver", "ilqr", "--iterations", "1",
                         "--horizon", "shrinking", "--save", str(saved))
    assert code == 0, err
    loop = load_closed_loop(saved)
    least, start = re.search(r"margins\s+min (\S+) \(SphereClearance\) in the step from t = (\S+) s, over every "
                             r"plant step", out).groups()
    i = int(np.argmin(loop.margins[:, 0]))
    assert loop.horizon == "shrinking" and "warm start policy, shrinking horizon, on arm-obstacle" in out
    assert float(least) == pytest.approx(loop.margins[i, 0], rel=1e-3, abs=1e-6) and float(start) == loop.t[i]


def test_mpc_ctrl_c_prints_the_summary_writes_outputs_and_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the third step's solve: the loop ends with the two steps recorded."""
    from optdyn.apps.io import load_closed_loop
    from optdyn.solvers.mpc import MPC

    step, calls = MPC.step, []

    def interrupted(self, x, t=None):
        calls.append(t)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return step(self, x, t)

    monkeypatch.setattr(MPC, "step", interrupted)
    saved = tmp_path / "stopped.npz"
    code, out, err = run(capsys, "mpc", "ur5-reach", "--param", "N=20", "--duration", "1", "--save", str(saved))
    assert code == 130
    assert "simulated   0.1 s, 2 steps (stopped: interrupted (Ctrl-C) at t = 0.1 s)" in out
    assert err.strip() == "optdyn mpc: interrupted (Ctrl-C) at t = 0.1 s after 2 steps; the summary above is of those"
    assert load_closed_loop(saved).us.shape == (2, 6)


def test_mpc_diverged_plant_fails_after_the_summary_and_outputs(tmp_path, capsys):
    """A 1e9 N push: the plant diverges, the loop stops; summary and outputs of the steps run,
    then a one-line error. A zero push is accepted (and has no arrow in the replay)."""
    from optdyn.apps.io import load_closed_loop

    saved, html = tmp_path / "diverged.npz", tmp_path / "diverged.html"
    code, out, err = run(capsys, "mpc", "ur5-reach", "--param", "N=10", "--duration", "1", "--push",
                         "tool0:0,1e9,0@0.1+0.2", "--push", "tool0:0,0,0@0+1", "--save", str(saved), "--html", str(html))
    assert_one_line_error(code, err, "the closed loop stopped early: the plant diverged")
    assert code == 1 and "(stopped: the plant diverged between" in out
    loop = load_closed_loop(saved)
    assert loop.stopped.startswith("the plant diverged") and loop.us.shape[0] < 20 and html.exists()


def test_warmup_of_a_script_warms_the_problems_it_defines(capsys, tmp_path):
    """`optdyn warmup --script FILE` warms every Problem the script defines at module level,
    without running its __main__ block; a script without one, or a missing file, is one line."""
    script = tmp_path / "mine.py"
    script.write_text("import problems\nswing = problems.get('pendulum')\n"
                      "if __name__ == '__main__':\n    raise SystemExit('the main block ran')\n")
    code, out, err = run(capsys, "warmup", "--script", str(script), "--solvers", "ddp,ipopt")
    assert code == 0, err
    assert re.search(r"^swing \(ddp\)\s+\d+\.\d s$", out, flags=re.M), out
    assert re.search(r"^swing \(ipopt\)\s+\d+\.\d s$", out, flags=re.M), out
    (tmp_path / "none.py").write_text("x = 1\n")
    for argv, words in [(("--script", str(tmp_path / "none.py")), ("--script", "defines no optdyn.Problem")),
                        (("--script", str(tmp_path / "gone.py")), ("--script", "no such file")),
                        (("pendulum", "--script", str(script)), ("--script", "not both"))]:
        assert_one_line_error(*run(capsys, "warmup", *argv)[::2], *words)


def test_mpc_takes_the_augmented_lagrangian_solvers(tmp_path, capsys):
    """`optdyn mpc --solver al-ilqr` runs the loop with the multipliers revised inside the
    iteration (the choices are those of `optdyn solve`)."""
    from optdyn.apps.io import load_closed_loop

    saved = tmp_path / "loop.npz"
    code, _, err = run(capsys, "mpc", "ur5-reach", "--param", "N=20", "--duration", "0.3", "--solver", "al-ilqr",
                       "--save", str(saved))
    assert code == 0, err
    loop = load_closed_loop(saved)
    assert loop.solver == "al-ilqr" and loop.us.shape == (6, 6) and np.all(np.isfinite(loop.xs))
