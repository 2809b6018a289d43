"""Kinematic-tree robot model: plain data, built once, read by every algorithm.

A :class:`Model` is a tree of joints in depth-first order — revolute, continuous and
prismatic (1 DoF), spherical (3), planar (3) and free-flyer (6) — with the links of
fixed joints merged into their moving parent body and kept as named frames. It is built
by :class:`ModelBuilder` (used by the URDF loader and the built-in models) and never
changed afterwards, as Pinocchio's Model: its arrays are read-only and its gravity is
chosen when it is built (``gravity=``); :meth:`Model.with_gravity` returns a copy under
another gravity. What changes from call to call lives in a workspace beside the model
(:mod:`dynamics.workspace`, Pinocchio's Data), never in it.

Body ``i`` is the rigid body moved by joint ``i`` (Featherstone's numbering: joint i
connects body i to its parent ``λ(i)``; ``parent[i] < i``; ``-1`` is the world).
Joint i owns the configuration entries ``q[IDX_Q : IDX_Q + NQ]`` and the velocity
entries ``v[IDX_V : IDX_V + NV]`` (Pinocchio's ``idx_q``, ``idx_v``, ``nq``, ``nv``);
see :mod:`dynamics.joints` for each type's configuration, velocity and Lie-group
operations (Pinocchio's conventions).

Conventions of the compiled kernels (shared by every algorithm module), which take the
model as one record, the named tuple ``model.arrays`` = :class:`ModelRecord`
``(topology, joint_placement, axis, inertia, gravity, armature)`` (read by field name), every
array read-only:

* ``topology`` int64 (n, 7): columns ``PARENT``, ``JTYPE`` (a joint type code of
  :mod:`dynamics.joints`), ``SUBTREE_END`` (bodies ``i .. SUBTREE_END-1`` form ν(i)),
  ``IDX_Q``, ``IDX_V``, ``NQ``, ``NV``.
* ``joint_placement`` float (n, 4, 4): homogeneous transform of joint frame i in the
  frame of body λ(i) at the neutral configuration (URDF ``<origin>``, fixed joints
  folded in).
* ``axis`` float (n, 3): unit joint axis in joint frame i (1-DoF joints).
* ``inertia`` float (n, 13): mass, centre of mass (3, body frame) and rotational
  inertia about the centre of mass (3×3 row-major, body axes).
* ``gravity`` float (3,): gravity acceleration in the world frame.
* ``armature`` float (nv,): the rotor inertia reflected to each velocity entry, I_r n² for a
  rotor of inertia I_r behind a gear of ratio n (kg·m², kg on a prismatic joint), added to
  the joint-space inertia matrix's diagonal — in RNEA (τ += armature ⊙ q̈), CRBA, ABA and
  M⁻¹ (in the articulated inertia's D_i = S_iᵀ I_i^A S_i + diag(armature_i)) and the
  kinetic energy, as Pinocchio's ``model.armature``. Zero unless given
  (:meth:`Model.with_armature`; an SRDF's rotor parameters: :attr:`dynamics.SRDF.armature`).

Velocity-indexed kernel arrays (motion subspaces, derivative matrices) have one row or
column per velocity entry ("DoF column"); body-indexed ones one per body.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from .joint_types import REGISTRY

PARENT, JTYPE, SUBTREE_END, IDX_Q, IDX_V, NQ, NV = range(7)
MASS, COM, ICOM = 0, slice(1, 4), slice(4, 13)

# joint type codes (column JTYPE: the place in the registry), their names and their (nq, nv)
JOINT_TYPE_NAMES = tuple(t.NAMES[0] for t in REGISTRY)
JOINT_SIZES = tuple((t.NQ, t.NV) for t in REGISTRY)
JOINT_TYPES = {name: code for code, t in enumerate(REGISTRY) for name in t.NAMES}
REVOLUTE, PRISMATIC, SPHERICAL, FREE_FLYER, PLANAR = (JOINT_TYPES[n] for n in
                                                      ("revolute", "prismatic", "spherical", "free-flyer", "planar"))


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


ModelRecord = namedtuple("ModelRecord", ["topology", "joint_placement", "axis", "inertia", "gravity", "armature"])
"""The compiled model record every kernel takes (see the module docstring): a named tuple,
so numba reads its fields by name at no cost."""

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
"""Gravity acceleration (m/s², world frame) of a model built without ``gravity=``."""


def as_gravity(g) -> np.ndarray:
    """``g`` as a read-only float64 array of 3 finite numbers, else ValueError naming ``gravity``."""
    try:
        out = np.array(g, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"gravity: expected 3 finite numbers, got {g!r}") from None
    if out.shape != (3,) or not np.all(np.isfinite(out)):
        raise ValueError(f"gravity: expected 3 finite numbers, got {g!r}")
    out.setflags(write=False)
    return out


ARRAY_FIELDS = ("topology", "joint_placement", "axis", "inertia", "lower_limit", "upper_limit", "velocity_limit",
                "effort_limit", "damping", "friction", "armature")
"""The array fields of a :class:`Model` (read-only)."""
PER_VELOCITY = ("damping", "friction", "armature")
"""The array fields of a :class:`Model` with one entry per velocity entry (nv,)."""


@dataclass(frozen=True, eq=False)
class Model:
    """Immutable kinematic tree; see the module docstring for the array layout.

    Its arrays are read-only copies of those it is built from, and ``gravity`` (3,) is
    fixed at construction (default :data:`DEFAULT_GRAVITY`); :meth:`with_gravity` gives a
    copy under another gravity.
    """

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
    source: str | None = None
    gravity: np.ndarray = field(default=DEFAULT_GRAVITY)
    damping: np.ndarray | None = None  # (nv,) viscous, N·m·s/rad (N·s/m prismatic); None: zeros
    friction: np.ndarray | None = None  # (nv,) Coulomb, N·m (N prismatic); None: zeros
    armature: np.ndarray | None = None  # (nv,) reflected rotor inertia, kg·m² (kg prismatic); None: zeros

    def __post_init__(self) -> None:
        object.__setattr__(self, "gravity", as_gravity(self.gravity))
        for name in ARRAY_FIELDS:  # topology first: damping, friction and armature default to zeros (nv,)
            value = getattr(self, name)
            array = np.zeros(self.nv) if value is None else np.array(value)  # a copy: the caller's stays writable
            if name in PER_VELOCITY and array.shape != (self.nv,):
                raise ValueError(f"{name}: expected shape ({self.nv},), one per velocity entry, got {array.shape}")
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    def __setstate__(self, state: dict) -> None:
        """Unpickled: its arrays read-only again (numpy's pickles drop the flag). They are
        the arrays the unpickled records of the model (:attr:`arrays`, held by a problem)
        hold too, so the kernels see the types they were compiled for, not a second
        specialisation for writable ones."""
        self.__dict__.update(state)
        for name in ARRAY_FIELDS + ("gravity",):
            state[name].setflags(write=False)

    def with_gravity(self, gravity) -> Model:
        """A copy of this model under ``gravity`` (3 finite numbers, m/s² in the world
        frame); this model is unchanged. ValueError naming ``gravity`` otherwise."""
        return replace(self, gravity=as_gravity(gravity))

    def with_frame(self, name: str, parent: str, placement=(0.0, 0.0, 0.0)) -> Model:
        """A copy of this model with one more frame ``name`` fixed at ``placement`` in the
        existing frame ``parent``: a (4, 4) homogeneous transform, or a position (3,) with
        the parent's axes (Pinocchio's ``model.addFrame``): a tool centre point, a sole below
        an ankle, for costs, contacts and the viewer. This model is unchanged. ValueError
        naming ``name`` (already a frame), ``parent`` (not one) or ``placement``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name: expected a frame name (a non-empty string), got {name!r}")
        if name in self.frame_names:
            raise ValueError(f"name: model '{self.name}' already has a frame {name!r}")
        if parent not in self.frame_names:
            raise ValueError(f"parent: model '{self.name}' has no frame {parent!r}; known frames: "
                             f"{', '.join(self.frame_names)}")
        base, T = self.frame(parent), _placement(placement)
        return replace(self, frames=self.frames + (Frame(name, base.body, base.placement @ T),))

    def with_armature(self, armature) -> Model:
        """A copy of this model whose joints carry the reflected rotor inertias ``armature``
        (nv,) (I_r n², kg·m²; kg on a prismatic joint; ≥ 0 and zero on a free-flyer's
        entries, which no rotor drives): Pinocchio's ``model.armature``, what an SRDF's
        rotor parameters give (:attr:`dynamics.SRDF.armature`). This model is unchanged.
        ValueError naming ``armature`` otherwise."""
        try:
            value = np.array(armature, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"armature: expected {self.nv} finite numbers ≥ 0, got {armature!r}") from None
        if value.shape != (self.nv,) or not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"armature: expected {self.nv} finite numbers ≥ 0 (one per velocity entry), got "
                             f"{armature!r}")
        free = [c for i in range(self.njoints) if self.topology[i, JTYPE] == FREE_FLYER
                for c in range(self.topology[i, IDX_V], self.topology[i, IDX_V] + 6)]
        if np.any(value[free]):
            raise ValueError("armature: expected zeros on a free-flyer's velocity entries (no rotor drives them), got "
                             f"{value[free]}")
        return replace(self, armature=value)

    @property
    def njoints(self) -> int:
        """Number of moving joints (= bodies)."""
        return len(self.joint_names)

    @cached_property
    def nq(self) -> int:
        """Number of configuration variables (7 per free-flyer, 4 per spherical or planar joint)."""
        return int(self.topology[:, NQ].sum())

    @cached_property
    def nv(self) -> int:
        """Number of velocity variables, the dimension of the configuration's tangent space."""
        return int(self.topology[:, NV].sum())

    idx_qs = property(lambda self: self.topology[:, IDX_Q].copy(),
                      doc="First index in q of every joint, in ``joint_names`` order (Pinocchio's ``idx_qs``).")
    idx_vs = property(lambda self: self.topology[:, IDX_V].copy(),
                      doc="First index in v of every joint (Pinocchio's ``idx_vs``).")
    nqs = property(lambda self: self.topology[:, NQ].copy(), doc="Configuration size of every joint (``nqs``).")
    nvs = property(lambda self: self.topology[:, NV].copy(), doc="Velocity size of every joint (``nvs``).")

    @property
    def joint_types(self) -> tuple[str, ...]:
        """Type name of every joint (``"revolute"``, ``"prismatic"``, ``"spherical"``,
        ``"free-flyer"``, ``"planar"``; continuous joints are revolute)."""
        return tuple(JOINT_TYPE_NAMES[t] for t in self.topology[:, JTYPE])

    @cached_property
    def arrays(self) -> ModelRecord:
        """The compiled model record every kernel takes, a :class:`ModelRecord`
        ``(topology, joint_placement, axis, inertia, gravity, armature)`` (see the module
        docstring; built once, its arrays read-only)."""
        return ModelRecord(self.topology, self.joint_placement, self.axis, self.inertia, self.gravity, self.armature)

    @property
    def parent(self) -> np.ndarray:
        """Parent body index λ(i) of every body, −1 for the fixed base."""
        return self.topology[:, PARENT]

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
        """Index of joint ``name`` in ``joint_names`` (its entries in q and v start at
        ``idx_qs[index]`` and ``idx_vs[index]``)."""
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


