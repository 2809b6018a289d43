"""The optima of every shipped task × solver on two source trees, compared.

    .venv/bin/python benchmarks/bench_optima.py BEFORE AFTER
    .venv/bin/python benchmarks/bench_optima.py --dump TREE FILE.json

BEFORE and AFTER are source trees or JSON files written by ``--dump`` (solve once, compare
many times).

Each tree solves, in its own process (one thread), every registered problem (each scenario,
and space-manipulator with ``attitude_bound=0.02``) with DDP, iLQR and IPOPT from the
problem's initial guess, and returns xs, us, the cost and the iteration count; the table
gives, per case, whether xs and us are bitwise equal and their largest absolute difference.
A change meant to leave results unchanged (a refactoring) shows "yes" or differences at
rounding level (≲ 1e-12) with equal iteration counts.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from _common import run_in_tree

SNIPPET = r'''
import json
import optdyn, problems
cases = []
for name in problems.names():
    scenarios = problems.entry(name).scenarios or (None,)
    for s in scenarios:
        cases.append((name + (" " + s if s else ""), name, {} if s is None else {"scenario": s}))
cases.append(("space-manipulator attitude_bound=0.02", "space-manipulator", {"attitude_bound": 0.02}))
out = {}
for label, name, params in cases:
    prob = problems.get(name, **params)
    for solver in ("ddp", "ilqr", "ipopt"):
        r = optdyn.solve(prob, solver)
        out[label + " | " + solver] = {"xs": r.xs.tolist(), "us": r.us.tolist(), "cost": r.cost,
                                       "iterations": r.iterations, "status": str(r.status)}
print("RESULT" + json.dumps(out))
'''


def optima(source: str) -> dict:
    """The solves of a tree, or of a JSON file written by ``--dump``."""
    if source.endswith(".json"):
        return json.loads(Path(source).read_text())
    return run_in_tree(Path(source), SNIPPET, threads=1)


def main(before: str, after: str) -> None:
    b, a = optima(before), optima(after)
    print("| task | solver | xs, us bitwise equal | max abs diff xs | max abs diff us | iterations before/after |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key in b:
        task, solver = key.split(" | ")
        xb, ub, xa, ua = (np.array(d[k]) for d in (b[key], a[key]) for k in ("xs", "us"))
        # order of the generator: b xs, b us, a xs, a us
        same = np.array_equal(xb, xa) and np.array_equal(ub, ua)
        print(f"| {task} | {solver} | {'yes' if same else 'no'} | {np.max(np.abs(xb - xa)):.3g} "
              f"| {np.max(np.abs(ub - ua)):.3g} | {b[key]['iterations']}/{a[key]['iterations']} |")


if __name__ == "__main__":
    if sys.argv[1] == "--dump":
        Path(sys.argv[3]).write_text(json.dumps(optima(sys.argv[2])))
    else:
        main(sys.argv[1], sys.argv[2])
