"""ccm and xmap against tests/naive.py; known causal structure is recovered."""

import functools

import naive
import numpy as np
import pytest
import xarray as xr

import xedm
from conftest import logistic


def three_series(T=70, nan=True):
    x = logistic(T, x0=0.3)
    y = np.roll(x, 1) * 0.7 + 0.3 * logistic(T, x0=0.6)
    z = np.sin(np.arange(T) * 0.7) + 0.1 * x
    if nan:
        y[[11, 40]] = np.nan
    return np.stack([x, y, z])


@pytest.mark.parametrize("knn, excl, Tp", [(None, 0, 0),
                                          pytest.param(3, 2, 1, marks=pytest.mark.quick)])
def test_ccm_matches_naive(knn, excl, Tp):
    X = three_series()
    ds = xr.Dataset({n: ("time", X[i]) for i, n in enumerate("xyz")})
    E = [2, 3, 1]
    sizes = [6, 20, 69]
    out = ds.edm.ccm(["x", "y", "z"], lib_sizes=sizes, E=E, samples=3, seed=11, knn=knn,
                     exclusion_radius=excl, Tp=Tp, keep_samples=True)
    assert out.rho_sample.dims == ("library", "target", "lib_size", "sample")
    for i in range(3):
        for j in range(3):
            ref = naive.ccm_pair(X[i], X[j], E[i], sizes, 3, 11, Tp=Tp, knn=knn, excl=excl)
            np.testing.assert_allclose(out.rho_sample.values[i, j], ref, rtol=1e-9, atol=1e-12,
                                       err_msg=f"pair {i}->{j}")
            np.testing.assert_allclose(out.rho.values[i, j], np.nanmean(ref, axis=-1),
                                       rtol=1e-9)


@pytest.mark.parametrize("depth_factor", [4, 0])
def test_ccm_shallow_table_fallback_is_exact(monkeypatch, depth_factor):
    # depth_factor 0 leaves tables 16 deep: most rows fall back to the direct search
    monkeypatch.setattr("xedm.core.ccm.DEPTH_FACTOR", depth_factor)
    x = logistic(300, x0=0.21)
    y = logistic(300, x0=0.33)
    da = xr.DataArray(np.stack([x, y]), dims=("var", "time"), coords={"var": ["x", "y"]})
    out = da.edm.ccm(series_dim="var", lib_sizes=[40, 90], E=3, samples=2, seed=3,
                     keep_samples=True)
    ref = naive.ccm_pair(x, y, 3, [40, 90], 2, 3)
    np.testing.assert_allclose(out.rho_sample.sel(library="x", target="y").values, ref,
                               rtol=1e-9)


@pytest.mark.quick
def test_full_library_ccm_equals_simplex_crossmap():
    ds = xedm.datasets.coupled_logistic(300)
    out = ds.edm.ccm(["x", "y"], lib_sizes=[300], E=3, samples=2, seed=0)  # the whole data
    for lib, tgt in [("x", "y"), ("y", "x")]:
        s = xedm.simplex(ds, 3, columns=lib, target=tgt, Tp=0)
        np.testing.assert_allclose(out.rho.sel(library=lib, target=tgt, lib_size=300),
                                   float(s.rho), rtol=1e-9)


def test_ccm_recovers_causal_direction():
    # x drives y (beta_yx), y does not drive x (beta_xy = 0)
    ds = xedm.datasets.coupled_logistic(1000, beta_xy=0.0, beta_yx=0.32, r_x=3.7, r_y=3.72,
                                        transient=100)
    out = ds.edm.ccm(["x", "y"], lib_sizes=[10, 50, 200, 900], E=2, samples=20, seed=1)
    y_to_x = out.rho.sel(library="y", target="x")  # evidence that x causes y
    x_to_y = out.rho.sel(library="x", target="y")
    assert y_to_x[-1] > 0.9
    assert y_to_x[-1] > y_to_x[0] + 0.1  # converges with library size
    assert x_to_y[-1] < 0.5 * y_to_x[-1]


def test_ccm_reproducible_and_seeded():
    ds = xedm.datasets.coupled_logistic(200)
    a = ds.edm.ccm(["x", "y"], lib_sizes=[10, 50], E=2, samples=5, seed=4)
    b = ds.edm.ccm(["x", "y"], lib_sizes=[10, 50], E=2, samples=5, seed=4)
    c = ds.edm.ccm(["x", "y"], lib_sizes=[10, 50], E=2, samples=5, seed=5)
    xr.testing.assert_identical(a, b)
    assert not np.allclose(a.rho.values, c.rho.values)
    d = ds.edm.ccm(["x", "y"], lib_sizes=[10], E=2, samples=2)
    assert isinstance(d.attrs["seed"], int)


