"""Contracted second-order derivatives of contact dynamics against Richardson differences
of our analytical first order (on the manifold: q ⊕ ε), every joint type and contact kind."""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn

from numdiff import richardson
from test_contact_dynamics import FEET, SOLES, robots, state  # noqa: F401  (robots: a fixture)
from test_floating_base import mixed_tree

TREE_CONTACTS = {
    "3d-lwa": [dyn.Contact("l6")],
    "3d-local": [dyn.Contact("l6", reference="local")],
    "6d-local": [dyn.Contact("l7", kind="6d", reference="local")],
    "6d-lwa": [dyn.Contact("l7", kind="6d")],
    "mixed-baumgarte": [dyn.Contact("l6", reference="local", baumgarte=(2.0, 1.5), target=(0.1, 0.0, 0.2)),
                        dyn.Contact("l7", kind="6d", reference="local", baumgarte=(0.0, 0.7)),
                        dyn.Contact("l3", baumgarte=(1.0, 0.0))],
}


def check_against_first_order(model, contacts, q, v, tau, w, f_ext=None, damping=0.0):
    nv = model.nv
    H = dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, w, f_ext, damping)

    def gradient(q_, v_, t_):  # ∂(w·[q̈; λ])/∂[q, v, τ] by our first order
        d = dyn.contact_dynamics_derivatives(model, q_, v_, t_, contacts, f_ext, damping)
        return np.concatenate([w[:nv] @ d[k] + w[nv:] @ d[3 + k] for k in range(3)])

    num_q = richardson(lambda e: gradient(dyn.integrate(model, q, e), v, tau), np.zeros(nv))
    num_v = richardson(lambda x: gradient(q, x, tau), v)
    num_t = richardson(lambda x: gradient(q, v, x), tau)
    # local coordinates: the Hessian of ε ↦ φ(q ⊕ ε) is the symmetric part of the iterated derivative
    refs = {"Hqq": 0.5 * (num_q[:nv] + num_q[:nv].T), "Hvv": num_v[nv:2 * nv], "Hqv": num_v[:nv], "Hqtau": num_t[:nv]}
    for (name, ref), ours in zip(refs.items(), H):
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-7 * max(1.0, np.abs(ref).max()), err_msg=name)
    np.testing.assert_allclose(num_t[nv:], 0.0, atol=1e-8)  # nothing in (v, τ) and (τ, τ): none returned
    np.testing.assert_array_equal(H[0], H[0].T)
    return H


CASES = [(root, kind) for root in ("floating", "spherical", "planar") for kind in TREE_CONTACTS
         if kind != "mixed-baumgarte" or root == "floating"]  # three contacts on 17 DoF: near-singular Λ


@pytest.mark.parametrize("root,kind", CASES)
def test_contracted_second_order_is_the_derivative_of_the_first_order(root, kind):
    model = mixed_tree(3, root)
    contacts = TREE_CONTACTS[kind]
    q, v, tau = state(model, 41)
    rng = np.random.default_rng(42)
    w = rng.normal(size=model.nv + sum(c.dim for c in contacts))
    f_ext = rng.normal(size=(model.njoints, 6)) if kind == "mixed-baumgarte" else None
    H = check_against_first_order(model, contacts, q, v, tau, w, f_ext)
    assert min(np.abs(h).max() for h in H) > 1e-3  # every block is exercised


def test_contracted_second_order_with_damping():
    model = mixed_tree(3, "floating")
    contacts = TREE_CONTACTS["mixed-baumgarte"]
    q, v, tau = state(model, 43)
    w = np.random.default_rng(44).normal(size=model.nv + 12)
    check_against_first_order(model, contacts, q, v, tau, w, damping=1e-2)


@pytest.mark.parametrize("name,contacts", [("solo12", [dyn.Contact(f) for f in FEET]),
                                           ("talos", [dyn.Contact(f, kind="6d", reference="local") for f in SOLES])])
def test_contracted_second_order_on_legged_robots(robots, name, contacts):  # noqa: F811
    model = robots[name][0]
    q, v, tau = state(model, 47)
    w = np.random.default_rng(48).normal(size=model.nv + sum(c.dim for c in contacts))
    check_against_first_order(model, contacts, q, v, tau, w)


def test_bad_weights_raise_naming_w():
    model = mixed_tree(3, "floating")
    contacts = TREE_CONTACTS["3d-lwa"]
    q, v, tau = state(model, 49)
    with pytest.raises(ValueError, match=rf"^w: expected shape \({model.nv + 3},\)"):
        dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, np.ones(model.nv))
    with pytest.raises(ValueError, match="^w: expected finite"):
        dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, np.full(model.nv + 3, np.nan))


@pytest.mark.parametrize("restitution", [0.0, 0.4])
@pytest.mark.parametrize("root,kind", [c for c in CASES if c[0] != "planar"])
def test_impulse_contracted_second_order_is_the_derivative_of_the_first_order(root, kind, restitution):
    model = mixed_tree(3, root)
    contacts = TREE_CONTACTS[kind]
    q, v, _ = state(model, 51)
    nv = model.nv
    w = np.random.default_rng(52).normal(size=nv + sum(c.dim for c in contacts))
    Hqq, Hvv, Hqv = dyn.impulse_dynamics_second_derivatives_contracted(model, q, v, contacts, w, restitution)

    def gradient(q_, v_):  # ∂(w·[v⁺; Λ])/∂[q, v] by our first order
        dq, dv, iq, iv = dyn.impulse_dynamics_derivatives(model, q_, v_, contacts, restitution)
        return np.concatenate([w[:nv] @ dq + w[nv:] @ iq, w[:nv] @ dv + w[nv:] @ iv])

    num_q = richardson(lambda e: gradient(dyn.integrate(model, q, e), v), np.zeros(nv))
    num_v = richardson(lambda x: gradient(q, x), v)
    for name, ours, ref in (("Hqq", Hqq, 0.5 * (num_q[:nv] + num_q[:nv].T)), ("Hqv", Hqv, num_v[:nv]),
                            ("Hvv", Hvv, num_v[nv:])):
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-7 * max(1.0, np.abs(ref).max()), err_msg=name)
    np.testing.assert_array_equal(Hqq, Hqq.T)
    assert min(np.abs(Hqq).max(), np.abs(Hqv).max()) > 1e-3


def test_impulse_bad_weights_raise_naming_w():
    model = mixed_tree(3, "floating")
    q, v, _ = state(model, 53)
    with pytest.raises(ValueError, match=r"^w: expected shape"):
        dyn.impulse_dynamics_second_derivatives_contracted(model, q, v, TREE_CONTACTS["6d-local"], np.ones(model.nv + 3))
