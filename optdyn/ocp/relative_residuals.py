"""Placement of one frame relative to another: residuals and costs with exact first and
contracted second derivatives (a foot relative to the base, a tool relative to the
satellite that carries the arm).

* :class:`RelativePlacementResidual`  r = log₆(M*⁻¹ · M_b(q)⁻¹ M_f(q)) (6,: [linear; angular])
* :class:`RelativePositionResidual`   r = R_bᵀ(p_f − p_b) − p* (3,): f's origin in b's axes
* :class:`RelativePlacementCost`, :class:`RelativePositionCost`: ½ w ‖r‖²

Derivation. Let S_j = [v_j; ω_j] be the world motion-subspace column of DoF j (linear part
at the world origin), M_f = (R_f, p_f) and M_b the world poses of the two frames, and
M = M_b⁻¹ M_f. Along q ⊕ ε a frame's pose moves on the left by a world twist,
M_f(q ⊕ ε) = exp(ζ_f) M_f, with

    ζ_f = Σ_j S_j ε_j + ½ Σ_{a ≺ d} (S_a × S_d) ε_a ε_d + O(ε³)

over the DoFs supporting f, a ≺ d meaning that the joint of a is a strict ancestor of that
of d (a column moves as D_a S_d = S_a × S_d, R. Featherstone, "Rigid Body Dynamics
Algorithms", 2008, eq. 2.29 with Ṡ = v × S; G. Singh, R. Russell, P. Wensing, "On
second-order derivatives of rigid-body dynamics", 2023, eq. 22; pairs within one joint
cancel, a joint moving by the exponential of its own coordinates). Then

    M(q ⊕ ε) = M_b⁻¹ exp(−ζ_b) exp(ζ_f) M_f = M exp(η),   η = Ad(M_f⁻¹) log(exp(−ζ_b) exp(ζ_f)),

and the Baker–Campbell–Hausdorff formula to second order (log(e^X e^Y) = X + Y + ½[X, Y] + …,
B. C. Hall, "Lie Groups, Lie Algebras, and Representations", 2015, Ch. 5; on se(3) the
bracket is the motion cross product) gives log(e^{−ζ_b} e^{ζ_f}) = ζ_f − ζ_b − ½ ζ_b × ζ_f.
Split the DoFs into C (supporting both frames), F (f only) and B (b only). On C the columns
of ζ_f and ζ_b are the same and cancel at first order; at second order every pair touching
C cancels too (C×C: the two ancestor terms and the two orders of the cross product; C×F:
½ S_a × S_d from ζ_f against −½ S_a × S_d from the product; C×B likewise) — as it must:
the common joints move both frames rigidly and M_b⁻¹ M_f does not depend on them. What
remains is

    η = J ε + ½ εᵀ H_η ε,   J = Ad(M_f⁻¹) (S_F − S_B),
    H_η[:, a, d] = H_η[:, d, a] = ½ Ad(M_f⁻¹)(S_a × S_d) · w_ad,
    w_ad = +1 for a ≺ d in F,  −1 for a ≺ d in B,  −1 for a ∈ B, d ∈ F,  0 otherwise

(the last from −½ (S_B ε_B) × (S_F ε_F)). With b on the world's base, B = C = ∅ and this
is the world placement's body-twist expansion. Everything may be expressed in b's axes
instead of the world's: with S^b = Ad(M_b⁻¹) S, Ad(M_f⁻¹) = Ad(M⁻¹) Ad(M_b⁻¹) and
Ad(X)(S_a × S_d) = (Ad(X) S_a) × (Ad(X) S_d), so J = Ad(M⁻¹)(S^b_F − S^b_B) and the relative
pose is the world pose of a robot seen from b, with signed pair weights w_ad. The pose
error r = log(M*⁻¹ M) = log(exp(r₀) exp(η)) then has r_q = J_r⁻¹(r₀) J and
∇²(ρᵀr) = Jᵀ L(ρ) J + Σ_{a,d} w_ad ⟨λ, S^b_a × S^b_d⟩ (symmetrised), L(ρ) the Hessian of
ρᵀ log(exp(r₀) exp(η)) in η (:func:`dynamics.lie.log_curvatures`), λ = Ad(M⁻¹)ᵀ J_r⁻ᵀ(r₀) ρ
a wrench in b's axes.

The position p = R_bᵀ(p_f − p_b) is the translation of M: p(ε) = p + R (η_v + ½ η_ω × η_v) + O(ε³)
(the translation of exp(η) = (exp ω̂, V(ω) v), V = I + ½ ω̂ + …), so with σ = Rᵀρ:
r_q = R J_v and ∇²(ρᵀr) = sym(T) + Σ_{a,d} w_ad ⟨λ, S^b_a × S^b_d⟩ with T[a, d] =
σ · (J_ω,a × J_v,d) and λ = Ad(M⁻¹)ᵀ [σ; 0].

References may be one per knot ((K, 4, 4), (K, 3)), as those of the world frame residuals.
"""
from __future__ import annotations

