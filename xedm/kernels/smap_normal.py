"""S-map's normal-equation solver on whole blocks of prediction rows, for NumPy or CuPy.

The block form of :mod:`xedm.kernels.cpu_smap` (same acceptance rules, same constants): for a
block of prediction rows of one series against every library point of that series,

- squared weights ``W2`` (rows x library) from the distances,
- the normal equations of every row at once as one matrix product ``W2 @ P`` (P: the library
  points' products ``a_c a_d``, c <= d, and ``a_c b``; cuBLAS on the GPU),
- the batched Cholesky factorisation of the unit-diagonal normal matrices and their solves,
  vectorised over the rows (``nc`` steps each),
- refinement steps with the residual from the data, again two matrix products each
  (``(b - X A^T) * W2`` then ``@ A``), and the acceptance test.

``xp`` is ``numpy`` or ``cupy``: the GPU kernel (:mod:`xedm.kernels.gpu_smap`) can run this
code on CuPy arrays before its QR solver (``gpu_smap.NORMAL_FIRST``, off: the QR solver alone
measured faster), and the tests run it on NumPy arrays as that path's reference on machines
without a GPU.  :func:`distances` is the NumPy form of the GPU's distance kernel.
"""

from __future__ import annotations

import math

import numpy as np

from .cpu_predict import LOG_BIG
from .cpu_smap import GRAM_ACCEPT, PIVOT_MIN, REFINE_STEPS, RIDGE_MAX


def distances(Xpad, pad, b, pt, libq, E, tau, excl):
    """Distances (rows, library) between the states of series b at times ``pt`` and at the
    library times ``libq`` (the plain float64 sum of squares, column by column and lag by
    lag), +inf where |t_lib - t_pred| <= excl."""
    B, C, _ = Xpad.shape
    s = np.zeros((len(pt), len(libq)))
    for c in range(C):
        for e in range(E):
            diff = (Xpad[b, c, pad + pt[:, None] - e * tau]
                    - Xpad[b, c, pad + libq[None, :] - e * tau])
            s += diff * diff
    d = np.sqrt(s)
    d[np.abs(libq[None, :] - pt[:, None]) <= excl] = np.inf
    return d


def cholesky(xp, Gs):
    """Upper R with R^T R = Gs for a stack (n, nc, nc) of symmetric matrices; ``ok`` (n,) is
    False where a pivot is at or below PIVOT_MIN (R is then not meaningful)."""
    n, nc, _ = Gs.shape
    R = xp.zeros_like(Gs)
    ok = xp.ones(n, dtype=bool)
    for i in range(nc):
        v = Gs[:, i, i] - (R[:, :i, i] * R[:, :i, i]).sum(axis=1)
        ok &= v > PIVOT_MIN
        r = xp.sqrt(xp.where(ok, v, 1.0))
        R[:, i, i] = r
        if i + 1 < nc:
            a = Gs[:, i, i + 1:] - (R[:, :i, i, None] * R[:, :i, i + 1:]).sum(axis=1)
            R[:, i, i + 1:] = a / r[:, None]
    return R, ok


def solve(xp, R, rhs):
    """(R^T R)^-1 rhs for stacks R (n, nc, nc) upper, rhs (n, nc)."""
    nc = R.shape[1]
    z = xp.empty_like(rhs)
    for i in range(nc):
        z[:, i] = (rhs[:, i] - (R[:, :i, i] * z[:, :i]).sum(axis=1)) / R[:, i, i]
    out = xp.empty_like(rhs)
    for i in range(nc - 1, -1, -1):
        out[:, i] = (z[:, i] - (R[:, i, i + 1:] * out[:, i + 1:]).sum(axis=1)) / R[:, i, i]
    return out


def ridge_weights(xp, alpha, lf, xexp):
    """The ridge rows' weight per row (lf: the log of each row's common weight factor), as
    :func:`xedm.kernels.cpu_smap.ridge_weight`."""
    la = 0.5 * np.log(alpha)
    lra = la + lf - xexp * np.log(2.0)
    small = np.sqrt(alpha) * xp.exp(xp.minimum(lf, 300.0)) * math.ldexp(1.0, -int(xexp))
    ra = xp.where(lra > LOG_BIG, np.exp(LOG_BIG),
                  xp.where((la < 300.0) & (lf < 300.0), small, xp.exp(xp.minimum(lra, LOG_BIG))))
    return ra


