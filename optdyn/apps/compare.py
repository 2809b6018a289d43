"""Compare solvers on one problem: a table and log-scale convergence plots.

``compare(problem, ("ddp", "ilqr"))`` solves the problem with each solver (after a short
warm-up run so that compilation is not timed) and reports iterations, final cost, wall
time and time per iteration, plus the local convergence: how many iterations each solver
needed to go from a relative cost gap |J − J_final|/(1 + |J_final|) of 1e-3 to 1e-9, J_final
being its own final cost (the plots show the gap to the best final cost J* of all solvers),
and the wall time each needed to come within a relative 1e-9 of J*. DDP's second-order
terms should make it converge faster near the optimum; the text says plainly when a
problem shows otherwise, in iterations or in wall time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ocp.problem import Problem
from ..solvers.result import Result
from ..solvers.solve import SOLVERS, solve

GAP_START, GAP_END = 1e-3, 1e-9
_NAMES = {"ddp": "DDP", "ilqr": "iLQR", "ipopt": "IPOPT"}


@dataclass
class Comparison:
    """Outcome of :func:`compare`: one row per solver, the text table and the results."""

    rows: list[dict]
    text: str
    results: dict[str, Result] = field(default_factory=dict)
    figure: str | None = None

    def __str__(self) -> str:
        return self.text


def _gap(res: Result, best: float) -> np.ndarray:
    """Relative cost gap per history row (floored at 1e-16 for log plots)."""
    return np.maximum(np.abs(res.history["cost"] - best) / (1.0 + abs(best)), 1e-16)


def local_iterations(res: Result) -> int | None:
    """Iterations from the first row with a gap to the final cost ≤ 1e-3 to the first with
    gap ≤ 1e-9 (None if never)."""
    gap = _gap(res, res.cost)[iterates(res.history)]
    start, end = np.flatnonzero(gap <= GAP_START), np.flatnonzero(gap <= GAP_END)
    if start.size == 0 or end.size == 0:
        return None
    return int(end[0] - start[0])


def time_to_gap(res: Result, best: float, gap: float = GAP_END) -> float | None:
    """Wall time (s, from the start of the solve) of the first iterate whose relative cost
    gap to ``best`` is ≤ ``gap`` (None if never)."""
    hit = np.flatnonzero(_gap(res, best) <= gap)
    return None if hit.size == 0 else float(res.history["time"][hit[0]])


def _optimum(res: Result, best: float) -> float:
    """J* if ``res`` ended within a relative 1e-9 of it, else its own final cost (another
    local optimum, against which its convergence is timed)."""
    return best if abs(res.cost - best) <= GAP_END * (1.0 + abs(best)) else res.cost


def _wall_verdict(d: dict, i: dict, constrained: bool) -> str:
    """Which of DDP and iLQR reached a relative gap of 1e-9 to its optimum first, and why."""
    td, ti = d["time_to_gap"], i["time_to_gap"]
    spread = abs(d["cost"] - i["cost"]) / (1.0 + min(abs(d["cost"]), abs(i["cost"])))
    why = "within the constraint tolerance, or at different local optima" if constrained else "different local optima"
    where = "J*" if spread <= GAP_END else f"its own final cost (the two ended {spread:.1e} apart: {why})"
    if td is None or ti is None:
        late = " and ".join(_NAMES[r["solver"]] for r in (d, i) if r["time_to_gap"] is None)
        return f"Wall time to a relative gap of {GAP_END:g} to {where}: not reached by {late}."
    speed = d["ms_per_iteration"] / max(i["ms_per_iteration"], 1e-12)
    head = (f"Wall time to a relative gap of {GAP_END:g} to {where}: DDP {td * 1e3:.1f} ms, "
            f"iLQR {ti * 1e3:.1f} ms")
    if td < ti:
        return (f"{head}: DDP is faster ({d['iterations']} vs {i['iterations']} iterations at {speed:.2f}× "
                "the cost each).")
    return (f"{head}: DDP is NOT faster in wall time here: its {d['iterations']} iterations (iLQR "
            f"{i['iterations']}) each cost {speed:.2f}× an iLQR iteration, and the iterations its exact "
            f"second-order model saves do not pay for that.")


def _verdict(rows: list[dict], constrained: bool) -> str:
    by = {r["solver"]: r for r in rows}
    if "ddp" not in by or "ilqr" not in by:
        return ""
    return _local_verdict(by) + "\n" + _wall_verdict(by["ddp"], by["ilqr"], constrained)


def _local_verdict(by: dict) -> str:
    d, i = by["ddp"]["local_iterations"], by["ilqr"]["local_iterations"]
    if d is None or i is None:
        return ("Local convergence: not measurable (a solver's cost never came within a relative "
                f"{GAP_START:g} of its final value).")
    speed = by["ddp"]["ms_per_iteration"] / max(by["ilqr"]["ms_per_iteration"], 1e-12)
    if d < i:
        return (f"Local convergence: DDP went from a relative gap of {GAP_START:g} to {GAP_END:g} in {d} "
                f"iterations, iLQR in {i}: DDP converges faster near the optimum, as expected, at "
                f"{speed:.1f}× the cost per iteration.")
    return (f"Local convergence: on this problem DDP did NOT converge faster near the optimum: it needed "
            f"{d} iterations from a relative gap of {GAP_START:g} to {GAP_END:g}, iLQR {i} (DDP costs "
            f"{speed:.1f}× per iteration). This suggests the term iLQR drops, V'_x·F_xx, is small next to "
            f"the cost Hessian here, so its Gauss–Newton model is already nearly exact.")


def _table(rows: list[dict]) -> str:
    head = (f"{'solver':<7}{'status':<22}{'iters':>6}{'final cost':>17}{'wall [s]':>10}{'ms/iter':>9}{'local':>7}"
            f"{'to 1e-9 [s]':>13}")
    lines = [head, "-" * len(head)]
    for r in rows:
        local = "-" if r["local_iterations"] is None else str(r["local_iterations"])
        gap = "-" if r["time_to_gap"] is None else f"{r['time_to_gap']:.3f}"
        lines.append(f"{r['solver']:<7}{r['status']:<22}{r['iterations']:>6}{r['cost']:>17.10e}"
                     f"{r['wall_time']:>10.3f}{r['ms_per_iteration']:>9.2f}{local:>7}{gap:>13}")
    return "\n".join(lines)


def iterates(history: dict) -> np.ndarray:
    """Mask of the history rows that are iterates: drops the row that starts each later
    augmented-Lagrangian outer iteration (the same trajectory after a multiplier update),
    so that row i is iteration i, as counted by ``Result.iterations``."""
    outer = np.asarray(history.get("outer", np.zeros(len(history["cost"]))))
    return np.r_[True, outer[1:] == outer[:-1]] if outer.size else np.zeros(0, bool)


def _residual(res: Result) -> tuple[str, np.ndarray]:
    """("gradient", projected ‖∇_u‖∞) of DDP/iLQR or ("kkt", dual infeasibility) of IPOPT."""
    return ("kkt" if res.solver == "ipopt" else "gradient"), np.maximum(res.history["gradient"], 1e-16)


_RESIDUAL_LABELS = {"gradient": "DDP/iLQR: projected gradient ‖∇_u‖∞", "kkt": "IPOPT: KKT dual infeasibility"}


_COLORS = {"ddp": "C0", "ilqr": "C1", "ipopt": "C2"}


def convergence_figure(results: dict[str, Result], best: float, title: str = ""):
    """The figure of :func:`plot_convergence`: axes (rows, 2); close it when done."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in _RESIDUAL_LABELS if any(_residual(r)[0] == k for r in results.values())]
    fig, axes = plt.subplots(1 + len(kinds), 2, figsize=(11, 4 * (1 + len(kinds))), squeeze=False)
    for name, res in results.items():
        keep = iterates(res.history)
        it, t = np.arange(keep.sum()), res.history["time"][keep]
        kind, residual = _residual(res)
        style = {"marker": ".", "label": name, "color": _COLORS.get(name)}
        for row, y in ((0, _gap(res, best)), (1 + kinds.index(kind), residual)):
            axes[row, 0].semilogy(it, y[keep], **style)
            axes[row, 1].semilogy(t, y[keep], **style)
    last = max(r.iterations for r in results.values())
    labels = ["(J − J*) / (1 + |J*|)"] + [_RESIDUAL_LABELS[k] for k in kinds]
    for row, label in enumerate(labels):
        axes[row, 0].set_ylabel(label)
        axes[row, 0].set_xlim(-0.02 * last - 0.5, 1.02 * last + 0.5)
        for col, xlabel in enumerate(("iteration", "wall time [s]")):
            axes[row, col].set_xlabel(xlabel)
            axes[row, col].grid(True, which="both", alpha=0.3)
            axes[row, col].legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_convergence(results: dict[str, Result], best: float, path: str, title: str = "") -> None:
    """Save a PNG: relative cost gap, then the DDP/iLQR gradient and the IPOPT KKT residual
    on separate rows (different quantities), each against iteration and wall time. The
    iteration axis counts as the table does (0 … iterations, multiplier updates dropped)."""
    import matplotlib.pyplot as plt

    fig = convergence_figure(results, best, title)
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def _unless_interrupted(result: Result) -> Result:
    """``result``, or KeyboardInterrupt if Ctrl-C stopped it (a comparison stops as a whole)."""
    if result.status == "interrupted":
        raise KeyboardInterrupt(f"comparison interrupted during {result.solver}")
    return result


