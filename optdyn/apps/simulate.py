"""Closed-loop simulation of a model predictive controller against a finer plant.

``simulate(mpc, duration)`` runs :class:`optdyn.MPC` once per control interval ``dt`` of its
problem: it measures the plant's state (with optional noise), asks the controller for a
control and holds it over the interval, delayed by the optional computation ``delay``. The
plant integrates the robot (the controller's model, or another one with the same joints, e.g.
with scaled masses) by ten times finer RK4 steps than the controller's problem, and applies
the disturbances: a :class:`Push` is a world-frame force on a frame's body, converted to the
body-fixed ``f_ext`` of :func:`dynamics.rnea` at the plant's configuration at the start of
every fine step (:func:`dynamics.frame_force`).

A task whose data vary along its intervals (:meth:`optdyn.Problem.window`) acts on the plant
at the time they are planned for: during control interval i the plant gets the task's
forces of interval i, and with a contact sequence it integrates the contact dynamics of
interval i's contacts — rigid contacts at the planned times and places (the plant of
Crocoddyl's and most legged-MPC studies: the ground holds a foot wherever the plan puts it
in contact, pulls as well as pushes, and never catches a foot early or late). Where interval
i gains contacts, the plant passes the impulse map (restitution 0) at t_i, after the
controller measured: the state measured at a touchdown is the one before the impulse, as
the task's node i is (:mod:`optdyn.ocp.windows`). Past the task's end its last interval's hold.

With ``plant="mujoco"`` (or an :class:`optdyn.MujocoPlant`) the plant is MuJoCo instead: the
robot on a floor, its contacts wherever its feet meet it — a touchdown early or late, a foot
that slips or leaves the ground, are the plant's business, while the controller's windows go
on with the task's contact sequence. Between control updates it applies, at each of its own
steps, the solver's feedback policy ū_0 + K_0 (x ⊖ x̄(s)) from the plan's state a fraction s
into the interval (to first order, x̄_0 ⊕ s (x̄_1 ⊖ x̄_0)), clipped to the task's control
bounds; a push is MuJoCo's ``xfrc_applied`` at the frame, and the loop records the contact
forces MuJoCo measured on each foot (``ClosedLoop.contact_forces``).
"""
from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

import dynamics
from dynamics._checks import check_frame
from dynamics.forces import frame_force
from dynamics.model import Model

from ..ocp import contact_phases, integrators, windows
from ..ocp.problem import Problem
from ..ocp.state import state_difference_batch
from ..solvers.mpc import MPC
from .clearance import margin_constraints, margins_at
from .mujoco_plant import MujocoPlant, plant_for

REFINEMENT = 10
"""Plant RK4 steps per controller integration step."""


@dataclass(frozen=True)
class Push:
    """A world-frame force ``force`` (3,) N on the body of ``frame``, applied at the frame's
    origin from ``start`` for ``duration`` s."""

    frame: str
    force: tuple
    start: float
    duration: float

    def __post_init__(self) -> None:
        if not isinstance(self.frame, str):
            raise ValueError(f"frame: expected a frame name (str), got {self.frame!r}")
        f = np.asarray(self.force, dtype=float)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ValueError(f"force: expected 3 finite numbers (N, world frame), got {self.force!r}")
        object.__setattr__(self, "force", tuple(float(v) for v in f))
        for name in ("start", "duration"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name}: expected a finite time ≥ 0 s, got {v!r}")

    def active(self, t: float) -> bool:
        """Whether the push acts at time ``t``."""
        return self.start <= t < self.start + self.duration

    def f_ext(self, model: Model, q: np.ndarray) -> np.ndarray:
        """The push as ``f_ext`` (njoints, 6) of ``model`` at configuration ``q``."""
        return frame_force(model, q, self.frame, np.concatenate([self.force, np.zeros(3)]))


INTERRUPTED = "interrupted (Ctrl-C)"
"""How ``ClosedLoop.stopped`` begins when Ctrl-C ended the loop."""


