"""Shared helpers of the benchmark scripts: timing, machine description, benchmark sections.

Each script owns one section delimited by ``<!-- name:start -->`` and ``<!-- name:end -->``
and rewrites only that section, so scripts can run independently. The sections live in the
topic pages of the documentation site, ``docs/benchmarks/*.md`` (BENCHMARKS.md holds the
summary and lists them); a section found in none of them is appended to BENCHMARKS.md.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import timeit
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
BENCHMARK_PAGES = ROOT / "docs" / "benchmarks"


def per_call_us(f, min_time: float = 0.2, repeat: int = 5, clock=time.perf_counter) -> float:
    """Best-of-``repeat`` time per call of ``f()`` in µs (warm: ``f`` is called first), by the
    wall ``clock`` unless another is given (``time.process_time``: the process's CPU time)."""
    f()
    timer = timeit.Timer(f, timer=clock)
    number, _ = timer.autorange()
    number = max(1, int(number * min_time / 0.2))
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def interleaved_us(cases, rounds: int = 9, min_time: float = 0.1, repeat: int = 3) -> list[float]:
    """Best per-call µs of each ``(setup, f)`` of ``cases``, measured in turn over ``rounds``
    rounds (``setup()`` runs before each measurement of ``f``, e.g. to set the number of
    threads): a shared machine drifts, and alternating keeps every case under the same load."""
    best = [float("inf")] * len(cases)
    for _ in range(rounds):
        for c, (setup, f) in enumerate(cases):
            setup()
            best[c] = min(best[c], per_call_us(f, min_time=min_time, repeat=repeat))
    return best


def loglog_slope(ns, times) -> float:
    """Least-squares slope of log(time) against log(n)."""
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def machine() -> str:
    """One line naming the date, CPU, core count and Python."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    date = datetime.date.today().isoformat()
    return f"{date}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    def fmt(x):
        return f"{x:.3g}" if isinstance(x, float) else str(x)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(fmt(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


def section_file(name: str) -> Path:
    """The file that holds the section ``name``: a topic page of docs/benchmarks/ or
    BENCHMARKS.md (where a new section is appended)."""
    start = f"<!-- {name}:start -->"
    for path in sorted(BENCHMARK_PAGES.glob("*.md")) + [BENCHMARKS_MD]:
        if path.exists() and start in path.read_text():
            return path
    return BENCHMARKS_MD


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section ``name`` with ``body`` in the file that holds it."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    path = section_file(name)
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    print(body)


@contextmanager
def baseline_tree(commit: str):
    """A temporary git worktree of ``commit`` (the tree before a change, for before/after
    rows measured in the same session), removed on exit."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
                       check=True, capture_output=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def run_in_tree(tree: Path, code: str, threads: int | None = None, python: str = sys.executable):
    """Run the Python source ``code`` in a new process of ``python`` (default this one's; e.g.
    Crocoddyl's environment) that imports the packages of ``tree`` (their own numba cache) and
    its ``benchmarks/_common``, and prints "RESULT" then JSON; returns that JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tree), str(tree / "benchmarks"))))
    if threads is not None:
        env["OPTDYN_NUM_THREADS"] = str(threads)
    out = subprocess.run([python, "-c", code], cwd=tree, env=env, capture_output=True, text=True,
                         timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.split("RESULT", 1)[1])
