"""Build a :class:`~dynamics.model.Model` from links and joints, URDF style.

The builder takes links (mass, inertial frame, shapes) and joints (type, parent and
child link, origin, axis, limits) in any order, then ``build()``:

1. finds the single root link and checks the graph is a tree (no loops, no link with
   two parents, no joint naming an unknown link);
2. walks it depth-first from the root, numbering the moving joints in Pinocchio's order:
   at every link its child joints, fixed ones included, are visited by name in ascending
   byte order (Pinocchio's URDF parser recurses over urdfdom's child links, which urdfdom
   fills from its joints sorted by name), whatever order the description declares them
   in — so q, v and τ move between the two libraries unchanged. Links attached by fixed
   joints are merged into the moving body that carries them (mass, centre of mass and
   inertia combined by the parallel-axis theorem) and kept as named frames;
3. packs the arrays the compiled algorithms read (see :mod:`dynamics.model`).

Links fixed to the root (the base) carry no dynamics when the base does not move, and
their inertias are not checked. With ``root_joint`` the root link is attached to the
world by a free-flyer, planar or spherical joint named ``"root_joint"`` (as Pinocchio's
``buildModelFromUrdf(path, JointModelFreeFlyer())``) and becomes the first moving body.

Inertias of moving bodies are checked (see
:func:`dynamics.model.spatial_inertia_is_valid`): a negative mass or an indefinite inertia
is a ValueError; a triangle-inequality violation, which no mass distribution has but the
algorithms do not mind, loads with a warning as in Pinocchio, or is an error with
``strict_inertia`` as in MuJoCo and Drake. What the dynamics see is a body's inertia, its
links' combined: a link whose own inertia is not physical, in a body that is as a whole, loads
with a warning (the dummy inertias of root links, ANYmal's and HyQ's; ANYmal C's cameras on its
base).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .model import (
    DEFAULT_GRAVITY, IDX_Q, IDX_V, JOINT_SIZES, JOINT_TYPES, JTYPE, NQ, NV, PARENT, PLANAR, SUBTREE_END, Frame,
    Geometry, Model, as_gravity, spatial_inertia_is_valid,
)

ROOT_JOINTS = {"free-flyer": "floating", "planar": "planar", "spherical": "spherical"}


@dataclass
class _Link:
    name: str
    mass: float
    inertial: np.ndarray  # (4,4) inertial frame in link frame
    inertia: np.ndarray  # (3,3) about CoM in inertial frame axes
    visuals: list[Geometry] = field(default_factory=list)
    collisions: list[Geometry] = field(default_factory=list)


@dataclass
class _Joint:
    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    limits: tuple[float, float, float, float]
    dynamics: tuple[float, float] = (0.0, 0.0)


class ModelBuilder:
    """Collects links and joints, then builds a validated :class:`Model`."""

    def __init__(self, name: str = "robot") -> None:
        self.name = name
        self._links: dict[str, _Link] = {}
        self._joints: list[_Joint] = []

    def add_link(
        self,
        name: str,
        mass: float = 0.0,
        inertia=None,
        inertial_origin=None,
        visuals: list[Geometry] | None = None,
        collisions: list[Geometry] | None = None,
    ) -> None:
        """Add a link; ``inertia`` (3, 3) is about the CoM in the ``inertial_origin`` axes."""
        if name in self._links:
            raise ValueError(f"link: duplicate link name {name!r}")
        inertia = np.zeros((3, 3)) if inertia is None else np.array(inertia, dtype=float)
        if inertia.shape != (3, 3):
            raise ValueError(f"link {name!r}: inertia must be 3×3, got shape {inertia.shape}")
        if not np.isfinite(mass) or mass < 0:
            raise ValueError(f"link {name!r}: mass must be finite and ≥ 0, got {mass}")
        origin = np.eye(4) if inertial_origin is None else np.array(inertial_origin, dtype=float)
        if origin.shape != (4, 4) or not np.all(np.isfinite(origin)):
            raise ValueError(f"link {name!r}: inertial_origin must be a finite 4×4 transform")
        self._links[name] = _Link(name, float(mass), origin, inertia, list(visuals or []), list(collisions or []))

    def add_joint(
        self,
        name: str,
        kind: str,
        parent: str,
        child: str,
        origin=None,
        axis=(1.0, 0.0, 0.0),
        lower: float = -np.inf,
        upper: float = np.inf,
        velocity: float = np.inf,
        effort: float = np.inf,
        *,
        damping: float = 0.0,
        friction: float = 0.0,
    ) -> None:
        """Add a joint of ``kind`` revolute, continuous, prismatic, fixed, floating
        (free-flyer), planar (motion in the x–y plane of the joint frame: ``axis`` must be
        z) or spherical. Limits apply to 1-DoF joints; multi-DoF joints are unbounded.
        ``damping`` (viscous) and ``friction`` (Coulomb), ≥ 0 as URDF's ``<dynamics>``, are
        recorded on the model (``Model.damping``, ``Model.friction``, per velocity
        variable, as Pinocchio's) for a simulator (the dynamics here leave them out); 1-DoF
        joints only."""
        if kind not in JOINT_TYPES and kind != "fixed":
            raise ValueError(
                f"joint {name!r}: unknown type {kind!r}; expected revolute, continuous, prismatic, fixed, "
                "floating, planar or spherical"
            )
        if JOINT_TYPES.get(kind) == PLANAR and not np.allclose(np.asarray(axis, float), (0.0, 0.0, 1.0)):
            raise ValueError(f"joint {name!r}: a planar joint moves in the x–y plane of its frame; "
                             f"its axis must be (0, 0, 1), got {axis}")
        if any(j.name == name for j in self._joints):
            raise ValueError(f"joint: duplicate joint name {name!r}")
        axis = np.array(axis, dtype=float)
        norm = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
        if kind != "fixed" and (not np.isfinite(norm) or norm < 1e-12):
            raise ValueError(f"joint {name!r}: axis must be a non-zero 3-vector, got {axis}")
        if kind == "continuous" or JOINT_SIZES[JOINT_TYPES.get(kind, 0)][1] > 1:
            lower, upper, velocity, effort = -np.inf, np.inf, np.inf, np.inf
        if np.isnan([lower, upper, velocity, effort]).any():
            raise ValueError(f"joint {name!r}: limits must be numbers, got NaN")
        if lower > upper:
            raise ValueError(f"joint {name!r}: limit lower={lower} > upper={upper}")
        for value, what in ((damping, "damping"), (friction, "friction")):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"joint {name!r}: {what} must be a finite number ≥ 0, got {value}")
        if JOINT_SIZES[JOINT_TYPES.get(kind, 0)][1] > 1:
            damping = friction = 0.0
        origin = np.eye(4) if origin is None else np.array(origin, dtype=float)
        if origin.shape != (4, 4) or not np.all(np.isfinite(origin)):
            raise ValueError(f"joint {name!r}: origin must be a finite 4×4 transform")
        axis = axis / norm if kind != "fixed" else axis
        self._joints.append(_Joint(name, kind, parent, child, origin, axis, (lower, upper, velocity, effort),
                                   (float(damping), float(friction))))

    def build(self, root_joint: str | None = None, strict_inertia: bool = False, source: str | None = None,
              gravity=DEFAULT_GRAVITY) -> Model:
        """Check the tree, number the joints depth-first in Pinocchio's order (module
        docstring) and pack the model.

        ``root_joint`` (None, "free-flyer", "planar" or "spherical") attaches the root
        link to the world by that joint, named "root_joint"; ``strict_inertia`` makes a
        triangle-inequality violation within tolerance an error instead of a warning;
        ``source`` is recorded as ``model.source``; ``gravity`` (3,) is the model's
        gravity acceleration in the world frame (m/s²), fixed for its lifetime.
        """
        gravity = as_gravity(gravity)
        if root_joint is not None and root_joint not in ROOT_JOINTS:
            raise ValueError(f"root_joint: expected None or one of {sorted(ROOT_JOINTS)}, got {root_joint!r}")
        children = self._check_tree()
        root = next(n for n in self._links if n not in {j.child for j in self._joints})
        tree = _Packer(self._links, strict_inertia)
        if root_joint is None:
            tree.add_root(root)
        else:
            tree.add_joint(_Joint("root_joint", ROOT_JOINTS[root_joint], "", root, np.eye(4), np.array([0.0, 0.0, 1.0]),
                                  (-np.inf, np.inf, np.inf, np.inf)))
        stack = [(root, j) for j in reversed(children.get(root, []))]
        while stack:
            _, joint = stack.pop()
            tree.add_joint(joint)
            stack.extend((joint.child, j) for j in reversed(children.get(joint.child, [])))
        return tree.model(self.name, source, gravity)

    def _check_tree(self) -> dict[str, list[_Joint]]:
        if not self._links:
            raise ValueError("model: no links")
        children: dict[str, list[_Joint]] = {}
        has_parent: dict[str, str] = {}
        for j in self._joints:
            for role, link in (("parent", j.parent), ("child", j.child)):
                if link not in self._links:
                    raise ValueError(f"joint {j.name!r}: {role} link {link!r} is not defined")
            if j.child in has_parent:
                raise ValueError(
                    f"joint {j.name!r}: link {j.child!r} already has parent joint "
                    f"{has_parent[j.child]!r} (kinematic loops are not supported)"
                )
            has_parent[j.child] = j.name
            children.setdefault(j.parent, []).append(j)
        for siblings in children.values():
            siblings.sort(key=lambda j: j.name.encode())  # Pinocchio's order (module docstring)
        roots = [n for n in self._links if n not in has_parent]
        if len(roots) != 1:
            what = "no root link (kinematic loop)" if not roots else f"several root links {roots}"
            raise ValueError(f"model: expected one root link, found {what}")
        reached, todo = {roots[0]}, [roots[0]]
        while todo:
            for j in children.get(todo.pop(), []):
                reached.add(j.child)
                todo.append(j.child)
        if len(reached) != len(self._links):
            loose = sorted(set(self._links) - reached)
            raise ValueError(f"model: links {loose} are not connected to root {roots[0]!r} (kinematic loop)")
        return children


class _Packer:
    """Accumulates bodies in depth-first order and merges fixed links."""

    def __init__(self, links: dict[str, _Link], strict_inertia: bool) -> None:
        self.links = links
        self.strict_inertia = strict_inertia
        self.link_body: dict[str, tuple[int, np.ndarray]] = {}
        self.joints: list[_Joint] = []
        self.parent: list[int] = []
        self.placement: list[np.ndarray] = []
        self.parts: list[list[tuple[float, np.ndarray, np.ndarray]]] = []
        self.part_links: list[list[_Link]] = []
        self.frames: list[Frame] = []
        self.visuals: list[Geometry] = []
        self.collisions: list[Geometry] = []

    def add_root(self, name: str) -> None:
        self._attach(name, -1, np.eye(4))

    def add_joint(self, j: _Joint) -> None:
        body, T_parent = self.link_body[j.parent] if j.parent else (-1, np.eye(4))
        T = T_parent @ j.origin
        if j.kind == "fixed":
            self._attach(j.child, body, T)
            return
        self.joints.append(j)
        self.parent.append(body)
        self.placement.append(T)
        self.parts.append([])
        self.part_links.append([])
        self._attach(j.child, len(self.joints) - 1, np.eye(4))

    def _attach(self, name: str, body: int, T: np.ndarray) -> None:
        link = self.links[name]
        self.link_body[name] = (body, T)
        self.frames.append(Frame(name, body, T))
        self.visuals += link.visuals
        self.collisions += link.collisions
        if body < 0:
            return  # welded to the world: no dynamics, nothing to check
        Ti = T @ link.inertial
        R = Ti[:3, :3]
        self.parts[body].append((link.mass, Ti[:3, 3].copy(), R @ link.inertia @ R.T))
        self.part_links[body].append(link)

    def _check_inertias(self) -> None:
        """Check every moving body and its links (see the module docstring): ValueError
        naming the link if a body's inertia is not physical, else one warning naming every
        link whose own inertia is not (ANYmal C has 24) and why it was loaded."""
        notes = []
        for parts, links in zip(self.parts, self.part_links):
            body = _combine(parts)
            body_error, body_warning = spatial_inertia_is_valid(body[0], body[4:].reshape(3, 3), self.strict_inertia)
            flaws = [(link, spatial_inertia_is_valid(link.mass, link.inertia)[0]) for link in links]
            flaws = [(link, flaw) for link, flaw in flaws if flaw]
            if body_error:
                where = f"link {flaws[0][0].name!r}" if flaws else f"link {links[0].name!r} with the links fixed to it"
                raise ValueError(f"{where}: {flaws[0][1] if flaws else body_error}")
            note = ("loaded as is (strict_inertia=True refuses it)" if body_warning else
                    "its body, with the links fixed to it, is physical as a whole: loaded as is")
            notes += [f"link {link.name!r}: {flaw}; {note}" for link, flaw in flaws]
        if notes:
            head = f"{len(notes)} links' inertias are not physical: " if len(notes) > 1 else ""
            warnings.warn(head + " | ".join(notes), stacklevel=5)

    def model(self, name: str, source: str | None, gravity: np.ndarray) -> Model:
        self._check_inertias()
        n = len(self.joints)
        topology = np.zeros((n, 7), dtype=np.int64)
        topology[:, PARENT] = self.parent
        iq = iv = 0
        for i, j in enumerate(self.joints):
            jt = JOINT_TYPES[j.kind]
            topology[i, [JTYPE, IDX_Q, IDX_V]] = jt, iq, iv
            topology[i, [NQ, NV]] = JOINT_SIZES[jt]
            iq, iv = iq + JOINT_SIZES[jt][0], iv + JOINT_SIZES[jt][1]
        for i in range(n - 1, -1, -1):
            children = [topology[k, SUBTREE_END] for k in range(i + 1, n) if self.parent[k] == i]
            topology[i, SUBTREE_END] = max([i + 1] + children)
        inertia = np.array([_combine(p) for p in self.parts]).reshape(n, 13)
        position = np.array([(j.limits[0], j.limits[1]) for i, j in enumerate(self.joints)
                             for _ in range(topology[i, NQ])], dtype=float).reshape(-1, 2)
        rate = np.array([(j.limits[2], j.limits[3], *j.dynamics) for i, j in enumerate(self.joints)
                         for _ in range(topology[i, NV])], dtype=float).reshape(-1, 4)
        return Model(
            name=name,
            joint_names=tuple(j.name for j in self.joints),
            body_names=tuple(j.child for j in self.joints),
            topology=topology,
            joint_placement=np.array(self.placement, dtype=float).reshape(n, 4, 4),
            axis=np.array([j.axis for j in self.joints], dtype=float).reshape(n, 3),
            inertia=inertia,
            lower_limit=position[:, 0].copy(),
            upper_limit=position[:, 1].copy(),
            velocity_limit=rate[:, 0].copy(),
            effort_limit=rate[:, 1].copy(),
            frames=tuple(self.frames),
            visuals=tuple(self.visuals),
            collisions=tuple(self.collisions),
            source=source,
            gravity=gravity,
            damping=rate[:, 2].copy(),
            friction=rate[:, 3].copy(),
        )


def _combine(parts: list[tuple[float, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Mass, CoM and inertia about the CoM of rigidly joined parts (parallel axes)."""
    out = np.zeros(13)
    m = sum(p[0] for p in parts)
    if m == 0.0:
        return out  # massless: the inertias of massless parts are dropped
    c = sum(p[0] * p[1] for p in parts) / m
    Ic = np.zeros((3, 3))
    for mk, ck, Ik in parts:
        d = ck - c
        Ic += Ik + mk * (d @ d * np.eye(3) - np.outer(d, d))
    out[0], out[1:4], out[4:13] = m, c, Ic.ravel()
    return out