@dataclass
class ClosedLoop:
    """What :func:`simulate` recorded, one row per control step i at t_i = i·dt.

    Attributes:
        t: times (n + 1,), s; xs: the plant's true states at those times (n + 1, nx).
        us: the controls computed at each step (n, nu); gains: their feedback gains (n, nu, ndx).
        solve_time: wall time of each :meth:`MPC.step` (n,), s; dt: the control period, s.
        cost: the objective of each step's horizon at its solution (n,).
        margins: the least margin of each path constraint, then each stage constraint, of the
            problem over the plant's states during each control interval, its fine steps and
            both ends included, with the control in force (n, m; :func:`optdyn.apps.clearance.margins_at`:
            ≥ 0 where the constraint held).
        iterations: solver iterations per step (n,); status: each solve's status.
        disturbances: the pushes applied.
        stopped: why the loop ended before ``duration`` ("" if it ran to the end): Ctrl-C
            (:attr:`interrupted`) or a diverged plant; the arrays then hold the steps
            completed before it.
        solver: the controller's solver; iteration_limit: its iterations per step (None: to
            convergence); warm_start: how it warm-started; horizon: "receding", "shrinking" or
            a number of intervals (:class:`optdyn.MPC`).
        problem: name of the controller's problem; params: its construction parameters
            (as :class:`~optdyn.solvers.result.Result` has them, so that
            :func:`optdyn.ocp.task.problem_of` finds the problem of a reopened loop).
        extra: ``problem_record`` of a reopened loop (:func:`optdyn.apps.io.save_closed_loop`).
        source: the problem as the controller started it (x0 the loop's first state), set by
            :func:`simulate`; not saved to disk.
        plant: "optdyn" (the library's own dynamics) or "mujoco" (:class:`optdyn.MujocoPlant`).
        contact_forces: the world-frame forces the plant's floor exerted on each foot, mean over
            each control interval (NaN where the foot never touched it), {frame: (n, 3)} N —
            MuJoCo's measured contact forces (empty
            for the library's plant, whose forces follow from the plan: :func:`optdyn.apps.report.loop_contact_forces`).
    """

    t: np.ndarray
    xs: np.ndarray
    us: np.ndarray
    gains: np.ndarray
    solve_time: np.ndarray
    cost: np.ndarray
    margins: np.ndarray
    iterations: np.ndarray
    status: list[str]
    dt: float
    disturbances: tuple = field(default_factory=tuple)
    stopped: str = ""
    solver: str = ""
    iteration_limit: int | None = None
    warm_start: str = ""
    horizon: str = "receding"
    problem: str = ""
    params: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    source: Problem | None = field(default=None, repr=False, compare=False)
    plant: str = "optdyn"
    contact_forces: dict = field(default_factory=dict)

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C ended the loop."""
        return self.stopped.startswith(INTERRUPTED)


def check_push(model: Model, push: Push) -> None:
    """ValueError unless ``push`` is a :class:`Push` on a frame of ``model`` that moves."""
    if not isinstance(push, Push):
        raise ValueError(f"disturbances: expected optdyn.Push objects, got {type(push).__name__}")
    if check_frame(model, push.frame).body < 0:
        raise ValueError(f"frame: {push.frame!r} is fixed on the base; a push needs a moving body")


def _plant(mpc: MPC, plant):
    """The plant's integrator of control intervals: the library's (``plant`` None or a Model)
    or MuJoCo's ("mujoco" or a :class:`MujocoPlant`); ValueError naming ``plant`` otherwise."""
    task = mpc.task
    if isinstance(plant, str):
        if plant != "mujoco":
            raise ValueError(f"plant: expected None, a dynamics.Model, 'mujoco' or an optdyn.MujocoPlant, "
                             f"got {plant!r}")
        return _MujocoIntervals(task, plant_for(task))
    if isinstance(plant, MujocoPlant):
        return _MujocoIntervals(task, plant)
    model = task.model
    if plant is None:
        plant = model
    if not isinstance(plant, Model):
        raise ValueError(f"plant: expected None, a dynamics.Model, 'mujoco' or an optdyn.MujocoPlant, "
                         f"got {type(plant).__name__}")
    if list(plant.joint_names) != list(model.joint_names) or (plant.nq, plant.nv) != (model.nq, model.nv) \
            or not np.array_equal(plant.nvs, model.nvs):
        raise ValueError(f"plant: its joints {list(plant.joint_names)} (nq {plant.nq}, nv {plant.nv}) differ from "
                         f"the controller's {list(model.joint_names)} (nq {model.nq}, nv {model.nv})")
    return _PlantIntervals(task, plant, task.dt / (REFINEMENT * task.substeps))


