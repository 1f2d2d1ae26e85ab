"""The surrogate null of a cross map, summarised per (library, target) pair (NumPy, CPU).

Signatures shared with the GPU twins (:mod:`xedm.kernels.stats.gpu_null`)::

    null_rows(obs, null, quantiles) -> count_ge, n_finite, quantiles, z_mean, z_sd
    xmap_null_summary(r, c0, nj, n_sur, quantiles, keep_null) -> {name: (nL, nj, ...)}

``null_rows`` is :func:`xedm.stats.significance.null_summary` (its documentation states the
formulas).  ``xmap_null_summary`` reads one group of :func:`xedm.core.ccm.xmap`'s lookup
columns ``r`` (nL, columns): its ``nj`` targets at columns ``c0 .. c0 + nj``, then their
``n_sur`` surrogates each, target-major; it returns host (NumPy) arrays ``rho`` (nL, nj) and,
with surrogates, ``count_ge``, ``n_null`` (int64), ``z_mean``, ``z_sd`` (nL, nj), ``null_q``
(nL, nj, nq) and, with ``keep_null``, ``rho_null`` (nL, nj, n_sur).
"""

from __future__ import annotations

import numpy as np

R_CLIP = 1.0 - 1e-12  # |rho| clipped before atanh (Fisher z)


def null_rows(obs: np.ndarray, null: np.ndarray, quantiles) -> tuple:
    """Per row of ``null`` (M, n): count of finite values >= ``obs`` (M,), count of finite
    values, quantiles (M, nq) of the finite values, mean and sd (ddof 1) of their Fisher z
    (NaN with fewer than two finite values)."""
    fin = np.isfinite(null)
    nfin = fin.sum(axis=1)
    ge = np.sum(fin & (null >= obs[:, None]), axis=1)
    # atanh of the clipped values (NaN stays NaN, then counts 0): the same z, in one buffer
    z = np.clip(null, -R_CLIP, R_CLIP)
    np.arctanh(z, out=z)
    every = bool(fin.all())
    if not every:
        z[~fin] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        zm = z.sum(axis=1) / nfin
        z -= zm[:, None]
        np.square(z, out=z)
        if not every:
            z[~fin] = 0.0
        zs = np.sqrt(np.maximum(z.sum(axis=1) / (nfin - 1), 0.0))
    q = np.full((len(obs), len(quantiles)), np.nan)
    if len(quantiles):
        full = nfin == null.shape[1]  # no NaN: the fast (partition) path
        if full.any():
            q[full] = np.quantile(null[full], quantiles, axis=1).T
        some = (nfin > 0) & ~full
        if some.any():
            q[some] = np.nanquantile(null[some], quantiles, axis=1).T
    two = nfin > 1
    return ge, nfin, q, np.where(two, zm, np.nan), np.where(two, zs, np.nan)


def xmap_null_summary(r, c0: int, nj: int, n_sur: int, quantiles, keep_null=False) -> dict:
    """One group of targets of xmap's lookups ``r`` (nL, columns), summarised (module doc)."""
    obs = r[:, c0:c0 + nj]
    out = {"rho": obs}
    if n_sur == 0:
        return out
    shape = obs.shape
    null = r[:, c0 + nj:c0 + nj * (1 + n_sur)].reshape(obs.size, n_sur)
    ge, nf, q, zm, zs = null_rows(obs.ravel(), null, quantiles)
    out.update(count_ge=ge.reshape(shape), n_null=nf.reshape(shape),
               null_q=q.reshape(shape + (-1,)), z_mean=zm.reshape(shape),
               z_sd=zs.reshape(shape))
    if keep_null:
        out["rho_null"] = null.reshape(shape + (n_sur,))
    return out
