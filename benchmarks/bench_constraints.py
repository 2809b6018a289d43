"""Constraints inside the DDP/iLQR iteration (al-ddp, al-ilqr: the multipliers revised between
steps by the BCL rule) against the outer augmented-Lagrangian loop (ddp, ilqr) and IPOPT.

    .venv/bin/python benchmarks/bench_constraints.py [--quick | --family | --active-set | --cone-ratio | --units
                                                      | --torque-limits]

Tasks: the 6D pose reach of example-robot-data arms (problems.arm_pose) with their joint limits
(``JointLimits``: position and velocity) as path constraints; arm-obstacle (its clearances and
terminal equality); the Solo-12 trot with the friction pyramid as stage constraints, and without
it for reference; Solo-12's walk and jump, Talos' walk (wrench cones) and a HyQ trot with and
without the pyramid. Every solver from the task's initial guess with its default options (the
task's own ones), plus the DDP-type solvers with a first penalty ρ = 0.01 on the trots with the
pyramid (the default is 1; the pyramids' rows are in units of the robot's weight). Per row:
status, iterations, wall time (s, without the kernels' loading/compilation) and per iteration,
the cost relative to IPOPT's, the largest violation. ``--quick``: two arms. Writes the section "constraints" of
BENCHMARKS.md.

``--family``: DDP and iLQR through the augmented Lagrangian's outer loop with ``decrease`` (the
violation's shrink below which the penalty is raised) at 0.05, 0.1 (the default), 0.15 and 0.25
(the default before), on a family of constrained tasks: the friction pyramids of Solo-12's (two
cycles), HyQ's, ANYmal's and Go1's trots and walks at μ = 0.5, 0.7, 0.9 and their jumps at 0.7,
Talos' walk (μ = 0.7, 0.5), the pose reaches of every arm of ``problems.arm_pose`` with their
joint limits at seeds 0, 1, 2, and arm-obstacle; section "constraints-family". With the CPU time of
each solve on one thread.

``--active-set``: the same family, without the steps on the rows the first step crosses
(``active_set_rounds=0``) and with them (the default); section "constraints-active-set".

``--cone-ratio``: the price of the friction pyramid on the trots of Solo-12 (the task) and HyQ
(one cycle), with against without: iterations, and CPU time per iteration of whole solves on one
thread, ``ROUNDS`` rounds interleaved (the targets: at most 2× and 1.3×); section "cone-ratio".

``--units``: the legged tasks' contact-force rows in units of the robot's weight (as shipped, the
solvers' defaults) against the same rows in newtons, with the first penalty the tasks shipped
before (Solo-12 ρ = 1 and another quadruped's (m₀/m)²; Talos 0.1) and with the default ρ = 1;
section "constraint units".

``--torque-limits``: the one-cycle trots of HyQ, ANYmal, Go1 and of Go2, A1 and B1
(:data:`TORQUE_LIMITED`, robots no other section runs) with the friction pyramid (μ = 0.7) and
their URDFs' torque limits as the control box, Solo-12's at the 5 N·m its MuJoCo plant clamps
(its URDF's 1000 N·m is a placeholder): every solver's status, iterations, cost against IPOPT's,
violation, and the unbounded optimum's largest torque over the limit; section "torque limits".
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from _common import machine, table, write_section

import dynamics as dyn
import optdyn
import problems
from problems.gaits import SOLO_SCALE
from problems.legged import in_newtons
from problems.robot_data import load_robot, robot_files
from optdyn.ocp.constraints import JointLimits
from optdyn.ocp.problem import Problem

SOLVERS = ("ipopt", "ddp", "ilqr", "al-ddp", "al-ilqr")
ARMS = ("xarm7", "panda", "z1", "so101", "ur5", "kinova")


def pose_with_limits(robot: str, seed: int = 0) -> Problem:
    """problems.arm_pose's reach of ``robot`` (to ``seed``'s target) with the arm's joint limits."""
    p = problems.arm_pose.make(robot, seed=seed)
    return Problem(p.model, p.x0, p.N, p.dt, p.running_cost, p.terminal_cost, u_lower=p.u_lower, u_upper=p.u_upper,
                   path_constraints=[JointLimits(p.model)], name="arm-pose-limits")


