"""Constraints of an optimal-control problem: the public home of the classes of
:mod:`optdyn.ocp.constraints` (``from optdyn.constraints import JointLimits``)."""
from .ocp.constraints import (Constraint, FramePositionEquality, JointLimits, OrientationBound, ResidualConstraint,
                              ResidualEquality, SphereClearance, StateEquality)

__all__ = ["Constraint", "SphereClearance", "StateEquality", "FramePositionEquality", "OrientationBound",
           "ResidualConstraint", "ResidualEquality", "JointLimits"]
