"""Seeing legged motion: the viewer's stance markers, contact-force arrows, friction cones and
centre-of-mass path, the plot's contact panels, and a saved quadruped result reopened.

No solve: the rollout of a small legged problem's default guess (the controls that hold the
start on each interval's feet) is the trajectory drawn; its forces come from the entry points
the contact tests compile anyway (``Problem.rollout``, ``report.contact_forces``).
"""
from __future__ import annotations

import base64
import re

import numpy as np
import pytest
import umsgpack
from meshcat import transformations as tf
from legged_robot import Q_STAND as Q0
from legged_robot import legged
from test_viz import last_transform, lowered

import dynamics as dyn
import optdyn
from optdyn import viz
from optdyn.apps import report
from optdyn.ocp.problem import Problem
from optdyn.ocp.residuals import CoMPositionResidual
from optdyn.solvers.result import Result
from optdyn.viz.plots import trajectory_figure

MODEL = legged()
NQ, NV = MODEL.nq, MODEL.nv
FEET = [dyn.Contact(f"foot{i}") for i in range(4)]
# three feet, the fourth lands at k = 2 (an impulse), then only the diagonal pair 0 and 2
SEQUENCE = [FEET[:3]] * 2 + [FEET] * 2 + [[FEET[0], FEET[2]]] * 2
DT = 0.05


def standing_x0() -> np.ndarray:
    """Q0 raised until its lowest foot is on the floor (z = 0), at rest."""
    q = Q0.copy()
    q[2] -= min(viz.frame_path(MODEL, q[None], c.frame)[0, 2] for c in FEET)
    return np.r_[q, np.zeros(NV)]


def contact_problem(sequence=SEQUENCE, contacts: bool = True) -> Problem:
    return Problem(MODEL, standing_x0(), N=len(sequence), dt=DT, contacts=sequence if contacts else None,
                   name="legged")


def rollout(prob: Problem) -> Result:
    us = prob.us_init
    xs = prob.rollout(us)
    return Result(xs=xs, us=us, cost=0.0, converged=True, iterations=0, status="converged", solver="guess")


@pytest.fixture(scope="module")
def scene_data():
    prob = contact_problem()
    res = rollout(prob)
    forces = report.world_contact_forces(prob, res.xs, res.us)
    return prob, res, forces


def clips(scene) -> dict:
    animation = [c for c in lowered(scene) if c["type"] == "set_animation"][0]
    return {a["path"]: {t["name"]: t["keys"] for t in a["clip"]["tracks"]} for a in animation["animations"]}


def interval(time: float, N: int) -> int:
    return min(int(np.floor(time / DT + 1e-9)), N - 1)


def test_contact_objects_follow_the_contact_sequence(scene_data):
    prob, res, forces = scene_data
    assert np.isfinite(res.xs).all() and sorted(forces) == ["foot0", "foot1", "foot2", "foot3"]
    scene = viz.scene_of(res, prob, fps=40)
    kinds = list(scene.objects.values())
    assert kinds.count("stance") == 4 and kinds.count("cone") == 4 and kinds.count("force") == 8
    assert kinds.count("com_path") == 1 and kinds.count("com") == 1
    tracks = clips(scene)
    times, qs = viz.resample(res.xs, DT, NQ, fps=40)
    for c in FEET:
        node = tracks[f"/meshcat/contacts/{c.frame}"]
        visible = [key["value"] for key in node[".visible"]]
        expected = [c in prob.contacts_at(interval(t, prob.N)) for t in times]
        assert visible == expected
        assert [key["time"] for key in node[".visible"]] == pytest.approx(40 * times)
        # the node follows the foot
        np.testing.assert_allclose([key["value"] for key in node[".position"]],
                                   viz.frame_path(MODEL, qs, c.frame), atol=1e-9)
    # foot3 lands at k = 2 and lifts at k = 4; foot1 lifts at k = 4; foot0 and foot2 stand throughout
    assert prob.impulses.tolist() == [False, False, True, False, False, False]
    # the scene starts at the first node: foot3 hidden, the others shown
    start = {c["path"]: c["value"] for c in lowered(scene)
             if c["type"] == "set_property" and c["property"] == "visible" and "/contacts/" in c["path"]}
    assert start == {"/meshcat/contacts/foot0": True, "/meshcat/contacts/foot1": True,
                     "/meshcat/contacts/foot2": True, "/meshcat/contacts/foot3": False}
    # the centre of mass's path: c(q) at the animation frames, and the ball on it
    com = CoMPositionResidual(MODEL).point(qs)
    path = [c for c in lowered(scene) if c["path"] == "/meshcat/com_path"][0]["object"]["geometries"][0]
    drawn = np.frombuffer(path["data"]["attributes"]["position"]["array"].data, dtype=np.float32).reshape(-1, 3)
    np.testing.assert_allclose(drawn, com, atol=1e-6)
    np.testing.assert_allclose([key["value"] for key in tracks["/meshcat/com"][".position"]], com, atol=1e-9)