def _noise(noise, ndx: int) -> np.ndarray | None:
    if noise is None:
        return None
    s = np.broadcast_to(np.asarray(noise, dtype=float), (ndx,)) if np.ndim(noise) == 0 else np.asarray(noise, float)
    if s.shape != (ndx,) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"noise: expected a standard deviation ≥ 0, scalar or ({ndx},) (tangent space), "
                         f"got {noise!r}")
    return s


def simulate(mpc: MPC, duration: float, plant=None, disturbances: Sequence[Push] = (),
             noise=None, delay: float = 0.0, seed: int = 0) -> ClosedLoop:
    """Run the fresh controller ``mpc`` in closed loop for ``duration`` s (rounded to whole
    control periods) from its problem's x0 (module docstring). Ctrl-C or a diverging plant
    end the loop early with what was recorded (``ClosedLoop.stopped`` says why).

    Args:
        plant: the simulated robot: None (the controller's model), a :class:`dynamics.Model`
            with the controller's joints, "mujoco" (:func:`optdyn.apps.mujoco_plant.plant_for`
            the task: its feet, its floor, stiff contact) or an :class:`optdyn.MujocoPlant`.
        disturbances: :class:`Push` es.
        noise: standard deviation of Gaussian measurement noise added to the state in the
            tangent space (scalar or (ndx,)), or None; ``seed`` seeds it.
        delay: s ≥ 0, rounded to the plant's step: the control computed from the state at t
            acts from t + delay (the previous control until then; the first one from t = 0).
    """
    if not isinstance(mpc, MPC):
        raise ValueError(f"mpc: expected an optdyn.MPC, got {type(mpc).__name__}")
    if mpc.result is not None:
        raise ValueError("mpc: expected a fresh controller (its clock starts at the first step); this one has run")
    p = mpc.problem
    for name, v in (("duration", duration), ("delay", delay)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v) \
                or v < 0:
            raise ValueError(f"{name}: expected a finite time ≥ 0 s, got {v!r}")
    plant_at = _plant(mpc, plant)
    pushes = tuple(disturbances)
    for d in pushes:
        check_push(plant_at.model, d)
    sigma = _noise(noise, p.ndx)
    rng = np.random.default_rng(seed)
    fine = plant_at.fine  # plant steps per control interval
    lag = int(round(delay / (p.dt / fine)))
    n = int(round(duration / p.dt))
    xs, us = np.empty((n + 1, p.nx)), np.empty((n, p.nu))
    gains, solve_time, cost = np.empty((n, p.nu, p.ndx)), np.empty(n), np.empty(n)
    margins = np.empty((n, len(margin_constraints(p))))
    iterations, status = np.empty(n, dtype=np.int64), []
    source = copy.copy(mpc.task)  # the record keeps the task as the loop began, whatever the caller rebinds later
    policy = plant_at.policy(n, lag, us, gains)
    x = p.x0.copy()
    xs[0] = x
    plant_at.reset(x, n)
    done, stopped = 0, ""
    try:
        for i in range(n):
            measured = x if sigma is None else p.state_integrate(x, sigma * rng.standard_normal(p.ndx))
            t0 = time.perf_counter()
            u, K = mpc.step(measured, i * p.dt)
            if mpc.result.status == "interrupted":  # Ctrl-C inside the solve (optdyn.solvers.runtime)
                raise KeyboardInterrupt
            solve_time[i] = time.perf_counter() - t0
            us[i], gains[i], cost[i] = u, K, mpc.result.cost
            iterations[i] = mpc.result.iterations
            status.append(mpc.result.status)
            plant_at.planned(i, mpc.result.xs[:2], p)
            x, least = plant_at.interval(i, x, policy, pushes)
            if not np.all(np.isfinite(x)):
                stopped = (f"the plant diverged between t = {i * p.dt:g} and {(i + 1) * p.dt:g} s"
                           + plant_at.why_diverged(gains[: i + 1], xs[: i + 1], p.dt))
                break
            margins[i] = least
            xs[i + 1] = x
            done = i + 1
    except KeyboardInterrupt:
        stopped = f"{INTERRUPTED} at t = {done * p.dt:g} s"
    task = mpc.task
    return ClosedLoop(t=np.arange(done + 1) * p.dt, xs=xs[: done + 1], us=us[:done], gains=gains[:done],
                      solve_time=solve_time[:done], cost=cost[:done], margins=margins[:done],
                      iterations=iterations[:done],
                      status=status[:done], dt=p.dt, disturbances=pushes, stopped=stopped, solver=mpc.solver,
                      iteration_limit=mpc.iterations, warm_start=mpc.warm_start, horizon=mpc.horizon,
                      problem=task.name, params=dict(task.params), source=source, plant=plant_at.name,
                      contact_forces=plant_at.contact_forces(done))


