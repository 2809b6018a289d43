"""Model predictive control: the problem's horizon, receding, re-solved from each measured state.

At each control instant t the controller measures x, shifts its horizon to start at t (the
problem's N intervals of ``dt``, with x0 = x), solves it warm-started from the previous
solution and applies the first control ū_0 (Tassa, Erez & Todorov 2012, "Synthesis and
stabilization of complex behaviors through online trajectory optimization": MPC with DDP).
With ``iterations=1`` each instant spends one solver iteration on a warm start that is
already near optimal — the real-time iteration of Diehl, Bock & Schlöder 2005 ("A
real-time iteration scheme for nonlinear optimization in optimal feedback control"): DDP
and iLQR expand the problem once per iteration, at the warm start, and the gains K returned
are those of that expansion (``final_expansion=False`` of :class:`optdyn.solvers.ddp.RiccatiSolver`);
a larger number, or None, solves each horizon to convergence.

The horizon (``horizon``) is "receding": the problem's N intervals from every t, for a task
that goes on (reach a target and stay there); or "shrinking": the intervals left until the
problem's own end T = N·dt, then its last interval again, for a task that must be done at T
(arm-obstacle is at its goal, at rest, at T: a receding horizon moves T along and never gets
there, 0.7 from the goal in the state at 4 s, while a shrinking one with one iLQR iteration
per step arrives within 1e-5, measured; IPOPT with one iteration per step drifts off it after
T, on the last interval re-solved from its previous multipliers). By default the problem
says which (:attr:`optdyn.Problem.done_at_end`): shrinking for the tasks done at their end —
the pendulums' swing-ups, arm-obstacle, arm-pose, the Panda reach and the space manipulator's
reach —, receding for the others. With one iLQR iteration per step, undisturbed, at T
(measured; receding → shrinking): the pendulum 0.17 → 6.8e-7 from upright and the double
pendulum 2.5 → 3.5e-4 (the largest state error), arm-obstacle 0.70 → 7.9e-6 from its goal,
the terminal cost of arm-pose 141 → 1.1e-5, of the space manipulator's reach 33 → 2.5e-5 and
of the Panda reach 6405 → 3.3e-5. The Panda's optimum passes its target at 12 rad/s, which the
task does not ask it to stop at: after T its hand leaves the target either way.

The horizon is a window of the problem (:meth:`optdyn.Problem.window`): the intervals
from the current one on, so that whatever the problem gives per knot moves with time —
references to track and moving targets, a swing foot's weights, the contact sequence of a
gait, per-interval forces —, the last interval's held past the problem's end. With
``horizon=H`` (an integer) the horizon is H intervals of a longer problem: the quadruped's
trot is a 1 s task solved 0.4 s at a time.

The warm start of a horizon shifted by s intervals (s = 1 when called once per interval)
takes the previous solution (x̄, ū, K) shifted: ū_{k+s}, K_{k+s}, the last control and gain
held for the s new intervals (with contacts, the task's guess on those whose contacts differ
from the last carried interval's) and the last state rolled out under them. It is then
made to start from the measured x (``warm_start``):

- "policy" (DDP and iLQR, the default): roll the shifted solution's feedback policy
  u_k = ū_k + K_k (x_k ⊖ x̄_k) out from x, so that after a push the warm start stays near
  the plan instead of following the open-loop controls ū away from it.
- "rollout": the shifted controls ū rolled out open loop from x (single shooting), kept to
  measure the two above against: it does not work (below).
- "shift": the shifted (x̄, ū) with x̄_0 replaced by x, solved by the solver's
  feasibility-driven form (:class:`~optdyn.solvers.ddp.FDDP`, :class:`~optdyn.solvers.ddp.FILQR`:
  the gap at the first node is closed by the step, Mastalli et al. 2020); IPOPT, a
  multiple-shooting NLP, always starts this way.

The multipliers move with the horizon too (``multipliers`` of :func:`optdyn.solve`). With
constraints, DDP and iLQR solve by the augmented Lagrangian, and each horizon starts from the
previous one's multipliers and penalty, shifted as the controls are
(:class:`optdyn.solvers.augmented_lagrangian.AugmentedLagrangian`), so that a real-time iteration sees the
constraint forces of the last solution instead of zero multipliers, which its inner iteration
does not update. The result of that iteration holds its equality rows' and terminal
multipliers updated once at its trajectory, and the next horizon starts from those: one
first-order update per control step, an integral action on their residuals that brings
arm-obstacle's terminal equality to its goal (its shrinking horizon, above). Its inequality
rows' it returns as it used them: updated at every step's unconverged plan, the friction
pyramids' wound up in MuJoCo (:mod:`~optdyn.solvers.augmented_lagrangian`). IPOPT starts
from its previous multipliers of every constraint and bound, shifted (:func:`shift_duals`), with
its warm-start options (a small barrier parameter, the point kept close to its bounds).

DDP and iLQR solve each horizon in the arrays of the one before (a
:class:`~optdyn.solvers.workspace.Workspace`, kept while the horizon keeps its length: the gains,
the iterate and trial trajectories, DDP's stage records), and start from the warm start's
own rollout instead of rolling its controls out again; the compiled kernels see the same
types at every step, so nothing is compiled after the first. What a step still allocates is
the problem's expansion (the costs' and the dynamics' derivatives, new arrays at every
expansion), the kernels' scratch and the result's own arrays (BENCHMARKS.md, "Model
predictive control in closed loop").

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

import numpy as np

from dynamics.parallel import UNMARKED, start_pool

from ..ocp.problem import Problem
from ..ocp.state import check_state
from .ddp import forward_pass
from .result import Result
from .solve import NAMES, solve, solver_name
from .workspace import Workspace

WARM_STARTS = ("policy", "shift", "rollout")
"""How a shifted solution is brought to the measured state (module docstring)."""

HORIZONS = ("receding", "shrinking")
"""Whether the horizon keeps its N intervals or ends where the problem's does (module docstring)."""

