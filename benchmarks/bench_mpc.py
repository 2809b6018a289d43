"""Model predictive control in closed loop: step time against the control period.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mpc.py

ur5-reach over a 2 s horizon (40 intervals of 50 ms: the control period) for 3 s, pushed by
30 N along world y on tool0 from t = 1.0 s for 0.2 s; the space manipulator (30 intervals of
0.1 s) for 3 s, pushed by 100 N along world x on the satellite from t = 1.0 s for 0.2 s.
Each row is one :func:`optdyn.simulate` run of :class:`optdyn.MPC`: the median, worst and best
``MPC.step`` time over the steps after the first (whose cold solve converges; its time is
left out) as a ratio to the period, the median time the solver itself reported
(``Result.wall_time``: the rest of a step is the shift and the warm start), and the tool's
distance to the target before the push, at its largest after it, and 2 s after the push
began. As a baseline measured in the same run (the machine is shared), each case also times
20 one-iteration ``optdyn.solve`` calls of the same solver with default options on the
horizon one interval after the task's optimum, from that optimum shifted (the targets quote
a warm one-iteration solve at 8.2 ms DDP, 5.6 ms iLQR): the ratio of the median step to
that median says what the MPC's step costs against a plain solve (MPC expands the problem
once per real-time iteration, ``optdyn.solve`` twice).
The cases run in ``ROUNDS`` interleaved rounds (every case once per round: a shared machine
drifts); the step-time columns are the median over the rounds of each run's median, the worst
over the rounds of each run's worst, and the range of the runs' medians.
What a step allocates is measured apart from the timed runs, over ``ALLOCATION_STEPS`` steps
of an undisturbed loop after ``WARM_STEPS``: numpy arrays (their number and bytes, counted by
a numpy memory handler, NEP 49) and numba's compiled-code allocations (NRT, which numpy
does not see: ``NUMBA_NRT_STATS``), per step; and tracemalloc's peak above the level before
the step (the memory a step holds at once, both kinds).
The targets: the median step ≤ 0.2× the period with one DDP iteration and
≤ 0.1× with one iLQR iteration, the worst ≤ 0.5×; the tool back within 1 cm within 2 s.
Writes the section "mpc" of BENCHMARKS.md.

    .venv/bin/python benchmarks/bench_mpc.py mujoco

writes the section "mpc in MuJoCo" instead: Solo-12's trot (one iLQR iteration per
step, a 25-interval horizon, the friction pyramid as a barrier cost) in MuJoCo
(:class:`optdyn.MujocoPlant` built by :func:`optdyn.apps.mujoco_plant.plant_for`: stiff contact,
its torques clamped at 5 N·m, the task's friction pyramid 0.7× the floor's friction, as
`optdyn mpc quadruped --scenario trot --plant mujoco` does) for
``MUJOCO_DURATION`` s, undisturbed and pushed sideways on the base, at friction 1 and 0.7:
per run the median and worst step time over the control period (the first, converged, step
left out), the real-time factor (the loop's wall time, controller and MuJoCo together, over
the simulated time), whether it fell (base below 0.15 m or tilted past 20°) or MuJoCo
diverged, the lowest base, the largest tilt and how far it advanced against the task's
commanded distance. Then the pushes of ``PUSH_LADDER`` at ``PUSH_STARTS``, each run for
``PUSH_DURATION`` s, stronger until the first fall: the largest push survived at each start.
``bench_mpc.py mujoco-biped`` writes "mpc in MuJoCo: Talos' legs pushed" (:func:`biped_main`).
``bench_mpc.py mujoco-rotors`` writes "MPC in MuJoCo: Unitree's Go2 and A1 with their rotors"
(:func:`rotors_main`).
``bench_mpc.py horizons`` writes "MPC horizons of the tasks done at their end" (:func:`horizons_main`).
"""
from __future__ import annotations

import copy
import ctypes
import inspect
import os
import time
import tracemalloc

os.environ.setdefault("NUMBA_NRT_STATS", "1")  # before numba is imported: NRT allocation counts

