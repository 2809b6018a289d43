"""Second orders that several residuals compute in one pass.

A residual's Hessians ∇²(ρᵀr) are linear in the weights ρ. Where residuals evaluated at the
same knots share the computation of their second order — the contact-force residuals of one
contact sequence all contract the contact dynamics' second order (Carpentier & Mansard,
"Analytical derivatives of rigid body dynamics algorithms", RSS 2018, in their constrained
form) with weights on the rows of the same forces λ_k — a sum Σ_j ρ_jᵀ r_j (a cost's, a
Lagrangian's or a penalty's) needs that computation once, with the weights of every residual
summed first, not once per residual. A residual offers its second order so
(:class:`Pooled`, in its :class:`~optdyn.ocp.residuals.Terms`); the sums gather the parts
(:class:`Pools`): :func:`optdyn.ocp.constraints.summed_hessian` for the stage constraints,
:meth:`optdyn.ocp.costs.Sum.add_to` for the costs.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

import numpy as np

Hessians = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(H_xx (K, ndx, ndx), H_ux (K, nu, ndx), H_uu (K, nu, nu)) of ρᵀr at K knots."""


@dataclass(frozen=True)
class Pooled:
    """A residual's second order as one part of a computation it shares with other residuals
    evaluated at the same knots: ``contract([(part, ρ), …])`` gives the Hessians (H_xx, H_ux,
    H_uu) of Σ_j ρ_jᵀr_j of all the parts at once (∇²(ρᵀr) is linear in ρ, so the parts' weights
    can be summed before the one contraction), ``part`` is this residual's, and residuals
    whose ``key`` is equal may be contracted together (:class:`Pools`). The contact-force
    residuals of one contact sequence so share one compiled pass per knot
    (:func:`optdyn.ocp.contact_residuals.contact_force_hessians`), in a sum of constraints
    (:func:`optdyn.ocp.constraints.summed_hessian`) or of costs (:meth:`optdyn.ocp.costs.Sum.add_to`)."""

    key: Hashable
    contract: Callable[[list[tuple[object, np.ndarray]]], Hessians]
    part: object

    def hessians(self, rho: np.ndarray) -> Hessians:
        """(H_xx, H_ux, H_uu) of ρᵀr of this residual alone: the computation with one part."""
        return self.contract([(self.part, rho)])


class Pools:
    """The pooled second orders of a sum Σ_j ρ_jᵀ r_j of residuals evaluated at the same knots
    (:class:`Pooled`): :meth:`add` gathers the parts whose keys and ``layout`` (how their sum
    enters the caller's arrays) are equal, :meth:`contracted` contracts each pool once."""

    def __init__(self) -> None:
        self._pools: dict[tuple, tuple[Callable, list]] = {}

    def add(self, pooled: Pooled, rho: np.ndarray, layout: Hashable = None) -> None:
        """Add ρᵀr of the residual ``pooled`` is of to its pool."""
        self._pools.setdefault((pooled.key, layout), (pooled.contract, []))[1].append((pooled.part, rho))

    def contracted(self) -> Iterator[tuple[Hashable, Hessians]]:
        """(layout, (H_xx, H_ux, H_uu) of the pool's sum) of every pool, one computation each."""
        for (_, layout), (contract, parts) in self._pools.items():
            yield layout, contract(parts)
