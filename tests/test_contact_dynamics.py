"""Rigid contacts and impacts: contact_dynamics, impulse_dynamics and their first derivatives.

Oracles: Pinocchio's constraintDynamics / impulseDynamics and their derivatives on
Solo-12 (four point feet) and Talos (two soles), loaded by both libraries from the same
URDF; central differences of our own functions on the manifold (every joint type);
physics read through functions that know nothing of contacts (frame Jacobians and
placements, RNEA, kinetic energy).
"""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn

from numdiff import central
from test_floating_base import _permutations, _robot_path, mixed_tree

pin = pytest.importorskip("pinocchio")

FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
SOLES = ["left_sole_link", "right_sole_link"]
CASES = {
    "solo-3d-lwa": ("solo12", [dyn.Contact(f) for f in FEET]),
    "solo-3d-local-baumgarte": ("solo12", [dyn.Contact(f, reference="local", baumgarte=(3.0, 2.0),
                                                       target=(0.1, 0.2, -0.3)) for f in FEET[:2]]),
    "solo-3d-lwa-baumgarte": ("solo12", [dyn.Contact(f, baumgarte=(3.0, 2.0), target=(0.1, 0.2, -0.3))
                                         for f in FEET[1:]]),
    "talos-6d-local": ("talos", [dyn.Contact(f, kind="6d", reference="local") for f in SOLES]),
    "talos-6d-lwa-kd": ("talos", [dyn.Contact(f, kind="6d", baumgarte=(0.0, 2.0)) for f in SOLES]),
    "solo-armature-3d-lwa": ("solo12-armature", [dyn.Contact(f) for f in FEET]),
}


@pytest.fixture(scope="module")
def robots():
    """name → (our model, Pinocchio model, q map, v map), loaded once; "solo12-armature" is
    Solo-12 with reflected rotor inertias of 0.01–0.05 kg·m² on its 12 joints in both."""
    out = {}
    for name in ("solo12", "talos"):
        urdf, _ = _robot_path(name)
        with pytest.warns(UserWarning):  # meshes not resolved: irrelevant here
            model = dyn.load_urdf(urdf, root_joint="free-flyer")
        pm = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
        out[name] = (model, pm, *_permutations(model, pm))
    model, pm, qmap, vmap = out["solo12"]
    armature = np.r_[np.zeros(6), np.random.default_rng(0).uniform(0.01, 0.05, model.nv - 6)]
    pm = pm.copy()
    pm.armature[vmap] = armature
    assert np.array_equal(pm.armature[vmap], armature)
    out["solo12-armature"] = (model.with_armature(armature), pm, qmap, vmap)
    return out


