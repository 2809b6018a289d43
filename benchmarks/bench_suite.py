"""The test suite as CI runs it, from a cold cache → docs/benchmarks/compilation.md, section
"cold start suite schedule".

In a fresh numba cache directory: the README's main job, then the README's test command
(two xdist workers, a file per worker at a time) with ``suite_timeline.py`` recording when
each test ran on which worker. Reported per worker: the files in the order they ran, the
time each took from its first test's start to its last test's end, and when the worker ran
out of files; the suite's wall time is the later worker's end, and the gap between the two
ends is time one core stood idle. ``--tree`` runs another checkout's suite (its sources
first on the path), e.g. a git worktree of an earlier commit, for a before/after.

Run from the repository root (about 11 minutes on 2 cores):
    .venv/bin/python benchmarks/bench_suite.py [--tree PATH] [--label NAME]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, table, write_section

RESULTS = ROOT / "benchmarks" / "suite_results.json"


def run(tree: Path) -> dict:
    """The main job and the suite of ``tree`` on a fresh cache: their wall times and, per
    worker, [(file, start, end)] in seconds from the suite's start."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "cache"), SUITE_TIMELINE_DIR=tmp,
                   PYTHONPATH=os.pathsep.join([str(tree), str(ROOT / "benchmarks")]))
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "optdyn", "solve", "arm-obstacle", "--quiet", "--html",
                        str(Path(tmp) / "arm.html")], cwd=tree, env=env, check=True, capture_output=True)
        t1 = time.time()
        suite = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile",
                                "-p", "suite_timeline"], cwd=tree, env=env, capture_output=True, text=True)
        t2 = time.time()
        workers = {}
        for path in sorted(Path(tmp).glob("gw*.json")):
            spans: dict[str, list[float]] = {}
            for nodeid, start, end in json.loads(path.read_text()):
                span = spans.setdefault(nodeid.split("::")[0], [start, end])
                span[0], span[1] = min(span[0], start), max(span[1], end)
            workers[path.stem] = sorted(([f, a - t1, b - t1] for f, (a, b) in spans.items()), key=lambda s: s[1])
    lines = suite.stdout.strip().splitlines()
    return {"main job": t1 - t0, "suite": t2 - t1, "result": lines[-1],
            "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))], "workers": workers}


def summarise(entry: dict, longest: int = 6) -> str:
    ends = {w: max(s[2] for s in spans) for w, spans in entry["workers"].items()}
    rows = [[w, len(spans), f"{ends[w]:.0f}", f"{max(ends.values()) - ends[w]:.0f}",
             ", ".join(f"{Path(f).stem} {b - a:.0f} s (from {a:.0f})"
                       for f, a, b in sorted(spans, key=lambda s: s[1] - s[2])[:longest])]
            for w, spans in entry["workers"].items()]
    return "\n\n".join([
        f"Main job {entry['main job']:.0f} s, then the suite {entry['suite']:.0f} s ({entry['result']})."
        + "".join(f"\n- {line}" for line in entry.get("failed", [])),
        table(["worker", "files", "out of files at (s)", "idle at the end (s)",
               f"its {longest} longest files: time (start)"], rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose suite runs (default: this one)")
    parser.add_argument("--label", default="after", help="name of this run in suite_results.json")
    args = parser.parse_args()
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    saved[args.label] = {"machine": machine(), "tree": str(args.tree), **run(args.tree.resolve())}
    RESULTS.write_text(json.dumps(saved))
    write_section("cold start suite schedule", "\n\n".join(
        f"### {label} ({entry['machine']})\n\n{summarise(entry)}" for label, entry in saved.items()))


if __name__ == "__main__":
    main()
