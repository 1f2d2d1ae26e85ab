"""Direct causal networks from cross maps: the library's E, a lag scan, and the conditioning
that separates direct links from indirect ones (:func:`xedm.causal_network`).

Arrays: ``X`` (N, T), N finite series on a common time axis.  Every (library i, target j)
statistic is indexed ``[i, j]``: high skill is evidence that **j causes i** (CONVENTIONS.md).

Conditioning (partial cross mapping, after Leng et al. 2020): a candidate link j -> i (its
cross map significant) is kept when the cross-map estimate of j from i's manifold, ``ĵ_i``,
still predicts j once every other screened driver k of i (its cross map significant at
p <= alpha before the FDR step, peaking at Tp <= 0) is accounted for, through the
estimates of j from k's manifold, ``ĵ_k``, and k's own values (each at the pair's lag and
one step either side): the partial correlation ``r(j, ĵ_i | {ĵ_k, k})`` (linear, over the
prediction times) with its one-sided t-test.  If j reaches i only through k (j -> k -> i),
or j and i share a driver k (k -> j, k -> i), i's manifold knows of j little more than k
does, and the partial correlation is small.  The kernels ``cross_estimates`` and
``partial_cross_rows`` compute every estimate and every partial correlation of one library
row and lag at once, from the neighbour tables of :class:`Tables`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from ..neighbors.base import knn_tables
from . import ccm as _ccm
from .cross_maps import CrossRows, lag_summary, library_E_xmap  # noqa: F401
from .embed import take_times, windows_finite
from .pairs import all_pairs, of_transpose, transposed
from .skill import unit_rows

D_MIN = 1e-6  # as the simplex weights: exp(-d / max(d_1, D_MIN))


class Tables:
    """Every library series' simplex neighbours (its own E), for cross-map estimates at any
    lag in ``lags``: ``idx`` (N, P, k) library times, ``w`` (N, P, k) normalised simplex
    weights, ``t`` (P,) the prediction times (complete windows at the largest E whose t + lag
    lies inside the data at every lag).  Library points: complete windows whose t + lag lies
    inside the data at every lag; the prediction time itself and ``excl`` around it are
    excluded.  With ``knn=None`` k = E + 1 and the entries past a series' k get weight 0."""

    def __init__(self, X, E, *, tau, knn, excl, lags, backend, method="exact"):
        X = np.asarray(X, np.float64)
        N, T = X.shape
        E = np.asarray(E, np.int64)
        lags = np.asarray(lags, np.int64)
        t = np.arange(T)
        lib_mask = np.ones(T, bool)
        for lag in lags.tolist():
            lib_mask &= (t + lag >= 0) & (t + lag < T)
        fin = np.isfinite(X)
        E_top = int(E.max())
        span = (E_top - 1) * tau
        pred_t = t[(t >= span) & lib_mask].astype(np.int64)
        ks = E + 1 if knn is None else np.full(N, int(knn), np.int64)
        kmax = int(ks.max())
        self.idx = np.zeros((N, len(pred_t), kmax), np.int64)
        self.w = np.zeros((N, len(pred_t), kmax))
        for e in np.unique(E).tolist():
            libs = np.flatnonzero(E == e)
            prep = _ccm._point_sets(X, fin, libs, [e], tau, lib_mask, pred_t)
            k = int(ks[libs[0]])
            idx, dist = knn_tables(prep, [k], excl, backend=backend, method=method)
            idx, dist = np.asarray(idx[0][..., :k]), np.asarray(dist[0][..., :k])
            ok = idx >= 0
            dmin = np.maximum(np.where(ok[..., :1], dist[..., :1], D_MIN), D_MIN)
            w = np.where(ok, np.exp(-np.where(ok, dist, 0.0) / dmin), 0.0)
            w /= np.maximum(w.sum(axis=-1, keepdims=True), 1e-300)
            self.idx[libs, :, :k] = np.where(ok, idx, 0)
            self.w[libs, :, :k] = w
        self.t = pred_t
        self.ok = take_times(windows_finite(fin, [E_top], tau)[0], pred_t).all(axis=0)

    def estimates(self, X, libs, targets, lags, cols=None) -> np.ndarray:
        """Cross-map estimates (len(libs), len(targets), len(lags), len(cols)) of
        ``X[targets]`` at t + lag from each library's manifold, at the prediction rows
        ``cols`` (default all): the ``cross_estimates`` kernel."""
        cols = np.arange(len(self.t)) if cols is None else np.asarray(cols, np.int64)
        Y = np.ascontiguousarray(np.asarray(X, np.float64)[np.atleast_1d(targets)])
        return get_kernel("cross_estimates", "cpu")(
            self.w, self.idx, Y, np.atleast_1d(np.asarray(libs, np.int64)),
            np.asarray(lags, np.int64), cols)

    def estimate(self, X, lib, targets, lag: int) -> np.ndarray:
        """Cross-map estimates (len(targets), P) of ``X[targets]`` at t + lag from library
        ``lib``'s manifold."""
        return self.estimates(X, [lib], targets, [lag])[0, :, 0]


