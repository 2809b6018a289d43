"""Speed and accuracy of the analytical derivatives → docs/benchmarks/, section "derivatives".

What is measured (all warm per-call times from Python, best of several repeats):

1. UR5: ``dyn.rnea_derivatives``, ``dyn.aba_derivatives`` (Carpentier & Mansard, Carpentier & Mansard 2018),
   ``dyn.rnea_second_derivatives`` (IDSVA-SO) and ``dyn.aba_second_derivatives`` (FDSVA-SO,
   Singh, Russell & Wensing 2023) against the targets, and Pinocchio's ``computeRNEADerivatives`` /
   ``computeABADerivatives`` on the same URDF in the same run (with the largest difference
   between the two results as a sanity check).
2. Analytical vs central differences (FD). First order: differences of ``rnea`` over q, v
   (4n calls) and of ``aba`` over q, v, τ (6n calls). Second order ("Finite-Diff-2" of
   Singh, Russell & Wensing 2023): differences of the analytical first-order functions, ``rnea_derivatives`` over
   q, v plus ``crba`` over q for ∂M/∂q (6n calls), ``aba_derivatives`` over q, v (4n calls).
   Two FD baselines: the difference loop compiled with numba around the kernels (fair, no
   interpreter in the loop) and the same loop run by Python over the public functions
   (what a user without analytical derivatives would write).
3. Scaling over ``serial_chain(n)`` and ``binary_tree(n)``: per-call times and the log-log
   slope A of log t = A log n + B, in the form of Singh, Russell & Wensing 2023 Table III, and the SO/FD speed-up.
4. Accuracy vs n in the form of Singh, Russell & Wensing 2023 Fig. 11: eq. 40 (max |A − A_ref|) and eq. 42
   (max over components of |A − A_ref| / max(|A_ref|, 1)) of the SO tensors against a
   reference of Richardson-extrapolated central differences of the first-order functions,
   next to the same metrics for plain central differences, and the reference's own
   self-consistency (two Richardson estimates at steps h and h/2).

Run from the repository root: .venv/bin/python benchmarks/bench_derivatives.py  (a few minutes)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
from numba import njit

import dynamics as dyn
from _common import loglog_slope, machine, per_call_us, table, write_section
from dynamics._checks import NO_FORCE
from dynamics.aba import aba_into
from dynamics.aba_derivatives import aba_derivatives_kernel
from dynamics.crba import crba_into
from dynamics.rnea import rnea_passes
from dynamics.rnea_derivatives import rnea_derivatives_into
from dynamics.workspace import new_data

SIZES = [2, 4, 8, 16, 24, 32, 40]
FAMILIES = ("serial_chain", "binary_tree")
ANALYTICAL = {
    "rnea_derivatives": dyn.rnea_derivatives,
    "aba_derivatives": dyn.aba_derivatives,
    "rnea_second_derivatives": dyn.rnea_second_derivatives,
    "aba_second_derivatives": dyn.aba_second_derivatives,
}
TARGETS_US = {"rnea_derivatives": 6.0, "aba_derivatives": 8.0,
              "rnea_second_derivatives": 30.0, "aba_second_derivatives": 60.0}
FD_CALLS = {"rnea_derivatives": "4n rnea", "aba_derivatives": "6n aba",
            "rnea_second_derivatives": "4n rnea_derivatives + 2n crba",
            "aba_second_derivatives": "4n aba_derivatives"}
H_FD = 6e-6          # ≈ eps^(1/3), the usual central-difference step
H_RICHARDSON = 4e-3  # Richardson reference: steps h, h/2, h/4
TIMING = {"min_time": 0.01, "repeat": 30}  # many short repeats: the best dodges other load
TAIL = 8              # second slope fitted on n ≥ TAIL only (Python call overhead flattens small n)
# glibc settings that keep freed memory in the process: no fresh zero pages per large array
TUNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(2**26), "MALLOC_TRIM_THRESHOLD_": str(2**28)}


# ---------------------------------------------------------------- central differences

@njit
def central_differences(f, data, X, n_inputs, h):
    """D[s, k] = (f(X + h e_sk) − f(X − h e_sk)) / 2h, flattened: (n_inputs, n, f.size).

    ``f(data, q, v, w)`` with X = [q; v; w] (3, n); only the first ``n_inputs`` rows are
    perturbed. Compiled when called as is; ``central_differences.py_func`` is the same loop
    run by the interpreter.
    """
    n = X.shape[1]
    D = np.empty((n_inputs, n, 0))
    Xp = X.copy()
    for s in range(n_inputs):
        for k in range(n):
            Xp[s, k] = X[s, k] + h
            plus = f(data, Xp[0], Xp[1], Xp[2]).ravel()
            Xp[s, k] = X[s, k] - h
            minus = f(data, Xp[0], Xp[1], Xp[2]).ravel()
            Xp[s, k] = X[s, k]
            if s == 0 and k == 0:
                D = np.empty((n_inputs, n, plus.size))
            D[s, k] = (plus - minus) / (2.0 * h)
    return D


@njit
def _tau(args, q, v, a):
    d = new_data(args.topology)
    rnea_passes(args, d, q, v, a, NO_FORCE)
    return d.tau.copy()


@njit
def _qdd(args, q, v, tau):
    qdd = np.empty(v.shape[0])
    aba_into(args, new_data(args.topology), q, v, tau, NO_FORCE, qdd)
    return qdd


@njit
def _M(args, q, v, a):
    M = np.empty((v.shape[0], v.shape[0]))
    crba_into(args, new_data(args.topology), q, M)
    return M


@njit
def _tau_fo(args, q, v, a):
    out = np.empty((2, v.shape[0], v.shape[0]))
    rnea_derivatives_into(args, new_data(args.topology), q, v, a, NO_FORCE, out[0], out[1])
    return out


@njit
def _qdd_fo(args, q, v, tau):
    _, dqdd_dq, dqdd_dv, Minv = aba_derivatives_kernel(args, q, v, tau, NO_FORCE)
    return np.stack((dqdd_dq, dqdd_dv, Minv))


KERNELS = {"tau": _tau, "qdd": _qdd, "M": _M, "tau_fo": _tau_fo, "qdd_fo": _qdd_fo}
PUBLIC = {
    "tau": lambda m, q, v, a: dyn.rnea(m, q, v, a),
    "qdd": lambda m, q, v, tau: dyn.aba(m, q, v, tau),
    "M": lambda m, q, v, a: dyn.crba(m, q),
    "tau_fo": lambda m, q, v, a: np.stack(dyn.rnea_derivatives(m, q, v, a)),
    "qdd_fo": lambda m, q, v, tau: np.stack(dyn.aba_derivatives(m, q, v, tau)),
}


def compiled(model):
    """FD backend: the compiled loop around the kernels."""
    args = model.arrays
    return central_differences, KERNELS, args


def interpreted(model):
    """FD backend: the interpreted loop around the public functions."""
    return central_differences.py_func, PUBLIC, model


def jacobians(backend, name, X, n_inputs, h, shape):
    """[∂f/∂X_s for s < n_inputs] of f = ``name`` with values of ``shape``, each (*shape, n):
    derivative index last."""
    diff, funcs, data = backend
    D = diff(funcs[name], data, X, n_inputs, h)
    return [np.moveaxis(D[s].reshape(X.shape[1], *shape), 0, -1) for s in range(n_inputs)]


def fd_rnea_derivatives(backend, X, h):
    return tuple(jacobians(backend, "tau", X, 2, h, X.shape[1:]))


def fd_aba_derivatives(backend, X, h):
    return tuple(jacobians(backend, "qdd", X, 3, h, X.shape[1:]))


def fd_rnea_second_derivatives(backend, X, h):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) in the layout of ``rnea_second_derivatives``."""
    n = X.shape[1]
    d_dq, d_dv = jacobians(backend, "tau_fo", X, 2, h, (2, n, n))
    (dM_dq,) = jacobians(backend, "M", X, 1, h, (n, n))
    return d_dq[0], d_dv[1], d_dv[0], dM_dq


