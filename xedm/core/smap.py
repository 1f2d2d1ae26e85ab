"""S-map (sequential locally weighted global linear maps) and its sweep over theta.

For each prediction point: weights ``w_i = exp(-theta * d_i / mean(d))`` over its neighbours
(every library point by default), then ``min || diag(w) (A c - b) ||`` with
``A = [1, X_{n_i}]`` and ``b = y[n_i + Tp]``: the minimum-norm solution (rcond =
eps * max(rows, cols), as numpy.linalg.lstsq) of the problem with the columns of diag(w) A
divided by their norms.  With ``solver="ridge"`` the objective is
``|| diag(w) (A c - b) ||^2 + alpha * sum_{j>=1} c_j^2`` (the intercept is not penalised).
Distances are computed once per prediction point and reused for every theta.

Independent of the data's unit: each series (all its columns together) and each target is
multiplied by a power of 2 that brings its largest |value| into [0.5, 1) (exact: neighbours
and weights are unchanged, and squared distances cannot overflow); the kernel weights
relative to the nearest neighbour, ``exp(-theta (d_i - d_min) / mean(d))`` (the common
factor cancels; with ridge the penalty takes it), divides the columns of each problem by
their norms for the solve, and returns everything in the data's units.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from ..neighbors.base import knn_tables
from .embed import observed_at, prepare, row_ranges, static_library_size
from .simplex import batches, default_knn
from .skill import skill, unit_exponents


def smap(
    X, y, *, E, tau, Tp, thetas, knn, excl, lib, pred_mask, embedded, backend, method,
    alpha=0.0, want_sv=False, row_chunks=1, progress=None,
) -> dict[str, np.ndarray]:
    """S-map for every theta in ``thetas``: predictions (nth, B, P), coefficients
    (nth, B, P, 1 + C*E) and skill (nth, B).

    ``row_chunks`` > 1 runs the kernel over that many ranges of prediction rows (rows are
    independent: the results are the same), calling ``progress(rows done)`` after each."""
    B, C, T = X.shape
    thetas = np.asarray(thetas, np.float64)
    if knn is None:
        n_lib = static_library_size(T, lib, E, tau, Tp, embedded)
        if n_lib < 2:
            raise ValueError(
                f"lib gives {n_lib} library points for E={E}, tau={tau}, Tp={Tp}; S-map needs "
                "at least 2: use a longer lib or a smaller E"
            )
        k = None
    else:
        k = default_knn(knn, E, T, lib, tau, Tp, embedded, pred_mask=pred_mask, excl=excl)
    kernel = get_kernel("smap_predict", backend)
    yexp = unit_exponents(y)
    ys = np.ldexp(y, -yexp[:, None])
    parts = []
    for sl in batches(B, 16 * (k or 1) * T):
        # prep.Xpad holds each series times 2^-prep.xexp (padded_series); the kernel unscales
        prep = prepare(X[sl], y[sl], np.array([E]), tau, Tp, lib, pred_mask, embedded)
        if k is None:
            idx = np.zeros((0, 0, 0), np.int64)
            dist = np.zeros((0, 0, 0))
        else:
            idx, dist = knn_tables(prep, [k], excl, backend=backend, method=method)
            idx, dist = idx[0], dist[0]
        sub = []
        for rows in row_ranges(len(prep.pred_t), row_chunks):
            sub.append(kernel(
                prep.Xpad, prep.pad, prep.lib_ok[0], prep.pred_t[rows],
                np.ascontiguousarray(prep.pred_ok[0][:, rows]), ys[sl], int(prep.kernel_E[0]),
                tau, Tp, thetas, excl, prep.q_lo, prep.q_hi,
                idx if k is None else np.ascontiguousarray(idx[:, rows]),
                dist if k is None else np.ascontiguousarray(dist[:, rows]), k is not None,
                float(alpha), bool(want_sv), prep.xexp, yexp[sl],
            ))
            if progress is not None:
                progress(rows.stop - rows.start)
        parts.append(tuple(np.concatenate([r[i] for r in sub], axis=2) for i in range(3)))
        pred_t = prep.pred_t
    prediction = np.concatenate([p[0] for p in parts], axis=1)
    coef = np.concatenate([p[1] for p in parts], axis=1)
    sv = np.concatenate([p[2] for p in parts], axis=1)
    out_t = pred_t + Tp
    observed = observed_at(y, out_t)
    res = {"prediction": prediction, "observed": observed, "out_t": out_t, "coefficients": coef,
           "knn": -1 if k is None else k, **skill(observed[None], prediction)}
    if want_sv:
        res["singular_values"] = sv
    return res
