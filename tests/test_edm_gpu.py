"""EDM on the GPU: the CuPy twins against the CPU kernels and tests/naive.py (skipped without
a GPU).

Tolerances, per operation:

- neighbour tables (knn_sweep, knn_single): indices and their order EQUAL to the CPU's, and
  distances equal bit for bit (the same float64 sums in the same order, no FMA); against
  naive.knn_table, indices equal and distances to 1e-12;
- predictions (simplex_predict, simplex_sweep) and skills (skill_rows, xmap_skill,
  ccm_skill): to rtol 1e-12 of the CPU's (only ``exp`` rounds differently: CUDA's is within
  1 ulp);
- S-map (smap_predict): predictions, coefficients and singular values within 1e-9 of the
  largest |value| of the CPU's (the same Householder QR, its dot products summed in another
  order, and the rounding amplified by each local fit's conditioning).  On numerically
  rank-deficient fits (smooth Lorenz-63 at E = 20) the coefficients along the smallest kept
  singular directions are fixed by rounding alone (tests/test_smap_tsqr.py): there
  coefficients agree to 1e-9 in the well-determined directions and to 1e-3 overall; with
  few neighbours (knn = 12) on runs of equal values, coefficients to 1e-8;
- public functions with backend="gpu": equal to backend="cpu" to rtol 1e-12 and to naive as
  the CPU tests ask (1e-9).

Run them on a GPU machine with ``python -m pytest -m gpu``.
"""

from __future__ import annotations

import naive
import numpy as np
import pytest
import xarray as xr

from xedm.kernels import get_kernel, gpu_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs CuPy and an NVIDIA GPU"),
]

# the series and point-set helpers of the tie tests (runs of equal values, NaN gaps, five
# lib/pred layouts)
from test_ties import (  # noqa: E402
    MODES,
    assert_tables,
    kernel_args,
    lib_pred,
    min_run,
    permuted_window_series,
    problem,
    runs_series,
)

RTOL = 1e-12


def _cases(n, seed0=0, max_E=6):
    """n random kernel problems: (X, y, E_list, k_list, tau, excl, Tp, lib, pm)."""
    out = []
    for seed in range(seed0, seed0 + n):
        r = np.random.default_rng(seed)
        nE = int(r.integers(1, 4))
        E_list = sorted(r.choice(np.arange(1, max_E + 1), size=nE, replace=False).tolist())
        tau = int(r.choice([1, 1, 2, 3]))
        C = int(r.integers(1, 3))
        excl = int(r.choice([0, 0, 1, 4]))
        Tp = int(r.choice([1, 0, 2, -1, -3]))
        k_list = np.array([E + 1 + int(r.integers(0, 4)) for E in E_list], np.int64)
        T = int(r.integers(150, 400))
        X = runs_series(seed, T, min_run(max(E_list), tau, int(k_list.max())), C,
                        int(r.choice([0, 0, 3, 8])))
        lib, pm, _ = lib_pred(MODES[seed % len(MODES)], T, seed)
        out.append((X, X[0], E_list, k_list, tau, excl, Tp, lib, pm))
    return out


@pytest.fixture(params=["sorted", "scan"])
def knn_path(request, monkeypatch):
    """Both GPU kNN kernels whatever the size: the sorted kernel and the sliced scan; each
    must equal the CPU."""
    from xedm.kernels.knn import gpu as gpu_knn

    monkeypatch.setattr(gpu_knn, "SORTED_MIN_ROWS", 0 if request.param == "sorted" else 2**62)
    return request.param


def _gpu(name):
    return get_kernel(name, "gpu")


def _cpu(name):
    return get_kernel(name, "cpu")


@pytest.mark.parametrize("seed0", [0, 100])
def test_knn_sweep_equals_cpu_and_naive(seed0, knn_path):
    for X, y, E_list, k_list, tau, excl, Tp, lib, pm in _cases(25, seed0):
        lib_ok = problem(X, y, E_list, tau, Tp, lib)
        Xpad, pad, pred_t, pred_ok, q_lo, q_hi = kernel_args(X, lib_ok, pm, E_list, tau)
        args = (Xpad, pad, lib_ok, pred_t, pred_ok, np.array(E_list, np.int64), k_list, tau,
                excl, q_lo, q_hi)
        ci, cd = _cpu("knn_sweep")(*args)
        gi, gd = _gpu("knn_sweep")(*args)
        np.testing.assert_array_equal(gi, ci)
        np.testing.assert_array_equal(gd, cd)  # bit for bit
        for i, E in enumerate(E_list):
            ref_idx, ref_dist = naive.knn_table(X, lib_ok[i, 0], pred_t, E, tau,
                                                int(k_list[i]), excl)
            ok = pred_ok[i, 0]
            assert_tables(gi[i, 0][ok], gd[i, 0][ok], ref_idx[ok], ref_dist[ok], f"E={E}")


def test_knn_single_equals_cpu_and_naive(knn_path):
    for X, y, E_list, k_list, tau, excl, Tp, lib, pm in _cases(30, 200):
        E, k = E_list[-1], int(k_list[-1])
        lib_ok = problem(X, y, [E], tau, Tp, lib)
        Xpad, pad, pred_t, pred_ok, q_lo, q_hi = kernel_args(X, lib_ok, pm, [E], tau)
        args = (Xpad, pad, lib_ok[0], pred_t, pred_ok[0], E, k, tau, excl, q_lo, q_hi)
        ci, cd = _cpu("knn_single")(*args)  # often the CPU's diagonal recurrence
        gi, gd = _gpu("knn_single")(*args)
        np.testing.assert_array_equal(gi, ci)
        np.testing.assert_array_equal(gd, cd)
        ref_idx, ref_dist = naive.knn_table(X, lib_ok[0, 0], pred_t, E, tau, k, excl)
        assert_tables(gi[0], gd[0], ref_idx, ref_dist, "knn_single")


def test_permuted_window_tie_needs_no_fma(knn_path):
    # two windows at the same distance as sums of the same squares in another order: they
    # tie only without FMA contraction (the earlier, nearer in time, comes first)
    x, t_first = permuted_window_series()
    X = x[None]
    T = len(x)
    lib_ok = problem(X, x, [3], 1, 0, [(15, T - 1)])
    pm = np.zeros(T, bool)
    pm[:15] = True
    Xpad, pad, pred_t, pred_ok, q_lo, q_hi = kernel_args(X, lib_ok, pm, [3], 1)
    idx, dist = _gpu("knn_single")(Xpad, pad, lib_ok[0], pred_t, pred_ok[0], 3, 2, 1, 0, q_lo,
                                   q_hi)
    assert (idx[0] == [t_first, t_first + 1]).all()
    assert (dist[0, :, 0] == dist[0, :, 1]).all()


def test_many_series_long_library_and_slices(knn_path):
    # several series per call with different NaN gaps and candidate ranges; long enough that
    # each row's candidates are split over slices (and merged), and short P with long L
    from xedm.core.embed import LibSpec, prepare

    r = np.random.default_rng(7)
    B, T = 3, 6000
    X = np.cumsum(r.standard_normal((B, 2, T)), axis=-1) * 0.1
    X = np.round(X, 1)  # many exact ties
    X[1, 0, 100:130] = np.nan
    y = X[:, 0]
    pm = np.zeros(T, bool)
    pm[::97] = True  # few prediction rows, each with ~6000 candidates: many slices
    for E_list, excl in (([3], 0), ([1, 2, 5], 3)):
        prep = prepare(X, y, np.array(E_list), 2, 1, LibSpec.whole(T), pm, False)
        k_list = np.array([E + 2 for E in E_list], np.int64)
        args = (prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, prep.kernel_E,
                k_list, prep.tau, excl, prep.q_lo, prep.q_hi)
        ci, cd = _cpu("knn_sweep")(*args)
        gi, gd = _gpu("knn_sweep")(*args)
        np.testing.assert_array_equal(gi, ci)
        np.testing.assert_array_equal(gd, cd)