import numpy as np
from _common import machine, table, write_section
from bench_constraints import gait as quadruped_gait
from numba.core.runtime import rtsys
from optdyn.solvers.mpc import HORIZONS

import dynamics as dyn
import optdyn
import problems
from problems.legged import UNITREE_ARMATURE

CASES = [  # (task, solver, iterations, warm start)
    ("ur5-reach", "ddp", 1, "policy"),
    ("ur5-reach", "ilqr", 1, "policy"),
    ("ur5-reach", "ilqr", 1, "shift"),
    ("ur5-reach", "ddp", 1, "shift"),
    ("ur5-reach", "ilqr", 1, "rollout"),
    ("ur5-reach", "ddp", 1, "rollout"),
    ("ur5-reach", "ilqr", None, "policy"),
    ("ur5-reach", "ddp", None, "policy"),
    ("ur5-reach", "ipopt", 1, "shift"),
    ("ur5-reach", "ipopt", None, "shift"),
    ("space-manipulator", "ilqr", 1, "policy"),
    ("space-manipulator", "ddp", 1, "policy"),
]
TARGETS = {("ddp", 1): 0.2, ("ilqr", 1): 0.1}
PUSHES = {"ur5-reach": optdyn.Push("tool0", (0.0, 30.0, 0.0), 1.0, 0.2),
          "space-manipulator": optdyn.Push("satellite", (100.0, 0.0, 0.0), 1.0, 0.2)}
PROBLEMS = {"ur5-reach": {"N": 40}, "space-manipulator": {}, "arm-obstacle": {}}
HORIZON = "receding"  # the tables' horizon, also for the space manipulator's reach and arm-obstacle,
# which are done at their end (optdyn.Problem.done_at_end: their controllers' default is shrinking)
ALLOCATION_CASES = [("arm-obstacle", "ilqr", 1, "policy")]  # the augmented Lagrangian: allocations only
DURATION = 3.0
ROUNDS = int(os.environ.get("ROUNDS", "3"))
WARM_STEPS, ALLOCATION_STEPS = 5, 20


class NumpyAllocations:
    """Counts numpy's data allocations (number, bytes) while installed: a NEP 49 memory
    handler (``PyDataMem_SetHandler``, slot 304 of numpy's C-API table since numpy 1.22)
    that forwards to the C library's malloc/calloc/realloc/free."""

    MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    CALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
    REALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)

    def __init__(self) -> None:
        libc = ctypes.CDLL(None)
        for name, res, args in (("malloc", ctypes.c_void_p, [ctypes.c_size_t]),
                                ("calloc", ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]),
                                ("realloc", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]),
                                ("free", None, [ctypes.c_void_p])):
            getattr(libc, name).restype, getattr(libc, name).argtypes = res, args
        self.count = self.bytes = 0

        def malloc(ctx, size):
            self.count, self.bytes = self.count + 1, self.bytes + size
            return libc.malloc(size)

        def calloc(ctx, n, size):
            self.count, self.bytes = self.count + 1, self.bytes + n * size
            return libc.calloc(n, size)

        def realloc(ctx, ptr, size):
            self.count, self.bytes = self.count + 1, self.bytes + size
            return libc.realloc(ptr, size)

        self._functions = (self.MALLOC(malloc), self.CALLOC(calloc), self.REALLOC(realloc),
                           self.FREE(lambda ctx, ptr, size: libc.free(ptr)))

        class Allocator(ctypes.Structure):
            _fields_ = [("ctx", ctypes.c_void_p), ("malloc", self.MALLOC), ("calloc", self.CALLOC),
                        ("realloc", self.REALLOC), ("free", self.FREE)]

        class Handler(ctypes.Structure):
            _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", Allocator)]

        self._handler = Handler(b"counting", 1, Allocator(None, *self._functions))
        self._name = ctypes.create_string_buffer(b"mem_handler")
        api = ctypes.pythonapi
        api.PyCapsule_New.restype, api.PyCapsule_New.argtypes = ctypes.py_object, [ctypes.c_void_p] * 3
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        self._capsule = api.PyCapsule_New(ctypes.addressof(self._handler), ctypes.addressof(self._name), None)
        table_ = ctypes.cast(api.PyCapsule_GetPointer(np._core._multiarray_umath._ARRAY_API, None),
                             ctypes.POINTER(ctypes.c_void_p))
        self._set = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table_[304])

    def __enter__(self) -> NumpyAllocations:
        self._previous = self._set(self._capsule)
        return self

    def __exit__(self, *exc) -> None:
        self._set(self._previous)


