"""Bit helpers shared by the numba kernels: the position of the lowest set bit of a uint64."""

from __future__ import annotations

import numpy as np

from ._numba import njit  # numba's, with xedm's kernel cache

_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)


@njit(cache=True)
def debruijn_table():
    """Lookup table for :func:`lowest_bit` (built once per kernel call: a global array would
    keep numba from caching the kernel)."""
    return np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59,
                     36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60,
                     41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31,
                     10, 25, 14, 19, 9, 13, 8, 7, 6], np.int64)


@njit(cache=True, inline="always")
def lowest_bit(x, table):
    """Position of the lowest set bit of a nonzero uint64 (de Bruijn multiplication)."""
    low = x & (~x + np.uint64(1))
    return table[(low * _DEBRUIJN) >> np.uint64(58)]