def test_arrow_lengths_are_the_forces_at_the_scale(scene_data):
    prob, res, forces = scene_data
    scene = viz.scene_of(res, prob, fps=40, force_scale=80.0)
    # a unit arrow (shaft + head) from the node's origin along its y axis
    objects = {c["path"]: c for c in lowered(scene) if c["type"] == "set_object"}
    shaft = objects["/meshcat/contacts/foot0/force/shaft"]["object"]["geometries"][0]["height"]
    head = objects["/meshcat/contacts/foot0/force/head"]["object"]["geometries"][0]["height"]
    assert shaft + head == pytest.approx(1.0)
    assert last_transform(scene, "contacts/foot0/force/head")[1, 3] == pytest.approx(1.0 - head / 2)
    tracks = clips(scene)
    times, _ = viz.resample(res.xs, DT, NQ, fps=40)
    for frame, f in forces.items():
        node = tracks[f"/meshcat/contacts/{frame}/force"]
        for i, t in enumerate(times):
            k = interval(t, prob.N)
            sx, length, sz = node[".scale"][i]["value"]
            if np.isfinite(f[k]).all():
                assert (sx, sz) == (1.0, 1.0) and length == pytest.approx(np.linalg.norm(f[k]) / 80.0, rel=1e-12)
                x, y, z, w = node[".quaternion"][i]["value"]
                np.testing.assert_allclose(tf.quaternion_matrix([w, x, y, z])[:3, 1], f[k] / np.linalg.norm(f[k]),
                                           atol=1e-9)
    # standing still: the feet carry the weight, pushing up
    weight = viz.weight(MODEL)
    assert abs(sum(f[0, 2] for f in forces.values() if np.isfinite(f[0]).all()) - weight) < 0.05 * weight
    # the default scale: the weight drawn from the lowest foot up to the centre of mass
    com = CoMPositionResidual(MODEL).point(prob.x0[None])[0]
    assert viz.contact_force_scale(prob) == pytest.approx(weight / com[2])  # the lowest foot is at z = 0
    scene = viz.scene_of(res, prob, fps=40)
    cone = [c for c in lowered(scene) if c["path"] == "/meshcat/contacts/foot0/cone"][0]["object"]["geometries"][0]
    assert cone["height"] == pytest.approx(com[2] / 2)


def test_friction_cones_have_half_angle_atan_mu(scene_data):
    prob, res, _ = scene_data
    scene = viz.scene_of(res, prob, fps=10, mu=0.5)
    cone = [c for c in lowered(scene) if c["path"] == "/meshcat/contacts/foot2/cone"][0]["object"]
    g = cone["geometries"][0]
    assert g["radiusTop"] / g["height"] == pytest.approx(0.5) and g["radiusBottom"] == 0.0
    assert 0 < cone["materials"][0]["opacity"] < 0.5
    T = last_transform(scene, "contacts/foot2/cone")  # apex on the foot, opening up (+z)
    np.testing.assert_allclose(T[:3, 1], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], [0, 0, g["height"] / 2], atol=1e-12)
    for bad in (0.0, -0.3, np.nan):
        with pytest.raises(ValueError, match="^mu: "):
            viz.scene_of(res, prob, mu=bad)
    with pytest.raises(ValueError, match="^force_scale: "):
        viz.scene_of(res, prob, force_scale=0.0)


def test_a_problem_without_contacts_draws_none(scene_data):
    prob, res, _ = scene_data
    free = contact_problem(contacts=False)
    scene = viz.scene_of(res, free, fps=10)
    assert not any(k in ("stance", "cone", "force", "com", "com_path") for k in scene.objects.values())
    assert not any("/contacts/" in c["path"] or c["path"].startswith("/meshcat/com") for c in lowered(scene))
    assert len(trajectory_figure(res, free).axes) == 6
    with pytest.raises(ValueError, match="^mu: "):  # a bad μ is refused even where no cone is drawn
        viz.scene_of(res, free, mu=-1.0)


