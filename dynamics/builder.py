"""Build a :class:`~dynamics.model.Model` from links and joints, URDF style.

The builder takes links (mass, inertial frame, shapes) and joints (type, parent and
child link, origin, axis, limits) in any order, then ``build()``:

1. finds the single root link and checks the graph is a tree (no loops, no link with
   two parents, no joint naming an unknown link);
2. walks it depth-first from the root, children in declaration order, numbering the
   moving joints; links attached by fixed joints are merged into the moving body that
   carries them (mass, centre of mass and inertia combined by the parallel-axis
   theorem) and kept as named frames;
3. packs the arrays the compiled algorithms read (see :mod:`dynamics.model`).

Links fixed to the root (the base) carry no dynamics: the base does not move.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import (
    JOINT_TYPES, PARENT, JTYPE, SUBTREE_END, Frame, Geometry, Model,
    spatial_inertia_is_valid,
)


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
        why = spatial_inertia_is_valid(float(mass), inertia)
        if why:
            raise ValueError(f"link {name!r}: {why}")
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
    ) -> None:
        """Add a joint of ``kind`` revolute, continuous, prismatic or fixed."""
        if kind in ("floating", "planar"):
            raise ValueError(
                f"joint {name!r}: type {kind!r} is not supported yet (multi-DoF joints); "
                "supported: revolute, continuous, prismatic, fixed"
            )
        if kind not in JOINT_TYPES and kind != "fixed":
            raise ValueError(
                f"joint {name!r}: unknown type {kind!r}; expected revolute, continuous, prismatic or fixed"
            )
        if any(j.name == name for j in self._joints):
            raise ValueError(f"joint: duplicate joint name {name!r}")
        axis = np.array(axis, dtype=float)
        norm = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
        if kind != "fixed" and (not np.isfinite(norm) or norm < 1e-12):
            raise ValueError(f"joint {name!r}: axis must be a non-zero 3-vector, got {axis}")
        if kind == "continuous":
            lower, upper = -np.inf, np.inf
        if np.isnan([lower, upper, velocity, effort]).any():
            raise ValueError(f"joint {name!r}: limits must be numbers, got NaN")
        if lower > upper:
            raise ValueError(f"joint {name!r}: limit lower={lower} > upper={upper}")
        origin = np.eye(4) if origin is None else np.array(origin, dtype=float)
        if origin.shape != (4, 4) or not np.all(np.isfinite(origin)):
            raise ValueError(f"joint {name!r}: origin must be a finite 4×4 transform")
        axis = axis / norm if kind != "fixed" else axis
        self._joints.append(_Joint(name, kind, parent, child, origin, axis, (lower, upper, velocity, effort)))

    def build(self) -> Model:
        """Check the tree, number the joints depth-first and pack the model."""
        children = self._check_tree()
        root = next(n for n in self._links if n not in {j.child for j in self._joints})
        tree = _Packer(self._links)
        tree.add_root(root)
        stack = [(root, j) for j in reversed(children.get(root, []))]
        while stack:
            _, joint = stack.pop()
            tree.add_joint(joint)
            stack.extend((joint.child, j) for j in reversed(children.get(joint.child, [])))
        return tree.model(self.name)

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

    def __init__(self, links: dict[str, _Link]) -> None:
        self.links = links
        self.link_body: dict[str, tuple[int, np.ndarray]] = {}
        self.joints: list[_Joint] = []
        self.parent: list[int] = []
        self.placement: list[np.ndarray] = []
        self.parts: list[list[tuple[float, np.ndarray, np.ndarray]]] = []
        self.frames: list[Frame] = []
        self.visuals: list[Geometry] = []
        self.collisions: list[Geometry] = []

    def add_root(self, name: str) -> None:
        self._attach(name, -1, np.eye(4))

    def add_joint(self, j: _Joint) -> None:
        body, T_parent = self.link_body[j.parent]
        T = T_parent @ j.origin
        if j.kind == "fixed":
            self._attach(j.child, body, T)
            return
        self.joints.append(j)
        self.parent.append(body)
        self.placement.append(T)
        self.parts.append([])
        self._attach(j.child, len(self.joints) - 1, np.eye(4))

    def _attach(self, name: str, body: int, T: np.ndarray) -> None:
        link = self.links[name]
        self.link_body[name] = (body, T)
        self.frames.append(Frame(name, body, T))
        self.visuals += link.visuals
        self.collisions += link.collisions
        if body >= 0 and link.mass > 0:
            Ti = T @ link.inertial
            R = Ti[:3, :3]
            self.parts[body].append((link.mass, Ti[:3, 3].copy(), R @ link.inertia @ R.T))

    def model(self, name: str) -> Model:
        n = len(self.joints)
        topology = np.zeros((n, 3), dtype=np.int64)
        topology[:, PARENT] = self.parent
        for i, j in enumerate(self.joints):
            topology[i, JTYPE] = JOINT_TYPES[j.kind]
        for i in range(n - 1, -1, -1):
            topology[i, SUBTREE_END] = max([i + 1] + [topology[k, SUBTREE_END] for k in range(i + 1, n) if self.parent[k] == i])
        inertia = np.array([_combine(p) for p in self.parts]).reshape(n, 13)
        limits = np.array([j.limits for j in self.joints], dtype=float).reshape(n, 4)
        return Model(
            name=name,
            joint_names=tuple(j.name for j in self.joints),
            body_names=tuple(j.child for j in self.joints),
            topology=topology,
            joint_placement=np.array(self.placement, dtype=float).reshape(n, 4, 4),
            axis=np.array([j.axis for j in self.joints], dtype=float).reshape(n, 3),
            inertia=inertia,
            lower_limit=limits[:, 0].copy(),
            upper_limit=limits[:, 1].copy(),
            velocity_limit=limits[:, 2].copy(),
            effort_limit=limits[:, 3].copy(),
            frames=tuple(self.frames),
            visuals=tuple(self.visuals),
            collisions=tuple(self.collisions),
        )


def _combine(parts: list[tuple[float, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Mass, CoM and inertia about the CoM of rigidly joined parts (parallel axes)."""
    out = np.zeros(13)
    m = sum(p[0] for p in parts)
    if m == 0.0:
        return out
    c = sum(p[0] * p[1] for p in parts) / m
    Ic = np.zeros((3, 3))
    for mk, ck, Ik in parts:
        d = ck - c
        Ic += Ik + mk * (d @ d * np.eye(3) - np.outer(d, d))
    out[0], out[1:4], out[4:13] = m, c, Ic.ravel()
    return out
