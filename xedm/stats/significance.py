"""p-values against a surrogate null, null quantiles, and false-discovery control.

``p_value = (1 + #{rho_surrogate >= rho}) / (1 + n)`` over the n surrogates whose rho is
finite (one-sided: is the observed skill higher than the null's?).  NaN where the observed
rho is NaN or no surrogate rho is finite.
"""

from __future__ import annotations

import numpy as np

# the NumPy summary itself (and R_CLIP) sit with its GPU twin in the kernels' layer
from ..kernels.stats.null import R_CLIP, null_rows

DEFAULT_QUANTILES = (0.05, 0.5, 0.95)


def nanmean(a, axis=-1):
    """Mean over the finite values along ``axis`` (NaN where there are none), silently."""
    fin = np.isfinite(a)
    cnt = fin.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(fin, a, 0.0).sum(axis=axis) / np.maximum(cnt, 1),
                        np.nan)


def null_summary(obs: np.ndarray, null: np.ndarray, quantiles) -> tuple:
    """Per row of ``null`` (M, n): the count of finite surrogate rho >= ``obs`` (M,), the
    count of finite surrogate rho, the null's quantiles (M, nq) (NaN ignored), and the mean
    and standard deviation (M,) of the null's Fisher z = atanh(rho).

    Returns
    -------
    count_ge : ndarray of int, shape (M,)
        Finite surrogate rho at or above ``obs``.
    n_finite : ndarray of int, shape (M,)
        Finite surrogate rho.
    quantiles : ndarray, shape (M, nq)
        The null's quantiles (NaN where no surrogate rho is finite).
    z_mean, z_sd : ndarray, shape (M,)
        Mean and standard deviation of the null's atanh(rho).
    """
    return null_rows(obs, null, quantiles)


def p_values(obs, count_ge, n_finite) -> np.ndarray:
    """``(1 + count_ge) / (1 + n_finite)``, NaN where ``obs`` is NaN or no null is finite.

    Returns
    -------
    ndarray
        One-sided empirical p-values, in [1 / (1 + n_finite), 1], the shape of ``obs``.
    """
    obs = np.asarray(obs, np.float64)
    n_finite = np.asarray(n_finite)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (1.0 + np.asarray(count_ge, np.float64)) / (1.0 + n_finite)
    return np.where(np.isfinite(obs) & (n_finite > 0), p, np.nan)


def normal_p_values(obs, z_mean, z_sd) -> np.ndarray:
    """One-sided p-values of ``obs`` against a normal null in Fisher z:
    ``P(Z >= (atanh(rho) - mean) / sd)`` with the surrogates' mean and sd of atanh(rho).
    Not limited to ``1 / (1 + n)``: the tail is extrapolated, which is what lets a large map
    pass a false-discovery control with a moderate number of surrogates; it assumes the
    null's Fisher z is close to normal (check the calibration on your own null data).

    Returns
    -------
    ndarray
        One-sided p-values in [0, 1], the shape of ``obs``; NaN where the score is not
        finite (``obs`` NaN, the null's sd zero or NaN).
    """
    from scipy.special import ndtr

    z = np.arctanh(np.clip(np.asarray(obs, np.float64), -R_CLIP, R_CLIP))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (z - z_mean) / z_sd
    # the normal tail: scipy.stats.norm.sf(score) is ndtr(-score), without its argument
    # checks (half the time of a large map's p-values)
    return np.where(np.isfinite(score), ndtr(-score), np.nan)


def bh_qvalues(p: np.ndarray, family: np.ndarray | None = None) -> np.ndarray:
    """Benjamini-Hochberg q-values of the finite p-values where ``family`` is True.

    ``q_(i) = min_{j >= i} p_(j) m / j`` over the m finite p-values of the family sorted
    ascending, capped at 1; other entries are NaN.  A pair is a discovery at FDR alpha when
    ``q <= alpha``.

    Returns
    -------
    ndarray
        q-values, the shape of ``p``: in [0, 1] on the family's finite p-values, NaN elsewhere.

    Examples
    --------
    >>> bh_qvalues(np.array([0.01, 0.04, 0.03, 0.5]))
    array([0.04      , 0.05333333, 0.05333333, 0.5       ])
    """
    p = np.asarray(p, np.float64)
    take = np.isfinite(p) if family is None else (np.asarray(family, bool) & np.isfinite(p))
    q = np.full(p.shape, np.nan)
    vals = p[take]
    m = vals.size
    if m == 0:
        return q
    # any order of tied p-values gives the same q (each takes the minimum over its ties'
    # last rank): the unstable sort, twice as fast on a large map
    order = np.argsort(vals)
    ranked = vals[order] * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(ranked, 1.0)
    q[take] = out
    return q


def surrogate_p_values(obs, count_ge, n_finite, z_mean, z_sd,
                       p_method: str = "empirical") -> np.ndarray:
    """p-values of ``obs`` from a null summarised per entry: :func:`p_values` of the counts
    (``p_method="empirical"``) or :func:`normal_p_values` of the Fisher-z mean and sd
    (``"normal"``); every argument has the shape of ``obs``."""
    if p_method == "normal":
        return normal_p_values(obs, z_mean, z_sd)
    return p_values(obs, count_ge, n_finite)


def null_significance(obs: np.ndarray, null: np.ndarray, quantiles,
                      p_method: str = "empirical") -> tuple[np.ndarray, np.ndarray]:
    """p-values of ``obs`` (any shape) against the surrogate values ``null`` (``obs.shape +
    (n,)``) and the null's quantiles (``obs.shape + (len(quantiles),)``), NaN ignored.

    Examples
    --------
    >>> obs = np.array([0.9, 0.1])
    >>> null = np.array([[0.1, 0.2, 0.95], [0.3, np.nan, 0.0]])
    >>> p, q = null_significance(obs, null, [0.5])
    >>> p  # (1 + #{null >= obs}) / (1 + #finite null)
    array([0.5       , 0.66666667])
    >>> q[:, 0]
    array([0.2 , 0.15])
    """
    shape = obs.shape
    ge, nf, q, zm, zs = null_summary(obs.ravel(), null.reshape(-1, null.shape[-1]), quantiles)
    p = surrogate_p_values(obs, ge.reshape(shape), nf.reshape(shape), zm.reshape(shape),
                           zs.reshape(shape), p_method)
    return p, q.reshape(shape + (len(quantiles),))


def map_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of a map of p-values (n, n, m): over the off-diagonal
    (library, target) pairs, separately at each index of the last axis (each Tp).

    Examples
    --------
    >>> p = np.array([[0.5, 0.01], [0.04, 0.2]])[:, :, None]
    >>> map_qvalues(p)[:, :, 0]
    array([[ nan, 0.02],
           [0.04,  nan]])
    """
    off = ~np.eye(p.shape[0], dtype=bool)
    return np.stack([bh_qvalues(p[:, :, t], off) for t in range(p.shape[-1])], axis=-1)
