"""Small dense linear algebra of the solvers' compiled loops: Cholesky factor and solve,
the box-constrained QP of control-limited DDP (projected Newton, Tassa, Mansard & Todorov,
"Control-Limited Differential Dynamic Programming", ICRA 2014, Alg. 3) and the matrix
products of the backward pass. All allocation-free: they write into arrays the caller owns.
"""
from __future__ import annotations

import numpy as np

from dynamics._compile import allocation_free
from dynamics.spatial import copy_into

@allocation_free
def cholesky(H, idx, nf, L):
    """Cholesky factor L (nf, nf) of H[idx[:nf], idx[:nf]]; False if not positive definite."""
    for i in range(nf):
        for j in range(i + 1):
            s = H[idx[i], idx[j]]
            for p in range(j):
                s -= L[i, p] * L[j, p]
            if i == j:
                if not s > 1e-12 * (1.0 + abs(H[idx[i], idx[i]])):
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return True


@allocation_free
def cholesky_solve(L, nf, b):
    """Solve (L Lᵀ) y = b in place for b (nf,)."""
    for i in range(nf):
        s = b[i]
        for p in range(i):
            s -= L[i, p] * b[p]
        b[i] = s / L[i, i]
    for i in range(nf - 1, -1, -1):
        s = b[i]
        for p in range(i + 1, nf):
            s -= L[p, i] * b[p]
        b[i] = s / L[i, i]


@allocation_free
def cholesky_solve_rows(L, nf, idx, X):
    """Solve (L Lᵀ) Y = X[idx[:nf]] in place for the rows idx[:nf] of X (nf, n): every
    column as :func:`cholesky_solve` solves it, the same operations in the same order (so
    bit for bit its result), with each step a contiguous row update that vectorises
    instead of n solves of dependent scalar chains."""
    n = X.shape[1]
    for sweep in range(2):  # L Z = X, then Lᵀ Y = Z
        for a in range(nf):
            i = a if sweep == 0 else nf - 1 - a
            xi = X[idx[i]]
            for p in range(0, i) if sweep == 0 else range(i + 1, nf):
                c, xp = (L[i, p] if sweep == 0 else L[p, i]), X[idx[p]]
                for j in range(n):
                    xi[j] -= c * xp[j]
            d = L[i, i]
            for j in range(n):
                xi[j] = xi[j] / d


@allocation_free
def _qp_value(H, g, x):
    n = x.shape[0]
    f = 0.0
    for i in range(n):
        f += g[i] * x[i]
        for j in range(n):
            f += 0.5 * x[i] * H[i, j] * x[j]
    return f


@allocation_free
def box_qp(H, g, lower, upper, x, idx, L, work):
    """Projected-Newton box QP (Tassa, Mansard & Todorov 2014, Alg. 3).

    Minimises ½ xᵀHx + gᵀx over lower ≤ x ≤ upper, starting from ``x`` (overwritten
    with the solution). On return ``idx[:nf]`` are the free indices and L the Cholesky
    factor of H restricted to them; ``work`` (4, n) is scratch. Returns nf, or −1 if H_ff
    is not positive definite.
    """
    n = x.shape[0]
    grad, dx, xn, b = work[0], work[1], work[2], work[3]
    for i in range(n):
        x[i] = min(max(x[i], lower[i]), upper[i])
    f = _qp_value(H, g, x)
    nf = 0
    for _ in range(100):
        for i in range(n):
            grad[i] = g[i]
            for j in range(n):
                grad[i] += H[i, j] * x[j]
        nf = 0
        for i in range(n):
            if not ((x[i] <= lower[i] and grad[i] > 0.0) or (x[i] >= upper[i] and grad[i] < 0.0)):
                idx[nf] = i
                nf += 1
        if not cholesky(H, idx, nf, L):
            return -1
        gnorm = 0.0
        for a in range(nf):
            gnorm = max(gnorm, abs(grad[idx[a]]))
        if gnorm < 1e-12:
            break
        # Newton step on the free controls, clamped ones fixed: dx_f = −H_ff⁻¹ grad_f
        for a in range(nf):
            b[a] = grad[idx[a]]
        cholesky_solve(L, nf, b)
        dx[:] = 0.0
        for a in range(nf):
            dx[idx[a]] = -b[a]
        sdotg = 0.0
        for i in range(n):
            sdotg += dx[i] * grad[i]
        step, accepted = 1.0, False
        while step > 1e-20:
            for i in range(n):
                xn[i] = min(max(x[i] + step * dx[i], lower[i]), upper[i])
            f_new = _qp_value(H, g, xn)
            if (f_new - f) / (step * sdotg) > 0.1:
                accepted = True
                break
            step *= 0.6
        if not accepted:
            break
        copy_into(x, xn)
        improvement = f - f_new
        f = f_new
        if improvement < 1e-14 * (1.0 + abs(f)):
            break
    return nf


# The products below accumulate each output entry over r in increasing order, as a dot
# product would, but with r outside the contiguous inner loop: independent entries
# update together (the loop vectorises) instead of one long chain of dependent additions.

@allocation_free
def gemm_tn(A, B, C, add):
    """C (m, n) = AᵀB, or C += AᵀB with ``add``; A (p, m), B (p, n)."""
    p, m = A.shape
    n = B.shape[1]
    if not add:
        C[:] = 0.0
    for r in range(p):
        for i in range(m):
            a = A[r, i]
            for j in range(n):
                C[i, j] += a * B[r, j]


@allocation_free
def gemm_nn(A, B, C):
    """C (m, n) = A B; A (m, p), B (p, n)."""
    gemm_tn(A.T, B, C, False)


@allocation_free
def gemv_t(A, x, y, add):
    """y (m,) = Aᵀx, or y += Aᵀx with ``add``; A (p, m)."""
    p, m = A.shape
    if not add:
        y[:] = 0.0
    for r in range(p):
        xr = x[r]
        for i in range(m):
            y[i] += A[r, i] * xr
