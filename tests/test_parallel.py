"""Batched kernels in parallel over knots: thread count, bitwise determinism, errors.

Results must not depend on the number of threads (each knot runs the same compiled code
whichever thread claims it), an invalid knot must still raise ValueError naming it, and the
policy's choices hold: more chunks than threads, a caller that does the work of pool threads
that do not run, and a caller that waits for chunks still being written.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from numba import njit

import dynamics as dyn
import optdyn
from dynamics import batch, parallel
from dynamics.parallel import (chunks_done, claims_for, first_chunk, next_chunk, relay_claim, relay_finish, relay_opens,
                               relay_over, relay_release, relay_stop, run_chunks)

# 189 s on a cold cache alone, 27 s of it waiting on test_contact_force_residuals' compile of the
# callees its IPOPT trot shares; 23 s after that file's (2026-11-30): the conftest's cost.
pytestmark = pytest.mark.cost(23)


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


POOL_THREADS = """
import sys, threading
import optdyn, problems
from dynamics import parallel
parallel.set_num_threads(int(sys.argv[1]))
before = sum(t.name.startswith("optdyn") for t in threading.enumerate())
if sys.argv[2] == "mpc":
    optdyn.MPC(problems.get("pendulum"), "ilqr", 1)  # the controller starts them, before its loop
else:
    parallel.start_pool()
