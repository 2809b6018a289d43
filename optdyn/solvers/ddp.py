"""DDP, iLQR and their feasibility-driven variants: small solver types on one iteration.

Every solver here minimises the cost of :class:`optdyn.ocp.problem.Problem` over its controls
(and, feasibility-driven, its states) by the same iteration (:class:`RiccatiSolver`):

1. **expansion** — the dynamics linearised and the costs quadratised along the iterate
   (:meth:`RiccatiSolver.expand`);
2. **direction** — the Riccati backward pass of :mod:`optdyn.solvers.riccati` on that model,
   regularised until Q̃_uu is positive definite (:meth:`RiccatiSolver.direction`); on the
   augmented Lagrangian, again with the inequality rows its step crosses on the side it lands
   (:meth:`RiccatiSolver.step_on`);
3. **trial step** — the closed-loop forward pass x̂_0 = x_0,
   û_k = clamp(u_k + α k_k + K_k (x̂_k ⊖ x_k)), x̂_{k+1} = F(x̂_k, û_k) (:func:`forward_pass`),
   for α = 1, ½, ¼, … (:meth:`RiccatiSolver.search`);
4. **acceptance** — of the first trial whose actual decrease is at least c1 times the decrease
   −ΔV(α) = −(α·dV1 + α²·dV2) the model predicts (:meth:`RiccatiSolver.accept`), and the
   regularisation μ adapted to the step (:meth:`RiccatiSolver.adapt`);
5. **stopping test** — the model's decrease for a full step, or the projected gradient,
   below tolerance (:meth:`RiccatiSolver.converged`).

The types differ in one or two of these steps:

- :class:`ILQR` models the dynamics to first order and the costs to second (W. Li, E. Todorov
  2004), from the rollout of the guess, the control box in every backward pass (Tassa,
  Mansard & Todorov 2014);
- :class:`DDP` adds V'_x·F_zz (Tassa, Erez & Todorov 2012; contracted as in Nganga & Wensing
  2021) and takes that exact model's step wherever it is convex, iLQR's elsewhere
  (:meth:`DDP.direction`): it converges quadratically near a strict minimum;
- both adapt μ to the step taken (:meth:`RiccatiSolver.adapt`): a trust region on the step,
  which keeps a model that overshoots (light links driven at speed) from crawling at μ = 0;
  this default was chosen by measurement on arms never tuned for (BENCHMARKS.md,
  "convergence");
- :class:`FDDP` and :class:`FILQR` are their feasibility-driven forms (Mastalli et al.,
  "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control", ICRA
  2020; "A Feasibility-Driven Approach to Control-Limited DDP", Autonomous Robots 2022): they
  start from states and controls (x̄, ū) with gaps f̄_{k+1} = F(x̄_k, ū_k) ⊖ x̄_{k+1} between the
  intervals, which the backward pass carries and the forward pass closes,
  x̂_{k+1} = F(x̂_k, û_k) ⊕ (α − 1) f̄_{k+1}, so that to first order the trial is α·Δz along the
  linear model's step Δz, whose change is α·g·Δz + α²·(m(1) − g·Δz) (g the cost gradient,
  m(1) the model's change for the full step; :func:`~optdyn.solvers.riccati.model_slope`). A
  full step closes every gap, and the iterations are then the single-shooting ones. Until then
  the control box stays out of the backward pass (the unconstrained gains, clamped in the
  forward pass), as Crocoddyl's BoxFDDP does from a guess not marked feasible, and a step may
  raise the cost by up to :data:`NEGATIVE_STEP` times the rise its model predicts. An inner
  solve of the augmented Lagrangian that continues one that converged (from its rollout, with
  new multipliers) keeps the box in from its first step: left out there, a step that pushes
  saturated controls through the box is clamped back by the forward pass, its model's
  decrease is not the trial's, and none is accepted (the trots of quadrupeds within their
  URDFs' torque limits stopped on failed line searches). Like
  Crocoddyl's they model the costs by their Gauss–Newton Hessians and regularise the controls
  too (:class:`FeasibilityDriven`). On a floating base the gap shift ignores the transport
  between the tangent spaces at F(x̄_k, ū_k) and at x̄_{k+1}, as Crocoddyl does; it vanishes
  with the gaps.

On a floating base the state lives on a manifold (:mod:`optdyn.ocp.state`) and the backward
pass works in its tangent spaces, as Crocoddyl does: the feedback acts on x̂_k ⊖ x̄_k, and DDP's
model is the exact second-order one in the charts δx ↦ x̄_k ⊕ δx of the current trajectory;
what is not modelled is that the charts move with x̄ between iterations, which does not change
the fixed points.
"""
from __future__ import annotations

import functools
import time
from collections import namedtuple
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from dynamics._compile import njit
from dynamics.parallel import UNMARKED, Lookahead, mark_ready, meanwhile

from ..ocp.problem import Problem
from ..ocp.shooting import state_error, state_retract, transition, transition_work
from ..ocp.state import check_state
from .result import Result
from .riccati import (NOT_KEPT, SECOND_ORDER, Expansion, SecondOrder, Value, backward_pass, linear_path,
                      model_slope, projected_gradient)
from .runtime import Run, check_count, check_max_time, check_number, is_interrupt, stop_message
from .workspace import Workspace

Step = namedtuple("Step", ["k", "K", "dV1", "dV2", "gaps", "mu", "first_order", "decrease"])
"""A direction: feed-forward k (N, nu), feedback K (N, nu, ndx), the model's change
ΔV(α) = α·dV1 + α²·dV2 along it, the multiple-shooting gaps (N, ndx) it closes ((0, ndx)
for a rollout), the regularisation μ of its backward pass, whether it came from iLQR's
model where the solver prefers another (DDP), and the stopping test's measure: the
decrease −ΔV(1) of the first direction at the iterate, on the expansion there
(:meth:`RiccatiSolver.step_on`)."""

KINKS_SHARE = 0.5
"""A step whose crossings of the augmented Lagrangian's kinks cost at most this share of the
decrease its model predicts is taken as it is (:meth:`RiccatiSolver.step_on`). Measured on the
family of constrained tasks (BENCHMARKS "constraints-active-set"): 0 — a correction whenever a
row is crossed — takes the fewest iterations but costs DDP an exact backward pass more at
most iterations near the optimum, where the rows at their kinks are crossed by a hair; 0.5
and 1 keep most of the iterations saved at half the passes."""

Model = namedtuple("Model", ["lq", "terminal", "second"])
"""A quadratic model of the problem along the iterate: the :data:`~optdyn.solvers.riccati.Expansion`,
the terminal :data:`~optdyn.solvers.riccati.Value` and the dynamics' second-order terms
(:data:`~optdyn.solvers.riccati.SecondOrder`)."""


