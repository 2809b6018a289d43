"""Watch a trajectory in the browser: meshcat scenes, live viewer and offline HTML.

A :class:`Scene` is built from any :class:`dynamics.Model` and records meshcat commands
(``set_object``, ``set_transform``, ``set_property``, ``set_animation``) instead of
sending them anywhere, so the same scene can be

* served live on 127.0.0.1 by a meshcat server (:func:`view`), or
* written as one self-contained HTML file (meshcat's bundled ``main.min.js`` plus the
  msgpack-encoded commands, base64 in the page) that replays offline (:func:`save_html`).

Scene tree (meshcat paths)::

    /meshcat/robot/<body>            one node per moving body (and the base), animated
    /meshcat/robot/<body>/visual_k   URDF visuals, or capsules when a body has none
    /meshcat/robot/<body>/point_k    collision points;  .../triad_<frame>  frame triads
    /meshcat/obstacles/obstacle_k    spheres, semi-transparent red (…/margin_k: faint shell)
    /meshcat/targets/target_k        targets of frame costs and constraints (magenta)
    /meshcat/targets/pose_k          pose targets (frame placement residuals) as x/y/z axes
    /meshcat/path                    path of the frame the costs name (line)
    /meshcat/pushes/push_k           a closed loop's pushes: arrows (cyan) whose tip is on the
                                     pushed frame, visible while the push acts
    /meshcat/contacts/<frame>        a problem with contacts: at each contact frame, visible while
                                     it is in contact, a stance disc (blue), the friction cone
                                     (faint blue, half-angle atan μ about +z) and the contact
                                     force (a green arrow from the foot, ‖f‖/force_scale m long)
    /meshcat/com_path, /meshcat/com  the centre of mass's path (purple line) and a ball on it
    /meshcat/floor                   floor grid at z = 0

What is drawn comes from the problem's costs and constraints (:mod:`optdyn.ocp.task`). A
closed loop (:class:`optdyn.ClosedLoop`) is drawn as a result is, its states played at the
control period, with its pushes as arrows. A problem with contacts
(``Problem(..., contacts=...)``) adds its contacts, knot k's shown over [k·dt, (k+1)·dt):
the forces are :func:`optdyn.apps.report.world_contact_forces` at the knots (a closed
loop's: :func:`optdyn.apps.report.loop_contact_forces` at its steps), drawn at
``force_scale`` N per metre of arrow, by default the robot's weight m‖g‖ over the height of
its centre of mass above its lowest contact frame at the start (:func:`contact_force_scale`:
the whole weight is an arrow from the ground up to the CoM; the cones are half that tall).
The offline page adds a caption (problem, solver, cost, status) and a visible play/pause
button and time slider; the animation loops.

A body node carries the world pose ⁰T_i of joint frame i (``forward_kinematics``); its
children are fixed in that frame, so a URDF visual on link frame f sits at
``f.placement @ visual.placement``. Meshcat cylinders are along y, URDF cylinders along z:
cylinders get a +90° rotation about x. The trajectory is resampled at ``fps`` frames per
second in real time (node k at t = k·dt) by cubic Hermite interpolation of (q, v).
"""
from __future__ import annotations

import atexit
import base64
import contextlib
import os
import select
import subprocess
import sys
from importlib import resources

import meshcat
import meshcat.geometry as mg
import numpy as np
import umsgpack
from meshcat.animation import Animation
from scipy.interpolate import CubicHermiteSpline

from dynamics.joints import neutral, normalize_kernel
from dynamics.kinematics import forward_kinematics, frame_placement, kinematics_work
from dynamics.model import Geometry, Model

from ..apps.report import loop_contact_forces, world_contact_forces
from ..apps.simulate import ClosedLoop, Push
from ..ocp import task
from ..ocp.activations import positive
from ..ocp.contact_residuals import MU, check_friction
from ..ocp.problem import Problem
from ..ocp.residuals import CoMPositionResidual
from ..solvers.result import Result

FPS = 30
LOOP = 1_000_000_000  # animation repetitions: loops (meshcat's default is to play once)
CAPSULE_RADIUS = 0.04
CAPSULE_RGBA = (0.95, 0.55, 0.15, 1.0)
DEFAULT_RGBA = (0.7, 0.7, 0.7, 1.0)
OBSTACLE_RGBA = (0.9, 0.1, 0.1, 0.5)
MARGIN_RGBA = (0.9, 0.1, 0.1, 0.12)
TARGET_RGBA = (0.85, 0.1, 0.85, 1.0)
FLOOR_RGB = (0.62, 0.64, 0.68)
POINT_RGBA = (1.0, 0.85, 0.1, 1.0)
PATH_RGBA = (0.1, 0.6, 0.2, 1.0)
PUSH_RGBA = (0.0, 0.75, 0.85, 1.0)
STANCE_RGBA = (0.15, 0.3, 0.9, 1.0)  # stance markers: blue discs
CONE_RGBA = (0.15, 0.3, 0.9, 0.18)  # friction cones: faint blue
FORCE_RGBA = (0.1, 0.8, 0.3, 1.0)  # contact forces: green arrows
COM_RGBA = (0.55, 0.2, 0.75, 1.0)  # centre of mass: purple path and ball
ARROW_RADIUS = 0.012  # shaft radius of the arrows, m (the head's base: 2.5 times that)
PUSH_SCALE = 0.01  # arrow length per newton, m (clipped to PUSH_LENGTH)
PUSH_LENGTH = (0.1, 0.5)  # shortest and longest arrow, m
BACKGROUND = ([0.98, 0.98, 0.98], [0.80, 0.82, 0.86])  # top, bottom; RGB in [0, 1]
MESH_FORMATS = {".stl": "stl", ".obj": "obj", ".dae": "dae"}
_Y_TO_Z = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])  # Rx(+90°)


