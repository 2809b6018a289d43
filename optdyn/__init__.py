"""optdyn — optimal control of articulated robots on top of :mod:`dynamics`.

    import optdyn, problems
    prob = problems.arm_obstacle.make(scenario="bent")
    res  = optdyn.solve(prob, solver="ddp")          # "ddp" | "ilqr" | "ipopt"
    optdyn.warmup(prob, solvers=("ddp", "ilqr"))     # compile ahead: the next solve compiles nothing
    optdyn.compare(prob, solvers=("ddp", "ilqr"), plot="convergence.png")
    optdyn.save_html(res, "arm.html", problem=prob)  # offline meshcat replay
    optdyn.plot_trajectory(res, "arm.png")           # q, v, u with limits, clearance, convergence
    optdyn.sweep(problems.arm_obstacle.make, grid={"horizon": [3.0, 4.0]}, starts=8, out="runs/")  # Dask
    mpc  = optdyn.MPC(problems.get("ur5-reach", N=40), "ilqr", iterations=1)  # real-time iterations
    loop = optdyn.simulate(mpc, 3.0, disturbances=[optdyn.Push("tool0", (0, 30, 0), 1.0, 0.2)])
    optdyn.save_closed_loop(loop, "loop.npz"); optdyn.plot_closed_loop(loop, "loop.png")  # save_html(loop, ...) too

Problems own one discretisation (N intervals of m RK4 sub-steps, control held) that
DDP, iLQR and the IPOPT multiple-shooting NLP all solve, so their optima coincide.
"""
from dynamics.parallel import get_num_threads, set_num_threads

from . import constraints, costs
from .apps import report
from .apps.clearance import clearances
from .apps.compare import compare
from .apps.io import load, load_closed_loop, load_result, save_closed_loop, save_result
from .viz.plots import plot_closed_loop, plot_trajectory
from .ocp.derivative_check import check_derivatives
from .ocp.problem import Problem
from .ocp.user_residual import UserResidual
from .solvers.result import STATUSES, Result
from .solvers.solve import solve
from .solvers.mpc import MPC
from .apps.mujoco_plant import MujocoPlant
from .apps.simulate import ClosedLoop, Push, simulate
from .apps.sweep import sweep
from .apps.warmup import warmup

__all__ = [
    "Problem", "Result", "STATUSES", "solve", "compare", "costs", "constraints", "clearances", "report",
    "save_result", "load_result", "view", "save_html", "plot_trajectory", "sweep",
    "set_num_threads", "get_num_threads", "check_derivatives", "UserResidual", "MPC", "simulate", "Push", "MujocoPlant",
    "ClosedLoop", "save_closed_loop", "load_closed_loop", "load", "plot_closed_loop", "warmup",
]


def __getattr__(name: str):
    """``view`` and ``save_html`` load meshcat only when first used."""
    if name in ("view", "save_html"):
        from . import viz
        return getattr(viz, name)
    raise AttributeError(f"module 'optdyn' has no attribute {name!r}")