@njit(cache=True, nogil=True)
def forward_pass(dyn, xs, us, k, K, alpha, lower, upper, xs_new, us_new, gaps, ready):
    """Closed-loop rollout of the module docstring through the problem's interval dynamics
    ``dyn``; with multiple-shooting ``gaps`` (N, ndx) (else (0, ndx)) each interval ends a
    fraction 1 − α of its gap short of F: x̂_{t+1} = F(x̂_t, û_t) ⊕ (α − 1) f̄_{t+1}
    (feasibility-driven DDP, Mastalli et al. 2020), so that a full step closes every gap and
    the new gaps F(x̂_t, û_t) ⊖ x̂_{t+1} are (1 − α) f̄_{t+1} (⊖ undoes ⊕). False if the
    state became NaN/inf, or a control did (a plan x̄ with non-finite states: the shifted
    plan of :class:`optdyn.MPC` whose last states diverged). Each knot (x̂_t, û_t) is marked
    ready in the claims ``ready`` once interval t is done (:func:`dynamics.parallel.mark_ready`:
    the linearisation begun :class:`~dynamics.parallel.Ahead` of the trial follows it)."""
    N, ndx = K.shape[0], K.shape[2]
    nu = us.shape[1]
    work = transition_work(dyn, xs.shape[1], nu, 0)
    dx, y = np.empty(ndx), np.empty(xs.shape[1])
    xs_new[0] = xs[0]
    for t in range(N):
        state_error(dyn, xs[t], xs_new[t], dx)  # δx = x̂ ⊖ x̄
        for i in range(nu):
            du = alpha * k[t, i]
            for j in range(ndx):
                du += K[t, i, j] * dx[j]
            u = us[t, i] + du
            if not np.isfinite(u):  # the clamp below would turn NaN into a bound
                return False
            us_new[t, i] = min(max(u, lower[i]), upper[i])
        if gaps.shape[0] == 0:
            if not transition(dyn, t, xs_new[t], us_new[t], xs_new[t + 1], work):
                return False
        else:
            if not transition(dyn, t, xs_new[t], us_new[t], y, work):
                return False
            for j in range(ndx):
                dx[j] = (alpha - 1.0) * gaps[t, j]
            state_retract(dyn, y, dx, xs_new[t + 1])
        mark_ready(ready)
    return True


class Objective:
    """The cost the solvers minimise: the problem's own (the augmented Lagrangian adds terms).

    ``running(xs (N,nx), us (N,nu))`` returns the dt-weighted stage terms
    (l, lx, lu, lxx, lux, luu) of knots 0..N−1, ``terminal(x)`` returns (l, lx, lxx)
    and ``value(xs (N+1,nx), us)`` the total; with ``gauss_newton`` the residual costs'
    Hessians are their Gauss–Newton parts (:meth:`optdyn.ocp.costs.Cost.gauss_newton`).
    ``cost`` and ``violation`` give the problem's own objective and largest constraint
    violation at a trajectory, for the solvers' history.
    """

    exact = True  # value() is the problem's objective itself
    piecewise = False  # no kinks for :meth:`activate` to bring in: RiccatiSolver.step_on takes the first step

    def __init__(self, problem: Problem, gauss_newton: bool = False) -> None:
        self.problem, self.gauss_newton = problem, gauss_newton

    def running(self, xs, us, out: tuple | None = None, forces: bool | None = None):
        """Into ``out`` if given; ``forces``: the part of the terms that read the kept contact
        forces or of the others (:meth:`optdyn.Problem.running_cost_terms`)."""
        return self.problem.running_cost_terms(xs, us, self.gauss_newton, out, forces)

    def terminal(self, x):
        return self.problem.terminal_cost_terms(x, self.gauss_newton)

    def value(self, xs, us) -> float:
        return self.problem.cost(xs, us)

    def cost(self, xs, us) -> float:
        """The problem's own objective J at (xs, us) (:meth:`optdyn.Problem.cost`): the
        :meth:`value` here."""
        return self.problem.cost(xs, us)

    def violation(self, xs, us) -> float:
        """The largest constraint violation at (xs, us) (:meth:`optdyn.Problem.violation`)."""
        return self.problem.violation(xs, us)

    def revise(self, xs: np.ndarray, us: np.ndarray, stationary) -> bool:
        """Change the objective between two steps of the iteration at the iterate (xs, us),
        given ``stationary(ω)``: whether the iterate is stationary to the tolerance ω
        (:meth:`RiccatiSolver.converged`); True if it changed (the iteration then evaluates and
        expands it again). The problem's own cost never changes; the augmented Lagrangian whose
        multipliers move inside the iteration does (:mod:`optdyn.solvers.bcl`)."""
        return False

    def satisfied(self, xs: np.ndarray, us: np.ndarray) -> bool:
        """Whether a stationary iterate (xs, us) solves the problem: always for the cost alone."""
        return True

    def activate(self, path: np.ndarray, models: tuple) -> bool:
        """Bring into ``models`` (their cost terms, in place) the pieces of a piecewise-quadratic
        objective that the step's path Δz (N + 1, ndx + nu; :func:`~optdyn.solvers.riccati.linear_path`)
        reaches but their expansion at the iterate does not hold; True if any was brought
        (:meth:`RiccatiSolver.step_on`). The problem's own cost is smooth: never."""
        return False

    def brought_change(self, path: np.ndarray) -> tuple[float, float]:
        """(a, b): the change α·a + α²·b along the step's path Δz of the pieces :meth:`activate`
        brought in since the last expansion; none here."""
        return 0.0, 0.0


@dataclass
class Log:
    """Per-iteration history shared by the solvers and the augmented-Lagrangian loop.

    Row i describes the trajectory after i steps: objective "cost", minimised function
    "merit" (the augmented Lagrangian when constrained, else = cost), "gradient" (projected
    ‖∇_u merit‖∞), "expected_decrease" −ΔV(1) of the next step, "step" α that led here,
    "regularization" μ, "violation" (max constraint violation), "outer" (the
    augmented-Lagrangian outer iteration, 0 without constraints: the first row of each
    later outer iteration is the same trajectory after a multiplier update, not a step; for
    the solvers that revise the multipliers inside the iteration, :mod:`optdyn.solvers.bcl`,
    the revisions made so far, every row a step) and wall "time" (s).
    """

    solver: str
    callback: object = None
    verbose: bool = False
    t0: float = field(default_factory=time.perf_counter)
    rows: dict = field(default_factory=lambda: {k: [] for k in (
        "cost", "merit", "expected_decrease", "step", "regularization", "violation", "gradient", "outer", "time")})
    outer: int = 0  # set by the augmented-Lagrangian loop before each inner solve

    stopped: bool = False  # set when the callback returned False
    first_order: int = 0  # DDP: steps taken along iLQR's model
    rejected: int = 0  # forward passes rejected because the rollout diverged or the model was invalid
    invalid: int = 0  # of which the dynamics or the cost raised an exception (state invalid for the model)
    run: Run = field(default_factory=Run)  # time limit and Ctrl-C (optdyn.solvers.runtime)
    all_diverged: bool = False  # every trial of the last line search was rejected as diverged
    kept: tuple | None = None  # (xs, us) of the last accepted iterate, for an interrupt by exception

    def keep(self, xs: np.ndarray, us: np.ndarray) -> None:
        """Remember a copy of the accepted iterate (returned if a KeyboardInterrupt unwinds the
        solve), in the arrays of the first copy from then on."""
        if self.kept is None:
            self.kept = (xs.copy(), us.copy())
        else:
            np.copyto(self.kept[0], xs)
            np.copyto(self.kept[1], us)

    def stop_reason(self) -> str | None:
        """"interrupted" (Ctrl-C), "time_limit" (max_time) or None (see :class:`optdyn.solvers.runtime.Run`)."""
        return self.run.stop_reason()

    def record(self, **row) -> None:
        row["time"] = time.perf_counter() - self.t0
        row["outer"] = self.outer
        for key in self.rows:
            self.rows[key].append(float(row[key]))
        if self.verbose:
            print(f"{self.solver:>5} {len(self.rows['cost']) - 1:4d}  cost {row['cost']:.8e}  "
                  f"dV {row['expected_decrease']:.2e}  grad {row['gradient']:.2e}  step {row['step']:.3g}  "
                  f"mu {row['regularization']:.1e}  viol {row['violation']:.2e}")
        if self.callback is not None and self.callback(dict(row, iteration=len(self.rows["cost"]) - 1,
                                                            solver=self.solver)) is False:
            self.stopped = True

    def history(self) -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in self.rows.items()}


