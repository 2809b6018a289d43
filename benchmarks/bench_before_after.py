"""Before/after of the interval kernels and the solvers on two source trees, interleaved.

    .venv/bin/python benchmarks/bench_before_after.py BEFORE_TREE AFTER_TREE ROUNDS [--kernels | --contacts [--cpu] |
        --contact-batches [--cpu] | --costs [--cpu] | --mpc [--cpu] | --legged [--cpu] | --cones [--cpu] | --family]

Each round runs, in a new process per tree (its own numba cache, one thread), the rollout,
the first-order sensitivities, the stage records and the contracted Hessians of the whole trajectory (fastest of 20
calls) and, without ``--kernels``, DDP, iLQR and IPOPT per iteration (fastest of 3 solves) on
ur5-reach, arm-obstacle and space-manipulator; prints, per measurement, the fastest time of
each tree over the rounds, their ratio, and each round's ratio (the spread is the noise).
With ``--contacts``, instead, our six contact and impulse functions on Solo-12 and Talos
(the calls of ``bench_contact.py``, µs), timed by the wall clock or, with ``--cpu``, by the
process's CPU time (what a loaded machine's waits for a core do not inflate); with
``--contact-batches``, the six ``dyn.batch`` contact and impulse functions on 32 knots of
Solo-12 and Talos, one thread, the same clocks. With ``--costs``, DDP, iLQR and IPOPT per iteration
only, on ur5-reach and arm-obstacle (the tasks whose costs are state, control and frame-position
terms), with ``--cpu`` by the process's CPU time too (a solve's CPU time over its iterations, and
each cost evaluation's). With ``--mpc``, the median step (ms) of :class:`optdyn.MPC` with one
iteration per step from the feedback-policy warm start over 35 undisturbed steps after 5 (the
plant: the problem's own intervals) on ur5-reach (N = 40; iLQR and DDP), the space
manipulator (iLQR) and arm-obstacle (iLQR, the augmented Lagrangian), the same clocks. With
``--legged``, the quadruped's trot: the median MPC step of one-iteration iLQR on a 20-interval
horizon with the friction pyramid as a barrier cost (35 steps after 5, the plant the task's own
intervals), and with the pyramid as a constraint the time per iteration of a whole solve by
iLQR and DDP (the augmented Lagrangian) and IPOPT, the same clocks. With ``--cones``, the time per
iteration of whole solves of the trots with the friction pyramid as a stage constraint: Solo-12's
(two cycles) by iLQR, DDP (the outer augmented-Lagrangian loop) and al-ddp (the multipliers revised
inside the iteration), HyQ's (one cycle, ``bench_constraints.trot``) by iLQR, DDP and al-ddp, the same
clocks; each solve's iterations and final cost are printed per tree beside the table. With
``--family``, the family of constrained tasks of ``bench_constraints.py --family`` (62 tasks) by DDP
and iLQR with the defaults, one run per tree whatever ROUNDS (iterations are deterministic): per
tree and solver, the iterations in all, the solves not converged and the CPU time in all, then
the solves whose iterations differ between the trees.
Each measurement also gets the median and range of its rounds per tree. A tree is a checkout, e.g. ``git worktree add --detach /tmp/before b49c2dc``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _common import run_in_tree

SNIPPET = r'''
import json, time
import numpy as np
import optdyn, problems
out = {}


def per_iteration(prob, solver):
    """The solve's time per iteration, s: its own wall time, or by the process clock."""
    t0 = TIMER()
    r = optdyn.solve(prob, solver)
    return (TIMER() - t0 if USE_PROCESS_CLOCK else r.wall_time) / max(r.iterations, 1)


for task in TASKS:
    prob = problems.get(task)
    for solver in SOLVERS:
        optdyn.solve(prob, solver)
        out[task + " " + solver] = min(per_iteration(prob, solver) * 1e3 for _ in range(3))
    opt = optdyn.solve(prob, "ddp")  # the cost terms at the optimum
    calls = (("running cost terms", lambda: prob.running_cost_terms(opt.xs[:-1], opt.us)),
             ("terminal cost terms", lambda: prob.terminal_cost_terms(opt.xs[-1])))
    us = prob.us_init
    xs = prob.rollout(us)
    if KERNELS:
        calls += (("rollout", lambda: prob.rollout(us)), ("step_derivatives", lambda: prob.step_derivatives(xs[:-1], us)),
                  ("step_stages", lambda: prob.step_stages(xs[:-1], us)))
        stages, lams = prob.step_stages(xs[:-1], us)[2], np.ones((prob.N, prob.ndx))
        calls += (("step_hessians", lambda: prob.step_hessians(xs[:-1], us, lams, stages)),)
    for name, fn in calls:
        fn()
        times = []
        for _ in range(20):
            t0 = TIMER()
            fn()
            times.append(TIMER() - t0)
        out[task + " " + name] = min(times) * 1e3
