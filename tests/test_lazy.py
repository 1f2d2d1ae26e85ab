"""Lazy everywhere: dask-backed inputs stay lazy in every accessor method (a counting
scheduler proves that nothing computes during the call) and give the in-memory results."""

import numpy as np
import pytest
import xarray as xr

import xedm
from xedm import api

dask = pytest.importorskip("dask")


class CountingScheduler:
    """Dask's synchronous scheduler, counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, dsk, keys, **kwargs):
        self.calls += 1
        return dask.get(dsk, keys, **kwargs)


@pytest.fixture(scope="module")
def data():
    x = xedm.datasets.many_series(5, 150, seed=2).x
    return x.transpose("series", "time")


def _call(name: str, kwargs: dict):
    return lambda d: getattr(d.edm, name)(**kwargs)


#: every lazy case declared in xedm/api.py: case name -> call on the (series, time) data
CALLS = {case: _call(m.name, kwargs) for m in api.METHODS for case, kwargs in m.lazy_cases}


def test_every_accessor_method_with_dask_support_is_covered():
    # a public method that takes data and keeps no lazy case must say so here, with the reason
    untested = {
        "recurrence_plot": "a dense matrix for plots (at most max_states a side), in memory",
        "causal_network": "the conditioning needs every series' tables at once: in memory",
        "to_networkx": "takes a causal_network result (in memory), not data",
        "to_dense": "takes a causal_network edge list (in memory), not data",
    }
    missing = [m.name for m in api.METHODS
               if m.accessor and not m.lazy_cases and m.name not in untested]
    assert not missing, f"no lazy case declared in xedm/api.py for {missing}"


@pytest.mark.parametrize("name", list(CALLS))
def test_lazy_and_equal(data, name):
    call = CALLS[name]
    with xedm.set_options(progress=False):
        ref = call(data)
        counter = CountingScheduler()
        with dask.config.set(scheduler=counter):
            out = call(data.chunk({"series": 2}))
            assert counter.calls == 0, f"{name} computed {counter.calls} time(s) when called"
            variables = out.data_vars.values() if isinstance(out, xr.Dataset) else [out]
            assert all(v.chunks is not None for v in variables), "a result is not dask-backed"
            got = out.compute()
            assert counter.calls >= 1  # and the counter does see computations
    xr.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


def test_rqa_cross_and_joint_lazy(data):
    other = data + 0.1 * np.cos(np.arange(data.sizes["time"]))
    for kw in ({"other": other}, {"joint": other}):
        ref = data.edm.rqa(E=2, eps=0.2, progress=False, **kw)
        lazy_kw = {k: v.chunk({"series": 3}) for k, v in kw.items()}
        counter = CountingScheduler()
        with dask.config.set(scheduler=counter):
            out = data.chunk({"series": 3}).edm.rqa(E=2, eps=0.2, progress=False, **lazy_kw)
            assert counter.calls == 0
            got = out.compute()
        xr.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


def test_rqa_value_checks_run_at_compute(data):
    bad = data.copy()
    bad[1, 5] = np.nan
    out = bad.chunk({"series": 2}).edm.rqa(E=2, eps=0.1, progress=False)  # lazy: no error yet
    with pytest.raises(ValueError, match="NaN"):
        out.compute(scheduler="sync")


@pytest.mark.parametrize("name", ["simplex", "ccm", "rqa", "surrogates"])
def test_time_split_over_chunks_warns_with_cost(data, name):
    call = CALLS[name]
    with pytest.warns(UserWarning, match=r"'time' is split into 3 dask chunks.*MiB.*"
                      r"chunk\(\{'time': -1\}\)"):
        out = call(data.chunk({"series": 2, "time": 50}))
    with xedm.set_options(progress=False):
        xr.testing.assert_allclose(out.compute(scheduler="sync"), call(data), rtol=1e-12,
                                   atol=0)


def test_one_time_chunk_is_silent(data, recwarn):
    data.chunk({"series": 2}).edm.simplex(E=2)
    assert not [w for w in recwarn if "split into" in str(w.message)]
