"""Crocoddyl 3.2 on the Panda reach: an optional anchor, run in its own environment.

    python3 -m venv .crocoddyl-venv && .crocoddyl-venv/bin/pip install "pin==3.9.0" "crocoddyl==3.2.0" \
        "cmeel-urdfdom<5" "cmeel-tinyxml2<11" "example-robot-data==5.0.0"      # once, beside .venv
    OMP_NUM_THREADS=1 .crocoddyl-venv/bin/python benchmarks/bench_crocoddyl.py
    .venv/bin/python benchmarks/check_crocoddyl.py                # our cost and rollout at the same trajectories

Crocoddyl is no dependency of optdyn and this script does not import optdyn. Crocoddyl 3.2's wheels
need Pinocchio 3.x, hence the pins; example-robot-data 5 reads pinocchio.WITH_COLLISION, which
Pinocchio 3.9 lacks, so the model comes from pinocchio.buildModelFromUrdf. The task is
``arm_reach`` of bench_convergence.py: the Panda of example-robot-data (9 joints, the two
fingers prismatic) from panda_description/urdf/panda.urdf, x0 = 0, N = 40, dt = 0.05, one RK4
step per interval, running cost ½·1e-2‖x − x0‖² + ½·1e-3‖u − g(q0)‖² + ½·10‖p − (0.4, 0.2, 0.5)‖²
(ResidualModelState, ResidualModelControl, ResidualModelFrameTranslation; Crocoddyl's quadratic
activation is ½‖r‖², times the weight, as ours), terminal ½·1e4‖p − p*‖², torques within the
effort limits (u_lb, u_ub), for the frames "panda_hand_tcp" (the bench's) and "panda_hand".

Two discretisations of the running cost:
- "exact": ours, dt·ℓ(x_k, u_k). Crocoddyl's IntegratedActionModelRK(RK4) integrates ℓ along its
  four stages instead, so a small Python action model takes x_{k+1} and F_x, F_u from
  IntegratedActionModelRK(RK4) and the cost and its derivatives from IntegratedActionModelEuler
  (dt·ℓ(x, u)). Wall times include its Python calls and a second dynamics derivative per knot.
- "stock": IntegratedActionModelRK(RK4) as a Crocoddyl user writes it (ℓ integrated over the
  RK4 stages: another objective), all in C++.
The terminal model is IntegratedActionModelRK with dt = 0: ℓ_N(x), unscaled.

Guess: u = g(q0) (pinocchio.computeGeneralizedGravity) at every knot and its rollout, as optdyn's
default (us_init = rest_controls(); DDP rolls it out; xs_init, x0 repeated, is that rollout to 7e-8).
Solvers: solve(xs, us, 1000, is_feasible=False, init_reg=1e-9), every other setting Crocoddyl's
default, th_stop 5e-5 (the default) and 1e-10; iterations counted by a callback.
Writes benchmarks/crocoddyl_panda.json (results), benchmarks/crocoddyl_panda.npz (random
trajectories with Crocoddyl's costs and one-interval steps, and the solutions of the exact
variant: not committed), benchmarks/crocoddyl_panda_optima.npz (xs_<frame>, us_<frame> of BoxFDDP at th_stop
1e-10, our objective: warm starts) and the section "crocoddyl" of docs/benchmarks/.
"""
from __future__ import annotations

import itertools
import json
import os
import time

import crocoddyl
import example_robot_data
import numpy as np
import pinocchio
from _common import ROOT, machine, table, write_section

N, DT, TARGET, FRAMES = 40, 0.05, np.array([0.4, 0.2, 0.5]), ("panda_hand_tcp", "panda_hand")
REPEATS = 3
TH_STOPS = (5e-5, 1e-10)  # Crocoddyl 3.2's default threshold on |d₀ + ½d₁|, and a tight one
SOLVERS = {"BoxFDDP": crocoddyl.SolverBoxFDDP, "BoxDDP": crocoddyl.SolverBoxDDP,
           "FDDP (no box)": crocoddyl.SolverFDDP, "DDP (no box)": crocoddyl.SolverDDP}