class _Intervals:
    """What both plants share: the task's constraints held over an interval (margins), the
    controls in force at each plant step."""

    name = ""
    fine = 1

    def __init__(self, task: Problem) -> None:
        self.task = task
        self.constrained = bool(margin_constraints(task))
        self.held: tuple[int, Problem] | None = None  # (interval, the task held there): the last one's

    def _row(self, i: int) -> int:
        return min(i, self.task.N - 1)

    def constraints(self, i: int, K: int) -> Problem:
        """The task at K knots all in interval i, for the margins of its constraints there
        (made once per interval; only the last interval's is kept: the loop moves on, and a window
        kept per interval would grow the heap, whose full garbage collections then stall a step)."""
        k = self._row(i)
        if self.held is None or self.held[0] != k or self.held[1].N != K:
            self.held = k, windows.window(self.task, np.full(K, k))  # the task's own terms if none vary
        return self.held[1]

    def why_diverged(self, gains: np.ndarray, xs: np.ndarray, dt: float) -> str:
        """Why the plant may have diverged under the policies of ``gains`` (n, nu, ndx) applied from
        the states ``xs`` (n, nx), one per control interval of ``dt`` ("" if not known)."""
        return ""

    def reset(self, x: np.ndarray, n: int) -> None:
        """Start the plant at ``x`` for n control intervals."""
        self.states = np.empty((self.fine + 1, self.task.nx))  # one control interval's
        self.applied = np.empty((self.fine + 1, self.task.nu))

    def planned(self, i: int, xs: np.ndarray, problem: Problem) -> None:
        """The controller's plan of step i: its first two states ``xs`` (2, nx) on ``problem``."""

    def contact_forces(self, n: int) -> dict:
        """The plant's measured contact forces of the first n intervals ({} if it measures none)."""
        return {}

    def margins(self, i: int) -> np.ndarray:
        """The least margins of the task's constraints over the states and controls of interval i."""
        if not self.constrained:
            return np.zeros(0)
        return margins_at(self.constraints(i, self.fine + 1), self.states, self.applied).min(axis=0)


