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


def tree_case(root, kind, seed):
    """(model, contacts, q, v, τ, w, f_ext) of the mixed tree on ``root`` with the contacts
    ``kind``: f_ext only with "mixed-baumgarte"."""
    model = mixed_tree(3, root)
    contacts = TREE_CONTACTS[kind]
    q, v, tau = state(model, seed)
    rng = np.random.default_rng(seed + 1)
    w = rng.normal(size=model.nv + sum(c.dim for c in contacts))
    f_ext = rng.normal(size=(model.njoints, 6)) if kind == "mixed-baumgarte" else None
    return model, contacts, q, v, tau, w, f_ext


@pytest.mark.parametrize("root,kind", CASES)
def test_contracted_second_order_is_the_derivative_of_the_first_order(root, kind):
    model, contacts, q, v, tau, w, f_ext = tree_case(root, kind, 41)
    H = check_against_first_order(model, contacts, q, v, tau, w, f_ext)
    assert min(np.abs(h).max() for h in H) > 1e-3  # every block is exercised


def test_contracted_second_order_with_damping():
    model = mixed_tree(3, "floating")
    contacts = TREE_CONTACTS["mixed-baumgarte"]
    q, v, tau = state(model, 43)
    w = np.random.default_rng(44).normal(size=model.nv + 12)
    check_against_first_order(model, contacts, q, v, tau, w, damping=1e-2)


LEGGED = [("solo12", [dyn.Contact(f) for f in FEET]),
          ("talos", [dyn.Contact(f, kind="6d", reference="local") for f in SOLES]),
          ("solo12-armature", [dyn.Contact(f) for f in FEET])]


def legged_case(robots, name, contacts, seed):  # noqa: F811
    """(model, q, v, τ, w) of a legged robot at a random state."""
    model = robots[name][0]
    q, v, tau = state(model, seed)
    return model, q, v, tau, np.random.default_rng(seed + 1).normal(size=model.nv + sum(c.dim for c in contacts))


@pytest.mark.parametrize("name,contacts", LEGGED)
def test_contracted_second_order_on_legged_robots(robots, name, contacts):  # noqa: F811
    model, q, v, tau, w = legged_case(robots, name, contacts, 47)
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


# ---- the full tensors (validation variants): the derivatives of the first order, and their
# contraction with w is the contracted path

def richardson_tensors(first_order, model, q, v, *rest):
    """The pages (qq, vv, qv[, qτ]) of ∂²z (nz, nv, nv) by Richardson differences of
    ``first_order(q, v, *rest)`` = ∂z/∂[q, v(, τ)] (nz, 2nv or 3nv); qq symmetrised (local
    coordinates)."""
    nv = model.nv
    D = first_order(q, v, *rest)
    nz, u = D.shape[0], D.shape[1] // nv

    def along(f, x):  # (nz, u·nv, nv): the derivative of the first order along x
        return richardson(lambda y: f(y).ravel(), x).reshape(nz, u * nv, nv)

    dq = along(lambda e: first_order(dyn.integrate(model, q, e), v, *rest), np.zeros(nv))
    dv = along(lambda x: first_order(q, x, *rest), v)
    pages = [0.5 * (dq[:, :nv] + dq[:, :nv].transpose(0, 2, 1)), dv[:, nv:2 * nv], dv[:, :nv]]
    if u == 3:
        dt = along(lambda x: first_order(q, v, x), rest[0])
        pages.append(dt[:, :nv])
        np.testing.assert_allclose(dt[:, nv:], 0.0, atol=1e-8)  # nothing in (v, τ), (τ, τ)
    return pages


def check_tensors(T, ref, contracted, w):
    for name, ours, r, h in zip(("qq", "vv", "qv", "qtau"), T, ref, contracted):
        np.testing.assert_allclose(ours, r, rtol=0, atol=1e-7 * max(1.0, np.abs(r).max()), err_msg=name)
        np.testing.assert_allclose(np.einsum("i,ijk->jk", w, ours), h, rtol=0, atol=1e-10 * max(1.0, np.abs(h).max()),
                                   err_msg=name)
    np.testing.assert_array_equal(T[0], T[0].transpose(0, 2, 1))


