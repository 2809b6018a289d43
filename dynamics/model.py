"""Kinematic-tree robot model: plain data, built once, read by every algorithm.

A :class:`Model` is a fixed-base tree of single-DoF joints (revolute, continuous,
prismatic) in depth-first order, with the links of fixed joints merged into their
moving parent body and kept as named frames. It is built by :class:`ModelBuilder`
(used by the URDF loader and the built-in models) and never changed afterwards,
except for ``gravity`` which may be set.

Body ``i`` is the rigid body moved by joint ``i`` (Featherstone's numbering: joint i
connects body i to its parent ``λ(i)``; ``parent[i] < i``; ``-1`` is the fixed base).

Conventions of the compiled kernels (shared by every algorithm module):

* ``topology`` int64 (n, 3): columns ``PARENT``, ``JTYPE`` (``REVOLUTE`` or
  ``PRISMATIC``) and ``SUBTREE_END`` (bodies ``i .. SUBTREE_END-1`` form ν(i)).
* ``joint_placement`` float (n, 4, 4): homogeneous transform of joint frame i in the
  frame of body λ(i) at q_i = 0 (URDF ``<origin>``, fixed joints folded in).
* ``axis`` float (n, 3): unit joint axis in joint frame i.
* ``inertia`` float (n, 13): mass, centre of mass (3, body frame) and rotational
  inertia about the centre of mass (3×3 row-major, body axes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

PARENT, JTYPE, SUBTREE_END = 0, 1, 2
REVOLUTE, PRISMATIC = 0, 1
MASS, COM, ICOM = 0, slice(1, 4), slice(4, 13)

JOINT_TYPES = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}


@dataclass(frozen=True)
class Geometry:
    """A visual or collision shape attached to a frame.

    ``kind`` is ``"box"`` (``size`` = 3 edge lengths), ``"cylinder"`` (``size`` =
    (radius, length), axis along z), ``"sphere"`` (``size`` = (radius,)) or
    ``"mesh"`` (``filename`` and ``scale`` (3,)). ``placement`` (4, 4) is the shape's
    pose in the frame named ``frame``; ``rgba`` its colour if the URDF gave one.
    """

    kind: str
    frame: str
    placement: np.ndarray
    size: tuple[float, ...] = ()
    filename: str = ""
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    rgba: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class Frame:
    """A named frame fixed on body ``body`` (``-1`` = the fixed base/world).

    ``placement`` (4, 4) is its pose in the body frame.
    """

    name: str
    body: int
    placement: np.ndarray


@dataclass(eq=False)
class Model:
    """Immutable kinematic tree; see the module docstring for the array layout."""

    name: str
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    topology: np.ndarray
    joint_placement: np.ndarray
    axis: np.ndarray
    inertia: np.ndarray
    lower_limit: np.ndarray
    upper_limit: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    frames: tuple[Frame, ...]
    visuals: tuple[Geometry, ...] = ()
    collisions: tuple[Geometry, ...] = ()
    _gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))

    @property
    def nq(self) -> int:
        """Number of configuration variables (= nv: all joints are 1-DoF)."""
        return len(self.joint_names)

    @property
    def nv(self) -> int:
        """Number of velocity variables."""
        return len(self.joint_names)

    @property
    def parent(self) -> np.ndarray:
        """Parent body index λ(i) of every body, −1 for the fixed base."""
        return self.topology[:, PARENT]

    @property
    def gravity(self) -> np.ndarray:
        """Gravity acceleration (3,) in the world frame, m/s²."""
        return self._gravity

    @gravity.setter
    def gravity(self, g) -> None:
        g = np.array(g, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected 3 finite numbers, got {g!r}")
        self._gravity = g

    @property
    def frame_names(self) -> tuple[str, ...]:
        """Names of every frame (links, fixed links, joints' child links)."""
        return tuple(f.name for f in self.frames)

    def frame(self, name: str) -> Frame:
        """The frame called ``name``; ValueError listing the known names otherwise."""
        for f in self.frames:
            if f.name == name:
                return f
        raise ValueError(f"frame: unknown frame {name!r}; known frames: {', '.join(self.frame_names)}")

    def joint_index(self, name: str) -> int:
        """Index of joint ``name`` in q and v."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise ValueError(
                f"joint: unknown joint {name!r}; known joints: {', '.join(self.joint_names)}"
            ) from None

    def support(self, i: int) -> list[int]:
        """Bodies on the path from the root to body ``i`` (κ(i)), root first."""
        path = []
        while i >= 0:
            path.append(i)
            i = int(self.topology[i, PARENT])
        return path[::-1]

    def __repr__(self) -> str:
        return f"Model({self.name!r}, nv={self.nv}, joints={list(self.joint_names)})"


def spatial_inertia_is_valid(mass: float, inertia: np.ndarray) -> str:
    """Empty string if (mass, rotational inertia about the CoM) is physical, else why not."""
    if not np.isfinite(mass) or mass < 0:
        return f"mass must be finite and ≥ 0, got {mass}"
    if not np.all(np.isfinite(inertia)) or not np.allclose(inertia, inertia.T, atol=1e-12):
        return "inertia must be a finite symmetric 3×3 matrix"
    eig = np.linalg.eigvalsh(inertia)
    if eig[0] < -1e-12 * max(1.0, eig[-1]):
        return f"inertia must be positive semi-definite, eigenvalues {eig}"
    if eig[0] + eig[1] < eig[2] - 1e-9 * max(1.0, eig[-1]):
        return f"inertia violates the triangle inequality, eigenvalues {eig}"
    return ""


def transform(R: np.ndarray | None = None, p=None) -> np.ndarray:
    """Homogeneous transform (4, 4) from rotation R (3, 3) and translation p (3,)."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    """URDF roll-pitch-yaw rotation: R = Rz(y) · Ry(p) · Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])
