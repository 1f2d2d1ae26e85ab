"""Skill scores over finite (observed, predicted) pairs, batched over leading axes."""

from __future__ import annotations

import numpy as np


def skill(observed: np.ndarray, predicted: np.ndarray, axis: int = -1) -> dict[str, np.ndarray]:
    """Pearson ``rho``, mean absolute error ``mae``, ``rmse`` and pair count ``n``.

    Pairs where either value is not finite are ignored.  ``rho`` is NaN with fewer than 3
    pairs or zero variance; ``mae``/``rmse`` are NaN with no pairs.

    >>> import numpy as np
    >>> s = skill(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0, 5.0]))
    >>> round(float(s["rho"]), 4), float(s["mae"]), int(s["n"])
    (0.9827, 0.25, 4)
    """
    o = np.moveaxis(np.asarray(observed, dtype=np.float64), axis, -1)
    p = np.moveaxis(np.asarray(predicted, dtype=np.float64), axis, -1)
    ok = np.isfinite(o) & np.isfinite(p)
    n = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.where(n > 0, n, 1)
        o0 = np.where(ok, o, 0.0)
        p0 = np.where(ok, p, 0.0)
        mo = o0.sum(axis=-1) / nn
        mp = p0.sum(axis=-1) / nn
        do = np.where(ok, o - mo[..., None], 0.0)
        dp = np.where(ok, p - mp[..., None], 0.0)
        sxy = (do * dp).sum(axis=-1)
        sxx = (do * do).sum(axis=-1)
        syy = (dp * dp).sum(axis=-1)
        denom = np.sqrt(sxx * syy)
        rho = np.where((n >= 3) & (denom > 0), sxy / np.where(denom > 0, denom, 1.0), np.nan)
        err = np.where(ok, p - o, 0.0)
        mae = np.where(n > 0, np.abs(err).sum(axis=-1) / nn, np.nan)
        rmse = np.where(n > 0, np.sqrt((err * err).sum(axis=-1) / nn), np.nan)
    return {"rho": rho, "mae": mae, "rmse": rmse, "n": n.astype(np.int64)}
