"""Forward dynamics under rigid contacts: q̈ and the contact forces λ.

    M(q) q̈ + b(q, v) = τ + Jᵀ λ,     J q̈ + γ(q, v) = 0

(Featherstone 2008, Sec. 8.3; Pinocchio's ``constraintDynamics``, Carpentier, Budhiraja &
Mansard, *Proximal and sparse resolution of constrained dynamic equations*, RSS 2021),
with the contact Jacobian J and drift γ of :mod:`dynamics.contact` (Baumgarte terms in
γ). Eliminating q̈ = M⁻¹ (τ − b + Jᵀλ) leaves the operational-space system

    Λ λ = −(J q̈_free + γ),   q̈_free = M⁻¹ (τ − b),   Λ = J M⁻¹ Jᵀ (+ μ I)        (1)

solved by Cholesky (:mod:`dynamics.contact_kkt`), M by the CRBA and its sparse LTDL factor
(Featherstone 2005), b by the RNEA at q̈ = 0, whose body accelerations also give γ. ``damping`` μ > 0 regularises
dependent contacts (Tikhonov: the λ of least norm as μ → 0, the first step of Pinocchio's
proximal iterations); it makes J q̈ + γ = −μ λ.
"""
from __future__ import annotations

import math

import numpy as np

from ._compile import allocation_free, njit
from ._checks import as_state
from .aba import NOT_POSITIVE
from .contact import contact_frames, contact_jacobian, contact_values, packed_contacts
from .contact_kkt import delassus, kkt_solve
from .contact_workspace import new_contact_work
from .crba import crba_passes
from .kinematics import kinematics_into
from .ltdl import ltdl_in_place
from .model import Model
from .rnea import check_forces, check_state, rnea_passes_at
from .spatial import copy_into
from .workspace import call_views, model_workspace

OK = -1


@allocation_free
def contact_kinematics(m, d, q, ci, cf, Rc, o, J, scratch):
    """Forward kinematics and the contact frames and Jacobian at q into Rc (nc, 3, 3),
    o (nc, 3), J (nc, nv) (fields of a contact workspace, passed alone and compiled without
    reference counting: numba would count references to every view of the record); d.I
    holds the body inertias."""
    kinematics_into(m, q, d)
    contact_frames(d.R, d.p, ci, cf, Rc, o)
    contact_jacobian(m.topology, d.S, ci, Rc, o, J, scratch)


@allocation_free
def factorise_kkt(m, d, H, lam, J, Wt, L, damping):
    """M by the CRBA (from d.I, kept: the composites are formed in d.IA), its LTDL factor
    and the Delassus Cholesky into H, Wt, L: the factors (H, λ, J, Wᵀ, L) of
    :func:`dynamics.contact_kkt.kkt_solve` (:func:`kkt_factors`); the status of
    :func:`delassus`."""
    copy_into(d.IA, d.I)
    crba_passes(m.topology, m.armature, d.S, d.IA, H, d.h)
    if not ltdl_in_place(H, lam):
        raise ValueError(NOT_POSITIVE)
    return delassus(H, lam, J, damping, Wt, L)


@njit(cache=True, inline="always")
def kkt_factors(cw):
    """The factors (H, λ, J, Wᵀ, L) of :func:`dynamics.contact_kkt.kkt_solve` in a contact workspace."""
    return cw.H, cw.lam, cw.J, cw.Wt, cw.L


@njit(cache=True)
def contact_dynamics_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping):
    """Eq. 1 into cw.z = [q̈; λ] (nv + nc, 1), with the contact frames, Jacobian and KKT
    factors in ``cw`` (:data:`dynamics.contact_workspace.ContactWork`); returns the status:
    −1, or the first dependent row of Λ (q̈, λ then unset). d.I keeps the body inertias."""
    check_state(q, v, tau, "tau: expected finite values, got NaN or inf")
    check_forces(f_ext)
    contact_kinematics(m, d, q, ci, cf, cw.Rc, cw.o, cw.J, cw.scratch)
    nv = v.shape[0]
    # b = ID(q, v, 0); the body accelerations at q̈ = 0 give γ
    d.u[:] = 0.0
    rnea_passes_at(m.topology, m.gravity, m.armature, d, v, d.u, f_ext)
    contact_values(ci, cf, cw.Rc, cw.o, d.vel, d.acc, m.gravity, 2, cw.gamma, cw.scratch)
    status = factorise_kkt(m, d, *kkt_factors(cw), damping)
    if status != OK:
        return status
    r1, r2 = cw.z[:nv], cw.z[nv:]
    for k in range(nv):  # [M −Jᵀ; J μ] [q̈; λ] = [τ − b; −γ]
        r1[k, 0] = tau[k] - d.tau[k]
    for a in range(r2.shape[0]):
        r2[a, 0] = -cw.gamma[a]
    kkt_solve(*kkt_factors(cw), r1, r2, cw.t)
    return OK


