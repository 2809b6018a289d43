"""meshcat scenes: objects drawn, poses against frame_placement, animation timing, HTML, server."""
import base64
import os
import re
import subprocess
import sys
import urllib.request

import numpy as np
import pytest
import umsgpack
from meshcat import transformations as tf

import dynamics as dyn
from dynamics.model import Geometry, rpy_matrix, transform
from dynamics.models import ur5
from optdyn import viz
from optdyn.ocp.constraints import FramePositionEquality, SphereClearance
from optdyn.costs import ControlCost, FramePositionCost
from optdyn.ocp.problem import Problem
from optdyn.solvers.result import Result


def lowered(scene):
    return [c.lower() for c in scene.commands]


def last_transform(scene, path: str, default=None) -> np.ndarray:
    """4×4 of the last set_transform sent to meshcat path ``path`` (relative to its parent)."""
    full = f"/meshcat/{path}"
    matrices = [c["matrix"] for c in lowered(scene) if c["type"] == "set_transform" and c["path"] == full]
    if not matrices and default is not None:
        return default
    assert matrices, f"no transform for {path}"
    return np.array(matrices[-1]).reshape(4, 4).T  # meshcat sends column-major


def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0]


def world_of(scene, path: str) -> np.ndarray:
    return last_transform(scene, parent_path(path), np.eye(4)) @ last_transform(scene, path)


def mixed_model() -> dyn.Model:
    """Three links: shapes of every kind, a missing mesh, a link without visuals, tool frame."""
    b = dyn.ModelBuilder("mixed")
    b.add_link("base", visuals=[Geometry("box", "base", transform(p=(0, 0, -0.05)), (0.3, 0.3, 0.1))])
    b.add_link("l1", 1.0, np.eye(3) * 1e-2, visuals=[
        Geometry("cylinder", "l1", transform(rpy_matrix(0.3, -0.2, 0.5), (0.1, 0.0, 0.2)), (0.05, 0.4),
                 rgba=(0.1, 0.2, 0.9, 1.0)),
        Geometry("sphere", "l1", transform(p=(0.0, 0.0, 0.4)), (0.06,)),
        Geometry("mesh", "l1", np.eye(4), filename="/nonexistent/mesh.stl")])
    b.add_link("l2", 1.0, np.eye(3) * 1e-2)  # no visuals: drawn as capsules
    b.add_link("l3", 1.0, np.eye(3) * 1e-2, visuals=[Geometry("mesh", "l3", np.eye(4), filename="/nope.obj")])
    b.add_link("tool")
    b.add_joint("j1", "revolute", "base", "l1", transform(p=(0, 0, 0.1)), (0, 0, 1))
    b.add_joint("j2", "revolute", "l1", "l2", transform(rpy_matrix(0.4, 0.1, 0), (0.0, 0.1, 0.4)), (0, 1, 0))
    b.add_joint("j3", "prismatic", "l2", "l3", transform(p=(0.3, 0.0, 0.0)), (1, 0, 0))
    b.add_joint("tool_joint", "fixed", "l3", "tool", transform(p=(0.0, 0.0, 0.15)))
    return b.build()


def test_scene_objects_of_a_model():
    model = mixed_model()
    scene = viz.Scene(model)
    kinds = sorted(scene.objects.values())
    # box, cylinder, sphere drawn; a missing mesh is drawn as capsules: l1 (a missing mesh
    # besides its shapes), l2 (no visuals) and l3 (only a missing mesh) get a joint sphere
    # plus one capsule (cylinder + end sphere) per child joint or offset frame:
    # l1 → j2, l2 → j3, l3 → tool.
    assert kinds == sorted(["box", "cylinder", "sphere"] + ["capsule"] * 9)
    assert set(scene.body_paths.values()) == {"robot/base", "robot/l1", "robot/l2", "robot/l3"}
    assert all(p.startswith(("robot/l1/", "robot/l2/", "robot/l3/"))
               for p, k in scene.objects.items() if k == "capsule")


def test_visuals_follow_frame_placement():
    model = mixed_model()
    scene = viz.Scene(model)
    q = np.array([0.7, -0.4, 0.12])
    scene.pose(q)
    for k, g in enumerate(model.visuals):
        path = next((p for p in scene.objects if p.endswith(f"/visual_{k}")), None)
        if g.kind == "mesh":
            assert path is None
            continue
        R, p = dyn.frame_placement(model, q, g.frame)
        expected = transform(R, p) @ g.placement
        W = world_of(scene, path)
        np.testing.assert_allclose(W[:3, 3], expected[:3, 3], atol=1e-12)
        if g.kind == "cylinder":  # meshcat's cylinder axis (y) is the URDF cylinder axis (z)
            np.testing.assert_allclose(W[:3, 1], expected[:3, 2], atol=1e-12)
        else:
            np.testing.assert_allclose(W[:3, :3], expected[:3, :3], atol=1e-12)


