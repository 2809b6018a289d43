"""Revolute joint: rotation by the angle q about the unit axis of the joint frame.

Continuous (unbounded) joints are the same type: one angle, where Pinocchio's
JointModelRevoluteUnbounded stores (cos, sin). The tangent space is ℝ, ⊕ is addition.
"""
from __future__ import annotations

import numpy as np

from .._compile import allocation_free
from ..groups import line_difference, line_integrate

NAMES = ("revolute", "continuous")
NQ, NV = 1, 1
UNIT = (-1, 0)
NEUTRAL = (0.0,)
GROUP_ROWS = ()
BOUND = np.pi  # random_configuration: half-width of the range where a limit is infinite
integrate, difference = line_integrate, line_difference  # ⊕ and ⊖: addition on ℝ


@allocation_free(inline="always")
def motion(args):
    """X_J(q) (rotation entries row by row, translation) by Rodrigues' formula about the
    unit axis; args = (axis, i, q, k)."""
    axis, i, q, k = args
    x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
    s, co = np.sin(q[k]), np.cos(q[k])
    c1 = 1.0 - co
    return (co + x * x * c1, x * y * c1 - z * s, x * z * c1 + y * s,
            y * x * c1 + z * s, co + y * y * c1, y * z * c1 - x * s,
            z * x * c1 - y * s, z * y * c1 + x * s, co + z * z * c1, 0.0, 0.0, 0.0)


@allocation_free(inline="always")
def subspace(args):
    """S = [axis; 0] (angular, linear); args = (axis, i, c)."""
    axis, i, c = args
    return axis[i, 0], axis[i, 1], axis[i, 2], 0.0, 0.0, 0.0
