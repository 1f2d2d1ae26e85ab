"""One name per dim in the whole API (issue 25): the time dimension is ``time_dim``, the series
dimension ``series_dim``; the old ``dim`` (time in simplex, smap, the sweeps, rqa and
surrogates, series in ccm and xmap) works for one release with a FutureWarning, and is never
silently ignored."""

import inspect

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm import api

_rng = np.random.default_rng(3)
X2 = xr.DataArray(_rng.random((3, 80)), dims=("unit", "t"), coords={"unit": ["a", "b", "c"]},
                  name="x")

TIME_CALLS = {
    "simplex": lambda d, **k: xedm.simplex(d, E=2, **k),
    "smap": lambda d, **k: xedm.smap(d, E=2, theta=1.0, **k),
    "embed_dimension": lambda d, **k: xedm.embed_dimension(d, E_max=3, **k),
    "predict_interval": lambda d, **k: xedm.predict_interval(d, E=2, Tp_max=2, **k),
    "predict_nonlinear": lambda d, **k: xedm.predict_nonlinear(d, E=2, theta=[0, 1], **k),
    "rqa": lambda d, **k: xedm.rqa(d, E=2, eps=0.3, backend="cpu", **k),
    "recurrence_plot": lambda d, **k: xedm.recurrence_plot(d, E=2, eps=0.3, **k),
    "surrogates": lambda d, **k: xedm.surrogates(d, "shuffle", n=2, seed=0, **k),
}
SERIES_CALLS = {
    "ccm": lambda d, **k: xedm.ccm(d, lib_sizes=[20, 60], E=2, samples=2, seed=0,
                                   progress=False, **k),
    "xmap": lambda d, **k: xedm.xmap(d, E=2, progress=False, **k),
}


def test_no_public_function_has_a_parameter_called_dim():
    """Every public function names its dims time_dim / series_dim (the decorator that maps the
    old ``dim`` hides it from the signature)."""
    for m in api.METHODS:
        params = inspect.signature(m.function()).parameters
        assert "dim" not in params, m.name
    assert "dim" not in inspect.signature(xedm.datasets.many_series).parameters


@pytest.mark.parametrize("func", list(TIME_CALLS))
def test_time_dim_and_its_old_name(func):
    call = TIME_CALLS[func]
    new = call(X2, time_dim="t")
    with pytest.warns(FutureWarning, match=r"'dim' is renamed 'time_dim'.*time_dim='t'"):
        old = call(X2, dim="t")
    xr.testing.assert_identical(new, old)
    with pytest.raises(TypeError, match="dim='t' and time_dim='unit'"):
        call(X2, dim="t", time_dim="unit")
    with pytest.raises(ValueError, match="time_dim='time' is not a dimension"):
        call(X2)


@pytest.mark.parametrize("func", list(SERIES_CALLS))
def test_series_dim_and_its_old_name(func):
    call = SERIES_CALLS[func]
    new = call(X2, series_dim="unit", time_dim="t")
    assert list(new.library.values) == ["a", "b", "c"]
    with pytest.warns(FutureWarning, match=r"'dim' is renamed 'series_dim'"):
        old = call(X2, dim="unit", time_dim="t")
    xr.testing.assert_identical(new, old)
    # the only dim besides time is the series dim; so is a dim called "series"
    xr.testing.assert_identical(call(X2, time_dim="t"), new)
    three = X2.expand_dims(trial=2)
    with pytest.raises(ValueError, match="series_dim is required"):
        call(three, time_dim="t")
    got = call(three.rename(unit="series"), time_dim="t")
    np.testing.assert_array_equal(got.rho.isel(trial=0).values, new.rho.values)
    with pytest.raises(ValueError, match="series_dim='t' must name the series dimension"):
        call(X2, series_dim="t", time_dim="t")


@pytest.mark.parametrize("func", list(SERIES_CALLS))
def test_series_dim_on_a_dataset_is_an_error_never_ignored(func):
    """Issue 25 repro 3: ``ccm(ds, ..., dim="year")`` on a Dataset was ignored, then failed."""
    ds = X2.to_dataset("unit").rename(t="year")
    with pytest.warns(FutureWarning), pytest.raises(
            ValueError, match=r"series of a Dataset are its variables.*time_dim='year'"):
        SERIES_CALLS[func](ds, columns=["a", "b"], dim="year")
    out = SERIES_CALLS[func](ds, columns=["a", "b"], time_dim="year")
    ref = SERIES_CALLS[func](X2.sel(unit=["a", "b"]), time_dim="t")
    np.testing.assert_array_equal(out.rho.values, ref.rho.values)


def test_many_series_old_name():
    with pytest.warns(FutureWarning, match="series_dim"):
        old = xedm.datasets.many_series(3, 20, dim="neuron")
    xr.testing.assert_identical(old, xedm.datasets.many_series(3, 20, series_dim="neuron"))


def test_cli_old_dim_options(tmp_path, capsys):
    from xedm.cli import main

    path = tmp_path / "d.nc"
    X2.to_dataset().to_netcdf(path)
    for cmd, new, extra in (("xmap", "--series-dim", ["--time-dim", "t", "--E", "2"]),
                            ("rqa", "--time-dim", ["--eps", "0.3"])):
        value = "unit" if cmd == "xmap" else "t"
        outs = [tmp_path / f"{cmd}{i}.nc" for i in range(2)]
        capsys.readouterr()
        assert main([cmd, str(path), new, value, *extra, "--out", str(outs[0]), "-q"]) == 0
        assert "warning" not in capsys.readouterr().err
        assert main([cmd, str(path), "--dim", value, *extra, "--out", str(outs[1]), "-q"]) == 0
        assert f"--dim is renamed {new}" in capsys.readouterr().err  # the CLI's own warning
        with xr.open_dataset(outs[0]) as a, xr.open_dataset(outs[1]) as b:
            xr.testing.assert_identical(a, b)
        assert main([cmd, str(path), "--dim", "x", new, value, *extra, "-q"]) == 2
    capsys.readouterr()