def partial_corr_p(r, n: int, m):
    """One-sided p-value of partial correlations ``r`` of n points given m regressors
    (Student t with n - 2 - m degrees of freedom): is it above 0?  NaN where r is NaN or
    no degree of freedom is left."""
    from scipy.special import stdtr

    r = np.clip(np.asarray(r, np.float64), -1 + 1e-15, 1 - 1e-15)
    df = (n - 2 - np.asarray(m)).astype(np.float64)
    good = np.isfinite(r) & (df >= 1)
    df = np.where(good, df, 1.0)
    p = stdtr(df, -r * np.sqrt(df / (1.0 - r * r)))
    return np.where(good, p, np.nan)


SHIFTS = (-1, 0, 1)  # the conditioning terms are taken at the pair's lag and one step around


def conditional_tests(X, tables: Tables, candidate, lag, pool=None):
    """The conditional statistic of every candidate link (partial cross mapping).

    For (i, j) with ``candidate[i, j]`` and its lag L = ``lag[i, j]``: the partial correlation
    of y = j(t + L) with its cross-map estimate from i's manifold, given, for every other
    screened driver k of i (``pool[i, k]`` or ``candidate[i, k]``, k not i or j), the
    estimates of j(t + L + s) from k's manifold and the values k(t + L + s), s in
    :data:`SHIFTS` (six terms per k, and an intercept); with its one-sided p-value
    (:func:`partial_corr_p`, the degrees of freedom counted from the rank of the terms).
    ``pool`` (N, N) bool defaults to ``candidate``.  ``tables`` must cover every lag L + s.
    Returns ``r``, ``p`` (N, N) (NaN off the candidates) and ``n_conditions`` (N, N), the
    number of k.
    """
    X = np.asarray(X, np.float64)
    N = X.shape[0]
    candidate = np.asarray(candidate, bool)
    pool = candidate if pool is None else np.asarray(pool, bool) | candidate
    r = np.full((N, N), np.nan)
    p = np.full((N, N), np.nan)
    m = np.zeros((N, N), np.int64)
    ok, t = tables.ok, tables.t
    tt = t[ok]
    cols = np.flatnonzero(ok)
    n = len(tt)
    s0 = SHIFTS.index(0)
    for i in np.flatnonzero(candidate.any(axis=1)).tolist():
        drivers = np.flatnonzero(candidate[i])
        cond = np.flatnonzero(pool[i])
        cond = cond[cond != i]
        libs = np.concatenate([[i], cond])
        for L in np.unique(lag[i, drivers]).tolist():
            js = drivers[lag[i, drivers] == L]
            shifted = np.array([L + s for s in SHIFTS], np.int64)
            # centred unit rows: estimates (libs, js, shifts, n), values (cond, shifts, n)
            est = unit_rows(tables.estimates(X, libs, js, shifted, cols))
            vals = unit_rows(X[cond][:, tt[None, :] + shifted[:, None]])
            ys = unit_rows(X[js][:, tt + L])
            rr, rank = get_kernel("partial_cross_rows", "cpu")(ys, est, vals, cond, js, s0)
            r[i, js] = rr
            m[i, js] = len(cond) - np.isin(js, cond)
            p[i, js] = partial_corr_p(rr, n, rank)
    return r, p, m


