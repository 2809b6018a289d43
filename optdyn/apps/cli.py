"""The ``optdyn`` command line (also ``python -m optdyn``).

    optdyn info                                   dynamics demo on the UR5, warm timings
    optdyn list                                   problems and their scenarios
    optdyn solve PROBLEM [--scenario S] [--solver ddp|ilqr|ipopt|al-ddp|al-ilqr] [--max-iter N] [--max-time S]
                 [--param KEY=VALUE ...] [--save result.npz] [--html out.html] [--plot out.png] [--view] [--mu MU]
    optdyn compare PROBLEM [--scenario S] [--solvers ddp,ilqr,ipopt] [--plot out.png]
    optdyn show result.npz [--html out.html] [--view] [--mu MU]      (a closed loop's file too)
    optdyn plot result.npz --out traj.png [--mu MU]   q, v, u with limits, clearance, convergence (or a closed loop's)
    optdyn mpc PROBLEM [--scenario S] [--param KEY=VALUE ...] [--duration S] [--push FRAME:FX,FY,FZ@START+DURATION ...]
               [--solver ilqr|ddp|ipopt] [--iterations N|converge] [--warm-start W] [--horizon receding|shrinking|H]
               [--plant optdyn|mujoco] [--friction MU] [--contact stiff|soft] [--effort N·M]
               [--save loop.npz] [--html out.html] [--plot out.png] [--view]
                                                  model predictive control in closed loop, with pushes
    optdyn sweep PROBLEM [--scenario S] [--solver S] --grid KEY=V1,V2,... [--grid ...] [--starts K]
                 --out DIR [--param KEY=VALUE ...] [--max-iter N] [--scheduler tcp://HOST:PORT] [--workers N]
    optdyn warmup [PROBLEM ...] [--solvers ddp,ilqr,ipopt] [--all] [--jobs N] [--script FILE]
                                                  compile ahead of time, one process per solve, or
                                                  for the problems a script of one's own defines

``optdyn --version`` prints the version; ``--quiet`` (solve, sweep) drops the iteration
log and progress bar. ``--param KEY=VALUE`` reads VALUE as JSON, or a comma-separated
list of numbers (``--param target=0.4,0.3,0.4``), or else a string. A result saved from a
problem written in a script (not registered) reopens from the problem record it stores.

Exit code 0 on success; otherwise 1 with a one-line reason on stderr (unknown problem,
bad file, bad option, unwritable output path — checked before solving —, solver failure, a
closed loop whose plant diverged). Ctrl-C during a solve (or a closed loop) prints the
summary of the last iterate (of the steps run), writes the outputs asked for, prints a
one-line notice, and exits with 130; SIGTERM exits with 143 after stopping the viewer's server. The first run
on a cold numba cache prints a one-line notice on stderr (:mod:`optdyn.solvers.runtime`). This
module is the one place that knows all three packages (``dynamics``, ``optdyn``,
``problems``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

import dynamics as dyn
import problems
from problems.gaits import SOLO_SCALE, TALOS_SCALE

from .clearance import clearances, constraint_margins, margin_constraints
from .io import load, save_closed_loop, save_result
from .report import base_motion, task_errors, task_lines, tracking_errors
from .simulate import REFINEMENT, ClosedLoop, Push, check_push
from ..solvers.result import Result
from ..ocp.task import clearance_constraints, problem_of

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class CommandError(Exception):
    """A failure reported as one line on stderr with exit code 1."""


def check_writable(path: str, option: str) -> None:
    """CommandError naming ``option`` unless a file can be written at ``path``.

    Checked before any solving: the directory must exist and be writable, and ``path``
    must not be a directory nor an existing read-only file. Nothing is created.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{option}: {path} is a directory, expected a file path")
    if not os.path.isdir(directory):
        raise CommandError(f"{option}: cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CommandError(f"{option}: cannot write {path}: directory {directory} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CommandError(f"{option}: cannot write {path}: the file exists and is read-only")


def _check_outputs(args: argparse.Namespace) -> None:
    """Check every output path given on the command line (--save, --html, --plot)."""
    for option in ("save", "html", "plot"):
        path = getattr(args, option, None)
        if path:
            check_writable(path, f"--{option}")


# ----------------------------------------------------------------------------- info

def _warm_time(fn: Callable, repeat: int = 200) -> float:
    """Median wall time of ``fn()`` in µs after one warm-up call."""
    fn()
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        samples.append((time.perf_counter() - t) / repeat)
    return 1e6 * float(np.median(samples))


def cmd_info(args: argparse.Namespace) -> int:
    """Run each dynamics algorithm on the UR5 and print results and warm timings."""
    from dynamics.aba_derivatives import aba_derivatives
    from dynamics.aba_second_derivatives import aba_second_derivatives
    from dynamics.rnea_derivatives import rnea_derivatives
    from dynamics.rnea_second_derivatives import rnea_second_derivatives

    model = dyn.models.ur5()
    rng = np.random.default_rng(0)
    q, v, a = rng.uniform(-1, 1, model.nq), rng.normal(size=model.nv), rng.normal(size=model.nv)
    tau = dyn.rnea(model, q, v, a)
    runs = [
        ("rnea", "τ = ID(q, v, a)", lambda: dyn.rnea(model, q, v, a)),
        ("aba", "q̈ = FD(q, v, τ)", lambda: dyn.aba(model, q, v, tau)),
        ("crba", "M(q)", lambda: dyn.crba(model, q)),
        ("minv", "M⁻¹(q), Carpentier's algorithm", lambda: dyn.minv(model, q)),
        ("rnea_derivatives", "∂τ/∂q, ∂τ/∂v", lambda: rnea_derivatives(model, q, v, a)),
        ("aba_derivatives", "∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ", lambda: aba_derivatives(model, q, v, tau)),
        ("rnea_second_derivatives", "IDSVA-SO: ∂²τ/∂q², ∂²τ/∂v², ∂²τ/∂q∂v, ∂M/∂q",
         lambda: rnea_second_derivatives(model, q, v, a)),
        ("aba_second_derivatives", "FDSVA-SO: ∂²q̈/∂q², ∂²q̈/∂v², ∂²q̈/∂q∂v, ∂²q̈/∂q∂τ",
         lambda: aba_second_derivatives(model, q, v, tau)),
    ]
    with np.printoptions(precision=4, suppress=True, linewidth=120):
        print(f"{model!r}\nframes: {', '.join(model.frame_names)}")
        print(f"q = {q}\nv = {v}\na = {a}\n\n{'algorithm':<25}{'warm time':>12}   computes")
        out = {}
        for name, what, fn in runs:
            out[name] = fn()
            print(f"{name:<25}{_warm_time(fn, 20 if 'second' in name else 200):>9.1f} µs   {what}")
        M, Minv, qdd = out["crba"], out["minv"], out["aba"]
        print(f"\nτ = rnea(q, v, a) = {tau}\nq̈ = aba(q, v, τ)  = {qdd}   (‖q̈ − a‖∞ = {np.max(np.abs(qdd - a)):.1e})")
        print(f"diag M(q) = {np.diag(M)}\n‖M·minv(q) − 1‖∞ = {np.max(np.abs(M @ Minv - np.eye(model.nv))):.1e}")
        print(f"gravity torques g(q) = {dyn.gravity_torques(model, q)}")
    return 0


# ----------------------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    """Print every registered problem, its description and scenarios."""
    for name in problems.names():
        entry = problems.entry(name)
        scenarios = f"  [scenarios: {', '.join(entry.scenarios)}]" if entry.scenarios else ""
        print(f"{name:<18}{entry.description}{scenarios}")
    return 0


# ---------------------------------------------------------------------------- solve

def _json_or_text(value: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


NAME = re.compile(r"[A-Za-z_][\w.\-]*")
"""A name a comma-separated ``--param`` value may list: a frame's or a joint's, not a path."""


def _parse_param(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` → (key, value); VALUE is read as JSON (numbers, lists, …), as a list if
    it is comma-separated numbers (``0.4,0.3,0.4``) or names (``FL_FOOT,FR_FOOT``), or else
    as a string."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    parsed = _json_or_text(value)
    if isinstance(parsed, str) and "," in value:
        items = [_json_or_text(v.strip()) for v in value.split(",")]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items) or \
                all(isinstance(v, str) and NAME.fullmatch(v) for v in items):
            return key, items
    return key, parsed


def _make_problem(name: str, scenario: str | None, pairs: Sequence[tuple[str, object]]):
    """Problem ``name`` built with the ``--param`` (key, value) ``pairs`` and ``--scenario``."""
    entry = problems.entry(name)  # ValueError listing the known names
    params = dict(pairs)
    if scenario is not None:
        if scenario not in entry.scenarios:
            known = ", ".join(entry.scenarios) or "none"
            raise CommandError(f"--scenario: problem {name!r} has no scenario {scenario!r}; scenarios: {known}")
        params["scenario"] = scenario
    try:
        return problems.get(name, **params)
    except TypeError as e:  # a --param the factory does not take
        raise CommandError(f"--param: {e}") from None


def _progress_line(row: dict) -> str:
    """One line per solver iteration from a DDP/iLQR or IPOPT callback record."""
    cost = row.get("cost", row.get("objective", np.nan))
    violation = row.get("violation", row.get("inf_pr", np.nan))
    gradient = row.get("gradient", row.get("inf_du", np.nan))
    return (f"{int(row.get('iteration', -1)):5d}  cost {cost:.8e}  viol {violation:.2e}  "
            f"grad {gradient:.2e}  t {row.get('time', np.nan):7.3f} s")


class Progress:
    """Live iteration log: one line per iteration, numbered as ``Result.iterations`` counts;
    an augmented-Lagrangian multiplier update is a marked line: in the outer loop (the first
    row of a later outer iteration, the same trajectory) instead of an iteration, for the
    solvers that revise the multipliers inside the iteration ("al-…", every row a step) after
    the iteration that made it."""

    def __init__(self) -> None:
        self.outer, self.count = 0, 0

    def __call__(self, row: dict) -> None:
        from ..solvers.solve import INSIDE

        outer = int(row.get("outer", 0))
        inside = str(row.get("solver", "")).startswith(INSIDE)
        updated = outer != self.outer and (self.outer > 0 or inside)
        self.outer = outer
        if inside or not updated:
            print(_progress_line(dict(row, iteration=self.count)), flush=True)
            self.count += 1
        if updated:
            print(f"      -- multipliers updated: {'revision' if inside else 'outer iteration'} {outer}, "
                  f"viol {row.get('violation', np.nan):.2e}", flush=True)


def _summary(result: Result, problem=None) -> list[str]:
    compile_time = float(result.extra.get("compile_time", 0.0))
    lines = [f"solver      {result.solver or '?'} on {result.problem or '?'} {result.params or ''}".rstrip(),
             f"status      {result.status}" + (f" ({result.message})" if result.message else ""),
             f"converged   {'yes' if result.converged else 'no'} (the solver's tolerance; the task errors "
             f"below say whether the task was achieved)",
             f"cost        {result.cost:.10g}",
             f"iterations  {result.iterations}",
             f"time        {result.wall_time:.3f} s" + (f" (includes {compile_time:.1f} s of kernel compilation)"
                                                       if compile_time > 0 else "")]
    if problem is not None:
        try:
            lines += task_lines(task_errors(problem, result.xs, result.us))
        except ValueError as e:
            lines.append(f"task        not evaluated: {e}")
    if problem is not None and clearance_constraints(problem):
        lines.append(_or_reason("clearance", lambda: _clearance_line(problem, result)))
    if problem is not None and (problem.path_constraints or problem.stage_constraints):
        lines.append(_or_reason("margins", lambda: _margins_line(problem, result)))
    return lines


def _or_reason(label: str, line) -> str:
    """``line()``, or "<label> not computed: <why>" when it raises ValueError."""
    try:
        return line()
    except ValueError as e:
        return f"{label:<12}not computed: {e}"


def _clearance_line(problem, result: Result) -> str:
    c = clearances(problem, result.xs, result.us)
    return (f"clearance   min {c.min:+.4f} m over every RK sub-step, {c.min_nodes:+.4f} m at the "
            f"nodes (required ≥ {c.margin:.4f} m)")


def _margins_line(problem, result: Result) -> str:
    g = constraint_margins(problem, result.xs, result.us)
    if not g.substepped:
        return (f"margins     min {g.nodes:+.4g} at the nodes and knots (interval {g.interval}, {g.constraint}; "
                "required ≥ 0; sub-steps not checked with contacts)")
    return (f"margins     min {g.nodes:+.4g} at the nodes, {g.substeps:+.4g} at the worst RK sub-step "
            f"(interval {g.interval}, step {g.substep}, {g.constraint}; required ≥ 0)")


def _plot(result: Result | ClosedLoop, path: str, problem, mu: float | None) -> None:
    """The figure of a result (friction-cone margins with ``mu``) or of a closed loop, to ``path``."""
    from ..viz.plots import plot_closed_loop, plot_trajectory

    if isinstance(result, ClosedLoop):
        plot_closed_loop(result, path, problem)
    else:
        plot_trajectory(result, path, problem, mu=mu)
    print(f"plot        {path}")


def _interrupted(result: Result | ClosedLoop, problem, args: argparse.Namespace, notice: str) -> int:
    """After Ctrl-C: write the outputs asked for (serving none), print ``notice``; the exit status."""
    args.view = False
    _outputs(result, problem, args)
    print(notice, file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _outputs(result: Result | ClosedLoop, problem, args: argparse.Namespace) -> None:
    """Write --save/--plot/--html and serve --view as asked, for a result or a closed loop."""
    loop = isinstance(result, ClosedLoop)
    if getattr(args, "save", None):
        (save_closed_loop if loop else save_result)(result, args.save)
        print(f"saved       {args.save}")
    mu = getattr(args, "mu", None)  # not an option of mpc: a closed loop has no contacts
    if getattr(args, "plot", None):
        _plot(result, args.plot, problem, mu)
    if args.html or args.view:
        from .. import viz

        if args.html:
            viz.save_html(result, args.html, problem, path_frame=args.path_frame, mu=mu)
            print(f"html        {args.html}")
        if args.view:
            viz.view(result, problem, path_frame=args.path_frame, mu=mu)
            try:  # Ctrl-C is the normal end of serving (exit 0), even right after this line
                print("serving until Ctrl-C", flush=True)
                while True:
                    time.sleep(1.0)
            except KeyboardInterrupt:
                pass


def _stand_in():
    """Two intervals of the built-in UR5 without costs, its guess given (zeros: the default
    guess, gravity compensation, would compile the RNEA first): a problem whose dynamics have
    the type of every robot task's without contacts, which the compile-ahead helpers' kernels
    depend on alone (:func:`_building_ahead`)."""
    from ..ocp.problem import Problem

    model, N = dyn.models.ur5(), 2
    nx = model.nq + model.nv
    return Problem(model, np.zeros(nx), N, 0.1, us_init=np.zeros((N, model.nv)), xs_init=np.zeros((N + 1, nx)))


def _building_ahead(args: argparse.Namespace):
    """The context to build PROBLEM in: for a task without contacts, the solve's compile-ahead
    helpers (:mod:`optdyn.solvers.compile_ahead`) begin at the construction's first compilation
    (a cold cache), on a stand-in of the task's dynamics (:func:`_stand_in`), instead of at the
    solve's: a kernel a construction compiles (arm-obstacle's guess's gravity torques, 5 s) is
    not the solve's, and the helpers' part is the cold start's critical path."""
    from ..solvers import compile_ahead

    if problems.entry(args.problem).contacts:
        return contextlib.nullcontext()
    return compile_ahead.Ahead(_stand_in(), args.solver)


def cmd_solve(args: argparse.Namespace) -> int:
    """Build PROBLEM, solve it with live progress, print a summary, write outputs."""
    _check_outputs(args)
    with _building_ahead(args):
        problem = _make_problem(args.problem, args.scenario, args.param)
    from ..solvers.solve import solve

    options = {"callback": None if args.quiet else Progress(), "max_time": args.max_time}
    if args.max_iter is not None:
        options["max_iter"] = args.max_iter
    if args.shooting is not None:
        if args.solver == "ipopt":
            raise CommandError("--shooting: only for ddp and ilqr (IPOPT's transcription is multiple shooting)")
        options["feasibility_driven"] = args.shooting == "multiple"
    if not args.quiet:
        print(f"solving {args.problem} ({problem.N} intervals, T = {problem.T:g} s) with {args.solver}", flush=True)
    result = solve(problem, solver=args.solver, **options)
    print("\n".join(_summary(result, problem)), flush=True)
    if result.status == "interrupted":
        return _interrupted(result, problem, args, f"optdyn solve: interrupted (Ctrl-C) after {result.iterations} "
                                                   "iterations; the summary above is of the last iterate")
    _outputs(result, problem, args)
    if not result.converged:
        detail = f" ({result.message})" if result.message else ""
        raise CommandError(f"solver did not converge: {result.status}{detail}")
    return 0


# -------------------------------------------------------------------------- compare

def cmd_compare(args: argparse.Namespace) -> int:
    """Solve PROBLEM with each solver and print the comparison table (and plot)."""
    _check_outputs(args)
    problem = _make_problem(args.problem, args.scenario, args.param)
    from .compare import compare

    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    print(compare(problem, solvers=args.solvers.split(","), plot=args.plot, **options))
    if args.plot:
        print(f"plot        {args.plot}")
    return 0


# ----------------------------------------------------------------------------- show

def _registered(name: str, params: dict):
    """Problem ``name`` of the ``problems`` registry built with ``params``; None if not registered
    (the lookup :func:`optdyn.ocp.task.problem_of` is given by ``show`` and ``plot``)."""
    if name not in problems.REGISTRY and name.replace("_", "-") not in problems.REGISTRY:
        return None
    return problems.get(name, **params)


def cmd_show(args: argparse.Namespace) -> int:
    """Summarise a saved result or closed loop; rebuild its problem for clearance/HTML/viewer."""
    _check_outputs(args)
    result = load(args.file)
    problem, why = None, ""
    try:
        problem = problem_of(result, make=_registered)
    except ValueError as e:
        why = str(e).removeprefix("problem: ")
    if problem is None and (args.html or args.view):
        raise CommandError(f"{args.file}: {why}")
    loop = isinstance(result, ClosedLoop)
    print("\n".join(_loop_summary(result, problem) if loop else _summary(result, problem)))
    if problem is None:
        print(f"note        {why}; {'tracking' if loop else 'clearance'} not checked")
    _outputs(result, problem, args)
    return 0


# ----------------------------------------------------------------------------- plot

def cmd_plot(args: argparse.Namespace) -> int:
    """Plot a saved result (q, v, u with limits, clearance, convergence) or closed loop
    (tracking error, torques, positions, solve times)."""
    check_writable(args.out, "--out")
    result = load(args.file)
    try:
        problem = problem_of(result, make=_registered)
    except ValueError as e:
        raise CommandError(f"{args.file}: {str(e).removeprefix('problem: ')}") from None
    _plot(result, args.out, problem, args.mu)
    return 0


# ------------------------------------------------------------------------------ mpc

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PUSH = re.compile(rf"(?P<frame>[^:]+):(?P<force>{_NUMBER},{_NUMBER},{_NUMBER})@(?P<start>{_NUMBER})"
                   rf"\+(?P<duration>{_NUMBER})")


def parse_push(text: str) -> Push:
    """``FRAME:FX,FY,FZ@START+DURATION`` (world-frame force in N, times in s) → :class:`Push`;
    CommandError naming --push if malformed or if :class:`Push` refuses it (a negative time)."""
    m = _PUSH.fullmatch(text.strip())
    if m is None:
        raise CommandError(f"--push: expected FRAME:FX,FY,FZ@START+DURATION (N, s), e.g. tool0:0,30,0@1.0+0.2, "
                           f"got {text!r}")
    try:
        return Push(m["frame"], tuple(float(f) for f in m["force"].split(",")), float(m["start"]),
                    float(m["duration"]))
    except ValueError as e:
        raise CommandError(f"--push {text}: {e}") from None


def _iterations(text: str) -> int | None:
    """--iterations: an integer ≥ 1, or "converge" (None: every step solved to convergence)."""
    if text == "converge":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise CommandError(f"--iterations: expected an integer ≥ 1 or 'converge', got {text!r}")
    return n


def _horizon(text: str | None) -> str | int | None:
    """--horizon: receding, shrinking, or a number of intervals H (MPC checks 1 ≤ H ≤ N); None
    where not given (the problem's own: :class:`optdyn.MPC`)."""
    from ..solvers.mpc import HORIZONS

    if text is None or text in HORIZONS:
        return text
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"--horizon: expected receding, shrinking or a number of intervals, got {text!r}") from None


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.3g} ms"


def _plant_line(loop: ClosedLoop, plant=None) -> str:
    """What the plant of ``loop`` was (its MujocoPlant ``plant`` for the details)."""
    if loop.plant != "mujoco":
        return f"{REFINEMENT}× finer RK4 of the controller's model"
    if plant is None:
        return "MuJoCo"
    clamp = "the URDF's torque limits" if plant.effort is None else f"torques clamped at {plant.effort:g}"
    return (f"MuJoCo, steps of {plant.timestep * 1e3:g} ms under the feedback policy, friction {plant.friction:g}, "
            f"{plant.contact} contact, {clamp}")


def _loop_summary(loop: ClosedLoop, problem=None, plant=None) -> list[str]:
    """Summary lines of a closed loop: controller, pushes, real-time figures, and with its
    problem the horizon, the task errors and, for a floating base, how it moved."""
    limit = ("to convergence" if loop.iteration_limit is None else
             f"{loop.iteration_limit} iteration{'s' if loop.iteration_limit > 1 else ''} per step"
             + (" (real-time iteration)" if loop.iteration_limit == 1 else ""))
    n = len(loop.us)
    params = " ".join(f"{k}={','.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"
                      for k, value in loop.params.items())  # as --param takes them
    horizon = f"{loop.horizon} horizon" if isinstance(loop.horizon, str) else f"{loop.horizon}-interval horizon"
    lines = [f"controller  MPC {loop.solver}, {limit}, warm start {loop.warm_start}, {horizon}, "
             f"on {loop.problem} "
             f"{params}".rstrip()]
    if problem is not None:
        H = problem.N if isinstance(loop.horizon, str) else loop.horizon
        lines.append(f"horizon     {H} intervals of {problem.dt:g} s ({H * problem.dt:g} s; the task {problem.T:g} s), "
                     f"re-planned every {loop.dt:g} s; plant: {_plant_line(loop, plant)}")
    lines.append(f"simulated   {loop.t[-1]:g} s, {n} steps" + (f" (stopped: {loop.stopped})" if loop.stopped else ""))
    lines += [f"push        {d.frame}: ({', '.join(f'{f:g}' for f in d.force)}) N from {d.start:g} s for "
              f"{d.duration:g} s" for d in loop.disturbances]
    if n:
        lines.append(f"first solve {loop.solve_time[0]:.3g} s, {loop.iterations[0]} iterations, {loop.status[0]} "
                     "(from the problem's initial guess; not counted below)")
    if n > 1:
        times = loop.solve_time[1:]
        worst = 1 + int(np.argmax(times))
        over = int(np.count_nonzero(times > loop.dt))
        lines.append(f"real time   median step {_ms(np.median(times))} = {np.median(times) / loop.dt:.3g}× the "
                     f"control period ({_ms(loop.dt)}); worst {_ms(times.max())} = {times.max() / loop.dt:.3g}× "
                     f"at t = {loop.t[worst]:g} s; {over} of {n - 1} steps over the period")
        counts = Counter(loop.status[1:])
        lines.append(f"steps       iterations {int(np.median(loop.iterations[1:]))} (median), max "
                     f"{loop.iterations[1:].max()}; status " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if problem is None:
        return lines
    since = min((d.start for d in loop.disturbances), default=0.0)  # the largest error after the first push
    after = loop.t >= since - 1e-9
    largest = "largest since the first push" if loop.disturbances else "largest"
    for label, e in tracking_errors(problem, loop.xs, loop.t).items():
        worst = int(np.argmax(np.where(after, e, -np.inf))) if after.any() else len(e) - 1
        lines.append(f"tracking    {label}: {e[-1]:.4g} at t = {loop.t[-1]:g} s; {largest} {e[worst]:.4g} at "
                     f"t = {loop.t[worst]:g} s")
    if problem.model.joint_types[0] == "free-flyer" and n:
        b = base_motion(problem, loop.xs, loop.t)
        lines.append(f"base        lowest {b.lowest:.3f} m, largest tilt {b.largest_tilt:.1f}°, advanced "
                     f"{b.advanced:.3f} m along x (the task: {b.commanded:.3f} m)")
    if loop.margins.size:
        i, j = np.unravel_index(np.argmin(loop.margins), loop.margins.shape)
        which = type(margin_constraints(problem)[j]).__name__
        lines.append(f"margins     min {loop.margins[i, j]:+.4g} ({which}) in the step from t = {loop.t[i]:g} s, "
                     "over every plant step (required ≥ 0)")
    return lines


MUJOCO_SCENARIOS = {
    "quadruped": {"params": {"cone": "cost", "mu": 0.7}, "horizon": "25", "effort": 5.0, "mass": SOLO_SCALE[0],
                  "push": {"trot": "base_link:0,12,0@1.0+0.2", "walk": "base_link:0,5,0@1.0+0.2"}},
    "biped": {"params": {"mu": 0.7}, "mass": TALOS_SCALE[0], "push": {"stand": "base_link:0,40,0@0.5+0.2"}},
}
"""What ``optdyn mpc PROBLEM --plant mujoco`` sets unless given on the command line: the task's
parameters, the horizon, a push by scenario (when no --push is given) and the plant's torque clamp; a
``mu`` here is scaled by --friction (the controller's pyramid 0.7× the floor's friction: with
the task's μ = 0.7 on a floor of 0.7 the trot's touchdowns, planned at the pyramid's edge, slip
and it falls within 0.5 s; at 0.49 it trots 10 s, measured). Solo-12:
the friction pyramid as a barrier cost (one iLQR iteration per step keeps the forces inside
it), a 0.5 s horizon, a 12 N side push on the base for 0.2 s (5 N walking: 10 N makes the walk
fall, measured), and its joints' torques clamped
at 5 N·m (its URDF's 1000 N·m is a placeholder: unclamped, with one iLQR iteration per step, a
leg that the plan holds in stance while it is in the air after the push spins up under the
feedback policy until MuJoCo diverges, measured; at its motors' 2.7 N·m peak (Grimminger et al.
2020) the trot's touchdowns saturate and it falls).
Talos' legs (``--scenario stand``): a 40 N side push at the pelvis for 0.2 s, its URDF's torque
limits; its soles' boxes take the size of the task's wrench cones (its SRDF's). A robot of one's
own (``--param model=``) keeps its URDF's torque limits, and the push acts on its root body
with the force scaled by its mass over the default robot's (``mass``)."""


def _mujoco_setup(args: argparse.Namespace) -> tuple[list, str | None, float | None]:
    """(--param pairs, --horizon, torque clamp) of ``optdyn mpc --plant mujoco``:
    :data:`MUJOCO_SCENARIOS`' where the command line gives none."""
    if not (np.isfinite(args.friction) and args.friction > 0):
        raise CommandError(f"--friction: expected a friction coefficient > 0, got {args.friction:g}")
    recipe = MUJOCO_SCENARIOS.get(args.problem, {})
    given = dict(args.param)
    params = dict(recipe.get("params", {}))
    if "mu" in params:  # the controller's friction pyramid inside the floor's
        params["mu"] = round(params["mu"] * args.friction, 6)
    pairs = [(k, v) for k, v in params.items() if k not in given] + list(args.param)
    horizon = args.horizon if args.horizon is not None else recipe.get("horizon")
    clamp = None if _own_robot(args) else recipe.get("effort")  # one's own robot: its URDF's limits
    return pairs, horizon, args.effort if args.effort is not None else clamp


def _own_robot(args: argparse.Namespace) -> bool:
    """Whether the command line gives a robot of one's own (``--param model=``)."""
    return "model" in dict(args.param)


def _scenario_push(args: argparse.Namespace, problem) -> list[str]:
    """The push of the problem's scenario in :data:`MUJOCO_SCENARIOS` as --push texts (none if
    it has none): what ``optdyn mpc --plant mujoco`` applies when no --push is given; on a robot
    of one's own, at its root body with the force scaled by its mass."""
    recipe = MUJOCO_SCENARIOS.get(args.problem, {})
    text = recipe.get("push", {}).get(problem.params.get("scenario"))
    if text is None or not _own_robot(args):
        return [] if text is None else [text]
    push, scale = parse_push(text), float(problem.model.inertia[:, 0].sum()) / recipe["mass"]
    fx, fy, fz = (scale * f for f in push.force)
    return [f"{problem.model.body_names[0]}:{fx:.6g},{fy:.6g},{fz:.6g}@{push.start!r}+{push.duration!r}"]


def _long_enough(args: argparse.Namespace, pairs: list, problem, duration: float):
    """The problem again with gait cycles enough for ``duration`` s (a task with a ``cycles``
    parameter not given on the command line, shorter than the run), else ``problem``: the
    controller's window slides along the task, which holds its last interval past its end."""
    cycles = problem.params.get("cycles")
    if cycles is None or "cycles" in dict(pairs) or problem.T >= duration:
        return problem
    return _make_problem(args.problem, args.scenario, [*pairs, ("cycles", int(np.ceil(duration * cycles
                                                                                       / problem.T)) + 1)])


DURATION = 6.0
"""``optdyn mpc``'s --duration (s) for a task that goes on; a task done at its end is simulated
to its end T (:func:`_default_duration`)."""


def _default_duration(problem) -> float:
    """--duration where the command line gives none: the task's end T for a task done at its end
    (``Problem.done_at_end``; past T it asks nothing, and a shrinking horizon's one last interval
    does not stop the Panda's hand, which passes its target at 12 rad/s: the plant diverged at
    3.65 s of 6, measured), else :data:`DURATION`."""
    return problem.T if problem.done_at_end else DURATION


def cmd_mpc(args: argparse.Namespace) -> int:
    """Run PROBLEM's receding-horizon controller against the finer plant with the --push es;
    print the summary (with the real-time factor), write the outputs."""
    _check_outputs(args)
    pairs, horizon, effort = (_mujoco_setup(args) if args.plant == "mujoco" else
                              (args.param, args.horizon, None))
    pushes = [parse_push(text) for text in args.push]
    iterations = _iterations(args.iterations)
    if args.duration is not None and not (np.isfinite(args.duration) and args.duration > 0):
        raise CommandError(f"--duration: expected a time > 0 s, got {args.duration:g}")
    problem = _make_problem(args.problem, args.scenario, pairs)
    duration = _default_duration(problem) if args.duration is None else args.duration
    plant, texts = None, args.push
    if args.plant == "mujoco":
        from .mujoco_plant import plant_for

        problem = _long_enough(args, pairs, problem, duration)
        plant = plant_for(problem, friction=args.friction, contact=args.contact, effort=effort)
        if not texts:
            texts = _scenario_push(args, problem)
            pushes = [parse_push(text) for text in texts]
    for text, push in zip(texts, pushes):
        try:
            check_push(problem.model, push)
        except ValueError as e:
            raise CommandError(f"--push {text}: {e}") from None
    from ..solvers.mpc import MPC
    from .simulate import simulate

    mpc = MPC(problem, args.solver, iterations, warm_start=args.warm_start, horizon=_horizon(horizon))
    print(f"simulating {args.problem} for {duration:g} s: MPC with {args.solver}, horizon {mpc.problem.N} × "
          f"{problem.dt:g} s", flush=True)
    loop = simulate(mpc, duration, plant=plant, disturbances=pushes)
    print("\n".join(_loop_summary(loop, problem, plant)), flush=True)
    if loop.interrupted:
        return _interrupted(loop, problem, args, f"optdyn mpc: {loop.stopped} after {len(loop.us)} steps; the "
                                                 "summary above is of those")
    _outputs(loop, problem, args)
    if loop.stopped:
        raise CommandError(f"the closed loop stopped early: {loop.stopped}")
    return 0


# ---------------------------------------------------------------------------- sweep

def _parse_grid(text: str) -> tuple[str, list]:
    """``KEY=V1,V2,...`` → (key, [values]); each value read as JSON (numbers, true, ...) or a string."""
    key, sep, values = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=V1,V2,..., got {text!r}")
    parsed = []
    for value in values.split(",") if values else []:
        try:
            parsed.append(json.loads(value))
        except json.JSONDecodeError:
            parsed.append(value)
    return key, parsed


def cmd_sweep(args: argparse.Namespace) -> int:
    """Sweep PROBLEM over --grid with --starts initial guesses on Dask; print the summary."""
    entry = problems.entry(args.problem)  # ValueError listing the known names
    if args.scenario is not None and args.scenario not in entry.scenarios:
        known = ", ".join(entry.scenarios) or "none"
        raise CommandError(f"--scenario: problem {args.problem!r} has no scenario {args.scenario!r}; "
                           f"scenarios: {known}")
    grid: dict[str, list] = {}
    for key, values in args.grid:
        if key in grid:
            raise CommandError(f"--grid: parameter {key!r} given twice")
        grid[key] = values
    from .sweep import sweep

    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    summary = sweep(problems.factory(args.problem), grid, out=args.out, starts=args.starts, solver=args.solver,
                    scenario=args.scenario, params=dict(args.param), options=options,
                    perturbation=args.perturbation, scheduler=args.scheduler, workers=args.workers,
                    progress=not (args.no_progress or args.quiet))
    print(summary)
    if summary.failed:
        raise CommandError(f"{summary.failed} of {len(summary.rows)} jobs failed (status error); "
                           f"see {summary.out / 'summary.csv'}")
    return 0


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile the kernels of the named problems' solves (default: the README's main job),
    one process per job on every core, or of the problems a script defines, in this process
    (:mod:`optdyn.apps.warmup`)."""
    from .warmup import SOLVERS, CompileJob, script_problems, warm, warmup

    solvers = SOLVERS if args.all else tuple(s.strip() for s in args.solvers.split(","))
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown:
        raise CommandError(f"--solvers: unknown solver {unknown[0]!r}; expected some of {', '.join(SOLVERS)}")
    if args.jobs is not None and args.jobs < 1:
        raise CommandError(f"--jobs: expected an integer ≥ 1, got {args.jobs}")
    if args.script:
        if args.problem or args.all:
            raise CommandError("--script: give either problem names (or --all) or a script, not both")
        for name, problem in script_problems(args.script).items():
            for solver, s in warmup(problem, solvers).items():
                print(f"{name} ({solver}){'':<{max(1, 38 - len(name) - len(solver))}} {s:7.1f} s")
        return 0
    names = problems.names() if args.all else (args.problem or ["arm-obstacle"])
    jobs = [CompileJob(f"{name} ({solver})", problems.factory(name), solver) for name in names for solver in solvers]
    t0 = time.perf_counter()
    seconds = warm(jobs, processes=args.jobs, progress=not args.quiet)
    for label, s in seconds.items():
        print(f"{label:<40} {s:7.1f} s")
    print(f"compiled for {len(jobs)} solve(s) in {time.perf_counter() - t0:.1f} s")
    return 0


# ----------------------------------------------------------------------------- main

class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default: "(default: X)", "off" for flags; options
    whose default is None or empty state theirs in their own help text."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if "default" in help_text or not action.option_strings or action.default is argparse.SUPPRESS:
            return help_text
        if action.default is False:
            return help_text + " (default: off)"
        if action.default in (None, []):
            return help_text
        return help_text + " (default: %(default)s)"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("optdyn")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="optdyn", description="Trajectory optimisation for articulated robots.",
                                     formatter_class=HelpFormatter)
    from ..solvers.solve import CHOICES

    parser.add_argument("--version", action="version", version=f"optdyn {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, func: Callable) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=HelpFormatter)
        p.set_defaults(func=func)
        return p

    command("info", "dynamics demo on the UR5 (results and warm timings)", cmd_info)
    command("list", "problems and their scenarios", cmd_list)

    def problem_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("problem", help="problem name, e.g. arm-obstacle (see `optdyn list`)")
        p.add_argument("--scenario", help="scenario of the problem, e.g. bent (default: the factory's own)")
        p.add_argument("--param", action="append", default=[], type=_parse_param, metavar="KEY=VALUE",
                       help="factory parameter (repeatable), e.g. --param intervals=80 or --param "
                            "target=0.4,0.3,0.4; VALUE is JSON, comma-separated numbers or a string "
                            "(default: the factory's defaults)")

    def output_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--html", help="write a self-contained HTML replay of the trajectory (default: none)")
        p.add_argument("--view", action="store_true", help="serve the trajectory in meshcat on 127.0.0.1")
        p.add_argument("--path-frame", metavar="FRAME", help="frame whose path --html/--view draw (default: the "
                                                             "frame the costs and terminal constraints name)")

    def mu_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--mu", type=float, help="friction coefficient of the friction cones drawn and the cone "
                                                "margins plotted for a problem with contacts (default: the "
                                                "problem's friction-cone constraints' or costs', else 0.7)")

    def limits(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--max-iter", type=int, help=f"iteration limit of {what} (default: the solver's, 500)")

    solve = command("solve", "solve a problem with live progress", cmd_solve)
    problem_args(solve)
    solve.add_argument("--solver", choices=CHOICES, default="ddp",
                       help="the solver (al-ddp, al-ilqr: the constraints' multipliers revised inside the iteration)")
    limits(solve, "the solver")
    solve.add_argument("--shooting", choices=("single", "multiple"),
                       help="ddp/ilqr: start from the rollout of the controls (single, the default without contacts) "
                            "or from the problem's states and controls, closing the gaps as they go (multiple: the "
                            "feasibility-driven fddp/filqr, the default with contacts)")
    solve.add_argument("--max-time", type=float, metavar="SECONDS",
                       help="wall-clock limit of the solve (status time_limit, last iterate kept; default: none)")
    solve.add_argument("--save", help="write the result to this .npz file (default: not saved)")
    solve.add_argument("--quiet", action="store_true", help="no iteration log, only the summary")
    solve.add_argument("--plot", help="write the trajectory's figure (q, v, u, clearance, convergence; with "
                                      "contacts the forces and cone margins per foot) to this PNG file (default: none)")
    output_args(solve)
    mu_arg(solve)

    compare = command("compare", "compare DDP and iLQR (and IPOPT) on a problem", cmd_compare)
    problem_args(compare)
    compare.add_argument("--solvers", default="ddp,ilqr", help="comma-separated solvers")
    limits(compare, "every solver")
    compare.add_argument("--plot", help="write the convergence plot to this PNG file (default: none)")

    show = command("show", "summarise a saved result or closed loop, optionally draw it", cmd_show)
    show.add_argument("file", help="result .npz written by `optdyn solve --save` or optdyn.save_result, or closed "
                                   "loop by `optdyn mpc --save` or optdyn.save_closed_loop")
    output_args(show)
    mu_arg(show)

    plot = command("plot", "plot a saved result: joint positions, velocities and torques with their limits, "
                           "clearance, convergence (a closed loop: tracking error, torques, solve times)", cmd_plot)
    plot.add_argument("file", help="result .npz written by `optdyn solve --save` or optdyn.save_result, or closed "
                                   "loop by `optdyn mpc --save` (tracking error, torques, solve times)")
    plot.add_argument("--out", required=True, help="image file to write, e.g. traj.png (required)")
    mu_arg(plot)

    from ..solvers.mpc import WARM_STARTS

    mpc = command("mpc", "model predictive control in closed loop against a finer plant, with pushes", cmd_mpc)
    problem_args(mpc)
    mpc.add_argument("--duration", type=float, metavar="SECONDS",
                     help="simulated time (default: the task's end T for a task done at its end, else 6 s)")
    mpc.add_argument("--push", action="append", default=[], metavar="FRAME:FX,FY,FZ@START+DURATION",
                     help="a world-frame force (N) on a frame's body from START for DURATION s (repeatable), e.g. "
                          "tool0:0,30,0@1.0+0.2 (default: no push)")
    mpc.add_argument("--solver", choices=CHOICES, default="ilqr",
                     help="the controller's solver (one DDP iteration per step drifts: use ilqr, or ddp with "
                          "--iterations converge)")
    mpc.add_argument("--iterations", default="1", metavar="N|converge",
                     help="solver iterations per step (1: real-time iteration), or converge")
    mpc.add_argument("--warm-start", choices=WARM_STARTS,
                     help="how a step starts from the last plan (default: policy for ddp/ilqr, shift for ipopt)")
    mpc.add_argument("--horizon", metavar="receding|shrinking|H",
                     help="receding: N intervals from every step; shrinking: up to the problem's end, for a task "
                          "that must be done at T; H: a receding horizon of H ≤ N intervals moving along the task "
                          "(its references, weights and contacts move with time) (default: shrinking for a task "
                          "done at its end (the pendulums, arm-obstacle, arm-pose, panda-reach, the space "
                          "manipulator's reach), else receding; with --plant mujoco the problem's MuJoCo "
                          "scenario's)")
    mpc.add_argument("--plant", choices=("optdyn", "mujoco"), default="optdyn",
                     help="optdyn: the controller's model, 10× finer RK4, the task's contacts; mujoco: MuJoCo on a "
                          "floor (pip install optdyn[sim]), with the problem's MuJoCo scenario (a push, a horizon, "
                          "gait cycles enough for --duration) where not given (default: optdyn)")
    mpc.add_argument("--friction", type=float, default=1.0, metavar="MU", help="MuJoCo's floor friction (default 1)")
    mpc.add_argument("--contact", choices=("stiff", "soft"), default="stiff",
                     help="MuJoCo's contact parameters (optdyn.MujocoPlant; default stiff)")
    mpc.add_argument("--effort", type=float, metavar="N·M",
                     help="MuJoCo's torque clamp on every joint (default: the scenario's, else the URDF's limits)")
    mpc.add_argument("--save", help="write the closed loop to this .npz file (default: not saved)")
    mpc.add_argument("--plot", help="write the tracking error, torques and solve times to this PNG file "
                                    "(default: none)")
    output_args(mpc)

    warmup = command("warmup", "compile the kernels of some solves ahead of time, on every core", cmd_warmup)
    warmup.add_argument("problem", nargs="*", help="problem names (default: arm-obstacle, the main job)")
    warmup.add_argument("--solvers", default="ddp", help="comma-separated solvers of each problem")
    warmup.add_argument("--all", action="store_true", help="every problem with every solver")
    warmup.add_argument("--jobs", type=int, help="processes at once (default: one per core)")
    warmup.add_argument("--quiet", action="store_true", help="no progress bar")
    warmup.add_argument("--script", metavar="FILE",
                        help="a Python script defining optdyn.Problem objects at module level (its "
                             "`if __name__ == \"__main__\":` block is not run): warm each of them in this process "
                             "for --solvers (default: none)")

    from .sweep import PERTURBATION

    sweep = command("sweep", "parameter sweep and multi-start on Dask (local or a cluster)", cmd_sweep)
    problem_args(sweep)
    sweep.add_argument("--solver", choices=CHOICES, default="ddp", help="the solver")
    sweep.add_argument("--grid", action="append", default=[], type=_parse_grid, metavar="KEY=V1,V2,...",
                       help="factory parameter and its values (repeatable; the grid is their product; default: "
                            "a single point)")
    sweep.add_argument("--starts", type=int, default=1, help="initial guesses per grid point")
    sweep.add_argument("--out", required=True, help="result directory (resumed if it holds the same sweep; required)")
    limits(sweep, "every solve")
    sweep.add_argument("--perturbation", type=float, default=PERTURBATION,
                       help="relative size of the perturbed initial guesses")
    sweep.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://127.0.0.1:8786 "
                                           "(default: an embedded local cluster)")
    sweep.add_argument("--workers", type=int, help="worker processes of the embedded cluster (default: one per core)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar (as --no-progress)")
    return parser


def _terminate(signum, frame) -> None:
    """SIGTERM: unwind like an exit, so that atexit handlers (the viewer's server) run."""
    raise SystemExit(EXIT_TERMINATED)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (argparse usage errors exit with 2,
    Ctrl-C outside a solve 130)."""
    args = build_parser().parse_args(argv)
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (e.g. called from a worker): leave SIGTERM alone
        pass
    try:
        return args.func(args)
    except (CommandError, ValueError, OSError, RuntimeError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        print(f"optdyn {args.command}: error: {reason}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"optdyn {args.command}: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
