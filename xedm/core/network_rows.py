"""The per-library part of a large network (:func:`xedm.core.network.network` past
``MAX_CANDIDATES`` others per series, the library's E): everything about library i's pairs
depends on i's row alone, given every series' values, E and surrogates.

For each library of a block of ``rows``: its cross maps against every series, block by block
inside the screen (:class:`xedm.core.cross_maps.CrossRows`), its 32 candidates
(:func:`xedm.core.screen.candidates`), the predictive conditioning of its drivers among them
(:func:`xedm.core.predictive.predictive_tests` with ``rows``) and the surrogate null of its
candidates at each one's driver lag (:func:`xedm.core.pair_null.pair_null`).  Blocks of rows
computed apart (one after the other, in separate processes, on separate GPUs) and joined by
:func:`concat_rows` give the whole network's per-pair values; only the steps that read every
pair at once (Benjamini-Hochberg, the synchrony rule, the decisions) come after, in
:func:`xedm.core.network.network`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: the per-library outputs of :func:`large_rows`: (B, m, ...) per pair, (B,) per library
PAIR_KEYS = ("pairs", "rho_lag", "best", "at", "rho", "count_ge", "n_null", "z_mean", "z_sd",
             "gain_p", "gain", "gain_hi", "selected", "lag")
ROW_KEYS = ("n_drivers", "exact")
#: the dtype of each output (the outputs are cast to it: a batch job declares its arrays
#: before they are computed)
DTYPES = {**dict.fromkeys(("pairs", "best", "at", "count_ge", "n_null", "lag", "n_drivers"),
                          np.dtype(np.int64)),
          **dict.fromkeys(("selected", "exact"), np.dtype(bool)),
          **dict.fromkeys(("rho_lag", "rho", "z_mean", "z_sd", "gain_p", "gain", "gain_hi"),
                          np.dtype(np.float64))}
#: the padding of each per-pair output past a row's candidates
PAD = {"pairs": -1, "at": 0, "count_ge": 0, "n_null": 0, "selected": False, "lag": 0,
       "gain_p": 1.0}


def large_rows(X, rows, *, E, lags, S, tau, knn, excl, backend, method="exact", max_lag=1,
               full=None, prepared=None, progress: Callable = iter) -> dict:
    """The per-library values of the libraries ``rows`` (module docstring): ``pairs`` (B, m)
    their candidates, and aligned with it ``rho_lag`` (B, m, lags), ``best``, ``at`` (index
    into ``lags`` of the driver lag), ``rho`` (at the driver lag), the null's ``count_ge``,
    ``n_null``, ``z_mean``, ``z_sd``, and the conditioning's ``gain_p``, ``gain``,
    ``gain_hi``, ``selected``, ``lag``; per library ``n_drivers`` and ``exact``.

    ``X`` (N, T) every series, ``E`` (N,), ``S`` (N, n, T) every series' surrogates (or a
    future of them), ``full``: every pair's cross maps (N, N, lags) when already computed,
    ``prepared``: :func:`xedm.core.predictive.prepare` of X, when made once for every block
    (23 s per call at N = 100,000, L = 1,450 on a 2-core VM)."""
    from .cross_maps import CrossRows
    from .pair_null import pair_null
    from .predictive import SCREEN, predictive_tests

    X = np.asarray(X, np.float64)
    N = len(X)
    rows = np.asarray(rows, np.int64)
    mask = np.zeros(N, bool)
    mask[rows] = True
    lags = np.asarray(lags, np.int64)
    src = CrossRows(X, E, lags, full=full, tau=tau, knn=knn, excl=excl, backend=backend,
                    method=method)
    info: dict = {}
    try:
        gp, gain, chosen, n_drivers, dl, ghi, exact = predictive_tests(
            X, E, excl=excl, backend=backend, screen=SCREEN, rho=src, max_lag=max_lag,
            progress=progress, info=info, tables=True, rows=mask, prepared=prepared)
    finally:
        src.close()
    table = info["pairs"]
    m = table.shape[1]
    out = {"pairs": table[rows], "rho_lag": src.rho_lag[rows, :m], "best": src.best[rows, :m],
           "at": src.at[rows, :m], "gain_p": gp[rows], "gain": gain[rows],
           "gain_hi": ghi[rows], "selected": chosen[rows], "lag": dl[rows],
           "n_drivers": n_drivers[rows], "exact": exact[rows]}
    out["rho"] = np.take_along_axis(out["rho_lag"], out["at"][..., None], -1)[..., 0]
    if hasattr(S, "result"):
        S = S.result()
    # each pair's null at its driver lag only, for this block's libraries (the table's other
    # rows are empty)
    block = np.full_like(table, -1)
    block[rows] = table[rows]
    rho_all = np.full(table.shape, np.nan)
    rho_all[rows] = out["rho"]
    at_all = np.zeros(table.shape, np.int64)
    at_all[rows] = out["at"]
    null = pair_null(X, S, E, block, rho_all, tau=tau, Tp=lags[lags <= 0], knn=knn,
                     excl=excl, backend=backend, method=method, at=at_all, table=True,
                     progress=progress)
    for k in ("count_ge", "n_null", "z_mean", "z_sd"):
        out[k] = null[k][rows]
    return {k: np.asarray(a).astype(DTYPES[k], copy=False) for k, a in out.items()}


def pad_rows(part: dict, m: int) -> dict:
    """The per-library values of :func:`large_rows` with their tables padded to width
    ``m`` (:data:`PAD`)."""
    out = dict(part)
    for k in PAIR_KEYS:
        a = part[k]
        w = m - a.shape[1]
        if w > 0:
            fill = np.full((a.shape[0], w) + a.shape[2:], PAD.get(k, np.nan), a.dtype)
            out[k] = np.concatenate([a, fill], axis=1)
    return out


def concat_rows(parts) -> dict:
    """The per-library values of consecutive blocks of rows (:func:`large_rows`), joined
    along the rows (tables padded to the widest)."""
    parts = list(parts)
    m = max(p["pairs"].shape[1] for p in parts)
    parts = [pad_rows(p, m) for p in parts]
    out = {k: np.concatenate([p[k] for p in parts], axis=0) for k in PAIR_KEYS}
    for k in ROW_KEYS:
        out[k] = np.concatenate([p[k] for p in parts])
    return out