@pytest.mark.parametrize("E_list", [[4], [2, 3, 5]])
def test_knn_device_int32_tables_equal_the_cpu(E_list):
    """The cross map's int32 tables (straight from the sorted kernel's lists in one pass of
    one slice, else converted): the CPU's tables, for enough rows that one slice serves."""
    from xedm.core.embed import LibSpec, prepare
    from xedm.kernels.knn import gpu as kg

    r = np.random.default_rng(3)
    B, T = 12, 3000
    X = np.round(np.cumsum(r.standard_normal((B, 1, T)), axis=-1) * 0.1, 1)
    prep = prepare(X, X[:, 0], np.array(E_list), 1, 1, LibSpec.whole(T), np.ones(T, bool),
                   False)
    assert B * len(prep.pred_t) >= kg.SORTED_SPLIT_ROWS
    k_list = np.array([E + 1 for E in E_list], np.int64)
    args = (prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok, prep.kernel_E,
            k_list, prep.tau, 0, prep.q_lo, prep.q_hi)
    gi, gd = kg.knn_device(*args, int32=True)
    assert gi.dtype == np.int32
    ci, cd = _cpu("knn_sweep")(*args)
    np.testing.assert_array_equal(gi.get(), ci)
    np.testing.assert_array_equal(gd.get(), cd)
    # rows in the key order where one pass makes the tables (E = 2 and 3 straddle a cut of
    # E_SPLIT: two passes, the rows in their own order)
    oi, od, rows = kg.knn_device(*args, int32=True, key_order=True)
    if len(E_list) > 1:
        assert rows is None
        np.testing.assert_array_equal(oi.get(), ci)
        return
    rows = rows.get()
    P = len(prep.pred_t)
    assert rows.shape == (B, P) and (np.sort(rows, axis=1) == np.arange(P)).all()
    assert (rows != np.arange(P)).any()
    np.testing.assert_array_equal(oi.get(), np.take_along_axis(ci, rows[None, :, :, None], 2))
    np.testing.assert_array_equal(od.get(), np.take_along_axis(cd, rows[None, :, :, None], 2))


def test_simplex_predict_and_sweep_equal_cpu_and_naive():
    for X, y, E_list, k_list, tau, excl, Tp, lib, pm in _cases(25, 300):
        lib_ok = problem(X, y, E_list, tau, Tp, lib)
        Xpad, pad, pred_t, pred_ok, q_lo, q_hi = kernel_args(X, lib_ok, pm, E_list, tau)
        yk = np.where(np.isfinite(y), y, 0.0)[None]
        args = (Xpad, pad, lib_ok, pred_t, pred_ok, np.array(E_list, np.int64), k_list, tau,
                excl, q_lo, q_hi, yk, Tp)
        cp_ = _cpu("simplex_sweep")(*args)
        gp = _gpu("simplex_sweep")(*args)
        np.testing.assert_allclose(gp, cp_, rtol=RTOL, atol=1e-15)
        idx, dist = _cpu("knn_sweep")(*args[:11])
        for i, E in enumerate(E_list):
            ref_idx, ref_dist = naive.knn_table(X, lib_ok[i, 0], pred_t, E, tau,
                                                int(k_list[i]), excl)
            ref = naive.table_predictions(ref_idx, ref_dist, y, Tp)
            ref[~pred_ok[i, 0]] = np.nan
            np.testing.assert_allclose(gp[i, 0], ref, rtol=1e-12, atol=1e-14)
            # simplex_predict on a deeper table, fewer entries used than stored
            kk = np.array([max(1, int(k_list[i]) - 1)])
            a = _cpu("simplex_predict")(idx[i], dist[i], lib_ok[i], yk, kk, Tp)
            b = _gpu("simplex_predict")(idx[i], dist[i], lib_ok[i], yk, kk, Tp)
            np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-15)


def test_skill_rows_equals_cpu_and_naive():
    r = np.random.default_rng(3)
    o = r.standard_normal((9, 80)) * 1e3
    p = o + r.standard_normal((9, 80))
    o[1, :78] = np.nan  # 2 pairs: rho NaN
    p[2, ::3] = np.inf
    o[3] = 5.0  # zero variance
    o[4] *= 1e-300
    p[5, :] = np.nan  # no pair
    got = _gpu("skill_rows")(o, p)
    want = _cpu("skill_rows")(o, p)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, equal_nan=True)
    for row in (0, 2, 6):
        ref = naive.skill(o[row], p[row])
        np.testing.assert_allclose(got[0][row], ref["rho"], rtol=1e-9)
        assert got[3][row] == ref["n"]


def test_xmap_skill_equals_cpu():
    from xedm.core.embed import LibSpec, prepare

    r = np.random.default_rng(11)
    N, T = 5, 400
    X = np.cumsum(r.standard_normal((N, T)), axis=1)
    X[2, 50:60] = np.nan
    Yt = np.ascontiguousarray(X.T)
    Yt[r.integers(0, T, 20), r.integers(0, N, 20)] = np.nan  # targets with gaps
    pm = np.ones(T, bool)
    prep = prepare(X[:, None], X, np.array([3]), 1, 0, LibSpec.whole(T), pm, False)
    idx, dist = _cpu("knn_sweep")(prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t,
                                  prep.pred_ok, prep.kernel_E, np.array([9]), 1, 0,
                                  prep.q_lo, prep.q_hi)
    for Tp in (0, 1, -2):
        a = _cpu("xmap_skill")(idx[0], dist[0], Yt, 4, Tp, prep.pred_t, prep.pred_ok[0])
        b = _gpu("xmap_skill")(idx[0], dist[0], Yt, 4, Tp, prep.pred_t, prep.pred_ok[0])
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-14, equal_nan=True)
        assert np.isfinite(b).all()


def test_xmap_skill_groups_equals_cpu():
    """Targets of three E in one launch (groups of 1, 0 and many columns, gaps in some),
    each through its own E's table: equal to the CPU's one xmap_skill per group."""
    from xedm.core.embed import LibSpec, prepare

    r = np.random.default_rng(12)
    N, T = 6, 350
    X = np.cumsum(r.standard_normal((N, T)), axis=1)
    X[1, 40:47] = np.nan
    E_list = np.array([2, 3, 5])
    pm = np.ones(T, bool)
    prep = prepare(X[:, None], X, E_list, 1, 0, LibSpec.whole(T), pm, False)
    idx, dist = _cpu("knn_sweep")(prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok,
                                  prep.kernel_E, np.array([12, 9, 14]), 1, 0, prep.q_lo,
                                  prep.q_hi)
    tables = [(idx[g], dist[g]) for g in range(3)]
    oks = [prep.pred_ok[g] for g in range(3)]
    Yt = np.ascontiguousarray(np.concatenate([X[:1], X[1:]], axis=0).T)
    Yt[r.integers(0, T, 15), r.integers(1, N, 15)] = np.nan
    col_group = np.array([0, 2, 2, 2, 2, 2], np.int32)  # group 1 has no target
    k_list = [3, 4, 6]
    for Tp in (0, 2, -1):
        a = _cpu("xmap_skill_groups")(tables, Yt, col_group, k_list, Tp, prep.pred_t, oks)
        b = _gpu("xmap_skill_groups")(tables, Yt, col_group, k_list, Tp, prep.pred_t, oks)
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-14, equal_nan=True)
        assert np.isfinite(b).all()
        # the groups really differ: group 2's columns through group 0's table differ
        c = _cpu("xmap_skill")(idx[0], dist[0], Yt[:, 1:], 3, Tp, prep.pred_t, oks[0])
        assert not np.allclose(c, a[:, 1:])


