"""The xarray layer of cross mapping: ``ccm`` (library-size convergence) and ``xmap`` (the
all-pairs causal map)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..core import ccm as _ccm
from ..core import validate as v
from ..kernels import resolve_backend
from ..neighbors.base import neighbor_attrs, resolve_method
from ..stats.convergence import convergence
from ..stats.significance import (
    DEFAULT_QUANTILES,
    bh_qvalues,
    nanmean,
    normal_p_values,
    null_summary,
    p_values,
)
from ..stats.surrogates import make_surrogates
from .common import one_time_chunk, progress_bar
from .cross import (
    _CCM_DIMS,
    _XMAP_DIMS,
    _apply,
    _best_Tp,
    _check_block,
    _check_exclusion,
    _check_library,
    _check_sample_cost,
    _check_significance,
    _check_surrogate_memory,
    _check_Tp_list,
    _E_per_series,
    _series,
    _significance_attrs,
)
from .device import cupy_io


@cupy_io
def ccm(
    data: xr.DataArray | xr.Dataset,
    columns: Sequence[str] | None = None,
    *,
    lib_sizes: Sequence[int],
    E: int | Sequence[int],
    samples: int = 100,
    seed: int | None = None,
    tau: int = 1,
    Tp: int | Sequence[int] = 0,
    exclusion_radius: int = 0,
    knn: int | None = None,
    keep_samples: bool = False,
    surrogates: int = 0,
    surrogate_method: str = "ebisuzaki",
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    keep_null: bool = False,
    surrogate_options: dict | None = None,
    p_method: str = "empirical",
    n_boot: int = 1000,
    dim: str | None = None,
    time_dim: str | None = None,
    backend: str | None = None,
    progress: bool | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
) -> xr.Dataset:
    """Convergent cross mapping (Sugihara et al. 2012) for every ordered pair of series.

    ``rho(library=x, target=y)`` is the skill of x's shadow manifold at recovering y; if it
    rises with library size and saturates high, **y causes x** (arrow ``y → x``).

    Parameters
    ----------
    data : Dataset (variables chosen by ``columns``) or DataArray with a series dim ``dim``.
        Numbers of any real dtype (integers and float16/float32 are cast to float64; the
        input is never modified); other dims broadcast; dask-backed data stay lazy.
    lib_sizes : list of int
        Distinct library sizes, each >= 2 and >= knn.  A size at or above a pair's number of
        valid library points (``n_valid``) uses all of them with no draw, so every sample of
        it is the same, and all such sizes give the same rho.
    E : int or one int per series
        Embedding dimension of each library series.
    samples : int
        Random libraries per size (>= 1), drawn without replacement (see
        :mod:`xedm.core.ccm`).  A number whose libraries and per-sample rho cannot fit in
        memory is refused.
    seed : int, optional
        Seed (>= 0) of ``numpy.random.Generator(PCG64(seed))`` for the libraries (and of the
        surrogates and the bootstrap); None draws one (recorded in attrs).
    keep_samples : bool
        Also return every sample's rho as ``rho_sample`` over a ``sample`` dim.
    neighbors, neighbors_recall : as in :func:`xedm.simplex`
        How each library series' sorted neighbour table is built (docs/neighbors.md).
    Tp : int or list of int
        Horizon (default 0).  A list gives time-lagged (extended) CCM (Ye et al. 2015): a
        ``Tp`` dim, one table and one set of sampled libraries for every lag (a pair's
        library points are then those valid at every Tp), and ``best_Tp`` per pair (at the
        largest lib_size).  A real driver peaks at Tp <= 0; a peak at Tp > 0 hints at a
        spurious link.
    tau, exclusion_radius, knn : as in :func:`xedm.simplex`.
        As there, the series (NaN-free) must give at least knn+1 library points (knn
        defaults to E+1) and every Tp must leave targets inside the data.
    surrogates, surrogate_method, quantiles, keep_null, surrogate_options, p_method
        Significance against surrogates of each target, as in :func:`xedm.xmap`: every
        surrogate is cross-mapped with the same tables and sampled libraries, and its rho
        averaged over the samples like the observed one.
    n_boot : int
        Bootstrap resamples of the samples for ``rho_ci`` (with 3 or more lib_sizes).

    Returns
    -------
    Dataset with ``rho`` (library, target[, Tp], lib_size): mean over samples; ``n_valid``
    (library, target): the pair's valid library points; with ``keep_samples``,
    ``rho_sample``.  With 3 or more lib_sizes, the convergence statistics of
    :mod:`xedm.stats.convergence`: ``kendall_tau``, ``kendall_p`` (Kendall's tau of mean
    rho against L, one-sided p for a rise), ``fisher_z``, ``fisher_p`` (Fisher z-test of rho
    at the largest against the smallest L, n = n_valid predictions), and ``rho_ci``
    (library, target[, Tp], lib_size, ci): a 95% bootstrap interval of the mean over the
    samples.  With ``surrogates``: ``p_value`` (library, target[, Tp], lib_size) =
    (1 + #{surrogate rho >= rho}) / (1 + n) and ``rho_null`` (..., lib_size, quantile).

    Raises
    ------
    ValueError
        For parameters the data cannot honour (see above; an exclusion radius that leaves no
        neighbour), dims named like the result's (``library``, ``target``, ``lib_size``,
        ``sample``, ``E``), repeated series labels or columns, an empty series or time dim,
        and when no pair has a single finite rho (e.g. all-NaN or constant data).  With
        dask-backed data, the checks that need values run per chunk at compute time, and warn
        (UserWarning) instead of raising.
    TypeError
        For non-numeric data or parameters of the wrong type.

    Notes
    -----
    A series that is all NaN gets NaN in its row (library) and column (target), with a
    warning naming it; the other pairs are computed as if it were not there.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(400)
    >>> out = ds.edm.ccm(["x", "y"], lib_sizes=[20, 100, 300], E=2, samples=20, seed=1)
    >>> out.rho.dims
    ('library', 'target', 'lib_size')
    >>> float(out.kendall_tau.sel(library="y", target="x")) > 0.5  # rho rises with L
    True
    """
    X, labels, sdim, tdim = _series(data, dim, columns, time_dim, _CCM_DIMS)
    n = len(labels)
    T = X.sizes[tdim]
    Ev = _E_per_series(E, n)
    tau = v.check_tau(tau)
    Tps, lagged = _check_Tp_list(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    samples = v.check_int("samples", samples, 1)
    sizes = v.check_int_list("lib_sizes", lib_sizes, 1)
    n_boot = v.check_int("n_boot", n_boot, 1)
    for e in np.unique(Ev).tolist():
        for tp in Tps.tolist():
            _check_library(T, e, tau, tp, knn)
            _check_exclusion(T, e, tau, tp, excl)
        k = e + 1 if knn is None else knn
        if sizes.min() < max(k, 2):
            why = ("" if k >= 2 else ": a library of one point predicts the same value "
                   "everywhere, which has no correlation")
            raise ValueError(f"lib_sizes must be >= knn ({k} for E={e}) and >= 2{why}; "
                             f"got {sizes.min()}")
    keep_samples = v.check_bool("keep_samples", keep_samples)
    keep_null = v.check_bool("keep_null", keep_null)
    _check_sample_cost(n, T, sizes, samples, int(Ev.max()) + 1 if knn is None else knn,
                       len(Tps), n_boot)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    seed = v.check_int("seed", seed, 0)
    sig = _check_significance(surrogates, surrogate_method, seed, quantiles, surrogate_options,
                              p_method)
    _check_surrogate_memory(n, T, sig["n"], len(Tps), keep_null)
    backend = resolve_backend(backend, ["sorted_table", "ccm_skill"], n * T * T)
    search = resolve_method(neighbors, n_lib=T, dim=int(Ev.max()),
                            knn=int(Ev.max()) + 1 if knn is None else knn, n_pred=T,
                            backend=backend, recall=neighbors_recall)
    bar = progress_bar(progress, "ccm", n)
    Tp_text = Tps.tolist() if lagged else int(Tps[0])
    params = (f"E={Ev.tolist() if len(np.unique(Ev)) > 1 else int(Ev[0])}, tau={tau}, "
              f"Tp={Tp_text}, knn={knn}, exclusion_radius={excl}, lib_sizes={sizes.tolist()}")
    n_sur, nq, nTp = sig["n"], len(sig["quantiles"]), len(Tps)
    conv = len(sizes) >= 3

    def one(x2d):
        S = None
        if n_sur:
            S, _ = make_surrogates(x2d, sig["method"], n_sur, sig["seed"], **sig["options"])
        res = _ccm.ccm(x2d, E=Ev, tau=tau, Tp=Tps, knn=knn, excl=excl, lib_sizes=sizes,
                       samples=samples, seed=seed, backend=backend, progress=bar, S=S,
                       method=search)
        rho_s = res["rho"]
        mean = nanmean(rho_s, axis=-1)
        out = [rho_s, mean, res["n_valid"]]
        if conv:
            st = convergence(rho_s, sizes, res["n_valid"][:, :, None], seed, n_boot)
            out += [st["kendall_tau"], st["kendall_p"], st["fisher_z"], st["fisher_p"],
                    st["rho_ci"]]
        if n_sur:
            null = res["rho_null"]
            ge, nf, q, zm, zs = null_summary(mean.ravel(), null.reshape(-1, n_sur),
                                             sig["quantiles"])
            if sig["p_method"] == "normal":
                p = normal_p_values(mean, zm.reshape(mean.shape), zs.reshape(mean.shape))
            else:
                p = p_values(mean, ge.reshape(mean.shape), nf.reshape(mean.shape))
            out += [p, q.reshape(mean.shape + (nq,))]
            if keep_null:
                out.append(null)
        return tuple(out)

    def check(xa, rho_s):
        _check_block(xa, rho_s, labels, sdim, "ccm", params, X.chunks is not None)

    pairs = ["library", "target", "Tp"]
    out_dims = [pairs + ["lib_size", "sample"], pairs + ["lib_size"], ["library", "target"]]
    names = ["rho_sample", "rho", "n_valid"]
    dtypes = [float, float, np.int64]
    if conv:
        out_dims += [pairs] * 4 + [pairs + ["lib_size", "ci"]]
        names += ["kendall_tau", "kendall_p", "fisher_z", "fisher_p", "rho_ci"]
        dtypes += [float] * 5
    if n_sur:
        out_dims += [pairs + ["lib_size"], pairs + ["lib_size", "quantile"]]
        names += ["p_value", "rho_null"]
        dtypes += [float, float]
        if keep_null:
            out_dims.append(pairs + ["lib_size", "surrogate"])
            names.append("rho_surrogate")
            dtypes.append(float)
    res = _apply(X, tdim, one, out_dims,
                 {"library": n, "target": n, "Tp": nTp, "lib_size": len(sizes),
                  "sample": samples, "ci": 2, "quantile": nq, "surrogate": n_sur},
                 dtypes, check)
    ds = xr.Dataset(dict(zip(names, res, strict=True)))
    if not keep_samples:
        ds = ds.drop_vars("rho_sample")
    ds = ds.assign_coords(library=labels, target=labels, lib_size=sizes, Tp=Tps,
                          E=("library", Ev))
    if conv:
        ds = ds.assign_coords(ci=["low", "high"])
    if n_sur:
        ds = ds.assign_coords(quantile=list(sig["quantiles"]))
        if keep_null:
            ds = ds.assign_coords(surrogate=np.arange(n_sur))
    if lagged:
        ds["best_Tp"] = _best_Tp(ds.rho.isel(lib_size=int(np.argmax(sizes))))
    else:
        ds = ds.squeeze("Tp", drop=True)
    ds.attrs.update(tau=tau, Tp=Tp_text, exclusion_radius=excl,
                    knn=-1 if knn is None else knn, samples=samples, seed=seed,
                    backend=backend, **neighbor_attrs(search, X.chunks is not None),
                    series_dim=sdim,
                    meaning="rho(library=x, target=y) high: y causes x")
    if conv:
        ds.attrs.update(n_boot=n_boot, convergence=(
            "kendall_*: Kendall's tau of mean rho vs lib_size, one-sided p (rising); "
            "fisher_*: z-test of rho at the largest vs the smallest lib_size, n = n_valid, "
            "one-sided p; rho_ci: 95% percentile bootstrap of the mean over samples"))
    if n_sur:
        ds.attrs.update(_significance_attrs(sig))
    ds.attrs["xedm_function"] = "ccm"
    return ds


@cupy_io
def xmap(
    data: xr.DataArray | xr.Dataset,
    dim: str | None = None,
    *,
    E: int | Sequence[int] | None = None,
    E_max: int = 10,
    columns: Sequence[str] | None = None,
    tau: int = 1,
    Tp: int | Sequence[int] = 0,
    exclusion_radius: int = 0,
    knn: int | None = None,
    surrogates: int = 0,
    surrogate_method: str = "ebisuzaki",
    seed: int | None = None,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    keep_null: bool = False,
    surrogate_options: dict | None = None,
    p_method: str = "empirical",
    time_dim: str | None = None,
    backend: str | None = None,
    progress: bool | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
) -> xr.Dataset:
    """All-pairs cross map at the full library: the causal map of many series.

    ``rho(library=i, target=j)`` is the full-library cross-map skill of series i's manifold at
    recovering series j (high: j causes i).  As in kEDM, the pair uses the **target's** E,
    which is chosen per series by leave-one-out simplex (E = 1..E_max, Tp = 1, the same
    exclusion radius and knn) when ``E=None`` and returned as the coordinate ``E`` along
    ``target``.  The choice of E is one fused pass per series over every E (no tables, as
    :func:`xedm.embed_dimension`); the cross maps use one neighbour table per library series
    and E in use (all those E from one pass), reused for every target.

    Parameters
    ----------
    data : DataArray with a series dim ``dim``, or Dataset (variables chosen by ``columns``).
        Numbers of any real dtype (integers and float16/float32 are cast to float64; the
        input is never modified); other dims broadcast; dask-backed data stay lazy.
    dim : str
        The dim that indexes the series (DataArray); its labels must be distinct.
    E : int or one int per series, optional
        The E of each series (used when it is the target); None chooses it.
    E_max : int
        Largest E tried when ``E=None`` (>= 1).
    columns : list of str
        The variables of a Dataset, each a series (at least two, each once).
    Tp : int or list of int
        Horizon (default 0): library state at t cross-maps the target at t + Tp.  A list
        gives time-lagged (extended) CCM (Ye et al. 2015): a ``Tp`` dim from the same
        neighbour tables, and ``best_Tp`` per pair.  A real driver j of i peaks at Tp <= 0
        (the library recovers the cause's past best); a peak at Tp > 0 hints at a spurious
        link (e.g. strong forcing or synchrony).
    tau, exclusion_radius, knn : as in :func:`xedm.simplex`.
        The series (NaN-free) must give at least knn+1 library points for every E in use (for
        ``E=None``: for E_max, at Tp = 1 and at every ``Tp``), and every Tp must leave targets
        inside the data.
    surrogates : int
        Number of surrogates of each target series (0: none).  Each pair's surrogate cross
        maps reuse the library's neighbour tables (only the target changes), and the result
        gains ``p_value``, ``q_value`` and ``rho_null`` (see Returns).  99 or more are usual.
    surrogate_method : str
        ``"ebisuzaki"`` (default: same amplitude spectrum), ``"shuffle"``, ``"seasonal"``,
        ``"block"`` or ``"twin"``: see :func:`xedm.surrogates`.
    seed : int, optional
        Seed of the surrogates (>= 0); None draws one (recorded in attrs).
    quantiles : list of float
        Quantiles of the surrogate rho reported as ``rho_null`` over a ``quantile`` dim.
    keep_null : bool
        Also return every surrogate's rho as ``rho_surrogate`` over a ``surrogate`` dim.
    surrogate_options : dict, optional
        The method's parameters: ``period`` (and ``harmonics``) for seasonal, ``block_length``
        for block, ``E``, ``tau``, ``recurrence_rate`` or ``eps``, ``norm`` for twin.
    p_method : {"empirical", "normal"}
        ``"empirical"``: the rank of rho among the surrogates' (below).  ``"normal"``: the
        upper tail of a normal fitted to the surrogates' Fisher z = atanh(rho),
        ``P(Z >= (atanh(rho) - mean) / sd)``: not bounded below by 1 / (1 + n), so a large
        map can pass the false-discovery control with 99 surrogates (with the empirical
        p-value BH needs n of the order of the number of pairs over the FDR level).
    time_dim : str, optional
        The time dim (default ``"time"``).
    neighbors, neighbors_recall : as in :func:`xedm.simplex`
        How the cross maps' neighbour tables are built (docs/neighbors.md); the choice of E
        is always exact (one fused pass, no tables).

    Returns
    -------
    Dataset with ``rho`` (library, target[, Tp]) and the coordinate ``E`` along ``target``;
    with a list of Tp, ``best_Tp`` (library, target): the Tp of the highest rho.  With
    ``surrogates``: ``p_value`` = (1 + #{surrogate rho >= rho}) / (1 + n) (one-sided, over
    the surrogates whose rho is finite); ``q_value``: Benjamini-Hochberg over the
    off-diagonal pairs of the whole map (separately at each Tp), so ``q_value <= 0.05``
    keeps the expected share of false links among those flagged at 5%; ``rho_null``
    (library, target[, Tp], quantile): the null's quantiles.

    Raises
    ------
    ValueError
        For parameters the data cannot honour (see above; an exclusion radius that leaves no
        neighbour), dims named like the result's (``library``, ``target``, ``E``), repeated
        series labels or columns, an empty series or time dim, and when no pair has a finite
        rho (e.g. all-NaN or constant data).  With dask-backed data, the checks that need
        values run per chunk at compute time, and warn (UserWarning) instead of raising.
    TypeError
        For non-numeric data or parameters of the wrong type.

    Notes
    -----
    A series that is all NaN gets NaN in its row (library) and column (target), with a
    warning naming it, and E = 1 when E is chosen; the other pairs are computed as if it were
    not there.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.many_series(5, 300, seed=0)
    >>> cmap = ds.x.edm.xmap(dim="series", E=2)
    >>> cmap.rho.dims
    ('library', 'target')
    >>> sig = ds.x.edm.xmap(dim="series", E=2, surrogates=19, seed=0)
    >>> sorted(v for v in sig.data_vars)
    ['p_value', 'q_value', 'rho', 'rho_null']
    """
    X, labels, sdim, tdim = _series(data, dim, columns, time_dim, _XMAP_DIMS)
    n = len(labels)
    T = X.sizes[tdim]
    tau = v.check_tau(tau)
    Tps, lagged = _check_Tp_list(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    keep_null = v.check_bool("keep_null", keep_null)
    sig = _check_significance(surrogates, surrogate_method, seed, quantiles, surrogate_options,
                              p_method)
    backend = resolve_backend(backend, ["simplex_sweep", "knn_sweep", "knn_single", "xmap_skill"],
                              n * T * T)
    if E is None:
        E_max = v.check_int("E_max", E_max, 1,
                            " (E_max is the largest embedding dimension tried: use 1 or more)")
        # every E up to E_max may be chosen (at Tp = 1) and then used for the cross maps
        _check_library(T, E_max, tau, 1, knn, "E_max")
        for tp in Tps:
            _check_library(T, E_max, tau, tp, knn, "E_max")
            _check_exclusion(T, 1, tau, tp, excl)
        E_text = f"E chosen in 1..{E_max}"
    else:
        Ev = _E_per_series(E, n)
        for e in np.unique(Ev).tolist():
            for tp in Tps:
                _check_library(T, e, tau, tp, knn)
                _check_exclusion(T, e, tau, tp, excl)
        E_text = f"E={Ev.tolist() if len(np.unique(Ev)) > 1 else int(Ev[0])}"
    Tp_text = Tps.tolist() if lagged else int(Tps[0])
    params = f"{E_text}, tau={tau}, Tp={Tp_text}, knn={knn}, exclusion_radius={excl}"
    _check_surrogate_memory(n, T, sig["n"], len(Tps), keep_null)
    E_top = int(E_max) if E is None else int(np.max(Ev))
    search = resolve_method(neighbors, n_lib=T, dim=E_top, knn=E_top + 1 if knn is None else knn,
                            n_pred=T, backend=backend, recall=neighbors_recall)
    bar = progress_bar(progress, "xmap", n)
    nTp, nq, n_sur = len(Tps), len(sig["quantiles"]), sig["n"]

    def run(x, E_live):
        S = None
        if n_sur:
            S, _ = make_surrogates(x, sig["method"], n_sur, sig["seed"], **sig["options"])
        return _ccm.xmap(x, E=E_live, E_max=E_max, tau=tau, Tp=Tps,
                         knn=knn, excl=excl, backend=backend, progress=bar, S=S,
                         quantiles=sig["quantiles"], keep_null=keep_null, method=search)

    def one(x2d):
        live = np.isfinite(x2d).any(axis=1)
        # all-NaN series (warned about in check) stay out of the computation: their rows and
        # columns are NaN, their E the smallest (1) when E is chosen
        res = (run(np.ascontiguousarray(x2d[live]), None if E is None else Ev[live])
               if live.any() else None)
        rho = np.full((n, n, nTp), np.nan)
        Es = np.ones(n, np.int64) if E is None else Ev.copy()
        out = [rho, Es]
        pair = np.ix_(live, live)
        if res is not None:
            rho[pair] = res["rho"]
            Es[live] = res["E"]
        if n_sur:
            ge = np.zeros((n, n, nTp), np.int64)
            nn = np.zeros((n, n, nTp), np.int64)
            qn = np.full((n, n, nTp, nq), np.nan)
            zm = np.full((n, n, nTp), np.nan)
            zs = np.full((n, n, nTp), np.nan)
            if res is not None:
                ge[pair], nn[pair], qn[pair] = res["count_ge"], res["n_null"], res["null_q"]
                zm[pair], zs[pair] = res["z_mean"], res["z_sd"]
            if sig["p_method"] == "normal":
                p = normal_p_values(rho, zm, zs)
            else:
                p = p_values(rho, ge, nn)
            off = ~np.eye(n, dtype=bool)
            q = np.stack([bh_qvalues(p[:, :, t], off) for t in range(nTp)], axis=-1)
            out += [p, q, qn]
            if keep_null:
                rn = np.full((n, n, nTp, n_sur), np.nan)
                if res is not None:
                    rn[pair] = res["rho_null"]
                out.append(rn)
        return tuple(out)

    def check(xa, rho):
        _check_block(xa, rho, labels, sdim, "xmap", params, X.chunks is not None)

    pairs = ["library", "target", "Tp"]
    out_dims = [pairs, ["target"]]
    dtypes = [float, np.int64]
    if n_sur:
        out_dims += [pairs, pairs, pairs + ["quantile"]]
        dtypes += [float, float, float]
        if keep_null:
            out_dims.append(pairs + ["surrogate"])
            dtypes.append(float)
    sizes = {"library": n, "target": n, "Tp": nTp, "quantile": nq, "surrogate": n_sur}
    if X.chunks is not None and X.ndim == 2 and not n_sur:
        # the pair space in (library x target) blocks, one task each (xedm.distributed)
        from ..distributed import xmap_blocks

        X = one_time_chunk(X, tdim, "xmap")
        rho, Es = xmap_blocks(X.data, E=None if E is None else Ev, E_max=E_max, tau=tau, Tp=Tps,
                              knn=knn, excl=excl, backend=backend, method=search.method,
                              recall=search.recall, labels=labels)
        rho = rho.map_blocks(_pair_block_check(labels, params), dtype=rho.dtype)
        res = [xr.DataArray(rho, dims=pairs), xr.DataArray(Es, dims=["target"])]
    else:
        res = _apply(X, tdim, one, out_dims, sizes, dtypes, check)
    rho, Es = res[0], res[1]
    ds = xr.Dataset({"rho": rho})
    if n_sur:
        ds["p_value"], ds["q_value"], ds["rho_null"] = res[2], res[3], res[4]
        if keep_null:
            ds["rho_surrogate"] = res[5]
    ds = ds.assign_coords(library=labels, target=labels, Tp=Tps)
    if n_sur:
        ds = ds.assign_coords(quantile=list(sig["quantiles"]))
        if keep_null:
            ds = ds.assign_coords(surrogate=np.arange(n_sur))
    if Es.ndim == 1:
        ds = ds.assign_coords(E=("target", Es.data))  # dask-backed data: stays lazy
    else:
        ds["E"] = Es
    if lagged:
        ds["best_Tp"] = _best_Tp(ds.rho)
    else:
        ds = ds.squeeze("Tp", drop=True)
    ds.attrs.update(tau=tau, Tp=Tp_text, exclusion_radius=excl,
                    knn=-1 if knn is None else knn,
                    E_max=E_max if E is None else int(np.max(Ev)), E_chosen=int(E is None),
                    backend=backend, **neighbor_attrs(search, X.chunks is not None),
                    series_dim=sdim,
                    meaning="rho(library=i, target=j) high: j causes i; pair uses E[target]")
    if n_sur:
        ds.attrs.update(_significance_attrs(sig))
        ds.attrs["fdr_family"] = ("q_value: Benjamini-Hochberg over the off-diagonal "
                                  "(library, target) pairs of the map"
                                  + (", separately at each Tp" if lagged else ""))
    ds.attrs["xedm_function"] = "xmap"
    return ds


def _pair_block_check(labels, params: str):
    """A map_blocks function for the (library, target, Tp) blocks of a distributed xmap: a
    block without one finite rho warns at compute time, naming its pairs (the in-memory
    call raises; a lazy one must not lose the other blocks)."""
    import warnings

    from .common import user_stacklevel as _stacklevel

    def show(part):
        part = [x.item() if isinstance(x, np.generic) else x for x in part]
        return str(part) if len(part) <= 4 else f"[{part[0]!r}, ..., {part[-1]!r}]"

    def check(block, block_info=None):
        if block.size and not np.isfinite(block).any():
            where = ""
            if block_info and 0 in block_info:
                (a0, a1), (b0, b1) = block_info[0]["array-location"][:2]
                where = (f" (library {show(labels[a0:a1])} x target {show(labels[b0:b1])}, one "
                         "dask block of the result)")
            warnings.warn(
                f"xmap{where}: no (library, target) pair has a finite rho for {params}: the "
                "series are all NaN, or too short, too gappy (NaN) or constant for these "
                "parameters", UserWarning, stacklevel=_stacklevel())
        return block

    return check
