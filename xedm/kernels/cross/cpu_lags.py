"""The lag scan of a network's cross maps on the host (numba): per pair, the lag of the
highest skill overall and among the driver lags (:func:`xedm.core.cross_maps.lag_summary`).

    lag_summary(rho, drivers) -> (at_all, finite, at, rho_at) each (P,)

``rho`` (P, L) the skill of P pairs at L lags, ``drivers`` the ascending indices of the
driver lags (Tp <= 0).  ``at_all``: the index of the first maximum over every lag (0 where
none is finite), ``finite``: whether that maximum is finite, ``at``: the first maximum among
the driver lags (the first driver lag where none is finite), ``rho_at`` the skill there.
NaN is never a maximum.  One pass over each pair's contiguous row (the strided planes of
NumPy took 12 s for 10,000 x 10,000 pairs at 5 lags).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache


@njit(cache=True, parallel=True)
def lag_summary(rho, drivers):
    P, L = rho.shape
    at_all = np.empty(P, np.int64)
    finite = np.empty(P, np.bool_)
    at = np.empty(P, np.int64)
    rho_at = np.empty(P, np.float64)
    for p in prange(P):
        top = -np.inf
        a = 0
        for i in range(L):
            v = rho[p, i]
            if v > top:  # NaN never is
                top = v
                a = i
        at_all[p] = a
        finite[p] = np.isfinite(top)
        top = -np.inf
        a = drivers[0]
        for i in drivers:
            v = rho[p, i]
            if v > top:
                top = v
                a = i
        at[p] = a
        rho_at[p] = rho[p, a]
    return at_all, finite, at, rho_at