_SET_BY_MPC = ("max_iter", "us_init", "xs_init", "init", "final_expansion", "multipliers")

DUALS = ("lambda", "lambda_stage")
"""The augmented Lagrangian's per-knot multipliers in a result's extra, shifted with the horizon."""


class MPC:
    """Receding-horizon controller on ``problem`` (module docstring).

    Args:
        problem: the horizon (N intervals of ``dt``) and the costs; its x0 and initial guess
            start the first solve, which always runs to convergence.
        solver: "ddp", "ilqr" or "ipopt", or any other name :func:`optdyn.solve` takes
            ("fddp", "filqr": the feasibility-driven forms; "al-ddp", …).
        iterations: solver iterations per step (≥ 1; 1 = real-time iteration), or None to
            solve every horizon to convergence.
        warm_start: "policy", "shift" or "rollout" (module docstring); default "policy" for
            DDP/iLQR; IPOPT always shifts. Use iLQR for real-time iterations (module docstring).
        horizon: "receding" (N intervals from every step), "shrinking" (up to the problem's
            end, then its last interval) or a number of intervals H ≤ N (a receding horizon of
            H intervals moving along the problem's; module docstring); None (default):
            shrinking for a problem done at its end (:attr:`optdyn.Problem.done_at_end`), else
            receding.
        **options: further options of :func:`optdyn.solve` (not ``max_iter``, ``init``,
            ``us_init``, ``xs_init``, ``final_expansion``, ``multipliers``, which
            the controller sets).

    Each horizon is a window of the problem (:meth:`optdyn.Problem.window`): its per-knot
    references and weights, contact sequence and per-interval forces move with time. After
    each :meth:`step`, ``problem`` is the horizon just solved, ``result`` its
    :class:`~optdyn.solvers.result.Result` and ``time`` its start; ``task`` is the problem
    given.
    """

    def __init__(self, problem: Problem, solver: str = "ddp", iterations: int | None = 1, *,
                 warm_start: str | None = None, horizon: str | int | None = None, **options) -> None:
        if not isinstance(problem, Problem):
            raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
        if solver not in NAMES:
            raise ValueError(f"solver: expected one of {', '.join(NAMES)}, got {solver!r}")
        if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer))
                                       or iterations < 1):
            raise ValueError(f"iterations: expected an integer ≥ 1 or None (solve to convergence), got {iterations!r}")
        if warm_start is None:
            warm_start = "shift" if solver == "ipopt" else "policy"
        if warm_start not in WARM_STARTS or (solver == "ipopt" and warm_start != "shift"):
            raise ValueError(f"warm_start: expected one of {', '.join(WARM_STARTS)} "
                             f"(IPOPT: 'shift'), got {warm_start!r}")
        if horizon is None:
            horizon = "shrinking" if problem.done_at_end else "receding"
        if not (horizon in HORIZONS or (isinstance(horizon, (int, np.integer)) and not isinstance(horizon, bool)
                                        and 1 <= horizon <= problem.N)):
            raise ValueError(f"horizon: expected one of {', '.join(HORIZONS)} or a number of intervals "
                             f"1 … {problem.N} (the problem's N), got {horizon!r}")
        fixed = sorted(set(options) & set(_SET_BY_MPC))
        if fixed:
            raise ValueError(f"options: {', '.join(fixed)} are set by the controller (use iterations, warm_start)")
        self.task = problem
        self.horizon = horizon if isinstance(horizon, str) else int(horizon)
        self.solver, self.iterations, self.warm_start, self.options = solver, iterations, warm_start, options
        self._elapsed = 0  # intervals since the first step
        self.problem = problem.window(0, self._intervals())  # its own x0; the compiled dynamics are shared
        self.result: Result | None = None
        self.time = 0.0
        self._plan: tuple[np.ndarray, ...] | None = None  # (x̄, ū, K) being followed, set by each step
        N, nx, nu, ndx = self.problem.N, problem.nx, problem.nu, problem.ndx
        self._xs, self._us = np.empty((N + 1, nx)), np.empty((N, nu))  # the shifted solution
        self._K = np.zeros((N, nu, ndx))
        self._k, self._no_gaps = np.zeros((N, nu)), np.zeros((0, ndx))
        self._duals: dict | None = None  # the last solve's AL multipliers and penalty (DDP/iLQR with constraints)
        self._workspace: Workspace | None = None  # DDP/iLQR's arrays, kept while the horizon keeps its length
        start_pool()  # not inside a step of the loop

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
        if self.result is None:
            p.x0 = x
            result = solve(p, self.solver, **self._reused(p), **self.options)
            warm = None
        else:
            self._elapsed += shift
            n = self._intervals()
            self.problem = p = self.task.window(self._elapsed, n)
            p.x0 = x
            self._shifted(shift, n)
            reused = self._reused(p)
            warm = self._warm(x, n)
            limit = {} if self.iterations is None else {"max_iter": self.iterations}
            if limit and self.solver != "ipopt":  # one expansion per iteration (RiccatiSolver.final_expansion)
                limit["final_expansion"] = False
            if self._duals is not None:
                warm["multipliers"] = self._shifted_duals(shift, n)
            result = solve(p, self._warm_solver(p), **limit, **warm, **reused, **self.options)
        self.result = result
        if result.status in ("converged", "acceptable", "max_iter"):  # not the multipliers of a failed solve
            if "duals" in result.extra:  # IPOPT's
                self._duals = {"duals": result.extra["duals"]}
            elif all(k in result.extra for k in DUALS):  # the augmented Lagrangian's
                self._duals = {k: result.extra[k] for k in (*DUALS, "mu", "rho")}
        if np.all(np.isfinite(result.xs)) and np.all(np.isfinite(result.us)):
            self._plan = result.xs, result.us, (self._K[: p.N] if result.gains is None else result.gains)
        elif warm is not None:  # a failed solve (status says why): keep the shifted plan
            self._plan = warm.get("xs_init", self._xs[: p.N + 1]), warm["us_init"], self._K[: p.N]
        else:
            raise ValueError(f"problem: the first solve failed ({result.status}: {result.message})")
        return self._plan[1][0].copy(), self._plan[2][0].copy()

    def _warm_solver(self, p: Problem) -> str:
        """The solver of a warm solve of ``p``: ``solver``, or for DDP/iLQR's "shift" its
        feasibility-driven form."""
        if self.warm_start != "shift" or self.solver == "ipopt":
            return self.solver
        return solver_name(p, self.solver, feasibility_driven=True)

    def _reused(self, p: Problem) -> dict:
        """The ``workspace`` option of :func:`optdyn.solve` for DDP/iLQR: the arrays of the last
        step's solve when the horizon ``p`` has its length (a shrinking horizon's change makes
        new ones); none for IPOPT."""
        if self.solver == "ipopt":
            return {}
        if self._workspace is None or not self._workspace.fits(p):
            self._workspace = Workspace(p)
        return {"workspace": self._workspace}

    def _intervals(self) -> int:
        """The intervals of the horizon that starts now (``horizon``)."""
        if self.horizon == "shrinking":
            return max(self.task.N - self._elapsed, 1)
        return self.task.N if self.horizon == "receding" else self.horizon

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

    def _shifted(self, s: int, n: int) -> None:
        """The last solution (m intervals) moved ``s`` intervals earlier into the first n
        intervals of (_xs, _us, _K): the last control and gain held over the new intervals —
        with contacts, the task's guess on a new interval whose contacts differ from the last
        carried one's (a control held from another contact phase starts the next window far
        from its optimum: on the trot with its friction pyramid as a cost the base then ends
        2.6 cm off the optimum instead of 2.0) — and the last state rolled out under them."""
        p, (xs, us, K) = self.problem, self._plan
        m, s = us.shape[0], min(s, us.shape[0])
        knots_shifted(us, s, n, self._us[:n])
        knots_shifted(K, s, n, self._K[:n])
        c = min(n, m - s)  # intervals carried over
        if p.contacts is not None and c > 0:  # a new interval on other contacts: the task's guess there
            for j in range(c, n):
                if p.contacts[j] != p.contacts[c - 1]:
                    self._us[j] = p.us_init[j]
        self._xs[: c + 1] = xs[s: s + c + 1]
        for k in range(c + 1, n + 1):
            try:
                self._xs[k] = p.step(self._xs[k - 1: k], self._us[k - 1: k], start=k - 1)[0]
            except ValueError:  # the contact dynamics at a state the plan diverged to
                self._xs[k:] = np.nan  # (_warm then starts from the measured state)
                break

    def _shifted_duals(self, s: int, n: int) -> dict:
        """The last solve's multipliers moved ``s`` intervals earlier, for a horizon of n
        intervals: IPOPT's by :func:`shift_duals`; the augmented
        Lagrangian's per-knot rows (the last row held over the new ones), its terminal
        multipliers and penalty as they were."""
        if "duals" in self._duals:
            return shift_duals(self.problem, self._duals, s)
        out = dict(self._duals)
        for k in DUALS:
            out[k] = knots_shifted(out[k], s, n)
        return out

    def _warm(self, x: np.ndarray, n: int) -> dict:
        """The warm-start options of :func:`optdyn.solve` for the shifted solution (its first
        n intervals) from ``x``. The feedback policy's rollout is written into the arrays the
        solve starts from (:meth:`~optdyn.solvers.workspace.Workspace.iterate`) and linearised
        on a pool thread as its knots come (:meth:`~optdyn.solvers.workspace.Workspace.follow`,
        in the mode the last solve linearised in), as the line search's first trial is: the
        solve's first expansion then finds that done."""
        p = self.problem
        xs, us, K = self._xs[: n + 1], self._us[:n], self._K[:n]
        if self.warm_start == "shift":
            xs[0] = x
            if not np.all(np.isfinite(xs)):  # the last state's rollout diverged: start from x at rest
                xs[:] = x
            return {"xs_init": xs, "us_init": us}
        if self.warm_start == "rollout":
            return {"us_init": us}
        # the policy ū + K (x ⊖ x̄) rolled out from x: knot 0 here, the others in the compiled forward pass
        u0 = us[0] + K[0] @ p.state_difference(xs[0], x)
        if not np.all(np.isfinite(u0)):  # the shifted plan's last state diverged: its controls alone
            return {"us_init": us}
        us[0] = np.clip(u0, p.u_lower, p.u_upper)
        xs[0] = x
        ws = self._workspace
        ws.settle()
        xs_new, us_new = ws.iterate()  # rolled out where the solve starts, its knots linearised as they come
        mode = ws.linearized_mode()  # the solver's, as the last solve linearised
        ready = UNMARKED if mode is None else ws.follow(p, xs_new, us_new, mode)
        try:
            rolled = forward_pass(p.dynamics, xs, us, self._k[:n], K, 0.0, p.u_lower, p.u_upper, xs_new, us_new,
                                  self._no_gaps, ready)
        except ValueError:  # the contact dynamics at a state the policy diverged to
            rolled = False
        if not rolled:
            ws.unfollow()
            return {"us_init": us}  # diverged: the shifted controls (solve falls back to rest if need be)
        ws.remember(p, us_new, xs_new)  # the solve starts from this rollout, not another
        return {"xs_init": xs_new, "us_init": us_new}


