"""Slow, obviously correct references (plain numpy loops) for every public xedm function.

Written straight from ../shared/CONVENTIONS.md, independent of xedm's code.  Series are given
as ``X`` (C, T) columns and ``y`` (T,) target; lib is a list of inclusive (start, end)
position pairs or a boolean mask; pred is a boolean mask.
"""

from __future__ import annotations

import numpy as np


def state(X, t, E, tau, embedded=False):
    """The state vector at t, or None when its window leaves the data or is not finite."""
    C = X.shape[0]
    if embedded:
        v = X[:, t].astype(float)
    else:
        if t - (E - 1) * tau < 0:
            return None
        v = np.array([X[c, t - e * tau] for c in range(C) for e in range(E)], dtype=float)
    return v if np.all(np.isfinite(v)) else None


def library_points(X, y, E, tau, Tp, lib, embedded=False):
    T = X.shape[1]
    span = 0 if embedded else (E - 1) * tau
    pts = []
    for t in range(T):
        if isinstance(lib, np.ndarray):  # boolean mask: the series is one segment
            a, b = 0, T - 1
            if not lib[t]:
                continue
        else:
            seg = [(a, b) for a, b in lib if a <= t <= b]
            if not seg:
                continue
            a, b = seg[0]
        if t - span < a or not (a <= t + Tp <= b):
            continue
        if state(X, t, E, tau, embedded) is None or not np.isfinite(y[t + Tp]):
            continue
        pts.append(t)
    return pts


def prediction_points(X, E, tau, pred, embedded=False):
    span = 0 if embedded else (E - 1) * tau
    return [t for t in range(X.shape[1]) if pred[t] and t >= span]


def neighbors(X, p, libpts, E, tau, knn, excl, embedded=False):
    """The knn nearest library points of the state at p, ordered by (d, |p - t|, t).

    :func:`neighbors_loop`, the definition, with the library's states gathered at once: the
    same vectors as :func:`state` (column by column, lag by lag), the same squares summed by
    ``np.sum`` row by row (bitwise the sum of each vector alone), the same order
    (tests/test_neighbors.py::test_naive_neighbors_equal_the_loop)."""
    sp = state(X, p, E, tau, embedded)
    q = np.array([t for t in libpts if abs(t - p) > excl], dtype=np.int64)
    if sp is None or not len(q):
        return neighbors_loop(X, p, libpts, E, tau, knn, excl, embedded)
    Xf = np.asarray(X, dtype=float)
    if embedded:
        S = Xf[:, q].T
    else:
        assert (q - (E - 1) * tau >= 0).all(), "a library state leaves the data"
        S = Xf[:, q[:, None] - np.arange(E) * tau].transpose(1, 0, 2).reshape(len(q), -1)
    S = np.ascontiguousarray(S)
    assert np.isfinite(S).all(), "a library state is not finite"
    d = np.sqrt(np.sum((S - sp) ** 2, axis=1))
    gap = np.abs(q - p)
    order = np.lexsort((q, gap, d))[:knn]
    return [(d[o], int(gap[o]), int(q[o])) for o in order]


def neighbors_loop(X, p, libpts, E, tau, knn, excl, embedded=False):
    """:func:`neighbors` one library point at a time (the definition)."""
    sp = state(X, p, E, tau, embedded)
    cands = []
    for q in libpts:
        if abs(q - p) <= excl:
            continue
        d = np.sqrt(np.sum((state(X, q, E, tau, embedded) - sp) ** 2))
        cands.append((d, abs(q - p), q))
    cands.sort()
    return cands[:knn] if knn is not None else cands


def skill(obs, pred):
    obs = np.asarray(obs, float)
    pred = np.asarray(pred, float)
    ok = np.isfinite(obs) & np.isfinite(pred)
    o, p = obs[ok], pred[ok]
    n = len(o)
    rho = np.nan
    if n >= 3 and np.std(o) > 0 and np.std(p) > 0:
        rho = np.corrcoef(o, p)[0, 1]
    mae = np.mean(np.abs(p - o)) if n else np.nan
    rmse = np.sqrt(np.mean((p - o) ** 2)) if n else np.nan
    return {"rho": rho, "mae": mae, "rmse": rmse, "n": n}


