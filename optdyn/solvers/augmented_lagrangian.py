"""Augmented-Lagrangian DDP/iLQR for path and stage constraints and terminal equalities.

The outer loop of AL-iLQR (T. A. Howell, B. E. Jackson, Z. Manchester, "ALTRO: A Fast
Solver for Constrained Trajectory Optimization", IROS 2019, Alg. 1–2):
each outer iteration minimises, by DDP or iLQR (:mod:`optdyn.solvers.ddp`, control bounds kept
inside the box QP), the augmented Lagrangian

    L_A = J(X, U) + Σ_{k=1..N} Σ_i ψ(c_i(x_k); λ_ki, ρ) + Σ_{k=0..N−1} Σ_i ψ(g_i(x_k, u_k); λ^g_ki, ρ)
          + Σ_j [μ_j h_j(x_N) + ½ρ h_j(x_N)²]

with the Powell–Hestenes–Rockafellar term for an inequality c ≥ 0 (smooth, λ ≥ 0)

    ψ(c; λ, ρ) = (max(0, λ − ρc)² − λ²) / (2ρ),   ψ' = −max(0, λ − ρc),   ψ'' = ρ·[λ > ρc]

and, for an equality row c = 0 of the path or stage constraints, the same without the max:
ψ = −λc + ½ρc², ψ' = −(λ − ρc), ψ'' = ρ (the Lagrangian J − λᵀc of both kinds of rows;
D. P. Bertsekas, "Constrained Optimization and Lagrange Multiplier Methods", 1982, Sec. 3.1).
The stage rows g depend on (x_k, u_k): their terms enter ℓ_x, ℓ_u and the three Hessian blocks
with the Gauss–Newton part ψ'' g_z g_zᵀ and the second-order part ψ' g_zz. iLQR's model (its
objective's ``gauss_newton``) takes the Gauss–Newton part alone, of every row as of every
residual cost: its curvature ψ' c_zz, which the exact model (DDP's) keeps, is left out (the stage
rows' is not computed). ψ is quadratic on one side of an inequality row's kink (c < λ/ρ) and flat
on the other; the inner iteration's steps take the rows they cross on the side they land
(:meth:`ALObjective.activate`, :meth:`~optdyn.solvers.ddp.RiccatiSolver.step_on`).
It then updates the multipliers λ ← max(0, λ − ρc) (λ ← λ − ρc on equality rows), μ ← μ + ρh
(ALTRO eq. 8–9) and, when the largest violation did not shrink to ``decrease`` (0.1) times the
previous outer iteration's, the penalty ρ ← φρ — the test of E. G. Birgin and J. M. Martínez,
"Practical Augmented Lagrangian Methods for Constrained Optimization" (SIAM 2014; the method of
ALGENCAN), whose τ this is (they measure an inequality's violation jointly with its
multiplier's complementarity); ALTRO raises ρ at every outer iteration. τ was chosen on a
family of 124 constrained solves (DDP and iLQR on the friction pyramids of four quadrupeds'
trots, walks and jumps at three friction coefficients, Talos' wrench cones, ten arms' joint
limits at three targets each, arm-obstacle's clearances): against 0.25, 9 % fewer iterations on
the legged tasks by the geometric mean and 1 % fewer on the arms (0.05: 6 % and 0 %; 0.15:
7 % and 1 %) (BENCHMARKS.md, "constraints-family"). As in ALTRO the early inner solves are loose:
their tolerance starts at ``inner_tol0`` and shrinks by ``inner_tol_factor`` per outer
iteration down to the solver's ``tol``. It stops when an inner solve at full tolerance
converged with the largest violation ≤ ``constraint_tol``. An inner solve starts where the last
one ended, whose dynamics' linearization it keeps; DDP's first pass there also keeps the
dynamics' curvature V'_x·F_zz of the last one's final pass (:meth:`~optdyn.solvers.ddp.DDP.direction`),
taken at the V'_x of the former multipliers: most of an exact pass's cost (0.9 of it
on Solo-12's trot), once per outer iteration. Measured (BENCHMARKS.md, "cone-ratio"): with the
steps on crossed rows taking it too (:meth:`~optdyn.solvers.ddp.RiccatiSolver.step_on`), 20
contracted passes instead of 28 for the 19 iterations of Solo-12's trot with its pyramids, the
same iterates' counts on the trots; 1708 iterations instead of 1715 on the family of 62 DDP
solves of "constraints-family".

The multipliers a result returns are updated once more at its trajectory, so that a converged
solve's last stationarity is the KKT condition with them; a solve stopped before — at
``max_iter``, as each real-time iteration of :class:`optdyn.MPC` is, at a time limit or on a
failure — updates its equality rows' and terminal multipliers so, and keeps its inequality
rows' as its last step used them. MPC starts each horizon from the last one's multipliers: the
update per control step is an integral action on the rows' residuals, which brings
arm-obstacle's terminal equality to its goal, but which on inequality rows made infeasible for a
while (a plant that is not the model, a push) winds up — in MuJoCo the friction pyramids'
multipliers of Solo-12's trot (one iLQR iteration per step, a 25-interval horizon) grew from
0.26 to 10⁵ within 0.36 s, until the policy's gains made the plant diverge. With the inequality
rows' kept (measured 2026-12-02, 4 s runs): that trot unclamped diverges at 2.08 s instead of
0.36 s, at the command line's 5 N·m clamp with a 12 N push at 1.02 s instead of 0.76 s, on the
library's plant through a 10 N push it tilts 5.7° at most instead of 20.5°, and arm-obstacle's
closed loop is the same to 1e-16.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from dynamics._compile import njit

from .ddp import Log, Objective, RiccatiSolver, stopped_by_exception
from ..ocp.problem import Problem
from .result import Result, multiplier_arrays
from .runtime import Run, check_count, check_number, is_interrupt
from .workspace import Workspace


def _phr(c, lam, rho, equality=False):
    """ψ, ψ', ψ'' of the rows' terms (module docstring), elementwise: inequalities, or
    equalities where ``equality`` (bool, broadcast over the rows)."""
    t = lam - rho * c
    t = np.where(equality, t, np.maximum(0.0, t))
    return (t * t - lam * lam) / (2.0 * rho), -t, rho * ((t > 0.0) | equality)


def _add_penalty(terms_x, c, cx, cxx, d1, d2, d0, gauss_newton: bool):
    """Add Σ_i ψ_i to (l, lx, lxx) given ψ (d0), ψ' (d1), ψ'' (d2) per constraint row (at K
    knots, or at one without the knot axis); with ``gauss_newton`` the Hessian's Gauss–Newton
    part alone (module docstring)."""
    l, lx, lxx = terms_x
    l += np.sum(d0, axis=-1)
    lx += np.einsum("...i,...ia->...a", d1, cx)
    m, n = cx.shape[-2:]
    curvature = np.zeros_like(d1) if gauss_newton else d1  # the weights of the rows' c_xx
    penalty_hessian(curvature.reshape(-1, m), d2.reshape(-1, m), cx.reshape(-1, m, n), cxx.reshape(-1, m, n, n),
                    lxx.reshape(-1, n, n))


@njit(cache=True)
def penalty_hessian(d1, d2, cx, cxx, lxx):
    """lxx[k] += Σ_i ψ''_i c_x,i c_x,iᵀ + ψ'_i c_xx,i (d1 = ψ', d2 = ψ'' (K, m), cx (K, m, n),
    cxx (K, m, n, n), lxx (K, n, n)), rows whose ψ' and ψ'' vanish (inactive) skipped."""
    for k in range(cx.shape[0]):
        for i in range(cx.shape[1]):
            a, b = d2[k, i], d1[k, i]
            if a == 0.0 and b == 0.0:
                continue
            for p in range(cx.shape[2]):
                s = a * cx[k, i, p]
                for q in range(cx.shape[2]):
                    lxx[k, p, q] += s * cx[k, i, q] + b * cxx[k, i, p, q]


