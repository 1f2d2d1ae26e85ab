"""xmap's NaN-free series held where its kernels run (the GPU), with their point sets.

For series without a missing value every window of E lags is complete from t = (E - 1) tau
on, so the point sets of :func:`xedm.core.ccm._point_sets` are one row per E, the same for
every series.  :class:`Resident` gives them as NumPy views of that row broadcast over the
series (the GPU kernels repeat the row on the device: :func:`xedm.kernels.device.upload`),
and makes the padded, scaled series, the series themselves and the targets' columns from
one copy of ``X`` on the device.  At N = 1,000, L = 10,000 on an H200 the host-side masks,
padded copies and columns took 0.2-0.4 s of an xmap whose kernels took 0.15 s.

The same code runs on NumPy arrays (``backend="cpu"``), which is how the tests check it
against the general path on any machine.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from ..kernels.device import array_module
from ..neighbors.contract import Prepared
from .embed import lag_step
from .skill import max_exponents


class Resident:
    """``X`` (N, T), NaN-free, copied once to where ``backend``'s kernels run (or a list of
    its row blocks, joined there: no joined copy on the host)."""

    def __len__(self) -> int:
        return self.shape[0]

    def __init__(self, X, backend: str):
        up = get_kernel("to_device", backend)
        if isinstance(X, (list, tuple)):  # parts (N_i, T), joined where the kernels run
            parts = [up(np.asarray(p, np.float64)) for p in X]
            self.X = array_module(parts[0]).concatenate(parts) if len(parts) > 1 else parts[0]
        else:
            self.X = up(np.asarray(X, np.float64))
        self.xp = array_module(self.X)
        self.shape = tuple(self.X.shape)
        self.T = int(self.shape[1])
        xp = self.xp
        # unit_exponents of finite data, from each series' largest |value| on the device
        m = xp.abs(self.X).max(axis=1) if self.T else xp.zeros(len(self.X))
        self.exponents = max_exponents(m, xp)
        self.scale = xp.ldexp(xp.ones(len(self.X)), -self.exponents.astype(xp.int32))

    def all_finite(self) -> bool:
        """Whether every value of ``X`` is finite (tested where it is)."""
        return bool(self.xp.isfinite(self.X).all())

    def point_sets(self, sl: slice, E_list, tau: int, lib_mask: np.ndarray,
                   pred_t: np.ndarray | None = None) -> Prepared:
        """:func:`xedm.core.ccm._point_sets` of ``X[sl]``: the masks broadcast views (nE, B,
        T) and (nE, B, P) of one row per E, ``Xpad`` where ``X`` is.  ``lib_mask`` (T,)."""
        xp = self.xp
        E_list = np.asarray(E_list, np.int64)
        tau = lag_step(int(E_list[-1]), tau)
        Xs = self.X[sl]
        B, T = Xs.shape
        win = np.arange(T)[None, :] >= (E_list[:, None] - 1) * tau  # (nE, T)
        lib = win & np.asarray(lib_mask, bool)
        if pred_t is None:
            pred_t = np.flatnonzero(win[0]).astype(np.int64)
        pad = int(E_list[-1]) * tau
        Xpad = xp.zeros((B, 1, T + pad))
        Xpad[:, 0, pad:] = Xs * self.scale[sl, None]
        some = lib.any(axis=0)
        lo = int(np.argmax(some)) if some.any() else 0
        hi = T - int(np.argmax(some[::-1])) if some.any() else 0
        nE = len(E_list)
        return Prepared(Xpad, pad, np.broadcast_to(lib[:, None, :], (nE, B, T)), pred_t,
                        np.broadcast_to(win[:, None, pred_t], (nE, B, len(pred_t))),
                        E_list, np.full(B, lo, np.int64), np.full(B, hi, np.int64), tau,
                        self.exponents[sl])

    def series(self, sl: slice):
        """``X[sl]`` where the kernels run (NaN-free: :func:`finite_or_zero` of it)."""
        return self.X[sl]

    def observed(self, sl: slice, out_t: np.ndarray):
        """:func:`xedm.core.embed.observed_at` of ``X[sl]`` at ``out_t``, a run of
        consecutive positions (NaN outside the data)."""
        xp = self.xp
        out_t = np.asarray(out_t, np.int64)
        obs = xp.full((len(self.X[sl]), len(out_t)), xp.nan)
        inside = np.flatnonzero((out_t >= 0) & (out_t < self.T))
        if len(inside):
            a, b = int(inside[0]), int(inside[-1]) + 1
            obs[:, a:b] = self.X[sl, int(out_t[a]):int(out_t[a]) + (b - a)]
        return obs

    def columns(self, groups, starts):
        """The targets' columns of :func:`xedm.core.ccm._target_columns` without surrogates:
        per group its series, each scaled by its power of 2, transposed to (T, columns)
        where the kernels run."""
        xp = self.xp
        cols = xp.empty((int(starts[-1]), self.T))
        for g, js in enumerate(groups):
            c0 = int(starts[g])
            sel = xp.asarray(np.asarray(js, np.int64))
            cols[c0:c0 + len(js)] = self.X[sel] * self.scale[sel, None]
        return xp.ascontiguousarray(cols.T)
