"""Contact and impulse dynamics against Pinocchio, per call from Python.

Solo-12 (free-flyer, nv = 18, four 3d point feet in LOCAL_WORLD_ALIGNED) and Talos
(free-flyer, nv = 38, example-robot-data's ``talos_reduced``, two 6d soles in LOCAL), at
one random state. Each pair (ours, Pinocchio's) is timed side by side in every round
(warm, best of 3 per measurement), several interleaved rounds: the table gives the
fastest time of each over the rounds and the median and range of the per-round ratios.

Run: ``python benchmarks/bench_contact.py [--cpu]`` (``--cpu``: the CPU time of the process
instead of the wall clock, for a loaded machine; needs the ``dev`` extra: pin and
example-robot-data). Writes the "contact dynamics" section of docs/benchmarks/.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import dynamics as dyn
from _common import machine, per_call_us, table, write_section
from bench_floating_base import load

ROUNDS = 7
ROBOTS = {  # label: (example-robot-data path, contacts)
    "Solo-12 (nv = 18), 4 × 3d feet, LOCAL_WORLD_ALIGNED": (
        "solo_description/robots/solo12.urdf", [dyn.Contact(f) for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]),
    "Talos (nv = 38), 2 × 6d soles, LOCAL": (
        "talos_data/robots/talos_reduced.urdf",
        [dyn.Contact(f, kind="6d", reference="local") for f in ("left_sole_link", "right_sole_link")]),
}
TARGETS = {"contact dynamics": 2.0, "contact dynamics, first derivatives": 2.5,
           "contact dynamics, contracted second order (against Pinocchio's first derivatives)": 5.0}


def pinocchio_contacts(pin, pm, contacts):
    """The contacts as Pinocchio RigidConstraintModels, and their datas."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in contacts:
        frame = pm.frames[pm.getFrameId(c.frame)]
        kind = pin.ContactType.CONTACT_3D if c.kind == "3d" else pin.ContactType.CONTACT_6D
        ref = pin.ReferenceFrame.LOCAL if c.reference == "local" else pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        rcm = pin.RigidConstraintModel(kind, pm, frame.parentJoint, frame.placement, ref)
        models.append(rcm)
        datas.append(rcm.createData())
    return models, datas


def pairs(rel, contacts):
    """[(name, ours, Pinocchio's)] of zero-argument callables at one random state."""
    import pinocchio as pin

    model, pm, pd, qmap, vmap = load(rel, "free-flyer")
    rng = np.random.default_rng(0)
    q, v, tau = dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp, vp, tp = np.empty(pm.nq), np.empty(pm.nv), np.empty(pm.nv)
    qp[qmap], vp[vmap], tp[vmap] = q, v, tau
    cm, cd = pinocchio_contacts(pin, pm, contacts)
    pin.initConstraintDynamics(pm, pd, cm, cd)
    prox = pin.ProximalSettings(1e-12, 0.0, 1)

    def pin_derivatives():
        pin.constraintDynamics(pm, pd, qp, vp, tp, cm, cd, prox)
        pin.computeConstraintDynamicsDerivatives(pm, pd, cm, cd)

    def pin_impulse_derivatives():
        pin.impulseDynamics(pm, pd, qp, vp, cm, cd, 0.0, prox)
        pin.computeImpulseDynamicsDerivatives(pm, pd, cm, cd, 0.0)

    w = rng.normal(size=model.nv + sum(c.dim for c in contacts))
    return [
        ("contact dynamics", lambda: dyn.contact_dynamics(model, q, v, tau, contacts),
         lambda: pin.constraintDynamics(pm, pd, qp, vp, tp, cm, cd, prox)),
        ("contact dynamics, first derivatives", lambda: dyn.contact_dynamics_derivatives(model, q, v, tau, contacts),
         pin_derivatives),
        ("contact dynamics, contracted second order (against Pinocchio's first derivatives)",
         lambda: dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, w), pin_derivatives),
        ("impulse dynamics", lambda: dyn.impulse_dynamics(model, q, v, contacts),
         lambda: pin.impulseDynamics(pm, pd, qp, vp, cm, cd, 0.0, prox)),
        ("impulse dynamics, first derivatives", lambda: dyn.impulse_dynamics_derivatives(model, q, v, contacts),
         pin_impulse_derivatives),
        ("impulse dynamics, contracted second order (against Pinocchio's first derivatives)",
         lambda: dyn.impulse_dynamics_second_derivatives_contracted(model, q, v, contacts, w), pin_impulse_derivatives),
    ]


def measure(cases, clock):
    """For each (name, ours, theirs): (fastest ours µs, fastest theirs µs, per-round ratios)."""
    best = [[np.inf, np.inf, []] for _ in cases]
    for _ in range(ROUNDS):
        for b, (_, ours, theirs) in zip(best, cases):
            t_ours, t_theirs = per_call_us(ours, 0.1, 3, clock), per_call_us(theirs, 0.1, 3, clock)
            b[0], b[1] = min(b[0], t_ours), min(b[1], t_theirs)
            b[2].append(t_ours / t_theirs)
    return best