def fd_aba_second_derivatives(backend, X, h):
    """(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dqdtau) in the layout of ``aba_second_derivatives``."""
    n = X.shape[1]
    d_dq, d_dv = jacobians(backend, "qdd_fo", X, 2, h, (3, n, n))
    return d_dq[0], d_dv[1], d_dv[0], d_dq[2].transpose(0, 2, 1)


FD = {
    "rnea_derivatives": fd_rnea_derivatives,
    "aba_derivatives": fd_aba_derivatives,
    "rnea_second_derivatives": fd_rnea_second_derivatives,
    "aba_second_derivatives": fd_aba_second_derivatives,
}


def richardson(fd, backend, X, h):
    """(4 D(h/2) − D(h)) / 3 for each tensor of ``fd``: error O(h⁴)."""
    return tuple((4 * b - a) / 3 for a, b in zip(fd(backend, X, h), fd(backend, X, h / 2)))


# ---------------------------------------------------------------- helpers

def random_state(model, seed=0):
    """X = [q; v; a or τ] (3, n), uniform in [−1, 1]."""
    return np.random.default_rng(seed).uniform(-1, 1, (3, model.nv))


def model_of(family, n):
    return dyn.models.ur5() if family == "ur5" else getattr(dyn.models, family)(n)


def analytical_us(name, model, X):
    f = ANALYTICAL[name]
    return per_call_us(lambda: f(model, *X), **TIMING)


def fd_us(name, backend, X):
    fd = FD[name]
    return per_call_us(lambda: fd(backend, X, H_FD), **TIMING)


