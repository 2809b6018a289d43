"""Augmented-Lagrangian DDP/iLQR whose multipliers move inside the iteration.

The constrained problem (path rows c(x_k) at nodes 1..N, stage rows g(x_k, u_k) at knots
0..N−1, terminal equalities h(x_N); equalities or inequalities ≥ 0; joint limits, clearances,
friction and wrench cones alike) is solved by one DDP/iLQR iteration
(:class:`~optdyn.solvers.ddp.RiccatiSolver`: the Riccati backward pass, the control box in its
QP) on the augmented Lagrangian L_A(X, U; λ, ρ) of Powell–Hestenes–Rockafellar
(:class:`~optdyn.solvers.augmented_lagrangian.ALObjective`: the penalty's Gauss–Newton part
ψ''∇c∇cᵀ and its second-order part ψ'∇²c enter the Q-function of every knot, so DDP keeps its
exact second-order model). Between two steps of that iteration the multipliers λ and the
penalty ρ are revised by the bound-constrained Lagrangian rule (BCL: A. R. Conn, N. I. M.
Gould, Ph. L. Toint, "A Globally Convergent Augmented Lagrangian Algorithm for Optimization
with General Constraints and Simple Bounds", SIAM J. Numer. Anal. 28(2), 1991; J. Nocedal,
S. J. Wright, "Numerical Optimization", 2nd ed. 2006, Algorithm 17.4), the schedule that
W. Jallet, A. Bambade, N. Mansard, J. Carpentier, "Constrained Differential Dynamic
Programming: A primal-dual augmented Lagrangian approach", IROS 2022 (Alg. 2) runs inside
DDP. At an iterate stationary to the tolerance ω (the model's decrease for a full step
≤ ω·(1 + |L_A|), the test the unconstrained iteration stops on):

- if its largest violation v ≤ η, the first-order update λ ← Π(λ − ρc) (ALTRO, Howell et
  al. 2019, eq. 8–9) and tighter tolerances η ← η/ν^0.9, ω ← ω/ν;
- otherwise a larger penalty ρ ← φρ and tolerances η ← η0/ν^0.1, ω ← ω0/ν from it,

with ν = max(ρ, φ) (Algorithm 17.4's penalty, kept ≥ φ so that the tolerances shrink from a
small first penalty too), η and ω never below ``constraint_tol`` and the solver's ``tol``. It
has converged at an iterate stationary to ``tol`` with v ≤ ``constraint_tol``. The
multipliers are those of the PHR terms with the dual variables at their first-order estimates
(Jallet et al.'s primal-dual merit minimised over the duals); a revision keeps the iterate,
the regularisation and the arrays of the iteration, where the outer loop of
:class:`~optdyn.solvers.augmented_lagrangian.AugmentedLagrangian` starts a whole inner solve
after each update.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ocp.problem import Problem
from .augmented_lagrangian import ALObjective, initial_multipliers
from .ddp import DDP, FDDP, FILQR, ILQR, Log, RiccatiSolver, stopped_by_exception
from .result import Result
from .runtime import Run, check_number, is_interrupt
from .workspace import Workspace


class BCLObjective(ALObjective):
    """The augmented Lagrangian of :class:`~optdyn.solvers.augmented_lagrangian.ALObjective`
    with the BCL revision of the module docstring (:meth:`revise`) by the settings of
    ``solver`` (a :class:`BCL`); ``warm``: the multipliers came from a previous solve, so the
    tolerances start at their final values."""

    def __init__(self, problem: Problem, lam, mu, rho: float, lam_stage, gauss_newton: bool, solver: BCL,
                 warm: bool = False, log: Log | None = None) -> None:
        super().__init__(problem, lam, mu, rho, lam_stage, gauss_newton)
        self.solver, self.log, self.revisions = solver, log, 0
        self.omega = solver.tol if warm else max(solver.tol, solver.omega0 / self._nu())
        self.eta = solver.constraint_tol if warm else max(solver.constraint_tol, solver.eta0 / self._nu() ** 0.1)

    def _nu(self) -> float:
        return max(self.rho, self.solver.rho_factor)

    def satisfied(self, xs: np.ndarray, us: np.ndarray) -> bool:
        """Stationary to the final tolerance (the caller's test) and violation ≤ constraint_tol."""
        return self.omega <= self.solver.tol and self.violation(xs, us) <= self.solver.constraint_tol

    def revise(self, xs: np.ndarray, us: np.ndarray, stationary) -> bool:
        """The BCL revision (module docstring) at an iterate stationary to ω; False (nothing
        changed) elsewhere or at a solution."""
        s = self.solver
        if not stationary(self.omega):
            return False
        v = self.violation(xs, us)
        if v <= self.eta:
            if v <= s.constraint_tol and self.omega <= s.tol:
                return False
            self.update(xs, us)
            self.eta = max(s.constraint_tol, self.eta / self._nu() ** 0.9)
            self.omega = max(s.tol, self.omega / self._nu())
        else:
            if self.rho >= s.rho_max:  # no larger penalty: move the multipliers instead
                self.update(xs, us)
            self.rho = min(self.rho * s.rho_factor, s.rho_max)
            self.eta = max(s.constraint_tol, s.eta0 / self._nu() ** 0.1)
            self.omega = max(s.tol, s.omega0 / self._nu())
        self.revisions += 1
        if self.log is not None:
            self.log.outer = self.revisions
        return True


def _constrained(problem: Problem) -> bool:
    return bool(problem.nc or problem.ng or problem.nh)


@dataclass
class BCL:
    """A Riccati solver type on the augmented Lagrangian, its multipliers and penalty revised
    inside the iteration (module docstring). Settings beside the solver's own:
    ``constraint_tol`` (1e-6, the largest violation accepted), ``rho_init`` (1, the first
    penalty), ``rho_factor`` (φ = 10), ``rho_max`` (1e10), ``omega0`` (ω0 = 1e-5: the
    first stationarity tolerance is ω0/ν, relative as ``tol``; measured on the benchmark's arms
    and legged tasks against 1e-3, 1e-4 and 1e-6) and ``eta0`` (η0 = 1: the first violation
    tolerance is η0/ν^0.1); a bad value raises ValueError naming it. Without constraints the
    solve is the plain solver's."""

    constraint_tol: float = 1e-6
    rho_init: float = 1.0
    rho_factor: float = 10.0
    rho_max: float = 1e10
    omega0: float = 1e-5
    eta0: float = 1.0

    def validate(self) -> None:
        super().validate()
        for name in ("constraint_tol", "rho_init", "rho_factor", "rho_max", "omega0", "eta0"):
            check_number(name, getattr(self, name))
        if self.rho_factor <= 1.0:
            raise ValueError(f"rho_factor: expected a growth factor > 1, got {self.rho_factor!r}")
        if self.rho_max < self.rho_init:
            raise ValueError(f"rho_max: expected at least rho_init = {self.rho_init!r}, got {self.rho_max!r}")

    def solve(self, problem: Problem, us_init=None, xs_init=None, *, multipliers=None,
              workspace: Workspace | None = None) -> Result:
        """Solve the constrained ``problem`` (the plain solver's :meth:`RiccatiSolver.solve`
        without constraints) from :meth:`~RiccatiSolver.initial_guess`, ``multipliers`` (a
        constrained result's extra, e.g. shifted by :class:`optdyn.MPC`) starting the
        multipliers and penalty there. The result's cost is the true objective J; its extra
        holds the multipliers updated once more at the returned trajectory, so that the
        stationarity of L_A there is the KKT condition with them — a stopped solve's inequality
        rows' kept as its last step used them (:mod:`~optdyn.solvers.augmented_lagrangian`) —
        ("lambda" (N, nc) of the path rows at nodes 1..N, "lambda_stage" (N, ng), "mu" (nh,)),
        the penalty "rho", the number of "revisions", "violation" and the solver's usual
        entries."""
        if not _constrained(problem):
            return RiccatiSolver.solve(self, problem, us_init, xs_init, workspace=workspace)
        lam, lam_stage, mu, rho = initial_multipliers(problem, multipliers, self.rho_init)
        ws = Workspace(problem) if workspace is None else workspace
        origin, rejected = "", []
        with Run(self.max_time) as run:
            log = Log(self.name, self.callback, self.verbose, run=run)
            objective = BCLObjective(problem, lam, mu, rho, lam_stage, self.objective(problem).gauss_newton, self,
                                     warm=multipliers is not None, log=log)
            try:
                us0, xs0, origin, rejected = self.initial_guess(problem, ws, us_init, xs_init)
                out = self.iterate(problem, objective, us0, log, xs=xs0, workspace=ws)
            except (KeyboardInterrupt, SystemError) as e:
                if not is_interrupt(e) and not run.interrupted:
                    raise
                out = stopped_by_exception(problem, log, (problem.N, problem.nu, problem.ndx))
        finite = bool(np.all(np.isfinite(out.xs)))
        cost = objective.cost(out.xs, out.us) if finite else np.nan
        violation = objective.violation(out.xs, out.us) if finite else np.nan
        if finite:  # the multipliers of the returned trajectory (ALTRO eq. 8–9), as AugmentedLagrangian's
            objective.update(out.xs, out.us, inequalities=out.converged)
        return Result(xs=out.xs, us=out.us, cost=cost, converged=out.converged, iterations=out.iterations,
                      status=out.status, message=out.message, history=log.history(), solver=self.name,
                      problem=problem.name, params=problem.params, wall_time=run.elapsed(), gains=out.K,
                      extra={"lambda": objective.lam, "lambda_stage": objective.lam_stage, "mu": objective.mu,
                             "rho": objective.rho, "revisions": objective.revisions, "violation": violation,
                             "regularization": out.mu, "gradient": out.gradient,
                             "rejected_rollouts": log.rejected, "invalid_rollouts": log.invalid,
                             "first_order_steps": log.first_order, "initial_guess": origin,
                             "rejected_guesses": rejected, "compile_time": run.compile_time()})


@dataclass
class ALDDP(BCL, DDP):
    """:class:`~optdyn.solvers.ddp.DDP` (exact second order) on the augmented Lagrangian, its
    multipliers revised inside the iteration (:class:`BCL`)."""

    name: ClassVar[str] = "al-ddp"


@dataclass
class ALILQR(BCL, ILQR):
    """:class:`~optdyn.solvers.ddp.ILQR` on the augmented Lagrangian, its multipliers revised
    inside the iteration (:class:`BCL`)."""

    name: ClassVar[str] = "al-ilqr"


@dataclass
class ALFDDP(BCL, FDDP):
    """The feasibility-driven :class:`~optdyn.solvers.ddp.FDDP` with :class:`BCL`."""

    name: ClassVar[str] = "al-fddp"


@dataclass
class ALFILQR(BCL, FILQR):
    """The feasibility-driven :class:`~optdyn.solvers.ddp.FILQR` with :class:`BCL`."""

    name: ClassVar[str] = "al-filqr"
