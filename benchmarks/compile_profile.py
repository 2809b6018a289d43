"""Where numba's compile time goes: run one command with a listener on numba's compile events.

    python benchmarks/compile_profile.py OUT.json optdyn solve arm-obstacle
    python benchmarks/compile_profile.py OUT.json pytest -q tests/test_ddp.py

runs the optdyn command line (or pytest) in this process with a listener on numba's
``"numba:compile"`` event (:mod:`numba.core.event`), which fires only when a kernel is
really compiled (not when it is loaded from the disk cache). Each compilation is recorded
with its wall and CPU seconds, inclusive and exclusive of the callees it compiled on the
way (a kernel compiles its callees first, nested), and the outermost kernel that triggered
it. The records go to OUT.json; ``bench_compile.py`` aggregates them.
"""
from __future__ import annotations

import json
import sys
import time

from numba.core import event


class Recorder(event.Listener):
    """Every compilation: kernel, signature, seconds (inclusive and exclusive), trigger."""

    def __init__(self) -> None:
        self.stack: list[dict] = []
        self.records: list[dict] = []
        self.passes = Passes()

    def on_start(self, ev) -> None:
        dispatcher = ev.data["dispatcher"]
        fn = dispatcher.py_func
        self.stack.append({"kernel": f"{fn.__module__}.{fn.__qualname__}",
                           "signature": str(ev.data["args"]),
                           "wall0": time.perf_counter(), "cpu0": time.process_time(),
                           "child_wall": 0.0, "child_cpu": 0.0})

    def on_end(self, ev) -> None:
        r = self.stack.pop()
        wall, cpu = time.perf_counter() - r.pop("wall0"), time.process_time() - r.pop("cpu0")
        r.update(wall=wall, cpu=cpu, self_wall=wall - r.pop("child_wall"), self_cpu=cpu - r.pop("child_cpu"),
                 trigger=self.stack[0]["kernel"] if self.stack else r["kernel"], depth=len(self.stack))
        if self.stack:
            self.stack[-1]["child_wall"] += wall
            self.stack[-1]["child_cpu"] += cpu
        self.records.append(r)


class Passes(event.Listener):
    """CPU seconds per numba compiler pass, exclusive of the passes nested in it (a callee
    is compiled during its caller's type inference)."""

    def __init__(self) -> None:
        self.stack: list[list] = []  # [cpu at start, nested compile cpu]
        self.seconds: dict[str, float] = {}

    def on_start(self, ev) -> None:
        self.stack.append([time.process_time(), 0.0])

    def on_end(self, ev) -> None:
        t0, nested = self.stack.pop()
        name = ev.data["name"].split(" [")[0]
        self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - t0 - nested
        if self.stack:
            self.stack[-1][1] += time.process_time() - t0


def main(argv: list[str]) -> int:
    out, tool, args = argv[0], argv[1], argv[2:]
    recorder = Recorder()
    event.register("numba:compile", recorder)
    event.register("numba:run_pass", recorder.passes)
    t0 = time.perf_counter()
    try:
        if tool == "pytest":
            import pytest
            code = int(pytest.main(args))
        else:
            from optdyn.apps.cli import main as cli
            try:
                code = cli(args) or 0
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        with open(out, "w") as f:
            json.dump({"command": " ".join(argv[1:]), "wall": time.perf_counter() - t0,
                       "records": recorder.records,
                       "passes": recorder.passes.seconds}, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