def pinocchio_contacts(pm, contacts):
    """The same contacts as Pinocchio RigidConstraintModels and their datas."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in contacts:
        frame = pm.frames[pm.getFrameId(c.frame)]
        kind = pin.ContactType.CONTACT_3D if c.kind == "3d" else pin.ContactType.CONTACT_6D
        ref = pin.ReferenceFrame.LOCAL if c.reference == "local" else pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        rcm = pin.RigidConstraintModel(kind, pm, frame.parentJoint, frame.placement, 0,
                                       pin.SE3(np.eye(3), np.array(c.target)), ref)
        rcm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(*c.baumgarte))
        models.append(rcm)
        datas.append(rcm.createData())
    return models, datas


def state(model, seed):
    rng = np.random.default_rng(seed)
    return dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


def pinocchio_run(robots, case, seed):
    """(our model, contacts, q, v, τ, Pinocchio's (model, data, contact models, datas, q, v, τ), v map)."""
    name, contacts = CASES[case]
    model, pm, qmap, vmap = robots[name]
    q, v, tau = state(model, seed)
    qp, vp, tp = np.empty(pm.nq), np.empty(pm.nv), np.empty(pm.nv)
    qp[qmap], vp[vmap], tp[vmap] = q, v, tau
    pd = pm.createData()
    cm, cd = pinocchio_contacts(pm, contacts)
    pin.initConstraintDynamics(pm, pd, cm, cd)
    return model, contacts, q, v, tau, (pm, pd, cm, cd, qp, vp, tp), vmap


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("case", list(CASES))
def test_contact_dynamics_and_derivatives_match_pinocchio(robots, case, seed):
    model, contacts, q, v, tau, (pm, pd, cm, cd, qp, vp, tp), vmap = pinocchio_run(robots, case, seed)
    qdd, lam = dyn.contact_dynamics(model, q, v, tau, contacts)
    a = pin.constraintDynamics(pm, pd, qp, vp, tp, cm, cd)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(qdd, a[vmap], rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(lam, pd.lambda_c, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(lam).max()))
    pin.computeConstraintDynamicsDerivatives(pm, pd, cm, cd)
    ours = dyn.contact_dynamics_derivatives(model, q, v, tau, contacts)
    ix = np.ix_(vmap, vmap)
    theirs = (pd.ddq_dq[ix], pd.ddq_dv[ix], pd.ddq_dtau[ix],
              pd.dlambda_dq[:, vmap], pd.dlambda_dv[:, vmap], pd.dlambda_dtau[:, vmap])
    for name, A, B in zip(["dqdd_dq", "dqdd_dv", "dqdd_dtau", "dlam_dq", "dlam_dv", "dlam_dtau"], ours, theirs):
        np.testing.assert_allclose(A, B, rtol=0, atol=1e-8 * max(1.0, np.abs(B).max()), err_msg=name)


@pytest.mark.parametrize("restitution", [0.0, 0.6])
@pytest.mark.parametrize("case", ["solo-3d-lwa", "solo-3d-local-baumgarte", "talos-6d-local", "talos-6d-lwa-kd",
                                  "solo-armature-3d-lwa"])
def test_impulse_dynamics_and_derivatives_match_pinocchio(robots, case, restitution):
    model, contacts, q, v, _, (pm, pd, cm, cd, qp, vp, _), vmap = pinocchio_run(robots, case, 3)
    v_plus, imp = dyn.impulse_dynamics(model, q, v, contacts, restitution)
    pin.impulseDynamics(pm, pd, qp, vp, cm, cd, restitution, pin.ProximalSettings(1e-12, 0.0, 1))
    np.testing.assert_allclose(v_plus, pd.dq_after[vmap], rtol=0, atol=1e-10)
    np.testing.assert_allclose(imp, pd.impulse_c, rtol=0, atol=1e-10 * max(1.0, np.abs(imp).max()))
    pin.computeImpulseDynamicsDerivatives(pm, pd, cm, cd, restitution)
    dq, dv, dimp_dq, dimp_dv = dyn.impulse_dynamics_derivatives(model, q, v, contacts, restitution)
    ix = np.ix_(vmap, vmap)
    np.testing.assert_allclose(dq, pd.ddq_dq[ix], atol=1e-9)
    np.testing.assert_allclose(dv, np.eye(model.nv) + pd.ddq_dv[ix], atol=1e-9)  # Pinocchio's is ∂v⁺/∂v − I
    np.testing.assert_allclose(dimp_dq, pd.dlambda_dq[:, vmap], atol=1e-9)
    np.testing.assert_allclose(dimp_dv, pd.dlambda_dv[:, vmap], atol=1e-9)


# ---- our own functions on the manifold, every joint type ---------------------------------

@pytest.fixture(scope="module", params=["floating", "spherical", "planar"])
def tree(request):
    """A tree with every joint type below a ``request.param`` root and two contacts on it."""
    model = mixed_tree(3, request.param)
    return model, [dyn.Contact("l6", reference="local", baumgarte=(2.0, 1.5), target=(0.1, 0.0, 0.2)),
                   dyn.Contact("l7", kind="6d", reference="local", baumgarte=(0.0, 0.7)),
                   dyn.Contact("l3", baumgarte=(1.0, 0.0))]  # independent rows for every root


def test_contact_derivatives_are_tangent_space_differences(tree):
    model, contacts = tree
    q, v, tau = state(model, 5)
    f_ext = np.random.default_rng(6).normal(size=(model.njoints, 6))
    out = lambda q_, v_, t_: np.concatenate(dyn.contact_dynamics(model, q_, v_, t_, contacts, f_ext))
    num = (central(lambda e: out(dyn.integrate(model, q, e), v, tau), np.zeros(model.nv)),
           central(lambda x: out(q, x, tau), v), central(lambda x: out(q, v, x), tau))
    d = dyn.contact_dynamics_derivatives(model, q, v, tau, contacts, f_ext)
    nv = model.nv
    for k in range(3):
        ref = num[k]
        np.testing.assert_allclose(d[k], ref[:nv], rtol=1e-6, atol=1e-6 * max(1.0, np.abs(ref).max()))
        np.testing.assert_allclose(d[3 + k], ref[nv:], rtol=1e-6, atol=1e-6 * max(1.0, np.abs(ref).max()))


def test_the_zero_gravity_of_the_workspace_is_typed_as_the_models_gravity():
    """The contact passes take the model record's gravity (read-only), the impulse passes and
    the contracted second orders the zero gravity of their workspace: typed read-only too, so
    that the contact value derivatives and Hessians and the RNEA passes they share are
    compiled once for both."""
    from numba import types

    from dynamics.contact_workspace import ContactWork, new_contact_work

    args = (types.Array(types.int64, 2, "C", readonly=True), types.Array(types.int64, 2, "C"), types.int64,
            types.boolean)
    new_contact_work.compile(args)
    work = new_contact_work.overloads[args].signature.return_type
    assert not work.types[ContactWork._fields.index("zero3")].mutable
    assert work.types[ContactWork._fields.index("zeros")].mutable  # the others stay as they were


def test_impulse_derivatives_are_tangent_space_differences(tree):
    model, contacts = tree
    q, v, _ = state(model, 7)
    out = lambda q_, v_: np.concatenate(dyn.impulse_dynamics(model, q_, v_, contacts, 0.3))
    num_q = central(lambda e: out(dyn.integrate(model, q, e), v), np.zeros(model.nv))
    num_v = central(lambda x: out(q, x), v)
    dq, dv, iq, iv = dyn.impulse_dynamics_derivatives(model, q, v, contacts, 0.3)
    nv = model.nv
    np.testing.assert_allclose(np.vstack([dq, iq]), num_q, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(num_q).max()))
    np.testing.assert_allclose(np.vstack([dv, iv]), num_v, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(num_v).max()))
    assert np.abs(dv - np.eye(nv)).max() > 1e-3  # the full derivative, not minus the identity


