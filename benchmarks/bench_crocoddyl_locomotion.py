"""Crocoddyl 3.2 on the Solo-12 trot: the per-iteration anchor of FDDP, run in its own environment.

    OMP_NUM_THREADS=1 .crocoddyl-venv/bin/python benchmarks/bench_crocoddyl_locomotion.py [--ours trot.npz]

(the venv: bench_crocoddyl.py's docstring). ``--ours`` takes an .npz with ``xs`` (N + 1, 37) and
``us`` (N, 12) of optdyn's solution of ``problems.get("quadruped", scenario="trot", mu=None)``, e.g.
``r = optdyn.solve(prob, solver="ilqr"); np.savez(path, xs=r.xs, us=r.us)`` from .venv, and
records Crocoddyl's gaps (its impulse nodes rolled from ours) and "exact" cost at that
trajectory, and its distance from Crocoddyl's "exact" FDDP solution: the check that the two
problems are the same.

Crocoddyl is no dependency of optdyn and this script does not import optdyn (the venv of
bench_crocoddyl.py: Crocoddyl 3.2, Pinocchio 3.9, example-robot-data 5; the model comes from
pinocchio.buildModelFromUrdf, as there). It writes benchmarks/crocoddyl_trot.json only.

The task is problems/quadruped.py's ``make("trot", mu=None)`` (no friction constraint; cycles 2, step_length 0.15, step_height
0.05, step_knots 10, support_knots 2, dt 0.02), written again with Crocoddyl's models:

- Solo-12 from solo_description/robots/solo12.urdf on a free-flyer (nq 19, nv 18, nu 12:
  ActuationModelFloatingBase), x0 the SRDF's ``standing`` legs, base at (0, 0, 0.235), v = 0.
- Contact sequence of problems.quadruped.gait: 2 intervals on four feet, 10 with (FL, HR)
  swinging, 2 on four, 10 with (FR, HL) swinging, 2 on four, twice (N = 50 intervals of
  ours). Stance feet: ContactModel3D, LOCAL_WORLD_ALIGNED, gains (0, 0) (pure acceleration-level contacts, as ours),
  DifferentialActionModelContactFwdDynamics with JMinvJt_damping 0, one RK4 step per interval
  (IntegratedActionModelRK, RKType.four).
- Impulses: ours, interval k that gains contacts applies the impulse map Γ (restitution 0, on
  *all* of interval k's contacts) to x_k and then integrates. In Crocoddyl that is an
  ActionModelImpulseFwdDynamics node (ImpulseModel3D on the four feet, LOCAL_WORLD_ALIGNED,
  r_coeff 0, JMinvJt_damping 0) followed by interval k's node: 4 touchdowns (k = 12, 24, 36,
  48), so Crocoddyl's horizon has N + 4 = 54 running nodes (the post-impulse state x_k⁺ is
  one more decision variable: FDDP may open a gap there, ours cannot, x_k⁺ = Γ(x_k) being a
  function; from the standing guess the impulse maps the rest state to itself, no gap).
- Costs, ours: dt·ℓ_k(x_k, u_k) with ℓ_k = ½Σ w_i (x ⊖ x̄_k)_i² + ½·1e-1‖u‖² + ½·1e6 Σ_swing
  ‖p_f(q) − p_f,k‖², terminal 10·½Σ w_i (x ⊖ x̄_N)_i² (unscaled). ResidualModelState with
  ActivationModelWeightedQuad(w) (w: 0 on base x, y; 1e2 on z; 5e2 on the orientation; 1e-2 on
  the joints; 1 on the velocities), x̄_k's base x advanced by the gait's progress (0.3 m over
  the 40 swing intervals); ResidualModelControl; ResidualModelFrameTranslation with the swing
  arcs p_0 + (sL, 0, 4hs(1 − s)), s = j/n at knots k + 1 … k + n of each swing (the last is
  the touchdown knot). At a touchdown knot k ours evaluates ℓ_k at the pre-impulse x_k; here
  the impulse node (whose cost Crocoddyl does not scale by dt) carries dt·(state + swing terms)
  at x_k, and the following interval node only dt·½·1e-1‖u‖²: the same objective.
- Two discretisations of the running cost (as bench_crocoddyl.py):
  "exact": dt·ℓ(x_k, u_k), ours exactly — a Python action model (ExactCostRK4) takes x_{k+1},
  F_x, F_u from IntegratedActionModelRK(RK4) and the cost from IntegratedActionModelEuler,
  so its wall times include Python calls and a second contact-dynamics evaluation per knot
  (the post-impulse nodes, whose cost is the control term only, are plain RK4 nodes: exact);
  "stock": IntegratedActionModelRK(RK4) integrating ℓ over its four stages, all in C++ — the
  Crocoddyl a user writes, another objective (within O(dt) of ours), the timing anchor.
- Guess: xs = x0 at every node, us = for each interval the least-norm u minimising
  ‖q̈(q0, 0, u)‖ under its contacts (ours: contact_phases.rest_controls), by numpy.lstsq on
  the differential model's F_u at (x0, 0) — rest exactly here.
- Solvers: SolverFDDP and SolverBoxFDDP (no bounds: ours has none), solve(xs, us, 500, False),
  every setting Crocoddyl 3.2's default (th_stop 1e-9 for FDDP, 5e-5 for BoxFDDP, which is also
  run at 1e-9); iterations counted by a callback (one call per pass of the solver's loop: one
  calcDiff, one backward pass and a line search; the accepted step lengths are recorded, the
  line search halving from 1, so forward_passes counts the tryStep calls, a rejected final
  search counted as all alphas); wall time the best of --rounds solves, the six (variant,
  solver) cases interleaved round by round (the iterates are the same every round; the 2
  cores are shared, so wall times are rough; cpu_s, the process's CPU time of a solve, best of
  the rounds, is steadier under load); per iteration = wall (or CPU) / iterations.
  Crocoddyl and Pinocchio are the PyPI (cmeel) wheels, a generic build: one from source with
  -march=native may be faster.
- Phases, best of --rounds rounds each of many calls, at the guess and at the FDDP solution:
  problem.calc (one rollout-free cost and dynamics evaluation of every node), problem.calcDiff
  (all derivatives), solver.backwardPass() (the Riccati recursion alone, after calcDiff),
  solver.tryStep(α) (one forward pass: rollout with the feedback and the costs, at the first
  α of 1, ½, ¼, … that does not diverge: tryStep_alpha); also for a third variant, "dynamics"
  (the stock nodes with the control term only: the running state, swing and impulse-node
  costs dropped, the terminal kept), a floor: the RK4 contact dynamics alone in Crocoddyl.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import crocoddyl
import example_robot_data
import numpy as np
import pinocchio

try:
    from _common import ROOT, machine
except ImportError:  # _common is optdyn's and needs only numpy; keep the anchor standalone
    from pathlib import Path
    ROOT = Path(__file__).resolve().parent.parent

    def machine() -> str:
        return (f"{time.strftime('%Y-%m-%d')}, {platform.processor()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}")

sys.path.insert(0, str(ROOT))  # problems.gaits and bench_crocoddyl need numpy and Crocoddyl alone
from bench_crocoddyl import ExactCostRK4  # noqa: E402  (optdyn's cost discretisation)
from problems.gaits import FEET, gait, swing_references  # noqa: E402
from problems.gaits import WEIGHTS as W  # noqa: E402

CYCLES, STEP_LENGTH, STEP_HEIGHT, STEP_KNOTS, SUPPORT_KNOTS, DT = 2, 0.15, 0.05, 10, 2, 0.02
ROUNDS = 7
MAXITER = 500
SOLVERS = {"FDDP": (crocoddyl.SolverFDDP, None), "BoxFDDP": (crocoddyl.SolverBoxFDDP, None),
           "BoxFDDP th_stop 1e-9": (crocoddyl.SolverBoxFDDP, 1e-9)}
"""name: (solver, th_stop or None for the default: 1e-9 for FDDP, 5e-5 for BoxFDDP in Crocoddyl 3.2)."""


def solo12() -> pinocchio.Model:
    rel = "solo_description/robots/solo12.urdf"
    robots = example_robot_data.getModelPath(rel)
    model = pinocchio.buildModelFromUrdf(os.path.join(robots, rel), pinocchio.JointModelFreeFlyer())
    pinocchio.loadReferenceConfigurations(model, os.path.join(robots, "solo_description", "srdf", "solo.srdf"), False)
    return model  # its SRDF's standing posture: optdyn's task starts from it too


def trot(model: pinocchio.Model, variant: str):
    """(problem, x0, us_guess, node kinds, gait info) of the trot, ``variant`` "exact", "stock"
    or "dynamics" (stock with the control term only on the interval nodes: timing floor)."""
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFloatingBase(state)
    nu = actuation.nu
    data = model.createData()
    swings, progress = gait("trot", CYCLES, STEP_KNOTS, SUPPORT_KNOTS, DT, STEP_HEIGHT)
    progress = np.asarray(progress)
    N = len(swings)
    q0 = model.referenceConfigurations["standing"].copy()
    x0 = np.r_[q0, np.zeros(model.nv)]
    refs = np.tile(x0, (N + 1, 1))
    refs[:, 0] += STEP_LENGTH * CYCLES * progress
    weights = np.r_[np.full(2, W["base_position"]), W["base_height"], np.full(3, W["base_orientation"]),
                    np.full(model.nv - 6, W["joints"]), np.full(model.nv, W["velocity"])]
    pinocchio.framesForwardKinematics(model, data, q0)
    ids = {f: model.getFrameId(f) for f in FEET}
    tracks = {f: swing_references(data.oMf[ids[f]].translation.copy(), f, swings, STEP_LENGTH, STEP_HEIGHT)
              for f in FEET}

    def state_cost(k: int, n: int, scale: float) -> crocoddyl.CostModelResidual:
        act = crocoddyl.ActivationModelWeightedQuad(weights)
        return crocoddyl.CostModelResidual(state, act, crocoddyl.ResidualModelState(state, refs[k], n)), scale

    def knot_terms(k: int, n: int, scale: float):
        """The state and swing terms of ℓ_k, weights × scale."""
        terms = [("state", *state_cost(k, n, scale))]
        for f in FEET:
            target, weight = tracks[f]
            if weight[k]:
                res = crocoddyl.ResidualModelFrameTranslation(state, ids[f], target[k], n)
                terms.append((f + "_track", crocoddyl.CostModelResidual(state, res), weight[k] * scale))
        return terms

    def costs(terms, n: int) -> crocoddyl.CostModelSum:
        s = crocoddyl.CostModelSum(state, n)
        for name, cost, weight in terms:
            s.addCost(name, cost, weight)
        return s

    def differential(k: int, terms) -> crocoddyl.DifferentialActionModelContactFwdDynamics:
        contacts = crocoddyl.ContactModelMultiple(state, nu)
        for f in FEET:
            if f not in swings[k]:
                contacts.addContact(f + "_contact", crocoddyl.ContactModel3D(
                    state, ids[f], data.oMf[ids[f]].translation.copy(), pinocchio.LOCAL_WORLD_ALIGNED, nu,
                    np.array([0.0, 0.0])))
        return crocoddyl.DifferentialActionModelContactFwdDynamics(state, actuation, contacts, costs(terms, nu),
                                                                   0.0, True)

    control = ("control", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state, nu)), W["control"])
    nodes, kinds, diffs, impulse = [], [], [], []
    for k in range(N):
        gained = k > 0 and any(f in swings[k - 1] and f not in swings[k] for f in FEET)
        impulse.append(gained)
        if gained:
            imp = crocoddyl.ImpulseModelMultiple(state)
            for f in FEET:
                if f not in swings[k]:
                    imp.addImpulse(f + "_impulse",
                                   crocoddyl.ImpulseModel3D(state, ids[f], pinocchio.LOCAL_WORLD_ALIGNED))
            terms = knot_terms(k, 0, DT) if variant != "dynamics" else []  # ℓ_k's x-terms at the pre-impulse x_k
            node = crocoddyl.ActionModelImpulseFwdDynamics(state, imp, costs(terms, 0), 0.0, 0.0, True)  # r_coeff 0
            nodes.append(node)
            kinds.append("impulse")
            dm = differential(k, [control])  # control term only: RK4 integrates it exactly
            nodes.append(crocoddyl.IntegratedActionModelRK(dm, crocoddyl.RKType.four, DT))
        else:
            dm = differential(k, (knot_terms(k, nu, 1.0) if variant != "dynamics" else []) + [control])
            nodes.append(ExactCostRK4(dm, DT) if variant == "exact"
                         else crocoddyl.IntegratedActionModelRK(dm, crocoddyl.RKType.four, DT))
        kinds.append("interval")
        diffs.append(dm)
    tdm = differential(N - 1, [("state", *state_cost(N, nu, W["terminal"]))])
    terminal = crocoddyl.IntegratedActionModelRK(tdm, crocoddyl.RKType.four, 0.0)
    problem = crocoddyl.ShootingProblem(x0, nodes, terminal)
    # the guess: least-norm u minimising ‖q̈(q0, 0, u)‖ per interval (ours: contact_phases.rest_controls)
    us = []
    for dm in diffs:
        dd = dm.createData()
        dm.calc(dd, x0, np.zeros(nu))
        dm.calcDiff(dd, x0, np.zeros(nu))
        us.append(np.linalg.lstsq(dd.Fu, -dd.xout, rcond=None)[0])
    it = iter(us)
    us_nodes = [np.zeros(0) if kind == "impulse" else next(it) for kind in kinds]
    info = {"N_ours": N, "nodes_crocoddyl": len(nodes), "impulse_intervals": [k for k in range(N) if impulse[k]],
            "swings": [list(s) for s in swings]}
    return problem, x0, us_nodes, kinds, info


class Count(crocoddyl.CallbackAbstract):
    def __init__(self) -> None:
        crocoddyl.CallbackAbstract.__init__(self)
        self.iterations, self.steps = 0, []

    def __call__(self, solver) -> None:
        self.iterations += 1
        self.steps.append(float(solver.stepLength))


def best_us(f, rounds: int = ROUNDS, min_time: float = 0.2) -> float:
    """Best-of-``rounds`` µs per call of f (each round calls it enough to last ~min_time)."""
    f()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.05:
        f()
        n += 1
    number = max(1, int(n * min_time / 0.05))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def phases(problem, solver_cls, xs, us, rounds: int = ROUNDS) -> dict:
    """µs of problem.calc, problem.calcDiff, the backward pass and one forward pass at (xs, us)
    (tryStep at the first of the solver's step lengths whose rollout does not diverge)."""
    xs, us = list(xs), list(us)
    solver = solver_cls(problem)
    solver.setCandidate(xs, us, False)
    problem.calc(xs, us)
    problem.calcDiff(xs, us)
    solver.calcDiff()  # the gaps and the cost of the candidate, as the solver's computeDirection
    out = {"calc_us": best_us(lambda: problem.calc(xs, us), rounds),
           "calcDiff_us": best_us(lambda: problem.calcDiff(xs, us), rounds)}
    problem.calcDiff(xs, us)
    out["backwardPass_us"] = best_us(solver.backwardPass, rounds)
    for alpha in solver.alphas:
        try:
            solver.tryStep(alpha)
        except Exception:  # the rollout diverges at this step length (the solver backtracks)
            continue
        out["tryStep_alpha"], out["tryStep_us"] = float(alpha), best_us(lambda: solver.tryStep(alpha), rounds)
        break
    return out


def solve_once(problem, Solver, th_stop, xs0, us0):
    solver = Solver(problem)
    if th_stop is not None:
        solver.th_stop = th_stop
    count = Count()
    solver.setCallbacks([count])
    t0, c0 = time.perf_counter(), time.process_time()
    converged = solver.solve(xs0, us0, MAXITER, False)
    return (time.perf_counter() - t0, time.process_time() - c0), solver, count, converged


def check_ours(problem, kinds, info, path: str, croc_xs) -> dict:
    """Crocoddyl's view of optdyn's solution (xs, us in ``path``): gaps, "exact" cost, distance."""
    o = np.load(path)
    imp = info["impulse_intervals"]
    xs, us = [], []
    for k in range(info["N_ours"]):
        xs.append(o["xs"][k])
        if k in imp:  # the impulse node's post-impulse state, rolled from ours
            node = problem.runningModels[len(xs) - 1]
            d = node.createData()
            node.calc(d, o["xs"][k])
            xs.append(d.xnext.copy())
            us.append(np.zeros(0))
        us.append(o["us"][k])
    xs.append(o["xs"][-1])
    cost = float(problem.calc(xs, us))
    state = problem.runningModels[0].state
    gaps = max(float(np.abs(state.diff(d.xnext, xs[i + 1])).max()) for i, d in enumerate(problem.runningDatas))
    idx = [k + sum(j < k for j in imp) for k in range(info["N_ours"] + 1)]
    apart = max(float(np.abs(state.diff(np.asarray(croc_xs[i]), o["xs"][k])).max()) for k, i in enumerate(idx))
    return {"file": os.path.basename(path), "exact_cost_at_ours": cost, "max_gap_at_ours": gaps,
            "max_state_apart_from_exact_FDDP": apart}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", help="npz with xs, us of optdyn's trot solution (docstring)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"timing rounds (default {ROUNDS})")
    args = parser.parse_args()
    rounds = args.rounds
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    model = solo12()
    out = {"crocoddyl": crocoddyl.__version__, "pinocchio": pinocchio.__version__, "machine": machine(),
           "load_average_1min_start": os.getloadavg()[0], "rounds": rounds, "maxiter": MAXITER,
           "task": {"cycles": CYCLES, "step_length": STEP_LENGTH, "step_height": STEP_HEIGHT,
                    "step_knots": STEP_KNOTS, "support_knots": SUPPORT_KNOTS, "dt": DT, "weights": W},
           "results": [], "phases": []}
    problems, guesses = {}, {}
    for variant in ("stock", "exact", "dynamics"):
        problem, x0, us0, kinds, info = trot(model, variant)
        out.setdefault("horizon", info)
        xs0 = [x0.copy() for _ in range(problem.T + 1)]
        problems[variant], guesses[variant] = problem, (xs0, us0)
        if variant != "dynamics":
            out.setdefault("guess_cost", {})[variant] = float(problem.calc(xs0, us0))
    cases = [(v, name) for v in ("stock", "exact") for name in SOLVERS]
    walls, cpus = {c: [] for c in cases}, {c: [] for c in cases}
    last = {}
    for _ in range(rounds):  # interleaved: a load burst on the shared cores hits every case alike
        for v, name in cases:
            Solver, th_stop = SOLVERS[name]
            wall, solver, count, converged = solve_once(problems[v], Solver, th_stop, *guesses[v])
            walls[v, name].append(wall[0])
            cpus[v, name].append(wall[1])
            last[v, name] = (solver, count, converged)
    sols = {}
    for v, name in cases:
        solver, count, converged = last[v, name]
        xs, us, w = np.array(solver.xs), solver.us, walls[v, name]
        sols[v, name] = (list(solver.xs), list(solver.us))
        res = {"variant": v, "solver": name, "converged": bool(converged), "iterations": count.iterations,
               "iter": int(solver.iter), "cost": float(solver.cost), "stop": float(solver.stop),
               "gaps": float(solver.ffeas), "th_stop": float(solver.th_stop),
               "wall_s": min(w), "wall_s_median": float(np.median(w)),
               "per_iteration_ms": min(w) / max(count.iterations, 1) * 1e3,
               "per_iteration_ms_median": float(np.median(w)) / max(count.iterations, 1) * 1e3,
               "cpu_s": min(cpus[v, name]),
               "per_iteration_cpu_ms": min(cpus[v, name]) / max(count.iterations, 1) * 1e3,
               "final_base_position": xs[-1, :3].tolist(),
               "max_abs_u": float(max(np.max(np.abs(u)) for u in us if u.size)),
               "step_lengths": count.steps,
               "forward_passes": int(sum(round(-np.log2(a)) + 1 if a > 0 else len(solver.alphas)
                                         for a in count.steps))}
        out["results"].append(res)
        print({k: res[k] for k in ("variant", "solver", "iterations", "cost", "wall_s", "per_iteration_ms",
                                   "per_iteration_ms_median", "per_iteration_cpu_ms", "forward_passes")},
              flush=True)
    for v in ("stock", "exact", "dynamics"):
        at = (("guess", guesses[v]), ("stock FDDP solution" if v == "dynamics" else "FDDP solution",
                                      sols["stock" if v == "dynamics" else v, "FDDP"]))
        for where, (xs, us) in at:
            ph = {"variant": v, "at": where, **phases(problems[v], crocoddyl.SolverFDDP, xs, us, rounds)}
            out["phases"].append(ph)
            print(ph, flush=True)
    if args.ours:
        _, x0, us0, kinds, info = trot(model, "exact")
        out["check_ours"] = check_ours(problems["exact"], kinds, info, args.ours, sols["exact", "FDDP"][0])
        print(out["check_ours"], flush=True)
    out["load_average_1min_end"] = os.getloadavg()[0]
    (ROOT / "benchmarks" / "crocoddyl_trot.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
