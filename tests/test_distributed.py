"""The blocked all-pairs cross map on Dask (xedm/distributed.py).

Equal to the in-memory map to 1e-12 (in practice bitwise) for every chunking, with E given
or chosen, several Tp and all-NaN series; one neighbour table per library series and block;
writable to Zarr; on a LocalCluster of 2 worker processes, and finishing with the same result
when one worker is killed in the middle.
"""

import os
import warnings

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm.distributed import block_sizes, xmap_blocks

dask = pytest.importorskip("dask")
TOL = 1e-12


@pytest.fixture(scope="module")
def series():
    return xedm.datasets.many_series(9, 160, seed=3).x


def same(a, b):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("chunk", [1, 4, 9])
@pytest.mark.parametrize("target_block", [2, 9])
def test_blocks_equal_in_memory(series, chunk, target_block):
    ref = series.edm.xmap(series_dim="series", E_max=5, Tp=[0, 1], progress=False)
    rho, E = xmap_blocks(series.chunk({"series": chunk}).data, E=None, E_max=5, tau=1,
                         Tp=[0, 1], knn=None, excl=0, backend="cpu",
                         target_block=target_block)
    assert rho.chunks[0] == series.chunk({"series": chunk}).chunks[0]
    assert set(rho.chunks[1][:-1]) <= {target_block}
    rho, E = dask.compute(rho, E, scheduler="sync")
    same(rho, ref.rho.transpose("library", "target", "Tp").values)
    np.testing.assert_array_equal(E, ref.E.values)


def test_accessor_lazy_and_equal(series):
    x = series.copy()
    x[2] = np.nan  # an all-NaN series: its row and column NaN, E = 1
    with pytest.warns(UserWarning, match="all NaN"):
        ref = x.edm.xmap(series_dim="series", E_max=4, progress=False)
    lazy = x.chunk({"series": 3})
    out = lazy.edm.xmap(series_dim="series", E_max=4, progress=False)
    assert out.rho.chunks is not None and out.E.chunks is not None  # nothing computed yet
    with pytest.warns(UserWarning, match="all NaN"):
        got = out.compute(scheduler="sync")
    same(got.rho.values, ref.rho.values)
    np.testing.assert_array_equal(got.E.values, ref.E.values)
    assert np.isnan(got.rho.values[2]).all() and np.isnan(got.rho.values[:, 2]).all()
    assert got.attrs == ref.attrs | {"neighbors_recall": 1.0}


def test_E_given_and_knn(series):
    E = np.array([1, 2, 3, 2, 1, 3, 2, 2, 1])
    ref = series.edm.xmap(series_dim="series", E=E, knn=3, exclusion_radius=2, progress=False)
    out = series.chunk({"series": 2}).edm.xmap(series_dim="series", E=E, knn=3, exclusion_radius=2,
                                                progress=False)
    same(out.rho.compute(scheduler="sync").values, ref.rho.values)


def test_naive_reference(series):
    """One block against tests/naive.py's cross map (the slow obvious reference)."""
    import naive

    x = series.values[:4]
    rho, _ = xmap_blocks(series[:4].chunk({"series": 2}).data, E=np.full(4, 2), E_max=2,
                         tau=1, Tp=0, knn=None, excl=0, backend="cpu", target_block=3)
    rho = rho.compute(scheduler="sync")[..., 0]
    np.testing.assert_allclose(rho, naive.xmap(x, E=np.full(4, 2)), rtol=1e-10)


def test_one_table_per_library_and_block(series, monkeypatch):
    """Each library series' neighbour table is built once per (library, target) block."""
    from xedm.core import ccm

    built = []
    real = ccm._cross_tables

    def counting(X, fin, libs, *args, **kw):
        built.append(X.shape[0] - 0 if libs == slice(None) else libs.stop - libs.start)
        return real(X, fin, libs, *args, **kw)

    monkeypatch.setattr(ccm, "_cross_tables", counting)
    rho, _ = xmap_blocks(series.chunk({"series": 3}).data, E=np.full(9, 2), E_max=2, tau=1,
                         Tp=0, knn=None, excl=0, backend="cpu", target_block=5)
    rho.compute(scheduler="sync")
    # 3 library blocks x 2 target blocks, 3 libraries each: 18 tables, one call per block
    assert len(built) == 6 and sum(built) == 18


def test_zarr(series, tmp_path):
    pytest.importorskip("zarr")
    out = series.chunk({"series": 3}).edm.xmap(series_dim="series", E=2, progress=False)
    out.to_zarr(tmp_path / "map.zarr")
    back = xr.open_zarr(tmp_path / "map.zarr")
    ref = series.edm.xmap(series_dim="series", E=2, progress=False)
    same(back.rho.values, ref.rho.values)
    assert back.rho.encoding["chunks"] == (3, 9)


