"""Exact, matrix-free line-length histograms of recurrence matrices (plain arrays).

A :class:`RecurrenceProblem` describes one or many recurrence matrices over the same raw
series arrays: the embedding (one coordinate per lag and variable, grouped in channels for
joint recurrence) and, per matrix, which rows of the arrays and which time range hold its
row states (A) and column states (B).  Windows and broadcast series are just more matrices.

:func:`line_histograms` returns, for each matrix and each threshold, the three histograms
the measures are made of (index = line length, entry 0 unused):

* ``diagonal``: diagonal lines in both triangles, the Theiler band ``|i - j| < theiler``
  left out (self recurrence only; the line of identity counts once when ``theiler == 0``);
* ``vertical``: runs of recurrent points down whole columns (band kept);
* ``white``: runs of non-recurrent points down whole columns, border-touching runs included.

The number of recurrent points is ``sum(l * vertical[l])``.

Examples
--------
>>> import numpy as np
>>> from xedm.recurrence.recurrence import RecurrenceProblem, line_histograms
>>> x = np.sin(np.arange(200) * 0.3)
>>> prob = RecurrenceProblem.single(x, E=2, tau=1)
>>> h = line_histograms(prob, eps=[0.2], backend="cpu")
>>> int((np.arange(h["vertical"].shape[-1]) * h["vertical"][0, 0]).sum()) > 0
True
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..kernels.rqa.layout import hist_layout

NORMS = ("euclidean", "maximum", "manhattan")


def squared_threshold(eps: float) -> float:
    """Smallest float64 ``s`` with ``sqrt(s) >= eps``.

    ``s < squared_threshold(eps)`` holds exactly when ``sqrt(s) < eps`` (``sqrt`` is
    correctly rounded and monotone), so kernels can compare squared distances without a
    square root per point and still agree with ``d < eps`` to the last bit.

    >>> squared_threshold(1.0)
    1.0
    """
    eps = float(eps)
    if not eps > 0:
        return 0.0
    if np.isinf(eps):
        return np.inf
    s = eps * eps
    while s > 0 and np.sqrt(np.nextafter(s, 0.0)) >= eps:
        s = np.nextafter(s, 0.0)
    while np.sqrt(s) < eps:
        s = np.nextafter(s, np.inf)
    return float(s)


def unit_scale(xa: np.ndarray, ya: np.ndarray | None = None, nch: int = 1):
    """Copies of finite ``xa`` (B, rows, T) and ``ya`` (B, rows_y, Ty) multiplied by powers of
    2, and those exponents ``e`` (B, nch): RQA is then unit-free.

    Channel ``ch`` of series ``b`` (rows ``ch * rows/nch`` onward; ``ya`` belongs to channel
    0, the cross partner) is multiplied by ``2**-e[b, ch]``, which brings its largest |value|
    into [0.5, 1).  The scaling is exact, so distances are the data's times ``2**-e`` to the
    last bit: a threshold ``eps`` on the data is ``ldexp(eps, -e)`` here
    (:func:`eps_in_unit`), and an eps found here is ``ldexp(eps, e)`` on the data.  Without
    it, data of 1e-300 would give squared distances that underflow to 0 (everything
    recurrent) and data of 1e+300 infinite ones.

    >>> x = np.array([[[3.0, -6.0, 1e-3]]])
    >>> xs, _, e = unit_scale(x)
    >>> e.tolist(), xs.tolist()
    ([[3]], [[[0.375, -0.75, 0.000125]]])
    """
    B, rows, _ = xa.shape
    per = rows // nch
    mx = np.zeros((B, nch))
    for ch in range(nch):
        mx[:, ch] = np.abs(xa[:, ch * per:(ch + 1) * per]).max(axis=(1, 2), initial=0.0)
    if ya is not None:
        mx[:, 0] = np.maximum(mx[:, 0], np.abs(ya).max(axis=(1, 2), initial=0.0))
    e = np.maximum(np.frexp(mx)[1], -1021).astype(np.int64)
    f = np.ldexp(1.0, -e)  # a power of 2 (subnormal for e = 1024, still exact)
    xs = xa * np.repeat(f, per, axis=1)[:, :, None]
    ys = None if ya is None else ya * f[:, :1, None]
    return xs, ys, e


def eps_in_unit(eps, e) -> np.ndarray:
    """``eps`` (..., K) on the data as a threshold on :func:`unit_scale`'s series of exponent
    ``e`` (...): ``ldexp(eps, -e)``, kept above 0 (where it underflows, only exact zeros
    recur, as on the data)."""
    eps = np.asarray(eps, np.float64)
    out = np.ldexp(eps, -np.asarray(e, np.int64)[..., None])
    return np.where((out == 0) & (eps > 0), np.nextafter(0.0, 1.0), out)


def embedding_coords(nvars: int, E: int, tau: int, nchannels: int = 1):
    """Coordinates of the lagged state: ``(cvar, coff, cchan)`` int64 arrays.

    Variable ``v`` (of ``nvars`` per channel) contributes lags ``0..E-1``; state ``i`` reads
    time ``i + (E-1)*tau - l*tau``, so it is labelled by its most recent time
    ``i + (E-1)*tau``.  Channel ``ch`` owns variables ``ch*nvars .. (ch+1)*nvars - 1``.
    """
    cvar, coff, cchan = [], [], []
    for ch in range(nchannels):
        for v in range(nvars):
            for lag in range(E):
                cvar.append(ch * nvars + v)
                coff.append((E - 1 - lag) * tau)
                cchan.append(ch)
    return (np.asarray(cvar, np.int64), np.asarray(coff, np.int64),
            np.asarray(cchan, np.int64))


@dataclass
class RecurrenceProblem:
    """Recurrence matrices over raw series ``X`` (rows) and ``Y`` (columns).

    Attributes
    ----------
    X, Y : ndarray, float64, shape (rows, time)
        ``Y is X`` for self and joint recurrence.
    cvar, coff, cchan : ndarray of int64
        Embedding coordinates (see :func:`embedding_coords`); ``nch`` channels.
    matrices : ndarray of int64, shape (nmat, 6)
        ``arow, astart, na, brow, bstart, nb`` per matrix: row states ``0..na-1`` read
        ``X[arow + cvar, astart + i + coff]``; columns likewise from ``Y``.
    symmetric : bool
        Self (or joint) recurrence: the matrix is symmetric, the Theiler window applies and
        only one triangle of diagonals is scanned.
    theiler : int
        Theiler window (ignored unless ``symmetric``).
    """

    X: np.ndarray
    Y: np.ndarray
    cvar: np.ndarray
    coff: np.ndarray
    cchan: np.ndarray
    matrices: np.ndarray
    symmetric: bool
    theiler: int = 1
    nch: int = field(init=False)

    def __post_init__(self):
        self.nch = int(self.cchan.max()) + 1

    @property
    def na(self) -> int:
        return int(self.matrices[0, 2])

    @property
    def nb(self) -> int:
        return int(self.matrices[0, 5])

    @classmethod
    def single(cls, x, y=None, *, E=1, tau=1, theiler=1, joint=False):
        """One matrix of one series (``y=None``), a cross (``y``) or joint (``joint=True``:
        channels ``x`` and ``y``) recurrence; helper for tests and examples."""
        x = np.atleast_2d(np.asarray(x, np.float64))
        if y is None or joint:
            X = x if y is None else np.concatenate([x, np.atleast_2d(np.asarray(y, np.float64))])
            nch = 1 if y is None else 2
            cvar, coff, cchan = embedding_coords(x.shape[0], E, tau, nch)
            n = X.shape[1] - (E - 1) * tau
            mats = np.array([[0, 0, n, 0, 0, n]], np.int64)
            return cls(X, X, cvar, coff, cchan, mats, True, theiler)
        Y = np.atleast_2d(np.asarray(y, np.float64))
        cvar, coff, cchan = embedding_coords(x.shape[0], E, tau)
        na, nb = x.shape[1] - (E - 1) * tau, Y.shape[1] - (E - 1) * tau
        mats = np.array([[0, 0, na, 0, 0, nb]], np.int64)
        return cls(x, Y, cvar, coff, cchan, mats, False, 0)


def thresholds(eps, norm: str, nch: int, nmat: int) -> np.ndarray:
    """Kernel thresholds ``(nmat, K, nch)`` from ``eps`` of shape ``(K,)``, ``(K, nch)`` or
    ``(nmat, K, nch)``."""
    eps = np.asarray(eps, np.float64)
    if eps.ndim == 1:
        eps = eps[:, None]
    if eps.ndim == 2:
        eps = eps[None]
    eps = np.ascontiguousarray(np.broadcast_to(eps, (nmat, eps.shape[1], nch)))
    if norm == "euclidean":
        return np.vectorize(squared_threshold, otypes=[np.float64])(eps).reshape(eps.shape)
    return eps.copy()


def _blocks(lo: int, hi: int, width: int):
    for a in range(lo, hi, width):
        yield a, min(a + width, hi)


def work_items(prob: RecurrenceProblem, tile: int):
    """Items ``(matrix, kind, a0, a1, weight, cost)`` covering every line of every matrix."""
    items = []
    for m, (_, _, na, _, _, nb) in enumerate(prob.matrices):
        na, nb = int(na), int(nb)
        if prob.symmetric:
            w = max(int(prob.theiler), 0)
            if w == 0:
                items.append((m, 0, 0, 1, 1, na))
            for a0, a1 in _blocks(max(w, 1), na, tile):
                cost = sum(na - k for k in (a0, a1 - 1)) * (a1 - a0) // 2
                items.append((m, 0, a0, a1, 2, cost))
        else:
            for a0, a1 in _blocks(0, nb, tile):
                items.append((m, 0, a0, a1, 1, (a1 - a0) * max(min(na, nb - a0), 1)))
            for a0, a1 in _blocks(1, na, tile):
                items.append((m, 1, a0, a1, 1, (a1 - a0) * max(min(nb, na - a0), 1)))
        for a0, a1 in _blocks(0, nb, tile):
            items.append((m, 2, a0, a1, 1, (a1 - a0) * na))
    return items


def schedule(items, nchunks: int):
    """Longest-processing-time-first assignment of items to ``nchunks`` chunks."""
    heap = [(0, t) for t in range(nchunks)]
    owner = [[] for _ in range(nchunks)]
    for it in sorted(items, key=lambda r: -r[5]):
        load, t = heapq.heappop(heap)
        owner[t].append(it[:5])
        heapq.heappush(heap, (load + it[5], t))
    owner = [o for o in owner if o]
    ptr = np.cumsum([0] + [len(o) for o in owner]).astype(np.int64)
    flat = np.array([r for o in owner for r in o], np.int64).reshape(-1, 5)
    return flat, ptr


def default_tile(prob: RecurrenceProblem, backend: str) -> int:
    if backend == "gpu":
        return 1 << 30  # one tile of rows per launch unless asked otherwise
    return 128


def line_histograms(prob: RecurrenceProblem, eps, norm: str = "euclidean",
                    backend: str = "cpu", tile: int | None = None, progress=None,
                    vertical_band: bool = False, white_interior: bool = False) -> dict:
    """Diagonal, vertical and white vertical line histograms, exact (uint64).

    Parameters
    ----------
    prob : RecurrenceProblem
    eps : array_like, shape (K,), (K, nch) or (nmat, K, nch)
        Thresholds: a point is recurrent when its distance is ``< eps`` in every channel.
    norm : {"euclidean", "maximum", "manhattan"}
    backend : {"cpu", "gpu"}
    tile : int, optional
        CPU: width of a block of diagonals or columns swept together (default 128).
        GPU: rows per launch; run states carry over between launches.  The counts do not
        depend on it.
    progress : callable, optional
        Called with the fraction of this call's work done after each round of work (CPU:
        the items are run in up to ``PROGRESS_ROUNDS`` kernel calls; GPU: once at the end).
    vertical_band : bool
        CPU only: the Theiler band ``|i - j| < theiler`` (line of identity included) is not
        recurrent for the vertical and white lines either (the CRP toolbox's rule); the
        ``recurrent`` count then leaves it out too.
    white_interior : bool
        CPU only: white vertical lines touching the top or bottom of their column are not
        counted, except a column without recurrence (one white line of its full length),
        as the CRP toolbox's ``tt.m`` counts them.

    Returns
    -------
    dict
        ``diagonal``, ``vertical``, ``white``: uint64 arrays ``(nmat, K, L + 1)``, index =
        line length; also ``recurrent``: ``(nmat, K)`` counts of recurrent points.
    """
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r} is invalid; choose one of {NORMS}")
    thr = thresholds(eps, norm, prob.nch, prob.matrices.shape[0])
    code = NORMS.index(norm)
    band = bool(vertical_band) and prob.symmetric and int(prob.theiler) > 0
    if backend == "gpu":
        if band or white_interior:
            raise ValueError("vertical_band and white_interior run on the CPU only; use "
                             "backend='cpu'")
        from ..kernels import get_kernel

        hd, hv, hw = get_kernel("rqa_line_histograms", "gpu")(prob, thr, code, tile)
        if progress is not None:
            progress(1.0)
    elif prob.symmetric:
        hd, hv, hw = _cpu_symmetric(prob, thr, code, tile, progress,
                                    int(prob.theiler) if band else 0, bool(white_interior))
    else:
        hd, hv, hw = _cpu_histograms(prob, thr, code, tile or default_tile(prob, "cpu"),
                                     progress)
        if white_interior:
            hw = _drop_border_white(prob, thr, code, hw)
    lengths = np.arange(hv.shape[-1], dtype=np.uint64)
    rec = (hv * lengths).sum(axis=-1, dtype=np.uint64)
    return {"diagonal": hd, "vertical": hv, "white": hw, "recurrent": rec}


# with a progress callback, the CPU work runs in up to this many kernel calls (rounds of
# about equal cost); the counts are sums over items, so they do not depend on the rounds
PROGRESS_ROUNDS = 20
# below this many matrix cells a call is not split into rounds
PROGRESS_MIN_CELLS = 25_000_000


def _rounds(items, nrounds: int):
    """Items split into ``nrounds`` lists of about equal cost (longest first)."""
    heap = [(0, r) for r in range(nrounds)]
    out = [[] for _ in range(nrounds)]
    for it in sorted(items, key=lambda r: -r[5]):
        load, r = heapq.heappop(heap)
        out[r].append(it)
        heapq.heappush(heap, (load + it[5], r))
    return [o for o in out if o]


def _cpu_histograms(prob, thr, code, tile, progress=None):
    import numba

    from ..kernels import get_kernel

    kernel = get_kernel("rqa_line_histograms", "cpu")
    nmat, K = prob.matrices.shape[0], thr.shape[1]
    Lp1 = hist_layout(prob)
    nthreads = numba.get_num_threads()
    items = work_items(prob, max(int(tile), 1))
    cells = int((prob.matrices[:, 2] * prob.matrices[:, 5]).sum())
    nrounds = PROGRESS_ROUNDS if progress is not None and cells >= PROGRESS_MIN_CELLS else 1
    rounds = _rounds(items, min(nrounds, len(items))) if nrounds > 1 else [items]
    total_cost = max(sum(it[5] for it in items), 1)
    mats = np.empty((nmat, 8), np.int64)
    mats[:, :6] = prob.matrices
    mats[:, 6] = np.arange(nmat) * Lp1
    mats[:, 7] = np.arange(nmat) * Lp1
    X = np.ascontiguousarray(prob.X, np.float64)
    Y = X if prob.Y is prob.X else np.ascontiguousarray(prob.Y, np.float64)
    sums = [np.zeros((K, nmat * Lp1), np.int64) for _ in range(3)]
    done = 0
    for part in rounds:
        # more chunks than threads so a busy core does not hold the others back
        nchunks = max(1, min(len(part), 4 * nthreads))
        flat, ptr = schedule(part, nchunks)
        nchunks = ptr.size - 1
        shape = (nchunks, K, nmat * Lp1)
        hd, hv, hw = (np.zeros(shape, np.int64) for _ in range(3))
        with numba.parallel_chunksize(1):
            kernel(X, Y, prob.cvar, prob.coff, prob.cchan, prob.nch,
                   np.ascontiguousarray(thr), code, mats, flat, ptr, hd, hv, hw)
        for acc, h in zip(sums, (hd, hv, hw), strict=True):
            acc += h.sum(axis=0)
        if progress is not None:
            done += sum(it[5] for it in part)
            progress(done / total_cost)
    out = []
    for s in sums:
        s = s.astype(np.uint64).reshape(K, nmat, Lp1)
        out.append(np.ascontiguousarray(s.transpose(1, 0, 2)))
    return out


# the symmetric CPU pass keeps 4 int32 end runs per piece (row or column of a diagonal
# block); blocks are widened so that these take at most this many bytes
SYMMETRIC_STITCH_BYTES = 256 * 2**20
# the widest block of diagonals the symmetric CPU pass picks by itself
SYMMETRIC_TILE = 1024


def _drop_border_white(prob, thr, code, hw):
    """``hw`` without the white runs at the top and bottom of each column that holds a
    recurrence (whole columns, no band: a cross recurrence)."""
    from ..kernels import get_kernel

    mats = np.zeros((prob.matrices.shape[0], 8), np.int64)
    mats[:, :6] = prob.matrices
    X = np.ascontiguousarray(prob.X, np.float64)
    Y = np.ascontiguousarray(prob.Y, np.float64)
    ext = np.full((mats.shape[0], thr.shape[1], int(prob.matrices[:, 5].max()), 4), -1,
                  np.int64)  # first recurrent row, ..., last recurrent row of each column
    get_kernel("rqa_column_extents", "cpu")(X, Y, prob.cvar, prob.coff, prob.cchan, prob.nch,
                                            np.ascontiguousarray(thr), code, mats, ext)
    hw = hw.astype(np.int64)
    na = prob.matrices[:, 2][:, None, None]
    nb = prob.matrices[:, 5][:, None, None]
    cols = np.arange(ext.shape[2])[None, None, :]
    first, last = ext[..., 0], ext[..., 3]
    has = (first >= 0) & (cols < nb)
    m, k = np.indices(first.shape)[:2]
    for length, where in ((first, has & (first > 0)), (na - 1 - last, has & (last < na - 1))):
        np.add.at(hw, (m[where], k[where], length[where]), -1)
    return hw.astype(np.uint64)


def _cpu_symmetric(prob, thr, code, tile, progress=None, vband=0, interior=False):
    """Self and joint recurrence on the CPU: one pass over the upper triangle
    (:mod:`xedm.kernels.rqa.symmetric_cpu`), then the columns stitched together."""
    import numba

    from ..kernels import get_kernel

    nmat, K = prob.matrices.shape[0], thr.shape[1]
    na_all = prob.matrices[:, 2].astype(np.int64)
    Lp1 = hist_layout(prob)
    nthreads = numba.get_num_threads()
    if tile is None:
        # wide blocks (the work per row of a block has a fixed part), yet about 8 blocks
        # per thread in all so that the threads finish together
        want = -(-int(na_all.sum()) // (8 * nthreads))
        tile = min(max(want, 64), SYMMETRIC_TILE)
    need = 16 * K * int((na_all.astype(np.float64) ** 2).sum())
    tile = max(int(tile), 1, -(-need // SYMMETRIC_STITCH_BYTES))
    w = max(int(prob.theiler), 0)
    items, bounds, soff = [], [], [0]
    for m, na in enumerate(na_all.tolist()):
        b = sorted(set(range(1, na, tile)) | ({w} if 1 < w < na else set()))
        bounds.append(b)
        for q, k0 in enumerate(b):
            k1 = b[q + 1] if q + 1 < len(b) else na
            cost = (k1 - k0) * (2 * na - k0 - k1) // 2 + na
            items.append((m, k0, k1, 2 if k0 >= w else 0, q, cost))
        soff.append(soff[-1] + K * len(b) * na)
    nblocks = np.array([len(b) for b in bounds], np.int64)
    bnd = np.zeros((nmat, max(int(nblocks.max()), 1)), np.int64)
    for m, b in enumerate(bounds):
        bnd[m, :len(b)] = b
    mats = np.empty((nmat, 4), np.int64)
    mats[:, 0], mats[:, 1], mats[:, 2] = prob.matrices[:, 0], prob.matrices[:, 1], na_all
    mats[:, 3] = soff[:-1]
    ends = [np.zeros(max(soff[-1], 1), np.int32) for _ in range(4)]
    X = np.ascontiguousarray(prob.X, np.float64)
    thr = np.ascontiguousarray(thr)
    cells = int((na_all * na_all).sum())
    nrounds = PROGRESS_ROUNDS if progress is not None and cells >= PROGRESS_MIN_CELLS else 1
    # every round keeps at least 4 blocks per thread, so that the threads stay busy
    nrounds = min(nrounds, max(1, len(items) // (4 * nthreads)))
    rounds = _rounds(items, nrounds) if nrounds > 1 else [items]
    total_cost = max(sum(it[5] for it in items), 1)
    hd = np.zeros((K, nmat * Lp1), np.int64)
    hvw = np.zeros((2, K, nmat * Lp1), np.int64)
    block = get_kernel("rqa_symmetric_blocks", "cpu")
    done = 0
    for part in rounds:
        if not part:
            continue
        flat, ptr = schedule(part, max(1, min(len(part), 4 * nthreads)))
        shape = (ptr.size - 1, K, nmat * Lp1)
        chd, chv, chw = (np.zeros(shape, np.int64) for _ in range(3))
        with numba.parallel_chunksize(1):
            block(X, prob.cvar, prob.coff, prob.cchan, prob.nch, thr, code, mats, flat, ptr,
                  chd, chv, chw, nblocks, *ends, vband)
        hd += chd.sum(axis=0)
        hvw[0] += chv.sum(axis=0)
        hvw[1] += chw.sum(axis=0)
        if progress is not None:
            done += sum(it[5] for it in part)
            progress(done / total_cost)
    # the point (i, i) recurs when 0 < thr in every channel
    selfrec = (thr > 0).all(axis=2)
    if w == 0:
        for m, na in enumerate(na_all.tolist()):
            hd[:, m * Lp1 + na] += selfrec[m]
    part = np.zeros((max(1, min(nthreads * 4, cells)), 2, K, nmat * Lp1), np.int64)
    get_kernel("rqa_symmetric_stitch", "cpu")(mats, nblocks, bnd, selfrec, *ends, part, vband,
                                              interior)
    hvw += part.sum(axis=0)
    out = []
    for s in (hd, hvw[0], hvw[1]):
        s = s.astype(np.uint64).reshape(K, nmat, Lp1)
        out.append(np.ascontiguousarray(s.transpose(1, 0, 2)))
    return out
