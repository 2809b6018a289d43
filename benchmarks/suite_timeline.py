"""A pytest plugin for ``bench_suite.py``: each test's start and end (wall clock) in the process
that ran it, written at the end to ``$SUITE_TIMELINE_DIR/<worker>.json``."""
from __future__ import annotations

import json
import os
import time

_events: list[tuple[str, float, float]] = []
_started: dict[str, float] = {}


def pytest_runtest_logstart(nodeid, location) -> None:
    _started[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location) -> None:
    _events.append((nodeid, _started.pop(nodeid, time.time()), time.time()))


def pytest_unconfigure(config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # the controller: its events are the workers' reports, not its own runs
        return
    with open(os.path.join(os.environ["SUITE_TIMELINE_DIR"], f"{worker}.json"), "w") as f:
        json.dump(_events, f)
