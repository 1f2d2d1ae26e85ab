"""S-map for several horizons from one neighbour table (numba, CPU): the kernel of
:func:`xedm.skill_grid`.

    smap_grid(Xpad, pad, pred_t, pred_ok, y, E, tau, Tps, thetas, idx, dist, oks, k, xexp,
              yexp) -> pred (nTp, nth, B, P)

``idx``/``dist`` (B, P, depth) is one table shared by every Tp (searched over the union of
their library sets); ``oks`` (nTp, B, T) says which library points each Tp may use, and each
Tp takes the first ``k`` entries of the table that it may use.  Where those neighbours are
the same for several Tp (every row but those near a segment's end), the weighted design
matrix ``diag(w) [1, X]`` is the same for them: it is built once per theta and its normal
matrix factored once, and only the right-hand sides ``w * y[q + Tp]`` differ.  The solve is
the CPU's normal-equation scheme (:mod:`.cpu`: unit-diagonal Cholesky, refinement with the
residual from the data, acceptance at ``GRAM_ACCEPT``); a problem it rejects is solved by
the QR solver (:func:`.cpu_qr._lstsq`), so the results equal ``smap_predict``'s to the
rounding level (about 1e-10 relative).  Scaling as ``smap_predict`` (``Xpad``, ``y`` times
2^-xexp, 2^-yexp; weights relative to the nearest neighbour).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._flags import FASTMATH
from .._numba import njit  # numba's, with xedm's kernel cache
from .constants import GRAM_ACCEPT, REFINE_STEPS
from .cpu import _solve, unit_cholesky
from .cpu_qr import _lstsq


@njit(cache=True, fastmath=FASTMATH, inline="always")
def _gram_solve(At, rhs, m, nc, R, sc, ok, out, g, u, du, res):
    """Solve with the factored normal matrix (``ok``) and refine; False when rejected.
    ``g``, ``u``, ``du`` (nc,) and ``res`` (m,) are scratch."""
    if not ok:
        return False
    for c in range(nc):
        a = 0.0
        for j in range(m):
            a += At[c, j] * rhs[j]
        g[c] = a / sc[c]
    _solve(R, g, u, nc)
    umax = 0.0
    for c in range(nc):
        out[c] = u[c] / sc[c]
        umax = max(umax, abs(u[c]))
    for _step in range(REFINE_STEPS):
        for j in range(m):
            res[j] = rhs[j]
        for c in range(nc):
            for j in range(m):
                res[j] -= At[c, j] * out[c]
        for c in range(nc):
            a = 0.0
            for j in range(m):
                a += At[c, j] * res[j]
            g[c] = a / sc[c]
        _solve(R, g, du, nc)
        dumax = 0.0
        for c in range(nc):
            dumax = max(dumax, abs(du[c]))
            out[c] += du[c] / sc[c]
        if dumax <= GRAM_ACCEPT * umax:
            return True
    return False


@njit(cache=True, inline="always")
def _store(pred, t, it, b, pi, sol, xp, nc, yexp_b):
    yhat = 0.0
    for c in range(nc):
        yhat += sol[c] * xp[c]
    pred[t, it, b, pi] = math.ldexp(yhat, yexp_b)


# reassociation lets the sums over neighbours vectorize (as the CPU's other S-map solvers);
# it changes results at the rounding level only
@njit(parallel=True, cache=True, fastmath=FASTMATH)
def smap_grid(Xpad, pad, pred_t, pred_ok, y, E, tau, Tps, thetas, idx, dist, oks, k, xexp,
              yexp):
    """S-map predictions (nTp, nth, B, P) for every Tp and theta (see the module doc).  A
    row's work is :func:`_grid_row`, a serial function: the parallel loop stays small, which
    makes numba's parallel compilation (once per process on a cold cache) faster."""
    B = Xpad.shape[0]
    P = pred_t.shape[0]
    pred = np.full((Tps.shape[0], thetas.shape[0], B, P), np.nan)
    for task in prange(B * P):
        # int64: the loop index is unsigned inside the gufunc (a second signature)
        _grid_row(np.int64(task), Xpad, pad, pred_t, pred_ok, y, E, tau, Tps, thetas, idx,
                  dist, oks, k, yexp, pred)
    return pred


