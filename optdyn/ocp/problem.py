"""The discrete-time optimal-control problem every solver sees (DDP, iLQR, IPOPT).

State x = [q; v] on the joints' manifold (nx = nq + nv coordinates, tangent
dimension ndx = 2·nv, :mod:`optdyn.ocp.state`), control u (nu) with τ = B u, B the selection
of the actuated joints (all joints by default; a floating root is unactuated), N intervals
of length ``dt``; interval k maps x_k to x_{k+1} = F(x_k, u_k) by ``substeps`` explicit
RK4 (or Euler) steps of dt/substeps with u_k held constant (:mod:`optdyn.ocp.integrators`).
All derivatives with respect to x are taken in the tangent space at x (δx with
x ⊕ δx, sizes ndx), and derivatives of F are expressed in the tangent space at F(x, u).
The problem is

    minimise   Σ_{k<N} dt·ℓ(x_k, u_k) + ℓ_N(x_N)
    subject to x_0 = x0,  x_{k+1} = F(x_k, u_k),
               u_lower ≤ u_k ≤ u_upper,
               c(x_k) ≥ 0 or = 0          at nodes k = 1..N   (path constraints on the state),
               g(x_k, u_k) ≥ 0 or = 0     at knots k = 0..N−1 (path constraints that depend on
                                                                the control: "stage constraints"),
               h(x_N) = 0                                      (terminal constraints).

A path constraint holds where its variables are free: on the state at nodes 1..N (x_0 is
given), on the control wherever u_k exists, k = 0..N−1 (the constraints of Crocoddyl's
running action models). Each row is an inequality (≥ 0) or an equality (= 0,
``Constraint.equality``: :class:`~optdyn.ocp.constraints.ResidualEquality`).

Every evaluation method is vectorised over knots (leading axis K) and computed in
compiled code; second-order tensors follow ``T[k, i, j, l] = ∂²f_i/∂y_j∂z_l``.
A state whose quaternions are not of unit norm (``x0``, ``xs_init``, a warm start) is
refused with a ValueError naming it: normalise with :func:`dynamics.normalize`.

External forces: ``f_ext`` gives the robot known external wrenches during the intervals,
constant (njoints, 6) or one set per interval (N, njoints, 6), in the kernels' convention
(:func:`dynamics.rnea`: [f; n] on joint i's body, in its frame, about its origin). Such a
force is fixed in the body frame: it follows the body as q varies, and the dynamics'
derivatives (hence DDP, iLQR and IPOPT) are those of that body-fixed force. A wrench known
in the WORLD frame at a frame is converted by :func:`frame_wrenches` at reference
configurations (the planned path): exact there, rotating with the body away from it.

Contacts: ``contacts`` gives one list of :class:`dynamics.Contact` per interval (the contact
sequence). Interval k then integrates the contact dynamics of its contacts, and where it
gains contacts over interval k−1 the state first passes the impulse map (restitution 0)
(:mod:`optdyn.ocp.contact_phases`); DDP, iLQR and IPOPT see that same discrete problem.

Writing one from a script::

    prob = Problem(model, x0, N=50, dt=0.02,
                   running_cost=StateCost(1e-2, x_ref) + ControlCost(1e-3),
                   terminal_cost=StateCost(1e3, x_goal))
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

from dynamics._checks import as_vector
from dynamics.batch import NO_FORCES
from dynamics.contact import Contact
from dynamics.contact_dynamics import DependentContacts
from dynamics.forces import frame_force
from dynamics.model import FREE_FLYER, JTYPE, Model
from dynamics.rnea import rnea

from . import contact_phases, integrators, shooting, windows
from .state import check_state, state_difference_batch, state_integrate_batch
from .constraints import Constraint, JointLimits, StateEquality, equality_rows, stack_constraints, summed_hessian
from .costs import Cost, terms_taking_forces


def _arrays_of(out: tuple | None, shapes: tuple, make: Callable) -> tuple[np.ndarray, ...]:
    """New arrays ``make(shape)`` of ``shapes`` if ``out`` is None, else ``out`` (checked: a
    ValueError naming it if the shapes differ), zeroed if ``make`` is np.zeros."""
    if out is None:
        return tuple(make(shape) for shape in shapes)
    if tuple(np.shape(a) for a in out) != shapes:
        raise ValueError(f"out: expected arrays of shapes {shapes}, got {tuple(np.shape(a) for a in out)}")
    if make is np.zeros:
        for a in out:
            a[...] = 0.0
    return tuple(out)


def _array(x, shape: tuple[int, ...], name: str, finite: bool = True) -> np.ndarray:
    """``x`` as a C-ordered float64 array of ``shape`` (ValueError naming ``name`` otherwise)."""
    try:
        a = np.array(x, dtype=float, order="C")
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected real numbers of shape {shape}, got {x!r}") from None
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got shape {a.shape}")
    if finite and not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    if not finite and np.any(np.isnan(a)):
        raise ValueError(f"{name}: expected numbers or ±inf, got NaN")
    return a


def _positive_int(n, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name}: expected an integer ≥ 1, got {n!r}")
    return int(n)


def actuated_dofs(model: Model, actuated) -> np.ndarray:
    """Tangent indices (nu,) of the actuated DoFs from ``actuated`` (see :class:`Problem`)."""
    nv, names = model.nv, list(model.joint_names)
    if actuated is None:
        floating = [i for i, t in enumerate(model.topology[:, JTYPE]) if t == FREE_FLYER and model.parent[i] < 0]
        return np.array([d for i in range(model.njoints) if i not in floating
                         for d in range(model.idx_vs[i], model.idx_vs[i] + model.nvs[i])], dtype=np.int64)
    if isinstance(actuated, str):
        actuated = [actuated]
    items = list(actuated) if not isinstance(actuated, np.ndarray) else None
    if items is not None and items and all(isinstance(a, str) for a in items):
        unknown = [a for a in items if a not in names]
        if unknown:
            raise ValueError(f"actuated: unknown joint(s) {unknown}; the model's joints are {names}")
        if len(set(items)) != len(items):
            raise ValueError(f"actuated: a joint is named twice in {items}")
        idx = sorted(names.index(a) for a in items)
        return np.array([d for i in idx for d in range(model.idx_vs[i], model.idx_vs[i] + model.nvs[i])],
                        dtype=np.int64)
    try:
        B = np.array(actuated, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"actuated: expected joint names or a selection matrix ({nv}, nu), got {actuated!r}") from None
    if B.ndim != 2 or B.shape[0] != nv or not 1 <= B.shape[1] <= nv:
        raise ValueError(f"actuated: expected joint names or a selection matrix of shape ({nv}, nu), "
                         f"1 ≤ nu ≤ {nv}, got shape {B.shape}")
    rows = np.argmax(B, axis=0)
    if not (np.all((B == 0) | (B == 1)) and np.all(B.sum(axis=0) == 1) and len(set(rows)) == B.shape[1]):
        raise ValueError("actuated: a selection matrix has entries 0/1, one 1 per column, in distinct rows")
    return rows.astype(np.int64)


SOLVERS = ("ddp", "ilqr", "ipopt")
"""The solvers' names (:func:`optdyn.solve`), the keys of a problem's ``solver_options``."""


def _solver_options(options) -> dict[str, dict]:
    """``options`` as {solver: {name: value}} with known solver names; ValueError otherwise."""
    options = {} if options is None else options
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise ValueError(f"solver_options: expected {{solver: {{option: value}}}}, got {options!r}")
    unknown = sorted(set(options) - set(SOLVERS))
    if unknown:
        raise ValueError(f"solver_options: unknown solver(s) {', '.join(unknown)}; known: {', '.join(SOLVERS)}")
    return {solver: dict(values) for solver, values in options.items()}


class Problem:
    """Optimal-control problem of a robot: dynamics, horizon, costs, constraints.

    Args:
        model: the robot (:class:`dynamics.Model`); x = [q; v], τ = B u.
        x0: initial state (nx,) = (nq + nv,), quaternions of unit norm.
        N: number of intervals (≥ 1); dt: interval length, s (> 0).
        running_cost: :class:`~optdyn.costs.Cost` ℓ(x, u) (integrated: weighted by dt).
        terminal_cost: :class:`~optdyn.costs.Cost` ℓ_N(x) (its control part is ignored). Its
            residuals (and those of ``terminal_constraints``) may give one reference, and its
            residual costs one weight, per node 0 … N: node N's are used, and a
            :meth:`window` ending at node m uses node m's (a trajectory to track to the end of
            every MPC horizon).
        substeps: integrator steps per interval (control held); integrator: "rk4" | "euler".
        u_lower, u_upper: control bounds (nu,), ±inf allowed (default: unbounded).
        path_constraints: constraints c ≥ 0 (or = 0: equalities) imposed at nodes 1..N on
            the state; those whose residual depends on the control are kept apart as
            ``stage_constraints``, imposed on (x_k, u_k) at the knots 0..N−1.
        terminal_constraints: constraints h(x_N) = 0.
        xs_init (N+1, nx), us_init (N, nu): initial guess (default: x0 repeated and the
            gravity torques g(q0) (minus the forces' Σ Jᵀ f_ext) at every interval, clipped
            to the bounds — the rest trajectory when x0 is at rest; with contacts, the controls
            holding q0 at rest under each interval's contacts where they can).
        name: problem name; params: construction parameters (recorded in results).
        actuated: the actuated joints, as joint names or a selection matrix B (nv, nu) of
            0/1 with one 1 per column (τ = B u); default: every joint except a free-flyer
            root (all of them on a fixed base).
        f_ext: known external forces on the robot, (njoints, 6) for every interval or
            (N, njoints, 6) one set per interval, body-fixed as in :func:`dynamics.rnea`
            (see the module docstring; :func:`frame_wrenches` builds them from world
            wrenches at frames). Default: none. The default ``us_init`` holds q0 against them.
        solver_options: the options this problem is best solved with, per solver
            ({"ddp": {...}, "ilqr": {...}, "ipopt": {...}}); :func:`optdyn.solve` starts from
            them, and options given to it take precedence (a problem with contacts is solved by
            the feasibility-driven forms of DDP and iLQR: :func:`optdyn.solve`).
        contacts: the contact sequence, one list of :class:`dynamics.Contact` per interval
            (N lists; an empty list: no contact, flight). Interval k integrates the contact
            dynamics of ``contacts[k]``; where it gains contacts over interval k−1, the impulse
            map comes first (module docstring, :mod:`optdyn.ocp.contact_phases`). Not
            together with ``f_ext``. Default: none (the free dynamics).
        contact_damping: μ ≥ 0 of the contact dynamics, J q̈ + γ = −μλ (m/s² per N), for
            contacts that are dependent somewhere — more constraint rows than independent
            motions of the frames, as four point feet on a robot whose legs cannot move them
            apart (Solo-8: no abduction joints) — where μ = 0 leaves the forces undetermined
            and the problem raises ValueError naming the contacts. μ > 0 gives the forces of
            least norm under a compliance: a stance foot sinks at μλ (m/s²), which its stance
            integrates (the 2.2 kg Solo-8's trot and walk: 0.5–0.7 mm at 1e-3, 4–6 mm at
            1e-2). A smaller μ conditions the problem worse: on those gaits at 1e-2 DDP, iLQR
            and IPOPT reach one optimum, at 1e-3 IPOPT converges and DDP and iLQR may stop at
            ``max_iter``. Pinocchio's ``ProximalSettings`` μ, without its proximal
            iterations. Default 0.
        done_at_end: whether the task is to be done at its end T = N·dt (at a goal, at rest,
            at T: a swing-up, a reach through a target) rather than held from then on (a
            regulator, a gait that goes on): a controller's horizon then shrinks to T instead of
            receding past it (:class:`optdyn.MPC`'s default ``horizon``), for with one solver
            iteration per step a receding horizon moves T along and never gets there (the
            pendulum 0.17 from upright at T, the Panda's hand 1.1 m off its target, measured).

    Attributes: the arguments, checked (``f_ext`` as an array (1 or N, njoints, 6); terminal
    terms with one reference per node at node N, the given ones in ``terminal_nodes`` (None if
    none has);
    ``path_constraints`` those on the state, ``stage_constraints`` those on the control), and
    ``dynamics``, the interval dynamics x_{k+1} = F_k(x_k, u_k) as the compiled entry points
    of :mod:`optdyn.ocp.shooting` take it (an :data:`~optdyn.ocp.integrators.IntervalDynamics`,
    or with ``contacts`` a :data:`~optdyn.ocp.contact_phases.PhasedDynamics`).
    """

    def __init__(self, model: Model, x0, N: int, dt: float, running_cost: Cost | None = None,
                 terminal_cost: Cost | None = None, *, substeps: int = 1, integrator: str = "rk4",
                 u_lower=None, u_upper=None, path_constraints: Sequence[Constraint] = (),
                 terminal_constraints: Sequence[Constraint] = (), xs_init=None, us_init=None,
                 name: str = "custom", params: dict | None = None, f_ext=None, actuated=None,
                 solver_options: dict | None = None, contacts: Sequence[Sequence[Contact]] | None = None,
                 contact_damping: float = 0.0, done_at_end: bool = False) -> None:
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a dynamics.Model, got {type(model).__name__}")
        self.model = model
        self.actuated = actuated_dofs(model, actuated)
        nx, ndx, nu = model.nq + model.nv, 2 * model.nv, self.actuated.size
        self.x0 = _array(x0, (nx,), "x0")
        check_state(model, self.x0, "x0")
        self.N = _positive_int(N, "N")
        if isinstance(dt, bool) or not (isinstance(dt, (int, float, np.integer, np.floating))
                                        and np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a finite interval length > 0 s, got {dt!r}")
        self.dt = float(dt)
        self.substeps = _positive_int(substeps, "substeps")
        if integrator not in integrators.METHODS:
            raise ValueError(f"integrator: expected one of {sorted(integrators.METHODS)}, got {integrator!r}")
        self.integrator = integrator
        for cost, arg in ((running_cost, "running_cost"), (terminal_cost, "terminal_cost")):
            if cost is not None and not isinstance(cost, Cost):
                raise ValueError(f"{arg}: expected an optdyn.costs.Cost or None, got {type(cost).__name__}")
            if cost is not None:
                cost.check_dims(ndx, nu, arg)
        self.running_cost, self.terminal_cost = running_cost, terminal_cost
        self.u_lower = _array(np.full(nu, -np.inf) if u_lower is None else u_lower, (nu,), "u_lower", False)
        self.u_upper = _array(np.full(nu, np.inf) if u_upper is None else u_upper, (nu,), "u_upper", False)
        if np.any(self.u_lower > self.u_upper):
            raise ValueError(f"u_lower: expected u_lower ≤ u_upper elementwise, got {self.u_lower} > {self.u_upper}")
        given = tuple(path_constraints)
        self.path_constraints = tuple(c for c in given if not getattr(c, "depends_on_u", False))
        self.stage_constraints = tuple(c for c in given if getattr(c, "depends_on_u", False))
        self.terminal_constraints = tuple(terminal_constraints)
        bad = [type(c.residual).__name__ for c in self.terminal_constraints if getattr(c, "depends_on_u", False)]
        if bad:
            raise ValueError(f"terminal_constraints: {bad[0]} depends on the control, which node N does not have "
                             "(pass it in path_constraints: it then holds at the knots 0..N−1)")
        if model.nq != model.nv and any(isinstance(c, StateEquality)
                                        for c in self.path_constraints + self.terminal_constraints):
            raise ValueError("terminal_constraints: StateEquality compares state coordinates, which needs nq = nv; "
                             f"{model.name!r} has nq = {model.nq}, nv = {model.nv} "
                             "(use costs or FramePositionEquality)")
        for cons, arg in ((given, "path_constraints"), (self.terminal_constraints, "terminal_constraints")):
            for c in cons:
                if not isinstance(c, Constraint):
                    raise ValueError(f"{arg}: expected optdyn.constraints.Constraint objects, got {type(c).__name__}")
                c.check_dims(ndx, arg)
                if getattr(c, "depends_on_u", False) and c.nu not in (None, nu):
                    raise ValueError(f"{arg}: {type(c).__name__} built for nu={c.nu}; the problem has nu={nu}")
        self.xs_init = (np.tile(self.x0, (self.N + 1, 1)) if xs_init is None
                        else _array(xs_init, (self.N + 1, nx), "xs_init"))
        check_state(model, self.xs_init, "xs_init")
        self.f_ext = self._check_forces(f_ext)
        self.contacts = None if contacts is None else contact_phases.check_contact_sequence(model, contacts, self.N)
        if self.contacts is not None and f_ext is not None:
            raise ValueError("f_ext: external forces are not supported together with contacts")
        self.contact_damping = self._check_damping(contact_damping)
        if self.contacts is not None and us_init is not None:  # at x0 (without a guess rest_controls meets them)
            with _damping_named():  # a rollout would only fail
                contact_phases.check_independent(model, self.x0[: model.nq], self.contacts, self.contact_damping)
        shared: dict = {contact_phases.DAMPING: self.contact_damping}  # what the residuals share
        for arg, terms, terminal in (("running_cost", [running_cost], False), ("terminal_cost", [terminal_cost], True),
                                     ("path_constraints", given, False),
                                     ("terminal_constraints", self.terminal_constraints, True)):
            for residual in (r for t in terms if t is not None for r in t.residuals()):
                residual.check_problem(self.contacts, self.actuated, arg, terminal, shared)
        self.terminal_nodes = windows.terminal_nodes(terminal_cost, self.terminal_constraints, self.N)
        if self.terminal_nodes is not None:  # one reference per node: node N's here, a window's at its end
            self.terminal_cost, self.terminal_constraints = windows.terminal_at(self.terminal_nodes, self.N)
        self.us_init = self.rest_controls() if us_init is None else _array(us_init, (self.N, nu), "us_init")
        if not isinstance(name, str):
            raise ValueError(f"name: expected a string, got {name!r}")
        self.name = name
        self.params = dict(params or {})
        self.solver_options = _solver_options(solver_options)
        if not isinstance(done_at_end, (bool, np.bool_)):
            raise ValueError(f"done_at_end: expected True or False, got {done_at_end!r}")
        self.done_at_end = bool(done_at_end)
        a, b = integrators.METHODS[integrator]
        ode = integrators.robot_ode(model, self.actuated)
        if self.contacts is None:
            self.dynamics = integrators.IntervalDynamics(ode, a, b, self.dt, self.substeps, self.f_ext)
        else:
            self._contact_knots = shared.get(contact_phases.ContactKnots)
            self.dynamics = contact_phases.phased_dynamics(model, self.actuated, ode.lie, a, b, self.dt,
                                                           self.substeps, self.f_ext, self.contacts,
                                                           self.contact_damping,
                                                           keep_forces=self._contact_knots is not None)
            self._watch_forces()

    _contact_knots = None  # the contact-force residuals' shared forces (contact_phases.ContactKnots), if any

    def _watch_forces(self) -> None:
        """Have the contact-force residuals look in the forces the dynamics' kernels keep
        (:data:`~optdyn.ocp.contact_phases.KnotForces`) before they solve for them: an
        interval's first Runge–Kutta stage has solved the contact dynamics at the knot.
        A window of the problem calls it for its own."""
        if self._contact_knots is not None:
            self._contact_knots.watch(self.dynamics, self.model)

    @property
    def takes_kept_forces(self) -> bool:
        """Whether a cost or constraint of the problem takes contact forces its dynamics'
        kernels keep (it has contact-force residuals, :mod:`optdyn.ocp.contact_residuals`):
        evaluated at a point after the dynamics there, they solve no contact dynamics of their own."""
        return self._contact_knots is not None

    def forces_record(self) -> contact_phases.KnotForces | None:
        """A record of the contact forces the dynamics' kernels keep
        (:data:`~optdyn.ocp.contact_phases.KnotForces`), shaped as the problem's own, nothing
        kept yet (None without contacts): for a kernel run on another thread
        (:meth:`dynamics_keeping`), while this one's kernels write the problem's record and its
        residuals read it; the problem takes its forces once that kernel has ended
        (:meth:`adopt_forces`)."""
        if self.contacts is None:
            return None
        return contact_phases.knot_forces_like(self.dynamics.forces, self.N)

    def dynamics_keeping(self, kept: contact_phases.KnotForces | None
                         ) -> integrators.IntervalDynamics | contact_phases.PhasedDynamics:
        """:attr:`dynamics` whose kernels keep the contact forces in ``kept`` (a
        :meth:`forces_record`) instead of the problem's record."""
        return self.dynamics if kept is None else self.dynamics._replace(forces=kept)

    def adopt_forces(self, kept: contact_phases.KnotForces | None) -> None:
        """The problem's kept contact forces ← those of ``kept`` (a :meth:`forces_record`
        that a kernel has finished writing)."""
        if kept is not None:
            for mine, theirs in zip(self.dynamics.forces, kept):
                mine[...] = theirs

    @property
    def _batch(self):
        """The batch kernels over knots of :attr:`dynamics`' record type (step, derivatives,
        stage records, Hessians): :mod:`~optdyn.ocp.integrators` or :mod:`~optdyn.ocp.contact_phases`."""
        return integrators if self.contacts is None else contact_phases

    def contacts_at(self, k: int) -> list[Contact]:
        """The contacts of interval k (0 … N−1): a list of :class:`dynamics.Contact` (empty
        without contacts)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < self.N:
            raise ValueError(f"k: expected an interval 0 … {self.N - 1}, got {k!r}")
        return [] if self.contacts is None else list(self.contacts[int(k)])

    def window(self, start: int, n: int) -> Problem:
        """Intervals start … start + n − 1 as a problem of their own (an MPC horizon): per-knot
        references and weights, the contact sequence and per-interval forces take their rows,
        the last interval repeated past N; the terminal terms are this problem's (at the
        window's last node where they give one reference per node); x0 and the guesses are the
        guess's from node ``start`` (:mod:`optdyn.ocp.windows`)."""
        for value, name, least in ((start, "start", 0), (n, "n", 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"{name}: expected an integer ≥ {least}, got {value!r}")
        return windows.window(self, windows.interval_rows(self.N, int(start), int(n)))

    @property
    def impulses(self) -> np.ndarray:
        """(N,) bool: the intervals that start with the impulse map (they gain contacts)."""
        if self.contacts is None:
            return np.zeros(self.N, dtype=bool)
        return self.dynamics.impulse.copy()

    def _check_forces(self, f_ext) -> np.ndarray:
        """``f_ext`` as the (1 or N, njoints, 6) array of the integrator kernels (NO_FORCES for None)."""
        if f_ext is None:
            return NO_FORCES
        nj = self.model.njoints
        try:
            F = np.array(f_ext, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"f_ext: expected real numbers of shape ({nj}, 6) or ({self.N}, {nj}, 6), "
                             f"got {f_ext!r}") from None
        if F.shape == (nj, 6):
            F = F[None]
        if F.shape not in ((1, nj, 6), (self.N, nj, 6)):
            raise ValueError(f"f_ext: expected shape ({nj}, 6) (every interval) or ({self.N}, {nj}, 6) "
                             f"(one per interval), got shape {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError("f_ext: expected finite values, got NaN or inf")
        return np.ascontiguousarray(F)

    def _check_damping(self, damping) -> float:
        """``contact_damping`` as a float; ValueError naming it unless a finite number ≥ 0 (0
        without contacts)."""
        if isinstance(damping, bool) or not isinstance(damping, (int, float, np.integer, np.floating)) \
                or not np.isfinite(damping) or damping < 0:
            raise ValueError(f"contact_damping: expected a finite number ≥ 0, got {damping!r}")
        if damping and self.contacts is None:
            raise ValueError(f"contact_damping: {damping!r} regularises contacts, and the problem has none")
        return float(damping)

    def rest_controls(self) -> np.ndarray:
        """(N, nu): the actuated part of the torques holding q0 at rest in every interval,
        g(q0) − Σ Jᵀ f_ext (the gravity torques when no force acts), clipped to the bounds:
        the default ``us_init`` and DDP's fallback guess. With contacts, the controls of least
        norm that hold q0 at rest under each interval's contacts (q̈ = 0, in the least-squares
        sense where no control does: :func:`~optdyn.ocp.contact_phases.rest_controls`)."""
        if self.contacts is not None:
            with _damping_named():
                u = contact_phases.rest_controls(self.model, self.actuated, self.x0[: self.model.nq], self.contacts,
                                                 self.contact_damping)
            return np.clip(u, self.u_lower, self.u_upper)
        q0, zero = self.x0[: self.model.nq], np.zeros(self.model.nv)
        f_exts = self.f_ext if self.f_ext.shape[1] else [None]  # one set, or one per interval
        tau = np.array([rnea(self.model, q0, zero, zero, f) for f in f_exts])[:, self.actuated]
        return np.clip(np.broadcast_to(tau, (self.N, self.nu)), self.u_lower, self.u_upper)

    @cached_property
    def no_stages(self) -> integrators.StageRecords:
        """Stage records with no rows, for the entry points that take records and are not
        to use them (:mod:`optdyn.ocp.shooting`)."""
        return self.stage_records(0)

    def stage_records(self, K: int) -> integrators.StageRecords:
        """Stage records for K knots, for :meth:`step_stages` to write into (unset)."""
        return self._batch.stage_records_for(self.dynamics, K, self.nx, self.ndx + self.nu)

    def _dynamics(self, K: int, start: int, kept: contact_phases.KnotForces | None = None
                  ) -> integrators.IntervalDynamics:
        """:attr:`dynamics` for K knots that are intervals start … start + K − 1 (keeping the
        contact forces in ``kept`` if given: :meth:`dynamics_keeping`)."""
        dynamics = self.dynamics_keeping(kept)
        if self.f_ext.shape[0] == 1 and self.contacts is None:
            return dynamics
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start <= self.N - K:
            what = "contacts" if self.contacts is not None else "forces"
            raise ValueError(f"start: the problem's {what} vary per interval, so the {K} knots must be "
                             f"intervals start … start + {K - 1} of 0 … {self.N - 1}; got start={start!r}")
        if self.contacts is not None:
            return contact_phases.sliced(dynamics, K, start)
        return dynamics._replace(f_ext=self.f_ext[start:start + K])

    # ---- sizes ---------------------------------------------------------------------
    @property
    def nx(self) -> int:
        """Number of state coordinates nq + nv."""
        return self.model.nq + self.model.nv

    @property
    def ndx(self) -> int:
        """Dimension 2·nv of the state's tangent space (of every derivative w.r.t. x)."""
        return 2 * self.model.nv

    @property
    def nu(self) -> int:
        """Control dimension: the number of actuated joint DoFs."""
        return self.actuated.size

    @property
    def actuation(self) -> np.ndarray:
        """The selection matrix B (nv, nu) with τ = B u."""
        B = np.zeros((self.model.nv, self.nu))
        B[self.actuated, np.arange(self.nu)] = 1.0
        return B

    def state_integrate(self, x, dx) -> np.ndarray:
        """x ⊕ dx = [q ⊕ δq; v + δv] for x (…, nx) and dx (…, ndx) (:mod:`optdyn.ocp.state`)."""
        x, dx = np.asarray(x, dtype=float), np.asarray(dx, dtype=float)
        if x.shape[-1:] != (self.nx,) or dx.shape[-1:] != (self.ndx,) or x.shape[:-1] != dx.shape[:-1]:
            raise ValueError(f"x, dx: expected shapes (…, {self.nx}) and (…, {self.ndx}), got {x.shape}, {dx.shape}")
        check_state(self.model, x, "x")
        out = state_integrate_batch(self.model.topology, self.model.nq, np.ascontiguousarray(x.reshape(-1, self.nx)),
                                    np.ascontiguousarray(dx.reshape(-1, self.ndx)))
        return out.reshape(x.shape)

    def state_difference(self, x0, x1) -> np.ndarray:
        """x1 ⊖ x0 = [q1 ⊖ q0; v1 − v0] (…, ndx) for x0, x1 (…, nx) (:mod:`optdyn.ocp.state`)."""
        x0, x1 = np.broadcast_arrays(np.asarray(x0, dtype=float), np.asarray(x1, dtype=float))
        if x0.shape[-1:] != (self.nx,):
            raise ValueError(f"x0, x1: expected shape (…, {self.nx}), got {x0.shape}")
        check_state(self.model, x0, "x0")
        check_state(self.model, x1, "x1")
        out = state_difference_batch(self.model.topology, self.model.nq,
                                     np.ascontiguousarray(x0.reshape(-1, self.nx)),
                                     np.ascontiguousarray(x1.reshape(-1, self.nx)))
        return out.reshape(x0.shape[:-1] + (self.ndx,))

    @property
    def T(self) -> float:
        """Horizon N·dt, s."""
        return self.N * self.dt

    @property
    def nc(self) -> int:
        """Number of path constraint rows on the state per node (nodes 1..N)."""
        return sum(c.size for c in self.path_constraints)

    @property
    def ng(self) -> int:
        """Number of stage constraint rows per knot (path constraints that depend on the control,
        knots 0..N−1)."""
        return sum(c.size for c in self.stage_constraints)

    @property
    def path_equalities(self) -> np.ndarray:
        """(nc,) bool: the path rows that are equalities c = 0 (the others: c ≥ 0)."""
        return equality_rows(self.path_constraints)

    @property
    def stage_equalities(self) -> np.ndarray:
        """(ng,) bool: the stage rows that are equalities g = 0 (the others: g ≥ 0)."""
        return equality_rows(self.stage_constraints)

    @property
    def state_bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The path constraints that bound single state coordinates (:class:`JointLimits`, on
        revolute and prismatic joints) as (tangent indices (b,), coordinate indices (b,),
        lower (b,), upper (b,)): IPOPT takes them as bounds on its variables."""
        limits = [c for c in self.path_constraints if isinstance(c, JointLimits)]
        parts = [np.concatenate([getattr(c, a) for c in limits] + [np.zeros(0, dtype)])
                 for a, dtype in (("tangent", np.int64), ("coordinates", np.int64), ("lower", float), ("upper", float))]
        return tuple(parts)

    @property
    def bound_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which of the nc path rows are :attr:`state_bounds`: (their indices among the rows (b,),
        the tangent index each bounds (b,), True where it is a lower bound (b,)); the other
        rows keep their order as the general path inequalities."""
        rows, tangent, lower, start = [], [], [], 0
        for c in self.path_constraints:
            if isinstance(c, JointLimits):  # rows: finite lower bounds, then finite upper (ResidualConstraint)
                rows.append(start + np.arange(c.size))
                tangent.append(c.tangent[c.rows])
                lower.append(c.signs > 0)
            start += c.size
        return tuple(np.concatenate(a + [np.zeros(0, dtype)])
                     for a, dtype in ((rows, np.int64), (tangent, np.int64), (lower, bool)))

    @property
    def nc_general(self) -> int:
        """Number of path inequalities per node that are not :attr:`state_bounds`."""
        return sum(c.size for c in self.path_constraints if not isinstance(c, JointLimits))

    @property
    def differenced_hessians(self) -> list[str]:
        """Names of the user residuals whose Hessians come from differences of their
        Jacobians (:mod:`optdyn.ocp.user_residual`), in costs and constraints."""
        costs = [c for c in (self.running_cost, self.terminal_cost) if c is not None]
        constraints = self.path_constraints + self.stage_constraints + self.terminal_constraints
        residuals = [r for c in costs + list(constraints) for r in c.residuals()]
        return list(dict.fromkeys(getattr(r, "name", type(r).__name__) for r in residuals if r.approximate_hessian))

    @property
    def nh(self) -> int:
        """Number of terminal equalities."""
        return sum(c.size for c in self.terminal_constraints)

    # ---- dynamics ------------------------------------------------------------------
    def _xu(self, xs, us) -> tuple[np.ndarray, np.ndarray]:
        """(xs, us) checked (shapes, unit quaternions) and C-contiguous."""
        xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
        if xs.ndim != 2 or xs.shape[1] != self.nx:
            raise ValueError(f"xs: expected shape (K, {self.nx}), got shape {xs.shape}")
        if us.shape != (xs.shape[0], self.nu):
            raise ValueError(f"us: expected shape ({xs.shape[0]}, {self.nu}), got shape {us.shape}")
        check_state(self.model, xs, "xs")
        return np.ascontiguousarray(xs), np.ascontiguousarray(us)

    def step(self, xs, us, start: int = 0) -> np.ndarray:
        """x⁺ (K, nx) of one interval (``substeps`` integrator steps) from each (x_k, u_k).

        ``start``: knot k is interval start + k (matters only for per-interval ``f_ext`` and
        for ``contacts``; so do the other ``step_*`` methods)."""
        xs, us = self._xu(xs, us)
        return self._batch.step_batch(self._dynamics(xs.shape[0], start), xs, us)

    def step_derivatives(self, xs, us, second_order: bool = False, start: int = 0,
                         out: tuple | None = None) -> tuple[np.ndarray, ...]:
        """Exact sensitivities of one interval at each knot.

        Returns (A (K,ndx,ndx), B (K,ndx,nu)), and with ``second_order`` also
        Fxx (K,ndx,ndx,ndx), Fxu (K,ndx,ndx,nu), Fuu (K,ndx,nu,nu), F[k,i,j,l] = ∂²x⁺_i/∂y_j∂z_l:
        derivatives of δx⁺ = F(x ⊕ δx, u) ⊖ F(x, u) (tangent at x⁺) w.r.t. (δx, u). A and B
        are written into ``out`` if given (:meth:`linearization_arrays`, overwritten).
        """
        xs, us = self._xu(xs, us)
        y, Fz, A, B = _arrays_of(out, self._linearization_shapes(xs.shape[0]), np.empty)
        _, _, Fzz = self._batch.step_derivatives_batch(self._dynamics(xs.shape[0], start), xs, us,
                                                       2 if second_order else 1, y, Fz)
        self._split_jacobian(Fz, A, B)
        if not second_order:
            return A, B
        n = self.ndx  # the state columns of z = (δx, u)
        return (A, B, np.ascontiguousarray(Fzz[:, :, :n, :n]), np.ascontiguousarray(Fzz[:, :, :n, n:]),
                np.ascontiguousarray(Fzz[:, :, n:, n:]))

    def step_stages(self, xs, us, stages: integrators.StageRecords | None = None, start: int = 0,
                    out: tuple | None = None) -> tuple[np.ndarray, np.ndarray, integrators.StageRecords]:
        """First-order sensitivities and the integrator's stage records at each knot.

        Returns (A (K,ndx,ndx), B (K,ndx,nu), stages): ``stages`` holds what
        :meth:`step_hessians` needs to contract second-order terms with any multipliers
        (stage inputs, derivatives, Jacobians, sensitivities and the dynamics' first-order
        data, m·s rows per knot). Records from an earlier call with as many knots may be
        passed in to be overwritten (they are megabytes for long horizons); so may the arrays
        ``out`` of A and B (:meth:`linearization_arrays`).
        """
        xs, us = self._xu(xs, us)
        stages = self._sized_records(xs.shape[0], stages)
        y, Fz, A, B = _arrays_of(out, self._linearization_shapes(xs.shape[0]), np.empty)
        self._batch.step_stages_batch(self._dynamics(xs.shape[0], start), xs, us, stages, y, Fz)
        self._split_jacobian(Fz, A, B)
        return A, B, stages

    def _sized_records(self, K: int, stages: integrators.StageRecords | None) -> integrators.StageRecords:
        """``stages`` if they are records for K knots, else new ones (:meth:`stage_records`)."""
        if stages is None or stages.y.shape[0] != K * self.substeps * self.dynamics.b.shape[0]:
            return self.stage_records(K)
        return stages

    def _split_jacobian(self, Fz: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
        """A, B ← the state and control columns of [A B] = Fz (K, ndx, ndx + nu)."""
        A[:], B[:] = Fz[:, :, :self.ndx], Fz[:, :, self.ndx:]

    def linearization_ahead(self, xs: np.ndarray, us: np.ndarray, ahead, out: tuple, records: bool,
                            stages: integrators.StageRecords | None = None) -> Callable[[], tuple]:
        """Begin on ``ahead`` (a :class:`dynamics.parallel.Ahead` over the N intervals) the
        linearisation :meth:`step_derivatives` make at the knots (xs (N, nx), us (N, nu)) —
        with ``records``, :meth:`step_stages` (into ``stages`` if they fit) —, which a forward
        pass may still be writing and marking as it goes; into ``out``
        (:meth:`linearization_arrays`), its contact forces kept in a record of its own
        (:meth:`forces_record`) while this problem's kernels write theirs. Returns the function
        that joins it, makes its forces the problem's (:meth:`adopt_forces`) and gives (A, B,
        the stage records or None); a call never joined (``ahead`` cancelled) leaves the
        problem's forces as they are. The arrays are a solver's own, C-ordered, and not checked
        (they are not written yet)."""
        y, Fz, A, B = out
        kept = self.forces_record()
        dynamics = self._dynamics(self.N, 0, kept)
        if records:
            stages = self._sized_records(self.N, stages)
            self._batch.step_stages_batch(dynamics, xs, us, stages, y, Fz, run=ahead.start)
        else:
            stages = None
            self._batch.step_derivatives_batch(dynamics, xs, us, 1, y, Fz, run=ahead.start)

        def finish() -> tuple:
            ahead.join()
            self.adopt_forces(kept)
            self._split_jacobian(Fz, A, B)
            return A, B, stages
        return finish

    def linearization_arrays(self, K: int) -> tuple[np.ndarray, ...]:
        """Arrays for :meth:`step_derivatives` and :meth:`step_stages` at K knots to write into:
        x⁺ (K, nx), [A B] (K, ndx, ndx + nu) and the contiguous A (K, ndx, ndx), B (K, ndx, nu)."""
        return _arrays_of(None, self._linearization_shapes(K), np.empty)

    def _linearization_shapes(self, K: int) -> tuple[tuple[int, ...], ...]:
        ndx, nu = self.ndx, self.nu
        return (K, self.nx), (K, ndx, ndx + nu), (K, ndx, ndx), (K, ndx, nu)

    def step_hessians(self, xs, us, lams, stages: integrators.StageRecords | None = None,
                      start: int = 0) -> np.ndarray:
        """Hessians (K, nz, nz) of λ_kᵀF(x_k, u_k) w.r.t. z = (δx, u), nz = ndx + nu, λ_k (ndx,).


        Contracted second order (a second-order adjoint through the integrator stages with
        contracted FDSVA-SO, :func:`optdyn.ocp.integrators.interval_hessian`): equal to
        Σ_i λ_k,i ∂²F_i/∂z² of :meth:`step_derivatives`, without forming that tensor.
        ``stages`` from :meth:`step_stages` at the same (xs, us) saves recomputing them.
        """
        xs, us = self._xu(xs, us)
        lams = _array(lams, (xs.shape[0], self.ndx), "lams")
        if stages is None:
            stages = self.step_stages(xs, us, start=start)[2]
        return self._batch.interval_hessians_batch(self._dynamics(xs.shape[0], start), us, stages, lams)

    def rollout(self, us, x0=None) -> np.ndarray:
        """States xs (N+1, nx) from x0 (default ``self.x0``) under controls us (N, nu).

        A diverging rollout yields NaN/inf rows (the caller decides; solvers reject them).
        """
        us = _array(us, (self.N, self.nu), "us")
        if x0 is None:
            x0 = self.x0
        else:
            x0 = _array(x0, (self.nx,), "x0")
            check_state(self.model, x0, "x0")
        return shooting.rollout(self.dynamics, x0, us)

    # ---- costs ---------------------------------------------------------------------
    def running_cost_terms(self, xs, us, gauss_newton: bool = False, out: tuple | None = None,
                           forces: bool | None = None) -> tuple[np.ndarray, ...]:
        """dt·ℓ and its derivatives at each knot (``gauss_newton``: the Gauss–Newton Hessians
        of the residual costs, :meth:`optdyn.ocp.costs.Cost.gauss_newton`), written into
        ``out`` (six arrays of these shapes, overwritten: a solver keeps them between
        iterations, :meth:`expansion_arrays`) or into new arrays.

        The terms that read no contact forces come first, then those that read the forces
        the dynamics' kernels keep (:attr:`takes_kept_forces`). ``forces`` False writes the
        first part alone; True then adds the second into ``out`` as it is: a solver expands
        the first while it linearises the dynamics (:func:`dynamics.parallel.meanwhile`),
        the second once the forces are kept. None: both.

        Returns (l (K,), lx (K,ndx), lu (K,nu), lxx (K,ndx,ndx), lux (K,nu,ndx), luu (K,nu,nu)).
        """
        xs, us = self._xu(xs, us)
        added = forces and out is not None  # the second part alone: into out as it is
        out = _arrays_of(out, self._expansion_shapes(xs.shape[0]), np.empty if added else np.zeros)
        for part in (False, True) if forces is None else (forces,):
            cost = self._running_part(part)
            if cost is not None:
                cost.add_to(xs, us, self.dt, out, gauss_newton)
        return out

    def _running_part(self, forces: bool) -> Cost | None:
        """The running cost's terms that read the kept contact forces (``forces``) or the others
        (:func:`~optdyn.ocp.costs.terms_taking_forces`), split once per running cost."""
        if self._parts is None or self._parts[0] is not self.running_cost:
            self._parts = (self.running_cost, *(terms_taking_forces(self.running_cost, f) for f in (False, True)))
        return self._parts[1 + forces]

    _parts = None  # (the running cost, its terms that take no kept forces, those that do): _running_part

    def expansion_arrays(self, K: int) -> tuple[np.ndarray, ...]:
        """Zeros for :meth:`running_cost_terms` at K knots: (K,), (K, ndx), (K, nu),
        (K, ndx, ndx), (K, nu, ndx), (K, nu, nu)."""
        return _arrays_of(None, self._expansion_shapes(K), np.zeros)

    def _expansion_shapes(self, K: int) -> tuple[tuple[int, ...], ...]:
        nx, nu = self.ndx, self.nu
        return (K,), (K, nx), (K, nu), (K, nx, nx), (K, nu, nx), (K, nu, nu)

    def terminal_cost_terms(self, x, gauss_newton: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
        """ℓ_N(x) and its gradient (ndx,) and Hessian (ndx, ndx) (``gauss_newton``: as for
        :meth:`running_cost_terms`)."""
        x = _array(x, (self.nx,), "x", finite=False)
        check_state(self.model, x, "x")
        return self._terminal_cost_terms(x, gauss_newton)

    def _terminal_cost_terms(self, x: np.ndarray, gauss_newton: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
        """:meth:`terminal_cost_terms` of a checked x."""
        if self.terminal_cost is None or not self.terminal_cost.depends_on_x:
            return 0.0, np.zeros(self.ndx), np.zeros((self.ndx, self.ndx))
        evaluate = self.terminal_cost.gauss_newton if gauss_newton else self.terminal_cost.evaluate
        l, lx, _, lxx, _, _ = evaluate(x[None], np.zeros((1, self.nu)))
        return float(l[0]), lx[0], lxx[0]

    def cost(self, xs, us) -> float:
        """Objective Σ_k dt·ℓ(x_k, u_k) + ℓ_N(x_N) of a trajectory (xs (N+1,nx), us (N,nu))."""
        xs = _array(xs, (self.N + 1, self.nx), "xs", finite=False)
        us = _array(us, (self.N, self.nu), "us", finite=False)
        check_state(self.model, xs, "xs")
        total = 0.0
        if self.terminal_cost is not None and self.terminal_cost.depends_on_x:  # its value alone, not its expansion
            total = float(self.terminal_cost.value(xs[-1:], np.zeros((1, self.nu)))[0])
        if self.running_cost is not None:
            total += self.dt * float(np.sum(self.running_cost.value(xs[:-1], us)))
        return float(total)

    # ---- constraints ---------------------------------------------------------------
    def path_constraint_terms(self, xs, bounds: bool = True, shared: bool = False
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """c (K,nc) ≥ 0, cx (K,nc,ndx), cxx (K,nc,ndx,ndx) at each state of xs (K, nx);
        without ``bounds``, only the :attr:`nc_general` rows that are not :attr:`state_bounds`;
        ``shared``: arrays the constraints may keep and overwrite at their next such call
        (:meth:`optdyn.ocp.residuals.KeptArrays.evaluate_shared`)."""
        xs = np.ascontiguousarray(np.asarray(xs, dtype=float))
        if xs.ndim != 2 or xs.shape[1] != self.nx:
            raise ValueError(f"xs: expected shape (K, {self.nx}), got shape {xs.shape}")
        check_state(self.model, xs, "xs")
        constraints = [c for c in self.path_constraints if bounds or not isinstance(c, JointLimits)]
        return stack_constraints(constraints, xs, self.ndx, shared)

    def path_constraint_values(self, xs) -> np.ndarray:
        """c (K, nc) ≥ 0 only (no derivatives) at each state of xs (K, nx)."""
        xs = np.ascontiguousarray(np.asarray(xs, dtype=float))
        if xs.ndim != 2 or xs.shape[1] != self.nx:
            raise ValueError(f"xs: expected shape (K, {self.nx}), got shape {xs.shape}")
        check_state(self.model, xs, "xs")
        return np.concatenate([c.value(xs) for c in self.path_constraints] + [np.zeros((xs.shape[0], 0))], axis=1)

    def stage_constraint_terms(self, xs, us) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """g (K,ng), g_z (K,ng,nz), g_zz (K,ng,nz,nz) of the stage constraints at the knots
        xs (K, nx), us (K, nu), z = (δx, u), nz = ndx + nu; rows ≥ 0 or, on
        :attr:`stage_equalities`, = 0."""
        xs, us = self._xu(xs, us)
        K, nz = xs.shape[0], self.ndx + self.nu
        parts = [c.evaluate_knots(xs, us, self.ndx) for c in self.stage_constraints]
        if not parts:
            return np.zeros((K, 0)), np.zeros((K, 0, nz)), np.zeros((K, 0, nz, nz))
        return tuple(np.concatenate([p[i] for p in parts], axis=1) for i in range(3))

    def stage_constraint_contracted(self, xs, us) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray],
                                                                                           np.ndarray]]:
        """(g, g_z, hessian) of :meth:`stage_constraint_terms` from one evaluation of each
        constraint, the rows' Hessians left contracted: ``hessian(w)`` = Σ_r w_r g_zz,r (K, nz,
        nz) for weights w (K, ng) (multipliers, or a penalty's ψ'), never forming the per-row
        Hessians where a constraint can (:meth:`optdyn.ocp.constraints.Constraint.contracted_knots`),
        and contracting together the residuals that pool their second order
        (:func:`optdyn.ocp.constraints.summed_hessian`: one compiled pass per knot for all the
        contact-force constraints)."""
        xs, us = self._xu(xs, us)
        K, nz = xs.shape[0], self.ndx + self.nu
        parts = [c.contracted_knots(xs, us, self.ndx) for c in self.stage_constraints]
        ends = np.cumsum([0] + [c.size for c in self.stage_constraints])

        def hessian(weights):
            weights = np.asarray(weights, dtype=float)  # not checked for NaN: a solver's diverged multipliers
            if weights.shape != (K, self.ng):
                raise ValueError(f"weights: expected shape {(K, self.ng)}, got shape {weights.shape}")
            return summed_hessian([p[2] for p in parts], [weights[:, a:b] for a, b in zip(ends[:-1], ends[1:])],
                                  (K, nz, nz))
        g = np.concatenate([p[0] for p in parts] + [np.zeros((K, 0))], axis=1)
        gz = np.concatenate([p[1] for p in parts] + [np.zeros((K, 0, nz))], axis=1)
        return g, gz, hessian

    def split_z(self, gz: np.ndarray, gzz: np.ndarray) -> tuple[np.ndarray, ...]:
        """The (x, u) blocks (g_x, g_u, g_xx, g_ux, g_uu) of a gradient (K, nz) and Hessian
        (K, nz, nz) in z = (δx, u): views, laid out as the running-cost terms."""
        n = self.ndx
        return gz[:, :n], gz[:, n:], gzz[:, :n, :n], gzz[:, n:, :n], gzz[:, n:, n:]

    def stage_constraint_values(self, xs, us) -> np.ndarray:
        """g (K, ng) only, at the knots xs (K, nx), us (K, nu)."""
        xs, us = self._xu(xs, us)
        return np.concatenate([c.value_knots(xs, us) for c in self.stage_constraints] + [np.zeros((xs.shape[0], 0))],
                              axis=1)

    def terminal_constraint_terms(self, x, shared: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """h (nh,) = 0, hx (nh,ndx), hxx (nh,ndx,ndx) at the final state x (nx,) (``shared``: as
        for :meth:`path_constraint_terms`)."""
        h, hx, hxx = stack_constraints(self.terminal_constraints, self._final(x), self.ndx, shared)
        return h[0], hx[0], hxx[0]

    def terminal_constraint_values(self, x) -> np.ndarray:
        """h (nh,) = 0 only (no derivatives) at the final state x (nx,)."""
        x = self._final(x)
        return np.concatenate([c.value(x)[0] for c in self.terminal_constraints] + [np.zeros(0)])

    def _final(self, x) -> np.ndarray:
        """x (nx,), checked, as one knot (1, nx)."""
        x = _array(x, (self.nx,), "x", finite=False)
        check_state(self.model, x, "x")
        return x[None]

    def violation(self, xs, us) -> float:
        """Largest violation of bounds, path constraints (nodes 1..N), stage constraints (knots
        0..N−1) and terminal equalities."""
        xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
        check_state(self.model, xs, "xs")
        return self.rows_violation(us, self.path_constraint_values(xs[1:]) if self.path_constraints else None,
                                   self.stage_constraint_values(xs[:-1], us) if self.stage_constraints else None,
                                   self.terminal_constraint_values(xs[-1]) if self.terminal_constraints else None)

    def rows_violation(self, us: np.ndarray, c: np.ndarray | None = None, g: np.ndarray | None = None,
                       h: np.ndarray | None = None) -> float:
        """:meth:`violation` of a trajectory of controls us (N, nu) whose rows are evaluated
        already: c (N, nc) of the path constraints, g (N, ng) of the stage constraints, h (nh,)
        of the terminal equalities (None: the problem has none)."""
        v = max(0.0, float(np.max(self.u_lower - us, initial=0.0)), float(np.max(us - self.u_upper, initial=0.0)))
        if c is not None:
            v = max(v, row_violation(c, self.path_equalities))
        if g is not None:
            v = max(v, row_violation(g, self.stage_equalities))
        if h is not None:
            v = max(v, float(np.max(np.abs(h), initial=0.0)))
        return v

    def __repr__(self) -> str:
        return (f"Problem({self.name!r}, model={self.model.name!r}, N={self.N}, dt={self.dt}, "
                f"substeps={self.substeps}, integrator={self.integrator!r}, nc={self.nc}, ng={self.ng}, nh={self.nh})")


@contextlib.contextmanager
def _damping_named():
    """Dependent contacts reported with a problem's own remedy, ``contact_damping`` (the
    dynamics' functions name their ``damping``)."""
    try:
        yield
    except DependentContacts as e:
        raise ValueError(f"{e.which}; pass contact_damping > 0 (optdyn.Problem's docstring) to regularise them"
                         ) from None


def row_violation(c: np.ndarray, equality: np.ndarray) -> float:
    """Largest violation of constraint rows c (K, m): |c| on the ``equality`` rows (m,), max(0, −c)
    on the others."""
    return float(np.max(np.where(equality, np.abs(c), -c), initial=0.0))


def frame_wrenches(model: Model, frame: str, wrench, q_ref) -> np.ndarray:
    """Per-interval ``f_ext`` (N, njoints, 6) of a world-aligned ``wrench`` [force; moment
    about the frame origin] on the robot at frame ``frame``: (6,) for every interval or
    (N, 6), converted at the reference configurations ``q_ref`` (N, nq) (e.g. the planned
    path at the start of each interval) by :func:`dynamics.frame_force`.

    The result is body-fixed: it equals the world wrench where q = q_ref and turns with the
    frame elsewhere (what the problem's dynamics and derivatives assume). Sum the results
    for several frames.
    """
    q_ref = np.asarray(q_ref, dtype=float)
    if q_ref.ndim != 2 or q_ref.shape[1] != model.nq:
        raise ValueError(f"q_ref: expected shape (N, {model.nq}), got shape {q_ref.shape}")
    N = q_ref.shape[0]
    w = np.asarray(wrench, dtype=float)
    if w.shape == (6,):
        w = np.tile(w, (N, 1))
    if w.shape != (N, 6):
        raise ValueError(f"wrench: expected shape (6,) or ({N}, 6), got shape {w.shape}")
    return np.stack([frame_force(model, as_vector(q, model.nq, "q_ref"), frame, wk) for q, wk in zip(q_ref, w)])
