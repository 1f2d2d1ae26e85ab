"""Per-pair statistics of a network on a table of pairs, not an (N, N) matrix.

A table ``pairs`` (N, m) int64 lists, for each library series i, the targets j of its pairs
(i, j) (ascending, padded with -1): in a large network the candidate drivers of each series
(N m pairs, m = 32), in a small one every series (m = N).  Every per-pair statistic of
:func:`xedm.core.network.network` is then an (N, m) array aligned with it; at N = 10,000
an (N, N) float64 statistic is 0.8 GB of host memory and seconds of work per pass, an
(N, 32) one 2.6 MB.

The pairs a table does not list are decided by per-series rules alone
(:func:`outside_reasons`): no test was run on them.
"""

from __future__ import annotations

import numpy as np


def all_pairs(N: int) -> np.ndarray:
    """(N, N): every pair, the diagonal included (the table of a small network)."""
    return np.ascontiguousarray(np.broadcast_to(np.arange(N, dtype=np.int64), (N, N)))


def pool_pairs(pool) -> np.ndarray:
    """(N, m) table of the pairs of an (N, N) bool ``pool``, m its largest row count."""
    pool = np.asarray(pool, bool)
    m = int(pool.sum(axis=1).max(initial=0))
    order = np.argsort(~pool, axis=1, kind="stable")[:, :m]
    has = np.take_along_axis(pool, order, axis=1)
    return np.where(has, order, -1).astype(np.int64)


def gather(A, pairs, fill=np.nan) -> np.ndarray:
    """(N, m, ...) the entries of A (N, N, ...) at the table's pairs, ``fill`` on padding."""
    A = np.asarray(A)
    ok = pairs >= 0
    out = A[np.arange(len(pairs))[:, None], np.maximum(pairs, 0)]
    ok = ok.reshape(ok.shape + (1,) * (out.ndim - 2))
    return np.where(ok, out, fill)


def scatter(a, pairs, N: int, fill) -> np.ndarray:
    """(N, N, ...) with the table's values ``a`` (N, m, ...) at its pairs, ``fill``
    elsewhere."""
    a = np.asarray(a)
    out = np.full((N, N) + a.shape[2:], fill, a.dtype)
    ok = pairs >= 0
    rows = np.broadcast_to(np.arange(N)[:, None], pairs.shape)
    out[rows[ok], pairs[ok]] = a[ok]
    return out


def transposed(pairs) -> np.ndarray:
    """(N, m) int64: for each pair (i, j) of the table, the flat index of (j, i) in it
    (-1 where the table does not hold it)."""
    N, m = pairs.shape
    ok = pairs >= 0
    rows = np.arange(N, dtype=np.int64)[:, None]
    keys = np.where(ok, rows * N + pairs, -1).ravel()
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    want = np.where(ok, pairs * N + rows, -2).ravel()
    if not len(sk):
        return np.full((N, m), -1, np.int64)
    pos = np.minimum(np.searchsorted(sk, want), len(sk) - 1)
    hit = (sk[pos] == want) & (want >= 0)
    return np.where(hit, order[pos], -1).reshape(N, m)


def of_transpose(a, tpos, fill) -> np.ndarray:
    """(N, m): the value of ``a`` (N, m) at each pair's transpose (:func:`transposed`),
    ``fill`` where the table does not hold it."""
    flat = np.asarray(a).ravel()
    return np.where(tpos >= 0, flat[np.maximum(tpos, 0)], fill)


def outside_reasons(flags, rows, cols) -> np.ndarray:
    """int8 reasons (:data:`xedm.core.network.REASONS`) of pairs (rows[k], cols[k]) from the
    per-series rules alone (``flags``: :func:`xedm.core.network.series_flags`): 1 when either
    series is constant, 2 when either has fewer effective points than the library's model
    needs, 5 when the library is predicted exactly by its own past, else 0; the diagonal 0."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    const, few, need, exact = (flags[k] for k in ("constant", "effective_points",
                                                  "points_needed", "exact"))
    r = np.where(exact[rows], 5, 0).astype(np.int8)
    r[(few[rows] < need[rows]) | (few[cols] < need[rows])] = 2
    r[const[rows] | const[cols]] = 1
    r[rows == cols] = 0
    return r


def count_outside(flags, pairs) -> np.ndarray:
    """Per reason code 0..5: how many off-diagonal pairs not in the table have it
    (:func:`outside_reasons`), counted per library row without an (N, N) array."""
    const, few, need, exact = (np.asarray(flags[k]) for k in (
        "constant", "effective_points", "points_needed", "exact"))
    N = len(const)
    counts = np.zeros(6, np.int64)
    n_const = int(const.sum())
    live = np.sort(few[~const])  # the effective points of the series not constant
    other = N - 1
    c1 = np.where(const, other, n_const)
    # the non-constant others short of the library's need (the library itself is not,
    # unless it is short, when every non-constant other counts)
    c2 = np.where(const, 0, np.where(few < need, other - n_const,
                                     np.searchsorted(live, need, side="left")))
    rest = other - c1 - c2
    counts[1] = c1.sum()
    counts[2] = c2.sum()
    counts[5] = rest[exact & ~const].sum()
    counts[0] = rest[~exact | const].sum()
    # the listed pairs were counted above: remove them by their outside reason
    ok = pairs >= 0
    rows = np.broadcast_to(np.arange(N)[:, None], pairs.shape)[ok]
    cols = pairs[ok]
    off = rows != cols
    counts -= np.bincount(outside_reasons(flags, rows[off], cols[off]), minlength=6)[:6]
    return counts


class Table:
    """A pair table with the flat position of any of its pairs: ``slot(rows, cols)`` into an
    (N, m) array aligned with it (a sorted-key search; the identity's arithmetic for the
    table of every pair).  Only pairs the table holds may be looked up."""

    def __init__(self, pairs):
        self.pairs = np.asarray(pairs, np.int64)
        N, m = self.pairs.shape
        self.N = N
        self.shape = (N, m)
        self.every = m == N and bool((self.pairs == np.arange(N)).all())
        rows = np.arange(N, dtype=np.int64)[:, None]
        self._keys = (rows * (N + 1) + np.where(self.pairs >= 0, self.pairs, N)).ravel()

    def slot(self, rows, cols) -> np.ndarray:
        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        if self.every:
            return rows * self.N + cols
        return np.searchsorted(self._keys, rows * (self.N + 1) + cols)

    def others(self, i: int) -> np.ndarray:
        """The targets of row i, i itself left out."""
        r = self.pairs[i]
        return r[(r >= 0) & (r != i)]


def to_bool(pairs, N: int) -> np.ndarray:
    """(N, N) bool: True at the table's pairs."""
    return scatter(np.ones(np.shape(pairs), bool), np.asarray(pairs), N, False)
