"""The cross-map stage of causal_network at scale: xmap's target cache (one set of target and
surrogate columns for every library E of ``library_E_xmap``), the null summarised where the
lookups ran (``xmap_null_summary``; on the GPU only the summaries come back), and the GPU
twins against the CPU (skipped without a GPU; run with ``python -m pytest -m gpu``)."""

from __future__ import annotations

import naive
import numpy as np
import pytest

from xedm.core import ccm
from xedm.core.network import library_E_xmap
from xedm.kernels import get_kernel, gpu_available
from xedm.stats.surrogates import make_surrogates

KW = dict(tau=1, knn=None, excl=0)
NULL_KEYS = ("rho", "count_ge", "n_null", "null_q", "z_mean", "z_sd", "rho_null")


def _problem(N=5, T=70, n_sur=4, seed=0):
    r = np.random.default_rng(seed)
    X = np.cumsum(r.standard_normal((N, T)), axis=1)
    S, _ = make_surrogates(X, "shuffle", n_sur, seed)
    S[2, 0, 5:9] = np.nan  # a surrogate with a gap
    S[1, 2, 2:] = np.nan  # one with too few values: no rho, one null rho fewer for target 1
    return X, S


def _count_columns(monkeypatch):
    calls = []
    real = ccm._target_columns

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(ccm, "_target_columns", spy)
    return calls


def _same(a, b, rtol=0.0):
    assert sorted(a) == sorted(b)
    for name in a:
        if rtol == 0.0 or a[name].dtype.kind in "iu":
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        else:
            np.testing.assert_allclose(a[name], b[name], rtol=rtol, atol=1e-14,
                                       equal_nan=True, err_msg=name)


def test_library_E_xmap_builds_the_columns_once(monkeypatch):
    """Three library E, surrogates, quantiles, kept null, two lags: the target and surrogate
    columns are built once, and every result equals a cross map of each library on its own
    (no cache); rho and a surrogate's rho equal naive's simplex cross map."""
    X, S = _problem()
    E = np.array([2, 3, 1, 3, 2])
    Tp = np.array([-1, 0])
    kw = dict(KW, Tp=Tp, backend="cpu", S=S, quantiles=(0.1, 0.5, 0.9), keep_null=True)
    calls = _count_columns(monkeypatch)
    got = library_E_xmap(X, E=E, **kw)
    assert len(calls) == 1
    for i in range(len(X)):
        one = ccm.xmap(X[i:i + 1], E=np.full(len(X), E[i]), Y=X, **kw)
        for name in NULL_KEYS:
            np.testing.assert_array_equal(got[name][i], one[name][0], err_msg=name)
    assert len(calls) == 1 + len(X)
    nf = got["n_null"][:, 1]
    assert (nf == 3).all() and (np.delete(got["n_null"], 1, axis=1) == 4).all()
    for i, j, t, s in [(0, 1, 0, 2), (2, 4, 1, 0), (3, 3, 1, 3)]:
        ref = naive.simplex(X[i][None], S[j, s], int(E[i]), Tp=int(Tp[t]))["rho"]
        np.testing.assert_allclose(got["rho_null"][i, j, t, s], ref, rtol=1e-9, equal_nan=True)
    ref = naive.simplex(X[4][None], X[0], 2, Tp=-1)["rho"]
    np.testing.assert_allclose(got["rho"][4, 0, 0], ref, rtol=1e-9)
    # the summaries of the kept null, by their definitions
    null, obs = got["rho_null"], got["rho"]
    fin = np.isfinite(null)
    np.testing.assert_array_equal(got["count_ge"], (fin & (null >= obs[..., None])).sum(-1))
    z = np.arctanh(null)
    zm = np.nansum(z, -1) / fin.sum(-1)
    np.testing.assert_allclose(got["z_mean"], zm, rtol=1e-12)
    np.testing.assert_allclose(got["z_sd"], np.nanstd(z, -1, ddof=1), rtol=1e-10)
    np.testing.assert_allclose(got["null_q"], np.moveaxis(
        np.nanquantile(null, [0.1, 0.5, 0.9], axis=-1), 0, -1), rtol=1e-12)


