"""Per-call cost of external forces → docs/benchmarks/, section "external forces".

UR5, warm, from Python: rnea, aba and their first derivatives without forces and with
f_ext (one nonzero wrench per joint: the worst case, every body pays the transform),
and the batched ABA over 100 knots without and with F_EXT; the compiled kernels alone
(what the integrator calls) separate the algorithm's cost from the Python argument checks. Target: at most 1.2× the
time without forces. Also the cost of :func:`dynamics.frame_force` itself.

Run: .venv/bin/python benchmarks/bench_external_forces.py
"""
from __future__ import annotations

import os

import numpy as np

import dynamics as dyn
from dynamics import batch
from dynamics._checks import NO_FORCE
from dynamics.aba import aba_call
from dynamics.rnea import rnea_call
from dynamics.workspace import model_workspace
from _common import interleaved_us, machine, per_call_us, table, write_section

K = 100
ROUNDS = 9


def main() -> None:
    model = dyn.models.ur5()
    rng = np.random.default_rng(0)
    q, v, a = rng.uniform(-1, 1, (3, model.nv))
    f_ext = rng.normal(size=(model.njoints, 6))
    Q, V, A = rng.uniform(-1, 1, (3, K, model.nv))
    F = rng.normal(size=(K, model.njoints, 6))
    b, out = model_workspace(model), np.empty(model.nv)
    dyn.rnea(model, q, v, a), dyn.aba(model, q, v, a)  # compile the kernels called directly below
    cases = {
        "rnea kernel (compiled, no Python checks)": (lambda: rnea_call(b, q, v, a, NO_FORCE, out),
                                                     lambda: rnea_call(b, q, v, a, f_ext, out)),
        "aba kernel (compiled, no Python checks)": (lambda: aba_call(b, q, v, a, NO_FORCE, out),
                                                    lambda: aba_call(b, q, v, a, f_ext, out)),
        "rnea": (lambda: dyn.rnea(model, q, v, a), lambda: dyn.rnea(model, q, v, a, f_ext)),
        "aba": (lambda: dyn.aba(model, q, v, a), lambda: dyn.aba(model, q, v, a, f_ext)),
        "rnea_derivatives": (lambda: dyn.rnea_derivatives(model, q, v, a),
                             lambda: dyn.rnea_derivatives(model, q, v, a, f_ext)),
        "aba_derivatives": (lambda: dyn.aba_derivatives(model, q, v, a),
                            lambda: dyn.aba_derivatives(model, q, v, a, f_ext)),
        f"aba_batch (K = {K})": (lambda: batch.aba_batch(model, Q, V, A), lambda: batch.aba_batch(model, Q, V, A, F)),
    }
    rows = []
    for name, (without, with_f) in cases.items():
        t0, t1 = interleaved_us([(lambda: None, without), (lambda: None, with_f)], rounds=ROUNDS)
        rows.append([name, t0, t1, t1 / t0])
    t_ff = per_call_us(lambda: dyn.frame_force(model, q, "tool0", [0, 0, 20.0, 0, 0, 0]))
    body = (f"UR5, per call from Python (warm; best of {ROUNDS} alternating rounds), µs; {machine()}.\n"
            "f_ext: a random wrench on every joint (each body pays the transform to world).\n\n"
            + table(["function", "no f_ext", "with f_ext", "ratio"], rows)
            + f"\n\n`dyn.frame_force(model, q, \"tool0\", w)`: {t_ff:.3g} µs per call "
            "(Python: one forward kinematics and the transform; call it once per interval, not in a loop).\n"
            "Target: with f_ext at most 1.2× without. "
            f"Load average (1 min) at the end of the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores — "
            "ratios below 1 or far above it mean the machine was shared; trust the kernel rows most.")
    write_section("external forces", body)


if __name__ == "__main__":
    main()
