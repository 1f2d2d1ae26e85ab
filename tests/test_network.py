"""causal_network (direct links: library's E, lag signature, predictive conditioning and
partial cross mapping), the E_from choice of xmap and ccm, to_networkx and the network view."""

import warnings

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.core import network as core
from xedm.core.predictive import predictive_tests


def test_xmap_E_from_library_matches_naive():
    X = xedm.datasets.many_series(3, 70, seed=0).x
    E = [1, 3, 2]
    got = xedm.xmap(X, "series", E=E, E_from="library")
    ref = naive.xmap(X.values, E, E_from="library")
    np.testing.assert_allclose(got.rho.values, ref, rtol=1e-10, atol=1e-12)
    assert got.E.dims == ("library",) and got.attrs["E_from"] == "library"
    # today's default is unchanged: the target's E
    dflt = xedm.xmap(X, "series", E=E)
    np.testing.assert_allclose(dflt.rho.values, naive.xmap(X.values, E), rtol=1e-10, atol=1e-12)
    assert dflt.E.dims == ("target",) and dflt.attrs["E_from"] == "target"


def test_ccm_E_from_target_matches_naive():
    X = xedm.datasets.many_series(3, 100, seed=1).x
    ds = xr.Dataset({f"s{i}": X[i].drop_vars("series") for i in range(3)})
    cols = ["s0", "s1", "s2"]
    E = [1, 3, 2]
    got = xedm.ccm(ds, cols, E=E, lib_sizes=[30], samples=2, seed=4, E_from="target")
    for i in range(3):
        for j in range(3):
            ref = naive.ccm_pair(X.values[i], X.values[j], E[j], [30], 2, 4)
            np.testing.assert_allclose(got.rho.values[i, j, 0], ref.mean(), rtol=1e-10)
    assert got.E.dims == ("target",) and got.attrs["E_from"] == "target"
    assert xedm.ccm(ds, cols, E=E, lib_sizes=[30], samples=1,
                    seed=4).attrs["E_from"] == "library"


def test_partial_cross_map_matches_naive():
    X = xedm.datasets.many_series(4, 70, density=0.5, seed=3).x.values
    E = np.array([1, 2, 2, 1])
    cand = np.zeros((4, 4), bool)
    cand[2, 0] = cand[2, 1] = cand[2, 3] = True  # two conditions each
    lag = np.zeros((4, 4), np.int64)
    lag[2, 0], lag[2, 1] = -2, -1
    scan = np.unique(np.concatenate([np.arange(-2, 1) + s for s in core.SHIFTS]))
    tabs = core.Tables(X, E, tau=1, knn=None, excl=0, lags=scan, backend="cpu")
    pool = cand.copy()
    pool[2, 2] = pool[0, 3] = True  # ignored: the library itself, a row without candidates
    pool[3, 1] = cand[3, 1] = True  # a row whose only candidate is conditioned on the pool
    pool[3, 0] = pool[3, 2] = True  # two screened drivers that are not candidates
    r, p, m = core.conditional_tests(X, tabs, cand, lag, pool=pool)
    r0, p0, m0 = naive.partial_cross_map(X, E, cand, lag, scan, pool=pool)
    # two algebras (elimination on the Gram matrix; the inverse covariance): equal to rounding
    np.testing.assert_allclose(r[cand], r0[cand], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p[cand], p0[cand], rtol=1e-3, atol=1e-9)
    np.testing.assert_array_equal(m, m0)
    assert np.isnan(r[~cand]).all()


def test_partial_cross_map_repeated_condition_costs_nothing():
    # a conditioning series that repeats another adds no term: same r, same p (the degrees
    # of freedom count the rank of the terms, not their number)
    X = xedm.datasets.many_series(4, 120, density=0.5, seed=3).x.values
    X = np.vstack([X, X[3]])
    E = np.array([2, 2, 2, 2, 2])
    cand = np.zeros((5, 5), bool)
    cand[2, 0] = cand[2, 1] = True
    lag = np.zeros((5, 5), np.int64)
    tabs = core.Tables(X, E, tau=1, knn=None, excl=0, lags=[-1, 0, 1], backend="cpu")
    one, two = cand.copy(), cand.copy()
    one[2, 3] = two[2, 3] = two[2, 4] = True
    r1, p1, m1 = core.conditional_tests(X, tabs, cand, lag, pool=one)
    r2, p2, m2 = core.conditional_tests(X, tabs, cand, lag, pool=two)
    np.testing.assert_allclose(r2[cand], r1[cand], rtol=1e-6)
    np.testing.assert_allclose(p2[cand], p1[cand], rtol=1e-4)
    assert (m2[cand] == m1[cand] + 1).all()


