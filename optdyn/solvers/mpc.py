"""Model predictive control: the problem's horizon, receding, re-solved from each measured state.

At each control instant t the controller measures x, shifts its horizon to start at t (the
problem's N intervals of ``dt``, with x0 = x), solves it warm-started from the previous
solution and applies the first control ū_0 (Tassa, Erez & Todorov 2012, "Synthesis and
stabilization of complex behaviors through online trajectory optimization": MPC with DDP).
With ``iterations=1`` each instant spends one solver iteration on a warm start that is
already near optimal — the real-time iteration of Diehl, Bock & Schlöder 2005 ("A
real-time iteration scheme for nonlinear optimization in optimal feedback control"): DDP
and iLQR expand the problem once per iteration, at the warm start, and the gains K returned
are those of that expansion (``final_expansion=False`` of :class:`optdyn.solvers.ddp.Options`);
a larger number, or None, solves each horizon to convergence.

The warm start of a horizon shifted by s intervals (s = 1 when called once per interval)
takes the previous solution (x̄, ū, K) shifted: ū_{k+s}, K_{k+s}, the last control and gain
held for the s new intervals and the last state rolled out under that control. It is then
made to start from the measured x (``warm_start``):

- "policy" (DDP and iLQR, the default): roll the shifted solution's feedback policy
  u_k = ū_k + K_k (x_k ⊖ x̄_k) out from x, so that after a push the warm start stays near
  the plan instead of following the open-loop controls ū away from it.
- "rollout": the shifted controls ū rolled out open loop from x (single shooting), kept to
  measure the two above against: it does not work (below).
- "shift": the shifted (x̄, ū) with x̄_0 replaced by x, solved by multiple shooting
  (``shooting="multiple"``: the gap at the first node is closed by the step,
  Mastalli et al. 2020); IPOPT, a multiple-shooting NLP, always starts this way.

The multipliers move with the horizon too (``multipliers`` of :func:`optdyn.solve`). With
constraints, DDP and iLQR solve by the augmented Lagrangian, and each horizon starts from the
previous one's multipliers and penalty, shifted as the controls are
(:func:`optdyn.solvers.augmented_lagrangian.solve_al`), so that a real-time iteration sees the
constraint forces of the last solution instead of zero multipliers, which one iteration never
updates. IPOPT starts from its previous multipliers of every constraint and bound, shifted
(:func:`optdyn.solvers.ipopt.shift_duals`), with its warm-start options (a small barrier
parameter, the point kept close to its bounds).

Measured on ur5-reach (2 s horizon; BENCHMARKS.md, "Model predictive control in closed
loop"): with one iLQR iteration per step both warm starts track the converged controller
(controls within 7e-3 N·m of 130) and bring the tool back within 1 cm of the target after a
30 N push. From the open-loop "rollout" the tool drifts by up to 1.2 m within 2 s, with or
without a push, with one iLQR or DDP iteration per step. One DDP iteration per step does not: its V'_x·F_uu terms make Q_uu indefinite
at a shifted warm start that is not yet optimal, the regularised step falls short, the next
warm start is worse, and from about 2 s on the tool drifts away even without a push. DDP
solved to convergence at each step works. One IPOPT iteration per step tracks the
converged controller once it starts from the shifted multipliers (below; 0.19 N·m off after
the push, 14 N·m from the shifted primal solution alone); IPOPT to convergence agrees with iLQR.
"""
from __future__ import annotations

import copy

import numpy as np

from ..ocp.problem import SOLVERS, Problem
from ..ocp.state import check_state
from .ddp import forward_pass
from .result import Result
from .solve import solve

WARM_STARTS = ("policy", "shift", "rollout")
"""How a shifted solution is brought to the measured state (module docstring)."""

_SET_BY_MPC = ("max_iter", "us_init", "xs_init", "init", "shooting", "final_expansion", "multipliers")

DUALS = ("lambda", "lambda_stage")
"""The augmented Lagrangian's per-knot multipliers in a result's extra, shifted with the horizon."""


