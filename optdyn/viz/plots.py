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
  updates are not counted as iterations);
* for a problem with contacts, further rows: one panel per contact frame with its force
  (:func:`optdyn.apps.report.world_contact_forces`: the normal component f_n = f_z and the
  tangential norm ‖f_t‖ at each knot, held over its interval) and its stance intervals
  shaded, and one panel of the friction-cone margin μ f_n − ‖f_t‖ of every contact (≥ 0
  inside the cone; :func:`optdyn.apps.report.friction_margins`, μ = ``mu``).

:func:`plot_closed_loop` writes the figure of a closed loop (:func:`optdyn.simulate`): the
tracking error (distance of each target frame to its target, or of the state to the goal:
:func:`optdyn.apps.report.tracking_errors`), the torques with their bounds, the joint
positions, and the solve time of each step against the control period (a horizontal
line: a real-time loop must stay below it); the pushes are shaded on every panel.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..apps.clearance import clearances
from ..apps.compare import iterates
from ..apps.report import friction_margins, tracking_errors, world_contact_forces
from ..apps.simulate import ClosedLoop
from ..ocp.contact_residuals import check_friction
from ..ocp.problem import Problem
from ..ocp.task import clearance_constraints, friction_coefficient, problem_of
from ..solvers.result import Result


def _limits(ax, times, values: np.ndarray, lower: np.ndarray, upper: np.ndarray, step: bool = False) -> None:
    """One line per column of ``values`` with its finite limits dashed in the same colour."""
    for j in range(values.shape[1]):
        if step:
            line, = ax.step(times, _held(values[:, j]), where="post", lw=1.2, label=f"{j}")
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


STANCE_COLOR = "tab:blue"  # shading of the stance intervals


def _stance_spans(ax, forces: np.ndarray, dt: float, label: str | None = "stance") -> None:
    """Shade the runs of knots k where ``forces`` (N, 3) is finite (in contact) over [k·dt, (k+1)·dt)."""
    stance = np.all(np.isfinite(forces), axis=1)
    edges = np.flatnonzero(np.diff(np.r_[0, stance.astype(int), 0]))  # starts and ends of the runs
    for start, end in zip(edges[::2], edges[1::2]):
        ax.axvspan(start * dt, end * dt, color=STANCE_COLOR, alpha=0.12, lw=0, label=label)
        label = None


def _held(values: np.ndarray) -> np.ndarray:
    """Knot values (N,) with the last repeated, for a step plot over the N + 1 node times."""
    return np.append(values, values[-1])


def _contact_panels(axes, forces: dict[str, np.ndarray], problem: Problem, mu: float) -> None:
    """One force panel per contact frame of the world ``forces`` (axes[:-1]) and the friction
    margins (axes[-1])."""
    margins = friction_margins(forces, mu)
    t = problem.dt * np.arange(problem.N + 1)
    for ax, (frame, f) in zip(axes, forces.items()):
        ax.step(t, _held(f[:, 2]), where="post", lw=1.3, label="normal f_n")
        ax.step(t, _held(np.linalg.norm(f[:, :2], axis=1)), where="post", lw=1.3, label="tangential ‖f_t‖")
        _stance_spans(ax, f, problem.dt)
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title(f"contact {frame}")
        ax.set_ylabel("force [N]")
        ax.legend(fontsize=7)
    ax = axes[-1]
    for frame, m in margins.items():
        ax.step(t, _held(m), where="post", lw=1.2, label=frame)
    ax.axhline(0.0, color="tab:red", ls="--", lw=1.0, label="cone boundary")
    ax.set_title(f"friction-cone margin μ f_n − ‖f_t‖ (μ = {mu:g}; ≥ 0 inside)")
    ax.set_ylabel("margin [N]")
    ax.legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("time [s]")
        ax.grid(True, alpha=0.3)