NUMPY_ALLOCATIONS = NumpyAllocations()


def allocations(task: str, solver: str, iterations, warm_start: str) -> list[float]:
    """Per step of an undisturbed loop (the plant: the problem's own intervals), after
    ``WARM_STEPS``: numpy arrays allocated, their kB, NRT allocations, and tracemalloc's peak kB
    above the level before the step (medians over ``ALLOCATION_STEPS`` steps)."""
    prob = problems.get(task, **PROBLEMS[task])
    mpc = optdyn.MPC(prob, solver, iterations, warm_start=warm_start, horizon=HORIZON)
    x = prob.x0.copy()
    u, _ = mpc.step(x, 0.0)
    rows = []
    for i in range(WARM_STEPS + 2 * ALLOCATION_STEPS):
        x = prob.step(x[None], u[None])[0]
        traced = i >= WARM_STEPS + ALLOCATION_STEPS
        if not traced:
            n0, b0, r0 = NUMPY_ALLOCATIONS.count, NUMPY_ALLOCATIONS.bytes, rtsys.get_allocation_stats().alloc
            with NUMPY_ALLOCATIONS:
                u, _ = mpc.step(x)
            if i >= WARM_STEPS:
                rows.append([NUMPY_ALLOCATIONS.count - n0, (NUMPY_ALLOCATIONS.bytes - b0) / 1e3,
                             rtsys.get_allocation_stats().alloc - r0])
            continue
        if not tracemalloc.is_tracing():
            tracemalloc.start()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        u, _ = mpc.step(x)
        rows[i - WARM_STEPS - ALLOCATION_STEPS].append((tracemalloc.get_traced_memory()[1] - before) / 1e3)
    tracemalloc.stop()
    return [float(v) for v in np.median(rows, axis=0)]


def warm_iteration_ms(prob: optdyn.Problem, solver: str) -> float:
    """Median wall time, ms, of 20 one-iteration ``optdyn.solve`` calls (default options) of the
    horizon one interval after the converged solution, from that solution shifted."""
    converged = optdyn.solve(prob, solver)
    shifted = copy.copy(prob)
    shifted.x0 = converged.xs[1]
    guess = {"us_init": np.concatenate([converged.us[1:], converged.us[-1:]])}
    if solver == "ipopt":
        guess["xs_init"] = np.concatenate([converged.xs[1:], prob.step(converged.xs[-1:], converged.us[-1:])])
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        optdyn.solve(shifted, solver, max_iter=1, **guess)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def run(task: str, solver: str, iterations, warm_start: str) -> dict:
    """One timed closed loop (module docstring): its step-time ratios and the row's other columns."""
    prob = problems.get(task, **PROBLEMS[task])
    mpc = optdyn.MPC(prob, solver, iterations, warm_start=warm_start, horizon=HORIZON)
    solver_time = []
    step = mpc.step

    def timed_step(x, t):
        out = step(x, t)
        solver_time.append(mpc.result.wall_time)
        return out

    mpc.step = timed_step
    push = PUSHES[task]
    loop = optdyn.simulate(mpc, DURATION, disturbances=[push])
    baseline = warm_iteration_ms(prob, solver)
    target = np.array(prob.params["target"])
    d = np.array([np.linalg.norm(dyn.frame_placement(prob.model, x[: prob.model.nq], "tool0")[1] - target)
                  for x in loop.xs])
    ratio = loop.solve_time[1:] / prob.dt
    target_ratio = TARGETS.get((solver, iterations))
    after = loop.t >= push.start + 2.0 - 1e-9
    return {"median": float(np.median(ratio)), "worst": float(ratio.max()), "best": float(ratio.min()),
            "solver": float(np.median(solver_time[1:]) * 1e3), "baseline": baseline,
            "relative": float(np.median(loop.solve_time[1:]) * 1e3 / baseline),
            "rest": ["—" if target_ratio is None else f"≤ {target_ratio}", float(np.median(loop.iterations[1:])),
                     f"{d[loop.t < push.start][-1] * 1e3:.1f}", f"{d[loop.t >= push.start].max() * 1e3:.0f}",
                     f"{d[after][0] * 1e3:.1f}" if after.any() else "—", f"{d[-1] * 1e3:.1f}"]}


