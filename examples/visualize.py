"""Solve the UR5 reaching task and save a self-contained HTML replay (no server needed).

    python examples/visualize.py                 # writes a temporary .html and prints its path
    python examples/visualize.py out.html        # writes out.html
    python examples/visualize.py out.html --result run.npz   # draw a saved result instead

Open the file in any browser: it replays the trajectory offline. For a live viewer use
``optdyn.viz.view(result, problem)`` (serves on 127.0.0.1 and prints the URL).
"""
import argparse
import os
import tempfile

import problems
from optdyn import viz
from optdyn.apps.io import load_result
from optdyn.solvers.solve import solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="HTML file to write (default: a temporary file)")
    parser.add_argument("--result", help="saved result (.npz) to draw instead of solving")
    args = parser.parse_args()
    out = args.out or os.path.join(tempfile.mkdtemp(prefix="optdyn-"), "ur5_reach.html")

    if args.result:
        result = load_result(args.result)
        problem = problems.get(result.problem, **result.params)
    else:
        problem = problems.get("ur5-reach", N=40, dt=0.1)
        result = solve(problem, solver="ddp")
        print(result)
    viz.save_html(result, out, problem, frames=["tool0"])
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
