"""dynamics — rigid-body dynamics of kinematic trees and their analytical derivatives.

Public API (see DESIGN.md)::

    import dynamics as dyn
    model = dyn.load_urdf("robot.urdf")      # or dyn.models.ur5()
    tau  = dyn.rnea(model, q, v, a)          # inverse dynamics
    qdd  = dyn.aba(model, q, v, tau)         # forward dynamics
    M    = dyn.crba(model, q)                # joint-space inertia matrix
    Minv = dyn.minv(model, q)                # its analytical inverse (Carpentier)
"""
from .aba import aba
from .builder import ModelBuilder
from .crba import crba
from .energy import kinetic_energy, potential_energy
from .kinematics import frame_jacobian, frame_placement
from .minv import minv
from .model import Frame, Geometry, Model
from .rnea import gravity_torques, nonlinear_effects, rnea
from .urdf import load_urdf
from . import models

__all__ = [
    "Model", "ModelBuilder", "Frame", "Geometry", "load_urdf", "models",
    "rnea", "aba", "crba", "minv", "nonlinear_effects", "gravity_torques",
    "kinetic_energy", "potential_energy", "frame_placement", "frame_jacobian",
]
