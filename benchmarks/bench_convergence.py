"""Iterations, cost and wall time of DDP, iLQR and IPOPT with their default options and guesses,
on arms the solvers were never tuned on and on every shipped task.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_convergence.py            # about 1 min (AMD EPYC)
    .venv/bin/python benchmarks/bench_convergence.py --export                       # benchmarks/arm_tasks.json
    OMP_NUM_THREADS=1 .crocoddyl-venv/bin/python benchmarks/bench_crocoddyl_arms.py   # Crocoddyl beside ours
    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_convergence.py --per-iteration
    .venv/bin/python benchmarks/bench_convergence.py --family
    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_convergence.py --scaling            # about 5 min

**Arms** (``ARMS``): the ``arm-pose`` task (:mod:`problems.arm_pose`) on every robot it knows —
ten arms of example-robot-data — with the targets of seeds 0, 1 and 2: a seeded 6D pose reached
at rest, the torque box at the URDF's effort limits, the same weights for every robot. Each
solver runs ``optdyn.solve(problem, solver, max_iter=500)``, nothing tuned; the targets: DDP and
iLQR converged within 150 iterations to within 1 % of the lowest cost any of the three reached,
IPOPT within 200. Crocoddyl's BoxFDDP on the same tasks (our cost discretisation, the same guess)
comes from ``benchmarks/crocoddyl_arms.json`` when ``bench_crocoddyl_arms.py`` has written it
(``--export`` writes the tasks it reads, so that it needs neither optdyn nor numba).

**Shipped tasks**: every task of :mod:`problems` but ``arm-pose`` (each scenario), solved the
same way with the options it ships; the figures before the solver types (the commit in
``BEFORE``, the same calls) beside them from ``benchmarks/convergence_before.json``.

Wall times are warm (a one-iteration solve first compiles or loads the kernels); iterations
and costs do not depend on the machine. ``--per-iteration``: DDP ÷ iLQR wall time per iteration
on ur5-reach, whole solves interleaved over ``ROUNDS`` rounds (section "convergence-per-iteration").
``--family``: IPOPT's option sets on a family of Panda reaches (section "convergence-family").
``--barrier``, ``--scaling``: IPOPT's barrier strategies or NLP scalings on every task and the
constraint benchmark's (sections "convergence-barrier", "convergence-scaling")."""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import machine, table, write_section

import optdyn
import problems
from problems import arm_pose, panda_reach

ARMS = tuple(arm_pose.ROBOTS)
SEEDS = (0, 1, 2)
SOLVERS = ("ddp", "ilqr", "ipopt")
MAX_ITER = 500
LIMITS = {"ddp": 150, "ilqr": 150, "ipopt": 200}
"""The targets' iteration limits (arms: within 1 % of the lowest cost of the three)."""
HERE = Path(__file__).parent
TASKS_JSON, CROCODDYL_JSON = HERE / "arm_tasks.json", HERE / "crocoddyl_arms.json"
CROCODDYL_PANDA = HERE / "crocoddyl_panda.json"
BEFORE_JSON = HERE / "convergence_before.json"
BEFORE = "0885a2d"
ROUNDS = 9


def shipped_tasks():
    """(label, problem) of every shipped task but the arm poses, each scenario."""
    for name in problems.names():
        if name == "arm-pose":
            continue
        for scenario in problems.entry(name).scenarios or (None,):
            yield (f"{name} {scenario}" if scenario else name,
                   problems.get(name, **({"scenario": scenario} if scenario else {})))


def arm_tasks():
    """(robot, seed, problem) of the arms' table."""
    for robot in ARMS:
        for seed in SEEDS:
            yield robot, seed, problems.get("arm-pose", scenario=robot, seed=seed)


def run(problem, solver: str) -> dict:
    """One warm solve: status, iterations, cost, wall time."""
    optdyn.solve(problem, solver, max_iter=1)  # compiled or loaded before timing
    t0 = time.perf_counter()
    res = optdyn.solve(problem, solver, max_iter=MAX_ITER)
    return {"status": res.status, "iterations": int(res.iterations), "cost": float(res.cost),
            "wall": time.perf_counter() - t0}


def crocoddyl_arms() -> dict:
    """Crocoddyl's runs by (robot, seed), if its script has written them."""
    if not CROCODDYL_JSON.exists():
        return {}
    data = json.loads(CROCODDYL_JSON.read_text())
    return {(r["robot"], r["seed"]): r for r in data["results"]}


