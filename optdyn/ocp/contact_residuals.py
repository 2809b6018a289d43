"""Residuals on the contact forces of a problem with a contact sequence.

Crocoddyl's ResidualModelContactForce and ResidualModelContactFrictionCone (C. Mastalli et
al., "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control",
ICRA 2020, Sec. IV-B) on the discrete problem of :class:`optdyn.Problem` with ``contacts``:
interval k maps x_{k+1} = R_k(Γ_k(x_k), u_k), Γ_k the impulse map where interval k gains
contacts (the identity elsewhere). At the running knot k = 0 … N−1 the force of the contact
at ``frame`` is that of interval k's contact dynamics at the start of the interval,

    f_k = S_k λ(Γ_k(x_k), B u_k),   M q̈ + b = τ + Jᵀλ,  J q̈ + γ = 0,

S_k selecting the frame's rows of the stacked forces λ of interval k's contacts (3 for a
point contact, 6 for a frame contact: [force; torque]), in the contact's axes
(:class:`dynamics.Contact` ``reference``), B the actuation (τ = B u) — the forces
:func:`optdyn.report.contact_forces` reports. A residual is r_k = φ(f_k) (the force minus a
reference, the rows of a friction pyramid, a smooth friction cone) where the frame is in
contact, r_k = 0 with zero derivatives where it is not.

Derivatives. With x̃ = Γ(x) = (q, v⁺), P = ∂Γ/∂x (the identity without impulse) and
z̃ = (δq, δṽ, τ), G = blockdiag(P, B) maps z = (δx, u) to z̃; with λ_z̃ the first-order
derivatives of the contact dynamics (the constrained form of Carpentier & Mansard,
"Analytical derivatives of rigid body dynamics algorithms", RSS 2018):

    r_z = φ_f S λ_z̃ G,
    ∇²_z(ρᵀr) = Gᵀ (∇²_z̃(ρ̂ᵀλ) + (S λ_z̃)ᵀ Φ (S λ_z̃)) G + [μᵀΓ_xx 0; 0 0],

ρ̂ = Sᵀ φ_fᵀ ρ, Φ = Σ_i ρ_i ∇²φ_i (zero for a linear φ), ∇²_z̃(ρ̂ᵀλ) the contact dynamics'
second order contracted with the weights [0; ρ̂] on [q̈; λ]
(:func:`dynamics.contact_dynamics_second_derivatives_contracted`; λ is affine in τ, so its
(v, τ) and (τ, τ) blocks vanish), μ = (S λ_ṽ)ᵀ φ_fᵀ ρ and μᵀΓ_xx = Σ_i μ_i ∂²v⁺_i/∂x² the
impulse dynamics' second order contracted with [μ; 0] on [v⁺; Λ]
(:func:`dynamics.impulse_dynamics_second_derivatives_contracted`): the chain rule through
the impulse map of :mod:`optdyn.ocp.contact_phases`. Derivatives w.r.t. q along q ⊕ δq,
second order in local coordinates, as every Hessian of the package.

* :class:`ContactForceResidual`  f_k − f*_k (3 or 6)                 (ResidualModelContactForce)
* :class:`FrictionConeResidual`  the inner friction pyramid A f_k ≤ 0 and −f_n ≤ 0
                                 (ResidualModelContactFrictionCone)
* :class:`SmoothFrictionConeResidual`  μ f_n − √(‖f_t‖² + ε²) ≥ 0 (the exact cone, smoothed)
* :class:`WrenchConeResidual`    the contact wrench cone of a rectangular sole, A w_k ≤ 0
                                 (ResidualModelContactWrenchCone)

The knots are the N intervals of the sequence the residual is built for: a running cost
or a stage constraint of a problem with that same sequence (and actuation), which
:class:`optdyn.Problem` checks. The forces and their first derivatives at every knot come
from one compiled pass over the knots
(:func:`~optdyn.ocp.contact_phases.knot_forces_batch`), φ and its chain rule are applied
to all the knots in contact at once; the second order, which the constraint form and exact
Hessians ask for (not the Gauss–Newton model of a barrier cost), from one compiled pass over
the knots in contact (:func:`~optdyn.ocp.contact_phases.knot_force_hessians`), with the
weights ρ̂ of every knot at once. ∇²_z̃(ρ̂ᵀλ) and μ are linear in ρ̂, so the contact-force
residuals of one sequence summed in a Lagrangian or a penalty (Σ_j ρ_jᵀ r_j, one residual per
foot and kind) need one pass for all: :func:`contact_force_hessians` places every residual's
ρ̂_j on its frame's rows of one weight vector per knot, Σ_j S_jᵀ ρ̂_j, and runs the contact
dynamics' contracted second order once per knot (a residual's own Hessians are that
computation with one part; its Terms offer it as :class:`~optdyn.ocp.residuals.Pooled`, which
:func:`optdyn.ocp.constraints.summed_hessian` uses). Both passes run on the threads of
:func:`dynamics.parallel.run_chunks`. A problem gives all its contact-force residuals (one
per foot) one :class:`ContactKnots` (``shared``), so that each knot's contact dynamics and
their derivatives through the impulse map are computed once, not once per frame, nor once
for ``value`` and again for ``evaluate`` — and mostly not at all: the first Runge–Kutta stage
of interval k solves the same contact dynamics at (Γ_k(x_k), B u_k), so the problem's kernels
keep those forces (a rollout, a line search's forward pass: λ; a linearisation: λ and λ_z;
:data:`~optdyn.ocp.contact_phases.KnotForces`), and the residuals take them where they were
computed at the knots asked for, bit for bit what their own pass gives.
"""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from dynamics._checks import check_frame
from dynamics.contact import Contact
from dynamics.model import Model

