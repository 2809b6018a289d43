"""Cost terms of an optimal-control problem: the public home of the classes of
:mod:`optdyn.ocp.costs`, the residuals and activations they may be built from
(:mod:`optdyn.ocp.residuals`, :mod:`optdyn.ocp.activations`) and the residual costs of
:mod:`optdyn.ocp.residual_costs` (``from optdyn.costs import FramePlacementCost``)."""
from .ocp.activations import Activation, LogBarrier, PseudoHuber, QuadraticBarrier, WeightedQuadratic
from .ocp.costs import ControlCost, Cost, FramePositionCost, ObstacleCost, PointSet, StateCost, Sum
from .ocp.residual_costs import (CoMPositionCost, FrameOrientationCost, FramePlacementCost, FrameVelocityCost,
                                 ResidualCost)
from .ocp.residuals import (CoMPositionResidual, ControlResidual, FrameOrientationResidual, FramePlacementResidual,
                            FramePositionResidual, FrameVelocityResidual, JointPositionResidual,
                            JointVelocityResidual, Residual, StateResidual)
from .ocp.user_residual import UserResidual

__all__ = ["Cost", "Sum", "StateCost", "ControlCost", "FramePositionCost", "ObstacleCost", "PointSet",
           "ResidualCost", "FramePlacementCost", "FrameOrientationCost", "FrameVelocityCost", "CoMPositionCost",
           "Residual", "StateResidual", "JointPositionResidual", "JointVelocityResidual", "ControlResidual",
           "FramePositionResidual", "FrameOrientationResidual", "FramePlacementResidual", "FrameVelocityResidual",
           "CoMPositionResidual", "UserResidual",
           "Activation", "WeightedQuadratic", "QuadraticBarrier", "PseudoHuber", "LogBarrier"]