# 0: the depth bound for many NaN patterns
@pytest.mark.parametrize("exact_sets", [pytest.param(64, marks=pytest.mark.quick), 0])
def test_xmap_matches_naive_with_target_E_and_nan(exact_sets, monkeypatch):
    from xedm.core import ccm as core

    monkeypatch.setattr(core, "EXACT_LOST_SETS", exact_sets)
    X = three_series(60)
    X[2, [5, 33]] = np.nan  # a third NaN pattern
    E = np.array([2, 1, 3])
    da = xr.DataArray(X, dims=("neuron", "time"), coords={"neuron": ["a", "b", "c"]})
    out = da.edm.xmap(series_dim="neuron", E=E)
    np.testing.assert_allclose(out.rho.values, naive.xmap(X, E), rtol=1e-9)
    assert out.E.dims == ("target",)
    out = da.edm.xmap(series_dim="neuron", E=E, Tp=1, knn=2, exclusion_radius=1)
    np.testing.assert_allclose(out.rho.values, naive.xmap(X, E, Tp=1, knn=2, excl=1),
                               rtol=1e-9)


@functools.lru_cache
def _naive_xmap_many_series(E):
    """naive.xmap of test_xmap_chooses_E_per_series's series with E chosen (a tuple): both of
    its cases check the same map, so the slow reference is computed once."""
    return naive.xmap(xedm.datasets.many_series(4, 200, seed=2).x.values, np.array(E))


@pytest.mark.parametrize("one_per_batch", [False, True])
def test_xmap_chooses_E_per_series(one_per_batch, monkeypatch):
    from xedm.core import ccm as core

    if one_per_batch:  # every series its own batch, for the choice of E and for the tables
        monkeypatch.setattr(core, "SWEEP_BYTES", 1)
        monkeypatch.setattr(core, "XMAP_TABLE_BYTES", 1)
    ds = xedm.datasets.many_series(4, 200, seed=2)
    da = ds.x
    sd = da.dims[0]
    out = da.edm.xmap(series_dim=sd, E_max=5)
    for i in range(4):
        best = da.isel({sd: i}).edm.embed_dimension(E_max=5).attrs["best_E"]
        assert int(out.E[i]) == best
    ref = _naive_xmap_many_series(tuple(int(e) for e in out.E.values))
    np.testing.assert_allclose(out.rho.values, ref, rtol=1e-9)


def test_xmap_broadcast_and_dask():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 3, 80)).cumsum(axis=-1)
    da = xr.DataArray(X, dims=("trial", "neuron", "time"))
    out = da.edm.xmap(series_dim="neuron", E=2)
    assert out.rho.dims == ("trial", "library", "target")
    lazy = da.chunk({"trial": 1}).edm.xmap(series_dim="neuron", E=2)
    xr.testing.assert_allclose(lazy.compute(), out)
    np.testing.assert_allclose(out.rho.values[1], naive.xmap(X[1], [2, 2, 2]), rtol=1e-9)


def test_cross_map_errors():
    ds = xedm.datasets.coupled_logistic(100)
    with pytest.raises(ValueError, match="lib_sizes must be >= knn"):
        ds.edm.ccm(["x", "y"], lib_sizes=[2, 50], E=3)
    with pytest.raises(ValueError, match="one per series"):
        ds.edm.ccm(["x", "y"], lib_sizes=[20], E=[2, 3, 4])
    with pytest.raises(ValueError, match="unknown variable"):
        ds.edm.ccm(["x", "q"], lib_sizes=[20], E=2)
    with pytest.raises(ValueError, match="series dimension"):
        ds.x.edm.xmap(series_dim="neuron")
    with pytest.raises(ValueError, match="at least two"):
        ds.edm.ccm(["x"], lib_sizes=[20], E=2)


