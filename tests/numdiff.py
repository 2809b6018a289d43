"""Independent numerical references for the derivative tests.

Derivatives are taken with respect to a flat vector ``x``; the derivative index is the
last axis of the result, so ``jacobian(f, x)[..., k] = ∂f/∂x_k`` for ``f`` of any shape.
"""
from __future__ import annotations

import numpy as np


def central(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences (f(x + h e_k) − f(x − h e_k)) / 2h, O(h²)."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((f(x + e) - f(x - e)) / (2.0 * h))
    return np.stack(cols, axis=-1)


def richardson(f, x: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Central differences with one Richardson extrapolation, O(h⁴)."""
    return (4.0 * central(f, x, h / 2.0) - central(f, x, h)) / 3.0


def second_differences(g, n: int, h: float = 2e-3) -> np.ndarray:
    """H[..., j, k] ≈ ∂²g/∂ε_j∂ε_k at ε = 0 (g of any shape): the four-point central formula
    at h and h/2, one Richardson extrapolation (O(h⁴))."""
    return (4.0 * _four_point(g, n, h / 2.0) - _four_point(g, n, h)) / 3.0


def _four_point(g, n: int, h: float) -> np.ndarray:
    H = np.empty(np.shape(g(np.zeros(n))) + (n, n))
    E = h * np.eye(n)
    for j in range(n):
        for k in range(j, n):
            H[..., j, k] = H[..., k, j] = (g(E[j] + E[k]) - g(E[j] - E[k]) - g(E[k] - E[j])
                                           + g(-E[j] - E[k])) / (4.0 * h * h)
    return H


def rel_error(A: np.ndarray, A_ref: np.ndarray) -> float:
    """Singh, Russell & Wensing 2023, eq. 42: max|A − A_ref| / max(max|A_ref|, 1)."""
    return float(np.max(np.abs(A - A_ref)) / max(np.max(np.abs(A_ref)), 1.0))
