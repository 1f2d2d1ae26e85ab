"""The candidate drivers of a series in a large network (xedm.core.screen)."""

from __future__ import annotations

import naive
import numpy as np
import pytest

import xedm
from xedm.core.pairs import pool_pairs, to_bool
from xedm.core.predictive import predictive_tests, standardize
from xedm.core.screen import candidates, residual_scores

pytestmark = pytest.mark.quick


def _case(N=7, T=60, seed=0):
    rng = np.random.default_rng(seed)
    Z = standardize(rng.standard_normal((N, T)))
    t0 = rng.integers(1, 5, N)
    e0 = rng.standard_normal((N, T))
    e0[2, 10] = np.nan  # a singular point: counts as 0
    return Z, e0, t0


@pytest.mark.parametrize("max_lag", [1, 3])
def test_residual_scores_equal_the_naive_fits(max_lag):
    Z, e0, t0 = _case()
    t0 = np.maximum(t0, max_lag - 1)
    rows = [0, 2, 5]
    got = residual_scores(np, Z, e0, t0, max_lag, rows)
    N, T = Z.shape
    ts = np.arange(t0.max(), T - 1)
    for a, i in enumerate(rows):
        r = -e0[i, ts - t0[i]]
        r = np.where(np.isfinite(r), r, 0.0)
        for j in range(N):
            want = naive.residual_score((ts, r), Z[j], range(max_lag))
            assert got[a, j] == pytest.approx(want, abs=1e-12)


def test_residual_scores_see_a_quadratic_driver_that_a_correlation_misses():
    # r = z_3(t - 1)^2: uncorrelated with z_3 itself (symmetric), explained by the square
    rng = np.random.default_rng(1)
    Z = standardize(rng.standard_normal((5, 400)))
    t0 = np.full(5, 1)
    e0 = 0.1 * rng.standard_normal((5, 400))
    e0[0, :398] -= Z[3, 0:398] ** 2  # e0[0, p] at t = p + 1: the driver at t - 1
    s = residual_scores(np, Z, e0, t0, 2, [0])[0]
    assert s[3] > 0.9 and np.delete(s, 3).max() < 0.1
    assert abs(np.corrcoef(-e0[0, :398], Z[3, :398])[0, 1]) < 0.2  # not a linear link


def test_candidates_keep_m_by_score_and_a_share_by_rho():
    N, m = 12, 4
    Z, e0, t0 = _case(N, 80, 2)
    allowed = ~np.eye(N, dtype=bool)
    allowed[5, :] = False
    allowed[5, [1, 2]] = True  # a row with fewer than m allowed keeps them
    rng = np.random.default_rng(3)
    rho = rng.uniform(-1, 1, (N, N))
    rho[0, 7] = np.nan
    got = to_bool(candidates(np, Z, e0, t0, 1, pool_pairs(allowed), m, rho), N)
    sc = residual_scores(np, Z, e0, t0, 1, np.arange(N))
    assert not (got & ~allowed).any()
    np.testing.assert_array_equal(got[5], allowed[5])
    for i in set(range(N)) - {5}:
        others = [j for j in range(N) if allowed[i, j]]
        by_rho = sorted((j for j in others if np.isfinite(rho[i, j])),
                        key=lambda j: (-rho[i, j], j))[:1]  # round(0.25 * 4)
        rest = sorted((j for j in others if j not in by_rho), key=lambda j: (-sc[i, j], j))
        assert set(np.flatnonzero(got[i])) == set(by_rho + rest[:m - 1])
    only = to_bool(candidates(np, Z, e0, t0, 1, pool_pairs(allowed), m), N)  # scores alone
    for i in set(range(N)) - {5}:
        want = sorted((j for j in range(N) if allowed[i, j]), key=lambda j: (-sc[i, j], j))
        assert set(np.flatnonzero(only[i])) == set(want[:m])