def _observed(y, t):
    return y[t] if 0 <= t < len(y) else np.nan


def simplex(X, y, E, tau=1, Tp=1, knn=None, excl=0, lib=None, pred=None, embedded=False):
    """Returns {"out_t": [...], "prediction": [...], "observed": [...], **skill}."""
    T = X.shape[1]
    lib = [(0, T - 1)] if lib is None else lib
    pred = np.ones(T, bool) if pred is None else pred
    knn = E + 1 if knn is None else knn
    libpts = library_points(X, y, E, tau, Tp, lib, embedded)
    out_t, preds, obs = [], [], []
    for p in prediction_points(X, E, tau, pred, embedded):
        out_t.append(p + Tp)
        obs.append(_observed(y, p + Tp))
        if state(X, p, E, tau, embedded) is None:
            preds.append(np.nan)
            continue
        nb = neighbors(X, p, libpts, E, tau, knn, excl, embedded)
        if not nb:
            preds.append(np.nan)
            continue
        d = np.array([n[0] for n in nb])
        w = np.exp(-d / max(d[0], 1e-6))
        preds.append(np.sum(w * np.array([y[n[2] + Tp] for n in nb])) / np.sum(w))
    return {"out_t": np.array(out_t), "prediction": np.array(preds), "observed": np.array(obs),
            **skill(obs, preds)}


def smap(X, y, E, theta=0.0, tau=1, Tp=1, knn=None, excl=0, lib=None, pred=None,
         embedded=False, alpha=0.0):
    T = X.shape[1]
    lib = [(0, T - 1)] if lib is None else lib
    pred = np.ones(T, bool) if pred is None else pred
    libpts = library_points(X, y, E, tau, Tp, lib, embedded)
    out_t, preds, obs, coefs = [], [], [], []
    for p in prediction_points(X, E, tau, pred, embedded):
        out_t.append(p + Tp)
        obs.append(_observed(y, p + Tp))
        sp = state(X, p, E, tau, embedded)
        nb = neighbors(X, p, libpts, E, tau, knn, excl, embedded) if sp is not None else []
        if not nb:
            preds.append(np.nan)
            coefs.append(None)
            continue
        d = np.array([n[0] for n in nb])
        # exp(-theta d / mean d) relative to the nearest: the common factor exp(-lf) cancels
        # in least squares (ridge: the penalty takes it, alpha e^(2 lf))
        local = theta != 0 and d.mean() != 0
        w = np.exp(-theta * (d - d.min()) / d.mean()) if local else np.ones(len(d))
        lf = theta * d.min() / d.mean() if local else 0.0
        A = np.array([np.concatenate([[1.0], state(X, n[2], E, tau, embedded)]) for n in nb])
        b = np.array([y[n[2] + Tp] for n in nb])
        A = A * w[:, None]
        b = b * w
        if alpha > 0:
            D = A.shape[1] - 1
            ra = np.sqrt(alpha) * np.exp(lf)
            A = np.vstack([A, np.hstack([np.zeros((D, 1)), ra * np.eye(D)])])
            b = np.concatenate([b, np.zeros(D)])
        # columns divided by their norms (which decides the minimum-norm solution of a
        # rank-deficient problem), targets by their largest |value|
        ca = np.linalg.norm(A, axis=0)
        ca[ca == 0] = 1.0
        cb = np.abs(b).max() or 1.0
        c = np.linalg.lstsq(A / ca, b / cb, rcond=None)[0] * cb / ca
        coefs.append(c)
        preds.append(c @ np.concatenate([[1.0], sp]))
    return {"out_t": np.array(out_t), "prediction": np.array(preds), "observed": np.array(obs),
            "coefficients": coefs, **skill(obs, preds)}


def embed_dimension(X, y, E_max, **kw):
    return [simplex(X, y, E, **kw)["rho"] for E in range(1, E_max + 1)]


def predict_interval(X, y, E, Tp_max, **kw):
    return [simplex(X, y, E, Tp=tp, **kw)["rho"] for tp in range(1, Tp_max + 1)]


