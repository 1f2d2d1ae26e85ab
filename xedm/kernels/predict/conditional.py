"""The data of the predictive conditioning's lockstep selection where its kernels run: host
memory (``cpu_conditional.state``) or the GPU's (``gpu_conditional.state``).

:class:`State` holds the standardised series, every pool computed so far (one per series
and set of own lags, kept for the later rounds), each series' current errors ``e0`` and the
last batch of model errors; the selection logic itself (:mod:`xedm.core.predictive`) sees
only host arrays of indices and statistics.  Codes, pools and groups as in
:mod:`xedm.kernels.predict.cpu_conditional`.
"""

from __future__ import annotations

import numpy as np

ERROR_PARTS = 16  # launches of the errors kernel per round on the CPU (see State._group_parts)


class State:
    """Series ``Z`` (N, T) standardised, the points of each series (``t0``, ``n``), its
    exclusion radius ``excl`` and the pool width ``M``, on the array module ``xp`` with the
    kernels ``pools``, ``errors`` and ``stats`` (same signatures on both devices)."""

    def __init__(self, xp, Z, t0, n, excl, M, *, pools, errors, stats):
        self.xp = xp
        self._pools_k, self._errors_k, self._stats_k = pools, errors, stats
        self.t0 = np.ascontiguousarray(t0, np.int64)
        self.n = np.ascontiguousarray(n, np.int64)
        self.excl = np.ascontiguousarray(excl, np.int64)
        self.N = len(self.n)
        self.nmax = max(int(self.n.max(initial=0)), 1)
        self.M = int(M)
        self.Z = xp.asarray(np.ascontiguousarray(Z, np.float64))
        self._dev = {k: xp.asarray(v) for k, v in
                     (("t0", self.t0), ("n", self.n), ("excl", self.excl))}
        self.pool_rows = xp.empty((0, self.M), np.int32)
        self._used = 0  # rows of pool_rows in use
        self._pool_at: dict = {}  # (series, own-lag mask) -> first row
        self.e0 = xp.full((self.N, self.nmax), np.nan)

    def pools(self, ser, masks) -> np.ndarray:
        """The first pool row of each (series, own-lag mask), computing the missing ones (in
        one launch)."""
        keys = list(zip(np.asarray(ser).tolist(), np.asarray(masks).tolist(), strict=True))
        new = list(dict.fromkeys(k for k in keys if k not in self._pool_at))
        if new:
            ps = np.array([k[0] for k in new], np.int64)
            pm = np.array([k[1] for k in new], np.int64)
            off = self._used + np.concatenate([[0], np.cumsum(self.n[ps])[:-1]])
            need = self._used + int(self.n[ps].sum())
            if need > len(self.pool_rows):  # capacity doubled: one copy per doubling
                grown = self.xp.empty((max(need, 2 * len(self.pool_rows)), self.M), np.int32)
                grown[:self._used] = self.pool_rows[:self._used]
                self.pool_rows = grown
            self._pools_k(self.Z, self._dev["t0"], self._dev["n"], self._dev["excl"], ps, pm,
                          off, self.pool_rows)
            self._used = need
            self._pool_at.update(zip(new, off.tolist(), strict=True))
        return np.array([self._pool_at[k] for k in keys], np.int64)

    def errors(self, gser, gbase, bcodes, gpool, gk, gcand, ccodes, weight, theta):
        """The error rows (one per candidate of each group, one for a group without) of the
        model groups, in group order: an (R, nmax) array on the device."""
        xp = self.xp
        gser = np.asarray(gser, np.int64)
        rows = np.maximum(np.diff(np.asarray(gcand, np.int64), axis=1)[:, 0], 1)
        gout = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
        out = xp.empty((int(rows.sum()), self.nmax))
        host = [np.ascontiguousarray(a, np.int64) for a in
                (gser, gbase, bcodes, gpool, gk, gcand, ccodes, gout)]
        for g in self._group_parts(gser, rows):  # the groups in parts (CPU), one launch each
            part = [a[g] for a in host]
            self._errors_k(self.Z, self._dev["t0"], self._dev["n"], part[0], part[1], host[2],
                           part[3], self.pool_rows, part[4], part[5], host[6], part[7],
                           float(weight), float(theta), out)
        return out

    def _group_parts(self, gser, rows):
        """Slices of the groups: on the CPU about ERROR_PARTS parts of equal work (points x
        error rows), so that Ctrl-C, held back to the end of a kernel call, stops a large
        round within a part; one slice on a GPU."""
        if self.xp is not np or len(gser) < 2 * ERROR_PARTS:
            return [slice(None)]
        cum = np.cumsum(np.asarray(self.n, np.int64)[gser] * rows)
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, ERROR_PARTS) / ERROR_PARTS)
        bounds = np.unique(np.concatenate([[0], cuts + 1, [len(gser)]]).clip(0, len(gser)))
        return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def stats(self, A, ra, B, rb, nn) -> tuple:
        """:func:`rank_stats` of rows ``ra`` of ``A`` against rows ``rb`` of ``B`` over the
        first ``nn`` times each, as host arrays."""
        xp = self.xp
        res = self._stats_k(A, xp.asarray(np.asarray(ra, np.int64)), B,
                            xp.asarray(np.asarray(rb, np.int64)),
                            xp.asarray(np.asarray(nn, np.int64)))
        return tuple(np.asarray(r.get() if hasattr(r, "get") else r) for r in res)

    def keep(self, series, A, rows) -> None:
        """The rows ``rows`` of ``A`` become the current errors of ``series``."""
        if len(series):
            xp = self.xp
            self.e0[xp.asarray(np.asarray(series, np.int64))] = \
                A[xp.asarray(np.asarray(rows, np.int64))]