def row(task: str, solver: str, iterations, warm_start: str, runs: list[dict]) -> list:
    """The table's row of a case from its runs over the rounds."""
    def median(key):
        return float(np.median([r[key] for r in runs]))
    medians = [r["median"] for r in runs]
    target, iters, *tool = runs[-1]["rest"]
    return [task, solver, "converge" if iterations is None else iterations, warm_start,
            f"{problems.get(task, **PROBLEMS[task]).dt * 1e3:.0f}", median("median"),
            f"{min(medians):.3g}–{max(medians):.3g}", max(r["worst"] for r in runs), min(r["best"] for r in runs),
            target, median("solver"), median("baseline"), median("relative"), iters,
            *allocations(task, solver, iterations, warm_start), *tool]


def main() -> None:
    for task in PUSHES:  # compile, or load the cache, before timing
        optdyn.simulate(optdyn.MPC(problems.get(task, **PROBLEMS[task]), "ilqr", horizon=HORIZON), 0.2)
    runs = {case: [] for case in CASES}
    for r in range(ROUNDS):
        for case in CASES:
            runs[case].append(run(*case))
            print(r, case, runs[case][-1], flush=True)
    rows = [row(*case, runs[case]) for case in CASES]
    header = ["task", "solver", "iterations", "warm start", "period ms", "median step / period",
              "range of medians", "worst step / period", "best step / period", "target (median)",
              "solver ms (median)", "warm 1-iteration solve ms (median)", "median step ÷ that",
              "iterations (median)", "numpy arrays / step", "numpy kB / step", "NRT allocations / step",
              "peak kB / step", "tool mm before push", "tool mm max after", "tool mm 2 s after push",
              f"tool mm at {DURATION:g} s"]
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    body = (f"## Model predictive control in closed loop\n\n{machine()}, one thread "
            f"(`NUMBA_NUM_THREADS=1`), load average at the end {load}, "
            f"{ROUNDS} interleaved rounds. `benchmarks/bench_mpc.py` (tasks, pushes and columns in its "
            "docstring); the first step (a converged cold solve) is left out of the step times.\n\n"
            + table(header, rows))
    body += ("\n\nAllocations only (a receding horizon of the task's N intervals, undisturbed):\n\n"
             + table(["task", "solver", "iterations", "warm start", *header[14:18]],
                     [[*case, *allocations(*case)] for case in ALLOCATION_CASES]))
    write_section("mpc", body)


MUJOCO_DURATION, PUSH_DURATION = 10.0, 4.0
MUJOCO_CASES = [  # (friction, side push N at 1 s, iLQR iterations per step, torque clamp N·m or None: the URDF's)
    (1.0, None, 1, 5.0), (1.0, 12.0, 1, 5.0), (0.7, None, 1, 5.0), (0.7, 12.0, 1, 5.0),
    (0.7, 12.0, 2, 5.0), (1.0, 12.0, 1, None), (1.0, 12.0, 2, None)]
PUSH_LADDER, PUSH_STARTS = (4.0, 8.0, 10.0, 12.0, 15.0, 20.0), (1.0, 1.1, 1.2, 1.3)
FALL_HEIGHT, FALL_TILT = 0.15, 20.0
FALL_SHARE = 0.6  # another quadruped falls with its base below this share of its standing height
STEP_MS = 1e3 * inspect.signature(optdyn.MujocoPlant).parameters["timestep"].default  # the plant's default
TASK_MU = 0.7  # the controller's friction pyramid, × the floor's friction (as `optdyn mpc --plant mujoco`)