def predict_nonlinear(X, y, E, thetas, **kw):
    return [smap(X, y, E, theta=th, **kw)["rho"] for th in thetas]


def floyd_subset(rng, n, L):
    """L of range(n) without replacement, by the documented protocol (Floyd's algorithm on
    rng.random(min(L, n - L)); for L > n / 2 the picked points are the ones left out)."""
    m = min(L, n - L)
    u = rng.random(m)
    picked = set()
    for i, j in enumerate(range(n - m, n)):
        c = int(u[i] * (j + 1))
        picked.add(j if c in picked else c)
    return sorted(picked) if m == L else [c for c in range(n) if c not in picked]


def ccm_pair(x, y, E, lib_sizes, samples, seed, tau=1, Tp=0, knn=None, excl=0, valid=None):
    """rho (n_sizes, samples) cross-mapping target y from library series x, following the
    documented sampling protocol (fresh PCG64(seed); one draw per size and sample, none for
    sizes >= the number of valid library points).  ``valid``: the valid library points when
    given (time-lagged ccm: those valid at every Tp)."""
    X = x[None]
    T = len(x)
    knn = E + 1 if knn is None else knn
    if valid is None:
        valid = library_points(X, y, E, tau, Tp, [(0, T - 1)])
    n = len(valid)
    rng = np.random.Generator(np.random.PCG64(seed))
    preds_at = [t for t in range(T) if state(X, t, E, tau) is not None]
    out = np.full((len(lib_sizes), samples), np.nan)
    for a, L in enumerate(lib_sizes):
        for s in range(samples):
            if L >= n and s > 0:  # the whole library, no draw: each sample is the first one
                out[a, s] = out[a, 0]
                continue
            sub = valid if L >= n else [valid[c] for c in floyd_subset(rng, n, L)]
            obs, pred = [], []
            for p in preds_at:
                nb = neighbors(X, p, sorted(sub), E, tau, knn, excl)
                o = y[p + Tp] if 0 <= p + Tp < T else np.nan
                if not nb:
                    continue
                d = np.array([v[0] for v in nb])
                w = np.exp(-d / max(d[0], 1e-6))
                obs.append(o)
                pred.append(np.sum(w * np.array([y[v[2] + Tp] for v in nb])) / np.sum(w))
            out[a, s] = skill(obs, pred)["rho"]
    return out


def xmap(X, E, tau=1, Tp=0, knn=None, excl=0, E_from="target"):
    """rho[i, j]: simplex cross map from series i to target j with the target's E[j] (or,
    with ``E_from="library"``, the library's E[i])."""
    N = X.shape[0]
    return np.array([[simplex(X[i][None], X[j], int(E[j] if E_from == "target" else E[i]),
                              tau=tau, Tp=Tp, knn=knn, excl=excl)["rho"] for j in range(N)]
                      for i in range(N)])



def knn_table(X, lib_ok, pred_t, E, tau, k, excl=0):
    """Neighbour tables (P, k) for the prediction times ``pred_t``: ``idx`` (-1 = none) and
    ``dist`` (inf = none) of the k nearest library points (``lib_ok[t]`` True) in the order
    (distance, |p - q|, q), every library point with ``|p - q| <= excl`` left out.  A row
    whose state is incomplete or not finite stays empty.

    The squared distance is summed as plain float64 in one fixed order, lag by lag and column
    by column within a lag (``for e: for c: s += (x_c[p - e*tau] - x_c[q - e*tau]) ** 2``),
    so that exact ties (long runs of equal values) are exact here too; ties are then decided
    by |p - q| and q, with no tolerance anywhere.
    """
    X = np.asarray(X, float)
    C = X.shape[0]
    qs = np.flatnonzero(lib_ok)
    P = len(pred_t)
    idx = np.full((P, k), -1, np.int64)
    dist = np.full((P, k), np.inf)
    for i, p in enumerate(pred_t):
        p = int(p)
        if state(X, p, E, tau) is None:
            continue
        cand = qs[np.abs(qs - p) > excl]
        s = np.zeros(len(cand))
        for e in range(E):
            for c in range(C):
                diff = X[c, p - e * tau] - X[c, cand - e * tau]
                s = s + diff * diff  # elementwise: the same order for every candidate
        order = np.lexsort((cand, np.abs(cand - p), s))  # by (s, |p - q|, q), as sorted()
        for j, o in enumerate(order[:k]):
            idx[i, j] = cand[o]
            dist[i, j] = np.sqrt(s[o])
    return idx, dist


