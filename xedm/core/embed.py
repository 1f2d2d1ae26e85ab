"""Embedding bookkeeping on plain arrays: library and prediction point sets.

Series are ``X`` with shape ``(B, C, T)`` (B series, C columns, T time steps) and a target
``y`` with shape ``(B, T)``.  The state at index t is
``(X[:, c, t - e*tau] for c in columns for e in range(E))``; kernels read it straight from a
zero-padded copy of the series, so no embedding matrix is ever built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..neighbors.contract import Prepared, candidate_range
from .skill import unit_exponents


@dataclass(frozen=True)
class LibSpec:
    """Library selection as positions: disjoint inclusive ``segments`` (S, 2) or a ``mask``."""

    segments: np.ndarray | None = None
    mask: np.ndarray | None = None

    @classmethod
    def whole(cls, T: int) -> LibSpec:
        return cls(segments=np.array([[0, T - 1]], dtype=np.int64))

    def size(self) -> int:
        """Number of time points selected (before any embedding or NaN trimming)."""
        if self.mask is not None:
            return int(self.mask.sum())
        return int(np.sum(self.segments[:, 1] - self.segments[:, 0] + 1))


def lag_step(E_max: int, tau: int, embedded: bool = False) -> int:
    """tau as the point sets and kernels take it: with no lags (E_max = 1, or embedded=True)
    tau has no effect, so 1, and a huge tau cannot size the padded series."""
    return 1 if embedded or E_max == 1 else tau


def span(E: int, tau: int, embedded: bool) -> int:
    """How far the embedding window reaches into the past, in index steps."""
    return 0 if embedded else (E - 1) * tau


def window_finite(fin: np.ndarray, E: int, tau: int, embedded: bool) -> np.ndarray:
    """(B, T) bool: the embedding window of X_t is complete and finite."""
    if embedded:
        return fin.copy()
    return windows_finite(fin, [E], tau)[0]


def windows_finite(fin: np.ndarray, E_list, tau: int) -> np.ndarray:
    """(nE, B, T): :func:`window_finite` for every E of an ascending list, built lag by lag
    (each E extends the previous window by its new lags)."""
    E_list = [int(e) for e in E_list]
    out = np.empty((len(E_list),) + fin.shape, dtype=bool)
    ok = fin.copy()
    done = 1
    for i, E in enumerate(E_list):
        for e in range(done, E):
            lag = e * tau
            ok[:, lag:] &= fin[:, :-lag] if lag < fin.shape[-1] else False
            ok[:, :lag] = False
        done = max(done, E)
        out[i] = ok
    return out


def library_points(
    fin_x: np.ndarray,
    fin_y: np.ndarray,
    lib: LibSpec,
    E: int,
    tau: int,
    Tp: int,
    embedded: bool,
    win: np.ndarray | None = None,
) -> np.ndarray:
    """(B, T) bool: which states X_t are library points (CONVENTIONS.md, "Library").

    ``fin_x`` (B, T) says where every column is finite, ``fin_y`` (B, T) where the target is;
    ``win`` is ``window_finite(fin_x, E, tau, embedded)`` when the caller has it already.
    """
    B, T = fin_x.shape
    ok = window_finite(fin_x, E, tau, embedded) if win is None else win.copy()
    ok &= shifted(fin_y, Tp)  # the target y[t + Tp] exists and is finite
    ok &= library_selection(T, lib, E, tau, Tp, embedded)[None, :]
    return ok


def shifted(a: np.ndarray, Tp: int) -> np.ndarray:
    """(B, T) bool ``out[:, t] = a[:, t + Tp]``, False where t + Tp lies outside the data."""
    T = a.shape[-1]
    out = np.zeros(a.shape, dtype=bool)
    if abs(Tp) < T:
        if Tp >= 0:
            out[..., : T - Tp] = a[..., Tp:]
        else:
            out[..., -Tp:] = a[..., : T + Tp]
    return out


def library_selection(T: int, lib: LibSpec, E: int, tau: int, Tp: int, embedded: bool):
    """(T,) bool: positions the library selection allows for (E, tau, Tp), before NaNs."""
    s = span(E, tau, embedded)
    if lib.mask is not None:
        t = np.arange(T)
        return lib.mask & (t >= s) & (t + Tp >= 0) & (t + Tp < T)
    sel = np.zeros(T, dtype=bool)
    for a, b in lib.segments.tolist():
        lo = max(a + s, a - Tp)  # window and target (Tp < 0) inside the segment
        hi = min(b, b - Tp)  # target (Tp > 0) inside the segment
        if hi >= lo:
            sel[lo : hi + 1] = True
    return sel


def prediction_times(pred_mask: np.ndarray, E: int, tau: int, embedded: bool) -> np.ndarray:
    """Positions t in pred whose embedding window lies inside the data (static, no NaN check)."""
    s = span(E, tau, embedded)
    t = np.flatnonzero(pred_mask)
    return t[t >= s].astype(np.int64)


def padded_series(X: np.ndarray, pad: int, exponents: np.ndarray | None = None) -> np.ndarray:
    """A float64 copy of X (B, C, T) with ``pad`` leading zeros and non-finite values set to 0,
    each series (all its columns together) multiplied by the power of 2 that brings its largest
    |value| into [0.5, 1).

    Non-finite values never enter a valid distance (their states are excluded by the point
    sets); zeroing them keeps incremental distance sums finite.  The power-of-2 scale is exact
    (neighbour order and ties are those of the data), keeps squared distances from overflowing
    or underflowing whatever the data's unit, and makes simplex's ``d_min`` floor (1e-6)
    relative to the series' magnitude, so simplex skill does not depend on the unit.
    ``exponents`` (B,): those powers, :func:`xedm.core.skill.unit_exponents` of X, when the
    caller has them already.
    """
    B, C, T = X.shape
    out = np.zeros((B, C, T + pad), dtype=np.float64)
    body = out[:, :, pad:]
    body[...] = X
    body[~np.isfinite(body)] = 0.0
    e = unit_exponents(body) if exponents is None else exponents
    if e.any():
        body *= np.ldexp(1.0, -e)[:, None, None]
    return out


def take_times(a: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``a[..., t]`` as a C-ordered array; a slice (a plain copy) when ``t`` is a run of
    consecutive positions, as prediction times usually are: numpy's fancy indexing along
    the last axis is far slower (1.1 s against 0.05 s for (10, 1000, 10,000) booleans).

    >>> take_times(np.arange(10).reshape(2, 5), np.array([1, 2, 3])).tolist()
    [[1, 2, 3], [6, 7, 8]]
    """
    t = np.asarray(t)
    if t.ndim == 1 and len(t) and t[-1] - t[0] == len(t) - 1 and (
            len(t) < 3 or bool((np.diff(t) == 1).all())):
        return np.ascontiguousarray(a[..., int(t[0]):int(t[-1]) + 1])
    return np.ascontiguousarray(a[..., t])


