"""Load a robot from a URDF description into a :class:`~dynamics.model.Model`.

The parser reads the URDF XML (ROS URDF specification, http://wiki.ros.org/urdf/XML)
with :mod:`xml.etree.ElementTree` and fills a :class:`~dynamics.builder.ModelBuilder`,
which checks the tree, numbers the joints depth-first from the root and merges the links
of fixed joints into their moving parent body.

Defaults follow the specification:

* a missing ``<origin>`` is the identity, missing ``xyz``/``rpy`` are zeros;
* a missing ``<axis>`` is (1, 0, 0);
* a link without ``<inertial>`` is massless (it still gets a frame);
* ``<limit>``: missing ``lower``/``upper`` are 0 (as the specification says), missing
  ``velocity``/``effort`` are unbounded (+inf); a revolute or prismatic joint without
  ``<limit>`` is unbounded; continuous joints are always unbounded;
* ``<dynamics>``: ``damping`` and ``friction`` (missing: 0) are recorded as the model's
  ``damping`` and ``friction`` (per velocity variable, as Pinocchio's) for a simulator; the
  dynamics here leave them out;
* a ``<mesh>`` without ``scale`` has scale (1, 1, 1).

Every link becomes a frame of the model; visual and collision shapes (box, cylinder,
sphere, mesh) are kept with their colour, which may name a ``<material>`` defined at
robot level (or earlier in a visual; one never defined leaves the shape uncoloured, with a
warning, as urdfdom does). ``<mimic>`` is ignored: mimic joints are loaded
as independent joints, as Pinocchio does by default. ``<transmission>``, ``<gazebo>``
and ``<safety_controller>`` are ignored. ``floating``
joints load as free-flyers and ``planar`` joints (axis z) as planar joints
(:mod:`dynamics.joints`); ``root_joint`` attaches the root link to the world by one.

``locked_joints`` ({name: value}) loads those revolute, continuous or prismatic joints as
fixed ones held at ``value`` (rad or m): the joint's origin composed with its own motion
at that value, T_origin · exp(value · S) — a rotation about the axis or a translation
along it — so that the reduced model is the full one with those joints frozen
(Pinocchio's ``buildReducedModel``; e.g. a humanoid's legs with the upper body locked
in a posture).

Mesh file names are resolved to absolute paths: ``package://pkg/rel`` is looked up as
``dir/pkg/rel`` for every ``dir`` of ``package_dirs`` and then of the ``ROS_PACKAGE_PATH``
environment variable (Pinocchio's rule), ``file://`` and relative names against the
URDF's directory. A mesh that cannot be found keeps its name and is reported by one
warning naming it (the viewer draws a capsule in its place).

Any problem with the description raises ``ValueError`` naming the element and what was
expected.
"""
from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping

import numpy as np

from ._xml import number, parse, required, vector
from .builder import ModelBuilder
from .groups import exp3_quaternion, quaternion_rotation
from .model import DEFAULT_GRAVITY, Geometry, Model, as_gravity, rpy_matrix, transform

_SHAPES = ("box", "cylinder", "sphere", "mesh")


def load_urdf(source: str | os.PathLike, root_joint: str | None = None, package_dirs=None,
              strict_inertia: bool = False, gravity=DEFAULT_GRAVITY, locked_joints=None) -> Model:
    """Model described by a URDF file path or URDF XML string.

    A string whose first non-blank character is ``<`` is parsed as XML, anything else is
    a path to a file (recorded as ``model.source``). ``root_joint`` = None (fixed base),
    ``"free-flyer"``, ``"planar"`` or ``"spherical"`` attaches the root link to the world
    by that joint, named ``"root_joint"``. ``package_dirs`` (a directory or a list of
    them) resolves ``package://`` mesh URIs. ``strict_inertia`` refuses inertias that
    violate the triangle inequality even slightly (by default: a warning). ``gravity`` (3,)
    is the model's gravity acceleration in the world frame (m/s²), fixed for its lifetime
    (:meth:`~dynamics.model.Model.with_gravity` gives a copy under another).
    ``locked_joints`` ({joint name: value}) loads those 1-DoF joints as fixed at ``value``
    (module docstring).
    """
    gravity = as_gravity(gravity)
    locked = _locked_joints(locked_joints)
    dirs = _package_dirs(package_dirs)
    root, path = parse(source, "urdf")
    base = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    return _RobotParser(root, _MeshResolver(dirs, base), locked).build(
        root_joint, strict_inertia, os.path.abspath(path) if path else None, gravity)