@dataclass
class Outcome:
    """State of the iteration when it stopped."""

    xs: np.ndarray
    us: np.ndarray
    K: np.ndarray
    cost: float
    converged: bool
    status: str
    message: str
    iterations: int
    gradient: float = np.inf
    mu: float = 0.0


@dataclass
class Iterate:
    """The iteration's state between steps: the trajectory (xs, us) and its objective J, the
    arrays of the next trial (xs, us) and spare ones (the rollout begun ahead of it), the open gaps ((0, ndx) once closed), the control
    bounds (lower, upper), the regularisation μ and its growth factor Δ (Tassa 2012 Sec.
    II-F), the last step length α, the steps taken, whether the control box is in the
    backward pass yet, the projected gradient at (xs, us) and whether the last search found no
    step."""

    xs: np.ndarray
    us: np.ndarray
    trial: tuple
    spare: tuple
    gaps: np.ndarray
    bounds: tuple
    J: float | None  # None until the first expansion (RiccatiSolver.iterate)
    mu: float
    delta: float = 1.0
    alpha: float = 0.0
    steps: int = 0
    boxed: bool = True
    gradient: float = np.inf
    rejected: bool = False


NEGATIVE_STEP = 2.0
"""While multiple-shooting gaps are open, a step whose model predicts a cost increase is
accepted if the cost rises by less than this multiple of the prediction."""


