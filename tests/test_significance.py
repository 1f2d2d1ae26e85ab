"""Surrogates, p-values, FDR, convergence and time-lagged cross maps (xedm.stats, the
significance options of ccm and xmap) against tests/naive.py and known structure."""

import naive
import numpy as np
import pytest
import xarray as xr
from scipy.stats import kendalltau

import xedm
from conftest import logistic
from xedm.stats.surrogates import make_surrogates


def ar1(n_series, T, phi=0.9, seed=0):
    return xedm.datasets.ar1(n_series, T, phi, seed=seed).values


def drive(T, lag=1, beta=0.32, seed=0):
    """x (logistic) drives y with a delay: y[t+1] = y[t] (3.7 - 3.7 y[t] - beta x[t+1-lag])."""
    x = logistic(T + 50, r=3.8, x0=0.2 + 0.01 * seed)
    y = np.full(T + 50, 0.4)
    for t in range(lag, T + 49):
        y[t + 1] = y[t] * (3.7 - 3.7 * y[t] - beta * x[t + 1 - lag])
    return x[50:], y[50:]


# ---------------------------------------------------------------- surrogates
@pytest.mark.quick
def test_ebisuzaki_keeps_the_amplitude_spectrum():
    rng = np.random.default_rng(1)
    for T in (200, 201):  # even length: the Nyquist term keeps its size
        x = np.cumsum(rng.standard_normal(T))
        s, _ = make_surrogates(x[None], "ebisuzaki", 30, seed=5)
        amp = np.abs(np.fft.rfft(x))
        np.testing.assert_allclose(np.abs(np.fft.rfft(s[0], axis=-1)), np.broadcast_to(
            amp, (30, len(amp))), rtol=1e-9, atol=1e-9 * amp.max())
        np.testing.assert_allclose(s[0].mean(axis=1), x.mean(), rtol=1e-12)
        # the phases are new: the surrogates are not the series (nor each other)
        assert np.abs(np.corrcoef(s[0])[np.triu_indices(30, 1)]).max() < 0.95
        assert np.all(np.abs(s[0] - x).max(axis=1) > 0.1 * x.std())


@pytest.mark.quick
@pytest.mark.parametrize("method, kw", [("shuffle", {}), ("block", {"block_length": 7})])
def test_shuffle_and_block_keep_values_and_gaps(method, kw):
    x = logistic(150, x0=0.3)
    x[[0, 40, 41, 149]] = np.nan
    da = xr.DataArray(x, dims="time")
    s = xedm.surrogates(da, method, n=12, seed=2, **kw)
    assert s.dims == ("surrogate", "time") and s.sizes["surrogate"] == 12
    fin = np.isfinite(x)
    for row in s.values:
        assert np.array_equal(np.isfinite(row), fin)  # the gaps stay where they are
        if method == "shuffle":
            np.testing.assert_array_equal(np.sort(row[fin]), np.sort(x[fin]))
        else:  # every value is one of the series', in runs of consecutive finite values
            vals = x[fin]
            pos = [int(np.flatnonzero(vals == v)[0]) for v in row[fin]]
            steps = np.diff(pos) % len(vals)
            assert np.mean(steps == 1) >= 1 - 1.5 / kw["block_length"]
    assert not np.array_equal(s.values[0], s.values[1])


def test_seasonal_keeps_the_cycle_and_the_residuals():
    t = np.arange(360)
    rng = np.random.default_rng(3)
    x = 2.0 * np.sin(2 * np.pi * t / 12) + rng.standard_normal(360)
    s = xedm.surrogates(xr.DataArray(x, dims="time"), "seasonal", n=8, seed=1, period=12)
    # the cycle: phase means, smoothed to 3 harmonics (the documented construction)
    means = np.array([x[t % 12 == p].mean() for p in range(12)])
    C = np.fft.rfft(means)
    C[4:] = 0
    cyc = np.fft.irfft(C, n=12)[t % 12]
    for row in s.values:
        np.testing.assert_allclose(np.sort(row - cyc), np.sort(x - cyc), atol=1e-12)
    # surrogates keep the seasonality: correlated with the cycle like the data are
    r_data = np.corrcoef(x, cyc)[0, 1]
    assert all(abs(np.corrcoef(row, cyc)[0, 1] - r_data) < 0.15 for row in s.values)


