"""S-map's QR solver (numba, CPU): batched weighted least squares by Householder QR and, where
the local fit is rank deficient, the minimum-norm solve from the SVD of the triangular factor.

Signature of every S-map kernel (the registered ``smap_predict`` of :mod:`.cpu` and its GPU
twin :mod:`.gpu`)::

    smap_qr(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
            idx, dist, use_table, alpha, want_sv, xexp, yexp)
        -> pred (nth, B, P), coef (nth, B, P, D+1), sv (nth, B, P, D+1)

It serves neighbour tables, singular values and every problem the normal-equation solver
(:mod:`.cpu`, the CPU's entry point) rejects, so it decides every rank-deficient case.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._flags import FASTMATH, FASTMATH_STRICT
from .._numba import njit  # numba's, with xedm's kernel cache
from ..predict.cpu_skill import pow2_exponent
from .constants import LOG_BIG, SQ_HUGE, SQ_TINY


@njit(cache=True, inline="always")
def _scale_rows(a, n):
    """Multiply a[:n] by the power of 2 that brings its largest |value| into [0.5, 1) (exact);
    returns the exponent e (a was 2^e times what it is now)."""
    mx = 0.0
    for i in range(n):
        mx = max(mx, abs(a[i]))
    e = pow2_exponent(mx)
    f = math.ldexp(1.0, -e)
    for i in range(n):
        a[i] *= f
    return e


@njit(cache=True, inline="always")
def _norm(a, n):
    """Euclidean norm of a[:n] without overflow or underflow (1.0 for zeros)."""
    mx = 0.0
    for i in range(n):
        mx = max(mx, abs(a[i]))
    if mx == 0.0:
        return 1.0
    e = pow2_exponent(mx)
    f = math.ldexp(1.0, -e)
    acc = 0.0
    for i in range(n):
        acc += (a[i] * f) ** 2
    return math.ldexp(np.sqrt(acc), e)


# reassociation lets the Householder dot products and norms vectorize (about 5x faster);
# it changes results at the rounding level only, and no neighbour order depends on them
@njit(cache=True, fastmath=FASTMATH)
def _lstsq(At, rhs, rows, nc, eps, svcol):
    """Minimum-norm least squares, as numpy.linalg.lstsq (rcond = eps * max(rows, cols)) on
    the design matrix with each column divided by its Euclidean norm (so that the
    minimum-norm choice and the rank decisions ignore the columns' units); the design matrix
    is given transposed (``At`` (nc, rows): each column contiguous).

    Tall problems (the usual S-map case) go through a Householder QR, done in place, and an
    SVD of the small triangular factor, which has A's singular values; that costs
    2 * rows * nc^2 flops instead of LAPACK's bidiagonalisation of the whole matrix.  The QR
    ignores column scales (each reflection depends on its column's direction only) and R's
    columns have A's norms, so the columns are scaled in R.  When the scaled factor is
    clearly full rank (smallest |R_ii| > 1e-8 * largest), back substitution replaces the SVD.
    A Householder vector whose squares could under- or overflow (rows of tiny weight left
    after the first reflections, huge ridge rows) is scaled by a power of 2 first.

    ``rhs`` (nr, rows) holds nr right-hand sides (one row each), solved with the one
    factorization (each exactly as it would be alone); returns the solutions (nr, nc).
    With ``svcol`` (nc,) (empty: none wanted), also returns the singular values of
    ``A diag(svcol)``, else an empty array.
    """
    nr = rhs.shape[0]
    want_sv = svcol.shape[0] > 0
    if rows < nc:
        A = np.ascontiguousarray(At[:, :rows].T)
        sv = np.zeros(0)
        if want_sv:
            sv = np.linalg.svd(A * svcol.reshape(1, nc))[1]
        cn = np.empty(nc)
        for cc in range(nc):
            cn[cc] = _norm(At[cc], rows)
        sol = np.empty((nr, nc))
        for k in range(nr):
            one, _res, _rank, _s = np.linalg.lstsq(A / cn.reshape(1, nc),
                                                   np.ascontiguousarray(rhs[k, :rows]),
                                                   eps * max(rows, nc))
            sol[k] = one / cn
        return sol, sv
    for j in range(nc):
        # Householder vector for column j, rows j..rows-1 (views: plain indices vectorize)
        v = At[j, j:rows]
        n = rows - j
        norm = 0.0
        for i in range(n):
            norm += v[i] * v[i]
        ev = 0
        if not (SQ_TINY < norm < SQ_HUGE):  # zero, or its squares may under/overflow:
            # the reflection does not change when v is scaled, so scale it exactly (2^-ev)
            ev = _scale_rows(v, n)
            norm = 0.0
            for i in range(n):
                norm += v[i] * v[i]
            if norm == 0.0:
                continue
        norm = np.sqrt(norm)
        alpha = -norm if v[0] >= 0 else norm
        v0 = v[0] - alpha
        vnorm2 = v0 * v0 + (norm * norm - v[0] * v[0])
        v[0] = v0
        if vnorm2 > 0.0:
            for cc in range(j + 1, nc):
                col = At[cc, j:rows]
                dot = 0.0
                for i in range(n):
                    dot += v[i] * col[i]
                f = 2.0 * dot / vnorm2
                for i in range(n):
                    col[i] -= f * v[i]
            for k in range(nr):
                r = rhs[k, j:rows]
                dot = 0.0
                for i in range(n):
                    dot += v[i] * r[i]
                f = 2.0 * dot / vnorm2
                for i in range(n):
                    r[i] -= f * v[i]
        v[0] = math.ldexp(alpha, ev)
    R = np.zeros((nc, nc))
    for i in range(nc):
        for cc in range(i, nc):
            R[i, cc] = At[cc, i]
    sv = np.zeros(0)
    if want_sv:
        sv = np.linalg.svd(R * svcol.reshape(1, nc))[1]
    cn = np.empty(nc)  # the column norms of A
    for cc in range(nc):
        cn[cc] = _norm(R[:, cc], cc + 1)
    # clearly full rank: the least-squares solution is unique, so back substitution gives
    # lstsq's answer without the SVD (which only decides the minimum-norm solution)
    dmax = 0.0
    dmin = np.inf
    for i in range(nc):
        dmax = max(dmax, abs(R[i, i]) / cn[i])
        dmin = min(dmin, abs(R[i, i]) / cn[i])
    sol = np.zeros((nr, nc))
    if dmin > 1e-8 * dmax:
        for k in range(nr):
            for i in range(nc - 1, -1, -1):
                acc = rhs[k, i]
                for cc in range(i + 1, nc):
                    acc -= R[i, cc] * sol[k, cc]
                sol[k, i] = acc / R[i, i]
        return sol, sv
    for i in range(nc):
        for cc in range(i, nc):
            R[i, cc] /= cn[cc]
    U, s, Vt = np.linalg.svd(R)
    cut = eps * max(rows, nc) * s[0]
    tmp = np.zeros(nc)
    for k in range(nr):
        for i in range(nc):
            tmp[i] = 0.0
            if s[i] > cut:
                acc = 0.0
                for r in range(nc):
                    acc += U[r, i] * rhs[k, r]
                tmp[i] = acc / s[i]
        for cc in range(nc):
            acc = 0.0
            for i in range(nc):
                acc += Vt[i, cc] * tmp[i]
            sol[k, cc] = acc / cn[cc]
    return sol, sv


@njit(cache=True, inline="always")
def ridge_weight(alpha, lf, xexp):
    """The weight of the ridge rows in the scaled units: ``sqrt(alpha) 2^-xexp / exp(-lf)``
    (``lf``: the log of the common factor the relative weights leave out), capped at
    ``exp(LOG_BIG)``, where the limit (coefficients 0 but the intercept) is reached, and
    computed from logs where the direct product would overflow.  Both CPU solvers call it
    (inlined: each caller's float flags apply, as to its own code); the CUDA kernels splice
    its twin :data:`xedm.kernels.smap.gpu_thread.RIDGE_WEIGHT`."""
    la = 0.5 * np.log(alpha)
    lra = la + lf - xexp * np.log(2.0)
    if lra > LOG_BIG:
        return np.exp(LOG_BIG)
    if la < 300.0 and lf < 300.0:  # no intermediate overflow
        return math.ldexp(np.sqrt(alpha) * np.exp(lf), -xexp)
    return np.exp(lra)


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def smap_qr(
    Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
    idx, dist, use_table, alpha, want_sv, xexp, yexp,
):
    """S-map predictions, coefficients and (``want_sv``) singular values for every theta.

    ``Xpad`` and ``y`` are series b multiplied by 2^-xexp[b] and 2^-yexp[b] (the caller's
    exact scaling, so that squared distances cannot overflow); results are returned in the
    unscaled units.  Independent of the data's unit:

    - weights relative to the nearest neighbour, ``exp(-theta (d_i - d_min) / mean(d))``:
      the documented ``exp(-theta d_i / mean(d))`` times a common factor, which cancels in
      weighted least squares (with ridge the penalty takes it instead), so large theta cannot
      underflow every weight;
    - the columns of the weighted ``[1, X]`` divided by their norms for the solve
      (:func:`_lstsq`), the coefficients scaled back after, so the minimum-norm choice and
      the relative rank decisions do not depend on the columns' units.
    Singular values are those of the documented matrix ``diag(exp(-theta d / mean d)) [1, X]``
    (with the ridge rows) in the caller's units.
    """
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    nth = thetas.shape[0]
    D = C * E
    nc = D + 1
    pred = np.full((nth, B, P), np.nan)
    coef = np.full((nth, B, P, nc), np.nan)
    sv = np.full((nth, B, P, nc if want_sv else 0), np.nan)
    nridge = D if alpha > 0.0 else 0
    eps = np.finfo(np.float64).eps
    for task in prange(B * P):
        b = task // P
        pi = task - b * P
        if not pred_ok[b, pi]:
            continue
        p = pred_t[pi]
        # neighbours: the table's, or every library point
        if use_table:
            m = 0
            for j in range(idx.shape[2]):
                if idx[b, pi, j] >= 0:
                    m += 1
            qs = idx[b, pi, :m].copy()
            ds = dist[b, pi, :m].copy()
        else:
            qs = np.empty(q_hi[b] - q_lo[b], np.int64)
            ds = np.empty(q_hi[b] - q_lo[b])
            m = 0
            for q in range(q_lo[b], q_hi[b]):
                if lib_ok[b, q] and abs(q - p) > excl:
                    s = 0.0
                    for c in range(C):
                        for e in range(E):
                            diff = Xpad[b, c, pad + p - e * tau] - Xpad[b, c, pad + q - e * tau]
                            s += diff * diff
                    qs[m] = q
                    ds[m] = np.sqrt(s)
                    m += 1
        if m == 0:
            continue
        dmean = 0.0
        dmin = np.inf
        for j in range(m):
            dmean += ds[j]
            dmin = min(dmin, ds[j])
        dmean /= m
        xp = np.empty(nc)
        xp[0] = 1.0
        for c in range(C):
            for e in range(E):
                xp[1 + c * E + e] = Xpad[b, c, pad + p - e * tau]
        rows = m + nridge
        At = np.empty((nc, rows))  # the design matrix, transposed
        rhs = np.empty(rows)
        svcol = np.ones(nc if want_sv else 0)
        for it in range(nth):
            theta = thetas[it]
            local = theta != 0.0 and dmean != 0.0
            for j in range(m):
                q = qs[j]
                w = np.exp(-theta * (ds[j] - dmin) / dmean) if local else 1.0
                At[0, j] = w
                for c in range(C):
                    for e in range(E):
                        At[1 + c * E + e, j] = w * Xpad[b, c, pad + q - e * tau]
                rhs[j] = w * y[b, q + Tp]
            # log of the common factor that the relative weights leave out
            lf = theta * dmin / dmean if local else 0.0
            if nridge > 0:
                # sum_{j>=1} alpha c_j^2 on the caller's coefficients, with the documented
                # weights: rows sqrt(alpha) 2^-xexp / exp(-lf) here
                ra = ridge_weight(alpha, lf, xexp[b])
                for r in range(nridge):
                    for cc in range(nc):
                        At[cc, m + r] = 0.0
                    At[1 + r, m + r] = ra
                    rhs[m + r] = 0.0
            # the documented matrix is this one times e^-lf, its columns c >= 1 times 2^xexp:
            # 2^gmax svcol_c with svcol_c <= 1
            gmax = max(0, xexp[b])
            if want_sv:
                svcol[0] = math.ldexp(1.0, -gmax)
                for cc in range(1, nc):
                    svcol[cc] = math.ldexp(1.0, xexp[b] - gmax)
            sols, s = _lstsq(At, rhs.reshape((1, rows)), rows, nc, eps, svcol)
            sol = sols[0]
            yhat = 0.0
            for cc in range(nc):
                cs = sol[cc]  # for the scaled series
                yhat += cs * xp[cc]
                coef[it, b, pi, cc] = math.ldexp(cs, yexp[b] - (xexp[b] if cc > 0 else 0))
            pred[it, b, pi] = math.ldexp(yhat, yexp[b])
            if want_sv:
                for cc in range(min(nc, s.shape[0])):
                    sv[it, b, pi, cc] = math.ldexp(s[cc] * np.exp(-lf), gmax)
    return pred, coef, sv