def trot(duration: float, friction: float, robot: str | None = None, armature=None) -> optdyn.Problem:
    """The trot with its pyramid as a cost, gait cycles enough for ``duration``, of Solo-12 or of
    ``robot`` (``bench_constraints.TORQUE_LIMITED``) as a user builds it from its URDF and SRDF,
    its joints' rotor inertias ``armature`` (:func:`problems.quadruped.make`'s)."""
    cycles = int(np.ceil(duration / 0.48)) + 1  # a trot cycle: 2 × (10 + 2) intervals of 20 ms
    if robot is None:
        return problems.get("quadruped", scenario="trot", cone="cost", cycles=cycles, mu=TASK_MU * friction,
                            armature=armature)
    return quadruped_gait(robot, "trot", TASK_MU * friction, cycles, cone="cost", armature=armature)


def mujoco_run(friction: float, force: float | None, start: float, duration: float, iterations: int = 1,
               effort: float | None = 5.0, robot: str | None = None, armature=None, **plant) -> dict:
    """One closed loop of the trot in MuJoCo (module docstring): its figures. ``robot``: one of
    ``bench_constraints.TORQUE_LIMITED`` instead of Solo-12, its joints' rotor inertias
    ``armature``; ``plant``: options of the plant. The push acts on the floating base's body."""
    prob = trot(duration, friction, robot, armature)
    plant = optdyn.apps.mujoco_plant.plant_for(prob, friction=friction, effort=effort, **plant)
    pushes = [] if force is None else [optdyn.Push(prob.model.body_names[0], (0.0, force, 0.0), start, 0.2)]
    mpc = optdyn.MPC(prob, "ilqr", iterations, horizon=25)
    t0 = time.perf_counter()
    loop = optdyn.simulate(mpc, duration, plant=plant, disturbances=pushes)
    wall = time.perf_counter() - t0 - loop.solve_time[0]  # the first (converged) solve left out
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    ratio = loop.solve_time[1:] / prob.dt
    simulated = max(loop.t[-1] - prob.dt, 1e-9)
    lowest = FALL_HEIGHT if robot is None else FALL_SHARE * prob.x0[2]
    return {"median": float(np.median(ratio)), "worst": float(ratio.max()), "rtf": wall / simulated,
            "fell": bool(loop.stopped) or motion.fell(lowest, FALL_TILT), "stopped": loop.stopped,
            "motion": motion, "plant_ms": 1e3 * (wall - loop.solve_time[1:].sum()) / max(len(loop.us) - 1, 1)}


def _weight(robot: str | None) -> float:
    """m‖g‖ (N) of ``robot``'s trot (:func:`trot`)."""
    model = trot(1.0, 1.0, robot).model
    return -float(model.inertia[:, 0].sum()) * model.gravity[2]


def _outcome(r: dict) -> list:
    """The columns fell, stopped, lowest base, largest tilt, advanced / commanded, median and
    worst step of one :func:`mujoco_run`'s figures ``r``."""
    m = r["motion"]
    return ["yes" if r["fell"] else "no", r["stopped"].split(";")[0] or "—", f"{m.lowest:.3f}",
            f"{m.largest_tilt:.1f}", f"{m.advanced / m.commanded:.0%}", r["median"], r["worst"]]


def other_quadrupeds() -> list[list]:
    """Rows of the trots of ``bench_constraints.QUADRUPEDS`` (and Solo-12) in MuJoCo at plant steps of
    1 and 0.5 ms, undisturbed and pushed sideways by a quarter of their weight at 1 s for 0.2 s,
    their URDFs' torque limits, joint damping and friction."""
    rows = []
    for robot in ("ANYmal", "HyQ", "Go1", None):
        weight = _weight(robot)
        for timestep in (1e-3, 5e-4):
            for force in (None, 0.25 * weight):
                r = mujoco_run(1.0, force, 1.0, MUJOCO_DURATION, effort=None if robot else 5.0, robot=robot,
                               timestep=timestep)
                print(robot, timestep, force, r, flush=True)
                rows.append([robot or "Solo-12", f"{timestep * 1e3:g}", "none" if force is None else f"{force:.0f} N",
                             *_outcome(r)])
    return rows


