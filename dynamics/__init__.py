"""dynamics — rigid-body dynamics of kinematic trees and their analytical derivatives.

Public API ::

    import dynamics as dyn
    model = dyn.load_urdf("robot.urdf")      # or dyn.models.ur5(); joints in Pinocchio's order
    q0 = dyn.load_srdf(model, "robot.srdf").reference_configurations["standing"]   # SRDF postures
    tau  = dyn.rnea(model, q, v, a)          # inverse dynamics
    qdd  = dyn.aba(model, q, v, tau)         # forward dynamics
    M    = dyn.crba(model, q)                # joint-space inertia matrix
    Minv = dyn.minv(model, q)                # its analytical inverse (Carpentier)
    model = dyn.load_urdf(path, root_joint="free-flyer", package_dirs=[...])   # floating base
    q1 = dyn.integrate(model, q, dv);  dv = dyn.difference(model, q0, q1)      # Lie-group ops
    Hqq, Hvv, Hqv, Hqtau = dyn.aba_second_derivatives_contracted(model, q, v, tau, mu)  # Σ_i μ_i ∂²q̈_i
    f_ext = dyn.frame_force(model, q, "tool0", [0, 0, 20, 0, 0, 0])          # wrench at a frame → f_ext
    tau  = dyn.rnea(model, q, v, a, f_ext)                                   # ... acting on the robot
    feet = [dyn.Contact("FL_FOOT"), dyn.Contact("FR_FOOT")]                  # rigid contacts (Pinocchio's conventions)
    qdd, lam = dyn.contact_dynamics(model, q, v, tau, feet)                  # M q̈ + b = τ + Jᵀλ, J q̈ + γ = 0
    v_plus, impulse = dyn.impulse_dynamics(model, q, v, feet, restitution=0.0)   # the velocity jump at touchdown
    Hqq, Hvv, Hqv, Hqtau = dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, feet, w)  # of w·[q̈; λ]
    dyn.set_num_threads(2)                   # threads of the batched kernels (or OPTDYN_NUM_THREADS)
"""
from . import _cache  # noqa: F401 — first: registers the kernel cache locators before any kernel is defined
from .aba import aba
from .aba_derivatives import aba_derivatives
from .aba_second_derivatives import aba_second_derivatives
from .aba_second_derivatives_contracted import aba_second_derivatives_contracted
from .builder import ModelBuilder
from .contact import Contact
from .contact_dynamics import contact_dynamics
from .contact_dynamics_derivatives import contact_dynamics_derivatives
from .contact_dynamics_second_derivatives import contact_dynamics_second_derivatives
from .contact_dynamics_second_derivatives_contracted import contact_dynamics_second_derivatives_contracted
from .impulse_dynamics import impulse_dynamics
from .impulse_dynamics_derivatives import impulse_dynamics_derivatives
from .impulse_dynamics_second_derivatives import impulse_dynamics_second_derivatives
from .impulse_dynamics_second_derivatives_contracted import impulse_dynamics_second_derivatives_contracted
from .crba import crba
from .energy import kinetic_energy, potential_energy
from .forces import frame_force
from .joints import (difference, difference_jacobians, integrate, integrate_jacobians, neutral, normalize,
                     random_configuration)
from .kinematics import frame_jacobian, frame_placement
from .kinematics_derivatives import point_hessian, point_jacobian, point_position
from . import batch
from .minv import minv
from .model import Frame, Geometry, Model
from .parallel import get_num_threads, set_num_threads
from .rnea import gravity_torques, nonlinear_effects, rnea
from .rnea_derivatives import rnea_derivatives
from .rnea_second_derivatives import rnea_second_derivatives
from .rnea_second_derivatives_contracted import rnea_second_derivatives_contracted
from .srdf import SRDF, load_srdf
from .urdf import load_urdf
from . import models

__all__ = [
    "Model", "ModelBuilder", "Frame", "Geometry", "load_urdf", "load_srdf", "SRDF", "models",
    "integrate", "difference", "integrate_jacobians", "difference_jacobians", "neutral", "normalize",
    "random_configuration",
    "rnea", "aba", "crba", "minv", "nonlinear_effects", "gravity_torques",
    "kinetic_energy", "potential_energy", "frame_placement", "frame_jacobian",
    "rnea_derivatives", "aba_derivatives", "rnea_second_derivatives", "aba_second_derivatives",
    "rnea_second_derivatives_contracted", "aba_second_derivatives_contracted",
    "point_position", "point_jacobian", "point_hessian", "batch", "frame_force",
    "set_num_threads", "get_num_threads", "Contact", "contact_dynamics",
    "contact_dynamics_derivatives", "impulse_dynamics", "impulse_dynamics_derivatives",
    "contact_dynamics_second_derivatives_contracted", "impulse_dynamics_second_derivatives_contracted",
    "contact_dynamics_second_derivatives", "impulse_dynamics_second_derivatives",
]
