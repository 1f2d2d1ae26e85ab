"""Faults around the CLI's batch jobs (``xedm xmap|rqa INPUT --out OUT.zarr``): jobs killed
midway, chunks deleted, garbled or changed, the input changed between runs, job metadata
damaged, outputs that are or hold the input, foreign directories given to ``--restart``.

Each case asserts that nothing is lost (the user's files and the input byte-identical) and
nothing is mixed: a job that finishes holds exactly what a fresh run on the current input
writes, compared value by value.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.cli import main

pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")


# ----------------------------------------------------------------------------- helpers
def snapshot(path) -> dict:
    """Every file under ``path`` (or the file itself): relative path -> bytes."""
    path = str(path)
    if os.path.isfile(path):
        return {"": open(path, "rb").read()}
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            out[os.path.relpath(full, path)] = open(full, "rb").read()
    return out


def xmap_args(path, out, *extra, E=("--E", "2")):
    return ["xmap", str(path), "--var", "x", "--series-dim", "series", *E, "--block", "2",
            "--scheduler", "synchronous", "--out", str(out), "-q", *extra]


def xmap_choose(path, out, *extra):
    """xmap with E chosen per series (saved in E.json)."""
    return xmap_args(path, out, *extra, E=("--E-max", "3"))


def rqa_args(path, out, *extra):
    return ["rqa", str(path), "--var", "x", "--E", "2", "--rr", "0.1", "--block", "3",
            "--scheduler", "synchronous", "--out", str(out), "-q", *extra]


def load(out) -> xr.Dataset:
    with xr.open_zarr(out) as ds:
        return ds.load()


def fresh(args_of, path, tmp_path, name="fresh.zarr") -> xr.Dataset:
    """What a fresh run on ``path`` writes."""
    out = tmp_path / name
    assert main(args_of(path, out)) == 0
    return load(out)


def same(out, ref: xr.Dataset) -> None:
    """The store at ``out`` holds exactly ``ref`` (values, coords, attrs but the path)."""
    res = load(out)
    xr.testing.assert_identical(res.drop_attrs(), ref.drop_attrs())
    for name in res.data_vars:
        np.testing.assert_array_equal(res[name].values, ref[name].values)


def error_line(capsys, *words) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("xedm: error: "), err
    for w in words:
        assert w in lines[0], err
    return lines[0]


@pytest.fixture
def data(tmp_path):
    ds = xedm.datasets.many_series(8, 120, seed=4)
    path = tmp_path / "data.nc"
    ds[["x"]].to_netcdf(path)
    return path


def killed_run(args, patch: str) -> int:
    """Run ``main(args)`` in a new process that SIGKILLs itself where ``patch`` says."""
    code = "\n".join([
        "import os, signal, sys",
        "from xedm import distributed",
        "from xedm.cli import jobs, main",
        "calls = [0]",
        "def die():",
        "    os.kill(os.getpid(), signal.SIGKILL)",
        patch,
        f"sys.exit(main({[str(a) for a in args]!r}))",
    ])
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=180)
    return run.returncode


# ----------------------------------------------------------------------------- kills
KILL_IN_BLOCK = """
real = distributed._xmap_block
def block(*a, **k):
    calls[0] += 1
    if calls[0] == 3:
        die()
    return real(*a, **k)
distributed._xmap_block = block
"""

KILL_BEFORE_MARKER = """
real = jobs._write_json
def write(path, value):
    if os.sep + "done" + os.sep in path:
        calls[0] += 1
        if calls[0] == 2:
            die()  # the block's chunks are written, its marker is not
    return real(path, value)
jobs._write_json = write
"""

KILL_WHILE_CREATING = """
real = jobs._write_json
def write(path, value):
    if path.endswith("job.json"):
        die()  # the new store is built under its temporary name, not renamed yet
    return real(path, value)
