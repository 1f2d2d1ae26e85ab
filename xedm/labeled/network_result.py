"""The result of :func:`xedm.causal_network` as xarray: an edge list (``result="edges"``)
or (library, target) matrices (``result="dense"``, built from the edge list by
:func:`to_dense`).

The edge list holds every pair the conditioning tested: in a large network (more than 129
series, the library's E) each series' 32 candidate drivers, otherwise every ordered pair.
Its dims: ``edge`` (the pairs, with coords ``library``, ``target`` and their positions
``library_index``, ``target_index``), ``series`` (per-series variables) and ``Tp``.  A pair
it does not list was not tested: its decision is "no link", or "undetermined" by the
per-series rules (a constant series, too few effective points, a library predicted
exactly by its own past: ``constant``, ``effective_points``, ``points_needed``, ``exact``),
which :func:`to_dense` and :func:`decide` apply.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

#: result="auto": an edge list past this many series (a dense result of N = 1,000 takes
#: about 0.2 GB; of N = 10,000, 19 GB)
EDGES_FROM = 1000
#: bytes per pair of a dense result while it is built: its variables (about 190) and every
#: pair's cross maps at 5 lags (40), with a copy of each
DENSE_BYTES = 2 * (190 + 40)
#: per-pair variables of the predictive and the partial conditioning
STATS = {"predictive": ["gain", "gain_hi", "gain_p", "gain_q", "selected", "lag"],
         "partial": ["partial_rho", "partial_p", "partial_q"]}
#: the value of a pair the edge list does not hold, per variable (dense result)
FILL = {"p_value": np.nan, "q_value": np.nan, "candidate": False, "synchrony": False,
        "gain": np.nan, "gain_hi": np.nan, "gain_p": np.nan, "gain_q": np.nan,
        "selected": False, "lag": 0, "partial_rho": np.nan, "partial_p": np.nan,
        "partial_q": np.nan, "link": False, "rho": np.nan, "best_Tp": np.nan,
        "driver_Tp": 0, "n_conditions": 0}
#: the per-series facts of the rules outside the edge list
FLAGS = ("constant", "effective_points", "points_needed", "exact")


def names(conditioning: str) -> list[str]:
    """The per-pair variables of a result."""
    return ["rho", "p_value", "q_value", "driver_Tp", "best_Tp", "candidate",
            *STATS[conditioning], "n_conditions", "synchrony", "link"]


def reason_attrs() -> dict:
    from ..core.network import REASONS

    return dict(flag_values=np.arange(len(REASONS) + 1, dtype=np.int8),
                flag_meanings=" ".join(["decided", *(
                    t.split(":")[0].replace(",", "").replace(" ", "_")
                    for t in REASONS.values())]),
                description="0 where decided; else " + "; ".join(
                    f"{k}: {t}" for k, t in REASONS.items()))


def decision_of(link, reason) -> np.ndarray:
    return np.where(link, "link", np.where(reason > 0, "undetermined", "no link"))


def edges_dataset(out: dict, labels, lags, conditioning: str) -> xr.Dataset:
    """The edge list of :func:`xedm.core.network.network`'s pair table (its off-diagonal
    pairs, library by library, targets ascending)."""
    pairs = out["pairs"]
    N = len(pairs)
    rows = np.broadcast_to(np.arange(N)[:, None], pairs.shape)
    keep = (pairs >= 0) & (pairs != rows)
    li, ti = rows[keep].astype(np.int64), pairs[keep].astype(np.int64)
    labels = np.asarray(labels)
    ds = xr.Dataset({k: ("edge", np.asarray(out[k])[keep]) for k in names(conditioning)})
    reason = np.asarray(out["undetermined_reason"], np.int8)[keep]
    ds["undetermined"] = ("edge", reason > 0)
    ds["decision"] = ("edge", decision_of(ds["link"].values, reason))
    ds["undetermined_reason"] = ("edge", reason)
    ds["undetermined_reason"].attrs.update(reason_attrs())
    ds["rho_lag"] = (("edge", "Tp"), np.asarray(out["rho_lag"])[keep])
    ds["E"] = ("series", np.asarray(out["E"], np.int64))
    if "n_drivers" in out:
        ds["n_drivers"] = ("series", np.asarray(out["n_drivers"], np.int64))
    for k in FLAGS:
        ds[k] = ("series", np.asarray(out["flags"][k]))
    return ds.assign_coords(series=labels, library=("edge", labels[li]),
                            target=("edge", labels[ti]), library_index=("edge", li),
                            target_index=("edge", ti), Tp=np.asarray(lags))


def _flags(ds) -> dict:
    return {k: np.asarray(ds[k].values) for k in FLAGS}


def count_reasons(ds) -> np.ndarray:
    """Pairs per reason code 0..5 over every off-diagonal pair of an edge-list result (the
    listed pairs by their own reason, the others by the per-series rules)."""
    from ..core.pairs import count_outside

    N = ds.sizes["series"]
    li, ti = ds.library_index.values, ds.target_index.values
    # the listed pairs as a table: one row per library, padded with -1
    per = np.bincount(li, minlength=N)
    pairs = np.full((N, int(per.max(initial=0))), -1, np.int64)
    slot = np.arange(len(li)) - np.repeat(np.cumsum(per) - per, per)
    pairs[li, slot] = ti
    counts = count_outside(_flags(ds), pairs)
    counts += np.bincount(ds.undetermined_reason.values.astype(np.int64), minlength=6)[:6]
    return counts


def decide(ds, library, target) -> np.ndarray:
    """The decisions ("link", "no link", "undetermined") of pairs given by label (arrays
    of equal length) in an edge-list result, listed or not."""
    from ..core.pairs import outside_reasons

    pos = {v: k for k, v in enumerate(ds.series.values.tolist())}

    def index(labels, name):
        labels = np.atleast_1d(labels).tolist()
        bad = [v for v in labels if v not in pos]
        if bad:
            raise ValueError(f"decide: {name} {bad[:5]} are not series of this network "
                             f"(series: {list(pos)[:5]}...)")
        return np.array([pos[v] for v in labels], np.int64)

    i, j = index(library, "library"), index(target, "target")
    if len(i) != len(j):
        raise ValueError(f"decide: {len(i)} libraries and {len(j)} targets: give one "
                         "target per library")
    N = ds.sizes["series"]
    key = ds.library_index.values * N + ds.target_index.values
    order = np.argsort(key)
    want = i * N + j
    at = np.minimum(np.searchsorted(key[order], want), max(len(key) - 1, 0))
    listed = (len(key) > 0) & (key[order][at] == want) if len(key) else np.zeros(len(i), bool)
    out = decision_of(False, outside_reasons(_flags(ds), i, j))
    if listed.any():
        out[listed] = ds.decision.values[order[at[listed]]]
    return out


def to_dense(data: xr.Dataset, rho_lag=None, E_from: str | None = None) -> xr.Dataset:
    """The (library, target) matrices of an edge-list result of :func:`xedm.causal_network`
    (N^2 entries per variable: for networks that fit in memory).

    A pair the list does not hold gets no test's values (NaN p, q and gains; False flags;
    lag 0); its decision and ``undetermined_reason`` follow the per-series rules; ``rho``,
    ``best_Tp``, ``driver_Tp`` and ``rho_lag`` come from ``rho_lag`` (N, N, Tp), the cross
    maps of every pair, when given (causal_network's own dense result), else NaN.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.3)
    >>> edges = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0, result="edges")
    >>> dense = xedm.to_dense(edges)
    >>> bool(dense.link.sel(library="y", target="x"))
    True
    """
    if not isinstance(data, xr.Dataset) or "edge" not in data.dims or "series" not in data.dims:
        raise TypeError("to_dense takes the edge-list Dataset of xedm.causal_network(..., "
                        f"result='edges'), got {type(data).__name__}"
                        + (" (this one is dense already)" if isinstance(data, xr.Dataset)
                           and "library" in data.dims else ""))
    from ..core.network import lag_summary
    from ..core.pairs import outside_reasons
    from ..memory import check_memory

    N = data.sizes["series"]
    check_memory(float(N) * N * DENSE_BYTES, f"to_dense of a network of {N} series",
                 "keep the edge list, or select its pairs (data.where(data.link, drop=True))")
    labels = data.series.values
    li, ti = data.library_index.values, data.target_index.values
    lags = data.Tp.values
    E_from = data.attrs.get("E_from", "library") if E_from is None else E_from
    pair = ("library", "target")
    cond = "predictive" if "gain" in data else "partial"
    out = xr.Dataset()
    for k in names(cond):
        a = np.asarray(data[k].values)
        full = np.full((N, N), FILL[k], a.dtype)
        full[li, ti] = a
        out[k] = (pair, full)
    if "n_drivers" in data:  # a pair not tested: every selected driver of the library
        nd = np.asarray(data.n_drivers.values)
        tested = np.zeros((N, N), bool)
        tested[li, ti] = True
        out["n_conditions"] = (pair, np.where(tested, out["n_conditions"].values,
                                              nd[:, None]) * ~np.eye(N, dtype=bool))
    rl = np.full((N, N, len(lags)), np.nan)
    if rho_lag is not None:
        rl = np.asarray(rho_lag, np.float64)
        best, at = lag_summary(rl, lags)
        out["rho"] = (pair, np.take_along_axis(rl, at[..., None], -1)[..., 0])
        out["best_Tp"] = (pair, best)
        out["driver_Tp"] = (pair, np.asarray(lags)[at])
    else:
        rl[li, ti] = data.rho_lag.values
    rows, cols = np.divmod(np.arange(N * N), N)
    reason = outside_reasons(_flags(data), rows, cols).reshape(N, N)
    reason[li, ti] = data.undetermined_reason.values
    out["undetermined"] = (pair, reason > 0)
    out["decision"] = (pair, decision_of(out["link"].values, reason))
    out["undetermined_reason"] = (pair, reason.astype(np.int8))
    out["undetermined_reason"].attrs.update(reason_attrs())
    Es = np.asarray(data.E.values, np.int64)
    out["E"] = (pair, np.repeat(Es[:, None], N, 1) if E_from == "library"
                else np.repeat(Es[None, :], N, 0))
    out["rho_lag"] = (("library", "target", "Tp"), rl)
    out = out.assign_coords(library=labels, target=labels, Tp=lags)
    out.attrs.update({k: v for k, v in data.attrs.items() if k != "result"})
    out.attrs["result"] = "dense"
    return out
