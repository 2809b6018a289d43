"""A residual written by the user: r(x, u) and its Jacobian in NumPy (or numba), at one knot.

    def value(x, u):     return r                       # (size,)
    def jacobian(x, u):  return r_x, r_u                # (size, ndx), (size, nu)
    def hessian(x, u, rho): return H_xx, H_ux, H_uu     # optional: Hessians of ρᵀr

Derivatives w.r.t. x are taken along x ⊕ δx (:mod:`optdyn.ocp.state`; on revolute and
prismatic joints simply x + δx). Without ``hessian``, central differences of ρᵀ[r_x r_u]
along (x ⊕ δx, u + δu), symmetrised, supply it: the chart's own first-order term is
antisymmetric (J_r(δ) = I − ½ ad_δ + …) and drops out, so this is the exact Hessian up to
O(h²) and rounding (J. Nocedal, S. J. Wright, "Numerical Optimization", 2006, Sec. 8.1,
eq. 8.7). Such a term is flagged (``approximate_hessian``) and the solver's result says so.
Check a term with :func:`optdyn.check_derivatives`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dynamics.model import Model

from .residuals import Residual, Terms
from .state import state_plus


def _checked(a, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``a`` as floats of ``shape``; ValueError naming ``name`` (the user's function) otherwise."""
    try:
        out = np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected real numbers of shape {shape}, got {type(a).__name__}") from None
    if out.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {out.shape} (the output shape must not change "
                         f"between calls)")
    return out


class UserResidual(Residual):
    """r(x, u) of ``size`` entries from the user's ``value`` and ``jacobian`` (and optional
    ``hessian``) functions of one knot (module docstring); ``nu``: the control size if r
    depends on u (else None: r of the state only); ``name`` for reports; ``step`` h of the
    differenced Hessian."""

    def __init__(self, model: Model, size: int, value: Callable, jacobian: Callable, hessian: Callable | None = None,
                 *, nu: int | None = None, name: str = "user residual", step: float = 1e-6) -> None:
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a dynamics.Model, got {type(model).__name__}")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size: expected an integer ≥ 1, got {size!r}")
        for f, arg in ((value, "value"), (jacobian, "jacobian"), (hessian, "hessian")):
            if not (callable(f) or (f is None and arg == "hessian")):
                raise ValueError(f"{arg}: expected a function, got {f!r}")
        if not (np.isfinite(step) and step > 0):
            raise ValueError(f"step: expected a number > 0, got {step!r}")
        self.model, self.size, self.ndx, self.nu = model, int(size), 2 * model.nv, nu
        self.depends_on_u, self.name, self.step = nu is not None, str(name), float(step)
        self._value, self._jacobian, self._hessian = value, jacobian, hessian
        self.approximate_hessian = hessian is None

    def _r(self, x, u):
        return _checked(self._value(x, u), (self.size,), "value")

    def _J(self, x, u):
        rx, ru = self._jacobian(x, u)
        return (_checked(rx, (self.size, self.ndx), "jacobian"),
                _checked(ru, (self.size, u.size), "jacobian") if self.depends_on_u else np.zeros((self.size, u.size)))

    def _H(self, x, u, rho):
        if self._hessian is not None:
            Hxx, Hux, Huu = self._hessian(x, u, rho)
            nu = u.size
            return (_checked(Hxx, (self.ndx, self.ndx), "hessian"), _checked(Hux, (nu, self.ndx), "hessian"),
                    _checked(Huu, (nu, nu), "hessian"))
        return self._differenced_hessian(x, u, rho)

    def _differenced_hessian(self, x, u, rho):
        """sym of central differences of ρᵀ[r_x r_u] along (x ⊕ δx, u + δu) (module docstring)."""
        ndx, nu, h = self.ndx, u.size if self.depends_on_u else 0, self.step
        n = ndx + nu
        H = np.empty((n, n))
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            rows = [rho @ np.hstack(self._J(state_plus(self.model, x, s * e[:ndx]), u + s * np.r_[e[ndx:], np.zeros(u.size - nu)]))
                    for s in (1.0, -1.0)]
            H[:, j] = (rows[0] - rows[1])[:n] / (2 * h)
        H = 0.5 * (H + H.T)
        out = np.zeros((ndx + u.size, ndx + u.size))
        out[:n, :n] = H
        return out[:ndx, :ndx], out[ndx:, :ndx], out[ndx:, ndx:]

    def value(self, xs, us):
        return np.array([self._r(x, u) for x, u in zip(xs, us)]).reshape(xs.shape[0], self.size)

    def evaluate(self, xs, us):
        xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
        r = self.value(xs, us)
        J = [self._J(x, u) for x, u in zip(xs, us)]
        rx = np.array([j[0] for j in J]).reshape(xs.shape[0], self.size, self.ndx)
        ru = np.array([j[1] for j in J]).reshape(xs.shape[0], self.size, us.shape[1])

        def hessians(rho):
            H = [self._H(x, u, p) for x, u, p in zip(xs, us, rho)]
            return tuple(np.array([h[i] for h in H]) for i in range(3))
        return Terms(r, rx, ru, hessians)