# ---- physics, read through functions that know nothing of contacts ---------------------------

def contact_jacobian(model, q, contact):
    """The contact's Jacobian (dim, nv) from frame_jacobian/frame_placement."""
    R, _ = dyn.frame_placement(model, q, contact.frame)
    J = dyn.frame_jacobian(model, q, contact.frame)
    if contact.reference == "local":
        J = np.vstack([R.T @ J[:3], R.T @ J[3:]])
    return J[:contact.dim]


def frame_velocity(model, q, v, contact):
    """The contact's velocity as Pinocchio defines it: [origin velocity; ω], world or local axes."""
    return contact_jacobian(model, q, contact) @ v


def test_equations_of_motion_hold_with_external_forces(tree):
    model, contacts = tree
    q, v, tau = state(model, 29)
    f_ext = np.random.default_rng(30).normal(size=(model.njoints, 6))
    qdd, lam = dyn.contact_dynamics(model, q, v, tau, contacts, f_ext)
    J = np.vstack([contact_jacobian(model, q, c) for c in contacts])
    # M q̈ + b − (f_ext terms) = τ + Jᵀλ, by the RNEA with the same f_ext
    np.testing.assert_allclose(dyn.rnea(model, q, v, qdd, f_ext), tau + J.T @ lam, rtol=1e-9, atol=1e-9)
    qdd0, lam0 = dyn.contact_dynamics(model, q, v, tau, contacts)
    assert np.abs(lam - lam0).max() > 1e-3  # f_ext does act
    qdd_free = dyn.contact_dynamics(model, q, v, tau, [], f_ext)[0]
    np.testing.assert_allclose(qdd_free, dyn.aba(model, q, v, tau, f_ext), rtol=1e-10, atol=1e-10)


def test_damped_derivatives_are_those_of_the_regularised_system(tree):
    model, contacts = tree
    q, v, tau = state(model, 31)
    mu = 1e-2
    out = lambda q_, v_: np.concatenate(dyn.contact_dynamics(model, q_, v_, tau, contacts, damping=mu))
    num_q = central(lambda e: out(dyn.integrate(model, q, e), v), np.zeros(model.nv))
    num_v = central(lambda x: out(q, x), v)
    d = dyn.contact_dynamics_derivatives(model, q, v, tau, contacts, damping=mu)
    for ours, ref in ((np.vstack([d[0], d[3]]), num_q), (np.vstack([d[1], d[4]]), num_v)):
        np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(ref).max()))
    qdd, lam = dyn.contact_dynamics(model, q, v, tau, contacts, damping=mu)
    qdd0, lam0 = dyn.contact_dynamics(model, q, v, tau, contacts)
    assert np.abs(lam - lam0).max() > 1e-6 * np.abs(lam0).max()  # the damping does act