def table_predictions(idx, dist, y, Tp, k=None, usable=None):
    """Simplex predictions from a neighbour table: per row the first k entries (all when k is
    None) whose library point is ``usable`` (all when None), weights
    ``exp(-d / max(d_first, 1e-6))``; NaN for a row without one."""
    P = idx.shape[0]
    out = np.full(P, np.nan)
    for i in range(P):
        ds, ys = [], []
        for q, d in zip(idx[i].tolist(), dist[i].tolist(), strict=True):  # the same doubles
            if q < 0:
                break
            if usable is not None and not usable[q]:
                continue
            ds.append(d)
            ys.append(y[q + Tp])
            if k is not None and len(ds) == k:
                break
        if ds:
            w = np.exp(-np.array(ds) / max(ds[0], 1e-6))
            out[i] = np.sum(w * np.array(ys)) / np.sum(w)
    return out


# Recurrence quantification references (dense brute force) live beside this file.
from naive_rqa import *  # noqa: E402,F401,F403


# ---------------------------------------------------------------- significance and convergence
def p_value(obs, null):
    """(1 + #{finite null >= obs}) / (1 + #finite null); NaN for a NaN obs or no finite null."""
    null = [r for r in null if np.isfinite(r)]
    if not np.isfinite(obs) or not null:
        return np.nan
    return (1 + sum(r >= obs for r in null)) / (1 + len(null))


def bh(pvals):
    """Benjamini-Hochberg q-values of a list (NaN stays NaN): q_i = min(1, min over p_j >= p_i
    of p_j * m / #{p_k <= p_j})."""
    fin = [p for p in pvals if np.isfinite(p)]
    m = len(fin)
    out = []
    for p in pvals:
        if not np.isfinite(p):
            out.append(np.nan)
            continue
        out.append(min(1.0, min(pj * m / sum(pk <= pj for pk in fin) for pj in fin if pj >= p)))
    return out


def fisher_z(r_small, r_large, n):
    """Fisher z of r_large against r_small, n predictions each, one-sided p (math only)."""
    import math

    clip = 1 - 1e-12
    a = math.atanh(min(max(r_small, -clip), clip))
    b = math.atanh(min(max(r_large, -clip), clip))
    z = (b - a) / math.sqrt(2.0 / (n - 3))
    return z, 0.5 * math.erfc(z / math.sqrt(2))


def bootstrap_interval(samples, seed, n_boot, level=0.95):
    """Percentile interval of the mean of samples resampled with replacement, the draws taken
    as rng.integers(0, S, (n_boot, S)) from default_rng(seed)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(samples), (n_boot, len(samples)))
    means = [np.mean([samples[i] for i in row]) for row in draws]
    return np.quantile(means, [(1 - level) / 2, (1 + level) / 2])


def normal_p_value(obs, null):
    """P(Z >= (atanh(obs) - mean) / sd) with the mean and sample sd (ddof 1) of the finite
    null's atanh (values clipped to |r| <= 1 - 1e-12); NaN with fewer than 2."""
    import math

    clip = 1 - 1e-12
    z = [math.atanh(min(max(r, -clip), clip)) for r in null if np.isfinite(r)]
    if not np.isfinite(obs) or len(z) < 2:
        return np.nan
    m = sum(z) / len(z)
    sd = math.sqrt(sum((v - m) ** 2 for v in z) / (len(z) - 1))
    score = (math.atanh(min(max(obs, -clip), clip)) - m) / sd
    return 0.5 * math.erfc(score / math.sqrt(2))


