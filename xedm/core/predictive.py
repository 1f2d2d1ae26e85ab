"""Predictive conditioning of :func:`xedm.causal_network`: which series improve the
out-of-sample prediction of a series, given its other drivers.

Arrays: ``X`` (N, T), N finite series on a common time axis; statistics ``[i, j]`` are about
j -> i (library i, target j: the orientation of xmap).

For each series i, the one-step prediction of z_i(t + 1) (z: each series centred and scaled
to unit variance) from a multivariate embedding: i's value z_i(t), i's own lags
z_i(t - l) (l < E_i, entered like candidates), and the values z_j(t) of the selected drivers
j, each scaled by ``weight`` in the distance (a driver adds a small correction to i's own
dynamics: neighbourhoods stay narrow along i's state and wide along a driver's, while the
local linear fit sees every coordinate at full weight).  Predictions are leave-one-out local
linear (S-map on the nearest neighbours: :mod:`xedm.kernels.predict.cpu_conditional`).
Selection (after the PC step of PCMCI, with a nonparametric regression): forward, each round
adds the candidate whose addition lowers the absolute errors most significantly (one-sided
Wilcoxon signed-rank test of |e_without| - |e_with| over the prediction times, its variance
inflated by the lag-1 autocorrelation of the signed ranks) and drops the candidates with p >
``alpha_drop``; it stops when none is left, after ``max_drivers`` drivers, or when no
candidate has p <= ``alpha_drop``.  A selected driver's other delays stay candidates (under
observation noise a second delay denoises the driver's state, which its own drivers would
otherwise stand in for: indirect links).  Then backward elimination: each selected driver
(all its delays together) is retested given the other terms (its ``p``: the same test), and
the one with the largest p above ``alpha_keep`` leaves, until none is left above it.  A
non-selected pair keeps the p of its test added to the final model.  Each series' final
model is then evaluated with wider fits (:data:`ALTERNATIVES`: more neighbours, drivers at
full weight in the distance); a series that predicts better with one (a noisy or
stochastic series) is selected again with it.  Each series' predictions leave out the
points within its decorrelation time (a Theiler window: :func:`decorrelation_time`), at
least ``exclusion_radius``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import get_kernel
from .pairs import Table, all_pairs, pool_pairs, scatter

#: backward elimination: a selected driver whose retest p exceeds this leaves.  Loose, so
#: that the Benjamini-Hochberg step over the selected pairs still has a family to control
#: (at 0.05 every survivor passed it: red noise got 2 % of its pairs linked); with the
#: wider fits and the drivers' second delays: Lorenz-96 N = 20 F1 0.82 -> 0.92, 30 % noise
#: 0.43 -> 0.78, ms50_300 0.83 -> 0.87
ALPHA_KEEP = 0.3
#: defaults of the conditioning, recorded in causal_network's attrs
DEFAULTS = {"weight": 0.1, "exclusion": "max(exclusion_radius, decorrelation time)",
            "neighbors": "(d + 1) + 10 of the 40 nearest in i's own state (value, own lags)",
            "theta": 1.0, "alpha_drop": 0.7, "alpha_keep": ALPHA_KEEP, "max_drivers": 8,
            "alternatives": "a series whose final model errs less (mean absolute "
                            "leave-one-out error) with (d + 1) + 30 of the 100 nearest "
                            "(theta 1) or (d + 1) + 80 (theta 3; drivers at weight 0.1 or 1) "
                            "is selected again with that fit",
            "delays": "each driver at delays 1..max_lag; a selected delay's others stay",
            "candidates": "every series; with more than 128 others, 32: the 8 whose cross map "
                          "from the series' manifold has the highest skill (rho) and the "
                          "24 others whose value and its square at delays 1..max_lag best "
                          "explain the series' own-model residual (xedm.core.screen); "
                          "surrogates for those pairs only",
            "max_candidates": 128, "screen": 32}


def standardize(X) -> np.ndarray:
    """Each row centred and scaled to unit variance (a constant row becomes 0)."""
    X = np.asarray(X, np.float64)
    sd = X.std(axis=1, keepdims=True)
    return (X - X.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0)


#: the neighbourhood (extra, width) of the local linear fits: in d coordinates they take
#: (d + 1) + extra neighbours among the ``width`` nearest in the series' own state.  Wider
#: ones average observation noise (recall at 20 % noise 0.54 -> 0.71 with (30, 60)) but
#: cost 1.5-3x the time, put the delay one step off on more links of deterministic maps
#: (right on 0.94 -> 0.74 of the delayed benchmark's links) and linked 8.9 % of the pairs
#: under shared seasonal forcing (3.3 % here); measured on benchmarks/_network_cases.py.
NEIGHBORHOOD = (10, 40)


def n_neighbors(d: int, extra: int = 10) -> int:
    """Neighbours of the local linear fit in d coordinates: the intercept and d slopes, and
    ``extra`` residual degrees of freedom."""
    return (d + 1) + extra


def decorrelation_time(x) -> int:
    """The first lag l >= 1 at which the autocorrelation of x falls below 1/e, minus one
    (0 for a map whose successive values are nearly uncorrelated; a few steps for a finely
    sampled flow), at most len(x) // 10."""
    x = np.asarray(x, np.float64) - np.mean(x)
    v = float(x @ x)
    if v <= 0:
        return 0
    for lag in range(1, max(len(x) // 10, 1) + 1):
        if float(x[:-lag] @ x[lag:]) / v < np.exp(-1.0):
            return lag - 1
    return max(len(x) // 10, 1)


def prepare(X) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`predictive_tests` computes from every series before any model: the
    standardised series (:func:`standardize`) and each one's :func:`decorrelation_time`
    (its Theiler window).  Computed once and passed as ``prepared`` where the tests run
    again on the same series (the wider fits' second selection, each block of a batch
    job): at N = 100,000, L = 1,450 23 s of the host's each time (2-core VM, slowly
    decorrelating series)."""
    Z = standardize(X)
    return Z, np.array([decorrelation_time(z) for z in Z], np.int64)


#: the one-sided 95 % normal quantile of the gain's upper bound (``gain_hi``)
BOUND_Z = 1.6448536269514722


def _p_gain(S, V, r1, ab0, ab1, dd, c):
    """(p, gain, gain_hi) of :func:`improvement_p` from the kernel's sums (``rank_stats``)."""
    from scipy.special import ndtr

    r1 = np.clip(r1, 0.0, 0.99)
    infl = (1 + r1) / (1 - r1)
    var = V * infl
    z = S / np.sqrt(np.where(var > 0, var, 1.0))
    p = np.where(var > 0, ndtr(-z), 1.0)
    cc = np.maximum(c, 1)
    mae0, mae1 = ab0 / cc, ab1 / cc
    top = np.maximum(mae0, mae1)
    top = np.where(top > 0, top, 1.0)  # both errors 0: every d is 0, so gain = gain_hi = 0
    mean = mae0 - mae1  # the mean of d = |e0| - |e1|
    sd = np.sqrt(np.maximum(dd / cc - mean * mean, 0.0) * infl / cc)
    gain = mean / top
    hi = np.minimum((mean + BOUND_Z * sd) / top, 1.0)
    # no time where both models predict (a candidate singular everywhere, e.g. a constant
    # series): nothing measured, not a reduction of the error to 0
    return p, np.where(c > 0, gain, np.nan), np.where(c > 0, hi, np.nan)


def improvement_p(e0, e1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided p-values that the errors ``e1`` (m, n) are smaller in absolute value than
    ``e0`` (n,) (Wilcoxon signed-rank over the n times, normal approximation, variance
    inflated by (1 + r1) / (1 - r1), r1 the lag-1 autocorrelation of the signed ranks clipped
    to [0, 0.99]; ties ranked by position), the gain: the relative change of the mean
    absolute error over the times where both errors are finite (NaN where there is none),
    and the gain's upper bound.  NaN errors count as no improvement (p = 1).  The gain is
    the statistic the test ranks, bounded: (mae0 - mae1) / max(mae0, mae1), in [-1, 1]: the
    share of the error removed where positive (1 - mae1 / mae0), minus the share of the new
    error that was added where negative (a model that fails badly gives -1, never -31,000).
    ``gain_hi``: the one-sided 95 % upper confidence bound of the gain (the mean of
    d = |e0| - |e1| plus BOUND_Z standard errors, its variance inflated as the test's, over
    max(mae0, mae1)): below the smallest gain that counts, the data rule a link out."""
    e0 = np.ascontiguousarray(np.asarray(e0, np.float64)[None, :])
    e1 = np.ascontiguousarray(np.atleast_2d(np.asarray(e1, np.float64)))
    m, n = e1.shape
    sums = get_kernel("rank_stats", "cpu")(e1, np.arange(m), e0, np.zeros(m, np.int64),
                                           np.full(m, n, np.int64))
    return _p_gain(*sums)


class _Batch:
    """Model groups of one launch (``xedm.kernels.predict.cpu_conditional``'s layout), built
    series by series: ``add`` returns the group's first output row."""

    def __init__(self, extra: int):
        self.extra = extra
        self.ser, self.base, self.mask, self.k, self.cand = [], [], [], [], []
        self.bcodes, self.ccodes = [], []
        self.nb = self.nc = self.rows = 0

    def add(self, i, base, cands, mask) -> int:
        """Group (series i, base codes, candidate codes (an array: one row each; empty: the
        base model), own-lag mask of its pool)."""
        m = len(cands)
        self.bcodes.append(base)
        self.ccodes.append(cands)
        self.ser.append(i)
        self.base.append((self.nb, self.nb + len(base)))
        self.cand.append((self.nc, self.nc + m))
        self.nb += len(base)
        self.nc += m
        self.mask.append(mask)
        self.k.append(n_neighbors(len(base) + (1 if m else 0), self.extra))
        first = self.rows
        self.rows += max(m, 1)
        return first

    def run(self, st, weight, theta):
        if not self.ser:
            return None
        pool = st.pools(self.ser, self.mask)
        bc = np.concatenate([np.asarray(b, np.int64) for b in self.bcodes])
        cc = (np.concatenate([np.asarray(c, np.int64) for c in self.ccodes]) if self.nc
              else np.zeros(0, np.int64))
        return st.errors(self.ser, np.array(self.base, np.int64).reshape(-1, 2), bc, pool,
                         self.k, np.array(self.cand, np.int64).reshape(-1, 2), cc, weight,
                         theta)


#: a series whose own one-step model errs by less than this (the median absolute error, in
#: units of its standard deviation) is predicted to rounding: a periodic orbit of a map, a
#: fixed point (on such a series CPU and GPU selections differed on rounding alone)
EXACT = 1e-9
#: error rows of one launch, in bytes (the first round holds N (N - 1) models)
BATCH_BYTES = {"cpu": 2**28, "gpu": 2**30}
#: drivers in play: at most MAX_CANDIDATES per series after each round (those with the
#: smallest p)
MAX_CANDIDATES = 128
#: in a network where a series has more than MAX_CANDIDATES others (N >= 130), the candidate
#: drivers per series (:func:`xedm.core.screen.candidates`): at N = 1,000 every round would
#: otherwise test hundreds of drivers per series.  32 against 128 (both screened) at
#: N = 1,000 on an H100: recall 0.877 against 0.951 on sparse_network, precision 0.74
#: against 0.64 at 30 % observation noise, 0.87 against 0.79 on a stochastic network, in
#: 0.35-0.67 of the time.  Below, every series is a candidate: at N = 100 with about five
#: drivers per series (ms100_500) 32 candidates cost F1 0.83 -> 0.65 (true drivers left
#: out, indirect proxies selected in their place)
SCREEN = 32
#: the wider fits (extra, width, theta, weight) a noisy series' final model may choose
#: (:func:`predictive_tests`' ``alternatives``): under observation noise the (d + 1) + 10
#: nearest give a fit too noisy to show a driver (its tests p 0.8-1.0), and a fixed wide one
#: costs precision on deterministic maps (ms50_300 F1 0.81, 10 % noise P 0.74).  Chosen per
#: series by the final model's error: wide on every noisy coupled map, on no clean one
#: (there the wide fits err 1.5-2x more).  The drivers at weight 1 let the fit follow an
#: effect that is not monotone (the stochastic benchmark's bumps: F1 0.77 -> 0.80-0.85)
ALTERNATIVES = ((30, 100, 1.0, 0.1), (80, 100, 3.0, 0.1), (80, 100, 3.0, 1.0))
#: largest E: own lags 1..63, each a bit of the pools' int64 own-lag mask
MAX_E = 64


def _record(p, gain, hi, lag, rows, codes, pc, gc, hc, T, table):
    """Per pair (rows[m], driver codes[m] // T): the p, gain, gain_hi and lag (k = l + 1
    steps) of its best lag among ``codes`` (the smallest p, ties to the shorter lag), into
    the (N, m) arrays of the pair ``table`` (:class:`xedm.core.pairs.Table`)."""
    j, l = np.divmod(np.asarray(codes, np.int64), T)
    key = np.asarray(rows, np.int64) * table.N + j
    order = np.lexsort((l, pc, key))
    ko = key[order]
    o = order[np.r_[True, ko[1:] != ko[:-1]]] if len(order) else order
    s = table.slot(np.asarray(rows)[o], j[o])
    for a, v in ((p, pc[o]), (gain, gc[o]), (hi, hc[o]), (lag, l[o] + 1)):
        a.reshape(-1)[s] = v


def predictive_tests(X, E, *, weight=0.1, theta=1.0, alpha_drop=0.7, alpha_keep=ALPHA_KEEP,
                     max_drivers=8, excl=0,
                     pool=None, screen=None, rho=None, max_candidates=MAX_CANDIDATES,
                     max_lag=1, info=None, rows=None, pairs=None, tables=False,
                     backend="cpu",
                     neighborhood=NEIGHBORHOOD, alternatives=ALTERNATIVES,
                     prepared=None, progress: Callable = iter):
    """The predictive conditioning of every series (module docstring).

    ``E`` (N,): each series' embedding dimension (its own lags 1..E-1 are candidates);
    ``excl``: the smallest exclusion radius of the leave-one-out predictions (each series
    uses at least its :func:`decorrelation_time`: on a finely sampled flow the points next in
    time would otherwise interpolate the trajectory, and every coordinate would help);
    ``pool`` (N, N) bool: the candidate drivers of each series (default every other series);
    ``screen``: None, or the number of candidates a series with more in its pool keeps,
    chosen after its own model by :func:`xedm.core.screen.candidates` (what they explain
    of its residual, and the cross map's skill ``rho`` (N, N) when given);
    ``info``: a dict that receives ``pairs``, the candidates after the screen as a pair
    table (N, m) (:mod:`xedm.core.pairs`);
    ``pairs``: the candidates as a pair table instead of ``pool``;
    ``tables``: return the per-pair outputs (N, m), aligned with ``info["pairs"]``, instead
    of (N, N) (a large network: no (N, N) array);
    ``rows`` (N,) bool: the series whose drivers are selected (default every series; the
    others' outputs are those of a series without candidates);
    ``max_candidates``: drivers kept in play after each round, each with its delays (those
    whose best delay has the smallest p);
    ``max_lag``: each driver j is a candidate at the delays k = 1..max_lag (its value
    z_j(t + 1 - k) in the prediction of z_i(t + 1)), max_lag candidates; once one is
    selected, j's other delays stay candidates (a round costs max_lag times what it costs
    without delays; keeping only each driver's best delay after the first round lost the
    right delay on 4 links in 10 of the delayed benchmark).  Every series advances one
    round at a time (its models of a round in one batch with the other series':
    ``backend`` "cpu" or "gpu" runs the kernels).
    After the selection, backward elimination: each selected driver (all its delays at once)
    is retested given the other terms, and per series the one with the largest p above
    ``alpha_keep`` leaves, until none is left above it; then each other driver of the pool
    is tested added to the final model at each delay (its p, gain and delay: the best
    delay's; its gain_hi: the largest over the delays): so every
    pair's ``p`` and ``gain`` answer one question, what j adds to i's final model.
    Returns ``p`` (N, N) (1 on the diagonal and for pairs outside the pool), ``gain`` (N, N)
    (:func:`improvement_p`'s, NaN where not tested), ``selected`` (N, N) bool, ``n_drivers``
    (N,) the number of selected drivers of each series and ``lag`` (N, N) the delay k of
    each pair's test (its selected delay, or the best one; 0 where not tested), and
    ``gain_hi`` (N, N): the gain's upper bound (:func:`improvement_p`; NaN where not tested),
    and ``exact`` (N,) bool: the series whose own model's median absolute error is below
    :data:`EXACT` (standardised units), or singular at every point (the states repeat
    exactly): predicted to rounding by their own value, they are not conditioned (p 1,
    gain NaN: nothing is left for a driver to explain).
    ``neighborhood`` (extra, width): the local linear fits in d coordinates take (d + 1) +
    extra neighbours among the ``width`` nearest in the series' own state.
    ``alternatives``: (extra, width, theta, weight) fits for noisy series: the final model
    of each series is evaluated with ``neighborhood`` and each alternative (the mean
    absolute error of its leave-one-out predictions), and a series that predicts better
    with an alternative is selected again with it (:data:`ALTERNATIVES`).
    ``prepared``: :func:`prepare`'s (Z, decorrelation times) of ``X``, when already made.
    """
    E = np.asarray(E, np.int64)
    if E.max(initial=1) > MAX_E:  # a pool's own lags are the bits 0..62 of an int64 mask
        raise ValueError(f"the predictive conditioning takes E up to {MAX_E} (here "
                         f"{int(E.max())}): pass a smaller E or E_max")
    max_lag = int(max_lag)
    prepared = prepare(X) if prepared is None else prepared
    Z, dec = prepared
    N, T = Z.shape
    t0 = np.maximum(np.maximum(E - 1, 0), max_lag - 1)
    n = np.maximum(T - 1 - t0, 0)
    ex = np.maximum(dec, int(excl))  # Theiler windows
    if pairs is not None:
        table = np.asarray(pairs, np.int64)
    elif pool is None:  # every other series; left implicit where the screen replaces it
        # (an (N, N) table is 80 GB at N = 100,000)
        table = None if screen is not None and N - 1 > screen else all_pairs(N)
    else:
        table = pool_pairs(np.asarray(pool, bool) & ~np.eye(N, dtype=bool))
    extra, width = (int(v) for v in neighborhood)
    st = get_kernel("conditional_state", backend)(Z, t0, n, ex, width)
    per_batch = max(BATCH_BYTES.get(backend, 2**28) // (8 * st.nmax), 1)
    chosen = np.full((N, int(max_drivers) + int(E.max(initial=1))), -1, np.int64)
    delays = np.arange(max_lag, dtype=np.int64)

    def codes_of(js):  # driver j at delay l + 1: the code j T + l
        return (np.asarray(js, np.int64)[:, None] * T + delays).ravel()

    # every series' own model first: its errors e0
    active = [i for i in (range(N) if rows is None else np.flatnonzero(rows).tolist())
              if n[i] > 0]
    tested = list(active)
    for part in _parts(active, lambda i: 1, per_batch):
        b = _Batch(extra)
        first = [b.add(i, [-1], [], 0) for i in part]
        st.keep(part, b.run(st, weight, theta), first)
    n_allowed = (np.full(N, N - 1) if table is None else
                 ((table >= 0) & (table != np.arange(N)[:, None])).sum(axis=1))
    if screen is not None and (n_allowed > screen).any():  # a large network
        from .screen import candidates

        table = candidates(st.xp, st.Z, st.e0, t0, max_lag, table, int(screen), rho,
                           rows)
    tab = Table(table)
    if info is not None:
        info["pairs"] = table
    p = np.ones(tab.shape)
    gain = np.full(tab.shape, np.nan)
    hi = np.full(tab.shape, np.nan)
    lag = np.zeros(tab.shape, np.int64)
    selected = np.zeros(tab.shape, bool)
    live = {i: np.concatenate([-np.arange(2, int(E[i]) + 1), codes_of(tab.others(i))])
            for i in active}
    # a series its own value predicts to rounding (a periodic orbit, a fixed point): no
    # driver can reduce an error that is not there, and any test would rank rounding noise
    e0 = st.e0[st.xp.asarray(np.asarray(active, np.int64))]  # the active rows only
    e0 = e0.get() if hasattr(e0, "get") else np.asarray(e0)
    exact = np.zeros(N, bool)
    for a, i in enumerate(active):
        e = np.abs(e0[a, :n[i]])
        e = e[np.isfinite(e)]
        # (no finite error at all: every fit singular, the points repeat exactly)
        exact[i] = n[i] > 0 and (len(e) == 0 or np.median(e) < EXACT)
    active = [i for i in active if len(live[i]) and max_drivers > 0 and not exact[i]]
    tested = [i for i in tested if not exact[i]]
    rounds = iter(progress(range(int(max_drivers) + int(E.max(initial=1)))))
    mask = np.zeros(N, np.int64)  # the own lags chosen, as bits
    n_drv = np.zeros(N, np.int64)
    r = 0  # the round: every active series has r chosen terms
    while active:
        next(rounds, None)
        nxt = []
        for part in _parts(active, lambda i: len(live[i]), per_batch):
            A, codes, seg, st0 = _round(st, part, live, chosen, mask, r, extra, weight,
                                        theta)
            sp = np.asarray(part, np.int64)
            ser = sp[seg]
            pc, gc, hc = _p_gain(*st.stats(A, np.arange(len(seg)), st.e0, ser, n[ser]))
            drv = codes >= 0
            _record(p, gain, hi, lag, ser[drv], codes[drv], pc[drv], gc[drv], hc[drv], T,
                    tab)
            keep = pc <= alpha_drop
            pm = np.where(keep, pc, np.inf)
            low = np.minimum.reduceat(pm, st0)
            first = np.flatnonzero(np.isfinite(low)[seg] & (pm == low[seg]))
            _, at = np.unique(seg[first], return_index=True)
            best = first[at]  # the first best row of each series that keeps one
            keep[best] = False
            # a winning driver's other delays stay candidates: under observation noise its
            # value at a second delay denoises its state, which its own drivers would
            # otherwise stand in for (indirect links)
            # past max_candidates drivers left (each with its delays), the drivers whose best
            # delay has the largest p leave
            kd = keep & drv
            rk = np.flatnonzero(kd)
            pairs = np.unique(seg[rk] * N + codes[rk] // T)
            over = np.bincount(pairs // N, minlength=len(part)) > max_candidates
            for si in np.flatnonzero(over).tolist():
                o = int(st0[si])
                rk_i = o + np.flatnonzero(kd[o:o + len(live[part[si]])])
                rk_i = rk_i[np.argsort(pc[rk_i], kind="stable")]
                js = codes[rk_i] // T
                _, first = np.unique(js, return_index=True)
                top = js[np.sort(first)][:max_candidates]  # drivers by their best p
                keep[rk_i[~np.isin(js, top)]] = False
            won = sp[seg[best]]
            c = codes[best]
            chosen[won, r] = c
            n_drv[won] += c >= 0
            mask[won] |= np.where(c < 0, np.left_shift(1, np.maximum(-c - 2, 0)), 0)
            for si, i in zip(seg[best].tolist(), won.tolist(), strict=True):
                o = int(st0[si])
                live[i] = live[i][keep[o:o + len(live[i])]]
                if len(live[i]) and n_drv[i] < max_drivers:
                    nxt.append(i)
            st.keep(won, A, best)
        active = nxt
        r += 1
    terms = [chosen[i][chosen[i] != -1].tolist() for i in range(N)]
    # backward: each selected driver retested given the other terms; per series the one with
    # the largest p above ``alpha_keep`` leaves (its series' model becomes the one without
    # it) and the rest are retested, until every driver left has p <= alpha_keep.  The last
    # retest of a series is its drivers' p: what each adds to the final model
    todo = [i for i in range(N) if n_drv[i]]
    while todo:
        nxt = []
        for part in _parts(todo, lambda i: 2 * int(n_drv[i]), per_batch):
            ii, cc, pc, A, rb = _retest(st, part, terms, mask, extra, weight, theta, n, p,
                                        gain, hi, lag, T, tab)
            worst = np.full(N, -1.0)
            np.maximum.at(worst, ii, pc)
            for i in part:
                if worst[i] <= alpha_keep:
                    continue
                k = int(np.flatnonzero((ii == i) & (pc == worst[i]))[-1])
                jk = int(cc[k]) // T
                gone = [c for c in terms[i] if c >= 0 and c // T == jk]
                terms[i] = [c for c in terms[i] if c not in gone]
                n_drv[i] -= len(gone)
                st.keep([i], A, [rb[k]])
                if n_drv[i]:
                    nxt.append(i)
        todo = nxt
    chosen[:] = -1
    for i in range(N):
        chosen[i, :len(terms[i])] = terms[i]
        js = [c // T for c in terms[i] if c >= 0]
        selected.reshape(-1)[tab.slot(np.full(len(js), i), js)] = True
    # every other driver of the pool added to the final model (e0: its errors), at each delay
    final = {}
    for i in tested:
        row = tab.pairs[i]
        final[i] = codes_of(row[(row >= 0) & (row != i) & ~selected[i] & (lag[i] > 0)])
    for nt in sorted({len(terms[i]) for i in tested}):
        group = [i for i in tested if len(terms[i]) == nt and len(final[i])]
        for part in _parts(group, lambda i: len(final[i]), per_batch):
            A, codes, seg, _ = _round(st, part, final, chosen, mask, nt, extra, weight, theta)
            ser = np.asarray(part, np.int64)[seg]
            pc, gc, hc = _p_gain(*st.stats(A, np.arange(len(seg)), st.e0, ser, n[ser]))
            _record(p, gain, hi, lag, ser, codes, pc, gc, hc, T, tab)
            # the bound: the largest over the delays (no delay may carry a gain that counts)
            np.fmax.at(hi.reshape(-1), tab.slot(ser, codes // T), hc)
    opts = [(extra, width, theta, weight),
            *((int(a), int(b), float(c), float(d)) for a, b, c, d in alternatives)]
    if len(opts) > 1 and tested:
        mae = _final_mae(Z, t0, n, ex, tested, terms, mask, opts, backend)
        pick = np.zeros(N, np.int64)
        pick[tested] = np.argmin(mae, axis=0)  # ties to the narrower
        for k in range(1, len(opts)):
            w = pick == k
            if not w.any():
                continue
            sub = predictive_tests(X, E, weight=opts[k][3], theta=opts[k][2],
                                   alpha_drop=alpha_drop,
                                   alpha_keep=alpha_keep, max_drivers=max_drivers, excl=excl,
                                   pairs=table, rows=w, tables=True,
                                   max_candidates=max_candidates,
                                   max_lag=max_lag, backend=backend,
                                   neighborhood=opts[k][:2], alternatives=(),
                                   prepared=prepared)
            for a, b in zip((p, gain, selected, None, lag, hi, exact), sub, strict=True):
                if a is not None:
                    a[w] = b[w]
    n_drivers = selected.sum(axis=1)
    if not tables:  # (N, N), 1 / NaN / 0 / False off the table
        p, gain, selected, lag, hi = (scatter(a, table, N, f) for a, f in (
            (p, 1.0), (gain, np.nan), (selected, False), (lag, 0), (hi, np.nan)))
        np.fill_diagonal(p, 1.0)
    return p, gain, selected, n_drivers, lag, hi, exact


def _final_mae(Z, t0, n, ex, tested, terms, mask, opts, backend) -> np.ndarray:
    """(len(opts), len(tested)): the mean absolute leave-one-out error of each tested series'
    final model (its value and chosen terms) with each neighbourhood (extra, width, theta,
    weight), all among the widest's nearest."""
    st = get_kernel("conditional_state", backend)(Z, t0, n, ex, max(o[1] for o in opts))
    out = np.empty((len(opts), len(tested)))
    for k, (extra, _, theta, weight) in enumerate(opts):
        b = _Batch(extra)
        rows = [b.add(i, [-1, *terms[i]], [], int(mask[i])) for i in tested]
        A = b.run(st, weight, theta)
        A = A.get() if hasattr(A, "get") else np.asarray(A)
        out[k] = [np.nanmean(np.abs(A[r, :n[i]])) if np.isfinite(A[r, :n[i]]).any()
                  else np.inf for r, i in zip(rows, tested, strict=True)]
    return out


def _retest(st, part, terms, mask, extra, weight, theta, n, p, gain, hi, lag, T, tab):
    """Each selected driver of the series ``part`` retested given the other terms of its
    series (one launch); its p, gain, gain_hi and lag recorded.  Returns the series and code
    of each test, its p, the errors and the rows of the models without the driver."""
    b = _Batch(extra)
    pairs = []
    for i in part:
        js = list(dict.fromkeys(c // T for c in terms[i] if c >= 0))
        for j in js:  # every delay of j leaves together
            cj = [c for c in terms[i] if c >= 0 and c // T == j]
            rest = [-1, *(o for o in terms[i] if not (o >= 0 and o // T == j))]
            r0 = b.add(i, rest, (), int(mask[i]))
            if len(cj) == 1:
                pairs.append((i, cj[0], b.add(i, rest, (cj[0],), int(mask[i])), r0))
            else:
                pairs.append((i, cj[0], b.add(i, rest + cj, (), int(mask[i])), r0))
    A = b.run(st, weight, theta)
    ii, cc, ra, rb = (np.array(v, np.int64) for v in zip(*pairs, strict=True))
    jj, ll = np.divmod(cc, T)
    pc, gc, hc = _p_gain(*st.stats(A, ra, A, rb, n[ii]))
    s = tab.slot(ii, jj)
    for a, v in ((p, pc), (gain, gc), (hi, hc), (lag, ll + 1)):
        a.reshape(-1)[s] = v
    return ii, cc, pc, A, rb


def _round(st, part, live, chosen, mask, r, extra, weight, theta):
    """One round's models of the series ``part`` (each: its r chosen terms plus one live
    candidate at a time) in one launch: (errors (rows, nmax) on the device, the candidate
    code of each row, its index into part, each series' first row).  Rows follow the
    candidates' order, series by series: an own lag is a group of its own (its pool adds
    that lag), the drivers of a series one group."""
    lens = np.array([len(live[i]) for i in part], np.int64)
    codes = np.concatenate([live[i] for i in part])
    seg = np.repeat(np.arange(len(part)), lens)
    st0 = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    sp = np.asarray(part, np.int64)
    own = codes < 0  # own lags come first in each series' live list
    n_own = np.add.reduceat(own.astype(np.int64), st0)
    orow = np.flatnonzero(own)
    has_d = n_own < lens
    # groups: each own lag, then each series' drivers, ordered by their first row
    g0 = np.concatenate([orow, (st0 + n_own)[has_d]])
    g1 = np.concatenate([orow + 1, (st0 + lens)[has_d]])
    gs = np.concatenate([seg[orow], np.flatnonzero(has_d)])
    gm = np.concatenate([mask[sp[seg[orow]]] | np.left_shift(1, -codes[orow] - 2),
                         mask[sp[has_d]]])
    order = np.argsort(g0, kind="stable")
    g0, g1, gs, gm = g0[order], g1[order], gs[order], gm[order]
    base = np.concatenate([np.full((len(part), 1), -1, np.int64), chosen[sp, :r]], axis=1)
    d0 = r + 1
    gser = sp[gs]
    pool = st.pools(gser, gm)
    A = st.errors(gser, np.stack([gs * d0, gs * d0 + d0], axis=1), base.ravel(), pool,
                  np.full(len(gs), n_neighbors(d0 + 1, extra), np.int64),
                  np.stack([g0, g1], axis=1),
                  codes, weight, theta)
    return A, codes, seg, st0


def _parts(items, size, limit):
    """``items`` in consecutive parts whose ``size`` sums to at most ``limit`` (a larger item
    alone)."""
    part, tot = [], 0
    for it in items:
        s = size(it)
        if part and tot + s > limit:
            yield part
            part, tot = [], 0
        part.append(it)
        tot += s
    if part:
        yield part
