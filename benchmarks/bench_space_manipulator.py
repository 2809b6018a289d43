"""Optimal control with a floating base → docs/benchmarks/, section "space".

The task ``space-manipulator`` (UR5 on a free-floating satellite, 30 RK4 intervals of
0.1 s, base unactuated), free and with the attitude bound: iterations, ms per iteration and
cost of iLQR, DDP (contracted second order, and full tensors), IPOPT (exact Hessian,
contracted and tensor; L-BFGS). The per-iteration ratios DDP ÷ iLQR (on 1 and 2 threads)
and IPOPT exact ÷ L-BFGS are quoted against the same ratios on the contracted second-order
issue's fixed-base tasks (ur5-reach, arm-obstacle), measured in the same run from solves
interleaved over several rounds (the machine is shared: a single best-of-3 moves by
±30 %; each ratio is the median over the rounds of the ratio of two solves run one after
the other), and against that issue's bounds (1.5 and 1.0); per-iteration times before
(``BASELINE``, from a temporary git worktree) and after, in turn in the same session; then
``optdyn.compare`` (DDP vs iLQR).

Run from the repository root: .venv/bin/python benchmarks/bench_space_manipulator.py  (a few minutes)
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

import optdyn
import problems
from _common import ROOT, baseline_tree, machine, run_in_tree, table, write_section

TARGET = 1.5  # a DDP iteration ≤ 1.5× an iLQR iteration (the contracted second-order issue)
IPOPT_TARGET = 1.0  # an exact-Hessian IPOPT iteration ≤ 1.0× an L-BFGS iteration (same issue)
TASKS = ("space-manipulator", "ur5-reach", "arm-obstacle")  # the floating base, then that fixed-base tasks
BASELINE = "5c83639"  # the tree before the second-order speed-ups of 2026-11-25 (before/after table)
SOLVES_SNIPPET = r"""
import json
import numpy as np
import optdyn, problems
from _common import per_call_us
try:
    from optdyn.solvers import ddp
    from optdyn.solvers.ipopt import MultipleShootingNLP
except ImportError:  # the baseline: a tree from before optdyn's rooms and the solvers' named records
    from optdyn import ddp
    from optdyn.ipopt import MultipleShootingNLP

def best_ms(f):
    return per_call_us(f, min_time=0.02, repeat=7) / 1e3

out = {}
split = optdyn.get_num_threads() > 1
for task in ("space-manipulator", "ur5-reach"):
    prob = problems.get(task)
    for solver in ("ilqr", "ddp"):
        optdyn.solve(prob, solver)  # compiles, or loads the tree's cache
        out[task + " " + solver + " iteration"] = min(
            r.wall_time / max(r.iterations, 1) * 1e3 for r in (optdyn.solve(prob, solver) for _ in range(5)))
    res = optdyn.solve(prob, "ddp")
    xs, us = res.xs, res.us
    k, K = np.zeros((prob.N, prob.nu)), np.zeros((prob.N, prob.nu, prob.ndx))
    costs, terminal = prob.running_cost_terms(xs[:-1], us)[1:], prob.terminal_cost_terms(xs[-1])[1:]
    if hasattr(ddp, "Expansion"):  # the backward pass on named records
        A, B, second = ddp.linearize(prob, xs, us, 1)
        stages = second.stages
        no_gaps = [np.zeros((0, prob.ndx))] if "gaps" in ddp.Step._fields else []  # multiple shooting's argument
        passes = {mode: (lambda mode=mode: ddp.backward_pass(
            ddp.Expansion(A, B, *costs), ddp.Value(*terminal), us, prob.u_lower, prob.u_upper, 0.0,
            second._replace(mode=mode, **({"split": split} if "split" in second._fields else {})), k, K,
            *no_gaps)) for mode in (0, 1)}
    else:  # the baseline's positional backward pass
        A, B, Fzz, stages = ddp.linearize(prob, xs, us, 1)
        passes = {mode: (lambda mode=mode: ddp.backward_pass(
            A, B, *costs, *terminal, us, prob.u_lower, prob.u_upper, 0.0, mode, Fzz, prob.integration, stages,
            split, k, K)) for mode in (0, 1)}
    out[task + " linearisation with stage records"] = best_ms(lambda: ddp.linearize(prob, xs, us, 1, stages))
    for mode, name in ((0, "iLQR"), (1, "DDP")):
        out[task + " " + name + " backward pass"] = best_ms(passes[mode])
    nlp = MultipleShootingNLP(prob, True)
    z = nlp.pack(xs, us)
    lagrange = np.random.default_rng(0).standard_normal(nlp.m)
    nlp.jacobian(z)
    out[task + " IPOPT Hessian evaluation"] = best_ms(lambda: nlp.hessian(z, lagrange, 1.0))
