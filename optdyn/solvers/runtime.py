"""Run-time control of a solve: time limit, Ctrl-C, and the numba compilation notice.

**Compilation.** optdyn's kernels are compiled by numba on first use and cached on disk
(``@njit(cache=True)``). Whether the cache is cold is not guessed from file names: a
listener on numba's ``"numba:compile"`` event (:mod:`numba.core.event`) is told exactly
when numba starts compiling a kernel — which it does only when neither memory nor the
disk cache holds that kernel for the current source and signature. The first time that
happens in a process for a kernel of ``dynamics``/``optdyn``/``problems``, a one-line
notice (:data:`COMPILE_NOTICE`) goes to stderr, before the wait; on a terminal a progress
line then counts the kernels compiled and names the one being compiled. The same listener sums
the wall time spent compiling, which every solver reports as ``extra["compile_time"]``
(s, part of ``wall_time``; 0.0 when every kernel came from the cache). The listener is
registered when :mod:`optdyn` is imported, so it covers every optdyn entry point (the
Python API and the command line).

**Interrupts and time limits.** A solver runs inside a :class:`Run`. In the main thread,
``Run`` replaces the SIGINT handler for the duration of the solve by one that only sets a
flag (``Run.interrupted``): compiled kernels are never interrupted half-way (a
KeyboardInterrupt raised across numba's dispatcher surfaces as a ``SystemError``); the
solver polls :meth:`Run.stop_reason` between iterations and line-search trials and
returns its last accepted iterate with status ``"interrupted"``. While numba is compiling
(pure Python, possibly a minute) or on a second Ctrl-C, the handler raises
``KeyboardInterrupt`` at once; the solver catches it (and the ``SystemError`` wrapping
it) and still returns its last accepted iterate. ``max_time`` (s) is polled at the same
points: status ``"time_limit"``.
"""
from __future__ import annotations

import signal
import sys
import threading
import time

import numpy as np
from numba.core import event
from tqdm import tqdm

COMPILE_NOTICE = ("optdyn: compiling numba kernels (cold cache: the first solve takes one to two minutes on 2 "
                  "cores, once; `optdyn warmup` compiles ahead); they are cached on disk for later runs")
PACKAGES = ("dynamics", "optdyn", "problems")


class _CompileWatch(event.Listener):
    """Counts and times numba compilations of this project's kernels (module docstring)."""

    def __init__(self) -> None:
        self.depth = 0  # nesting of compilations in progress (a kernel compiles its callees)
        self.seconds = 0.0  # total wall time of outermost compilations
        self.count = 0  # kernels compiled in this process
        self.announced = False
        self._t0 = 0.0
        self._bar = None  # on a terminal: a progress line naming the kernel being compiled

    @staticmethod
    def _ours(ev) -> bool:
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        return module.split(".")[0] in PACKAGES

    def on_start(self, ev) -> None:
        if not self._ours(ev):
            return
        if self.depth == 0:
            self._t0 = time.perf_counter()
            if not self.announced:
                self.announced = True
                print(COMPILE_NOTICE, file=sys.stderr, flush=True)
            if sys.stderr.isatty():
                self._bar = tqdm(initial=self.count, unit=" kernels", file=sys.stderr, leave=False,
                                 bar_format="{n_fmt}{unit} compiled, {elapsed} | {desc}")
        self.depth += 1
        self.count += 1
        if self._bar is not None:
            fn = ev.data["dispatcher"].py_func
            self._bar.set_description_str(f"compiling {fn.__module__}.{fn.__qualname__}", refresh=False)
            self._bar.update(1)

    def on_end(self, ev) -> None:
        if not self._ours(ev) or self.depth == 0:
            return
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self._t0
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def elapsed(self) -> float:
        """Seconds spent compiling so far, including a compilation in progress."""
        return self.seconds + (time.perf_counter() - self._t0 if self.depth else 0.0)


COMPILATION = _CompileWatch()
event.register("numba:compile", COMPILATION)


def check_count(name: str, value) -> None:
    """ValueError naming ``name`` unless ``value`` is an integer ≥ 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name}: expected an integer ≥ 0, got {value!r}")


def check_number(name: str, value, zero: bool = False) -> None:
    """ValueError naming ``name`` unless ``value`` is a finite number > 0 (≥ 0 with ``zero``;
    not a bool)."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and np.isfinite(value) and (value >= 0 if zero else value > 0)
    if not ok:
        raise ValueError(f"{name}: expected a finite number {'≥' if zero else '>'} 0, got {value!r}")


def check_max_time(max_time) -> float | None:
    """``max_time`` (s) as a float > 0, or None for no limit (None or inf); ValueError naming it otherwise."""
    if max_time is None:
        return None
    if isinstance(max_time, bool) or not isinstance(max_time, (int, float, np.integer, np.floating)) \
            or not max_time > 0 or max_time != max_time:
        raise ValueError(f"max_time: expected a number of seconds > 0 or None, got {max_time!r}")
    return float(max_time) if np.isfinite(max_time) else None  # inf: no limit


def is_interrupt(exc: BaseException) -> bool:
    """True for KeyboardInterrupt or an exception (numba's SystemError) caused by one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class Run:
    """Stop conditions of one solve: wall-clock limit and Ctrl-C (module docstring).

    Use as a context manager around the solve; ``stop_reason()`` returns None,
    ``"interrupted"`` or ``"time_limit"``. ``compile_time()`` is the numba compilation
    time spent since the run started, s.
    """

    def __init__(self, max_time: float | None = None) -> None:
        self.max_time = check_max_time(max_time)
        self.t0 = time.perf_counter()
        self.deadline = None if self.max_time is None else self.t0 + self.max_time
        self.interrupted = False
        self._compile0 = COMPILATION.elapsed()
        self._previous = None

    def _on_sigint(self, signum, frame) -> None:
        if self.interrupted or COMPILATION.depth > 0:
            self.interrupted = True
            raise KeyboardInterrupt
        self.interrupted = True

    def __enter__(self) -> Run:
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            except ValueError:  # not the main interpreter
                self._previous = None
        return self

    def __exit__(self, *exc) -> bool:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        return False

    def stop_reason(self) -> str | None:
        """"interrupted" after Ctrl-C, "time_limit" past the deadline, else None."""
        if self.interrupted:
            return "interrupted"
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return "time_limit"
        return None

    def elapsed(self) -> float:
        """Wall time since the run started, s."""
        return time.perf_counter() - self.t0

    def compile_time(self) -> float:
        """numba compilation time within this run, s."""
        return COMPILATION.elapsed() - self._compile0


STOP_MESSAGES = {
    "interrupted": "stopped by Ctrl-C (SIGINT); the last accepted iterate is returned",
    "time_limit": "max_time = {max_time:g} s reached; the last accepted iterate is returned",
}


def stop_message(reason: str, run: Run) -> str:
    """The Result message of a solve stopped for ``reason`` ("interrupted"/"time_limit")."""
    return STOP_MESSAGES[reason].format(max_time=run.max_time or 0.0)
