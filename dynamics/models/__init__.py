"""Built-in robot models; every function returns a fresh :class:`~dynamics.model.Model`.

* :func:`ur5` — the Universal Robots UR5 arm, loaded from the shipped ``ur5.urdf``.
* :func:`space_manipulator` — the UR5 on a free-floating 300 kg satellite
  (``space_manipulator.urdf``), free-flyer root, zero gravity.
* :func:`serial_chain` and :func:`binary_tree` — seeded random kinematic trees of
  revolute and prismatic joints (benchmark families, valid up to at least 60 bodies).
* :func:`pendulum` and :func:`double_pendulum` — planar point-mass pendulums whose
  equations of motion have textbook closed forms.

Each takes ``gravity=`` (3,), the model's gravity acceleration in the world frame (m/s²),
by default (0, 0, −9.81) — (0, 0, 0) for the space manipulator.
"""
from __future__ import annotations

from importlib import resources

import numpy as np

from ..builder import ModelBuilder
from ..model import DEFAULT_GRAVITY, Geometry, Model, rpy_matrix, transform
from ..urdf import load_urdf

__all__ = ["ur5", "space_manipulator", "serial_chain", "binary_tree", "pendulum", "double_pendulum"]


def ur5(*, gravity=DEFAULT_GRAVITY) -> Model:
    """UR5 with the published parameters of Universal Robots' ur_description.

    Joints ``shoulder_pan_joint … wrist_3_joint``; frames ``world, base_link, base,
    shoulder_link, upper_arm_link, forearm_link, wrist_1_link, wrist_2_link,
    wrist_3_link, ee_link, tool0``. The base sits at the world origin, z up. Visual and
    collision shapes are primitive cylinders (see the header of ``ur5.urdf``).
    """
    with resources.as_file(resources.files(__name__).joinpath("ur5.urdf")) as path:
        return load_urdf(path, gravity=gravity)


def space_manipulator(*, gravity=(0.0, 0.0, 0.0)) -> Model:
    """The UR5 arm on a 1 m cubic satellite of 300 kg, free-floating in zero gravity.

    Loaded from the shipped ``space_manipulator.urdf`` with a free-flyer root joint
    ``root_joint`` (q = (x, y, z, qx, qy, qz, qw) of the satellite, then the six arm
    angles; v = the satellite's local (linear, angular) velocity, then the arm rates),
    and zero gravity unless ``gravity`` says otherwise. Frames as :func:`ur5` plus ``satellite``.
    """
    with resources.as_file(resources.files(__name__).joinpath("space_manipulator.urdf")) as path:
        return load_urdf(path, root_joint="free-flyer", gravity=gravity)


def serial_chain(n: int, seed: int = 0, *, gravity=DEFAULT_GRAVITY) -> Model:
    """Random chain of ``n`` joints: body i hangs from body i − 1.

    Joints ``joint1 … joint{n}`` (80 % revolute, 20 % prismatic) with random unit axes,
    origins 0.1–0.5 m long in random directions with random orientations, masses
    0.5–3 kg and physical inertias; the same ``seed`` gives the same model.
    """
    _check_size(n)
    return _random_tree(f"serial_chain_{n}_seed{seed}", [i - 1 for i in range(n)], seed, gravity)