def test_a_closed_loop_draws_the_contacts_of_its_steps(scene_data):
    """A closed loop on a problem with contacts draws them as a result does: its steps' forces
    are the knots' forces where the loop's states are the result's, the task's last contacts
    past its end, NaN from a non-finite state on; the scene shows them over the loop's steps."""
    prob, res, forces = scene_data
    N, n = prob.N, prob.N + 2
    xs = np.vstack([res.xs, np.repeat(res.xs[-1:], 2, axis=0)])
    us = np.vstack([res.us, np.repeat(res.us[-1:], 2, axis=0)])
    steps = report.loop_contact_forces(prob, xs, us)
    last = report.world_contact_forces(prob.window(N - 1, 1), xs[N:N + 2], us[N:N + 1])  # interval N − 1 alone
    assert sorted(last) == ["foot0", "foot2"]
    for frame, f in forces.items():
        assert steps[frame].shape == (n, 3)
        np.testing.assert_array_equal(steps[frame][:N], f)
        held = last.get(frame, np.full((1, 3), np.nan))  # NaN: not in contact in interval N − 1
        np.testing.assert_allclose(steps[frame][N:], np.repeat(held, 2, axis=0), rtol=1e-12)
    broken = xs.copy()
    broken[3] = np.nan
    for f in report.loop_contact_forces(prob, broken, us).values():
        assert np.isnan(f[3:]).all()
    loop = optdyn.ClosedLoop(t=DT * np.arange(n + 1), xs=xs, us=us, gains=np.zeros((n, prob.nu, prob.ndx)),
                             solve_time=np.zeros(n), cost=np.zeros(n), margins=np.zeros((n, 0)),
                             iterations=np.ones(n, dtype=int), status=["converged"] * n, dt=DT)
    kinds = list(viz.scene_of(loop, prob, fps=40).objects.values())
    assert kinds.count("stance") == 4 and kinds.count("force") == 8
    with pytest.raises(ValueError, match=r"^xs, us: expected shapes"):
        report.loop_contact_forces(prob, xs[:-1], us)


def test_world_forces_and_friction_margins(scene_data):
    prob, res, forces = scene_data
    local = Problem(MODEL, prob.x0, N=prob.N, dt=DT, name="legged",
                    contacts=[[dyn.Contact(c.frame, reference="local") for c in cs] for cs in SEQUENCE])
    in_local_axes = report.contact_forces(local, res.xs, res.us)
    again = report.world_contact_forces(local, res.xs, res.us)
    for frame, f in forces.items():
        stance = np.isfinite(f).all(axis=1)
        np.testing.assert_array_equal(np.isfinite(again[frame]).all(axis=1), stance)
        np.testing.assert_allclose(again[frame][stance], f[stance], atol=1e-9 * np.abs(f[stance]).max())
        # tilted feet: the local axes are not the world's
        assert np.abs(in_local_axes[frame][stance] - f[stance]).max() > 1e-3 * np.abs(f[stance]).max()
    margins = report.friction_margins({"a": np.array([[3.0, 4.0, 10.0], [np.nan] * 3, [0.0, 0.0, -1.0]])}, 0.7)
    np.testing.assert_allclose(margins["a"], [2.0, np.nan, -0.7])
    tilted = report.friction_margins({"a": np.array([[0.0, 0.0, 2.0]])}, 1.0, normal=(1.0, 0.0, 0.0))
    np.testing.assert_allclose(tilted["a"], [-2.0])
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="^mu: "):
            report.friction_margins(forces, bad)
    with pytest.raises(ValueError, match="^normal: "):
        report.friction_margins(forces, 0.7, normal=(0.0, 0.0, 0.0))


