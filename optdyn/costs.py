"""Cost terms of an optimal-control problem: the public home of the classes of
:mod:`optdyn.ocp.costs` (``from optdyn.costs import StateCost``)."""
from .ocp.costs import ControlCost, Cost, FramePositionCost, ObstacleCost, PointSet, StateCost, Sum

__all__ = ["Cost", "Sum", "StateCost", "ControlCost", "FramePositionCost", "ObstacleCost", "PointSet"]
