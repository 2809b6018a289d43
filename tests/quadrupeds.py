"""example-robot-data's quadrupeds other than Solo-12, loaded as a user loads them (URDF and
SRDF), for the tests that trot them."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import dynamics as dyn

erd = pytest.importorskip("example_robot_data")

ROBOTS = {"hyq": ("hyq_description/robots/hyq_no_sensors.urdf", "hyq_description/srdf/hyq.srdf",
                  ("lf_foot", "rf_foot", "lh_foot", "rh_foot")),
          "anymal": ("anymal_b_simple_description/robots/anymal.urdf", "anymal_b_simple_description/srdf/anymal.srdf",
                     ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")),
          "go1": ("go1_description/urdf/go1.urdf", "go1_description/srdf/go1.srdf",
                  ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
          "anymal-c": ("anymal_c_simple_description/urdf/anymal.urdf", "anymal_c_simple_description/srdf/anymal.srdf",
                       ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")),
          **{stem: (f"{stem}_description/urdf/{stem}.urdf", f"{stem}_description/srdf/{stem}.srdf",
                    ("FL_foot", "FR_foot", "RL_foot", "RR_foot")) for stem in ("go2", "a1")},
          "b1-z1": ("b1_description/urdf/b1-z1.urdf", "b1_description/srdf/b1-z1.srdf",
                    ("FL_foot", "FR_foot", "RL_foot", "RR_foot")),
          "anymal-kinova": ("anymal_b_simple_description/robots/anymal-kinova.urdf",
                            "anymal_b_simple_description/srdf/anymal-kinova.srdf",
                            ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"))}
"""(URDF, SRDF, feet lf, rf, lh, rh) of example-robot-data's quadrupeds other than Solo-12
(ANYmal C's base carries 24 links whose own inertias are not physical: a warning), and two
legged manipulators, Unitree's B1 with a Z1 arm and ANYmal B with a Kinova arm, whose arm
joints are actuated with the legs' and which stand in their SRDF's "standing_with_arm_up"."""

POSTURES = {"b1-z1": "standing_with_arm_up", "anymal-kinova": "standing_with_arm_up"}
"""The SRDF posture a robot stands in where it is not "standing"."""

SOLO8 = ("solo_description/robots/solo.urdf", "solo_description/srdf/solo.srdf",
         ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
"""Solo-8: Solo-12 without its abduction joints, so that its four point feet are dependent
contacts; its SRDF, which it shares with Solo-12, names the HAA joints it does not have."""


def robot(name: str) -> tuple[dyn.Model, tuple[str, ...], np.ndarray]:
    """(the model on a free-flyer, its feet, its SRDF's standing configuration), as a user loads
    them (Solo-8: ``"solo8"``, its SRDF's unknown joints skipped)."""
    urdf, srdf, feet = SOLO8 if name == "solo8" else ROBOTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes, dummy inertias
        robots = erd.getModelPath(urdf)
        model = dyn.load_urdf(os.path.join(robots, urdf), root_joint="free-flyer")
    srdf = dyn.load_srdf(model, os.path.join(robots, srdf), unknown="ignore" if name == "solo8" else "raise")
    return model, feet, srdf.reference_configurations[POSTURES.get(name, "standing")]