def test_time_chunks_warn_with_cost(series):
    lazy = series.chunk({"series": 3, "time": 40})
    with pytest.warns(UserWarning, match=r"split into 4 dask chunks.*chunk\(\{'time': -1\}\)"):
        out = lazy.edm.xmap(series_dim="series", E=2, progress=False)
    same(out.rho.compute(scheduler="sync").values,
         series.edm.xmap(series_dim="series", E=2, progress=False).rho.values)


def test_block_sizes_rule():
    assert block_sizes(400, 2000, E_max=10, memory=4e9, workers=2) == (25, 400)
    # memory-bound target block: a quarter of 64 GB, half of it at 24 T bytes per target
    assert block_sizes(100_000, 10_000, memory=64e9, workers=64)[1] == 33333
    lib, tgt = block_sizes(100_000, 10_000, memory=1e9, workers=1)
    assert tgt == int(0.25e9 / 2 // 240_000) and lib * 16 * 10 * 10_000 * 12 <= 0.25e9
    with pytest.raises(ValueError, match="n_series"):
        block_sizes(0, 10)


# ----------------------------------------------------------------------------- a real cluster
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port already in use, etc.
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None,
                                           env={"NUMBA_NUM_THREADS": "1"})
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.distributed
def test_local_cluster_equal(client, series):
    ref = series.edm.xmap(series_dim="series", E_max=4, progress=False)
    out = series.chunk({"series": 2}).edm.xmap(series_dim="series", E_max=4, progress=False)
    got = out.compute()  # the Client is the default scheduler
    same(got.rho.values, ref.rho.values)
    np.testing.assert_array_equal(got.E.values, ref.E.values)


@pytest.mark.distributed
def test_killed_worker_is_survived(client, series, tmp_path):
    """A task kills its own worker process once (a file flag) while the map's blocks are
    running; Dask reschedules the lost work on the restarted worker and the result is the
    same."""
    flag = str(tmp_path / "killed")

    def kill_once(block, flag):  # a local function: pickled by value to the workers
        import os
        import signal

        if not os.path.exists(flag):
            with open(flag, "w") as f:
                f.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return block.shape

    ref = series.edm.xmap(series_dim="series", E_max=4, progress=False)
    out = series.chunk({"series": 1}).edm.xmap(series_dim="series", E_max=4, progress=False)
    before = set(client.scheduler_info()["workers"])
    # the killer depends on the first block, so the kill falls between the map's blocks
    killer = dask.delayed(kill_once)(out.rho.data.blocks[0, 0], flag)
    rho, E, _ = dask.compute(out.rho.data, out.E.data, killer)
    assert os.path.exists(flag)  # a worker was killed
    client.wait_for_workers(2, timeout=60)
    assert set(client.scheduler_info()["workers"]) != before  # and replaced by a new one
    same(rho, ref.rho.values)
    np.testing.assert_array_equal(E, ref.E.values)