def test_capsules_span_joint_origins():
    model = mixed_model()
    scene = viz.Scene(model)
    q = np.array([-0.3, 0.9, 0.0])  # prismatic j3 at 0: l3 sits at its joint origin
    scene.pose(q)
    _, origin_l2 = dyn.frame_placement(model, q, "l2")
    _, origin_l3 = dyn.frame_placement(model, q, "l3")
    _, origin_tool = dyn.frame_placement(model, q, "tool")
    for body, end in (("l2", origin_l3), ("l3", origin_tool)):
        W = world_of(scene, f"robot/{body}/capsule_0")
        cyl = [c for c in lowered(scene)
               if c["type"] == "set_object" and c["path"] == f"/meshcat/robot/{body}/capsule_0"]
        length = cyl[0]["object"]["geometries"][0]["height"]
        start = origin_l2 if body == "l2" else origin_l3
        ends = {tuple(np.round(W[:3, 3] + s * 0.5 * length * W[:3, 1], 12)) for s in (-1, 1)}
        expected = {tuple(np.round(x, 12)) for x in (start, end)}
        assert ends == expected
        np.testing.assert_allclose(world_of(scene, f"robot/{body}/capsule_0_end")[:3, 3], end, atol=1e-12)


def test_ur5_visual_colours_and_cylinders():
    model = ur5()
    scene = viz.Scene(model)
    sets = [c for c in lowered(scene) if c["type"] == "set_object" and "/visual_" in c["path"]]
    assert len(sets) == len(model.visuals)
    colours = {m["color"] for c in sets for m in c["object"]["materials"]}
    expected = {viz._color(g.rgba)[0] for g in model.visuals}
    assert colours == expected and len(colours) >= 2


POINTS = [("wrist_3_link", (0.0, 0.0, 0.0)), ("forearm_link", (0.0, 0.0, 0.2))]


def fake_problem(model, N=10, dt=0.1, targets=False):
    """Two obstacles (clearance constraints, one with a margin) on two points; with
    ``targets`` a frame cost on tool0 and a terminal frame equality on wrist_2_link."""
    spheres = [SphereClearance(model, POINTS, (0.4, 0.1, 0.5), 0.12, margin=0.05),
               SphereClearance(model, POINTS, (0.0, -0.5, 0.3), 0.05)]
    running = ControlCost(1e-3, nu=6)
    terminal, equalities = None, []
    if targets:
        terminal = FramePositionCost(model, "tool0", (0.3, 0.2, 0.4), 10.0, offset=(0.0, 0.0, 0.05))
        equalities = [FramePositionEquality(model, "wrist_2_link", (0.1, 0.4, 0.5))]
    return Problem(model, np.zeros(12), N, dt, running, terminal, path_constraints=spheres,
                   terminal_constraints=equalities, name="fake")