def met(r: dict, best: float, limit: int) -> bool:
    return r["status"] == "converged" and r["iterations"] <= limit and r["cost"] <= 1.01 * best


def arm_section() -> str:
    rows, runs, croc = [], {}, crocoddyl_arms()
    for robot, seed, prob in arm_tasks():
        out = {s: run(prob, s) for s in SOLVERS}
        best = min(r["cost"] for r in out.values())
        runs[robot, seed] = out, best
        row = [robot, seed, prob.nu]
        for s in SOLVERS:
            r = out[s]
            row += [f"{r['iterations']}{'' if r['status'] == 'converged' else ' (' + r['status'] + ')'}",
                    f"{r['cost'] / best - 1:+.2%}", f"{r['wall']:.2f}"]
        c = croc.get((robot, seed))
        row += ([f"{c['iterations']}{'' if c['converged'] else ' (not converged)'}", f"{c['cost'] / best - 1:+.2%}",
                 f"{c['wall_s']:.2f}"] if c else ["–"] * 3)
        rows.append(row)
        print(row, flush=True)
    summary = []
    for s in SOLVERS:
        ok = [met(out[s], best, LIMITS[s]) for out, best in runs.values()]
        its = [out[s]["iterations"] for out, _ in runs.values()]
        summary.append([s, f"{sum(ok)}/{len(ok)}", f"{np.median(its):g}", max(its),
                        f"{np.median([out[s]['wall'] for out, _ in runs.values()]):.2f}"])
    cols = [f"{s} {c}" for s in ("DDP", "iLQR", "IPOPT", "Crocoddyl BoxFDDP") for c in ("iterations", "cost", "s")]
    return ("### Arms never tuned for (`arm-pose`, seeds " + ", ".join(map(str, SEEDS)) + ")\n\n"
            "Iterations (status if not converged), cost relative to the lowest of DDP, iLQR and IPOPT, wall s.\n\n"
            + table(["robot", "seed", "nu", *cols], rows) + "\n\n"
            + table(["solver", f"targets met (≤ {LIMITS['ddp']} / {LIMITS['ipopt']} iterations, within 1 %)",
                     "median iterations", "most", "median wall s"], summary))


def task_section() -> str:
    before = json.loads(BEFORE_JSON.read_text())["runs"] if BEFORE_JSON.exists() else {}
    rows = []
    for label, prob in shipped_tasks():
        for s in SOLVERS:
            r = run(prob, s)
            b = before.get(f"{label} {s}")
            rows.append([label, s, r["status"], r["iterations"], f"{r['cost']:.7f}", f"{r['wall']:.2f}",
                         *((b["iterations"], f"{b['cost']:.7f}") if b else ("–", "–"))])
            print(rows[-1], flush=True)
    rows += crocoddyl_panda_rows()
    return (f"### Shipped tasks (the options each ships; before: `{BEFORE}`)\n\n"
            + table(["task", "solver", "status", "iterations", "cost", "wall s", "iterations before", "cost before"],
                    rows))


def crocoddyl_panda_rows() -> list[list]:
    """Crocoddyl's BoxFDDP on the Panda reach (``bench_crocoddyl.py``, our cost, th_stop 1e-10)."""
    if not CROCODDYL_PANDA.exists():
        return []
    data = json.loads(CROCODDYL_PANDA.read_text())
    return [["panda-reach", f"Crocoddyl {data['crocoddyl']} {r['solver']}",
             "converged" if r["converged"] else "max_iter", r["iterations"], f"{r['cost']:.7f}", f"{r['wall_s']:.2f}",
             "–", "–"]
            for r in data["results"]
            if r["frame"] == "panda_hand" and r["variant"] == "exact" and r["th_stop"] == 1e-10
            and r["solver"] == "BoxFDDP"]


def export() -> None:
    """The arms' tasks as plain data for ``bench_crocoddyl_arms.py``: URDF, locked joints, tool,
    x0, target placement, effort limits, horizon and weights."""
    tasks = []
    for robot, seed, prob in arm_tasks():
        urdf, tool, locked = arm_pose.ROBOTS[robot]
        target = arm_pose.target_placement(prob.model, tool, prob.x0[:prob.model.nq], seed)
        tasks.append({"robot": robot, "seed": seed, "urdf": urdf, "tool": tool, "locked": list(locked),
                      "joints": list(prob.model.joint_names), "x0": prob.x0.tolist(), "target": target.tolist(),
                      "effort": np.where(np.isfinite(prob.u_upper), prob.u_upper, 1e10).tolist(),
                      "N": prob.N, "dt": prob.dt, "weights": arm_pose.WEIGHTS})
    TASKS_JSON.write_text(json.dumps({"tasks": tasks}, indent=1) + "\n")
    print(f"wrote {TASKS_JSON} ({len(tasks)} tasks)")


