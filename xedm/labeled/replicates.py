"""Replicates (Clark et al. 2015, multispatial CCM): :func:`pool_replicates` joins replicate
series along time with NaN between them, so that every EDM function pools their libraries
while no embedding window and no target crosses from one replicate into the next."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core import validate as v
from .inputs import resolve_dim


def pool_replicates(
    data: xr.DataArray | xr.Dataset,
    replicate_dim: str = "replicate",
    *,
    E: int = 1,
    tau: int = 1,
    Tp: int = 0,
    time_dim: str | None = None,
) -> xr.DataArray | xr.Dataset:
    """Join the replicates along ``replicate_dim`` into one series with NaN between them.

    Between consecutive replicates come ``(E-1)*tau + abs(Tp)`` NaN: an embedding window or a
    target t + Tp that would reach into another replicate holds a NaN, so it is never a
    library or a prediction point of any xedm function (simplex, smap, the sweeps, ccm,
    xmap), and the library pools every replicate (Clark et al. 2015).  Give the largest E,
    tau and abs(Tp) the analysis will use.

    Parameters
    ----------
    data : DataArray or Dataset
        With dims ``replicate_dim`` and time (``time_dim``, default "time").
    replicate_dim : str, default "replicate"
    E, tau, Tp : int
        The embedding the pooled series will be used with (they size the gaps).
    time_dim : str, optional

    Returns
    -------
    DataArray or Dataset
        float64 data over a time dim of positions 0..N-1, with coordinates ``replicate``
        (the replicate's label at each position; -1 in the gaps when the labels are integers,
        otherwise an empty string) and ``replicate_time`` (the original time label; NaN, or
        NaT, in the gaps).

    Examples
    --------
    >>> import numpy as np, xarray as xr, xedm
    >>> da = xr.DataArray(np.random.default_rng(0).random((3, 50)), dims=("replicate", "time"))
    >>> pooled = xedm.pool_replicates(da, E=3)
    >>> pooled.sizes["time"], int(pooled.isnull().sum())  # 3 x 50 points and 2 gaps of 2
    (154, 4)
    >>> out = pooled.edm.simplex(E=3)  # one library from all three replicates
    """
    E, tau, Tp = v.check_E(E), v.check_tau(tau), v.check_Tp(Tp)
    if replicate_dim not in data.dims:
        raise ValueError(f"replicate_dim={replicate_dim!r} is not a dim of the data "
                         f"{tuple(data.dims)}; name the dim that indexes the replicates")
    tdim = resolve_dim(data, time_dim)
    if tdim == replicate_dim:
        raise ValueError(f"replicate_dim and the time dim are both {tdim!r}; pass "
                         "replicate_dim= naming the dim of the replicates, or time_dim=")
    gap = (E - 1) * tau + abs(Tp)
    R = data.sizes[replicate_dim]
    T = data.sizes[tdim]
    if gap >= T:
        raise ValueError(f"E={E}, tau={tau}, Tp={Tp} need (E-1)*tau + |Tp| = {gap} < the "
                         f"replicates' length {T}: no state of a replicate would fit; use a "
                         "smaller E, tau or |Tp|")
    labels = data[replicate_dim].values if replicate_dim in data.coords else np.arange(R)
    times = data[tdim].values if tdim in data.coords else np.arange(T)
    data = data.astype(np.float64)
    if replicate_dim in data.coords:
        data = data.drop_vars(replicate_dim)
    if tdim in data.coords:
        data = data.drop_vars(tdim)
    blank = xr.full_like(data.isel({replicate_dim: 0, tdim: slice(0, gap)}), np.nan)
    parts = []
    for r in range(R):
        if r and gap:
            parts.append(blank)
        parts.append(data.isel({replicate_dim: r}))
    pooled = xr.concat(parts, dim=tdim, coords="minimal", compat="override")
    integer = labels.dtype.kind in "iu"
    if times.dtype.kind == "M":
        missing = np.datetime64("NaT")
    elif times.dtype.kind in "iuf":
        times, missing = times.astype(np.float64), np.nan
    else:
        times, missing = times.astype(object), None
    rep, when = [], []
    for r in range(R):
        if r and gap:
            rep.append(np.full(gap, -1 if integer else ""))
            when.append(np.full(gap, missing, dtype=times.dtype))
        rep.append(np.full(T, labels[r] if integer else str(labels[r])))
        when.append(times)
    rep = np.concatenate(rep)
    when = np.concatenate(when)
    N = pooled.sizes[tdim]
    return pooled.assign_coords({tdim: np.arange(N), "replicate": (tdim, rep),
                                 "replicate_time": (tdim, when)})
