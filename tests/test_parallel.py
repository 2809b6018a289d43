"""Batched kernels in parallel over knots: thread count, bitwise determinism, errors.

Results must not depend on the number of threads (each knot runs the same compiled code
whichever thread takes it), and an invalid knot must still raise ValueError naming it —
numba loses exceptions raised inside a parallel loop, so the kernels check first.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import dynamics as dyn
import optdyn
from dynamics import batch


def _knots(model: dyn.Model, K: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    Q = np.stack([dyn.random_configuration(model, rng) for _ in range(K)])
    return Q, rng.uniform(-1, 1, (K, model.nv)), rng.uniform(-1, 1, (K, model.nv))


@pytest.fixture(params=["ur5", "space_manipulator"])
def robot(request) -> dyn.Model:
    return getattr(dyn.models, request.param)()


@pytest.fixture
def threads():
    """Restores the thread count after the test."""
    n = dyn.get_num_threads()
    yield
    dyn.set_num_threads(n)


BATCHED = [batch.aba_batch, batch.aba_derivatives_batch, batch.rnea_derivatives_batch]


@pytest.mark.parametrize("func", BATCHED, ids=lambda f: f.__name__)
def test_results_are_bitwise_identical_for_any_thread_count(robot, func, threads):
    args = _knots(robot, 37)  # not a multiple of the thread count: uneven chunks
    dyn.set_num_threads(1)
    one = func(robot, *args)
    dyn.set_num_threads(2)
    two = func(robot, *args)
    for a, b in zip(np.atleast_1d(one) if isinstance(one, np.ndarray) else one,
                    np.atleast_1d(two) if isinstance(two, np.ndarray) else two):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("func", BATCHED, ids=lambda f: f.__name__)
def test_parallel_batch_equals_single_calls(robot, func, threads):
    """Every knot of a 2-thread batch equals the single-point function (workspaces reused
    along a chunk keep no state from one knot to the next)."""
    dyn.set_num_threads(2)
    Q, V, X = _knots(robot, 9, seed=1)
    single = {batch.aba_batch: dyn.aba, batch.aba_derivatives_batch: dyn.aba_derivatives,
              batch.rnea_derivatives_batch: dyn.rnea_derivatives}[func]
    out = func(robot, Q, V, X)
    for k in range(9):
        ref = single(robot, Q[k], V[k], X[k])
        got = out[k] if isinstance(out, np.ndarray) else [o[k] for o in out]
        for a, b in zip(got if isinstance(got, list) else [got], ref if isinstance(ref, tuple) else [ref]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _points(model: dyn.Model, Q, *_) -> tuple[np.ndarray, ...]:
    """Positions, Jacobians and Hessians of three points on the last three bodies' frames."""
    frames = [f.name for f in model.frames][-3:]
    return batch.point_kinematics_batch(model, Q, frames, np.full((3, 3), 0.05))


def test_point_kinematics_are_bitwise_identical_for_any_thread_count(robot, threads):
    Q = _knots(robot, 37)[0]
    dyn.set_num_threads(1)
    one = _points(robot, Q)
    dyn.set_num_threads(2)
    for a, b in zip(one, _points(robot, Q)):
        assert np.array_equal(a, b)


def test_invalid_knot_is_named_despite_the_parallel_loop(threads):
    dyn.set_num_threads(2)
    model = dyn.models.space_manipulator()
    Q, V, X = _knots(model, 6)
    Q[4, 3:7] *= 1.5  # quaternion of knot 4 off the unit sphere
    for func in BATCHED + [_points]:
        with pytest.raises(ValueError, match="Q: at knot.*4.*joint number.*0"):
            func(model, Q, V, X)


def test_massless_leaf_is_named_with_its_knot(threads):
    model = dyn.load_urdf("""<robot name="r"><link name="base"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/></joint>
      <link name="arm"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <joint name="j2" type="revolute"><parent link="arm"/><child link="tip"/><axis xyz="0 1 0"/></joint>
      <link name="tip"/></robot>""")
    dyn.set_num_threads(2)
    Q, V, X = _knots(model, 5)
    for func in (batch.aba_batch, batch.aba_derivatives_batch):
        with pytest.raises(ValueError, match="not positive definite.*at knot.*0"):
            func(model, Q, V, X)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None, 10**6])