def test_xmap_cache_keys(monkeypatch):
    """The cache serves a call with the same Y and S objects, Tp and partition of the targets
    by E (whatever the E values); another partition, S or Y rebuilds the columns, and every
    result equals the uncached one."""
    X, S = _problem(N=4, T=60, n_sur=3, seed=1)
    kw = dict(KW, Tp=0, backend="cpu", quantiles=(0.5,))
    calls = _count_columns(monkeypatch)
    cache: dict = {}
    lib = X[:2]
    cases = [  # (E of the targets, S, columns built)
        (np.array([2, 2, 2, 2]), S, 1),
        (np.array([3, 3, 3, 3]), S, 0),  # one partition, other E: the same columns
        (np.array([1, 3, 1, 3]), S, 1),  # two groups
        (np.array([2, 4, 2, 4]), S, 0),
        (np.array([2, 4, 2, 4]), S.copy(), 1),  # another S object
        (np.array([2, 4, 2, 4]), None, 1),  # no surrogates
        (np.array([3, 5, 3, 5]), None, 0),
        (np.array([5, 4, 5, 4]), None, 1),  # the groups in the other order
    ]
    for E, S_, built in cases:
        n0 = len(calls)
        got = ccm.xmap(lib, E=E, Y=X, S=S_, cache=cache, **kw)
        assert len(calls) - n0 == built, E
        _same(got, ccm.xmap(lib, E=E, Y=X, S=S_, **kw))
    ccm.xmap(lib, E=np.array([5, 4, 5, 4]), Y=X.copy(), cache=cache, **kw)  # another Y
    assert len(calls) == 5 + len(cases) + 1


def test_xmap_null_summary_kernel_against_null_summary():
    """The CPU kernel reads a group's target and surrogate columns (target-major) out of the
    lookups' columns: the same as null_summary of the rows gathered by hand."""
    from xedm.stats.significance import null_summary

    r = np.random.default_rng(3)
    nL, nj, ns, c0 = 3, 4, 6, 5
    cols = np.tanh(r.standard_normal((nL, c0 + nj * (1 + ns) + 2)))
    cols[r.random(cols.shape) < 0.1] = np.nan
    got = get_kernel("xmap_null_summary", "cpu")(cols, c0, nj, ns, (0.25, 0.75), True)
    obs = cols[:, c0:c0 + nj]
    null = np.stack([[cols[li, c0 + nj + j * ns:c0 + nj + (j + 1) * ns] for j in range(nj)]
                     for li in range(nL)])
    ge, nf, q, zm, zs = null_summary(obs.ravel(), null.reshape(-1, ns), (0.25, 0.75))
    np.testing.assert_array_equal(got["rho"], obs)
    np.testing.assert_array_equal(got["rho_null"], null)
    for name, val in [("count_ge", ge), ("n_null", nf), ("null_q", q), ("z_mean", zm),
                      ("z_sd", zs)]:
        np.testing.assert_array_equal(got[name], val.reshape(got[name].shape), err_msg=name)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("nq", [0, 3], ids=["no-quantiles", "quantiles"])