def synchrony(best, significant, tpos):
    """Pairs significant both ways whose skill peaks at Tp > 0 both ways (Ye et al. 2015:
    synchrony or strong common forcing, not a driver's signature); (N, m) on a pair table,
    ``tpos`` its :func:`xedm.core.pairs.transposed`."""
    late = (best > 0) & significant
    return late & of_transpose(late, tpos, False)


#: the fewest effective prediction points (points / (1 + decorrelation time)) per coordinate
#: of a series' model (its value, its own lags and one driver) for a decision about a pair
MIN_POINTS_PER_DIM = 20
#: why a pair is undetermined (``undetermined_reason``)
REASONS = {1: "constant series", 2: "too few independent points for the embedding",
           3: "synchrony both ways: cannot be oriented",
           4: "not significant, but a gain that counts is within the confidence bound",
           5: "predicted exactly by its own past: nothing left for a driver to explain"}
#: the smallest gain that counts (a driver that removes 5 % of the mean absolute error of
#: the one-step prediction): a pair is ``no link`` only when the gain's upper confidence
#: bound lies below it
MIN_GAIN = 0.05


def effective_points(X, E, max_lag=1) -> np.ndarray:
    """Per series: its prediction points (T - 1 - max(E - 1, max_lag - 1)) over 1 + its
    decorrelation time (:func:`xedm.core.predictive.decorrelation_time`): the points that
    carry independent evidence."""
    from .predictive import decorrelation_time

    X = np.asarray(X, np.float64)
    E = np.asarray(E, np.int64)
    points = X.shape[1] - 1 - np.maximum(np.maximum(E - 1, 0), max_lag - 1)
    dec = np.array([decorrelation_time(x) for x in X])
    return points / (1.0 + dec)


def series_flags(X, E, *, max_lag=1, n_drivers=None, exact=None) -> dict:
    """The per-series facts the undetermined rules read (:func:`pair_reasons`):
    ``constant`` (N,) bool, ``effective_points`` (N,) (:func:`effective_points`),
    ``points_needed`` (N,): MIN_POINTS_PER_DIM per coordinate of the series' model as a
    library (E + 1 + its ``n_drivers`` selected drivers: its value, own lags, drivers and
    the candidate), ``exact`` (N,) bool: its own past predicts it exactly."""
    X = np.asarray(X, np.float64)
    N = len(X)
    E = np.asarray(E, np.int64)
    dims = E + 1 + (0 if n_drivers is None else np.asarray(n_drivers, np.int64))
    return {"constant": np.ptp(X, axis=1) == 0,
            "effective_points": effective_points(X, E, max_lag),
            "points_needed": (MIN_POINTS_PER_DIM * dims).astype(np.float64),
            "exact": np.zeros(N, bool) if exact is None else np.asarray(exact, bool)}


def pair_reasons(flags, pairs, link, unoriented, gain_hi=None) -> np.ndarray:
    """(N, m) int8: why each pair of the table ``pairs`` (:mod:`xedm.core.pairs`) is
    undetermined (0: decided; :data:`REASONS`), among those not linked: a constant series
    at either end (1); either series with fewer effective points than the library's model
    needs (2); a synchronous pair whose direction cannot be told (``unoriented``, 3); a pair
    whose gain's upper confidence bound ``gain_hi`` reaches MIN_GAIN (the test could not
    rule out a gain that counts; pairs without a test, NaN, are decided by the screen, 4);
    the drivers of a series its own past predicts exactly (5).  Precedence: 3, 1, 2, 5, 4."""
    from .pairs import outside_reasons

    N = len(pairs)
    rows = np.broadcast_to(np.arange(N)[:, None], pairs.shape)
    cols = np.maximum(pairs, 0)
    reason = outside_reasons(flags, rows.ravel(), cols.ravel()).reshape(pairs.shape)
    if gain_hi is not None:
        counts = np.nan_to_num(np.asarray(gain_hi, np.float64), nan=-1.0) >= MIN_GAIN
        reason[(reason == 0) & counts] = 4
    reason[np.asarray(unoriented, bool)] = 3
    reason[np.asarray(link, bool) | (pairs == rows) | (pairs < 0)] = 0
    return reason


