"""Where an IPOPT iteration spends its time → docs/benchmarks/, section "ipopt-callbacks".

For the floating base (space-manipulator), the contracted second-order issue's
fixed-base tasks (ur5-reach, arm-obstacle) and the quadruped trot, exact Hessian and
L-BFGS, on each of the two ways of driving Ipopt (its C interface through ctypes, the
solver's, and cyipopt's Python wrapper, taken where the library is not found: see
``optdyn.solvers.ipopt_interface``): IPOPT's own timing
statistics (``print_timing_statistics``) of one warm solve, split into IPOPT's internal
work (linear algebra, line search), the time our callbacks spend in their own code
(measured inside them) and the rest of each callback as IPOPT times it — the driver's
passage between IPOPT and the callbacks, mostly its copy of the returned values — per
iteration, and for the Jacobian and the Hessian per call and per value returned. Medians
over ``ROUNDS`` rounds that alternate the tasks, the two Hessians and the two drivers.

Run from the repository root: .venv/bin/python benchmarks/bench_ipopt_callbacks.py  (about five minutes)
"""
from __future__ import annotations

import re
import time
from collections import defaultdict
from contextlib import contextmanager

import cyipopt
import numpy as np

import optdyn
import problems
from _common import machine, table, write_section
from optdyn.solvers import ipopt_interface
from optdyn.solvers.ipopt import MultipleShootingNLP, _captured_stdout

TASKS = ("space-manipulator", "ur5-reach", "arm-obstacle", "quadruped")
PARAMS = {"quadruped": {"scenario": "trot"}}
HESSIANS = ("exact", "lbfgs")
DRIVERS = ("C interface", "cyipopt")
ROUNDS = 3
# our callbacks → the names of IPOPT's timers of the same evaluations
TIMERS = {"objective": ("Objective function",), "gradient": ("Objective function gradient",),
          "constraints": ("Equality constraints", "Inequality constraints"),
          "jacobian": ("Equality constraint Jacobian", "Inequality constraint Jacobian"),
          "hessian": ("Lagrangian Hessian",)}
TIMER_LINE = re.compile(r"^\s*(\S.*?)\.{2,}:\s+[\d.]+ \(sys:\s+[\d.]+ wall:\s+([\d.]+)\)", re.M)

inside = defaultdict(float)  # seconds spent inside each callback's own code
calls = defaultdict(int)


def _timed(name: str, f):
    def callback(*args):
        t = time.perf_counter()
        try:
            return f(*args)
        finally:
            inside[name] += time.perf_counter() - t
            calls[name] += 1
    return callback


for _name in TIMERS:
    setattr(MultipleShootingNLP, _name, _timed(_name, getattr(MultipleShootingNLP, _name)))


def profile(prob, hessian: str, returned: dict) -> dict:
    """One warm solve's per-iteration split (ms) and per-value wrapper cost (ns); ``returned``:
    the numbers of Jacobian and Hessian values our callbacks return (what the wrapper copies;
    IPOPT's own nonzero count leaves out the fixed x_0)."""
    inside.clear()
    calls.clear()
    with _captured_stdout() as out:
        res = optdyn.solve(prob, "ipopt", hessian=hessian, print_level=5, print_timing_statistics="yes")
    text = out[0]
    wall = defaultdict(float)
    for name, seconds in TIMER_LINE.findall(text):
        wall[name.strip()] += float(seconds)
    its = res.iterations
    timed = {k: sum(wall[t] for t in TIMERS[k]) for k in TIMERS}
    row = {"iterations": its, "status": res.status,
           "total": wall["OverallAlgorithm"] / its * 1e3,
           "internal": (wall["OverallAlgorithm"] - wall["Function Evaluations"]) / its * 1e3,
           "ours": sum(inside.values()) / its * 1e3,
           "wrapper": (sum(timed.values()) - sum(inside.values())) / its * 1e3}
    for k in ("jacobian", "hessian"):
        if calls[k]:
            n_values = returned[k]
            over = (timed[k] - inside[k]) / calls[k]
            row[k] = (n_values, inside[k] / calls[k] * 1e3, over * 1e3, over / n_values * 1e9)
    return row


