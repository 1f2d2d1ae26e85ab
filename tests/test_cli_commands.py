"""The ``xedm simplex|smap|embed-dimension|ccm`` commands, CSV tables as input and the
surrogates' parameters of ``xedm xmap`` (tiny data: each call is a fraction of a second)."""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xedm
from xedm.cli import main
from xedm.cli._common import int_range_list, label_ranges


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A pyEDM-style CSV: a Time column (labels 1..T) and two series."""
    x = xedm.datasets.coupled_logistic(90)
    df = pd.DataFrame({"Time": np.arange(1, 91), "x": x.x.values, "y": x.y.values})
    path = tmp_path_factory.mktemp("csv") / "pair.csv"
    df.to_csv(path, index=False)
    ds = xr.Dataset({"x": ("time", x.x.values), "y": ("time", x.y.values)},
                    coords={"time": np.arange(1, 91)})
    return str(path), ds


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", ["simplex", "smap", "embed-dimension", "ccm", "xmap", "network",
                                     "rqa"])
def test_help_has_examples(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"xedm {command} " in out and "--out" in out


def test_top_level_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("demo", "simplex", "smap", "embed-dimension", "ccm", "xmap", "network",
                    "rqa"):
        assert command in out


@pytest.mark.parametrize("command,func,extra", [
    pytest.param("simplex", "simplex", ["--E", "2"], marks=pytest.mark.quick),
    ("smap", "smap", ["--E", "2", "--theta", "2"]),
    ("embed-dimension", "embed_dimension", ["--E-max", "4"]),
])
def test_forecasts_of_a_csv_equal_the_functions(table, tmp_path, capsys, command, func, extra):
    path, ds = table
    out = tmp_path / "out.nc"
    code, stdout, err = run([command, path, "--columns", "x", "--target", "y", "--lib",
                             "1 40", "--pred", "41:89", "--out", out, "-q", *extra], capsys)
    assert code == 0, err
    kw = {"E": 2} if func != "embed_dimension" else {"E_max": 4}
    if func == "smap":
        kw["theta"] = 2.0
    want = getattr(xedm, func)(ds, columns="x", target="y", lib=slice(1, 40),
                               pred=slice(41, 89), **kw)
    with xr.open_dataset(out) as got:
        np.testing.assert_allclose(got.rho.values, want.rho.values)
        if func == "embed_dimension":
            assert f"best E = {int(want.best_E)}" in stdout
        else:
            np.testing.assert_allclose(got.prediction.values, want.prediction.values)
            assert f"rho = {float(want.rho):.4f}" in stdout


def test_ccm_of_a_csv_with_surrogates_equals_the_function(table, tmp_path, capsys):
    path, ds = table
    out = tmp_path / "ccm.nc"
    code, stdout, err = run(["ccm", path, "--lib-sizes", "20:80:30", "--E", "2", "--samples",
                             "5", "--surrogates", "9", "--seed", "3", "--out", out, "-q"],
                            capsys)
    assert code == 0, err
    want = xedm.ccm(ds, ["x", "y"], lib_sizes=[20, 50, 80], E=2, samples=5, surrogates=9,
                    seed=3, progress=False)
    with xr.open_dataset(out) as got:
        np.testing.assert_allclose(got.rho.values, want.rho.values)
        np.testing.assert_allclose(got.p_value.values, want.p_value.values)
    rho = float(want.rho.sel(library="x", target="y").isel(lib_size=-1))
    assert f"y -> x: rho(L=80) = {rho:.4f}" in stdout


def test_xmap_seasonal_and_block_surrogates_take_their_parameters(table, tmp_path, capsys):
    path, ds = table
    out = tmp_path / "map.nc"
    base = ["xmap", path, "--dim", "series", "--E", "2", "--surrogates", "9", "--seed", "1",
            "--out", out, "-q", "--overwrite"]  # each run below replaces map.nc
    code, _, err = run([*base, "--surrogate-method", "seasonal"], capsys)
    assert code == 2 and "needs --period" in err and not out.exists()
    code, _, err = run([*base, "--surrogate-method", "seasonal", "--period", "12"], capsys)
    assert code == 0, err
    want = xedm.xmap(ds.to_dataarray("series").transpose("series", "time"), series_dim="series",
                     E=2, surrogates=9, seed=1, surrogate_method="seasonal",
                     surrogate_options={"period": 12}, progress=False)
    with xr.open_dataset(out) as got:
        np.testing.assert_allclose(got.p_value.values, want.p_value.values)
        assert got.attrs["surrogate_method"] == "seasonal"
    code, _, err = run([*base, "--surrogate-method", "block", "--block-length", "6"], capsys)
    assert code == 0, err
    code, _, err = run([*base, "--period", "12"], capsys)  # ebisuzaki has no period
    assert code == 2 and "--period" in err


@pytest.mark.parametrize("text,words", [
    ("a;b\n1;2\n", "separator"),
    ("Time,x\n1,a\n2,b\n3,c\n", "not numbers"),
    ("Time,x\n1,0.1\n1,0.2\n2,0.3\n", "repeats"),
    ('Time,x\n1,"0.1\n', "cannot read"),
])
def test_bad_csv_is_one_clear_line(tmp_path, capsys, text, words):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    code, _, err = run(["simplex", path, "--E", "2", "--out", tmp_path / "o.nc"], capsys)
    assert code == 2 and words in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_several_variables_need_a_choice(table, tmp_path, capsys):
    path, _ = table
    code, _, err = run(["simplex", path, "--E", "2", "--out", tmp_path / "o.nc"], capsys)
    assert code == 2 and "--columns" in err
    code, _, err = run(["ccm", path, "--var", "x", "--lib-sizes", "20", "--E", "2"], capsys)
    assert code == 2 and "--series-dim" in err


def test_argument_types():
    assert label_ranges("1 100") == slice(1, 100)
    assert label_ranges("1:100,201:300") == [slice(1, 100), slice(201, 300)]
    assert label_ranges("0.5 2.5") == slice(0.5, 2.5)
    for bad in ("1", "a b", "5 1"):
        with pytest.raises(argparse.ArgumentTypeError):
            label_ranges(bad)
    assert int_range_list("10:30:10") == [10, 20, 30]
    assert int_range_list("5,7") == [5, 7]
    with pytest.raises(argparse.ArgumentTypeError):
        int_range_list("x")


@pytest.mark.parametrize("form", ["dense", "edges"])
def test_network_of_a_csv_equals_the_function(tmp_path, capsys, form):
    ds = xedm.datasets.sparse_network(6, 300, seed=2)
    df = pd.DataFrame(ds.x.values.T, columns=[f"s{i}" for i in range(6)])
    df.insert(0, "time", np.arange(300))
    path = tmp_path / "six.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "net.nc"
    code, stdout, err = run(["network", path, "--series-dim", "series", "--seed", "3",
                             "--surrogates", "9", "--max-lag", "2", "--result", form,
                             "--out", out, "-q"], capsys)
    assert code == 0, err
    got = xr.open_dataset(out).load()
    da = xr.DataArray(ds.x.values, dims=("series", "time"),
                      coords={"series": [f"s{i}" for i in range(6)], "time": np.arange(300)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xedm.causal_network(da, seed=3, surrogates=9, max_lag=2, result=form,
                                   progress=False)
    for k in ("link", "rho", "q_value", "gain", "undetermined_reason"):
        np.testing.assert_array_equal(np.asarray(got[k].values), np.asarray(want[k].values))
    assert (got.decision.values == want.decision.values).all()
    assert f"{int(want.link.values.sum())} links" in stdout and f"({form})" in stdout
    # an existing output is refused without --overwrite
    code, _, err = run(["network", path, "--series-dim", "series", "--out", out, "-q"], capsys)
    assert code != 0 and "--overwrite" in err
