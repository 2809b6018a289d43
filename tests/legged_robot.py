"""A small floating-base legged robot for the contact tests, built in code (no URDF)."""
from __future__ import annotations

import numpy as np

import dynamics as dyn
from dynamics.builder import ModelBuilder
from dynamics.model import transform


def legged(legs: int = 4) -> dyn.Model:
    """A floating base on ``legs`` legs (hip about the radial axis, knee about the tangential
    one), each ending in a massless frame ``foot{i}``."""
    b = ModelBuilder("legged")
    b.add_link("base", 3.0, np.diag([0.02, 0.02, 0.03]))
    for i in range(legs):
        a = 2 * np.pi * (i + 0.5) / legs
        c, s = np.cos(a), np.sin(a)
        Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        b.add_link(f"thigh{i}", 0.3, 1e-3 * np.eye(3), transform(p=[0.0, 0.0, -0.08]))
        b.add_link(f"shin{i}", 0.2, 5e-4 * np.eye(3), transform(p=[0.0, 0.0, -0.08]))
        b.add_link(f"foot{i}", 0.0)
        b.add_joint(f"hip{i}", "revolute", "base", f"thigh{i}", transform(Rz, [0.15 * c, 0.15 * s, 0.0]),
                    (1.0, 0.0, 0.0))
        b.add_joint(f"knee{i}", "revolute", f"thigh{i}", f"shin{i}", transform(p=[0.0, 0.0, -0.16]),
                    (0.0, 1.0, 0.0))
        b.add_joint(f"ankle{i}", "fixed", f"shin{i}", f"foot{i}", transform(p=[0.0, 0.0, -0.16]))
    return b.build(root_joint="free-flyer")


# standing on the four feet: the base at the origin, the knees bent
Q_STAND = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.4, -0.8, 0.3, -0.6, 0.5, -0.9, 0.2, -0.7]