@njit(cache=True, fastmath=FASTMATH)
def _grid_row(task, Xpad, pad, pred_t, pred_ok, y, E, tau, Tps, thetas, idx, dist, oks, k,
              yexp, pred):
    """Row ``task`` (series ``task // P``, prediction row ``task % P``) of :func:`smap_grid`,
    written into ``pred``."""
    B, C, _ = Xpad.shape
    P = pred_t.shape[0]
    nT = Tps.shape[0]
    nth = thetas.shape[0]
    depth = idx.shape[2]
    nc = C * E + 1
    eps = np.finfo(np.float64).eps
    empty = np.ones(0)
    b = task // P
    pi = task - b * P
    if not pred_ok[b, pi]:
        return
    p = pred_t[pi]
    sel = np.zeros((nT, k), np.int64)
    cnt = np.zeros(nT, np.int64)
    for t in range(nT):
        c = 0
        for j in range(depth):
            q = idx[b, pi, j]
            if q < 0:
                break
            if oks[t, b, q]:
                sel[t, c] = j
                c += 1
                if c == k:
                    break
        cnt[t] = c
    xp = np.empty(nc)
    xp[0] = 1.0
    for c in range(C):
        for e in range(E):
            xp[1 + c * E + e] = Xpad[b, c, pad + p - e * tau]
    done = np.zeros(nT, np.bool_)
    members = np.empty(nT, np.int64)
    for t0 in range(nT):
        if done[t0]:
            continue
        m = cnt[t0]
        ng = 0
        for t in range(t0, nT):
            if done[t] or cnt[t] != m:
                continue
            same = True
            for c in range(m):
                if sel[t, c] != sel[t0, c]:
                    same = False
                    break
            if same:
                members[ng] = t
                ng += 1
                done[t] = True
        if m == 0:
            continue
        qs = np.empty(m, np.int64)
        ds = np.empty(m)
        dmean = 0.0
        dmin = np.inf
        for c in range(m):
            qs[c] = idx[b, pi, sel[t0, c]]
            ds[c] = dist[b, pi, sel[t0, c]]
            dmean += ds[c]
            dmin = min(dmin, ds[c])
        dmean /= m
        At = np.empty((nc, m))
        w = np.empty(m)
        G = np.empty((nc, nc))
        R = np.empty((nc, nc))
        sc = np.empty(nc)
        rhs = np.empty((ng, m))
        rb = np.empty((ng, m))
        bad = np.empty(ng, np.int64)
        sol = np.empty(nc)
        g = np.empty(nc)
        u = np.empty(nc)
        du = np.empty(nc)
        res = np.empty(m)
        # a theta at or above one whose normal equations were rejected goes straight to
        # QR (larger theta: more local, worse conditioned); only the speed changes
        qr_from = np.inf
        for it in range(nth):
            theta = thetas[it]
            local = theta != 0.0 and dmean != 0.0
            for j in range(m):
                q = qs[j]
                w[j] = np.exp(-theta * (ds[j] - dmin) / dmean) if local else 1.0
                At[0, j] = w[j]
                for c in range(C):
                    for e in range(E):
                        At[1 + c * E + e, j] = w[j] * Xpad[b, c, pad + q - e * tau]
            ok = m >= nc and theta < qr_from
            if ok:
                for c1 in range(nc):
                    for c2 in range(c1, nc):
                        a = 0.0
                        for j in range(m):
                            a += At[c1, j] * At[c2, j]
                        G[c1, c2] = a
                ok = unit_cholesky(G, R, sc, nc)
            nbad = 0
            for gi in range(ng):
                t = members[gi]
                for j in range(m):
                    rhs[gi, j] = w[j] * y[b, qs[j] + Tps[t]]
                if _gram_solve(At, rhs[gi], m, nc, R, sc, ok, sol, g, u, du, res):
                    _store(pred, t, it, b, pi, sol, xp, nc, yexp[b])
                else:
                    bad[nbad] = gi
                    nbad += 1
            if nbad > 0:  # rejected: one QR for all of them
                qr_from = min(qr_from, theta)
                for r in range(nbad):
                    for j in range(m):
                        rb[r, j] = rhs[bad[r], j]
                sols, _ = _lstsq(At.copy(), rb[:nbad].copy(), m, nc, eps, empty)
                for r in range(nbad):
                    _store(pred, members[bad[r]], it, b, pi, sols[r], xp, nc, yexp[b])