print("RESULT" + json.dumps(out))
"""
RUNS = [("ilqr", {}), ("ddp", {}), ("ddp", {"second_order": "tensor"}),
        ("ipopt", {}), ("ipopt", {"second_order": "tensor"}), ("ipopt", {"hessian": "lbfgs"})]


def _warm(problem, solver, options, repeat=3):
    optdyn.solve(problem, solver, **options)
    return min((optdyn.solve(problem, solver, **options) for _ in range(repeat)), key=lambda r: r.wall_time)


def solver_table() -> str:
    rows, notes = [], []
    cases = [("space-manipulator", {}), ("space-manipulator", {"attitude_bound": 0.02}), ("ur5-reach", {})]
    for name, params in cases:
        prob = problems.get(name, **params)
        per = {}
        for solver, opts in (RUNS if name == "space-manipulator" else RUNS[:2]):
            label = solver + "".join(f" {v}" for v in opts.values())
            r = _warm(prob, solver, opts)
            per[label] = r.wall_time / max(r.iterations, 1) * 1e3
            rows.append([f"{name} {params or ''}", label, r.status, r.iterations, f"{r.cost:.10g}",
                         r.wall_time * 1e3, per[label]])
        if "ipopt" in per:
            notes.append(f"* {name} {params or ''}: DDP contracted ÷ tensor per iteration "
                         f"{per['ddp'] / per['ddp tensor']:.2f}; IPOPT exact ÷ L-BFGS per iteration "
                         f"{per['ipopt'] / per['ipopt lbfgs']:.2f}.")
    return ("### Solvers (ms; warm, best of 3)\n\n"
            + table(["problem", "solver", "status", "iterations", "cost", "total ms", "ms / iteration"], rows)
            + "\n\n" + "\n".join(notes))


def _interleaved(runs: dict, rounds: int) -> tuple[dict, dict]:
    """Per-iteration ms of each solve of ``runs`` (key → (threads, problem, solver, options))
    and its last result: every round solves all of them once, in turn (a shared machine
    drifts: alternating keeps them under the same load); the first round compiles and is
    dropped."""
    times, last = defaultdict(list), {}
    default = optdyn.get_num_threads()
    for rnd in range(rounds + 1):
        for key, (threads, prob, solver, options) in runs.items():
            optdyn.set_num_threads(threads)
            last[key] = r = optdyn.solve(prob, solver, **options)
            if rnd:
                times[key].append(r.wall_time / max(r.iterations, 1) * 1e3)
    optdyn.set_num_threads(default)
    return times, last


def _round_ratios(times: dict, num, den) -> tuple[float, float, float]:
    """Median, lowest and highest over the rounds of times[num] ÷ times[den]: the two solves
    of a round ran one after the other, under the same load, so their ratio is steadier
    than a ratio of bests taken from different rounds."""
    r = np.array(times[num]) / np.array(times[den])
    return float(np.median(r)), float(r.min()), float(r.max())


def ratio_table(rounds: int = 9, thread_counts: tuple = (1, 2)) -> str:
    """DDP ÷ iLQR per iteration on the space manipulator and the contracted second-order
    issue's fixed-base tasks, on each thread count, from interleaved solves."""
    tasks = {name: problems.get(name) for name in TASKS}
    times, _ = _interleaved({(t, name, s): (t, prob, s, {}) for t in thread_counts for name, prob in tasks.items()
                             for s in ("ilqr", "ddp")}, rounds)
    rows, ratio = [], {}
    for t in thread_counts:
        for name in tasks:
            ratio[t, name], lo, hi = _round_ratios(times, (t, name, "ddp"), (t, name, "ilqr"))
            rows.append([name, t, min(times[t, name, "ilqr"]), min(times[t, name, "ddp"]), f"{ratio[t, name]:.2f}",
                         f"{lo:.2f}–{hi:.2f}"])
    settings = {t: f"{t} thread{'s' if t > 1 else ''}" for t in thread_counts}
    return (f"### DDP ÷ iLQR per iteration ({rounds} interleaved rounds; fastest round per solver, ms; the ratio "
            "of the two solves of each round, median and range)\n\n"
            + table(["task", "threads", "iLQR", "DDP", "DDP ÷ iLQR", "range over rounds"], rows)
            + "\n\n" + _verdict("DDP ÷ iLQR", ratio, settings, TARGET)
            + " Per RK stage the floating base adds the compositions' Jacobians and curvature (`optdyn.ocp.state`) "
            "to the second-order adjoint, and nz = ndx + nu = 30 against 18 for the UR5 makes every congruence "
            "G_sᵀW_sG_s larger; the contracted FDSVA-SO and the congruences skip the base pose's derivatives, "
            "which vanish in zero gravity.")