class _Recorder:
    """A meshcat "window" that keeps the commands instead of sending them to a server."""

    def __init__(self) -> None:
        self.commands: list = []

    def send(self, command) -> None:
        self.commands.append(command)


def _color(rgba) -> tuple[int, float]:
    """meshcat colour int 0xRRGGBB and opacity from an (r, g, b, a) tuple in [0, 1]."""
    r, g, b, a = (float(c) for c in rgba)
    return (int(round(255 * r)) << 16) | (int(round(255 * g)) << 8) | int(round(255 * b)), a


def _material(rgba) -> mg.MeshLambertMaterial:
    color, opacity = _color(rgba)
    return mg.MeshLambertMaterial(color=color, opacity=opacity)


def _translation(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _segment_pose(d: np.ndarray) -> np.ndarray:
    """Pose (4, 4) of a meshcat cylinder (axis y) spanning the segment 0 → d."""
    y = d / np.linalg.norm(d)
    helper = np.eye(3)[np.argmin(np.abs(y))]
    x = np.cross(helper, y)
    x /= np.linalg.norm(x)
    T = _translation(d / 2)
    T[:3, :3] = np.column_stack([x, y, np.cross(x, y)])
    return T


def _shape(g: Geometry) -> tuple[mg.Geometry, np.ndarray] | None:
    """meshcat geometry and its pose in the URDF shape frame; None if not drawable."""
    if g.kind == "box":
        return mg.Box(list(g.size)), np.eye(4)
    if g.kind == "sphere":
        return mg.Sphere(g.size[0]), np.eye(4)
    if g.kind == "cylinder":
        return mg.Cylinder(g.size[1], g.size[0]), _Y_TO_Z
    fmt = MESH_FORMATS.get(os.path.splitext(g.filename)[1].lower())
    if g.kind != "mesh" or fmt is None or not os.path.isfile(g.filename):
        return None
    loader = {"stl": mg.StlMeshGeometry, "obj": mg.ObjMeshGeometry, "dae": mg.DaeMeshGeometry}[fmt]
    return loader.from_file(g.filename), np.diag([*g.scale, 1.0])


def resample(xs: np.ndarray, dt: float, nq: int, fps: float = FPS) -> tuple[np.ndarray, np.ndarray]:
    """Configurations at ``fps`` frames per second along a trajectory.

    Args:
        xs: node states (N+1, nx); q = xs[:, :nq], and v = xs[:, nq:2nq] if present.
        dt: time between nodes, s.
    Returns:
        times (F,) from 0 to N·dt (last frame exactly at the end) and qs (F, nq):
        cubic Hermite interpolation of (q, v) (linear in q if xs holds no velocities).
    """
    xs = np.asarray(xs, dtype=float)
    if xs.ndim != 2 or xs.shape[1] < nq or xs.shape[0] < 1 or not np.all(np.isfinite(xs)):
        raise ValueError(f"xs: expected finite states of shape (N+1, ≥{nq}), got shape {xs.shape}")
    if not (np.isfinite(dt) and dt > 0) or not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"dt, fps: expected positive numbers, got dt={dt!r}, fps={fps!r}")
    if xs.shape[0] == 1:
        return np.zeros(1), xs[:, :nq].copy()
    T = dt * (xs.shape[0] - 1)
    times = np.arange(int(np.floor(T * fps + 1e-9)) + 1) / fps
    if times[-1] < T - 1e-9:
        times = np.append(times, T)
    nodes = dt * np.arange(xs.shape[0])
    if xs.shape[1] >= 2 * nq:
        return times, CubicHermiteSpline(nodes, xs[:, :nq], xs[:, nq:2 * nq])(times)
    return times, np.column_stack([np.interp(times, nodes, xs[:, j]) for j in range(nq)])


def body_poses(model: Model, q: np.ndarray) -> np.ndarray:
    """World poses (n, 4, 4) of the joint frames of all bodies at configuration q (nq,)."""
    n = model.njoints
    R, p, S = kinematics_work(model.topology)
    forward_kinematics(model.arrays, np.ascontiguousarray(q, float), R, p, S)
    T = np.zeros((n, 4, 4))
    T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = R, p, 1.0
    return T


