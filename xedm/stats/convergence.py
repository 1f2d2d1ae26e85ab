"""Convergence of CCM over library sizes: is the cross-map skill rising with L?

For each pair, from the per-sample rho at each library size L (``rho_s`` (..., n_sizes,
samples)) and the pair's number of predictions ``n`` (every valid library point is
predicted, so ``n = n_valid``):

``kendall_tau``, ``kendall_p``
    Kendall's tau-b between L and the mean rho over samples at L, with the one-sided p-value
    of ``scipy.stats.kendalltau(..., alternative="greater")``: small p says rho rises with L.
``fisher_z``, ``fisher_p``
    The Fisher z-test of the mean rho at the largest L against the smallest L (Chang et al.
    2017; 2020): ``z = (atanh(r_max) - atanh(r_min)) / sqrt(2 / (n - 3))`` with r clipped
    to ``|r| <= 1 - 1e-12``, and the one-sided p = P(Z >= z) under the standard normal: small p
    says rho at the largest L is higher than at the smallest.  Both rho use the same n
    predictions, so the test treats them as independent estimates (it is conservative for
    the positive correlation they have).
``rho_ci``
    A percentile bootstrap interval of the mean rho at each L: the samples at L are resampled
    with replacement ``n_boot`` times (``numpy.random.default_rng(seed)``), the mean of each
    resample taken, and the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles reported
    (``ci`` = low, high).  It measures how much the mean over the drawn libraries depends on
    which libraries were drawn; a size at or above n_valid has a single library, so its
    interval is a point.
"""

from __future__ import annotations

import numpy as np

from .significance import R_CLIP, nanmean


def kendall(sizes, rho_mean) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's tau-b of ``rho_mean`` (..., n_sizes) against ``sizes`` and its one-sided
    (increasing) p-value, per leading index; NaN with fewer than 3 finite sizes.

    Returns
    -------
    tau : ndarray, shape (...)
        Kendall's tau-b of mean rho against L, in [-1, 1].
    p : ndarray, shape (...)
        One-sided p-value of a rise of rho with L.
    """
    from scipy.stats import kendalltau

    lead = rho_mean.shape[:-1]
    flat = rho_mean.reshape(-1, rho_mean.shape[-1])
    tau = np.full(len(flat), np.nan)
    p = np.full(len(flat), np.nan)
    sizes = np.asarray(sizes, np.float64)
    for r, row in enumerate(flat):
        ok = np.isfinite(row)
        if ok.sum() < 3 or np.ptp(row[ok]) == 0:
            continue
        res = kendalltau(sizes[ok], row[ok], alternative="greater")
        tau[r], p[r] = res.statistic, res.pvalue
    return tau.reshape(lead), p.reshape(lead)


def fisher(r_small, r_large, n) -> tuple[np.ndarray, np.ndarray]:
    """Fisher z of rho at the largest against the smallest L with n predictions each, and
    its one-sided p-value (see the module doc); NaN where n <= 3 or a rho is NaN.

    Returns
    -------
    z : ndarray
        ``(atanh(r_large) - atanh(r_small)) / sqrt(2 / (n - 3))``, the broadcast shape of the
        arguments.
    p : ndarray
        One-sided p-value ``P(Z >= z)``, the same shape.
    """
    from scipy.stats import norm

    a = np.arctanh(np.clip(r_small, -R_CLIP, R_CLIP))
    b = np.arctanh(np.clip(r_large, -R_CLIP, R_CLIP))
    n = np.asarray(n, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(n > 3, (b - a) / np.sqrt(2.0 / (n - 3.0)), np.nan)
    return z, np.where(np.isfinite(z), norm.sf(z), np.nan)


def bootstrap_ci(rho_s, seed: int, n_boot: int = 1000, level: float = 0.95,
                 chunk: int = 4096) -> np.ndarray:
    """Percentile bootstrap interval of the mean of ``rho_s`` (..., n_sizes, samples) over
    samples (module doc).

    Returns
    -------
    ndarray, shape (..., n_sizes, 2)
        The interval's low and high ends at ``level`` (NaN where no sample is finite).
    """
    S = rho_s.shape[-1]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, S, (n_boot, S))
    W = np.zeros((n_boot, S))
    np.add.at(W, (np.repeat(np.arange(n_boot), S), draws.ravel()), 1.0)  # counts per sample
    flat = rho_s.reshape(-1, S)
    fin = np.isfinite(flat)
    vals = np.where(fin, flat, 0.0)
    out = np.full((len(flat), 2), np.nan)
    qs = [(1 - level) / 2, (1 + level) / 2]
    for a in range(0, len(flat), chunk):
        tot = vals[a:a + chunk] @ W.T
        cnt = fin[a:a + chunk].astype(np.float64) @ W.T
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(cnt > 0, tot / cnt, np.nan)
        some = np.isfinite(means).any(axis=1)
        if some.any():
            out[a:a + chunk][some] = np.nanquantile(means[some], qs, axis=1).T
    return out.reshape(rho_s.shape[:-1] + (2,))


def convergence(rho_s, sizes, n_pred, seed: int, n_boot: int = 1000,
                level: float = 0.95) -> dict[str, np.ndarray]:
    """All the statistics of the module doc for ``rho_s`` (..., n_sizes, samples).

    Returns
    -------
    dict of str to ndarray
        ``kendall_tau``, ``kendall_p``, ``fisher_z``, ``fisher_p`` of shape (...) and
        ``rho_ci`` of shape (..., n_sizes, 2): see :func:`kendall`, :func:`fisher` and
        :func:`bootstrap_ci`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rho_s = np.linspace(0.2, 0.8, 5)[None, :, None] + 0.01 * rng.standard_normal((1, 5, 20))
    >>> out = convergence(rho_s, [10, 20, 40, 80, 160], np.array([200]), seed=0)
    >>> round(float(out["kendall_tau"][0]), 6), bool(out["fisher_p"][0] < 1e-6)
    (1.0, True)
    """
    sizes = np.asarray(sizes)
    mean = nanmean(rho_s, axis=-1)
    tau, p_tau = kendall(sizes, mean)
    lo, hi = int(np.argmin(sizes)), int(np.argmax(sizes))
    z, p_z = fisher(mean[..., lo], mean[..., hi], n_pred)
    return {"kendall_tau": tau, "kendall_p": p_tau, "fisher_z": z, "fisher_p": p_z,
            "rho_ci": bootstrap_ci(rho_s, seed, n_boot, level)}
