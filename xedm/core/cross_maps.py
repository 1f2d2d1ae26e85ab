"""The cross maps of a network: every pair's with the library's E
(:func:`library_E_xmap`), each pair's best lags (:func:`lag_summary`), and a large network's
block by block of libraries (:class:`CrossRows`), kept at each series' candidates only."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import ccm as _ccm
from .pairs import gather


def library_E_xmap(X, *, E, tau, Tp, knn, excl, backend, S=None, quantiles=(),
                   keep_null=False, method="exact", progress: Callable = iter, rows=None,
                   cache=None) -> dict:
    """:func:`xedm.core.ccm.xmap` with the pair (library i, target j) embedding i with the
    **library's** E[i] (CCM theory, pyEDM's CCM): one call per distinct E, its libraries
    against every target.  Same outputs (``E`` is the given E).

    Every call gives all targets one E, so the targets' columns (with their surrogates'; on
    the device with ``backend="gpu"``) are built once and shared by the calls (xmap's
    ``cache``), then freed; a caller's ``cache`` (a dict) is kept for its next call.
    ``rows``: the libraries (default every series), the outputs' first axis."""
    X = np.asarray(X, np.float64)
    N = X.shape[0]
    E = np.asarray(E, np.int64)
    rows = np.arange(N) if rows is None else np.asarray(rows, np.int64)
    out: dict = {}
    own = cache is None
    cache = {} if own else cache
    try:
        for e in np.unique(E[rows]).tolist():
            at = np.flatnonzero(E[rows] == e)
            r = _ccm.xmap(np.ascontiguousarray(X[rows[at]]), E=np.full(N, e, np.int64),
                          tau=tau, Tp=Tp, knn=knn, excl=excl, backend=backend, S=S,
                          quantiles=quantiles, keep_null=keep_null, method=method, Y=X,
                          progress=progress, cache=cache)
            for key, val in r.items():
                if key == "E":
                    continue
                if key not in out:
                    out[key] = np.empty((len(rows),) + val.shape[1:], val.dtype)
                out[key][at] = val
    finally:
        if own:
            cache.clear()  # the columns (device memory on the GPU) freed
    out["E"] = E.copy()
    return out


class CrossRows:
    """The cross maps of a large network's libraries, block by block of rows, for the screen
    (:func:`xedm.core.screen.candidates`): ``rows_rho(rows)`` the skill at each pair's
    driver lag (len(rows), N), and ``keep(rows, table)`` keeps, of those rows, only the
    pairs of the table: ``rho_lag`` (N, m, lags), ``best`` and ``at`` (N, m) (as
    :func:`lag_summary`'s).  With ``full`` (N, N, lags) given (every pair's maps, for a
    dense result) it slices that; else it computes each block
    (:func:`library_E_xmap`, the library's E): no (N, N) array."""

    def __init__(self, X, E, lags, *, full=None, **kw):
        self.X, self.E, self.lags, self.full, self.kw = X, E, np.asarray(lags), full, kw
        N = len(X)
        self.rho_lag = self.best = self.at = None
        self._block = None
        self._cache: dict = {}
        self.N = N

    def rows_rho(self, rows) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        if self.full is not None:
            rl = self.full[rows]
        else:
            rl = library_E_xmap(self.X, E=self.E, Tp=self.lags, rows=rows, cache=self._cache,
                                **self.kw)["rho"]
        best, at, rho_at = lag_summary(rl, self.lags, with_rho=True)
        self._block = (rows, rl, best, at)
        return rho_at

    def keep(self, rows, table) -> None:
        rows = np.asarray(rows, np.int64)
        if self._block is None or not np.array_equal(self._block[0], rows):
            self.rows_rho(rows)
        _, rl, best, at = self._block
        m = table.shape[1]
        if self.rho_lag is None:  # the screen's tables all have its m columns
            self.rho_lag = np.full((self.N, m, len(self.lags)), np.nan)
            self.best = np.full((self.N, m), np.nan)
            self.at = np.zeros((self.N, m), np.int64)
        self.rho_lag[rows, :m] = gather(rl, table)
        self.best[rows, :m] = gather(best, table)
        self.at[rows, :m] = gather(at, table, 0)
        self._block = None

    def close(self) -> None:
        self._cache.clear()  # the targets' columns (device memory on the GPU) freed
        self._block = None


def lag_summary(rho, lags, with_rho: bool = False):
    """Per pair: the best lag overall (``best_Tp``, NaN where no rho is finite), and the index
    into ``lags`` of the best driver lag (Tp <= 0; the first driver lag where none is
    finite); with ``with_rho`` also the skill there.  The first of tied maxima; one pass
    over each pair's lags (the ``lag_summary`` kernel)."""
    from ..kernels import get_kernel

    lags = np.asarray(lags, np.int64)
    rho = np.asarray(rho, np.float64)
    shape = rho.shape[:-1]
    flat = np.ascontiguousarray(rho).reshape(-1, rho.shape[-1])
    at_all, finite, at, rho_at = get_kernel("lag_summary", "cpu")(
        flat, np.flatnonzero(lags <= 0).astype(np.int64))
    best = np.where(finite, lags[at_all].astype(float), np.nan).reshape(shape)
    if with_rho:
        return best, at.reshape(shape), rho_at.reshape(shape)
    return best, at.reshape(shape)
