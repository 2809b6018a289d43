"""The SE(3) exponential, logarithm and Jacobians to rounding at small rotation angles.

Their closed forms subtract nearly equal numbers as the angle θ → 0 (θ − sin θ ≈ θ³/6,
1 − (θ/2)cot(θ/2) ≈ θ²/12); for θ between 1e-5 and 1e-2 — a foot's orientation near its
target, a base turning for one time step — they lost up to all the digits of the
logarithm's translation. References: the coefficients' exact Taylor series in rational
arithmetic, and the Jacobians' defining series Σ (−ad_ξ)^k/(k+1)! in floating point.
"""
from __future__ import annotations

from fractions import Fraction
from functools import cache
from math import comb, factorial

import numpy as np
import pytest

import dynamics as dyn
from dynamics.builder import ModelBuilder
from dynamics.groups import SERIES_BELOW, so3_coefficients
from dynamics.model import transform

ANGLES = (0.0, 1e-8, 1e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 1e-2, 0.1, SERIES_BELOW * (1 - 1e-12), SERIES_BELOW, 0.5, 1.0,
          2.0, 3.0)


@cache
def _bernoulli(n: int) -> list[Fraction]:
    """B_0 … B_n, exactly (B_1 = −1/2)."""
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(comb(m + 1, k) * B[k] for k in range(m)) / (m + 1))
    return B


def exact_coefficients(th: float, terms: int = 40) -> tuple[float, ...]:
    """(a, b, c, d, e) of so3_coefficients at the float th, from their Taylor series summed
    in rational arithmetic (``terms`` terms: far past rounding for θ ≤ 3)."""
    t2 = Fraction(th) ** 2
    a = sum(Fraction((-1) ** k, factorial(2 * k + 2)) * t2 ** k for k in range(terms))
    b = sum(Fraction((-1) ** k, factorial(2 * k + 3)) * t2 ** k for k in range(terms))
    c = sum(Fraction((-1) ** k, factorial(2 * k + 4)) * t2 ** k for k in range(terms))
    d = sum(Fraction((-1) ** k * (k + 1), factorial(2 * k + 5)) * t2 ** k for k in range(terms))
    B = _bernoulli(2 * terms)  # 1 − x cot x = −Σ_{n≥1} (−4)^n B_2n x^2n/(2n)!, x = θ/2
    e = -sum(Fraction((-4) ** n) * B[2 * n] * (t2 / 4) ** n / factorial(2 * n) for n in range(1, terms + 1))
    e = e / t2 if t2 else Fraction(1, 12)
    return tuple(float(v) for v in (a, b, c, d, e))


@pytest.mark.parametrize("th", ANGLES)
def test_coefficients_match_their_exact_series(th):
    got, want = np.array(so3_coefficients(th)), np.array(exact_coefficients(th))
    np.testing.assert_allclose(got, want, rtol=5e-12, atol=0)
    if th < SERIES_BELOW:  # the series: to rounding
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def free_body() -> dyn.Model:
    """One body on a free-flyer root."""
    b = ModelBuilder("free")
    b.add_link("world")
    b.add_link("body", 2.0, np.diag([0.1, 0.2, 0.3]), transform(p=(0.0, 0.0, 0.1)))
    b.add_joint("root", "floating", "world", "body", transform(), (0.0, 0.0, 1.0))
    return b.build()


def _hat(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def right_jacobian_series(xi: np.ndarray) -> np.ndarray:
    """J_r(ξ) = Σ_k (−ad_ξ)^k/(k+1)! of ξ = (v, ω), ad_ξ = [[ω×, v×], [0, ω×]], summed to rounding."""
    ad = np.zeros((6, 6))
    ad[:3, :3] = ad[3:, 3:] = _hat(xi[3:])
    ad[:3, 3:] = _hat(xi[:3])
    J, term = np.eye(6), np.eye(6)
    for k in range(1, 60):
        term = -term @ ad / (k + 1)
        J = J + term
    return J


def twists(rng: np.random.Generator):
    """Twists ξ = (v, ω) with |v| = 1 and |ω| at every angle of ANGLES."""
    for th in ANGLES:
        v, w = rng.normal(size=3), rng.normal(size=3)
        yield np.r_[v / np.linalg.norm(v), th * w / np.linalg.norm(w)]


def test_logarithm_inverts_the_exponential_to_rounding_at_small_angles():
    """q ⊖ (q ⊕ ξ) = ξ: the logarithm's translation V(ω)⁻¹p lost up to 5e-7 of |v| = 1 at
    |ω| ≈ 2e-5 by the closed form of 1 − (θ/2)cot(θ/2)."""
    model, rng = free_body(), np.random.default_rng(3)
    q = dyn.random_configuration(model, rng)
    for xi in twists(rng):
        np.testing.assert_allclose(dyn.difference(model, q, dyn.integrate(model, q, xi)), xi, rtol=0, atol=2e-15)


def test_exponential_jacobians_match_their_series_at_small_angles():
    """d/dξ of q ⊕ ξ (J_r) and of q ⊖ q1 (J_r⁻¹) against the series: the coupling block's
    coefficients c, d lost up to all their digits at |ω| ≈ 1e-4 (an error of 1e-8 in J_r)."""
    model, rng = free_body(), np.random.default_rng(4)
    q = dyn.random_configuration(model, rng)
    for xi in twists(rng):
        J = right_jacobian_series(xi)
        np.testing.assert_allclose(dyn.integrate_jacobians(model, q, xi)[1], J, rtol=0, atol=1e-14)
        J_inv = dyn.difference_jacobians(model, q, dyn.integrate(model, q, xi))[1]
        np.testing.assert_allclose(J_inv @ J, np.eye(6), rtol=0, atol=1e-13)