import numpy as np

from dynamics._checks import check_frame
from dynamics.model import FREE_FLYER, Model

from .residual_costs import ResidualCost
from .residuals import (FrameMotion, Residual, Terms, _ancestors, _PoseResidual, at_knots, position_curvature,
                        references, rigid_transforms, to_frame)


def _frame(model: Model, name, argument: str):
    """The frame ``name`` of ``model``; ValueError naming ``argument`` otherwise."""
    try:
        return check_frame(model, name)
    except ValueError as e:
        raise ValueError(f"{argument}: {str(e).partition(': ')[2]}") from None


class RelativeMotion(FrameMotion):
    """The pose M = M_b⁻¹ M_f of frame ``frame`` (f) relative to frame ``relative_to`` (b) at
    knots, the columns S^b (K, nv, 6) in b's axes of the DoFs that move either frame, and
    J = Ad(M⁻¹)(S^b_F − S^b_B) (K, 6, nv) (module docstring).

    Called, it returns (R, p, S^b, J) as :class:`~optdyn.ocp.residuals.FrameMotion` returns a
    world pose, its world columns and its body Jacobian, so that the world placement's
    machinery applies; ``twist_hessian`` weighs the pairs by the signed w_ad (held in
    ``ancestors``, which for a world pose holds the 0/1 weights of a ≺ d)."""

    def __init__(self, model: Model, frame: str, relative_to: str) -> None:
        f, b = _frame(model, frame, "frame"), _frame(model, relative_to, "relative_to")
        if frame == relative_to:
            raise ValueError(f"relative_to: expected another frame than frame {frame!r} (a frame relative to "
                             "itself is the identity)")
        if f.body == b.body:
            raise ValueError(f"relative_to: {relative_to!r} is on the same body as frame {frame!r}: their relative "
                             "placement is constant")
        super().__init__(model, frame)
        self.relative_to, self.base = relative_to, FrameMotion(model, relative_to)
        column = np.repeat(np.arange(model.njoints), model.nvs)
        supports = [np.isin(column, model.support(body)) for body in (f.body, b.body)]
        F, B = (supports[0] & ~supports[1]).astype(float), (supports[1] & ~supports[0]).astype(float)
        A = _ancestors(model)
        self.ancestors = A * np.outer(F, F) - A * np.outer(B, B) - np.outer(B, F)
        self.F, self.B, self.sign = F, B, F - B

    def pose(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple, tuple]:
        """(R, p) of M = M_b⁻¹ M_f at the states xs (K, nx), and the world (R, p, S) of f and of b."""
        Rf, pf, Sf, _ = super().__call__(xs)
        Rb, pb, Sb, _ = self.base(xs)
        R = np.matmul(Rb.transpose(0, 2, 1), Rf)
        p = np.einsum("kji,kj->ki", Rb, pf - pb)
        return R, p, (Rf, pf, Sf), (Rb, pb, Sb)

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(R, p) of M, S^b (K, nv, 6) and J (K, 6, nv) at the states xs (K, nx)."""
        R, p, (_, _, Sf), (Rb, pb, Sb) = self.pose(xs)
        S = to_frame(Rb, pb, self.F[:, None] * Sf + self.B[:, None] * Sb)  # S^b on F ∪ B, zero on C
        J = to_frame(R, p, self.sign[:, None] * S).transpose(0, 2, 1)
        return R, p, S, np.ascontiguousarray(J)


class RelativePlacementResidual(_PoseResidual):
    """r = log₆(M*⁻¹ · M_b(q)⁻¹ M_f(q)) (6,: [linear; angular], Pinocchio's log6) of frame
    ``frame`` (f) relative to frame ``relative_to`` (b); ``target`` M* a rigid transform (4, 4)
    or one per knot (K, 4, 4): f's placement in b's frame (module docstring)."""

    def __init__(self, model: Model, frame: str, relative_to: str, target) -> None:
        motion = RelativeMotion(model, frame, relative_to)
        super().__init__(model, frame, rigid_transforms(target), FREE_FLYER)
        self.motion = motion


class RelativePositionResidual(Residual):
    """r = R_bᵀ(p_f − p_b) − p* (3,): the origin of frame ``frame`` (f) in the axes of frame
    ``relative_to`` (b), less ``target`` p* (3,) or (K, 3) (module docstring)."""

    def __init__(self, model: Model, frame: str, relative_to: str, target=(0.0, 0.0, 0.0)) -> None:
        self.motion, self.model = RelativeMotion(model, frame, relative_to), model
        self.target = references(target, (3,), "target")
        self.size, self.ndx = 3, 2 * model.nv

    knot_arrays = ("target",)  # the per-knot rows (as the world residuals name theirs)

    def _reference(self):
        return self.target, 1

    def value(self, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
        return self.motion.pose(xs)[1] - at_knots(self.target, xs.shape[0], 1, "target")

    keeps_arrays = True

    def evaluate(self, xs: np.ndarray, us: np.ndarray, kept: dict | None = None) -> Terms:
        K, nv, nu = xs.shape[0], self.model.nv, us.shape[1]
        R, p, S, J = self.motion(xs)
        rx, ru = self._zeros(K, nu, kept=kept)
        rx[:, :, :nv] = np.matmul(R, J[:, :3])

        def Hqq(rho):
            sigma = np.einsum("kji,kj->ki", R, rho)  # Rᵀρ
            Jv, Jw = J[:, :3].transpose(0, 2, 1), J[:, 3:].transpose(0, 2, 1)  # (K, nv, 3) columns
            T = np.einsum("ki,kadi->kad", sigma, np.cross(Jw[:, :, None], Jv[:, None]))
            rho_eta = np.concatenate([sigma, np.zeros((K, 3))], axis=1)
            return 0.5 * (T + T.transpose(0, 2, 1)) + self.motion.twist_hessian(R, p, S, rho_eta)
        return Terms(p - at_knots(self.target, K, 1, "target"), rx, ru, *position_curvature(K, self.ndx, nu, Hqq))


class RelativePlacementCost(ResidualCost):
    """½ w ‖log₆(M*⁻¹ M_b⁻¹ M_f(q))‖² of frame ``frame`` relative to frame ``relative_to``;
    ``target`` M* a rigid transform (4, 4) or (K, 4, 4)."""

    def __init__(self, model: Model, frame: str, relative_to: str, target, weight=1.0) -> None:
        super().__init__(RelativePlacementResidual(model, frame, relative_to, target), weight=weight)


class RelativePositionCost(ResidualCost):
    """½ w ‖R_bᵀ(p_f − p_b) − p*‖² of frame ``frame``'s origin in frame ``relative_to``;
    ``target`` p* (3,) or (K, 3)."""

    def __init__(self, model: Model, frame: str, relative_to: str, target, weight=1.0) -> None:
        super().__init__(RelativePositionResidual(model, frame, relative_to, target), weight=weight)
