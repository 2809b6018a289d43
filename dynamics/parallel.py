"""Evaluation over the knots of a trajectory on several threads: the thread policy.

A batched evaluation (the interval sensitivities, the contact dynamics, the point
kinematics, IPOPT's Hessian blocks, … at every knot) is one compiled *chunk kernel*
compiled with ``nogil=True``, run by :func:`run_chunks` on the calling thread and on
``get_num_threads() - 1`` pool threads at once. The policy, chosen so that the default is
never slower than one thread, on an idle machine or beside other programs:

- **Chunks taken dynamically.** The K knots are split into more chunks than threads
  (:func:`chunk_count`: :data:`CHUNKS_PER_THREAD` per thread). Every participating thread
  claims the next chunk with an atomic increment inside the compiled kernel
  (:func:`first_chunk`, :func:`next_chunk`) until none is left. The calling thread takes
  part from the start: if a pool thread is not running (the scheduler gave its core to
  another program), the caller does its chunks, and a pool thread that starts late finds
  nothing left to do.
- **No spinning** over chunks. The caller waits only for chunks a pool thread has claimed
  and not yet finished, blocked on a condition (the operating system's futex): a waiting
  thread gives its core to the thread it waits for instead of burning it. Pool threads sleep
  between evaluations. The one bounded spin is a relay's (below).
- **Parallel only where it pays.** Handing chunks to a pool thread (waking it, waiting for
  its last chunk) costs some 50 µs. :func:`run_chunks` records each kernel's work per knot
  (the seconds its threads spent inside it) at every call; a call whose work is below
  :data:`MIN_PARALLEL_SECONDS` runs on the calling thread alone (the point kinematics of a
  few feet at 50 knots: 35 µs on one thread, 70 µs on two before this rule).
- **One mechanism.** Every parallel evaluation over knots goes through :func:`run_chunks`;
  there are no OpenMP (numba ``prange``) loops. The other uses of the pool threads:
  :class:`Lookahead`, a whole call begun on a pool thread before the caller knows it will
  need it (the line search's next rollout), which the caller runs itself if no pool thread
  has started it; and the *relay*, a :func:`run_chunks` kernel whose knots depend on each
  other (DDP's backward pass) but whose knots come in parts that threads take at once (each
  knot's V'_x·F_zz): items are claimed once released (:func:`relay_claim`), the thread that
  finishes a knot's last part (:func:`relay_finish`) does the rest of the knot and releases
  the next one's parts (:func:`relay_release`). Between releases a thread spins — a part is
  some 0.1 ms and the rest of a knot less, not much longer than a wake-up from a futex — but at most
  :data:`RELAY_WAIT` cycles, and only for a release, never for a part another thread
  claimed: a thread the scheduler holds back leaves nothing the other waits for, and a
  thread that waited too long leaves the kernel to the thread that holds the work. Last, a
  :func:`run_chunks` call begun :class:`Ahead` of its inputs (the linearisation of a line
  search's trial while the caller's rollout writes it): a chunk is claimed only once the
  writer has marked its knots (:func:`mark_ready`, :data:`READY`), with the same bounded
  wait, and the caller joins it for the chunks left; or begun ahead of the caller's need for
  its outputs, its inputs all written (IPOPT's Jacobian at a trial point, which the pool
  thread works through while IPOPT's own code decides whether to accept the trial).
- **The caller's own work meanwhile.** Work of the calling thread that does not depend on a
  kernel's outputs (a solver's cost expansion, Python holding the GIL, beside the
  linearisation's nogil kernel) is given as :func:`meanwhile`: the caller does it after
  handing the kernel's chunks to the pool threads (and seeing one begin, or
  :data:`START_WAIT` passing) and before it claims chunks itself, so that the pool threads
  work through it instead of waiting for it. The kernels that work calls run on the caller
  alone: handed to pool threads busy with the first kernel, they would only be taken up
  after it, finding nothing left to do. On one thread, or at a kernel's first call in the
  process (which may compile it), the caller does it before the kernel: the order of one
  thread.
- **Bitwise identical results for any number of threads.** Each knot is computed by the
  same compiled code from its own inputs whichever thread claims it, with a workspace the
  thread made for its chunks (nothing carried from one knot to the next, tests hold it),
  and nothing is summed across knots inside a chunk kernel. A relay's parts are the same
  on any number of threads and summed by one thread in a fixed order.

Threads: ``set_num_threads(n)`` (1 ≤ n ≤ the cores this process may run on), per calling
thread, or the environment variable ``OPTDYN_NUM_THREADS`` read at import; the default is
every core. With one thread a chunk kernel is called once over all knots, on the caller.

Errors: an exception raised by a chunk (on any thread) stops the others from claiming
more, is raised in the caller after every thread has left the kernel, and no thread
writes into the outputs after :func:`run_chunks` returns or raises.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import platform
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._compile import njit

ENVIRONMENT_VARIABLE = "OPTDYN_NUM_THREADS"
CHUNKS_PER_THREAD = 4
"""Chunks per participating thread: enough that a thread the scheduler holds back leaves
little for the others to wait on, few enough that a chunk amortises its workspace."""

MIN_PARALLEL_SECONDS = 2e-4
"""Work (seconds on one thread) below which a kernel call runs on the calling thread alone:
with a hand-off of some 50 µs, lighter work is no faster on two threads than on one."""

START_WAIT = 2e-4
"""The longest the caller waits for a pool thread to begin a kernel before doing its own work
meanwhile (:func:`meanwhile`): that work holds the GIL, which a pool thread needs to begin
(measured: 2–4 % of an iteration of the trot's iLQR and arm-obstacle's on two threads); a pool
thread the scheduler holds back costs the caller no more than this."""

NEXT, DONE, CHUNKS, KNOTS, READY = range(5)
"""Slots of a claims array (int64 (5,)): the next chunk to claim, the chunks finished,
the number of chunks, the number of knots and the knots whose inputs are written (all of
them but in a call begun :class:`Ahead` of its inputs, :func:`mark_ready`)."""


def max_threads() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this system (macOS, Windows)
        return os.cpu_count() or 1


_setting = threading.local()
_default = [max_threads()]  # changed by OPTDYN_NUM_THREADS at import


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 ≤ n ≤ :func:`max_threads`) for the batched kernels called from
    this thread."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n: expected an integer number of threads ≥ 1, got {n!r}")
    limit = max_threads()
    if not 1 <= n <= limit:
        raise ValueError(f"n: expected a number of threads between 1 and {limit} (the cores available), got {n}")
    _setting.threads = int(n)


def get_num_threads() -> int:
    """Number of threads the batched kernels called from this thread use."""
    return getattr(_setting, "threads", _default[0])


def _from_environment() -> None:
    value = os.environ.get(ENVIRONMENT_VARIABLE)
    if value is None:
        return
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE}: expected an integer number of threads ≥ 1, got {value!r}") from None
    try:
        set_num_threads(n)
    except ValueError as e:
        raise ValueError(f"{ENVIRONMENT_VARIABLE}: {e}") from None
    _default[0] = n


def chunk_count(K: int, threads: int) -> int:
    """Number of chunks K knots are split into for ``threads`` threads: one for one thread,
    else :data:`CHUNKS_PER_THREAD` per thread, at most one per knot."""
    return 1 if threads <= 1 else max(1, min(int(K), CHUNKS_PER_THREAD * threads))


def team_size(K: int, threads: int, seconds_per_knot: float | None) -> int:
    """Threads for a call over K knots: one where its work, K × the kernel's
    ``seconds_per_knot`` at its last call (None: never called), is below
    :data:`MIN_PARALLEL_SECONDS`, else ``threads``, at most one per knot."""
    if seconds_per_knot is not None and K * seconds_per_knot < MIN_PARALLEL_SECONDS:
        return 1
    return min(threads, max(int(K), 1))


_seconds_per_knot: dict = {}
"""kernel → its seconds per knot at its last :func:`run_chunks` call: the time the threads
spent inside it, summed, over the knots."""


@njit(cache=True)
def claims_for(K, chunks=1):
    """A fresh claims array for K knots in ``chunks`` chunks (one by default: a chunk kernel
    called directly, from Python or compiled code, then runs every knot on the calling thread)."""
    claims = np.zeros(5, dtype=np.int64)
    claims[CHUNKS], claims[KNOTS], claims[READY] = chunks, K, K
    return claims


@intrinsic
def _fetch_add(typingctx, array, index, value):
    """array[index] += value atomically (sequentially consistent); the value before."""
    signature = types.int64(array, types.intp, types.int64)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])
        return builder.atomic_rmw("add", pointer, args[2], "seq_cst")
    return signature, codegen


@intrinsic
def _compare_exchange(typingctx, array, index, expected, value):
    """array[index] = value if it holds ``expected``, atomically (sequentially consistent);
    whether it did."""
    signature = types.boolean(array, types.intp, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])
        pair = builder.cmpxchg(pointer, args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return signature, codegen


@intrinsic
def _cycles(typingctx):
    """The processor's cycle (time-stamp) counter: LLVM's ``readcyclecounter``."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