def normal_block(xp, D, At, yl, Pm, xq, thetas, alpha, xexp):
    """Normal-equation S-map of a block of rows of one series, every library point a
    neighbour.

    D (rows, n) distances (+inf: excluded), At (nc, n) the library's design columns
    ([1, x], scaled units), yl (n,) its targets, Pm (n, nc(nc+1)/2 + nc) its products, xq
    (rows, nc) the rows' states [1, x], ``thetas`` (host floats), ``alpha`` ridge (0: none),
    ``xexp`` the series' scale exponent.  Returns (sol (nth, rows, nc) coefficients and yhat
    (nth, rows) in the scaled units, ok (rows,) every theta accepted, has (rows,) at least one
    neighbour); rows with ``has & ~ok`` are for the QR solver.
    """
    rows, n = D.shape
    nc = At.shape[0]
    ntri = nc * (nc + 1) // 2
    nridge = nc - 1 if alpha > 0.0 else 0
    iu0, iu1 = (xp.asarray(a) for a in np.triu_indices(nc))
    dg = xp.arange(1, nc)
    fin = D < np.inf
    m = fin.sum(axis=1)
    has = m > 0
    ok = has & (m + nridge >= nc)
    dmean = xp.where(fin, D, 0.0).sum(axis=1) / xp.maximum(m, 1)
    dmin = xp.where(has, D.min(axis=1), 0.0)
    nth = len(thetas)
    sol = xp.full((nth, rows, nc), np.nan)
    yhat = xp.full((nth, rows), np.nan)
    finf = fin.astype(D.dtype)
    for it, theta in enumerate(thetas):
        theta = float(theta)
        local = (dmean != 0.0) if theta != 0.0 else xp.zeros(rows, dtype=bool)
        if theta != 0.0:
            f = xp.where(local, -2.0 * theta / xp.where(local, dmean, 1.0), 0.0)
            V = xp.where(D > dmin[:, None], f[:, None] * (D - dmin[:, None]), 0.0)
            W2 = xp.where(fin, xp.exp(xp.where(fin, V, 0.0)), 0.0)
            W2 = xp.where(local[:, None], W2, finf)
            del V
        else:
            W2 = finf
        F = W2 @ Pm
        G = xp.empty((rows, nc, nc))
        G[:, iu0, iu1] = F[:, :ntri]
        G[:, iu1, iu0] = F[:, :ntri]
        okt = ok.copy()
        ra2 = xp.zeros(rows)
        if nridge:
            lf = xp.where(local, theta * dmin / xp.where(local, dmean, 1.0), 0.0)
            ra = ridge_weights(xp, alpha, lf, xexp)
            okt &= ra <= RIDGE_MAX
            ra2 = xp.where(okt, ra * ra, 0.0)
            G[:, dg, dg] += ra2[:, None]
        sc = xp.sqrt(G[:, xp.arange(nc), xp.arange(nc)])
        okt &= ((sc > 0.0) & (sc < np.inf)).all(axis=1)
        sc = xp.where(okt[:, None], sc, 1.0)
        Gs = G / (sc[:, :, None] * sc[:, None, :])
        R, okc = cholesky(xp, xp.where(okt[:, None, None], Gs, xp.eye(nc)[None]))
        okt &= okc
        u = solve(xp, R, F[:, ntri:] / sc)
        x = u / sc
        umax = xp.abs(u).max(axis=1)
        done = xp.zeros(rows, dtype=bool)
        for _step in range(REFINE_STEPS):  # until every accepted row's correction is small
            res = (yl[None, :] - x @ At) * W2
            g2 = res @ At.T
            del res
            g2[:, 1:] -= ra2[:, None] * x[:, 1:]
            du = solve(xp, R, g2 / sc)
            x = xp.where(done[:, None], x, x + du / sc)
            done |= xp.abs(du).max(axis=1) <= GRAM_ACCEPT * umax
            if bool((done | ~okt).all()):
                break
        okt &= done
        ok &= okt
        sol[it] = x
        yhat[it] = (x * xq).sum(axis=1)
    return sol, yhat, ok, has


def predict(xp, dist, Xpad, pad, lib_ok, pred_t, pred_ok, y, E, tau, Tp, thetas, excl, q_lo,
            q_hi, alpha, xexp, yexp, block_elems=2**26):
    """:func:`normal_block` over every series and block of rows (at most ``block_elems``
    distances per block).  ``dist(b, pt, libq, dev)`` gives the block's distances as an
    ``xp`` array (``dev``: the library's arrays on the device, from :func:`to_device`).
    Returns NumPy pred (nth, B, P), coef (nth, B, P, nc) (NaN where not accepted) and ``bad``
    (B, P): rows whose problems the QR solver must take."""
    from .cpu_smap import library_products

    B, C, _ = Xpad.shape
    P = len(pred_t)
    nth = len(thetas)
    nc = C * int(E) + 1
    pred = np.full((nth, B, P), np.nan)
    coef = np.full((nth, B, P, nc), np.nan)
    bad = np.zeros((B, P), bool)
    off, libq, At, yl, PmT = library_products(Xpad, pad, lib_ok, q_lo, q_hi, y, int(E), tau,
                                              Tp)
    shift = np.where(np.arange(nc) > 0, 1, 0)
    for b in range(B):
        wanted = np.flatnonzero(pred_ok[b])
        j0, j1 = off[b], off[b + 1]
        if len(wanted) == 0 or j1 == j0 or nth == 0:
            continue
        n = j1 - j0
        dev = {"At": xp.asarray(At[:, j0:j1]), "yl": xp.asarray(yl[j0:j1]),
               "Pm": xp.asarray(np.ascontiguousarray(PmT[:, j0:j1].T)),
               "libq": xp.asarray(libq[j0:j1]), "libq_host": libq[j0:j1]}
        rows = max(1, min(len(wanted), block_elems // n))
        for s0 in range(0, len(wanted), rows):
            pis = wanted[s0:s0 + rows]
            pt = np.asarray(pred_t)[pis]
            xq = np.ones((len(pis), nc))
            for c in range(C):
                for e in range(int(E)):
                    xq[:, 1 + c * int(E) + e] = Xpad[b, c, pad + pt - e * tau]
            D = dist(b, pt, libq[j0:j1], dev)
            sol, yhat, ok, has = normal_block(xp, D, dev["At"], dev["yl"], dev["Pm"],
                                              xp.asarray(xq), thetas, alpha, int(xexp[b]))
            del D
            sol, yhat = _host(sol), _host(yhat)
            ok, has = _host(ok), _host(has)
            acc = pis[ok]
            pred[:, b, acc] = np.ldexp(yhat[:, ok], int(yexp[b]))
            coef[:, b, acc] = np.ldexp(sol[:, ok], int(yexp[b]) - int(xexp[b]) * shift)
            bad[b, pis[has & ~ok]] = True
    return pred, coef, bad


def _host(a):
    """A NumPy array from a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else np.asarray(a)
