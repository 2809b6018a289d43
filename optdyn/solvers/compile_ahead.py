"""Compile ahead on a cold cache: while a solve compiles the kernels it needs in the order it
needs them, helper processes compile those it will need later, into the shared disk cache.

numba compiles a kernel on its first call, in the calling process, one kernel at a time: a
first solve on a cold cache (a fresh clone's main job) used one core for minutes. The
solver's first steps are the rollout (the forward dynamics), the cost and constraint terms
and the first-order sensitivities, its later ones the second order (DDP's backward pass,
IPOPT's Lagrangian Hessian) — kernels the solve cannot reach before it has the first
ones, but that a process given the problem can compile at once. So when a solve, inside
:class:`Ahead`, makes its first compilation, one helper per spare core starts, each with
the problem (pickled) and a part of :data:`PARTS`, and evaluates it — compiling, or
loading from the disk cache, what that part needs. Processes that meet the same kernel
compile it once: each specialisation is compiled under a lock file of the cache
(:meth:`dynamics._compile.Kernel.compile`), and the others load it when it is written.

``optdyn solve`` begins them earlier, at the first compilation of a task's construction, on a
stand-in of the task's dynamics when the task has no contacts (:mod:`optdyn.apps.cli`): building arm-obstacle
compiles 5 s of a kernel the solve never calls (its guess's gravity torques: RNEA), and
the helpers' part, about 54 s alone, is the cold main job's critical path. A
DDP or iLQR helper then compiles the line search's forward pass and the interval batch: the
solve reaches them after its backward pass, which it compiles itself meanwhile.

A helper runs one thread at a lower priority and starts no helper of its own; it is stopped
when the process that started it exits (what it compiled by then stays in the cache). A
process starts a part's helper once per type of problem dynamics (the kernels it compiles
depend on the types only). ``OPTDYN_COMPILE_AHEAD=0`` turns helpers off.
"""
from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import tempfile

import numba
import numpy as np
from numba.core import event

from ..ocp.problem import Problem

ENVIRONMENT_VARIABLE = "OPTDYN_COMPILE_AHEAD"


def _guess(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """States and controls at the knots to evaluate at: x0 held, the problem's controls
    (valid states without a rollout, which the solve compiles itself first)."""
    return np.tile(problem.x0, (problem.N, 1)), np.ascontiguousarray(problem.us_init)


def _second_order(problem: Problem) -> list:
    """The contracted Hessians first, from records left unset (only the kernels matter
    here: an evaluation of them may fail), whose kernels the solve needs last; then the
    recorded sensitivities."""
    xs, us = _guess(problem)
    lams = np.zeros((problem.N, problem.ndx))
    return [lambda: problem.step_hessians(xs, us, lams, problem.stage_records(problem.N)),
            lambda: problem.step_stages(xs, us)]


def _first_order(problem: Problem) -> list:
    return [lambda: problem.step_derivatives(*_guess(problem))]


def _steps(problem: Problem) -> list:
    """The line search's forward pass (at α = 1, the arrays laid out as a solve's workspace
    lays them out) and a batch of intervals (the gaps, a report's): kernels a DDP or iLQR solve
    compiles last, after its backward pass, from the rollout's interval, which its own process
    has compiled by the time a helper gets here."""
    from dynamics.parallel import UNMARKED

    from .ddp import forward_pass

    xs, us = _guess(problem)
    N, nu, ndx = problem.N, problem.nu, problem.ndx
    states, controls = np.tile(problem.x0, (N + 1, 1)), np.empty((N, nu))
    return [lambda: forward_pass(problem.dynamics, states, us, np.zeros((N, nu)), np.zeros((N, nu, ndx)), 1.0,
                                 problem.u_lower, problem.u_upper, np.empty_like(states), controls,
                                 np.zeros((0, ndx)), UNMARKED),
            lambda: problem.step(xs, us)]


PARTS = {"ddp": ("second order, steps",), "fddp": ("second order, steps",), "ipopt": ("second order",),
         "ilqr": ("first order, steps",), "filqr": ("first order, steps",)}
"""What the helpers compile ahead of a solve, by solver: a part per spare core, in order.
"second order": the interval sensitivities with their stage records and the contracted
Hessians λᵀF_zz (DDP's backward pass and IPOPT's Hessian share them); "first order": the
interval sensitivities alone (iLQR); "steps": then the forward pass and the interval batch
(:func:`_steps`), while the solve compiles its backward pass."""

RUN = {"second order": _second_order, "second order, steps": lambda p: _second_order(p) + _steps(p),
       "first order, steps": lambda p: _first_order(p) + _steps(p)}
"""Each part's steps, in order (callables of the problem's evaluations)."""


def enabled() -> bool:
    """Whether helpers may start (``OPTDYN_COMPILE_AHEAD`` is not "0")."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "1") != "0"


def helpers(solver: str) -> list[str]:
    """The parts the helpers of a ``solver`` solve take: one per spare core, at most
    :data:`PARTS`' (none with one core, or when helpers are off)."""
    from dynamics.parallel import max_threads

    own = PARTS.get(solver.removeprefix("al-"), ())  # the al- forms (constraints inside) compile what theirs do
    return list(own)[:max(0, max_threads() - 1)] if enabled() else []


_STARTED: set[tuple[str, str]] = set()  # (the dynamics' type, part) of the helpers this process started


class Ahead(event.Listener):
    """Around a solve of ``problem`` by ``solver``: on the solve's first compilation, start
    the helpers (:func:`helpers`) that compile ahead of it (module docstring)."""

    def __init__(self, problem: Problem, solver: str) -> None:
        self.problem, self.parts, self.started = problem, helpers(solver), False

    def __enter__(self) -> Ahead:
        if self.parts:
            event.register("numba:compile", self)
        return self

    def __exit__(self, *exc) -> bool:
        if self.parts:
            event.unregister("numba:compile", self)
        return False

    def on_start(self, ev) -> None:
        if not self.started:
            self.started = True
            key = str(numba.typeof(self.problem.dynamics))  # what the helpers' kernels are compiled for
            for part in self.parts:
                if (key, part) not in _STARTED:
                    _STARTED.add((key, part))
                    start(self.problem, part)

    def on_end(self, ev) -> None:
        pass


def start(problem: Problem, part: str) -> subprocess.Popen:
    """A helper process compiling ``part`` of :data:`RUN` for ``problem``, stopped at this
    process's exit."""
    with tempfile.NamedTemporaryFile(prefix="optdyn-ahead-", suffix=".pkl", delete=False) as f:
        pickle.dump(problem, f)
    env = dict(os.environ, **{ENVIRONMENT_VARIABLE: "0", "OPTDYN_NUM_THREADS": "1"})
    helper = subprocess.Popen([sys.executable, "-m", __name__, f.name, part], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(_stop, helper)
    return helper


def _stop(helper: subprocess.Popen) -> None:
    if helper.poll() is None:
        helper.terminate()


def main(path: str, part: str) -> None:
    """A helper: load the pickled problem at ``path`` (and remove the file), compile ``part``
    at a lower priority than the solve it works for."""
    if hasattr(os, "nice"):
        os.nice(10)
    with open(path, "rb") as f:
        problem = pickle.load(f)
    os.unlink(path)
    for step in RUN[part](problem):
        try:
            step()
        except Exception:  # noqa: BLE001 — what was compiled before it stays in the cache
            pass


if __name__ == "__main__":
    main(*sys.argv[1:3])
