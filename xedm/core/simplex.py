"""Simplex projection and its skill sweeps over E and Tp, on plain arrays.

Arrays: ``X`` (B, C, T) library/state columns, ``y`` (B, T) target; results are batched over B.
Neighbour tables come from :mod:`xedm.neighbors`; a sweep over E computes all tables in one
pass (distances accumulate across E); a sweep over Tp reuses one table for every Tp.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from ..memory import TABLE_BYTES  # neighbour-table memory per batch of series
from ..neighbors.base import concat_rows, knn_tables, method_name, native_tables
from ..options import get_option
from .embed import (
    LibSpec,
    Prepared,
    candidate_range,
    library_points,
    library_selection,
    observed_at,
    prediction_times,
    prepare,
    row_part,
    row_ranges,
)
from .skill import skill


def batches(B: int, bytes_per_series: int):
    """Slices over the series axis keeping each batch's tables under TABLE_BYTES.

    Many batches (long work on many series) get a progress bar that appears after two
    seconds; ``xedm.set_options(progress=False)`` turns it off.
    """
    step = max(1, TABLE_BYTES // max(int(bytes_per_series), 1))
    starts = range(0, B, step)
    if len(starts) > 1 and get_option("progress"):
        from .. import _progress

        starts = _progress.bar(starts, desc="series batches", unit="batch", delay=2.0)
    for s in starts:
        yield slice(s, min(B, s + step))


def finite_or_zero(y: np.ndarray) -> np.ndarray:
    """A contiguous copy of the target with non-finite values set to 0 (never read: library
    points have finite targets), as the prediction kernels take it."""
    return np.ascontiguousarray(np.where(np.isfinite(y), y, 0.0))


def default_knn(knn: int | None, E: int, T: int, lib: LibSpec, tau: int, Tp: int, embedded: bool,
                fix: str = "a smaller E", pred_mask: np.ndarray | None = None, excl: int = 0):
    """knn (default E+1), checked against the number of library points the selection allows.

    Leave-one-out takes a prediction point's own state out of its library, so knn+1 library
    points are needed; when no prediction point is a library point (lib and pred disjoint,
    ``pred_mask`` given) and no exclusion radius applies, knn = n_lib is allowed.  ``fix``
    names the parameter to change in the message (e.g. "a smaller E_max" in a sweep).
    """
    k = E + 1 if knn is None else knn
    sel = library_selection(T, lib, E, tau, Tp, embedded)
    n_lib = int(np.count_nonzero(sel))
    disjoint = (pred_mask is not None and excl == 0
                and not sel[prediction_times(pred_mask, E, tau, embedded)].any())
    need = k if disjoint else k + 1
    if n_lib < need:
        why = (f"needs at least knn = {k} (no prediction point is a library point)" if disjoint
               else f"needs at least knn+1 = {k + 1} (leave-one-out takes a prediction point's "
               "own state out of its library)")
        raise ValueError(
            f"lib gives {n_lib} library points for E={E}, tau={tau}, Tp={Tp}, but knn={k} "
            f"{why}; use a longer lib, {fix} or a smaller knn"
        )
    return k


def row_tables(prep: Prepared, k_list, excl: int, backend: str, method, row_chunks=1,
               progress=None):
    """:func:`knn_tables` over ``row_chunks`` ranges of the prediction rows, concatenated
    (rows are independent: the same tables), with ``progress(rows done)`` after each; in one
    piece for index-based methods (their index would be built again for every range).  The
    GPU's exact tables stay on the device (:func:`xedm.neighbors.base.native_tables`): only
    the prediction kernels read them."""
    if row_chunks <= 1 or method_name(method) != "exact" or len(prep.pred_t) < 2:
        return native_tables(prep, k_list, excl, backend=backend, method=method)
    parts = []
    for rows in row_ranges(len(prep.pred_t), row_chunks):
        parts.append(native_tables(row_part(prep, rows), k_list, excl, backend=backend,
                                   method=method))
        if progress is not None:
            progress(rows.stop - rows.start)
    return concat_rows(parts)  # the GPU's tables stay on the device


def simplex(
    X, y, *, E, tau, Tp, knn, excl, lib, pred_mask, embedded, backend, method, row_chunks=1,
    progress=None,
) -> dict[str, np.ndarray]:
    """Simplex projection of ``y`` from the states of ``X``; see :func:`xedm.simplex`
    (``row_chunks``, ``progress``: as :func:`row_tables`)."""
    B, C, T = X.shape
    k = default_knn(knn, E, T, lib, tau, Tp, embedded, pred_mask=pred_mask, excl=excl)
    predict = get_kernel("simplex_predict_var", backend)
    preds, variances = [], []
    for sl in batches(B, 16 * k * T):
        prep = prepare(X[sl], y[sl], np.array([E]), tau, Tp, lib, pred_mask, embedded)
        idx, dist = row_tables(prep, [k], excl, backend, method, row_chunks, progress)
        yb = finite_or_zero(y[sl])
        pred, var = predict(idx[0], dist[0], prep.lib_ok[0], yb, np.full(len(yb), k), Tp)
        preds.append(pred)
        variances.append(var)
        pred_t = prep.pred_t
    prediction = np.concatenate(preds, axis=0)
    out_t = pred_t + Tp
    observed = observed_at(y, out_t)
    return {"prediction": prediction, "pred_variance": np.concatenate(variances, axis=0),
            "observed": observed, "out_t": out_t, "knn": k, **skill(observed, prediction)}


def sweep_predict(prep: Prepared, k_list, excl: int, y: np.ndarray, Tp: int,
                  backend: str) -> np.ndarray:
    """Simplex predictions (nE, B, P) for every E of ``prep`` without neighbour tables
    (``simplex_sweep``: the kNN pass over all E fused with the prediction), in groups of at
    most SWEEP_MAX_E values of E per kernel call."""
    from ..kernels.predict.constants import SWEEP_MAX_E

    sweep = get_kernel("simplex_sweep", backend)
    k_list = np.asarray(k_list, np.int64)
    out = []
    for g in range(0, len(prep.kernel_E), SWEEP_MAX_E):
        s = slice(g, g + SWEEP_MAX_E)
        out.append(sweep(prep.Xpad, prep.pad, np.ascontiguousarray(prep.lib_ok[s]), prep.pred_t,
                         np.ascontiguousarray(prep.pred_ok[s]), prep.kernel_E[s], k_list[s],
                         prep.tau, excl, prep.q_lo, prep.q_hi, y, Tp))
    return out[0] if len(out) == 1 else np.concatenate(out)


def embed_dimension(
    X, y, *, E_list, tau, Tp, knn, excl, lib, pred_mask, backend, method, fix="a smaller E",
    row_chunks=1, progress=None,
) -> dict[str, np.ndarray]:
    """Skill for every E in ``E_list`` from one pass over the distances: (nE, B) arrays.

    Exact neighbours: :func:`sweep_predict` (no tables), over ``row_chunks`` ranges of
    prediction rows (the same results; ``progress(rows done)`` after each); other methods:
    their tables, then ``simplex_predict`` per E.
    """
    B, C, T = X.shape
    E_list = np.sort(np.asarray(E_list, np.int64))
    k_list = np.array([default_knn(knn, int(e), T, lib, tau, Tp, False, fix, pred_mask, excl)
                       for e in E_list])
    out = []
    for sl in batches(B, 16 * int(k_list.sum()) * T):
        prep = prepare(X[sl], y[sl], E_list, tau, Tp, lib, pred_mask, False)
        obs = observed_at(y[sl], prep.pred_t + Tp)
        yb = finite_or_zero(y[sl])
        if method_name(method) == "exact":
            chunks = []
            for rows in row_ranges(len(prep.pred_t), row_chunks):
                chunks.append(sweep_predict(row_part(prep, rows), k_list, excl, yb, Tp,
                                            backend))
                if progress is not None:
                    progress(rows.stop - rows.start)
            preds = chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=-1)
        else:
            idx, dist = knn_tables(prep, k_list, excl, backend=backend, method=method)
            predict = get_kernel("simplex_predict", backend)
            preds = np.stack([predict(idx[i], dist[i], prep.lib_ok[i], yb,
                                      np.full(len(yb), k), Tp) for i, k in enumerate(k_list)])
        out.append(skill(obs[None], np.where(prep.pred_ok, preds, np.nan)))
    res = {key: np.concatenate([o[key] for o in out], axis=1) for key in out[0]}
    res["E"] = E_list
    res["knn"] = k_list
    return res


def predict_interval(
    X, y, *, E, tau, Tp_list, knn, excl, lib, pred_mask, embedded, backend, method,
    fix="a smaller E", row_chunks=1, progress=None,
) -> dict[str, np.ndarray]:
    """Skill for every Tp in ``Tp_list``: (nTp, B) arrays.

    One neighbour table over the union of the library sets of all Tp, deep enough (k plus the
    points any single Tp loses) that the first k valid entries are exactly that Tp's k nearest.
    """
    B, C, T = X.shape
    Tp_list = np.asarray(Tp_list, np.int64)
    ks = [default_knn(knn, E, T, lib, tau, int(tp), embedded, fix, pred_mask, excl)
          for tp in Tp_list]
    k = ks[0]
    predict = get_kernel("simplex_predict", backend)
    out = []
    for sl in batches(B, 16 * 4 * k * T):
        base = prepare(X[sl], y[sl], np.array([E]), tau, int(Tp_list[0]), lib, pred_mask,
                       embedded)
        fin_x = np.isfinite(X[sl]).all(axis=1)
        fin_y = np.isfinite(y[sl])
        kE = int(base.kernel_E[0])
        oks = np.stack([library_points(fin_x, fin_y, lib, kE, tau, int(tp), False)
                        for tp in Tp_list])  # (nTp, b, T)
        union = oks.any(axis=0)
        lost = int((union[None] & ~oks).sum(axis=-1).max())
        base.lib_ok = union[None]
        base.q_lo, base.q_hi = candidate_range(union[None])
        idx, dist = row_tables(base, [k + lost], excl, backend, method, row_chunks, progress)
        y_fin = finite_or_zero(y[sl])
        k_b = np.full(y_fin.shape[0], k, np.int64)
        rows = []
        for i, tp in enumerate(Tp_list):
            pred = predict(idx[0], dist[0], oks[i], y_fin, k_b, int(tp))
            rows.append(skill(observed_at(y[sl], base.pred_t + int(tp)), pred))
        out.append({key: np.stack([r[key] for r in rows]) for key in rows[0]})
    res = {key: np.concatenate([o[key] for o in out], axis=1) for key in out[0]}
    res["Tp"] = Tp_list
    res["knn"] = k
    return res
