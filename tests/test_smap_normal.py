"""S-map's normal-equation solver (xedm/kernels/smap/cpu.py) against the QR solver
(xedm/kernels/smap/cpu_qr.py) on the same kernel arguments, and its vectorised exp.

Tolerances: accepted problems agree with the QR solver to 1e-11 of the largest |value|
(predictions and coefficients; ordinary conditioning, both at rounding level); rejected
problems are the QR solver's, bit for bit.  The public functions are checked against
tests/naive.py in test_smap.py and against pyEDM in test_parity.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xedm
import xedm.kernels as K
from conftest import logistic
from xedm.kernels.smap import cpu as cpu_smap
from xedm.kernels.smap.cpu_qr import smap_qr

TOL = 1e-11


def kernel_args(da, **kw):
    """The smap_predict arguments of ``da.edm.smap(**kw)`` (captured from the registry)."""
    got = []

    def capture(*args):
        got.append(args)
        return smap_qr(*args)

    key = ("smap_predict", "cpu")
    old = K._LOADED.get(key)
    K._LOADED[key] = capture
    try:
        with xedm.set_options(progress=False):
            da.edm.smap(**kw)
    finally:
        if old is None:
            K._LOADED.pop(key, None)
        else:
            K._LOADED[key] = old
    assert len(got) == 1
    return got[0]


def _close(a, b, tol=TOL):
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    scale = np.nanmax(np.abs(b)) if np.isfinite(b).any() else 1.0
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale, equal_nan=True)


def gram_bad(args, alpha=0.0):
    """The rows the normal-equation stage (``gram_rows``) rejects for ``args``: (B, P)."""
    Xpad, pad, lib_ok, pred_t, pred_ok = args[:5]
    off, libq, At, yl, PmT = cpu_smap.library_products(Xpad, pad, lib_ok, args[11], args[12],
                                                       args[5], args[6], args[7], args[8])
    nth, B, P = len(args[9]), Xpad.shape[0], len(pred_t)
    nc = Xpad.shape[1] * args[6] + 1
    pred = np.full((nth, B, P), np.nan)
    coef = np.full((nth, B, P, nc), np.nan)
    bad = np.zeros((B, P), bool)
    cpu_smap.gram_rows(Xpad, pad, pred_t, pred_ok, args[6], args[7], args[9], args[10], off,
                       libq, At, yl, PmT, alpha, args[18], args[19], pred, coef, bad)
    return bad


def lorenz(T, seed=0):
    noise = np.random.default_rng(seed).standard_normal(T)
    return xedm.datasets.lorenz63(T).x.values + 1e-3 * noise


CASES = {
    "plain": dict(E=3, theta=2.0),
    "E1_negTp": dict(E=1, theta=0.5, Tp=-2),
    "theta0": dict(E=4, theta=0.0),
    "exclusion": dict(E=3, theta=3.0, exclusion_radius=6),
    "ridge": dict(E=4, theta=1.0, solver="ridge", alpha=0.3),
    "big_theta": dict(E=2, theta=1e308),
}


@pytest.mark.parametrize("name", list(CASES))
def test_normal_equations_equal_qr(name):
    x = lorenz(240)
    x[[30, 31, 150]] = np.nan  # NaN gaps
    da = xr.DataArray(x * 1e5, dims="time")
    args = kernel_args(da, **CASES[name])
    ref = smap_qr(*args)
    got = cpu_smap.smap_predict(*args)
    for a, b in zip(got[:2], ref[:2], strict=True):
        _close(a, b)
    bad = gram_bad(args, float(args[16]))
    if name == "big_theta":  # one neighbour of weight 1, the rest 0: rank 1, all to QR
        assert bad[args[4]].all()
    else:  # ordinary data: (almost) all accepted
        assert bad.sum() <= 0.01 * args[4].sum()


def test_multivariate_embedded_several_series():
    r = np.random.default_rng(3)
    X = np.stack([lorenz(150, s) for s in range(3)])
    ds = xr.Dataset({"a": (("site", "time"), X), "b": (("site", "time"),
                                                        X[:, ::-1] + r.standard_normal(X.shape))})
    args = kernel_args(ds, columns=["a", "b"], target="a", embedded=True, theta=2.0)
    ref = smap_qr(*args)
    got = cpu_smap.smap_predict(*args)
    for a, b in zip(got[:2], ref[:2], strict=True):
        _close(a, b)


@pytest.mark.parametrize("kind", ["constant", "collinear", "runs"])
def test_degenerate_problems_go_to_qr(kind):
    # rank-deficient local fits: rejected, then solved by QR exactly as before
    T = 120
    if kind == "constant":
        x = np.full(T, 2.5)
    elif kind == "collinear":
        x = np.arange(T, dtype=float) * 0.5  # every lag a linear function of the intercept
    else:
        x = np.repeat(np.arange(T // 10) % 3, 10).astype(float)
    da = xr.DataArray(x, dims="time")
    args = kernel_args(da, E=3, theta=2.0)
    pred_ok = args[4]
    bad = gram_bad(args)
    if kind != "runs":  # (runs of 3 levels: some local fits are full rank)
        assert bad[pred_ok].mean() > 0.9
    ref = smap_qr(*args)
    got = cpu_smap.smap_predict(*args)
    for a, b in zip(got[:2], ref[:2], strict=True):
        np.testing.assert_array_equal(a[:, bad], b[:, bad])
    _close(got[0], ref[0])


def test_smooth_high_E_fits_are_rank_deficient_and_go_to_qr():
    # smooth Lorenz-63 x at E = 20: the scaled normal matrix is singular to rounding, so every
    # problem is the QR/SVD solver's; a little noise makes them full rank and accepted
    x = xedm.datasets.lorenz63(400).x.values
    for noise, rejected in ((0.0, True), (0.05, False)):
        xn = x + noise * np.random.default_rng(0).standard_normal(len(x))
        args = kernel_args(xr.DataArray(xn, dims="time"), E=20, theta=2.0)
        bad = gram_bad(args)
        assert bad[args[4]].all() if rejected else not bad.any()
        got = cpu_smap.smap_predict(*args)
        ref = smap_qr(*args)
        _close(got[0], ref[0], 1e-9)


def test_knn_tables_and_singular_values_use_qr():
    x = lorenz(120)
    da = xr.DataArray(x, dims="time")
    for kw in (dict(E=3, theta=2.0, knn=8), dict(E=2, theta=1.0, singular_values=True)):
        args = kernel_args(da, **kw)
        ref = smap_qr(*args)
        got = cpu_smap.smap_predict(*args)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)


def test_public_smap_matches_naive_on_long_series():
    import naive

    x = logistic(300) + 0.01 * np.random.default_rng(1).standard_normal(300)
    x[100] = np.nan
    out = xr.DataArray(x, dims="time").edm.smap(E=3, theta=2.0, exclusion_radius=2)
    ref = naive.smap(x[None], x, 3, theta=2.0, excl=2)
    np.testing.assert_allclose(out.prediction.values, ref["prediction"], rtol=1e-9, atol=1e-12)


def test_exp_nonpos_within_two_ulp():
    r = np.random.default_rng(0)
    v = np.concatenate([-np.logspace(-300, np.log10(708), 100_000),
                        -r.uniform(0, 710, 100_000), [0.0, -0.0, -np.inf, -708.0, -708.5]])
    out = np.empty_like(v)
    cpu_smap.exp_nonpos(v, out, np.empty(len(v), np.int64), len(v))
    ref = np.where(v >= cpu_smap.EXP_MIN, np.exp(v), 0.0)
    pos = ref > 0
    assert np.all(out[~pos] == 0.0)
    assert (np.abs(out[pos] - ref[pos]) / np.spacing(ref[pos])).max() <= 2
