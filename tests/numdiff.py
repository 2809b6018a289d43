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


def rel_error(A: np.ndarray, A_ref: np.ndarray) -> float:
    """Singh, Russell & Wensing 2023, eq. 42: max|A − A_ref| / max(max|A_ref|, 1)."""
    return float(np.max(np.abs(A - A_ref)) / max(np.max(np.abs(A_ref)), 1.0))