def test_a_contact_list_changed_in_place_is_read_again(tree):
    model, contacts = tree
    q, v, tau = state(model, 37)
    chosen = list(contacts)
    first = dyn.contact_dynamics(model, q, v, tau, chosen)[1]
    chosen[0] = dyn.Contact(contacts[0].frame)  # another reference: other forces
    np.testing.assert_allclose(dyn.contact_dynamics(model, q, v, tau, chosen)[1],
                               dyn.contact_dynamics(model, q, v, tau, list(chosen))[1], rtol=0, atol=0)
    assert np.abs(dyn.contact_dynamics(model, q, v, tau, chosen)[1] - first).max() > 1e-6


@pytest.mark.parametrize("case", ["solo-3d-lwa", "talos-6d-local"])
def test_contact_accelerations_vanish(robots, case):
    name, contacts = CASES[case]
    model = robots[name][0]
    q, v, tau = state(model, 11)
    qdd, _ = dyn.contact_dynamics(model, q, v, tau, contacts)
    # d/dt of the contact velocity along q(t) = q ⊕ v t, v(t) = v + q̈ t: the classical
    # acceleration of a point (3d, world axes), the spatial acceleration of a frame (6d, local)
    along = lambda t: np.concatenate([frame_velocity(model, dyn.integrate(model, q, v * t[0]), v + qdd * t[0], c)
                                      for c in contacts])
    acc = central(along, np.zeros(1), 1e-5)[:, 0]
    assert np.abs(acc).max() < 1e-6 * max(1.0, np.abs(qdd).max())
    assert np.abs(along(np.zeros(1))).max() > 0.1  # the feet do move: the test can fail