def test_twin_surrogates_follow_the_trajectory():
    x = logistic(400, x0=0.21)
    s = xedm.surrogates(xr.DataArray(x, dims="time"), "twin", n=6, seed=0, E=2,
                        recurrence_rate=0.1)
    assert 0 < s.attrs["twin_share"][0] <= 1 and s.attrs["twin_eps"][0] > 0
    for row in s.values:
        assert np.isin(row, x).all()  # pieces of the original trajectory
        # a twin jump is between states closer than eps: each step of the surrogate is a
        # step of the data from a state within eps of the surrogate's previous state
        assert not np.array_equal(row, x)
    # the twins are the states with identical recurrence rows (checked directly)
    from xedm.stats.surrogates import _twin_classes

    cls, eps = _twin_classes(x, 2, 1, "euclidean", recurrence_rate=0.1)
    V = np.stack([x[1:], x[:-1]], axis=1)
    R = np.linalg.norm(V[:, None] - V[None], axis=-1) < eps
    for a in range(0, len(V), 37):
        same = np.flatnonzero((R == R[a]).all(axis=1))
        np.testing.assert_array_equal(same, np.flatnonzero(cls == cls[a]))


def test_surrogates_reproducible_and_per_series():
    X = ar1(3, 120, seed=4)
    da = xr.DataArray(X, dims=("unit", "time"), coords={"unit": ["a", "b", "c"]})
    before = X.copy()
    one = xedm.surrogates(da, n=5, seed=9)
    assert one.dims == ("surrogate", "unit", "time")
    np.testing.assert_array_equal(X, before)  # input untouched
    np.testing.assert_array_equal(one.values, xedm.surrogates(da, n=5, seed=9).values)
    assert not np.array_equal(one.values, xedm.surrogates(da, n=5, seed=10).values)
    # a series' surrogates do not depend on the others: its stream is its index's
    first = xedm.surrogates(da.isel(unit=[0]), n=5, seed=9)
    np.testing.assert_array_equal(first.values[:, 0], one.values[:, 0])
    ds = xedm.surrogates(da.to_dataset(dim="unit"), "shuffle", n=4, seed=1)
    assert ds.a.dims == ("surrogate", "time") and ds.attrs["surrogate_method"] == "shuffle"


def test_surrogate_gaps_and_errors():
    x = np.r_[np.nan, np.nan, logistic(100, x0=0.4), np.nan]
    s = xedm.surrogates(xr.DataArray(x, dims="time"), n=3, seed=0)
    assert np.array_equal(np.isfinite(s.values[0]), np.isfinite(x))  # leading/trailing NaN
    x[50] = np.nan
    with pytest.raises(ValueError, match="NaN inside.*interpolate_na.*'shuffle'"):
        xedm.surrogates(xr.DataArray(x, dims="time"), n=3, seed=0)
    da = xr.DataArray(logistic(100), dims="time")
    with pytest.raises(ValueError, match="method='seasonal' needs period="):
        xedm.surrogates(da, "seasonal")
    with pytest.raises(ValueError, match="method='block' needs block_length="):
        xedm.surrogates(da, "block")
    with pytest.raises(ValueError, match="surrogate method='fourier' is invalid"):
        xedm.surrogates(da, "fourier")
    with pytest.raises(ValueError, match="n must be >= 1"):
        xedm.surrogates(da, n=0)
    with pytest.raises(ValueError, match="recurrence_rate"):
        xedm.surrogates(da, "twin", recurrence_rate=2)
    with pytest.raises(TypeError, match="DataArray or Dataset"):
        xedm.surrogates(np.zeros(10))
    with pytest.raises(ValueError, match="surrogate_options|period"):
        da.expand_dims(s=2).edm.xmap(series_dim="s", E=2, surrogates=5, surrogate_method="seasonal")


