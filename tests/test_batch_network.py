"""``xedm network ... --out OUT.zarr``: the network as a resumable batch job
(xedm/cli/network_job.py): interrupted in a block, run again, it computes only the blocks not
written (and draws no surrogate when none is left) and ends with the edge list
``xedm.causal_network`` returns, with the E and the seed it chose the first time."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
import xarray as xr

import xedm
import xedm.cli.network_job as network_job
from xedm.cli import main

pytest.importorskip("zarr")
pytest.importorskip("dask")

N, T = 130, 160  # past 129 series: the large path (32 candidates per series), in blocks


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("network-job") / "in.nc"
    xedm.datasets.many_series(N, T, seed=1)[["x"]].to_netcdf(path)
    return path


def same(want: xr.Dataset, got: xr.Dataset) -> list:
    bad = []
    for k in want.variables:
        a, b = np.asarray(want[k].values), np.asarray(got[k].values)
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            bad.append(k)
    return bad


def test_interrupted_job_resumes_and_equals_the_function(data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "net.zarr"
    args = ["network", data, "--series-dim", "series", "--surrogates", "9", "--max-lag", "1",
            "--E-max", "2", "--block", "50", "--out", out, "-q"]
    calls = []
    real = network_job._rows

    def failing(X, S, prepared, rows, m, kw):
        calls.append(int(rows[0]))
        if rows[0] == 50:
            raise RuntimeError("the node was lost")
        return real(X, S, prepared, rows, m, kw)

    monkeypatch.setattr(network_job, "_rows", failing)
    code, _, err = run(args, capsys)
    assert code != 0 and "node was lost" in err
    assert 50 in calls
    before = set(calls) - {50}  # written before the failure (dask picks the order)
    meta = out / ".xedm-batch"
    assert sorted(os.listdir(meta / "done")) == sorted(str(b // 50) for b in before)
    seed = json.loads((meta / "seed.json").read_text())  # none was given: drawn, then saved
    E = json.loads((meta / "E.json").read_text())
    calls.clear()
    monkeypatch.setattr(network_job, "_rows", lambda *a: (calls.append(int(a[3][0])),
                                                          real(*a))[1])
    # resumed: the blocks not written are computed, and then the final step fails
    import xedm.core.network as core_network
    import xedm.labeled.network as labeled_network

    finish = core_network.finish_rows

    def lost(*a, **k):
        raise RuntimeError("the node was lost again")

    monkeypatch.setattr(core_network, "finish_rows", lost)
    draws = []
    draw = labeled_network.draw_surrogates
    monkeypatch.setattr(labeled_network, "draw_surrogates",
                        lambda *a, **k: (draws.append(1), draw(*a, **k))[1])
    code, _, err = run(args, capsys)
    assert code != 0 and "lost again" in err
    assert sorted(calls) == sorted({0, 50, 100} - before)  # the written blocks were kept
    assert len(os.listdir(meta / "done")) == 3 and draws == [1]  # drawn once, for them
    # resumed with every block written: no block computed, no surrogate drawn
    monkeypatch.setattr(core_network, "finish_rows", finish)
    calls.clear()
    draws.clear()
    code, stdout, err = run(args, capsys)
    assert code == 0, err
    assert calls == [] and draws == []
    got = xr.open_zarr(out).load()
    assert got.attrs["surrogate_seed"] == seed and got.E.values.tolist() == E
    da = xr.open_dataset(data).x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xedm.causal_network(da, "series", seed=seed, surrogates=9, max_lag=1, E_max=2,
                                   result="edges", progress=False)
    assert same(want, got) == []
    assert {k: str(v) for k, v in want.attrs.items()} == {
        k: str(v) for k, v in got.attrs.items() if k in want.attrs}
    assert f"{int(want.link.values.sum())} links" in stdout
    assert not any(n.startswith(".net.zarr.xedm") for n in os.listdir(tmp_path))
    # finished: run again, it is verified and left as it is
    calls.clear()
    code, stdout, _ = run(args, capsys)
    assert code == 0 and "finished before" in stdout and calls == []
    # other parameters: refused, nothing touched
    code, _, err = run(args[:-3] + ["--alpha", "0.1", "--out", out, "-q"], capsys)
    assert code != 0 and "other parameters" in err and "alpha" in err
    # a damaged finished store is refused
    (out / "link" / "0").write_bytes(b"damaged")
    code, _, err = run(args, capsys)
    assert code != 0 and "--restart" in err


def test_job_is_not_refused_by_the_interactive_time_limit(data, tmp_path, capsys):
    # a network worth a batch job is over the 10 minutes an interactive call may take; the
    # job runs it (block by block, resumable), the function refuses it
    out = tmp_path / "net.zarr"
    args = ["network", data, "--series-dim", "series", "--surrogates", "9", "--max-lag", "1",
            "--E", "2", "--seed", "4", "--block", "65", "--out", out, "-q"]
    with xedm.set_options(work_limit=1e-6):
        with pytest.raises(ValueError, match="work limit"):
            xedm.causal_network(xr.open_dataset(data).x, "series", seed=4, surrogates=9,
                                max_lag=1, E=2, progress=False)
        code, stdout, err = run(args, capsys)
    assert code == 0, err
    assert "library block by library block" in stdout


def test_small_network_job_is_one_step(tmp_path, capsys):
    ds = xedm.datasets.sparse_network(6, 300, seed=2)
    path = tmp_path / "six.nc"
    ds[["x"]].to_netcdf(path)
    out = tmp_path / "six.zarr"
    code, stdout, err = run(["network", path, "--series-dim", "series", "--seed", "3",
                             "--surrogates", "9", "--max-lag", "2", "--out", out, "-q"],
                            capsys)
    assert code == 0, err
    assert "in one step" in stdout
    got = xr.open_zarr(out).load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xedm.causal_network(xr.open_dataset(path).x, "series", seed=3, surrogates=9,
                                   max_lag=2, progress=False)
    assert same(want, got) == []
    # started over with other parameters: the store and its metadata are the new job's
    code, stdout, err = run(["network", path, "--series-dim", "series", "--seed", "3",
                             "--surrogates", "9", "--max-lag", "2", "--alpha", "0.2",
                             "--restart", "--out", out, "-q"], capsys)
    assert code == 0, err
    job = json.loads((out / ".xedm-batch" / "job.json").read_text())
    assert job["alpha"] == 0.2 and xr.open_zarr(out).attrs["alpha"] == 0.2
    code, stdout, _ = run(["network", path, "--series-dim", "series", "--seed", "3",
                           "--surrogates", "9", "--max-lag", "2", "--alpha", "0.2",
                           "--out", out, "-q"], capsys)
    assert code == 0 and "finished before" in stdout


@pytest.mark.distributed
def test_job_on_local_cluster_equals_the_function(data, tmp_path, capsys):
    """The blocks on two worker processes (the series and surrogates scattered to each):
    the same edge list."""
    pytest.importorskip("distributed")
    out = tmp_path / "net.zarr"
    code, _, err = run(["network", data, "--series-dim", "series", "--surrogates", "9",
                        "--max-lag", "1", "--E", "2", "--seed", "4", "--block", "65",
                        "--workers", "2", "--out", out, "-q"], capsys)
    assert code == 0, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xedm.causal_network(xr.open_dataset(data).x, "series", seed=4, surrogates=9,
                                   max_lag=1, E=2, result="edges", progress=False)
    assert same(want, xr.open_zarr(out).load()) == []