def _add_stage_penalty(problem: Problem, terms, gz, psi, Hw) -> None:
    """Add the stage rows' Σ_i ψ_i (``psi`` = (ψ, ψ', ψ'')) to the running terms
    (l, lx, lu, lxx, lux, luu), from their gradients g_z in z = (δx, u) and their Hessians
    contracted with ψ', Hw = Σ_i ψ'_i g_zz,i (:meth:`optdyn.Problem.stage_constraint_contracted`;
    0 for the Gauss–Newton part alone): the Hessian is Σ_i ψ''_i g_z,i g_z,iᵀ + Hw."""
    l, lx, lu, lxx, lux, luu = terms
    l += np.sum(psi[0], axis=-1)
    lz, n = np.einsum("ki,kia->ka", psi[1], gz), problem.ndx
    lx += lz[:, :n]
    lu += lz[:, n:]
    if np.ndim(Hw):
        for t, block in zip((lxx, lux, luu), problem.split_z(lz, Hw)[2:]):
            t += block
    stage_gauss_newton(psi[2], gz, lxx, lux, luu)


@njit(cache=True)
def stage_gauss_newton(d2, gz, lxx, lux, luu):
    """Σ_i ψ''_i g_z,i g_z,iᵀ of stage rows (d2 = ψ'' (K, m), gz (K, m, n + nu)) added into the
    blocks lxx (K, n, n), lux (K, nu, n), luu (K, nu, nu) of z = (δx, u); the rows whose ψ''
    vanishes (inactive inequalities: most of a friction cone's) skipped."""
    n = lxx.shape[1]
    for k in range(gz.shape[0]):
        for i in range(gz.shape[1]):
            a = d2[k, i]
            if a == 0.0:
                continue
            g = gz[k, i]
            for p in range(g.shape[0]):
                s = a * g[p]
                if s == 0.0:
                    continue
                if p < n:
                    for q in range(n):
                        lxx[k, p, q] += s * g[q]
                else:
                    for q in range(n):
                        lux[k, p - n, q] += s * g[q]
                    for q in range(n, g.shape[0]):
                        luu[k, p - n, q - n] += s * g[q]