print("RESULT" + json.dumps(out))
'''


CONTACTS = r'''
import json, time
from _common import per_call_us
from bench_contact import ROBOTS, pairs
out = {}
for label, (rel, contacts) in ROBOTS.items():
    for name, ours, _ in pairs(rel, contacts):
        out[label.split(" ")[0] + " " + name.split(" (")[0]] = per_call_us(ours, min_time=0.05, repeat=5, clock=TIMER)
print("RESULT" + json.dumps(out))
'''


CONTACT_BATCHES = r'''
import json, time
import numpy as np
import dynamics as dyn
from _common import per_call_us
from bench_contact import ROBOTS
from bench_floating_base import load
K = 32
out = {}
for label, (rel, contacts) in ROBOTS.items():
    model = load(rel, "free-flyer")[0]
    rng = np.random.default_rng(0)
    Q = np.array([dyn.random_configuration(model, rng) for _ in range(K)])
    V, TAU = rng.normal(size=(K, model.nv)), rng.normal(size=(K, model.nv))
    W = rng.normal(size=(K, model.nv + sum(c.dim for c in contacts)))
    b, robot = dyn.batch, label.split(" ")[0]
    calls = {"contact_dynamics_batch": lambda: b.contact_dynamics_batch(model, Q, V, TAU, contacts),
             "contact_dynamics_derivatives_batch": lambda: b.contact_dynamics_derivatives_batch(model, Q, V, TAU, contacts),
             "contact_dynamics_second_derivatives_contracted_batch":
                 lambda: b.contact_dynamics_second_derivatives_contracted_batch(model, Q, V, TAU, contacts, W),
             "impulse_dynamics_batch": lambda: b.impulse_dynamics_batch(model, Q, V, contacts),
             "impulse_dynamics_derivatives_batch": lambda: b.impulse_dynamics_derivatives_batch(model, Q, V, contacts),
             "impulse_dynamics_second_derivatives_contracted_batch":
                 lambda: b.impulse_dynamics_second_derivatives_contracted_batch(model, Q, V, contacts, W)}
    for name, f in calls.items():
        out[f"{robot} {name} (K = {K})"] = per_call_us(f, min_time=0.05, repeat=5, clock=TIMER)
print("RESULT" + json.dumps(out))
'''


MPC = r'''
import json, time
import numpy as np
import optdyn, problems
out = {}
CASES = (("ur5-reach", "ilqr"), ("ur5-reach", "ddp"), ("space-manipulator", "ilqr"), ("arm-obstacle", "ilqr"))
for task, solver in CASES:
    prob = problems.get(task, **({"N": 40} if task == "ur5-reach" else {}))
    mpc = optdyn.MPC(prob, solver, 1, horizon="receding")  # both trees: the tasks done at T shrink by default now
    x = prob.x0.copy()
    u = mpc.step(x, 0.0)[0]
    times = []
    for _ in range(40):
        x = prob.step(x[None], u[None])[0]
        t0 = TIMER()
        u = mpc.step(x)[0]
        times.append(TIMER() - t0)
    out[task + " " + solver + " MPC step"] = float(np.median(times[5:])) * 1e3
print("RESULT" + json.dumps(out))
'''


LEGGED = r'''
import json, time
import numpy as np
import optdyn, problems
out = {}
prob = problems.get("quadruped", scenario="trot", cone="cost")
mpc = optdyn.MPC(prob, "ilqr", 1, horizon=20)
x = prob.x0.copy()
u = mpc.step(x, 0.0)[0]
times = []
for k in range(40):
    x = prob.step(x[None], u[None], start=k)[0]
    t0 = TIMER()
    u = mpc.step(x)[0]
    times.append(TIMER() - t0)
out["trot, friction pyramid as a barrier cost: iLQR MPC step (H = 20)"] = float(np.median(times[5:])) * 1e3
prob = problems.get("quadruped")  # the friction pyramid as a constraint
for solver in ("ilqr", "ddp", "ipopt"):
    optdyn.solve(prob, solver, max_iter=2)
    t0 = TIMER()
    r = optdyn.solve(prob, solver)
    out[f"trot, friction pyramid as a constraint: {solver} per iteration"] = (TIMER() - t0) / r.iterations * 1e3