def mujoco_main() -> None:
    rows = []
    for friction, force, iterations, effort in MUJOCO_CASES:
        r = mujoco_run(friction, force, 1.0, MUJOCO_DURATION, iterations, effort)
        m = r["motion"]
        print(friction, force, iterations, effort, r, flush=True)
        push = "none" if force is None else f"{force:g} N at 1 s for 0.2 s"
        rows.append([friction, f"{TASK_MU * friction:.2g}", push, iterations,
                     "URDF's (1000)" if effort is None else f"{effort:g}", r["median"], r["worst"], r["plant_ms"],
                     r["rtf"],
                     "yes" if r["fell"] else "no", r["stopped"].split(";")[0] or "—", f"{m.lowest:.3f}", f"{m.largest_tilt:.1f}",
                     f"{m.advanced:.2f}", f"{m.commanded:.2f}", f"{m.advanced / m.commanded:.0%}"])
    ladder = []
    for friction in (1.0, 0.7):
        for start in PUSH_STARTS:
            outcomes = []
            for force in PUSH_LADDER:  # up to the first fall
                r = mujoco_run(friction, force, start, PUSH_DURATION)
                print(friction, start, force, r["fell"], r["stopped"], flush=True)
                outcomes.append(f"{force:g}:{'fell' if r['fell'] else 'ok'}")
                if r["fell"]:
                    break
            survived = [f for f, o in zip(PUSH_LADDER, outcomes) if o.endswith("ok")]
            ladder.append([friction, f"{start:g}", " ".join(outcomes), f"{max(survived, default=0.0):g}"])
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    header = ["friction", "task's μ", "push (base_link, +y)", "iLQR iterations / step", "torque clamp N·m",
              "median step / period", "worst step / period",
              "MuJoCo + policy ms / step", "real-time factor", "fell", "stopped", "lowest base m", "largest tilt °",
              "advanced m", "commanded m", "advanced / commanded"]
    body = (f"## MPC in MuJoCo\n\n{machine()}, load average at the end {load}. "
            f"`benchmarks/bench_mpc.py mujoco`: Solo-12's trot, one iLQR iteration (or two) per 20 ms step "
            f"over a 25-interval horizon, in MuJoCo ({STEP_MS:g} ms steps under the solver's feedback policy, stiff contact, "
            f"torques clamped at 5 N·m unless said) for {MUJOCO_DURATION:g} s. Fell: base below {FALL_HEIGHT} m, "
            f"tilt past {FALL_TILT:g}°, or MuJoCo diverged. Targets: never falls, advances ≥ 80 % of the commanded "
            "distance, with a 12 N push and at friction 0.7; median step ≤ 0.5× and worst ≤ 1.0× the period.\n\n"
            + table(header, rows)
            + f"\n\nSide pushes of 0.2 s, each a {PUSH_DURATION:g} s run, by the time the push starts (the phase "
              "of the gait), stronger until the first fall: the largest survived.\n\n"
            + table(["friction", "push starts at s", "force N: outcome", "largest survived N"], ladder)
            + "\n\nQuadrupeds the project does not ship, as a user builds their trot from example-robot-data's URDF "
              f"and SRDF (the same task, {TASK_MU:g}× friction 1 for the pyramid), against Solo-12, at plant steps of "
              "1 ms and the default 0.5 ms, for "
              f"{MUJOCO_DURATION:g} s, undisturbed and pushed sideways at the base by a quarter of the weight at 1 s for "
              "0.2 s; the URDFs' torque limits, joint damping and friction (Go1: 0.01 N·m·s/rad and 0.2 N·m; HyQ: "
              "damping 0.1; ANYmal, Solo-12: none; Solo-12 clamped at 5 N·m). Fell: the base below "
              f"{FALL_SHARE:g}× its standing height (Solo-12: {FALL_HEIGHT} m), tilt past {FALL_TILT:g}°, or MuJoCo "
              "diverged. At 1 ms the policy's velocity gains on HyQ's and Go1's light shanks, applied explicitly at "
              "every plant step, are past the explicit step's stability (`optdyn.apps.mujoco_plant`'s docstring); "
              "the closed loops that diverged name the joint (`loop.stopped`, its first clause here).\n\n"
            + table(["robot", "plant step ms", "push", "fell", "stopped", "lowest base m", "largest tilt °",
                     "advanced / commanded", "median step / period", "worst step / period"], other_quadrupeds()))
    write_section("mpc-mujoco", body)