@pytest.mark.parametrize("keep_null", [False, True])
def test_xmap_null_summary_gpu_equals_cpu(nq, keep_null):
    """The GPU's summary of lookups on the device: rows with NaN surrogates, rows with one
    or no finite surrogate, a NaN observed rho; equal to the CPU's (counts exactly)."""
    import cupy as cp

    r = np.random.default_rng(4)
    nL, nj, ns, c0 = 7, 9, 11, 13
    cols = np.tanh(r.standard_normal((nL, c0 + nj * (1 + ns) + 5)))
    cols[r.random(cols.shape) < 0.08] = np.nan
    null0 = c0 + nj
    cols[0, null0:null0 + ns] = np.nan  # (0, 0): no finite surrogate
    cols[1, null0 + ns:null0 + 2 * ns - 1] = np.nan  # (1, 1): one
    cols[2, c0 + 2] = np.nan  # a NaN observed rho
    cols[3, null0:null0 + ns] = 1.0  # clipped before atanh
    qs = (0.05, 0.5, 0.95)[:nq]
    a = get_kernel("xmap_null_summary", "cpu")(cols, c0, nj, ns, qs, keep_null)
    b = get_kernel("xmap_null_summary", "gpu")(cp.asarray(cols), c0, nj, ns, qs, keep_null)
    assert all(isinstance(v, np.ndarray) for v in b.values())
    _same(a, b, rtol=1e-12)
    assert np.isnan(b["z_mean"][1, 1]) and b["n_null"][1, 1] == 1 and b["n_null"][0, 0] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("Tp", [0, [-2, -1, 0]], ids=["one-lag", "lags"])
def test_library_E_xmap_gpu_equals_cpu(Tp):
    """library_E_xmap and xmap (targets of several E) with surrogates, quantiles and the kept
    null on the GPU (the lookups summarised on the device) equal the CPU's."""
    X, S = _problem(N=6, T=120, n_sur=5, seed=2)
    E = np.array([2, 3, 1, 3, 2, 4])
    kw = dict(KW, Tp=Tp, S=S, quantiles=(0.1, 0.9), keep_null=True)
    _same(library_E_xmap(X, E=E, backend="gpu", **kw),
          library_E_xmap(X, E=E, backend="cpu", **kw), rtol=1e-12)
    _same(ccm.xmap(X, E=E, backend="gpu", **kw), ccm.xmap(X, E=E, backend="cpu", **kw),
          rtol=1e-12)
    kw.update(quantiles=(), keep_null=False)
    _same(library_E_xmap(X, E=E, backend="gpu", **kw),
          library_E_xmap(X, E=E, backend="cpu", **kw), rtol=1e-12)
    del kw["S"]
    _same(library_E_xmap(X, E=E, backend="gpu", **kw),
          library_E_xmap(X, E=E, backend="cpu", **kw), rtol=1e-12)


def test_ebisuzaki_batched_equals_one_series_at_a_time(monkeypatch):
    """make_surrogates batches the ebisuzaki series of one span (leading and trailing NaN
    make several spans): each series equals its own one-row call (its own stream), in
    batches of any size, and a plain NumPy reference of the method."""
    from xedm.stats import surrogates as su

    r = np.random.default_rng(5)
    X = r.standard_normal((6, 41)).cumsum(axis=1)
    X[1, :3] = np.nan
    X[2, -2:] = np.nan
    X[4] = np.nan
    X[5, :3] = np.nan
    streams = [4, 0, 9, 2, 7, 1]
    got, _ = make_surrogates(X, "ebisuzaki", 3, 11, streams=streams)
    monkeypatch.setattr(su, "EBISUZAKI_BYTES", 1)  # one series per batch
    np.testing.assert_array_equal(make_surrogates(X, "ebisuzaki", 3, 11, streams=streams)[0],
                                  got)
    for b in range(len(X)):
        one, _ = make_surrogates(X[b:b + 1], "ebisuzaki", 3, 11, streams=[streams[b]])
        np.testing.assert_array_equal(one[0], got[b])
        fin = np.isfinite(X[b])
        assert (np.isfinite(got[b]) == fin[None]).all()
        if not fin.any():
            continue
        x = X[b][fin]  # the reference: random phases, Nyquist sign, on the series' stream
        rng = su.series_rng(11, streams[b])
        F = np.fft.rfft(x)
        G = np.abs(F) * np.exp(1j * rng.uniform(0.0, 2.0 * np.pi, (3, len(F))))
        G[:, 0] = F[0]
        if len(x) % 2 == 0:
            G[:, -1] = np.abs(F[-1]) * rng.choice([-1.0, 1.0], 3)
        np.testing.assert_allclose(got[b][:, fin], np.fft.irfft(G, n=len(x)), rtol=1e-12,
                                   atol=1e-12)