print(before, sum(t.name.startswith("optdyn") for t in threading.enumerate()))
"""


@pytest.mark.parametrize("how", ["start_pool", "mpc"])
def test_the_pool_threads_start_before_a_controllers_loop(how):
    """A fresh process has no pool thread; after start_pool, or an MPC's construction, it has
    them all (one fewer than the cores), not at the first call heavy enough to share, which in
    a closed loop falls inside a step; with one thread, none."""
    workers = max(1, parallel.max_threads() - 1)
    for n, expected in ((2, workers), (1, 0)):
        if n > parallel.max_threads():
            continue
        out = subprocess.run([sys.executable, "-c", POOL_THREADS, str(n), how], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[-2:] == ["0", str(expected)], out.stdout


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
    """Every kernel the solvers run on two threads (the chunk kernels with their atomic
    claims included) is cached on disk: a second process compiles nothing. A kernel numba
    cannot cache (one that reads the thread count, say) compiles in every process."""
    counts = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", WARM_SOLVES], capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr
        counts.append(int(out.stdout.split()[-1]))
    assert counts[1] == 0, f"compiled again in a warm process: {counts}"


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


@njit(nogil=True)
def _count_knots(seen, claims):
    """seen[k] += 1 at every knot the thread claims."""
    k0, k1 = first_chunk(claims)
    while k0 < k1:
        for k in range(k0, k1):
            seen[k] += 1
        k0, k1 = next_chunk(claims)


@njit(nogil=True)
def _fail_at(bad, seen, claims):
    """:func:`_count_knots`, raising ValueError at knot ``bad``."""
    k0, k1 = first_chunk(claims)
    while k0 < k1:
        for k in range(k0, k1):
            if k == bad:
                raise ValueError("the bad knot")
            seen[k] += 1
        k0, k1 = next_chunk(claims)


@pytest.mark.parametrize("K", [1, 2, 7, 37])
def test_run_chunks_takes_every_knot_once_and_raises_a_chunks_error(K, threads):
    """The chunks the threads claim cover the knots exactly once, and an exception raised in
    any chunk (on any thread) reaches the caller."""
    dyn.set_num_threads(2)
    seen = np.zeros(K, dtype=np.int64)
    run_chunks(_count_knots, K, seen)
    assert np.array_equal(seen, np.ones(K, dtype=np.int64))
    for bad in {0, K - 1}:
        with pytest.raises(ValueError, match="the bad knot"):
            run_chunks(_fail_at, K, bad, np.zeros(K, dtype=np.int64))


@pytest.mark.parametrize("K, threads_, chunks", [(80, 1, 1), (80, 2, 2 * parallel.CHUNKS_PER_THREAD),
                                                 (3, 2, 3), (1, 2, 1), (80, 4, 4 * parallel.CHUNKS_PER_THREAD)])
def test_knots_are_split_into_more_chunks_than_threads_at_most_one_per_knot(K, threads_, chunks):
    assert parallel.chunk_count(K, threads_) == chunks
    claims = parallel.claims_for(K, chunks)
    spans = []
    k0, k1 = first_chunk(claims)
    while k0 < k1:
        spans.append((k0, k1))
        k0, k1 = next_chunk(claims)
    assert [k for a, b in spans for k in range(a, b)] == list(range(K)) and len(spans) == chunks
    assert claims[parallel.DONE] == chunks


def test_the_caller_does_the_work_of_pool_threads_that_do_not_run(threads):
    """With every pool thread held back (busy with something else: the situation of a thread
    the scheduler gives to another program), run_chunks on 2 threads returns with every knot
    done by the calling thread alone; it does not wait for them. A pool thread that starts
    afterwards finds nothing left to claim."""
    dyn.set_num_threads(2)
    pool, release = parallel._pool(os.getpid()), threading.Event()
    held = [pool.submit(release.wait) for _ in range(parallel.max_threads())]
    try:
        seen = np.zeros(37, dtype=np.int64)
        run_chunks(_count_knots, 37, seen)
        assert np.array_equal(seen, np.ones(37, dtype=np.int64))
        assert not any(f.done() for f in held)
    finally:
        release.set()
    for f in held:
        f.result(timeout=60)
    assert np.array_equal(seen, np.ones(37, dtype=np.int64))


def test_run_chunks_waits_for_a_chunk_a_pool_thread_is_still_writing(threads):
    """The caller returns only once every claimed chunk is written: a pool thread's chunk
    that takes long (a Python kernel sleeping while it holds its chunk) is waited for."""
    dyn.set_num_threads(2)
    started, seen = threading.Event(), np.zeros(8, dtype=np.int64)

    def kernel(claims):
        if threading.current_thread() is threading.main_thread():
            assert started.wait(timeout=60)  # a pool thread holds a chunk before the caller starts
        k0, k1 = first_chunk(claims)
        while k0 < k1:
            if threading.current_thread() is not threading.main_thread():
                started.set()
                time.sleep(0.2)
            seen[k0:k1] += 1
            k0, k1 = next_chunk(claims)

    run_chunks(kernel, 8)
    assert np.array_equal(seen, np.ones(8, dtype=np.int64))


def test_invalid_state_is_refused_before_the_parallel_loops():
    import problems

    prob = problems.get("space-manipulator")
    xs = np.tile(prob.x0, (prob.N, 1))
    xs[3, 3:7] *= 2.0
    with pytest.raises(ValueError, match="^xs: the quaternion"):
        prob.step_stages(xs, np.zeros((prob.N, prob.nu)))


def _allocations(call) -> int:
    """NRT allocations (numba's array allocator) made by ``call()``, warm: the fewest over three
    calls, numba's count being the process's (a thread still running in it, from an earlier
    test, can only add to a call's count; the suite's CI run of 2026-11-30 once saw 15 more)."""
    from numba.core.runtime import _nrt_python, rtsys

    call()
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        counts = []
        for _ in range(3):
            before = rtsys.get_allocation_stats().alloc
            call()
            counts.append(rtsys.get_allocation_stats().alloc - before)
        return min(counts)
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()


def _sweep_allocations(task: str, names=None) -> dict:
    """Allocations of the solvers' RK stage sweeps (rollout, first-order and recorded
    sensitivities, contracted Hessians, DDP's backward and forward passes; those in ``names``
    if given) on ``task`` with 6 and with 12 knots. The chunk kernels are called directly,
    over all knots on the calling thread (DDP's backward pass, whose threads take parts of
    a knot, on one thread)."""
    import problems

    dyn.set_num_threads(1)
    from optdyn.ocp import integrators as rk
    from optdyn.ocp import shooting
    from optdyn.solvers import ddp, riccati

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
        rk._step_derivatives_chunk(d, X, us, y, Fz, np.empty((N, 0, 0, 0)), claims_for(N))
        k, K = np.zeros((N, prob.nu)), np.zeros((N, prob.nu, prob.ndx))
        zeros = (np.zeros((N, prob.ndx)), np.zeros((N, prob.nu)), np.zeros((N, prob.ndx, prob.ndx)),
                 np.zeros((N, prob.nu, prob.ndx)), np.eye(prob.nu)[None].repeat(N, 0))
        lq = riccati.Expansion(Fz[:, :, :prob.ndx].copy(), Fz[:, :, prob.ndx:].copy(), *zeros)
        terminal = riccati.Value(np.zeros(prob.ndx), np.eye(prob.ndx))
        calls = {
            "rollout": lambda: shooting.rollout(d, prob.x0, us),
            "first order": lambda: rk._step_derivatives_chunk(d, X, us, y, Fz, np.empty((N, 0, 0, 0)), claims_for(N)),
            "recorded stages": lambda: rk._step_stages_chunk(d, X, us, stages, y, Fz, claims_for(N)),
            "contracted Hessians": lambda: rk._interval_hessians_chunk(d, us, stages, lams, Hz, claims_for(N)),
            "DDP backward pass": functools.partial(
                riccati.backward_pass, lq, terminal, us, prob.u_lower, prob.u_upper, 1.0,
                riccati.SecondOrder(1, np.empty((N, 0, 0, 0)), d, stages, riccati.NOT_KEPT), k, K,
                np.zeros((0, prob.ndx))),
            "DDP forward pass": lambda: ddp.forward_pass(d, xs, us, np.zeros_like(k), np.zeros_like(K), 0.5,
                                                         prob.u_lower, prob.u_upper,
                                                         np.empty_like(xs), np.empty_like(us), np.zeros((0, prob.ndx)),
                                                         parallel.UNMARKED),
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


@pytest.mark.parametrize("K, threads_, seconds_per_knot, team", [
    (50, 2, None, 2),  # never called: shared
    (50, 2, 0.7e-6, 1),  # a few feet's positions: 35 µs of work, below the hand-off's worth
    (50, 2, 20e-6, 2),  # 1 ms of work
    (1, 2, 1.0, 1),  # one knot, one thread
    (50, 1, 1.0, 1)])
def test_light_calls_run_on_the_caller_alone(K, threads_, seconds_per_knot, team):
    assert parallel.team_size(K, threads_, seconds_per_knot) == team


def test_run_chunks_learns_which_kernels_are_too_light_to_share(threads, monkeypatch):
    """A kernel's first call is shared; once it has been measured, a light kernel is run as
    one chunk on the caller, a heavy one is still split between the threads. The bound is
    raised to 50 ms, far from both: a pool thread's measured time includes its wait for the
    GIL, which the light Python kernel's caller holds (up to the 5 ms switch interval; with the
    0.2 ms default the light kernel was shared again in about 1 run of 20 on a busy machine)."""
    dyn.set_num_threads(2)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_SECONDS", 0.05)

    def kernel(spans, seconds, claims):
        k0, k1 = first_chunk(claims)
        while k0 < k1:
            if seconds:  # (a sleep, even of 0 s, hands the GIL over and waits to take it back)
                time.sleep(seconds * (k1 - k0))
            spans.append((k0, k1))
            k0, k1 = next_chunk(claims)

    run_chunks(functools.partial(kernel), 16, [], 0.0)  # first_chunk's dispatch from Python, typed once
    light, heavy = functools.partial(kernel), functools.partial(kernel)  # two kernels, measured apart
    for kernel_, seconds in ((light, 0.0), (heavy, 5e-3)):  # heavy: 80 ms of sleep a call
        for call in range(2):
            spans = []
            run_chunks(kernel_, 16, spans, seconds)
            assert sorted(k for a, b in spans for k in range(a, b)) == list(range(16))
            if call == 0 or kernel_ is heavy:
                assert len(spans) == 2 * parallel.CHUNKS_PER_THREAD
            else:
                assert spans == [(0, 16)]


def test_a_call_begun_ahead_runs_on_a_pool_thread_or_on_the_caller(threads):
    """Lookahead: with a pool thread free the call runs there and the caller takes its result;
    with every pool thread held back the caller runs it itself (it never waits for a thread
    that does not run), and the pool thread that comes free later does not run it again;
    with one thread nothing runs before the result is asked for. An exception of the call
    reaches the caller, and settle() returns only once a running call has finished."""
    ran = []

    def call(x):
        ran.append(threading.current_thread() is threading.main_thread())
        if x < 0:
            raise ValueError("negative")
        time.sleep(0.05)
        return 2 * x

    dyn.set_num_threads(2)
    ahead = parallel.Lookahead(call, 3)
    ahead.future.result(timeout=60)
    assert ahead.result() == 6 and ran == [False]
    pool, release = parallel._pool(os.getpid()), threading.Event()
    held = [pool.submit(release.wait) for _ in range(parallel.max_threads())]
    try:
        ahead = parallel.Lookahead(call, 4)
        assert ahead.result() == 8 and ran == [False, True]
    finally:
        release.set()
    for f in held:
        f.result(timeout=60)
    ahead.settle()
    assert ran == [False, True]
    with pytest.raises(ValueError, match="negative"):
        parallel.Lookahead(call, -1).result()
    running = parallel.Lookahead(call, 5)
    while not running.future.running() and not running.future.done():
        time.sleep(0.001)
    running.settle()
    assert running.future.done()
    dyn.set_num_threads(1)
    ran.clear()
    lazy = parallel.Lookahead(call, 1)
    assert ran == [] and lazy.future is None and lazy.result() == 2 and ran == [True]


@njit(nogil=True)
def _write_knots(written, claims, pause):
    """written[k] = k + 10 for k in order, each marked ready after ``pause`` cycles of work."""
    for k in range(written.shape[0]):
        start = parallel._cycles()
        while parallel._cycles() - start < pause:
            pass
        written[k] = k + 10
        parallel.mark_ready(claims)


@njit(nogil=True)
def _follow_knots(written, seen, claims):
    """seen[k] = written[k] + 1 at every knot the thread claims."""
    k0, k1 = first_chunk(claims)
    while k0 < k1:
        for k in range(k0, k1):
            seen[k] = written[k] + 1
        k0, k1 = next_chunk(claims)


@pytest.mark.parametrize("threads_", [1, 2])
def test_a_call_begun_ahead_of_its_inputs_reads_each_knot_once_it_is_written(threads_, threads):
    """Ahead: the pool thread takes only knots the writer has marked (none reads the −1 a
    knot holds before it is written), the join does the rest, every knot once; with one
    thread the join does all of them. A cancelled call returns with nothing left running and
    nothing written past the knots marked."""
    dyn.set_num_threads(threads_)
    K = 40
    written, seen = np.full(K, -1, dtype=np.int64), np.zeros(K, dtype=np.int64)
    ahead = parallel.Ahead(K)
    ahead.start(_follow_knots, K, written, seen)
    _write_knots(written, ahead.claims, 20_000)
    ahead.join()
    assert np.array_equal(seen, np.arange(K) + 11)
    written[:], seen[:] = -1, 0
    ahead = parallel.Ahead(K)
    ahead.start(_follow_knots, K, written, seen)
    _write_knots(written[:5], ahead.claims, 0)
    ahead.cancel()
    assert np.all(seen[5:] == 0) and set(seen[:5]) <= {0} | set(range(11, 16))
    with pytest.raises(ValueError, match="K: expected the 40 knots"):
        parallel.Ahead(K).start(_follow_knots, K + 1, written, seen)


@pytest.mark.parametrize("threads_", [1, 2])
def test_a_call_begun_ahead_of_its_use_is_worked_through_by_a_pool_thread(threads_, threads):
    """Ahead(written=True): every knot's inputs are written already. On two threads a pool
    thread begins the call (begun) and takes every knot while the caller is elsewhere (here
    asleep), so that the join finds nothing left; on one thread nothing is begun and the join
    takes every knot. Either way each knot once."""
    dyn.set_num_threads(threads_)
    K = 40
    written, seen = np.arange(K), np.zeros(K, dtype=np.int64)
    ahead = parallel.Ahead(K, written=True)
    ahead.start(_follow_knots, K, written, seen)
    assert ahead.begun(timeout=60 if threads_ == 2 else 1e-3) == (threads_ == 2)
    deadline = time.monotonic() + 60
    while threads_ == 2 and ahead.claims[parallel.DONE] < K and time.monotonic() < deadline:
        time.sleep(1e-3)
    assert ahead.claims[parallel.DONE] == (K if threads_ == 2 else 0)
    ahead.join()
    assert np.array_equal(seen, written + 1) and ahead.claims[parallel.DONE] == K


def test_ipopt_jacobian_begun_at_a_trial_point_changes_no_iterate(threads, monkeypatch):
    """IPOPT on two threads begins the first-order pass on a pool thread when it evaluates a
    trial point's constraints, its contact forces kept apart: taken at the Jacobian of a trial
    IPOPT accepts, dropped at one it rejects. On the trot (whose cone rows read the forces the
    pass keeps) every iterate and multiplier is bitwise that of one thread, where nothing is
    begun ahead, and the rows compute no forces of their own on either (the forces kept are
    the problem's once the pass is taken)."""
    import problems
    from optdyn.ocp import contact_phases
    from optdyn.solvers.ipopt import MultipleShootingNLP

    joined, dropped, passes = [], [], []
    forces = contact_phases.knot_forces_batch
    monkeypatch.setattr(contact_phases, "knot_forces_batch", lambda *a: passes.append(None) or forces(*a))
    join, settle = MultipleShootingNLP._joined, MultipleShootingNLP.settle
    monkeypatch.setattr(MultipleShootingNLP, "_joined", lambda nlp: joined.append(nlp._ahead) or join(nlp))
    monkeypatch.setattr(MultipleShootingNLP, "settle", lambda nlp: dropped.append(nlp._ahead) or settle(nlp))
    prob = problems.get("quadruped", scenario="trot")
    runs = {}
    for n in (1, 2):
        dyn.set_num_threads(n)
        joined.clear(), dropped.clear()
        runs[n] = optdyn.solve(prob, "ipopt", max_iter=12)
        begun = (sum(a is not None for a in joined), sum(a is not None for a in dropped))
        assert begun == (0, 0) if n == 1 else begun[0] >= 10 and begun[1] >= 1, begun
        assert passes == []
    one, two = runs[1], runs[2]
    assert one.iterations == two.iterations == 12
    assert np.array_equal(one.xs, two.xs) and np.array_equal(one.us, two.us)
    assert np.array_equal(one.history["cost"], two.history["cost"])
    for key, value in one.extra["multipliers"].items():
        assert np.array_equal(value, two.extra["multipliers"][key]), key


def test_a_chunk_not_written_is_left_after_a_bounded_wait():
    """A thread finds no knot of its next chunk written for RELAY_WAIT cycles: it claims
    nothing and leaves (the caller that writes them does them)."""
    claims = parallel.claims_for(8, 8)
    claims[parallel.READY] = 3
    seen = np.zeros(8, dtype=np.int64)
    _follow_knots(np.arange(8), seen, claims)
    assert np.array_equal(seen, [1, 2, 3, 0, 0, 0, 0, 0]) and claims[parallel.NEXT] == 3


def test_line_search_begun_ahead_takes_the_same_steps_on_any_thread_count(threads):
    """The trot's iLQR on its pyramids in newtons, its steps as the first backward pass gives
    them (``active_set_rounds=0``), backtracks (steps shorter than 1, down to 0.25 in 14
    iterations; with the rows its steps cross, or in units of the weight, the task's, it takes
    none shorter than 0.5), so that rollouts are begun ahead on a pool thread with two
    threads: every iterate, step length and cost is bitwise the one of one thread, and a
    second solve in the same workspace (after a rollout begun ahead was abandoned) too; each
    result's cost is that of its own trajectory, whose states are the rollout of its controls
    (the spare arrays changed roles rightly)."""
    import problems
    from legged_rows import in_newtons
    from optdyn.solvers.workspace import Workspace

    prob = in_newtons(problems.get("quadruped", scenario="trot"))
    runs = {}
    for n in (1, 2):
        dyn.set_num_threads(n)
        ws = Workspace(prob)
        first = optdyn.solve(prob, "ilqr", max_iter=14, workspace=ws, active_set_rounds=0)
        again = optdyn.solve(prob, "ilqr", max_iter=3, init=first, workspace=ws, active_set_rounds=0)
        runs[n] = (first, again)
    steps = runs[1][0].history["step"]
    assert np.any((steps > 0) & (steps < 0.5))  # rollouts begun ahead were taken, others abandoned
    for a, b in zip(runs[1], runs[2]):
        assert a.cost == pytest.approx(prob.cost(a.xs, a.us), rel=1e-12)
        assert np.allclose(prob.rollout(a.us), a.xs, rtol=0, atol=1e-9)
        assert np.array_equal(a.xs, b.xs) and np.array_equal(a.us, b.us)
        for key in ("cost", "step", "regularization"):
            assert np.array_equal(a.history[key], b.history[key]), key


def test_the_callers_own_work_runs_while_the_pool_threads_take_the_chunks(threads):
    """meanwhile: on two threads the caller's own work runs on the caller while a pool thread
    claims chunks (here the work waits for a chunk only a pool thread can have taken, which
    it could not do after the kernel), once, and every knot is still taken once."""
    dyn.set_num_threads(2)
    caller, taken = threading.main_thread(), threading.Event()

    def kernel(seen, claims):
        k0, k1 = first_chunk(claims)
        while k0 < k1:
            time.sleep(1e-3)  # (work worth sharing; the sleep hands the GIL over)
            if threading.current_thread() is not caller:
                taken.set()
            seen[k0:k1] += 1
            k0, k1 = next_chunk(claims)

    run_chunks(kernel, 16, np.zeros(16, dtype=np.int64))  # its first call: measured, on both threads
    taken.clear()
    ran = []

    def own():
        ran.append(threading.current_thread() is caller)
        assert taken.wait(timeout=60)

    seen = np.zeros(16, dtype=np.int64)
    with parallel.meanwhile(own):
        run_chunks(kernel, 16, seen)
        assert ran == [True]
        run_chunks(kernel, 16, seen)  # a second call in the block has nothing to do meanwhile
    assert ran == [True] and np.array_equal(seen, 2 * np.ones(16, dtype=np.int64))


def test_the_callers_own_work_comes_first_on_one_thread_or_at_a_first_call_and_at_the_end_without_a_call(threads):
    """meanwhile's order where nothing runs beside it: before the kernel on one thread and at
    a kernel's first call (which may compile it), at the block's end where no call was made,
    never where the block raised."""
    def kernel(order, claims):
        k0, k1 = first_chunk(claims)
        while k0 < k1:
            order.append("kernel")
            k0, k1 = next_chunk(claims)

    dyn.set_num_threads(1)
    run_chunks(kernel, 4, [])  # measured: its next call is not its first
    for n, kernel_ in ((2, functools.partial(kernel)), (1, kernel)):  # a first call on two threads, one on one
        dyn.set_num_threads(n)
        order = []
        with parallel.meanwhile(lambda: order.append("own")):
            run_chunks(kernel_, 4, order)
        assert order[0] == "own" and order.count("own") == 1 and len(order) > 1
    order = []
    with parallel.meanwhile(lambda: order.append("own")):
        order.append("block")
    assert order == ["block", "own"]
    with pytest.raises(KeyError), parallel.meanwhile(lambda: order.append("never")):
        raise KeyError("the block's")
    assert "never" not in order


def test_an_error_of_the_callers_own_work_is_raised_once_the_pool_threads_have_stopped(threads):
    """An exception raised by the caller's own work reaches the caller after the pool
    threads have left the kernel: nothing is written into the outputs afterwards."""
    dyn.set_num_threads(2)

    def kernel(seen, claims):
        k0, k1 = first_chunk(claims)
        while k0 < k1:
            time.sleep(0.01)  # (hands the GIL over: the caller's work starts meanwhile)
            seen[k0:k1] += 1
            k0, k1 = next_chunk(claims)

    run_chunks(kernel, 8, np.zeros(8, dtype=np.int64))

    def own():
        raise ValueError("the caller's own")

    seen = np.zeros(8, dtype=np.int64)
    with pytest.raises(ValueError, match="the caller's own"), parallel.meanwhile(own):
        run_chunks(kernel, 8, seen)
    written = seen.copy()
    time.sleep(0.05)
    assert np.array_equal(seen, written) and set(seen) <= {0, 1}


def test_the_trot_with_costs_on_its_forces_takes_the_same_steps_on_any_thread_count(threads):
    """The trot with its pyramids as costs on the contact forces, beside costs that read none:
    the latter expanded while the pool threads linearise, the former after. iLQR's iterates,
    step lengths and costs are bitwise those of one thread."""
    _same_steps_on_one_and_two_threads("ilqr", cone="cost")


def test_the_mpc_warm_start_is_linearised_as_it_rolls_out_and_takes_the_same_steps(threads, monkeypatch):
    """MPC on the trot (iLQR, one iteration per step, the feedback policy's warm start from
    measured states off the plan): on two threads every step's solve after the first takes the
    linearisation that followed the warm start's rollout (``Workspace.followed`` joins it), on
    one none is begun; the controls, gains and plans are bitwise those of one thread."""
    import problems
    from optdyn.solvers.workspace import Workspace

    joined = []
    followed = Workspace.followed

    def spy(self, *args):
        out = followed(self, *args)
        joined.append(out is not None)
        return out
    monkeypatch.setattr(Workspace, "followed", spy)
    prob = problems.get("quadruped", scenario="trot", cone="cost")
    runs = {}
    for n in (1, 2):
        dyn.set_num_threads(n)
        mpc, x, steps = optdyn.MPC(prob, "ilqr", 1, horizon=12), prob.x0, []
        for i in range(4):
            u, K = mpc.step(x, i * prob.dt)
            if i == 0:
                joined.clear()  # the first solve's own searches
            steps.append((u, K, mpc.result.xs))
            x = mpc.result.xs[1].copy()
            x[prob.model.nq:] += 0.01 * (i + 1)  # measured off the plan
        runs[n] = steps, list(joined)
    assert runs[1][1] == [False] * 3 and runs[2][1] == [True] * 3
    for a, b in zip(runs[1][0], runs[2][0]):
        assert all(np.array_equal(p, q) for p, q in zip(a, b))


def _same_steps_on_one_and_two_threads(solver: str, iterations: int = 4, **params) -> None:
    """``iterations`` of ``solver`` on the trot (``params``) on one and on two threads: the
    same iterates, gains, costs, step lengths, regularisations and model decreases, bitwise."""
    import problems

    prob = problems.get("quadruped", scenario="trot", **params)
    runs = {}
    for n in (1, 2):
        dyn.set_num_threads(n)
        runs[n] = optdyn.solve(prob, solver, max_iter=iterations)
    a, b = runs[1], runs[2]
    assert np.array_equal(a.xs, b.xs) and np.array_equal(a.us, b.us) and np.array_equal(a.gains, b.gains)
    for key in ("cost", "step", "regularization", "expected_decrease"):
        assert np.array_equal(a.history[key], b.history[key]), key


@njit(nogil=True)
def _relay_chain(x, parts, values, bought, relay, claims):
    """A relay over len(x) groups of ``parts`` items: item j of group g writes
    bought[g, j] = v·x[g] + j from the value v the group before left, and the thread that
    finishes a group's last item sets values[g] = Σ_j bought[g, j] (the next group's v):
    each group depends on the whole of the one before, as the knots of a backward pass."""
    G = x.shape[0]
    if relay_over(relay, G * parts):
        return
    if relay_opens(relay):
        relay_release(relay, parts)
    while True:
        i = relay_claim(relay, G * parts)
        if i < 0:
            return
        g, j = i // parts, i % parts
        v = 1.0 if g == 0 else values[g - 1]
        bought[g, j] = v * x[g] + j
        if relay_finish(relay, (g + 1) * parts):
            values[g] = bought[g].sum()
            if g + 1 == G:
                chunks_done(claims)
                return
            relay_release(relay, parts)


def _sequential_chain(x, parts):
    values, v = [], 1.0
    for g in range(len(x)):
        v = sum(v * x[g] + j for j in range(parts))
        values.append(v)
    return np.array(values)


@pytest.mark.parametrize("threads_", [1, 2])
def test_a_relay_runs_every_item_once_each_group_after_the_one_before(threads_, threads):
    """Groups whose items depend on the whole group before (a knot's parts on the knot after):
    on one or two threads every item runs once, each group closes after the one before, and
    the values are those of a plain loop."""
    x = np.linspace(0.5, 1.5, 40)
    dyn.set_num_threads(threads_)
    for parts in (1, 2, 3):
        values, bought, relay = np.zeros(40), np.zeros((40, parts)), parallel.new_relay()
        run_chunks(_relay_chain, 40, x, parts, values, bought, relay)
        assert np.array_equal(values, _sequential_chain(x, parts))
        assert relay[parallel.RELAY_FINISHED] == relay[parallel.RELAY_NEXT] == 40 * parts


def test_a_relay_runs_on_the_caller_alone_when_the_pool_threads_do_not_run(threads):
    """With every pool thread held back, a relay on two threads is done by the caller alone,
    which neither waits for them nor leaves work to them; one that starts afterwards finds
    nothing to claim and writes nothing."""
    dyn.set_num_threads(2)
    x = np.linspace(0.5, 1.5, 30)
    pool, release = parallel._pool(os.getpid()), threading.Event()
    held = [pool.submit(release.wait) for _ in range(parallel.max_threads())]
    try:
        values, bought, relay = np.zeros(30), np.zeros((30, 2)), parallel.new_relay()
        run_chunks(_relay_chain, 30, x, 2, values, bought, relay)
        assert np.array_equal(values, _sequential_chain(x, 2))
        assert relay[parallel.RELAY_OPENED] == 1 and not any(f.done() for f in held)
    finally:
        release.set()
    for f in held:
        f.result(timeout=60)
    written = values.copy()
    time.sleep(0.05)
    assert np.array_equal(values, written)


def test_a_relay_thread_claims_only_released_items_and_waits_a_bounded_time():
    """An item is claimed once released, and once only; a thread waiting for a release
    leaves after :data:`RELAY_WAIT` cycles (to the thread that holds the work) instead of
    spinning on; a stopped relay gives nothing more."""
    relay = parallel.new_relay()
    start = time.perf_counter()
    assert relay_claim(relay, 4) == -1  # nothing released: leaves after the bounded wait
    assert time.perf_counter() - start < 1.0
    relay_release(relay, 2)
    assert [relay_claim(relay, 4), relay_claim(relay, 4), relay_claim(relay, 4)] == [0, 1, -1]
    relay_release(relay, 2)
    assert relay_claim(relay, 4) == 2
    relay_stop(relay)
    assert relay_claim(relay, 4) == -1
    assert relay[parallel.RELAY_NEXT] == 3


def test_ddp_on_the_trot_takes_the_same_steps_on_any_thread_count(threads):
    """DDP's backward pass shares each knot's contracted V'_x·F_zz between two threads (a
    relay): on the trot (contact phases, impulses, a floating base) its iterates, gains and
    model decreases are bitwise those of one thread (eight iterations: over four, a pass whose
    parts were summed otherwise on one thread than on two still passed)."""
    _same_steps_on_one_and_two_threads("ddp", 8)