def test_library_draws_are_subsets_of_the_right_size_and_uniform():
    from xedm.core.ccm import draw_members

    valid = np.ones(60, bool)
    valid[[3, 10, 11, 40]] = False
    n = int(valid.sum())
    sizes = [5, 30, 50, n, n + 7]
    members = draw_members(valid, sizes, 400, seed=7)
    assert members.shape == (len(sizes) * 400, 60)
    assert not members[:, ~valid].any()  # only valid points
    counts = members.sum(axis=1).reshape(len(sizes), 400)
    want = np.broadcast_to(np.minimum(sizes, n)[:, None], counts.shape)
    np.testing.assert_array_equal(counts, want)
    # every valid point equally likely: inclusion frequency L/n within 5 binomial sds
    for a, L in enumerate(sizes[:3]):
        freq = members[a * 400:(a + 1) * 400][:, valid].mean(axis=0)
        sd = np.sqrt(L / n * (1 - L / n) / 400)
        assert np.all(np.abs(freq - L / n) < 5 * sd + 1e-12)
    again = draw_members(valid, sizes, 400, seed=7)
    np.testing.assert_array_equal(members, again)
    assert not np.array_equal(members, draw_members(valid, sizes, 400, seed=8))


@pytest.mark.parametrize("tau, excl, knn", [(1, 0, None), (2, 3, 4), (70, 0, None)])
def test_simplex_sweep_matches_naive_per_E(tau, excl, knn):
    """The fused sweep (choice of E) predicts as naive.simplex leave-one-out at Tp=1, for every
    E of the list, series with NaN gaps included; choose_E picks naive's best E."""
    from xedm.core import ccm as core
    from xedm.core.embed import candidate_range, padded_series, windows_finite
    from xedm.core.simplex import finite_or_zero
    from xedm.kernels import get_kernel

    rng = np.random.default_rng(3)
    X = np.stack([logistic(150, x0=0.2), logistic(150, x0=0.7) + 0.01 * rng.random(150),
                  np.sin(np.arange(150) * 0.5) + 0.05 * rng.standard_normal(150)])
    X[1, [20, 21, 90]] = np.nan
    X_in = X.copy()
    E_tab = np.array([1, 2, 3, 5, 6] if tau < 10 else [1, 2], np.int64)  # tau = 70: no bound
    fin = np.isfinite(X)
    win = windows_finite(fin, E_tab, tau)
    lib_ok = win & core._target_ok(fin, X.shape[1], 1)[None]
    pred_t = np.flatnonzero(win[0].any(axis=0)).astype(np.int64)
    pred_ok = np.ascontiguousarray(win[:, :, pred_t])
    pad = int(E_tab[-1]) * tau
    lo, hi = candidate_range(lib_ok)
    k_list = E_tab + 1 if knn is None else np.full(len(E_tab), knn, np.int64)
    pred = get_kernel("simplex_sweep", "cpu")(
        padded_series(X[:, None, :], pad), pad, lib_ok, pred_t, pred_ok, E_tab, k_list, tau,
        excl, lo, hi, finite_or_zero(X), 1)
    assert pred.shape == (len(E_tab), 3, len(pred_t))
    rho = np.full((3, len(E_tab)), -np.inf)
    for i in range(3):
        for ie, E in enumerate(E_tab):
            ref = naive.simplex(X[i][None], X[i], int(E), tau=tau, Tp=1, knn=knn, excl=excl)
            if np.isfinite(ref["rho"]):
                rho[i, ie] = ref["rho"]
            got = np.full(X.shape[1] + 1, np.nan)
            got[pred_t + 1] = pred[ie, i]
            ref_full = np.full(X.shape[1] + 1, np.nan)
            ref_full[ref["out_t"]] = ref["prediction"]
            np.testing.assert_allclose(got, ref_full, rtol=1e-12, atol=1e-14, equal_nan=True)
    best = core.choose_E(X, E_tab=E_tab, tau=tau, knn=knn, excl=excl, backend="cpu")
    np.testing.assert_array_equal(best, E_tab[np.argmax(rho, axis=1)])
    np.testing.assert_array_equal(X, X_in)  # input untouched