print("RESULT" + json.dumps(out))
'''


CONES = r'''
import json, time
import optdyn, problems
from bench_constraints import trot
out = {}
CASES = (("Solo-12 trot", problems.get("quadruped", scenario="trot"), ("ilqr", "ddp", "al-ddp")),
         ("HyQ trot", trot("HyQ", 0.7), ("ilqr", "ddp", "al-ddp")))
for label, prob, solvers in CASES:
    for solver in solvers:
        optdyn.solve(prob, solver, max_iter=2)
        t0 = TIMER()
        r = optdyn.solve(prob, solver)
        key = f"{label}, friction pyramid as a constraint: {solver}"
        out[key + " per iteration"] = (TIMER() - t0) / r.iterations * 1e3
        out[key + " iterations"], out[key + " cost"] = r.iterations, r.cost
print("RESULT" + json.dumps(out))
'''

FAMILY = r'''
import json, time
import optdyn
from bench_constraints import family
out = {}
for label, kind, prob in family():
    for solver in ("ddp", "ilqr"):
        t0 = time.process_time()
        r = optdyn.solve(prob, solver)
        out[f"{label}|{solver}"] = (r.iterations, r.converged, time.process_time() - t0)
print("RESULT" + json.dumps(out))
'''

OUTCOMES = (" iterations", " cost")
"""The suffixes of the keys that are a solve's outcome, not a time: printed per tree and round."""


def main(before: str, after: str, rounds: int, mode: str, cpu: bool = False) -> None:
    tasks = '("ur5-reach", "arm-obstacle")' if mode == "--costs" else '("ur5-reach", "arm-obstacle", "space-manipulator")'
    timer = "time.process_time" if cpu else "time.perf_counter"
    snippets = {"--contacts": CONTACTS, "--contact-batches": CONTACT_BATCHES, "--mpc": MPC, "--legged": LEGGED,
                "--cones": CONES}
    contacts = snippets.get(mode, "").replace("TIMER", timer)
    code = contacts if contacts else (
        SNIPPET.replace("SOLVERS", "()" if mode == "--kernels" else '("ddp", "ilqr", "ipopt")')
        .replace("TASKS", tasks).replace("KERNELS", str(mode != "--costs"))
        .replace("TIMER", "time.process_time" if cpu else "time.perf_counter").replace("USE_PROCESS_CLOCK", str(cpu)))
    trees = {"before": Path(before), "after": Path(after)}
    runs = {side: [] for side in trees}
    for _ in range(1 if mode == "--family" else rounds):
        for side, tree in trees.items():
            runs[side].append(run_in_tree(tree, FAMILY if mode == "--family" else code, threads=1))
    if mode == "--family":
        return family_table(runs)
    print(f"| measurement ({'µs' if mode in ('--contacts', '--contact-batches') else 'ms'}) | before (fastest) | after (fastest) "
          "| after ÷ before | per round | before median [range] | after median [range] |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for key in runs["before"][0]:
        if key.endswith(OUTCOMES):
            continue
        b, a = [r[key] for r in runs["before"]], [r[key] for r in runs["after"]]
        per_round = ", ".join(f"{x / y:.2f}" for x, y in zip(a, b))
        spread = [f"{np.median(t):.3f} [{min(t):.3f}, {max(t):.3f}]" for t in (b, a)]
        print(f"| {key} | {min(b):.3f} | {min(a):.3f} | {min(a) / min(b):.2f} | {per_round} | {spread[0]} | {spread[1]} |")
    for key in (k for k in runs["before"][0] if k.endswith(OUTCOMES)):
        print(key, *(f"{side}: {', '.join(f'{r[key]:.10g}' for r in runs[side])}" for side in trees), sep="; ")


def family_table(runs: dict) -> None:
    """``--family``'s tables from each tree's run."""
    first = {side: r[0] for side, r in runs.items()}
    print("| solver | tree | iterations in all | not converged | CPU s in all |\n| --- | --- | --- | --- | --- |")
    for solver in ("ddp", "ilqr"):
        for side, out in first.items():
            rows = [v for k, v in out.items() if k.endswith("|" + solver)]
            print(f"| {solver} | {side} | {sum(r[0] for r in rows)} | {sum(not r[1] for r in rows)} "
                  f"| {sum(r[2] for r in rows):.1f} |")
    print("\n| task | solver | before | after |\n| --- | --- | --- | --- |")
    for key, b in first["before"].items():
        a = first["after"][key]
        if a[0] != b[0]:
            print(f"| {key.replace('|', ' | ')} | {b[0]} | {a[0]} |")


if __name__ == "__main__":
    flags = sys.argv[4:]
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), next((f for f in flags if f != "--cpu"), ""), "--cpu" in flags)