class _PlantIntervals(_Intervals):
    """What the library's plant integrates during each control interval i of ``task`` (module
    docstring): its dynamics by RK4 steps of ``h`` with the task's forces and contacts of
    interval i (the last one's past the end), the control held."""

    name = "optdyn"

    def __init__(self, task: Problem, model: Model, h: float) -> None:
        super().__init__(task)
        self.model, self.fine = model, REFINEMENT * task.substeps
        a, b = integrators.METHODS["rk4"]
        self.ode = integrators.robot_ode(model, task.actuated)
        self.free = integrators.IntervalDynamics(self.ode, a, b, h, 1, task.f_ext[:1])  # f_ext set per interval
        self.phases: tuple[int, contact_phases.PhasedDynamics] | None = None  # (interval, its), with contacts

    def policy(self, n: int, lag: int, us: np.ndarray, gains: np.ndarray):
        """The control of plant step j at state x: the one computed ``lag`` steps before, held."""
        fine = self.fine
        return lambda j, x: us[max(j - lag, 0) // fine]

    def dynamics(self, i: int) -> tuple:
        """(the plant's interval dynamics, the task's own forces (njoints, 6), its step_batch) of interval i."""
        k, t = self._row(i), self.task
        forces = t.f_ext[k: k + 1] if t.f_ext.shape[0] > 1 else t.f_ext  # (1, njoints or 0, 6)
        known = forces[0] if forces.shape[1] else np.zeros((self.model.njoints, 6))
        if t.contacts is None:
            return self.free._replace(f_ext=forces), known, integrators.step_batch
        if self.phases is None or self.phases[0] != k:  # the last interval's only (_Intervals.constraints)
            f = self.free
            self.phases = k, contact_phases.phased_dynamics(self.model, t.actuated, self.ode.lie, f.a, f.b, f.dt, 1,
                                                            forces, [t.contacts[k]], t.contact_damping)
        return self.phases[1], known, contact_phases.step_batch

    def interval(self, i: int, x: np.ndarray, policy, pushes: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(the state at the end of control interval i from ``x``, the least margins of the
        task's constraints over it); a non-finite state if the plant diverged."""
        fine, model, h = self.fine, self.model, self.free.dt
        x = self.states[0] = self.touchdown(i, x)
        dyn, known, step_batch = self.dynamics(i)
        for j in range(i * fine, (i + 1) * fine):
            u_j = self.applied[j - i * fine] = policy(j, x)
            active = [d for d in pushes if d.active(j * h)]
            step = dyn
            if active:
                q = x[: model.nq]
                step = dyn._replace(f_ext=(known + sum(d.f_ext(model, q) for d in active))[None])
            try:
                x = step_batch(step, x[None], u_j[None])[0]
            except ValueError:  # the contact dynamics at a state the plant diverged to
                x = np.full_like(x, np.nan)
            if not np.all(np.isfinite(x)):
                return x, None
            self.states[j - i * fine + 1] = x
        self.applied[fine] = u_j
        return x, self.margins(i)

    def touchdown(self, i: int, x: np.ndarray) -> np.ndarray:
        """``x`` after the impulse map of the contacts that interval i gains (x itself if none)."""
        t = self.task
        if t.contacts is None or i == 0 or i >= t.N or not t.impulses[i]:
            return x
        nq = self.model.nq
        v = dynamics.impulse_dynamics(self.model, x[:nq], x[nq:], t.contacts[i], 0.0, t.contact_damping)[0]
        return np.concatenate([x[:nq], v])


class _MujocoIntervals(_Intervals):
    """The MuJoCo plant (:class:`MujocoPlant`) during each control interval of ``task``: its
    own steps of ``plant.timestep`` under the solver's feedback policy (module docstring), the
    pushes through ``xfrc_applied``, the contacts wherever its floor meets the feet."""

    name = "mujoco"

    def __init__(self, task: Problem, plant: MujocoPlant) -> None:
        super().__init__(task)
        if task.f_ext.shape[1] and np.any(task.f_ext):
            raise ValueError("plant: the MuJoCo plant does not apply a task's own external forces (f_ext); "
                             "give them as pushes")
        plant.bind(task.model, task.actuated)
        self.plant, self.model = plant, plant.model
        fine = task.dt / plant.timestep
        if abs(fine - round(fine)) > 1e-9 * fine or round(fine) < 1:
            raise ValueError(f"plant: its timestep {plant.timestep:g} s must divide the control period "
                             f"{task.dt:g} s")
        self.fine = int(round(fine))

    def reset(self, x: np.ndarray, n: int) -> None:
        super().reset(x, n)
        self.plant.reset(x)
        self._start = np.empty((n, self.task.nx))  # the plan's x̄_0 of each step
        self._slope = np.empty((n, self.task.ndx))  # x̄_1 ⊖ x̄_0
        self._forces = np.zeros((n, len(self.plant.feet), 3))  # each interval's mean, foot by foot

    def planned(self, i: int, xs: np.ndarray, problem: Problem) -> None:
        self._start[i] = xs[0]
        self._slope[i] = problem.state_difference(xs[0], xs[1])

    def policy(self, n: int, lag: int, us: np.ndarray, gains: np.ndarray):
        """The control of plant step j at state x: the feedback policy ū + K (x ⊖ x̄(s)) of the
        step computed ``lag`` steps before, x̄(s) the plan's state a fraction s into its first
        interval, to first order (x ⊖ x̄(s) ≈ x ⊖ x̄_0 − s (x̄_1 ⊖ x̄_0)); clipped to the bounds."""
        fine, lower, upper = self.fine, self.task.u_lower, self.task.u_upper
        topology, nq = self.task.model.topology, self.task.model.nq

        def control(j: int, x: np.ndarray) -> np.ndarray:  # at the plant's rate: the kernel, no checks
            m, r = divmod(max(j - lag, 0), fine)
            dx = state_difference_batch(topology, nq, self._start[m: m + 1], x[None])[0] - (r / fine) * self._slope[m]
            return np.minimum(np.maximum(us[m] + gains[m] @ dx, lower), upper)  # np.clip's, at less cost

        return control

    def interval(self, i: int, x: np.ndarray, policy, pushes: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(the state at the end of control interval i from ``x``, the least margins of the
        task's constraints over it); a non-finite state if MuJoCo diverged."""
        plant, fine = self.plant, self.fine
        self.states[0] = x
        pushed = False
        with plant.warnings_kept():
            for j in range(i * fine, (i + 1) * fine):
                active = [d for d in pushes if d.active(j * plant.timestep)]
                if active or pushed:
                    plant.clear_pushes()
                    for d in active:
                        plant.push(d.frame, d.force)
                pushed = bool(active)
                u_j = self.applied[j - i * fine] = policy(j, x)
                plant.step(u_j)
                x = plant.state()
                if plant.diverged():
                    return np.full_like(x, np.nan), None
                self.states[j - i * fine + 1] = x
                self._forces[i] += plant.foot_forces() / fine
        plant.clear_pushes()
        self.applied[fine] = u_j
        return x, self.margins(i)

    def why_diverged(self, gains: np.ndarray, xs: np.ndarray, dt: float) -> str:
        """MuJoCo's first warning (:attr:`MujocoPlant.warnings`), then the first control interval
        whose policy's gain on an actuated joint's own velocity, K_v,j, against the joint-space
        inertia M_jj at its start, is past the stability of the plant's explicit step h:
        h·K_v,j / M_jj > 1 (:mod:`optdyn.apps.mujoco_plant`), if one is."""
        said = f" (MuJoCo: {self.plant.warnings[0].rstrip('.')})" if self.plant.warnings else ""
        return said + self._unstable_feedback(gains, xs, dt)

    def _unstable_feedback(self, gains: np.ndarray, xs: np.ndarray, dt: float) -> str:
        h, dofs = self.plant.timestep, self.task.actuated
        inertia = self.plant.joint_inertias(xs)[:, dofs]
        gain = -gains[:, np.arange(dofs.size), self.task.model.nv + dofs]
        ratio = h * gain / inertia
        past = np.flatnonzero(ratio.max(axis=1) > 1.0)
        if not past.size:
            return ""
        i = past[0]
        a = int(np.argmax(ratio[i]))
        return (f"; from t = {i * dt:g} s the policy's gain on the velocity of {self.plant.actuated_joints[a]}, "
                f"{gain[i, a]:.3g} per unit of velocity on an inertia of {inertia[i, a]:.3g}, was past the stability "
                f"of the plant's explicit {h * 1e3:g} ms step (h·K/M = {ratio[i, a]:.2f} > 1; a smaller MujocoPlant "
                "timestep lowers it, unless the gain grew because the robot was falling)")

    def contact_forces(self, n: int) -> dict:
        """{foot: (n, 3)} the mean floor force of each interval, NaN where the foot never touched."""
        out = {frame: self._forces[:n, j].copy() for j, (frame, _) in enumerate(self.plant.feet)}
        for f in out.values():
            f[np.all(f == 0.0, axis=1)] = np.nan
        return out