@pytest.mark.parametrize("variant", ["general", "tile1", "tile2", "tile1b32", "ytile16",
                                     "ytile8", "ytile16r1"])
@pytest.mark.parametrize("shuffled", [False, True])
def test_xmap_lookup_kernels_equal_cpu(variant, shuffled, monkeypatch):
    """Every lookup kernel (the general one, the L2-tiled one at 1 and 2 column pairs per
    thread and at 32 threads a block, the shared-memory one at 16 and 8 columns per tile and
    at one row per lane) on many targets: groups that straddle tiles, start at an odd column
    and end mid-tile, NaN-free columns among columns with gaps, rows left out by pred_ok;
    equal to the CPU's xmap_skill_groups.  ``shuffled``: each library's table rows in an
    order of its own (``rows``, as the sorted kNN kernel's key order gives them)."""
    from xedm.core.embed import LibSpec, prepare
    from xedm.kernels.cross import gpu_xmap, gpu_ytile

    monkeypatch.setattr(gpu_xmap, "TILED", variant != "general")
    monkeypatch.setattr(gpu_xmap, "YTILE", variant.startswith("ytile"))
    if variant.startswith("tile"):
        monkeypatch.setattr(gpu_xmap, "TILE_PAIRS", int(variant[4]))
        monkeypatch.setattr(gpu_xmap, "TILE_BTS",
                            (int(variant[6:]),) if "b" in variant else (256, 128, 64))
    if variant.startswith("ytile"):
        monkeypatch.setattr(gpu_ytile, "COLUMNS", (int(variant[5:].split("r")[0]),))
        monkeypatch.setattr(gpu_ytile, "RPI", 1 if variant.endswith("r1") else None)
        assert gpu_ytile.ytile_fits(160, 5) == gpu_ytile.COLUMNS[0]
    r = np.random.default_rng(21)
    N, T, nT = 7, 160, 700
    X = np.cumsum(r.standard_normal((N, T)), axis=1)
    E_list = np.array([2, 4])
    prep = prepare(X[:, None], X, E_list, 1, 0, LibSpec.whole(T), np.ones(T, bool), False)
    idx, dist = _cpu("knn_sweep")(prep.Xpad, prep.pad, prep.lib_ok, prep.pred_t, prep.pred_ok,
                                  prep.kernel_E, np.array([6, 8]), 1, 0, prep.q_lo, prep.q_hi)
    tables = [(idx[g], dist[g]) for g in range(2)]
    oks = [prep.pred_ok[g].copy() for g in range(2)]
    oks[1][3, ::7] = False
    Yt = np.ascontiguousarray(r.standard_normal((T, nT)).cumsum(axis=0))
    # a few targets with gaps, past the groups' boundary: the second group's NaN-free
    # columns start at an odd column
    Yt[r.integers(0, T, 9), r.integers(310, nT, 9)] = np.nan
    col_group = np.repeat(np.array([0, 1], np.int32), [301, nT - 301])
    k_list = [3, 5]
    kw = {}
    if shuffled:  # table row j of library l is row rows[l, j]; pred_t/pred_ok as they were
        rows = np.stack([r.permutation(idx.shape[2]) for _ in range(N)])
        kw["rows"] = rows
        g_tables = [(np.take_along_axis(i, rows[:, :, None], 1),
                     np.take_along_axis(d, rows[:, :, None], 1)) for i, d in tables]
    else:
        g_tables = tables
    for Tp in (0, -1, 2):
        a = _cpu("xmap_skill_groups")(tables, Yt, col_group, k_list, Tp, prep.pred_t, oks)
        b = _gpu("xmap_skill_groups")(g_tables, Yt, col_group, k_list, Tp, prep.pred_t, oks,
                                      **kw)
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-14, equal_nan=True)
        assert np.isfinite(b).all()
    if shuffled:  # the rows' order matters: the same shuffled tables without it differ
        c = _gpu("xmap_skill_groups")(g_tables, Yt, col_group, k_list, 0, prep.pred_t, oks)
        assert not np.allclose(c, _cpu("xmap_skill_groups")(tables, Yt, col_group, k_list, 0,
                                                             prep.pred_t, oks))


@pytest.mark.parametrize("kw", [
    dict(E=None, E_max=5),
    dict(E=None, E_max=4, Tp=[-1, 0, 2], exclusion_radius=2),
    dict(E=None, E_max=3, knn=6, tau=2),
    dict(E=None, E_max=4, surrogates=7, seed=3, keep_null=True, surrogate_method="shuffle"),
])
@pytest.mark.parametrize("nan", [False, True])
def test_public_xmap_chosen_E_keeps_tables_gpu(kw, nan, monkeypatch):
    """With E chosen the GPU keeps the choice's tables for the cross map (one kNN pass): the
    result equals the CPU's (which recomputes them) and the GPU's without keeping them, on
    runs of ties, with and without NaN gaps; rho equals naive's cross map with the E used."""
    from xedm.core import ccm

    calls = []
    real = ccm._choose_E_kept

    def spy(*a, **k):
        out = real(*a, **k)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(ccm, "_choose_E_kept", spy)
    da = _data(5, n=6, T=260, nan=nan)
    a = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
    assert calls == [True]
    b = da.edm.xmap(series_dim="unit", backend="cpu", **kw)
    _same(a.copy(), b)
    monkeypatch.setattr(ccm, "XMAP_KEEP_FRACTION", 0.0)  # the two-pass path
    made = []

    class Counted(ccm.Resident):  # the choice of E takes xmap's copy of X on the device
        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(ccm, "Resident", Counted)
    c = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
    assert calls == [True, False]
    assert len(made) == 1  # xmap's (dropped again when X has gaps)
    _same(c, a)
    if "Tp" not in kw and "surrogates" not in kw:
        E_used = a["E"].values
        ref = naive.xmap(da.values, E_used, tau=kw.get("tau", 1), knn=kw.get("knn"))
        np.testing.assert_allclose(a.rho.values, ref, rtol=1e-9)


# ---- the public functions, backend="gpu" against "cpu" and naive ---------------------------

def _same(a, b):
    assert a.attrs.pop("backend", "gpu") == "gpu"
    b.attrs.pop("backend", None)
    for name in set(a.data_vars) | set(b.data_vars):
        np.testing.assert_allclose(a[name].values, b[name].values, rtol=RTOL, atol=1e-14,
                                   equal_nan=True, err_msg=name)
    xr.testing.assert_equal(a.coords.to_dataset(), b.coords.to_dataset())


def _data(seed=0, n=3, T=300, nan=True):
    X = np.stack([runs_series(seed + i, T, 12, 1, 4 if nan else 0)[0] for i in range(n)])
    return xr.DataArray(X, dims=("unit", "time"), coords={"unit": list("abcdefgh"[:n])})


@pytest.mark.parametrize("kw", [
    dict(E=3),
    dict(E=2, tau=2, Tp=-2, exclusion_radius=3),
    dict(E=4, knn=7, Tp=0, lib=slice(0, 149), pred=slice(150, 299)),
    dict(E=1, Tp=3),
])
def test_public_simplex_gpu(kw):
    da = _data(1)
    a = da.edm.simplex(backend="gpu", **kw)
    b = da.edm.simplex(backend="cpu", **kw)
    _same(a, b)
    x = da.values[0]
    lib = [(0, 149)] if "lib" in kw else None
    pm = None
    if "pred" in kw:
        pm = np.zeros(len(x), bool)
        pm[150:] = True
    ref = naive.simplex(x[None], x, kw["E"], tau=kw.get("tau", 1), Tp=kw.get("Tp", 1),
                        knn=kw.get("knn"), excl=kw.get("exclusion_radius", 0), lib=lib, pred=pm)
    np.testing.assert_allclose(a.rho.values[0], ref["rho"], rtol=1e-9)


