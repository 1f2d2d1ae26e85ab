"""Tests for the ``xedm`` command line (xedm.cli.main)."""

from __future__ import annotations

import subprocess
import sys
import types

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import xedm  # noqa: E402
from xedm.cli import main  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------- help / usage
@pytest.mark.quick
def test_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("demo", "xmap", "rqa"):
        assert command in out


@pytest.mark.quick
def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"xedm {xedm.__version__}"


@pytest.mark.parametrize("command", ["demo", "xmap", "rqa"])
def test_subcommand_help(command, capsys):
    assert main([command, "--help"]) == 0
    assert "--out" in capsys.readouterr().out


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage" in capsys.readouterr().out.lower()


def test_unknown_command_is_usage_error(capsys):
    assert main(["frobnicate"]) == 2


def test_module_entry_point_runs():
    out = subprocess.run(
        [sys.executable, "-m", "xedm.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "demo" in out.stdout


# ----------------------------------------------------------------- demo
@pytest.mark.quick
def test_demo_writes_png_and_summary(tmp_path, capsys):
    out = tmp_path / "demo.png"
    assert main(["demo", "--n", "300", "--out", str(out), "--quiet"]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    text = capsys.readouterr().out
    assert "E = " in text and "rho" in text
    assert "S-map" in text and str(out) in text
    if hasattr(xedm, "ccm"):
        assert "CCM at L" in text


def test_demo_uses_ccm_when_present(tmp_path, capsys, monkeypatch):
    calls = {}

    def fake_ccm(data, *, columns, lib_sizes, samples, seed, E, progress=True):
        calls.update(columns=columns, lib_sizes=lib_sizes, samples=samples, seed=seed, E=E)
        rho = np.zeros((2, 2, len(lib_sizes)))
        rho[1, 0] = np.linspace(0.2, 0.9, len(lib_sizes))  # library y, target x: x -> y
        rho[0, 1] = 0.1
        return xr.Dataset(
            {"rho": (("library", "target", "lib_size"), rho)},
            coords={"library": ["x", "y"], "target": ["x", "y"], "lib_size": lib_sizes},
        )

    monkeypatch.setattr(xedm, "ccm", fake_ccm, raising=False)
    out = tmp_path / "demo.png"
    assert main(["demo", "--n", "300", "--out", str(out), "--seed", "3", "-q"]) == 0
    text = capsys.readouterr().out
    assert "x -> y (library y, target x) rho = 0.900" in text
    assert "stronger: x -> y" in text
    assert calls["columns"] == ["x", "y"] and calls["seed"] == 3
    assert len(calls["E"]) == 2  # one E per library series
    assert all(max(calls["E"]) < size <= 300 for size in calls["lib_sizes"])
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_demo_seed_changes_initial_values(tmp_path, capsys):
    main(["demo", "--n", "200", "--out", str(tmp_path / "a.png"), "--seed", "1", "-q"])
    a = capsys.readouterr().out
    main(["demo", "--n", "200", "--out", str(tmp_path / "b.png"), "--seed", "2", "-q"])
    b = capsys.readouterr().out
    assert a.splitlines()[3:6] != b.splitlines()[3:6]


def test_demo_rejects_tiny_n(tmp_path, capsys):
    assert main(["demo", "--n", "20", "--out", str(tmp_path / "x.png")]) == 2
    assert "--n" in capsys.readouterr().err


# ----------------------------------------------------------------- xmap
@pytest.fixture
def series_file(tmp_path):
    rng = np.random.default_rng(0)
    da = xr.DataArray(
        rng.random((3, 120)),
        dims=("neuron", "time"),
        coords={"neuron": ["a", "b", "c"], "time": np.arange(120)},
        name="activity",
    )
    path = tmp_path / "series.nc"
    da.to_dataset().to_netcdf(path)
    return path, da


def test_xmap_missing_function_is_a_clear_error(series_file, tmp_path, capsys, monkeypatch):
    # the public function is imported on first use (xedm/api.py); its module may fail to import
    monkeypatch.delattr(xedm, "xmap", raising=False)
    monkeypatch.setitem(sys.modules, "xedm.labeled.xmap", None)
    path, _ = series_file
    assert main(["xmap", str(path), "--series-dim", "neuron", "--out", str(tmp_path / "o.nc")]) == 2
    assert "xedm.xmap is not available" in capsys.readouterr().err


def test_xmap_plumbing_with_stub(series_file, tmp_path, capsys, monkeypatch):
    seen = {}

    def fake_xmap(da, dim, E=None, tau=1, progress=True):
        seen.update(dim=dim, E=E, tau=tau, name=da.name, progress=progress)
        labels = da[dim].values
        rho = np.arange(len(labels) ** 2, dtype=float).reshape(len(labels), -1)
        return xr.Dataset(
            {"rho": (("library", "target"), rho)},
            coords={"library": labels, "target": labels},
            attrs={"embedded": False, "note": None},  # not NetCDF-safe as is
        )

    monkeypatch.setattr(xedm, "xmap", fake_xmap, raising=False)
    path, da = series_file
    out = tmp_path / "xmap.nc"
    rc = main(["xmap", str(path), "--var", "activity", "--series-dim", "neuron", "--E", "3",
               "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    assert seen == {"dim": "neuron", "E": 3, "tau": 1, "name": "activity", "progress": False}
    res = xr.open_dataset(out)
    np.testing.assert_array_equal(res.rho.values, np.arange(9.0).reshape(3, 3))
    assert list(res.library.values) == ["a", "b", "c"]
    assert res.attrs["embedded"] == 0
    res.close()


def test_xmap_option_the_function_lacks_is_an_error(series_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(xedm, "xmap", lambda da, dim: da, raising=False)
    path, _ = series_file
    rc = main(["xmap", str(path), "--series-dim", "neuron", "--Tp", "2", "--out",
               str(tmp_path / "o.nc")])
    assert rc == 2
    assert "'Tp'" in capsys.readouterr().err


def test_xmap_bad_inputs(series_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(xedm, "xmap", lambda da, dim: da, raising=False)
    path, _ = series_file
    out = str(tmp_path / "o.nc")
    assert main(["xmap", str(tmp_path / "missing.nc"), "--series-dim", "neuron", "--out", out]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["xmap", str(path), "--series-dim", "cell", "--out", out]) == 2
    assert "'cell'" in capsys.readouterr().err
    assert main(["xmap", str(path), "--var", "nope", "--series-dim", "neuron", "--out", out]) == 2
    assert "'nope'" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(xedm, "xmap"), reason="xedm.xmap not available yet")
def test_xmap_real(tmp_path, capsys):
    ds = xedm.datasets.many_series(3, 200, density=0.5, seed=0)
    path = tmp_path / "net.nc"
    ds[["x"]].to_netcdf(path)
    out = tmp_path / "xmap.nc"
    rc = main(["xmap", str(path), "--var", "x", "--series-dim", "series", "--E", "2", "--out",
               str(out),
               "-q"])
    assert rc == 0, capsys.readouterr().err
    with xr.open_dataset(out) as res:
        assert res.rho.sizes == {"library": 3, "target": 3}


def test_xmap_significance_and_lags(tmp_path, capsys):
    ds = xedm.datasets.many_series(3, 200, density=0.5, seed=0)
    path = tmp_path / "net.nc"
    ds[["x"]].to_netcdf(path)
    out = tmp_path / "sig.nc"
    rc = main(["xmap", str(path), "--var", "x", "--series-dim", "series", "--E", "2", "--Tp",
               "-2,-1,0",
               "--surrogates", "19", "--seed", "4", "--out", str(out), "-q"])
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert "links with q_value <= 0.05 (19 ebisuzaki surrogates, seed 4)" in text.out
    ref = ds.x.edm.xmap(series_dim="series", E=2, Tp=[-2, -1, 0], surrogates=19, seed=4)
    with xr.open_dataset(out) as res:
        assert res.p_value.dims == ("library", "target", "Tp")
        np.testing.assert_array_equal(res.p_value.values, ref.p_value.values)
        np.testing.assert_array_equal(res.best_Tp.values, ref.best_Tp.values)
    assert main(["xmap", str(path), "--var", "x", "--series-dim", "series", "--Tp", "1,x"]) == 2
    assert "comma-separated list of integers" in capsys.readouterr().err


# ----------------------------------------------------------------- rqa
@pytest.fixture
def fake_rqa(monkeypatch):
    seen = {}
    mod = types.ModuleType("xedm.labeled.rqa")

    def rqa(da, E=1, tau=1, eps=None, recurrence_rate=None, theiler=1, norm="euclidean",
            dim=None):
        seen.update(E=E, tau=tau, eps=eps, rr=recurrence_rate, theiler=theiler, norm=norm)
        return xr.Dataset({"RR": 0.1, "DET": 0.5}, attrs={"E": E, "tau": tau})

    mod.rqa = rqa
    monkeypatch.setitem(sys.modules, "xedm.labeled.rqa", mod)
    # xedm.rqa caches the function on first use: the stub must not stay there afterwards
    monkeypatch.setitem(xedm.__dict__, "rqa", rqa)
    return seen


def test_rqa_plumbing_with_stub(series_file, tmp_path, capsys, fake_rqa):
    path, _ = series_file
    out = tmp_path / "rqa.nc"
    rc = main(["rqa", str(path), "--var", "activity", "--E", "3", "--tau", "2", "--rr", "0.05",
               "--metric", "maximum", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    # keyword spellings are adapted to the function: --rr -> recurrence_rate, --metric -> norm
    assert fake_rqa == {"E": 3, "tau": 2, "eps": None, "rr": 0.05, "theiler": 1,
                        "norm": "maximum"}
    with xr.open_dataset(out) as res:
        assert float(res.DET) == 0.5


def test_rqa_needs_exactly_one_threshold(series_file, tmp_path, capsys, fake_rqa):
    path, _ = series_file
    assert main(["rqa", str(path), "--var", "activity", "--out", str(tmp_path / "r.nc")]) == 2
    assert "--eps" in capsys.readouterr().err
    rc = main(["rqa", str(path), "--var", "activity", "--eps", "0.1", "--rr", "0.1"])
    assert rc == 2  # argparse: mutually exclusive


def test_rqa_missing_module_is_a_clear_error(series_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "xedm.labeled.rqa", None)  # import raises ImportError
    monkeypatch.delitem(xedm.__dict__, "rqa", raising=False)  # not cached by an earlier test
    path, _ = series_file
    rc = main(["rqa", str(path), "--var", "activity", "--eps", "0.1",
               "--out", str(tmp_path / "r.nc")])
    assert rc == 2
    assert "not available" in capsys.readouterr().err


def _has_rqa() -> bool:
    try:
        from xedm.labeled.rqa import rqa  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_rqa(), reason="xedm RQA not available yet")
def test_rqa_real(tmp_path, capsys):
    ds = xedm.datasets.lorenz63(400, subsample=5)
    path = tmp_path / "lorenz.nc"
    ds.to_netcdf(path)
    out = tmp_path / "rqa.nc"
    rc = main(["rqa", str(path), "--var", "x", "--E", "3", "--tau", "2", "--rr", "0.05",
               "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    with xr.open_dataset(out) as res:
        assert res.attrs["E"] == 3 and res.attrs["tau"] == 2
        assert abs(res.attrs["recurrence_rate"] - 0.05) < 1e-12
        assert len(res.data_vars) > 0


# ----------------------------------------------------------------- errors: one line, no traceback
def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("xedm: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--E-max", "0"], "--E-max: must be >= 1"),
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--n", "abc"], "--n: must be an integer"),
        (["--n", "20"], "--n: must be >= 100"),
        (["--samples", "0"], "--samples: must be >= 1"),
        (["--out", "d.xyz"], ".png, .pdf, .svg"),
        (["--backend", "tpu"], "invalid choice: 'tpu'"),
        (["--out", "/no/such/dir/d.png"], "/no/such/dir does not exist"),
    ],
)
def test_demo_usage_errors(args, words, capsys):
    assert main(["demo", *args]) == 2
    assert words in _one_error_line(capsys)


def test_demo_errors_of_the_analysis_are_one_line(tmp_path, capsys):
    # --backend gpu: no GPU kernel (or no GPU) here; --E-max too large for --n
    if not xedm.kernels.gpu_available():
        assert main(["demo", "--backend", "gpu", "--out", str(tmp_path / "d.png"), "-q"]) == 2
        assert "backend='gpu'" in _one_error_line(capsys)
    assert main(["demo", "--n", "150", "--E-max", "80", "--out", str(tmp_path / "d.png"),
                 "-q"]) == 2
    assert "needs at least knn" in _one_error_line(capsys)  # lib and pred are disjoint halves
    assert not (tmp_path / "d.png").exists()


def test_demo_unexpected_error_is_one_line(tmp_path, capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("kaput")

    monkeypatch.setattr(xedm, "embed_dimension", boom)
    assert main(["demo", "--out", str(tmp_path / "d.png"), "-q"]) == 1
    assert "RuntimeError: kaput" in _one_error_line(capsys)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--E", "0"], "--E: must be >= 1"),
        (["--E-max", "0"], "--E-max: must be >= 1"),
        (["--E", "2", "--E-max", "3"], "not allowed with argument"),
        (["--tau", "0"], "--tau: must be >= 1"),
        (["--out", "o.csv"], "NetCDF"),
        (["--backend", "tpu"], "invalid choice"),
    ],
)
def test_xmap_usage_errors(series_file, args, words, capsys):
    path, _ = series_file
    assert main(["xmap", str(path), "--series-dim", "neuron", *args]) == 2
    assert words in _one_error_line(capsys)


def test_xmap_input_errors_are_one_line(series_file, tmp_path, capsys):
    path, _ = series_file
    out = str(tmp_path / "o.nc")
    cases = [
        ([str(tmp_path / "missing.nc"), "--series-dim", "neuron"], "no such file"),
        ([str(path), "--series-dim", "cell"], "'cell'"),
        ([str(path), "--var", "nope", "--series-dim", "neuron"], "'nope'"),
        ([str(path), "--series-dim", "neuron", "--time-dim", "t"], "time_dim='t'"),
        ([str(path), "--series-dim", "neuron", "--Tp", "500"], "Tp=500"),
        ([str(path), "--series-dim", "neuron", "--E", "2", "--Tp", "-500"], "Tp=-500"),
        ([str(path), "--series-dim", "neuron", "--E", "200"], "(E-1)*tau"),
        ([str(path), "--series-dim", "time"], "dim='time'"),
    ]
    for args, words in cases:
        assert main(["xmap", *args, "--out", out, "-q"]) == 2, args
        assert words in _one_error_line(capsys), args
    assert not (tmp_path / "o.nc").exists()
    # the output directory must exist; a directory is not a file name
    assert main(["xmap", str(path), "--series-dim", "neuron", "--out",
                 str(tmp_path / "no" / "o.nc")]) == 2
    assert "does not exist" in _one_error_line(capsys)
    (tmp_path / "d.nc").mkdir()
    assert main(["xmap", str(path), "--series-dim", "neuron", "--out", str(tmp_path / "d.nc")]) == 2
    assert "is a directory" in _one_error_line(capsys)
    # a file that is not NetCDF
    bad = tmp_path / "bad.nc"
    bad.write_text("not netcdf")
    assert main(["xmap", str(bad), "--series-dim", "neuron", "--out", out]) == 2
    assert "cannot open" in _one_error_line(capsys)


@pytest.mark.skipif(not hasattr(xedm, "xmap"), reason="xedm.xmap not available yet")
def test_xmap_all_nan_file_fails_without_writing(tmp_path, capsys):
    da = xr.DataArray(np.full((3, 60), np.nan), dims=("neuron", "time"), name="v")
    path = tmp_path / "nan.nc"
    da.to_dataset().to_netcdf(path)
    out = tmp_path / "o.nc"
    assert main(["xmap", str(path), "--series-dim", "neuron", "--E", "2", "--out", str(out),
                 "-q"]) == 2
    assert "all NaN" in _one_error_line(capsys)
    assert not out.exists()


@pytest.mark.skipif(not hasattr(xedm, "xmap"), reason="xedm.xmap not available yet")
def test_xmap_partly_nan_file_warns_in_one_line(tmp_path, capsys):
    ds = xedm.datasets.many_series(3, 200, density=0.5, seed=0)
    x = ds.x.copy()
    x[1] = np.nan
    path = tmp_path / "net.nc"
    x.to_dataset(name="x").to_netcdf(path)
    out = tmp_path / "o.nc"
    assert main(["xmap", str(path), "--series-dim", "series", "--E", "2", "--out", str(out),
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("xedm: warning: xmap: series") and "all NaN" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with xr.open_dataset(out) as res:
        assert np.isnan(res.rho.values[1]).all() and np.isfinite(res.rho.values[0, 0])


@pytest.mark.skipif(not hasattr(xedm, "xmap"), reason="xedm.xmap not available yet")
def test_xmap_zarr_roundtrip(tmp_path, capsys):
    pytest.importorskip("zarr")
    ds = xedm.datasets.many_series(3, 200, density=0.5, seed=0)
    store = tmp_path / "in.zarr"
    ds[["x"]].to_zarr(store)  # opened back with dask: computed inside the command
    out = tmp_path / "o.zarr"
    assert main(["xmap", str(store), "--series-dim", "series", "--E", "2", "--out", str(out),
                 "-q"]) == 0
    with xr.open_zarr(out) as res:
        assert res.rho.sizes == {"library": 3, "target": 3}


@pytest.mark.skipif(not hasattr(xedm, "xmap"), reason="xedm.xmap not available yet")
def test_xmap_write_failure_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    ds = xedm.datasets.many_series(3, 200, density=0.5, seed=0)
    path = tmp_path / "net.nc"
    ds[["x"]].to_netcdf(path)
    nc = tmp_path / "o.nc"

    def fail(self, target, *args, **kwargs):
        open(target, "w").write("half")  # a partial file, then the failure
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", fail)
    assert main(["xmap", str(path), "--series-dim", "series", "--E", "2", "--out", str(nc),
                 "-q"]) == 1
    assert "cannot write" in _one_error_line(capsys)
    assert not nc.exists()


def test_console_script_error_has_no_traceback(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "xedm.cli", "demo", "--E-max", "0"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "xedm: error: argument --E-max: must be >= 1, got 0 (see 'xedm demo --help')"
    ]