class ALObjective(Objective):
    """The augmented Lagrangian L_A for fixed multipliers and penalty.

    lam (N, nc): multipliers of the path rows at nodes 1..N; mu (nh,): of the terminal
    equalities; rho: penalty; lam_stage (N, ng): of the stage rows at knots 0..N−1.
    """

    exact = False

    def __init__(self, problem: Problem, lam: np.ndarray, mu: np.ndarray, rho: float,
                 lam_stage: np.ndarray | None = None, gauss_newton: bool = False) -> None:
        super().__init__(problem, gauss_newton)
        self.lam, self.mu, self.rho = lam, mu, rho
        self.lam_stage = np.zeros((problem.N, problem.ng)) if lam_stage is None else lam_stage
        self.path_eq, self.stage_eq = problem.path_equalities, problem.stage_equalities
        self._rows: dict = {}  # of the last expansion, per kind of rows (:func:`_rows`, :meth:`activate`)
        self._valued: tuple | None = None  # (xs, us, J, c, g, h, violation): :meth:`_evaluated`
        self._terms: dict = {}  # gauss_newton → (xs, us, the problem's running terms there): :meth:`running`
        self._path: tuple | None = None  # (xs, (c, c_x, c_xx)): :meth:`_path_rows`
        self._stage: tuple | None = None  # (xs, us, g, g_z, hessian): :meth:`_stage_rows`

    def running(self, xs, us, out=None, forces=None):
        """The problem's running terms with the path rows' (on states) and the stage rows'
        (which may read the kept contact forces) penalty terms
        (:meth:`~optdyn.solvers.ddp.Objective.running`): the part that reads no forces makes its
        problem terms and evaluates the path rows, the other adds its problem terms, keeps them,
        then adds both penalties. At the trajectory they were kept at, for the same Hessians (the
        outer loop's or a revision's new multipliers at the iterate), the problem's terms and
        the stage rows are not made again (:meth:`_stage_rows`); the penalties are."""
        if forces is None:
            return self.running(xs, us, self.running(xs, us, out, False), True)
        held = self._terms.get(self.gauss_newton)
        again = _kept_at(held, xs, us)
        if not forces:
            self._path_rows(xs)
            return out if again else super().running(xs, us, out, False)
        if again:
            terms = out if out is not None else tuple(np.empty_like(t) for t in held[2])
            for a, t in zip(terms, held[2]):
                np.copyto(a, t)
        else:
            terms = super().running(xs, us, out, True)
            self._terms[self.gauss_newton] = (np.array(xs), np.array(us), tuple(t.copy() for t in terms))
        l, lx, lu, lxx, lux, luu = terms
        if self.problem.nc:
            c, cx, cxx = self._path_rows(xs)
            d0, d1, d2 = _phr(c, self.lam[:-1], self.rho, self.path_eq)
            self._rows["path"] = _rows(c, cx, d2)
            _add_penalty((l[1:], lx[1:], lxx[1:]), c, cx, cxx, d1, d2, d0, self.gauss_newton)
        if self.problem.ng:
            g, gz, hessian = self._stage_rows(xs, us)
            psi = _phr(g, self.lam_stage, self.rho, self.stage_eq)
            self._rows["stage"] = _rows(g, gz, psi[2])
            Hw = 0.0 if self.gauss_newton else hessian(psi[1])  # the rows' curvature: the exact model's
            _add_stage_penalty(self.problem, terms, gz, psi, Hw)
        return terms

    def _path_rows(self, xs) -> tuple:
        """(c, c_x, c_xx) of the path rows at the states xs[1:] (:meth:`optdyn.Problem.path_constraint_terms`),
        made by :meth:`running`'s first part, while the dynamics linearise, for its second."""
        held = self._path
        if not _kept_at(held, xs):
            held = self._path = (np.array(xs), self.problem.path_constraint_terms(xs[1:], shared=True))
        return held[1]

    def _stage_rows(self, xs, us) -> tuple:
        """(g, g_z, hessian) of :meth:`optdyn.Problem.stage_constraint_contracted` at (xs, us),
        kept for the next call at the same trajectory (DDP's iLQR model, a multiplier update):
        evaluated at copies of xs and us, which ``hessian`` reads when called."""
        held = self._stage
        if not _kept_at(held, xs, us):
            xs, us = np.array(xs), np.array(us)
            held = self._stage = (xs, us, *self.problem.stage_constraint_contracted(xs, us))
        return held[2:]

    def terminal(self, x):
        l, lx, lxx = super().terminal(x)
        l, lx, lxx = np.array([l]), lx.copy(), lxx.copy()
        if self.problem.nc:
            c, cx, cxx = (t[0] for t in self.problem.path_constraint_terms(x[None], shared=True))
            d0, d1, d2 = _phr(c, self.lam[-1], self.rho, self.path_eq)
            self._rows["terminal"] = _rows(c, cx, d2)
            _add_penalty((l, lx, lxx), c, cx, cxx, d1, d2, d0, self.gauss_newton)
        if self.problem.nh:
            h, hx, hxx = self.problem.terminal_constraint_terms(x, shared=True)
            d1 = self.mu + self.rho * h
            _add_penalty((l, lx, lxx), h, hx, hxx, d1, np.full_like(h, self.rho),
                         self.mu * h + 0.5 * self.rho * h * h, self.gauss_newton)
        return float(l[0]), lx, lxx

    @property
    def piecewise(self) -> bool:
        """Whether any row is an inequality, whose term has a kink (:meth:`activate`)."""
        return not (np.all(self.path_eq) and np.all(self.stage_eq))

    def activate(self, path: np.ndarray, models: tuple) -> bool:
        """Bring into ``models``' cost terms the inequality rows on the flat side of their kink
        at the iterate (λ − ρc ≤ 0) that the step's path Δz (N + 1, ndx + nu) takes to the
        quadratic side (c + c_z Δz < λ/ρ), with that side's ψ' = ρc − λ and Gauss–Newton ψ''
        c_z c_zᵀ, ψ'' = ρ, and take out again those brought in before that it does not (all
        of them if ``path`` is None); True if the set changed
        (:meth:`~optdyn.solvers.ddp.RiccatiSolver.step_on`). The set starts empty at each
        expansion. A brought row's own curvature ψ' c_zz is left out of DDP's exact model: a
        row crossed near its kink has ψ' near 0."""
        changed = False
        for kind, lam, dz in self._kinds(path):
            c, cz, held, brought = self._rows[kind]
            want = np.zeros_like(held) if dz is None else \
                ~held & (lam - self.rho * (c + np.einsum("...ia,...a->...i", cz, dz)) > 0.0)
            sign = want.astype(float) - brought
            if not sign.any():
                continue
            changed = True
            brought[...] = want
            _add(models, kind, sign * (self.rho * c - lam), self.rho * sign, cz, self.problem.ndx)
        return changed

    def brought_change(self, path: np.ndarray) -> tuple[float, float]:
        """(a, b) to take from the step's ΔV(α) = α·dV1 + α²·dV2 so that it is the iterate's
        own piecewise model along the step's path Δz: the rows :meth:`activate` brought in
        enter the step's ΔV with the quadratic side's ψ'Δc + ½ρΔc² (Δc = c_z Δz), where the
        model of the merit has them flat at α = 0 and max(0, λ − ρ(c + Δc))²/(2ρ) at α = 1, as
        every row on the flat side: the slope is then the iterate's and the full step's
        change that of the piecewise model (for Armijo's test and the stopping test)."""
        a = b = 0.0
        for kind, lam, dz in self._kinds(path):
            c, cz, held, brought = self._rows[kind]
            dc = np.einsum("...ia,...a->...i", cz, dz)
            beyond = np.where(held, 0.0, np.maximum(0.0, lam - self.rho * (c + dc)))
            a += float(np.sum(np.where(brought, (self.rho * c - lam) * dc, 0.0)))
            b += 0.5 * float(np.sum(np.where(brought, self.rho * dc * dc, 0.0)) - np.sum(beyond * beyond) / self.rho)
        return a, b

    def _kinds(self, path: np.ndarray | None):
        """(kind, λ, the part of ``path`` the rows see, None without) of each kind of inequality
        rows of the last expansion: path rows on x at knots 1..N−1, stage rows on z = (δx, u)
        at knots 0..N−1, path rows on x_N in the terminal value."""
        n, N = self.problem.ndx, self.problem.N
        for kind, lam, rows in (("path", self.lam[:-1], (slice(1, N), slice(0, n))),
                                ("stage", self.lam_stage, (slice(0, N),)),
                                ("terminal", self.lam[-1], (N, slice(0, n)))):
            if kind in self._rows:
                yield kind, lam, None if path is None else path[rows]

    def value(self, xs, us) -> float:
        """L_A at (xs, us), from the problem's cost and rows there (:meth:`_evaluated`)."""
        total, c, g, h = self._evaluated(xs, us)[:4]
        if c is not None:
            total += float(np.sum(_phr(c, self.lam, self.rho, self.path_eq)[0]))
        if g is not None:
            total += float(np.sum(_phr(g, self.lam_stage, self.rho, self.stage_eq)[0]))
        if h is not None:
            total += float(self.mu @ h + 0.5 * self.rho * h @ h)
        return total

    def cost(self, xs, us) -> float:
        """The problem's own objective J at (xs, us) (:meth:`_evaluated`)."""
        return self._evaluated(xs, us)[0]

    def violation(self, xs, us) -> float:
        """The problem's :meth:`~optdyn.Problem.violation` at (xs, us) (:meth:`_evaluated`)."""
        return self._evaluated(xs, us)[4]

    def update(self, xs, us, inequalities: bool = True) -> None:
        """First-order multiplier update (ALTRO eq. 8–9) at the trajectory xs (N+1, nx), us (N, nu);
        the inequality rows' kept unless ``inequalities`` (module docstring)."""
        _, c, g, h, _ = self._evaluated(xs, us)
        if c is not None:
            self.lam = self._updated(c, self.lam, self.path_eq, inequalities)
        if g is not None:
            self.lam_stage = self._updated(g, self.lam_stage, self.stage_eq, inequalities)
        if h is not None:
            self.mu = self.mu + self.rho * h

    def _updated(self, c, lam, equality, inequalities: bool) -> np.ndarray:
        """λ ← Π(λ − ρc) of the rows c (ALTRO eq. 8), on the ``equality`` rows alone unless
        ``inequalities``."""
        new = -_phr(c, lam, self.rho, equality)[1]
        return new if inequalities else np.where(equality, new, lam)

    def _evaluated(self, xs, us) -> tuple:
        """(J, c, g, h, violation) at (xs, us): the problem's cost, its path, stage and terminal
        rows (None where it has none) and their largest violation, kept for the next call. The
        iterate's are its trial's, and the outer loop's update and new merit, or a revision's,
        are at the iterate: there only the penalty terms are new."""
        held = self._valued
        if not _kept_at(held, xs, us):
            p = self.problem
            c = p.path_constraint_values(xs[1:]) if p.nc else None
            g = p.stage_constraint_values(xs[:-1], us) if p.ng else None
            h = p.terminal_constraint_values(xs[-1]) if p.nh else None
            held = self._valued = (np.array(xs), np.array(us), p.cost(xs, us), c, g, h, p.rows_violation(us, c, g, h))
        return held[2:]