class ExactCostRK4(crocoddyl.ActionModelAbstract):
    """x_{k+1} by one RK4 step, cost dt·ℓ(x_k, u_k) (optdyn's discretisation)."""

    def __init__(self, diff: crocoddyl.DifferentialActionModelAbstract, dt: float) -> None:
        crocoddyl.ActionModelAbstract.__init__(self, diff.state, diff.nu, diff.nr)
        self.rk = crocoddyl.IntegratedActionModelRK(diff, crocoddyl.RKType.four, dt)
        self.euler = crocoddyl.IntegratedActionModelEuler(diff, dt)

    def calc(self, data, x, u=None):
        self.rk.calc(data.rk, x, u)
        self.euler.calc(data.euler, x, u)
        data.xnext = data.rk.xnext
        data.cost = data.euler.cost

    def calcDiff(self, data, x, u=None):
        self.rk.calcDiff(data.rk, x, u)
        self.euler.calcDiff(data.euler, x, u)
        data.Fx, data.Fu = data.rk.Fx, data.rk.Fu
        e = data.euler
        data.Lx, data.Lu, data.Lxx, data.Lxu, data.Luu = e.Lx, e.Lu, e.Lxx, e.Lxu, e.Luu

    def createData(self):
        return ExactCostRK4Data(self)


class ExactCostRK4Data(crocoddyl.ActionDataAbstract):
    def __init__(self, model: ExactCostRK4) -> None:
        crocoddyl.ActionDataAbstract.__init__(self, model)
        self.rk, self.euler = model.rk.createData(), model.euler.createData()


def panda() -> pinocchio.Model:
    robots = example_robot_data.getModelPath("panda_description/urdf/panda.urdf")
    return pinocchio.buildModelFromUrdf(os.path.join(robots, "panda_description", "urdf", "panda.urdf"))


def panda_reach(model: pinocchio.Model, frame: str, variant: str) -> crocoddyl.ShootingProblem:
    state, nu = crocoddyl.StateMultibody(model), model.nv
    x0 = np.zeros(model.nq + model.nv)
    g0 = pinocchio.computeGeneralizedGravity(model, model.createData(), x0[:model.nq])
    goal = crocoddyl.ResidualModelFrameTranslation(state, model.getFrameId(frame), TARGET, nu)

    def differential(terms):
        costs = crocoddyl.CostModelSum(state, nu)
        for name, residual, weight in terms:
            costs.addCost(name, crocoddyl.CostModelResidual(state, residual), weight)
        return crocoddyl.DifferentialActionModelFreeFwdDynamics(state, crocoddyl.ActuationModelFull(state), costs)

    running = differential([("state", crocoddyl.ResidualModelState(state, x0, nu), 1e-2),
                            ("control", crocoddyl.ResidualModelControl(state, g0), 1e-3),
                            ("goal", goal, 10.0)])
    step = (ExactCostRK4(running, DT) if variant == "exact"
            else crocoddyl.IntegratedActionModelRK(running, crocoddyl.RKType.four, DT))
    step.u_lb, step.u_ub = -model.effortLimit, model.effortLimit
    terminal = crocoddyl.IntegratedActionModelRK(differential([("goal", goal, 1e4)]), crocoddyl.RKType.four, 0.0)
    return crocoddyl.ShootingProblem(x0, [step] * N, terminal)


def total_cost(problem: crocoddyl.ShootingProblem, xs, us) -> float:
    return float(problem.calc(list(xs), list(us)))


def steps(problem: crocoddyl.ShootingProblem, xs, us) -> np.ndarray:
    """x⁺ of one interval from each (x_k, u_k), k < N."""
    problem.calc(list(xs), list(us))
    return np.array([d.xnext for d in problem.runningDatas])


def random_trajectories(model, seed: int = 0, count: int = 3):
    """States and controls of normal entries, three scales (cost checks: not rollouts)."""
    rng, nx = np.random.default_rng(seed), model.nq + model.nv
    xs = [rng.normal(scale=s, size=(N + 1, nx)) for s in (0.1, 0.5, 1.0)[:count]]
    us = [rng.normal(scale=s, size=(N, model.nv)) for s in (1.0, 5.0, 20.0)[:count]]
    return np.array(xs), np.array(us)


class Count(crocoddyl.CallbackAbstract):
    def __init__(self) -> None:
        crocoddyl.CallbackAbstract.__init__(self)
        self.iterations = 0

    def __call__(self, solver) -> None:
        self.iterations += 1


