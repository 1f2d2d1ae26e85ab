"""Skill scores per row (numba, CPU): one pass for the scales, one for the means, one for the
moments.

Signature shared with a GPU twin::

    skill_rows(observed (R, N), predicted (R, N)) -> rho, mae, rmse (R,) float64, n (R,) int64

Pairs where either value is not finite are skipped; ``rho`` is NaN with fewer than 3 pairs or
zero variance, ``mae``/``rmse`` NaN with no pairs.  The numpy reference is ``tests/naive.py``.

Independent of the data's unit: each series is multiplied by a power of 2 that brings its
largest |value| into [0.5, 1) before anything is summed (exact, so results on ordinary data
are those of the plain formulas), the errors by the power of 2 of the larger of the two, and
``mae``/``rmse`` are scaled back with ``ldexp``.  Nothing overflows or underflows for any
finite data, and data multiplied by 2^k give bitwise the same ``rho``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._numba import njit  # numba's, with xedm's kernel cache


@njit(cache=True, inline="always")
def pow2_exponent(m):
    """e such that m * 2^-e lies in [0.5, 1) (0 for m == 0 or not finite; at least -1021, so
    that 2^-e is a finite double): multiplying a series whose largest |value| is m by
    ``ldexp(1.0, -e)`` is exact and can neither overflow nor underflow (but for values below
    2^-1022 times m, which do not matter next to m)."""
    if m > 0.0 and m < np.inf:
        return max(math.frexp(m)[1], -1021)
    return 0


@njit(parallel=True, cache=True)
def skill_rows(o, p):
    R, N = o.shape
    rho = np.full(R, np.nan)
    mae = np.full(R, np.nan)
    rmse = np.full(R, np.nan)
    n_out = np.zeros(R, np.int64)
    for r in prange(R):
        n = 0
        mo = 0.0
        mp = 0.0
        for j in range(N):
            a = o[r, j]
            b = p[r, j]
            if np.isfinite(a) and np.isfinite(b):
                n += 1
                mo = max(mo, abs(a))
                mp = max(mp, abs(b))
        n_out[r] = n
        if n == 0:
            continue
        ea = pow2_exponent(mo)
        eb = pow2_exponent(mp)
        ee = max(ea, eb)  # errors b - a on a common scale
        fa = math.ldexp(1.0, -ea)
        fb = math.ldexp(1.0, -eb)
        fe = math.ldexp(1.0, -ee)
        so = 0.0
        sp = 0.0
        for j in range(N):
            a = o[r, j]
            b = p[r, j]
            if np.isfinite(a) and np.isfinite(b):
                so += a * fa
                sp += b * fb
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
                da = a * fa - mo
                db = b * fb - mp
                sxy += da * db
                sxx += da * da
                syy += db * db
                e = b * fe - a * fe
                sae += abs(e)
                sse += e * e
        mae[r] = math.ldexp(sae / n, ee)
        rmse[r] = math.ldexp(np.sqrt(sse / n), ee)
        denom = np.sqrt(sxx) * np.sqrt(syy)
        if n >= 3 and denom > 0:
            rho[r] = sxy / denom
    return rho, mae, rmse, n_out
