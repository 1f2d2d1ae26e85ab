"""Resumable CLI batch jobs (xedm/cli/jobs.py): ``xedm xmap|rqa INPUT ... --out OUT.zarr``."""

import os

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.cli import main

pytest.importorskip("dask")
pytest.importorskip("zarr")


@pytest.fixture
def net(tmp_path):
    ds = xedm.datasets.many_series(7, 150, seed=4)
    path = tmp_path / "net.nc"
    ds[["x"]].to_netcdf(path)
    return str(path), ds.x


def xmap_args(path, out, *extra):
    return ["xmap", path, "--var", "x", "--series-dim", "series", "--E-max", "4", "--block", "2",
            "--scheduler", "synchronous", "--out", str(out), "-q", *extra]


def test_xmap_job_writes_the_map_with_its_parameters(net, tmp_path, capsys):
    path, x = net
    out = tmp_path / "map.zarr"
    assert main(xmap_args(path, out, "--Tp", "0,1")) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "4 block(s) (library x target), 4 computed now" in text
    ref = x.edm.xmap(series_dim="series", E_max=4, Tp=[0, 1], progress=False)
    with xr.open_zarr(out) as res:
        np.testing.assert_allclose(res.rho.values, ref.rho.values, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(res.E.values, ref.E.values)
        np.testing.assert_array_equal(res.best_Tp.values, ref.best_Tp.values)
        assert res.rho.encoding["chunks"] == (2, 7, 2)
        assert res.attrs["E_chosen"] == 1 and res.attrs["E_max"] == 4
        assert res.attrs["variable"] == "x" and res.attrs["input"] == os.path.abspath(path)
    assert main(xmap_args(path, out, "--Tp", "0,1")) == 0  # again: nothing to do
    assert "0 computed now, 4 already written" in capsys.readouterr().out


def test_interrupted_job_resumes_without_recomputing(net, tmp_path, capsys, monkeypatch):
    from xedm import distributed

    path, x = net
    out = tmp_path / "map.zarr"
    real_block, real_E = distributed._xmap_block, distributed._choose_E_chunk
    calls = {"block": 0, "E": 0}

    def interrupted(*args, **kw):
        calls["block"] += 1
        if calls["block"] == 3:
            raise KeyboardInterrupt  # Ctrl-C while the third block is being computed
        return real_block(*args, **kw)

    monkeypatch.setattr(distributed, "_xmap_block", interrupted)
    assert main(xmap_args(path, out)) == 130
    assert "interrupted" in capsys.readouterr().err
    done = os.listdir(out / ".xedm-batch" / "done")
    assert len(done) == 2  # two blocks written before the interruption

    def counting_block(*args, **kw):
        calls["block"] += 1
        return real_block(*args, **kw)

    def counting_E(*args, **kw):
        calls["E"] += 1
        return real_E(*args, **kw)

    calls.update(block=0, E=0)
    monkeypatch.setattr(distributed, "_xmap_block", counting_block)
    monkeypatch.setattr(distributed, "_choose_E_chunk", counting_E)
    assert main(xmap_args(path, out)) == 0
    assert "2 computed now, 2 already written" in capsys.readouterr().out
    assert calls == {"block": 2, "E": 0}  # the saved blocks and the saved E: not recomputed
    ref = x.edm.xmap(series_dim="series", E_max=4, progress=False)
    with xr.open_zarr(out) as res:
        np.testing.assert_allclose(res.rho.values, ref.rho.values, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(res.E.values, ref.E.values)


def test_other_parameters_refused_or_restarted(net, tmp_path, capsys):
    path, x = net
    out = tmp_path / "map.zarr"
    assert main(xmap_args(path, out, "--tau", "1")) == 0
    capsys.readouterr()
    assert main(xmap_args(path, out, "--tau", "2")) == 2
    err = capsys.readouterr().err
    assert "other parameters (tau)" in err and "--restart" in err
    assert main(xmap_args(path, out, "--tau", "2", "--restart")) == 0
    assert "4 computed now" in capsys.readouterr().out
    with xr.open_zarr(out) as res:
        assert res.attrs["tau"] == 2
    (tmp_path / "foreign.zarr").mkdir()
    assert main(xmap_args(path, tmp_path / "foreign.zarr")) == 2
    assert "not an xedm batch job" in capsys.readouterr().err


def test_missing_file_variable_dim(net, tmp_path, capsys):
    path, _ = net
    out = str(tmp_path / "o.zarr")
    base = ["--scheduler", "synchronous", "--out", out, "-q"]
    assert main(["xmap", str(tmp_path / "nope.nc"), "--series-dim", "series", *base]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["xmap", path, "--var", "y", "--series-dim", "series", *base]) == 2
    assert "variable 'y' not in the file" in capsys.readouterr().err
    assert main(["xmap", path, "--var", "x", "--series-dim", "neuron", *base]) == 2
    assert "--series-dim 'neuron' is not a dim of 'x'" in capsys.readouterr().err
    assert main(["xmap", path, "--var", "x", "--series-dim", "series", "--time-dim", "t",
                 *base]) == 2
    assert "--time-dim 't' is not a dim" in capsys.readouterr().err
    assert main(["rqa", path, "--var", "x", "--eps", "0.1", "--time-dim", "t", *base]) == 2
    assert "--time-dim 't' is not a dim" in capsys.readouterr().err
    assert main(["xmap", path, "--var", "x", "--series-dim", "series", "--workers", "2",
                 *base]) == 2
    assert "not both" in capsys.readouterr().err
    assert not os.path.exists(out)


def test_rqa_job_prints_measures_and_resumes(net, tmp_path, capsys):
    path, x = net
    out = tmp_path / "rqa.zarr"
    args = ["rqa", path, "--var", "x", "--E", "2", "--rr", "0.05", "--block", "3",
            "--scheduler", "synchronous", "--out", str(out), "-q"]
    assert main(args) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "3 blocks, 3 computed now" in text
    ref = x.edm.rqa(E=2, recurrence_rate=0.05, progress=False)
    for m in ("RR", "DET", "LAM", "ENTR"):
        v = ref[m].values
        assert f"  {m:<7} mean {v.mean():.6g}  [min {v.min():.6g}, max {v.max():.6g}]" in text
    with xr.open_zarr(out) as res:
        xr.testing.assert_allclose(res.drop_attrs(), ref.drop_attrs(), rtol=1e-12, atol=0)
        assert res.attrs["recurrence_rate"] == 0.05 and res.attrs["E"] == 2
    assert main(args) == 0
    assert "0 computed now, 3 already written" in capsys.readouterr().out


def test_rqa_netcdf_prints_measures(net, tmp_path, capsys):
    path, x = net
    assert main(["rqa", path, "--var", "x", "--E", "2", "--eps", "0.2",
                 "--out", str(tmp_path / "r.nc"), "-q"]) == 0
    text = capsys.readouterr().out
    det = x.edm.rqa(E=2, eps=0.2, progress=False).DET.values
    assert f"  DET     mean {det.mean():.6g}" in text


@pytest.mark.distributed
def test_xmap_job_on_local_cluster(net, tmp_path, capsys):
    pytest.importorskip("distributed")
    path, x = net
    out = tmp_path / "map.zarr"
    assert main(["xmap", path, "--var", "x", "--series-dim", "series", "--E", "2", "--workers", "2",
                 "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    ref = x.edm.xmap(series_dim="series", E=2, progress=False)
    with xr.open_zarr(out) as res:
        np.testing.assert_allclose(res.rho.values, ref.rho.values, rtol=1e-12, atol=1e-12)
