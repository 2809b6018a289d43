"""The joint types, one module each, and their registration.

A joint type is a module (Pinocchio's JointModel; Featherstone's ``jcalc``) that gives

===============  =============================================================================
``NAMES``        the names it is known by (URDF types and ours)
``NQ``, ``NV``   sizes of q_j and v_j
``UNIT``         (offset, length) of the block of q_j kept at unit norm (quaternion, planar
                 (cos, sin)), (−1, 0) if none
``NEUTRAL``      q_j of the neutral configuration
``GROUP_ROWS``   the rows of se(3) = (linear, angular) its tangent space occupies, () for ℝ^nv
                 (⊕ is addition); they give the Jacobians and Hessians of ⊕ and ⊖
                 (:func:`dynamics.joints.lie_jacobian_into`, :mod:`dynamics.lie`)
``BOUND``        half-width of the range :func:`dynamics.random_configuration` samples an
                 unlimited coordinate in
``motion``       X_J(q_j): rotation entries row by row, then translation (12 scalars)
``subspace``     column c of the motion subspace in the joint frame, (angular, linear)
``integrate``    q ⊕ dv on the joint's block, ``difference`` q1 ⊖ q0
===============  =============================================================================

The compiled functions take their arguments as one tuple (numba inlines the dispatch below
at its IR level, which cannot unpack ``*args``). Its code — the JTYPE column of the
topology — is its place in :data:`REGISTRY`: adding a joint type is writing its module and
adding it there.
"""
from __future__ import annotations

from .._compile import allocation_free
from . import free_flyer, planar, prismatic, revolute, spherical

REGISTRY = (revolute, prismatic, spherical, free_flyer, planar)


def dispatch(operation: str):
    """A compiled ``f(jtype, args)`` that calls ``operation`` of the joint type with code
    ``jtype``: a chain of comparisons, inlined into its caller (no compiled unit of its own)."""
    def chain(code):
        head = getattr(REGISTRY[code], operation)
        if code == len(REGISTRY) - 1:
            @allocation_free(inline="always")
            def last(jtype, args):
                return head(args)
            return last
        tail = chain(code + 1)

        @allocation_free(inline="always")
        def link(jtype, args):
            if jtype == code:
                return head(args)
            return tail(jtype, args)
        return link
    return chain(0)