def _locked_joints(locked_joints) -> dict[str, float]:
    """``locked_joints`` as {name: finite float}; ValueError naming it otherwise."""
    if locked_joints is None:
        return {}
    if not isinstance(locked_joints, Mapping):
        raise ValueError(f"locked_joints: expected a mapping {{joint name: value}}, got {locked_joints!r}")
    out = {}
    for name, value in locked_joints.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"locked_joints: joint {name!r} needs a finite number (rad or m), got {value!r}")
        out[name] = float(value)
    return out


def _package_dirs(package_dirs) -> list[str]:
    """``package_dirs`` as a list of existing directories, then those of ROS_PACKAGE_PATH."""
    if package_dirs is None:
        given = []
    elif isinstance(package_dirs, (str, os.PathLike)):
        given = [os.fspath(package_dirs)]
    else:
        try:
            given = [os.fspath(d) for d in package_dirs]
        except TypeError:
            raise ValueError(f"package_dirs: expected a directory or a list of directories, "
                             f"got {package_dirs!r}") from None
    for d in given:
        if not os.path.isdir(d):
            raise ValueError(f"package_dirs: {d!r} is not a directory")
    ros = [d for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d and os.path.isdir(d)]
    return given + ros


class _MeshResolver:
    """Absolute paths of mesh file names; one warning per mesh that cannot be found."""

    def __init__(self, dirs: list[str], base: str) -> None:
        self.dirs, self.base, self.missing = dirs, base, set()

    def __call__(self, filename: str) -> str:
        if filename.startswith("package://"):
            rel = filename[len("package://"):]
            candidates = [os.path.join(d, rel) for d in self.dirs]
        else:
            rel = filename[len("file://"):] if filename.startswith("file://") else filename
            candidates = [os.path.join(self.base, rel)]
        for c in candidates:
            if os.path.isfile(c):
                return os.path.abspath(c)
        if filename not in self.missing:
            self.missing.add(filename)
            hint = " (give package_dirs or set ROS_PACKAGE_PATH)" if filename.startswith("package://") else ""
            warnings.warn(f"urdf: mesh {filename!r} not found{hint}; it will be drawn as a capsule", stacklevel=4)
        return filename