from .contact_phases import (DAMPING, ContactKnots, PhasedDynamics, at_rows, check_contact_sequence,
                             knot_force_hessians, phased_dynamics)
from .activations import positive
from .integrators import METHODS, robot_ode
from .problem import NO_FORCES, actuated_dofs
from .pooled import Pooled
from .residuals import Hessians, Residual, Terms, at_knots, kept_array, references


def _sequence_dynamics(model: Model, actuated: np.ndarray, contacts: list, damping: float = 0.0) -> PhasedDynamics:
    """The robot, packed contacts, rows and impulses of the checked sequence ``contacts`` as the
    knot kernels take them (:func:`~optdyn.ocp.contact_phases.knot_forces_batch`), the contact
    dynamics damped by ``damping``: a :data:`~optdyn.ocp.contact_phases.PhasedDynamics` whose
    integrator fields (RK4's tableau, dt = 0) are not used."""
    a, b = METHODS["rk4"]
    return phased_dynamics(model, actuated, robot_ode(model, actuated).lie, a, b, 0.0, 1, NO_FORCES, contacts,
                           damping)


def _frame_rows(contacts: list, frame: str) -> np.ndarray:
    """(N,) the first row of ``frame``'s force in each interval's stacked λ, −1 where the frame
    is not in contact."""
    out = np.full(len(contacts), -1, dtype=np.int64)
    for k, cs in enumerate(contacts):
        row = 0
        for c in cs:
            if c.frame == frame:
                out[k] = row
            row += c.dim
    return out