def errors(A, A_ref):
    """(eq. 40, eq. 42 of Singh, Russell & Wensing 2023) over all tensors of A."""
    diff = np.concatenate([np.ravel(a - r) for a, r in zip(A, A_ref)])
    ref = np.concatenate([np.ravel(r) for r in A_ref])
    return float(np.abs(diff).max()), float((np.abs(diff) / np.maximum(np.abs(ref), 1.0)).max())


# ---------------------------------------------------------------- tables

def ur5_table() -> str:
    """Item 1: UR5 per-call times, targets, Pinocchio first order."""
    model = dyn.models.ur5()
    X = random_state(model)
    ours = {name: analytical_us(name, model, X) for name in ANALYTICAL}
    pin_times, pin_diff = {}, {}
    try:
        import pinocchio as pin
        pm = pin.buildModelFromUrdf(str(resources.files("dynamics.models") / "ur5.urdf"))
        pd = pm.createData()
        pin_calls = {"rnea_derivatives": pin.computeRNEADerivatives,
                     "aba_derivatives": pin.computeABADerivatives}
        for name, f in pin_calls.items():
            pin_times[name] = per_call_us(lambda f=f: f(pm, pd, *X), **TIMING)
            pin_diff[name] = max(float(np.abs(p - o).max())
                                 for p, o in zip(f(pm, pd, *X), ANALYTICAL[name](model, *X)))
    except ImportError:
        pass
    rows = []
    for name, t in ours.items():
        p = pin_times.get(name)
        rows.append([name, t, TARGETS_US[name], "yes" if t <= TARGETS_US[name] else "no",
                     p if p else "–", t / p if p else "–", f"{pin_diff[name]:.1e}" if p else "–"])
    return table(["function", "optdyn µs", "target µs", "met", "Pinocchio µs", "ratio optdyn/Pinocchio",
                  "max |optdyn − Pinocchio|"], rows)


def fd_table() -> str:
    """Item 2: analytical vs central differences (compiled and interpreted) on UR5 and chains."""
    rows = []
    for family, n in (("ur5", 6), ("serial_chain", 12), ("serial_chain", 36)):
        model = model_of(family, n)
        X = random_state(model)
        label = "ur5" if family == "ur5" else f"{family}({n})"
        for name in ANALYTICAL:
            t = analytical_us(name, model, X)
            t_c = fd_us(name, compiled(model), X)
            t_p = fd_us(name, interpreted(model), X)
            rows.append([label, name, t, FD_CALLS[name], t_c, t_c / t, t_p, t_p / t])
    return table(["model", "function", "analytical µs", "FD calls", "FD compiled µs", "speed-up",
                  "FD Python µs", "speed-up"], rows)


def scaling_tables() -> tuple[str, str]:
    """Item 3: per-call times vs n with log-log slopes; SO/FD (compiled) speed-up vs n."""
    rows, speedups = [], []
    tail = SIZES.index(TAIL)
    for family in FAMILIES:
        times = {}
        for n in SIZES:
            model = model_of(family, n)
            X = random_state(model)
            for name in ANALYTICAL:
                times.setdefault(name, []).append(analytical_us(name, model, X))
            for name in ("rnea_second_derivatives", "aba_second_derivatives"):
                times.setdefault("FD of " + name, []).append(fd_us(name, compiled(model), X))
        for name, ts in times.items():
            rows.append([family, name.replace("_second_derivatives", " SO").replace("_derivatives", " FO")]
                        + ts + [loglog_slope(SIZES, ts), loglog_slope(SIZES[tail:], ts[tail:])])
        for name in ("rnea_second_derivatives", "aba_second_derivatives"):
            ratio = np.array(times["FD of " + name]) / np.array(times[name])
            speedups.append([family, name] + list(ratio))
    cols = [f"n={n}" for n in SIZES]
    return (table(["family", "function"] + cols + ["slope A", f"slope A (n ≥ {TAIL})"], rows),
            table(["family", "function"] + cols, speedups))


def so_times(n: int) -> dict[str, float]:
    """SO per-call µs on both families at size n, keyed "family function"."""
    times = {}
    for family in FAMILIES:
        model = model_of(family, n)
        X = random_state(model)
        for name in ("rnea_second_derivatives", "aba_second_derivatives"):
            times[f"{family} {name}"] = analytical_us(name, model, X)
    return times


def allocator_table(n: int = SIZES[-1]) -> str:
    """SO times at size n in fresh interpreters: glibc defaults vs ``TUNED_MALLOC``.

    Each call returns four new n³ tensors; above glibc's mmap threshold they are fresh
    zero pages from the kernel on every call, which this isolates.
    """
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
            f"import bench_derivatives as b; print(json.dumps(b.so_times({n})))")
    run = lambda env: json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                                capture_output=True, text=True).stdout)
    default, tuned = run(dict(os.environ)), run(dict(os.environ, **TUNED_MALLOC))
    rows = [key.split() + [default[key], tuned[key], default[key] / tuned[key]] for key in default]
    return table(["family", "function", "default µs", "tuned malloc µs", "ratio"], rows)