def tasks(quick: bool) -> list[tuple[str, Problem, list[tuple[str, dict]]]]:
    """(label, problem, [(solver, options)]) of the benchmark."""
    plain = [(s, {}) for s in SOLVERS]
    out = [(f"pose + limits, {r}", pose_with_limits(r), plain) for r in (ARMS[:2] if quick else ARMS)]
    out.append(("arm-obstacle", problems.arm_obstacle.make(), plain))
    out.append(("Solo-12 trot, no cone", problems.quadruped.make("trot", mu=None), plain[:3]))
    out.append(("Solo-12 trot, cone μ = 0.7", problems.quadruped.make("trot", mu=0.7),
                plain + [(s, {"rho_init": 0.01}) for s in SOLVERS[1:]]))
    if quick:
        return out
    for scenario in ("walk", "jump"):
        out.append((f"Solo-12 {scenario}, cone μ = 0.7", problems.quadruped.make(scenario), plain))
    out.append(("Talos walk, wrench cones", problems.get("biped"), plain))
    hyq = trot("HyQ", None)
    out.append(("HyQ trot (1 cycle), no cone", hyq, plain[:3]))
    hyq = trot("HyQ", 0.7)
    out.append(("HyQ trot (1 cycle), cone μ = 0.7", hyq, plain + [(s, {"rho_init": 0.01}) for s in SOLVERS[1:]]))
    return out


