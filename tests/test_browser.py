"""The saved HTML really draws in a browser: headless Chromium screenshot, pixels checked.

Needs /usr/bin/chromium (Debian package ``chromium``; the CI script installs it). WebGL
runs on SwiftShader, so no GPU or display is needed.
"""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from matplotlib import image

import dynamics as dyn
from dynamics.models import ur5
from optdyn import viz
from optdyn.apps.cli import main
from optdyn.costs import ControlCost, FramePositionCost
from optdyn.ocp.constraints import SphereClearance
from optdyn.ocp.problem import Problem
from optdyn.solvers.result import Result

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.cost(44), pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                                       reason=f"{CHROMIUM} not installed (apt-get install chromium)")]


def screenshot(html_path, tmp_path, name: str) -> np.ndarray:
    """RGB pixels (600, 800, 3) in [0, 1] of the page after 8 s of virtual time."""
    png = tmp_path / f"{name}.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
           "--use-angle=swiftshader", "--virtual-time-budget=8000", f"--screenshot={png}", "--window-size=800,600",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={tmp_path / ('profile-' + name)}", html_path.as_uri()]
    run = subprocess.run(cmd, capture_output=True, timeout=180)
    assert png.exists(), f"chromium wrote no screenshot (exit {run.returncode}): {run.stderr.decode()[-2000:]}"
    return image.imread(png)[..., :3]


def reddish(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 0.6) & (r - g > 0.25) & (r - b > 0.25)


