"""Constraints of an optimal-control problem: the public home of the classes of
:mod:`optdyn.ocp.constraints` (``from optdyn.constraints import SphereClearance``)."""
from .ocp.constraints import Constraint, FramePositionEquality, OrientationBound, SphereClearance, StateEquality

__all__ = ["Constraint", "SphereClearance", "StateEquality", "FramePositionEquality", "OrientationBound"]
