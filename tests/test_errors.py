"""Bad input gives a clear ValueError/TypeError naming the parameter; inputs never change."""

import re

import numpy as np
import pytest
import xarray as xr

import xedm

x = xr.DataArray(np.sin(np.arange(50.0)), dims="time", name="x")
ds = xr.Dataset({"x": x, "y": x * 2, "label": ("time", np.array(["a"] * 50))})

FUNCS = ["simplex", "smap", "predict_interval", "predict_nonlinear"]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    "kw, err, words",
    [
        ({"E": 0}, ValueError, "E must be >= 1"),
        ({"E": 2.5}, TypeError, "E must be an integer"),
        ({"E": 2, "tau": 0}, ValueError, "tau must be >= 1"),
        ({"E": 30, "tau": 2}, ValueError, "(E-1)*tau"),
        ({"E": 2, "knn": 0}, ValueError, "knn must be >= 1"),
        ({"E": 2, "exclusion_radius": -1}, ValueError, "exclusion_radius"),
        ({"E": 2, "lib": "1 20"}, TypeError, "slice"),
        ({"E": 2, "lib": slice(100, 200)}, ValueError, "lib"),
        ({"E": 2, "pred": np.ones(3, bool)}, ValueError, "pred"),
        ({"E": 2, "backend": "tpu"}, ValueError, "backend"),
        ({"E": 2, "neighbors": "magic"}, ValueError, "neighbors"),
        ({"E": 2, "time_dim": "t"}, ValueError, "time_dim='t'"),
    ],
)
def test_bad_parameters(func, kw, err, words):
    with pytest.raises(err, match=re.escape(words)):
        getattr(xedm, func)(x, **kw)


def test_too_few_library_points():
    with pytest.raises(ValueError, match="knn\\+1"):
        xedm.simplex(x, 3, lib=slice(0, 4))
    with pytest.raises(ValueError, match="knn\\+1"):
        xedm.simplex(x, 2, knn=60)
    with pytest.raises(ValueError, match="E_max|\\(E-1\\)\\*tau"):
        xedm.embed_dimension(x, E_max=60)


def test_dataset_variables():
    with pytest.raises(ValueError, match="unknown variable 'z'"):
        ds.edm.simplex(E=2, columns=["x", "z"])
    with pytest.raises(ValueError, match="unknown variable 'w'"):
        ds.edm.simplex(E=2, columns="x", target="w")
    with pytest.raises(ValueError, match="columns= is required"):
        ds.edm.simplex(E=2)
    with pytest.raises(TypeError, match="dtype"):
        ds.edm.simplex(E=2, columns="label")
    with pytest.raises(TypeError, match="columns= and target="):
        x.edm.simplex(E=2, columns="x")
    with pytest.raises(ValueError, match="embedded=True"):
        ds.edm.simplex(E=3, columns=["x", "y"], embedded=True)


def test_missing_time_dim():
    da = xr.DataArray(np.zeros((3, 40)), dims=("neuron", "sample"))
    with pytest.raises(ValueError, match="time_dim='time' is not a dimension"):
        da.edm.simplex(E=2)
    assert da.edm.simplex(E=2, time_dim="sample").rho.dims == ("neuron",)


def test_solver_and_theta_errors():
    with pytest.raises(ValueError, match="theta"):
        xedm.smap(x, 2, theta=-1)
    with pytest.raises(ValueError, match="solver"):
        xedm.smap(x, 2, solver="qr")
    with pytest.raises(ValueError, match="alpha"):
        xedm.smap(x, 2, solver="ridge")
    with pytest.raises(ValueError, match="one theta"):
        xedm.smap(x, 2, theta=[1, 2])


def test_gpu_backend_is_clear_error_without_kernels():
    from xedm.kernels import gpu_available

    if gpu_available():
        pytest.skip("a GPU is there")
    for func in (xedm.simplex, xedm.smap):  # names the extra to install
        with pytest.raises(ValueError, match=r"backend='gpu'.*xedm\[gpu\]"):
            func(x, 2, backend="gpu")
    # a function some of whose kernels have no GPU twin says which
    with pytest.raises(ValueError, match=r"not available for this function yet.*'nokernel'"):
        xedm.kernels.resolve_backend("gpu", ["knn_sweep", "nokernel"])