def test_large_network_tests_the_screened_candidates_and_finds_a_hidden_driver():
    # series 0 driven by series 9's square among 24 independent series; with 4 candidates
    # per series the screen must keep 9 for 0, and only screened pairs are tested
    rng = np.random.default_rng(4)
    N, T = 24, 500
    X = rng.standard_normal((N, T))
    X[0, 1:] = 0.3 * X[0, :-1] + (X[9, :-1] ** 2 - 1) + 0.3 * rng.standard_normal(T - 1)
    E = np.ones(N, np.int64)
    p, gain, sel, *_ = predictive_tests(X, E, screen=4, alternatives=())
    tested = np.isfinite(gain)
    assert tested.sum(axis=1).max() <= 4
    assert sel[0, 9] and p[0, 9] < 1e-6
    assert tested[0, 9] and tested.sum() == N * 4


@pytest.mark.parametrize("knn", [None, 5])
def test_pair_null_equals_the_all_pairs_null_on_its_pairs(knn):
    from xedm.core.network import library_E_xmap
    from xedm.core.pair_null import pair_null
    from xedm.stats.surrogates import make_surrogates

    X = xedm.datasets.sparse_network(9, 150, seed=3).x.values
    E = np.array([1, 2, 3, 2, 1, 3, 2, 2, 1])
    S, _ = make_surrogates(X, "ebisuzaki", 7, 0)
    Tp = [-2, -1, 0]
    kw = dict(tau=1, Tp=Tp, knn=knn, excl=1, backend="cpu")
    full = library_E_xmap(X, E=E, S=S, **kw)
    rng = np.random.default_rng(0)
    pool = rng.random((9, 9)) < 0.4
    np.fill_diagonal(pool, False)
    pool[4] = False  # a library without candidates
    got = pair_null(X, S, E, pool, full["rho"], **kw)
    for name in ("count_ge", "n_null"):
        np.testing.assert_array_equal(got[name][pool], full[name][pool])
        assert (got[name][~pool] == 0).all()
    for name in ("z_mean", "z_sd"):
        np.testing.assert_allclose(got[name][pool], full[name][pool], rtol=1e-12, atol=0)
        assert np.isnan(got[name][~pool]).all()
    assert (got["n_null"][pool] == 7).all()


def test_large_network_draws_nulls_for_the_candidates_only(monkeypatch):
    # past MAX_CANDIDATES others per series: p_value on the screened pairs alone (the rest
    # NaN), q_value Benjamini-Hochberg over them, links among them, and each p equal to the
    # all-pairs null's at the pair's driver lag
    import xedm.core.predictive as pr
    from xedm.stats.significance import bh_qvalues

    X = xedm.datasets.sparse_network(12, 300, seed=1).x
    full = xedm.causal_network(X, seed=0, progress=False)
    monkeypatch.setattr(pr, "MAX_CANDIDATES", 4)
    monkeypatch.setattr(pr, "SCREEN", 4)
    net = xedm.causal_network(X, seed=0, progress=False)
    p = net.p_value.values
    tested = np.isfinite(p)
    assert (tested.sum(axis=1) == 4).all()
    np.testing.assert_array_equal(np.isfinite(net.gain.values), tested)  # the same pool
    np.testing.assert_allclose(p[tested], full.p_value.values[tested], rtol=1e-12)
    np.testing.assert_allclose(net.q_value.values[tested], bh_qvalues(p, tested)[tested])
    assert np.isnan(net.q_value.values[~tested]).all()
    assert not (net.link.values & ~tested).any()


def test_pair_null_at_each_pairs_own_lag():
    from xedm.core.network import library_E_xmap
    from xedm.core.pair_null import pair_null
    from xedm.stats.surrogates import make_surrogates

    X = xedm.datasets.sparse_network(8, 120, seed=5).x.values
    E = np.array([2, 1, 3, 2, 2, 1, 3, 2])
    S, _ = make_surrogates(X, "ebisuzaki", 5, 1)
    kw = dict(tau=1, Tp=[-2, -1, 0], knn=None, excl=0, backend="cpu")
    rho = library_E_xmap(X, E=E, **kw)["rho"]
    pool = ~np.eye(8, dtype=bool)
    pool[2, 5] = False
    at = np.random.default_rng(2).integers(0, 3, (8, 8))
    every = pair_null(X, S, E, pool, rho, **kw)
    own = pair_null(X, S, E, pool, np.take_along_axis(rho, at[..., None], -1)[..., 0],
                    at=at, **kw)
    for name in ("count_ge", "n_null", "z_mean", "z_sd"):
        want = np.take_along_axis(every[name], at[..., None], -1)[..., 0]
        np.testing.assert_array_equal(own[name], want)


