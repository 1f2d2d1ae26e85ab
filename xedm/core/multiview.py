"""Multiview embedding (Ye & Sugihara 2016) on plain arrays.

Every D-dimensional combination ("view") of the lagged columns is a state space; each view's
simplex skill on the ranking set orders the views, and the forecast is the mean of the top
views' forecasts on the prediction set.  All views run as one batch of series through
:func:`xedm.core.simplex.simplex` (``embedded=True``: the lagged columns are the
coordinates), and one call predicts the ranking rows and the prediction rows together: a
prediction point never changes the library, so splitting them would only repeat the search.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from math import comb

import numpy as np

from .embed import LibSpec
from .simplex import simplex
from .skill import skill

# views per simplex call: bounds the (views, D, T) copy of the lagged columns
VIEW_BYTES = 2**27
VIEW_PAIRS = 5e8  # (point pairs x coordinates) of kNN per CPU core in one call


def lagged_columns(X: np.ndarray, E: int, tau: int) -> np.ndarray:
    """(E*C, T) lagged copies of the columns X (C, T), lag-major (``x(t-0), y(t-0), x(t-tau),
    ...``, pyEDM's Embed order); NaN where the lag reaches before the data."""
    C, T = X.shape
    out = np.full((E * C, T), np.nan)
    for e in range(E):
        lag = e * tau
        if lag < T:
            out[e * C:(e + 1) * C, lag:] = X[:, : T - lag]
    return out


def view_count(n: int, D: int) -> int:
    return comb(n, D)


def check_views(V: int, D: int, T: int, n_lagged: int, text: str, backend: str = "cpu") -> None:
    """The work policy (:mod:`xedm.memory`) for ``V`` views of ``D`` of ``n_lagged`` lagged
    columns on ``T`` points (``text``: the columns and E, for the message): the views' list
    and every view's forecasts (V, T) in memory, and one simplex per view (its neighbours
    among T points in D dimensions), refused up front."""
    from ..memory import check_memory, check_work

    what = (f"multiview with {text} ranks {V:,} views (every combination of D={D} of the "
            f"{n_lagged} lagged columns) on {T} time points")
    fix = "use a smaller D or E, or fewer columns"
    check_memory(float(V) * (64 + 16 * D + 8 * T), what, fix, share=0.5)
    check_work(float(V) * T * T * (D + 2), what, fix, backend=backend)


def rank_views(rho: np.ndarray) -> np.ndarray:
    """View indices by descending rho; NaN last; ties in view order."""
    key = np.where(np.isfinite(rho), -rho, np.inf)
    return np.lexsort((np.arange(len(rho)), key))


def multiview(
    X, y, *, E, tau, D, k, Tp, knn, excl, lib: LibSpec, pred_mask, rank_mask, backend, method,
    order=rank_views, progress=None,
) -> dict[str, np.ndarray]:
    """Multiview forecast of ``y`` (T,) from the columns ``X`` (C, T).

    ``rank_mask`` (T,): the prediction rows whose skill ranks the views; ``pred_mask`` (T,):
    the rows forecast; ``order`` maps the ranking skill of every view (V,) to the view
    indices best first (default :func:`rank_views`).  Returns the ensemble ``prediction``
    and ``observed`` at ``out_t``, its skill, and for the top ``k`` views (best first) their
    column indices ``views`` (k, D), the ranking skill ``rank_rho``, their forecasts
    ``view_prediction`` (k, P) and the forecast skill ``view_rho``, ``view_mae``,
    ``view_rmse``, ``view_n``.
    """
    T = X.shape[-1]
    lagged = lagged_columns(X, E, tau)
    combos = np.array(list(combinations(range(lagged.shape[0]), D)), np.int64)
    V = len(combos)
    both = rank_mask | pred_mask
    # views per call: bounded in memory, and in work (about a second) so that Ctrl-C, held
    # back to the end of each kernel call, stops a large ranking promptly
    from ..memory import cpu_cores

    step = max(1, min(VIEW_BYTES // (8 * D * T), int(VIEW_PAIRS * cpu_cores() // (T * T * D))))
    preds = []
    for s in range(0, V, step):
        c = combos[s:s + step]
        res = simplex(lagged[c], np.broadcast_to(y, (len(c), T)), E=D, tau=1, Tp=Tp, knn=knn,
                      excl=excl, lib=lib, pred_mask=both, embedded=True, backend=backend,
                      method=method)
        preds.append(res["prediction"])
        if progress is not None:  # views done (a progress bar's update)
            progress(len(c))
    pred = np.concatenate(preds)  # (V, P)
    out_t, observed = res["out_t"], res["observed"][0]
    pred_t = out_t - Tp
    in_rank, in_pred = rank_mask[pred_t], pred_mask[pred_t]
    rank_rho = skill(observed[in_rank][None], pred[:, in_rank])["rho"]
    top_k = np.asarray(order(rank_rho))[:k]
    top = pred[top_k][:, in_pred]
    obs = observed[in_pred]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN forecast
        ensemble = np.nanmean(top, axis=0)
    per_view = skill(obs[None], top)
    return {"prediction": ensemble, "observed": obs, "out_t": out_t[in_pred],
            **skill(obs, ensemble), "views": combos[top_k], "rank_rho": rank_rho[top_k],
            "view_prediction": top, **{f"view_{key}": val for key, val in per_view.items()}}