class Scene:
    """A meshcat scene of one robot, recorded as commands (see the module docstring).

    Args:
        model: the robot.
        capsule_radius: radius of the capsules drawn for bodies without visuals, m.
    """

    def __init__(self, model: Model, capsule_radius: float = CAPSULE_RADIUS) -> None:
        self.model = model
        self.capsule_radius = float(capsule_radius)
        self._recorder = _Recorder()
        self.vis = meshcat.Visualizer(window=self._recorder)
        base = next((f.name for f in model.frames if f.body < 0), "base")
        self.body_paths = {-1: f"robot/{base}", **{i: f"robot/{b}" for i, b in enumerate(model.body_names)}}
        self.objects: dict[str, str] = {}
        self.caption = ""
        self._seen: list[np.ndarray] = [np.zeros((1, 3))]  # points the camera must see
        self._pushes: list[tuple[str, Push, np.ndarray]] = []  # (path, push, arrow pose (4, 4))
        self._contacts: tuple[float, dict[str, np.ndarray], float] | None = None  # (dt, forces, N per m)
        self._com: np.ndarray | None = None  # centre of mass at the animation frames (F, 3)
        self.vis["/Background"].set_property("top_color", BACKGROUND[0])
        self.vis["/Background"].set_property("bottom_color", BACKGROUND[1])
        self.vis["/Grid"].set_property("visible", False)  # meshcat's grid is not drawn as a floor here
        self._add_robot()

    @property
    def commands(self) -> list:
        """Recorded meshcat command objects, in order (each has ``lower()``)."""
        return self._recorder.commands

    def _add(self, path: str, geometry, material, pose: np.ndarray, kind: str) -> None:
        self.vis[path].set_object(geometry, material)
        self.vis[path].set_transform(pose)
        self.objects[path] = kind

    def _add_robot(self) -> None:
        """URDF visuals, capsules for bodies without any or with a mesh that cannot be found;
        robot posed at the neutral configuration."""
        drawn, missing = set(), set()
        for k, g in enumerate(self.model.visuals):
            shape = _shape(g)
            frame = self.model.frame(g.frame)
            if shape is None:  # a mesh that cannot be found (load_urdf warned): capsules instead
                missing.add(frame.body)
                continue
            rgba = g.rgba if g.rgba is not None else DEFAULT_RGBA
            path = f"{self.body_paths[frame.body]}/visual_{k}"
            self._add(path, shape[0], _material(rgba), frame.placement @ g.placement @ shape[1], g.kind)
            drawn.add(frame.body)
        for body in range(-1, self.model.njoints):
            if body not in drawn or body in missing:
                self._add_capsules(body)
        self.pose(neutral(self.model))

    def _add_capsules(self, body: int) -> None:
        """Capsules from the body's joint origin to its children's joints and frames."""
        parent = self.model.topology[:, 0]
        ends = [self.model.joint_placement[c][:3, 3] for c in np.flatnonzero(parent == body)]
        ends += [f.placement[:3, 3] for f in self.model.frames if f.body == body]
        ends = [d for d in ends if np.linalg.norm(d) > 1e-6]
        if body < 0 and not ends:
            return
        material, r, root = _material(CAPSULE_RGBA), self.capsule_radius, self.body_paths[body]
        self._add(f"{root}/capsule_joint", mg.Sphere(r), material, np.eye(4), "capsule")
        for k, d in enumerate(ends):
            self._add(f"{root}/capsule_{k}", mg.Cylinder(float(np.linalg.norm(d)), r), material,
                      _segment_pose(d), "capsule")
            self._add(f"{root}/capsule_{k}_end", mg.Sphere(r), material, _translation(d), "capsule")

    def pose(self, q) -> None:
        """Set every body node to its world pose at configuration q (nq,)."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,) or not np.all(np.isfinite(q)):
            raise ValueError(f"q: expected {self.model.nq} finite numbers, got shape {q.shape}")
        for i, T in enumerate(body_poses(self.model, q)):
            self.vis[self.body_paths[i]].set_transform(T)
        self._seen.append(np.array([T[:3, 3] for T in body_poses(self.model, q)]))

    def add_obstacles(self, obstacles) -> None:
        """Spheres ``[(center (3,), radius[, margin]), ...]``, semi-transparent red; a margin
        > 0 is drawn as a faint shell of radius + margin."""
        for k, (center, radius, *margin) in enumerate(obstacles):
            center, radius = np.asarray(center, dtype=float), float(radius)
            margin = float(margin[0]) if margin else 0.0
            if center.shape != (3,) or not np.all(np.isfinite(center)) or not radius > 0 or not margin >= 0:
                raise ValueError(f"obstacles[{k}]: expected (center (3,), radius > 0[, margin ≥ 0]), "
                                 f"got ({center}, {radius}, {margin})")
            self._add(f"obstacles/obstacle_{k}", mg.Sphere(radius), _material(OBSTACLE_RGBA),
                      _translation(center), "obstacle")
            if margin > 0:
                self._add(f"obstacles/margin_{k}", mg.Sphere(radius + margin), _material(MARGIN_RGBA),
                          _translation(center), "margin")
            self._seen.append(center + (radius + margin) * np.vstack([np.eye(3), -np.eye(3)]))

    def add_targets(self, targets, radius: float = 0.025) -> None:
        """Magenta spheres at world points ``targets`` (K, 3)."""
        for k, p in enumerate(targets):
            p = np.asarray(p, dtype=float)
            if p.shape != (3,) or not np.all(np.isfinite(p)):
                raise ValueError(f"targets[{k}]: expected 3 finite numbers, got {p}")
            self._add(f"targets/target_{k}", mg.Sphere(radius), _material(TARGET_RGBA), _translation(p), "target")
            self._seen.append(p[None])

    def add_pose_targets(self, poses, scale: float = 0.12) -> None:
        """Red/green/blue axes (x/y/z) at world poses ``poses`` [(R (3, 3), p (3,)), ...]."""
        for k, (R, p) in enumerate(poses):
            T = _translation(p)
            T[:3, :3] = R
            self._add(f"targets/pose_{k}", mg.triad(scale), None, T, "triad")

    def add_floor(self, spacing: float = 0.1) -> None:
        """A grid of lines on z = 0 around everything added so far."""
        reach = max(0.5, float(np.max(np.abs(np.vstack(self._seen)[:, :2]))) + 0.2)
        n = int(np.ceil(reach / spacing))
        ticks, half = spacing * np.arange(-n, n + 1), spacing * n
        ends = [((t, -half, 0), (t, half, 0)) for t in ticks] + [((-half, t, 0), (half, t, 0)) for t in ticks]
        points = np.array(ends, dtype=np.float32).reshape(-1, 3).T
        color, _ = _color((*FLOOR_RGB, 1.0))
        self.vis["floor"].set_object(mg.LineSegments(mg.PointsGeometry(points), mg.LineBasicMaterial(color=color)))
        self.objects["floor"] = "floor"

    def add_collision_points(self, points, radius: float = 0.015) -> None:
        """Small spheres at ``[(frame_name, offset (3,) in that frame), ...]``."""
        for k, (name, offset) in enumerate(points):
            frame = self.model.frame(name)
            pose = frame.placement @ _translation(np.asarray(offset, dtype=float).reshape(3))
            self._add(f"{self.body_paths[frame.body]}/point_{k}", mg.Sphere(radius), _material(POINT_RGBA),
                      pose, "point")

    def add_triads(self, frames, scale: float = 0.1) -> None:
        """Red/green/blue axes (x/y/z) at each named frame."""
        for name in frames:
            frame = self.model.frame(name)
            self.vis[f"{self.body_paths[frame.body]}/triad_{name}"].set_object(mg.triad(scale))
            self.vis[f"{self.body_paths[frame.body]}/triad_{name}"].set_transform(frame.placement)
            self.objects[f"{self.body_paths[frame.body]}/triad_{name}"] = "triad"

    def _add_line(self, name: str, points: np.ndarray, rgba, kind: str) -> None:
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3 or points.shape[0] < 2 or not np.all(np.isfinite(points)):
            raise ValueError(f"points: expected finite points of shape (K ≥ 2, 3), got shape {points.shape}")
        color, _ = _color(rgba)
        line = mg.Line(mg.PointsGeometry(points.T.astype(np.float32)), mg.LineBasicMaterial(color=color, linewidth=3))
        self.vis[name].set_object(line)
        self.objects[name] = kind
        self._seen.append(points)

    def add_path(self, points: np.ndarray) -> None:
        """Polyline through ``points`` (K, 3), e.g. the end-effector path."""
        self._add_line("path", points, PATH_RGBA, "path")

    def _add_arrow(self, path: str, length: float, rgba, kind: str, radius: float = ARROW_RADIUS,
                   tip_at_origin: bool = True) -> None:
        """An arrow ``length`` m long along the y axis of node ``path`` (a shaft and a conical
        head a quarter of the length long), ending at the node's origin (``tip_at_origin``) or
        starting there."""
        head, start = 0.25 * length, -length if tip_at_origin else 0.0
        material = _material(rgba)
        self._add(f"{path}/shaft", mg.Cylinder(length - head, radius), material,
                  _translation((0, start + (length - head) / 2, 0)), kind)
        self._add(f"{path}/head", mg.Cylinder(head, radiusTop=0.0, radiusBottom=2.5 * radius), material,
                  _translation((0, start + length - head / 2, 0)), kind)

    def add_push(self, push: Push) -> None:
        """An arrow of the :class:`optdyn.Push` (a world-frame force on a frame from its start
        for its duration): its tip on the frame's origin, its length ``PUSH_SCALE`` m per N
        (within ``PUSH_LENGTH``); :meth:`animate` moves it with the frame and shows it only
        while the push acts."""
        if not isinstance(push, Push):
            raise ValueError(f"push: expected an optdyn.Push, got {type(push).__name__}")
        norm = float(np.linalg.norm(push.force))
        if not norm > 0:
            raise ValueError(f"push: a zero force has no arrow, got {push.force!r}")
        self.model.frame(push.frame)  # ValueError naming an unknown frame
        path = f"pushes/push_{len(self._pushes)}"
        self._add_arrow(path, float(np.clip(PUSH_SCALE * norm, *PUSH_LENGTH)), PUSH_RGBA, "push")  # along y, tip at 0
        self.vis[path].set_property("visible", False)
        self._pushes.append((path, push, _segment_pose(np.asarray(push.force))))  # y along the force

    def add_contacts(self, dt: float, forces: dict[str, np.ndarray], force_scale: float, mu: float = MU,
                     cone_height: float | None = None, marker_radius: float | None = None) -> None:
        """Stance markers, contact forces and friction cones of the feet, for :meth:`animate`.

        Args:
            dt: interval length, s: knot k's values are shown over [k·dt, (k+1)·dt) (the last
                knot's until the end).
            forces: {frame: (N, 3)} the world-frame force each contact exerts on the robot at the
                knots k = 0 … N−1, NaN where the frame is not in contact
                (:func:`optdyn.apps.report.world_contact_forces`).
            force_scale: N per metre of arrow: a force f is an arrow ‖f‖/force_scale m long,
                from the foot along f.
            mu: friction coefficient: the cones have half-angle atan μ about the world z axis
                (flat ground), apex on the foot.
            cone_height: height of the cones, m (default: half the robot's weight at the scale);
            marker_radius: radius of the stance discs, m (default: 3 cm, and 1.5 capsule radii
                so that a disc sticks out of a capsule's end).

        Scene nodes ``contacts/<frame>`` (moved with the frame's origin, visible while the frame
        is in contact) holding ``stance`` (a flat blue disc), ``cone`` (a faint blue cone) and
        ``force`` (a green arrow of unit length along the node's y axis, scaled along y by
        ‖f‖/force_scale and turned along f).
        """
        dt, force_scale, mu = positive(dt, "dt"), positive(force_scale, "force_scale"), check_friction(mu)
        cone_height = 0.5 * weight(self.model) / force_scale if cone_height is None else positive(cone_height,
                                                                                                 "cone_height")
        marker_radius = (max(0.03, 1.5 * self.capsule_radius) if marker_radius is None
                         else positive(marker_radius, "marker_radius"))
        checked = {}
        for frame, f in forces.items():
            self.model.frame(frame)  # ValueError naming an unknown frame
            f = np.asarray(f, dtype=float)
            if f.ndim != 2 or f.shape[1] != 3 or f.shape[0] < 1:
                raise ValueError(f"forces[{frame!r}]: expected shape (N, 3), got {f.shape}")
            checked[frame] = f
        if len({f.shape[0] for f in checked.values()}) > 1:
            raise ValueError("forces: expected the same number of knots N for every frame")
        for frame in checked:
            path = f"contacts/{frame}"
            self._add(f"{path}/stance", mg.Cylinder(0.004, marker_radius), _material(STANCE_RGBA), _Y_TO_Z,
                      "stance")
            self._add(f"{path}/cone", mg.Cylinder(cone_height, radiusTop=mu * cone_height, radiusBottom=0.0),
                      _material(CONE_RGBA), _Y_TO_Z @ _translation((0, cone_height / 2, 0)), "cone")
            self._add_arrow(f"{path}/force", 1.0, FORCE_RGBA, "force", radius=0.6 * ARROW_RADIUS,
                            tip_at_origin=False)
        self._contacts = (float(dt), checked, float(force_scale))

    def add_com(self, points: np.ndarray, radius: float = 0.02) -> None:
        """The centre of mass: its path ``points`` (K, 3) at the animation frames as a purple
        line, and a purple ball that :meth:`animate` moves along it."""
        self._add_line("com_path", points, COM_RGBA, "com_path")
        self._add("com", mg.Sphere(radius), _material(COM_RGBA), _translation(points[0]), "com")
        self._com = np.asarray(points, dtype=float)

    def _contact_states(self, t: float, poses: np.ndarray):
        """(path, stance, world position of the foot, arrow pose (4, 4), arrow length) of each
        contact node at time t (:meth:`add_contacts`)."""
        if self._contacts is None:
            return
        dt, forces, scale = self._contacts
        for frame, f in forces.items():
            k = min(int(np.floor(t / dt + 1e-9)), f.shape[0] - 1)
            stance = bool(np.all(np.isfinite(f[k])))
            norm = float(np.linalg.norm(f[k])) if stance else 0.0
            turn = _segment_pose(f[k])[:3, :3] if norm > 0 else np.eye(3)  # y along the force
            T = np.eye(4)
            T[:3, :3] = turn
            yield f"contacts/{frame}", stance, _frame_point(self.model, poses, frame), T, max(norm / scale, 1e-6)

    def animate(self, times: np.ndarray, qs: np.ndarray, fps: float = FPS) -> None:
        """Play configurations qs (F, nq) at ``times`` (F,), s, with the forces of
        :meth:`add_push`, the contacts of :meth:`add_contacts` and the centre of mass of
        :meth:`add_com` (one point per frame); the scene starts at qs[0]."""
        animation = Animation(default_framerate=fps)
        for i, (t, q) in enumerate(zip(times, qs)):
            frame = animation.at_frame(self.vis, float(t * fps))
            poses = body_poses(self.model, q)
            for b, T in enumerate(poses):
                frame[self.body_paths[b]].set_transform(T)
            for path, push, turn in self._pushes:
                T = turn.copy()
                T[:3, 3] = _frame_point(self.model, poses, push.frame)
                frame[path].set_transform(T)
                frame[path].set_property("visible", "boolean", bool(push.active(t)))
            for path, stance, p, T, length in self._contact_states(float(t), poses):
                frame[path].set_transform(_translation(p))
                frame[path].set_property("visible", "boolean", stance)
                frame[f"{path}/force"].set_transform(T)
                frame[f"{path}/force"].set_property("scale", "vector3", [1.0, length, 1.0])
            if self._com is not None:
                frame["com"].set_transform(_translation(self._com[i]))
        self.pose(qs[0])
        for path, stance, p, T, length in self._contact_states(float(times[0]), body_poses(self.model, qs[0])):
            self.vis[path].set_transform(_translation(p))
            self.vis[path].set_property("visible", stance)
            self.vis[f"{path}/force"].set_transform(T @ np.diag([1.0, length, 1.0, 1.0]))
            self._seen.append(p[None])
        self.vis.set_animation(animation, play=True, repetitions=LOOP)

    def set_camera(self, direction=(1.0, -1.2, 0.8)) -> None:
        """Place the default camera along ``direction`` (world) from the origin.

        The viewer's camera always looks at the world origin, so it backs off until every
        point added so far lies within 36° of the view axis (the field of view is 75°).
        """
        reach = max(0.25, float(np.max(np.linalg.norm(np.vstack(self._seen), axis=1))))
        d = np.asarray(direction, dtype=float)
        x, y, z = 1.4 * reach * d / np.linalg.norm(d)
        # the camera lives in a frame rotated +90° about x (three.js is y-up)
        self.vis["/Cameras/default/rotated/<object>"].set_property("position", [x, z, -y])

    def html(self, title: str = "optdyn", caption: str = "") -> str:
        """Self-contained HTML page replaying the recorded scene offline, with ``caption``
        shown over the scene and play/pause and a time slider under it."""
        js = resources.files("meshcat").joinpath("viewer/dist/main.min.js").read_text(encoding="utf-8")
        blobs = ",\n".join(f'"{base64.b64encode(umsgpack.packb(c.lower())).decode("ascii")}"' for c in self.commands)
        return _PAGE.format(title=_escape(title), caption=_escape(caption), mainminjs=js, commands=blobs)

    def send_to(self, vis: meshcat.Visualizer) -> None:
        """Replay the recorded commands into a live meshcat visualizer."""
        for command in self.commands:
            vis.window.send(command)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PAGE = """<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ margin: 0; font: 14px sans-serif; }}
#meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
#caption {{ position: fixed; top: 8px; left: 10px; color: #222; background: rgba(255,255,255,0.75);
            padding: 4px 8px; border-radius: 4px; }}
#player {{ position: fixed; bottom: 10px; left: 10px; right: 10px; display: flex; gap: 10px;
           align-items: center; background: rgba(255,255,255,0.75); padding: 4px 8px; border-radius: 4px; }}
#player input {{ flex: 1; }}
</style>
</head>
<body>
<div id="meshcat-pane"></div>
<div id="caption">{caption}</div>
<div id="player"><button id="play" style="width: 5em">pause</button>
<input id="time" type="range" min="0" max="1" step="0.001" value="0"><span id="clock">0.00 s</span></div>
<script>
{mainminjs}
</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
var commands = [
{commands}
];
for (const blob of commands) {{
    const bytes = atob(blob);
    const data = new Uint8Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) data[i] = bytes.charCodeAt(i);
    viewer.handle_command_bytearray(data);
}}
const animator = viewer.animator, button = document.getElementById("play");
const slider = document.getElementById("time"), clock = document.getElementById("clock");
slider.max = animator.duration;
button.onclick = () => {{
    if (animator.playing) animator.pause(); else animator.play();
    button.textContent = animator.playing ? "pause" : "play";
}};
slider.oninput = () => {{
    animator.pause(); button.textContent = "play";
    animator.seek(parseFloat(slider.value));
    clock.textContent = parseFloat(slider.value).toFixed(2) + " s";
}};
setInterval(() => {{
    if (!animator.playing) return;
    const t = animator.actions.reduce((m, a) => Math.max(m, a.time), 0);
    slider.value = t;
    clock.textContent = t.toFixed(2) + " s";
}}, 50);
</script>
</body>
</html>
"""


def _frame_point(model: Model, poses: np.ndarray, frame: str) -> np.ndarray:
    """World position (3,) of ``frame``'s origin, from the body poses (n, 4, 4) of :func:`body_poses`."""
    f = model.frame(frame)
    return f.placement[:3, 3].copy() if f.body < 0 else (poses[f.body] @ f.placement[:, 3])[:3]


