"""How far a trajectory is from achieving its task, independently of the solver's status.

``Result.converged`` only says that the solver's own tolerance was met. Whether the robot
did what was asked is measured here, on the trajectory itself:

* targets: for every target residual of the terminal and running costs (frame position,
  pose, orientation, velocity, centre of mass; a reference trajectory's last entry), its
  error at the final node: a distance (m), an angle (rad) or a twist error;
* violation: the largest violation of control bounds, path inequalities (nodes 1..N) and
  terminal equalities (:meth:`optdyn.ocp.problem.Problem.violation`);
* active bounds: how many controls sit on a finite bound (within 1e-9 relative).

For a problem with contacts, :func:`contact_forces` gives the contact forces λ along a
trajectory, per contact, :func:`world_contact_forces` their forces in world axes and
:func:`friction_margins` how far inside its friction cone each one is. :func:`tracking_errors` follows the task's targets along any
sequence of states (a closed loop's, say).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import dynamics as dyn

from ..ocp import contact_phases
from ..ocp.constraints import StateEquality
from ..ocp.contact_residuals import MU, check_friction, tangent_basis
from ..ocp.costs import PointSet, cost_terms
from ..ocp.problem import Problem, _array
from ..ocp.relative_residuals import RelativeMotion
from ..ocp.residuals import (CoMPositionResidual, FrameOrientationResidual, FramePlacementResidual,
                             FramePositionResidual, FrameVelocityResidual, StateResidual)
from ..ocp.task import frame_targets

TARGET_RESIDUALS = (FramePositionResidual, FramePlacementResidual, FrameOrientationResidual, FrameVelocityResidual,
                    CoMPositionResidual)


@dataclass
class Target:
    """A target term at the final node. ``kind``: "position" (point ``frame`` + offset to
    ``target`` (3,), ``distance`` m), "pose" (``distance`` m of the frame origin from
    ``target`` and ``angle`` rad of its rotation from the target's), "orientation" (``angle``),
    "velocity" (``distance`` = ‖V − V*‖ of the twist, m/s and rad/s; ``target`` V* (6,)), "com"
    (``frame`` "centre of mass", ``distance`` m)."""

    frame: str
    target: np.ndarray
    distance: float  # at the final node, m (nan where the kind has no distance)
    kind: str = "position"
    angle: float = np.nan  # rad


def _target(r, x: np.ndarray, nu: int, finite: bool) -> Target:
    """The :class:`Target` of the target residual r at the final state x."""
    e = r.final_value(x, nu) if finite else np.full(r.size, np.nan)
    if isinstance(r, FramePositionResidual):
        return Target(r.frame, r.target.reshape(-1, 3)[-1].copy(), float(np.linalg.norm(e)))
    if isinstance(r, CoMPositionResidual):
        return Target("centre of mass", r.target.reshape(-1, 3)[-1].copy(), float(np.linalg.norm(e)), "com")
    if isinstance(r, FrameVelocityResidual):
        return Target(r.motion.frame, r.target.reshape(-1, 6)[-1].copy(), float(np.linalg.norm(e)), "velocity")
    T = r.target.reshape(-1, 4, 4)[-1]
    angle = float(np.linalg.norm(e[-3:]))  # log₃ of the relative rotation: its angle
    if isinstance(r, FrameOrientationResidual):
        return Target(r.motion.frame, T[:3, :3].copy(), np.nan, "orientation", angle)
    p = r.motion(np.asarray(x, dtype=float)[None])[1][0] if finite else np.full(3, np.nan)
    return Target(r.motion.frame, T[:3, 3].copy(), float(np.linalg.norm(p - T[:3, 3])), "pose", angle)


@dataclass
class TaskErrors:
    """Task-level errors of a trajectory (module docstring)."""

    targets: list[Target]
    violation: float
    active_bounds: int
    controls: int  # N·nu, the number of control entries


def task_errors(problem: Problem, xs: np.ndarray, us: np.ndarray) -> TaskErrors:
    """Task errors of the trajectory xs (N+1, nx), us (N, nu) of ``problem``.

    Non-finite trajectories give NaN distances and violation (never an exception).
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    if xs.shape != (problem.N + 1, problem.nx) or us.shape != (problem.N, problem.nu):
        raise ValueError(f"xs, us: expected shapes {(problem.N + 1, problem.nx)} and {(problem.N, problem.nu)}, "
                         f"got {xs.shape} and {us.shape}")
    finite = bool(np.all(np.isfinite(xs)))
    residuals = [r for c in cost_terms(problem.terminal_cost) + cost_terms(problem.running_cost)
                 for r in c.residuals() if isinstance(r, TARGET_RESIDUALS)]
    seen, targets = set(), []
    for r in residuals:
        t = _target(r, xs[-1], problem.nu, finite)
        key = (t.kind, t.frame, tuple(np.ravel(getattr(r, "offset", ()))), tuple(np.round(t.target, 12).ravel()))
        if key not in seen:
            seen.add(key)
            targets.append(t)
    violation = problem.violation(xs, us) if finite else np.nan
    tol = 1e-9 * (1.0 + np.abs(us))
    lo = np.isfinite(problem.u_lower) & (us <= problem.u_lower + tol)
    hi = np.isfinite(problem.u_upper) & (us >= problem.u_upper - tol)
    return TaskErrors(targets, violation, int(np.count_nonzero(lo | hi)), us.size)


def task_lines(errors: TaskErrors) -> list[str]:
    """Summary lines (label padded to 12 characters) of :class:`TaskErrors`."""
    lines = [f"target      {_describe(t)} at the final node" for t in errors.targets]
    lines.append(f"violation   {errors.violation:.3g} (largest of control bounds, path and terminal constraints)")
    lines.append(f"bounds      {errors.active_bounds} of {errors.controls} controls on a bound")
    return lines


def _describe(t: Target) -> str:
    """One target's error, e.g. "tool0: 0.002 m from (0.4, 0.3, 0.4)"."""
    where = f"({', '.join(f'{v:g}' for v in np.ravel(t.target))})"
    if t.kind in ("position", "com"):
        return f"{t.frame}: {t.distance:.4g} m from {where}"
    if t.kind == "pose":
        return f"{t.frame} pose: {t.distance:.4g} m from {where}, {t.angle:.4g} rad from the target rotation"
    if t.kind == "orientation":
        return f"{t.frame} orientation: {t.angle:.4g} rad from the target rotation"
    return f"{t.frame} velocity: {t.distance:.4g} (‖twist − target‖, m/s and rad/s) from {where}"


def tracking_errors(problem: Problem, xs, t=None) -> dict[str, np.ndarray]:
    """How far each state of ``xs`` (K, nx) is from the task's targets: {label: (K,)}.

    One entry per frame target of the task (:func:`optdyn.ocp.task.frame_targets`): the
    distance of its point to the target ("tool0 to (0.4, 0.3, 0.4) [m]"); then one per
    terminal :class:`~optdyn.constraints.StateEquality`: ‖x[indices] − target‖ ("state to the
    goal [‖x − x*‖]", rad and rad/s mixed). {} if the task has neither. Given the states'
    times ``t`` (K,) (s, from the task's start), a reference trajectory (a target per knot: a
    swing foot's arc, say) is followed in time — the distance to its point at t, linear between
    knots k·dt and held beyond its ends ("FL_FOOT to its reference path, ending at (…) [m]");
    without ``t``, to its last point.
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    xs = np.asarray(xs, dtype=float)
    if xs.ndim != 2 or xs.shape[1] != problem.nx:
        raise ValueError(f"xs: expected states of shape (K, {problem.nx}), got shape {xs.shape}")
    if t is not None:
        t = np.asarray(t, dtype=float)
        if t.shape != (xs.shape[0],) or not np.all(np.isfinite(t)):
            raise ValueError(f"t: expected the {xs.shape[0]} finite times of xs, got {np.shape(t)}")
    model, out, targets = problem.model, {}, frame_targets(problem)
    if targets:
        points = PointSet(model, [(g.frame, g.offset) for g in targets]).positions(xs[:, :model.nq])  # (K, P, 3)
        for g, p in zip(targets, points.transpose(1, 0, 2)):
            where = ", ".join(f"{v:g}" for v in g.target)
            label, ref = f"{g.frame} to ({where})", g.target
            if t is not None and g.path is not None:
                label = f"{g.frame} to its reference path, ending at ({where})"
                ref = np.stack([np.interp(t, g.knots * problem.dt, c) for c in g.path.T], axis=1)
            if g.relative_to is None:
                out[f"{label} [m]"] = np.linalg.norm(p - ref, axis=1)
                continue
            local = RelativeMotion(model, g.frame, g.relative_to).pose(xs)[1]  # in the other frame's axes
            out[f"{label} in {g.relative_to} [m]"] = np.linalg.norm(local - ref, axis=1)
    goals = [c for c in problem.terminal_constraints if isinstance(c, StateEquality)]
    for k, c in enumerate(goals):
        out["state to the goal" + (f" {k}" if len(goals) > 1 else "") + " [‖x − x*‖]"] = np.linalg.norm(
            xs[:, c.indices] - c.target, axis=1)
    return out


def contact_forces(prob: Problem, xs, us) -> dict[str, np.ndarray]:
    """The contact forces λ at every knot k = 0 … N−1 of (xs (N+1, nx), us (N, nu)), per
    contact: {frame: (N, 3 or 6)}, the force (3d contact) or wrench [force; torque] (6d) of
    that frame in its contact's axes (:class:`dynamics.Contact` ``reference``), NaN at the
    knots where the frame is not in contact.

    λ_k is the contact dynamics' force of interval k's contacts at the start of the interval,
    at (q_k, v_k⁺, B u_k), v_k⁺ the velocity after the impulse where interval k starts with
    one (:mod:`optdyn.ocp.contact_phases`). A frame that is a 3d contact in one interval and
    a 6d one in another has 6 columns, the last three NaN where it is 3d. A problem without
    contacts gives {}.
    """
    if not isinstance(prob, Problem):
        raise ValueError(f"prob: expected an optdyn.Problem, got {type(prob).__name__}")
    xs = _array(xs, (prob.N + 1, prob.nx), "xs")
    us = _array(us, (prob.N, prob.nu), "us")
    if prob.contacts is None:
        return {}
    lams = contact_phases.knot_contact_forces(prob.model, prob.contacts, prob.impulses, prob.actuated, xs, us,
                                              prob.contact_damping)
    dims: dict[str, int] = {}
    for cs in prob.contacts:
        for c in cs:
            dims[c.frame] = max(dims.get(c.frame, 0), c.dim)
    out = {frame: np.full((prob.N, d), np.nan) for frame, d in dims.items()}
    for k, (cs, lam) in enumerate(zip(prob.contacts, lams)):
        row = 0
        for c in cs:
            out[c.frame][k, :c.dim] = lam[row:row + c.dim]
            row += c.dim
    return out


def world_contact_forces(prob: Problem, xs, us) -> dict[str, np.ndarray]:
    """The forces of :func:`contact_forces` in world axes: {frame: (N, 3)}, NaN at the knots
    where the frame is not in contact.

    A contact with ``reference="local_world_aligned"`` already gives its force in world axes;
    one with ``"local"`` gives f_c in the frame's axes, here f = R_c(q_k) f_c. A 6d contact's
    force is the linear part of its wrench (the torque is left out).
    """
    forces = contact_forces(prob, xs, us)  # checks prob, xs, us
    out = {frame: f[:, :3].copy() for frame, f in forces.items()}
    xs = np.asarray(xs, dtype=float)
    for k, cs in enumerate(prob.contacts or ()):
        for c in cs:
            if c.reference == "local":
                R, _ = dyn.frame_placement(prob.model, xs[k, :prob.model.nq], c.frame)
                out[c.frame][k] = R @ out[c.frame][k]
    return out


def loop_contact_forces(prob: Problem, xs, us) -> dict[str, np.ndarray]:
    """The world-frame contact forces of :func:`world_contact_forces` along the n control steps
    of a closed loop, its states xs (n + 1, nx) and held controls us (n, nu): step i under the
    contacts of the task's interval i, its last interval past its end (as the controller's
    windows, :meth:`optdyn.Problem.window`): {frame: (n, 3)}, NaN where the frame is not in
    contact and from the first non-finite state or control on. A problem without contacts
    gives {}."""
    if not isinstance(prob, Problem):
        raise ValueError(f"prob: expected an optdyn.Problem, got {type(prob).__name__}")
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    n = us.shape[0] if us.ndim == 2 else -1
    if us.shape != (n, prob.nu) or xs.shape != (n + 1, prob.nx):
        raise ValueError(f"xs, us: expected shapes (n + 1, {prob.nx}) and (n, {prob.nu}), got {xs.shape} and "
                         f"{us.shape}")
    if prob.contacts is None:
        return {}
    out = {c.frame: np.full((n, 3), np.nan) for cs in prob.contacts for c in cs}
    finite = np.all(np.isfinite(xs[:n]), axis=1) & np.all(np.isfinite(us), axis=1)
    m = n if finite.all() else int(np.argmin(finite))  # the steps before the first non-finite one
    if m:
        ends = np.vstack([xs[:m], xs[m - 1:m]])  # the last state is not used: a finite one stands in
        for frame, f in world_contact_forces(prob.window(0, m), ends, us[:m]).items():
            out[frame][:m] = f
    return out


def friction_margins(forces: dict[str, np.ndarray], mu: float = MU,
                     normal=(0.0, 0.0, 1.0)) -> dict[str, np.ndarray]:
    """μ f_n − ‖f_t‖ at every knot, per contact: {frame: (N,)}, ≥ 0 inside the friction cone
    of half-angle atan μ (Coulomb), NaN where not in contact.

    Args:
        forces: world-frame contact forces {frame: (N, 3)} (:func:`world_contact_forces`).
        mu: friction coefficient, > 0.
        normal: the ground's normal (3,) in world axes (default: flat ground, +z); f_n = f·n
            and f_t = f − f_n n.
    """
    mu, n = check_friction(mu), tangent_basis(normal)[2]
    out = {}
    for frame, f in forces.items():
        f = np.asarray(f, dtype=float)
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"forces[{frame!r}]: expected shape (N, 3), got {f.shape}")
        fn = f @ n
        out[frame] = mu * fn - np.linalg.norm(f - fn[:, None] * n, axis=1)
    return out


@dataclass(frozen=True)
class BaseMotion:
    """How a floating base moved along states: its ``lowest`` height (m), its ``largest_tilt``
    (degrees between its z axis and the vertical), how far it ``advanced`` along world x (m,
    first state to last) and how far the task ``commanded`` it to over those times (m; the
    base reference of its per-knot state cost at the last time minus at the first, NaN if it
    has none)."""

    lowest: float
    largest_tilt: float
    advanced: float
    commanded: float

    def fell(self, height: float, tilt: float) -> bool:
        """Whether the base went below ``height`` (m) or tilted past ``tilt`` (degrees)."""
        return bool(self.lowest < height or self.largest_tilt > tilt)


def base_motion(problem: Problem, xs, t) -> BaseMotion:
    """The :class:`BaseMotion` of the free-flyer root of ``problem``'s robot along the states
    ``xs`` (K, nx) at the times ``t`` (K,) s; ValueError for a robot without one."""
    model = problem.model
    if not model.joint_types or model.joint_types[0] != "free-flyer":
        raise ValueError(f"problem: expected a robot on a free-flyer root, got joints {list(model.joint_types)}")
    xs, t = np.asarray(xs, dtype=float), np.asarray(t, dtype=float)
    if xs.ndim != 2 or xs.shape[1] != problem.nx or t.shape != (xs.shape[0],) or not len(t):
        raise ValueError(f"xs, t: expected (K, {problem.nx}) states at K times, got {xs.shape} and {t.shape}")
    qx, qy = xs[:, 3], xs[:, 4]
    tilt = np.degrees(np.arccos(np.clip(1.0 - 2.0 * (qx ** 2 + qy ** 2), -1.0, 1.0)))
    commanded = np.nan
    for term in cost_terms(problem.running_cost):
        reference = getattr(getattr(term, "residual", None), "reference", None)
        if isinstance(term.residual, StateResidual) and reference is not None and reference.ndim == 2:
            knots = np.arange(reference.shape[0]) * problem.dt
            commanded = float(np.interp(t[-1], knots, reference[:, 0]) - np.interp(t[0], knots, reference[:, 0]))
            break
    return BaseMotion(float(xs[:, 2].min()), float(tilt.max()), float(xs[-1, 0] - xs[0, 0]), commanded)
