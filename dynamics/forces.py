"""External forces at frames: a world-aligned wrench at a named frame as ``f_ext``.

``f_ext`` (njoints, 6) holds one spatial force [f; n] per joint, expressed in joint i's
frame about its origin (Pinocchio's ``fext``). A wrench [F; M] given in world axes with
the moment M about the frame origin o becomes, on the frame's body (joint frame R, p),

    f = Rᵀ F,    n = Rᵀ (M + (o − p) × F),

so that R f = F and R n + p × R f = M + o × F (both sides: the moment about the world origin).
"""
from __future__ import annotations

import numpy as np

from ._checks import as_vector, check_frame
from .kinematics import _frame_pose
from .model import Model


def frame_force(model: Model, q, frame: str, wrench) -> np.ndarray:
    """``f_ext`` (njoints, 6) of the world-aligned ``wrench`` [force; moment about the frame
    origin] (6,) applied at frame ``frame`` at configuration ``q``: nonzero only on the
    row of the frame's body. Sum several for several frames.

    The result is a force fixed in the body frame (what ``f_ext`` means): evaluated at a
    different q, the same array is a different world wrench.
    """
    q = as_vector(q, model.nq, "q")  # finite values and unit quaternions: checked by the kinematics
    fr = check_frame(model, frame)
    if fr.body < 0:
        raise ValueError(f"frame: {frame!r} is fixed on the base (world); no joint carries a force applied there")
    try:
        w = np.asarray(wrench, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"wrench: expected 6 real numbers [force; moment], got {wrench!r}") from None
    if w.shape != (6,):
        raise ValueError(f"wrench: expected shape (6,) [force; moment], got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("wrench: expected finite values, got NaN or inf")
    R, p, _ = _frame_pose(model.arrays, q, fr.body, np.eye(4))
    o = p + R @ fr.placement[:3, 3]
    f_ext = np.zeros((model.njoints, 6))
    f_ext[fr.body, :3] = R.T @ w[:3]
    f_ext[fr.body, 3:] = R.T @ (w[3:] + np.cross(o - p, w[:3]))
    return f_ext
