"""Inputs and outputs of the ``xedm`` commands: an existing output is replaced only with
``--overwrite`` (a ``.zarr`` batch job of the same parameters resumes instead), an ``--out``
that is a symbolic link is written through and stays a link, a CSV table's columns are the
series as ``--help`` says (in memory and in ``.zarr`` jobs), and progress in a log (stderr
not a terminal) is a plain line a minute, never a bar."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import tqdm.auto
import xarray as xr
from fakes import Clock

import xedm
import xedm._progress as progress_mod
from xedm.cli import main


@pytest.fixture
def table(tmp_path):
    """A CSV of three series (Time, x, y, z) over 80 rows."""
    ds = xedm.datasets.coupled_logistic(80)
    df = pd.DataFrame({"Time": np.arange(1, 81), "x": ds.x.values, "y": ds.y.values,
                       "z": np.sin(np.arange(80) * 0.7)})
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    return path


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_error(err: str, *words) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("xedm: error: "), err
    for w in words:
        assert w in lines[0], err
    return lines[0]


#: command -> its arguments before --out (two runs with different options differ)
COMMANDS = {
    "simplex": (["simplex", "{t}", "--var", "x", "--E", "2"], ["--Tp", "2"]),
    "smap": (["smap", "{t}", "--var", "x", "--E", "2", "--theta", "1"], ["--theta", "2"]),
    "embed-dimension": (["embed-dimension", "{t}", "--var", "x", "--E-max", "3"],
                        ["--E-max", "4"]),
    "ccm": (["ccm", "{t}", "--columns", "x,y", "--lib-sizes", "20,40", "--E", "2"],
            ["--tau", "2"]),
    "xmap": (["xmap", "{t}", "--series-dim", "series", "--E", "2"], ["--tau", "2"]),
    "rqa": (["rqa", "{t}", "--var", "x", "--E", "2", "--rr", "0.1"], ["--tau", "2"]),
}


def command_args(name, table, out, *extra):
    base, _ = COMMANDS[name]
    return [a.format(t=table) for a in base] + ["--out", out, "-q", *extra]


# ----------------------------------------------------------------------------- overwrite
@pytest.mark.parametrize("name", list(COMMANDS))
def test_existing_netcdf_is_replaced_only_with_overwrite(table, tmp_path, capsys, name):
    out = tmp_path / f"{name}.nc"
    code, _, err = run(command_args(name, table, out), capsys)
    assert code == 0, err
    before = out.read_bytes()
    other = COMMANDS[name][1]
    code, _, err = run(command_args(name, table, out, *other), capsys)
    assert code == 2
    one_error(err, str(out), "exists", "--overwrite")
    assert out.read_bytes() == before  # refused before any work: untouched
    code, _, err = run(command_args(name, table, out, *other, "--overwrite"), capsys)
    assert code == 0, err
    assert out.read_bytes() != before
    assert not [n for n in os.listdir(tmp_path) if ".xedm-" in n]


def test_demo_figure_is_replaced_only_with_overwrite(tmp_path, capsys):
    out = tmp_path / "demo.png"
    out.write_bytes(b"my figure")
    code, _, err = run(["demo", "--out", out, "-q"], capsys)
    assert code == 2
    one_error(err, str(out), "--overwrite")
    assert out.read_bytes() == b"my figure"
    code, _, err = run(["demo", "--n", "150", "--E-max", "3", "--samples", "3", "--out", out,
                        "-q", "--overwrite"], capsys)
    assert code == 0, err
    assert out.read_bytes().startswith(b"\x89PNG")


def test_output_that_appears_while_running_is_not_replaced(table, tmp_path, capsys,
                                                           monkeypatch):
    out = tmp_path / "race.nc"
    real = xr.Dataset.to_netcdf

    def write(self, path, *args, **kwargs):
        out.write_text("written by someone else meanwhile")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "to_netcdf", write)
    code, _, err = run(command_args("simplex", table, out), capsys)
    assert code == 1
    one_error(err, str(out), "appeared while xedm ran", "--overwrite")
    assert out.read_text() == "written by someone else meanwhile"
    assert not [n for n in os.listdir(tmp_path) if ".xedm-" in n]


def test_zarr_output_is_refused_for_netcdf_commands(table, tmp_path, capsys):
    code, _, err = run(command_args("simplex", table, tmp_path / "s.zarr"), capsys)
    assert code == 2 and "batch jobs of xedm xmap and xedm rqa" in err


# ----------------------------------------------------------------------------- zarr jobs
def zarr_job(table, out, *extra):
    return ["xmap", table, "--series-dim", "series", "--E", "2", "--block", "2",
            "--scheduler", "synchronous", "--out", out, "-q", *extra]


def test_zarr_job_resumes_without_a_flag_and_restarts_with_overwrite(table, tmp_path, capsys):
    out = tmp_path / "map.zarr"
    code, stdout, err = run(zarr_job(table, out), capsys)
    assert code == 0, err
    # the same job again: its own store, resumed (nothing recomputed), not an overwrite
    code, stdout, err = run(zarr_job(table, out), capsys)
    assert code == 0, err
    assert "0 computed now" in stdout and "already written" in stdout
    # other parameters: refused, naming the store and both flags
    code, _, err = run(zarr_job(table, out, "--tau", "2"), capsys)
    assert code == 2
    one_error(err, str(out), "other parameters", "--restart", "--overwrite")
    code, stdout, err = run(zarr_job(table, out, "--tau", "2", "--overwrite"), capsys)
    assert code == 0, err
    with xr.open_zarr(out) as res:
        assert res.attrs["tau"] == 2 if "tau" in res.attrs else True
    with open(out / ".xedm-batch" / "job.json") as f:
        assert '"tau": 2' in f.read()


def test_overwrite_never_removes_a_foreign_directory(table, tmp_path, capsys):
    out = tmp_path / "thesis.zarr"
    out.mkdir()
    (out / "thesis.txt").write_text("four years of work")
    code, _, err = run(zarr_job(table, out, "--overwrite"), capsys)
    assert code == 2
    one_error(err, str(out), "not an xedm batch job", "--overwrite", "nothing was deleted")
    assert (out / "thesis.txt").read_text() == "four years of work"


# ----------------------------------------------------------------------------- symlinks
def test_symlinked_netcdf_out_is_written_through(table, tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    target = runs / "today.nc"
    link = tmp_path / "latest.nc"
    os.symlink(target, link)  # broken: nothing at the target yet
    code, _, err = run(command_args("simplex", table, link), capsys)
    assert code == 2
    one_error(err, str(link), "broken symbolic link")
    assert os.path.islink(link) and not target.exists()

    target.write_bytes(b"yesterday's result")
    code, _, err = run(command_args("simplex", table, link), capsys)
    assert code == 2
    one_error(err, str(link), "symbolic link to", str(target), "--overwrite")
    assert target.read_bytes() == b"yesterday's result"

    code, _, err = run(command_args("simplex", table, link, "--overwrite"), capsys)
    assert code == 0, err
    assert os.path.islink(link) and os.readlink(link) == str(target)  # still the link
    with xr.open_dataset(target) as res:
        assert "rho" in res
    assert not [n for d in (tmp_path, runs) for n in os.listdir(d) if ".xedm-" in n]


def test_symlinked_zarr_out_is_written_through(table, tmp_path, capsys):
    store = tmp_path / "store.zarr"
    assert main([str(a) for a in zarr_job(table, store)]) == 0
    link = tmp_path / "link.zarr"
    os.symlink(store, link)
    code, stdout, err = run(zarr_job(table, link), capsys)  # resumed through the link
    assert code == 0 and "already written" in stdout, err
    code, _, err = run(zarr_job(table, link, "--tau", "2", "--overwrite"), capsys)
    assert code == 0, err
    assert os.path.islink(link) and os.readlink(link) == str(store)
    with open(store / ".xedm-batch" / "job.json") as f:
        assert '"tau": 2' in f.read()
    os.symlink(tmp_path / "nowhere.zarr", tmp_path / "broken.zarr")
    code, _, err = run(zarr_job(table, tmp_path / "broken.zarr"), capsys)
    assert code == 2
    one_error(err, "broken symbolic link")


# ----------------------------------------------------------------------------- CSV columns
def stacked(table) -> xr.DataArray:
    df = pd.read_csv(table).set_index("Time")
    da = xr.DataArray(df.values.T, dims=("series", "time"),
                      coords={"series": list(df.columns), "time": df.index.values})
    return da


def test_csv_columns_are_the_series_of_a_zarr_xmap_job(table, tmp_path, capsys):
    code, _, err = run(zarr_job(table, tmp_path / "m.zarr"), capsys)
    assert code == 0, err
    want = xedm.xmap(stacked(table), series_dim="series", E=2, progress=False)
    with xr.open_zarr(tmp_path / "m.zarr") as got:
        assert list(got.library.values) == ["x", "y", "z"]
        np.testing.assert_allclose(got.rho.values, want.rho.values, rtol=1e-12)
    # and the same in memory
    code, _, err = run(["xmap", table, "--series-dim", "series", "--E", "2", "-q", "--out",
                        tmp_path / "m.nc"], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "m.nc") as got:
        np.testing.assert_allclose(got.rho.values, want.rho.values, rtol=1e-12)


@pytest.mark.parametrize("out", ["q.nc", "q.zarr"])
def test_csv_columns_are_the_series_of_rqa(table, tmp_path, capsys, out):
    args = ["rqa", table, "--E", "2", "--eps", "0.2", "-q", "--out", tmp_path / out]
    if out.endswith(".zarr"):
        args += ["--scheduler", "synchronous", "--block", "1"]
    code, _, err = run(args, capsys)
    assert code == 0, err
    want = xedm.rqa(stacked(table), E=2, eps=0.2, progress=False)
    opener = xr.open_zarr if out.endswith(".zarr") else xr.open_dataset
    with opener(tmp_path / out) as got:
        assert list(got.series.values) == ["x", "y", "z"]
        np.testing.assert_allclose(got.DET.values, want.DET.values)
    # --var picks one column
    code, _, err = run(["rqa", table, "--var", "y", "--E", "2", "--eps", "0.2", "-q",
                        "--out", tmp_path / "y.nc"], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "y.nc") as got:
        assert "series" not in got.dims
        np.testing.assert_allclose(got.DET.values, want.DET.sel(series="y").values)
    # a table of one column is that series alone (no series dim), as before
    one = tmp_path / "one.csv"
    pd.read_csv(table)[["Time", "x"]].to_csv(one, index=False)
    code, _, err = run(["rqa", one, "--E", "2", "--eps", "0.2", "-q", "--out",
                        tmp_path / "one.nc"], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "one.nc") as got:
        assert "series" not in got.dims
        np.testing.assert_allclose(got.DET.values, want.DET.sel(series="x").values)


def test_target_alone_is_predicted_from_its_own_lags(table, tmp_path, capsys):
    code, _, err = run(["simplex", table, "--target", "y", "--E", "2", "-q", "--out",
                        tmp_path / "s.nc"], capsys)
    assert code == 0, err
    ds = stacked(table).to_dataset("series")
    want = xedm.simplex(ds, columns=["y"], target="y", E=2)
    with xr.open_dataset(tmp_path / "s.nc") as got:
        np.testing.assert_allclose(got.rho.values, want.rho.values)


def test_ccm_default_columns_are_the_series_over_time(tmp_path, capsys):
    ds = xedm.datasets.coupled_logistic(80)[["x", "y"]]
    ds["adjacency"] = xr.DataArray(np.eye(2, dtype=bool), dims=("a", "b"))
    path = tmp_path / "pair.nc"
    ds.to_netcdf(path)
    code, stdout, err = run(["ccm", path, "--lib-sizes", "20,40", "--E", "2", "--seed", "1",
                             "-q", "--out", tmp_path / "c.nc"], capsys)
    assert code == 0, err
    with xr.open_dataset(tmp_path / "c.nc") as got:
        assert list(got.library.values) == ["x", "y"]
    code, _, err = run(["ccm", path, "--columns", "x", "--lib-sizes", "20", "--E", "2", "-q",
                        "--out", tmp_path / "d.nc"], capsys)
    assert code == 2
    one_error(err, "--columns gives ['x']", "two or more series")


# ----------------------------------------------------------------------------- progress
@pytest.fixture
def no_terminal(monkeypatch):
    """stderr captured (not a terminal); any tqdm bar is recorded; each reading of the clock
    is a minute later."""
    made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", lambda *a, **k: made.append(k) or tqdm.tqdm(
        *a, **k))
    monkeypatch.setattr(progress_mod, "clock", Clock(61.0))
    return made


def test_batch_job_progress_in_a_log_is_lines(table, tmp_path, capsys, no_terminal):
    out = tmp_path / "q.zarr"
    args = ["rqa", table, "--var", "x", "--E", "2", "--rr", "0.1", "--block", "1",
            "--scheduler", "synchronous", "--out", out]
    code, _, err = run(args, capsys)
    assert code == 0, err
    assert no_terminal == []  # no tqdm bar
    assert "\r" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and all(ln.split(":")[0] in ("read input", "rqa blocks", "verify")
                         and ln.endswith("elapsed") for ln in lines), err
    # -q: nothing at all
    code, _, err = run([*args[:-1], tmp_path / "q2.zarr", "-q"], capsys)
    assert code == 0 and err == ""


def test_in_memory_command_progress_in_a_log_is_lines(table, tmp_path, capsys, no_terminal,
                                                      monkeypatch):
    import xedm.recurrence.recurrence as rec

    monkeypatch.setattr(rec, "PROGRESS_MIN_CELLS", 0)
    code, _, err = run(["rqa", table, "--var", "x", "--E", "2", "--rr", "0.1", "--out",
                        tmp_path / "r.nc"], capsys)
    assert code == 0, err
    assert no_terminal == [] and "\r" not in err
    assert all(ln.startswith("rqa: ") for ln in err.splitlines() if ln.strip()), err