@dataclass
class RiccatiSolver:
    """The iteration shared by DDP, iLQR and their feasibility-driven forms (module docstring).

    Options (each type adds its own; a bad value raises ValueError naming it):

    - ``max_iter`` (500): backward passes at most; ``max_time`` (s, None = no limit): wall
      time, checked between iterations and between trials (status "time_limit");
    - ``tol`` (1e-10), ``gtol`` (1e-8): converged when the model's decrease for a full step
      −ΔV(1) (the Newton decrement, insensitive to the scaling of u) is ≤ tol·(1 + |J|), or
      the projected gradient ‖∇_u J‖∞ ≤ gtol·(1 + |J|);
    - ``mu_init`` (0), ``mu_min`` (1e-6), ``mu_max`` (1e10), ``delta0`` (2): the
      regularisation μ and its growth factors (Tassa 2012 Sec. II-F); ``short_step`` (0.01)
      and ``long_step`` (0.5): an accepted step no longer than ``short_step`` raises μ, one
      longer than ``long_step`` lowers it (:meth:`adapt`);
    - ``c1`` (1e-4): the sufficient decrease, ``alphas``: the step lengths tried, longest first;
    - ``verbose``, ``callback`` (called with each history row as a dict; returning False stops
      the solve, status "user_stop");
    - ``final_expansion`` (True): False returns as soon as the step that reaches ``max_iter``
      is taken, with the gains K of the backward pass that made it, instead of expanding the
      problem again at the new iterate for its gains and convergence test (the real-time
      iterations of :class:`optdyn.MPC`, Diehl et al. 2005: one expansion per step); the
      history then ends with the iterate before that step;
    - ``active_set_rounds`` (3): with a piecewise-quadratic objective (the augmented
      Lagrangian's inequality rows), at most this many backward passes again on the model
      with the pieces its step reaches (:meth:`step_on`); 0 takes the first step as it is.
    """

    name: ClassVar[str] = ""
    gauss_newton_costs: ClassVar[bool] = False  # the costs' Gauss–Newton Hessians in iLQR's model
    feasibility_driven: ClassVar[bool] = False  # starts from states too, the box once feasible
    controls_regularized: ClassVar[bool] = False  # μ·I on Q̃_uu as well as μ·BᵀB (riccati.regularize)

    max_iter: int = 500
    tol: float = 1e-10
    gtol: float = 1e-8
    mu_init: float = 0.0
    mu_min: float = 1e-6
    mu_max: float = 1e10
    delta0: float = 2.0
    short_step: float = 0.01
    long_step: float = 0.5
    c1: float = 1e-4
    alphas: tuple = tuple(0.5 ** i for i in range(11))
    verbose: bool = False
    callback: object = None
    max_time: float | None = None
    final_expansion: bool = True
    active_set_rounds: int = 3

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def with_options(cls, **options) -> RiccatiSolver:
        """An instance with ``options``; ValueError naming any this type does not have."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"options: unknown option(s) {', '.join(unknown)} for {cls.__name__}; "
                             f"known: {', '.join(known)}")
        return cls(**options)

    def validate(self) -> None:
        """ValueError naming the first option with a value it cannot take."""
        check_count("max_iter", self.max_iter)
        check_count("active_set_rounds", self.active_set_rounds)
        for name in ("tol", "gtol", "mu_max", "delta0", "c1"):
            check_number(name, getattr(self, name))
        for name in ("mu_init", "mu_min"):
            check_number(name, getattr(self, name), zero=True)
        if self.delta0 <= 1.0:
            raise ValueError(f"delta0: expected a growth factor > 1, got {self.delta0!r}")
        for name in ("short_step", "long_step"):
            check_number(name, getattr(self, name), zero=True)
            if getattr(self, name) > 1.0:
                raise ValueError(f"{name}: expected a step length in [0, 1], got {getattr(self, name)!r}")
        if self.short_step > self.long_step:
            raise ValueError(f"short_step: expected at most long_step = {self.long_step!r}, got {self.short_step!r}")
        alphas = np.asarray(self.alphas, dtype=float) if np.ndim(self.alphas) == 1 else np.array([np.nan])
        if alphas.size == 0 or not np.all((alphas > 0) & (alphas <= 1)):
            raise ValueError(f"alphas: expected a sequence of step lengths in (0, 1], got {self.alphas!r}")
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback: expected a callable taking a dict, or None, got {self.callback!r}")
        self.max_time = check_max_time(self.max_time)

    # -- the public entry points --------------------------------------------------------

    def solve(self, problem: Problem, us_init=None, xs_init=None, *, workspace: Workspace | None = None) -> Result:
        """Solve ``problem`` (without path/terminal constraints: :func:`optdyn.solve` wraps
        those in the augmented Lagrangian) from :meth:`initial_guess`, in the arrays of
        ``workspace`` (a :class:`~optdyn.solvers.workspace.Workspace` of the problem's size, kept
        between solves; None: new ones).

        Ctrl-C and ``max_time`` stop the solve with the last accepted iterate (statuses
        "interrupted", "time_limit"; see :mod:`optdyn.solvers.runtime`). Returns a
        :class:`Result` with the feedback gains K (N, nu, ndx) of the last backward pass;
        ``extra`` has "regularization", "gradient", "first_order_steps" (DDP: steps taken
        along iLQR's model, its exact one having been indefinite), "rejected_rollouts" (trials
        that diverged or were invalid for the model), "invalid_rollouts" (of which an
        exception of the model/costs),
        "initial_guess", "rejected_guesses" (:meth:`initial_guess`) and "compile_time".
        """
        origin, rejected = "", []
        ws = Workspace(problem) if workspace is None else workspace
        with Run(self.max_time) as run:
            log = Log(self.name, self.callback, self.verbose, run=run)
            try:
                us0, xs0, origin, rejected = self.initial_guess(problem, ws, us_init, xs_init)
                out = self.iterate(problem, self.objective(problem), us0, log, xs=xs0, workspace=ws)
            except (KeyboardInterrupt, SystemError) as e:
                if not is_interrupt(e) and not run.interrupted:
                    raise
                out = stopped_by_exception(problem, log, (problem.N, problem.nu, problem.ndx))
        return Result(xs=out.xs, us=out.us, cost=out.cost, converged=out.converged, iterations=out.iterations,
                      status=out.status, message=out.message, history=log.history(), solver=self.name,
                      problem=problem.name, params=problem.params, wall_time=run.elapsed(),
                      gains=out.K, extra={"regularization": out.mu, "gradient": out.gradient,
                                          "rejected_rollouts": log.rejected, "invalid_rollouts": log.invalid,
                                          "first_order_steps": log.first_order, "initial_guess": origin,
                                          "rejected_guesses": rejected, "compile_time": run.compile_time()})

    def objective(self, problem: Problem) -> Objective:
        """The problem's cost with the Hessians this type's models start from."""
        return Objective(problem, self.gauss_newton_costs)

    def iterate(self, problem: Problem, objective: Objective, us: np.ndarray, log: Log, max_iter: int | None = None,
                xs: np.ndarray | None = None, workspace: Workspace | None = None, tol: float | None = None,
                boxed: bool = False) -> Outcome:
        """Iterations from controls us (N, nu) — and with ``xs`` (N+1, nx) from those states too
        (feasibility-driven) — on ``objective``, in the arrays of ``workspace`` (a new one if
        None), at most ``max_iter`` (default the option) to ``tol`` (default the option); the
        outcome's arrays are its own. ``boxed``: the control box in the backward pass from the
        first step even in a feasibility-driven form (iterations that continue a converged
        solve: module docstring). If the rollout of ``us`` (or a gap) is not finite, returns at
        once with status "rollout_failed"."""
        ws = Workspace(problem) if workspace is None else workspace
        it = self.start(problem, objective, us, xs, ws, boxed)
        if it is None:
            return Outcome(ws.xs[0].copy(), ws.us[0].copy(), ws.K.copy(), np.nan, False, "rollout_failed",
                           "the rollout of the initial controls (or a gap of the initial states) is not finite "
                           "or the model rejects a state", 0)
        log.keep(it.xs, it.us)
        max_iter = self.max_iter if max_iter is None else max_iter
        tol = self.tol if tol is None else tol

        def outcome(converged: bool, status: str, message: str) -> Outcome:
            return Outcome(it.xs.copy(), it.us.copy(), ws.K.copy(), it.J, converged, status, message, it.steps,
                           it.gradient, it.mu)

        moved = True
        while True:
            if moved:  # after a rejected step the trajectory, hence its expansion, is unchanged
                models = self.expand(problem, objective, it, ws)
            if it.J is None:  # the first iterate's objective, after its expansion: whatever the costs computed
                it.J = objective.value(it.xs, it.us)  # for it serves the value (the contact forces at its knots)
            step, failed = self.step_on(objective, models, it, ws)
            if failed < 0 and objective.revise(it.xs, it.us, lambda w: self.converged(it, step, w)):
                it.J = objective.value(it.xs, it.us)  # new multipliers or penalty: a new merit at the same iterate
                if it.rejected:  # μ grew on the old merit's failed searches; the new one's model starts afresh
                    it.mu, it.delta = self.mu_init, 1.0
                models = self.expand(problem, objective, it, ws)
                step, failed = self.step_on(objective, models, it, ws)
            log.record(cost=it.J if objective.exact else objective.cost(it.xs, it.us), merit=it.J,
                       expected_decrease=step.decrease, step=it.alpha, regularization=step.mu,
                       violation=objective.violation(it.xs, it.us), gradient=it.gradient)
            if failed >= 0:
                return outcome(False, "regularization_failed",
                               f"Q_uu stayed indefinite up to mu = {self.mu_max:g} (knot {failed})")
            if log.stopped:
                return outcome(False, "user_stop", "the callback returned False")
            if self.converged(it, step, tol) and objective.satisfied(it.xs, it.us):
                return outcome(True, "converged", f"expected decrease {step.decrease:.2e} or gradient "
                                                  f"{it.gradient:.2e} below tolerance")
            reason = log.stop_reason()
            if reason:
                return outcome(False, reason, stop_message(reason, log.run))
            if it.steps == max_iter:
                gap = f"; gaps still open (largest {np.abs(it.gaps).max():.2e})" if it.gaps.shape[0] else ""
                return outcome(False, "max_iter", f"iteration limit {max_iter} reached{gap}")
            it.steps += 1
            follow = self.final_expansion or it.steps < max_iter  # a step taken is expanded next
            alpha, J_new = self.search(problem, objective, it, step, log, ws, follow)
            moved = alpha > 0.0
            it.rejected = not moved
            if moved:
                log.first_order += step.first_order
                self.take(it, alpha, J_new, ws)
                log.keep(it.xs, it.us)
                if it.steps == max_iter and not self.final_expansion:
                    return outcome(False, "max_iter", f"iteration limit {max_iter} reached (not expanded at the "
                                                      "last step)")
            elif log.stop_reason():
                continue  # the search was cut short: report the stop at the next check
            elif self.raises_mu(step):
                it.mu, it.delta = self.increase(it.mu, it.delta)
                if it.mu > self.mu_max and log.all_diverged:
                    return outcome(False, "rollout_failed", "every trial rollout diverged or was invalid for the "
                                                            f"model up to mu = {self.mu_max:g}")
                if it.mu > self.mu_max:
                    return outcome(False, "line_search_failed", f"no step decreased the cost up to mu = "
                                                                f"{self.mu_max:g}")

    # -- the steps of an iteration (module docstring) ------------------------------------

    def start(self, problem: Problem, objective: Objective, us: np.ndarray, xs: np.ndarray | None,
              ws: Workspace, boxed: bool = False) -> Iterate | None:
        """The first iterate in the workspace's arrays (:meth:`Workspace.iterate`): the rollout
        of ``us`` (clipped to the bounds) or, given ``xs``, those states from x0 and their gaps
        (none, without computing them, where ``xs`` is the workspace's remembered rollout of
        ``us``: :meth:`Workspace.is_rollout`, the feedback-policy warm start of
        :class:`optdyn.MPC`, which rolls out into those very arrays while their linearisation
        follows — kept by :meth:`Workspace.settle` where they hold these values); None if it
        is not finite."""
        us, gaps, given = clipped_controls(problem, us), ws.no_gaps, xs is not None
        if given:
            xs, finite = np.concatenate([problem.x0[None], xs[1:]]), True
        else:
            xs, finite = safe_rollout(problem, us, ws)
        ws.settle((xs, us))
        out, out_us = ws.iterate()
        out[:], out_us[:] = xs, us
        ws.K[:] = 0.0
        if given and not ws.is_rollout(problem, out_us, out):
            try:
                found = gaps_of(problem, out, out_us)
            except Exception:  # noqa: BLE001 — a node the model rejects cannot start the solve
                return None
            finite = bool(np.all(np.isfinite(found)))
            gaps = found if finite and np.any(found) else gaps
        if not finite:
            return None
        bounds = (problem.u_lower, problem.u_upper)
        bounded = np.any(np.isfinite(bounds[0]) | np.isfinite(bounds[1]))
        return Iterate(out, out_us, (ws.xs[1], ws.us[1]), (ws.xs[2], ws.us[2]), gaps, bounds, None, self.mu_init,
                       boxed=boxed or not (bounded and self.feasibility_driven))

    def expand(self, problem: Problem, objective: Objective, it: Iterate, ws: Workspace) -> tuple[Model, ...]:
        """The models to take a direction from (:meth:`direction`): here iLQR's, the
        dynamics linearised and the costs quadratised along ``it``. Sets ``it.gradient``."""
        return (self._model(problem, objective, it, ws, self.expansion_mode()),)

    def expansion_mode(self) -> int:
        """The mode (:data:`~optdyn.solvers.riccati.SECOND_ORDER`) :meth:`expand` linearises the
        dynamics in: here first order alone."""
        return SECOND_ORDER["none"]

    def _model(self, problem: Problem, objective: Objective, it: Iterate, ws: Workspace, mode: int) -> Model:
        """The :data:`Model` of the dynamics linearised along ``it`` in ``mode`` (:func:`linearized`)
        and the objective's expansion there; sets ``it.gradient`` (the projected gradient).

        The running terms that read no kept contact forces are expanded on this thread while
        pool threads linearise (:func:`dynamics.parallel.meanwhile`), the others after. On one
        thread, or on a cold cache, they come first: their kernels then compile while a
        compile-ahead helper (:mod:`optdyn.solvers.compile_ahead`) is still compiling the
        sensitivities the linearisation waits for — 3 s of a fresh clone's first solve, measured."""
        xs, us, out = it.xs[:-1], it.us, ws.expansion(0)
        with meanwhile(functools.partial(objective.running, xs, us, out, False)):
            A, B, second = linearized(problem, it.xs, it.us, mode, ws)
        running = objective.running(xs, us, out, True)
        lq, terminal = Expansion(A, B, *running[1:]), Value(*objective.terminal(it.xs[-1])[1:])
        it.gradient = projected_gradient(lq, terminal.Vx, it.us, problem.u_lower, problem.u_upper)
        return Model(lq, terminal, second)

    def step_on(self, objective: Objective, models: tuple[Model, ...], it: Iterate, ws: Workspace
                ) -> tuple[Step, int]:
        """The :meth:`direction` on ``models``; then, if it crosses kinks of a piecewise-quadratic
        ``objective`` (the augmented Lagrangian's inequality rows: quadratic on one side of
        their kink, flat on the other) whose penalty costs more than :data:`KINKS_SHARE` of
        its predicted decrease, again on them with each row's side chosen where the step
        lands (:meth:`Objective.activate`), at most ``active_set_rounds`` times. That is the
        semismooth Newton step on the piecewise-quadratic model: the primal-dual active-set
        strategy of M. Hintermüller, K. Ito, K. Kunisch, "The primal-dual active set strategy
        as a semismooth Newton method", SIAM J. Optim. 13(3), 2002. The expansion at the
        iterate holds only the side each row is on, so a step that crosses rows it held flat
        overshoots by the penalty it did not see: after the penalty grows, the line search
        cut such steps to α = 1/128 or less on the friction-pyramid trots.

        The rows are found on iLQR's model (DDP's exact pass costs several of its); DDP, if
        its first step was its exact model's, then takes that model's step on them, with the
        dynamics' curvature its first pass formed at this iterate (:meth:`DDP.direction`). Each
        step's ΔV is that of the iterate's own piecewise model along it
        (:meth:`Objective.brought_change`), for the line search; the stopping test keeps the
        first step's decrease. Of the first step and the last, the one with the lower ΔV is
        taken: a row's quadratic side, taken where the row starts on the flat one, pulls it
        to its kink, and far from the kink that can cost more than the crossing saves."""
        step, failed = self.direction(models, it, ws)
        if failed >= 0 or not self.active_set_rounds or not objective.piecewise:
            return step, failed
        path = self._path(models, step, ws)
        kinks = -objective.brought_change(path)[1]  # the penalty of the rows the step crosses
        plain = step._replace(dV2=step.dV2 + kinks)  # its change in the piecewise model
        if kinks <= KINKS_SHARE * step.decrease or not objective.activate(path, models):
            return plain, failed
        np.copyto(ws.k_plain, step.k)
        np.copyto(ws.K_plain, step.K)
        for r in range(self.active_set_rounds):
            step, failed = RiccatiSolver.direction(self, models, it, ws)
            if failed >= 0 or r == self.active_set_rounds - 1 \
                    or not objective.activate(self._path(models, step, ws), models):
                break
        if failed < 0 and len(models) > 1 and not plain.first_order:  # DDP's exact model, on the rows found
            step, failed = self.direction(models, it, ws)
        if failed < 0:
            a, b = objective.brought_change(self._path(models, step, ws))
            step = step._replace(dV1=step.dV1 - a, dV2=step.dV2 - b, decrease=plain.decrease)
            if step.dV1 + step.dV2 < plain.dV1 + plain.dV2:
                return step, failed
        objective.activate(None, models)  # the plain step models more decrease: back to it
        np.copyto(step.k, ws.k_plain)
        np.copyto(step.K, ws.K_plain)
        return plain, -1

    @staticmethod
    def _path(models: tuple[Model, ...], step: Step, ws: Workspace) -> np.ndarray:
        return linear_path(models[-1].lq, step.k, step.K, step.gaps, ws.path)

    def direction(self, models: tuple[Model, ...], it: Iterate, ws: Workspace) -> tuple[Step, int]:
        """The backward pass on the last of ``models`` (iLQR's), μ raised by Tassa's increase
        (Tassa 2012 Sec. II-F) until its Q̃_uu is positive definite or μ passes ``mu_max``.
        Returns (the step, the knot where it failed or −1)."""
        model = models[-1]
        while True:
            step, failed = self._pass(model, it, ws, it.mu, len(models) > 1)
            if failed < 0 or it.mu > self.mu_max:
                return step, failed
            it.mu, it.delta = self.increase(it.mu, it.delta)

    def _pass(self, model: Model, it: Iterate, ws: Workspace, mu: float, first_order: bool) -> tuple[Step, int]:
        """One backward pass of :func:`~optdyn.solvers.riccati.backward_pass` on ``model`` at
        regularisation ``mu``, the box in it once ``it.boxed``; with gaps, the model's change is
        split into its α and α² parts (module docstring)."""
        k, K = ws.k, ws.K
        k[:] = 0.0
        bounds = it.bounds if it.boxed else ws.free
        failed, dV1, dV2 = backward_pass(model.lq, model.terminal, it.us, *bounds, mu, model.second, k, K, it.gaps,
                                         self.controls_regularized)
        if it.gaps.shape[0] and failed < 0:
            slope = model_slope(model.lq, model.terminal.Vx, k, K, it.gaps, ws.path)
            dV1, dV2 = slope, dV1 + dV2 - slope
        return Step(k, K, dV1, dV2, it.gaps, mu, first_order, -(dV1 + dV2)), failed

    def converged(self, it: Iterate, step: Step, tol: float) -> bool:
        """The stopping test, once the gaps are closed: the model's decrease for a full step
        (while the box is in the backward pass) or the projected gradient below tolerance."""
        scale = 1.0 + abs(it.J)
        return not it.gaps.shape[0] and ((it.boxed and step.decrease <= tol * scale)
                                         or it.gradient <= self.gtol * scale)

    def search(self, problem: Problem, objective: Objective, it: Iterate, step: Step, log: Log, ws: Workspace,
               follow: bool = False) -> tuple[float, float]:
        """Backtracking on α along ``step``: the first trial :meth:`accept` takes; diverged or
        model-invalid rollouts (:func:`rollout`, :func:`evaluate`) are rejected. Stops early
        (no step) when ``log.stop_reason()``. Returns (α, J_new) with the trial in
        ``it.trial``, or (0, J) if none was accepted; ``log.all_diverged`` tells whether every
        trial was rejected as diverged/invalid.

        Once a trial is rejected, each trial's rollout is begun on a pool thread while the
        previous trial's cost is evaluated (:class:`dynamics.parallel.Lookahead`, into
        ``it.spare``): the same rollouts in the same order on any number of threads, so that
        the step taken is the same. One begun for a trial never tried is left running,
        :meth:`Workspace.settle`'d before its arrays are written again; it may read the
        iterate's arrays as the next iteration rewrites them, and nothing reads what it
        writes. It keeps its contact forces in a record of its own (:meth:`optdyn.Problem.forces_record`),
        not in the problem's, which the caller's kernels write and its residuals read; the
        problem takes them once the rollout has ended, before its trial is evaluated
        (:meth:`optdyn.Problem.adopt_forces`).

        With ``follow`` (the step taken is expanded next) and more than one thread, the first
        trial's knots are linearised on a pool thread as the caller's rollout writes them
        (:meth:`Workspace.follow`): most first trials are taken (33 of the 36 searches of the
        trot's iLQR), and their expansion then finds part of its linearisation done
        (:func:`linearized`); a trial not taken drops it. The same knots are computed by the
        same code: the iterates are the same on any number of threads."""
        log.all_diverged = True
        ahead, kept_ahead = None, None
        for i, alpha in enumerate(self.alphas):
            if i == 1:
                ws.unfollow()  # the first trial not taken: later trials write its arrays again
            if log.stop_reason():
                log.all_diverged = False
                break
            if ahead is not None:  # this rollout was begun ahead into the spare arrays
                it.trial, it.spare = it.spare, it.trial
            this, this_kept, ahead = ahead, kept_ahead, None
            if 0 < i < len(self.alphas) - 1:
                if this is None:
                    ws.settle()
                kept_ahead = problem.forces_record()
                ahead = ws.ahead = Lookahead(rollout, problem, (it.xs, it.us), step, self.alphas[i + 1], it.spare,
                                             kept_ahead)
            if this is not None:
                rolled = this.result()
                problem.adopt_forces(this_kept)
            else:
                ready = ws.follow(problem, *it.trial, self.expansion_mode()) if i == 0 and follow else UNMARKED
                rolled = rollout(problem, (it.xs, it.us), step, alpha, it.trial, ready=ready)
            J_new = evaluate(objective, rolled, it.trial, log)
            if np.isnan(J_new):
                log.rejected += 1  # diverged or invalid for the model: try a shorter step
                continue
            log.all_diverged = False
            if self.accept(it.J, J_new, -(alpha * step.dV1 + alpha * alpha * step.dV2), step.gaps.shape[0] > 0):
                return alpha, J_new
        return 0.0, it.J

    def accept(self, J: float, J_new: float, expected: float, gaps: bool) -> bool:
        """Armijo's test on the model: the actual decrease exceeds c1 × the ``expected`` one
        (and is a decrease where the model expects none); while ``gaps`` are open, also a rise
        below :data:`NEGATIVE_STEP` × the one the model expects (Crocoddyl's FDDP)."""
        if (J - J_new) > self.c1 * expected and (expected > 0 or J_new < J):
            return True
        return gaps and expected <= 0 and J_new - J < -NEGATIVE_STEP * expected

    def take(self, it: Iterate, alpha: float, J_new: float, ws: Workspace) -> None:
        """Move to the accepted trial (the iterate's arrays become the next trial's), adapt μ
        to the step (:meth:`adapt`), and shrink the gaps: a full step closes them, a partial
        one leaves (1 − α) of each (:func:`forward_pass`); a full step also brings the box into
        the backward pass."""
        (it.xs, it.us), it.trial = it.trial, (it.xs, it.us)
        it.J, it.alpha = J_new, alpha
        it.boxed = it.boxed or alpha == 1.0
        it.mu, it.delta = self.adapt(it.mu, it.delta, alpha)
        if it.gaps.shape[0]:
            it.gaps = ws.no_gaps if alpha == 1.0 else (1.0 - alpha) * it.gaps

    def raises_mu(self, step: Step) -> bool:
        """Whether a search that rejected every step length along ``step`` raises μ: here
        always, the step having been taken at μ."""
        return True

    def adapt(self, mu: float, delta: float, alpha: float) -> tuple[float, float]:
        """μ after an accepted step of length α: lowered after a step longer than
        ``long_step``, raised after one no longer than ``short_step`` — the model was trusted
        too far —, kept otherwise (Crocoddyl's rule, Mastalli et al. 2020, with its thresholds
        ``th_stepdec`` and ``th_stepinc``). Tassa 2012 lowers μ after every accepted step;
        then a model that overshoots by orders of magnitude (a wrist of tiny inertia, torques
        that spin it up within one interval) keeps μ at 0 and is followed by steps of
        α ≈ 1e-3 for hundreds of iterations. The rule is that of a trust region (Nocedal &
        Wright, "Numerical Optimization", 2nd ed. 2006, Algorithm 4.1) with the accepted step
        length for the ratio of actual to predicted reduction, μ for the radius."""
        if alpha > self.long_step:
            return self.decrease(mu, delta)
        if alpha <= self.short_step:
            return self.increase(mu, delta)
        return mu, delta

    def increase(self, mu: float, delta: float) -> tuple[float, float]:
        """Tassa 2012's increase: Δ ← max(Δ0, Δ·Δ0), μ ← max(μ_min, μ·Δ)."""
        delta = max(self.delta0, delta * self.delta0)
        return max(self.mu_min, mu * delta), delta

    def decrease(self, mu: float, delta: float) -> tuple[float, float]:
        """Tassa 2012's decrease: Δ ← min(1/Δ0, Δ/Δ0), μ ← μ·Δ (0 below μ_min)."""
        delta = min(1.0 / self.delta0, delta / self.delta0)
        mu = mu * delta
        return (mu if mu > self.mu_min else 0.0), delta

    # -- the starting point -------------------------------------------------------------

    def initial_guess(self, problem: Problem, workspace: Workspace, us_init=None, xs_init=None
                      ) -> tuple[np.ndarray, np.ndarray | None, str, list[str]]:
        """(us, xs, origin, rejected): what :meth:`iterate` starts from, ``us_init`` and
        ``xs_init`` checked. A rollout: the controls of :func:`initial_controls` and no states;
        feasibility-driven: ``us_init`` and ``xs_init`` (default: the problem's guesses), the
        controls clipped to the bounds."""
        us_init, xs_init = checked_guess(problem, us_init, xs_init)
        if not self.feasibility_driven:
            us, origin, rejected = initial_controls(problem, workspace, us_init)
            return us, None, origin, rejected
        us = clipped_controls(problem, problem.us_init if us_init is None else us_init)
        xs = problem.xs_init if xs_init is None else xs_init
        return us, xs, "us_init" if us_init is not None else "problem", []


