"""The saved HTML really draws in a browser: headless Chromium screenshot, pixels checked.

Needs /usr/bin/chromium (Debian package ``chromium``; the CI script installs it). WebGL
runs on SwiftShader, so no GPU or display is needed.
"""
import os
import subprocess

import numpy as np
import pytest
from matplotlib import image

from dynamics.models import ur5
from optdyn import viz
from optdyn.constraints import SphereClearance
from optdyn.problem import Problem
from optdyn.result import Result

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} not installed (apt-get install chromium)")


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
