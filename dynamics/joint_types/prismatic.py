"""Prismatic joint: translation by q along the unit axis of the joint frame. The tangent
space is ℝ, ⊕ is addition."""
from __future__ import annotations

from .._compile import allocation_free
from ..groups import line_difference, line_integrate

NAMES = ("prismatic",)
NQ, NV = 1, 1
UNIT = (-1, 0)
NEUTRAL = (0.0,)
GROUP_ROWS = ()
BOUND = 1.0  # random_configuration: half-width of the range where a limit is infinite
integrate, difference = line_integrate, line_difference  # ⊕ and ⊖: addition on ℝ


@allocation_free(inline="always")
def motion(args):
    """X_J(q) = (identity, q · axis); args = (axis, i, q, k)."""
    axis, i, q, k = args
    return 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, q[k] * axis[i, 0], q[k] * axis[i, 1], q[k] * axis[i, 2]


@allocation_free(inline="always")
def subspace(args):
    """S = [0; axis] (angular, linear); args = (axis, i, c)."""
    axis, i, c = args
    return 0.0, 0.0, 0.0, axis[i, 0], axis[i, 1], axis[i, 2]