@dataclass
class ILQR(RiccatiSolver):
    """iLQR (W. Li, E. Todorov, "Iterative Linear Quadratic Regulator Design for Nonlinear
    Biological Movement Systems", ICINCO 2004): the iteration of :class:`RiccatiSolver` on the
    dynamics linearised and the costs quadratised, from the rollout of the guess, the control
    box in every backward pass (Tassa, Mansard & Todorov 2014)."""

    name: ClassVar[str] = "ilqr"


@dataclass
class DDP(RiccatiSolver):
    """DDP (Tassa, Erez & Todorov 2012): each direction from the exact second-order model —
    V'_x·F_zz added to Q (eq. 5), contracted through the integrator stages
    (``second_order="contracted"``, Nganga & Wensing 2021) or, to validate that, from the full
    tensors (``"tensor"``: the same iterates to rounding) — where that model is convex, from
    iLQR's where it is not (:meth:`direction`).

    Far from a minimum DDP's Q_uu is often indefinite: V'_x·F_uu is large where the controls
    act on light links at speed, and regularising it to positive definiteness (μ·BᵀB, huge
    where B is) bends the steps toward other local optima or binds them for hundreds of
    iterations (BENCHMARKS.md, "convergence"). iLQR's model (no V'_x·F_zz) is convex far more
    often and needs smaller μ. Near a strict minimum the exact model is convex at μ = 0 and
    every step is DDP's own, so DDP keeps its quadratic convergence: the switch between the
    two models, per iteration and driven by positive definiteness, follows the hybrid methods
    for nonlinear least squares that switch between the Gauss–Newton and the exact model
    (Nocedal & Wright 2006, Sec. 10.3).
    """

    name: ClassVar[str] = "ddp"
    second_order: str = "contracted"

    def validate(self) -> None:
        super().validate()
        if self.second_order not in ("contracted", "tensor"):
            raise ValueError(f"second_order: expected 'contracted' or 'tensor', got {self.second_order!r}")

    def expand(self, problem: Problem, objective: Objective, it: Iterate, ws: Workspace) -> tuple[Model, ...]:
        """The exact model (exact cost Hessians and V'_x·F_zz) and iLQR's (no V'_x·F_zz, the
        costs' Gauss–Newton Hessians if this type's iLQR uses them)."""
        exact = self._model(problem, objective, it, ws, self.expansion_mode())
        if objective.piecewise and exact.second.mode == SECOND_ORDER["contracted"]:  # its passes repeat at an iterate
            exact = exact._replace(second=exact.second._replace(Hz=ws.curvatures()))
        first = exact._replace(second=exact.second._replace(mode=SECOND_ORDER["none"]))
        if self.gauss_newton_costs:
            first = gauss_newton_model(objective, first, it, ws)
        return exact, first

    def expansion_mode(self) -> int:
        """With the stage records of the contracted V'_x·F_zz, or the full tensors."""
        return SECOND_ORDER[self.second_order]

    def objective(self, problem: Problem) -> Objective:
        """The problem's cost with its exact Hessians (iLQR's model takes its Gauss–Newton part
        from it if need be)."""
        return Objective(problem, False)

    def direction(self, models: tuple[Model, ...], it: Iterate, ws: Workspace) -> tuple[Step, int]:
        """The exact model's step at μ = 0 if its Q_uu is positive definite at every knot, else
        — or when the search rejected that step at this iterate — iLQR's
        (:meth:`RiccatiSolver.direction`, μ raised as need be).

        A model that keeps the dynamics' curvature (its ``Hz``: on the augmented Lagrangian,
        whose cost terms change at an iterate while its dynamics do not) takes V'_x·F_zz as the
        last exact pass at this iterate formed it, if one did (:data:`~optdyn.solvers.riccati.SECOND_ORDER`
        "kept": most of the pass's cost, 0.9 of it on Solo-12's trot) instead of at the new
        V'_x — which differs from it by the curvature of the change of V'_x: the pass on the
        rows a step crosses (:meth:`RiccatiSolver.step_on`), the first pass of an inner solve
        that starts where the last one ended or after the multipliers moved
        (:mod:`~optdyn.solvers.augmented_lagrangian`, :mod:`~optdyn.solvers.bcl`)."""
        if it.rejected:
            return super().direction(models, it, ws)
        exact, keeps = models[0], models[0].second.Hz.shape[0] > 0
        kept = keeps and ws.curvature_current(exact.second.dynamics, it.xs, it.us)
        if kept:
            exact = exact._replace(second=exact.second._replace(mode=SECOND_ORDER["kept"]))
        step, failed = self._pass(exact, it, ws, 0.0, False)
        if failed >= 0:
            return super().direction(models, it, ws)
        if keeps and not kept:
            ws.curvature_formed(exact.second.dynamics, it.xs, it.us)
        return step, failed

    def raises_mu(self, step: Step) -> bool:
        """Only iLQR's step, taken at μ, raises μ when its search fails: the exact model's,
        taken at μ = 0, says nothing of the μ iLQR's model needs, and raising μ for it kept
        iLQR's steps, which then follow at this iterate, at a μ of 10⁴ on the Z1 arm's joint
        limits (steps of 1e-7 in the merit, alternating with rejected exact ones)."""
        return step.first_order