def knots_shifted(rows: np.ndarray, s: int, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """n rows of per-knot values ``rows`` (m, …) moved s knots earlier: rows s … s + n − 1,
    the last row held where they run out; into ``out`` (n, …) if given."""
    rows = np.asarray(rows)
    taken = rows[min(s, len(rows)): min(s, len(rows)) + n]
    out = np.empty((n, *rows.shape[1:]), rows.dtype) if out is None else out
    out[: len(taken)] = taken
    out[len(taken):] = rows[-1]
    return out


def shift_duals(problem: Problem, multipliers, s: int) -> dict:
    """IPOPT's multipliers (``multipliers["duals"]``, an IPOPT result's extra) of a horizon
    moved s knots earlier, for ``problem``'s N knots: the per-knot blocks of the constraint
    multipliers (defects, path, stage rows) and of the variables' bound multipliers (ξ_k, u_k),
    laid out as :class:`optdyn.solvers.ipopt.MultipleShootingNLP` orders them, by
    :func:`knots_shifted`; the terminal rows' and x_N's as they were. Returns
    ``{"duals": ...}``, which :meth:`optdyn.solvers.ipopt.IPOPT.solve` takes as ``multipliers``."""
    N, ndx, nw = problem.N, problem.ndx, problem.ndx + problem.nu
    widths = (ndx, problem.nc_general, problem.ng)
    d = multipliers["duals"]
    g, lower, upper = (np.asarray(d[k]) for k in ("constraints", "lower", "upper"))
    m = (lower.size - ndx) // nw  # the knots of the horizon they came from
    parts, start = [], 0
    for w in widths:
        parts.append(knots_shifted(g[start: start + m * w].reshape(m, w), s, N).ravel())
        start += m * w
    bounds = {k: np.concatenate([knots_shifted(a[: m * nw].reshape(m, nw), s, N).ravel(), a[m * nw:]])
              for k, a in (("lower", lower), ("upper", upper))}
    return {"duals": {"constraints": np.concatenate(parts + [g[start:]]), **bounds}}
