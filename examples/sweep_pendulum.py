"""A parameter sweep with multi-start on Dask: the pendulum swing-up for three torque limits,
three initial guesses each, on an embedded local cluster of two worker processes.

Writes runs/pendulum/ (one .npz per job, summary.csv, cost.png, sweep.json) and prints the
best cost per torque limit and the distinct local optima. Run it twice: the second run
reads the finished jobs back and solves nothing.

    .venv/bin/python examples/sweep_pendulum.py
    .venv/bin/optdyn show runs/pendulum/<job>.npz      # any result of the sweep
"""
import optdyn
import problems

if __name__ == "__main__":  # Dask starts worker processes that import this file: keep the guard
    summary = optdyn.sweep(problems.pendulum.make_pendulum, grid={"u_max": [4.0, 5.0, 6.0]}, starts=3,
                           solver="ddp", out="runs/pendulum", workers=2)
    print(summary)
    best = min((p for p in summary.points if p.best), key=lambda p: p.best["cost"])
    print(f"lowest cost {best.best['cost']:.6g} at u_max = {best.point['u_max']} (start {best.best['start']})")
