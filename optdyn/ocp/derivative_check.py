"""Check a term's derivatives against differences: :func:`check_derivatives`.

Every derivative the term provides is compared with central differences along
(x ⊕ δx, u + δu) (:mod:`optdyn.ocp.state`): for a residual its Jacobians r_x, r_u and its
Hessians of ρᵀr for a fixed ρ; for a cost ℓ_x, ℓ_u, ℓ_xx, ℓ_ux, ℓ_uu; for a constraint
c_x and the Hessian of each row. Second derivatives are second differences of the scalar
(O(h²)). The error of an array is Singh, Russell & Wensing's relative error ("On
second-order derivatives of rigid-body dynamics", 2023, eq. 42):
max|A − A_ref| / max(max|A_ref|, 1).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .constraints import Constraint
from .costs import Cost
from .residuals import Residual
from .state import state_plus


def _gradient(f: Callable, n: int, h: float) -> np.ndarray:
    """∂f/∂ε (…, n) at ε = 0 by central differences."""
    E = np.eye(n) * h
    return np.stack([(f(E[i]) - f(-E[i])) / (2 * h) for i in range(n)], axis=-1)


def _hessian(f: Callable, n: int, h: float) -> np.ndarray:
    """∂²f/∂ε² (…, n, n) of f (a scalar or an array) at ε = 0 by second differences."""
    E = np.eye(n) * h
    H = np.empty(np.shape(f(np.zeros(n))) + (n, n))
    for i in range(n):
        for j in range(i, n):
            H[..., i, j] = H[..., j, i] = (f(E[i] + E[j]) - f(E[i] - E[j]) - f(E[j] - E[i])
                                           + f(-E[i] - E[j])) / (4 * h * h)
    return H


def relative_error(A, A_ref) -> float:
    """max|A − A_ref| / max(max|A_ref|, 1) (0 for empty arrays)."""
    A, A_ref = np.asarray(A, dtype=float), np.asarray(A_ref, dtype=float)
    if A.size == 0:
        return 0.0
    return float(np.max(np.abs(A - A_ref)) / max(float(np.max(np.abs(A_ref))), 1.0))


def _model(term, model):
    for obj in (model, term, getattr(term, "residual", None)):
        if obj is not None and getattr(obj, "model", None) is not None:
            return obj.model if obj is not model else model
    return None


def _comparisons(term, x: np.ndarray, u: np.ndarray, model, h: float):
    """[(name, provided, differenced)] for every derivative ``term`` provides, along
    (x ⊕ δx, u + δu) (x + δx without a ``model``)."""
    ndx, nu = x.size if model is None else 2 * model.nv, u.size
    n = ndx + nu

    def at(e):
        return state_plus(model, x, e[:ndx])[None], (u + e[ndx:])[None]
    if isinstance(term, Residual):
        t = term.evaluate(x[None], u[None])
        rho = np.random.default_rng(0).uniform(0.5, 1.5, term.size)
        H = np.zeros((n, n))
        Hxx, Hux, Huu = (a[0] for a in t.hessians(rho[None]))
        H[:ndx, :ndx], H[ndx:, :ndx], H[:ndx, ndx:], H[ndx:, ndx:] = Hxx, Hux, Hux.T, Huu
        J = _gradient(lambda e: term.value(*at(e))[0], n, h)
        Hd = _hessian(lambda e: rho @ term.value(*at(e))[0], n, 1e3 * h)
        return [("r_x", t.rx[0], J[:, :ndx]), ("r_u", t.ru[0], J[:, ndx:]), ("H(ρᵀr)", H, Hd)]
    if isinstance(term, Cost):
        l, lx, lu, lxx, lux, luu = (a[0] for a in term.evaluate(x[None], u[None]))
        g = _gradient(lambda e: term.value(*at(e))[0], n, h)
        Hd = _hessian(lambda e: term.value(*at(e))[0], n, 1e3 * h)
        out = [("l_u", lu, g[ndx:]), ("l_uu", luu, Hd[ndx:, ndx:])]
        if term.depends_on_x:
            out = [("l_x", lx, g[:ndx]), ("l_xx", lxx, Hd[:ndx, :ndx]), ("l_ux", lux, Hd[ndx:, :ndx])] + out
        return out
    c, cz, czz = (a[0] for a in term.evaluate_knots(x[None], u[None], ndx))  # z = (δx, u)
    J = _gradient(lambda e: term.value_knots(*at(e))[0], n, h)
    Hd = _hessian(lambda e: term.value_knots(*at(e))[0], n, 1e3 * h)
    out = [("c_x", cz[:, :ndx], J[:, :ndx]), ("c_xx", czz[:, :ndx, :ndx], Hd[..., :ndx, :ndx])]
    if term.depends_on_u:
        out += [("c_u", cz[:, ndx:], J[:, ndx:]), ("c_ux", czz[:, ndx:, :ndx], Hd[..., ndx:, :ndx]),
                ("c_uu", czz[:, ndx:, ndx:], Hd[..., ndx:, ndx:])]
    return out


def check_derivatives(term: Residual | Cost | Constraint, x, u=None, *, model=None, step: float = 1e-6,
                      verbose: bool = True) -> float:
    """Compare every derivative ``term`` provides at (x, u) with differences; print a table
    (``verbose``) and return the largest relative error (a float).

    ``term``: a residual, cost or constraint; x (nx,) a state, u (nu,) a control (default
    none: a term of the state); ``model`` for x ⊕ δx when the term does not carry one
    (else x + δx); ``step`` h of the first differences (second differences use 1000 h)."""
    if not isinstance(term, (Residual, Cost, Constraint)):
        raise ValueError(f"term: expected an optdyn residual, cost or constraint, got {type(term).__name__}")
    x = np.asarray(x, dtype=float)
    nu = getattr(term, "nu", None)
    u = np.zeros(0 if nu is None else nu) if u is None else np.asarray(u, dtype=float)
    if x.ndim != 1 or u.ndim != 1 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(u))):
        raise ValueError(f"x, u: expected finite vectors, got shapes {x.shape}, {u.shape}")
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step: expected a number > 0, got {step!r}")
    rows = [(name, relative_error(a, b), float(np.max(np.abs(np.asarray(a) - b), initial=0.0)))
            for name, a, b in _comparisons(term, x, u, _model(term, model), step)]
    if verbose:
        print(f"{'derivative':<12}{'relative error':>16}{'max abs error':>16}   ({type(term).__name__})")
        for name, rel, ab in rows:
            print(f"{name:<12}{rel:>16.2e}{ab:>16.2e}")
    return max(rel for _, rel, _ in rows)
