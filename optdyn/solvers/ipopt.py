"""Direct multiple shooting solved by IPOPT.

Direct multiple shooting: H. G. Bock, K. J. Plitt, "A Multiple Shooting Algorithm for
Direct Solution of Optimal Control Problems", IFAC 1984; used for robot arms as in
M. Neunert et al., "Fast Derivatives of Rigid Body Dynamics for Control, Optimization and
Estimation", SIMPAR 2016, Sec. IV-B. IPOPT: A. Wächter, L. T. Biegler, "On the
Implementation of an Interior-Point Filter Line-Search Algorithm for Large-Scale Nonlinear
Programming", Mathematical Programming 2006.

The problem's own discretisation (N intervals, control held over each, ``substeps``
integrator steps per interval: ``x⁺ = F(x, u)`` = ``problem.step``) is transcribed into
the nonlinear program

    z = (x_0, u_0, x_1, u_1, …, x_{N−1}, u_{N−1}, x_N)        (interleaved: banded KKT)

    min_z  Σ_k dt·ℓ(x_k, u_k) + ℓ_N(x_N)
    s.t.   d_k = x_{k+1} − F(x_k, u_k) = 0       k = 0 … N−1   (continuity "defects")
           c(x_k) ≥ 0 or = 0                    k = 1 … N     (path constraints; joint
                                                               limits are variable bounds)
           g(x_k, u_k) ≥ 0 or = 0               k = 0 … N−1   (stage constraints)
           h(x_N) = 0                                          (terminal equalities)
           x_0 = x̄_0,  u_lower ≤ u_k ≤ u_upper                (variable bounds)

Constraint rows are ordered [d_0 … d_{N−1}, c(x_1) … c(x_N), g(x_0, u_0) … g(x_{N−1}, u_{N−1}), h];
an equality row of c or g has the bounds g_l = g_u = 0, an inequality 0 ≤ · < ∞. Every
derivative is exact: the Jacobian blocks are (−A_k, −B_k, I) from ``step_derivatives``, the
constraint Jacobians c_x(x_k) and g_z(x_k, u_k) on the variables (x_k, u_k); the Hessian of the
Lagrangian

    ∇²L = σ ∇²(cost) − Σ_k Σ_i λ_{k,i} ∇²F_i(x_k, u_k) + Σ μ ∇²c + Σ κ ∇²g + Σ ν ∇²h

is block diagonal — one dense (ndx+nu)² block per interval and one nx² block for x_N.

Floating base (a model with Lie-group joints, :mod:`optdyn.ocp.state`). IPOPT needs a fixed
vector space, so the state variables are tangent coordinates around a reference
trajectory x̃ (the initial guess, fixed for the whole solve): x_k = x̃_k ⊕ ξ_k,
ξ_k ∈ R^{ndx}, and the defects are written in the chart of x̃_{k+1}:

    d_k = ξ_{k+1} − (F(x̃_k ⊕ ξ_k, u_k) ⊖ x̃_{k+1}),

zero exactly when x_{k+1} = F(x_k, u_k) (the chart is one-to-one while the states stay
within a rotation of π of x̃: far beyond what a solve moves a base). Gradients, Jacobians
and the Hessian are exact in ξ: with E_k = ∂(x̃_k ⊕ ξ)/∂ξ (J_r(ξ) per Lie joint) and
D_k = ∂(y ⊖ x̃_{k+1})/∂y (J_r⁻¹), the blocks become D_k A_k E_k, D_k B_k, c_x E_k, and
the Hessian adds to the chained second derivatives the curvatures of the two charts
(:func:`dynamics.lie.exp_curvature` with the gradient at x_k,
:func:`dynamics.lie.log_curvature` with the defect multipliers). On a model of
revolute/prismatic joints x̃ = 0, ξ = x and all of this is the formulation above.
The defect terms Σ_i λ_{k,i} ∇²F_i are computed contracted, by a second-order adjoint
through the integrator stages (:meth:`optdyn.ocp.problem.Problem.step_hessians`), never
forming the (ndx, nz, nz) tensors (``second_order="tensor"`` does, for validation); one
compiled pass per block adds the cost and constraint terms and the charts, and writes the
lower triangle IPOPT takes (:func:`_lagrangian_blocks`).
``hessian="lbfgs"`` lets IPOPT build a limited-memory quasi-Newton approximation instead.

IPOPT is driven through its C interface on the library cyipopt loads
(:mod:`optdyn.solvers.ipopt_interface`: the callbacks' arrays copied at once, Ipopt run
without the GIL), or through cyipopt's own wrapper where that library is not found.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import namedtuple
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import ClassVar

import cyipopt
import numpy as np

from dynamics._compile import njit
from dynamics.spatial import matmul_add
from dynamics.parallel import Ahead, claims_for, first_chunk, get_num_threads, next_chunk, run_chunks

from ..ocp.problem import Problem
from . import ipopt_interface
from .result import Result, multiplier_arrays
from .runtime import Run, check_count, check_max_time, is_interrupt, stop_message
from ..ocp.state import StateChart, check_state, exp_curvature, lie_scratch, log_curvature

INF = 2e19  # IPOPT treats |bound| ≥ 1e19 as "no bound"

IPOPT_STATUS = {
    0: "converged",
    1: "acceptable",
    2: "infeasible",
    3: "search_direction_too_small",
    4: "diverging",
    5: "user_stop",
    6: "feasible_point_found",
    -1: "max_iter",
    -2: "restoration_failed",
    -3: "error_in_step_computation",
    -4: "time_limit",  # max_cpu_time
    -5: "time_limit",  # max_wall_time (set by max_time)
    -10: "not_enough_degrees_of_freedom",
    -11: "invalid_problem_definition",
    -12: "invalid_option",
    -13: "invalid_number",
    -100: "solver_error",  # unrecoverable exception
    -101: "solver_error",  # non-IPOPT exception
    -102: "solver_error",  # insufficient memory
    -199: "solver_error",  # internal error
}
"""IPOPT return codes → ``Result.status`` (every value is a key of ``optdyn.result.STATUSES``)."""
CONVERGED = (0, 1)
LOG_FIELDS = ("alg_mod", "iteration", "objective", "inf_pr", "inf_du", "mu", "d_norm",
              "regularization", "alpha_du", "alpha_pr", "ls_trials", "time")


@lru_cache(maxsize=8)
def jacobian_pattern(N: int, ndx: int, nu: int, nc: int, ng: int, nh: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the constraint Jacobian's blocks −A_k, −B_k, I, c_x(x_k),
    g_z(x_k, u_k), h_x (in this order), each listed row-major as ``A.ravel()`` etc. lay out
    its values; read-only, shared by the NLPs of one shape (an MPC's one per step)."""
    nw = ndx + nu
    k = np.arange(N)[:, None, None]
    defect_row = k * ndx + np.arange(ndx)[:, None]                       # (N, ndx, 1)
    path_row = N * ndx + k * nc + np.arange(nc)[:, None]                # (N, nc, 1)
    stage_row = N * (ndx + nc) + k * ng + np.arange(ng)[:, None]        # (N, ng, 1)
    term_row = N * (ndx + nc + ng) + np.arange(nh)[:, None]             # (nh, 1)
    blocks = [
        (defect_row, k * nw + np.arange(ndx)),                          # −A_k  wrt x_k
        (defect_row, k * nw + ndx + np.arange(nu)),                     # −B_k  wrt u_k
        (defect_row[:, :, 0], (k[:, :, 0] + 1) * nw + np.arange(ndx)),  # +I    wrt x_{k+1}
        (path_row, (k + 1) * nw + np.arange(ndx)),                      # c_x(x_{k+1})
        (stage_row, k * nw + np.arange(nw)),                            # g_z(x_k, u_k)
        (term_row, N * nw + np.arange(ndx)),                            # h_x(x_N)
    ]
    pairs = [np.broadcast_arrays(r, c) for r, c in blocks]
    rows = np.concatenate([r.ravel() for r, _ in pairs]).astype(np.int32)
    cols = np.concatenate([c.ravel() for _, c in pairs]).astype(np.int32)
    return _read_only(rows, cols)


