"""S-map on the CPU: weighted normal equations first, the QR solver for what they reject.

:func:`smap_predict` here is the CPU's one S-map entry (registered as "smap_predict"), with
the signature of every S-map kernel::

    smap_predict(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
                 idx, dist, use_table, alpha, want_sv, xexp, yexp)
        -> pred (nth, B, P), coef (nth, B, P, D+1), sv (nth, B, P, D+1)

For every problem (series, prediction row, theta) the weighted least-squares problem
``min || diag(w) (A c - b) ||`` (with the ridge rows) is solved through its normal equations

    G = sum_j w_j^2 a_j a_j^T (+ ridge^2 on the coefficients),   g = sum_j w_j^2 a_j b_j,

accumulated from the library points' precomputed products ``a_j a_j^T`` (upper triangle) and
``a_j b_j`` (one contiguous row of (D+1)(D+2)/2 + D+1 numbers per library point, so the
accumulation vectorizes).  Normal equations square the condition number, so accuracy is kept
as follows:

1. G is scaled to unit diagonal (``s_c = sqrt(G_cc)``: the norms of the weighted design's
   columns, the scaling the QR solver uses) and factored by Cholesky; a pivot at or below
   ``PIVOT_MIN`` (the scaled design's condition number is then at least about 1e6) rejects
   the problem;
2. iterative refinement with the residual taken from the data (the corrected semi-normal
   equations): ``c += G^-1 sum_j w_j^2 a_j (b_j - a_j . c)``, at most ``REFINE_STEPS`` steps.
   Each step shrinks the error by about cond(scaled A)^2 * eps, so the corrections measure
   it: the problem is accepted once a correction is at most ``GRAM_ACCEPT`` (1e-10) times
   the solution (in the scaled coordinates; the error left is smaller still, at the QR
   solver's rounding level).  One step suffices up to a condition number of about 1e4, three
   up to about 1e6;
3. every rejected problem (ill-conditioned or rank-deficient local fits, fewer rows than
   unknowns, zero columns, ridge rows too heavy to square) is solved again by the Householder
   QR / minimum-norm SVD solver (:func:`xedm.kernels.smap.cpu_qr.smap_qr`), which
   therefore decides every rank-deficient case exactly as before.

Neighbour tables (``knn``) and singular values go to the QR solver directly.  The GPU
(:mod:`.gpu`) runs the QR solver alone: its own normal-equation stage measured slower there
(an H100, L = 10,000, E = 20, theta = 2 on Lorenz-63: 188 ms against 74 ms for QR alone,
every problem rejected; 63 ms against 50 ms with noise, every problem accepted) and was
removed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._flags import FASTMATH
from .._numba import njit  # numba's, with xedm's kernel cache
from .constants import EXP_MIN, GRAM_ACCEPT, PIVOT_MIN, REFINE_STEPS, RIDGE_MAX
from .cpu_qr import ridge_weight, smap_qr


@njit(cache=True)
def library_products(Xpad, pad, lib_ok, q_lo, q_hi, y, E, tau, Tp):
    """Library points of every series, by columns: offsets (B+1,), times (N,) (ascending
    within a series), design columns ``At`` (nc, N) (rows of [1, x]), targets (N,) and
    products ``PmT`` (nc(nc+1)/2 + nc, N): ``a_c a_d`` for c <= d (row by row of the upper
    triangle), then ``a_c b``."""
    B, C, _ = Xpad.shape
    nc = C * E + 1
    ntri = nc * (nc + 1) // 2
    off = np.zeros(B + 1, np.int64)
    for b in range(B):
        n = 0
        for q in range(q_lo[b], q_hi[b]):
            if lib_ok[b, q]:
                n += 1
        off[b + 1] = off[b] + n
    N = off[B]
    libq = np.empty(N, np.int64)
    At = np.empty((nc, N))
    yl = np.empty(N)
    PmT = np.empty((ntri + nc, N))
    for b in range(B):
        j = off[b]
        for q in range(q_lo[b], q_hi[b]):
            if not lib_ok[b, q]:
                continue
            libq[j] = q
            At[0, j] = 1.0
            for c in range(C):
                for e in range(E):
                    At[1 + c * E + e, j] = Xpad[b, c, pad + q - e * tau]
            yl[j] = y[b, q + Tp]
            k = 0
            for c1 in range(nc):
                for c2 in range(c1, nc):
                    PmT[k, j] = At[c1, j] * At[c2, j]
                    k += 1
            for c1 in range(nc):
                PmT[ntri + c1, j] = At[c1, j] * yl[j]
            j += 1
    return off, libq, At, yl, PmT


_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody-Waite reduction)
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.44269504088896338700e00


@njit(cache=True, fastmath={"nsz", "arcp", "contract"})
def exp_nonpos(v, out, bits, n):
    """out[:n] = exp(v[:n]) for arguments <= 0 (NaN not allowed; below EXP_MIN: 0), in loops
    that vectorize (numba has no vector exp without SVML): Cody-Waite reduction by ln 2,
    the Taylor polynomial of degree 13 on |r| <= ln(2)/2 (truncation below 5e-18), and 2^k
    from its bits.  Within 2 ulp of numpy.exp (tested).  ``bits`` (int64, n) is scratch."""
    for j in range(n):
        t = max(v[j], EXP_MIN)
        k = np.floor(t * _LOG2E + 0.5)
        r = (t - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        out[j] = p
        bits[j] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for j in range(n):
        out[j] = out[j] * scale[j] if v[j] >= EXP_MIN else 0.0


@njit(cache=True, inline="always")
def _cholesky(Gs, R, nc):
    """Upper R with R^T R = Gs; False when a pivot is at or below PIVOT_MIN (or NaN)."""
    for i in range(nc):
        v = Gs[i, i]
        for k in range(i):
            v -= R[k, i] * R[k, i]
        if not v > PIVOT_MIN:
            return False
        r = np.sqrt(v)
        R[i, i] = r
        for j in range(i + 1, nc):
            a = Gs[i, j]
            for k in range(i):
                a -= R[k, i] * R[k, j]
            R[i, j] = a / r
    return True


@njit(cache=True, inline="always")
def unit_cholesky(G, R, sc, nc):
    """Scale the normal matrix G (upper triangle) to unit diagonal in place (``sc``: the
    square roots of its diagonal, the column norms of the weighted design) and factor it
    into R; False for a zero or infinite column or a rejected pivot."""
    for c1 in range(nc):
        sc[c1] = np.sqrt(G[c1, c1])
        if not (sc[c1] > 0.0 and sc[c1] < np.inf):
            return False
    for c1 in range(nc):
        for c2 in range(c1, nc):
            G[c1, c2] = G[c1, c2] / (sc[c1] * sc[c2])
    return _cholesky(G, R, nc)


@njit(cache=True, inline="always")
def _solve(R, rhs, out, nc):
    """out = (R^T R)^-1 rhs (forward then back substitution)."""
    for i in range(nc):
        a = rhs[i]
        for k in range(i):
            a -= R[k, i] * out[k]
        out[i] = a / R[i, i]
    for i in range(nc - 1, -1, -1):
        a = out[i]
        for k in range(i + 1, nc):
            a -= R[i, k] * out[k]
        out[i] = a / R[i, i]


# reassociation lets the sums over library points vectorize; it changes results at the
# rounding level only (no neighbour order depends on them)
@njit(parallel=True, cache=True, fastmath=FASTMATH)
def gram_rows(Xpad, pad, pred_t, pred_ok, E, tau, thetas, excl, off, libq, At, yl, PmT, alpha,
              xexp, yexp, pred, coef, bad):
    """Normal-equation S-map of every wanted row (every library point a neighbour); fills
    ``pred``/``coef`` of the accepted problems and sets ``bad[b, pi]`` for rows with a
    rejected problem (any theta).  Library arrays from :func:`library_products`.  The row's
    work is :func:`_gram_row`, a serial function: the parallel loop stays small, which makes
    numba's parallel compilation (run once per process on a cold cache) several times
    faster."""
    B = Xpad.shape[0]
    P = pred_t.shape[0]
    for task in prange(B * P):
        # int64: the parallel loop's index is unsigned inside the gufunc, and a second
        # signature would compile the row function twice
        _gram_row(np.int64(task), Xpad, pad, pred_t, pred_ok, E, tau, thetas, excl, off, libq,
                  At, yl, PmT, alpha, xexp, yexp, pred, coef, bad)


@njit(cache=True, fastmath=FASTMATH)
def _gram_row(task, Xpad, pad, pred_t, pred_ok, E, tau, thetas, excl, off, libq, At, yl, PmT,
              alpha, xexp, yexp, pred, coef, bad):
    """Row ``task`` (series ``task // P``, prediction row ``task % P``) of :func:`gram_rows`."""
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    nth = thetas.shape[0]
    nc = C * E + 1
    ntri = nc * (nc + 1) // 2
    npar = ntri + nc
    nridge = nc - 1 if alpha > 0.0 else 0
    b = task // P
    pi = task - b * P
    if not pred_ok[b, pi]:
        return
    p = pred_t[pi]
    j0 = off[b]
    n = off[b + 1] - j0
    xp = np.empty(nc)
    xp[0] = 1.0
    for c in range(C):
        for e in range(E):
            xp[1 + c * E + e] = Xpad[b, c, pad + p - e * tau]
    # excluded library points: a range of the ascending times
    lq = libq[j0:j0 + n]
    ex0 = np.searchsorted(lq, p - excl)
    ex1 = max(ex0, np.searchsorted(lq, p + excl, side="right"))
    m = n - (ex1 - ex0)
    if m == 0:
        return  # no neighbour: NaN, as the QR solver
    if m + nridge < nc:
        bad[b, pi] = True
        return
    ds = np.zeros(n)
    for c in range(1, nc):
        xc = xp[c]
        col = At[c, j0:j0 + n]
        for j in range(n):
            diff = xc - col[j]
            ds[j] += diff * diff
    for j in range(n):
        ds[j] = np.sqrt(ds[j])
    for j in range(ex0, ex1):
        ds[j] = 0.0
    dsum = 0.0
    for j in range(n):
        dsum += ds[j]
    dmean = dsum / m
    for j in range(ex0, ex1):
        ds[j] = np.inf
    dmin = np.inf
    for j in range(n):
        dmin = min(dmin, ds[j])
    w2 = np.empty(n)
    v = np.empty(n)
    bits = np.empty(n, np.int64)
    res = np.empty(n)
    F = np.empty(npar)
    G = np.empty((nc, nc))
    R = np.empty((nc, nc))
    sc = np.empty(nc)
    g = np.empty(nc)
    x = np.empty(nc)
    u = np.empty(nc)
    du = np.empty(nc)
    for it in range(nth):
        theta = thetas[it]
        local = theta != 0.0 and dmean != 0.0
        if local:
            f = -2.0 * theta / dmean  # squared weights: exp(-2 theta (d - dmin) / mean d)
            for j in range(n):
                v[j] = f * (ds[j] - dmin) if ds[j] > dmin else 0.0
            for j in range(ex0, ex1):
                v[j] = -np.inf
            exp_nonpos(v, w2, bits, n)
        else:
            for j in range(n):
                w2[j] = 1.0
            for j in range(ex0, ex1):
                w2[j] = 0.0
        for k in range(npar):
            row = PmT[k, j0:j0 + n]
            a = 0.0
            for j in range(n):
                a += w2[j] * row[j]
            F[k] = a
        k = 0
        for c1 in range(nc):
            for c2 in range(c1, nc):
                G[c1, c2] = F[k]
                k += 1
        ra2 = 0.0
        if nridge > 0:
            ra = ridge_weight(alpha, theta * dmin / dmean if local else 0.0, xexp[b])
            if not ra <= RIDGE_MAX:
                bad[b, pi] = True
                break
            ra2 = ra * ra
            for c1 in range(1, nc):
                G[c1, c1] += ra2
        ok = unit_cholesky(G, R, sc, nc)
        if not ok:
            bad[b, pi] = True
            break
        for c1 in range(nc):
            g[c1] = F[ntri + c1] / sc[c1]
        _solve(R, g, u, nc)
        for c1 in range(nc):
            x[c1] = u[c1] / sc[c1]
        # refinement steps, the residual from the data, until the correction is small
        umax = 0.0
        for c1 in range(nc):
            umax = max(umax, abs(u[c1]))
        done = False
        for _step in range(REFINE_STEPS):
            for j in range(n):
                res[j] = yl[j0 + j]
            for c1 in range(nc):
                xc = x[c1]
                col = At[c1, j0:j0 + n]
                for j in range(n):
                    res[j] -= col[j] * xc
            for j in range(n):
                res[j] *= w2[j]
            for c1 in range(nc):
                col = At[c1, j0:j0 + n]
                a = 0.0
                for j in range(n):
                    a += res[j] * col[j]
                g[c1] = a
            for c1 in range(1, nc):
                g[c1] -= ra2 * x[c1]
            for c1 in range(nc):
                g[c1] /= sc[c1]
            _solve(R, g, du, nc)
            dumax = 0.0
            for c1 in range(nc):
                dumax = max(dumax, abs(du[c1]))
                x[c1] += du[c1] / sc[c1]
            if dumax <= GRAM_ACCEPT * umax:
                done = True
                break
        if not done:
            bad[b, pi] = True
            break
        yhat = 0.0
        for c1 in range(nc):
            yhat += x[c1] * xp[c1]
            coef[it, b, pi, c1] = math.ldexp(x[c1], yexp[b] - (xexp[b] if c1 > 0 else 0))
        pred[it, b, pi] = math.ldexp(yhat, yexp[b])


def smap_predict(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi,
                 idx, dist, use_table, alpha, want_sv, xexp, yexp):
    """S-map predictions, coefficients and (``want_sv``) singular values for every theta:
    the normal-equation solver for every library point as neighbour, the QR solver
    (:func:`xedm.kernels.smap.cpu_qr.smap_qr`) for the problems it rejects, for
    neighbour tables and for singular values.  Arguments and results as the QR kernel's."""
    if use_table or want_sv:
        return smap_qr(Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo,
                       q_hi, idx, dist, use_table, alpha, want_sv, xexp, yexp)
    B, C, _ = Xpad.shape
    P = len(pred_t)
    thetas = np.asarray(thetas, np.float64)
    nth = len(thetas)
    nc = C * int(E) + 1
    pred = np.full((nth, B, P), np.nan)
    coef = np.full((nth, B, P, nc), np.nan)
    sv = np.full((nth, B, P, 0), np.nan)
    bad = np.zeros((B, P), np.bool_)
    if nth == 0 or P == 0:
        return pred, coef, sv
    off, libq, At, yl, PmT = library_products(Xpad, pad, lib_ok, q_lo, q_hi, y, int(E), tau, Tp)
    gram_rows(Xpad, pad, pred_t, pred_ok, int(E), tau, thetas, excl, off, libq, At, yl, PmT,
              float(alpha), xexp, yexp, pred, coef, bad)
    if bad.any():
        p2, c2, _ = smap_qr(Xpad, pad, lib_ok, pred_t, bad, y, E, tau, Tp, thetas, excl, q_lo,
                            q_hi, idx, dist, use_table, alpha, want_sv, xexp, yexp)
        pred[:, bad] = p2[:, bad]
        coef[:, bad] = c2[:, bad]
    return pred, coef, sv