def test_plot_has_a_force_panel_per_foot_with_shaded_stance_and_the_cone_margins(scene_data):
    import matplotlib.pyplot as plt

    prob, res, forces = scene_data
    fig = trajectory_figure(res, prob, mu=0.6)
    try:
        assert len(fig.axes) == 6 + 4 + 1
        panels = {ax.get_title(): ax for ax in fig.axes[6:]}
        assert sorted(panels)[:4] == ["contact foot0", "contact foot1", "contact foot2", "contact foot3"]
        t = DT * np.arange(prob.N + 1)
        stance = {"foot0": [(0.0, 0.3)], "foot1": [(0.0, 0.2)], "foot2": [(0.0, 0.3)], "foot3": [(0.1, 0.2)]}
        for frame, f in forces.items():
            ax = panels[f"contact {frame}"]
            spans = sorted((round(p.get_x(), 12), round(p.get_x() + p.get_width(), 12)) for p in ax.patches)
            assert spans == stance[frame]
            lines = {line.get_label(): line for line in ax.get_lines()}
            normal, tangential = lines["normal f_n"], lines["tangential ‖f_t‖"]
            np.testing.assert_allclose(normal.get_xdata(), t)
            np.testing.assert_allclose(normal.get_ydata()[:-1], f[:, 2])
            np.testing.assert_allclose(tangential.get_ydata()[:-1], np.linalg.norm(f[:, :2], axis=1))
        margin_ax = fig.axes[-1]
        assert "μ = 0.6" in margin_ax.get_title()
        margins = report.friction_margins(forces, 0.6)
        lines = {line.get_label(): line.get_ydata()[:-1] for line in margin_ax.get_lines()}
        for frame, m in margins.items():
            np.testing.assert_allclose(lines[frame], m)
            assert np.isnan(m).sum() == {"foot0": 0, "foot1": 2, "foot2": 0, "foot3": 4}[frame]
            np.testing.assert_allclose(m, 0.6 * forces[frame][:, 2] - np.hypot(*forces[frame][:, :2].T))
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="^mu: "):
        trajectory_figure(res, prob, mu=0.0)


def test_a_saved_quadruped_result_reopens_with_its_contacts(tmp_path, capsys):
    """`optdyn show --html` and `optdyn plot` of a saved quadruped result (its standing guess,
    no solve) rebuild the problem from its name and params and draw the contacts."""
    pytest.importorskip("example_robot_data")
    import problems
    from optdyn.apps.cli import main

    prob = problems.get("quadruped", scenario="jump")
    res = Result(xs=prob.xs_init, us=prob.us_init, cost=prob.cost(prob.xs_init, prob.us_init), converged=False,
                 iterations=0, status="max_iter", solver="ilqr", problem="quadruped", params=dict(prob.params))
    optdyn.save_result(res, tmp_path / "jump.npz")
    assert main(["show", str(tmp_path / "jump.npz"), "--html", str(tmp_path / "jump.html")]) == 0
    html = (tmp_path / "jump.html").read_text()
    blobs = re.findall(r'^"([A-Za-z0-9+/=]+)",?$', html, flags=re.M)
    commands = [umsgpack.unpackb(base64.b64decode(b)) for b in blobs]
    drawn = {c["path"] for c in commands if c["type"] == "set_object"}
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    assert {f"/meshcat/contacts/{f}/{part}" for f in feet for part in ("stance", "cone")} <= drawn
    assert "/meshcat/com_path" in drawn
    # the flight phase hides every foot's contact node at some frame, the stance shows it at others
    animation = [c for c in commands if c["type"] == "set_animation"][0]
    shown = {a["path"]: {k["value"] for t in a["clip"]["tracks"] if t["name"] == ".visible" for k in t["keys"]}
             for a in animation["animations"] if a["path"].startswith("/meshcat/contacts/")}
    assert all(shown[f"/meshcat/contacts/{f}"] == {True, False} for f in feet)
    assert main(["plot", str(tmp_path / "jump.npz"), "--out", str(tmp_path / "jump.png"), "--mu", "0.5"]) == 0
    assert (tmp_path / "jump.png").stat().st_size > 10_000
    import matplotlib.pyplot as plt

    fig = trajectory_figure(optdyn.load_result(tmp_path / "jump.npz"), prob)
    try:
        assert [ax.get_title() for ax in fig.axes[6:10]] == [f"contact {f}" for f in feet]
    finally:
        plt.close(fig)
    # the margins are to the problem's own cone unless told otherwise
    fig = trajectory_figure(res, problems.get("quadruped", scenario="jump", mu=0.5))
    try:
        assert "μ = 0.5;" in fig.axes[10].get_title()
    finally:
        plt.close(fig)
    capsys.readouterr()
    assert main(["plot", str(tmp_path / "jump.npz"), "--out", str(tmp_path / "bad.png"), "--mu", "-1"]) == 1
    assert "mu: expected a finite friction coefficient > 0" in capsys.readouterr().err