_SPIN_HINT = {"x86_64": ("llvm.x86.sse2.pause", ()), "amd64": ("llvm.x86.sse2.pause", ()),
              "aarch64": ("llvm.aarch64.hint", (1,)), "arm64": ("llvm.aarch64.hint", (1,))}.get(
    platform.machine().lower())
"""The processor's spin-wait hint as an LLVM intrinsic and its constant arguments: x86's
``pause``, ARM's ``yield`` (hint #1); none elsewhere."""


@intrinsic
def _spin_hint(typingctx):
    """The processor's spin-wait hint (:data:`_SPIN_HINT`)."""
    def codegen(context, builder, sig, args):
        if _SPIN_HINT is not None:
            name, constants = _SPIN_HINT
            fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32)] * len(constants))
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)
            builder.call(fn, [ir.Constant(ir.IntType(32), c) for c in constants])
        return context.get_dummy_value()
    return types.none(), codegen


@njit(cache=True, nogil=True, inline="always")
def _spun(since):
    """One bounded spin-wait step of a thread waiting since the cycle count ``since`` (−1: it
    begins waiting now): (its start, whether :data:`RELAY_WAIT` cycles have passed)."""
    now = _cycles()
    if since < 0:
        return now, False
    if now - since > RELAY_WAIT:
        return since, True
    _spin_hint()
    return since, False