def test_sweep_beyond_one_kernel_call():
    """More E values than one sweep call takes (64): the grouped sweep predicts as the table
    path (knn_sweep tables + simplex_predict) for every E, and choose_E takes its best E."""
    from xedm.core import ccm as core
    from xedm.core.embed import LibSpec, prepare
    from xedm.core.simplex import finite_or_zero, sweep_predict
    from xedm.kernels import get_kernel
    from xedm.neighbors.base import knn_tables

    X = np.stack([logistic(200, x0=0.3), np.sin(np.arange(200) * 0.3)])
    E_tab = np.arange(1, 67)
    k_list = E_tab + 1
    prep = prepare(X[:, None, :], X, E_tab, 1, 1, LibSpec.whole(200), np.ones(200, bool),
                   False)
    y = finite_or_zero(X)
    got = sweep_predict(prep, k_list, 0, y, 1, "cpu")
    idx, dist = knn_tables(prep, k_list, 0, backend="cpu", method="exact")
    predict = get_kernel("simplex_predict", "cpu")
    ref = np.stack([predict(idx[i], dist[i], prep.lib_ok[i], y, np.full(2, k), 1)
                    for i, k in enumerate(k_list)])
    ok = prep.pred_ok
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-13, atol=1e-15)
    assert np.isnan(got[~ok]).all()
    obs = np.full((2, len(prep.pred_t)), np.nan)
    inside = prep.pred_t + 1 < 200
    obs[:, inside] = X[:, prep.pred_t[inside] + 1]
    rho = np.array([[naive.skill(obs[b], np.where(ok[i, b], ref[i, b], np.nan))["rho"]
                     for b in range(2)] for i in range(len(E_tab))])
    best = core.choose_E(X, E_tab=E_tab, tau=1, knn=None, excl=0, backend="cpu")
    np.testing.assert_array_equal(best, E_tab[np.argmax(np.where(np.isfinite(rho), rho,
                                                                 -np.inf), axis=0)])


# ----------------------------------------------------------------- odd input (issue 9)
def _net(T=120):
    X = three_series(T, nan=False)
    return xr.DataArray(X, dims=("neuron", "time"), coords={"neuron": ["a", "b", "c"]})


@pytest.mark.parametrize("E", [2, None])
def test_xmap_some_series_all_nan(E):
    """All-NaN series: NaN rows and columns, a warning naming them, the other pairs as if the
    series were not there (bitwise)."""
    da = _net()
    da[1] = np.nan
    with pytest.warns(UserWarning, match="series \\['b'\\] along 'neuron' are all NaN"):
        out = da.edm.xmap(series_dim="neuron", E=E, E_max=4, progress=False)
    rho = out.rho.values
    assert np.isnan(rho[1]).all() and np.isnan(rho[:, 1]).all()
    ref = da.isel(neuron=[0, 2]).edm.xmap(series_dim="neuron", E=E, E_max=4, progress=False)
    np.testing.assert_array_equal(rho[np.ix_([0, 2], [0, 2])], ref.rho.values)
    np.testing.assert_array_equal(out.E.values[[0, 2]], ref.E.values)
    if E is None:
        assert int(out.E[1]) == 1  # no E has a skill: the smallest


def test_ccm_some_series_all_nan():
    da = _net()
    da[2] = np.nan
    kw = {"lib_sizes": [10, 50], "E": 2, "samples": 4, "seed": 3, "progress": False}
    with pytest.warns(UserWarning, match="series \\['c'\\] along 'neuron' are all NaN"):
        out = da.edm.ccm(series_dim="neuron", **kw)
    assert np.isnan(out.rho.values[2]).all() and np.isnan(out.rho.values[:, 2]).all()
    ref = da.isel(neuron=[0, 1]).edm.ccm(series_dim="neuron", **kw)
    np.testing.assert_array_equal(out.rho.values[:2, :2], ref.rho.values)
    assert (out.n_valid.values[2] == 0).all()


def test_xmap_all_nan_in_some_slices_and_dask():
    da = _net()
    X = xr.concat([da, da * np.nan], dim="trial")
    with pytest.warns(UserWarning, match="in some slices of the other dims"):
        out = X.edm.xmap(series_dim="neuron", E=2, progress=False)
    assert np.isnan(out.rho.values[1]).all()
    np.testing.assert_array_equal(out.rho.values[0],
                                  da.edm.xmap(series_dim="neuron", E=2, progress=False).rho.values)
    # dask: each chunk is checked at compute time; a chunk with nothing finite warns (the
    # others may be fine), and the results are those of numpy
    lazy = X.chunk({"trial": 1}).edm.xmap(series_dim="neuron", E=2, progress=False)
    with pytest.warns(UserWarning, match="one dask chunk of the data.*all NaN"):
        xr.testing.assert_identical(lazy.compute(), out)
    lazy = X.chunk({"trial": 2}).edm.xmap(series_dim="neuron", E=2, progress=False)
    with pytest.warns(UserWarning, match="all NaN"):
        xr.testing.assert_identical(lazy.compute(), out)
    with pytest.raises(ValueError, match="all NaN"):  # numpy: the whole data, nothing finite
        X.isel(trial=[1]).edm.xmap(series_dim="neuron", E=2, progress=False)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int16", "int64"])
