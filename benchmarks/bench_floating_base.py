"""Floating-base robots against Pinocchio, in the style of Carpentier & Mansard 2018, Table I.

For the UR5 (fixed base), HyQ (quadruped, free-flyer, nv = 18) and Talos (humanoid,
free-flyer, nv = 38, example-robot-data's ``talos_reduced``), every algorithm is timed
per call from Python (warm, best of 5) for optdyn and for Pinocchio in the same run, at
one random state. Second-order rows compare IDSVA-SO (full tensors and contracted) with
Pinocchio's first-order RNEA derivatives, and quote the C++ figures Singh, Russell &
Wensing 2023 report for ATLAS (36 DoF): ID second order ≈ 200 µs, FD second order ≈ 2.1 ms.

Run: ``python benchmarks/bench_floating_base.py`` (needs the ``dev`` extra: pin and
example-robot-data). Writes the "floating base" section of docs/benchmarks/.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

import dynamics as dyn
from _common import machine, per_call_us, table, write_section

ROBOTS = {  # name: (example-robot-data path or None for the built-in UR5, root joint)
    "UR5 (fixed base, nv = 6)": (None, None),
    "HyQ (free-flyer, nv = 18)": ("hyq_description/robots/hyq_no_sensors.urdf", "free-flyer"),
    "Talos (free-flyer, nv = 38)": ("talos_data/robots/talos_reduced.urdf", "free-flyer"),
}


def load(rel: str | None, root: str | None):
    """(our model, Pinocchio model, its data, index map of v) of one robot."""
    import example_robot_data as erd
    import pinocchio as pin

    path = dyn.models.ur5().source if rel is None else os.path.join(erd.getModelPath(rel), rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mesh and dummy-inertia warnings
        model = dyn.load_urdf(path, root_joint=root)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if root else pin.buildModelFromUrdf(path)
    names = list(pm.names)[1:]
    qmap, vmap = np.empty(model.nq, int), np.empty(model.nv, int)
    for i, name in enumerate(model.joint_names):
        j = names.index(name) + 1
        qmap[model.idx_qs[i]: model.idx_qs[i] + model.nqs[i]] = range(pm.idx_qs[j], pm.idx_qs[j] + pm.nqs[j])
        vmap[model.idx_vs[i]: model.idx_vs[i] + model.nvs[i]] = range(pm.idx_vs[j], pm.idx_vs[j] + pm.nvs[j])
    return model, pm, pm.createData(), qmap, vmap


def times(model, pm, pd, qmap, vmap) -> list[tuple[str, float, float | None]]:
    """(algorithm, our µs, Pinocchio µs or None) per call at one random state."""
    import pinocchio as pin

    rng = np.random.default_rng(0)
    q, v, a = dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    tau = dyn.rnea(model, q, v, a)
    qp, vp, ap, tp = np.empty(pm.nq), np.empty(pm.nv), np.empty(pm.nv), np.empty(pm.nv)
    qp[qmap], vp[vmap], ap[vmap], tp[vmap] = q, v, a, tau
    mu = rng.normal(size=model.nv)
    rows = [
        ("RNEA", lambda: dyn.rnea(model, q, v, a), lambda: pin.rnea(pm, pd, qp, vp, ap)),
        ("CRBA", lambda: dyn.crba(model, q), lambda: pin.crba(pm, pd, qp)),
        ("ABA", lambda: dyn.aba(model, q, v, tau), lambda: pin.aba(pm, pd, qp, vp, tp)),
        ("M⁻¹", lambda: dyn.minv(model, q), lambda: pin.computeMinverse(pm, pd, qp)),
        ("∂RNEA", lambda: dyn.rnea_derivatives(model, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap)),
        ("∂ABA", lambda: dyn.aba_derivatives(model, q, v, tau),
         lambda: pin.computeABADerivatives(pm, pd, qp, vp, tp)),
        ("∂²RNEA (IDSVA-SO, tensors)", lambda: dyn.rnea_second_derivatives(model, q, v, a), None),
        ("∂²RNEA contracted with μ", lambda: dyn.rnea_second_derivatives_contracted(model, q, v, a, mu), None),
        ("∂²ABA (FDSVA-SO, tensors)", lambda: dyn.aba_second_derivatives(model, q, v, tau), None),
        ("∂²ABA contracted with λ", lambda: dyn.aba_second_derivatives_contracted(model, q, v, tau, mu), None),
    ]
    nv = model.nv
    rows.append(("writing zeros to four fresh nv³ tensors (np.full)", lambda: np.full((4, nv, nv, nv), 0.0), None))
    out = []
    for name, ours, theirs in rows:
        try:
            t = per_call_us(ours)
        except ValueError as e:  # an algorithm not available for this joint type
            print(f"{name}: {e}")
            t = float("nan")
        out.append((name, t, per_call_us(theirs) if theirs else None))
    return out


def main() -> None:
    blocks, ratios = [], []
    for label, (rel, root) in ROBOTS.items():
        model, pm, pd, qmap, vmap = load(rel, root)
        rows = times(model, pm, pd, qmap, vmap)
        pin_drnea = next(p for n, _, p in rows if n == "∂RNEA")
        body = []
        for name, ours, theirs in rows:
            ref = theirs if theirs is not None else pin_drnea
            what = "Pinocchio" if theirs is not None else "Pinocchio ∂RNEA"
            body.append([name, f"{ours:.1f}", f"{ref:.1f} ({what})", f"{ours / ref:.2f}×"])
        blocks.append(f"**{label}**\n\n" + table(["algorithm", "optdyn µs", "reference µs", "ratio"], body))
        ratios.append((label, {n: o / (p if p is not None else pin_drnea) for n, o, p in rows}))
    targets = []
    ur5, talos = ratios[0][1], ratios[-1][1]
    for name in ("RNEA", "ABA", "CRBA", "M⁻¹", "∂RNEA", "∂ABA"):
        targets.append([f"UR5 {name} ≤ 2× Pinocchio", f"{ur5[name]:.2f}×", "met" if ur5[name] <= 2 else "missed"])
    for name in ("∂RNEA", "∂ABA"):
        targets.append([f"Talos {name} ≤ 2.5× Pinocchio", f"{talos[name]:.2f}×",
                        "met" if talos[name] <= 2.5 else "missed"])
    so = talos["∂²RNEA (IDSVA-SO, tensors)"]
    targets.append(["Talos ID second order ≤ 12× Pinocchio ∂RNEA", f"{so:.2f}×",
                    "not measured" if np.isnan(so) else ("met" if so <= 12 else "missed")])
    text = f"""## Floating-base robots against Pinocchio (Carpentier & Mansard 2018, Table I style)

{machine()}. `python benchmarks/bench_floating_base.py`: per call from Python, warm, best
of 5, one random state; Pinocchio {__import__('pinocchio').__version__} in the same run. Second-order rows
are compared with Pinocchio's first-order RNEA derivatives (Pinocchio has no second order
in this form). For scale, Singh, Russell & Wensing 2023 report for ATLAS (36 DoF, C++):
ID second order ≈ 200 µs, FD second order ≈ 2.1 ms. The full second-order tensors are
returned as views of one fresh array (4·nv³ doubles, 1.8 MB for Talos): the row "writing
zeros to four fresh nv³ tensors" is what obtaining and filling that memory costs by itself,
a floor the tensor functions cannot go below; the contracted forms, which DDP and IPOPT
use, form no such tensor. (As four separate arrays, freed together after each call, that
memory was handed back to the system by the C allocator and page-faulted in again on the
next call: about 0.2 ms more per call on Talos.)

{(chr(10) * 2).join(blocks)}

**Targets of the multi-DoF joints**

{table(["target", "measured", ""], targets)}
"""
    write_section("floating base", text)


if __name__ == "__main__":
    main()