def test_import_stays_light():
    """``import xedm`` (and xedm.distributed, xedm.cli.jobs) does not import dask.distributed."""
    import subprocess
    import sys

    code = ("import sys, xedm, xedm.distributed, xedm.cli.jobs; "
            "sys.exit('distributed' in sys.modules or 'zarr' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_target_cache_reused_only_for_the_same_targets(series):
    """xmap's cache (a GPU worker's target columns, kept between its blocks): a hit for the
    same target object, E and Tp gives the uncached map; another E, Tp or target array
    replaces the entry instead of reusing it."""
    from xedm.core import ccm

    X = np.ascontiguousarray(series.transpose("series", "time").values)
    kw = dict(tau=1, knn=None, excl=0, backend="cpu")
    E1, E2 = np.full(9, 2), np.arange(9) % 4 + 1
    cache = {}
    for E, Tp, Y in [(E1, 0, X), (E1, 0, X), (E2, 0, X), (E2, 1, X), (E2, 1, X.copy())]:
        got = ccm.xmap(X[:4], E=E, Tp=Tp, Y=Y, cache=cache, **kw)["rho"]
        same(got, ccm.xmap(X[:4], E=E, Tp=Tp, Y=Y, **kw)["rho"])
        assert cache["targets"][0] is Y


def test_joined_targets_take_each_maps_E(series):
    """Two maps of the same persisted chunks with other E (one target block): the second
    uses its own E, not the first's kept with the joined chunks (a worker keeps the join
    of its target chunks between tasks)."""
    from xedm.distributed import forget_targets

    lazy = series.chunk({"series": 3}).persist(scheduler="sync")
    E1, E2 = np.full(9, 2), np.arange(9) % 4 + 1
    forget_targets()
    for E in (E1, E2):
        got = lazy.edm.xmap(series_dim="series", E=E, progress=False).compute(
            scheduler="sync")
        ref = series.edm.xmap(series_dim="series", E=E, progress=False)
        same(got.rho.values, ref.rho.values)
    forget_targets()


def test_all_nan_block_warns_naming_its_pairs(series):
    """A block of the lazy map without one finite rho warns at compute time, naming its
    libraries and targets; the other blocks come out as in memory."""
    x = series.copy()
    x[:3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = x.edm.xmap(series_dim="series", E=2, progress=False)
        out = x.chunk({"series": 3}).edm.xmap(series_dim="series", E=2, progress=False)
    with pytest.warns(UserWarning, match=r"library \[0, 1, 2\] x target") as rec:
        got = out.compute(scheduler="sync")
    assert any("no (library, target) pair has a finite rho" in str(w.message) for w in rec)
    same(got.rho.values, ref.rho.values)


def test_any_finite_in_pieces():
    from xedm.labeled.cross import _any_finite

    rng = np.random.default_rng(0)
    for shape in [(1,), (7, 5), (3, 200, 300), (0, 4)]:
        a = np.full(shape, np.nan)
        assert _any_finite(a) is False
        for _ in range(3):
            if a.size:
                b = a.copy()
                b.reshape(-1)[rng.integers(a.size)] = 1.0
                assert _any_finite(b, chunk=64) is True
                b.reshape(-1)[-1] = np.inf
                assert _any_finite(np.where(np.isfinite(b), np.nan, b), chunk=64) is False


def test_all_nan_series_named_by_its_label_in_any_chunk(series):
    """The E stage's warning names an all-NaN series of a later chunk by its own label (the
    chunk's rows offset by the chunk's start), and labels of any kind."""
    x = series.copy().assign_coords(series=[f"n{i}" for i in range(9)])
    x[7] = np.nan
    out = x.chunk({"series": 3}).edm.xmap(series_dim="series", E_max=3, progress=False)
    with pytest.warns(UserWarning, match=r"series \['n7'\] are all NaN"):
        out.E.compute(scheduler="sync")


def test_label_array_is_one_dimensional():
    from xedm.distributed import _label_array

    a = _label_array([np.int64(3), np.int64(1)])
    assert a.dtype == np.int64 and a.tolist() == [3, 1]
    t = _label_array([("a", 1), ("b", 2), ("c", 3)])  # a stacked dim's labels
    assert t.shape == (3,) and t[1] == ("b", 2)
    assert _label_array(["x", "yy"]).tolist() == ["x", "yy"]
    mixed = _label_array([1, "a"])  # not made strings
    assert mixed.tolist() == [1, "a"] and isinstance(mixed[0], int)


def test_a_cpu_map_never_gets_the_gpu_join(monkeypatch):
    """A worker's kept join of its target chunks serves only the same kind of map: after a
    GPU map (its chunks joined on the device), a CPU map of the same chunks joins them on
    the host; the GPU's resident copy is faked here by a NumPy one."""
    import xedm.core.resident as resident
    from xedm import distributed as xd

    class FakeDevice(resident.Resident):
        def __init__(self, X, backend):
            super().__init__(X, "cpu")

    monkeypatch.setattr(resident, "Resident", FakeDevice)
    parts = [np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(2, 4)]
    xd.forget_targets()
    xt, _, _ = xd._joined_targets(parts, [np.ones(3), np.ones(2)], "gpu", "exact")
    assert isinstance(xt, FakeDevice)
    xt, _, lt = xd._joined_targets(parts, [np.ones(3), np.ones(2)], "cpu", "exact")
    assert isinstance(xt, np.ndarray) and lt.all()
    np.testing.assert_array_equal(xt, np.concatenate(parts))
    xd.forget_targets()


def test_resident_targets_of_another_backend_are_refused():
    from xedm.core import ccm
    from xedm.core.resident import Resident

    X = np.cumsum(np.random.default_rng(0).standard_normal((3, 50)), axis=1)
    with pytest.raises(ValueError, match="another backend"):
        ccm.xmap(X, E=np.full(3, 2), tau=1, Tp=0, knn=None, excl=0, backend="gpu",
                 Y=Resident(X, "cpu"))