def test_bad_thread_count_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^n: expected"):
        optdyn.set_num_threads(bad)


def test_thread_count_from_the_environment():
    code = "import dynamics as dyn; print(dyn.get_num_threads())"
    env = dict(os.environ, OPTDYN_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr
    env["OPTDYN_NUM_THREADS"] = "many"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "OPTDYN_NUM_THREADS: expected an integer" in out.stderr


WARM_SOLVES = """
import optdyn, problems
from optdyn.solvers import runtime
optdyn.set_num_threads(2)
for task in ("ur5-reach", "space-manipulator"):
    for solver in ("ddp", "ilqr", "ipopt"):
        optdyn.solve(problems.get(task), solver, max_iter=2)
print(runtime.COMPILATION.count)
"""


def test_solver_kernels_come_from_the_disk_cache():
    """Every kernel the solvers run on two threads (the parallel loops and DDP's split
    stage terms included) is cached on disk: a second process compiles nothing. A kernel
    numba cannot cache (one that reads the thread count, say) compiles in every process."""
    counts = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", WARM_SOLVES], capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr
        counts.append(int(out.stdout.split()[-1]))
    assert counts[1] == 0, f"compiled again in a warm process: {counts}"


@pytest.mark.parametrize("user, expected", [({}, dyn.parallel.SPIN_COUNT), ({"GOMP_SPINCOUNT": "123"}, "123"),
                                             ({"OMP_WAIT_POLICY": "passive"}, "unset")])
def test_openmp_spin_count_is_shortened_unless_the_user_chose(user, expected):
    """Importing dynamics shortens OpenMP's idle spinning (dynamics.parallel) and leaves a
    wait policy or spin count of the user's alone."""
    code = "import os, dynamics; print(os.environ.get('GOMP_SPINCOUNT', 'unset'))"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], env={**env, **user}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == expected, out.stderr


@pytest.mark.parametrize("task", ["ur5-reach", "space-manipulator", "arm-obstacle"])
def test_trajectory_derivatives_and_solves_identical_for_any_thread_count(task, threads):
    """Interval sensitivities, contracted Hessians, cost and constraint terms (chunks on
    parallel threads) and a whole DDP solve give bitwise the same numbers on 1 and 2
    threads."""
    import problems

    prob = problems.get(task)
    rng = np.random.default_rng(2)
    us = rng.uniform(-1, 1, (prob.N, prob.nu))
    xs = prob.rollout(us)
    lams = rng.normal(size=(prob.N, prob.ndx))
    out = {}
    for n in (1, 2):
        dyn.set_num_threads(n)
        A, B, stages = prob.step_stages(xs[:-1], us)
        res = optdyn.solve(prob, solver="ddp", max_iter=3)
        out[n] = [prob.step(xs[:-1], us), A, B, prob.step_hessians(xs[:-1], us, lams, stages),
                  *prob.step_derivatives(xs[:-1], us), *prob.running_cost_terms(xs[:-1], us),
                  *prob.path_constraint_terms(xs[1:]), res.xs, res.us]
    for a, b in zip(out[1], out[2]):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("K", [1, 2, 7, 37])
def test_run_chunks_takes_every_knot_once_and_raises_a_chunks_error(K, threads):
    """The chunks of the threads cover the knots exactly once, and an exception raised in
    any chunk (on any thread) reaches the caller."""
    from dynamics.parallel import run_chunks

    dyn.set_num_threads(2)
    seen = np.zeros(K, dtype=int)

    def kernel(out, k0, k1):
        out[k0:k1] += 1

    run_chunks(kernel, K, seen)
    assert np.array_equal(seen, np.ones(K, dtype=int))

    def failing(k0, k1):
        if k0 <= K - 1 < k1:
            raise ValueError(f"knot {K - 1}")

    with pytest.raises(ValueError, match=f"knot {K - 1}"):
        run_chunks(failing, K)


def test_invalid_state_is_refused_before_the_parallel_loops():
    import problems

    prob = problems.get("space-manipulator")
    xs = np.tile(prob.x0, (prob.N, 1))
    xs[3, 3:7] *= 2.0
    with pytest.raises(ValueError, match="^xs: the quaternion"):
        prob.step_stages(xs, np.zeros((prob.N, prob.nu)))