def prepare(
    X: np.ndarray,
    y: np.ndarray,
    E_list: np.ndarray,
    tau: int,
    Tp: int,
    lib: LibSpec,
    pred_mask: np.ndarray,
    embedded: bool,
) -> Prepared:
    """Point sets and padded series for every E in ``E_list`` (ascending)."""
    fin_x = np.isfinite(X).all(axis=1)
    fin_y = np.isfinite(y)
    kernel_E = np.ones(len(E_list), np.int64) if embedded else np.asarray(E_list, np.int64)
    pad = int(kernel_E[-1]) * tau  # one lag more than the window: diagonal recurrences
    pred_t = prediction_times(pred_mask, int(kernel_E[0]), tau, False)
    wins = windows_finite(fin_x, kernel_E, tau)
    lib_ok = np.stack([library_points(fin_x, fin_y, lib, int(e), tau, Tp, False, win)
                       for e, win in zip(kernel_E, wins, strict=True)])
    # C order (take_times): the kernels then see one layout, so numba compiles each of them
    # once, not once per layout
    pred_ok = take_times(wins, pred_t)
    q_lo, q_hi = candidate_range(lib_ok)
    xexp = unit_exponents(X)
    return Prepared(padded_series(X, pad, xexp), pad, lib_ok, pred_t, pred_ok, kernel_E, q_lo,
                    q_hi, tau, xexp)


def static_library_size(T: int, lib: LibSpec, E: int, tau: int, Tp: int, embedded: bool) -> int:
    """Library points of a NaN-free series (what the selection allows at most)."""
    return int(np.count_nonzero(library_selection(T, lib, E, tau, Tp, embedded)))


def observed_at(y: np.ndarray, out_t: np.ndarray) -> np.ndarray:
    """y (B, T) at target positions ``out_t``; NaN where the target lies outside the data."""
    T = y.shape[-1]
    inside = (out_t >= 0) & (out_t < T)
    if inside.all():
        return take_times(y, out_t).astype(np.float64, copy=False)
    obs = np.full(y.shape[:-1] + out_t.shape, np.nan)
    obs[..., inside] = y[..., out_t[inside]]
    return obs


def row_ranges(P: int, n: int) -> list[slice]:
    """``n`` (at most ``P``, at least 1) consecutive ranges covering rows ``0..P-1``: the
    pieces a long prediction set is computed in when a progress bar follows it."""
    bounds = np.linspace(0, P, max(1, min(int(n), P)) + 1).astype(np.int64)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def row_part(prep: Prepared, rows: slice) -> Prepared:
    """``prep`` restricted to the prediction rows ``rows`` (the library is unchanged)."""
    return dataclasses.replace(prep, pred_t=prep.pred_t[rows],
                               pred_ok=np.ascontiguousarray(prep.pred_ok[..., rows]))