def ur_blue(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the UR5's blue links (rgba 0.12 0.45 0.78), lit or shaded."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (b > 0.35) & (b - r > 0.3) & (g - r > 0.1)


def saved_page(tmp_path, obstacles) -> "os.PathLike":
    model = ur5()
    q = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    spheres = [SphereClearance(model, [("wrist_3_link", (0.0, 0.0, 0.0))], c, r) for c, r in obstacles]
    problem = Problem(model, np.zeros(12), 4, 0.25, path_constraints=spheres, name="browser")
    xs = np.tile(np.concatenate([q, np.zeros(6)]), (5, 1))  # at rest: the pose is known
    result = Result(xs=xs, us=np.zeros((4, 6)), cost=0.0, converged=True, iterations=0, status="converged")
    path = tmp_path / f"scene-{len(obstacles)}.html"
    viz.save_html(result, path, problem)
    return path


def test_saved_html_draws_the_arm_and_the_obstacle(tmp_path):
    with_obstacle = screenshot(saved_page(tmp_path, [((0.45, 0.25, 0.35), 0.15)]), tmp_path, "obstacle")
    without = screenshot(saved_page(tmp_path, []), tmp_path, "none")
    red, red_none = reddish(with_obstacle).sum(), reddish(without).sum()
    blue, blue_none = ur_blue(with_obstacle).sum(), ur_blue(without).sum()
    print(f"red pixels {red} (without obstacle {red_none}); UR blue pixels {blue} / {blue_none}")
    assert red > 3000, "the obstacle is not drawn"
    assert red_none < 300, "reddish pixels without an obstacle (only the x axis line may be red)"
    assert blue > 1000 and blue_none > 1000, "the arm's blue links are not drawn"
    # the arm and the obstacle are on screen, not off to one side
    rows, cols = np.nonzero(reddish(with_obstacle))
    assert 0 < cols.mean() < 800 and 0 < rows.mean() < 600


# ------------------------------------------------- a mesh robot and a problem written from scratch

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def panda_example():
    """examples/panda_reach.py as a module (its ``panda()`` loader and ``make()`` task)."""
    pytest.importorskip("example_robot_data")
    spec = importlib.util.spec_from_file_location("panda_reach", os.path.join(EXAMPLES, "panda_reach.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def at_rest(problem) -> Result:
    """The problem's start held still: the pose on screen is known."""
    xs = np.tile(problem.x0, (problem.N + 1, 1))
    return Result(xs=xs, us=np.zeros((problem.N, problem.nu)), cost=1.0, converged=True, iterations=3,
                  status="converged", solver="ddp")


def magenta(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the target markers (rgba 0.85 0.1 0.85), lit or shaded."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 0.4) & (b > 0.4) & (r - g > 0.3) & (b - g > 0.3)


def orange(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the capsules drawn in place of missing meshes (rgba 0.95 0.55 0.15)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 0.5) & (r - b > 0.35) & (g - b > 0.15) & (r - g > 0.15)


def page(tmp_path, name: str, problem, hide_robot: bool = False):
    """Offline page of the problem at rest (optionally without the robot)."""
    scene = viz.scene_of(at_rest(problem), problem)
    if hide_robot:
        scene.vis["robot"].set_property("visible", False)
    path = tmp_path / f"{name}.html"
    path.write_text(scene.html(name, scene.caption), encoding="utf-8")
    return path


def test_panda_meshes_obstacle_and_target_are_drawn(tmp_path):
    example = panda_example()
    problem = example.make(example.panda())
    shot = screenshot(page(tmp_path, "panda", problem), tmp_path, "panda")
    empty = screenshot(page(tmp_path, "panda-hidden", problem, hide_robot=True), tmp_path, "panda-hidden")
    robot = np.abs(shot - empty).max(axis=2) > 0.08  # what the robot's meshes cover
    print(f"robot pixels {robot.sum()}, orange {orange(shot).sum()}, red {reddish(shot).sum()}, "
          f"magenta {magenta(shot).sum()}")
    assert robot.sum() > 8000, "the Panda's meshes are not drawn"
    assert orange(shot).sum() < 50, "capsules drawn instead of the Panda's meshes"
    assert reddish(shot).sum() > 300 and reddish(empty).sum() > 300, "the obstacle is not drawn"
    assert magenta(shot).sum() > 30 and magenta(empty).sum() > 30, "the target is not drawn"


def test_panda_without_package_dirs_warns_and_draws_capsules(tmp_path):
    example = panda_example()
    robots = example.example_robot_data.getModelPath("panda_description/urdf/panda.urdf")
    with pytest.warns(UserWarning, match="package://example-robot-data/robots/panda_description/meshes"):
        model = dyn.load_urdf(os.path.join(robots, "panda_description/urdf/panda.urdf"))
    shot = screenshot(page(tmp_path, "capsules", example.make(model)), tmp_path, "capsules")
    assert orange(shot).sum() > 1000, "no capsules in place of the missing meshes"


def test_custom_problem_draws_arm_obstacle_and_target(tmp_path):
    model = ur5()
    q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
    target = FramePositionCost(model, "tool0", (0.3, -0.35, 0.45), 1e3)
    clearance = SphereClearance(model, [("wrist_3_link", (0.0, 0.0, 0.0))], (0.45, 0.25, 0.35), 0.12, margin=0.03)
    with_target = Problem(model, np.r_[q0, np.zeros(6)], 5, 0.1, ControlCost(1e-3, nu=6), target,
                          path_constraints=[clearance], name="custom")
    without = Problem(model, np.r_[q0, np.zeros(6)], 5, 0.1, ControlCost(1e-3, nu=6),
                      path_constraints=[clearance], name="custom")
    shot = screenshot(page(tmp_path, "custom", with_target), tmp_path, "custom")
    plain = screenshot(page(tmp_path, "custom-plain", without), tmp_path, "custom-plain")
    print(f"blue {ur_blue(shot).sum()}, red {reddish(shot).sum()}, magenta {magenta(shot).sum()} / "
          f"{magenta(plain).sum()}")
    assert ur_blue(shot).sum() > 1000, "the arm is not drawn"
    assert reddish(shot).sum() > 2000, "the obstacle is not drawn"
    assert magenta(shot).sum() > 30 and magenta(plain).sum() < 5, "the target is not drawn (or drawn when absent)"


def test_panda_end_to_end_script_and_cli(tmp_path, capsys):
    pytest.importorskip("example_robot_data")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(EXAMPLES, os.pardir)))
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "panda_reach.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "status='converged'" in run.stdout
    npz = tmp_path / "panda_reach.npz"
    assert main(["show", str(npz), "--html", str(tmp_path / "again.html")]) == 0
    out = capsys.readouterr().out
    distance = float(re.search(r"target\s+panda_hand_tcp: (\S+) m", out).group(1))
    clearance = float(re.search(r"clearance\s+min ([-+0-9.]+) m", out).group(1))
    assert distance < 1e-3 and clearance > 0.0
    assert main(["plot", str(npz), "--out", str(tmp_path / "again.png")]) == 0
    html = (tmp_path / "again.html").read_text()
    assert "panda-past-sphere · ddp" in html and html.count('"format": "dae"') == 0  # meshes are msgpack, not JSON
    shot = screenshot(tmp_path / "again.html", tmp_path, "again")
    assert reddish(shot).sum() > 300 and orange(shot).sum() < 50


# ------------------------------------------------------------------------------ closed loop

def cyan(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the push arrows (rgba 0 0.75 0.85), lit or shaded (not the UR5's blue)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r < 0.3) & (g > 0.4) & (np.abs(g - b) < 0.15)


def test_closed_loop_page_draws_the_push_only_while_it_acts(tmp_path):
    """The UR5 held at rest for 0.5 s under a push acting throughout, and under one that
    starts after the loop: the arrow is drawn in the first page only."""
    from optdyn import Push
    from optdyn.apps.simulate import ClosedLoop
    from problems import ur5_reach

    problem = ur5_reach.make(N=10)
    n = 10

    def rest(start: float) -> ClosedLoop:
        return ClosedLoop(t=0.05 * np.arange(n + 1), xs=np.tile(problem.x0, (n + 1, 1)), us=np.zeros((n, 6)),
                          gains=np.zeros((n, 6, 12)), solve_time=np.full(n, 0.01), cost=np.zeros(n),
                          margins=np.zeros((n, 0)), iterations=np.ones(n, dtype=np.int64), status=["max_iter"] * n, dt=0.05,
                          disturbances=(Push("tool0", (0.0, 30.0, 0.0), start, 100.0),), solver="ilqr",
                          iteration_limit=1, problem="ur5-reach", source=problem)

    shots = {}
    for start in (0.0, 10.0):
        path = tmp_path / f"push-{start:g}.html"
        viz.save_html(rest(start), path)
        shots[start] = cyan(screenshot(path, tmp_path, f"push-{start:g}")).sum()
    print(f"cyan pixels: push acting {shots[0.0]}, not yet {shots[10.0]}")
    assert shots[0.0] > 300, "the push arrow is not drawn while the push acts"
    assert shots[10.0] < 30, "the push arrow is drawn before the push starts"


# ------------------------------------------------------------------------------ contacts

def stance_blue(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the stance discs (rgba 0.15 0.3 0.9), lit or shaded (not the faint cones)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (b > 0.45) & (b - r > 0.35) & (b - g > 0.25)


def force_green(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the contact-force arrows (rgba 0.1 0.8 0.3), lit or shaded."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (g > 0.4) & (g - r > 0.25) & (g - b > 0.2)


def test_contacts_page_draws_stance_discs_and_force_arrows(tmp_path):
    """A legged robot standing on its feet (the rollout of its default guess): blue stance
    discs and green force arrows on the page; none for the same trajectory without contacts."""
    from test_viz_contacts import contact_problem, rollout

    prob = contact_problem([[dyn.Contact(f"foot{i}") for i in range(4)]] * 3)
    res = rollout(prob)
    counts = {}
    for name, problem in (("contacts", prob), ("free", contact_problem([[]] * 3, contacts=False))):
        scene = viz.scene_of(res, problem, capsule_radius=0.012)
        scene.vis["/Axes"].set_property("visible", False)  # its z axis is a blue line
        path = tmp_path / f"{name}.html"
        path.write_text(scene.html(name, scene.caption), encoding="utf-8")
        shot = screenshot(path, tmp_path, name)[:540]  # not the player's blue slider at the bottom
        counts[name] = (stance_blue(shot).sum(), force_green(shot).sum())
    print(f"(stance blue, force green) pixels: with contacts {counts['contacts']}, without {counts['free']}")
    assert counts["contacts"][0] > 100, "the stance discs are not drawn"
    assert counts["contacts"][1] > 100, "the contact-force arrows are not drawn"
    assert max(counts["free"]) < 20, "stance or force colours drawn without contacts"
