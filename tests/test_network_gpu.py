"""causal_network's predictive conditioning on the GPU: the CuPy twins of its kernels
against the CPU's and tests/naive.py (skipped without a GPU).

Tolerances: the signed-rank sums S and V are sums of integers (equal); the lag-1
autocorrelation and the squares are block sums (rounding); the errors are the CPU's sums in
the CPU's order without fused multiply-add (rounding).  p and gain to rtol 1e-6 (a rounding
difference can swap the ranks of two nearly equal |d|), the selection equal.
"""

from __future__ import annotations

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.core.pairs import all_pairs
from xedm.core.predictive import predictive_tests
from xedm.kernels import get_kernel, gpu_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU"),
]


def test_rank_stats_gpu_equals_cpu():
    import cupy as cp

    rng = np.random.default_rng(0)
    for n_max in (1, 7, 300, 1500, 5000):  # shared-memory sorts of 64 to 8,192 entries
        A = np.round(rng.standard_normal((9, n_max)), 1)  # ties in |d|, zero differences
        B = np.round(rng.standard_normal((3, n_max)), 1)
        A[2, ::3] = np.nan
        B[1, :4] = np.inf
        A[5] = B[0]  # every d = 0
        ra = np.arange(9)
        rb = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
        nn = np.array([n_max, max(n_max - 1, 1), n_max, 1, n_max, n_max, n_max // 2 + 1,
                       n_max, n_max])
        cpu = get_kernel("rank_stats", "cpu")(A, ra, B, rb, nn)
        st = get_kernel("conditional_state", "gpu")(np.zeros((1, 3)), [0], [1], [0], 4)
        gpu = st.stats(cp.asarray(A), ra, cp.asarray(B), rb, nn)
        for c, g in zip(cpu, gpu, strict=True):
            np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(gpu[0], cpu[0])  # S and V: sums of integers
        np.testing.assert_array_equal(gpu[1], cpu[1])


def test_screen_gpu_equals_cpu():
    # the residual screen's scores on the device equal the host's (and so the candidates,
    # scores apart by more than rounding)
    import cupy as cp

    from xedm.core.predictive import predictive_tests, standardize
    from xedm.core.screen import candidates, residual_scores

    rng = np.random.default_rng(5)
    Z = standardize(rng.standard_normal((30, 200)))
    e0 = rng.standard_normal((30, 200))
    e0[4, 7] = np.nan
    t0 = rng.integers(2, 6, 30)
    cpu = residual_scores(np, Z, e0, t0, 3, np.arange(30))
    gpu = residual_scores(cp, cp.asarray(Z), cp.asarray(e0), t0, 3, np.arange(30)).get()
    np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-13)
    allowed = all_pairs(30)
    np.testing.assert_array_equal(
        candidates(cp, cp.asarray(Z), cp.asarray(e0), t0, 3, allowed, 6),
        candidates(np, Z, e0, t0, 3, allowed, 6))
    # and through the selection: a network larger than its candidates per series
    X = xedm.datasets.sparse_network(24, 300, seed=2).x.values
    E = np.full(24, 2)
    kw = dict(screen=5, max_lag=2, alternatives=())
    c = predictive_tests(X, E, **kw)
    g = predictive_tests(X, E, backend="gpu", **kw)
    np.testing.assert_array_equal(np.isfinite(g[1]), np.isfinite(c[1]))  # the same tested
    np.testing.assert_array_equal(g[2], c[2])


def test_pair_null_gpu_equals_cpu():
    from xedm.core.network import library_E_xmap
    from xedm.core.pair_null import pair_null
    from xedm.stats.surrogates import make_surrogates

    X = xedm.datasets.sparse_network(40, 400, seed=3).x.values
    E = np.random.default_rng(1).integers(1, 5, 40)
    S, _ = make_surrogates(X, "ebisuzaki", 9, 0)
    pool = np.random.default_rng(0).random((40, 40)) < 0.2
    np.fill_diagonal(pool, False)
    kw = dict(tau=1, Tp=[-2, -1, 0], knn=None, excl=0)
    rho = library_E_xmap(X, E=E, backend="cpu", **kw)["rho"]
    cpu = pair_null(X, S, E, pool, rho, backend="cpu", **kw)
    gpu = pair_null(X, S, E, pool, rho, backend="gpu", **kw)
    full = library_E_xmap(X, E=E, S=S, backend="gpu", **kw)
    for name in ("count_ge", "n_null"):
        np.testing.assert_array_equal(gpu[name], cpu[name])
        np.testing.assert_array_equal(gpu[name][pool], full[name][pool])
    for name in ("z_mean", "z_sd"):
        np.testing.assert_allclose(gpu[name][pool], cpu[name][pool], rtol=1e-10)
        np.testing.assert_allclose(gpu[name][pool], full[name][pool], rtol=1e-10)