def _allocations(call) -> int:
    """NRT allocations (numba's array allocator) made by ``call()``, warm."""
    from numba.core.runtime import _nrt_python, rtsys

    call()
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats().alloc
        call()
        return rtsys.get_allocation_stats().alloc - before
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()


def _sweep_allocations(task: str, names=None) -> dict:
    """Allocations of the solvers' RK stage sweeps (rollout, first-order and recorded
    sensitivities, contracted Hessians, DDP's backward pass with each knot's stage terms in
    turn and in two halves on two threads, its forward pass; those in ``names`` if given) on
    ``task`` with 6 and with 12 knots. The chunk kernels are called directly (one thread);
    the split backward pass is the only parallel loop here and gets two threads."""
    import problems
    from optdyn.ocp import integrators as rk
    from optdyn.ocp import shooting
    from optdyn.solvers import ddp

    dyn.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    prob = problems.get(task)
    d, nz = prob.dynamics, prob.ndx + prob.nu
    counts = {}
    for N in (6, 12):
        us = np.ascontiguousarray(prob.us_init[:N])
        xs = shooting.rollout(d, prob.x0, us)
        X = np.ascontiguousarray(xs[:-1])
        y, Fz = np.empty((N, prob.nx)), np.empty((N, prob.ndx, nz))
        stages = rk.stage_records(d.ode, N * d.substeps * d.b.shape[0], prob.nx, nz, d.b.shape[0])
        lams, Hz = np.ones((N, prob.ndx)), np.empty((N, nz, nz))
        rk._step_derivatives_chunk(d, X, us, 1, y, Fz, np.empty((N, 0, 0, 0)), 0, N)
        k, K = np.zeros((N, prob.nu)), np.zeros((N, prob.nu, prob.ndx))
        zeros = (np.zeros((N, prob.ndx)), np.zeros((N, prob.nu)), np.zeros((N, prob.ndx, prob.ndx)),
                 np.zeros((N, prob.nu, prob.ndx)), np.eye(prob.nu)[None].repeat(N, 0))
        lq = ddp.Expansion(Fz[:, :, :prob.ndx].copy(), Fz[:, :, prob.ndx:].copy(), *zeros)
        terminal = ddp.Value(np.zeros(prob.ndx), np.eye(prob.ndx))
        calls = {
            "rollout": lambda: shooting.rollout(d, prob.x0, us),
            "first order": lambda: rk._step_derivatives_chunk(d, X, us, 1, y, Fz, np.empty((N, 0, 0, 0)), 0, N),
            "recorded stages": lambda: rk._step_stages_chunk(d, X, us, stages, y, Fz, 0, N),
            "contracted Hessians": lambda: rk._interval_hessians_chunk(d, us, stages, lams, Hz, 0, N),
            **{f"DDP backward pass{', split' if split else ''}": functools.partial(
                ddp.backward_pass, lq, terminal, us, prob.u_lower, prob.u_upper, 1.0,
                ddp.SecondOrder(1, np.empty((N, 0, 0, 0)), d, stages, split), k, K, np.zeros((0, prob.ndx)))
            for split in (False, True)},
            "DDP forward pass": lambda: ddp.forward_pass(d, xs, us, np.zeros_like(k), np.zeros_like(K), 0.5,
                                                         prob.u_lower, prob.u_upper,
                                                         np.empty_like(xs), np.empty_like(us), np.zeros((0, prob.ndx))),
        }
        counts[N] = {name: _allocations(call) for name, call in calls.items() if names is None or name in names}
    return counts


def test_stage_sweeps_allocate_nothing_per_knot(threads):
    """On a fixed base every stage sweep makes its workspace once per call: twice the
    knots, the same number of allocations."""
    counts = _sweep_allocations("ur5-reach")
    assert counts[6] == counts[12]


def test_floating_base_sweeps_allocate_nothing_per_knot(threads):
    """On the space manipulator the group compositions (x ⊕ W, their integrate Jacobians
    and curvature, in the forward sweeps and in the second-order adjoint) and the state
    differences of DDP's forward pass work in scratch made once per call: no sweep
    allocates per knot either."""
    counts = _sweep_allocations("space-manipulator")
    assert counts[6] == counts[12]
