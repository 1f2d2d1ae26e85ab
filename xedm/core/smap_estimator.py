"""S-map with a scikit-learn-style regressor as the local solver, on plain arrays.

For each prediction point the neighbours and weights are S-map's (every library point unless
``knn`` is given; ``w_i = exp(-theta * d_i / mean(d))``), and the local linear map is whatever
``estimator.fit(states, targets, sample_weight=w**2)`` finds: the estimator's own objective
with every squared residual weighted by ``w_i^2`` (the weights multiply the rows of the
least-squares problem, so an unpenalised estimator solves S-map's problem exactly).  The
coefficients are ``[intercept_, *coef_]``; the prediction is ``intercept_ + state @ coef_``.

One ``fit`` per prediction point, on the CPU, in the order of the points: the estimator is
the hot part, as it is in pyEDM.  The user's estimator is never fitted itself: a clone is.
"""

from __future__ import annotations

import copy

import numpy as np

from .embed import observed_at, prepare
from .skill import skill


def clone_estimator(estimator):
    """An unfitted copy (scikit-learn's ``clone`` when scikit-learn is installed)."""
    try:
        from sklearn.base import clone
    except ImportError:  # a scikit-learn-style estimator from elsewhere
        return copy.deepcopy(estimator)
    try:
        return clone(estimator)
    except TypeError:  # not a scikit-learn estimator (no get_params)
        return copy.deepcopy(estimator)


def states(X: np.ndarray, E: int, tau: int, embedded: bool) -> np.ndarray:
    """(B, T, C*E) state vectors (column-major over lags, as S-map's coefficients); rows whose
    window leaves the data hold NaN."""
    B, C, T = X.shape
    if embedded:
        return np.ascontiguousarray(np.moveaxis(X, 1, 2), dtype=np.float64)
    Z = np.full((B, T, C * E), np.nan)
    for c in range(C):
        for e in range(E):
            lag = e * tau
            Z[:, lag:, c * E + e] = X[:, c, : T - lag]
    return Z


def local_fit(estimator, Zl: np.ndarray, bl: np.ndarray, w: np.ndarray, z: np.ndarray):
    """(coefficients [intercept, *coef], prediction at state ``z``) of one weighted fit."""
    try:
        est = estimator.fit(Zl, bl, sample_weight=w * w)
    except TypeError as err:
        if "sample_weight" not in str(err):
            raise
        raise TypeError(
            f"solver={estimator!r}: its fit() takes no sample_weight, which S-map's weights "
            "need; use a regressor that does (Ridge, Lasso, ElasticNet, LinearRegression, "
            "their CV versions)"
        ) from err
    if est is None or not hasattr(est, "coef_"):  # fit() returned no fitted regressor
        raise TypeError(f"solver={estimator!r}: after fit() it has no coef_ (fit must return "
                        "the fitted regressor, with coef_ and intercept_): use a linear "
                        "regressor such as sklearn.linear_model.Ridge(alpha=0.1)")
    coef = np.ravel(np.asarray(est.coef_, dtype=np.float64))
    icpt = float(np.ravel(np.asarray(getattr(est, "intercept_", 0.0), dtype=np.float64))[0])
    return np.concatenate([[icpt], coef]), icpt + float(z @ coef)


def smap_estimator(
    X, y, *, E, tau, Tp, theta, knn, excl, lib, pred_mask, embedded, estimator,
) -> dict[str, np.ndarray]:
    """S-map with ``estimator`` as the solver: predictions (B, P), coefficients
    (B, P, 1 + C*E) and skill (B,); see :func:`xedm.smap`."""
    B, C, T = X.shape
    kE = 1 if embedded else E
    prep = prepare(X, y, np.array([kE]), tau, Tp, lib, pred_mask, embedded)
    Z = states(X, kE, tau, embedded)
    pred_t = prep.pred_t
    P, nc = len(pred_t), 1 + Z.shape[-1]
    prediction = np.full((B, P), np.nan)
    coefficients = np.full((B, P, nc), np.nan)
    est = clone_estimator(estimator)
    for b in range(B):
        lib_t = np.flatnonzero(prep.lib_ok[0, b])
        for i, p in enumerate(pred_t):
            if not prep.pred_ok[0, b, i]:
                continue
            q = lib_t[np.abs(lib_t - p) > excl]
            if len(q) == 0:
                continue
            d = np.sqrt(np.sum((Z[b, q] - Z[b, p]) ** 2, axis=1))
            if knn is not None:
                order = np.lexsort((q, np.abs(q - p), d))[:knn]  # (d, |p - q|, q)
                q, d = q[order], d[order]
            mean = d.mean()
            w = np.exp(-theta * d / mean) if theta != 0 and mean > 0 else np.ones(len(d))
            coefficients[b, i], prediction[b, i] = local_fit(est, Z[b, q], y[b, q + Tp], w,
                                                             Z[b, p])
    out_t = pred_t + Tp
    observed = observed_at(y, out_t)
    return {"prediction": prediction, "coefficients": coefficients, "observed": observed,
            "out_t": out_t, **skill(observed, prediction)}