TENSOR_CASES = [("floating", "mixed-baumgarte"), ("spherical", "6d-local"), ("planar", "3d-lwa"),
                ("floating", "6d-lwa")]


@pytest.mark.parametrize("root,kind", TENSOR_CASES)
def test_contact_tensors_are_the_derivatives_of_the_first_order(root, kind):
    model, contacts, q, v, tau, w, f_ext = tree_case(root, kind, 61)
    damping = 1e-2 if kind == "mixed-baumgarte" else 0.0

    def first_order(q_, v_, t_):
        d = dyn.contact_dynamics_derivatives(model, q_, v_, t_, contacts, f_ext, damping)
        return np.vstack((np.hstack(d[:3]), np.hstack(d[3:])))

    T = dyn.contact_dynamics_second_derivatives(model, q, v, tau, contacts, f_ext, damping)
    assert all(t.shape == (w.size, model.nv, model.nv) for t in T) and len(T) == 4
    check_tensors(T, richardson_tensors(first_order, model, q, v, tau),
                  dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, w, f_ext, damping), w)
    assert min(np.abs(t).max() for t in T) > 1e-3  # every page is exercised


@pytest.mark.parametrize("restitution", [0.0, 0.4])
@pytest.mark.parametrize("root,kind", TENSOR_CASES[:2])
def test_impulse_tensors_are_the_derivatives_of_the_first_order(root, kind, restitution):
    model, contacts, q, v, _, w, _ = tree_case(root, kind, 63)

    def first_order(q_, v_):
        d = dyn.impulse_dynamics_derivatives(model, q_, v_, contacts, restitution)
        return np.vstack((np.hstack(d[:2]), np.hstack(d[2:])))

    T = dyn.impulse_dynamics_second_derivatives(model, q, v, contacts, restitution)
    assert len(T) == 3
    check_tensors(T, richardson_tensors(first_order, model, q, v),
                  dyn.impulse_dynamics_second_derivatives_contracted(model, q, v, contacts, w, restitution), w)
    assert min(np.abs(T[0]).max(), np.abs(T[2]).max()) > 1e-3


@pytest.mark.parametrize("name,contacts", LEGGED)
def test_tensors_contract_to_the_contracted_path_on_legged_robots(robots, name, contacts):  # noqa: F811
    model, q, v, tau, w = legged_case(robots, name, contacts, 65)
    T = dyn.contact_dynamics_second_derivatives(model, q, v, tau, contacts)
    for t, h in zip(T, dyn.contact_dynamics_second_derivatives_contracted(model, q, v, tau, contacts, w)):
        np.testing.assert_allclose(np.einsum("i,ijk->jk", w, t), h, rtol=0, atol=1e-10 * max(1.0, np.abs(h).max()))
    Ti = dyn.impulse_dynamics_second_derivatives(model, q, v, contacts, 0.3)
    for t, h in zip(Ti, dyn.impulse_dynamics_second_derivatives_contracted(model, q, v, contacts, w, 0.3)):
        np.testing.assert_allclose(np.einsum("i,ijk->jk", w, t), h, rtol=0, atol=1e-10 * max(1.0, np.abs(h).max()))


def test_tensors_name_bad_input():
    model = mixed_tree(3, "floating")
    q, v, tau = state(model, 67)
    with pytest.raises(ValueError, match="^tau: expected finite"):
        dyn.contact_dynamics_second_derivatives(model, q, v, np.full(model.nv, np.nan), TREE_CONTACTS["3d-lwa"])
    with pytest.raises(ValueError, match="^restitution"):
        dyn.impulse_dynamics_second_derivatives(model, q, v, TREE_CONTACTS["3d-lwa"], restitution=2.0)
    with pytest.raises(ValueError, match=r"^contacts: dependent"):
        dyn.contact_dynamics_second_derivatives(model, q, v, tau, TREE_CONTACTS["6d-lwa"] * 2)