def test_public_simplex_multivariate_and_embedded_gpu():
    r = np.random.default_rng(4)
    T = 250
    ds = xr.Dataset({"u": ("time", np.round(np.cumsum(r.standard_normal(T)), 0)),
                     "v": ("time", np.sin(np.arange(T) * 0.3))})
    ds["u"][[10, 11, 90]] = np.nan
    for kw in (dict(E=2, columns=["u", "v"], target="v"),
               dict(columns=["u", "v"], target="u", embedded=True, Tp=-1)):
        a = ds.edm.simplex(backend="gpu", **kw)
        b = ds.edm.simplex(backend="cpu", **kw)
        _same(a, b)


def test_public_embed_dimension_and_predict_interval_gpu():
    da = _data(2)
    a = da.edm.embed_dimension(E_max=8, backend="gpu")
    b = da.edm.embed_dimension(E_max=8, backend="cpu")
    _same(a, b)
    a = da.edm.embed_dimension(E=[1, 3, 6], tau=2, exclusion_radius=2, backend="gpu")
    b = da.edm.embed_dimension(E=[1, 3, 6], tau=2, exclusion_radius=2, backend="cpu")
    _same(a, b)
    a = da.edm.predict_interval(E=3, Tp_max=6, backend="gpu")
    b = da.edm.predict_interval(E=3, Tp_max=6, backend="cpu")
    _same(a, b)
    x = da.values[0]
    ref = naive.predict_interval(x[None], x, 3, 6)
    np.testing.assert_allclose(a.rho.isel(unit=0).values, ref, rtol=1e-9)


def test_public_xmap_gpu():
    da = _data(3, n=5, T=300)
    for kw in (dict(E=2), dict(E=None, E_max=5), dict(E=3, Tp=[-1, 0, 2], exclusion_radius=2)):
        a = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
        b = da.edm.xmap(series_dim="unit", backend="cpu", **kw)
        _same(a, b)
    E = np.full(5, 2)
    ref = naive.xmap(np.where(np.isfinite(da.values), da.values, np.nan), E)
    got = da.edm.xmap(series_dim="unit", E=2, backend="gpu").rho.values
    np.testing.assert_allclose(got, ref, rtol=1e-9)


@pytest.mark.parametrize("kw", [
    dict(E=4), dict(E=[4, 5, 4, 5, 5]), dict(E=5, Tp=[-1, 0, 2], exclusion_radius=2),
    dict(E=4, surrogates=5, seed=1, surrogate_method="shuffle"),
])
@pytest.mark.parametrize("nan", [False, True])
def test_public_xmap_tables_in_key_order_gpu(kw, nan, monkeypatch):
    """Tables whose rows come in the sorted kNN kernel's key order (one pass of one slice: E
    on one side of every cut of E_SPLIT; lookups through the L2-tiled kernel) go to the
    lookups with that order: the CPU's map, at one E and at two (two groups of targets),
    several Tp, surrogates, with NaN gaps."""
    from xedm.kernels.cross import gpu_xmap
    from xedm.kernels.knn import gpu as kg

    assert not gpu_xmap.key_order(260, [5, 6])  # the targets' tile fits shared memory
    monkeypatch.setattr(gpu_xmap, "YTILE", False)
    assert gpu_xmap.key_order(260, [5, 6])
    monkeypatch.setattr(kg, "SORTED_MIN_ROWS", 0)
    monkeypatch.setattr(kg, "SORTED_SPLIT_ROWS", 0)  # one slice, as at scale
    orders = []
    real = kg.knn_device

    def spy(*a, **k):
        out = real(*a, **k)
        if k.get("key_order"):
            orders.append(out[2])
        return out

    monkeypatch.setattr(kg, "knn_device", spy)
    from xedm import kernels

    monkeypatch.setitem(kernels._LOADED, ("knn_device", "gpu"), spy)
    da = _data(8, n=5, T=260, nan=nan)
    a = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
    assert orders and all(o is not None for o in orders)
    b = da.edm.xmap(series_dim="unit", backend="cpu", **kw)
    _same(a.copy(), b)
    if not nan and kw.get("E") == 4 and "Tp" not in kw:
        np.testing.assert_allclose(a.rho.values, naive.xmap(da.values, np.full(5, 4)),
                                   rtol=1e-9)


@pytest.mark.parametrize("kw", [
    dict(E=2), dict(E=None, E_max=5), dict(E=3, Tp=[-1, 0, 2], exclusion_radius=2),
    dict(E=None, E_max=4, surrogates=5, seed=1, surrogate_method="shuffle"),
])
def test_public_xmap_nan_free_resident_gpu(kw, monkeypatch):
    """NaN-free series take the resident path (one copy of X on the device, its point sets
    broadcast from one row, columns made there): the same as the CPU's, and naive's rho."""
    import cupy as cp

    from xedm.core import resident
    from xedm.kernels.device import upload

    calls = []
    real = resident.Resident.point_sets

    def spy(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(resident.Resident, "point_sets", spy)
    da = _data(6, n=5, T=280, nan=False)
    a = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
    assert calls
    b = da.edm.xmap(series_dim="unit", backend="cpu", **kw)
    _same(a.copy(), b)
    if kw.get("E") == 2:
        ref = naive.xmap(da.values, np.full(5, 2))
        np.testing.assert_allclose(a.rho.values, ref, rtol=1e-9)
    view = np.broadcast_to(np.array([[True, False, True]]), (4, 3))
    np.testing.assert_array_equal(upload(view, cp.uint8).get(), view.astype(np.uint8))


@pytest.mark.parametrize("kw", [
    dict(E=3), dict(E=2, Tp=2, exclusion_radius=2), dict(E=None, E_max=4),
    dict(E=3, surrogates=4, seed=2, surrogate_method="shuffle"), dict(E=2, Tp=[0, 1]),
])
@pytest.mark.parametrize("nan", [False, True])
def test_xmap_in_batches_of_libraries_gpu(kw, nan, monkeypatch):
    """The map in batches of one library each (the series kept on the device across them,
    each batch's tables made anew): the CPU's map, with one or several Tp, surrogates and
    E chosen.  (A batch's null summary once took the name of the device's copy of the
    series, and the next batch failed.)"""
    from xedm.core import ccm
    from xedm.kernels import device
    from xedm.kernels.cross import gpu_xmap

    monkeypatch.setattr(ccm, "_gpu_batch_bytes", lambda: 1)
    monkeypatch.setattr(ccm, "XMAP_KEEP_FRACTION", 0.0)  # E chosen: tables made per batch
    # every copy through the pinned buffers: the series up, each batch's map back (its
    # columns put in the targets' order first when E is chosen) into prefaulted memory
    monkeypatch.setattr(device, "STAGED_MIN_BYTES", 1)
    monkeypatch.setattr(gpu_xmap, "DOWNLOAD_MIN_BYTES", 0)
    calls = []
    real = ccm._cross_tables

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(ccm, "_cross_tables", spy)
    da = _data(7, n=7, T=240, nan=nan)
    a = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
    assert len(calls) == 7
    b = da.edm.xmap(series_dim="unit", backend="cpu", **kw)
    _same(a.copy(), b)


def test_staged_upload_equals_the_host_array_gpu(monkeypatch):
    """Large host arrays travel through two pinned buffers (chunks copied by threads while
    the other buffer's chunk is in flight): every byte arrives, for odd sizes and chunks,
    several dtypes, from several threads at once; the input is left as it was."""
    from concurrent.futures import ThreadPoolExecutor

    import cupy as cp

    from xedm.kernels import device

    monkeypatch.setattr(device, "STAGED_MIN_BYTES", 1000)
    monkeypatch.setattr(device, "STAGED_CHUNK", 4096 + 24)
    monkeypatch.setattr(device, "_STAGING", {})
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(37, 301)), rng.integers(-9, 9, (5, 999)).astype(np.int32),
              rng.random((3, 4001)) < 0.5, rng.normal(size=7), rng.normal(size=(1, 9000))]
    for a in arrays:
        before = a.copy()
        d = device.upload(a)
        assert isinstance(d, cp.ndarray) and d.dtype == a.dtype
        np.testing.assert_array_equal(d.get(), a)
        np.testing.assert_array_equal(a, before)
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda a: device.upload(a).get(), arrays * 3))
    for a, o in zip(arrays * 3, outs, strict=True):
        np.testing.assert_array_equal(o, a)
    for a in arrays:  # and back: download into a host array
        out = np.full_like(a, 7)
        device.download(cp.asarray(a), out)
        np.testing.assert_array_equal(out, a)
    monkeypatch.setattr(device, "STAGED_CHUNK", 16 * 2**20)  # chunks copied by threads
    monkeypatch.setattr(device, "_STAGING", {})
    big = rng.normal(size=(6, 1_000_003))
    d = device.upload(big)
    np.testing.assert_array_equal(d.get(), big)
    out = np.empty_like(big)
    device.download(d * 2.0, out)
    np.testing.assert_array_equal(out, big * 2.0)
    with pytest.raises(ValueError, match="one size"):
        device.download(d[:3], out)


