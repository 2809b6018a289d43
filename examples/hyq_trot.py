"""HyQ (example-robot-data) trots two cycles forward from its SRDF's standing posture.

The robot is loaded on a free-flyer with its joints in Pinocchio's order, so the ``standing``
configuration of its SRDF is a q vector of the model as it is (Pinocchio's, Crocoddyl's and
example-robot-data's q too); ``problems.quadruped.make`` takes the robot, its four feet (left
front, right front, left hind, right hind) and that posture, and derives the base height,
the feet's positions and the weights from them. Prints the solver's outcome and how far each
foot went.

    .venv/bin/python examples/hyq_trot.py
"""
import os

import example_robot_data as erd
import numpy as np

import dynamics as dyn
import optdyn
import problems

URDF, SRDF = "hyq_description/robots/hyq_no_sensors.urdf", "hyq_description/srdf/hyq.srdf"
FEET = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")

robots = erd.getModelPath(URDF)
model = dyn.load_urdf(os.path.join(robots, URDF), root_joint="free-flyer",
                      package_dirs=os.path.dirname(os.path.dirname(robots)))
standing = dyn.load_srdf(model, os.path.join(robots, SRDF)).reference_configurations["standing"]
prob = problems.quadruped.make("trot", model=model, feet=FEET, standing=standing)
res = optdyn.solve(prob, "ipopt")  # or "ddp", "ilqr"

print(f"{prob.name} ipopt: {res.status}, cost {res.cost:.6g}, {res.iterations} iterations")
for foot in FEET:
    start, end = (dyn.frame_placement(model, x[:model.nq], foot)[1] for x in (res.xs[0], res.xs[-1]))
    print(f"{foot} moved {np.array2string(end - start, precision=4, suppress_small=True)} m")