@pytest.mark.parametrize("N, T, seed", [(4, 60, 3), (12, 300, 1)])
def test_predictive_conditioning_gpu_equals_cpu(N, T, seed):
    X = xedm.datasets.many_series(N, T, density=0.4, seed=seed).x.values
    E = (np.arange(N) % 4) + 1  # own lags enter like candidates
    cpu = predictive_tests(X, E, backend="cpu")
    gpu = predictive_tests(X, E, backend="gpu")
    off = ~np.eye(N, dtype=bool)
    np.testing.assert_array_equal(gpu[2], cpu[2])
    np.testing.assert_allclose(gpu[0][off], cpu[0][off], rtol=1e-6, atol=1e-12)
    # a gain below -0.5 (the candidate's model doubles the squared error or worse) comes from
    # nearly singular local fits, whose errors amplify rounding
    sane = off & (cpu[1] > -0.5)
    np.testing.assert_allclose(gpu[1][sane], cpu[1][sane], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gpu[1][off], cpu[1][off], rtol=1e-2)
    assert cpu[2].any() and (off & ~cpu[2]).any()
    if N == 4:  # and the naive reference, as the CPU test
        p0, gain0, sel0, lag0 = naive.predictive_conditioning(X, E)
        np.testing.assert_array_equal(gpu[2], sel0)
        np.testing.assert_allclose(gpu[0][off], p0[off], rtol=1e-6, atol=1e-12)