def large_network(N: int, conditioning: str, E_from: str) -> tuple[bool, bool]:
    """(screened, candidates_only) of :func:`network` on N series: whether the predictive
    conditioning tests SCREEN candidates per series (more than MAX_CANDIDATES others), and
    whether only those pairs, the ones that can become links, are cross-mapped against
    surrogates (after it; with the library's E, as :func:`xedm.core.pair_null.pair_null`
    embeds them).  The work policy counts the same."""
    from .predictive import MAX_CANDIDATES

    screened = conditioning == "predictive" and N - 1 > MAX_CANDIDATES
    return screened, screened and E_from == "library"


def network(X, *, E, E_max, E_from, tau, lags, knn, excl, S, p_method, alpha, min_partial,
            backend, method="exact", conditioning="predictive", max_lag=1,
            dense_cross=True, progress: Callable = iter) -> dict:
    """The whole pipeline of :func:`xedm.causal_network` on finite X (N, T).

    1. E per series: given, or the best leave-one-out simplex E in 1..E_max
       (:func:`xedm.core.ccm.choose_E`).
    2. The cross map of every pair at every lag of ``lags`` (the library's E when
       ``E_from="library"``, the target's with ``"target"``); the surrogates ``S`` (N, n, T)
       of each target at the driver lags (Tp <= 0) only (``S`` may be a future: its
       ``result()`` is taken after the E choice and the positive lags' cross map).
    3. Per pair: ``best_Tp`` (all lags), the driver lag (best Tp <= 0) and its rho; its
       p-value (``p_method``) times the number of driver lags (Bonferroni over the scan,
       capped at 1); q: Benjamini-Hochberg over the off-diagonal pairs.
    4. Candidates: q <= alpha and best_Tp <= 0 (the lag signature).
    5. Conditioning, ``conditioning="predictive"``
       (:func:`xedm.core.predictive.predictive_tests`): per series i, forward selection and
       backward elimination, among every other series, of those whose values improve the
       leave-one-out prediction of i(t + 1) (a noisy series again with a wider fit);
       ``gain_q``: Benjamini-Hochberg over the selected pairs; link: selected, gain_q <=
       alpha and not synchrony.  ``"partial"`` (:func:`conditional_tests`): every candidate
       on i's other screened drivers (p <= alpha before BH, best_Tp <= 0); its q:
       Benjamini-Hochberg over the candidates; link: candidate, partial q <= alpha and
       partial r >= ``min_partial``.

    Returns a dict on a pair table (:mod:`xedm.core.pairs`): ``pairs`` (N, m), every pair
    (m = N) or, in a large network (:func:`large_network`), each series' candidates; the
    per-pair statistics (N, m) aligned with it (``rho_lag`` (N, m, lags)); per series ``E``,
    ``n_drivers`` (predictive) and ``flags`` (:func:`series_flags`: the rules of the pairs
    not in the table); and ``rho_lag_all`` (N, N, lags), the cross maps of every pair
    (None in a large network with ``dense_cross=False``: there each series' cross maps are
    computed with the screen and kept at its candidates only, :class:`CrossRows`).
    """
    from ..stats.significance import bh_qvalues, surrogate_p_values

    X = np.asarray(X, np.float64)
    N, T = X.shape
    lags = np.asarray(lags, np.int64)
    if E is None:
        E = _ccm.choose_E(X, E_tab=np.arange(1, int(E_max) + 1), tau=tau, knn=knn, excl=excl,
                          backend=backend, progress=progress)
    E = np.asarray(E, np.int64)
    neg, pos = lags[lags <= 0], lags[lags > 0]

    def cross(Tp, S=None):
        kw = dict(tau=tau, Tp=Tp, knn=knn, excl=excl, backend=backend, S=S, method=method,
                  progress=progress)
        if E_from == "library":
            return library_E_xmap(X, E=E, **kw)
        return _ccm.xmap(X, E=E, **kw)

    from .predictive import SCREEN, predictive_tests

    screened, large = large_network(N, conditioning, E_from)
    rho_lag = None
    if not large or dense_cross:  # every pair's cross maps, kept (a dense result)
        rho_lag = np.empty((N, N, len(lags)))  # every lag written below
        if len(pos):  # first: the surrogates may still be drawn (S a future)
            rho_lag[..., lags > 0] = cross(pos)["rho"]
        if not large and hasattr(S, "result"):
            S = S.result()
        r_neg = cross(neg, None if large else S)
        rho_lag[..., lags <= 0] = r_neg["rho"]
    if large:
        # per library (xedm.core.network_rows): the cross maps block by block inside the
        # screen, kept at each series' candidates only; the conditioning on those candidates
        # (xedm.core.screen: 24 by what they explain of the series' own-model residual, 8 by
        # the cross map's skill); the surrogate null of each candidate at its driver lag
        from .network_rows import large_rows

        raw = large_rows(X, np.arange(N), E=E, lags=lags, S=S, tau=tau, knn=knn, excl=excl,
                         backend=backend, method=method, max_lag=max_lag, full=rho_lag,
                         progress=progress)
        out = finish_rows(X, raw, E=E, lags=lags, alpha=alpha, p_method=p_method,
                          max_lag=max_lag)
        out["rho_lag_all"] = rho_lag
        return out
    # a small network: the table of every pair, its statistics the (N, N) arrays themselves
    pairs = all_pairs(N)
    best, at = lag_summary(rho_lag, lags)
    pick = at[..., None]  # the driver lags lead the sorted lags: at indexes r_neg's too

    def at_pick(a):
        return np.take_along_axis(a, pick, -1)[..., 0]

    rho = at_pick(rho_lag)
    p_at = surrogate_p_values(*(at_pick(r_neg[k]) for k in
                                ("rho", "count_ge", "n_null", "z_mean", "z_sd")), p_method)
    out = _cross_decisions(pairs, rho_lag, best, at, rho, p_at, lags, alpha)
    out.update(E=E, rho_lag_all=rho_lag)
    if conditioning == "predictive":
        # candidate drivers: every other series (a screen on the cross map's p_value drops
        # weak true drivers, whose indirect proxies are then selected in their place); with
        # the target's E past 128 others, SCREEN per series
        tests = predictive_tests(X, E, excl=excl, backend=backend,
                                 screen=SCREEN if screened else None, rho=rho,
                                 max_lag=max_lag, progress=progress)
        return _predictive_decisions(out, X, E, tests, alpha=alpha, max_lag=max_lag)
    off, candidate = out.pop("off"), out["candidate"]
    out.pop("tpos")
    around = np.unique(np.concatenate([lags + s for s in SHIFTS]))
    tables = Tables(X, E, tau=tau, knn=knn, excl=excl, lags=around, backend=backend,
                    method=method)
    # the conditioning pool: a looser screen
    screened = off & (out["p_value"] <= alpha) & (best <= 0)
    pr, pp, n_cond = conditional_tests(X, tables, candidate, lags[at], pool=screened)
    pq = bh_qvalues(pp, candidate)
    out.update(partial_rho=pr, partial_p=pp, partial_q=pq, n_conditions=n_cond,
               link=candidate & (pq <= alpha) & (pr >= min_partial))
    flags = series_flags(X, E, max_lag=max_lag)
    reason = pair_reasons(flags, pairs, out["link"], np.zeros_like(out["synchrony"]))
    out.update(flags=flags, undetermined_reason=reason, undetermined=reason > 0)
    return out