def ipopt_ratio_table(rounds: int = 7) -> str:
    """IPOPT exact ÷ L-BFGS per iteration on the same tasks (the default thread count),
    from interleaved whole solves."""
    tasks = {name: problems.get(name) for name in TASKS}
    threads = optdyn.get_num_threads()
    times, last = _interleaved({(name, h): (threads, prob, "ipopt", {"hessian": h}) for name, prob in tasks.items()
                                for h in ("exact", "lbfgs")}, rounds)
    rows, ratio = [], {}
    for name in tasks:
        ratio[threads, name], lo, hi = _round_ratios(times, (name, "exact"), (name, "lbfgs"))
        runs = [f"{last[name, h].iterations} {last[name, h].status}, "
                f"{np.mean(last[name, h].extra['log']['ls_trials']):.1f}" for h in ("exact", "lbfgs")]
        rows.append([name, min(times[name, "exact"]), min(times[name, "lbfgs"]), f"{ratio[threads, name]:.2f}",
                     f"{lo:.2f}–{hi:.2f}", *runs])
    return (f"### IPOPT exact Hessian ÷ L-BFGS per iteration ({rounds} interleaved rounds, {threads} threads; "
            "fastest round per solve, ms; the ratio of the two solves of each round, median and range)\n\n"
            + table(["task", "exact", "L-BFGS", "exact ÷ L-BFGS", "range over rounds",
                     "exact: iterations, line-search trials per iteration", "L-BFGS: the same"], rows)
            + "\n\n" + _verdict("IPOPT exact ÷ L-BFGS", ratio, {threads: f"{threads} threads"}, IPOPT_TARGET)
            + " An exact iteration adds the Lagrangian's Hessian (the contracted second-order adjoint of every "
            "interval, and on the floating base the charts' curvature) and IPOPT's factorisation of its dense "
            "(ndx + nu)² blocks; an L-BFGS iteration evaluates the dynamics at as many trial points as its line "
            "search takes.")


def _verdict(what: str, ratio: dict, settings: dict, bound: float) -> str:
    """The space manipulator's ``what`` against each fixed-base task's in the same run and
    against the contracted second-order issue's bound."""
    parts = []
    for key, label in settings.items():
        space = ratio[key, TASKS[0]]
        others = ", ".join(f"{name} {ratio[key, name]:.2f}" for name in TASKS[1:])
        worst = max(ratio[key, name] for name in TASKS[1:])
        parts.append(f"{label}: {space:.2f} ({'within' if space <= worst else 'above'} the fixed base's: "
                     f"{others}; {'meets' if space <= bound else 'above'} the bound {bound})")
    return (f"{what} (medians) on the floating base, against the fixed base in the same run and the bound set "
            "for the contracted second order: " + "; ".join(parts) + ".")


