"""Static plots of a result with matplotlib: what the robot did, against its limits.

:func:`plot_trajectory` writes one figure (PNG, or any format matplotlib knows from the
file name) with six panels:

* joint positions q(t), velocities v(t) and torques u(t) (held over each interval) over
  time, each joint with its limits as dashed lines of the same colour (model position and
  velocity limits, the problem's control bounds; infinite limits are not drawn);
* clearance over time: the smallest clearance of any collision point, at every
  integrator sub-step, with the required margin (problems with clearance constraints);
  otherwise the margin min_i c_i(x_k) of each path constraint c ≥ 0 at the nodes (joint
  limits, residual constraints);
* the convergence history: cost, and gradient (DDP/iLQR) or KKT dual infeasibility
  (IPOPT) with the constraint violation, per iteration (augmented-Lagrangian multiplier
  updates are not counted as iterations).
"""
from __future__ import annotations

import os

import numpy as np

from ..apps.clearance import clearances
from ..apps.compare import iterates
from ..ocp.problem import Problem
from ..solvers.result import Result
from ..ocp.task import clearance_constraints, problem_of


def _limits(ax, times, values: np.ndarray, lower: np.ndarray, upper: np.ndarray, step: bool = False) -> None:
    """One line per column of ``values`` with its finite limits dashed in the same colour."""
    for j in range(values.shape[1]):
        if step:
            line, = ax.step(times, np.append(values[:, j], values[-1, j]), where="post", lw=1.2, label=f"{j}")
        else:
            line, = ax.plot(times, values[:, j], lw=1.2, label=f"{j}")
        for bound in (lower[j], upper[j]):
            if np.isfinite(bound):
                ax.axhline(bound, color=line.get_color(), ls="--", lw=0.8, alpha=0.7)


def _trajectory_panels(axes, result: Result, problem: Problem) -> None:
    model, nq, nv = problem.model, problem.model.nq, problem.model.nv
    xs, us = np.asarray(result.xs, dtype=float), np.asarray(result.us, dtype=float)
    t = problem.dt * np.arange(problem.N + 1)
    _limits(axes[0], t, xs[:, :nq], model.lower_limit, model.upper_limit)
    _limits(axes[1], t, xs[:, nq:nq + nv], -model.velocity_limit, model.velocity_limit)
    _limits(axes[2], t, us, problem.u_lower, problem.u_upper, step=True)
    for ax, label in zip(axes, ("position q [rad, m]", "velocity v [rad/s, m/s]", "torque u [N·m, N]")):
        ax.set_xlabel("time [s]")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        _keep_in_view(ax, ax.get_lines())
    axes[0].legend(title="joint", fontsize=7, ncol=2)


def _keep_in_view(ax, lines) -> None:
    """y-range of the trajectories themselves (limits far away would squash them)."""
    data = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in lines if len(line.get_xdata()) > 2])
    lo, hi = float(np.min(data)), float(np.max(data))
    pad = 0.15 * (hi - lo) if hi > lo else 1.0
    ax.set_ylim(lo - pad, hi + pad)


def _margin_panel(ax, result: Result, problem: Problem) -> None:
    """The margin min_i c_i of each path constraint c ≥ 0 at the nodes 1..N, and of each stage
    constraint at the knots 0..N−1 (−|c_i| on equality rows; < 0: violated)."""
    xs, us = np.asarray(result.xs, dtype=float), np.asarray(result.us, dtype=float)
    t = problem.dt * np.arange(problem.N + 1)
    for c in problem.path_constraints:
        ax.plot(t[1:], c.least_margin(c.value(xs[1:])), marker=".", ms=3, lw=1.2, label=type(c).__name__)
    for c in problem.stage_constraints:
        ax.plot(t[:-1], c.least_margin(c.value_knots(xs[:-1], us)), marker="x", ms=3, lw=1.2,
                label=f"{type(c).__name__} (on u)")
    ax.axhline(0.0, color="tab:red", ls="--", lw=1.0, label="bound (c ≥ 0)")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("constraint margin min c_i")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _clearance_panel(ax, result: Result, problem: Problem) -> None:
    if not clearance_constraints(problem) and (problem.path_constraints or problem.stage_constraints):
        _margin_panel(ax, result, problem)
        return
    if not clearance_constraints(problem):
        ax.text(0.5, 0.5, "no path constraints", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("clearance")
        return
    c = clearances(problem, result.xs, result.us)
    ax.plot(c.times.ravel(), c.substeps.min(axis=2).ravel(), lw=1.2, label="smallest clearance (every sub-step)")
    ax.plot(problem.dt * np.arange(problem.N + 1), c.nodes.min(axis=1), "o", ms=3, label="at the nodes")
    ax.axhline(c.margin, color="tab:red", ls="--", lw=1.0, label=f"required {c.margin:g} m")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("clearance [m]")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _history_panels(axes, result: Result) -> None:
    h = result.history
    keep = iterates(h) if "cost" in h else slice(None)  # multiplier updates are not iterations
    cost = np.asarray(h.get("cost", []), dtype=float)[keep]
    gradient = np.asarray(h.get("gradient", []), dtype=float)[keep]
    violation = np.asarray(h.get("violation", []), dtype=float)[keep]
    it = np.arange(len(cost))
    axes[0].plot(it, cost, marker=".")
    axes[0].set_ylabel("cost")
    if cost.size and np.all(cost > 0):
        axes[0].set_yscale("log")
    for values, label in ((gradient, "gradient / dual infeasibility"), (violation, "constraint violation")):
        if values.size:
            axes[1].semilogy(np.arange(len(values)), np.maximum(values, 1e-16), marker=".", label=label)
    axes[1].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("iteration")
        ax.grid(True, which="both", alpha=0.3)


def trajectory_figure(result: Result, problem: Problem | None = None):
    """The matplotlib figure of :func:`plot_trajectory` (axes[0, :] q, v, u; axes[1, 0]
    clearance; axes[1, 1:] convergence), for further editing; close it when done."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problem = problem_of(result, problem)
    if np.shape(result.xs) != (problem.N + 1, problem.nx) or np.shape(result.us) != (problem.N, problem.nu):
        raise ValueError(f"result: xs {np.shape(result.xs)}, us {np.shape(result.us)} do not fit the problem "
                         f"({problem.N + 1}, {problem.nx}), ({problem.N}, {problem.nu})")
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    _trajectory_panels(axes[0], result, problem)
    _clearance_panel(axes[1, 0], result, problem)
    _history_panels(axes[1, 1:], result)
    fig.suptitle(f"{result.problem or problem.name}: {result.solver or 'trajectory'}, cost {result.cost:.6g}, "
                 f"{result.status}")
    fig.tight_layout()
    return fig


def plot_trajectory(result: Result, path, problem: Problem | None = None) -> str:
    """Write the figure described in the module docstring to ``path``; returns the path.

    ``problem`` is the problem solved (default: the one :func:`optdyn.ocp.task.problem_of`
    finds: ``result.source``, set by :func:`optdyn.solve`, or the result's problem record).
    """
    import matplotlib.pyplot as plt

    fig = trajectory_figure(result, problem)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return os.fspath(path)
