"""example-robot-data's URDFs as the tests that sweep them all see them: where they are, which
our loader refuses or warns about, and why (test_joint_order against Pinocchio,
test_mujoco_plant against MuJoCo)."""
from __future__ import annotations

import glob
import os
import warnings

import pytest

erd = pytest.importorskip("example_robot_data")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ROBOTS = erd.getModelPath("solo_description/robots/solo12.urdf")
SHARE = os.path.dirname(os.path.dirname(ROBOTS))
FILES = sorted(os.path.relpath(f, ROBOTS) for f in glob.glob(os.path.join(ROBOTS, "**", "*.urdf"), recursive=True))

NOT_PINOCCHIO = {"falcon_description/urdf/falcon.urdf", "ur_description/urdf/ur3.urdf"}
"""URDFs Pinocchio's parser (urdfdom) refuses: a joint naming an undefined link, a robot without name."""

REFUSED = {"romeo_description/urdf/romeo_laas_small.urdf": "LHipPitch_link.*positive semi-definite"}
"""URDFs our loader refuses (Pinocchio loads them): an indefinite inertia (−0.0027 kg·m² among
moments of 0.04–0.054), which can make the joint-space inertia matrix indefinite."""

WARNED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "LeftPsyonicAbilityBaseLink.*triangle inequality",
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "link_3.0.*triangle inequality",
    "allegro_hand_description/urdf/allegro_right_hand.urdf": "link_3.0.*triangle inequality",
    "pr2_description/urdf/pr2.urdf": "sensor_mount_link.*triangle inequality",
    "romeo_description/urdf/romeo_small.urdf": "RShoulderYawLink.*triangle inequality.*strict_inertia=True",
    "talos_data/robots/talos_reduced_corrected.urdf": "material 'FlatBlack' has no <color>",
}
"""URDFs that load with a warning naming why, as Pinocchio loads them: inertias no mass
distribution has (on a body of its own, the Romeo's shoulder, MuJoCo and Drake refuse them, and
so does ``strict_inertia=True``; the others are links fused into bodies that are physical as a
whole), a material never defined. They are in test_joint_order's CASES too, as are iCub (a point mass written with a 1e-20
off the diagonal) and ANYmal C on a free-flyer (its cameras' inertias, not physical, ride on a
base that is)."""