# ---------------------------------------------------------------- causal networks
def partial_correlation(y, a, Z):
    """Partial correlation of y and a given the rows of Z (and a constant), from the inverse
    of the covariance matrix of (y, a, Z): -P[0, 1] / sqrt(P[0, 0] P[1, 1])."""
    M = np.vstack([y, a, np.asarray(Z).reshape(-1, len(y))])
    P = np.linalg.inv(np.cov(M))
    return -P[0, 1] / np.sqrt(P[0, 0] * P[1, 1])


def partial_cross_map(X, E, candidate, lag, scan, tau=1, shifts=(-1, 0, 1), pool=None):
    """causal_network's conditional statistic, from the words of its docs.

    Library points of every series: complete windows (its own E) whose t + l lies in the data
    for every l in ``scan`` (the lags, each widened by ``shifts``); prediction times: the
    same, with windows complete at the largest E.  For candidate (i, j) at L = lag[i, j]: the
    partial correlation of y = j(t + L) with the simplex estimate of j(t + L) from i's
    manifold, given, for every other screened driver k of i (``pool[i, k]`` or
    ``candidate[i, k]``; pool defaults to candidate), the estimates of j(t + L + s) from k's
    manifold and k(t + L + s), s in ``shifts``.  Returns (r, p, n_conditions), p
    one-sided from Student's t with n - 2 - (number of terms) degrees of freedom.
    """
    from scipy.stats import t as student

    X = np.asarray(X, float)
    N, T = X.shape
    mask = np.array([all(0 <= t + l < T for l in scan) for t in range(T)])
    span = (max(E) - 1) * tau
    pred = mask & (np.arange(T) >= span)
    times = np.flatnonzero(pred)

    def estimate(k, j, Tp):
        out = simplex(X[k][None], X[j], int(E[k]), tau=tau, Tp=Tp, lib=mask, pred=pred)
        return out["prediction"]  # one per prediction time, in order

    r = np.full((N, N), np.nan)
    p = np.full((N, N), np.nan)
    m = np.zeros((N, N), int)
    for i in range(N):
        for j in range(N):
            if not candidate[i, j]:
                continue
            L = int(lag[i, j])
            ks = [k for k in range(N) if (candidate[i, k] or (pool is not None and pool[i, k]))
                  and k not in (i, j)]
            Z = [estimate(k, j, L + s) for s in shifts for k in ks]
            Z += [X[k, times + L + s] for s in shifts for k in ks]
            y = X[j, times + L]
            r[i, j] = partial_correlation(y, estimate(i, j, L), np.array(Z).reshape(-1, len(y)))
            m[i, j] = len(ks)
            df = len(y) - 2 - len(Z)
            p[i, j] = student.sf(r[i, j] * np.sqrt(df / (1 - r[i, j] ** 2)), df)
    return r, p, m


def signed_rank_p(e0, e1):
    """(p, gain, gain_hi) of the predictive conditioning's test, from the words of its docs:
    one-sided Wilcoxon signed-rank of |e0| - |e1| (ranks of |d| 1..n, ties by position),
    variance times (1 + r1) / (1 - r1) (r1: lag-1 autocorrelation of the signed ranks,
    clipped to [0, 0.99]); over the times where both are finite, gain = (mean|e0| -
    mean|e1|) / max(mean|e0|, mean|e1|) and gain_hi = (mean(d) + 1.6449 * sd(d) *
    sqrt((1 + r1) / (1 - r1) / n)) / max(mean|e0|, mean|e1|), d = |e0| - |e1| (population
    sd), at most 1."""
    from math import erfc, sqrt

    dlt = np.abs(e0) - np.abs(e1)
    order = np.argsort(np.abs(dlt), kind="stable")
    rank = np.empty(len(dlt))
    rank[order] = np.arange(1, len(dlt) + 1)
    s = np.sign(dlt) * rank
    sc = s - s.mean()
    r1 = min(max(np.mean(sc[1:] * sc[:-1]) / np.mean(sc ** 2), 0.0), 0.99)
    var = np.sum(rank[dlt != 0] ** 2) * (1 + r1) / (1 - r1)
    p = 0.5 * erfc(s.sum() / sqrt(var) / sqrt(2))
    both = np.isfinite(e0) & np.isfinite(e1)
    m0, m1 = np.mean(np.abs(e0[both])), np.mean(np.abs(e1[both]))
    d = np.abs(e0[both]) - np.abs(e1[both])
    se = np.std(d) * sqrt((1 + r1) / (1 - r1) / both.sum())
    top = max(m0, m1)
    return p, (m0 - m1) / top, min((d.mean() + 1.6448536269514722 * se) / top, 1.0)