def trajectory_figure(result: Result, problem: Problem | None = None, mu: float | None = None):
    """The matplotlib figure of :func:`plot_trajectory` (axes[0, :] q, v, u; axes[1, 0]
    clearance; axes[1, 1:] convergence; with contacts, rows after those: one force panel per
    contact frame, then the friction-cone margins with friction coefficient ``mu``, by default
    the problem's own: :func:`~optdyn.ocp.task.friction_coefficient`), for further editing;
    close it when done. ``fig.axes`` lists the panels in that order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problem = problem_of(result, problem)
    if np.shape(result.xs) != (problem.N + 1, problem.nx) or np.shape(result.us) != (problem.N, problem.nu):
        raise ValueError(f"result: xs {np.shape(result.xs)}, us {np.shape(result.us)} do not fit the problem "
                         f"({problem.N + 1}, {problem.nx}), ({problem.N}, {problem.nu})")
    mu = friction_coefficient(problem) if mu is None else check_friction(mu)  # refused even without contacts
    forces = world_contact_forces(problem, result.xs, result.us)  # {} without contacts
    extra = math.ceil((len(forces) + 1) / 3) if forces else 0  # rows of contact panels, three per row
    fig, axes = plt.subplots(2 + extra, 3, figsize=(15, 4 * (2 + extra)), squeeze=False)
    _trajectory_panels(axes[0], result, problem)
    _clearance_panel(axes[1, 0], result, problem)
    _history_panels(axes[1, 1:], result)
    if forces:
        panels = axes[2:].ravel()
        _contact_panels(panels[:len(forces) + 1], forces, problem, mu)
        for ax in panels[len(forces) + 1:]:
            fig.delaxes(ax)
    fig.suptitle(f"{result.problem or problem.name}: {result.solver or 'trajectory'}, cost {result.cost:.6g}, "
                 f"{result.status}")
    fig.tight_layout()
    return fig


def _save(fig, path) -> str:
    """Write ``fig`` to ``path`` and close it; returns the path."""
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return os.fspath(path)


def plot_trajectory(result: Result, path, problem: Problem | None = None, mu: float | None = None) -> str:
    """Write the figure described in the module docstring to ``path``; returns the path.

    ``problem`` is the problem solved (default: the one :func:`optdyn.ocp.task.problem_of`
    finds: ``result.source``, set by :func:`optdyn.solve`, or the result's problem record);
    ``mu`` the friction coefficient of the margins of a problem with contacts (default: the
    problem's own).
    """
    return _save(trajectory_figure(result, problem, mu), path)


def _pushes(ax, loop: ClosedLoop) -> None:
    """Shade the time span of each push of ``loop`` on ``ax``."""
    for k, d in enumerate(loop.disturbances):
        ax.axvspan(d.start, d.start + d.duration, color="tab:cyan", alpha=0.25, lw=0,
                   label=f"push {d.frame} {np.linalg.norm(d.force):g} N" if k == 0 else None)


def _measured_force_panels(axes, loop: ClosedLoop, problem: Problem) -> None:
    """The plant's measured contact forces (MuJoCo's) of ``loop``: each foot's normal force
    on axes[0], its friction use |f_t| / f_n on axes[1] with the task's μ."""
    t = np.asarray(loop.t, dtype=float)
    for frame, f in loop.contact_forces.items():
        f = np.asarray(f, dtype=float)
        axes[0].step(t, _held(f[:, 2]), where="post", lw=1.0, label=frame)
        with np.errstate(invalid="ignore", divide="ignore"):
            axes[1].step(t, _held(np.hypot(f[:, 0], f[:, 1]) / f[:, 2]), where="post", lw=1.0, label=frame)
    mu = problem.params.get("mu")
    if mu is not None:
        axes[1].axhline(mu, color="tab:red", ls="--", lw=1.0, label=f"μ of the task {mu:g}")
    axes[0].set_ylabel(f"{loop.plant}: measured normal force [N]")
    axes[1].set_ylabel("measured |f_t| / f_n")
    for ax in axes:
        ax.legend(fontsize=7)


def closed_loop_figure(loop: ClosedLoop, problem: Problem | None = None):
    """The matplotlib figure of :func:`plot_closed_loop` (axes[0, 0] tracking error, [0, 1]
    torques, [1, 0] positions, [1, 1] solve time per step; with a plant's measured contact
    forces, [2, 0] the normal forces and [2, 1] the friction they use), for further editing;
    close it when done."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not isinstance(loop, ClosedLoop):
        raise ValueError(f"loop: expected an optdyn ClosedLoop, got {type(loop).__name__}")
    problem = problem_of(loop, problem)
    if np.shape(loop.xs)[1:] != (problem.nx,) or np.shape(loop.us)[1:] != (problem.nu,):
        raise ValueError(f"loop: xs {np.shape(loop.xs)}, us {np.shape(loop.us)} do not fit the problem "
                         f"(nx {problem.nx}, nu {problem.nu})")
    model, t = problem.model, np.asarray(loop.t, dtype=float)
    measured = bool(loop.contact_forces)
    fig, axes = plt.subplots(3 if measured else 2, 2, figsize=(13, 11 if measured else 8), sharex=True)
    errors = tracking_errors(problem, loop.xs, t)
    ax = axes[0, 0]
    for label, e in errors.items():
        ax.plot(t, e, lw=1.3, label=label)
    if not errors:
        ax.text(0.5, 0.5, "no target in the task", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("tracking error [m, or state units]")
    if len(t) > 1:
        _limits(axes[0, 1], t, np.asarray(loop.us, dtype=float), problem.u_lower, problem.u_upper, step=True)
    _limits(axes[1, 0], t, np.asarray(loop.xs, dtype=float)[:, :model.nq], model.lower_limit, model.upper_limit)
    if len(t) > 2:  # limits far away would squash the trajectories
        for ax in (axes[0, 1], axes[1, 0]):
            _keep_in_view(ax, ax.get_lines())
    axes[0, 1].set_ylabel("torque u [N·m, N]")
    axes[1, 0].set_ylabel("position q [rad, m]")
    ax = axes[1, 1]
    ms = 1e3 * np.asarray(loop.solve_time, dtype=float)
    if ms.size:
        ax.step(t, _held(ms), where="post", lw=1.2, label="solve time of the step")
    ax.axhline(1e3 * loop.dt, color="tab:red", ls="--", lw=1.0, label=f"control period {1e3 * loop.dt:g} ms")
    ax.set_yscale("log")  # the first solve (to convergence, maybe compiling) dwarfs the others
    ax.set_ylabel("solve time [ms]")
    if measured:
        _measured_force_panels(axes[2], loop, problem)
    for ax in axes.ravel():
        _pushes(ax, loop)
        ax.set_xlabel("time [s]")
        ax.grid(True, alpha=0.3)
    for ax in (axes[0, 0], axes[1, 1]):
        ax.legend(fontsize=7)
    axes[1, 0].legend(title="joint", fontsize=7, ncol=2)
    limit = "to convergence" if loop.iteration_limit is None else f"{loop.iteration_limit} iteration(s)"
    fig.suptitle(f"{loop.problem or problem.name}: MPC with {loop.solver}, {limit} per step"
                 + (f" (stopped: {loop.stopped})" if loop.stopped else ""))
    fig.tight_layout()
    return fig


def plot_closed_loop(loop: ClosedLoop, path, problem: Problem | None = None) -> str:
    """Write the closed-loop figure described in the module docstring to ``path``; returns the path.

    ``problem`` is the controller's (default: the one :func:`optdyn.ocp.task.problem_of`
    finds: ``loop.source``, set by :func:`optdyn.simulate`, or by the loop's name and params).
    """
    return _save(closed_loop_figure(loop, problem), path)
