"""The surrogates of some targets, gathered and scaled by powers of 2 on the host (numba):
what :func:`xedm.core.pair_null.pair_null` uploads.

    gather_scaled(S, used) -> (len(used), n, T) float64

Row (u, s) is ``S[used[u], s]`` times 2^-e, e the exponent of the row's largest finite
absolute value (:func:`xedm.core.skill.unit_exponents`: at least -1021, 0 for none), so its
largest finite value lies in [0.5, 1): an exact rescaling (the same rho), bit for bit
NumPy's ``a * np.ldexp(1.0, -unit_exponents(a))[:, None]``, in one parallel pass instead of
NumPy's half a dozen over a copy (at N = 100,000 the surrogates are 34 GB).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache


@njit(cache=True, parallel=True)
def gather_scaled(S, used):
    n, T = S.shape[1], S.shape[2]
    out = np.empty((len(used), n, T))
    for r in prange(len(used) * n):
        u, s = r // n, r % n
        j = used[u]
        m = 0.0
        for t in range(T):
            v = abs(S[j, s, t])
            if v > m and v < np.inf:  # NaN and inf never count
                m = v
        e = max(math.frexp(m)[1], -1021)
        f = math.ldexp(1.0, -e)
        for t in range(T):
            out[u, s, t] = S[j, s, t] * f
    return out
