"""Evaluation over the knots of a trajectory in parallel: threads, layer and chunks.

The batched kernels split the K knots into contiguous chunks, one per thread: those of
:mod:`dynamics.batch` with numba's ``prange`` (every chunk with its own workspace,
:mod:`dynamics.workspace`), the interval sensitivities of the optimal-control layer and the
contact kernels of :mod:`dynamics.batch` with :func:`run_chunks` (compiled chunk kernels that
release the GIL, on a thread pool: numba's parallel loops cannot take the former's nested
tuples of arrays, and one around the contact passes took 74 CPU s to compile against 18). Each knot is computed
by the same compiled code whichever thread runs it, and nothing is summed across knots
inside a parallel loop, so results are bitwise identical for any number of threads.

Threads: ``set_num_threads(n)`` (at most numba's ``NUMBA_NUM_THREADS``, the number of
cores by default), or the environment variable ``OPTDYN_NUM_THREADS`` read at import.

Threading layer: numba's thread-safe ones are preferred (TBB, else OpenMP), so kernels may
be called from several Python threads at once; numba's ``workqueue`` layer, the fallback
when neither is installed, is not safe for that. A layer chosen by the user
(``NUMBA_THREADING_LAYER``) is left alone.

Idle OpenMP threads: after a parallel loop, GNU OpenMP keeps its idle threads spinning
for ``GOMP_SPINCOUNT`` iterations (300 000 by default: over 10 ms here) before they sleep.
A solver iteration alternates ``prange`` loops (cost terms, DDP's split stage terms) with
:func:`run_chunks`, whose pool threads would share the cores with those spinning threads:
on two cores the whole two-thread gain of the interval sweeps was lost. Importing
:mod:`dynamics` therefore sets ``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` (about half a
millisecond of spinning: long enough to bridge the gaps between the per-knot loops of DDP's
backward pass) unless ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is set already. It takes
effect only if OpenMP was not loaded before (numba loads it on the first parallel loop).

Launching: importing :mod:`dynamics` launches the threading layer. numba launches it when
it compiles a parallel loop or loads a parallel kernel from the cache, but not when it loads
a kernel that only calls one (DDP's backward pass calls the split stage terms' loop): that
kernel, called first in a fresh process with a warm cache, would jump to a null pointer.

Exceptions raised inside a numba parallel loop are lost, so the ``prange`` kernels
validate every knot before the loop and the per-knot algorithms report failure by a
return flag; :func:`run_chunks` re-raises a chunk's exception in the caller.
"""
from __future__ import annotations

import functools
import importlib
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ._compile import njit

ENVIRONMENT_VARIABLE = "OPTDYN_NUM_THREADS"
SPIN_COUNT = "10000"  # GOMP_SPINCOUNT unless the user chose a wait policy (module docstring)


def _threading_layer() -> str:
    """The first thread-safe numba threading layer that loads (TBB, OpenMP), else workqueue."""
    for layer, module in (("tbb", "numba.np.ufunc.tbbpool"), ("omp", "numba.np.ufunc.omppool")):
        try:
            importlib.import_module(module)
            return layer
        except (ImportError, OSError):
            continue
    return "workqueue"


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 ≤ n ≤ numba's ``NUMBA_NUM_THREADS``) for the batched kernels
    called from this thread."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n: expected an integer number of threads ≥ 1, got {n!r}")
    limit = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= limit:
        raise ValueError(f"n: expected a number of threads between 1 and {limit} (NUMBA_NUM_THREADS), got {n}")
    numba.set_num_threads(int(n))


def get_num_threads() -> int:
    """Number of threads the batched kernels use."""
    return numba.get_num_threads()


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


def chunk_count(K: int) -> int:
    """Number of chunks the K knots are split into: one per thread, at most K (the
    kernels take it as an argument: numba cannot cache a kernel that asks for the number
    of threads itself)."""
    return max(1, min(int(K), numba.get_num_threads()))


@njit(cache=True)
def chunk_start(K, chunks, c):
    """First knot of chunk c of ``chunks`` (chunk c covers chunk_start(c) … chunk_start(c + 1) − 1)."""
    return c * K // chunks


@functools.cache
def _pool(pid: int) -> ThreadPoolExecutor:
    """The threads of :func:`run_chunks` in process ``pid``, started on first use (a forked
    child starts its own: the parent's threads do not exist there)."""
    return ThreadPoolExecutor(max_workers=numba.config.NUMBA_NUM_THREADS, thread_name_prefix="optdyn")


def run_chunks(kernel, K: int, *args) -> None:
    """``kernel(*args, k0, k1)`` on every chunk [k0, k1) of the K knots, the chunks in
    parallel Python threads — for kernels compiled with ``nogil=True`` whose arguments
    numba's parallel loops cannot take (nested tuples of arrays). The first chunk runs on
    the calling thread; an exception of any chunk is raised here, after every chunk ended."""
    chunks = chunk_count(K)
    bounds = [chunk_start(K, chunks, c) for c in range(chunks + 1)]
    futures = [_pool(os.getpid()).submit(kernel, *args, bounds[c], bounds[c + 1]) for c in range(1, chunks)]
    try:
        kernel(*args, bounds[0], bounds[1])
    finally:
        for f in futures:
            error = f.exception()
            if error is not None:
                raise error


if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = _threading_layer()
_from_environment()
numba.get_num_threads()  # launches the threading layer (module docstring)