def predictive_conditioning(X, E, weight=0.1, theta=1.0, alpha_drop=0.7, max_drivers=8,
                            near=40, max_candidates=None, max_lag=1, extra=10,
                            alpha_keep=0.3,
                            alternatives=((30, 100, 1.0, 0.1), (80, 100, 3.0, 0.1),
                                          (80, 100, 3.0, 1.0))):
    """causal_network's predictive conditioning, from the words of its docs.

    Each series z-scored.  Series i: the leave-one-out local linear prediction of z_i(t + 1)
    from z_i(t), the chosen own lags z_i(t - l) (l < E_i) and weight * z_j(t) of the chosen
    drivers j; points within the Theiler window (the first lag whose autocorrelation is
    below 1/e, minus one) are left out; the neighbours are the (d + 1) + extra nearest (in
    the d coordinates) among the `near` nearest in i's own state (z_i(t) and the own lags of
    the model), ties in time order;
    weights exp(-theta d / mean d); weighted least squares on [1, coordinates - those of
    the point].  Driver j enters at delays k = 1..max_lag (weight * z_j(t + 1 - k)); a
    chosen delay leaves the candidates, j's other delays stay.  A candidate's p: one-sided
    Wilcoxon signed-rank of |e_without| - |e_with|,
    variance times (1 + r1) / (1 - r1) (r1: lag-1 autocorrelation of the signed ranks,
    clipped to [0, 0.99]).  Forward: add the best candidate with p <= alpha_drop, drop those
    above and, past ``max_candidates`` drivers left, the drivers with the largest p.
    Backward: each chosen driver (all its chosen delays together) retested given the other
    chosen terms; the one with the largest p (the last of equals) leaves while that p is
    above alpha_keep.  Then every other driver added to the final model at each delay.
    A pair's p, gain and delay: those of its best delay (smallest p, then
    shortest) in its last test; a chosen driver's delay is its first chosen one.
    Fits: the final model's mean absolute error with (extra, near, theta, weight) and with
    each of ``alternatives``, all among the 100 (the widest) nearest; a series whose error
    is smallest with an alternative (ties to the first) is conditioned again with it.
    Returns p (N, N), gain (N, N), selected (N, N), lag (N, N).
    """
    from math import exp

    X = np.asarray(X, float)
    Z = (X - X.mean(1, keepdims=True)) / X.std(1, keepdims=True)
    N, T = Z.shape
    P = np.ones((N, N))
    G = np.full((N, N), np.nan)
    S = np.zeros((N, N), bool)
    K = np.zeros((N, N), int)

    def theiler(z):
        for lag in range(1, max(len(z) // 10, 1) + 1):
            if np.dot(z[:-lag], z[lag:]) / np.dot(z, z) < exp(-1):
                return lag - 1
        return max(len(z) // 10, 1)

    def loo_errors(cols, y, own_dims, excl, hood):
        ex, nr, th, _ = hood
        n = len(y)
        A = np.array(cols).T  # (n, d)
        d = A.shape[1]
        k = (d + 1) + ex
        e = np.empty(n)
        for p in range(n):
            cand = np.array([q for q in range(n) if abs(q - p) > excl])
            db = ((A[cand][:, own_dims] - A[p, own_dims]) ** 2).sum(axis=1)
            lib = np.sort(cand[np.argsort(db, kind="stable")[:nr]])
            dd = ((A[lib] - A[p]) ** 2).sum(axis=1)
            nb = lib[np.argsort(dd, kind="stable")[:k]]
            dist = np.sqrt(((A[nb] - A[p]) ** 2).sum(axis=1))
            w = np.exp(-th * dist / dist.mean())
            M = np.column_stack([np.ones(len(nb)), A[nb] - A[p]])
            sw = np.sqrt(w)
            coef = np.linalg.lstsq(M * sw[:, None], y[nb] * sw, rcond=None)[0]
            e[p] = coef[0] - y[p]
        return e

    def test(e0, e1):  # (p, gain)
        return signed_rank_p(e0, e1)[:2]

    def one_series(i, hood, evaluate=None):
        """Series i's row (P, G, S, K) with the fit hood (extra, near, theta, weight) and its
        chosen terms (None when predicted exactly); with ``evaluate`` (terms): the errors of
        that model instead."""
        excl = theiler(Z[i])
        t = np.arange(max(E[i] - 1, 0, max_lag - 1), T - 1)
        y = Z[i, t + 1]
        coords = {("own", lag): Z[i, t - lag] for lag in range(1, E[i])}
        coords.update({("drv", j, k): hood[3] * Z[j, t + 1 - k] for j in range(N) if j != i
                       for k in range(1, max_lag + 1)})
        row = (np.ones(N), np.full(N, np.nan), np.zeros(N, bool), np.zeros(N, int))

        def record(res):
            best = {}
            for c, (p, g) in res.items():
                if c[0] == "drv" and (c[1] not in best or p < best[c[1]][0]):
                    best[c[1]] = (p, g, c[2])
            for j, (p, g, k) in best.items():
                row[0][j], row[1][j], row[3][j] = p, g, k

        def errs(chosen, extra=None, hood=hood):
            keys = [*chosen, extra] if extra else list(chosen)
            cols = [Z[i, t]] + [coords[c] for c in keys]
            own = [0] + [a + 1 for a, c in enumerate(keys) if c[0] == "own"]
            return loo_errors(cols, y, own, excl, hood)

        if evaluate is not None:
            return errs(evaluate)
        chosen, live = [], list(coords)
        e0 = errs(chosen)
        fin = np.abs(e0[np.isfinite(e0)])
        if len(fin) == 0 or np.median(fin) < 1e-9:  # predicted exactly: not conditioned
            return row, None
        while live and sum(c[0] == "drv" for c in chosen) < max_drivers:
            res = {c: test(e0, errs(chosen, c)) for c in live}
            record(res)
            keep = [c for c in live if res[c][0] <= alpha_drop]
            if not keep:
                break
            best = min(keep, key=lambda c: res[c][0])
            e0 = errs(chosen, best)
            chosen.append(best)
            live = [c for c in keep if c != best]
            drivers = sorted((c for c in live if c[0] == "drv"), key=lambda c: res[c][0])
            top = list(dict.fromkeys(c[1] for c in drivers))  # by their best delay's p
            if max_candidates is not None and len(top) > max_candidates:
                live = [c for c in live if c[0] == "own" or c[1] in top[:max_candidates]]
        while True:  # backward
            js = list(dict.fromkeys(c[1] for c in chosen if c[0] == "drv"))
            if not js:
                break
            res = {}
            for j in js:
                cj = [c for c in chosen if c[0] == "drv" and c[1] == j]
                rest = [o for o in chosen if o not in cj]
                e_rest = errs(rest)
                pj, gj = test(e_rest, errs(rest + cj))
                row[0][j], row[1][j], row[3][j] = pj, gj, cj[0][2]
                res[j] = (pj, e_rest)
            worst = max(res[j][0] for j in js)
            if worst <= alpha_keep:
                break
            j = [j for j in js if res[j][0] == worst][-1]
            chosen = [c for c in chosen if not (c[0] == "drv" and c[1] == j)]
            e0 = res[j][1]
        sel = {c[1] for c in chosen if c[0] == "drv"}
        record({c: test(e0, errs(chosen, c)) for c in coords
                if c[0] == "drv" and c[1] not in sel})
        row[2][list(sel)] = True
        return row, chosen

    hoods = [(extra, near, theta, weight), *alternatives]
    for i in range(N):
        row, chosen = one_series(i, hoods[0])
        if chosen is not None and len(hoods) > 1:
            mae = [np.nanmean(np.abs(one_series(i, (h[0], 100, h[2], h[3]), chosen)))
                   for h in hoods]
            k = int(np.argmin(mae))
            if k > 0:
                row = one_series(i, hoods[k])[0]
        P[i], G[i], S[i], K[i] = row
        P[i, i], G[i, i], S[i, i], K[i, i] = 1.0, np.nan, False, 0
    return P, G, S, K


# ---------------------------------------------------------------- sweeps, nonlinearity, IAAFT
def residual_score(r, z, lags):
    """The screen's score of one pair (xedm.core.screen.residual_scores): the largest over
    the delays k (``lags``: the shifts l = k - 1 into z) of R^2 of the least-squares fit of
    the residual r(t) on 1, z(t - l) and z(t - l)^2, over the times t of ``r``'s index
    (r given on times ts: a dict-free pair (ts, values))."""
    ts, r = r
    best = 0.0
    for lag in lags:
        x = np.array([z[t - lag] for t in ts])
        A = np.stack([np.ones(len(ts)), x, x * x], axis=1)
        coef, *_ = np.linalg.lstsq(A, r, rcond=None)
        res = r - A @ coef
        sst = float(np.sum((r - r.mean()) ** 2))
        best = max(best, 1.0 - float(res @ res) / sst if sst > 0 else 0.0)
    return best


def predict_exclusion_radius(X, y, E, radii, **kw):
    return [simplex(X, y, E, excl=r, **kw)["rho"] for r in radii]


def predict_tau(X, y, E, taus, **kw):
    return [simplex(X, y, E, tau=t, **kw)["rho"] for t in taus]


def skill_grid(X, y, Es, taus, Tps, thetas, **kw):
    """rho (nE, ntau, nTp, ntheta): one S-map per cell."""
    return np.array([[[[smap(X, y, E, theta=th, tau=t, Tp=tp, **kw)["rho"] for th in thetas]
                       for tp in Tps] for t in taus] for E in Es])


def nonlinearity_gain(x, E, thetas, **kw):
    """(max rho - rho(theta=0), mae(theta=0) - min mae) of S-map on the series x."""
    res = [smap(x[None], x, E, theta=th, **kw) for th in thetas]
    rho = np.array([r["rho"] for r in res])
    mae = np.array([r["mae"] for r in res])
    i0 = list(thetas).index(0)
    return rho.max() - rho[i0], mae[i0] - mae.min()


def iaaft_round(s, x):
    """One IAAFT round on s: impose x's Fourier amplitudes (keeping s's phases), then x's
    values by rank (the k-th smallest of the result gets the k-th smallest of x)."""
    F = np.fft.rfft(s)
    A = np.abs(np.fft.rfft(x))
    G = np.array([A[j] * F[j] / abs(F[j]) if abs(F[j]) > 0 else A[j] for j in range(len(F))])
    z = np.fft.irfft(G, n=len(x))
    out = np.empty(len(x))
    for rank, pos in enumerate(np.argsort(z, kind="stable")):
        out[pos] = np.sort(x)[rank]
    return out


# ---------------------------------------------------------------- generators
def sparse_network(start, r, driver, driven, weight, lag, n):
    """datasets.sparse_network's equation, from its docs, over the whole history: ``start``
    (series, h) are the first h states, then for t >= h - 1
    ``x_i[t+1] = (1 - c_i) f_i(x_i[t]) + sum_{j -> i} w_ji f_j(x_j[t + 1 - lag_ji])``,
    ``f_i(x) = r_i x (1 - x)``, ``c_i = sum_j w_ji``; the edges in the order given."""
    N, h = start.shape
    x = np.zeros((N, max(n, h)))
    x[:, :h] = start

    def f(j, t):
        return r[j] * x[j, t] * (1 - x[j, t])

    for t in range(h - 1, n - 1):
        for i in range(N):
            into = [e for e in range(len(driven)) if driven[e] == i]
            c = 0.0
            for e in into:
                c += weight[e]
            value = (1 - c) * f(i, t)
            for e in into:
                assert driver[e] != i and t + 1 - lag[e] >= 0
                value += weight[e] * f(driver[e], t + 1 - lag[e])
            x[i, t + 1] = value
    return x[:, :n]


# Multiview, generative forecasts, prediction variance, S-map with a regressor.
from naive_forecast import *  # noqa: E402,F401,F403