jobs._write_json = write
"""


@pytest.mark.parametrize("patch, markers", [(KILL_IN_BLOCK, 2), (KILL_BEFORE_MARKER, 1),
                                            (KILL_WHILE_CREATING, None)],
                         ids=["in-block", "before-marker", "while-creating"])
def test_killed_job_resumes_to_a_fresh_run(data, tmp_path, patch, markers):
    out = tmp_path / "map.zarr"
    before = snapshot(data)
    assert killed_run(xmap_args(data, out), patch) == -signal.SIGKILL
    if markers is None:
        assert not out.exists()  # a store appears at --out only when complete
    else:
        assert len(os.listdir(out / ".xedm-batch" / "done")) == markers
    assert main(xmap_args(data, out)) == 0
    same(out, fresh(xmap_args, data, tmp_path))
    assert snapshot(data) == before
    assert not [n for n in os.listdir(tmp_path) if ".xedm-" in n]  # no leftovers


def test_interrupted_rqa_resumes_to_a_fresh_run(data, tmp_path, capsys, monkeypatch):
    from xedm.cli import jobs

    out = tmp_path / "rqa.zarr"
    real, calls = jobs._write_block, [0]

    def interrupted(*args):
        calls[0] += 1
        if calls[0] == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(jobs, "_write_block", interrupted)
    assert main(rqa_args(data, out)) == 130
    monkeypatch.setattr(jobs, "_write_block", real)
    assert main(rqa_args(data, out)) == 0
    assert "2 computed now, 1 already written" in capsys.readouterr().out
    same(out, fresh(rqa_args, data, tmp_path))


# ----------------------------------------------------------------------------- damaged blocks
def _garble(out):
    (out / "rho" / "0.0").write_bytes(b"\x00garbage\xff" * 7)


def _delete(out):
    os.remove(out / "rho" / "1.0")
    os.remove(out / "rho" / "2.0")


def _change(out):  # a valid chunk holding other values
    group = zarr.open_group(str(out), mode="r+", use_consolidated=False)
    group["rho"][2:4] = 0.5


def _bad_marker(out):
    (out / ".xedm-batch" / "done" / "3").write_text("{not json")


@pytest.mark.parametrize("damage, redone", [(_garble, 1), (_delete, 2), (_change, 1),
                                            (_bad_marker, 1)],
                         ids=["garbled-chunk", "deleted-chunks", "changed-values",
                              "bad-marker"])
def test_finished_blocks_that_do_not_verify_are_recomputed(data, tmp_path, capsys, damage,
                                                           redone):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out)) == 0
    damage(out)
    capsys.readouterr()
    assert main(xmap_args(data, out)) == 0
    text = capsys.readouterr()
    assert f"{redone} computed now ({redone} again" in text.out
    assert f"{redone} finished block(s) of {out} did not verify" in text.err
    same(out, fresh(xmap_args, data, tmp_path))


def test_damaged_store_metadata_is_a_clear_error(data, tmp_path, capsys):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out)) == 0
    (out / ".zmetadata").write_text("{")
    before = snapshot(out)
    assert main(xmap_args(data, out)) == 2
    error_line(capsys, "the store is damaged", "--restart")
    assert snapshot(out) == before
    assert main(xmap_args(data, out, "--restart")) == 0
    same(out, fresh(xmap_args, data, tmp_path))


# ----------------------------------------------------------------------------- the input changed
def _values(ds):
    return ds.assign(x=ds.x.copy(data=ds.x.values[:, ::-1].copy()))


def _one_value(ds):
    x = ds.x.values.copy()
    x[5, 60] += 1e-9
    return ds.assign(x=ds.x.copy(data=x))


def _more_series(ds):
    return xr.concat([ds, ds.isel(series=[0]).assign_coords(series=[99])], "series")


def _labels(ds):
    return ds.assign_coords(series=ds.series.values + 100)


@pytest.mark.parametrize("change, what", [(_values, "values"), (_one_value, "values"),
                                          (_more_series, "shape"), (_labels, "coords")],
                         ids=["reversed", "one-value", "more-series", "labels"])
def test_resume_on_a_changed_input_is_refused(data, tmp_path, capsys, change, what):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out)) == 0
    with xr.open_dataset(data) as ds:
        changed = change(ds.load())
    changed.to_netcdf(data)
    before, store = snapshot(data), snapshot(out)
    capsys.readouterr()
    assert main(xmap_args(data, out)) == 2
    error_line(capsys, "the input changed", what, "--restart")
    assert snapshot(out) == store and snapshot(data) == before
    assert main(xmap_args(data, out, "--restart")) == 0
    same(out, fresh(xmap_args, data, tmp_path))
    assert snapshot(data) == before


def test_resume_with_the_E_chosen_then_input_changed(data, tmp_path, capsys):
    """The saved E is never reused for another input."""
    out = tmp_path / "map.zarr"
    args = xmap_choose
    assert main(args(data, out)) == 0
    with xr.open_dataset(data) as ds:
        changed = _values(ds.load())
    changed.to_netcdf(data)
    capsys.readouterr()
    assert main(args(data, out)) == 2
    error_line(capsys, "the input changed", "--restart")
    assert main(args(data, out, "--restart")) == 0
    same(out, fresh(args, data, tmp_path))


# ----------------------------------------------------------------------------- damaged metadata
@pytest.mark.parametrize("name, text", [
    ("job.json", '{"format": 2, "comm'),  # truncated
    ("job.json", "\x00\x01garbage"),
    ("job.json", "[1, 2]"),
    ("job.json", ""),
    ("blocks.json", '{"library": 0, "target": 8}'),  # gave ZeroDivisionError
    ("blocks.json", '{"library": "2", "target": 8}'),
    ("blocks.json", "null"),
    ("E.json", "[2, 2]"),
], ids=["job-truncated", "job-garbage", "job-list", "job-empty", "blocks-zero",
        "blocks-str", "blocks-null", "E-short"])
def test_damaged_job_metadata_is_a_clear_error(data, tmp_path, capsys, name, text):
    out = tmp_path / "map.zarr"
    args = (xmap_choose if name == "E.json" else xmap_args)(data, out)
    assert main(args) == 0
    (out / ".xedm-batch" / name).write_text(text)
    before = snapshot(out)
    capsys.readouterr()
    assert main(args) == 2
    error_line(capsys, os.path.join(str(out), ".xedm-batch", name), "damaged", "--restart")
    assert snapshot(out) == before
    assert main([*args, "--restart"]) == 0  # still a job: --restart may remove it


def test_missing_job_metadata_is_a_clear_error(data, tmp_path, capsys):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out)) == 0
    os.remove(out / ".xedm-batch" / "blocks.json")
    capsys.readouterr()
    assert main(xmap_args(data, out)) == 2
    error_line(capsys, "blocks.json is damaged (missing)", "--restart")


# ----------------------------------------------------------------------------- outputs and input
def _zarr_input(tmp_path, data):
    store = tmp_path / "in.zarr"
    with xr.open_dataset(data) as ds:
        ds.load().to_zarr(store, zarr_format=2)
    return store


def _nc(command, src, out):
    if command == "xmap":
        return ["xmap", str(src), "--var", "x", "--series-dim", "series", "--E", "2", "--out",
                str(out), "-q"]
    return ["rqa", str(src), "--var", "x", "--E", "2", "--rr", "0.1", "--out", str(out), "-q"]


def _contains_input(tmp_path, data):  # an xedm job holding the input: --restart removes it
    box = tmp_path / "box.zarr"
    assert main(xmap_args(data, box)) == 0
    os.link(data, box / "data.nc")
    return xmap_args(box / "data.nc", box, "--restart"), box / "data.nc"


def _symlink(tmp_path, data):
    os.symlink(data, tmp_path / "link.nc")
    return _nc("xmap", data, tmp_path / "link.nc"), data


def _hardlink(tmp_path, data):
    os.link(data, tmp_path / "hard.nc")
    return _nc("rqa", data, tmp_path / "hard.nc"), data


OVERLAPS = {
    "xmap-nc-same": lambda t, d: (_nc("xmap", d, d), d),
    "rqa-nc-same": lambda t, d: (_nc("rqa", d, d), d),
    "xmap-zarr-same-restart": lambda t, d: (xmap_args(_zarr_input(t, d), t / "in.zarr",
                                                      "--restart"), t / "in.zarr"),
    "rqa-zarr-same-restart": lambda t, d: (rqa_args(_zarr_input(t, d), t / "in.zarr",
                                                    "--restart"), t / "in.zarr"),
    "inside-input": lambda t, d: (xmap_args(_zarr_input(t, d), t / "in.zarr" / "o.zarr"),
                                  t / "in.zarr"),
    "contains-input": _contains_input,
    "symlink-to-input": _symlink,
    "hardlink-to-input": _hardlink,
}


@pytest.mark.parametrize("case", list(OVERLAPS))
def test_output_that_is_or_holds_the_input_is_refused(data, tmp_path, capsys, case):
    args, src = OVERLAPS[case](tmp_path, data)
    before = snapshot(src)
    capsys.readouterr()
    assert main(args) == 2
    error_line(capsys, "destroy the input")
    assert snapshot(src) == before
    assert os.path.exists(src)


@pytest.mark.parametrize("restart", [False, True])
def test_foreign_directory_is_never_removed(data, tmp_path, capsys, restart):
    out = tmp_path / "thesis.zarr"
    out.mkdir()
    (out / "thesis.txt").write_text("four years of work")
    before = snapshot(out)
    assert main(xmap_args(data, out, *(["--restart"] if restart else []))) == 2
    error_line(capsys, "is not an xedm batch job", "nothing was deleted" if restart else
               "does not overwrite")
    assert snapshot(out) == before


def test_restart_keeps_a_job_that_holds_foreign_files(data, tmp_path, capsys):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out)) == 0
    (out / "notes.txt").write_text("mine")
    (out / "rho" / "plot.png").write_bytes(b"png")
    before = snapshot(out)
    capsys.readouterr()
    assert main(xmap_args(data, out, "--tau", "2", "--restart")) == 2
    error_line(capsys, "notes.txt", "rho/plot.png", "nothing was deleted")
    assert snapshot(out) == before


def test_existing_file_as_store_is_refused(data, tmp_path, capsys):
    out = tmp_path / "file.zarr"
    out.write_bytes(b"a file, not a store")
    for extra in ([], ["--restart"]):
        assert main(xmap_args(data, out, *extra)) == 2
        error_line(capsys, "not an xedm batch job")
    assert out.read_bytes() == b"a file, not a store"


def test_restart_replaces_an_old_job(data, tmp_path, capsys):
    out = tmp_path / "map.zarr"
    assert main(xmap_args(data, out, "--tau", "2")) == 0
    assert main(xmap_args(data, out, "--restart")) == 0
    same(out, fresh(xmap_args, data, tmp_path))
    assert not [n for n in os.listdir(tmp_path) if ".xedm-" in n]
    with open(out / ".xedm-batch" / "job.json") as f:
        assert json.load(f)["tau"] is None


# ----------------------------------------------------------------------------- NaN input
def test_all_nan_input_is_refused(tmp_path, capsys):
    da = xr.DataArray(np.full((4, 60), np.nan), dims=("series", "time"), name="x")
    path = tmp_path / "nan.nc"
    da.to_dataset().to_netcdf(path)
    out = tmp_path / "n.zarr"
    assert main(xmap_args(path, out)) == 2
    error_line(capsys, "'x'", "all NaN")
    assert main(rqa_args(path, out)) == 2
    error_line(capsys, "'x'", "all NaN")
    assert not out.exists()


def test_partly_nan_input(data, tmp_path, capsys):
    with xr.open_dataset(data) as ds:
        ds = ds.load()
    ds.x[3] = np.nan
    path = tmp_path / "gappy.nc"
    ds.to_netcdf(path)
    assert main(xmap_args(path, tmp_path / "m.zarr")) == 0
    err = capsys.readouterr().err
    assert err.count("xedm: warning:") == 1 and "series [3] along 'series' are all NaN" in err
    ref = ds.x.edm.xmap(series_dim="series", E=2, progress=False)
    with xr.open_zarr(tmp_path / "m.zarr") as res:
        np.testing.assert_array_equal(res.rho.values, ref.rho.values)
    assert main(rqa_args(path, tmp_path / "r.zarr")) == 2  # as in memory: finite data only
    error_line(capsys, "NaN or infinite")
    assert not (tmp_path / "r.zarr").exists()