def compare(problem: Problem, solvers=("ddp", "ilqr"), plot: str | None = None, warmup: bool = True,
            **options) -> Comparison:
    """Solve ``problem`` with each of ``solvers`` (same ``options``) and compare them.

    Returns a :class:`Comparison` whose ``rows`` hold, per solver: solver, status,
    converged, iterations, cost, wall_time (s), ms_per_iteration, local_iterations and
    time_to_gap (wall time to a relative gap of 1e-9 to the best final cost J*, or to its own
    final cost when it ended at another local optimum, s);
    ``text`` is the printable table with sentences on local convergence and on which of
    DDP and iLQR reached the 1e-9 gap first in wall time, and why. With ``plot`` a
    path, a log-scale convergence figure is saved there as PNG. Ctrl-C stops the whole
    comparison (KeyboardInterrupt), not only the solve it interrupts.
    """
    solvers = tuple(solvers)
    if not solvers or any(s not in SOLVERS for s in solvers):
        raise ValueError(f"solvers: expected a non-empty sequence of {', '.join(SOLVERS)}, got {solvers!r}")
    results = {}
    for s in solvers:
        if warmup:
            _unless_interrupted(solve(problem, s, **{**options, "max_iter": 1, "callback": None, "verbose": False}))
        results[s] = _unless_interrupted(solve(problem, s, **options))
    best = min(r.cost for r in results.values() if np.isfinite(r.cost))
    rows = [{"solver": s, "status": r.status, "converged": r.converged, "iterations": r.iterations,
             "cost": r.cost, "wall_time": r.wall_time,
             "ms_per_iteration": 1e3 * r.wall_time / max(r.iterations, 1),
             "local_iterations": local_iterations(r), "time_to_gap": time_to_gap(r, _optimum(r, best))}
            for s, r in results.items()]
    text = f"{problem.name}: best cost J* = {best:.10e}\n" + _table(rows)
    verdict = _verdict(rows, bool(problem.nc or problem.ng or problem.nh))
    if verdict:
        text += "\n" + verdict
    if plot is not None:
        plot_convergence(results, best, str(plot), title=f"{problem.name}: convergence")
    return Comparison(rows, text, results, None if plot is None else str(plot))