class MPC:
    """Receding-horizon controller on ``problem`` (module docstring).

    Args:
        problem: the horizon (N intervals of ``dt``) and the costs; its x0 and initial guess
            start the first solve, which always runs to convergence.
        solver: "ddp", "ilqr" or "ipopt".
        iterations: solver iterations per step (≥ 1; 1 = real-time iteration), or None to
            solve every horizon to convergence.
        warm_start: "policy", "shift" or "rollout" (module docstring); default "policy" for
            DDP/iLQR; IPOPT always shifts. Use iLQR for real-time iterations (module docstring).
        **options: further options of :func:`optdyn.solve` (not ``max_iter``, ``init``,
            ``us_init``, ``xs_init``, ``shooting``, ``final_expansion``, which the controller sets).

    The costs and constraints are time-invariant: moving references are not supported
    (a problem's per-interval ``f_ext``, contact sequence or per-knot references are refused). After each :meth:`step`, ``result`` is
    the last solve's :class:`~optdyn.solvers.result.Result` and ``time`` the start of its
    horizon.
    """

    def __init__(self, problem: Problem, solver: str = "ddp", iterations: int | None = 1, *,
                 warm_start: str | None = None, **options) -> None:
        if not isinstance(problem, Problem):
            raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
        if solver not in SOLVERS:
            raise ValueError(f"solver: expected one of {', '.join(SOLVERS)}, got {solver!r}")
        if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer))
                                       or iterations < 1):
            raise ValueError(f"iterations: expected an integer ≥ 1 or None (solve to convergence), got {iterations!r}")
        if warm_start is None:
            warm_start = "shift" if solver == "ipopt" else "policy"
        if warm_start not in WARM_STARTS or (solver == "ipopt" and warm_start != "shift"):
            raise ValueError(f"warm_start: expected one of {', '.join(WARM_STARTS)} "
                             f"(IPOPT: 'shift'), got {warm_start!r}")
        fixed = sorted(set(options) & set(_SET_BY_MPC))
        if fixed:
            raise ValueError(f"options: {', '.join(fixed)} are set by the controller (use iterations, warm_start)")
        if problem.f_ext.shape[0] > 1 or problem.contacts is not None:
            raise ValueError("problem: per-interval f_ext or a contact sequence would have to move with the "
                             "horizon; MPC takes problems whose intervals are all alike")
        terms = [problem.running_cost, problem.terminal_cost, *problem.path_constraints,
                 *problem.stage_constraints, *problem.terminal_constraints]
        timed = [type(r).__name__ for t in terms if t is not None for r in t.residuals() if r.knots() is not None]
        if timed:
            raise ValueError(f"problem: {timed[0]} has one reference per knot, which would have to move with the "
                             "horizon; MPC takes problems whose intervals are all alike (moving references: not yet)")
        self.problem = copy.copy(problem)  # its own x0; the compiled dynamics are shared
        self.solver, self.iterations, self.warm_start, self.options = solver, iterations, warm_start, options
        self.result: Result | None = None
        self.time = 0.0
        self._plan: tuple[np.ndarray, np.ndarray] | None = None  # (x̄, ū) being followed, set by each step
        N, nx, nu, ndx = problem.N, problem.nx, problem.nu, problem.ndx
        self._xs, self._us = np.empty((N + 1, nx)), np.empty((N, nu))  # the shifted solution
        self._K = np.zeros((N, nu, ndx))
        self._xs_new, self._us_new = np.empty((N + 1, nx)), np.empty((N, nu))
        self._k, self._no_gaps = np.zeros((N, nu)), np.zeros((0, ndx))
        self._duals: dict | None = None  # the last solve's AL multipliers and penalty (DDP/iLQR with constraints)

    def step(self, x, t: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The control (nu,) to apply at time ``t`` (s) from the measured state ``x`` (nx,), and
        its feedback gain K (nu, ndx).

        The horizon moves to start at ``t``, rounded to the grid of ``dt`` that the first call
        started (None: one interval after the previous call). K is the derivative of the
        control with respect to the state at t (tangent space; zeros for IPOPT, which gives
        no gains): an inner loop measuring x' before the next step may apply
        u + K (x' ⊖ x).
        """
        p = self.problem
        x = np.array(x, dtype=float)
        if x.shape != (p.nx,) or not np.all(np.isfinite(x)):
            raise ValueError(f"x: expected a finite state of shape ({p.nx},), got shape {x.shape}"
                             + ("" if x.shape != (p.nx,) else " with NaN or inf"))
        check_state(p.model, x, "x")
        shift = self._shift(t)
        p.x0 = x
        if self.result is None:
            result = solve(p, self.solver, **self.options)
            warm = None
        else:
            self._shifted(shift)
            warm = self._warm(x)
            limit = {} if self.iterations is None else {"max_iter": self.iterations}
            if limit and self.solver != "ipopt":  # one expansion per iteration (Options.final_expansion)
                limit["final_expansion"] = False
            if self._duals is not None:
                warm["multipliers"] = self._shifted_duals(shift)
            result = solve(p, self.solver, **limit, **warm, **self.options)
        self.result = result
        if result.status in ("converged", "acceptable", "max_iter"):  # not the multipliers of a failed solve
            if "duals" in result.extra:  # IPOPT's
                self._duals = {"duals": result.extra["duals"]}
            elif all(k in result.extra for k in DUALS):  # the augmented Lagrangian's
                self._duals = {k: result.extra[k] for k in (*DUALS, "mu", "rho")}
        if np.all(np.isfinite(result.xs)) and np.all(np.isfinite(result.us)):
            self._plan = result.xs, result.us
            if result.gains is not None:
                self._K[:] = result.gains
        elif warm is not None:  # a failed solve (status says why): keep the shifted plan
            self._plan = warm.get("xs_init", self._xs), warm["us_init"]
        else:
            raise ValueError(f"problem: the first solve failed ({result.status}: {result.message})")
        return self._plan[1][0].copy(), self._K[0].copy()

    def _shift(self, t: float | None) -> int:
        """The number of intervals from the last horizon's start to ``t``; moves ``time`` there."""
        if self.result is None:
            if t is not None:
                self.time = self._check_time(t)
            return 0
        if t is None:
            self.time += self.problem.dt
            return 1
        t = self._check_time(t)
        shift = int(round((t - self.time) / self.problem.dt))
        if shift < 0:
            raise ValueError(f"t: expected a time ≥ the last step's {self.time:g} s, got {t!r}")
        self.time += shift * self.problem.dt
        return shift

    @staticmethod
    def _check_time(t) -> float:
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not np.isfinite(t):
            raise ValueError(f"t: expected a finite time in s, got {t!r}")
        return float(t)

    def _shifted(self, s: int) -> None:
        """The last solution moved ``s`` intervals earlier into (_xs, _us, _K): the last
        control and gain held over the new intervals, the last state rolled out under them."""
        p, (xs, us) = self.problem, self._plan
        N = p.N
        s = min(s, N)
        self._us[: N - s], self._us[N - s:] = us[s:], us[-1]
        self._K[: N - s] = self._K[s:]
        self._K[N - s:] = self._K[N - 1]
        self._xs[: N + 1 - s] = xs[s:]
        for k in range(N + 1 - s, N + 1):
            self._xs[k] = p.step(self._xs[k - 1: k], self._us[k - 1: k])[0]

    def _shifted_duals(self, s: int) -> dict:
        """The last solve's multipliers moved ``s`` intervals earlier: IPOPT's by
        :func:`~optdyn.solvers.ipopt.shift_duals`; the augmented Lagrangian's per-knot rows
        (the last row held over the new ones), its terminal multipliers and penalty as they were."""
        if "duals" in self._duals:
            from .ipopt import shift_duals
            return shift_duals(self.problem, self._duals, s)
        out = dict(self._duals)
        for k in DUALS:
            lam = out[k]
            out[k] = np.concatenate([lam[min(s, len(lam)):], np.repeat(lam[-1:], min(s, len(lam)), axis=0)])
        return out

    def _warm(self, x: np.ndarray) -> dict:
        """The warm-start options of :func:`optdyn.solve` for the shifted solution from ``x``."""
        p = self.problem
        if self.warm_start == "shift":
            self._xs[0] = x
            if not np.all(np.isfinite(self._xs)):  # the last state's rollout diverged: start from x at rest
                self._xs[:] = x
            if self.solver == "ipopt":
                return {"xs_init": self._xs, "us_init": self._us}
            return {"xs_init": self._xs, "us_init": self._us, "shooting": "multiple"}
        if self.warm_start == "rollout":
            return {"us_init": self._us}
        # the policy ū + K (x ⊖ x̄) rolled out from x: knot 0 here, the others in the compiled forward pass
        u0 = self._us[0] + self._K[0] @ p.state_difference(self._xs[0], x)
        if not np.all(np.isfinite(u0)):  # the shifted plan's last state diverged: its controls alone
            return {"us_init": self._us}
        self._us[0] = np.clip(u0, p.u_lower, p.u_upper)
        self._xs[0] = x
        if not forward_pass(p.dynamics, self._xs, self._us, self._k, self._K, 0.0, p.u_lower, p.u_upper,
                            self._xs_new, self._us_new, self._no_gaps):
            return {"us_init": self._us}  # diverged: the shifted controls (solve falls back to rest if need be)
        return {"xs_init": self._xs_new, "us_init": self._us_new}