@dataclass
class FeasibilityDriven:
    """The feasibility-driven form of a solver, Crocoddyl's box-FDDP (Mastalli et al. 2020,
    2022; module docstring): from states and controls, the gaps closed by the steps, the box in
    the backward pass from the first full step on; iLQR's model with the costs' Gauss–Newton
    Hessians, μ on the controls as well as on the state (μ·(BᵀB + I): it acts on the torques
    that move no state, those that only change contact forces in stance), and μ lowered after
    every accepted step (Tassa 2012's schedule: ``short_step`` = ``long_step`` = 0)."""

    feasibility_driven: ClassVar[bool] = True
    gauss_newton_costs: ClassVar[bool] = True
    controls_regularized: ClassVar[bool] = True
    short_step: float = 0.0
    long_step: float = 0.0


@dataclass
class FDDP(FeasibilityDriven, DDP):
    """Feasibility-driven DDP (:class:`FeasibilityDriven`): DDP's exact steps where its model
    is convex, those of the feasibility-driven iLQR's model elsewhere."""

    name: ClassVar[str] = "fddp"


@dataclass
class FILQR(FeasibilityDriven, ILQR):
    """Feasibility-driven iLQR (:class:`FeasibilityDriven`)."""

    name: ClassVar[str] = "filqr"


