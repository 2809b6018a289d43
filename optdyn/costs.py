"""Cost terms of an optimal-control problem: the public home of the classes of
:mod:`optdyn.ocp.costs`, the residuals and activations they may be built from
(:mod:`optdyn.ocp.residuals`, :mod:`optdyn.ocp.contact_residuals`, :mod:`optdyn.ocp.activations`) and
the residual costs of :mod:`optdyn.ocp.residual_costs` (``from optdyn.costs import FramePlacementCost``)."""
from .ocp.activations import (Activation, LogBarrier, PseudoHuber, QuadraticBarrier, RelaxedLogBarrier, Softplus,
                               WeightedQuadratic)
from .ocp.contact_residuals import (ContactForceResidual, FrictionConeResidual, SmoothFrictionConeResidual,
                                    WrenchConeResidual)
from .ocp.costs import Cost, PointSet, Sum
from .ocp.relative_residuals import (RelativePlacementCost, RelativePlacementResidual, RelativePositionCost,
                                     RelativePositionResidual)
from .ocp.residual_costs import (CoMPositionCost, ControlCost, FrameOrientationCost, FramePlacementCost,
                                 FramePositionCost, FrameVelocityCost, ObstacleCost, ResidualCost, StateCost)
from .ocp.residuals import (CoMPositionResidual, ControlResidual, FrameOrientationResidual, FramePlacementResidual,
                            FramePositionResidual, FrameVelocityResidual, JointPositionResidual,
                            JointVelocityResidual, Residual, SphereClearanceResidual, StateResidual,
                            VectorStateResidual)
from .ocp.user_residual import UserResidual

__all__ = ["Cost", "Sum", "StateCost", "ControlCost", "FramePositionCost", "ObstacleCost", "PointSet",
           "ResidualCost", "FramePlacementCost", "FrameOrientationCost", "FrameVelocityCost", "CoMPositionCost",
           "Residual", "StateResidual", "JointPositionResidual", "JointVelocityResidual", "ControlResidual",
           "FramePositionResidual", "FrameOrientationResidual", "FramePlacementResidual", "FrameVelocityResidual",
           "CoMPositionResidual", "SphereClearanceResidual", "VectorStateResidual", "UserResidual",
           "ContactForceResidual", "FrictionConeResidual", "SmoothFrictionConeResidual", "WrenchConeResidual",
           "RelativePlacementCost", "RelativePositionCost", "RelativePlacementResidual", "RelativePositionResidual",
           "Activation", "WeightedQuadratic", "QuadraticBarrier", "PseudoHuber", "LogBarrier", "Softplus",
           "RelaxedLogBarrier"]