@pytest.mark.parametrize("n", [1, 2, 3, 37, 1000, 10000, 16384, 16385])
def test_argsort_rows_in_shared_memory_equals_a_stable_sort_gpu(n):
    """The sorted kNN kernel's argsorts (a bitonic network per row in shared memory): the
    order of NumPy's stable sort, NaN last, for ties, infinities, signed zeros and NaN;
    rows longer than the shared memory holds take CuPy's sort."""
    import cupy as cp

    from xedm.kernels.knn.gpu_sort import MAX_N, argsort_rows

    rng = np.random.default_rng(n)
    a = rng.integers(-4, 5, (5, n)).astype(float)
    a[0] = rng.normal(size=n)
    # (a radix sort, CuPy's, puts -0.0 before 0.0)
    for v in (np.nan, np.inf, -np.inf) + ((-0.0,) if n <= MAX_N else ()):
        a[1:][rng.random((4, n)) < 0.05] = v
    got = argsort_rows(cp.asarray(a)).get()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argsort(a, axis=1, kind="stable"))


def test_argsort_rows_beyond_the_shared_memory_takes_cupy_gpu(monkeypatch):
    """A device whose shared memory does not hold a row (an A100 from 8,193 keys) sorts
    with CuPy: the same order."""
    import cupy as cp

    from xedm.kernels.knn import gpu_compile
    from xedm.kernels.knn.gpu_sort import argsort_rows

    dev = cp.cuda.Device().id
    monkeypatch.setitem(gpu_compile._LIMITS, dev, (4096, gpu_compile.device_limits()[1]))
    a = np.random.default_rng(1).integers(0, 9, (3, 1000)).astype(float)
    np.testing.assert_array_equal(argsort_rows(cp.asarray(a)).get(),
                                  np.argsort(a, axis=1, kind="stable"))


@pytest.mark.parametrize("T", [1, 40, 1000, 5000])
def test_split_sorted_equals_two_stable_sorts_gpu(T):
    """One sort of every time serves the sorted kNN kernel twice: the candidates in key
    order (then the others) and the prediction rows in key order equal NumPy's stable
    argsorts of the masked keys and of the rows' keys, with ties and NaN."""
    import cupy as cp

    from xedm.kernels.knn.gpu_sort import argsort_rows, split_sorted

    rng = np.random.default_rng(T)
    B = 7
    key = rng.integers(0, 6, (B, T)).astype(float)
    ok = rng.random((B, T)) < 0.8
    ok[0] = False
    ok[1] = True
    key[(rng.random((B, T)) < 0.05) & ~ok] = np.nan  # (a candidate's key is a number)
    pred_t = np.flatnonzero(rng.random(T) < 0.7)
    key2 = rng.normal(size=(B, T))
    cand, ncand, rows, ckey, ckey2, rkey2 = (
        a.get() for a in split_sorted(argsort_rows(cp.asarray(key)), cp.asarray(ok), pred_t,
                                      cp.asarray(key), cp.asarray(key2)))
    ref = np.argsort(np.where(ok, key, np.inf), axis=1, kind="stable")
    np.testing.assert_array_equal(ncand, ok.sum(axis=1))
    for b in range(B):
        nc = int(ok[b].sum())
        np.testing.assert_array_equal(cand[b, :nc], ref[b, :nc])
        assert sorted(cand[b, nc:]) == sorted(np.flatnonzero(~ok[b]))
    rows_ref = np.argsort(key[:, pred_t], axis=1, kind="stable")
    np.testing.assert_array_equal(rows, rows_ref)
    np.testing.assert_array_equal(ckey, np.take_along_axis(key, cand, axis=1))
    np.testing.assert_array_equal(ckey2, np.take_along_axis(key2, cand, axis=1))
    np.testing.assert_array_equal(rkey2, np.take_along_axis(key2[:, pred_t], rows_ref, axis=1))


@pytest.mark.parametrize("m,tau", [(1, 1), (5, 1), (4, 3), (12, 2)])
def test_lag_keys_kernel_equals_the_array_code_gpu(m, tau):
    """The sorted kNN keys in one kernel: bit for bit the array code's (NumPy) sums, the
    same weights, products and additions in the same order."""
    import cupy as cp

    from xedm.kernels.knn import gpu_keys

    rng = np.random.default_rng(m)
    B, C, T, pad = 5, 2, 300, 30
    X = rng.normal(size=(B, C, T + pad))
    w1, w2 = rng.normal(size=(B, m)), rng.normal(size=(B, m))
    k1, k2 = gpu_keys._lag_keys_device(cp.asarray(X), pad, m, tau, cp.asarray(w1),
                                       cp.asarray(w2))
    for w, k in ((w1, k1), (w2, k2)):
        ref = X[:, 0, pad:] * w[:, :1]
        for e in range(1, m):
            ref = ref + w[:, e:e + 1] * X[:, 0, pad - e * tau:T + pad - e * tau]
        np.testing.assert_array_equal(k.get(), ref)


