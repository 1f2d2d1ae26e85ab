"""causal_network's edge-list result (result="edges") and the pair tables behind it
(xedm.core.pairs): the same decisions as the dense result, for listed and unlisted pairs."""

import warnings

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.core import pairs as P


def _flags(rng, N):
    return {"constant": rng.random(N) < 0.15, "effective_points": rng.integers(0, 60, N) * 1.0,
            "points_needed": rng.integers(20, 60, N) * 1.0, "exact": rng.random(N) < 0.2}


def _naive_reason(f, i, j):
    if i == j:
        return 0
    if f["constant"][i] or f["constant"][j]:
        return 1
    need = f["points_needed"][i]
    if f["effective_points"][i] < need or f["effective_points"][j] < need:
        return 2
    return 5 if f["exact"][i] else 0


def _random_table(rng, N, m):
    pool = np.zeros((N, N), bool)
    for i in range(N):
        pool[i, rng.choice(N, size=rng.integers(0, m + 1), replace=False)] = True
    return pool, P.pool_pairs(pool)


@pytest.mark.quick
def test_pair_tables_against_loops():
    rng = np.random.default_rng(0)
    for N, m in ((1, 1), (7, 3), (15, 15), (30, 5)):
        pool, pairs = _random_table(rng, N, m)
        assert P.pool_pairs(pool).shape[1] == pool.sum(axis=1).max(initial=0)
        A = rng.random((N, N))
        g = P.gather(A, pairs)
        back = P.scatter(g, pairs, N, np.nan)
        np.testing.assert_array_equal(np.isfinite(back), pool)
        np.testing.assert_array_equal(back[pool], A[pool])
        tpos = P.transposed(pairs)
        flat = pairs.ravel()
        for i in range(N):
            for k in range(pairs.shape[1]):
                j = pairs[i, k]
                if j < 0:
                    assert tpos[i, k] == -1
                    continue
                if pool[j, i]:
                    assert divmod(int(tpos[i, k]), pairs.shape[1])[0] == j
                    assert flat[tpos[i, k]] == i
                else:
                    assert tpos[i, k] == -1
        f = _flags(rng, N)
        rows, cols = np.divmod(np.arange(N * N), N)
        got = P.outside_reasons(f, rows, cols)
        want = [_naive_reason(f, i, j) for i, j in zip(rows, cols, strict=True)]
        np.testing.assert_array_equal(got, want)
        counts = np.zeros(6, np.int64)
        for i, j in zip(rows, cols, strict=True):
            if i != j and not pool[i, j]:
                counts[_naive_reason(f, i, j)] += 1
        np.testing.assert_array_equal(P.count_outside(f, pairs), counts)


def _net(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xedm.causal_network(X, seed=0, progress=False, **kw)


def _same_matrices(a, b, names, mask=None):
    for k in names:
        x, y = a[k].values, b[k].values
        if mask is not None:
            x, y = x[mask], y[mask]
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=k)
        else:
            assert (x == y).all(), k


@pytest.mark.quick
def test_edges_equal_the_dense_result_in_a_small_network():
    X = xedm.datasets.sparse_network(10, 300, seed=4).x
    dense = _net(X, result="dense")
    edges = _net(X, result="edges")
    assert edges.attrs["result"] == "edges" and dense.attrs["result"] == "dense"
    assert edges.sizes["edge"] == 10 * 9  # every ordered pair
    back = xedm.to_dense(edges)
    off = ~np.eye(10, dtype=bool)
    _same_matrices(back, dense, ["link", "decision", "undetermined_reason", "p_value",
                                 "q_value", "gain", "gain_q", "selected", "lag", "E",
                                 "n_conditions", "rho", "driver_Tp"], off)
    np.testing.assert_array_equal(back.rho_lag.values[off], dense.rho_lag.values[off])
    # the edge list's own variables are the dense result's at its pairs
    li, ti = edges.library_index.values, edges.target_index.values
    np.testing.assert_array_equal(edges.rho.values, dense.rho.values[li, ti])
    np.testing.assert_array_equal(edges.library.values, dense.library.values[li])
    assert (edges.decision.values == dense.decision.values[li, ti]).all()