@njit(cache=True)
def contact_dynamics_kernel(buffer, q, v, tau, f_ext, ci, cf, damping):
    """(q̈, λ, status) of :func:`contact_dynamics_passes` on the model and workspace of a
    :func:`dynamics.workspace.call_buffer`."""
    m, d = call_views(buffer)
    cw = new_contact_work(m.topology, ci, 0, False)
    status = contact_dynamics_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
    nv = v.shape[0]
    return cw.z[:nv, 0], cw.z[nv:, 0], status


def check_contact_call(model: Model, q, v, w, w_name: str, f_ext, contacts, damping):
    """The arguments of a contact algorithm as its kernel takes them: (q, v, w, f_ext,
    packed contacts (ints, floats), damping); ValueError naming the first bad one."""
    return (*as_state(model, q, v, w, w_name, f_ext), *check_contacts(model, contacts, damping))


def check_contacts(model: Model, contacts, damping) -> tuple[np.ndarray, np.ndarray, float]:
    """(packed contacts (ints, floats), damping) as the kernels take them; ValueError
    naming ``contacts`` or ``damping``."""
    ci, cf = packed_contacts(model, contacts)
    try:
        damping = float(damping)
    except (TypeError, ValueError):
        raise ValueError(f"damping: expected a number ≥ 0, got {damping!r}") from None
    if not (math.isfinite(damping) and damping >= 0.0):
        raise ValueError(f"damping: expected a finite number ≥ 0, got {damping!r}")
    return ci, cf, damping


class DependentContacts(ValueError):
    """The ValueError of dependent contacts: ``which`` names them, the message adds the remedy
    of these functions (``damping``); a caller whose own argument sets it names that instead."""

    def __init__(self, which: str) -> None:
        super().__init__(f"{which}; pass damping > 0 (e.g. 1e-10) to regularise them")
        self.which = which


def raise_if_dependent(contacts, ci: np.ndarray, status: int, where: str = "") -> None:
    """:class:`DependentContacts` naming the contacts if the kernel found Λ singular at row
    ``status`` (``where``: e.g. " at knot 3", for the batched functions)."""
    if status == OK:
        return
    i = int(np.searchsorted(ci[:, 3], status, side="right")) - 1
    before = ", ".join(f"contacts[{k}] ({contacts[k].frame!r})" for k in range(i)) or "the other rows of it"
    raise DependentContacts(f"contacts: dependent contact constraints (singular KKT system{where}): contacts[{i}] "
                            f"({contacts[i].frame!r}, {contacts[i].kind}) constrains motions that {before} already "
                            "constrain")


def contact_dynamics(model: Model, q, v, tau, contacts, f_ext=None, damping: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Forward dynamics under the rigid ``contacts`` (a list of :class:`dynamics.Contact`).

    Returns ``(qdd, lam)``: q̈ (nv,) and the contact forces λ (nc,) stacked in the order
    of ``contacts`` (3 per 3d contact, 6 per 6d contact [force; torque]), expressed in the
    axes named by each contact's ``reference`` at the contact frame's origin, such that
    M q̈ + b = τ + Jᵀλ + (f_ext terms) and J q̈ + γ = 0 (Pinocchio's ``constraintDynamics``).
    ``damping`` μ ≥ 0 regularises dependent contacts (J q̈ + γ = −μλ); without it they
    raise ValueError naming the contacts.
    """
    args = check_contact_call(model, q, v, tau, "tau", f_ext, contacts, damping)
    qdd, lam, status = contact_dynamics_kernel(model_workspace(model), *args)
    raise_if_dependent(contacts, args[4], status)
    return qdd, lam
