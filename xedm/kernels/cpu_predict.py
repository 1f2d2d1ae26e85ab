"""Prediction kernels (CPU): simplex from neighbour tables, S-map batched weighted least squares.

Signatures shared with the GPU twins::

    simplex_predict(idx, dist, ok, y, k_list, Tp) -> (B, P) predictions
    smap_predict(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
                 idx, dist, use_table, alpha, want_sv)
        -> pred (nth, B, P), coef (nth, B, P, D+1), sv (nth, B, P, D+1)
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._flags import FASTMATH_STRICT

D_MIN = 1e-6  # floor of the nearest distance in simplex weights (CONVENTIONS.md)


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def simplex_predict(idx, dist, ok, y, k_list, Tp):
    """Simplex projection from neighbour tables: each row uses its first k_list[b] entries
    whose library point is valid for this use (``ok`` (B, T)): every entry of a plain table,
    or those of one Tp (one target) of a deeper table shared by several.
    ``w_i = exp(-d_i / max(d_1, 1e-6))`` over the entries used.

    idx/dist (B, P, depth); y (B, T); returns predictions (B, P), NaN without neighbours.
    """
    B, P, depth = idx.shape
    pred = np.full((B, P), np.nan)
    for task in prange(B * P):
        b = task // P
        pi = task - b * P
        k = k_list[b]
        m = 0
        dmin = 1.0
        wsum = 0.0
        acc = 0.0
        for j in range(depth):
            q = idx[b, pi, j]
            if q < 0:
                break
            if not ok[b, q]:
                continue
            if m == 0:
                dmin = max(dist[b, pi, j], D_MIN)
            w = np.exp(-dist[b, pi, j] / dmin)
            wsum += w
            acc += w * y[b, q + Tp]
            m += 1
            if m == k:
                break
        if m > 0:
            pred[b, pi] = acc / wsum
    return pred


@njit(cache=True)
def _lstsq(A, rhs, rows, nc, eps):
    """Minimum-norm least squares, as numpy.linalg.lstsq (rcond = eps * max(rows, cols)).

    Tall problems (the usual S-map case) go through a Householder QR of A, done in place, and
    an SVD of the small triangular factor, which has A's singular values; that costs
    2 * rows * nc^2 flops instead of LAPACK's bidiagonalisation of the whole matrix.
    """
    if rows < nc:
        sol, _res, _rank, s = np.linalg.lstsq(A[:rows], rhs[:rows], eps * max(rows, nc))
        return sol, s
    for j in range(nc):
        # Householder vector for column j, rows j..rows-1
        norm = 0.0
        for i in range(j, rows):
            norm += A[i, j] * A[i, j]
        norm = np.sqrt(norm)
        if norm == 0.0:
            continue
        alpha = -norm if A[j, j] >= 0 else norm
        v0 = A[j, j] - alpha
        vnorm2 = v0 * v0 + (norm * norm - A[j, j] * A[j, j])
        A[j, j] = v0
        if vnorm2 > 0.0:
            for cc in range(j + 1, nc):
                dot = 0.0
                for i in range(j, rows):
                    dot += A[i, j] * A[i, cc]
                f = 2.0 * dot / vnorm2
                for i in range(j, rows):
                    A[i, cc] -= f * A[i, j]
            dot = 0.0
            for i in range(j, rows):
                dot += A[i, j] * rhs[i]
            f = 2.0 * dot / vnorm2
            for i in range(j, rows):
                rhs[i] -= f * A[i, j]
        A[j, j] = alpha
    R = np.zeros((nc, nc))
    for i in range(nc):
        for cc in range(i, nc):
            R[i, cc] = A[i, cc]
    U, s, Vt = np.linalg.svd(R)
    cut = eps * max(rows, nc) * s[0]
    tmp = np.zeros(nc)
    for i in range(nc):
        if s[i] > cut:
            acc = 0.0
            for r in range(nc):
                acc += U[r, i] * rhs[r]
            tmp[i] = acc / s[i]
    sol = np.zeros(nc)
    for cc in range(nc):
        acc = 0.0
        for i in range(nc):
            acc += Vt[i, cc] * tmp[i]
        sol[cc] = acc
    return sol, s


@njit(parallel=True, cache=True, fastmath=FASTMATH_STRICT)
def smap_predict(
    Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
    idx, dist, use_table, alpha, want_sv,
):
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
        for j in range(m):
            dmean += ds[j]
        dmean /= m
        xp = np.empty(nc)
        xp[0] = 1.0
        for c in range(C):
            for e in range(E):
                xp[1 + c * E + e] = Xpad[b, c, pad + p - e * tau]
        A = np.empty((m + nridge, nc))
        rhs = np.empty(m + nridge)
        for it in range(nth):
            theta = thetas[it]
            for j in range(m):
                q = qs[j]
                if theta == 0.0 or dmean == 0.0:
                    w = 1.0
                else:
                    w = np.exp(-theta * ds[j] / dmean)
                A[j, 0] = w
                for c in range(C):
                    for e in range(E):
                        A[j, 1 + c * E + e] = w * Xpad[b, c, pad + q - e * tau]
                rhs[j] = w * y[b, q + Tp]
            if nridge > 0:
                ra = np.sqrt(alpha)
                for r in range(nridge):
                    for cc in range(nc):
                        A[m + r, cc] = 0.0
                    A[m + r, 1 + r] = ra
                    rhs[m + r] = 0.0
            sol, s = _lstsq(A, rhs, m + nridge, nc, eps)
            yhat = 0.0
            for cc in range(nc):
                coef[it, b, pi, cc] = sol[cc]
                yhat += sol[cc] * xp[cc]
            pred[it, b, pi] = yhat
            if want_sv:
                for cc in range(min(nc, s.shape[0])):
                    sv[it, b, pi, cc] = s[cc]
    return pred, coef, sv