class _ContactForceFunction(Residual):
    """r_k = φ(f_k) of the force f_k (``dim``,) of contact ``frame`` at the knots of the
    sequence ``contacts`` (module docstring), 0 where the frame is not in contact;
    subclasses give φ (:meth:`_outer`). ``shared``: the :class:`ContactKnots` of its
    problem's contact-force residuals (one of its own until a problem gives its own:
    :meth:`check_problem`)."""

    depends_on_u = True
    takes_forces = True

    def __init__(self, model: Model, contacts: Sequence[Sequence[Contact]], frame: str, actuated,
                 size: int | None = None) -> None:
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a dynamics.Model, got {type(model).__name__}")
        if isinstance(contacts, (str, Contact)) or not isinstance(contacts, Sequence) or not contacts:
            raise ValueError("contacts: expected one list of dynamics.Contact per interval (the problem's "
                             f"contact sequence), got {contacts!r}")  # its length is the number of knots
        self.contacts = check_contact_sequence(model, contacts, len(contacts))
        check_frame(model, frame)
        kinds = {c.kind for cs in self.contacts for c in cs if c.frame == frame}
        if not kinds:
            raise ValueError(f"frame: {frame!r} is in contact in no interval of contacts")
        if len(kinds) > 1:
            raise ValueError(f"contacts: frame {frame!r} is a 3d contact in some intervals and a 6d one in others")
        self.model, self.frame = model, frame
        self.actuated = actuated_dofs(model, actuated)
        self.dynamics = _sequence_dynamics(model, self.actuated, self.contacts)
        self.nc_max = max(sum(c.dim for c in cs) for cs in self.contacts)
        self.dim = 6 if kinds == {"6d"} else 3
        self.size, self.ndx, self.nu = self.dim if size is None else size, 2 * model.nv, self.actuated.size
        self._row = _frame_rows(self.contacts, frame)
        self.shared = ContactKnots()
        self._sequence_changed()

    @property
    def impulses(self) -> np.ndarray:
        """(N,) whether interval k starts with the impulse map."""
        return self.dynamics.impulse

    def _sequence_changed(self) -> None:
        """The knots in contact and the rows of the frame's force in their λ (``_stance``: knots
        (S,), ``_rows`` (S, dim)), and the key of the shared knots (:class:`ContactKnots`),
        after the contact sequence, its dynamics and ``_row`` were set."""
        self._stance = np.flatnonzero(self._row >= 0)
        self._rows = self._row[self._stance][:, None] + np.arange(self.dim)
        self.sequence_key = (tuple(tuple(cs) for cs in self.contacts), self.impulses.tobytes(),
                             self.actuated.tobytes(), self.dynamics.ode.damping)

    @property
    def N(self) -> int:
        """The number of knots: the intervals of the contact sequence."""
        return len(self.contacts)

    def knots(self) -> int:
        return self.N

    def _take_rows(self, rows: np.ndarray) -> None:
        """The contact sequence's intervals ``rows`` (:meth:`Residual.window`), with their impulses
        (:func:`~optdyn.ocp.contact_phases.impulses_at`)."""
        super()._take_rows(rows)
        self.contacts = [self.contacts[k] for k in rows]
        self.dynamics, self._row = at_rows(self.dynamics, rows), self._row[rows]
        self._sequence_changed()

    def defined_at(self) -> np.ndarray:
        """The knots where ``frame`` is in contact."""
        return self._row >= 0

    def check_problem(self, contacts, actuated: np.ndarray, name: str, terminal: bool = False,
                      shared: dict | None = None) -> None:
        """As :meth:`Residual.check_problem`; then the residual takes the damping of the problem's
        contact dynamics and shares its knots with the problem's other contact-force residuals
        (both in ``shared``: :data:`~optdyn.ocp.contact_phases.DAMPING`, the :class:`ContactKnots`)."""
        if terminal:
            raise ValueError(f"{name}: {type(self).__name__} holds at the running knots 0 … N−1 (a running cost "
                             "or a path constraint), not at node N")
        if contacts != self.contacts:
            theirs = "has no contacts" if contacts is None else "has another contact sequence"
            raise ValueError(f"{name}: {type(self).__name__} was built for its own contact sequence (contacts); "
                             f"the problem {theirs}")
        if not np.array_equal(actuated, self.actuated):
            raise ValueError(f"{name}: {type(self).__name__} was built for actuated DoFs {self.actuated.tolist()}; "
                             f"the problem actuates {np.asarray(actuated).tolist()}")
        if shared is None:
            return
        damping = shared.get(DAMPING, 0.0)
        if damping != self.dynamics.ode.damping:
            self.dynamics = _sequence_dynamics(self.model, self.actuated, self.contacts, damping)
            self._sequence_changed()
        self.shared = shared.setdefault(ContactKnots, ContactKnots())

    # ---- φ, of the subclasses ------------------------------------------------------------
    @abstractmethod
    def _outer(self, F: np.ndarray, knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(φ(f) (S, size), φ_f (S, size, dim), or (size, dim) at every knot) of the forces F
        (S, dim) at the knots ``knots`` (S,)."""

    def _outer_curvature(self, F: np.ndarray, rho: np.ndarray) -> np.ndarray | None:
        """Σ_i ρ_i ∇²φ_i (S, dim, dim) at the forces F (S, dim) with weights ρ (S, size), None
        where φ is linear."""
        return None

    # ---- the knots -------------------------------------------------------------------------
    def _check_knots(self, xs: np.ndarray) -> None:
        if xs.shape[0] != self.N:
            raise ValueError(f"xs: {type(self).__name__} holds at the {self.N} knots of its contact sequence, "
                             f"but {xs.shape[0]} knots are evaluated")

    def _forces(self, xs: np.ndarray, us: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(F (S, dim), and for ``order`` 1 F_z = S λ_z (S, dim, ndx + nu)): the frame's force
        at the S knots in contact and its Jacobian through the impulse map, from the shared
        knots (:meth:`ContactKnots.forces`)."""
        lam, lam_z = self.shared.forces(self, xs, us, order)
        k = self._stance[:, None]
        return lam[k, self._rows], (lam_z[k, self._rows] if order else None)

    def value(self, xs, us):
        self._check_knots(xs)
        r = np.zeros((xs.shape[0], self.size))
        if self._stance.size:
            r[self._stance] = self._outer(self._forces(xs, us, 0)[0], self._stance)[0]
        return r

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        self._check_knots(xs)
        K, ndx, nu, S = xs.shape[0], self.ndx, self.nu, self._stance
        rx, ru = kept_array(kept, "rx", (K, self.size, ndx)), kept_array(kept, "ru", (K, self.size, nu))
        if kept is not None:  # the knots out of contact differ from one window to the next (the others are set below)
            off = self._row < 0
            rx[off], ru[off] = 0.0, 0.0
        r, F, Fz, phi_f = np.zeros((K, self.size)), None, None, None
        if S.size:
            F, Fz = self._forces(xs, us, 1)
            r[S], phi_f = self._outer(F, S)
            phi_f = np.broadcast_to(phi_f, (S.size, self.size, self.dim))
            rx[S], ru[S] = phi_f @ Fz[:, :, :ndx], phi_f @ Fz[:, :, ndx:]
        part = (self, xs, us, F, Fz, phi_f)  # what the second order needs
        pooled = Pooled(self.pool_key, contact_force_hessians, part)
        return Terms(r, rx, ru, pooled.hessians, pooled=pooled)

    @property
    def pool_key(self) -> tuple:
        """Equal for the residuals whose second orders :func:`contact_force_hessians` contracts
        in one pass: those of the same model, contact sequence, impulses and actuation."""
        return (id(self.model),) + self.sequence_key


def contact_force_hessians(parts: list[tuple[tuple, np.ndarray]]) -> Hessians:
    """(H_xx (K, ndx, ndx), H_ux (K, nu, ndx), H_uu (K, nu, nu)) of Σ_j ρ_jᵀ r_j for contact-force
    residuals r_j of one contact sequence (one :attr:`_ContactForceFunction.pool_key`) evaluated
    at the same knots: ``parts`` [(part, ρ_j (K, size_j)), …], a part the residual and its
    evaluation (residual, xs, us, F, F_z, φ_f) (:meth:`_ContactForceFunction.evaluate`).

    By the module docstring's chain rule with ρ̂_j = φ_fᵀρ_j on the rows S_j of frame j,

        ∇²_z(Σ_j ρ_jᵀ r_j) = Gᵀ ∇²_z̃(wᵀλ) G + [μᵀΓ_xx 0; 0 0] + Σ_j (S_j λ_z)ᵀ Φ_j (S_j λ_z),
        w = Σ_j S_jᵀ ρ̂_j,   μ = λ_ṽᵀ w,

    both first terms linear in w: one compiled pass
    (:func:`~optdyn.ocp.contact_phases.knot_force_hessians`) over the knots where w is not zero
    (an inequality's inactive rows weigh nothing in an augmented Lagrangian's contraction: most
    knots of a friction cone) gives them for every residual at once; the curvature of a
    nonlinear φ (:meth:`_ContactForceFunction._outer_curvature`) is added residual by residual."""
    first, xs, us = parts[0][0][:3]
    K, ndx, nu = xs.shape[0], first.ndx, first.nu
    w, H = np.zeros((K, first.nc_max)), np.zeros((K, ndx + nu, ndx + nu))
    for (residual, _, _, F, Fz, phi_f), rho in parts:
        S = residual._stance
        if not S.size:
            continue
        rho = np.asarray(rho, dtype=float)[S]
        w[S[:, None], residual._rows] += np.einsum("sij,si->sj", phi_f, rho)  # ρ̂_j on frame j's rows
        C = residual._outer_curvature(F, rho)
        if C is not None:  # Fz already through the impulse map
            H[S] += np.matmul(Fz.transpose(0, 2, 1), np.matmul(C, Fz))
    weighted = np.flatnonzero(np.any(w != 0.0, axis=1))
    if weighted.size:
        H[weighted] += knot_force_hessians(first.dynamics, xs, us, weighted, w[weighted])
    return H[:, :ndx, :ndx], H[:, ndx:, :ndx], H[:, ndx:, ndx:]


class ContactForceResidual(_ContactForceFunction):
    """r_k = f_k − f*_k: the force (3,) of the point contact or the wrench (6,) [force;
    torque] of the frame contact at ``frame``, at the knots k = 0 … N−1 of the contact
    sequence ``contacts`` (N lists of :class:`dynamics.Contact`, the problem's), in the
    contact's axes; 0 where the frame is not in contact. ``reference`` f* (3 or 6,) or one
    per knot (N, 3 or 6) (default 0: a force regularisation); ``actuated`` the actuated
    joints as :class:`optdyn.Problem` takes them (default: all but a free-flyer root). A
    problem makes its contact-force residuals share their knots' contact dynamics
    (:class:`ContactKnots`). Crocoddyl's ResidualModelContactForce (Mastalli et al., ICRA 2020)."""

    def __init__(self, model: Model, contacts: Sequence[Sequence[Contact]], frame: str, reference=0.0,
                 actuated=None) -> None:
        super().__init__(model, contacts, frame, actuated)
        self.reference = references(np.full(self.dim, reference) if np.ndim(reference) == 0 else reference, (self.dim,))
        self._at_knots = np.ascontiguousarray(at_knots(self.reference, self.N, 1))  # (N, dim)
        self.knot_arrays = ("_at_knots",) if self.reference.ndim == 1 else ("_at_knots", "reference")

    def _outer(self, F, knots):
        return F - self._at_knots[knots], np.eye(self.dim)


def tangent_basis(normal, name: str = "normal") -> np.ndarray:
    """(3, 3): rows t₁, t₂, n — an orthonormal basis completing the unit ``normal``."""
    n = references(normal, (3,), name)
    if n.ndim != 1 or not np.linalg.norm(n) > 1e-12:
        raise ValueError(f"{name}: expected a nonzero vector (3,), got {normal!r}")
    n = n / np.linalg.norm(n)
    e = np.eye(3)[np.argmin(np.abs(n))]  # the axis farthest from n
    t1 = e - (e @ n) * n
    t1 /= np.linalg.norm(t1)
    return np.stack([t1, np.cross(n, t1), n])


MU = 0.7
"""The default friction coefficient (rubber feet on a floor)."""


def check_friction(mu) -> float:
    """``mu`` as a float if it is a finite friction coefficient > 0; ValueError naming mu."""
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)) or not (
            np.isfinite(mu) and mu > 0):
        raise ValueError(f"mu: expected a finite friction coefficient > 0, got {mu!r}")
    return float(mu)