@pytest.mark.parametrize("m", [2, 5, 33, 64])
def test_leading_pair_kernel_equals_the_array_code_gpu(m):
    """The sorted kNN keys' weights: the device kernel's power iteration gives the array
    code's vectors (NumPy) to rounding, for autocovariance matrices of random and periodic
    series, a zero matrix and the identity (no direction preferred: the starts kept)."""
    import cupy as cp

    from xedm.kernels.knn import gpu_keys

    rng = np.random.default_rng(m)
    T = 400
    X = np.concatenate([rng.normal(size=(6, T)).cumsum(axis=1),
                        np.sin(np.arange(T) * 2 * np.pi / max(m, 2))[None] + 0.0,
                        rng.normal(size=(3, T))])
    xc = X - X.mean(axis=1, keepdims=True)
    ac = np.stack([(xc[:, lag:] * xc[:, :T - lag]).sum(axis=1) for lag in range(m)], axis=1)
    i = np.arange(m)
    A = np.concatenate([ac[:, np.abs(i[:, None] - i[None, :])], np.zeros((1, m, m)),
                        np.eye(m)[None]])
    w1, w2 = gpu_keys._leading_pair(A, np)
    d1, d2 = gpu_keys._leading_pair(cp.asarray(A), cp)
    np.testing.assert_allclose(d1.get(), w1, atol=1e-9)
    np.testing.assert_allclose(d2.get(), w2, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(d1.get()[:-2], axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("nan", [False, True])
def test_xmap_pieces_copied_back_while_computing_gpu(nan, monkeypatch):
    """A large map is looked up in pieces of libraries, each copied back while the next is
    computed: the same map as in one piece, the targets' order (E chosen) kept."""
    from xedm.kernels.cross import gpu_xmap
    from xedm.kernels.knn import gpu as kg

    da = _data(7, n=8, T=200, nan=nan)
    for kw in (dict(E=3), dict(E=None, E_max=4), dict(E=3, key_order=True)):
        kw = dict(kw)
        if kw.pop("key_order", False):  # the tables' rows in key order, sliced per piece
            monkeypatch.setattr(gpu_xmap, "YTILE", False)
            monkeypatch.setattr(kg, "SORTED_MIN_ROWS", 0)
            monkeypatch.setattr(kg, "SORTED_SPLIT_ROWS", 0)
        whole = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
        monkeypatch.setattr(gpu_xmap, "PIPE_BYTES", 8 * 8 * 2)  # pieces of 2 libraries
        pieces = da.edm.xmap(series_dim="unit", backend="gpu", **kw)
        monkeypatch.undo()
        xr.testing.assert_identical(whole, pieces)


def test_auto_picks_gpu_for_large_work_and_records_it():
    from xedm.kernels import GPU_MIN_WORK

    da = _data(4, n=2)  # 2 x 300 x 300 pairs: small, the CPU
    assert da.edm.simplex(E=2).attrs["backend"] == "cpu"
    x = xr.DataArray(np.sin(np.arange(int(GPU_MIN_WORK**0.5)) * 0.1), dims="time")
    a = x.edm.simplex(E=2)
    assert a.attrs["backend"] == "gpu"
    _same(a, x.edm.simplex(E=2, backend="cpu"))
    from xedm.kernels import AUTO_CPU_ONLY

    if "smap_predict" in AUTO_CPU_ONLY:  # its GPU twin measured slower than the CPU
        assert x.edm.smap(E=2).attrs["backend"] == "cpu"
    else:
        a = x.edm.smap(E=2)
        assert a.attrs["backend"] == "gpu"
        b = x.edm.smap(E=2, backend="cpu")
        # (a sine is an exact linear recurrence: mae and rmse are rounding noise)
        for name in ("prediction", "coefficients"):
            _close(a[name].values, b[name].values)
        np.testing.assert_allclose(float(a.rho), float(b.rho), rtol=1e-12)


# ---- ccm: deep sorted tables and sampled-library skill ------------------------------------

def _ccm_problem(seed, T=220):
    r = np.random.default_rng(seed)
    E = int(r.integers(1, 4))
    tau = int(r.integers(1, 3))
    excl = int(r.choice([0, 2]))
    x = runs_series(seed, T, 8, 1, 3)[0]
    pad = E * tau
    Xpad = np.zeros((1, pad + T))
    Xpad[0, pad:] = np.where(np.isfinite(x), x, 0.0)
    lib_ok = np.zeros(T, bool)
    lib_ok[naive.library_points(x[None], x, E, tau, 1, [(0, T - 1)])] = True
    pred_t = np.array([t for t in range(T) if naive.state(x[None], t, E, tau) is not None],
                      np.int64)
    return r, x, E, tau, excl, pad, Xpad, lib_ok, pred_t


@pytest.mark.parametrize("seed", range(4))
def test_sorted_table_equals_cpu_and_naive(seed):
    _, x, E, tau, excl, pad, Xpad, lib_ok, pred_t = _ccm_problem(seed)
    ok = np.ones(len(pred_t), bool)
    for depth in (1, 7, 64, 65, 150, 500):  # the fused kNN kernel, then whole sorted rows
        ci, cd = _cpu("sorted_table")(Xpad, pad, lib_ok, pred_t, ok, E, tau, excl, depth)
        gi, gd = _gpu("sorted_table")(Xpad, pad, lib_ok, pred_t, ok, E, tau, excl, depth)
        np.testing.assert_array_equal(gi, ci)
        np.testing.assert_array_equal(gd, cd)
        ref_idx, ref_dist = naive.knn_table(x[None], lib_ok, pred_t, E, tau, depth, excl)
        assert_tables(gi, gd, ref_idx, ref_dist, f"sorted_table depth={depth}")


@pytest.mark.parametrize("seed", range(4))
def test_ccm_skill_equals_cpu(seed):
    r, x, E, tau, excl, pad, Xpad, lib_ok, pred_t = _ccm_problem(seed)
    T = len(x)
    ok = np.ones(len(pred_t), bool)
    fin = np.isfinite(x)
    Y = np.stack([np.where(fin, x, 0.0), np.sin(np.arange(T)) * 1e5, r.standard_normal(T)])
    members = (r.random((9, T)) < [[0.05], [0.2], [0.5], [1.0]] * 2 + [[0.3]]) & lib_ok
    for depth, complete in ((12, False), (T, True)):
        idx, dist = _cpu("sorted_table")(Xpad, pad, lib_ok, pred_t, ok, E, tau, excl, depth)
        for Tp in (0, 1, -1):
            obs_ok = np.stack([(pred_t + Tp >= 0) & (pred_t + Tp < T)] * 3)
            obs_ok[0] &= fin[np.clip(pred_t + Tp, 0, T - 1)]
            args = (idx, dist, members, Y, obs_ok, E + 1, Tp, Xpad, pad, E, tau, excl, pred_t,
                    complete)
            a = _cpu("ccm_skill")(*args)
            b = _gpu("ccm_skill")(*args)
            np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-14, equal_nan=True)


def test_public_ccm_gpu():
    da = _data(5, n=2, T=250)
    for kw in (dict(E=3, lib_sizes=[20, 60, 240], samples=8, seed=1),
               dict(E=2, lib_sizes=[30, 100], samples=5, seed=2, Tp=[-1, 0],
                    exclusion_radius=2)):
        a = da.edm.ccm(series_dim="unit", backend="gpu", **kw)
        b = da.edm.ccm(series_dim="unit", backend="cpu", **kw)
        _same(a, b)


@pytest.mark.parametrize("depth_factor", [3, 0])
def test_public_ccm_gpu_matches_naive(monkeypatch, depth_factor):
    # depth_factor 0 leaves tables 16 deep: most rows take the direct search on the GPU too
    monkeypatch.setattr("xedm.core.ccm.DEPTH_FACTOR", depth_factor)
    r = np.random.default_rng(8)
    x = np.round(np.cumsum(r.standard_normal(200)), 0)  # ties
    y = np.sin(np.arange(200) * 0.37) + 0.1 * r.standard_normal(200)
    da = xr.DataArray(np.stack([x, y]), dims=("var", "time"), coords={"var": ["x", "y"]})
    out = da.edm.ccm(series_dim="var", lib_sizes=[15, 60], E=3, samples=3, seed=4,
                     keep_samples=True,
                     exclusion_radius=1, backend="gpu")
    ref = naive.ccm_pair(x, y, 3, [15, 60], 3, 4, excl=1)
    np.testing.assert_allclose(out.rho_sample.sel(library="x", target="y").values, ref,
                               rtol=1e-9)


def test_cli_demo_gpu(tmp_path, capsys):
    from xedm.cli import main

    assert main(["demo", "--backend", "gpu", "--out", str(tmp_path / "d.png"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "S-map ran on the CPU" not in out and "figure written" in out


# ---- S-map: batched weighted least squares -----------------------------------------------

def _close(a, b, rtol=1e-9):
    """Equal NaN patterns and |a - b| <= rtol * max |b| (the local fits' rounding scales with
    the largest value of a result, not with each entry)."""
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    scale = np.nanmax(np.abs(b)) if np.isfinite(b).any() else 1.0
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale, equal_nan=True)


@pytest.mark.parametrize("kw", [
    dict(E=3, theta=2.0),
    dict(E=2, theta=0.0, Tp=-2, exclusion_radius=3),
    dict(E=4, theta=1.0, knn=9),
    dict(E=3, theta=2.0, knn=3),  # fewer neighbours than unknowns: the CPU's lstsq
    dict(E=2, theta=3.0, solver="ridge", alpha=0.5, singular_values=True),
    dict(E=1, theta=8.0, columns=["x", "z"], target="z"),
    dict(columns=["x", "z"], target="x", embedded=True, theta=1.5, singular_values=True),
])
def test_public_smap_gpu_equals_cpu(kw):
    r = np.random.default_rng(0)
    T = 200
    x = np.sin(np.arange(T) * 0.3) + 0.3 * r.standard_normal(T)
    x[[20, 21, 70]] = np.nan
    z = np.round(np.cumsum(r.standard_normal(T)), 0)  # ties and rank-deficient local fits
    ds = xr.Dataset({"x": ("time", x * 1e3), "z": ("time", z)})
    kw = {"columns": "x", "target": "x", **kw}
    a = ds.edm.smap(backend="gpu", **kw)
    b = ds.edm.smap(backend="cpu", **kw)
    assert a.attrs["backend"] == "gpu"
    for name in b.data_vars:
        _close(a[name].values, b[name].values)


@pytest.mark.parametrize("seed", range(3))
def test_smap_gpu_runs_of_equal_values_and_naive(seed):
    # constant runs make many local designs rank deficient: the minimum-norm SVD path
    x = runs_series(seed, 220, 10, 1, 3)[0]
    da = xr.DataArray(x, dims="time")
    for kw in (dict(E=3, theta=2.0), dict(E=2, theta=0.0, knn=6),
               dict(E=3, theta=4.0, solver="ridge", alpha=1e-3)):
        a = da.edm.smap(backend="gpu", **kw)
        b = da.edm.smap(backend="cpu", **kw)
        for name in ("prediction", "coefficients"):
            _close(a[name].values, b[name].values)
    ref = naive.smap(x[None], x, 3, theta=2.0)
    got = da.edm.smap(E=3, theta=2.0, backend="gpu")
    np.testing.assert_allclose(got.prediction.values, ref["prediction"], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kw", [
    dict(E=5, theta=2.0),
    dict(E=20, theta=2.0),
    dict(E=4, theta=1.0, exclusion_radius=5, solver="ridge", alpha=0.2),
    dict(E=1, theta=3.0, Tp=-2),
])
def test_smap_gpu_long_series(kw, monkeypatch):
    # every library point a neighbour: every problem to the QR solver's tall-skinny kernel
    import xedm

    sent = _spy_thread(monkeypatch)
    # a little noise: on smooth Lorenz-63 x at E = 20 every local fit is numerically rank
    # deficient (test_smap_gpu_rank_deficient_lorenz_E20 covers those)
    x = xedm.datasets.lorenz63(1500).x.values.copy()
    x += 0.05 * np.random.default_rng(0).standard_normal(len(x))
    x[[100, 101, 700]] = np.nan
    da = xr.DataArray(x, dims="time")
    a = da.edm.smap(backend="gpu", **kw)
    b = da.edm.smap(backend="cpu", **kw)
    for name in ("prediction", "coefficients"):
        _close(a[name].values, b[name].values)
    assert sum(sent) == 0
    np.testing.assert_allclose(float(a.rho), float(b.rho), rtol=1e-12)


def test_cupy_in_cupy_out():
    import cupy as cp

    import xedm

    x = xedm.datasets.lorenz63(400).x
    g = x.copy(data=cp.asarray(x.values))
    for f in (lambda d: d.edm.simplex(E=3, backend="gpu"),
              lambda d: xedm.smap(d, E=3, theta=2.0, backend="gpu")):
        a, b = f(g), f(x)
        for name in b.data_vars:
            assert isinstance(a[name].data, cp.ndarray), name
            assert isinstance(b[name].data, np.ndarray), name
            np.testing.assert_array_equal(cp.asnumpy(a[name].data), b[name].values)
    X = xedm.datasets.many_series(4, 200, seed=0).x
    a = xedm.xmap(X.copy(data=cp.asarray(X.values)), series_dim="series", E=2, backend="gpu")
    assert isinstance(a.rho.data, cp.ndarray)


def test_predict_nonlinear_gpu():
    da = _data(6, n=2)
    a = da.edm.predict_nonlinear(E=3, backend="gpu")
    b = da.edm.predict_nonlinear(E=3, backend="cpu")
    _same(a, b)
    x = da.values[0]
    ref = naive.predict_nonlinear(x[None], x, 3, a.theta.values)
    np.testing.assert_allclose(a.rho.isel(unit=0).values, ref, rtol=1e-6)


# ---- S-map's QR solver (smap/gpu.py): tall-skinny QR kernel, batched finishing ----------

def _spy_thread(monkeypatch):
    """Count the problems sent to the one-thread-per-problem QR kernel."""
    import xedm.kernels.smap.gpu as Q

    sent = []
    inner = Q.smap_qr_thread

    def spy(*args):
        sent.append(len(args[-1]))
        return inner(*args)

    monkeypatch.setattr(Q, "smap_qr_thread", spy)
    return sent


def _with_sv(args):
    return args[:17] + (True,) + args[18:]


def _tsqr_factors(args, pis, rd):
    import xedm.kernels.smap.gpu as Q

    (Xpad, pad, lib_ok, pred_t, _ok, y, E, tau, Tp, thetas, excl, q_lo, q_hi, idx, dist,
     _use, alpha, _sv, xexp, _yexp) = args
    Xpad = np.ascontiguousarray(Xpad, np.float64)
    dev = Q._device_args(Xpad, lib_ok, np.asarray(pred_t, np.int64), y,
                         np.asarray(thetas, np.float64), q_lo, q_hi, idx, dist, False,
                         np.asarray(xexp, np.int64))
    shape = (*Xpad.shape, lib_ok.shape[-1], len(pred_t))
    zero = np.zeros(len(pis), np.int64)
    R, info = Q.smap_qr_tsqr(dev, shape, pad, E, tau, Tp, excl, 0, False, alpha, zero,
                             np.asarray(pis, np.int64), zero, rd=rd)
    return R.get(), info.get()


@pytest.mark.parametrize("rd", [1, 2, 3])
def test_smap_tsqr_factor_equals_numpy_reference(rd):
    # the CUDA kernel's factor against tests/test_smap_tsqr.py's NumPy form of the same
    # chunked reflections: equal to 1e-12 of the largest entry on well-conditioned fits; on
    # smooth Lorenz at E = 20 (nearly dependent leading columns, so R's rows are fixed only
    # to eps * cond of the leading columns) backward stable: R^T [R | Q^T b] = A^T [A | b]
    from test_smap_tsqr import design, lorenz_args, tsqr_reference

    import xedm

    x = xedm.datasets.lorenz63(500).x.values
    x = x + 0.05 * np.random.default_rng(2).standard_normal(len(x))
    for args, exact in ((kernel_args_smap(x, E=5, theta=2.0), True),
                        (lorenz_args(500, 20, theta=2.0), False)):
        pis = np.flatnonzero(args[4][0])[::41]
        R, info = _tsqr_factors(args, pis, rd)
        assert (info[:, 4] == 0).all()
        for i, pi in enumerate(pis):
            A, _ = design(args, 0, pi, 0, zero_rows=True)
            assert info[i, 0] == (A[:, 0] != 0).sum()
            nc = A.shape[1] - 1
            if exact:
                ref = tsqr_reference(A, 32 * rd)
                np.testing.assert_allclose(R[i], ref, rtol=0, atol=1e-12 * np.abs(ref).max())
            lhs = R[i][:, :nc].T @ R[i]
            rhs = A[:, :nc].T @ A
            np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-13 * np.abs(A).max() ** 2
                                       * len(A))


def kernel_args_smap(x, **kw):
    from test_smap_normal import kernel_args

    return kernel_args(xr.DataArray(x, dims="time"), **kw)


def test_smap_gpu_rank_deficient_lorenz_E20(monkeypatch):
    # smooth Lorenz-63 at E = 20: every local fit numerically rank deficient (the minimum-norm
    # SVD solve); coefficients along the smallest kept singular directions are fixed by
    # rounding only (tests/test_smap_tsqr.py): 1e-9 in the well-determined subspace, 1e-3
    # everywhere; predictions and singular values to 1e-9
    from test_smap_tsqr import close_in_subspace, design, lorenz_args

    import xedm.kernels.smap.gpu as Q
    from xedm.kernels.smap.cpu_qr import smap_qr as cpu_qr

    sent = _spy_thread(monkeypatch)
    args = lorenz_args(1200, 20, theta=2.0)
    pc, cc, _ = cpu_qr(*args)
    kern = Q.smap_qr
    gp, gc, _ = kern(*args)
    _close(gp, pc)
    _close(gc, cc, rtol=1e-3)
    pis = np.flatnonzero(args[4][0])[::97]
    Vs = []
    for pi in pis:
        A = design(args, 0, pi, 0)[0][:, :-1]
        cn = np.linalg.norm(A, axis=0)
        _, s, Vt = np.linalg.svd(A / cn, full_matrices=False)
        assert s[-1] < 1e-12 * s[0]
        Vs.append((s, Vt, cn))
    close_in_subspace(gc[0, 0, pis], cc[0, 0, pis], Vs, int(args[18][0]), int(args[19][0]))
    _, _, csv = cpu_qr(*_with_sv(args))
    gp2, _, gsv = kern(*_with_sv(args))
    _close(gsv, csv)
    _close(gp2, pc)
    assert sum(sent) == 0  # every problem by the tall-skinny kernel


def test_smap_gpu_multi_series_rank_deficient_ties_gaps():
    # several series a call: smooth (rank deficient at E = 20), with NaN gaps, and runs of
    # equal values (exact ties, exactly rank-deficient designs)
    import xedm

    lz = xedm.datasets.lorenz63(700)
    x, z = lz.x.values.copy(), lz.z.values.copy()
    xg = x.copy()
    xg[[50, 51, 300]] = np.nan
    da = xr.DataArray(np.stack([x, z, xg]), dims=("unit", "time"))
    a = da.edm.smap(E=20, theta=2.0, singular_values=True, backend="gpu")
    b = da.edm.smap(E=20, theta=2.0, singular_values=True, backend="cpu")
    _close(a.prediction.values, b.prediction.values)
    _close(a.singular_values.values, b.singular_values.values)
    # (coefficients at E = 20: fixed by rounding along the smallest kept singular directions,
    # so compared in the well-determined subspace by test_smap_gpu_rank_deficient_lorenz_E20;
    # on Lorenz z they differ by 0.4% of the largest)
    ties = np.stack([runs_series(s, 400, 12, 1, 4)[0] for s in range(3)])
    da = xr.DataArray(ties, dims=("unit", "time"))
    for kw in (dict(E=4, theta=3.0), dict(E=6, theta=2.0, knn=12),
               dict(E=3, theta=1.0, solver="ridge", alpha=0.1, singular_values=True)):
        a = da.edm.smap(backend="gpu", **kw)
        b = da.edm.smap(backend="cpu", **kw)
        for name in b.data_vars:
            # knn = 12 neighbours on runs of equal values: few distinct rows, ill-conditioned
            # local fits, so the coefficients' rounding is amplified more (1.6e-9 measured)
            tie_fit = name == "coefficients" and "knn" in kw
            _close(a[name].values, b[name].values, rtol=1e-8 if tie_fit else 1e-9)


def test_smap_gpu_flagged_problems_take_the_rescaling_kernel(monkeypatch):
    # weights or ridge rows whose squares under/overflow: the tall-skinny kernel flags the
    # problem, the per-thread kernel (the CPU's power-of-2 rescaling) solves it
    sent = _spy_thread(monkeypatch)
    # 150 steps at a level far from the rest: at theta = 200 their weights, seen from the
    # later states, are about 1e-228, so a first chunk made of them has squares that underflow
    # (248 of the 398 problems, tests/test_smap_tsqr.py's design() shows)
    t = np.arange(400)
    x = xr.DataArray(np.where(t < 150, 1.0, 0.01 * np.sin(0.37 * t)), dims="time")
    for kw in (dict(E=3, theta=200.0), dict(E=3, theta=1.0, solver="ridge", alpha=1e280)):
        sent.clear()
        a = x.edm.smap(backend="gpu", singular_values=True, **kw)
        b = x.edm.smap(backend="cpu", singular_values=True, **kw)
        assert sum(sent) > 0, kw
        for name in b.data_vars:
            _close(a[name].values, b[name].values)


def test_smap_gpu_many_coordinates_thread_kernel(monkeypatch):
    # D + 1 > 32 unknowns: no tall-skinny kernel (a warp's lanes), the per-thread one
    sent = _spy_thread(monkeypatch)
    x = xr.DataArray(np.sin(np.arange(260) * 0.3) + 0.2 * np.random.default_rng(1)
                     .standard_normal(260), dims="time")
    a = x.edm.smap(E=33, theta=1.0, backend="gpu", singular_values=True)
    b = x.edm.smap(E=33, theta=1.0, backend="cpu", singular_values=True)
    assert sum(sent) > 0
    for name in b.data_vars:
        _close(a[name].values, b[name].values)


@pytest.mark.parametrize("tau, excl, knn", [(1, 0, None), (2, 3, 5)])
def test_choose_E_gpu_equals_cpu(tau, excl, knn):
    """The GPU's choice of E (the kept-table choice's kNN passes, tables dropped: the
    distributed E stage) picks the CPU's E for every series, gaps included."""
    from xedm.core import ccm as core

    r = np.random.default_rng(5)
    X = np.empty((7, 300))
    X[:6, 0] = 0.2 + 0.05 * np.arange(6)
    for t in range(1, 300):  # logistic maps (r = 3.8), then noise; a random walk
        X[:6, t] = 3.8 * X[:6, t - 1] * (1 - X[:6, t - 1])
    X[:6] += 0.01 * r.standard_normal((6, 300))
    X[6] = np.cumsum(r.standard_normal(300))
    X[2, [40, 41, 200]] = np.nan
    kw = dict(E_tab=np.arange(1, 9), tau=tau, knn=knn, excl=excl)
    np.testing.assert_array_equal(core.choose_E(X, backend="gpu", **kw),
                                  core.choose_E(X, backend="cpu", **kw))