def test_auto_backend_rule(monkeypatch):
    # "auto": the GPU only with twins for every kernel, a device, and work >= GPU_MIN_WORK
    import xedm.kernels as K

    monkeypatch.setattr(K, "gpu_available", lambda: True)
    need = ["knn_sweep", "simplex_predict"]
    assert K.resolve_backend("auto", need, K.GPU_MIN_WORK) == "gpu"
    assert K.resolve_backend("auto", need, K.GPU_MIN_WORK - 1) == "cpu"
    assert K.resolve_backend("auto", ["knn_sweep", "smap_predict"], K.GPU_MIN_WORK) == "gpu"
    # a twin measured slower than the CPU (AUTO_CPU_ONLY) keeps "auto" on the CPU
    monkeypatch.setattr(K, "AUTO_CPU_ONLY", frozenset({"smap_predict"}))
    assert K.resolve_backend("auto", ["knn_sweep", "smap_predict"], 2**40) == "cpu"
    assert K.resolve_backend("gpu", ["knn_sweep", "smap_predict"], 10) == "gpu"
    monkeypatch.setattr(K, "gpu_available", lambda: False)
    assert K.resolve_backend("auto", need, 2**40) == "cpu"


def test_inputs_not_modified():
    data = np.sin(np.arange(60.0))
    data[[5, 30]] = np.nan
    da = xr.DataArray(data.copy(), dims="time")
    dset = xr.Dataset({"a": da, "b": da * 0.5})
    before = dset.copy(deep=True)
    xedm.simplex(dset, 2, columns=["a", "b"], target="b")
    xedm.smap(dset, 2, columns="a", theta=2)
    xedm.embed_dimension(dset, 4, columns="a")
    xr.testing.assert_identical(dset, before)
    np.testing.assert_array_equal(da.values, data)


# ----------------------------------------------------------------- ccm and xmap (issue 9)
pair = xedm.datasets.coupled_logistic(100)
net = xr.DataArray(np.stack([pair.x.values, pair.y.values]), dims=("var", "time"),
                   coords={"var": ["x", "y"]})


def _ccm(data=pair, **kw):
    kw = {"lib_sizes": [10, 50], "E": 2, "samples": 3, "seed": 0, "progress": False, **kw}
    if isinstance(data, xr.Dataset):
        return data.edm.ccm(["x", "y"], **kw)
    return data.edm.ccm(series_dim="var", **kw)


def _xmap(data=net, **kw):
    kw = {"E": 2, "progress": False, **kw}
    if isinstance(data, xr.Dataset):
        return data.edm.xmap(columns=["x", "y"], **kw)
    return data.edm.xmap(series_dim="var", **kw)


@pytest.mark.parametrize("func", [_ccm, _xmap])
@pytest.mark.parametrize(
    "kw, err, words",
    [
        ({"Tp": 200}, ValueError, "Tp=200 leaves no target inside the data"),
        ({"Tp": 99}, ValueError, "Tp must lie in [-99, 98]"),
        ({"Tp": -100}, ValueError, "Tp=-100 leaves no target"),
        ({"Tp": 98}, ValueError, "knn+1"),  # one library point left
        ({"knn": 99}, ValueError, "knn=99 needs at least knn+1 = 100"),
        ({"knn": 10**9}, ValueError, "knn+1"),  # was a MemoryError / SystemError in xmap
        ({"exclusion_radius": 1000}, ValueError, "exclusion_radius=1000 excludes every"),
        ({"exclusion_radius": 98}, ValueError, "use exclusion_radius < 98"),
        ({"E": [2, 3, 4]}, ValueError, "one per series (2), got 3"),
        ({"E": 0}, ValueError, "E must be >= 1"),
        ({"E": [2, 0]}, ValueError, "E must be >= 1"),
        ({"E": 2.5}, TypeError, "E must be an integer"),
        ({"tau": 0}, ValueError, "tau must be >= 1"),
        ({"E": 60, "tau": 2}, ValueError, "(E-1)*tau"),
        ({"knn": 0}, ValueError, "knn must be >= 1"),
        ({"exclusion_radius": -1}, ValueError, "exclusion_radius must be >= 0"),
        ({"backend": "tpu"}, ValueError, "backend"),
    ],
)
def test_cross_map_bad_parameters(func, kw, err, words):
    with pytest.raises(err, match=re.escape(words)):
        func(**kw)