def friction_pyramid(mu: float, facets: int = 4, normal=(0.0, 0.0, 1.0)) -> np.ndarray:
    """A (facets + 1, 3): the inner linearisation of the friction cone ‖f_t‖ ≤ μ f_n about
    ``normal`` n, A f ≤ 0 inside — rows d_iᵀf − μ cos(π/F) nᵀf for the F = ``facets`` unit
    directions d_i = cos(2πi/F) t₁ + sin(2πi/F) t₂ of the tangent plane (the polygon
    inscribed in the cone's circle, as Crocoddyl's FrictionCone with inner_appr), then the
    unilateral row −nᵀf."""
    mu = check_friction(mu)
    if isinstance(facets, bool) or not isinstance(facets, (int, np.integer)) or facets < 3:
        raise ValueError(f"facets: expected an integer ≥ 3, got {facets!r}")
    t1, t2, n = tangent_basis(normal)
    theta = 2.0 * np.pi * np.arange(facets) / facets
    d = np.cos(theta)[:, None] * t1 + np.sin(theta)[:, None] * t2
    return np.vstack([d - mu * np.cos(np.pi / facets) * n, -n])


class FrictionConeResidual(_ContactForceFunction):
    """r_k = A f_k (facets + 1,) ≤ 0 inside: the inner friction pyramid of
    :func:`friction_pyramid` (``mu`` > 0, ``facets`` ≥ 3, ``normal`` in the contact's axes:
    world z by default, which a point contact's world-aligned force uses) and the unilateral
    row −f_n ≤ 0, on the force of contact ``frame`` (a frame contact: its force part) at the
    knots of ``contacts`` (``actuated`` as :class:`ContactForceResidual`), 0 where
    it is not in contact. A constraint ``ResidualConstraint(r, upper=0)``, or a cost under
    ``QuadraticBarrier``. Crocoddyl's ResidualModelContactFrictionCone (Mastalli et al., ICRA 2020)."""

    def __init__(self, model: Model, contacts: Sequence[Sequence[Contact]], frame: str, mu: float = MU,
                 facets: int = 4, normal=(0.0, 0.0, 1.0), actuated=None) -> None:
        A = friction_pyramid(mu, facets, normal)
        super().__init__(model, contacts, frame, actuated, A.shape[0])
        self.mu, self.facets, self.normal = float(mu), int(facets), -A[-1]  # the unilateral row is −nᵀ
        self.A = np.hstack([A, np.zeros((A.shape[0], self.dim - 3))])

    def _outer(self, F, knots):
        return F @ self.A.T, self.A