def _cross_decisions(pairs, rl, best, at, rho, p_at, lags, alpha) -> dict:
    """The cross maps' decisions on a pair table: p (Bonferroni over the driver lags), q
    (Benjamini-Hochberg over the off-diagonal pairs of the table), the candidates and the
    synchrony pairs; with ``off`` and ``tpos`` (:func:`xedm.core.pairs.transposed`) for the
    conditioning's decisions."""
    from ..stats.significance import bh_qvalues

    N = len(pairs)
    lags = np.asarray(lags, np.int64)
    valid = pairs >= 0
    off = valid & (pairs != np.arange(N)[:, None])
    p = np.where(valid, np.minimum(p_at * int((lags <= 0).sum()), 1.0), np.nan)
    q = bh_qvalues(p, off)
    significant = off & (q <= alpha)
    tpos = transposed(pairs)
    return {"pairs": pairs, "rho": rho, "p_value": p, "q_value": q, "rho_lag": rl,
            "best_Tp": best, "driver_Tp": np.where(valid, lags[at], 0),
            "candidate": significant & (best <= 0),
            "synchrony": synchrony(best, significant, tpos), "off": off, "tpos": tpos}


def _predictive_decisions(out, X, E, tests, *, alpha, max_lag) -> dict:
    """The predictive conditioning's decisions on the pair table of ``out``
    (:func:`_cross_decisions`): gain_q (Benjamini-Hochberg over the selected pairs), link,
    and the undetermined pairs."""
    from ..stats.significance import bh_qvalues

    off, tpos, sync, pairs = out.pop("off"), out.pop("tpos"), out["synchrony"], out["pairs"]
    gp, gain, chosen, n_drivers, dl, ghi, exact = tests
    gq = bh_qvalues(gp, chosen)
    passed = chosen & (gq <= alpha) & (gain > 0)
    # a synchronous pair keeps the direction the predictive test gives it; passed both
    # ways, it cannot be oriented
    unoriented = sync & passed & of_transpose(passed, tpos, False)
    out.update(gain=gain, gain_hi=ghi, gain_p=np.where(off, gp, np.nan), gain_q=gq,
               selected=chosen, n_drivers=n_drivers,
               n_conditions=np.where(off, n_drivers[:, None] - chosen, 0), lag=dl,
               link=passed & ~unoriented)
    flags = series_flags(X, E, max_lag=max_lag, n_drivers=n_drivers, exact=exact)
    reason = pair_reasons(flags, pairs, out["link"], unoriented, ghi)
    out.update(flags=flags, undetermined_reason=reason, undetermined=reason > 0)
    return out


def finish_rows(X, raw, *, E, lags, alpha, p_method, max_lag) -> dict:
    """The steps of a large network that read every pair at once, on the per-library values
    of every library (:func:`xedm.core.network_rows.large_rows`, blocks joined by
    ``concat_rows``): p and q, the candidates, synchrony, the conditioning's decisions and
    the undetermined pairs.  The outputs of :func:`network` but ``rho_lag_all``."""
    from ..stats.significance import surrogate_p_values

    E = np.asarray(E, np.int64)
    p_at = surrogate_p_values(raw["rho"], *(raw[k] for k in ("count_ge", "n_null", "z_mean",
                                                                "z_sd")), p_method)
    out = _cross_decisions(raw["pairs"], raw["rho_lag"], raw["best"], raw["at"], raw["rho"],
                           p_at, lags, alpha)
    out["E"] = E
    tests = tuple(raw[k] for k in ("gain_p", "gain", "selected", "n_drivers", "lag",
                                   "gain_hi", "exact"))
    return _predictive_decisions(out, X, E, tests, alpha=alpha, max_lag=max_lag)