def main(cpu: bool) -> None:
    import pinocchio as pin

    blocks, verdicts = [], []
    for label, (rel, contacts) in ROBOTS.items():
        cases = pairs(rel, contacts)
        rows = []
        for (name, _, _), (ours, theirs, ratios) in zip(cases, measure(cases, time.process_time if cpu else time.perf_counter)):
            med, lo, hi = np.median(ratios), min(ratios), max(ratios)
            rows.append([name, f"{ours:.1f}", f"{theirs:.1f}", f"{med:.2f}×", f"{lo:.2f}–{hi:.2f}"])
            if name in TARGETS:
                verdicts.append(f"{label.split(' (')[0]}, {name} ≤ {TARGETS[name]}× Pinocchio: median {med:.2f}× "
                                f"(range {lo:.2f}–{hi:.2f}), {'met' if hi <= TARGETS[name] else 'missed' if lo > TARGETS[name] else 'met by the median' if med <= TARGETS[name] else 'missed by the median'}")
        blocks.append(f"### {label}\n\n" + table(
            ["algorithm", "optdyn µs", f"Pinocchio {pin.__version__} µs", "ratio (median)", "range over rounds"], rows))
    clock = ("in CPU time of the process (a loaded machine's waits for a core not counted)" if cpu
             else "by the wall clock")
    text = f"""## Contact dynamics against Pinocchio

{machine()}. `python benchmarks/bench_contact.py{" --cpu" if cpu else ""}`: per call from Python, warm,
{clock}; each pair timed side by side (best of 3) in each of {ROUNDS} interleaved rounds; fastest time over the
rounds, and the median and range of the per-round ratios. Pinocchio's calls are
`constraintDynamics` (ProximalSettings(1e-12, 0, 1): one Cholesky, no proximal iteration),
`+ computeConstraintDynamicsDerivatives`, `impulseDynamics` (e = 0) and
`+ computeImpulseDynamicsDerivatives`; ours the functions of the same names in `dynamics`.
Pinocchio has no second order: the contracted second-order rows are compared with its
first-order derivatives (forward pass included), as the target is stated.

{(chr(10) * 2).join(blocks)}

Targets: {"; ".join(verdicts)}.

The machine was shared (three sessions on 2 cores), hence the wide ranges; the ratio of the
fastest times is the steadier figure. Where the time goes: the KKT system is solved through
Featherstone's sparse LTDL factor of M (CRBA) and a Cholesky of the nc × nc Delassus matrix.
The first version used Carpentier's dense M⁻¹ instead, which alone costs 8 µs on Solo-12 and
38 µs on Talos against 3 and 6 µs for the CRBA (`dyn.minv`, `dyn.crba`, timed alone the same
day); with it this script measured 2.5× Pinocchio for the contact dynamics on both robots.
On Solo-12 about 5 µs of a call are fixed Python costs (argument checks, the numba dispatch
of eight arguments, the boxing of the results; the kernel alone measured 17 µs of 22 µs),
which Pinocchio's bindings spend in about 1 µs.

The contracted second order starts from the data the first-order pass leaves in the workspace: the
contracted IDSVA-SO from its RNEA-derivative quantities (the contact forces taken back out of its
joint vectors), as FDSVA-SO does, where it used to redo the kinematics, RNEA and derivative passes
(before/after: docs/benchmarks/, "cold start contacts"). The contact Hessians
(`dynamics.contact_hessians`) take the derivative of each first-order column formula g_k along a
column j as S_jᵀ Y_k: one reverse sweep through g_k per contact and column gives the adjoints of the
quantities it reads, Y_k depends on j only through j's body (the free-flyer's six columns share
one), and each pair (j, k) is a dot product. They used to evaluate every pair by dual (forward-mode)
arithmetic, O(nc·d²) evaluations of the column formulas (d the depth of a contact's body: 9 DoF for
a Solo foot, four feet), most of the call: on Solo-12 this section measured 7.22× (contact) and
9.18× (impulse) on 2026-11-25, and a focused run of the two second-order rows (7 rounds, CPU time)
7.93× (7.47–13.35, 343 µs) and 7.80× (5.99–10.55, 206 µs) on 2026-11-26 just before the change,
3.69× (2.00–3.95, 140 µs) and 4.28× (3.65–5.95, 100 µs) just after. On Solo-12 the Hessians now take
33 µs (ν·a_c, level 2) and 9 µs (a contact velocity, level 1; once in the contact row, twice in the
impulse row) of the 136 µs of a contact call (the kernels timed alone in a loop); the rest is the
first-order pass (42 µs), the contracted IDSVA-SO, the force terms of its eq. 6 and the adjoint
products. On Talos the two rows measured 4.94× and 4.57× on 2026-11-25. (The dual version measured
9× and 5.05× at first, 7.7× and 4.0× after the pair symmetries; a form whose dual arithmetic used
numba slice expressions that allocate temporaries, 17× and 7×.)
"""
    write_section("contact", text)


if __name__ == "__main__":
    main("--cpu" in sys.argv[1:])
