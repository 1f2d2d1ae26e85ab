"""Skill scores per row (numba, CPU): one pass for the means, one for the moments.

Signature shared with a GPU twin::

    skill_rows(observed (R, N), predicted (R, N)) -> rho, mae, rmse (R,) float64, n (R,) int64

Pairs where either value is not finite are skipped; ``rho`` is NaN with fewer than 3 pairs or
zero variance, ``mae``/``rmse`` NaN with no pairs.  The numpy reference is ``tests/naive.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _numba  # noqa: F401  (kernel cache location, threading layer)


@njit(parallel=True, cache=True)
def skill_rows(o, p):
    R, N = o.shape
    rho = np.full(R, np.nan)
    mae = np.full(R, np.nan)
    rmse = np.full(R, np.nan)
    n_out = np.zeros(R, np.int64)
    for r in prange(R):
        n = 0
        so = 0.0
        sp = 0.0
        for j in range(N):
            a = o[r, j]
            b = p[r, j]
            if np.isfinite(a) and np.isfinite(b):
                n += 1
                so += a
                sp += b
        n_out[r] = n
        if n == 0:
            continue
        mo = so / n
        mp = sp / n
        sxy = 0.0
        sxx = 0.0
        syy = 0.0
        sae = 0.0
        sse = 0.0
        for j in range(N):
            a = o[r, j]
            b = p[r, j]
            if np.isfinite(a) and np.isfinite(b):
                da = a - mo
                db = b - mp
                sxy += da * db
                sxx += da * da
                syy += db * db
                e = b - a
                sae += abs(e)
                sse += e * e
        mae[r] = sae / n
        rmse[r] = np.sqrt(sse / n)
        denom = np.sqrt(sxx * syy)
        if n >= 3 and denom > 0:
            rho[r] = sxy / denom
    return rho, mae, rmse, n_out