class SmoothFrictionConeResidual(_ContactForceFunction):
    """r_k = μ f_n − √(‖f_t‖² + ε²) (1,) ≥ 0 inside: the exact friction cone ‖f_t‖ ≤ μ f_n
    about ``normal`` n (f_n = nᵀf, f_t = f − f_n n; a frame contact: its force part), smoothed
    at its apex by ``eps`` ε > 0 (a force; r ≥ 0 then implies f_n ≥ ε/μ > 0) so that it is
    twice differentiable — for IPOPT as ``ResidualConstraint(r, lower=0)``. Knots,
    ``actuated`` as :class:`ContactForceResidual`; 0 where the frame is not in
    contact.

    Under a barrier as a cost, r carries √(‖f_t‖² + ε²) ≈ ‖f_t‖ into the cost: a kink of
    curvature 1/ε at f_t = 0, where a standing robot's tangential forces start. Measured on
    Solo-12's trot under :class:`~optdyn.costs.RelaxedLogBarrier` (δ = 0.1 N), as the task's
    ``cone="cost"`` uses the pyramid: with ε = 1e-3 N no solver converged in 500 iterations;
    with ε = 1 N, DDP in 45 and IPOPT in 20 (iLQR still not in 500). The pyramid
    (:class:`FrictionConeResidual`), linear in f, has no such kink.

    φ_f = μ nᵀ − f_tᵀ/s, ∇²φ = −(T − f_t f_tᵀ/s²)/s with s = √(‖f_t‖² + ε²), T = I − nnᵀ."""

    def __init__(self, model: Model, contacts: Sequence[Sequence[Contact]], frame: str, mu: float = MU,
                 normal=(0.0, 0.0, 1.0), eps: float = 1e-3, actuated=None) -> None:
        mu = check_friction(mu)
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)) or not (
                np.isfinite(eps) and eps > 0):
            raise ValueError(f"eps: expected a finite smoothing force > 0, got {eps!r}")
        super().__init__(model, contacts, frame, actuated, 1)
        self.mu, self.eps, self.normal = mu, float(eps), tangent_basis(normal)[2]
        self.T = np.zeros((self.dim, self.dim))
        self.T[:3, :3] = np.eye(3) - np.outer(self.normal, self.normal)
        self.n = np.r_[self.normal, np.zeros(self.dim - 3)]

    def _outer(self, F, knots):
        Ft = F @ self.T  # T symmetric
        s = np.sqrt(np.sum(Ft * Ft, axis=1) + self.eps ** 2)[:, None]
        return self.mu * (F @ self.n)[:, None] - s, (self.mu * self.n - Ft / s)[:, None, :]

    def _outer_curvature(self, F, rho):
        Ft = F @ self.T
        s = np.sqrt(np.sum(Ft * Ft, axis=1) + self.eps ** 2)[:, None, None]
        return -rho[:, :1, None] * (self.T - Ft[:, :, None] * Ft[:, None, :] / s ** 2) / s