@njit(cache=True, nogil=True, inline="always")
def first_chunk(claims):
    """(k0, k1): the knots of the next unclaimed chunk of ``claims``, claimed for the calling
    thread once its inputs are written (:data:`READY`: at once but :class:`Ahead`); k0 == k1
    when every chunk is taken, or when no knot became ready for :data:`RELAY_WAIT` cycles
    (the thread leaves the rest to the caller)."""
    chunks, K = claims[CHUNKS], claims[KNOTS]
    since = np.int64(-1)
    while True:
        c = _fetch_add(claims, NEXT, 0)
        if c >= chunks:
            return 0, 0
        k1 = (c + 1) * K // chunks
        if _fetch_add(claims, READY, 0) < k1:
            since, expired = _spun(since)
            if expired:
                return 0, 0
        elif _compare_exchange(claims, NEXT, c, c + 1):
            return c * K // chunks, k1


@njit(cache=True, nogil=True, inline="always")
def mark_ready(claims):
    """One more knot's inputs are written, in order (the caller of a call begun :class:`Ahead`);
    nothing for an empty ``claims`` (:data:`UNMARKED`: no call follows the writer)."""
    if claims.shape[0] > READY:
        _fetch_add(claims, READY, 1)


UNMARKED = np.zeros(0, dtype=np.int64)
"""The claims of a writer no call begun :class:`Ahead` follows (:func:`mark_ready` marks nothing)."""


@njit(cache=True, nogil=True, inline="always")
def next_chunk(claims):
    """Mark the calling thread's chunk finished (its outputs written), then
    :func:`first_chunk`. A chunk kernel's loop::

        k0, k1 = first_chunk(claims)
        while k0 < k1:
            for k in range(k0, k1): ...
            k0, k1 = next_chunk(claims)
    """
    _fetch_add(claims, DONE, 1)
    return first_chunk(claims)


RELAY_NEXT, RELAY_READY, RELAY_FINISHED, RELAY_OPENED, RELAY_STOPPED = range(5)
"""Slots of a relay array (int64 (5,), :func:`new_relay`): the next item to claim, the items
released, the items finished, the threads that entered, and whether it was stopped."""

RELAY_WAIT = 1_000_000
"""The longest a thread of a relay spins (time-stamp cycles: some 0.4 ms at 2.5 GHz) for an
item to be released before it leaves the kernel to the thread that holds the work: longer
than the work between two releases (0.08 ms on the trot's DDP pass; at 0.08 ms the waiting
thread left at every knot), short beside a time slice the scheduler gives a neighbour."""