@pytest.mark.quick
def test_edges_of_a_large_network_hold_the_candidates_and_rule_the_rest(monkeypatch):
    # past MAX_CANDIDATES others each series lists its SCREEN candidates; the pairs it does
    # not list follow the per-series rules (here a constant series: undetermined)
    import xedm.core.predictive as pr
    import xedm.core.screen as screen

    ds = xedm.datasets.sparse_network(12, 300, seed=1)
    x = ds.x.values.copy()
    x[5] = 1.0  # a constant series
    X = xr.DataArray(x, dims=("series", "time"))
    monkeypatch.setattr(pr, "MAX_CANDIDATES", 4)
    monkeypatch.setattr(pr, "SCREEN", 4)
    monkeypatch.setattr(screen, "SCORE_BYTES", 8 * 12 * 5)  # blocks of 5 rows
    dense = _net(X, result="dense")
    edges = _net(X, result="edges")  # its cross maps block by block in the screen
    li, ti = edges.library_index.values, edges.target_index.values
    for k in ("rho", "best_Tp", "driver_Tp", "rho_lag", "p_value", "gain"):
        np.testing.assert_array_equal(edges[k].values, dense[k].values[li, ti], err_msg=k)
    per = np.bincount(edges.library_index.values, minlength=12)
    assert per.max() <= 4 and edges.sizes["edge"] <= 12 * 4
    back = xedm.to_dense(edges)
    _same_matrices(back, dense, ["link", "decision", "undetermined_reason", "p_value",
                                 "q_value", "gain", "selected", "lag", "n_conditions"])
    assert (dense.decision.values[5] == "undetermined").sum() == 11
    assert (dense.decision.values[:, 5] == "undetermined").sum() == 11
    # decide(): any pair by label, listed or not
    lib, tgt = np.meshgrid(dense.library.values, dense.target.values, indexing="ij")
    got = xedm.labeled.network_result.decide(edges, lib.ravel(), tgt.ravel())
    assert (got.reshape(12, 12) == dense.decision.values).all()
    with pytest.raises(ValueError, match="not series of this network"):
        xedm.labeled.network_result.decide(edges, ["nope"], [0])
    # the warning counts every pair, listed or not
    with pytest.warns(UserWarning, match=r"(\d+) of 132 pairs are undetermined") as rec:
        xedm.causal_network(X, seed=0, progress=False, result="edges")
    n = int(str(rec[0].message).split("causal_network: ")[1].split(" of")[0])
    assert n == int(dense.undetermined.values.sum())


@pytest.mark.quick
def test_edges_to_networkx_and_plot():
    pytest.importorskip("networkx")
    import matplotlib

    matplotlib.use("Agg")
    X = xedm.datasets.sparse_network(8, 300, seed=2).x
    dense = _net(X, result="dense")
    edges = _net(X, result="edges")
    gd, ge = dense.edm.to_networkx(), edges.edm.to_networkx()
    assert sorted(gd.edges) == sorted(ge.edges) and len(gd.edges) > 0
    assert sorted(gd.nodes) == sorted(ge.nodes)
    for e in gd.edges:
        assert gd.edges[e] == ge.edges[e]
    ax = edges.edm.plot()
    assert ax.get_title() == dense.edm.plot().get_title()


@pytest.mark.quick
def test_result_is_checked_and_auto_picks_edges_for_large_networks():
    from xedm.labeled.network import _check_result
    from xedm.labeled.network_result import EDGES_FROM

    X = xedm.datasets.sparse_network(4, 200, seed=0).x
    with pytest.raises(ValueError, match="result='sparse' must be 'auto'"):
        xedm.causal_network(X, result="sparse")
    assert _check_result("auto", EDGES_FROM) == "dense"
    assert _check_result("auto", EDGES_FROM + 1) == "edges"
    assert _check_result("dense", 1000) == "dense"
    with pytest.raises(ValueError, match="pass result='edges'"):  # 10^12 pairs: refused
        _check_result("dense", 10**6)
    with pytest.raises(TypeError, match="to_dense takes the edge-list"):
        xedm.to_dense(_net(X, result="dense"))