def test_lag_summary_equals_a_loop_over_pairs():
    from xedm.core.network import lag_summary

    rng = np.random.default_rng(7)
    for lags in ([-2, -1, 0, 1, 2], [-3, 0, 2], [0, 1], [-1]):
        rho = np.round(rng.random((9, 9, len(lags))), 1)  # ties: the first lag wins
        rho[rng.random(rho.shape) < 0.3] = np.nan
        rho[0, 1] = np.nan
        best, at = lag_summary(rho, lags)
        neg = [i for i, lag in enumerate(lags) if lag <= 0]
        for i in range(9):
            for j in range(9):
                r = rho[i, j]
                fin = [k for k in range(len(lags)) if np.isfinite(r[k])]
                want = lags[max(fin, key=lambda k: (r[k], -k))] if fin else np.nan
                assert best[i, j] == want or (np.isnan(want) and np.isnan(best[i, j]))
                fn = [k for k in neg if np.isfinite(r[k])]
                assert at[i, j] == (max(fn, key=lambda k: (r[k], -k)) if fn else neg[0])


def test_large_network_with_the_targets_E_screens_too(monkeypatch):
    # E_from="target": the candidates are screened as well (the cost), and every pair keeps
    # its surrogate p-value (the all-pairs map: pair_null embeds with the library's E)
    import xedm.core.predictive as pr

    monkeypatch.setattr(pr, "MAX_CANDIDATES", 4)
    monkeypatch.setattr(pr, "SCREEN", 4)
    X = xedm.datasets.sparse_network(10, 250, seed=2).x
    net = xedm.causal_network(X, seed=0, progress=False, E_from="target", surrogates=9)
    assert (np.isfinite(net.gain.values).sum(axis=1) == 4).all()
    off = ~np.eye(10, dtype=bool)
    assert np.isfinite(net.p_value.values[off]).all()


@pytest.mark.parametrize("conditioning, E_from, only", [
    ("predictive", "library", True), ("predictive", "target", False),
    ("partial", "library", False)])
def test_work_estimate_counts_the_candidates_only_where_network_does(monkeypatch,
                                                                      conditioning, E_from,
                                                                      only):
    # the surrogates' cross maps are estimated for the candidates only exactly where
    # network() draws them so (core.network.large_network), never for all-pairs nulls
    from xedm.core.network import large_network
    from xedm.core.predictive import SCREEN
    from xedm.labeled import network as ln

    seen = {}
    monkeypatch.setattr(ln, "check_surrogate_cost",
                        lambda *a, libraries=None, **k: seen.update(libraries=libraries))
    monkeypatch.setattr("xedm.memory.check_work", lambda *a, **k: None)
    ln._check_cost(500, 300, 29, 5, 5, 4, "cpu", conditioning, E_from)
    assert large_network(500, conditioning, E_from)[1] is only
    assert seen["libraries"] == (SCREEN if only else None)
    assert large_network(129, "predictive", "library") == (False, False)  # 128 others