# ---------------------------------------------------------------------------------------
# helpers of the iteration
# ---------------------------------------------------------------------------------------


def gauss_newton_model(objective: Objective, model: Model, it: Iterate, ws: Workspace) -> Model:
    """``model`` with iLQR's dynamics (no V'_x·F_zz) and the residual costs' Gauss–Newton
    Hessians at every knot and at the end."""
    lq, terminal, second = model
    if not objective.gauss_newton:
        saved, objective.gauss_newton = objective.gauss_newton, True
        try:
            hessians = objective.running(it.xs[:-1], it.us, ws.expansion(1))[3:]
            lq = lq._replace(**dict(zip(("lxx", "lux", "luu"), hessians)))
            terminal = Value(terminal.Vx, objective.terminal(it.xs[-1])[2])
        finally:
            objective.gauss_newton = saved
    return Model(lq, terminal, second._replace(mode=SECOND_ORDER["none"]))


ROLLED, DIVERGED, INVALID = range(3)
"""Outcomes of :func:`rollout`."""


def rollout(problem: Problem, trajectory: tuple, step: Step, alpha: float, out: tuple, kept=None,
            ready: np.ndarray = UNMARKED) -> int:
    """Forward pass from ``trajectory`` (xs, us) with ``step`` scaled by α into ``out``
    (xs_new, us_new): ROLLED, DIVERGED (non-finite states) or INVALID (the model rejected a
    state: any exception of the dynamics, e.g. a non-positive articulated inertia far from
    the data). The dynamics keep their contact forces in ``kept`` if given (a rollout on
    another thread: :meth:`optdyn.Problem.forces_record`), else in the problem's record;
    the knots are marked in the claims ``ready`` as they are written (:func:`forward_pass`)."""
    (xs, us), (xs_new, us_new) = trajectory, out
    dynamics = problem.dynamics_keeping(kept)
    try:
        rolled = forward_pass(dynamics, xs, us, step.k, step.K, alpha, problem.u_lower, problem.u_upper,
                              xs_new, us_new, step.gaps, ready)
    except Exception:  # noqa: BLE001 — a trial the model cannot evaluate is a rejected step
        return INVALID
    return ROLLED if rolled else DIVERGED


def evaluate(objective: Objective, rolled: int, out: tuple, log: Log) -> float:
    """The objective of the trial ``out`` (xs_new, us_new) whose :func:`rollout` ended
    ``rolled``; NaN if it diverged, or was invalid for the dynamics or the costs (any
    exception of theirs, counted in ``log.invalid``), or the cost is not finite."""
    if rolled == DIVERGED:
        return np.nan
    if rolled == INVALID:
        log.invalid += 1
        return np.nan
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowing cost is a rejected trial
            J_new = objective.value(*out)
    except Exception:  # noqa: BLE001 — a trial the model cannot evaluate is a rejected step
        log.invalid += 1
        return np.nan
    return J_new if np.isfinite(J_new) else np.nan