def rotors_main() -> None:
    """Go2 and A1 trotting in MuJoCo as :func:`other_quadrupeds` runs them, without and with
    their rotors' reflected inertia (``armature``, Menagerie's) in the task and the plant."""
    rows = []
    for robot in ("Go2", "A1"):
        pushed = 0.25 * _weight(robot)
        for armature, timestep, force in ((None, 5e-4, None), (None, 1e-4, None), (UNITREE_ARMATURE, 5e-4, None),
                                          (UNITREE_ARMATURE, 5e-4, pushed)):
            r = mujoco_run(1.0, force, 1.0, MUJOCO_DURATION, effort=None, robot=robot, armature=armature,
                           timestep=timestep)
            print(robot, armature, timestep, force, r, flush=True)
            rows.append([robot, "none" if armature is None else f"{armature:g}", f"{timestep * 1e3:g}",
                         "none" if force is None else f"{force:.0f} N", *_outcome(r)])
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    body = (f"## MPC in MuJoCo: Unitree's Go2 and A1 with their rotors\n\n{machine()}, load average at the end "
            f"{load}. `benchmarks/bench_mpc.py mujoco-rotors`: the trot of section \"MPC in MuJoCo\" (its "
            "quadrupeds the project does not ship: example-robot-data's URDF and SRDF, the URDF's torque limits "
            f"clamped by the plant, {MUJOCO_DURATION:g} s, a push of a quarter of the weight sideways at the base at "
            "1 s for 0.2 s) for Go2 and A1, without and with their rotors' reflected inertia on every joint "
            f"(`problems.quadruped.make(..., armature={UNITREE_ARMATURE:g})`, MuJoCo Menagerie's value for both; "
            "the plant takes it from the task's model). Their URDFs have none (Go2's rotor links are fixed to the "
            "links before them: their mass, not the gear ratio's n²). Fell: the base below "
            f"{FALL_SHARE:g}× its standing height, tilt past {FALL_TILT:g}°, or MuJoCo diverged.\n\n"
            + table(["robot", "armature kg·m²", "plant step ms", "push", "fell", "stopped", "lowest base m",
                     "largest tilt °", "advanced / commanded", "median step / period", "worst step / period"], rows))
    write_section("mpc-mujoco-rotors", body)


BIPED_PUSHES, BIPED_DURATION = (40.0, 80.0, 120.0, 160.0, 200.0), 3.0