def test_cross_map_dtypes_cast_to_float64(dtype):
    da = (_net() * 100).astype(dtype)
    ref64 = da.astype(np.float64)
    kw = {"lib_sizes": [10, 60], "E": 2, "samples": 3, "seed": 1, "progress": False}
    xr.testing.assert_identical(da.edm.xmap(series_dim="neuron", E=2, progress=False),
                                ref64.edm.xmap(series_dim="neuron", E=2, progress=False))
    xr.testing.assert_identical(da.edm.ccm(series_dim="neuron", **kw),
                                ref64.edm.ccm(series_dim="neuron", **kw))
    assert da.dtype == dtype  # the input keeps its dtype


def test_ccm_dask_equals_numpy():
    ds = xedm.datasets.coupled_logistic(150)
    kw = {"lib_sizes": [10, 100], "E": 2, "samples": 3, "seed": 2, "progress": False}
    xr.testing.assert_identical(ds.chunk({"time": 40}).edm.ccm(["x", "y"], **kw).compute(),
                                ds.edm.ccm(["x", "y"], **kw))


def test_ccm_lib_sizes_beyond_the_library():
    """Sizes at or above the valid library points use all of them: equal columns; sizes
    above the number of time points are refused (issue 43)."""
    ds = xedm.datasets.coupled_logistic(100)
    out = ds.edm.ccm(["x", "y"], lib_sizes=[20, 99, 100], E=2, samples=3, seed=0,
                     keep_samples=True, progress=False)
    assert (out.n_valid.values == 99).all()
    np.testing.assert_array_equal(out.rho.sel(lib_size=99), out.rho.sel(lib_size=100))
    with pytest.raises(ValueError, match="500 is larger than the data \\(100 time points\\)"):
        ds.edm.ccm(["x", "y"], lib_sizes=[20, 500], E=2, samples=3, seed=0)
    full = out.rho_sample.sel(lib_size=100).values
    np.testing.assert_array_equal(full, full[..., :1].repeat(3, axis=-1))  # samples equal


def test_cross_map_labels_time_and_layout():
    da = _net()
    ref_x = da.edm.xmap(series_dim="neuron", E=2, progress=False)
    ref_c = da.edm.ccm(series_dim="neuron", lib_sizes=[20], E=2, samples=2, seed=0, progress=False)
    # datetime time coordinate: same numbers
    dt = da.assign_coords(time=xr.date_range("2000-01-01", periods=da.sizes["time"]))
    np.testing.assert_array_equal(dt.edm.xmap(series_dim="neuron", E=2, progress=False).rho,
                                  ref_x.rho)
    # the series dim may be named like a result dim
    for name in ["library", "target", "E", "lib_size", "sample"]:
        out = da.rename(neuron=name).edm.xmap(series_dim=name, E=2, progress=False)
        np.testing.assert_array_equal(out.rho, ref_x.rho)
        assert out.attrs["series_dim"] == name
        out = da.rename(neuron=name).edm.ccm(series_dim=name, lib_sizes=[20], E=2, samples=2,
                                             seed=0,
                                             progress=False)
        np.testing.assert_array_equal(out.rho, ref_c.rho)
    # a single series: its own cross map (the diagonal)
    one = da.isel(neuron=[0]).edm.xmap(series_dim="neuron", E=2, progress=False)
    assert one.rho.shape == (1, 1) and one.rho.values[0, 0] == ref_x.rho.values[0, 0]
    # a Dataset whose variables have another dim broadcasts over it
    ds = xr.Dataset({"a": da[0].drop_vars("neuron").expand_dims(trial=2),
                     "b": da[1].drop_vars("neuron")})
    out = ds.edm.xmap(columns=["a", "b"], E=2, progress=False)
    assert out.rho.dims == ("trial", "library", "target")
    np.testing.assert_array_equal(out.rho.values[1],
                                  da.isel(neuron=[0, 1]).edm.xmap(series_dim="neuron", E=2,
                                                                  progress=False).rho.values)


def test_cross_map_columns_must_be_names():
    ds = xedm.datasets.coupled_logistic(60)
    for bad in (0, [0, 1], ["x", 1]):  # was "'int' object is not iterable"
        with pytest.raises(TypeError, match="columns must be a variable name or a list"):
            xedm.xmap(ds, columns=bad, E=2)
        with pytest.raises(TypeError, match="columns must be a variable name or a list"):
            xedm.ccm(ds, bad, E=2, lib_sizes=[10])