QUADRUPEDS = {"HyQ": ("hyq_description/robots/hyq_no_sensors.urdf", "hyq_description/srdf/hyq.srdf",
                      ("lf_foot", "rf_foot", "lh_foot", "rh_foot")),
              "ANYmal": ("anymal_b_simple_description/robots/anymal.urdf",
                         "anymal_b_simple_description/srdf/anymal.srdf", ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")),
              "Go1": ("go1_description/urdf/go1.urdf", "go1_description/srdf/go1.srdf",
                      ("FL_foot", "FR_foot", "RL_foot", "RR_foot"))}
"""(URDF, SRDF, feet lf, rf, lh, rh) of example-robot-data's quadrupeds other than Solo-12."""

TORQUE_LIMITED = {**QUADRUPEDS, **{name: (f"{stem}_description/urdf/{stem}.urdf", f"{stem}_description/srdf/{stem}.srdf",
                                          ("FL_foot", "FR_foot", "RL_foot", "RR_foot"))
                                   for name, stem in (("Go2", "go2"), ("A1", "a1"), ("B1", "b1"))}}
"""The quadrupeds of ``--torque-limits``: :data:`QUADRUPEDS` and three more of example-robot-data."""
SOLO_CLAMP = 5.0
"""Solo-12's torque limit in ``--torque-limits``, N·m: its MuJoCo plant's clamp (``bench_mpc.py``)."""


def gait(robot: str, scenario: str, mu: float | None, cycles: int, cone: str = "constraint",
         torque_limit=None, armature=None) -> Problem:
    """The ``scenario`` of :func:`problems.quadruped.make` ("trot", "walk", "jump") of ``cycles``
    cycles, with the friction pyramid of ``mu`` (None: none) as a ``cone``: Solo-12's task for
    ``robot`` "Solo-12", else that robot of :data:`TORQUE_LIMITED` from its SRDF's standing
    posture, as a user builds it from the README; its joint torques within ``torque_limit``, its
    joints' rotor inertias ``armature`` (:func:`problems.quadruped.make`'s)."""
    if robot == "Solo-12":
        return problems.quadruped.make(scenario, cycles=cycles, mu=mu, cone=cone, torque_limit=torque_limit)
    urdf, srdf, feet = TORQUE_LIMITED[robot]
    model = load_robot(urdf, "bench-constraints")
    robots, _ = robot_files(srdf, "bench-constraints")
    standing = dyn.load_srdf(model, os.path.join(robots, srdf)).reference_configurations["standing"]
    return problems.quadruped.make(scenario, cycles=cycles, mu=mu, cone=cone, model=model, feet=feet,
                                   standing=standing, torque_limit=torque_limit, armature=armature)


def trot(robot: str, mu: float | None, cycles: int = 1, cone: str = "constraint") -> Problem:
    """``robot``'s trot (:data:`QUADRUPEDS`) of ``cycles`` cycles (:func:`gait`)."""
    return gait(robot, "trot", mu, cycles, cone)


def run(quick: bool) -> list[list]:
    rows = []
    for label, p, solvers in tasks(quick):
        ipopt_cost = None
        for solver, options in solvers:
            r = optdyn.solve(p, solver, **options)
            if solver == "ipopt":
                ipopt_cost = r.cost
            seconds = r.wall_time - r.extra.get("compile_time", 0.0)
            name = solver + "".join(f" {k}={v:g}" for k, v in options.items())
            first_order = r.extra["first_order_steps"] if "ddp" in solver else "—"
            rows.append([label, name, r.status, r.iterations, first_order, f"{seconds:.2f}",
                         f"{1e3 * seconds / max(r.iterations, 1):.1f}",
                         f"{(r.cost - ipopt_cost) / abs(ipopt_cost):+.1e}", f"{p.violation(r.xs, r.us):.1e}"])
            print(*rows[-1], flush=True)
    return rows


def summary(rows: list[list]) -> list[list]:
    """Per task and solver pair (al-X against X, the same options): iterations of each and whether
    both converged."""
    runs = {(r[0], r[1]): r for r in rows}
    out = []
    for (task, name), r in runs.items():
        if name.startswith("al-") and (task, name[3:]) in runs:
            o = runs[(task, name[3:])]
            out.append([task, f"{name[3:]} → {name}", f"{o[3]} → {r[3]}",
                        f"{r[3] / max(o[3], 1):.2f}", f"{o[2]} → {r[2]}"])
    return out


def legged_tasks() -> list[tuple[str, Problem, float]]:
    """(label, the task as shipped, the first penalty it shipped before in newtons)."""
    out = [(f"Solo-12 {s}", problems.quadruped.make(s), 1.0) for s in ("trot", "walk", "jump")]
    for robot in QUADRUPEDS:
        p = trot(robot, 0.7)
        out.append((f"{robot} trot (1 cycle)", p, (SOLO_SCALE[0] / p.model.inertia[:, 0].sum()) ** 2))
    out.append(("Talos walk", problems.get("biped"), 0.1))
    out.append(("Talos step", problems.get("biped", steps=1, step_knots=10, support_knots=2), 0.1))
    return out


def units_rows() -> list[list]:
    """Per legged task, solver and statement of the rows: status, iterations, CPU s, cost against
    IPOPT's on the shipped task, the largest violation in newtons."""
    rows = []
    for label, p, former in legged_tasks():
        newtons = in_newtons(p)
        variants = [("weight, default ρ", p, {}), (f"newtons, former ρ = {former:.3g}", newtons, {"rho_init": former}),
                    ("newtons, default ρ", newtons, {})]
        best = None
        for solver in ("ipopt", "ddp", "ilqr"):
            for name, q, options in variants[::2] if solver == "ipopt" else variants:
                t = time.process_time()
                r = optdyn.solve(q, solver, **({} if solver == "ipopt" else options))
                seconds = time.process_time() - t
                best = r.cost if best is None else best
                rows.append([label, solver, name, r.status, r.iterations, f"{seconds:.2f}",
                             f"{(r.cost - best) / abs(best):+.1e}", f"{newtons.violation(r.xs, r.us):.1e}"])
                print(*rows[-1], flush=True)
    return rows


def units() -> None:
    rows = units_rows()
    body = "\n\n".join([
        "## Contact-force rows in units of the robot's weight",
        f"Machine: {machine()}; CPU time of one thread (`optdyn.set_num_threads(1)`); one run each "
        "(iterations are deterministic).",
        "The legged tasks state their friction pyramids (quadrupeds) and wrench cones (Talos, the moment rows "
        "as the weight at the sole's edge) in units of the robot's weight m‖g‖, so that the augmented "
        "Lagrangian's penalty ρ weighs a violation by its share of the weight. Against the same rows in "
        "newtons with the first penalty the tasks shipped before (Solo-12's ρ = 1, another quadruped's "
        "(m₀/m)², Talos' 0.1) and with the default ρ = 1. Cost relative to IPOPT's on the shipped task; "
        "violation: the largest, in newtons (the tolerance, 1e-6 in the rows' unit, is 1e-6 m‖g‖ N in weight "
        "units: 2.5e-5 N on Solo-12, 8.9e-4 N on Talos).",
        table(["task", "solver", "rows, first penalty", "status", "iterations", "CPU s", "cost vs IPOPT",
               "violation (N)"], rows),
        "Produced by `benchmarks/bench_constraints.py --units`.",
    ])
    write_section("constraint units", body)


PENALTY_TESTS = [(f"τ = {d:g}", {"decrease": d}) for d in (0.25, 0.05, 0.1, 0.15)]
"""The settings of ``--family``: the penalty test's ``decrease``, the former default first (the
ratios' reference)."""
ACTIVE_SET = [("first steps alone", {"active_set_rounds": 0}), ("default: the rows they cross", {})]
"""The settings of ``--active-set``: without the steps on the rows the first step crosses, then
with them (the default, :meth:`optdyn.solvers.ddp.RiccatiSolver.step_on`)."""
FAMILY = ("the friction pyramids of Solo-12's trot and walk (two cycles), HyQ's, ANYmal's and Go1's (one cycle, "
          "built from their URDF and SRDF as the README shows) at μ = 0.5, 0.7, 0.9 and their jumps at 0.7, Talos' "
          "walk (wrench cones, μ = 0.7 and 0.5); the pose reach of every arm of `problems.arm_pose` with its joint "
          "limits (position and velocity) at the targets of seeds 0, 1, 2, and arm-obstacle's two scenarios")


def family():
    """(label, kind, problem) of the family of ``--family`` (module docstring), built one at a time."""
    for robot in ("Solo-12", *QUADRUPEDS):
        for scenario, mus in (("trot", (0.5, 0.7, 0.9)), ("walk", (0.5, 0.7, 0.9)), ("jump", (0.7,))):
            for mu in mus:
                cycles = 2 if robot == "Solo-12" and scenario != "jump" else 1
                yield f"{robot} {scenario}, μ = {mu:g}", "legged", gait(robot, scenario, mu, cycles)
    for mu in (0.7, 0.5):
        yield f"Talos walk, μ = {mu:g}", "legged", problems.get("biped", mu=mu)
    for robot in problems.arm_pose.ROBOTS:
        for seed in (0, 1, 2):
            yield f"{robot} seed {seed}, joint limits", "arms", pose_with_limits(robot, seed)
    for scenario in ("bent", "straight"):
        yield f"arm-obstacle {scenario}", "arms", problems.get("arm-obstacle", scenario=scenario)


def family_runs(settings: list) -> list[tuple[str, str, str, list]]:
    """(label, kind, solver, [(iterations, converged, cost, CPU s) per setting of ``settings``])."""
    runs = []
    for label, kind, p in family():
        for solver in ("ddp", "ilqr"):
            out = []
            for _, options in settings:
                t = time.process_time()
                r = optdyn.solve(p, solver, **options)
                out.append((r.iterations, r.converged, r.cost, time.process_time() - t))
            runs.append((label, kind, solver, out))
            print(label, solver, out, flush=True)
    return runs


def family_summary(runs, settings: list) -> list[list]:
    """Per kind of task and setting: iterations in all, the geometric mean of the ratio to the
    first setting's, the solves with fewer / more iterations, the most, those not converged,
    those whose cost is above the first setting's by more than 1e-6 (relative), and the CPU
    time in all and its geometric-mean ratio to the first setting's."""
    rows = []
    for kind in ("legged", "arms"):
        sel = np.array([out for _, k, _, out in runs if k == kind], dtype=float)  # (solves, settings, 4)
        its, converged, cost, cpu = sel[..., 0], sel[..., 1], sel[..., 2], sel[..., 3]
        for j, (label, _) in enumerate(settings):
            worse = np.sum(cost[:, j] > cost[:, 0] + 1e-6 * np.abs(cost[:, 0]))
            rows.append([kind, len(sel), label, int(its[:, j].sum()),
                         f"{np.exp(np.mean(np.log(its[:, j] / its[:, 0]))):.3f}", int(np.sum(its[:, j] < its[:, 0])),
                         int(np.sum(its[:, j] > its[:, 0])), int(its[:, j].max()),
                         int(np.sum(converged[:, j] == 0)), int(worse), f"{cpu[:, j].sum():.1f}",
                         f"{np.exp(np.mean(np.log(cpu[:, j] / cpu[:, 0]))):.3f}"])
    return rows


def family_section(name: str, title: str, intro: str, settings: list) -> None:
    """Run the family under ``settings`` ([(label, options)]) and write section ``name``."""
    runs = family_runs(settings)
    differing = [[label, solver, *(f"{n}" + ("" if ok else " (not converged)") for n, ok, _, _ in out)]
                 for label, _, solver, out in runs if len({n for n, _, _, _ in out}) > 1]
    labels = [label for label, _ in settings]
    body = "\n\n".join([
        f"## {title}",
        f"Machine: {machine()}; one thread (CPU times: `time.process_time` of each whole solve). {intro} "
        f"Iterations are deterministic. Tasks: {FAMILY}.",
        table(["tasks", "solves", "setting", "iterations in all", f"÷ {labels[0]} (geometric mean)", "fewer",
               "more", "most", "not converged", "higher cost", "CPU s in all", "CPU ÷ (geometric mean)"],
              family_summary(runs, settings)),
        "The solves whose iterations differ between the settings (" + ", ".join(labels) + "):",
        table(["task", "solver", *labels], differing),
    ])
    write_section(name, body)


def family_main() -> None:
    family_section("constraints-family", "The augmented Lagrangian's penalty test on a family of tasks",
                   "`benchmarks/bench_constraints.py --family`: DDP and iLQR through the outer augmented-Lagrangian "
                   "loop, each task from its default guess with the default options but the penalty test's "
                   "`decrease` (τ): ρ ← 10ρ after an outer iteration whose largest violation did not shrink to τ "
                   "times the previous one's. 0.25 was the default.", PENALTY_TESTS)


def active_set_main() -> None:
    family_section("constraints-active-set", "Steps on the rows they cross, on a family of tasks",
                   "`benchmarks/bench_constraints.py --active-set`: DDP and iLQR through the outer "
                   "augmented-Lagrangian loop, each task from its default guess with the default options, but for "
                   "the first: `active_set_rounds=0`, every step as the first backward pass at the iterate gives "
                   "it. By default a step that crosses inequality rows held flat at the iterate, at a penalty "
                   "above half its predicted decrease, is solved again with them on the side it lands "
                   "(`RiccatiSolver.step_on`).", ACTIVE_SET)


ROUNDS = 9
"""Interleaved rounds of ``--cone-ratio``."""


def cone_ratio_rows() -> list[list]:
    """Per trot and solver: iterations without and with the pyramid, their ratio, DDP's steps on
    iLQR's model (where its exact model is not convex), and the ratio of CPU time per
    iteration, the fastest of each over :data:`ROUNDS` interleaved rounds and the range of the
    rounds' ratios."""
    rows = []
    for robot, cycles in (("Solo-12", 2), ("HyQ", 1)):  # the task's trot; HyQ's as in "constraints"
        pair = (gait(robot, "trot", None, cycles), gait(robot, "trot", 0.7, cycles))
        for solver in ("ilqr", "ddp"):
            first = [optdyn.solve(p, solver) for p in pair]  # also loads the kernels
            its = [r.iterations for r in first]
            gauss_newton = " / ".join(str(r.extra["first_order_steps"]) for r in first) if solver == "ddp" else "—"
            per = np.empty((ROUNDS, 2))
            for i in range(ROUNDS):
                for j, p in enumerate(pair):
                    t = time.process_time()
                    optdyn.solve(p, solver)
                    per[i, j] = (time.process_time() - t) / its[j]
            ratio = per[:, 1] / per[:, 0]
            rows.append([robot, solver, its[0], its[1], f"{its[1] / its[0]:.2f}", gauss_newton, f"{1e3 * per[:, 0].min():.2f}",
                         f"{1e3 * per[:, 1].min():.2f}", f"{per[:, 1].min() / per[:, 0].min():.2f}",
                         f"{ratio.min():.2f}–{ratio.max():.2f}"])
            print(*rows[-1], flush=True)
    return rows


def cone_ratio() -> None:
    body = "\n\n".join([
        "## The friction pyramid's price on the trots",
        f"Machine: {machine()}; CPU time of one thread (`optdyn.set_num_threads(1)`), whole solves from the "
        f"default guess, {ROUNDS} rounds interleaved, without and with the pyramid (μ = 0.7, stage constraints "
        "through the augmented Lagrangian). The targets: iterations ≤ 2× and an iteration ≤ 1.3× those without "
        "the pyramid.",
        table(["trot", "solver", "iterations without", "with", "ratio", "DDP: of them on iLQR's model, without / with",
               "ms / iteration without (fastest)", "with (fastest)", "ratio", "ratio per round"], cone_ratio_rows()),
        "Produced by `benchmarks/bench_constraints.py --cone-ratio`.",
    ])
    write_section("cone-ratio", body)


def torque_limit_rows() -> list[list]:
    """Per robot of :data:`TORQUE_LIMITED` (and Solo-12) and solver: its trot within its torque
    limits (module docstring)."""
    rows = []
    for robot in ("Solo-12", *TORQUE_LIMITED):
        free = np.abs(optdyn.solve(gait(robot, "trot", 0.7, 1), "ilqr").us).max(axis=0)
        p = gait(robot, "trot", 0.7, 1, torque_limit=SOLO_CLAMP if robot == "Solo-12" else "urdf")
        limit = p.u_upper
        best = None
        for solver in ("ipopt", "ddp", "ilqr"):
            t = time.process_time()
            r = optdyn.solve(p, solver)
            cpu = time.process_time() - t
            best = r.cost if best is None else best
            rows.append([robot, "–".join(f"{x:g}" for x in sorted(set(limit.round(2)))), f"{(free / limit).max():.2f}",
                         solver, r.status, r.iterations, f"{(r.cost - best) / abs(best):+.1e}",
                         f"{p.violation(r.xs, r.us):.1e}", f"{cpu:.2f}"])
            print(*rows[-1], flush=True)
    return rows


def torque_limits() -> None:
    body = "\n\n".join([
        "## Trots within the robots' torque limits",
        f"Machine: {machine()}; CPU time of one thread; one run each (iterations are deterministic).",
        "One trot cycle of each quadruped as a user builds it from example-robot-data's URDF and SRDF (the "
        "README's `problems.quadruped.make`), its friction pyramid at μ = 0.7, and the URDF's torque limits "
        "(`effort`) as the control box (`make(..., torque_limit=\"urdf\")`) — Solo-12 at the 5 N·m its MuJoCo plant "
        "clamps (`torque_limit=5`). "
        "The unbounded optimum's largest torque over the limit says how hard the box binds. Cost relative to "
        "IPOPT's; violation: the largest, of the pyramid's rows (in units of the weight) and the box.",
        table(["robot", "limits N·m", "unbounded peak ÷ limit", "solver", "status", "iterations", "cost vs IPOPT",
               "violation", "CPU s"], torque_limit_rows()),
        "Produced by `benchmarks/bench_constraints.py --torque-limits`.",
    ])
    write_section("torque limits", body)


def main() -> None:
    modes = {"--cone-ratio": cone_ratio, "--family": family_main, "--active-set": active_set_main, "--units": units,
             "--torque-limits": torque_limits}
    for flag, mode in modes.items():  # each on one thread
        if flag in sys.argv[1:]:
            optdyn.set_num_threads(1)
            return mode()
    quick = "--quick" in sys.argv[1:]
    rows = run(quick)
    body = "\n\n".join([
        "## Constraints inside the iteration",
        f"Machine: {machine()}; one run each, so the wall times are indicative only.",
        "ddp, ilqr: the outer augmented-Lagrangian loop around whole inner solves (ALTRO). al-ddp, al-ilqr: one "
        "DDP/iLQR iteration on the augmented Lagrangian whose multipliers and penalty are revised between two "
        "steps by the BCL rule (Conn, Gould & Toint 1991, as in Jallet et al. 2022). Cost relative to IPOPT's "
        "(negative: below it, by a violation within the 1e-6 tolerance); violation: the largest, in the "
        "constraint's units. DDP's steps on iLQR's model: those taken along the Gauss–Newton model where the exact "
        "one was indefinite (a cheap backward pass: on the legged tasks DDP's exact one costs several times "
        "iLQR's, so its time per iteration follows the share of exact steps).",
        table(["task", "solver", "status", "iterations", "DDP: steps on iLQR's model", "time (s)", "ms / iteration",
               "cost vs IPOPT", "violation"], rows),
        "Iterations inside the iteration against the outer loop (same options):",
        table(["task", "solvers", "iterations", "ratio", "status"], summary(rows)),
        "Produced by `benchmarks/bench_constraints.py`.",
    ])
    write_section("constraints", body)


if __name__ == "__main__":
    main()
