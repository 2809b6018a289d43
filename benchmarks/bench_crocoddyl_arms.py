"""Crocoddyl 3.2's BoxFDDP on the arms of bench_convergence.py, in its own environment.

    .venv/bin/python benchmarks/bench_convergence.py --export            # the tasks → benchmarks/arm_tasks.json
    ../shared/tools/crocoddyl-env .crocoddyl-venv                          # once (Crocoddyl 3.2, Pinocchio 3.9)
    OMP_NUM_THREADS=1 .crocoddyl-venv/bin/python benchmarks/bench_crocoddyl_arms.py

Crocoddyl is no dependency of optdyn and this script imports neither optdyn nor numba: it reads
each task (URDF, locked joints, tool frame, x0, target placement, effort limits, horizon and
weights) from ``benchmarks/arm_tasks.json`` and builds it with Pinocchio
(``buildModelFromUrdf``, ``buildReducedModel`` for the locked joints; the joint order is checked
against ours; an unbounded joint's angle θ becomes Pinocchio's (cos θ, sin θ)). Costs: ResidualModelState (½·w‖x ⊖ x0‖²), ResidualModelControl (about g(q0)),
ResidualModelFramePlacement (log₆(T*⁻¹ M)) and, at the end, the placement and the velocities
under an ActivationModelWeightedQuad — the weights of :mod:`problems.arm_pose`; the running cost
discretised as ours, dt·ℓ(x_k, u_k), with one RK4 step per interval (``ExactCostRK4`` of
bench_crocoddyl.py); the torque box at the effort limits. Guess: u = g(q0) at every knot and its
rollout, as optdyn's. BoxFDDP: solve(xs, us, 500, is_feasible=False, init_reg=1e-9), th_stop
1e-10, every other setting Crocoddyl's; iterations counted by a callback, wall time the best
of 3 runs. Writes ``benchmarks/crocoddyl_arms.json``, which bench_convergence.py sets beside ours.
"""
from __future__ import annotations

import json
import os
import time

import crocoddyl
import example_robot_data
import numpy as np
import pinocchio
from _common import ROOT, machine
from bench_crocoddyl import Count, ExactCostRK4

TASKS, OUT = ROOT / "benchmarks" / "arm_tasks.json", ROOT / "benchmarks" / "crocoddyl_arms.json"
TH_STOP, MAX_ITER, REPEATS = 1e-10, 500, 3


def robot(task: dict) -> pinocchio.Model:
    """The task's robot with its locked joints fixed at 0, in our joint order (checked)."""
    robots = example_robot_data.getModelPath(task["urdf"])
    model = pinocchio.buildModelFromUrdf(os.path.join(robots, task["urdf"]))
    if task["locked"]:
        ids = [model.getJointId(name) for name in task["locked"]]
        model = pinocchio.buildReducedModel(model, ids, pinocchio.neutral(model))
    names = list(model.names[1:])
    if names != task["joints"]:
        raise ValueError(f"{task['robot']}: joint order {names} differs from optdyn's {task['joints']}")
    return model


def pinocchio_state(model: pinocchio.Model, x: np.ndarray) -> np.ndarray:
    """Our state x = [θ; v] of revolute joints as Pinocchio's: an unbounded (continuous) joint
    has q = (cos θ, sin θ) there."""
    q, v = [], x[model.nv:]
    for joint, theta in zip(model.joints[1:], x[:model.nv]):
        q += [np.cos(theta), np.sin(theta)] if joint.nq == 2 else [theta]
    return np.concatenate([q, v])


def shooting_problem(task: dict, model: pinocchio.Model) -> tuple[crocoddyl.ShootingProblem, np.ndarray]:
    """The task as Crocoddyl's shooting problem, and the gravity torques g(q0) of the guess."""
    state, nu, w = crocoddyl.StateMultibody(model), model.nv, task["weights"]
    x0 = pinocchio_state(model, np.array(task["x0"]))
    g0 = pinocchio.computeGeneralizedGravity(model, model.createData(), x0[:model.nq])
    target = np.array(task["target"])
    pose = crocoddyl.ResidualModelFramePlacement(state, model.getFrameId(task["tool"], pinocchio.FrameType.BODY),
                                                 pinocchio.SE3(target[:3, :3], target[:3, 3]), nu)

    def differential(terms):
        costs = crocoddyl.CostModelSum(state, nu)
        for name, cost, weight in terms:
            costs.addCost(name, cost, weight)
        return crocoddyl.DifferentialActionModelFreeFwdDynamics(state, crocoddyl.ActuationModelFull(state), costs)

    def residual(r, activation=None):
        return crocoddyl.CostModelResidual(state, r) if activation is None else \
            crocoddyl.CostModelResidual(state, activation, r)

    at_rest = crocoddyl.ActivationModelWeightedQuad(np.r_[np.zeros(model.nv), np.full(model.nv, w["terminal_velocity"])])
    running = differential([("state", residual(crocoddyl.ResidualModelState(state, x0, nu)), w["state"]),
                            ("control", residual(crocoddyl.ResidualModelControl(state, g0)), w["control"]),
                            ("pose", residual(pose), w["pose"])])
    step = ExactCostRK4(running, task["dt"])
    effort = np.array(task["effort"])
    step.u_lb, step.u_ub = -effort, effort
    terminal = crocoddyl.IntegratedActionModelRK(
        differential([("pose", residual(pose), w["terminal_pose"]),
                      ("rest", residual(crocoddyl.ResidualModelState(state, x0, nu), at_rest), 1.0)]),
        crocoddyl.RKType.four, 0.0)
    return crocoddyl.ShootingProblem(x0, [step] * task["N"], terminal), g0


def main() -> None:
    tasks = json.loads(TASKS.read_text())["tasks"]
    out = {"crocoddyl": crocoddyl.__version__, "pinocchio": pinocchio.__version__, "machine": machine(),
           "load_average_1min": os.getloadavg()[0], "results": []}
    for task in tasks:
        problem, g0 = shooting_problem(task, robot(task))
        us0 = [g0.copy() for _ in range(task["N"])]
        xs0 = problem.rollout(us0)
        wall = float("inf")
        for _ in range(REPEATS):  # the iterates do not change from run to run; the wall time does
            solver = crocoddyl.SolverBoxFDDP(problem)
            solver.th_stop = TH_STOP
            count = Count()
            solver.setCallbacks([count])
            t0 = time.perf_counter()
            converged = solver.solve(xs0, us0, MAX_ITER, False, 1e-9)
            wall = min(wall, time.perf_counter() - t0)
        res = {"robot": task["robot"], "seed": task["seed"], "converged": bool(converged),
               "iterations": count.iterations, "cost": float(solver.cost), "gaps": float(solver.ffeas),
               "wall_s": wall}
        out["results"].append(res)
        print(res, flush=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
