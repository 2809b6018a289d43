"""Shared fixtures: the model zoo the core tests are parametrised over.

Models are built once per session (they are immutable; tests that change gravity build
their own). ``random_state`` draws a reproducible (q, v, a) for a model.

Ctrl-C: a process started with SIGINT ignored (pytest-xdist's workers, a shell without job
control) passes that on to every child; the tests of Ctrl-C and of the signals' handling need
Python's own handler, which :func:`pytest_configure` installs.
"""
from __future__ import annotations

import functools
import signal

import numpy as np
import pytest

import dynamics as dyn
import dynamics.models  # noqa: F401  (makes dyn.models available)


def pytest_configure(config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: files in the order below, not by test count
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items) -> None:
    """The files marked ``cost(seconds)`` first, longest first (a stable sort: each file's
    tests stay together and in order). A file's cost is its time on a cold cache where this
    order runs it: the kernels a costlier file compiles first are not counted again, and a
    file that waited on another worker's compile of kernels they share goes later.
    ``--dist loadfile`` hands the files to the workers in this order, so the few that take
    minutes on a cold cache start at once instead of one of them starting last, after the other
    worker has run out of files (the longest-processing-time-first rule for two machines)."""
    def cost(item) -> float:
        marker = item.get_closest_marker("cost")
        return marker.args[0] if marker else 0.0
    items.sort(key=lambda item: -cost(item))


# (family, n, seed[, armature]): UR5, chains and branching trees up to 15 bodies, several seeds,
# one with reflected rotor inertias on its joints (Model.with_armature).
MODEL_SPECS = [
    ("ur5", 6, 0),
    ("serial_chain", 1, 0),
    ("serial_chain", 7, 1),
    ("serial_chain", 15, 2),
    ("binary_tree", 7, 0),
    ("binary_tree", 15, 3),
    ("binary_tree", 12, 5),
    ("serial_chain", 7, 4, True),
]
MODEL_IDS = [f"{f}-{n}-s{s}" + ("-armature" if more else "") if f != "ur5" else f for f, n, s, *more in MODEL_SPECS]


@functools.lru_cache(maxsize=None)
def make_model(family: str, n: int = 0, seed: int = 0, armature: bool = False) -> dyn.Model:
    """The zoo model ``family`` (ur5, serial_chain, binary_tree), cached; with ``armature``,
    reflected rotor inertias of 0.01–0.2 on its joints (about its links' own inertias)."""
    if family == "ur5":
        return dyn.models.ur5()
    model = getattr(dyn.models, family)(n, seed=seed)
    return model.with_armature(np.random.default_rng(seed).uniform(0.01, 0.2, model.nv)) if armature else model


@pytest.fixture(scope="session", params=MODEL_SPECS, ids=MODEL_IDS)
def model(request) -> dyn.Model:
    return make_model(*request.param)


@pytest.fixture(scope="session")
def ur5() -> dyn.Model:
    return make_model("ur5")


def random_state(model: dyn.Model, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reproducible q ∈ [−π, π]ⁿ (prismatic joints ±0.5 m), v and a ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    bound = np.minimum(model.upper_limit, np.pi)
    q = rng.uniform(-1.0, 1.0, model.nq) * bound
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)