@pytest.mark.quick
def test_blocks_of_libraries_give_the_whole_networks_values(monkeypatch):
    # every library's pairs depend on its own row alone: blocks computed apart and joined
    # equal the whole (the ground of resumable and multi-GPU runs)
    import xedm.core.predictive as pr
    from xedm.core.network_rows import PAIR_KEYS, ROW_KEYS, concat_rows, large_rows
    from xedm.stats.surrogates import make_surrogates

    monkeypatch.setattr(pr, "SCREEN", 4)
    X = xedm.datasets.sparse_network(12, 250, seed=6).x.values
    E = np.array([1, 2, 2, 3, 1, 2, 1, 2, 3, 2, 1, 2])
    S, _ = make_surrogates(X, "ebisuzaki", 5, 0)
    kw = dict(E=E, lags=np.array([-2, -1, 0, 1]), S=S, tau=1, knn=None, excl=0,
              backend="cpu", max_lag=2)
    whole = large_rows(X, np.arange(12), **kw)
    parts = concat_rows([large_rows(X, np.arange(0, 5), **kw),
                         large_rows(X, np.arange(5, 12), **kw)])
    assert whole["pairs"].shape == (12, 4) and (whole["pairs"] >= 0).all()
    for k in PAIR_KEYS + ROW_KEYS:
        np.testing.assert_array_equal(parts[k], whole[k], err_msg=k)


def test_lag_summary_matches_a_loop():
    """The lag scan kernel against a plain loop: the first maximum (NaN never), overall and
    among the driver lags, with ties, all-NaN rows and a non-contiguous input."""
    from xedm.core.cross_maps import lag_summary

    rng = np.random.default_rng(3)
    rho = np.round(rng.random((7, 9, 6)), 1)  # ties
    rho[rng.random(rho.shape) < 0.3] = np.nan
    rho[0, 0] = np.nan
    rho[1, 2, 3:] = np.nan  # no finite driver lag... (lags <= 0 are the first three)
    rho[1, 2, :3] = np.nan
    lags = np.array([-3, -1, 0, 1, 2, 4])
    view = np.asfortranarray(rho)
    best, at, r_at = lag_summary(view, lags, with_rho=True)
    for i in range(7):
        for j in range(9):
            v = rho[i, j]
            fin = np.flatnonzero(np.isfinite(v))
            if len(fin):
                assert best[i, j] == lags[fin[np.argmax(v[fin])]]
            else:
                assert np.isnan(best[i, j])
            d = [k for k in range(3) if np.isfinite(v[k])]
            want = d[int(np.argmax(v[d]))] if d else 0
            assert at[i, j] == want
            assert np.array_equal(r_at[i, j], v[want], equal_nan=True)


def test_gather_scaled_is_numpys_rescaling():
    # pair_null's surrogates of the used targets, each row times 2^-e (e: its largest finite
    # |value|'s exponent): bit for bit the NumPy expression it replaced, NaN, inf, zero and
    # subnormal rows included
    from xedm.core.skill import unit_exponents
    from xedm.kernels import get_kernel

    rng = np.random.default_rng(7)
    S = rng.standard_normal((9, 4, 50)) * np.exp(rng.uniform(-700, 700, (9, 4, 1)))
    S[0, 0, 5] = np.nan
    S[1, 2, 7] = np.inf
    S[2, 3] = 0.0
    S[3, 1] = np.nan
    S[4, 1, :3] = -np.inf
    S[5, 0] = 1e-310
    S[6, 2] = -4.0  # an exact power of 2
    assert get_kernel("gather_scaled", "cpu")(S, np.array([], np.int64)).shape == (0, 4, 50)
    for used in (np.arange(9), np.array([1, 3, 4, 8])):
        got = get_kernel("gather_scaled", "cpu")(S, used)
        a = S[used].reshape(len(used) * 4, 50)
        want = (a * np.ldexp(1.0, -unit_exponents(a))[:, None]).reshape(len(used), 4, 50)
        np.testing.assert_array_equal(got, want)
        finite = np.abs(np.where(np.isfinite(got), got, 0.0)).max(axis=2)
        normal = np.abs(np.where(np.isfinite(S[used]), S[used], 0.0)).max(axis=2) > 1e-300
        assert ((finite >= 0.5) & (finite < 1))[normal].all()  # (subnormal: e >= -1021)
