"""Skill scores over finite (observed, predicted) pairs, batched over leading axes."""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel


def unit_rows(M, xp=np):
    """Rows (last axis) centred and scaled to unit norm on the array module ``xp`` (a
    constant row becomes 0): their dot products are correlations."""
    M = M - M.mean(axis=-1, keepdims=True)
    norm = xp.sqrt((M * M).sum(axis=-1, keepdims=True))
    return M / xp.where(norm > 0, norm, 1.0)


def unit_exponents(a: np.ndarray) -> np.ndarray:
    """Per series (leading axis), the e such that the largest finite |value| times 2^-e lies
    in [0.5, 1) (0 for none; at least -1021): ``np.ldexp(a, -e)`` rescales exactly, so that
    sums of squares of the result can neither overflow nor underflow, whatever the unit.

    >>> unit_exponents(np.array([[0.3, -3.0], [np.nan, 1e-300]])).tolist()
    [2, -996]
    """
    a = np.abs(a.reshape(a.shape[0], -1))
    m = np.fmax.reduce(a, axis=1, initial=0.0)  # NaN skipped
    inf = ~np.isfinite(m)
    if inf.any():  # rows with an inf: their largest finite value
        m[inf] = np.where(np.isfinite(a[inf]), a[inf], 0.0).max(axis=1, initial=0.0)
    return max_exponents(m)


def max_exponents(m, xp=np):
    """:func:`unit_exponents` from each series' largest finite |value| ``m`` (B,), with the
    array module ``xp`` (numpy, or cupy where ``m`` lies on the device): the exponent of
    ``m``'s power of 2, at least -1021 (0 for m = 0, as frexp gives)."""
    return xp.maximum(xp.frexp(m)[1], -1021).astype(xp.int64)


def skill(observed: np.ndarray, predicted: np.ndarray, axis: int = -1) -> dict[str, np.ndarray]:
    """Pearson ``rho``, mean absolute error ``mae``, ``rmse`` and pair count ``n``.

    Pairs where either value is not finite are ignored.  ``rho`` is NaN with fewer than 3
    pairs or zero variance; ``mae``/``rmse`` are NaN with no pairs.

    >>> import numpy as np
    >>> s = skill(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0, 5.0]))
    >>> round(float(s["rho"]), 4), float(s["mae"]), int(s["n"])
    (0.9827, 0.25, 4)
    """
    o = np.asarray(observed, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if axis not in (-1, o.ndim - 1):
        o = np.moveaxis(o, axis, -1)
        p = np.moveaxis(p, axis, -1)
    if o.shape != p.shape:
        o, p = np.broadcast_arrays(o, p)
    lead = o.shape[:-1]
    N = o.shape[-1]
    rows = get_kernel("skill_rows", "cpu")(
        np.ascontiguousarray(o.reshape(-1, N)), np.ascontiguousarray(p.reshape(-1, N))
    )
    return {key: r.reshape(lead) for key, r in zip(("rho", "mae", "rmse", "n"), rows,
                                                    strict=True)}
