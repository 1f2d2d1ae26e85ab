"""The xarray layer of cross mapping: ``ccm`` (library-size convergence) and ``xmap`` (the
all-pairs causal map).  The parameters, per-block work and result assembly are in
:mod:`xedm.labeled.crossmap`."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import xarray as xr

from ..core.validate import renamed
from ..stats.significance import DEFAULT_QUANTILES
from .cross import CCM_DIMS, XMAP_DIMS, apply_cross
from .crossmap import (
    ccm_block,
    ccm_dataset,
    ccm_layout,
    ccm_params,
    xmap_block,
    xmap_dataset,
    xmap_layout,
    xmap_pair_blocks,
    xmap_params,
)
from .device import cupy_io
from .inputs import cross_series


@cupy_io
@renamed("dim", "series_dim", "the series dimension")
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
    series_dim: str | None = None,
    time_dim: str | None = None,
    backend: str | None = None,
    progress: bool | None = None,
    neighbors: str | None = None,
    neighbors_recall: float | None = None,
    E_from: str = "library",
    sampling: str = "xedm",
) -> xr.Dataset:
    """Convergent cross mapping (Sugihara et al. 2012) for every ordered pair of series.

    ``rho(library=x, target=y)`` is the skill of x's shadow manifold at recovering y; if it
    rises with library size and saturates high, **y causes x** (arrow ``y → x``).

    Parameters
    ----------
    data : Dataset or pandas DataFrame (variables chosen by ``columns``; a DataFrame's time
        column as in :func:`xedm.simplex`), or DataArray with a series dim.
        Numbers of any real dtype (integers and float16/float32 are cast to float64; the
        input is never modified); other dims broadcast; dask-backed data stay lazy.
    lib_sizes : int or list of int
        Distinct library sizes, each >= 2 and >= knn.  A list gives a ``lib_size`` dim (also
        a list of one); one int gives none (``lib_size`` is then a scalar coordinate, and
        ``float(out.rho.sel(library=..., target=...))`` a number), as for ``Tp``.  A size at
        or above a pair's number of valid library points (``n_valid``) uses all of them with
        no draw, so every sample of it is the same, and all such sizes give the same rho; a
        size above the number of time points is refused.
    E : int or one int per series
        Embedding dimension of each library series.
    samples : int
        Random libraries per size (>= 1), drawn without replacement (see
        :mod:`xedm.core.ccm`).  A number whose libraries and per-sample rho cannot fit in
        memory is refused.
    seed : int, optional
        Seed (>= 0) of ``numpy.random.Generator(PCG64(seed))`` for the libraries (and of the
        surrogates and the bootstrap); None draws one (recorded in attrs).
    sampling : {"xedm", "pyedm"}
        How the random libraries are drawn from ``seed``: "xedm" (Floyd's algorithm on one
        PCG64 stream) or "pyedm", pyEDM 2.5.7's libraries (for each size a fresh
        ``numpy.random.default_rng(seed)``, then ``choice(n, L, replace=False)`` per
        sample), so that with the same seed each sample's rho is pyEDM's
        (docs/from-pyedm.md).
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
    E_from : {"library", "target"}
        Whose E embeds the library of a pair: ``"library"`` (default: the library's own E,
        as CCM theory and pyEDM's CCM) or ``"target"`` (the target's E, as kEDM and
        :func:`xedm.xmap`'s default).  The coordinate ``E`` lies along that dim and
        ``attrs["E_from"]`` records the choice.
    series_dim, time_dim : str, optional
        As in :func:`xedm.xmap`.

    Returns
    -------
    Dataset
        One variable per entry below (``[, Tp]``: with a list of Tp; extra dims of the data
        lead), the coordinate ``E`` and the parameters in ``attrs``.
    rho : (library, target[, Tp], lib_size)
        Cross-map skill, the mean over the samples.
    n_valid : (library, target)
        The pair's valid library points.
    rho_sample : (library, target[, Tp], lib_size, sample)
        Every sample's rho (``keep_samples=True``).
    kendall_tau, kendall_p : (library, target[, Tp])
        With 3 or more lib_sizes: Kendall's tau of the mean rho against L and its one-sided
        p-value for a rise (:mod:`xedm.stats.convergence`).
    fisher_z, fisher_p : (library, target[, Tp])
        With 3 or more lib_sizes: Fisher z-test of rho at the largest against the smallest L
        (n = n_valid predictions), one-sided.
    rho_ci : (library, target[, Tp], lib_size, ci)
        With 3 or more lib_sizes: a 95% bootstrap interval of the mean over the samples
        (``ci`` = low, high).
    p_value : (library, target[, Tp], lib_size)
        With ``surrogates``: (1 + #{surrogate rho >= rho}) / (1 + n), one-sided.
    rho_null : (library, target[, Tp], lib_size, quantile)
        With ``surrogates``: the quantiles of the surrogates' rho.
    rho_surrogate : (library, target[, Tp], lib_size, surrogate)
        Every surrogate's rho (``keep_null=True``).

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
    X, labels, sdim, tdim = cross_series(data, series_dim, columns, time_dim, CCM_DIMS)
    p = ccm_params(labels, sdim, X.sizes[tdim], lib_sizes=lib_sizes, E=E, samples=samples,
                   seed=seed, tau=tau, Tp=Tp, exclusion_radius=exclusion_radius, knn=knn,
                   keep_samples=keep_samples, surrogates=surrogates,
                   surrogate_method=surrogate_method, quantiles=quantiles, keep_null=keep_null,
                   surrogate_options=surrogate_options, p_method=p_method, n_boot=n_boot,
                   backend=backend, progress=progress, neighbors=neighbors,
                   neighbors_recall=neighbors_recall, E_from=E_from, sampling=sampling)
    lazy = X.chunks is not None
    names, out_dims, sizes, dtypes = ccm_layout(p)
    res = apply_cross(X, tdim, partial(ccm_block, p), out_dims, sizes, dtypes,
                      p.checker("ccm", lazy))
    return ccm_dataset(p, names, res, lazy)


@cupy_io
@renamed("dim", "series_dim", "the series dimension")
def xmap(
    data: xr.DataArray | xr.Dataset,
    series_dim: str | None = None,
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
    E_from: str = "target",
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
    data : DataArray with a series dim, or Dataset or pandas DataFrame (variables chosen by
        ``columns``; a DataFrame's time column as in :func:`xedm.simplex`).
        Numbers of any real dtype (integers and float16/float32 are cast to float64; the
        input is never modified); other dims broadcast; dask-backed data stay lazy.
    series_dim : str, optional
        The dim that indexes the series of a DataArray (its labels must be distinct); by
        default ``"series"``, or the only dim besides time.  Not used with a Dataset (its
        series are the variables in ``columns``: giving it there is an error).  Its old name
        ``dim`` still works, with a FutureWarning, until the next release.
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
        ``"block"``, ``"twin"`` or ``"iaaft"``: see :func:`xedm.surrogates`.
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
        The time dim (default ``"time"``; a 1-D DataArray uses its only dim).
    neighbors, neighbors_recall : as in :func:`xedm.simplex`
        How the cross maps' neighbour tables are built (docs/neighbors.md); the choice of E
        is always exact (one fused pass, no tables).
    E_from : {"target", "library"}
        Whose E embeds the library of a pair: ``"target"`` (default, as kEDM) or
        ``"library"`` (the library's own E, as CCM theory and pyEDM's CCM; what
        :func:`xedm.causal_network` uses: one cross map per distinct E, so a little slower).
        The coordinate ``E`` lies along that dim and ``attrs["E_from"]`` records the choice.

    Returns
    -------
    Dataset
        One variable per entry below (``[, Tp]``: with a list of Tp; extra dims of the data
        lead), the coordinate ``E`` along ``target`` and the parameters in ``attrs``.
    rho : (library, target[, Tp])
        Cross-map skill of the target from the library's manifold.
    best_Tp : (library, target)
        With a list of Tp: the Tp of the highest rho.
    p_value : (library, target[, Tp])
        With ``surrogates``: (1 + #{surrogate rho >= rho}) / (1 + n), one-sided, over the
        surrogates whose rho is finite (``p_method="normal"``: the Fisher-z tail).
    q_value : (library, target[, Tp])
        With ``surrogates``: Benjamini-Hochberg over the off-diagonal pairs of the whole map
        (separately at each Tp); ``q_value <= 0.05`` keeps the expected share of false links
        among those flagged at 5%.
    rho_null : (library, target[, Tp], quantile)
        With ``surrogates``: the quantiles of the surrogates' rho.
    rho_surrogate : (library, target[, Tp], surrogate)
        Every surrogate's rho (``keep_null=True``).

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
    >>> cmap = ds.x.edm.xmap(series_dim="series", E=2)
    >>> cmap.rho.dims
    ('library', 'target')
    >>> sig = ds.x.edm.xmap(series_dim="series", E=2, surrogates=19, seed=0)
    >>> sorted(v for v in sig.data_vars)
    ['p_value', 'q_value', 'rho', 'rho_null']
    """
    X, labels, sdim, tdim = cross_series(data, series_dim, columns, time_dim, XMAP_DIMS)
    p = xmap_params(labels, sdim, X.sizes[tdim], E=E, E_max=E_max, tau=tau, Tp=Tp,
                    exclusion_radius=exclusion_radius, knn=knn, surrogates=surrogates,
                    surrogate_method=surrogate_method, seed=seed, quantiles=quantiles,
                    keep_null=keep_null, surrogate_options=surrogate_options, p_method=p_method,
                    backend=backend, progress=progress, neighbors=neighbors,
                    neighbors_recall=neighbors_recall, E_from=E_from)
    lazy = X.chunks is not None
    names, out_dims, sizes, dtypes = xmap_layout(p)
    if lazy and X.ndim == 2 and not p.n_sur and p.E_from == "target":
        # the pair space in (library x target) blocks, one task each (xedm.distributed)
        res = xmap_pair_blocks(p, X, tdim)
    else:
        res = apply_cross(X, tdim, partial(xmap_block, p), out_dims, sizes, dtypes,
                     p.checker("xmap", lazy))
    return xmap_dataset(p, names, res, lazy)