# ---------------------------------------------------------------- p-values and FDR
def test_xmap_p_values_against_a_loop_over_surrogates():
    X = ar1(4, 90, seed=7)
    X[1, [10, 11]] = np.nan
    da = xr.DataArray(X, dims=("s", "time"))
    E = [2, 3, 2, 1]
    # the surrogates the map uses are xedm.surrogates of each target with the same seed
    # (shuffle here: ebisuzaki refuses the gap in series 1)
    out = da.edm.xmap(series_dim="s", E=E, surrogates=5, seed=3, quantiles=[0.1, 0.9],
                      keep_null=True, exclusion_radius=1, surrogate_method="shuffle")
    S = xedm.surrogates(da, "shuffle", n=5, seed=3).transpose("s", "surrogate", "time").values
    rho = naive.xmap(X, E, excl=1)
    np.testing.assert_allclose(out.rho.values, rho, rtol=1e-9, atol=1e-12)
    null = np.empty((4, 4, 5))
    for i in range(4):
        for j in range(4):
            for s in range(5):
                null[i, j, s] = naive.simplex(X[i][None], S[j, s], E[j], Tp=0,
                                              excl=1)["rho"]
    np.testing.assert_allclose(out.rho_surrogate.values, null, rtol=1e-9, atol=1e-12)
    p = np.array([[naive.p_value(rho[i, j], null[i, j]) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(out.p_value.values, p, rtol=1e-12)
    np.testing.assert_allclose(out.rho_null.values, np.quantile(null, [0.1, 0.9], axis=-1)
                               .transpose(1, 2, 0), rtol=1e-12)
    off = ~np.eye(4, dtype=bool)
    q = np.full((4, 4), np.nan)
    q[off] = naive.bh(list(p[off]))
    np.testing.assert_allclose(out.q_value.values, q, rtol=1e-12)
    assert out.attrs["surrogate_method"] == "shuffle" and "off-diagonal" in out.attrs[
        "fdr_family"]


def test_ccm_p_values_and_convergence_against_naive():
    x, y = drive(120, lag=1, seed=1)
    ds = xr.Dataset({"x": ("time", x), "y": ("time", y)})
    sizes = [10, 30, 60, 119]
    out = ds.edm.ccm(["x", "y"], lib_sizes=sizes, E=2, samples=4, seed=5, surrogates=4,
                     keep_null=True, keep_samples=True, n_boot=200)
    # the k-th series of the call draws from stream k: the surrogates of the stacked series
    S = xedm.surrogates(ds.to_array("v"), n=4, seed=5).transpose("v", "surrogate", "time")
    X = np.stack([x, y])
    for i in range(2):
        for j in range(2):
            ref = naive.ccm_pair(X[i], X[j], 2, sizes, 4, 5)
            np.testing.assert_allclose(out.rho_sample.values[i, j], ref, rtol=1e-9)
            mean = ref.mean(axis=1)
            null = np.stack([naive.ccm_pair(X[i], S.values[j, s], 2, sizes, 4, 5)
                             .mean(axis=1) for s in range(4)], axis=1)
            np.testing.assert_allclose(out.rho_surrogate.values[i, j], null, rtol=1e-9)
            p = [naive.p_value(mean[a], null[a]) for a in range(len(sizes))]
            np.testing.assert_allclose(out.p_value.values[i, j], p, rtol=1e-12)
            # convergence: scipy's Kendall tau, the Fisher z formula, the bootstrap
            res = kendalltau(sizes, mean, alternative="greater")
            np.testing.assert_allclose(out.kendall_tau.values[i, j], res.statistic)
            np.testing.assert_allclose(out.kendall_p.values[i, j], res.pvalue)
            z, pz = naive.fisher_z(mean[0], mean[-1], int(out.n_valid.values[i, j]))
            np.testing.assert_allclose([out.fisher_z.values[i, j], out.fisher_p.values[i, j]],
                                       [z, pz], rtol=1e-9)
            for a in range(len(sizes)):
                np.testing.assert_allclose(out.rho_ci.values[i, j, a],
                                           naive.bootstrap_interval(ref[a], 5, 200),
                                           rtol=1e-9, atol=1e-12)
    assert out.rho_ci.dims == ("library", "target", "lib_size", "ci")


def test_xmap_calibration_on_independent_ar1():
    """The target of issue 12: 20 independent AR(1) series (phi = 0.9, L = 300), 99
    ebisuzaki surrogates: p < 0.05 for at most 10% of the 380 ordered pairs (5% expected)."""
    X = ar1(20, 300, phi=0.9, seed=11)
    out = xr.DataArray(X, dims=("s", "time")).edm.xmap(series_dim="s", surrogates=99, seed=1,
                                                       progress=False)
    off = ~np.eye(20, dtype=bool)
    share = float((out.p_value.values[off] < 0.05).mean())
    raw = float((out.rho.values[off] > 0.3).mean())
    assert share <= 0.10, share
    assert raw > 2 * share  # the raw skill alone would flag many more
    assert np.nanmin(out.q_value.values) > 0.05  # no discovery at FDR 5%


def test_power_coupled_logistic():
    ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.1)  # x drives y only
    cm = ds.edm.xmap(columns=["x", "y"], E=2, surrogates=99, seed=2)
    assert float(cm.p_value.sel(library="y", target="x")) <= 0.01
    assert float(cm.p_value.sel(library="x", target="y")) > 0.05
    cc = ds.edm.ccm(["x", "y"], lib_sizes=[20, 100, 250, 499], E=2, samples=10, seed=2,
                    surrogates=99)
    assert float(cc.p_value.sel(library="y", target="x", lib_size=499)) <= 0.01
    assert float(cc.kendall_p.sel(library="y", target="x")) < 0.05


# ---------------------------------------------------------------- time-lagged cross maps
def test_xmap_lags_equal_one_map_per_lag():
    X = ar1(3, 80, seed=2) + np.sin(np.arange(80) * 0.4)
    X[2, 30] = np.nan
    da = xr.DataArray(X, dims=("s", "time"))
    lags = [-3, 0, 2]
    out = da.edm.xmap(series_dim="s", E=[2, 3, 2], Tp=lags)
    assert out.rho.dims == ("library", "target", "Tp")
    for tp in lags:
        one = da.edm.xmap(series_dim="s", E=[2, 3, 2], Tp=tp)
        np.testing.assert_array_equal(out.rho.sel(Tp=tp).values, one.rho.values)
    best = np.asarray(lags)[np.nanargmax(out.rho.values, axis=-1)]
    np.testing.assert_array_equal(out.best_Tp.values, best)


def test_ccm_lags_share_libraries():
    x, y = drive(100, lag=2, seed=3)
    X = np.stack([x, y])
    ds = xr.Dataset({"x": ("time", x), "y": ("time", y)})
    lags = [-2, 0, 1]
    out = ds.edm.ccm(["x", "y"], lib_sizes=[15, 60], E=2, samples=3, seed=4, Tp=lags,
                     keep_samples=True)
    # library points valid at every lag: complete window and every t + Tp inside
    valid = [t for t in range(1, 100) if t - 2 >= 0 and t + 1 <= 99]
    for i in range(2):
        for j in range(2):
            for a, tp in enumerate(lags):
                ref = naive.ccm_pair(X[i], X[j], 2, [15, 60], 3, 4, Tp=tp, valid=valid)
                np.testing.assert_allclose(out.rho_sample.values[i, j, a], ref, rtol=1e-9)
    single = ds.edm.ccm(["x", "y"], lib_sizes=[15, 60], E=2, samples=3, seed=4, Tp=[0])
    np.testing.assert_array_equal(single.rho.sel(Tp=0).values,
                                  ds.edm.ccm(["x", "y"], lib_sizes=[15, 60], E=2, samples=3,
                                             seed=4).rho.values)


@pytest.mark.parametrize("lag", [1, 3])
def test_extended_ccm_recovers_the_lag(lag):
    x, y = drive(600, lag=lag)
    ds = xr.Dataset({"x": ("time", x), "y": ("time", y)})
    lags = list(range(-6, 4))
    cm = ds.edm.xmap(columns=["x", "y"], E=3, Tp=lags)
    # y's manifold recovers its driver best at the driver's delay, in the past (Tp < 0)
    assert int(cm.best_Tp.sel(library="y", target="x")) == -lag
    cc = ds.edm.ccm(["x", "y"], lib_sizes=[100, 590], E=3, samples=5, seed=0, Tp=lags)
    assert int(cc.best_Tp.sel(library="y", target="x")) == -lag


def test_significance_argument_errors():
    da = xr.DataArray(ar1(2, 60), dims=("s", "time"))
    with pytest.raises(ValueError, match="surrogates must be >= 0"):
        da.edm.xmap(series_dim="s", E=2, surrogates=-1)
    with pytest.raises(TypeError, match="surrogates must be an integer"):
        da.edm.xmap(series_dim="s", E=2, surrogates=2.5)
    with pytest.raises(ValueError, match="quantiles"):
        da.edm.xmap(series_dim="s", E=2, surrogates=3, quantiles=[1.5])
    with pytest.raises(ValueError, match="repeats"):
        da.edm.xmap(series_dim="s", E=2, Tp=[0, 0])
    with pytest.raises(ValueError, match="Tp=.*leaves no target|library points"):
        da.edm.ccm(series_dim="s", E=2, lib_sizes=[10], Tp=[0, 70])
    with pytest.raises(TypeError, match="surrogate_options must be a dict"):
        da.edm.xmap(series_dim="s", E=2, surrogates=3, surrogate_options=3)


def test_benchmark_quick_runs(tmp_path):
    """benchmarks/significance.py --quick runs end to end (so the benchmark cannot rot)."""
    import json
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    out = tmp_path / "sig.json"
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "significance.py"),
                           "--quick", "--repeat", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert {"cost", "calibration", "power", "peers"} <= set(res)
    assert all(r["ratio"] > 0 for r in res["cost"])
    assert 0 <= res["calibration"]["mean_share_p_below_0.05"] <= 1


def test_significance_plots():
    import matplotlib

    matplotlib.use("Agg")
    x, y = drive(300, lag=2, seed=2)
    ds = xr.Dataset({"x": ("time", x), "y": ("time", y)})
    lags = [-4, -3, -2, -1, 0, 1]
    lagged = ds.edm.xmap(columns=["x", "y"], E=2, Tp=lags, surrogates=9, seed=0)
    ax = lagged.edm.plot()  # dispatches to the lag plot
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    line = lines["x → y"]  # library y, target x
    np.testing.assert_array_equal(line.get_xdata(), lags)
    np.testing.assert_array_equal(line.get_ydata(),
                                  lagged.rho.sel(library="y", target="x").values)
    peaks = [ln for ln in ax.get_lines() if ln.get_marker() == "*"]
    assert any(ln.get_xdata()[0] == int(lagged.best_Tp.sel(library="y", target="x"))
               for ln in peaks)
    assert len(ax.collections) == 2  # one null band per pair
    cc = ds.edm.ccm(["x", "y"], lib_sizes=[10, 50, 299], E=2, samples=5, seed=1, Tp=lags)
    ax = xedm.plot.lag_plot(cc)
    np.testing.assert_array_equal(
        [ln for ln in ax.get_lines() if ln.get_label() == "x → y"][0].get_ydata(),
        cc.rho.sel(library="y", target="x", lib_size=299).values)
    with pytest.raises(ValueError, match="list of Tp"):
        xedm.plot.lag_plot(ds.edm.xmap(columns=["x", "y"], E=2))


def test_significance_with_dask_and_memory_guard(monkeypatch):
    X = ar1(4, 120, seed=5)
    da = xr.DataArray(np.stack([X, X[::-1]]), dims=("batch", "s", "time"))
    eager = da.edm.xmap(series_dim="s", E=2, surrogates=9, seed=1, Tp=[-1, 0])
    lazy = da.chunk({"batch": 1}).edm.xmap(series_dim="s", E=2, surrogates=9, seed=1, Tp=[-1, 0])
    assert lazy.p_value.chunks is not None
    names = ["rho", "p_value", "q_value", "rho_null", "best_Tp"]
    xr.testing.assert_identical(lazy[names].compute(), eager[names])
    one = da.isel(batch=1).edm.xmap(series_dim="s", E=2, surrogates=9, seed=1, Tp=[-1, 0])
    xr.testing.assert_identical(eager[names].isel(batch=1).reset_coords(drop=True),
                                one[names].reset_coords(drop=True))  # each slice alone
    monkeypatch.setattr("xedm.memory.total_memory", lambda: 2**20)
    with pytest.raises(ValueError, match="surrogates=99 .* use fewer surrogates"):
        da.edm.xmap(series_dim="s", E=2, surrogates=99)


def test_normal_p_values_against_naive_and_calibrated():
    X = ar1(20, 300, phi=0.9, seed=11)
    da = xr.DataArray(X, dims=("s", "time"))
    out = da.edm.xmap(series_dim="s", surrogates=99, seed=1, p_method="normal", keep_null=True,
                      progress=False)
    ref = np.array([[naive.normal_p_value(out.rho.values[i, j], out.rho_surrogate.values[i, j])
                     for j in range(20)] for i in range(20)])
    np.testing.assert_allclose(out.p_value.values, ref, rtol=1e-9)
    off = ~np.eye(20, dtype=bool)
    assert (out.p_value.values[off] < 0.05).mean() <= 0.10  # calibrated like the empirical
    assert out.attrs["p_method"] == "normal"
    # below the empirical floor 1/(1 + n) for a real link, so that BH can pass it
    ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.1)
    cm = ds.edm.xmap(columns=["x", "y"], E=2, surrogates=99, seed=2, p_method="normal")
    assert float(cm.p_value.sel(library="y", target="x")) < 1e-4
    with pytest.raises(ValueError, match="p_method='t' is invalid"):
        da.edm.xmap(series_dim="s", E=2, surrogates=3, p_method="t")


