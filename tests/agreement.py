"""The check that different solvers reached one optimum, shared by the solver tests."""
from __future__ import annotations

import numpy as np


def assert_same_optimum(results: dict) -> None:
    """Every result of ``results`` ({solver: Result}, DDP's among them) converged, the costs
    agree to 1e-6 relative and the controls to 1e-3 of DDP's largest."""
    for r in results.values():
        assert r.converged, (r.solver, r.status, r.message)
    costs = np.array([r.cost for r in results.values()])
    assert np.ptp(costs) < 1e-6 * costs.max()
    for r in results.values():
        assert np.max(np.abs(r.us - results["ddp"].us)) < 1e-3 * np.max(np.abs(results["ddp"].us))