def wrench_cone(mu: float, half_lengths) -> np.ndarray:
    """A (17, 6): the contact wrench cone of a rectangular sole, A w ≤ 0 inside, for the
    wrench w = [f; τ] about the sole's centre in its axes (z the normal, x and y along the
    sides of half-lengths X, Y). The closed form of Caron, Pham and Nakamura, "Stability of
    surface contacts for humanoid robots: closed-form formulae of the contact wrench cone for
    rectangular support areas", ICRA 2015 (Sec. III, eq. 10–13), with the friction pyramid
    inscribed in the cone at the corners, μ̄ = μ cos(π/4) (an inner approximation, as
    :func:`friction_pyramid`): the wrenches that four corner forces, each in its pyramid,
    produce. Rows: |f_x| ≤ μ̄ f_z, |f_y| ≤ μ̄ f_z (4); the centre of pressure in the sole,
    |τ_x| ≤ Y f_z, |τ_y| ≤ X f_z (4); the yaw torque between τ_min and τ_max (8),

        τ_min = −μ̄(X + Y) f_z + |Y f_x − μ̄ τ_x| + |X f_y − μ̄ τ_y|,
        τ_max =  μ̄(X + Y) f_z − |Y f_x + μ̄ τ_x| − |X f_y + μ̄ τ_y|;

    then the unilateral row −f_z ≤ 0."""
    mu = check_friction(mu) * np.cos(np.pi / 4)
    h = references(half_lengths, (2,), "half_lengths")
    if h.ndim != 1 or not np.all(h > 0):
        raise ValueError(f"half_lengths: expected the sole's two half-lengths > 0 (m), got {half_lengths!r}")
    X, Y = h
    rows = []
    for s in (1.0, -1.0):
        rows += [[s, 0, -mu, 0, 0, 0], [0, s, -mu, 0, 0, 0]]  # friction: ±f_x, ±f_y ≤ μ̄ f_z
        rows += [[0, 0, -Y, s, 0, 0], [0, 0, -X, 0, s, 0]]  # centre of pressure: ±τ_x ≤ Y f_z, ±τ_y ≤ X f_z
    for sx in (1.0, -1.0):
        for sy in (1.0, -1.0):  # τ_min ≤ τ_z, then τ_z ≤ τ_max, each |a| + |b| as its four sign pairs
            rows.append([sx * Y, sy * X, -mu * (X + Y), -sx * mu, -sy * mu, -1.0])
            rows.append([sx * Y, sy * X, -mu * (X + Y), sx * mu, sy * mu, 1.0])
    rows.append([0, 0, -1.0, 0, 0, 0])
    return np.array(rows, dtype=float)