@pytest.mark.parametrize(
    "kw, err, words",
    [
        ({"lib_sizes": [0, 10]}, ValueError, "lib_sizes must be >= 1"),
        ({"lib_sizes": [1], "knn": 1}, ValueError, "lib_sizes must be >= knn (1 for E=2) and >= 2"),
        ({"lib_sizes": [2, 10]}, ValueError, "lib_sizes must be >= knn (3 for E=2)"),
        ({"lib_sizes": [10, 10]}, ValueError, "lib_sizes has repeated values"),
        ({"lib_sizes": []}, ValueError, "non-empty"),
        ({"lib_sizes": [10.0]}, TypeError, "lib_sizes must be an integer"),
        ({"samples": 0}, ValueError, "samples must be >= 1"),
        ({"samples": 10**12}, ValueError, "use fewer samples"),  # not a MemoryError
        ({"seed": -1}, ValueError, "seed must be >= 0"),
    ],
)
def test_ccm_bad_parameters(kw, err, words):
    with pytest.raises(err, match=re.escape(words)):
        _ccm(**kw)


@pytest.mark.parametrize(
    "kw, err, words",
    [
        ({"E": None, "E_max": 0}, ValueError, "E_max must be >= 1"),
        ({"E": None, "E_max": 2.5}, TypeError, "E_max must be an integer"),
        ({"E": None, "E_max": 200}, ValueError, "E_max=200 with tau=1 needs (E_max-1)*tau"),
        ({"E": None, "E_max": 60}, ValueError, "for E_max=60"),  # knn+1 library points
    ],
)
def test_xmap_E_max_messages_name_E_max(kw, err, words):
    with pytest.raises(err, match=re.escape(words)):
        _xmap(**kw)


@pytest.mark.parametrize("func", [_ccm, _xmap])
def test_cross_map_bad_data(func):
    with pytest.raises(ValueError, match="series_dim='var' has no series"):
        func(net.isel(var=slice(0, 0)))
    with pytest.raises(ValueError, match="time dim 'time' is empty"):
        func(net.isel(time=slice(0, 0)))
    with pytest.raises(ValueError, match=re.escape("knn+1")):  # too short for knn+1 points
        func(net.isel(time=slice(0, 3)))
    with pytest.raises(ValueError, match="repeat \\['x'\\]"):
        func(net.assign_coords(var=["x", "x"]))
    with pytest.raises(TypeError, match="dtype bool.*astype\\(float\\)"):
        func(net > 0.5)
    with pytest.raises(ValueError, match="all NaN"):
        func(net * np.nan)
    with pytest.raises(ValueError, match="all NaN"):
        func(pair * np.nan)
    with pytest.raises(ValueError, match="no \\(library, target\\) pair has a finite skill"):
        func(net * 0.0 + 1.0)  # constant series: zero variance everywhere
    with pytest.raises(ValueError, match="time_dim='t' is not a dimension"):
        func(time_dim="t")
    with pytest.raises(ValueError, match="more than once"):
        pair.edm.xmap(columns=["x", "x"], E=2)
    with pytest.raises(ValueError, match="more than once"):
        pair.edm.ccm(["x", "x"], lib_sizes=[10], E=2)


def test_xmap_all_nan_with_E_chosen():
    with pytest.raises(ValueError, match="all NaN"):  # was a reshape error
        _xmap(net * np.nan, E=None)


@pytest.mark.parametrize("func, reserved", [(_xmap, ["library", "target", "E"]),
                                            (_ccm, ["library", "target", "lib_size",
                                                    "sample", "E"])])
def test_cross_map_dims_named_like_result_dims(func, reserved):
    for name in reserved:
        extra = net.expand_dims({name: 2})
        with pytest.raises(ValueError, match=f"dim named '{name}'.*rename"):
            func(extra)
        with pytest.raises(ValueError, match=f"dim named '{name}'"):
            func(net.rename(time=name), time_dim=name)


def test_cross_map_inputs_not_modified():
    data = np.stack([pair.x.values, pair.y.values]).astype(np.float32)
    data[0, [5, 30]] = np.nan
    da = xr.DataArray(data.copy(), dims=("var", "time"))
    before = da.copy(deep=True)
    _xmap(da)
    _xmap(da, E=None, E_max=4)
    _ccm(da)
    xr.testing.assert_identical(da, before)
    np.testing.assert_array_equal(da.values, data)


