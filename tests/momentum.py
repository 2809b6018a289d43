"""The spatial momentum of a floating-base robot, shared by the physics tests."""
from __future__ import annotations

import numpy as np

import dynamics as dyn


def world_momentum(model: dyn.Model, x: np.ndarray, base: str, about=(0.0, 0.0, 0.0)) -> np.ndarray:
    """[linear; angular about the point ``about``] (6,) in world axes of the whole robot at
    x = [q; v], its free-flyer's body being the frame ``base``: the base rows of the joint-space
    inertia matrix give the momentum about the base origin in base axes (the free-flyer's
    motion subspace is the identity there), then moved to the world."""
    q, v = x[:model.nq], x[model.nq:]
    h = dyn.crba(model, q)[:6] @ v
    R, p = dyn.frame_placement(model, q, base)
    f, n = R @ h[:3], R @ h[3:]
    return np.concatenate([f, n + np.cross(p - np.asarray(about), f)])