def test_at_rest_the_normal_forces_carry_the_weight(robots):
    model = robots["solo12"][0]
    contacts = [dyn.Contact(f) for f in FEET]
    q = dyn.neutral(model)
    q[2] = 0.3
    q[7:] = np.tile([0.0, 0.8, -1.6], 4)
    # torques that hold the robot still on its feet: base rows of g(q) = J_baseᵀ λ₀, τ = g − Jᵀλ₀
    J = np.vstack([dyn.frame_jacobian(model, q, f)[:3] for f in FEET])
    g = dyn.gravity_torques(model, q)
    lam0 = np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]
    tau = g - J.T @ lam0
    tau[:6] = 0.0
    qdd, lam = dyn.contact_dynamics(model, q, np.zeros(model.nv), tau, contacts)
    weight = model.inertia[:, 0].sum() * 9.81
    np.testing.assert_allclose(qdd, 0.0, atol=1e-9)
    np.testing.assert_allclose(lam.reshape(4, 3).sum(axis=0), [0.0, 0.0, weight], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(lam, lam0, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("case", ["solo-3d-lwa", "talos-6d-local"])
def test_impacts_stop_the_contacts_and_dissipate(robots, case):
    name, contacts = CASES[case]
    model = robots[name][0]
    q, v, _ = state(model, 13)
    v_plus, _ = dyn.impulse_dynamics(model, q, v, contacts)
    after = np.concatenate([frame_velocity(model, q, v_plus, c) for c in contacts])
    before = np.concatenate([frame_velocity(model, q, v, c) for c in contacts])
    assert np.abs(after).max() < 1e-10 * np.abs(before).max()
    assert dyn.kinetic_energy(model, q, v_plus) < dyn.kinetic_energy(model, q, v) - 1e-3


def test_elastic_impact_on_one_contact_keeps_the_energy(robots):
    model = robots["solo12"][0]
    contacts = [dyn.Contact("FL_FOOT", reference="local")]
    q, v, _ = state(model, 17)
    v_plus, _ = dyn.impulse_dynamics(model, q, v, contacts, restitution=1.0)
    np.testing.assert_allclose(frame_velocity(model, q, v_plus, contacts[0]), -frame_velocity(model, q, v, contacts[0]),
                               atol=1e-10)
    assert np.abs(v_plus - v).max() > 0.1
    np.testing.assert_allclose(dyn.kinetic_energy(model, q, v_plus), dyn.kinetic_energy(model, q, v), rtol=1e-11)


# ---- dependent contacts ------------------------------------------------------------------------

def test_dependent_contacts_raise_naming_them_or_share_the_load_with_damping(robots):
    model = robots["talos"][0]
    q, v, tau = state(model, 19)
    one = [dyn.Contact("left_sole_link", kind="6d", reference="local")]
    two = one + [dyn.Contact("leg_left_6_link", kind="6d", reference="local")]  # the sole's own body: same rows
    with pytest.raises(ValueError, match=r"contacts: dependent.*contacts\[1\] \('leg_left_6_link'.*left_sole_link"):
        dyn.contact_dynamics(model, q, v, tau, two)
    with pytest.raises(ValueError, match="contacts: dependent"):
        dyn.contact_dynamics_derivatives(model, q, v, tau, two)
    with pytest.raises(ValueError, match="contacts: dependent"):
        dyn.impulse_dynamics(model, q, v, two + two)
    qdd1, lam1 = dyn.contact_dynamics(model, q, v, tau, one)
    qdd2, lam2 = dyn.contact_dynamics(model, q, v, tau, one + one, damping=1e-8)
    np.testing.assert_allclose(qdd2, qdd1, rtol=1e-5, atol=1e-5 * np.abs(qdd1).max())
    scale = 1e-5 * np.abs(lam1).max()
    np.testing.assert_allclose(lam2[:6], 0.5 * lam1, atol=scale)  # the least-norm split: half each
    np.testing.assert_allclose(lam2[6:], 0.5 * lam1, atol=scale)


# ---- bad input --------------------------------------------------------------------------------

def test_bad_contacts_raise_naming_the_argument():
    with pytest.raises(ValueError, match="^kind: expected one of '3d', '6d', got '2d'"):
        dyn.Contact("tool0", kind="2d")
    with pytest.raises(ValueError, match="^reference: .*got 'world'"):
        dyn.Contact("tool0", reference="world")
    with pytest.raises(ValueError, match="^baumgarte: expected 2 finite numbers"):
        dyn.Contact("tool0", baumgarte=(1.0, np.nan))
    with pytest.raises(ValueError, match="^baumgarte: kp"):
        dyn.Contact("tool0", kind="6d", baumgarte=(1.0, 0.0))
    with pytest.raises(ValueError, match="^frame: expected a frame name"):
        dyn.Contact(3)


def test_bad_calls_raise_naming_the_argument(tree):
    model, contacts = tree
    q, v, tau = state(model, 23)
    call = lambda **kw: dyn.contact_dynamics(**{"model": model, "q": q, "v": v, "tau": tau, "contacts": contacts, **kw})
    bad_q = q.copy()
    bad_q[3:7] *= 1.5
    for kw, message in [({"contacts": [dyn.Contact("nowhere")]}, r"^contacts\[0\]: frame: unknown frame 'nowhere'"),
                        ({"contacts": [dyn.Contact("world")]}, r"^contacts\[0\]: frame 'world' is fixed on the base"),
                        ({"contacts": contacts[0]}, "^contacts: expected a list"),
                        ({"contacts": ["l6"]}, "^contacts: item 0 is not a dynamics.Contact"),
                        ({"q": q[:-1]}, "^q: expected shape"), ({"v": v[:-1]}, "^v: expected shape"),
                        ({"tau": np.r_[tau, 0.0]}, "^tau: expected shape"),
                        ({"q": np.r_[np.nan, q[1:]]}, "^q: expected finite"),
                        ({"v": np.r_[np.inf, v[1:]]}, "^v: expected finite"),
                        ({"tau": np.r_[np.nan, tau[1:]]}, "^tau: expected finite"),
                        ({"f_ext": np.full((model.njoints, 6), np.nan)}, "^f_ext: expected finite"),
                        ({"f_ext": np.zeros((2, 6))}, r"^f_ext: expected shape"),
                        ({"damping": -1.0}, "^damping: expected a finite number"),
                        ({"damping": "a"}, "^damping: expected a number")]:
        with pytest.raises(ValueError, match=message):
            call(**kw)
    if model.joint_types[0] in ("free-flyer", "spherical"):
        with pytest.raises(ValueError, match="^q: the unit quaternion"):
            call(q=bad_q)
    for fn in (dyn.impulse_dynamics, dyn.impulse_dynamics_derivatives):
        with pytest.raises(ValueError, match=r"^restitution: expected a number in \[0, 1\], got 1.5"):
            fn(model, q, v, contacts, restitution=1.5)
        with pytest.raises(ValueError, match="^v: expected finite"):
            fn(model, q, np.r_[np.nan, v[1:]], contacts)