class _RobotParser:
    """Reads the children of ``<robot>`` into a ModelBuilder."""

    def __init__(self, robot: ET.Element, resolve_mesh: _MeshResolver, locked: dict[str, float]) -> None:
        self.robot = robot
        self.resolve_mesh = resolve_mesh
        self.locked = locked
        self.builder = ModelBuilder(robot.get("name", "robot"))
        self.materials: dict[str, tuple[float, float, float, float]] = {}

    def build(self, root_joint: str | None, strict_inertia: bool, source: str | None, gravity: np.ndarray) -> Model:
        for m in self.robot.findall("material"):
            self._material(m, "robot")
        for link in self.robot.findall("link"):
            self._link(link)
        for joint in self.robot.findall("joint"):
            self._joint(joint)
        unknown = sorted(set(self.locked) - {j.get("name") for j in self.robot.findall("joint")})
        if unknown:
            raise ValueError(f"locked_joints: no joint named {', '.join(map(repr, unknown))} in the URDF")
        return self.builder.build(root_joint, strict_inertia, source, gravity)

    def _link(self, el: ET.Element) -> None:
        name = required(el, "name", "<link>")
        where = f"link {name!r}"
        mass, inertia, origin = 0.0, None, None
        inertial = el.find("inertial")
        if inertial is not None:
            mass_el = inertial.find("mass")
            if mass_el is None:
                raise ValueError(f"{where}: <inertial> needs a <mass value=...> element")
            mass = number(mass_el, "value", f"{where} <mass>")
            origin = _origin(inertial.find("origin"), f"{where} <inertial>")
            inertia = _inertia(inertial.find("inertia"), where)
        self.builder.add_link(
            name, mass, inertia, origin,
            visuals=[self._geometry(v, name, "visual") for v in el.findall("visual")],
            collisions=[self._geometry(c, name, "collision") for c in el.findall("collision")],
        )

    def _joint(self, el: ET.Element) -> None:
        name = required(el, "name", "<joint>")
        where = f"joint {name!r}"
        kind = required(el, "type", f"{where}:")
        links = []
        for role in ("parent", "child"):
            sub = el.find(role)
            if sub is None or not sub.get("link"):
                raise ValueError(f"{where}: expected a <{role} link=...> element")
            links.append(sub.get("link"))
        axis_el = el.find("axis")
        axis = (1.0, 0.0, 0.0) if axis_el is None else vector(axis_el, "xyz", 3, f"{where} <axis>", "1 0 0")
        limits = {}
        limit = el.find("limit")
        if limit is not None:
            tag = f"{where} <limit>"
            limits = {"lower": number(limit, "lower", tag, "0"), "upper": number(limit, "upper", tag, "0"),
                      "velocity": number(limit, "velocity", tag, "inf", unbounded=True),
                      "effort": number(limit, "effort", tag, "inf", unbounded=True)}
        dynamics = el.find("dynamics")
        if dynamics is not None:
            tag = f"{where} <dynamics>"
            limits.update(damping=number(dynamics, "damping", tag, "0"), friction=number(dynamics, "friction", tag, "0"))
        origin = _origin(el.find("origin"), where)
        if name in self.locked:
            kind, origin = "fixed", origin @ _locked_motion(kind, axis, self.locked[name], name)
        self.builder.add_joint(name, kind, links[0], links[1], origin, axis, **limits)

    def _geometry(self, el: ET.Element, link: str, role: str) -> Geometry:
        where = f"link {link!r} <{role}>"
        geom = el.find("geometry")
        shapes = [] if geom is None else [s for s in geom if s.tag in _SHAPES]
        if len(shapes) != 1:
            found = [] if geom is None else [f"<{s.tag}>" for s in geom]
            raise ValueError(
                f"{where}: expected <geometry> with one of <box>, <cylinder>, <sphere>, <mesh>, got {found}"
            )
        shape = shapes[0]
        tag = f"{where} <{shape.tag}>"
        placement = _origin(el.find("origin"), where)
        material = el.find("material")
        rgba = None if material is None or role != "visual" else self._material(material, where)
        if shape.tag == "box":
            return Geometry("box", link, placement, tuple(map(float, vector(shape, "size", 3, tag))), rgba=rgba)
        if shape.tag == "cylinder":
            size = (number(shape, "radius", tag), number(shape, "length", tag))
            return Geometry("cylinder", link, placement, size, rgba=rgba)
        if shape.tag == "sphere":
            return Geometry("sphere", link, placement, (number(shape, "radius", tag),), rgba=rgba)
        scale = tuple(map(float, vector(shape, "scale", 3, tag, "1 1 1")))
        filename = self.resolve_mesh(required(shape, "filename", tag))
        return Geometry("mesh", link, placement, filename=filename, scale=scale, rgba=rgba)

    def _material(self, el: ET.Element, where: str) -> tuple[float, float, float, float] | None:
        """Colour of a <material>: its own <color rgba>, else the one registered under its name,
        else None (a warning, unless it has a <texture>)."""
        name = el.get("name", "")
        color = el.find("color")
        if color is not None:
            rgba = tuple(map(float, vector(color, "rgba", 4, f"{where} <material {name!r}> <color>")))
            if name:
                self.materials[name] = rgba
            return rgba
        if name in self.materials:
            return self.materials[name]
        if el.find("texture") is None:  # urdfdom, hence Pinocchio, loads it uncoloured too
            warnings.warn(f"{where}: material {name!r} has no <color> and is not defined at robot level; "
                          "drawn in the viewer's default colour", stacklevel=6)
        return None


def _locked_motion(kind: str, axis: np.ndarray, value: float, name: str) -> np.ndarray:
    """(4, 4) motion of a 1-DoF joint of ``kind`` about or along the unit ``axis`` at ``value``."""
    if kind not in ("revolute", "continuous", "prismatic"):
        raise ValueError(f"locked_joints: joint {name!r} is {kind}; only revolute, continuous and prismatic "
                         "joints can be locked")
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise ValueError(f"joint {name!r}: axis must be a non-zero 3-vector, got {axis}")
    a = value * axis / norm
    if kind == "prismatic":
        return transform(p=a)
    return transform(np.reshape(quaternion_rotation(*exp3_quaternion(*a)), (3, 3)))  # exp([value·a]×)


def _origin(el: ET.Element | None, where: str) -> np.ndarray:
    """Homogeneous transform (4, 4) of an <origin xyz rpy> element (identity if absent)."""
    if el is None:
        return np.eye(4)
    xyz = vector(el, "xyz", 3, f"{where} <origin>", "0 0 0")
    rpy = vector(el, "rpy", 3, f"{where} <origin>", "0 0 0")
    return transform(rpy_matrix(*rpy), xyz)


def _inertia(el: ET.Element | None, where: str) -> np.ndarray:
    """Symmetric (3, 3) rotational inertia of an <inertia ixx ixy ixz iyy iyz izz> element."""
    if el is None:
        raise ValueError(f"{where}: <inertial> needs an <inertia ixx=... izz=...> element")
    tag = f"{where} <inertia>"
    ixx, ixy, ixz, iyy, iyz, izz = (number(el, a, tag) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