# ----------------------------------------------------------------------------- issue 21
# one test per numbered case of issue 21 (API): each ends as a right result, a
# ValueError/TypeError naming the parameter, or a warning saying what is NaN and why
logi = xedm.datasets.logistic_map(300)
pair = xedm.datasets.coupled_logistic(300)


def test_issue21_item8_rqa_is_unit_free():
    base = xedm.rqa(logi, E=2, recurrence_rate=0.05, backend="cpu")
    for s in (1e-300, 1e300):
        out = xedm.rqa(logi * s, E=2, recurrence_rate=0.05, backend="cpu")
        assert abs(float(out.RR) - float(base.RR)) < 1e-3
        assert np.isfinite(float(out.eps)) and float(out.eps) > 0
    # the exact comparison against the dense reference is tests/test_rqa.py's


@pytest.mark.parametrize("case, why", [
    ("const", "zero variance"), ("const2d", "zero variance"), ("smap", "zero variance"),
    ("excl", "exclusion_radius=296"), ("pred", "rho needs 3"),
])
def test_issue21_item9_nan_skill_warns_why(case, why):
    const = xr.DataArray(np.ones(300), dims="time")
    calls = {
        "const": lambda: xedm.simplex(const, E=3),
        "const2d": lambda: xedm.simplex(xr.DataArray(np.ones((2, 300)), dims=("s", "time")),
                                        E=3),
        "smap": lambda: xedm.smap(const, E=3),
        "excl": lambda: xedm.simplex(logi, E=3, exclusion_radius=296),
        "pred": lambda: xedm.simplex(logi, E=3, pred=slice(0, 3)),
    }
    with pytest.warns(UserWarning, match=why):
        out = calls[case]()
    assert np.isnan(out.rho).all()


@pytest.mark.quick
def test_issue21_item10_hours_of_work_refused_up_front():
    with pytest.raises(ValueError, match=r"transient.*elementary operations.*work_limit"):
        xedm.datasets.logistic_map(100, transient=10**12)
    with xedm.set_options(work_limit=10):  # samples=10**6 is minutes: refused under 10 s
        with pytest.raises(ValueError, match=r"samples=1000000.*use fewer samples"):
            xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50, 100], samples=10**6)
    with pytest.raises(ValueError, match="work_limit"):
        xedm.set_options(work_limit=-1)


@pytest.mark.parametrize("call, words", [
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50, 100, 150], samples=5,
                      n_boot=10**9), "use a smaller n_boot"),
    (lambda: xedm.surrogates(logi, n=10**9), "use a smaller n"),
    (lambda: xedm.predict_nonlinear(logi, E=2, theta=np.linspace(0, 8, 10**6)),
     "fewer theta values"),
    (lambda: xedm.rqa(logi, E=2, eps=np.linspace(0.01, 1, 10**6)), "fewer eps"),
])
def test_issue21_item11_memory_refused_not_memoryerror(call, words, monkeypatch):
    monkeypatch.setattr("xedm.memory.total_memory", lambda: 8 * 2**30)  # any machine
    with pytest.raises(ValueError, match=words):
        call()


def test_issue21_item11_huge_block_length_is_the_series_length():
    a = xedm.surrogates(logi, method="block", block_length=10**9, n=3, seed=1)
    b = xedm.surrogates(logi, method="block", block_length=300, n=3, seed=1)
    np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.parametrize("call, err, words", [
    (lambda: xedm.surrogates(xr.DataArray(np.zeros(0), dims="time")), ValueError,
     "time dim 'time' has no points"),
    (lambda: xedm.embed_dimension(xr.DataArray(np.zeros(0), dims="time")), ValueError,
     "0 time points"),
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50], samples=3, surrogates=3,
                      quantiles="a"), TypeError, "quantiles"),
    (lambda: xedm.recurrence_plot(logi, E=2, eps=0.1, max_states=None), TypeError,
     "max_states"),
    (lambda: xedm.get_option("bogus"), ValueError, "unknown option 'bogus'; valid options"),
    (lambda: xedm.widgets.explore(logi, dim="bogus"), ValueError, "dim='bogus'"),
])
def test_issue21_item12_clear_errors(call, err, words):
    with pytest.raises(err, match=re.escape(words)):
        call()