def test_cross_map_huge_tau():
    ds = xedm.datasets.coupled_logistic(60)
    # E = 1 has no lags: tau has no effect and sizes no buffer (was "array is too big")
    for E in (1, [1, 1]):
        out = xedm.ccm(ds, ["x", "y"], E=E, tau=2**62, lib_sizes=[10, 40], samples=3, seed=0,
                       progress=False)
        ref = xedm.ccm(ds, ["x", "y"], E=E, tau=1, lib_sizes=[10, 40], samples=3, seed=0,
                       progress=False)
        assert out.attrs["tau"] == 2**62
        xr.testing.assert_identical(out.drop_attrs(), ref.drop_attrs())
    for kw in ({"E": 1}, {"E": None, "E_max": 1}):
        out = xedm.xmap(ds, columns=["x", "y"], tau=2**62, progress=False, **kw)
        ref = xedm.xmap(ds, columns=["x", "y"], tau=1, progress=False, **kw)
        assert out.attrs["tau"] == 2**62
        xr.testing.assert_identical(out.drop_attrs(), ref.drop_attrs())
    # E > 1 (for one series, or E_max > 1 when E is chosen): the clear (E-1)*tau error
    for tau in (2**62, 2**70):
        with pytest.raises(ValueError, match=r"E=2 with tau=\d+ needs \(E-1\)\*tau"):
            xedm.ccm(ds, ["x", "y"], E=[1, 2], tau=tau, lib_sizes=[10])
        with pytest.raises(ValueError, match=r"E=2 with tau=\d+ needs \(E-1\)\*tau"):
            xedm.xmap(ds, columns=["x", "y"], E=2, tau=tau)
        with pytest.raises(ValueError, match=r"E_max=10 with tau=\d+ needs \(E_max-1\)\*tau"):
            xedm.xmap(ds, columns=["x", "y"], tau=tau)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13])
def test_xmap_skill_kernel_against_naive_lookups(k):
    """The lookup kernel itself, for table depths that take each of its code paths (entries
    read four at a time plus a remainder of 1-4), several blocks of targets (clean and with
    NaN), libraries whose valid rows differ from the previous library's, and Tp of both
    signs: rho from naive.table_predictions on the same tables."""
    from xedm.kernels import get_kernel
    from xedm.kernels.cross.cpu_xmap import TB

    rng = np.random.default_rng(k)
    T, nL, E = 60, 4, 2  # (the naive lookups cost T * nT * nL per Tp: both kept small)
    L = np.cumsum(rng.standard_normal((nL, T)), axis=1)
    L[1, 30:33] = np.nan  # libraries with different valid rows, not in order
    L[3, 50] = np.nan
    nT = TB + 9  # two blocks of targets
    Y = rng.standard_normal((nT, T)) + rng.uniform(-3, 3, (nT, 1))
    Y[TB + 5, [4, 50]] = np.nan  # the second block takes the path for gaps
    Yt = np.ascontiguousarray(Y.T)
    pred_t = np.arange(T)
    depth = k + 3
    lookup = get_kernel("xmap_skill", "cpu")
    for Tp in (0, 2, -1):
        idx = np.full((nL, T, depth), -1, np.int64)
        dist = np.full((nL, T, depth), np.inf)
        pred_ok = np.zeros((nL, T), bool)
        for li in range(nL):
            lib_ok = np.array([naive.state(L[li][None], t, E, 1) is not None for t in range(T)])
            idx[li], dist[li] = naive.knn_table(L[li][None], lib_ok, pred_t, E, 1, depth)
            pred_ok[li] = lib_ok
        got = lookup(idx, dist, Yt, k, Tp, pred_t, pred_ok)
        for j in range(nT):
            y = Y[j]  # its usable rows and observations, the same for every library
            usable = np.array([0 <= q + Tp < T and np.isfinite(y[q + Tp]) for q in range(T)])
            obs = np.array([naive._observed(y, t + Tp) for t in pred_t])
            for li in range(nL):
                pred = naive.table_predictions(idx[li], dist[li], y, Tp, k=k, usable=usable)
                pred[~pred_ok[li]] = np.nan
                ref = naive.skill(obs, pred)["rho"]
                np.testing.assert_allclose(got[li, j], ref, rtol=1e-10, atol=1e-12)