@lru_cache(maxsize=8)
def hessian_pattern(N: int, ndx: int, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the lower triangles of the N interval blocks (x_k, u_k)² and of
    the x_N block (read-only, shared as :func:`jacobian_pattern`'s)."""
    nw = ndx + nu
    tril_w, tril_x = np.tril_indices(nw), np.tril_indices(ndx)
    off = (np.arange(N) * nw)[:, None]
    rows = np.concatenate([(off + tril_w[0]).ravel(), N * nw + tril_x[0]])
    cols = np.concatenate([(off + tril_w[1]).ravel(), N * nw + tril_x[1]])
    return _read_only(rows.astype(np.int32), cols.astype(np.int32))


def _read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.flags.writeable = False
    return arrays


class MultipleShootingNLP:
    """The NLP above, with the callbacks cyipopt expects.

    With ``exact_hessian`` the Jacobian's (A, B) come with the integrator's stage records,
    which the Hessian at the same point contracts with the defect multipliers (IPOPT asks
    for both at every iterate); ``second_order="tensor"`` forms the full tensors instead.

    A point where the dynamics cannot be evaluated (an exception of the model, e.g. a
    non-positive articulated inertia far from the data) is reported to IPOPT as an
    evaluation error, so that it cuts its step back instead of the solve crashing.

    Attributes:
        n, m: numbers of variables and constraints.
        lb, ub (n,), cl, cu (m,): variable and constraint bounds.
        log: per-iteration records of the ``intermediate`` callback (see ``LOG_FIELDS``).
        run: the :class:`optdyn.solvers.runtime.Run` whose stop conditions ``intermediate`` polls;
            ``stopped`` is the reason it stopped the solve for ("interrupted", "time_limit").
        current: the last iterate seen by ``intermediate`` (n,), None before the first.
        evaluation_errors: number of points rejected as not evaluable; ``last_error`` the
            message of the last one.
    """

    def __init__(self, problem: Problem, exact_hessian: bool = True, callback=None,
                 second_order: str = "contracted", reference: np.ndarray | None = None) -> None:
        self.problem, self.exact_hessian, self.second_order = problem, exact_hessian, second_order
        self.chart = StateChart(problem.model, problem.xs_init if reference is None else reference)
        self.ndx, self.nu, self.N = problem.ndx, problem.nu, problem.N
        self.nw = self.ndx + self.nu
        self.nc, self.ng, self.nh = problem.nc_general, problem.ng, problem.nh
        self.n = self.N * self.nw + self.ndx
        self.m = self.N * (self.ndx + self.nc + self.ng) + self.nh
        self._bounds()
        self._jac_rows, self._jac_cols = jacobian_pattern(self.N, self.ndx, self.nu, self.nc, self.ng, self.nh)
        self._n_identity = self.N * self.ndx
        self._hess_rows, self._hess_cols = hessian_pattern(self.N, self.ndx, self.nu)
        self._tril_w, self._tril_x = np.tril_indices(self.nw), np.tril_indices(self.ndx)
        # stand-ins of the Hessian kernel's arguments that a block does not have (x_N: no control, no
        # defect; a vector space: no chart)
        self._no_control = (np.zeros((1, 0, self.ndx)), np.zeros((1, 0, 0)))
        self._no_defect, self._no_chart = np.zeros((1, self.ndx, self.ndx)), np.zeros((self.N + 1, 0, 0))
        self._cache_key, self._cache, self._stages, self._ahead = None, {}, None, None
        self.callback, self.nlp, self.log, self.t0 = callback, None, [], time.perf_counter()
        self.run, self.stopped, self.current = Run(), None, None
        self.evaluation_errors, self.last_error = 0, ""

    # ------------------------------------------------------------------ layout
    def pack(self, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
        """z (n,) from states xs (N+1, nx) and controls us (N, nu)."""
        return self._pack(self.chart.coordinates(xs), us)

    def _pack(self, xis: np.ndarray, us: np.ndarray) -> np.ndarray:
        """z (n,) from state variables ξ (N+1, ndx) and controls us (N, nu)."""
        z = np.empty(self.n)
        w = z[: self.N * self.nw].reshape(self.N, self.nw)
        w[:, : self.ndx], w[:, self.ndx:] = xis[:-1], us
        z[self.N * self.nw:] = xis[-1]
        return z

    def unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """States xs (N+1, nx) and controls us (N, nu) of z (n,)."""
        xis, us = self._split(z)
        return self.chart.states(xis), us

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """State variables ξ (N+1, ndx) and controls us (N, nu) of z (n,)."""
        w = z[: self.N * self.nw].reshape(self.N, self.nw)
        xis = np.empty((self.N + 1, self.ndx))
        xis[:-1], xis[-1] = w[:, : self.ndx], z[self.N * self.nw:]
        return xis, np.ascontiguousarray(w[:, self.ndx:])

    def _bounds(self) -> None:
        p, N = self.problem, self.N
        xs_lo = np.full((N + 1, self.ndx), -INF)
        xs_hi = np.full((N + 1, self.ndx), INF)
        tangent, coordinates, lower, upper = p.state_bounds  # ξ = x − x̃ on these coordinates
        offset = self.chart.reference[1:, coordinates] if self.chart.manifold else 0.0
        xs_lo[1:, tangent] = np.maximum(lower - offset, -INF)
        xs_hi[1:, tangent] = np.minimum(upper - offset, INF)
        xs_lo[0] = xs_hi[0] = self.chart.coordinates(p.x0[None], 0)[0]
        us_lo = np.broadcast_to(np.maximum(p.u_lower, -INF), (N, self.nu))
        us_hi = np.broadcast_to(np.minimum(p.u_upper, INF), (N, self.nu))
        self.lb, self.ub = self._pack(xs_lo, us_lo), self._pack(xs_hi, us_hi)
        general = np.delete(p.path_equalities, p.bound_rows[0])  # the rows not taken as variable bounds
        self.cl = np.zeros(self.m)
        self.cu = np.zeros(self.m)
        self.cu[N * self.ndx: N * (self.ndx + self.nc + self.ng)] = np.concatenate(
            [np.tile(np.where(general, 0.0, INF), N), np.tile(np.where(p.stage_equalities, 0.0, INF), N)])

    # ------------------------------------------------------ cached evaluations
    def _get(self, z: np.ndarray, what: str):
        """Problem evaluations at z, each computed once per point."""
        if self._cache_key is None or not np.array_equal(z, self._cache_key):
            self.settle()
            self._cache_key, self._cache = z.copy(), {}
        if what not in self._cache:
            self._cache[what] = self._guarded(self._evaluate, z, what)
        return self._cache[what]

    def _guarded(self, fn, *args):
        """fn(*args), with any exception turned into IPOPT's evaluation error (counted)."""
        try:
            return fn(*args)
        except cyipopt.CyIpoptEvaluationError:
            raise
        except Exception as e:  # noqa: BLE001 — the model cannot be evaluated at this point
            self.evaluation_errors += 1
            self.last_error = f"{type(e).__name__}: {e}"
            raise cyipopt.CyIpoptEvaluationError(self.last_error) from e

    def _evaluate(self, z: np.ndarray, what: str):
        if what == "xu":
            return self.unpack(z)
        p, (xs, us), chart = self.problem, self._get(z, "xu"), self.chart
        evaluations = {
            "step": lambda: chart.defect_terms(p.step(xs[:-1], us)),
            "E": lambda: chart.jacobians(self._split(z)[0]),
            "running_cost": lambda: p.running_cost_terms(xs[:-1], us),
            "terminal_cost": lambda: p.terminal_cost_terms(xs[-1]),
            "path_constraints": lambda: p.path_constraint_terms(xs[1:], bounds=False),
            # the rows' values alone, or those of their expansion if it was made at z
            "stage_values": lambda: (self._cache["stage_constraints"][0] if "stage_constraints" in self._cache
                                     else self._after(z, "step", p.stage_constraint_values, xs[:-1], us)),
            "stage_constraints": lambda: self._after(z, "first_order", p.stage_constraint_contracted, xs[:-1], us),
            "terminal_constraints": lambda: p.terminal_constraint_terms(xs[-1]),
            # (A, B, stages): with the exact Hessian, the stage records are kept for it (one
            # buffer, overwritten at each new point: the cache holds a single point)
            "first_order": lambda: self._joined() or (self._record_stages(xs, us) if self.exact_hessian
                                                      else p.step_derivatives(xs[:-1], us) + (None,)),
        }
        return evaluations[what]()

    def _after(self, z: np.ndarray, dynamics: str, rows, xs: np.ndarray, us: np.ndarray):
        """``rows(xs, us)`` (the stage rows) once the evaluation ``dynamics`` is made at z: its
        first Runge–Kutta stage keeps the contact forces — λ from the step, λ and λ_z from the
        first-order pass — that the contact-force rows then take instead of solving for them."""
        self._get(z, dynamics)
        return rows(xs, us)

    def _record_stages(self, xs: np.ndarray, us: np.ndarray) -> tuple:
        A, B, self._stages = self.problem.step_stages(xs[:-1], us, self._stages)
        return A, B, self._stages

    def _linearize_ahead(self, z: np.ndarray) -> None:
        """Begin the first-order pass at z (the evaluation "first_order") on a pool thread
        (:class:`dynamics.parallel.Ahead`), its contact forces kept apart: IPOPT asks for the
        Jacobian at a trial point it accepts after its own work on the step (the filter's
        test, the next iteration's start), which the pool thread then spends on it instead of
        waiting. :meth:`_joined` takes it; a point left before (a rejected trial) drops it.
        With one thread nothing is begun."""
        if get_num_threads() < 2 or self._ahead is not None or "first_order" in self._cache:
            return
        p, (xs, us) = self.problem, self._get(z, "xu")
        ahead = Ahead(self.N, written=True)
        self._ahead = (p.linearization_ahead(xs[:-1], us, ahead, p.linearization_arrays(self.N), self.exact_hessian,
                                             self._stages), ahead)
        ahead.begun()

    def _joined(self) -> tuple | None:
        """(A, B, the stage records or None) of the pass begun ahead at this point
        (:meth:`_linearize_ahead`), joined, its contact forces the problem's; None if none was."""
        if self._ahead is None:
            return None
        (finish, _), self._ahead = self._ahead, None
        A, B, stages = finish()
        if stages is not None:
            self._stages = stages
        return A, B, stages

    def settle(self) -> None:
        """Drop the pass begun ahead, if any, once no pool thread runs it."""
        if self._ahead is not None:
            self._ahead[1].cancel()
            self._ahead = None

    # ------------------------------------------------------- cyipopt callbacks
    def objective(self, z: np.ndarray) -> float:
        """Σ_k dt·ℓ(x_k, u_k) + ℓ_N(x_N)."""
        return self._guarded(self.problem.cost, *self._get(z, "xu"))

    def gradient(self, z: np.ndarray) -> np.ndarray:
        """∇f (n,)."""
        _, lx, lu = self._get(z, "running_cost")[:3]
        lN = self._get(z, "terminal_cost")[1]
        if self.chart.manifold:  # ∇_ξ = Eᵀ ℓ_x
            E = self._get(z, "E")
            lx, lN = self.chart.pullback(E[:-1], lx), self.chart.pullback(E[-1:], lN[None])[0]
        g = np.empty(self.n)
        w = g[: self.N * self.nw].reshape(self.N, self.nw)
        w[:, : self.ndx], w[:, self.ndx:] = lx, lu
        g[self.N * self.nw:] = lN
        return g

    def constraints(self, z: np.ndarray) -> np.ndarray:
        """[x_{k+1} − F(x_k, u_k)]_k, [c(x_k)]_{k=1..N}, [g(x_k, u_k)]_{k=0..N−1}, h(x_N) stacked (m,)."""
        xis = self._split(z)[0] if self.chart.manifold else self._get(z, "xu")[0]
        c, h = self._get(z, "path_constraints")[0], self._get(z, "terminal_constraints")[0]
        g = self._get(z, "stage_values")
        values = np.concatenate(((xis[1:] - self._get(z, "step")[0]).ravel(), c.ravel(), g.ravel(), h))
        self._linearize_ahead(z)
        return values

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._jac_rows, self._jac_cols

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        """Values of the Jacobian in the order of ``jacobianstructure``."""
        A, B, _ = self._get(z, "first_order")
        cx, hx = self._get(z, "path_constraints")[1], self._get(z, "terminal_constraints")[1]
        gz = self._get(z, "stage_constraints")[1]
        if self.chart.manifold:  # D A E, D B, c_x E, [g_x E, g_u], h_x E
            E, D, chain = self._get(z, "E"), self._get(z, "step")[1], self.chart.chain
            A, B = chain(A.copy(), D, E[:-1]), chain(B.copy(), D)
            cx, hx = chain(cx.copy(), right=E[1:]), chain(hx[None].copy(), right=E[-1:])[0]
            gz = chain(gz.copy(), right=E[:-1])
        return self._finite(np.concatenate((-A.ravel(), -B.ravel(), np.ones(self._n_identity), cx.ravel(),
                                            gz.ravel(), hx.ravel())), "Jacobian")

    def _finite(self, values: np.ndarray, what: str, terms: tuple = ()) -> np.ndarray:
        """``values``, or IPOPT's evaluation error if some are NaN/inf: IPOPT does not check
        derivatives itself, and its linear solver may crash on them. The error names the
        first of ``terms`` ((name, array with the knots first, first knot)) that holds a
        non-finite entry, and at which knot."""
        if not np.all(np.isfinite(values)):
            self.evaluation_errors += 1
            where = next((f"{name} at knot {k0 + int(np.argmax(bad))}" for name, a, k0 in terms
                          if (bad := ~np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)).any()),
                         "the dynamics overflowed at this point")
            self.last_error = f"non-finite {what} ({where})"
            raise cyipopt.CyIpoptEvaluationError(self.last_error)
        return values

    def hessianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self._hess_rows, self._hess_cols

    def hessian(self, z: np.ndarray, lagrange: np.ndarray, obj_factor: float) -> np.ndarray:
        """Lower triangle of ∇²L (see the module docstring), order of ``hessianstructure``:
        the interval blocks and the x_N block assembled by :func:`_lagrangian_blocks`."""
        ndx, N, chart = self.ndx, self.N, self.chart
        lam = lagrange[: N * ndx].reshape(N, ndx)
        mu = lagrange[N * ndx: N * (ndx + self.nc)].reshape(N, self.nc)
        kappa = lagrange[N * (ndx + self.nc): N * (ndx + self.nc + self.ng)].reshape(N, self.ng)
        nu_h = lagrange[N * (ndx + self.nc + self.ng):]
        _, lx, _, lxx, lux, luu = self._get(z, "running_cost")
        sigma = obj_factor
        if self.ng:  # σℓ + κᵀg on the interval blocks (weighted here)
            sigma, (lx, lxx, lux, luu) = 1.0, self._stage_weighted(z, obj_factor, kappa, (lx, lxx, lux, luu))
        _, cx, cxx = self._get(z, "path_constraints")
        _, hx, hxx = self._get(z, "terminal_constraints")
        _, lNx, lNxx = self._get(z, "terminal_cost")
        A, B, _ = self._get(z, "first_order")
        if chart.manifold:
            G, D = self._get(z, "step")
            lamF, E = chart.pullback(D, lam), self._get(z, "E")  # multipliers of F: Dᵀλ
        else:  # no chart: G is not read
            G, lamF, E, D = lam, lam, self._no_chart, self._no_chart
        H = self._dynamics_hessians(z, lamF)
        xis, ntril = self._split(z)[0], self._tril_w[0].size
        values = np.empty(self._hess_rows.size)
        defects = Defects(G, lam, D, lamF, A, B)
        run_chunks(_lagrangian_blocks, N, sigma, CostTerms(lx, lxx, lux, luu), H, PathTerms(mu, cx, cxx), 1,
                   ChartTerms(chart.dofs, chart.lie, E, xis), defects, True, self._tril_w,
                   values[: N * ntril].reshape(N, ntril))
        # x_N: σℓ_N + νᵀh (weighted here), the path constraints at x_N, no defect
        gN = (obj_factor * lNx + nu_h @ hx)[None]
        WN = (obj_factor * lNxx + (nu_h @ hxx.reshape(self.nh, ndx * ndx)).reshape(ndx, ndx))[None]
        _lagrangian_blocks(1.0, CostTerms(gN, WN, *self._no_control), self._no_defect,
                           PathTerms(mu[-1:], cx[-1:], cxx[-1:]), 0, ChartTerms(chart.dofs, chart.lie, E[N:], xis[N:]),
                           defects, False, self._tril_x, values[N * ntril:].reshape(1, -1), claims_for(1))
        terms = (("the defects' multipliers", lam, 0), ("the path constraints' multipliers", mu, 1),
                 ("the stage constraints' multipliers", kappa, 0),
                 ("the terminal constraints' multipliers", nu_h[None], N), ("ℓ_xx", lxx, 0), ("ℓ_ux", lux, 0),
                 ("ℓ_uu", luu, 0), ("the terminal cost's Hessian", lNxx[None], N),
                 ("the path constraints' Hessians", cxx, 1), ("the terminal constraints' Hessians", hxx[None], N),
                 ("the dynamics' Hessians λᵀF_zz", H, 0))
        return self._finite(values, "Hessian", terms)

    def _stage_weighted(self, z: np.ndarray, sigma: float, kappa: np.ndarray, cost: tuple) -> tuple:
        """(σℓ_x + Σ_r κ_r g_x,r, σℓ_xx + Σ_r κ_r g_xx,r, … ux, … uu) at the knots 0..N−1: the cost
        terms with the stage constraints' part of the Lagrangian, κ (N, ng) their multipliers."""
        lx, lxx, lux, luu = cost
        _, gz, hessian = self._get(z, "stage_constraints")
        gx, _, gxx, gux, guu = self.problem.split_z(np.einsum("kr,kra->ka", kappa, gz), hessian(kappa))
        return sigma * lx + gx, sigma * lxx + gxx, sigma * lux + gux, sigma * luu + guu

    def _dynamics_hessians(self, z: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """Σ_i λ_k,i ∇²F_i(x_k, u_k) (N, nw, nw) w.r.t. (δx, u)."""
        p, (xs, us) = self.problem, self._get(z, "xu")
        if self.second_order == "contracted":
            return p.step_hessians(xs[:-1], us, lam, self._get(z, "first_order")[2])
        _, _, Fxx, Fxu, Fuu = p.step_derivatives(xs[:-1], us, second_order=True)
        H = np.empty((self.N, self.nw, self.nw))
        ndx = self.ndx
        H[:, :ndx, :ndx] = np.einsum("ki,kijl->kjl", lam, Fxx)
        H[:, ndx:, :ndx] = np.einsum("ki,kijl->klj", lam, Fxu)
        H[:, :ndx, ndx:] = H[:, ndx:, :ndx].transpose(0, 2, 1)
        H[:, ndx:, ndx:] = np.einsum("ki,kijl->kjl", lam, Fuu)
        return H

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm,
                     regularization_size, alpha_du, alpha_pr, ls_trials) -> bool:
        """Record one IPOPT iteration; a user callback returning False, Ctrl-C or the time
        limit (``self.run``) stop the solve."""
        rec = dict(zip(LOG_FIELDS, (alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm,
                                    regularization_size, alpha_du, alpha_pr, ls_trials,
                                    time.perf_counter() - self.t0)))
        self.log.append(rec)
        self.current = np.array(self.nlp.get_current_iterate(scaled=False)["x"], dtype=float)
        self.stopped = self.run.stop_reason()
        if self.stopped:
            return False
        if self.callback is None:
            return True
        xs, us = self.unpack(self.current)
        return self.callback(dict(rec, xs=xs, us=us)) is not False


CostTerms = namedtuple("CostTerms", ["lx", "lxx", "lux", "luu"])
"""The (weighted) cost's gradient in x and Hessian blocks at every knot (K, …)."""

PathTerms = namedtuple("PathTerms", ["mu", "cx", "cxx"])
"""The path constraints' multipliers μ (·, nc), Jacobians and Hessians, by node."""

ChartTerms = namedtuple("ChartTerms", ["dofs", "lie", "E", "xis"])
"""The state's chart: its Lie coordinates ``dofs`` (r,), their joints' blocks ``lie``, the
chart's Jacobians E (K, r, r) and the coordinates ξ (K, ndx) of the nodes."""

Defects = namedtuple("Defects", ["G", "lam", "D", "lamF", "A", "B"])
"""The defects G (K, ndx), their multipliers λ (K, ndx), the output chart's Jacobians
D (K, r, r), the multipliers of F, μ_F = Dᵀλ (K, ndx), and A, B of the intervals."""

ChartWork = namedtuple("ChartWork", ["d", "g", "P", "Fz", "T", "C", "lie"])
"""Scratch of the charts' terms at one knot: two (r,) vectors, (r, r), (r, nw) twice,
(nw, r) and the Lie scratch."""


@njit(cache=True, nogil=True)
def _lagrangian_blocks(sigma, cost, H, path, shift, chart, defects, with_defects, tril, out, claims):
    """out[k] ← the lower triangle ``tril`` (rows, cols) of the k-th diagonal block of ∇²L
    in the NLP's variables (module docstring), for the knots k the thread claims
    (:func:`dynamics.parallel.run_chunks`; ``claims_for(K)`` for all of them here):

        W_k = σ ℓ_ww − H_k + Σ_r μ_r c_xx,r

    from ``cost`` (:data:`CostTerms`), H (K, nw, nw) the defects' Σ_i λ_i ∇²F_i and ``path``
    (:data:`PathTerms`) whose row k − shift (if ≥ 0) holds the path constraints at x_k. On a
    floating base (``chart``: :data:`ChartTerms` with r = dofs.size > 0, only the rows and
    columns ``dofs`` change), in ξ_k:

        W_k ← E_kᵀ (W_k − F_zᵀ Λ_k F_z) E_k + P_k

    Λ_k the output chart's curvature with the defect multipliers
    (:func:`dynamics.lie.log_curvature` at G_k with λ_k and D_k), F_z = [A_k B_k] on the rows
    ``dofs``, P_k the input chart's curvature (:func:`dynamics.lie.exp_curvature` at ξ_k)
    with the gradient of the Lagrangian w.r.t. δx_k, g_k = σ ℓ_x − μ_Fᵀ A_k + Σ_r μ_r c_x,r;
    ``defects`` (:data:`Defects`) are ignored with ``with_defects`` False (the x_N block)."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    dofs, lie = chart.dofs, chart.lie
    ndx, nu, r = cost.lxx.shape[1], cost.luu.shape[1], dofs.shape[0]
    W = np.empty((ndx + nu, ndx + nu))
    work = ChartWork(np.empty(r), np.empty(r), np.empty((r, r)), np.empty((r, ndx + nu)), np.empty((r, ndx + nu)),
                     np.empty((ndx + nu, r)), lie_scratch(lie, 0))
    while k0 < k1:
        for k in range(k0, k1):
            _cost_block(k, sigma, cost, H, path, k - shift, W)
            if r > 0:
                if with_defects:
                    _output_chart(k, defects, dofs, lie, W, work)
                _chart_gradient(k, sigma, cost.lx, path, k - shift, defects, with_defects, dofs, work.g)
                _input_chart(chart.E[k], chart.xis[k], dofs, lie, W, work)
            _write_tril(W, tril, out[k])
        k0, k1 = next_chunk(claims)


@njit(cache=True, inline="always")
def _cost_block(k, sigma, cost, H, path, kc, W):
    """W ← σ ℓ_ww − H_k + Σ_r μ_r c_xx,r at knot k, the path constraints' row kc (none if
    kc < 0)."""
    lxx, lux, luu = cost.lxx, cost.lux, cost.luu
    mu, cxx = path.mu, path.cxx
    ndx, nu = lxx.shape[1], luu.shape[1]
    for i in range(ndx):
        for j in range(ndx):
            W[i, j] = sigma * lxx[k, i, j] - H[k, i, j]
    for i in range(nu):
        for j in range(ndx):
            W[ndx + i, j] = sigma * lux[k, i, j] - H[k, ndx + i, j]
            W[j, ndx + i] = sigma * lux[k, i, j] - H[k, j, ndx + i]
        for j in range(nu):
            W[ndx + i, ndx + j] = sigma * luu[k, i, j] - H[k, ndx + i, ndx + j]
    for c in range(mu.shape[1] if kc >= 0 else 0):
        for i in range(ndx):
            for j in range(ndx):
                W[i, j] += mu[kc, c] * cxx[kc, c, i, j]


@njit(cache=True, inline="always")
def _output_chart(k, defects, dofs, lie, W, work):
    """The defect's chart at knot k: W −= F_zᵀ Λ_k F_z (see :func:`_lagrangian_blocks`), with
    Λ_k formed from −λ_k (it is linear in λ) so that both products add."""
    G, lam, D, A, B = defects.G, defects.lam, defects.D, defects.A, defects.B
    d_r, m_r, Lam, Fz, T, s = work.d, work.g, work.P, work.Fz, work.T, work.lie
    ndx, nu = A.shape[1], B.shape[2]
    for a in range(dofs.shape[0]):
        d_r[a], m_r[a] = G[k, dofs[a]], -lam[k, dofs[a]]
        for j in range(ndx):
            Fz[a, j] = A[k, dofs[a], j]
        for j in range(nu):
            Fz[a, ndx + j] = B[k, dofs[a], j]
    Lam[:, :] = 0.0
    log_curvature(lie, d_r, m_r, D[k], Lam, s)
    T[:, :] = 0.0
    matmul_add(Lam, Fz, T)
    matmul_add(Fz.T, T, W)


@njit(cache=True, inline="always")
def _chart_gradient(k, sigma, lx, path, kc, defects, with_defects, dofs, g):
    """g (r,) ← the gradient of the Lagrangian w.r.t. δx_k on the coordinates ``dofs`` (the
    only ones the input chart's curvature reads): σ ℓ_x + Σ_r μ_r c_x,r − μ_Fᵀ A_k (the last
    term with ``with_defects``)."""
    mu, cx = path.mu, path.cx
    lamF, A = defects.lamF, defects.A
    for a in range(dofs.shape[0]):
        t = sigma * lx[k, dofs[a]]
        for c in range(mu.shape[1] if kc >= 0 else 0):
            t += mu[kc, c] * cx[kc, c, dofs[a]]
        for i in range(lamF.shape[1] if with_defects else 0):
            t -= lamF[k, i] * A[k, i, dofs[a]]
        g[a] = t


@njit(cache=True, inline="always")
def _input_chart(E, xi, dofs, lie, W, work):
    """The state's chart at ξ = xi: W ← Eᵀ W E + P(ξ, g) on the rows and columns ``dofs``, g
    the gradient in ``work`` (:func:`_chart_gradient`; see :func:`_lagrangian_blocks`)."""
    d_r, g, P, R, C, s = work.d, work.g, work.P, work.T, work.C, work.lie
    _chart_congruence(E, dofs, R, C, W)
    for a in range(dofs.shape[0]):
        d_r[a] = xi[dofs[a]]
    P[:, :] = 0.0
    exp_curvature(lie, d_r, g, P, s)
    for a in range(dofs.shape[0]):
        for b in range(dofs.shape[0]):
            W[dofs[a], dofs[b]] += P[a, b]


@njit(cache=True, inline="always")
def _write_tril(W, tril, out):
    rows, cols = tril
    for i in range(rows.shape[0]):
        out[i] = W[rows[i], cols[i]]


@njit(cache=True, inline="always")
def _chart_congruence(E, dofs, R, C, W):
    """W ← Eᵀ W E on the rows and columns ``dofs`` (E (r, r) the chart's Jacobian there, the
    identity elsewhere); R (r, n), C (n, r) scratch."""
    r, n = dofs.shape[0], W.shape[0]
    for a in range(r):
        for j in range(n):
            t = 0.0
            for p in range(r):
                t += E[p, a] * W[dofs[p], j]
            R[a, j] = t
    for a in range(r):
        for j in range(n):
            W[dofs[a], j] = R[a, j]
    for i in range(n):
        for b in range(r):
            t = 0.0
            for p in range(r):
                t += W[i, dofs[p]] * E[p, b]
            C[i, b] = t
    for i in range(n):
        for b in range(r):
            W[i, dofs[b]] = C[i, b]


@contextmanager
def _captured_stdout():
    """Capture what C code writes to file descriptor 1 (IPOPT's option errors)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        os.dup2(tmp.fileno(), 1)
        out = []
        try:
            yield out
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read())


def _add_options(nlp, options: dict) -> None:
    """Set IPOPT options on ``nlp`` (:func:`optdyn.solvers.ipopt_interface.problem`); an unknown
    name or a wrongly typed value raises ValueError."""
    for name, value in options.items():
        if isinstance(value, (bool, np.bool_)):
            value = "yes" if value else "no"
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            value = float(value)
        with _captured_stdout() as out:
            try:
                nlp.add_option(name, value)
                ok = True
            except TypeError:
                ok = False
        if not ok:
            why = " ".join(out[0].split()[:40]) if out and out[0].strip() else "rejected by IPOPT"
            raise ValueError(f"ipopt option {name!r}={value!r}: {why}")


LINEAR_SOLVER = {"mumps_mem_percent": 20}
"""IPOPT's options for its linear solver, MUMPS, under the solver's own ``options``: the
factorisation's workspace 20 % above MUMPS' estimate of it (ICNTL(14)) instead of IPOPT's default
1000 %. Allocating and releasing eleven times the workspace at every factorisation showed as
system time, a sixth of IPOPT's own time on the Solo-12 trot; where numerical pivoting needs more,
MUMPS reports it and IPOPT doubles the margin and factorises again. The iterates are the same to
the bit on every shipped task."""

CONTACT_BARRIER = {"mu_strategy": "adaptive"}
"""IPOPT's barrier on a problem with contacts, under the solver's own ``options``: the adaptive
update of the barrier parameter (Nocedal, Wächter & Waltz, "Adaptive barrier update strategies
for nonlinear interior methods", SIAM J. Optim. 19(4), 2009) instead of IPOPT's monotone
default. Measured on the legged tasks' friction pyramids and wrench cones (Solo-12's trot, walk
and jump, HyQ's, ANYmal's and Go1's trots and walks, Talos' walk and stand: BENCHMARKS.md,
"IPOPT's barrier strategy on every task"): the monotone barrier stops with the active
contact-force rows pushed inside, 1e-7 to 3e-6 above DDP's optimum (the stand, whose cones are
not active, at it), in 7–35 iterations; the adaptive one reaches it (within 2e-8) in 1–5 fewer
(Talos' step: one more). Without inequality rows the two give the same iterates. On the arms
neither is better throughout (arm-obstacle "straight": 102 iterations against 28; the double
pendulum 54 against 49), and IPOPT's default stays theirs."""

OBJECTIVE_SCALING = {"nlp_scaling_max_gradient": 1e5}
"""IPOPT's NLP scaling on a problem with neither contacts nor constraint rows (the torque box and
the dynamics only), under the solver's own ``options``: IPOPT's gradient-based scaling
(Wächter & Biegler 2006, Sec. 3.8) divides the objective (and each constraint row) by its
largest derivative at the starting point when that is above a bound, here 1e5 instead of
IPOPT's 100. From an arm's rollout guess that derivative is the terminal reach's error under
its large weight (1.4e3–6e4 on the tasks measured), and IPOPT's bound divided the objective by
14–600 for the whole solve (the SO-101's seed 0: 255; the space manipulator: 39). At 1e5 a task
in these units keeps them, and one whose costs are 10⁴–10⁶ times larger is brought back near
them. Measured (BENCHMARKS.md, "IPOPT's NLP scaling on every task"):

- the 30 arm poses: 841 iterations against 992 with IPOPT's bound, and all 30 at the lowest
  cost DDP, iLQR and IPOPT reach, against 29 (the SO-101's seed 0 ended 31 % above it, in 111
  iterations against 42); the space manipulator's reach 74 → 15 iterations;
- the poses with their costs × 10⁴ and × 10⁶: 865 and 893 iterations against 1091 and 1027,
  every run converged, where without any scaling 7 and 24 of 30 stopped at IPOPT's
  "acceptable" tolerance;
- with constraint rows the two bounds are even (the arms' joint limits: 234 iterations against
  232, the Panda's a local optimum 0.8 % costlier at 1e5), with contacts IPOPT's is better
  (Solo-12's walk 23 against 33, Talos' step 25 against 66): IPOPT's default stays theirs."""

WARM_START = {"warm_start_init_point": "yes", "mu_init": 1e-6, "warm_start_bound_push": 1e-9,
              "warm_start_bound_frac": 1e-9, "warm_start_slack_bound_push": 1e-9,
              "warm_start_slack_bound_frac": 1e-9, "warm_start_mult_bound_push": 1e-9}
"""IPOPT's options for a start from given multipliers: the point is taken as it is, close to
the bounds, with a small barrier parameter (the settings IPOPT's documentation gives for warm
starts); the solver's own ``options`` take precedence."""


def class_options(problem: Problem) -> dict:
    """IPOPT's options for ``problem``'s class: :data:`CONTACT_BARRIER` with contacts, none with
    constraint rows (path, stage or terminal, joint limits included), :data:`OBJECTIVE_SCALING`
    else."""
    if problem.contacts is not None:
        return CONTACT_BARRIER
    return {} if problem.nc or problem.ng or problem.nh else OBJECTIVE_SCALING


def initial_duals(nlp: MultipleShootingNLP, multipliers) -> dict | None:
    """IPOPT's multipliers to start from — "constraints" (m,), "lower", "upper" (n,) of the
    ``"duals"`` of ``multipliers`` (an IPOPT result's extra) — or None; ValueError naming
    ``multipliers`` otherwise."""
    if multipliers is None:
        return None
    expected = "an IPOPT result's extra, whose 'duals' hold constraints, lower and upper"
    try:
        duals = multipliers["duals"]
    except (KeyError, TypeError, IndexError):
        raise ValueError(f"multipliers: expected {expected}") from None
    return multiplier_arrays(duals, {"constraints": (nlp.m,), "lower": (nlp.n,), "upper": (nlp.n,)}, expected,
                             "duals ")


@dataclass
class IPOPT:
    """Direct multiple shooting solved by IPOPT (module docstring), with its options.

    Options: ``hessian`` — "exact" (the Hessian of the Lagrangian, the default) or "lbfgs"
    (IPOPT's limited-memory quasi-Newton, ``hessian_approximation=limited-memory``);
    ``second_order`` — how the exact Hessian gets the dynamics terms: "contracted"
    (second-order adjoint, default) or "tensor" (full tensors, for validation); ``max_iter``,
    ``tol``: IPOPT's iteration cap and convergence tolerance; ``print_level``: IPOPT's console
    verbosity (0 = silent, the default unless ``verbose``, which selects 5); ``callback``:
    called once per iteration with a dict (the ``LOG_FIELDS`` and the current ``xs``, ``us``),
    returning False stops the solve ("user_stop"); ``max_time``: wall-clock limit, s (IPOPT's
    ``max_wall_time``, also polled every iteration), status "time_limit" — Ctrl-C stops with
    status "interrupted" (:mod:`optdyn.solvers.runtime`), both with IPOPT's current iterate;
    ``options``: any further IPOPT option by its IPOPT name (e.g. ``{"mu_strategy":
    "adaptive"}``; unknown names raise ValueError when the solve starts), over those this type
    sets itself (:data:`LINEAR_SOLVER`, :func:`class_options` by the problem's class, and
    :data:`WARM_START` given multipliers).
    """

    name: ClassVar[str] = "ipopt"
    hessian: str = "exact"
    second_order: str = "contracted"
    max_iter: int = 500
    tol: float = 1e-8
    print_level: int | None = None
    verbose: bool = False
    callback: object = None
    max_time: float | None = None
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hessian not in ("exact", "lbfgs"):
            raise ValueError(f"hessian: expected 'exact' or 'lbfgs', got {self.hessian!r}")
        if self.second_order not in ("contracted", "tensor"):
            raise ValueError(f"second_order: expected 'contracted' or 'tensor', got {self.second_order!r}")
        check_count("max_iter", self.max_iter)
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback: expected a callable or None, got {self.callback!r}")
        if not isinstance(self.options, dict):
            raise ValueError(f"options: expected a dict of IPOPT options, got {self.options!r}")
        self.max_time = check_max_time(self.max_time)

    @classmethod
    def with_options(cls, options: dict | None = None, **settings) -> IPOPT:
        """An instance with ``settings``: this type's own, any other an IPOPT option added to
        ``options``."""
        own = {f.name for f in fields(cls)} - {"options"}
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options: expected a dict of IPOPT options, got {options!r}")
        return cls(**{k: v for k, v in settings.items() if k in own},
                   options={**(options or {}), **{k: v for k, v in settings.items() if k not in own}})

    def solve(self, problem: Problem, us_init=None, xs_init=None, *, multipliers=None) -> Result:
        """Solve ``problem`` from ``xs_init`` (N+1, nx) and ``us_init`` (N, nu) (default: the
        problem's guess; on a floating base ``xs_init`` is also the reference x̃ of the state
        variables, module docstring) and, given ``multipliers`` (the extra of an IPOPT result
        of the same problem, or one shifted by :func:`optdyn.solvers.mpc.shift_duals`), from its
        multipliers ("duals") too, with the options of :data:`WARM_START`.

        Returns a Result with solver="ipopt"; ``history`` has "cost", "violation" (inf_pr),
        "gradient" (inf_du), "mu", "step" (alpha_pr), "time"; ``extra`` has
        "status_code", "status_message", "log" (per-iteration dict of arrays),
        "evaluation_errors" (points IPOPT had to step back from), "compile_time",
        "multipliers" ("defects" (N, ndx), "path" (N, nc): every path row at nodes 1..N, joint
        limits (variable bounds) included, "stage" (N, ng): the stage rows at knots 0..N−1,
        "terminal" (nh,); IPOPT's sign: L = f + Σ multiplier · row), "duals" (IPOPT's own
        vectors, what ``multipliers`` takes: "constraints" (m,), "lower" and "upper" (n,)) and
        "nlp_size" (n, m).
        """
        if not isinstance(problem, Problem):
            raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
        xs0 = _guess(problem.xs_init if xs_init is None else xs_init, (problem.N + 1, problem.nx), "xs_init")
        check_state(problem.model, xs0, "xs_init")
        us0 = _guess(problem.us_init if us_init is None else us_init, (problem.N, problem.nu), "us_init")
        run = Run(self.max_time)
        nlp = MultipleShootingNLP(problem, self.hessian == "exact", self.callback, self.second_order, reference=xs0)
        duals = initial_duals(nlp, multipliers)
        options = {"sb": "yes", "max_iter": self.max_iter, "tol": self.tol,
                   "print_level": (5 if self.verbose else 0) if self.print_level is None else self.print_level}
        if self.hessian == "lbfgs":
            options["hessian_approximation"] = "limited-memory"
        if run.max_time is not None:
            options["max_wall_time"] = run.max_time
        z0 = nlp.pack(xs0, us0)
        start = {} if duals is None else {"lagrange": duals["constraints"], "zl": duals["lower"], "zu": duals["upper"]}
        ipopt = ipopt_interface.problem(nlp.n, nlp.m, nlp, nlp.lb, nlp.ub, nlp.cl, nlp.cu)
        with closing(ipopt), run:  # Ipopt's problem freed however the solve ends, a rejected option included
            _add_options(ipopt, {**options, **LINEAR_SOLVER, **class_options(problem),
                                 **(WARM_START if duals else {}), **self.options})
            nlp.nlp, nlp.run, nlp.t0 = ipopt, run, time.perf_counter()
            try:
                z, info = ipopt.solve(z0, **start)
            except (KeyboardInterrupt, SystemError) as e:  # raised during compilation or by a second Ctrl-C
                if not is_interrupt(e) and not run.interrupted:
                    raise
                z = z0 if nlp.current is None else nlp.current
                info = {"status": 5, "status_msg": "interrupted", "mult_g": np.zeros(nlp.m)}
                nlp.stopped = "interrupted"
            finally:
                nlp.settle()
                nlp.nlp = None  # (the NLP and IPOPT's problem refer to each other)
        return _result(problem, nlp, z, info, self.hessian, run)


def _guess(a, shape: tuple[int, int], name: str) -> np.ndarray:
    try:
        a = np.array(a, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an array of shape {shape}") from None
    if a.shape != shape or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected finite values of shape {shape}, got shape {a.shape}")
    return a


def _result(problem, nlp: MultipleShootingNLP, z, info, hessian: str, run: Run) -> Result:
    code = int(info["status"])
    msg = info["status_msg"].decode() if isinstance(info["status_msg"], bytes) else str(info["status_msg"])
    status = IPOPT_STATUS.get(code, "solver_error")
    if code == 5 and nlp.stopped:  # our intermediate callback stopped IPOPT
        status, msg = nlp.stopped, stop_message(nlp.stopped, run)
    elif status == "time_limit" and run.max_time is not None:
        msg = stop_message("time_limit", run)
    elif status == "invalid_number" and nlp.last_error:
        msg = f"{msg} Last evaluation error: {nlp.last_error}"
    xs, us = nlp.unpack(z)
    try:
        cost = float(problem.cost(xs, us))
    except Exception:  # noqa: BLE001 — not evaluable (finite iterates the model rejects)
        cost = np.nan
    log = {f: np.array([r[f] for r in nlp.log]) for f in LOG_FIELDS}
    lam = np.asarray(info["mult_g"])
    N, ndx, nc, ng = nlp.N, nlp.ndx, nlp.nc, nlp.ng
    return Result(
        xs=xs, us=us, cost=cost, converged=code in CONVERGED,
        iterations=int(log["iteration"][-1]) if nlp.log else 0,
        status=status, message=msg,
        history={"cost": log["objective"], "violation": log["inf_pr"], "gradient": log["inf_du"],
                 "mu": log["mu"], "step": log["alpha_pr"], "time": log["time"]},
        solver="ipopt", problem=getattr(problem, "name", ""), params=dict(getattr(problem, "params", {})),
        wall_time=run.elapsed(), gains=None,
        extra={"status_code": code, "status_message": msg, "log": log, "hessian": hessian,
               "evaluation_errors": nlp.evaluation_errors, "last_evaluation_error": nlp.last_error,
               "compile_time": run.compile_time(),
               "nlp_size": (nlp.n, nlp.m),
               "duals": {"constraints": lam, "lower": np.asarray(info.get("mult_x_L", np.zeros(nlp.n)), dtype=float),
                         "upper": np.asarray(info.get("mult_x_U", np.zeros(nlp.n)), dtype=float)},
               "multipliers": {"defects": lam[: N * ndx].reshape(N, ndx),
                               "path": _path_multipliers(problem, nlp, lam[N * ndx: N * (ndx + nc)].reshape(N, nc),
                                                         info),
                               "stage": lam[N * (ndx + nc): N * (ndx + nc + ng)].reshape(N, ng),
                               "terminal": lam[N * (ndx + nc + ng):]}},
    )


def _path_multipliers(problem, nlp: MultipleShootingNLP, general: np.ndarray, info) -> np.ndarray:
    """The multipliers (N, nc) of all path rows at nodes 1..N, in the problem's row order: IPOPT's
    constraint multipliers of the general rows, and for the rows IPOPT takes as variable bounds
    (joint limits) −z_L or −z_U of their variable, the multiplier the same row would have as
    a constraint c ≥ 0 in IPOPT's Lagrangian f + λᵀg (λ ≤ 0 where active; z ≥ 0 the bound
    multipliers, A. Wächter, L. T. Biegler, "On the implementation of an interior-point filter
    line-search algorithm for large-scale nonlinear programming", Math. Prog. 2006, eq. 4)."""
    rows, tangent, lower = problem.bound_rows
    path = np.zeros((nlp.N, problem.nc))
    path[:, np.setdiff1d(np.arange(problem.nc), rows)] = general
    z_lower, z_upper = (nlp._split(np.asarray(info.get(k, np.zeros(nlp.n)), dtype=float))[0][1:]
                        for k in ("mult_x_L", "mult_x_U"))
    path[:, rows] = -np.where(lower, z_lower[:, tangent], z_upper[:, tangent])
    return path