@pytest.mark.parametrize("kw, err, words", [
    ({"var": "bogus"}, TypeError, "var='bogus' is not a parameter of the prediction view"),
    ({"ax": 3}, TypeError, "ax must be a matplotlib Axes"),
    ({"bogus_kw": 1}, TypeError, "bogus_kw=1"),
    ({"truth": 3}, TypeError, "truth=3"),
])
def test_issue21_item12_plot_keywords(kw, err, words):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = xedm.simplex(logi, E=2)
    with pytest.raises(err, match=re.escape(words)):
        res.edm.plot(**kw)
    plt.close("all")


def test_issue21_item12_cross_map_plot_keywords():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[20, 50], samples=3, seed=0)
    with pytest.raises(ValueError, match=r"pairs: 'q' is not a library label.*\['x', 'y'\]"):
        res.edm.plot(pairs=[("q", "r")])
    xm = xedm.xmap(pair, columns=["x", "y"], E=2)
    with pytest.raises(TypeError, match="truth must be a boolean DataArray"):
        xm.edm.plot(truth=3)
    with pytest.raises(ValueError, match="variable 'bogus' not in the result"):
        xm.edm.plot(var="bogus")
    plt.close("all")


@pytest.mark.parametrize("call, err, words", [
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50], samples=3, surrogates=3,
                      quantiles=[0.5, 0.5]), ValueError, "quantiles has repeated values"),
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50], samples=3,
                      keep_samples="yes"), TypeError, "keep_samples must be True or False"),
    (lambda: xedm.xmap(pair, columns=["x", "y"], E=2, surrogates=3, keep_null="yes"),
     TypeError, "keep_null must be True or False"),
    (lambda: xedm.embed_dimension(logi, E=[True, 2]), TypeError, "E must be an integer"),
])
def test_issue21_item13_invalid_values_refused(call, err, words):
    with pytest.raises(err, match=re.escape(words)):
        call()


@pytest.mark.parametrize("call, err, words", [
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50], samples=3,
                      keep_samples="no"), TypeError, "keep_samples must be True or False"),
    (lambda: xedm.rqa(logi, E=2, eps=0.1, histograms="no"), TypeError, "histograms"),
    (lambda: xedm.set_options(progress=1), TypeError, "progress=1"),
    (lambda: xedm.widgets.explore(logi, theta=-5), ValueError, "theta must be finite and >= 0"),
    (lambda: xedm.ccm(pair, columns=["x", "y"], E=2, lib_sizes=[50], samples=3, surrogates=3,
                      surrogate_options={"block_length": 5}), ValueError,
     "surrogate_options['block_length'] is a parameter of surrogate method 'block'"),
    (lambda: xedm.surrogates(logi, period=12), ValueError,
     "period is a parameter of surrogate method 'seasonal'"),
])
def test_issue21_item15_truthy_stand_ins_and_ignored_options(call, err, words):
    with pytest.raises(err, match=re.escape(words)):
        call()
    assert xedm.get_option("progress") in (True, False)


def test_issue21_item15_xmap_result_explores_as_causal_map():
    pytest.importorskip("ipywidgets")
    import matplotlib

    matplotlib.use("Agg")
    xm = xedm.xmap(pair, columns=["x", "y"], E=2)
    ex = xm.edm.explore(debounce=0)
    assert type(ex).__name__ == "CausalMapExplorer"
    assert ex.state.results()["xmap"].rho.shape == (2, 2)
    with pytest.raises(ValueError, match="kind='causal_map'"):
        xm.edm.explore("forecast")


@pytest.mark.parametrize("func", ["simplex", "smap", "embed_dimension", "predict_interval",
                                  "predict_nonlinear", "xmap"])
def test_issue21_item16_dask_all_nan_warns_at_compute(func):
    pytest.importorskip("dask")
    nan = xr.DataArray(np.full((2, 100), np.nan), dims=("s", "time"))
    if func == "xmap":
        lazy = nan.chunk({"s": 2}).edm.xmap(series_dim="s", E=2)
    else:
        kw = {"embed_dimension": {"E_max": 3}, "predict_interval": {"E": 2, "Tp_max": 3},
              "predict_nonlinear": {"E": 2, "theta": [0, 1]}}.get(func, {"E": 2})
        lazy = getattr(xedm, func)(nan.chunk({"s": 1}), **kw)
    assert lazy.rho.chunks is not None  # still lazy: nothing computed at the call
    with pytest.warns(UserWarning, match="all NaN"):
        out = lazy.compute()
    assert np.isnan(out.rho).all()
