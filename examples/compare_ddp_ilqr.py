"""Compare DDP (full second-order dynamics tensors) with iLQR on ready-made problems.

Prints a table (iterations, final cost, wall time, time per iteration, local convergence)
per problem and saves log-scale convergence plots next to this script's working directory.

    .venv/bin/python examples/compare_ddp_ilqr.py
"""
from optdyn.apps.compare import compare
from problems import pendulum, ur5_reach

for prob in (ur5_reach.make(), pendulum.make_pendulum(), pendulum.make_double_pendulum()):
    report = compare(prob, ("ddp", "ilqr"), plot=f"convergence_{prob.name}.png", max_iter=500)
    print(report, end="\n\n")