def test_predictive_conditioning_matches_naive():
    ds = xedm.datasets.many_series(4, 60, density=0.5, seed=3)
    X = ds.x.values
    E = np.array([1, 2, 3, 1])  # own lags enter like candidates
    p, gain, sel, n_drivers, lag, _, _ = predictive_tests(X, E)
    p0, gain0, sel0, lag0 = naive.predictive_conditioning(X, E)
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_array_equal(lag[off], lag0[off])
    assert (np.abs(gain[off]) <= 1).all()  # bounded
    np.testing.assert_allclose(p[off], p0[off], rtol=1e-6, atol=1e-12)
    # normal equations (unit-diagonal Cholesky) against lstsq: equal to rounding
    np.testing.assert_allclose(gain[off], gain0[off], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(sel, sel0)
    assert sel.any() and (off & ~sel).any()  # some drivers chosen, some not
    np.testing.assert_array_equal(n_drivers, sel.sum(axis=1))
    # a flow sampled finely: the Theiler window of the predictions grows with it
    from xedm.core.predictive import decorrelation_time

    assert decorrelation_time(X[0]) == 0
    assert decorrelation_time(np.sin(np.arange(400) / 10.0)) == 11  # cos(l / 10) < 1/e
    # a constant series: no driver of it, none through it, and no warning
    Xc = X.copy()
    Xc[1] = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p, gain, sel, _, _, _, _ = predictive_tests(Xc, E)
    assert not sel[1].any() and not sel[:, 1].any() and (p[1][off[1]] == 1).all()


def test_predictive_conditioning_candidate_cap_matches_naive():
    # past max_candidates drivers in play, the ones with the largest p leave
    X = xedm.datasets.many_series(7, 80, density=0.5, seed=5).x.values
    E = np.array([2, 1, 1, 3, 1, 1, 2])
    p, gain, sel, _, _, _, _ = predictive_tests(X, E, max_candidates=2)
    p0, gain0, sel0, _ = naive.predictive_conditioning(X, E, max_candidates=2)
    off = ~np.eye(7, dtype=bool)
    np.testing.assert_array_equal(sel, sel0)
    np.testing.assert_allclose(p[off], p0[off], rtol=1e-6, atol=1e-12)
    full = predictive_tests(X, E)
    assert not np.array_equal(full[0], p)  # the cap changed some test


def test_predictive_conditioning_with_driver_delays_matches_naive():
    # drivers at delays 1..3 (one delay per driver; the pair's test at its best delay)
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
    from _network_cases import coupled_maps

    X, truth, delay = coupled_maps(5, 90, lags=(2, 3), density=0.3, seed=4)
    E = np.array([1, 2, 1, 1, 2])
    p, gain, sel, _, lag, _, _ = predictive_tests(X, E, max_lag=3, neighborhood=(6, 30))
    p0, gain0, sel0, lag0 = naive.predictive_conditioning(X, E, max_lag=3, extra=6, near=30)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_array_equal(sel, sel0)
    np.testing.assert_array_equal(lag[off], lag0[off])
    np.testing.assert_allclose(p[off], p0[off], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(gain[off], gain0[off], rtol=1e-7, atol=1e-9)
    assert sel.any() and (lag[sel] > 1).any()  # a delayed driver chosen at its delay
    # the cap counts drivers (each with its delays), ranked by their best delay's p
    p, _, sel, _, lag, _, _ = predictive_tests(X, E, max_lag=3, neighborhood=(6, 30),
                                         max_candidates=2)
    p0, _, sel0, lag0 = naive.predictive_conditioning(X, E, max_lag=3, extra=6, near=30,
                                                      max_candidates=2)
    np.testing.assert_array_equal(sel, sel0)
    np.testing.assert_allclose(p[off], p0[off], rtol=1e-6, atol=1e-12)


def test_signed_rank_test_matches_naive():
    from xedm.core.predictive import improvement_p

    rng = np.random.default_rng(2)
    e0 = np.round(rng.standard_normal(300), 1)  # ties in |d| and zero differences
    e1 = np.stack([np.round(e0 * rng.uniform(0.7, 1.1, 300), 1), np.round(0.5 * e0, 1),
                   e0 + np.cumsum(rng.standard_normal(300)) * 0.02,  # autocorrelated ranks
                   np.round(rng.standard_normal(300), 1)])
    e1[1, :5] = 0.0
    p, gain, hi = improvement_p(e0, e1)
    ref = np.array([naive.signed_rank_p(e0, row) for row in e1])
    np.testing.assert_allclose(p, ref[:, 0], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(gain, ref[:, 1], rtol=1e-12)
    np.testing.assert_allclose(hi, ref[:, 2], rtol=1e-9)
    assert (hi > gain).all()
    assert p[1] < 1e-6 < p[3]
    # a NaN error counts as no improvement; an all-NaN candidate has p = 1
    bad = e1[:2].copy()
    bad[0, 10:20] = np.nan
    bad[1] = np.nan
    p2, _, _ = improvement_p(e0, bad)
    d = np.abs(e0) - np.abs(e1[0])
    d[10:20] = 0.0
    ref0 = naive.signed_rank_p(np.maximum(d, 0.0), np.maximum(-d, 0.0))[0]  # |a| - |b| = d
    np.testing.assert_allclose(p2[0], ref0, rtol=1e-9)
    assert p2[1] == 1.0
    # the mean absolute errors compare the same times: a model that fails on the hard points
    # (NaN there) gains nothing from failing
    _, g, _ = improvement_p(np.array([1.0, -1.0, 1.0, 10.0]), np.array([[1.0, 1.0, -1.0, np.nan]]))
    assert g[0] == 0.0


def test_predictive_conditioning_removes_indirect_links():
    # a chain 0 -> 1 -> 2 and a common driver 3 -> 4, 3 -> 5 (logistic maps, coupling 0.2)
    rng = np.random.default_rng(0)
    r, x = rng.uniform(3.7, 3.9, 6), rng.uniform(0.1, 0.9, 6)
    edges = [(0, 1), (1, 2), (3, 4), (3, 5)]
    X = np.empty((6, 500))
    for t in range(600):
        f = r * x * (1 - x)
        x = f.copy()
        for d, v in edges:
            x[v] = 0.8 * f[v] + 0.2 * f[d]
        if t >= 100:
            X[:, t - 100] = x
    truth = np.zeros((6, 6), bool)  # (library = driven, target = driver)
    for d, v in edges:
        truth[v, d] = True
    net = xedm.causal_network(xr.DataArray(X, dims=("series", "time")), seed=0,
                              surrogates=9, E_max=3)
    assert net.attrs["conditioning"] == "predictive"
    np.testing.assert_array_equal(net.link.values, truth)  # no 0 -> 2, no 4 <-> 5
    sel = net.selected.values
    assert (net.gain_q.values[sel] <= 0.05).all() and np.isnan(net.gain_q.values[~sel]).all()
    assert net.gain.values[2, 1] > 0.1 and net.n_conditions.values[2, 0] == 1


def test_conditioning_removes_indirect_links():
    ds = xedm.datasets.many_series(16, 500, density=0.12, seed=1)
    truth = ds.adjacency.values.T  # (library = driven, target = driver)
    before = ds.x.copy(deep=True)
    net = xedm.causal_network(ds.x, seed=0, surrogates=19, E_max=4, lags=[-2, -1, 0, 1],
                              conditioning="partial")
    xr.testing.assert_identical(ds.x, before)  # the input is never modified
    cand, link = net.candidate.values, net.link.values
    assert (link <= cand).all()

    def precision(m):
        return (m & truth).sum() / m.sum()

    # the candidates hold indirect links; the conditioning removes them, not the direct ones
    assert (cand & ~link & ~truth).sum() >= 3
    assert precision(link) >= precision(cand) + 0.1
    assert (link & truth).sum() / truth.sum() >= 0.7
    for key in ("E_from", "lags", "alpha", "min_partial", "rule", "conditioning",
                "surrogates", "surrogate_method", "p_method", "surrogate_seed"):
        assert key in net.attrs
    assert net.attrs["E_from"] == "library"
    assert (net.E.values == net.E.values[:, :1]).all()  # the library's E along each row
    off = ~np.eye(16, dtype=bool)
    assert (net.best_Tp.values[link] <= 0).all()
    assert (net.q_value.values[link] <= 0.05).all() and not net.link.values[~off].any()


def test_logistic_pair_direction_and_networkx():
    ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.3)
    net = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0, surrogates=19)
    assert bool(net.link.sel(library="y", target="x"))
    assert not bool(net.link.sel(library="x", target="y"))
    nx = pytest.importorskip("networkx")
    g = net.edm.to_networkx()
    assert isinstance(g, nx.DiGraph) and list(g.edges) == [("x", "y")]
    e = g.edges["x", "y"]
    assert e["rho"] == pytest.approx(float(net.rho.sel(library="y", target="x")))
    assert e["lag"] == int(net.lag.sel(library="y", target="x"))  # the delay, in steps
    assert e["Tp"] == int(net.driver_Tp.sel(library="y", target="x"))
    assert {"p", "q", "E", "gain", "gain_q"} <= set(e)
    assert e["gain"] == pytest.approx(float(net.gain.sel(library="y", target="x")))


@pytest.mark.quick
def test_causal_network_matches_naive():
    """The whole pipeline against the references, step by step: E chosen per series
    (naive.embed_dimension), the lag scan (naive.xmap with the library's E), the normal
    p-values at the best driver lag (naive.simplex on xedm.surrogates of each target,
    naive.normal_p_value) times the driver lags, Benjamini-Hochberg over the off-diagonal
    pairs (naive.bh), candidates, the predictive conditioning
    (naive.predictive_conditioning) and the links."""
    X = xedm.datasets.many_series(3, 70, density=0.5, seed=7).x
    x, N = X.values, 3
    lags, n_sur, seed, alpha = np.array([-1, 0, 1]), 4, 1, 0.05
    net = xedm.causal_network(X, E_max=3, lags=list(lags), surrogates=n_sur, seed=seed,
                              alpha=alpha, max_lag=2, progress=False)
    off = ~np.eye(N, dtype=bool)

    def first_max(r):  # the first of the best (NaN never best)
        return np.argmax(np.where(np.isfinite(r), r, -np.inf), axis=-1)

    E = np.array([first_max(np.array(naive.embed_dimension(x[i][None], x[i], 3))) + 1
                  for i in range(N)])
    np.testing.assert_array_equal(net.E.values, np.repeat(E[:, None], N, axis=1))
    rho_lag = np.stack([naive.xmap(x, E, Tp=int(tp), E_from="library") for tp in lags], -1)
    np.testing.assert_allclose(net.rho_lag.values, rho_lag, rtol=1e-9, atol=1e-12)
    neg = np.flatnonzero(lags <= 0)
    at = neg[first_max(rho_lag[..., neg])]
    best = lags[first_max(rho_lag)]
    np.testing.assert_array_equal(net.driver_Tp.values, lags[at])
    np.testing.assert_array_equal(net.best_Tp.values, best)
    rho = np.take_along_axis(rho_lag, at[..., None], -1)[..., 0]
    np.testing.assert_allclose(net.rho.values, rho, rtol=1e-9, atol=1e-12)
    S = xedm.surrogates(X, n=n_sur, seed=seed).transpose("series", "surrogate", "time").values
    p = np.full((N, N), np.nan)  # the off-diagonal pairs (the diagonal is never tested)
    for i in range(N):
        for j in range(N):
            if i == j:
                continue
            null = [naive.simplex(x[i][None], S[j, s], int(E[i]), Tp=int(lags[at[i, j]]))["rho"]
                    for s in range(n_sur)]
            p[i, j] = min(naive.normal_p_value(rho[i, j], null) * len(neg), 1.0)
    np.testing.assert_allclose(net.p_value.values[off], p[off], rtol=1e-7, atol=1e-12)
    q = np.full((N, N), np.nan)
    q[off] = naive.bh(list(p[off]))
    np.testing.assert_allclose(net.q_value.values, q, rtol=1e-7, atol=1e-12)
    significant = off & (q <= alpha)
    np.testing.assert_array_equal(net.candidate.values, significant & (best <= 0))
    late = significant & (best > 0)
    sync = late & late.T
    np.testing.assert_array_equal(net.synchrony.values, sync)
    P, G, sel, K = naive.predictive_conditioning(x, E, max_lag=2)
    np.testing.assert_array_equal(net.selected.values, sel)
    np.testing.assert_array_equal(net.lag.values[off], K[off])
    np.testing.assert_allclose(net.gain_p.values[off], P[off], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(net.gain.values[off], G[off], rtol=1e-7, atol=1e-9)
    gq = np.full((N, N), np.nan)
    gq[sel] = naive.bh(list(P[sel]))
    np.testing.assert_allclose(net.gain_q.values, gq, rtol=1e-6, atol=1e-12)
    passed = sel & (gq <= alpha) & (G > 0)
    link = passed & ~(sync & passed & passed.T)
    np.testing.assert_array_equal(net.link.values, link)
    assert 0 < link.sum() < sel.sum()  # the case decides something at every step


@pytest.mark.quick
def test_to_networkx_edges_are_the_links(monkeypatch):
    """to_networkx on a hand-made result, with a stand-in networkx (the quick test run has no
    networkx; the real one is used in test_logistic_pair_direction_and_networkx): every node,
    one edge j -> i per link[library=i, target=j], its attributes the result's values."""
    import sys
    import types

    class DiGraph:
        def __init__(self, **attrs):
            self.graph, self.nodes, self.edges = attrs, [], {}

        def add_nodes_from(self, nodes):
            self.nodes.extend(nodes)

        def add_edge(self, u, v, **attrs):
            self.edges[u, v] = attrs

    monkeypatch.setitem(sys.modules, "networkx", types.SimpleNamespace(DiGraph=DiGraph))
    labels = ["a", "b", "c"]
    link = np.array([[False, True, False], [False, False, False], [True, True, False]])
    r = np.random.default_rng(0)
    values = {k: r.uniform(0, 1, (3, 3)) for k in ("rho", "p_value", "q_value", "gain",
                                                   "gain_q")}
    values["driver_Tp"] = r.integers(-2, 1, (3, 3))
    values["lag"] = r.integers(1, 6, (3, 3))
    values["E"] = r.integers(1, 5, (3, 3))
    pair = ("library", "target")
    net = xr.Dataset({"link": (pair, link), **{k: (pair, v) for k, v in values.items()}},
                     coords={"library": labels, "target": labels},
                     attrs={"E_from": "library", "alpha": 0.05, "lags": [-1, 0]})
    g = xedm.to_networkx(net)
    assert g.nodes == labels
    assert g.graph == {"E_from": "library", "alpha": 0.05, "lags": [-1, 0]}
    want = {(labels[j], labels[i]) for i, j in zip(*np.nonzero(link), strict=True)}
    assert set(g.edges) == want == {("b", "a"), ("a", "c"), ("b", "c")}
    names = {"rho": "rho", "p": "p_value", "q": "q_value", "lag": "lag", "Tp": "driver_Tp",
             "E": "E", "gain": "gain", "gain_q": "gain_q"}
    for (u, v), attrs in g.edges.items():
        i, j = labels.index(v), labels.index(u)
        assert attrs == {a: values[k][i, j] for a, k in names.items()}
        assert isinstance(attrs["lag"], int) and isinstance(attrs["rho"], float)
    assert net.edm.to_networkx().edges == g.edges  # the accessor forwards


def test_red_noise_gives_few_links():
    X = xedm.datasets.ar1(12, 300, phi=0.9, seed=2)
    with pytest.warns(UserWarning, match="undetermined"):
        net = xedm.causal_network(X, seed=1, surrogates=19, E_max=4)
    off = ~np.eye(12, dtype=bool)
    assert net.link.values[off].mean() <= 0.05
    # 300 points of red noise (decorrelation time ~9 steps): too few independent points
    assert (net.decision.values[off] != "no link").all()


def test_sardine_anchovy_cannot_be_decided():
    # 78 yearly values: the data cannot decide, and say so
    pyEDM = pytest.importorskip("pyEDM")
    df = pyEDM.sampleData["sardine_anchovy_sst"]
    ds = xr.Dataset({c: ("time", df[c].to_numpy(float)) for c in df.columns[1:]},
                    coords={"time": df[df.columns[0]].to_numpy()})
    with pytest.warns(UserWarning, match="undetermined") as w:
        net = ds.edm.causal_network(columns=list(df.columns[1:]), E_max=6, seed=0)
    assert len([x for x in w if "undetermined" in str(x.message)]) == 1  # one summary
    pair = dict(library="sardine", target="anchovy")
    assert not bool(net.link.sel(**pair))
    assert str(net.decision.sel(**pair).values) == "undetermined"
    from xedm.core.network import REASONS

    assert "too few" in REASONS[int(net.undetermined_reason.sel(**pair))]
    assert "too few" in net.undetermined_reason.attrs["description"]


def test_three_way_answer():
    """link / no link / undetermined: a long record decides (x drives y; nothing drives x),
    30 points or a constant series cannot, and the result says why."""
    import warnings

    ds = xedm.datasets.coupled_logistic(600, beta_xy=0.0, beta_yx=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # decided: no warning
        net = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0, surrogates=9)
    assert str(net.decision.sel(library="y", target="x").values) == "link"
    assert str(net.decision.sel(library="x", target="y").values) == "no link"
    assert not net.undetermined.values.any()
    assert (net.undetermined_reason.values == 0).all()
    # the delay of the link: x(t) acts on y(t + 1); on a deterministic map x(t - 1) knows
    # x(t) too, so one step longer may predict as well (docs/causal-networks.md)
    assert int(net.lag.sel(library="y", target="x")) in (1, 2)
    gain = net.gain.values[~np.eye(2, dtype=bool)]
    assert (np.abs(gain) <= 1).all()
    short = ds.isel(time=slice(0, 30))
    with pytest.warns(UserWarning, match="of 2 pairs are undetermined"):
        net = short.edm.causal_network(columns=["x", "y"], E=2, seed=0, surrogates=9)
    # strong evidence still links at 30 points; the rest is undetermined, never "no link"
    assert str(net.decision.sel(library="x", target="y").values) == "undetermined"
    assert "no link" not in net.decision.values[~np.eye(2, dtype=bool)]
    flat = ds.assign(z=ds.x * 0 + 0.5)
    with pytest.warns(UserWarning, match="constant series"):
        net = flat.edm.causal_network(columns=["x", "y", "z"], E=2, seed=0, surrogates=9)
    assert (net.decision.sel(library="z").values[:2] == "undetermined").all()
    assert (net.decision.sel(target="z").values[:2] == "undetermined").all()
    assert str(net.decision.sel(library="y", target="x").values) == "link"


def test_missed_links_of_short_series_are_undetermined():
    """At 100 points a network's missed links are mostly undetermined (the gain's upper
    bound reaches the smallest gain that counts), while 1,000 points of independent maps
    are mostly decided "no link"; the bound is the naive reference's (test above)."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
    from _network_cases import coupled_maps

    from xedm.core.network import MIN_GAIN, REASONS

    X, truth, _ = coupled_maps(20, 100, seed=3)  # benchmarks/networks.py short100
    with pytest.warns(UserWarning, match="a gain that counts is within"):
        net = xedm.causal_network(xr.DataArray(X, dims=("series", "time")), seed=0,
                                  surrogates=9, progress=False)
    dec = net.decision.values.astype(str)
    missed = truth & (dec != "link")
    assert missed.sum() >= 3
    assert (dec[missed] == "undetermined").mean() >= 0.7
    why = net.undetermined_reason.values
    bound = why == 4
    assert "within the confidence bound" in REASONS[4]
    assert (net.gain_hi.values[bound] >= MIN_GAIN).all()
    off = ~np.eye(20, dtype=bool)
    assert (net.gain_hi.values[(dec == "no link") & off] < MIN_GAIN).all()
    rng = np.random.default_rng(0)
    x = np.empty((6, 1000))
    x[:, 0] = rng.uniform(0.2, 0.8, 6)
    r = rng.uniform(3.7, 3.9, 6)
    for t in range(999):
        x[:, t + 1] = r * x[:, t] * (1 - x[:, t])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = xedm.causal_network(xr.DataArray(x, dims=("series", "time")), seed=0,
                                  surrogates=9, progress=False)
    dec = net.decision.values.astype(str)[~np.eye(6, dtype=bool)]
    assert (dec == "no link").mean() >= 0.8


def test_series_predicted_exactly_by_its_past_is_undetermined():
    """A period-2 orbit: its own value predicts it to rounding, so no driver can be tested
    (any test would rank rounding noise, which differs between CPU and GPU): not
    conditioned, its drivers undetermined with the reason."""
    from xedm.core.network import REASONS

    X = xedm.datasets.many_series(4, 200, density=0.4, seed=2).x.values.copy()
    X[1] = np.where(np.arange(200) % 2, 0.8, 0.2)
    E = np.array([2, 2, 2, 2])
    p, gain, sel, _, _, _, exact = predictive_tests(X, E)
    np.testing.assert_array_equal(exact, [False, True, False, False])
    assert not sel[1].any() and (p[1, [0, 2, 3]] == 1).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = xedm.causal_network(xr.DataArray(X, dims=("series", "time")), E=2, seed=0,
                                  surrogates=9, progress=False)
    why = net.undetermined_reason.values
    assert (why[1, [0, 2, 3]] == 5).all() and "own past" in REASONS[5]
    assert (net.decision.values[1, [0, 2, 3]] == "undetermined").all()


def test_synchrony_keeps_an_oriented_link():
    """A chain of phase-locked Rössler oscillators: the cross maps peak at Tp > 0 both ways
    (synchrony), yet the predictive test orients each link; every link is found."""
    import sys
    import warnings

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
    from _network_cases import rossler_chain

    X, truth, _ = rossler_chain()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = xedm.causal_network(xr.DataArray(X, dims=("series", "time")), seed=0,
                                  surrogates=9, progress=False)
    assert net.synchrony.values.any()  # the rule is in play
    np.testing.assert_array_equal(net.link.values, truth)


def test_network_view():
    import matplotlib

    matplotlib.use("Agg")
    ds = xedm.datasets.coupled_logistic(300, beta_xy=0.0, beta_yx=0.3)
    net = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0, surrogates=9)
    ax = net.edm.plot()
    assert ax.get_title() == "causal network: 1 link"
    texts = [t.get_text() for t in ax.texts]  # the names; the lag once, in the legend
    lags = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert f"delay {int(net.lag.values[1, 0])}" in lags and {"x", "y"} <= set(texts)
    ax = net.edm.plot(kind="matrix")
    assert ax.get_ylabel() == "library (effect)"
    with pytest.raises(ValueError, match="kind="):
        net.edm.plot(kind="bogus")


@pytest.mark.parametrize("kwargs, match", [
    ({"lags": [1, 2]}, "no lag <= 0"),
    ({"E_from": "both"}, "E_from='both'"),
    ({"alpha": 1.5}, "alpha=1.5"),
    ({"min_partial": 1.0}, "min_partial=1.0"),
    ({"surrogates": 0}, "surrogates"),
    ({"conditioning": "pc"}, "conditioning='pc'"),
])
def test_bad_parameters(kwargs, match):
    X = xedm.datasets.many_series(3, 100, seed=0).x
    with pytest.raises(ValueError, match=match):
        xedm.causal_network(X, **kwargs)


def test_bad_data():
    X = xedm.datasets.many_series(3, 100, seed=0).x
    gappy = X.copy()
    gappy[1, 5] = np.nan
    with pytest.raises(ValueError, match=r"needs finite series; series \[1\] have NaN"):
        xedm.causal_network(gappy)
    with pytest.raises(ValueError, match="other dims"):
        xedm.causal_network(X.expand_dims(run=2), "series")
    with pytest.raises(TypeError, match="to_networkx takes"):
        xedm.to_networkx(X.to_dataset(name="x"))
    with pytest.raises(ValueError, match="E_from='lib'"):
        xedm.xmap(X, "series", E=2, E_from="lib")


def test_predictive_gain_without_common_predictions_is_nan():
    # a candidate whose model is singular at every time (a constant series) measures no
    # reduction of the error: gain NaN (not 1), p = 1
    from xedm.core.predictive import improvement_p

    p, gain, _ = improvement_p(np.ones(10), np.full((1, 10), np.nan))
    assert p[0] == 1 and np.isnan(gain[0])
    X = xedm.datasets.many_series(3, 50, density=0.5, seed=3).x.values.copy()
    X[1] = 0.5
    p, gain, sel, _, _, _, _ = predictive_tests(X, np.array([1, 1, 2]))
    assert np.isnan(gain[[0, 2], 1]).all() and (p[[0, 2], 1] == 1).all()
    assert not sel[:, 1].any()


def test_predictive_conditioning_rejects_E_past_the_own_lag_mask():
    # own lag l is bit l - 1 of an int64 mask the pool kernels read up to bit 62 (lag 63):
    # a larger E would silently leave its last lags out of the pools' distances
    from xedm.core.predictive import MAX_E

    X = np.random.default_rng(0).standard_normal((2, 200))
    with pytest.raises(ValueError, match="E up to 64"):
        predictive_tests(X, [MAX_E + 1, 1])


def test_predictive_conditioning_noisy_series_match_naive(monkeypatch):
    # under observation noise: series whose final model predicts better with a wider
    # neighbourhood are conditioned again with it, a chosen driver's other delays stay
    # candidates (some driver is chosen at two delays), and the backward elimination drops
    # drivers (more of them at a stricter alpha_keep); all as the naive reference
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
    from _network_cases import coupled_maps, observed_with_noise

    import xedm.core.predictive as pr

    X, _, _ = coupled_maps(6, 110, lags=(1, 2), density=0.3, seed=4)
    X = observed_with_noise(X, 0.2, seed=1)
    E = np.array([1, 2, 1, 1, 2, 1])
    seen = {"alternative": 0, "two delays": 0}
    final_mae, retest = pr._final_mae, pr._retest

    def spy_mae(*a, **k):
        m = final_mae(*a, **k)
        seen["alternative"] += int((np.argmin(m, axis=0) > 0).sum())
        return m

    def spy_retest(st, part, terms, *a, **k):
        T = st.Z.shape[1]
        for i in part:
            js = [c // T for c in terms[i] if c >= 0]
            seen["two delays"] += len(js) != len(set(js))
        return retest(st, part, terms, *a, **k)

    monkeypatch.setattr(pr, "_final_mae", spy_mae)
    monkeypatch.setattr(pr, "_retest", spy_retest)
    off = ~np.eye(6, dtype=bool)
    counts = []
    for keep in (0.3, 0.002):
        p, gain, sel, _, lag, _, _ = predictive_tests(X, E, max_lag=2, alpha_keep=keep)
        p0, gain0, sel0, lag0 = naive.predictive_conditioning(X, E, max_lag=2,
                                                              alpha_keep=keep)
        np.testing.assert_array_equal(sel, sel0)
        np.testing.assert_array_equal(lag[off], lag0[off])
        np.testing.assert_allclose(p[off], p0[off], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(gain[off], gain0[off], rtol=1e-7, atol=1e-9)
        counts.append(sel.sum())
    assert seen["alternative"] > 0 and seen["two delays"] > 0
    assert counts[1] < counts[0]  # the stricter elimination dropped drivers