def main() -> None:
    model = panda()
    g0 = pinocchio.computeGeneralizedGravity(model, model.createData(), np.zeros(model.nq))
    out = {"crocoddyl": crocoddyl.__version__, "pinocchio": pinocchio.__version__, "machine": machine(),
           "load_average_1min": os.getloadavg()[0], "results": []}
    arrays = {}
    rx, ru = random_trajectories(model)
    arrays["random_xs"], arrays["random_us"] = rx, ru
    for frame in FRAMES:
        for variant in ("exact", "stock"):
            problem = panda_reach(model, frame, variant)
            arrays[f"random_cost_{variant}_{frame}"] = np.array([total_cost(problem, x, u) for x, u in zip(rx, ru)])
            arrays["random_steps"] = np.array([steps(problem, x, u) for x, u in zip(rx, ru)])  # any frame, variant
            us0 = [g0.copy() for _ in range(N)]
            xs0 = problem.rollout(us0)
            for (name, Solver), th_stop in itertools.product(SOLVERS.items(), TH_STOPS):
                wall = float("inf")
                for _ in range(REPEATS):  # the iterates do not change from run to run; the wall time does
                    solver = Solver(problem)
                    solver.th_stop = th_stop
                    count = Count()
                    solver.setCallbacks([count])
                    t0 = time.perf_counter()
                    converged = solver.solve(xs0, us0, 1000, False, 1e-9)
                    wall = min(wall, time.perf_counter() - t0)
                xs, us = np.array(solver.xs), np.array(solver.us)
                res = {"frame": frame, "variant": variant, "solver": name, "th_stop": th_stop,
                       "converged": bool(converged), "iterations": count.iterations, "iter": int(solver.iter),
                       "cost": float(solver.cost), "stop": float(solver.stop), "d": list(map(float, solver.d)),
                       "gaps": float(solver.ffeas), "wall_s": wall,
                       "u_at_bounds": int(np.sum(np.isclose(np.abs(us), model.effortLimit, rtol=0, atol=1e-9))),
                       "u_beyond_bounds": float(np.max(np.abs(us) - model.effortLimit).clip(0))}
                out["results"].append(res)
                if variant == "exact":
                    arrays[f"xs_{name}_{th_stop:g}_{frame}"], arrays[f"us_{name}_{th_stop:g}_{frame}"] = xs, us
                print(res, flush=True)
    np.savez_compressed(ROOT / "benchmarks" / "crocoddyl_panda.npz", **arrays)  # 0.2 MB, not committed
    np.savez(ROOT / "benchmarks" / "crocoddyl_panda_optima.npz",
             **{f"{v}_{frame}": arrays[f"{v}_BoxFDDP_1e-10_{frame}"] for v in ("xs", "us") for frame in FRAMES})
    (ROOT / "benchmarks" / "crocoddyl_panda.json").write_text(json.dumps(out, indent=1) + "\n")
    write_section("crocoddyl", report(out))


def report(out: dict) -> str:
    runs = {(r["frame"], r["variant"], r["solver"], r["th_stop"]): r for r in out["results"]}
    rows = []
    for frame, variant, solver in itertools.product(FRAMES, ("exact", "stock"), SOLVERS):
        row = [frame, "ours" if variant == "exact" else "RK4 stages", solver]
        for th_stop in TH_STOPS:
            r = runs[frame, variant, solver, th_stop]
            row += [r["iterations"] if r["converged"] else f"{r['iterations']} (not converged)",
                    f"{r['cost']:.7f}", f"{r['wall_s']:.2f}"]
        rows.append(row)
    return (f"## Crocoddyl on the Panda reach (optional anchor)\n\n{out['machine']}; Crocoddyl "
            f"{out['crocoddyl']}, Pinocchio {out['pinocchio']}, in a separate venv "
            f"(pins in the script's docstring), one thread, load average {out['load_average_1min']:.1f} at the start "
            "(other jobs shared the 2 cores: wall times are rough). `benchmarks/bench_crocoddyl.py` "
            "(task, discretisation and guess in its docstring), results with gaps and bound activity in `benchmarks/crocoddyl_panda.json`. "
            "Crocoddyl's stop: `solver.stop` < `th_stop`, where `stop` = |d₀ + ½d₁|, the expected decrease of a full "
            "step (it equals the `solver.d` saved in the JSON in every run); 5e-5 is 3.2's default `th_stop`, "
            "1e-10 a tight run for the cost to 7 digits; at most 1000 iterations, counted by a callback; wall "
            "time the best of 3 runs. "
            "Every start is the rollout of g(q0): no gaps (`solver.ffeas` = 0 at the end of every run). "
            "Running cost \"ours\": dt·ℓ(x_k, u_k), our objective exactly (section \"crocoddyl check\"); "
            "\"RK4 stages\": Crocoddyl's IntegratedActionModelRK(four) integrating ℓ over its RK4 stages, another "
            "objective, whose costs are not comparable with ours. \"no box\": the torque limits ignored.\n\n"
            + table(["frame", "running cost", "solver", "iterations, th_stop 5e-5", "cost", "wall s",
                     "iterations, th_stop 1e-10", "cost", "wall s"], rows))

if __name__ == "__main__":
    main()