def _kept_at(held: tuple | None, *arrays: np.ndarray) -> bool:
    """Whether ``held``, whose first entries are copies of the arrays something was kept at,
    was kept at ``arrays``, bit for bit (:class:`ALObjective`'s trajectories)."""
    return held is not None and all(np.array_equal(h, a) for h, a in zip(held, arrays))


def _rows(c: np.ndarray, cz: np.ndarray, d2: np.ndarray) -> tuple:
    """(c, c_z, on the quadratic side at the iterate (ψ'' > 0), brought there by the step
    (:meth:`ALObjective.activate`; none yet)) of the rows of one kind at an expansion."""
    return c, cz, d2 > 0.0, np.zeros(c.shape, dtype=bool)


def _add(models: tuple, kind: str, d1: np.ndarray, d2: np.ndarray, cz: np.ndarray, n: int) -> None:
    """Add the rows' ψ' c_z (weights ``d1``) and Gauss–Newton ψ'' c_z c_zᵀ (``d2``) of ``kind``
    ("path": on x at knots 1..N−1, "stage": on z = (δx, u) at knots 0..N−1, "terminal": on
    x_N) to ``models``' cost terms: the gradients, which the models share, once; the Hessians,
    at the knots with a row to add, once per distinct set (iLQR's model in DDP may have
    Gauss–Newton ones of its own). Batched numpy products rather than :func:`stage_gauss_newton`:
    on a problem with path rows alone, that kernel would first load inside an MPC step, the
    first time a step crosses rows (and the README's main job would compile one more)."""
    gradient, first = np.einsum("...i,...ia->...a", d1, cz), models[0]
    if kind == "terminal":
        first.terminal.Vx[:] += gradient
        hessian = (d2[:, None] * cz).T @ cz
        for model in {id(m.terminal.Vxx): m for m in models}.values():
            model.terminal.Vxx[:] += hessian
        return
    k0 = 1 if kind == "path" else 0
    first.lq.lx[k0:] += gradient[:, :n]
    if kind == "stage":
        first.lq.lu[:] += gradient[:, n:]
    knots = np.flatnonzero(np.any(d2, axis=1))
    hessian = np.swapaxes(d2[knots, :, None] * cz[knots], 1, 2) @ cz[knots]
    for model in {id(m.lq.lxx): m for m in models}.values():
        lq, at = model.lq, knots + k0
        lq.lxx[at] += hessian[:, :n, :n]
        if kind == "stage":
            lq.lux[at] += hessian[:, n:, :n]
            lq.luu[at] += hessian[:, n:, n:]