def test_predictive_conditioning_gpu_with_driver_delays():
    # the CPU test's delayed case (tests/test_network.py): delays 1..3, a narrow
    # neighbourhood (another compiled K), against the CPU and the naive reference
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from _network_cases import coupled_maps

    X, _, _ = coupled_maps(5, 90, lags=(2, 3), density=0.3, seed=4)
    E = np.array([1, 2, 1, 1, 2])
    kw = dict(max_lag=3, neighborhood=(6, 30))
    cpu = predictive_tests(X, E, backend="cpu", **kw)
    gpu = predictive_tests(X, E, backend="gpu", **kw)
    p0, gain0, sel0, lag0 = naive.predictive_conditioning(X, E, max_lag=3, extra=6, near=30)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_array_equal(gpu[2], cpu[2])
    np.testing.assert_array_equal(gpu[2], sel0)
    np.testing.assert_array_equal(gpu[4][off], lag0[off])
    np.testing.assert_allclose(gpu[0][off], p0[off], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(gpu[1][off], cpu[1][off], rtol=1e-6, atol=1e-9)
    assert (gpu[4][gpu[2]] > 1).any()


def test_predictive_conditioning_gpu_cap_and_constant_series():
    # more candidates than max_candidates: the cap in play on both devices; a constant series
    X = xedm.datasets.many_series(20, 200, density=0.2, seed=4).x.values.copy()
    X[3] = 0.25
    E = np.full(20, 2)
    cpu = predictive_tests(X, E, backend="cpu", max_candidates=5)
    gpu = predictive_tests(X, E, backend="gpu", max_candidates=5)
    np.testing.assert_array_equal(gpu[2], cpu[2])
    off = ~np.eye(20, dtype=bool)
    np.testing.assert_allclose(gpu[0][off], cpu[0][off], rtol=1e-6, atol=1e-12)
    assert not gpu[2][3].any() and not gpu[2][:, 3].any()


def test_causal_network_gpu_equals_cpu():
    ds = xedm.datasets.many_series(8, 400, seed=1)
    da = xr.DataArray(ds.x.values, dims=("series", "time"))
    kw = dict(seed=0, surrogates=9, E_max=4, progress=False)
    cpu = xedm.causal_network(da, backend="cpu", **kw)
    gpu = xedm.causal_network(da, backend="gpu", **kw)
    assert gpu.attrs["backend"] == "gpu"
    np.testing.assert_array_equal(gpu.link.values, cpu.link.values)
    np.testing.assert_array_equal(gpu.selected.values, cpu.selected.values)
    # the three-way answers, outside series 2's drivers: it sits near a periodic orbit
    # (E = 4) whose local fits are nearly singular, so what they give is rounding (on the
    # H100 p = 1, its candidates' errors equal the base model's to the last bit; on the CPU
    # p 0.84-0.98, and a gain bound from that rounding made one of its pairs "undetermined"
    # on the CPU, "no link" on the H100); there both devices link nothing (compared above)
    rows = np.arange(8) != 2
    np.testing.assert_array_equal(gpu.decision.values[rows], cpu.decision.values[rows])
    assert not (gpu.decision.values[2] == "link").any()
    # p where both devices measured a gain, outside series 2
    both = np.isfinite(gpu.gain.values) & np.isfinite(cpu.gain.values)
    both[2] = False
    assert both.sum() >= 40
    np.testing.assert_allclose(gpu.gain_p.values[both], cpu.gain_p.values[both], rtol=1e-6,
                               atol=1e-12)
    np.testing.assert_array_equal(gpu.lag.values[both], cpu.lag.values[both])


@pytest.mark.parametrize("warp_max", [0, 6144])  # one thread per point; one warp per point
def test_pools_gpu_equal_cpu(monkeypatch, warp_max):
    import cupy as cp

    from xedm.kernels.predict import gpu_conditional

    monkeypatch.setattr(gpu_conditional, "WARP_MAX", warp_max)
    rng = np.random.default_rng(1)
    Z = np.round(rng.standard_normal((3, 300)), 1)  # ties in distance: time order decides
    Z[2, 100:140] = 0.5  # a run of equal values
    t0, n, excl = np.array([0, 2, 3]), np.array([299, 297, 296]), np.array([0, 3, 1])
    jobs = [(0, 0), (1, 0), (1, 1), (2, 0b101), (2, 0b011)]  # (series, own-lag mask)
    ps, pm = (np.array(v) for v in zip(*jobs, strict=True))
    off = np.concatenate([[0], np.cumsum(n[ps])[:-1]])
    cpu = np.full((int(n[ps].sum()), 40), -7, np.int32)
    get_kernel("conditional_state", "cpu")  # the numba module loaded
    from xedm.kernels.predict.cpu_conditional import conditional_pools

    conditional_pools(Z, t0, n, excl, ps, pm, off, cpu)
    st = get_kernel("conditional_state", "gpu")(Z, t0, n, excl, 40)
    rows = st.pools(ps, pm)
    flat = cp.asnumpy(st.pool_rows).ravel()
    for j, (i, _) in enumerate(jobs):
        gpu = flat[rows[j] * 40:(rows[j] + n[i]) * 40].reshape(40, n[i]).T
        np.testing.assert_array_equal(gpu, cpu[off[j]:off[j] + n[i]])


def test_warmup_compiles_every_default_fit_variant(monkeypatch):
    from xedm.kernels.predict import gpu_conditional

    monkeypatch.setattr(gpu_conditional, "_CACHE", {})  # not the other tests' variants
    info = xedm.warmup("gpu", E_max=3, functions=["causal_network"], lengths=[300])
    assert "errors" not in info
    from xedm.core.predictive import NEIGHBORHOOD

    extra, width = NEIGHBORHOOD
    mods = [v for v in info["variants"] if v.startswith("predict.gpu_conditional")]
    # the default fit's: pools per number of own coordinates (1..3), errors per number of
    # columns (2..12: E_max + 8 drivers + 1); the rank statistics' one module.  The wider
    # fits' variants (pool width 100) compile on first use: the warm-up's own small network
    # may choose one, so they are not counted
    default = [v for v in mods if f"_CACHE: ({width}," in v]
    assert len(default) == 3 + 11, mods
    assert all(f"('EXTRA', {extra})" in v for v in default if "'NC'" in v), default
    assert [v for v in info["variants"] if v.startswith("predict.gpu_rank")]