def binary_tree(n: int, seed: int = 0, *, gravity=DEFAULT_GRAVITY) -> Model:
    """Random binary tree of ``n`` joints, random parameters as :func:`serial_chain`.

    In breadth-first numbering, body b (joint ``joint{b+1}``) hangs from body (b − 1) // 2
    (body 0 from the fixed base). The model numbers the bodies depth-first, so
    ``joint_names`` lists the joints in depth-first order, not by name.
    """
    _check_size(n)
    return _random_tree(f"binary_tree_{n}_seed{seed}", [(b - 1) // 2 for b in range(n)], seed, gravity)


def pendulum(m: float = 1.0, l: float = 1.0, *, gravity=DEFAULT_GRAVITY) -> Model:
    """Planar pendulum: point mass ``m`` (kg) on a massless rod of length ``l`` (m).

    Conventions as :func:`double_pendulum`: joint ``joint1`` about +y, q = 0 hanging
    straight down along −z, gravity (0, 0, −9.81) in the x–z plane.
    """
    return _planar_pendulum("pendulum", [m], [l], gravity)


def double_pendulum(m1: float = 1.0, m2: float = 1.0, l1: float = 1.0, l2: float = 1.0, *,
                    gravity=DEFAULT_GRAVITY) -> Model:
    """Planar double pendulum of point masses at the tips of massless rods.

    Both joints (``joint1``, ``joint2``) turn about +y and the pendulum swings in the
    x–z plane, where gravity (0, 0, −9.81) acts. q = 0 hangs straight down along −z;
    q1 is the angle of rod 1 from the downward vertical and q2 the angle of rod 2
    relative to rod 1, positive q moving the tips towards −x. The masses carry no
    rotational inertia, so the textbook equations of motion hold exactly:

        M = [[(m1 + m2) l1² + m2 l2² + 2 m2 l1 l2 cos q2,  m2 l2² + m2 l1 l2 cos q2],
             [m2 l2² + m2 l1 l2 cos q2,                     m2 l2²]]
        g(q) = g0 [(m1 + m2) l1 sin q1 + m2 l2 sin(q1 + q2),  m2 l2 sin(q1 + q2)].

    Frames: ``base``, ``link1``, ``link2`` (joint frames) and ``tip`` (mass m2).
    """
    return _planar_pendulum("double_pendulum", [m1, m2], [l1, l2], gravity)


def _check_size(n) -> None:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n: expected a positive integer number of joints, got {n!r}")


def _random_tree(name: str, parents: list[int], seed: int, gravity) -> Model:
    """Model whose body b hangs from body ``parents[b]`` (−1 = base), random parameters."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(name)
    b.add_link("base")
    for i, parent in enumerate(parents):
        mass, com, inertia = _random_inertia(rng)
        b.add_link(f"link{i + 1}", mass, inertia, transform(p=com))
        revolute = rng.uniform() < 0.8
        axis = rng.normal(size=3)
        direction = rng.normal(size=3)
        offset = rng.uniform(0.1, 0.5) * direction / np.linalg.norm(direction)
        origin = transform(rpy_matrix(*rng.uniform(-np.pi, np.pi, 3)), offset)
        bound = np.pi if revolute else 0.5
        b.add_joint(
            f"joint{i + 1}", "revolute" if revolute else "prismatic",
            "base" if parent < 0 else f"link{parent + 1}", f"link{i + 1}",
            origin, axis, lower=-bound, upper=bound, velocity=10.0, effort=100.0,
        )
    return b.build(gravity=gravity)


def _random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass 0.5–3 kg, CoM within 0.15 m, inertia I = tr(Σ)·1 − Σ from a random PSD Σ.

    Σ = m (B Bᵀ + 0.002·1) is the second moment of the mass distribution about the CoM
    (B 3×3 with entries ~0.1 m), which makes I positive definite and satisfy the
    triangle inequality by construction.
    """
    mass = rng.uniform(0.5, 3.0)
    com = rng.uniform(-0.15, 0.15, 3)
    B = 0.1 * rng.normal(size=(3, 3))
    sigma = mass * (B @ B.T + 0.002 * np.eye(3))
    return mass, com, np.trace(sigma) * np.eye(3) - sigma


def _planar_pendulum(name: str, masses: list[float], lengths: list[float], gravity) -> Model:
    """Chain of massless rods along −z turning about +y, point mass at each rod's tip."""
    for what, values in (("m", masses), ("l", lengths)):
        for k, x in enumerate(values):
            if not (isinstance(x, (int, float, np.number)) and np.isfinite(x) and x > 0):
                label = what if len(values) == 1 else f"{what}{k + 1}"
                raise ValueError(f"{label}: expected a positive finite number, got {x!r}")
    rod, bob = (0.3, 0.3, 0.8, 1.0), (0.85, 0.3, 0.1, 1.0)
    b = ModelBuilder(name)
    b.add_link("base", visuals=[Geometry("sphere", "base", np.eye(4), (0.03,), rgba=rod)])
    parent, origin = "base", np.eye(4)
    for k, (m, l) in enumerate(zip(masses, lengths), start=1):
        tip = transform(p=(0.0, 0.0, -l))
        link = f"link{k}"
        shapes = [Geometry("cylinder", link, transform(p=(0.0, 0.0, -l / 2)), (0.01, l), rgba=rod),
                  Geometry("sphere", link, tip, (0.05,), rgba=bob)]
        b.add_link(link, m, np.zeros((3, 3)), tip, visuals=shapes)
        b.add_joint(f"joint{k}", "continuous", parent, link, origin, (0.0, 1.0, 0.0))
        parent, origin = link, tip
    b.add_link("tip")
    b.add_joint("tip_joint", "fixed", parent, "tip", origin)
    return b.build(gravity=gravity)
