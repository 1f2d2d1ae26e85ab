"""Skill sweeps that reuse one neighbour table: over the exclusion radius, over tau, and the
joint grid over E x tau x Tp x theta (S-map), on plain arrays.

Arrays as in :mod:`xedm.core.simplex`: ``X`` (B, C, T), ``y`` (B, T); results are (n, B)
skill arrays over the swept values.  A table deeper than knn, searched once with the
smallest exclusion and the union of the library sets, is cut down per swept value to the
first knn entries that value allows (:func:`first_valid`): the neighbours are ordered by
(distance, |t_pred - t_lib|, t_lib), so dropping entries keeps the order, and the first knn
entries left are exactly those a search with that value finds.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from ..neighbors.base import knn_tables
from ..neighbors.contract import candidate_range
from .embed import library_points, observed_at, prepare, static_library_size
from .simplex import batches, default_knn, finite_or_zero
from .skill import skill, unit_exponents


def first_valid(idx: np.ndarray, dist: np.ndarray, keep: np.ndarray, k: int):
    """The first ``k`` entries of each row of (..., depth) tables where ``keep`` is True (and
    the entry exists), in table order; -1 / inf where a row has fewer."""
    valid = (idx >= 0) & keep
    order = np.argsort(~valid, axis=-1, kind="stable")[..., :k]
    ok = np.take_along_axis(valid, order, -1)
    return (np.ascontiguousarray(np.where(ok, np.take_along_axis(idx, order, -1), -1)),
            np.ascontiguousarray(np.where(ok, np.take_along_axis(dist, order, -1), np.inf)))


def exclusion_sweep(X, y, *, E, tau, Tp, knn, radii, lib, pred_mask, embedded, backend,
                    method) -> dict[str, np.ndarray]:
    """Simplex skill for every exclusion radius in ``radii`` (ascending): (n_r, B) arrays.

    One table per batch of series, searched with the smallest radius and deep enough (knn
    plus the 2 (r_max - r_min) points a larger radius may remove) for every radius."""
    B, C, T = X.shape
    radii = np.asarray(radii, np.int64)
    k = default_knn(knn, E, T, lib, tau, Tp, embedded)
    n_lib = static_library_size(T, lib, E, tau, Tp, embedded)
    depth = int(min(k + 2 * (radii[-1] - radii[0]), n_lib - 1))
    predict = get_kernel("simplex_predict", backend)
    out = []
    for sl in batches(B, 16 * depth * T):
        prep = prepare(X[sl], y[sl], np.array([E]), tau, Tp, lib, pred_mask, embedded)
        idx, dist = knn_tables(prep, [depth], int(radii[0]), backend=backend, method=method)
        yb = finite_or_zero(y[sl])
        obs = observed_at(y[sl], prep.pred_t + Tp)
        gap = np.abs(idx[0] - prep.pred_t[None, :, None])
        k_b = np.full(len(yb), k, np.int64)
        rows = []
        for r in radii.tolist():
            i, d = first_valid(idx[0], dist[0], gap > r, k)
            rows.append(skill(obs, predict(i, d, prep.lib_ok[0], yb, k_b, Tp)))
        out.append({key: np.stack([row[key] for row in rows]) for key in rows[0]})
    res = {key: np.concatenate([o[key] for o in out], axis=1) for key in out[0]}
    res["knn"] = k
    return res


def tau_sweep(X, y, *, E, taus, Tp, knn, excl, lib, pred_mask, backend,
              method) -> dict[str, np.ndarray]:
    """Simplex skill for every lag in ``taus``: (n_tau, B) arrays (one table per tau: the
    states themselves change with tau)."""
    from .simplex import simplex

    rows = []
    for tau in np.asarray(taus, np.int64).tolist():
        r = simplex(X, y, E=E, tau=int(tau) if E > 1 else 1, Tp=Tp, knn=knn, excl=excl,
                    lib=lib, pred_mask=pred_mask, embedded=False, backend=backend,
                    method=method)
        rows.append(r)
    return {key: np.stack([r[key] for r in rows]) for key in ("rho", "mae", "rmse", "n")}


def _cell(kernel, prep, idx, dist, ok, pred_ok, ys, E, tau, Tp, thetas, excl, k, alpha, yexp):
    """S-map predictions (nth, b, P) of one (E, tau, Tp) from the shared table, cut to the
    first k entries this Tp may use."""
    rows = np.arange(ok.shape[0])[:, None, None]
    i, d = first_valid(idx, dist, ok[rows, np.maximum(idx, 0)], k)
    pred, _, _ = kernel(prep.Xpad, prep.pad, ok, prep.pred_t, pred_ok, ys, E, tau, Tp, thetas,
                        excl, prep.q_lo, prep.q_hi, i, d, True, float(alpha), False, prep.xexp,
                        yexp)
    return pred


def skill_grid(X, y, *, E_list, taus, Tp_list, thetas, knn, excl, lib, pred_mask, backend,
               method, alpha=0.0) -> dict[str, np.ndarray]:
    """S-map skill on the grid E x tau x Tp x theta: (nE, ntau, nTp, ntheta, B) arrays.

    Per tau and batch of series, one search gives the tables of every E (distances
    accumulate across E), over the union of the library sets of every Tp and deep enough
    that each Tp's first knn valid entries are its knn nearest.  On the CPU (least squares,
    no ridge) the ``smap_grid`` kernel then solves every Tp and theta of an (E, tau) from
    that table, one weighted design matrix per row and theta for all the Tp that share
    their neighbours; otherwise each (E, Tp) cuts the table (:func:`first_valid`) and runs
    ``smap_predict`` over every theta."""
    B, C, T = X.shape
    E_list = np.sort(np.asarray(E_list, np.int64))
    Tp_list = np.asarray(Tp_list, np.int64)
    thetas = np.asarray(thetas, np.float64)
    kernel = get_kernel("smap_predict", backend)
    yexp = unit_exponents(y)
    ys = np.ldexp(y, -yexp[:, None])
    shape = (len(E_list), len(taus), len(Tp_list), len(thetas), B)
    res = {key: np.full(shape, np.nan) for key in ("rho", "mae", "rmse")}
    res["n"] = np.zeros(shape, np.int64)
    if knn is None:  # every library point: no table to share, S-map's own pass per cell
        from .smap import smap

        for ti, tau in enumerate(np.asarray(taus, np.int64).tolist()):
            for ei, e in enumerate(E_list.tolist()):
                for pi, tp in enumerate(Tp_list.tolist()):
                    r = smap(X, y, E=int(e), tau=1 if e == 1 else int(tau), Tp=int(tp),
                             thetas=thetas, knn=None, excl=excl, lib=lib, pred_mask=pred_mask,
                             embedded=False, backend=backend, method=method, alpha=alpha)
                    for key in res:
                        res[key][ei, ti, pi] = r[key]
        return res
    fin_x = np.isfinite(X).all(axis=1)
    fin_y = np.isfinite(y)
    for ti, tau in enumerate(np.asarray(taus, np.int64).tolist()):
        tau_k = 1 if E_list[-1] == 1 else int(tau)
        ks = [[default_knn(knn, int(e), T, lib, tau_k, int(tp), False) for tp in Tp_list]
              for e in E_list]
        # per E: the library points of each Tp, their union, and the most any Tp loses
        oks = [np.stack([library_points(fin_x, fin_y, lib, int(e), tau_k, int(tp), False)
                         for tp in Tp_list]) for e in E_list]  # (nTp, B, T) each
        lost = [int((o.any(axis=0)[None] & ~o).sum(axis=-1).max()) for o in oks]
        depth = [max(ks[i]) + lost[i] for i in range(len(E_list))]
        for sl in batches(B, 16 * max(depth) * T * len(E_list)):
            prep = prepare(X[sl], y[sl], E_list, tau_k, int(Tp_list[0]), lib, pred_mask,
                           False)
            prep.lib_ok = np.stack([o[:, sl].any(axis=0) for o in oks])
            prep.q_lo, prep.q_hi = candidate_range(prep.lib_ok)
            idx, dist = knn_tables(prep, depth, excl, backend=backend, method=method)
            for ei, e in enumerate(E_list.tolist()):
                pred_ok = np.ascontiguousarray(prep.pred_ok[ei])
                oks_b = np.ascontiguousarray(oks[ei][:, sl])
                if backend == "cpu" and alpha == 0.0:  # every Tp from one solve per theta
                    preds = get_kernel("smap_grid", "cpu")(
                        prep.Xpad, prep.pad, prep.pred_t, pred_ok, ys[sl], int(e), tau_k,
                        Tp_list, thetas, idx[ei], dist[ei], oks_b, int(ks[ei][0]), prep.xexp,
                        yexp[sl])
                else:
                    preds = [_cell(kernel, prep, idx[ei], dist[ei], oks_b[pi], pred_ok,
                                   ys[sl], int(e), tau_k, int(tp), thetas, excl, ks[ei][pi],
                                   alpha, yexp[sl]) for pi, tp in enumerate(Tp_list.tolist())]
                for pi, tp in enumerate(Tp_list.tolist()):
                    obs = observed_at(y[sl], prep.pred_t + int(tp))
                    sk = skill(obs[None], np.where(pred_ok[None], preds[pi], np.nan))
                    for key in res:
                        res[key][ei, ti, pi, :, sl] = sk[key]
    return res