def frame_path(model: Model, qs: np.ndarray, frame: str, offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """World positions (K, 3) of the point ``offset`` fixed in ``frame`` at configurations qs (K, nq)."""
    f = model.frame(frame)
    local = f.placement @ np.append(np.asarray(offset, dtype=float), 1.0)
    if f.body < 0:
        return np.tile(local[:3], (len(qs), 1))
    return np.array([(body_poses(model, q)[f.body] @ local)[:3] for q in qs])


def caption_of(result: Result | ClosedLoop, problem: Problem) -> str:
    """One line: problem, solver, cost and status of ``result``; for a closed loop, its
    controller, duration, pushes and solve times against the control period."""
    name = result.problem or problem.name
    if isinstance(result, ClosedLoop):
        limit = "to convergence" if result.iteration_limit is None else f"{result.iteration_limit} iteration(s)"
        pushes = "".join(f" · push {d.frame} {np.linalg.norm(d.force):g} N at {d.start:g} s"
                         for d in result.disturbances)
        times = (f" · solve median {1e3 * np.median(result.solve_time[1:]):.3g} ms of the {1e3 * result.dt:g} ms "
                 f"period" if len(result.solve_time) > 1 else "")
        stopped = f" · stopped: {result.stopped}" if result.stopped else ""
        return f"{name} · MPC {result.solver}, {limit} per step · {result.t[-1]:g} s{pushes}{times}{stopped}"
    return (f"{name} · {result.solver or 'no solver'} · cost {result.cost:.6g} · "
            f"{result.status} ({result.iterations} iterations)")


def weight(model: Model) -> float:
    """The robot's weight m‖g‖, N (m: the mass of its moving bodies)."""
    return float(np.sum(model.inertia[:, 0]) * np.linalg.norm(model.gravity))


def contact_force_scale(problem: Problem) -> float:
    """Default N per metre of the contact-force arrows: the weight m‖g‖ over h, the height of
    the centre of mass above the lowest contact frame at x0 (h ≥ 0.1 m), so that the whole
    weight is an arrow from the ground up to the CoM."""
    model = problem.model
    q0 = np.asarray(problem.x0, dtype=float)[:model.nq]
    frames = {c.frame for cs in problem.contacts or () for c in cs}
    com = CoMPositionResidual(model).point(q0[None])[0]
    lowest = min((frame_placement(model, q0, f)[1][2] for f in frames), default=com[2] - 0.1)
    return weight(model) / max(float(com[2] - lowest), 0.1)


def scene_of(result: Result | ClosedLoop, problem: Problem | None = None, fps: float = FPS, frames=(),
             capsule_radius: float = CAPSULE_RADIUS, path_frame: str | None = None, mu: float | None = None,
             force_scale: float | None = None) -> Scene:
    """Scene of a solved problem or a closed loop: robot, obstacles, collision points,
    targets, path, floor, animation (and a closed loop's pushes as arrows; a problem's
    contacts, their forces and friction cones, and its centre of mass).

    Args:
        result: solver output, its states ``xs`` (N+1, nx) played at node times k·dt; or a
            :class:`optdyn.ClosedLoop`, its states played at its times ``t`` (every ``dt``).
        problem: the problem solved (default: the one :func:`optdyn.ocp.task.problem_of` finds:
            ``result.source``, set by :func:`optdyn.solve` and :func:`optdyn.simulate`, or the
            result's problem record).
        fps: animation frame rate; frames: names of frames to draw as triads.
        path_frame: frame whose path is drawn (default: the frame the costs and terminal
            constraints name, :func:`optdyn.ocp.task.path_frame`).
        mu: friction coefficient of the cones drawn at the contacts (> 0; default: the
            problem's own, :func:`optdyn.ocp.task.friction_coefficient`).
        force_scale: N per metre of the contact-force arrows (default:
            :func:`contact_force_scale`).
    """
    problem = task.problem_of(result, problem)
    model = problem.model
    loop = isinstance(result, ClosedLoop)
    if not loop and np.shape(result.xs)[0] != problem.N + 1:
        raise ValueError(f"result: xs has {np.shape(result.xs)[0]} nodes, the problem has N + 1 = {problem.N + 1}")
    if loop and np.shape(result.xs)[1:] != (problem.nx,):
        raise ValueError(f"loop: its states have {np.shape(result.xs)[1:]} entries, the problem's nx = {problem.nx}")
    contacts = problem.contacts is not None
    mu = task.friction_coefficient(problem) if mu is None else check_friction(mu)  # refused even without cones
    scene = Scene(model, capsule_radius)
    scene.add_obstacles([(o.center, o.radius, max(o.margin, 0.0)) for o in task.obstacles(problem)])
    scene.add_collision_points(task.collision_points(problem))
    world = [t for t in task.frame_targets(problem) if t.relative_to is None]  # a relative target moves: not drawn
    scene.add_targets([t.target for t in world])
    scene.add_pose_targets([(t.rotation, t.target) for t in world if t.rotation is not None])
    scene.add_triads(frames)
    for push in result.disturbances if loop else ():
        if np.any(push.force):  # a zero force has no arrow
            scene.add_push(push)
    times, qs = resample(result.xs, result.dt if loop else problem.dt, model.nq, fps)
    if model.nq != model.nv:  # a floating base: quaternions interpolated coordinate-wise, renormalised
        qs = np.array([normalize_kernel(model.topology, q) for q in qs])
    if contacts:
        scale = contact_force_scale(problem) if force_scale is None else force_scale
        if loop and result.contact_forces:  # what the plant measured (MuJoCo's)
            forces = result.contact_forces
        else:
            forces = (loop_contact_forces if loop else world_contact_forces)(problem, result.xs, result.us)
        scene.add_contacts(result.dt if loop else problem.dt, forces, scale, mu)
        if len(qs) >= 2:
            scene.add_com(CoMPositionResidual(model).point(qs))
    frame, offset = task.path_frame(problem) if path_frame is None else (path_frame, np.zeros(3))
    if len(qs) >= 2:
        scene.add_path(frame_path(model, qs, frame, offset))
    scene.animate(times, qs, fps)
    scene.add_floor()
    scene.set_camera()
    scene.caption = caption_of(result, problem)
    return scene


def save_html(result: Result | ClosedLoop, path, problem: Problem | None = None, fps: float = FPS, frames=(),
              path_frame: str | None = None, mu: float | None = None, force_scale: float | None = None) -> str:
    """Write a self-contained HTML file replaying the trajectory (or closed loop) offline
    (:func:`scene_of`); returns the path."""
    scene = scene_of(result, problem, fps, frames, path_frame=path_frame, mu=mu, force_scale=force_scale)
    html = scene.html(f"optdyn: {scene.caption}", scene.caption)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    return os.fspath(path)


def serve_local(timeout: float = 20.0) -> meshcat.Visualizer:
    """Start a meshcat server listening on 127.0.0.1 only and connect to it.

    meshcat's own server binds its web port on every interface; this one runs the same
    bridge with the HTTP/websocket port restricted to the loopback interface. The server
    is a child process (``vis.window.server_proc``) stopped at interpreter exit; it also
    ends by itself as soon as its parent does, however the parent ends (Ctrl-C, SIGTERM,
    even SIGKILL): it watches its stdin, a pipe from the parent that closes when the
    parent's process ends, so no orphan keeps the port.
    """
    proc = subprocess.Popen(
        [sys.executable, "-u", "-c", "from optdyn.viz import _run_local_server; _run_local_server()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    atexit.register(_stop, proc)
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line.startswith("zmq_url="):
        _stop(proc)
        raise RuntimeError(f"meshcat server did not start (exit code {proc.poll()})")
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # view() prints the URL
        vis = meshcat.Visualizer(zmq_url=line.split("=", 1)[1])
    vis.window.server_proc = proc
    return vis


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()


def _exit_with_parent() -> None:
    """Block until stdin (the pipe from the parent) reaches end-of-file, then exit at once."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def _run_local_server() -> None:
    """Entry point of the server child process started by :func:`serve_local`."""
    import threading

    from meshcat.servers.zmqserver import ZMQWebSocketBridge

    threading.Thread(target=_exit_with_parent, daemon=True).start()

    class LocalBridge(ZMQWebSocketBridge):
        def make_app(self):
            app = super().make_app()
            listen = app.listen
            app.listen = lambda port, **kw: listen(port, address="127.0.0.1", **kw)
            return app

    bridge = LocalBridge(host="127.0.0.1")
    print(f"zmq_url={bridge.zmq_url}", flush=True)
    bridge.run()


def view(result: Result | ClosedLoop, problem: Problem | None = None, open: bool = False, fps: float = FPS,
         frames=(), path_frame: str | None = None, mu: float | None = None,
         force_scale: float | None = None) -> meshcat.Visualizer:
    """Serve the trajectory (or closed loop) on a local meshcat server (127.0.0.1) and print its URL.

    Returns the connected visualizer; the server lives until this Python process exits
    (or ``vis.window.server_proc`` is killed). ``open=True`` also opens a browser tab.
    """
    scene = scene_of(result, problem, fps, frames, path_frame=path_frame, mu=mu, force_scale=force_scale)
    vis = serve_local()
    scene.send_to(vis)
    print(f"meshcat viewer: {vis.url()}", flush=True)
    if open:
        vis.open()
    return vis
