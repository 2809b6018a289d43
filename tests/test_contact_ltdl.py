"""Featherstone's sparse LTDL factorisation (the contact KKT's factor of M) against dense algebra."""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn
from dynamics.ltdl import dof_parents, ltdl_in_place, solve_l, solve_lt, solve_m

from conftest import MODEL_IDS, MODEL_SPECS, make_model
from test_floating_base import mixed_tree


def _models():
    yield from (make_model(*spec) for spec in MODEL_SPECS)
    yield from (mixed_tree(3, root) for root in ("floating", "spherical", "planar"))


@pytest.mark.parametrize("model", list(_models()), ids=MODEL_IDS + ["mixed-floating", "mixed-spherical", "mixed-planar"])
def test_ltdl_factor_reproduces_and_inverts_the_inertia_matrix(model):
    q = dyn.random_configuration(model, np.random.default_rng(1))
    M = dyn.crba(model, q)
    lam = dof_parents(model.topology)
    H = M.copy()
    assert ltdl_in_place(H, lam)
    nv = model.nv
    L = np.eye(nv)
    for k in range(nv):  # L: unit lower triangular, nonzero at the ancestor columns only
        i = lam[k]
        while i >= 0:
            L[k, i] = H[k, i]
            i = lam[i]
    np.testing.assert_allclose(L.T @ np.diag(np.diag(H)) @ L, M, rtol=1e-12, atol=1e-12 * np.abs(M).max())
    B = np.random.default_rng(2).normal(size=(nv, 3))
    for solve, A in ((solve_lt, L.T), (solve_l, L), (solve_m, M)):
        X = B.copy()
        solve(H, lam, X)
        np.testing.assert_allclose(A @ X, B, rtol=1e-10, atol=1e-10)


def test_a_pivot_that_is_not_positive_is_reported():
    model = make_model("serial_chain", 7, 1)
    lam = dof_parents(model.topology)
    H = -np.eye(model.nv)
    assert not ltdl_in_place(H, lam)