def accuracy_table() -> str:
    """Item 4: eq. 40 / eq. 42 errors of the SO tensors vs Richardson central differences."""
    rows = []
    for family in FAMILIES:
        for name in ("rnea_second_derivatives", "aba_second_derivatives"):
            metrics = {key: [] for key in ("analytical eq. 40", "analytical eq. 42",
                                           "central FD eq. 42", "reference self-check eq. 42")}
            for n in SIZES:
                model = model_of(family, n)
                X = random_state(model)
                backend, fd = compiled(model), FD[name]
                ref = richardson(fd, backend, X, H_RICHARDSON / 2)
                ref_coarse = richardson(fd, backend, X, H_RICHARDSON)
                e40, e42 = errors(ANALYTICAL[name](model, *X), ref)
                metrics["analytical eq. 40"].append(e40)
                metrics["analytical eq. 42"].append(e42)
                metrics["central FD eq. 42"].append(errors(fd(backend, X, H_FD), ref)[1])
                metrics["reference self-check eq. 42"].append(errors(ref_coarse, ref)[1])
            rows += [[family, name, key] + [f"{e:.1e}" for e in es] for key, es in metrics.items()]
    return table(["family", "function", "metric"] + [f"n={n}" for n in SIZES], rows)


def main() -> None:
    ur5 = ur5_table()
    fd = fd_table()
    scaling, speedup = scaling_tables()
    allocator = allocator_table()
    accuracy = accuracy_table()
    body = "\n\n".join([
        "## Analytical derivatives",
        f"Machine: {machine()}. Script: `benchmarks/bench_derivatives.py`. Warm, per call from "
        f"Python (input validation included), best of {TIMING['repeat']} repeats of "
        f"≥ {TIMING['min_time']:g} s; random q, v, a (or τ) in [−1, 1].",
        "### UR5 per call\n\n" + ur5,
        "### Analytical vs central differences\n\n"
        "First order: differences of `rnea` / `aba`; second order: differences of the analytical "
        "first-order functions (the Finite-Diff-2 of Singh, Russell & Wensing 2023), step h = 6e-6. *FD compiled*: the "
        "difference loop compiled with numba around the kernels; *FD Python*: the same loop in "
        "the interpreter over the public functions. Carpentier & Mansard (2018) report 7–26× for first order "
        "(C++ vs C++); Singh, Russell & Wensing (2023) report > 10× for IDSVA-SO.\n\n" + fd,
        "### Scaling (µs per call; slope A of log t = A log n + B, cf. Singh, Russell & Wensing 2023 Table III)\n\n"
        "FO = first order, SO = second order; *FD of … SO* = compiled Finite-Diff-2. Singh, Russell & Wensing (2023) "
        "report A ≈ 3.1 (chains) and ≈ 1.5 (binary trees) for IDSVA-SO, 2.4 / 2.2 for "
        "Finite-Diff-2, 1.8 / 1.0 for IDSVA-FO.\n\n" + scaling,
        "### SO speed-up over compiled Finite-Diff-2 vs n\n\n" + speedup,
        f"### Allocation of the SO outputs (n = {SIZES[-1]})\n\n"
        "The SO functions return four new n × n × n tensors per call (0.5 MB each at n = 40). "
        "Above glibc's mmap threshold every call gets fresh pages from the kernel and pays the "
        "page faults; the threshold adapts to the process's allocation history, so whether the "
        "large-n times above include this cost depends on what ran before. Same calls in fresh "
        "interpreters with glibc's defaults and with "
        + ", ".join(f"`{k}={v}`" for k, v in TUNED_MALLOC.items()) + " (memory kept in the process):\n\n"
        + allocator,
        "### Accuracy vs n (cf. Singh, Russell & Wensing 2023 Fig. 11)\n\n"
        "All tensors of each function together. eq. 40: max |A − A_ref|; eq. 42: max over "
        "components of |A − A_ref| / max(|A_ref|, 1). A_ref: Richardson extrapolation of "
        f"central differences of the first-order functions at steps {H_RICHARDSON / 2:g} and "
        f"{H_RICHARDSON / 4:g}; *reference self-check*: the same at steps {H_RICHARDSON:g} and "
        f"{H_RICHARDSON / 2:g} against A_ref, i.e. the resolution of the reference itself. "
        f"*central FD*: plain central differences at h = {H_FD:g}.\n\n" + accuracy,
    ])
    write_section("derivatives", body)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"[{time.perf_counter() - t0:.0f} s]")