def per_iteration_section(task: str = "ur5-reach") -> str:
    """DDP ÷ iLQR wall time per iteration on ``task``: whole solves, DDP and iLQR in turn in each
    of ``ROUNDS`` rounds (a shared machine drifts: alternating keeps both under the same load),
    the first round dropped (compilation); the ratio of the two solves of each round."""
    prob = problems.get(task)
    per = {"ddp": [], "ilqr": []}
    last = {}
    for rnd in range(ROUNDS + 1):
        for s in per:
            last[s] = r = optdyn.solve(prob, s)
            if rnd:
                per[s].append(r.wall_time / max(r.iterations, 1) * 1e3)
    ratio = np.array(per["ddp"]) / np.array(per["ilqr"])
    rows = [[task, s, last[s].iterations, f"{min(per[s]):.2f}", f"{np.median(per[s]):.2f}"] for s in per]
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    return (f"## DDP ÷ iLQR per iteration\n\n{machine()}, NUMBA_NUM_THREADS={threads}, load average "
            f"{os.getloadavg()[0]:.1f} at the end. `benchmarks/bench_convergence.py --per-iteration`: {ROUNDS} "
            "interleaved rounds of whole solves (wall time ÷ iterations, ms).\n\n"
            + table(["task", "solver", "iterations", "fastest ms / iteration", "median"], rows)
            + f"\n\nDDP ÷ iLQR per iteration, the two solves of each round: median {np.median(ratio):.2f}, "
              f"range {ratio.min():.2f}–{ratio.max():.2f} (target ≤ 1.5).")


def main() -> None:
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    body = (f"## Convergence with the defaults\n\n{machine()}, NUMBA_NUM_THREADS={threads}. "
            "`benchmarks/bench_convergence.py` (tasks, guesses and targets in its docstring). Iterations of DDP/iLQR "
            "are their steps (directions searched: one backward pass each, more where the regularisation grows or a "
            "step crosses the augmented Lagrangian's kinks); inside the augmented Lagrangian (arm-obstacle, the "
            "legged tasks) they are summed over its outer iterations.\n\n" + arm_section() + "\n\n" + task_section())
    write_section("convergence", body)


IPOPT_DEFAULTS = {"nlp_scaling_method": "gradient-based", "nlp_scaling_max_gradient": 100.0, "mu_strategy": "monotone",
                  "perturb_dec_fact": 1 / 3}
"""IPOPT's own defaults for the options the sets below change (they override the Panda's shipped ones)."""
FAMILY_SETS = (("IPOPT's defaults", {}),
               ("nlp_scaling_method=none, mu_strategy=adaptive (shipped until 2026-11-28)",
                {"nlp_scaling_method": "none", "mu_strategy": "adaptive"}),
               ("nlp_scaling_method=none", {"nlp_scaling_method": "none"}),
               *((f"nlp_scaling_method=none, perturb_dec_fact={v:g}" + (" (shipped)" if v == 0.02 else ""),
                  {"nlp_scaling_method": "none", "perturb_dec_fact": v}) for v in (0.005, 0.01, 0.02, 0.05)),
               ("perturb_dec_fact=0.02", {"perturb_dec_fact": 0.02}))