ROUNDING_LENGTH = 1e-3
"""m, the length below which a robot file's inertias are rounding: an eigenvalue of a link's
rotational inertia within 10⁻⁹ of its mass × this length² of zero, or of the triangle
inequality, is taken as zero (:func:`spatial_inertia_is_valid`). A point mass written with an
off-diagonal entry of 1e-20 (iCub's ankles) is a point mass."""


def spatial_inertia_is_valid(mass: float, inertia: np.ndarray, strict: bool = True) -> tuple[str, str]:
    """(error, warning) about a mass and rotational inertia about the CoM; empty if none.

    A negative or non-finite mass, a non-symmetric or an indefinite inertia are errors: the
    joint-space inertia matrix of a model with one need not be positive definite. Eigenvalues
    that violate the triangle inequality λ₁ + λ₂ ≥ λ₃ (no mass distribution has them, as
    CAD exports and rounded robot files often write them) are an error if ``strict``, else a
    warning: the inertia is still positive semi-definite, so the algorithms are unaffected
    (Pinocchio loads them; MuJoCo and Drake refuse them). Both tests allow rounding:
    10⁻⁹ of the largest eigenvalue or of mass × :data:`ROUNDING_LENGTH`².
    """
    if not np.isfinite(mass) or mass < 0:
        return f"mass must be finite and ≥ 0, got {mass}", ""
    if not np.all(np.isfinite(inertia)) or not np.allclose(inertia, inertia.T, atol=1e-12):
        return "inertia must be a finite symmetric 3×3 matrix", ""
    eig = np.linalg.eigvalsh(inertia)
    scale = max(1e-12, abs(eig[-1]), mass * ROUNDING_LENGTH ** 2)
    if eig[0] < -1e-9 * scale:
        return f"inertia must be positive semi-definite, eigenvalues {eig}", ""
    excess = eig[2] - eig[0] - eig[1]
    if excess <= 1e-9 * scale:
        return "", ""
    why = (f"inertia violates the triangle inequality λ1 + λ2 ≥ λ3 by {excess / eig[2]:.1e} of λ3, "
           f"eigenvalues {eig}")
    return (why, "") if strict else ("", why)


def is_rigid_transform(T: np.ndarray) -> bool:
    """Whether every (4, 4) of ``T`` (4, 4) or (K, 4, 4) is a homogeneous rigid transform: its
    rotation block orthonormal (to 1e-6) with determinant > 0, its last row (0, 0, 0, 1)."""
    R = T[..., :3, :3]
    return bool(np.all(np.isfinite(T)) and np.allclose(T[..., 3, :], [0.0, 0.0, 0.0, 1.0], atol=1e-9)
                and np.allclose(np.matmul(np.swapaxes(R, -1, -2), R), np.eye(3), atol=1e-6)
                and np.all(np.linalg.det(R) > 0))


def _placement(placement) -> np.ndarray:
    """``placement`` — a (4, 4) rigid transform or a position (3,) — as a (4, 4) transform;
    ValueError naming ``placement`` otherwise."""
    try:
        T = np.array(placement, dtype=np.float64)
    except (TypeError, ValueError):
        T = np.full(1, np.nan)
    if T.shape == (3,) and np.all(np.isfinite(T)):
        return transform(p=T)
    if T.shape != (4, 4) or not is_rigid_transform(T):
        raise ValueError(f"placement: expected a position (3,) or a rigid transform (4, 4), got {placement!r}")
    return T


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