def linearize(problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int, stages=None, out: tuple | None = None
              ) -> tuple[np.ndarray, np.ndarray, SecondOrder]:
    """(A (N,ndx,ndx), B (N,ndx,nu), the :data:`~optdyn.solvers.riccati.SecondOrder` terms)
    along (xs, us) for :func:`~optdyn.solvers.riccati.backward_pass`.

    Mode 1 (contracted) records the interval stages (into ``stages`` from the previous call
    when given), mode 2 forms the full tensors Fzz (N, ndx, nz, nz); what a mode does not use
    is empty (the records ``stages`` when given, unused). A and B go into ``out`` if given
    (:meth:`optdyn.Problem.linearization_arrays`).
    """
    Fzz = None
    if mode == SECOND_ORDER["contracted"]:
        A, B, stages = problem.step_stages(xs[:-1], us, stages, out=out)
    elif mode == SECOND_ORDER["tensor"]:
        A, B, Fxx, Fxu, Fuu = problem.step_derivatives(xs[:-1], us, second_order=True, out=out)
        Fzz = np.concatenate([np.concatenate([Fxx, Fxu], 3), np.concatenate([Fxu.transpose(0, 1, 3, 2), Fuu], 3)], 2)
    else:
        A, B = problem.step_derivatives(xs[:-1], us, out=out)
    return A, B, _second_order(problem, mode, stages, Fzz)


def _second_order(problem: Problem, mode: int, stages, Fzz: np.ndarray | None = None) -> SecondOrder:
    """The :data:`~optdyn.solvers.riccati.SecondOrder` record of a linearisation in ``mode``
    (the records ``stages``, the tensors ``Fzz`` of mode 2; what a mode does not use empty)."""
    Fzz = np.empty((problem.N, 0, 0, 0)) if Fzz is None else Fzz
    return SecondOrder(mode, Fzz, problem.dynamics, problem.no_stages if stages is None else stages, NOT_KEPT)


def linearized(problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int, ws: Workspace
               ) -> tuple[np.ndarray, np.ndarray, SecondOrder]:
    """:func:`linearize` into the arrays of ``ws`` and its stage records (which only mode 1
    writes) — or the linearization ``ws`` holds if it was made at (xs, us) in this mode: the
    dynamics' does not change where only the cost's expansion does, as when the augmented
    Lagrangian revises its multipliers or penalty at the iterate the last inner solve ended at."""
    followed = ws.followed(problem, xs, us, mode)  # begun as the line search's rollout wrote the knots
    if followed is not None:
        result = (*followed, _second_order(problem, mode, ws.stages))
    else:
        held = ws.linearization_at(problem, xs, us, mode)
        if held is not None:
            return held
        result = linearize(problem, xs, us, mode, ws.stages, ws.linearization)
        ws.stages = result[2].stages
    ws.hold_linearization(problem, xs, us, mode, result)
    return result


def safe_rollout(problem: Problem, us: np.ndarray, workspace: Workspace) -> tuple[np.ndarray, bool]:
    """States (N+1, nx) of ``us`` (N, nu) and whether they are all finite: a diverged
    rollout has NaN rows after the divergence, and one the model rejected (any exception
    of the dynamics) NaN after x0 — a failed rollout, never a crash. A finite rollout is
    remembered in ``workspace`` and not made again (:meth:`Workspace.rollout_of`)."""
    xs = workspace.rollout_of(problem, us)
    if xs is not None:
        return xs, True
    try:
        xs = problem.rollout(us)
    except Exception:  # noqa: BLE001 — an invalid state is a failed rollout, not a crash
        xs = np.full((problem.N + 1, problem.nx), np.nan)
        xs[0] = problem.x0
    finite = bool(np.all(np.isfinite(xs)))
    if finite:
        workspace.remember(problem, us, xs)
    return xs, finite


def gaps_of(problem: Problem, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
    """The multiple-shooting gaps f̄_{t+1} = F(x_t, u_t) ⊖ x_{t+1} (N, ndx) of (xs, us)."""
    return problem.state_difference(xs[1:], problem.step(xs[:-1], us))


def checked_guess(problem: Problem, us_init=None, xs_init=None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``us_init`` (N, nu) and ``xs_init`` (N+1, nx) as C-ordered float arrays (or None);
    ValueError naming the one that is not finite, of the wrong shape or (states) not on the
    state's manifold."""
    out = []
    for name, a, shape in (("us_init", us_init, (problem.N, problem.nu)),
                           ("xs_init", xs_init, (problem.N + 1, problem.nx))):
        if a is not None:
            a = np.array(a, dtype=float, order="C")
            if a.shape != shape or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected finite values of shape {shape}, got shape {a.shape}")
            if name == "xs_init":
                check_state(problem.model, a, name)
        out.append(a)
    return out[0], out[1]


def initial_controls(problem: Problem, workspace: Workspace, us_init=None) -> tuple[np.ndarray, str, list[str]]:
    """Controls (N, nu) to start a rollout from, where they came from, and the candidates
    rejected on the way.

    Candidates in order: ``us_init`` (if given), the problem's guess, rest (the
    torques holding q0 at rest, :meth:`~optdyn.ocp.problem.Problem.rest_controls`), each
    clipped to the bounds; the first whose
    rollout is finite and valid for the model is returned ("us_init", "problem" or
    "rest"), its rollout remembered in ``workspace``. An open-loop guess made for multiple
    shooting may diverge in a rollout. If none works, rest is returned and the iteration
    reports "rollout_failed".
    """
    candidates = ([("us_init", lambda: us_init)] if us_init is not None else []) + \
        [("problem", lambda: problem.us_init), ("rest", problem.rest_controls)]
    rejected = []
    for origin, make in candidates:
        us = clipped_controls(problem, make())
        if safe_rollout(problem, us, workspace)[1]:
            return us, origin, rejected
        rejected.append(origin)
    return us, "rest", rejected


def clipped_controls(problem: Problem, us, out: np.ndarray | None = None) -> np.ndarray:
    """A C-ordered float copy of the controls ``us`` (N, nu) clipped to the problem's bounds
    (the kernels are compiled for C-ordered arrays: another order compiles them again), into
    ``out`` (N, nu) if given."""
    if out is not None:
        return np.clip(np.asarray(us, dtype=float), problem.u_lower, problem.u_upper, out=out)
    return np.clip(np.array(us, dtype=float, order="C"), problem.u_lower, problem.u_upper)


def stopped_by_exception(problem: Problem, log: Log, K_shape: tuple[int, int, int]) -> Outcome:
    """Outcome of a solve unwound by a KeyboardInterrupt (during compilation, or a second
    Ctrl-C): the last accepted iterate (``log.kept``), else the problem's initial guess."""
    if log.kept is not None:
        xs, us = (a.copy() for a in log.kept)
        cost, message = problem.cost(xs, us), stop_message("interrupted", log.run)
    else:  # nothing evaluated yet: evaluating the cost now could start a compilation
        xs, us = problem.xs_init.copy(), problem.us_init.copy()
        cost = np.nan
        message = "stopped by Ctrl-C (SIGINT) before the first iterate; the problem's initial guess is returned"
    iterations = max(len(log.rows["cost"]) - 1, 0)
    return Outcome(xs, us, np.zeros(K_shape), cost, False, "interrupted", message, iterations)