def trajectory(model, N, dt, seed=0):
    """Cubic q(t) per joint on [0, N·dt] sampled at the nodes, with exact v = q̇."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(4, model.nq)) * np.array([[1.0], [0.5], [0.2], [0.05]])
    t = dt * np.arange(N + 1)[:, None]
    q = c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3
    v = c[1] + 2 * c[2] * t + 3 * c[3] * t**2
    return np.hstack([q, v]), lambda s: c[0] + c[1] * s + c[2] * s**2 + c[3] * s**3


def test_resample_is_real_time_and_exact_for_cubics():
    model = ur5()
    xs, q_of = trajectory(model, N=7, dt=0.13)
    times, qs = viz.resample(xs, 0.13, model.nq, fps=30)
    assert times[0] == 0 and times[-1] == pytest.approx(7 * 0.13)
    np.testing.assert_allclose(np.diff(times[:-1]), 1 / 30, atol=1e-12)
    assert 0 < times[-1] - times[-2] <= 1 / 30 + 1e-12
    np.testing.assert_allclose(qs, np.array([q_of(s) for s in times]), atol=1e-12)
    times, _ = viz.resample(np.zeros((21, 12)), 0.2, 6, fps=30)  # T·fps integer: no duplicate end key
    assert len(times) == 121 and times[-1] == 4.0 and np.diff(times).min() > 0.03
    # without velocities: linear interpolation through the nodes
    times, qs = viz.resample(xs[:, :model.nq], 0.13, model.nq, fps=10)
    np.testing.assert_allclose(np.interp(times, 0.13 * np.arange(8), xs[:, 2]), qs[:, 2], atol=1e-14)
    for bad in (np.full((3, 12), np.nan), np.zeros((3, 2))):
        with pytest.raises(ValueError, match="xs"):
            viz.resample(bad, 0.1, model.nq)
    with pytest.raises(ValueError, match="dt"):
        viz.resample(xs, -1.0, model.nq)


def test_scene_of_result_obstacles_points_path_animation():
    model = ur5()
    prob = fake_problem(model)
    xs, q_of = trajectory(model, prob.N, prob.dt, seed=1)
    res = Result(xs=xs, us=np.zeros((prob.N, 6)), cost=0.0, converged=True, iterations=0, status="converged")
    scene = viz.scene_of(res, prob, fps=20, frames=("tool0", "shoulder_link"))
    kinds = list(scene.objects.values())
    assert kinds.count("obstacle") == 2 and kinds.count("point") == 2 and kinds.count("triad") == 2
    assert kinds.count("path") == 1 and kinds.count("floor") == 1 and kinds.count("target") == 0
    # the margin of the first obstacle is a faint shell of radius + margin around it
    assert kinds.count("margin") == 1
    shell = [c for c in lowered(scene) if c["path"] == "/meshcat/obstacles/margin_0" and c["type"] == "set_object"][0]
    assert shell["object"]["geometries"][0]["radius"] == pytest.approx(0.17)
    assert shell["object"]["materials"][0]["opacity"] < 0.3
    # obstacles: semi-transparent red spheres of the right size and place
    obstacle = [c for c in lowered(scene)
                if c["path"] == "/meshcat/obstacles/obstacle_0" and c["type"] == "set_object"][0]
    material = obstacle["object"]["materials"][0]
    assert material["transparent"] and 0 < material["opacity"] < 1 and (material["color"] >> 16) > 200
    assert obstacle["object"]["geometries"][0]["radius"] == 0.12
    np.testing.assert_allclose(last_transform(scene, "obstacles/obstacle_0")[:3, 3], [0.4, 0.1, 0.5])
    # the path is the tool0 trajectory at the animation frames
    times, qs = viz.resample(xs, prob.dt, 6, fps=20)
    path = [c for c in lowered(scene) if c["path"] == "/meshcat/path"][0]["object"]["geometries"][0]
    positions = np.frombuffer(path["data"]["attributes"]["position"]["array"].data, dtype=np.float32).reshape(-1, 3)
    expected = np.array([dyn.frame_placement(model, q_of(t), "tool0")[1] for t in times])
    np.testing.assert_allclose(positions, expected, atol=1e-6)
    # animation: one clip per body, keys at t·fps, poses = frame placements of the links
    animation = [c for c in lowered(scene) if c["type"] == "set_animation"][0]
    clips = {a["path"]: a["clip"] for a in animation["animations"]}
    assert set(clips) == {f"/meshcat/robot/{b}" for b in model.body_names}
    for k in (0, len(times) // 2, len(times) - 1):
        q = q_of(times[k])
        for body in ("upper_arm_link", "wrist_3_link"):
            clip = clips[f"/meshcat/robot/{body}"]
            assert clip["fps"] == 20
            tracks = {t["name"]: t["keys"] for t in clip["tracks"]}
            assert tracks[".position"][k]["time"] == pytest.approx(times[k] * 20)
            R, p = dyn.frame_placement(model, q, body)
            np.testing.assert_allclose(tracks[".position"][k]["value"], p, atol=1e-10)
            x, y, z, w = tracks[".quaternion"][k]["value"]
            np.testing.assert_allclose(tf.quaternion_matrix([w, x, y, z])[:3, :3], R, atol=1e-10)
    # the scene starts at the first node; collision points sit at their frame offsets
    np.testing.assert_allclose(world_of(scene, "robot/forearm_link/point_1")[:3, 3],
                               dyn.frame_placement(model, xs[0, :6], "forearm_link")[0] @ [0, 0, 0.2]
                               + dyn.frame_placement(model, xs[0, :6], "forearm_link")[1], atol=1e-12)


def test_targets_and_the_path_of_the_frame_the_costs_name():
    model = ur5()
    prob = fake_problem(model, targets=True)
    xs, q_of = trajectory(model, prob.N, prob.dt, seed=2)
    res = Result(xs=xs, us=np.zeros((prob.N, 6)), cost=1.5, converged=True, iterations=7, status="converged",
                 solver="ddp")
    scene = viz.scene_of(res, prob, fps=10)
    targets = sorted(tuple(np.round(last_transform(scene, p)[:3, 3], 12)) for p, k in scene.objects.items()
                     if k == "target")
    assert targets == [(0.1, 0.4, 0.5), (0.3, 0.2, 0.4)]
    # the path follows the terminal constraint's frame (the first target), not the last frame
    times, _ = viz.resample(xs, prob.dt, 6, fps=10)
    path = [c for c in lowered(scene) if c["path"] == "/meshcat/path"][0]["object"]["geometries"][0]
    positions = np.frombuffer(path["data"]["attributes"]["position"]["array"].data, dtype=np.float32).reshape(-1, 3)
    expected = np.array([dyn.frame_placement(model, q_of(t), "wrist_2_link")[1] for t in times])
    np.testing.assert_allclose(positions, expected, atol=1e-6)
    # overridable, and a point with an offset: tool0 + R·(0, 0, 0.05) when asked for tool0
    scene = viz.scene_of(res, prob, fps=10, path_frame="tool0")
    path = [c for c in lowered(scene) if c["path"] == "/meshcat/path"][0]["object"]["geometries"][0]
    positions = np.frombuffer(path["data"]["attributes"]["position"]["array"].data, dtype=np.float32).reshape(-1, 3)
    expected = np.array([dyn.frame_placement(model, q_of(t), "tool0")[1] for t in times])
    np.testing.assert_allclose(positions, expected, atol=1e-6)
    assert scene.caption == "fake · ddp · cost 1.5 · converged (7 iterations)"
    html = scene.html("t", scene.caption)
    assert scene.caption in html and 'id="play"' in html and 'type="range"' in html


def test_the_animation_loops():
    model = ur5()
    prob = fake_problem(model, N=4)
    xs, _ = trajectory(model, prob.N, prob.dt)
    res = Result(xs=xs, us=np.zeros((4, 6)), cost=0.0, converged=True, iterations=0, status="converged")
    animation = [c for c in lowered(viz.scene_of(res, prob)) if c["type"] == "set_animation"][0]
    assert animation["options"]["repetitions"] >= 1e6 and animation["options"]["play"]


def test_a_missing_mesh_warns_once_and_is_a_capsule(tmp_path):
    urdf = """<robot name="r"><link name="base"/>
      <link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
      </inertial><visual><geometry><mesh filename="package://nowhere/l1.stl"/></geometry></visual>
      <visual><geometry><mesh filename="package://nowhere/l1.stl"/></geometry></visual></link>
      <link name="l2"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="fixed"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/></joint></robot>"""
    with pytest.warns(UserWarning) as caught:
        model = dyn.load_urdf(urdf)
    messages = [str(w.message) for w in caught if "mesh" in str(w.message)]
    assert len(messages) == 1 and "package://nowhere/l1.stl" in messages[0]
    scene = viz.Scene(model)
    assert "robot/l1/capsule_0" in scene.objects and not any("/visual_" in p for p in scene.objects)


def test_scene_errors():
    model = ur5()
    scene = viz.Scene(model)
    with pytest.raises(ValueError, match="obstacles"):
        scene.add_obstacles([((0, 0), 0.1)])
    with pytest.raises(ValueError, match="obstacles"):
        scene.add_obstacles([((0, 0, 0), -1.0)])
    with pytest.raises(ValueError, match="frame"):
        scene.add_triads(["no_such_frame"])
    with pytest.raises(ValueError, match="q"):
        scene.pose(np.zeros(5))
    prob = fake_problem(model, N=10)
    res = Result(xs=np.zeros((4, 12)), us=np.zeros((3, 6)), cost=0.0, converged=True, iterations=0, status="x")
    with pytest.raises(ValueError, match="nodes"):
        viz.scene_of(res, prob)
    with pytest.raises(ValueError, match="problem"):
        viz.scene_of(res)  # no problem given, none named


def test_scene_takes_the_problem_from_the_result():
    """A result from optdyn.solve carries its problem; one without it needs problem=..."""
    prob = pytest.importorskip("problems").get("arm-obstacle", scenario="straight")
    res = Result(xs=prob.xs_init, us=prob.us_init, cost=0.0, converged=False, iterations=0, status="x",
                 problem="arm-obstacle", params=dict(prob.params))
    with pytest.raises(ValueError, match="problem"):
        viz.scene_of(res)
    res.source = prob
    kinds = list(viz.scene_of(res).objects.values())
    assert kinds.count("obstacle") == len(prob.obstacles) == 1
    assert kinds.count("point") == len(prob.collision_points)


def test_save_html_is_self_contained(tmp_path):
    model = ur5()
    prob = fake_problem(model)
    xs, _ = trajectory(model, prob.N, prob.dt)
    res = Result(xs=xs, us=np.zeros((prob.N, 6)), cost=0.0, converged=True, iterations=0, status="converged")
    out = viz.save_html(res, tmp_path / "traj.html", prob)
    html = open(out, encoding="utf-8").read()
    assert "<script src" not in html and "<link" not in html and "MeshCat.Viewer" in html
    blobs = re.findall(r'^"([A-Za-z0-9+/=]+)",?$', html, flags=re.M)
    commands = [umsgpack.unpackb(base64.b64decode(b)) for b in blobs]
    assert len(commands) == len(viz.scene_of(res, prob).commands)
    assert sum(c["type"] == "set_animation" for c in commands) == 1
    drawn = {c["path"] for c in commands if c["type"] == "set_object"}
    assert {"/meshcat/obstacles/obstacle_0", "/meshcat/path"} <= drawn


def test_view_serves_on_loopback_only(capsys):
    model = ur5()
    prob = fake_problem(model, N=4)
    xs, _ = trajectory(model, prob.N, prob.dt)
    res = Result(xs=xs, us=np.zeros((prob.N, 6)), cost=0.0, converged=True, iterations=0, status="converged")
    vis = viz.view(res, prob)
    proc = vis.window.server_proc
    try:
        url = vis.url()
        assert url.startswith("http://127.0.0.1:")
        assert capsys.readouterr().out.strip() == f"meshcat viewer: {url}"
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "main.min.js" in page
        scene_html = vis.window.get_scene()  # the server holds the scene we sent
        objects = [c for c in viz.scene_of(res, prob).commands if c.lower()["type"] == "set_object"]
        assert scene_html.count("fetch(") >= len(objects)
        port = int(url.split(":")[2].split("/")[0])
        rows = [line.split() for line in open("/proc/net/tcp").read().splitlines()[1:]]
        listening = [r[1] for r in rows if r[3] == "0A"]  # state 0A = LISTEN
        ours = [a for a in listening if int(a.split(":")[1], 16) == port]
        assert ours and all(a.split(":")[0] == "0100007F" for a in ours)  # 127.0.0.1 only
    finally:
        viz._stop(proc)


def test_example_writes_html(tmp_path):
    out = tmp_path / "example.html"
    example = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "visualize.py")
    run = subprocess.run([sys.executable, example, str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"wrote {out}" in run.stdout and "MeshCat.Viewer" in out.read_text()


def test_existing_mesh_files_are_embedded(tmp_path):
    obj = tmp_path / "tri.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    stl = tmp_path / "tri.STL"
    stl.write_bytes(b"\0" * 80 + np.uint32(0).tobytes())  # binary STL without triangles
    b = dyn.ModelBuilder("meshes")
    b.add_link("base")
    b.add_link("l1", 1.0, np.eye(3) * 1e-2, visuals=[
        Geometry("mesh", "l1", transform(p=(0.0, 0.0, 0.1)), filename=str(obj), scale=(2.0, 3.0, 4.0)),
        Geometry("mesh", "l1", np.eye(4), filename=str(stl))])
    b.add_joint("j1", "revolute", "base", "l1", np.eye(4), (0, 0, 1))
    scene = viz.Scene(b.build())
    meshes = {c["path"]: c["object"]["geometries"][0] for c in lowered(scene)
              if c["type"] == "set_object" and "/visual_" in c["path"]}
    assert [g["format"] for g in meshes.values()] == ["obj", "stl"]
    assert meshes["/meshcat/robot/l1/visual_0"]["data"].startswith("v 0 0 0")
    assert not any(k == "capsule" for k in scene.objects.values())  # the link has visuals
    np.testing.assert_allclose(last_transform(scene, "robot/l1/visual_0"),
                               transform(p=(0.0, 0.0, 0.1)) @ np.diag([2.0, 3.0, 4.0, 1.0]))