def _pick_reference(sc, rb, use_rho, allow, use_allow, own, m, n_rho):
    """The candidates of each row by sorting (the rule of screen_pick's docstring)."""
    B, N = sc.shape
    out = np.full((B, m), -1, np.int64)
    for b in range(B):
        ok = set(range(N)) if not use_allow else {int(j) for j in allow[b] if j >= 0}
        ok.discard(int(own[b]))
        if len(ok) <= m:
            keep = sorted(ok)[:m]
        else:
            by_rho = []
            if use_rho:
                fin = [j for j in ok if np.isfinite(rb[b, j])]
                by_rho = sorted(fin, key=lambda j: (-rb[b, j], j))[:n_rho]
            score = {j: (-np.inf if np.isnan(sc[b, j]) else sc[b, j]) for j in ok}
            rest = sorted(ok - set(by_rho), key=lambda j: (-score[j], j))
            keep = sorted(by_rho + rest[:m - len(by_rho)])
        out[b, :len(keep)] = keep
    return out


@pytest.mark.parametrize("use_allow", [False, True])
def test_screen_pick_equals_sorting_with_ties_and_missing_values(use_allow):
    from xedm.kernels import get_kernel

    rng = np.random.default_rng(5)
    B, N, m, n_rho = 40, 60, 8, 2
    sc = rng.integers(0, 5, (B, N)).astype(float)  # many ties
    sc[rng.random((B, N)) < 0.05] = np.nan
    rb = np.round(rng.uniform(-1, 1, (B, N)), 1)  # ties too
    rb[rng.random((B, N)) < 0.1] = np.nan
    rb[rng.random((B, N)) < 0.05] = np.inf
    own = rng.permutation(N)[:B]
    allow = np.full((B, 20), -1, np.int64)
    for b in range(B):  # ascending tables, some with the series itself, some short
        k = int(rng.integers(0, 21))
        allow[b, :k] = np.sort(rng.choice(N, k, replace=False))
    pick = get_kernel("screen_pick", "cpu")
    for use_rho in (False, True):
        got = pick(sc, rb, use_rho, allow, use_allow, own, m, n_rho)
        want = _pick_reference(sc, rb, use_rho, allow, use_allow, own, m, n_rho)
        np.testing.assert_array_equal(got, want)


def test_candidates_without_a_table_equal_every_pair():
    # allowed=None (every other series, no (N, N) table) picks what the full table picks,
    # in one block or in several
    from xedm.core import screen
    from xedm.core.pairs import all_pairs

    N, m = 30, 5
    Z, e0, t0 = _case(N, 90, 4)
    rho = np.random.default_rng(6).uniform(-1, 1, (N, N))
    want = candidates(np, Z, e0, t0, 2, all_pairs(N), m, rho)
    np.testing.assert_array_equal(candidates(np, Z, e0, t0, 2, None, m, rho), want)
    rows = np.zeros(N, bool)
    rows[[1, 7, 29]] = True
    part = candidates(np, Z, e0, t0, 2, None, m, rho, rows)
    np.testing.assert_array_equal(part[rows], want[rows])
    assert (part[~rows] == -1).all()
    old = screen.SCORE_BYTES
    try:
        screen.SCORE_BYTES = 8 * N * 4  # blocks of 4 rows
        np.testing.assert_array_equal(candidates(np, Z, e0, t0, 2, None, m, rho), want)
    finally:
        screen.SCORE_BYTES = old


def test_prepared_series_give_the_same_tests():
    # prepare() made once (a batch job's blocks, the wider fits' second selection) is what
    # predictive_tests makes itself: the same outputs, and the rows' results those of the
    # whole
    from xedm.core.predictive import decorrelation_time, prepare

    ds = xedm.datasets.sparse_network(12, 200, seed=3)
    X = ds.x.values
    Z, dec = prepare(X)
    np.testing.assert_array_equal(Z, standardize(X))
    assert dec.tolist() == [decorrelation_time(z) for z in Z]
    E = np.full(12, 2)
    want = predictive_tests(X, E, max_lag=2)
    got = predictive_tests(X, E, max_lag=2, prepared=(Z, dec))
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)
    rows = np.zeros(12, bool)
    rows[[2, 5]] = True
    part = predictive_tests(X, E, max_lag=2, prepared=(Z, dec), rows=rows)
    for a, b in zip(want[:3], part[:3], strict=True):  # p, gain, selected
        np.testing.assert_array_equal(a[rows], b[rows])