def _cost_and_violation(objective: ALObjective, xs: np.ndarray, us: np.ndarray) -> tuple[float, float]:
    """J and the largest constraint violation of a trajectory (:meth:`ALObjective.cost`,
    :meth:`ALObjective.violation`); NaN for a non-finite one."""
    if not np.all(np.isfinite(xs)):
        return np.nan, np.nan
    return objective.cost(xs, us), objective.violation(xs, us)


STOPS = ("user_stop", "interrupted", "time_limit")
FAILURES = ("regularization_failed", "line_search_failed", "rollout_failed")


def initial_multipliers(problem: Problem, multipliers, rho_init: float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(λ (N, nc), λ_stage (N, ng), μ (nh,), ρ) to start from: zeros and ``rho_init``, or
    those of ``multipliers`` (a mapping with the keys of a result's extra: "lambda",
    "lambda_stage", "mu", optionally "rho"); ValueError naming ``multipliers`` otherwise."""
    N = problem.N
    if multipliers is None:
        return np.zeros((N, problem.nc)), np.zeros((N, problem.ng)), np.zeros(problem.nh), rho_init
    shapes = {"lambda": (N, problem.nc), "lambda_stage": (N, problem.ng), "mu": (problem.nh,)}
    expected = f"a mapping with {', '.join(shapes)} (and optionally rho), as a constrained result's extra holds"
    arrays = multiplier_arrays(multipliers, shapes, expected)
    try:
        rho = float(multipliers.get("rho", rho_init))
    except (TypeError, ValueError):
        raise ValueError(f"multipliers: expected {expected}") from None
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"multipliers: rho expected a finite penalty > 0, got {rho!r}")
    return (*arrays.values(), rho)


@dataclass
class AugmentedLagrangian:
    """The outer loop of the module docstring around an inner :class:`~optdyn.solvers.ddp.RiccatiSolver`.

    Settings: ``constraint_tol`` (1e-6, the largest violation accepted), ``rho_init`` (1),
    ``rho_factor`` (10), ``rho_max`` (1e10), ``decrease`` (0.1), ``max_outer`` (30),
    ``inner_tol0`` (1e-4) and ``inner_tol_factor`` (1e-2); a bad value raises ValueError
    naming it.
    """

    constraint_tol: float = 1e-6
    rho_init: float = 1.0
    rho_factor: float = 10.0
    rho_max: float = 1e10
    decrease: float = 0.1
    max_outer: int = 30
    inner_tol0: float = 1e-4
    inner_tol_factor: float = 1e-2

    def __post_init__(self) -> None:
        check_count("max_outer", self.max_outer)
        for f in fields(self):
            if f.name != "max_outer":
                check_number(f.name, getattr(self, f.name))

    def solve(self, problem: Problem, inner: RiccatiSolver, us_init=None, xs_init=None, *, multipliers=None,
              workspace: Workspace | None = None) -> Result:
        """Constrained ``inner`` (DDP, iLQR or their feasibility-driven forms) by the
        augmented-Lagrangian outer loop.

        ``inner.max_iter`` bounds the total number of inner iterations, ``inner.max_time`` the
        wall time; Ctrl-C stops with the last accepted iterate (:mod:`optdyn.solvers.runtime`).
        The result's cost is the true objective J; its extra holds the multipliers updated once
        more at the returned trajectory (the last inner solve's stationarity ∇J + Σ ψ'∇c = 0 is
        then the KKT condition with them; a stopped solve's inequality rows' kept: module
        docstring): ("lambda" (N, nc) of the path rows at nodes 1..N,
        "lambda_stage" (N, ng) of the stage rows at knots 0..N−1, "mu" (nh,)), the final penalty
        "rho", "outer_iterations", "violation", the inner solves' "first_order_steps" (DDP:
        steps taken along iLQR's model, as :meth:`~optdyn.solvers.ddp.RiccatiSolver.solve`'s)
        and "compile_time". ``multipliers`` (such an extra, e.g. a previous solve's, shifted by
        :class:`optdyn.MPC`) starts the multipliers and the penalty there instead of at zero and
        ``rho_init``, and the inner solves at full tolerance from the first (the loose early
        solves serve multipliers still far off). The
        inner solves work in the arrays of ``workspace`` (:class:`~optdyn.solvers.workspace.Workspace`;
        None: new ones).
        """
        lam, lam_stage, mu, rho = initial_multipliers(problem, multipliers, self.rho_init)
        objective = ALObjective(problem, lam, mu, rho, lam_stage, gauss_newton=inner.objective(problem).gauss_newton)
        steps, previous, outer, origin, rejected, updated = 0, np.inf, 0, "", [], False
        status, message, converged = "max_iter", f"iteration limit {inner.max_iter} reached", False
        inner_tol = inner.tol if multipliers is not None else max(inner.tol, self.inner_tol0)  # warm: no loose early solves
        ws = Workspace(problem) if workspace is None else workspace
        with Run(inner.max_time) as run:
            log = Log(inner.name, inner.callback, inner.verbose, run=run)
            try:
                us, start, origin, rejected = inner.initial_guess(problem, ws, us_init, xs_init)
                for outer in range(1, self.max_outer + 1):
                    log.outer = outer
                    continued = outer > 1 and start is None  # from the rollout of a converged inner solve
                    out = inner.iterate(problem, objective, us, log, max_iter=inner.max_iter - steps, xs=start,
                                        workspace=ws, tol=inner_tol, boxed=continued)
                    steps += out.iterations
                    us, xs, updated = out.us, out.xs, False
                    # gaps left open stay open; a converged inner solve closed them (its steps since are
                    # rollouts), so that xs is then the rollout of us, bit for bit, as a single-shooting
                    # solve's always is: the next inner solve starts from it, not from another rollout
                    start = xs if inner.feasibility_driven and not out.converged else None
                    if start is None and np.all(np.isfinite(xs)):
                        ws.remember(problem, us, xs)
                    violation = _cost_and_violation(objective, xs, us)[1]
                    if out.converged and violation <= self.constraint_tol and inner_tol <= inner.tol:
                        status, converged = "converged", True
                        message = (f"inner solve converged with constraint violation {violation:.2e} ≤ "
                                   f"{self.constraint_tol:g}")
                        break
                    if out.status in STOPS or np.isnan(violation) or (out.status in FAILURES
                                                                      and violation <= self.constraint_tol):
                        status, message = out.status, out.message
                        break
                    if steps >= inner.max_iter:
                        break
                    inner_tol = max(inner.tol, inner_tol * self.inner_tol_factor)
                    if violation <= self.constraint_tol:  # feasible: only the inner solve needs tightening
                        continue
                    objective.update(xs, us)
                    updated = True
                    if violation > self.decrease * previous:
                        objective.rho = min(objective.rho * self.rho_factor, self.rho_max)
                    previous = violation
                else:
                    status, message = "max_outer", f"{self.max_outer} outer iterations without meeting constraint_tol"
            except (KeyboardInterrupt, SystemError) as e:
                if not is_interrupt(e) and not run.interrupted:
                    raise
                out = stopped_by_exception(problem, log, (problem.N, problem.nu, problem.ndx))
                status, message, converged = out.status, out.message, False
        cost, violation = _cost_and_violation(objective, out.xs, out.us)
        if np.isfinite(violation) and not updated:  # the multipliers of the returned trajectory (eq. 8–9)
            objective.update(out.xs, out.us, inequalities=converged)
        return Result(xs=out.xs, us=out.us, cost=cost, converged=converged,
                      iterations=steps, status=status, message=message, history=log.history(), solver=inner.name,
                      problem=problem.name, params=problem.params, wall_time=run.elapsed(),
                      gains=out.K, extra={"lambda": objective.lam, "lambda_stage": objective.lam_stage,
                                          "mu": objective.mu, "rho": objective.rho,
                                          "outer_iterations": outer, "violation": violation,
                                          "rejected_rollouts": log.rejected, "invalid_rollouts": log.invalid,
                                          "first_order_steps": log.first_order, "initial_guess": origin,
                                          "rejected_guesses": rejected, "compile_time": run.compile_time()})