def biped_main() -> None:
    """Talos' legs standing in MuJoCo (the biped's "stand", one iLQR iteration per 30 ms step
    over its 25 intervals, the wrench cones as constraints, its URDF's torque limits) pushed
    sideways at the pelvis (base_link) from 0.5 s for 0.2 s, stronger until the first fall."""
    rows = []
    for force in BIPED_PUSHES:
        prob = problems.get("biped", scenario="stand")
        plant = optdyn.apps.mujoco_plant.plant_for(prob)
        push = optdyn.Push("base_link", (0.0, force, 0.0), 0.5, 0.2)
        t0 = time.perf_counter()
        loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1), BIPED_DURATION, plant=plant, disturbances=[push])
        wall = time.perf_counter() - t0 - loop.solve_time[0]
        motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
        fell = bool(loop.stopped) or motion.fell(0.8 * prob.x0[2], FALL_TILT)
        ratio = loop.solve_time[1:] / prob.dt
        print(force, fell, loop.stopped, motion, flush=True)
        rows.append([f"{force:g}", float(np.median(ratio)), float(ratio.max()), wall / (loop.t[-1] - prob.dt),
                     "yes" if fell else "no", loop.stopped or "—", f"{motion.lowest:.3f}",
                     f"{motion.largest_tilt:.1f}", f"{1e3 * np.abs(loop.xs[:, 1]).max():.0f}",
                     f"{1e3 * abs(loop.xs[-1, 1]):.1f}"])
        if fell:
            break
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    body = (f"## MPC in MuJoCo: Talos' legs pushed\n\n{machine()}, load average at the end {load}. "
            "`benchmarks/bench_mpc.py mujoco-biped`: the biped's \"stand\" (Talos' legs at half-sitting on both "
            "soles, 6D sole boxes of its SRDF's size), one iLQR iteration per 30 ms step over 25 intervals, in "
            f"MuJoCo for {BIPED_DURATION:g} s, pushed sideways at the pelvis (base_link) from 0.5 s for 0.2 s, "
            "stronger until the first fall (base below 0.8× its standing height, tilt past 20°, or MuJoCo "
            "diverged). Target: 40 N survived.\n\n"
            + table(["push N", "median step / period", "worst step / period", "real-time factor", "fell", "stopped",
                     "lowest base m", "largest tilt °", "largest sideways excursion mm", "sideways at the end mm"],
                    rows))
    write_section("mpc-mujoco-biped", body)


HORIZON_TASKS = [("pendulum", {}), ("double-pendulum", {}), ("arm-obstacle", {}), ("arm-pose", {}),
                 ("panda-reach", {}), ("space-manipulator", {}), ("ur5-reach", {"N": 40}),
                 ("space-manipulator", {"station": True})]
HOLD = 0.5  # s simulated past the task's end


def task_error(prob: optdyn.Problem, x: np.ndarray) -> float:
    """How far the state x is from done: the largest terminal-equality residual, else the
    terminal cost."""
    if prob.terminal_constraints:
        return float(max(np.abs(c.value(x[None])).max() for c in prob.terminal_constraints))
    return float(prob.terminal_cost.value(x[None], np.zeros((1, prob.nu)))[0])


def horizons_main() -> None:
    """Each task of ``HORIZON_TASKS`` under one iLQR iteration per step, undisturbed, with a
    receding and a shrinking horizon for T + ``HOLD`` s: how far from done at T and after."""
    rows = []
    for task, params in HORIZON_TASKS:
        prob = problems.get(task, **params)
        k = prob.N
        errors = {}
        for horizon in HORIZONS:
            loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=horizon), prob.T + HOLD)
            errors[horizon] = (task_error(prob, loop.xs[k]), task_error(prob, loop.xs[-1]))
            print(task, params, horizon, errors[horizon], flush=True)
        name = task + "".join(f" {key}={value}" for key, value in params.items())
        what = "largest terminal-equality residual" if prob.terminal_constraints else "terminal cost"
        rows.append([name, "yes" if prob.done_at_end else "no", what, *(f"{e:.2g}" for h in HORIZONS
                                                                          for e in errors[h])])
    body = (f"## MPC horizons of the tasks done at their end\n\n{machine()}. `benchmarks/bench_mpc.py horizons`: "
            "each task under one iLQR iteration per step (`optdyn.MPC(prob, 'ilqr', 1, horizon=…)`), undisturbed, "
            f"on the library's plant for its T + {HOLD:g} s, with a receding and a shrinking horizon: how far from done "
            "at T and at the end (the largest residual of the terminal equality where the task has one, else its "
            "terminal cost). `optdyn.MPC`'s default horizon is the task's: shrinking where `Problem.done_at_end`.\n\n"
            + table(["task", "done at its end", "measure", "receding: at T", f"receding: at T + {HOLD:g} s",
                     "shrinking: at T", f"shrinking: at T + {HOLD:g} s"], rows))
    write_section("mpc-horizons", body)


if __name__ == "__main__":
    import sys

    {"mujoco": mujoco_main, "mujoco-biped": biped_main, "mujoco-rotors": rotors_main,
     "horizons": horizons_main}.get(" ".join(sys.argv[1:]), main)()