class WrenchConeResidual(_ContactForceFunction):
    """r_k = A w_k (17,) ≤ 0 inside: the contact wrench cone of :func:`wrench_cone` —
    friction (μ, ``mu``), the centre of pressure inside the rectangle of ``half_lengths``
    (X, Y) (m) and the yaw torque bounds, then −f_z ≤ 0 — on the wrench w_k = [f; τ] of the
    frame contact (``kind="6d"``) at ``frame``, a sole whose frame sits at the rectangle's
    centre with z along the normal; use ``reference="local"`` (the sole's own axes) unless the
    sole stays level with its sides along the world axes. Knots and ``actuated`` as
    :class:`ContactForceResidual`; 0 where the frame is not in contact. A constraint
    ``ResidualConstraint(r, upper=0)``. Crocoddyl's ResidualModelContactWrenchCone (Mastalli
    et al., ICRA 2020), the cone of Caron et al., ICRA 2015."""

    def __init__(self, model: Model, contacts: Sequence[Sequence[Contact]], frame: str, mu: float = MU,
                 half_lengths=(0.1, 0.05), actuated=None) -> None:
        self.A = wrench_cone(mu, half_lengths)
        super().__init__(model, contacts, frame, actuated, self.A.shape[0])
        if self.dim != 6:
            raise ValueError(f"frame: {frame!r} is a point contact (3d); the wrench cone needs a frame "
                             f"contact (kind='6d')")
        self.mu, self.half_lengths = float(mu), tuple(float(h) for h in half_lengths)

    def units(self, force: float) -> np.ndarray:
        """(17,) a unit for each row of :func:`wrench_cone` from a unit of force (N): ``force``
        on the friction and unilateral rows, ``force`` · Y and ``force`` · X on the centre of
        pressure's (the moment of that force at the sole's edge), ``force`` · (X + Y) on the yaw
        torque's — e.g. ``ResidualConstraint(r, upper=0, scale=r.units(m g))`` states every row
        as a share of the robot's weight, forces and moments alike."""
        X, Y = self.half_lengths
        lengths = np.ones(self.size)
        lengths[[2, 6]], lengths[[3, 7]], lengths[8:16] = Y, X, X + Y
        return positive(force, "force") * lengths

    def _outer(self, F, knots):
        return F @ self.A.T, self.A
