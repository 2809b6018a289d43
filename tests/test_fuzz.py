"""Fuzz: random robots, targets, guesses and time steps through every solver.

Each case draws (from its own seed, so a failure is reproducible by its id) a random
serial chain or binary tree of 1–4 joints, a random start state (at rest or moving), a
random target for a random link, N intervals of a dt between 1e-4 s and 5 s (tiny to
absurdly large for RK4), sometimes control bounds, a terminal equality or a sphere to
avoid (the augmented-Lagrangian path), and an initial guess of controls up to 1e5 —
then solves it with DDP, iLQR and IPOPT. The contract under test: a solve never raises;
it returns a Result with a documented status (``optdyn.solvers.result.STATUSES``) whose
trajectories are finite — the one documented exception being "rollout_failed" at
iteration 0, when no initial controls give a finite rollout (then xs is NaN after the
divergence); invalid problem data raises ValueError at construction.
"""
import numpy as np
import pytest

import dynamics as dyn
from optdyn import Problem
from optdyn.ocp.constraints import SphereClearance, StateEquality
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.solvers.result import STATUSES
from optdyn.solvers.solve import solve

pytestmark = pytest.mark.cost(25)

CASES = 150  # × 3 solvers: about 40 s on one core
SOLVERS = ("ddp", "ilqr", "ipopt")
DTS = (1e-4, 1e-3, 0.02, 0.1, 0.5, 2.0, 5.0)


def random_problem(seed: int) -> Problem:
    """The random problem of case ``seed`` (module docstring)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5))
    family = dyn.models.serial_chain if rng.random() < 0.5 else dyn.models.binary_tree
    model = family(n, seed=int(rng.integers(0, 1000)))
    q0 = rng.uniform(-np.pi, np.pi, model.nq)
    v0 = np.zeros(model.nv) if rng.random() < 0.5 else rng.normal(0.0, 2.0, model.nv)
    x0 = np.concatenate([q0, v0])
    N, dt = int(rng.integers(2, 12)), float(rng.choice(DTS))
    frame = str(rng.choice(model.frame_names[1:]))
    target = rng.uniform(-1.0, 1.0, 3)
    magnitude = 10.0 ** rng.uniform(-1.0, 5.0)  # initial controls up to 1e5
    options = dict(substeps=int(rng.integers(1, 3)), us_init=rng.uniform(-magnitude, magnitude, (N, model.nv)))
    if rng.random() < 0.4:
        limit = rng.uniform(1.0, 200.0, model.nv)
        options.update(u_lower=-limit, u_upper=limit)
    kind = rng.choice(["free", "terminal", "sphere"], p=[0.6, 0.2, 0.2])
    if kind == "terminal":
        options["terminal_constraints"] = [StateEquality(np.concatenate([rng.uniform(-1, 1, model.nq),
                                                                         np.zeros(model.nv)]))]
    elif kind == "sphere":
        options["path_constraints"] = [SphereClearance(model, [(frame, (0.0, 0.0, 0.0))],
                                                       rng.uniform(-0.5, 0.5, 3), 0.2, 0.01)]
    return Problem(model, x0, N=N, dt=dt,
                   running_cost=StateCost(10.0 ** rng.uniform(-4, 0), x0)
                   + ControlCost(10.0 ** rng.uniform(-6, -1), nu=model.nv)
                   + FramePositionCost(model, frame, target, 10.0 ** rng.uniform(-1, 2)),
                   terminal_cost=FramePositionCost(model, frame, target, 10.0 ** rng.uniform(0, 4)),
                   name=f"fuzz-{seed}", **options)


@pytest.mark.parametrize("seed", range(CASES))
def test_every_solver_returns_an_honest_result(seed):
    prob = random_problem(seed)
    for solver in SOLVERS:
        res = solve(prob, solver, max_iter=25)
        what = f"seed {seed}, {solver}: {res.status} ({res.message})"
        assert res.status in STATUSES, what
        assert res.xs.shape == (prob.N + 1, prob.nx) and res.us.shape == (prob.N, prob.nu), what
        assert np.all(np.isfinite(res.us)), what
        assert res.converged == (res.status in ("converged", "acceptable")), what
        if res.status == "rollout_failed" and res.iterations == 0:
            assert solver != "ipopt" and np.array_equal(res.xs[0], prob.x0), what
            assert res.extra["rejected_guesses"] == ["problem", "rest"], what  # us_init is the problem's guess
        else:
            assert np.all(np.isfinite(res.xs)), what
            assert np.isfinite(res.cost), what
        if solver != "ipopt" and np.all(np.isfinite(res.xs)):  # single shooting: xs is the rollout of us
            assert np.allclose(prob.rollout(res.us), res.xs, rtol=1e-9, atol=1e-9), what


@pytest.mark.parametrize("kwargs, match", [
    (dict(dt=0.0), "dt"), (dict(dt=np.inf), "dt"), (dict(N=0), "N"), (dict(x0=[np.nan] * 4), "x0"),
    (dict(us_init=np.full((5, 2), np.inf)), "us_init"), (dict(substeps=0), "substeps"),
    (dict(u_lower=[1.0, 1.0], u_upper=[0.0, 0.0]), "u_lower"),
])
def test_invalid_problem_data_raises_value_error_at_construction(kwargs, match):
    model = dyn.models.serial_chain(2, seed=1)
    args = dict(model=model, x0=np.zeros(4), N=5, dt=0.1, running_cost=ControlCost(1.0, nu=2))
    with pytest.raises(ValueError, match=match):
        Problem(**{**args, **kwargs})
