"""The example scripts run headless and do what their docstrings say (so none can rot)."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.cost(33)

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def run_example(name: str, cwd) -> str:
    root = os.path.abspath(os.path.join(EXAMPLES, os.pardir))  # this checkout, not an installed copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_custom_ocp_solves_with_both_solvers(tmp_path):
    out = run_example("custom_ocp.py", tmp_path)
    lines = [line for line in out.splitlines() if line.strip().startswith(("ddp:", "ilqr:"))]
    assert len(lines) == 2 and all("converged" in line for line in lines), out


def test_ur5_press_holds_the_tool_on_the_table_with_the_prescribed_wrench(tmp_path):
    out = run_example("ur5_press.py", tmp_path)
    assert out.count(": converged,") == 2, out
    height = float(out.split("largest height off the table ")[1].split(" mm")[0])
    error = float(out.split("max error ")[1].split(" ")[0])
    assert height < 1.0 and error < 0.05, out  # on the table (mm), wrench as prescribed (N, N·m)


def test_compare_ddp_ilqr_writes_plots(tmp_path):
    out = run_example("compare_ddp_ilqr.py", tmp_path)
    for name in ("ur5-reach", "pendulum", "double-pendulum"):
        assert f"{name}: best cost" in out
        assert (tmp_path / f"convergence_{name}.png").stat().st_size > 10_000


def test_user_residual_example_checks_its_derivatives_and_holds_the_table(tmp_path):
    out = run_example("user_residual.py", tmp_path)
    error = float(out.split("hand-written derivatives: ")[1].split()[0])
    heights = [float(line.split("lowest tool height ")[1].split(" m")[0]) for line in out.splitlines()
               if line.startswith(("ddp:", "ipopt:"))]
    assert error < 1e-5 and len(heights) == 2 and min(heights) > 0.25 - 1e-5, out
    assert out.count(": converged,") == 2 and out.count("by differences of their Jacobians") == 2, out


def test_panda_pose_example_reaches_the_pose_at_rest_within_its_joint_limits(tmp_path):
    pytest.importorskip("example_robot_data")
    out = run_example("panda_pose.py", tmp_path)
    rows = {line.split(":")[0]: line for line in out.splitlines() if ": " in line and "cost" in line}

    def number(row, before):
        return float(rows[row].split(before)[1].split()[0].rstrip(","))
    assert number("ddp without limits", "smallest limit margin ") < -0.01, out  # the free optimum breaks them
    for solver in ("ddp", "ipopt"):
        assert "converged" in rows[solver], out
        assert number(solver, "position error ") < 2.0 and number(solver, "angle error ") < 0.1, out
        assert number(solver, "final speed ") < 0.01 and number(solver, "smallest limit margin ") > -1e-5, out
    assert abs(number("ddp", "cost ") - number("ipopt", "cost ")) < 1e-4 * number("ddp", "cost "), out
    assert all((tmp_path / f"panda_pose.{ext}").stat().st_size > 10_000 for ext in ("npz", "html", "png"))


def test_ur5_tracking_example_follows_its_reference_trajectory(tmp_path):
    out = run_example("ur5_tracking.py", tmp_path)
    rows = [line for line in out.splitlines() if line.startswith(("ddp:", "ipopt:"))]
    rms = [float(line.split("rms ")[1].split(" mm")[0]) for line in rows]
    costs = [float(line.split("cost ")[1].split(",")[0]) for line in rows]
    assert len(rows) == 2 and all("converged" in line for line in rows), out
    assert max(rms) < 2.0 and abs(costs[0] - costs[1]) < 1e-4 * costs[0], out


def test_hyq_trot_example_trots_from_the_srdf_posture(tmp_path):
    pytest.importorskip("example_robot_data")
    out = run_example("hyq_trot.py", tmp_path)
    assert "quadruped:hyq ipopt: converged" in out, out
    moved = [[float(x) for x in line.split("[")[1].split("]")[0].split()] for line in out.splitlines()
             if " moved [" in line]
    assert len(moved) == 4, out
    np.testing.assert_allclose(moved, [[0.3, 0.0, 0.0]] * 4, atol=5e-3)  # two steps of 0.15 m, on the ground