@contextmanager
def driven_by(driver: str):
    """Solves within the block drive Ipopt by ``driver`` (one of :data:`DRIVERS`)."""
    found = ipopt_interface.library
    if driver == "cyipopt":
        ipopt_interface.library = lambda: None
    try:
        yield
    finally:
        ipopt_interface.library = found


def _median(rows: list[dict]) -> dict:
    """The rounds' rows of :func:`profile` with their times replaced by medians (elementwise
    for the per-call tuples)."""
    out = dict(rows[0])
    for k in ("total", "internal", "ours", "wrapper", "jacobian", "hessian"):
        if k in out:
            out[k] = np.median([r[k] for r in rows], axis=0)
    return out


def main() -> None:
    probs = {t: problems.get(t, **PARAMS.get(t, {})) for t in TASKS}
    for prob in probs.values():
        for h in HESSIANS:
            optdyn.solve(prob, "ipopt", hessian=h)  # compile, warm the caches
    returned = {}
    for t, prob in probs.items():
        nlp = MultipleShootingNLP(prob)
        returned[t] = {"jacobian": nlp.jacobianstructure()[0].size, "hessian": nlp.hessianstructure()[0].size}
    runs = defaultdict(list)
    for _ in range(ROUNDS):
        for t, prob in probs.items():
            for h in HESSIANS:
                for d in DRIVERS:
                    with driven_by(d):
                        runs[t, h, d].append(profile(prob, h, returned[t]))
    med = {key: _median(rs) for key, rs in runs.items()}
    split_rows, nz_rows, ratio_rows = [], [], []
    for (t, h, d), m in med.items():
        split_rows.append([t, h, d, f"{m['iterations']} {m['status']}", m["total"], m["internal"], m["ours"],
                           m["wrapper"]])
        for k in ("jacobian", "hessian"):
            if k in m:
                n_values, ours_ms, over_ms, ns = m[k]
                nz_rows.append([t, h, d, k, int(n_values), ours_ms, over_ms, ns])
    for t in TASKS:
        for d in DRIVERS:
            e, b = med[t, "exact", d], med[t, "lbfgs", d]
            ratio_rows.append([t, d, e["total"] / b["total"],
                               (e["total"] - e["wrapper"]) / (b["total"] - b["wrapper"]), e["ours"] / b["ours"]])
    body = f"""## Where an IPOPT iteration goes

Machine: {machine()}. Script: `benchmarks/bench_ipopt_callbacks.py`. One warm solve per task, Hessian and driver, with IPOPT's `print_timing_statistics`; medians over {ROUNDS} rounds that alternate them. IPOPT's timers wrap each callback from IPOPT's side; the time spent inside our callbacks is measured within them; the difference is the driver's passage between the two ("wrapper"). Drivers: Ipopt's C interface through ctypes ("C interface", the solver's where it finds the library cyipopt loads) and cyipopt {cyipopt.__version__}'s Python wrapper ("cyipopt", the fallback); the same library, options and iterates.

### Per iteration (ms)

{table(["task", "Hessian", "driver", "iterations", "total", "IPOPT internal", "inside our callbacks", "wrapper"], split_rows)}

### Jacobian and Hessian per call

{table(["task", "Hessian", "driver", "callback", "values returned", "inside ours (ms)", "wrapper (ms)", "wrapper per value (ns)"], nz_rows)}

### Exact ÷ L-BFGS per iteration, from the same solves

{table(["task", "driver", "total", "without the wrapper's time", "inside our callbacks only"], ratio_rows)}

cyipopt's time grows with the number of values returned: cyipopt {cyipopt.__version__} copies the Jacobian's and the Hessian's values into IPOPT's arrays one Python-level item at a time (in `ipopt_wrapper.pyx` the returned array is not declared as a typed buffer, unlike the gradient's and the constraints'), which costs a NumPy scalar per value. The C interface copies each array at once; what is left of its passage is ctypes' call into Python and the copies of the point and the multipliers IPOPT passes (where it comes out below zero, IPOPT's clock and ours disagree by that much). "without the wrapper's time" subtracts the driver's time from both solves.
"""
    write_section("ipopt-callbacks", body)


if __name__ == "__main__":
    main()