def test_phase_spectrum_kernel_equals_numpy():
    from xedm.kernels import get_kernel

    rng = np.random.default_rng(3)
    amp = rng.random(257) * 10.0
    phase = rng.uniform(0.0, 2.0 * np.pi, (9, 257))
    got = get_kernel("phase_spectrum", "cpu")(amp, phase)
    np.testing.assert_allclose(got, amp * np.exp(1j * phase), rtol=1e-15, atol=1e-14)


# ---------------------------------------------------------------- stats.significance helpers
@pytest.mark.parametrize("p_method", ["empirical", "normal"])
def test_null_significance_and_map_qvalues_against_naive(p_method):
    from xedm.stats.significance import map_qvalues, null_significance

    rng = np.random.default_rng(4)
    n, nTp, n_sur = 4, 2, 7
    obs = np.tanh(rng.standard_normal((n, n, nTp)))
    null = np.tanh(rng.standard_normal((n, n, nTp, n_sur)) * 0.5)
    obs[0, 1, 0] = np.nan  # NaN observed: NaN p
    null[2, 3, 1] = np.nan  # no finite null: NaN p
    null[1, 2, 0, :5] = np.nan  # a partial null: fewer surrogates count (and 2 for the fit)
    null[3, 0, 1, 2] = obs[3, 0, 1]  # a tie counts as >=
    quantiles = [0.1, 0.5, 0.9]
    p, q = null_significance(obs, null, quantiles, p_method)
    ref = naive.p_value if p_method == "empirical" else naive.normal_p_value
    want = np.vectorize(lambda i, j, t: ref(obs[i, j, t], null[i, j, t]))(
        *np.indices(obs.shape))
    np.testing.assert_allclose(p, want, rtol=1e-12, equal_nan=True)
    assert np.isnan(p[0, 1, 0]) and np.isnan(p[2, 3, 1])
    for i, j, t in np.ndindex(obs.shape):
        fin = null[i, j, t][np.isfinite(null[i, j, t])]
        np.testing.assert_allclose(q[i, j, t], np.quantile(fin, quantiles) if fin.size else
                                   np.full(3, np.nan), rtol=1e-12, equal_nan=True)
    qv = map_qvalues(p)
    off = ~np.eye(n, dtype=bool)
    for t in range(nTp):
        want_q = np.full((n, n), np.nan)
        want_q[off] = naive.bh(list(p[:, :, t][off]))
        np.testing.assert_allclose(qv[:, :, t], want_q, rtol=1e-12, equal_nan=True)