def before_after_table(rounds: int = 8, thread_counts: tuple = (1, 2)) -> str:
    """Per-iteration ms before (the tree at ``BASELINE``, from a temporary worktree) and
    after, each in its own process, in turn over ``rounds`` rounds; after ÷ before is the
    median over the rounds of the ratio of the two processes of a round (and its range)."""
    runs = defaultdict(list)
    with baseline_tree(BASELINE) as base:
        run_in_tree(base, SOLVES_SNIPPET)  # compiles the baseline's kernels into its own cache
        for _ in range(rounds):
            for t in thread_counts:
                runs["before", t].append(run_in_tree(base, SOLVES_SNIPPET, t))
                runs["after", t].append(run_in_tree(ROOT, SOLVES_SNIPPET, t))
    rows = []
    for key in runs["after", thread_counts[0]][0]:
        for t in thread_counts:
            before = np.array([r[key] for r in runs["before", t]])
            after = np.array([r[key] for r in runs["after", t]])
            ratio = after / before
            task, what = key.split(" ", 1)
            rows.append([task, what, t, before.min(), after.min(), f"{np.median(ratio):.2f}",
                         f"{ratio.min():.2f}–{ratio.max():.2f}"])
    return (f"### Before (`{BASELINE}`) and after, same session ({rounds} interleaved rounds of one process each; "
            "fastest round, ms): whole solves per iteration (fastest of 5), and the passes of one iteration at "
            "each task's DDP optimum (fastest of 7 repeats of ≥ 20 ms)\n\n"
            + table(["task", "measured", "threads", "before", "after", "after ÷ before (median)",
                     "range over rounds"], rows))


def local_optima_note() -> str:
    """With the attitude bound the task is non-convex: IPOPT from rest and the
    augmented-Lagrangian DDP can end in different local optima; IPOPT warm-started from
    DDP's solution shows whether that one is a KKT point of the NLP as well."""
    prob = problems.get("space-manipulator", attitude_bound=0.02)
    ddp, cold = optdyn.solve(prob, "ddp"), optdyn.solve(prob, "ipopt")
    warm = optdyn.solve(prob, "ipopt", init=ddp)
    return (f"With `attitude_bound=0.02` the solvers find different local optima: DDP/iLQR (augmented "
            f"Lagrangian, constraint tolerance 1e-6) {ddp.cost:.6g} (violation {prob.violation(ddp.xs, ddp.us):.1e}), "
            f"IPOPT from rest {cold.cost:.6g}; IPOPT warm-started from the DDP solution converges to "
            f"{warm.cost:.6g} in {warm.iterations} iterations (violation {prob.violation(warm.xs, warm.us):.1e}): "
            "the DDP optimum is a KKT point of the multiple-shooting NLP too, the gap being the constraint "
            "tolerance times a large multiplier. Without the bound all three reach the same optimum.")


def compare_section() -> str:
    c = optdyn.compare(problems.get("space-manipulator"), tol=1e-14, gtol=1e-11, max_iter=1000)
    return ("### `optdyn compare space-manipulator` (DDP vs iLQR; tol = 1e-14, gtol = 1e-11)\n\n"
            f"```\n{c.text}\n```")


def main() -> None:
    body = "\n\n".join([
        "## Space manipulator: optimal control with a floating base",
        f"Machine: {machine()}. Script: `benchmarks/bench_space_manipulator.py`. Solver times warm (a first "
        "solve compiles), best of 3. The state is on the manifold (nx = 25, ndx = 24, nu = 6): RK4 "
        "sensitivities with the group compositions, DDP/iLQR in the tangent spaces, IPOPT in the chart of "
        "its initial guess.",
        solver_table(), ratio_table(), ipopt_ratio_table(), before_after_table(), local_optima_note(),
        compare_section(),
    ])
    write_section("space", body)


if __name__ == "__main__":
    main()