def panda_family(n: int = 30, seed: int = 0):
    """``n`` Panda reaches (:func:`problems.panda_reach.make`): targets uniform in the box
    [0.3, 0.55] × [−0.2, 0.3] × [0.35, 0.65] m in front of the robot, N in {30, 40, 50}."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        target = tuple(float(t) for t in np.round(rng.uniform((0.3, -0.2, 0.35), (0.55, 0.3, 0.65)), 3))
        yield panda_reach.make(N=int(rng.choice([30, 40, 50])), target=target)


def family_main() -> None:
    """IPOPT's iterations on the Panda family under each of FAMILY_SETS: median, worst, how
    many within 120, how often the lowest cost any set found, total wall time."""
    runs = {label: [] for label, _ in FAMILY_SETS}
    for prob in panda_family():
        for label, options in FAMILY_SETS:
            t0 = time.perf_counter()
            res = optdyn.solve(prob, "ipopt", max_iter=500, **{**IPOPT_DEFAULTS, **options})
            runs[label].append((res.iterations if res.converged else np.inf, res.cost, time.perf_counter() - t0))
        print(prob.params, [r[-1][:2] for r in runs.values()], flush=True)
    best = np.min([[c for _, c, _ in r] for r in runs.values()], axis=0)
    rows = []
    for label, r in runs.items():
        its, costs, wall = (np.array(a) for a in zip(*r))
        rows.append([label, f"{np.median(its):g}", f"{its.max():g}", f"{np.sum(its <= 120)}/{len(its)}",
                     f"{np.sum(costs <= best * (1 + 1e-6))}/{len(its)}", f"{wall.sum():.1f}"])
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    body = (f"## IPOPT on a family of Panda reaches\n\n{machine()}, NUMBA_NUM_THREADS={threads}. "
            "`benchmarks/bench_convergence.py --family`: 30 Panda reaches (targets and horizons in `panda_family`'s "
            "docstring), IPOPT with the exact Hessian from the default guess, at most 500 iterations (a run that does "
            "not converge counts as infinitely many); \"lowest cost\": the runs that end within 1e-6 of the lowest "
            "cost any option set reached on that task.\n\n"
            + table(["IPOPT options", "median iterations", "worst", "≤ 120", "lowest cost", "wall s (all 30)"], rows))
    write_section("convergence-family", body)


BARRIER_SETS = (("monotone (IPOPT's default; the library's without contacts)", {"mu_strategy": "monotone"}),
                ("adaptive (the library's with contacts)", {"mu_strategy": "adaptive"}),
                ("adaptive, μ_max = μ_init = 0.1", {"mu_strategy": "adaptive", "mu_max": 0.1}))
"""IPOPT's barrier-parameter strategies compared by ``--barrier`` (each over the task's own options)."""
SCALING_SETS = (("IPOPT's default: gradient-based, bound 100 (the library's with contacts or constraint rows)",
                 {"nlp_scaling_method": "gradient-based", "nlp_scaling_max_gradient": 100.0}),
                ("gradient-based, bound 1e5 (the library's without them)",
                 {"nlp_scaling_method": "gradient-based", "nlp_scaling_max_gradient": 1e5}),
                ("none", {"nlp_scaling_method": "none"}))
"""IPOPT's NLP scalings compared by ``--scaling`` (each over the task's own options)."""
OPTION_SECTIONS = {
    "barrier": (BARRIER_SETS, "convergence-barrier", "IPOPT's barrier strategy on every task", "the barrier strategy",
                "The library's default is the adaptive strategy on a problem with contacts "
                "(`optdyn.solvers.ipopt.CONTACT_BARRIER`), IPOPT's monotone one elsewhere."),
    "scaling": (SCALING_SETS, "convergence-scaling", "IPOPT's NLP scaling on every task", "the NLP scaling",
                "The library's default is IPOPT's gradient-based scaling with the bound at 1e5 on a problem with "
                "neither contacts nor constraint rows (`optdyn.solvers.ipopt.OBJECTIVE_SCALING`), IPOPT's bound of "
                "100 elsewhere.")}
"""``--barrier`` and ``--scaling``: the option sets, the section, its title, what the sets vary, the default."""


def barrier_tasks():
    """(label, problem): the shipped tasks and scenarios, the space manipulator with its attitude
    bound, the arm poses, and bench_constraints.py's arms with their joint limits and legged
    tasks with their friction pyramids and wrench cones."""
    import bench_constraints
    yield from shipped_tasks()
    yield "space-manipulator, attitude_bound 0.02", problems.get("space-manipulator", attitude_bound=0.02)
    for robot, seed, prob in arm_tasks():
        yield f"arm-pose {robot} {seed}", prob
    for robot in bench_constraints.ARMS:
        yield f"arm-pose {robot} 0 with its joint limits", bench_constraints.pose_with_limits(robot)
    for label, prob, _ in bench_constraints.legged_tasks():
        yield label, prob


def option_sets_main(which: str) -> None:
    """IPOPT under each option set of ``OPTION_SECTIONS[which]`` on :func:`barrier_tasks`:
    iterations and cost relative to the lowest any set reached, per task, and a summary."""
    sets, marker, title, varied, default = OPTION_SECTIONS[which]
    rows, runs = [], {label: [] for label, _ in sets}
    for task, prob in barrier_tasks():
        out = [optdyn.solve(prob, "ipopt", max_iter=MAX_ITER, **options) for _, options in sets]
        best = min(r.cost for r in out)
        row = [task]
        for (label, _), r in zip(sets, out):
            runs[label].append((r.iterations if r.converged else np.inf, r.cost / best - 1))
            row += [f"{r.iterations}{'' if r.converged else ' (' + r.status + ')'}", f"{r.cost / best - 1:.1e}"]
        rows.append(row)
        print(row, flush=True)
    summary = []
    for label, r in runs.items():
        its, rel = (np.array(a) for a in zip(*r))
        summary.append([label, f"{its.sum():g}", f"{np.median(its):g}", f"{its.max():g}",
                        f"{np.sum(rel <= 1e-6)}/{len(its)}", f"{np.sum(rel <= 1e-2)}/{len(its)}", f"{rel.max():.1e}"])
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    header = ["task"] + [f"{h} {label}" for label, _ in sets for h in ("iterations,", "cost above the lowest,")]
    body = (f"## {title}\n\n{machine()}, NUMBA_NUM_THREADS={threads}. "
            f"`benchmarks/bench_convergence.py --{which}`: IPOPT with the exact Hessian from each task's default "
            f"guess, its own options but {varied}, at most {MAX_ITER} iterations; the cost relative to "
            f"the lowest of the {len(sets)} runs. The tasks: every shipped task and scenario, the space manipulator with "
            "its attitude bound, the 30 arm poses, and the arms with their joint limits and the legged tasks of "
            f"`bench_constraints.py`. {default}\n\n"
            + table(["option set", "iterations (all)", "median", "most", "at the lowest cost (1e-6)",
                     "within 1 %", "largest excess"], summary)
            + "\n\n" + table(header, rows))
    if which == "scaling":
        body += "\n\n" + units_table(sets)
    write_section(marker, body)


UNITS = (1e-3, 1.0, 1e4, 1e6)
"""The factors on the arm poses' costs of ``--scaling``'s second table (a user's own units)."""


def units_table(sets) -> str:
    """The 30 arm poses with their costs multiplied by each of :data:`UNITS`, under each option
    set: iterations in all, runs converged (to IPOPT's tolerance: not "acceptable"), runs within 1 %
    of the lowest cost of the sets."""
    rows = []
    for factor in UNITS:
        runs = {label: [] for label, _ in sets}
        for _, _, p in arm_tasks():
            p = optdyn.Problem(p.model, p.x0, p.N, p.dt, factor * p.running_cost, factor * p.terminal_cost,
                               substeps=p.substeps, u_lower=p.u_lower, u_upper=p.u_upper)
            out = [optdyn.solve(p, "ipopt", max_iter=MAX_ITER, **options) for _, options in sets]
            best = min(r.cost for r in out)
            for (label, _), r in zip(sets, out):
                runs[label].append((r.iterations, r.status == "converged", r.cost <= 1.01 * best))
        for label, r in runs.items():
            its, conv, within = zip(*r)
            rows.append([f"{factor:g}", label, sum(its), f"{sum(conv)}/{len(r)}", f"{sum(within)}/{len(r)}"])
        print(rows[-len(sets):], flush=True)
    return ("The 30 arm poses in other units: their running and terminal costs multiplied by a factor, the "
            "same tasks otherwise (the optima the same up to that factor).\n\n"
            + table(["cost × ", "option set", "iterations (all)", "converged (not \"acceptable\")",
                     "within 1 % of the lowest"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--export", action="store_true", help="write the arms' tasks for bench_crocoddyl_arms.py")
    group.add_argument("--per-iteration", action="store_true", help="DDP ÷ iLQR per iteration on ur5-reach")
    group.add_argument("--family", action="store_true", help="IPOPT's option sets on the Panda family instead")
    group.add_argument("--barrier", action="store_true", help="IPOPT's barrier strategies on every task instead")
    group.add_argument("--scaling", action="store_true", help="IPOPT's NLP scalings on every task instead")
    args = parser.parse_args()
    if args.export:
        export()
    elif args.per_iteration:
        write_section("convergence-per-iteration", per_iteration_section())
    elif args.family:
        family_main()
    elif args.barrier or args.scaling:
        option_sets_main("barrier" if args.barrier else "scaling")
    else:
        main()