def new_relay() -> np.ndarray:
    """A fresh relay array (:func:`relay_claim`)."""
    return np.zeros(5, dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def relay_opens(relay):
    """Whether the calling thread is the first to enter the relay (and so opens it: its work
    before the first items, then :func:`relay_release`)."""
    return _fetch_add(relay, RELAY_OPENED, 1) == 0


@njit(cache=True, nogil=True, inline="always")
def relay_claim(relay, total):
    """The next item of a relay of ``total`` items, claimed for the calling thread once it is
    released; −1 when every item is claimed, the relay stopped, or none was released for
    :data:`RELAY_WAIT` cycles (the thread that holds the work goes on alone).

    A relay runs items in groups that depend on each other (the knots of a backward pass, a
    group the parts of a knot): the items of a group run on any threads at once, and the
    thread that finishes a group's last item (:func:`relay_finish`) does what depends on the
    whole group, then releases the next group's items (:func:`relay_release`). A thread
    waits (spins, bounded) only for a release, never for an item another thread claimed."""
    since = np.int64(-1)
    while True:
        if _fetch_add(relay, RELAY_STOPPED, 0) != 0:
            return -1
        n = _fetch_add(relay, RELAY_NEXT, 0)
        if n >= total:
            return -1
        if n < _fetch_add(relay, RELAY_READY, 0):
            if _compare_exchange(relay, RELAY_NEXT, n, n + 1):
                return n
            continue
        since, expired = _spun(since)
        if expired:
            return -1


@njit(cache=True, nogil=True, inline="always")
def relay_over(relay, total):
    """Whether nothing is left to claim of a relay of ``total`` items (a thread that enters
    then leaves at once)."""
    return _fetch_add(relay, RELAY_STOPPED, 0) != 0 or _fetch_add(relay, RELAY_NEXT, 0) >= total


@njit(cache=True, nogil=True, inline="always")
def relay_finish(relay, group_end):
    """Mark the calling thread's item finished; whether it was the last of its group, which
    ends at item ``group_end`` (exclusive)."""
    return _fetch_add(relay, RELAY_FINISHED, 1) + 1 == group_end


@njit(cache=True, nogil=True, inline="always")
def relay_release(relay, count):
    """Release the next ``count`` items of the relay (written before, read after by the threads
    that claim them)."""
    _fetch_add(relay, RELAY_READY, count)


@njit(cache=True, nogil=True, inline="always")
def relay_stop(relay):
    """No more items of the relay are claimed."""
    _fetch_add(relay, RELAY_STOPPED, 1)


@njit(cache=True, nogil=True, inline="always")
def chunks_done(claims):
    """Mark every chunk of ``claims`` finished: a kernel that does not split its knots into
    chunks (a relay) says so to :func:`run_chunks` when its work is written."""
    _fetch_add(claims, DONE, claims[CHUNKS])


class _Team:
    """One :func:`run_chunks` call: its claims, the pool threads inside its kernel and those
    that have begun it, the seconds they spent there, their errors, and the condition the
    caller waits on."""

    def __init__(self, claims: np.ndarray) -> None:
        self.claims, self.active, self.begun, self.busy, self.errors = claims, 0, 0, 0.0, []
        self.condition = threading.Condition()

    def stop(self) -> None:
        """No more chunks are claimed (a claim after this store fails; one before it is
        finished, and waited for, as usual)."""
        self.claims[NEXT] = self.claims[CHUNKS]

    def work(self, kernel, args) -> None:
        """A pool thread's part: claim and run chunks until none is left."""
        with self.condition:
            self.active += 1
            self.begun += 1
            self.condition.notify_all()
        start = time.perf_counter()
        try:
            kernel(*args, self.claims)
        except BaseException as error:  # noqa: BLE001 — re-raised in the caller
            self.stop()
            self.errors.append(error)
        finally:
            with self.condition:
                self.active -= 1
                self.busy += time.perf_counter() - start
                self.condition.notify_all()

    def finished(self) -> bool:
        """Every chunk written, or an error raised and no pool thread left in the kernel."""
        return self.claims[DONE] >= self.claims[CHUNKS] or (bool(self.errors) and self.active == 0)

    def wait(self) -> None:
        """Block (no spinning) until :meth:`finished`; interrupted, stop the others and wait
        for them before re-raising, so that nothing writes into the outputs afterwards."""
        try:
            with self.condition:
                self.condition.wait_for(self.finished)
        except BaseException:
            self.cancel()
            raise

    def cancel(self) -> None:
        """No more chunks are claimed; returns once no pool thread is inside the kernel."""
        self.stop()
        with self.condition:
            self.condition.wait_for(lambda: self.active == 0)

    def join(self, kernel, args: tuple, side=None, start_wait: float = 0.0) -> float:
        """The caller's part: ``side()`` (:func:`meanwhile`) first — after waiting up to
        ``start_wait`` s for a pool thread to begin, its own kernels on the caller alone: the
        pool threads are on this one —, then the chunks left; returns the seconds it spent
        in the kernel once every chunk is written (:meth:`wait`), the first exception of any
        thread raised here."""
        work = 0.0
        try:
            if side is not None:
                with self.condition:  # (the caller's Python holds the GIL a pool thread needs to begin)
                    self.condition.wait_for(lambda: self.begun > 0, timeout=start_wait)
                threads_before, _setting.threads = get_num_threads(), 1
                try:
                    side()
                finally:
                    _setting.threads = threads_before
            start = time.perf_counter()
            kernel(*args, self.claims)
            work = time.perf_counter() - start
        except BaseException as error:
            self.stop()
            self.errors.insert(0, error)
        self.wait()
        if self.errors:
            raise self.errors[0]
        return work


@functools.cache
def _pool(pid: int) -> ThreadPoolExecutor:
    """The pool threads of process ``pid``, started on first use (a forked child starts its
    own: the parent's threads do not exist there)."""
    return ThreadPoolExecutor(max_workers=max(1, max_threads() - 1), thread_name_prefix="optdyn")


def start_pool() -> None:
    """Start the pool's threads now rather than at the first call that needs them, if this
    thread's setting uses them (:func:`get_num_threads` > 1); returns once they run. A
    controller calls it before its loop: in the first closed loop of a process, the first
    linearisation heavy enough to share (Talos' stand in MuJoCo, its 25th step) created the
    thread inside a step, 70 ms of a 30 ms control period."""
    if get_num_threads() <= 1:
        return
    workers = max(1, max_threads() - 1)
    barrier = threading.Barrier(workers + 1)
    pool = _pool(os.getpid())
    for _ in range(workers):  # each blocks a thread until all run: the pool makes them all
        pool.submit(barrier.wait)
    barrier.wait()


def run_chunks(kernel, K: int, *args) -> None:
    """``kernel(*args, claims)`` on the calling thread and on ``get_num_threads() - 1`` pool
    threads, which claim the chunks of the K knots (:func:`first_chunk`,
    :func:`next_chunk`) until none is left (module docstring). ``kernel`` is compiled with
    ``nogil=True``. Returns when every chunk is written; an exception of any chunk is
    raised here. Runs on the caller alone where the kernel's work is too light to share
    (:func:`team_size`)."""
    threads = team_size(K, get_num_threads(), _seconds_per_knot.get(kernel))
    claims = claims_for(K, chunk_count(K, threads))
    side = _taken_meanwhile()
    if side is not None and (threads == 1 or kernel not in _seconds_per_knot):
        side()  # the order of one thread (a first call may compile the kernel)
        side = None
    if threads == 1:
        start = time.perf_counter()
        kernel(*args, claims)
        work = time.perf_counter() - start
    else:
        work = _run_team(kernel, threads, claims, args, side)
    _seconds_per_knot[kernel] = work / max(int(K), 1)


@contextlib.contextmanager
def meanwhile(fn):
    """``fn()`` on the calling thread while the pool threads begin the first :func:`run_chunks`
    call made inside the block (module docstring); before that call's kernel where it runs
    on the caller alone or for the first time in the process, and at the block's end where
    no call was made (a caller's result held from before). ``fn`` must not read or write
    what the kernel writes; an exception of either is raised after both have stopped, and
    ``fn`` is not called where the block raises before it."""
    _setting.meanwhile = fn
    try:
        yield
    finally:
        left = _taken_meanwhile()
    if left is not None:
        left()


def _taken_meanwhile():
    """The caller's work given by :func:`meanwhile` and not yet done (None if none), taken."""
    side, _setting.meanwhile = getattr(_setting, "meanwhile", None), None
    return side


def _run_team(kernel, threads: int, claims: np.ndarray, args: tuple, side=None) -> float:
    """:func:`run_chunks` on the caller and ``threads - 1`` pool threads, the caller doing
    ``side()`` (:func:`meanwhile`) first; the seconds the threads spent in the kernel (its
    work, whichever thread did it)."""
    team = _Team(claims)
    pool = _pool(os.getpid())
    for _ in range(threads - 1):
        pool.submit(team.work, kernel, args)
    work = team.join(kernel, args, side, START_WAIT)
    return work + team.busy


class Lookahead:
    """``fn(*args)`` begun on a pool thread before the caller knows it will need the result:
    :meth:`result` takes the result, running the call on the caller if no pool thread has
    started it yet (the caller never waits for a thread the scheduler holds back, and does
    no more work than without it), and waiting for it if one has. With one thread (this
    thread's setting) nothing is begun ahead: :meth:`result` runs the call. ``fn`` must
    release the GIL for the two to overlap (compiled with ``nogil=True``), and writes only
    into arrays nothing else uses until :meth:`result` or :meth:`settle`."""

    def __init__(self, fn, *args) -> None:
        self.call = functools.partial(fn, *args)
        self.future = _pool(os.getpid()).submit(self.call) if get_num_threads() > 1 else None

    def result(self):
        """The call's result (its exception raised here)."""
        if self.future is None or self.future.cancel():
            return self.call()
        return self.future.result()

    def settle(self) -> None:
        """Return once the call is not running and never will (so that its outputs may be
        written afresh); its result or exception is dropped."""
        if self.future is not None and not self.future.cancel():
            concurrent.futures.wait([self.future])


class Ahead:
    """A :func:`run_chunks` call begun on a pool thread before its inputs are written: the
    caller writes them knot by knot (a rollout, each knot marked with :func:`mark_ready` in
    :attr:`claims`) while the pool thread takes the chunks of the knots already written
    (:func:`first_chunk`); :meth:`join` then runs the chunks left on the caller and waits for
    the pool thread's, or :meth:`cancel` drops the call. With one thread nothing is begun:
    :meth:`join` runs the whole call. Each knot is computed by the same code as in
    :func:`run_chunks` whichever thread takes it: the results are bitwise the same.

    With ``written``, every knot's inputs are written already: the call is begun ahead of
    the caller's need for its outputs, not of its inputs (IPOPT's Jacobian at a trial point,
    begun when the trial's constraints are evaluated), and the pool thread works through it
    while the caller does other work; the caller joins it when (if) it needs the outputs."""

    def __init__(self, K: int, written: bool = False) -> None:
        self.claims = claims_for(K, K)  # a chunk a knot: the pool thread follows the writer closely
        if not written:
            self.claims[READY] = 0
        self.team = _Team(self.claims)
        self.call: tuple | None = None

    def start(self, kernel, K: int, *args) -> None:
        """Begin ``kernel(*args, claims)`` over the K knots (the ``run`` of a batch evaluation,
        in place of :func:`run_chunks`)."""
        if K != self.claims[KNOTS]:
            raise ValueError(f"K: expected the {self.claims[KNOTS]} knots this call was made for, got {K}")
        self.call = (kernel, args)
        if get_num_threads() > 1:
            _pool(os.getpid()).submit(self.team.work, kernel, args)

    def begun(self, timeout: float = START_WAIT) -> bool:
        """Wait up to ``timeout`` s for a pool thread to begin the call (:meth:`start`):
        whether one has. A caller that goes on to run code holding the GIL without calling
        Python (IPOPT's own iteration, between its callbacks) waits first, for the pool thread
        needs the GIL to reach the kernel, which then runs without it."""
        with self.team.condition:
            return self.team.condition.wait_for(lambda: self.team.begun > 0, timeout=timeout)

    def join(self) -> None:
        """Every knot's inputs written: the chunks left on the caller — after its work
        :func:`meanwhile`, if any, which the pool thread works through — then the pool
        thread's waited for (:meth:`_Team.join`)."""
        self.claims[READY] = self.claims[KNOTS]
        self.team.join(*self.call, _taken_meanwhile())

    def cancel(self) -> None:
        """No more chunks are claimed; returns once no thread is inside the kernel (its
        outputs are then free to be written afresh)."""
        self.team.cancel()


_from_environment()
