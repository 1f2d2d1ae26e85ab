"""The xarray layer of cross mapping: ``ccm`` (library-size convergence) and ``xmap`` (the
all-pairs causal map)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..core import ccm as _ccm
from ..core import validate as v
from ..kernels import resolve_backend
from ..options import get_option
from .common import check_numeric, resolve_dim

_SER = "__xedm_series__"


def progress_bar(progress: bool | None, desc: str, total: int):
    """tqdm over series, shown only when the work outlasts two seconds (off: progress=False)."""
    show = get_option("progress") if progress is None else progress
    if not show:
        return iter

    def wrap(it):
        from tqdm.auto import tqdm

        n = len(it) if hasattr(it, "__len__") else total  # batches of series, or series
        return tqdm(it, desc=desc, total=n, delay=2.0, leave=False)

    return wrap


def _series(data, dim: str | None, columns, time_dim: str | None):
    """(X with dims (..., _SER, time), series labels, series dim name, time dim)."""
    if isinstance(data, xr.Dataset):
        if columns is None:
            raise ValueError(
                f"columns= is required on a Dataset: choose from {sorted(map(str, data.data_vars))}"
            )
        names = [columns] if isinstance(columns, str) else list(columns)
        for n in names:
            if n not in data.data_vars:
                raise ValueError(
                    f"unknown variable {n!r}; the Dataset has {sorted(map(str, data.data_vars))}"
                )
            check_numeric(data[n], n)
        if len(names) < 2:
            raise ValueError("cross mapping needs at least two variables in columns=")
        tdim = resolve_dim(data, time_dim)
        X = xr.concat([data[n] for n in names], dim=_SER, coords="minimal", compat="override",
                      join="outer")
        return X.transpose(..., _SER, tdim), names, "variable", tdim
    if not isinstance(data, xr.DataArray):
        raise TypeError(f"data must be an xarray DataArray or Dataset, got {type(data).__name__}")
    if columns is not None:
        raise TypeError("columns= chooses Dataset variables; on a DataArray pass dim=")
    check_numeric(data, str(data.name))
    tdim = resolve_dim(data, time_dim)
    if dim is None or dim not in data.dims or dim == tdim:
        raise ValueError(
            f"dim={dim!r} must name the series dimension of the DataArray (dims: "
            f"{list(data.dims)}), e.g. dim='neuron'"
        )
    labels = list(np.asarray(data[dim])) if dim in data.coords else list(range(data.sizes[dim]))
    return data.rename({dim: _SER}).transpose(..., _SER, tdim), labels, dim, tdim


def _E_per_series(E, n: int, name="E") -> np.ndarray:
    if np.ndim(E) == 0:
        return np.full(n, v.check_E(E), np.int64)
    arr = np.array([v.check_E(e) for e in np.asarray(E).tolist()], np.int64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be one int or one per series ({n}), got {len(arr)}")
    return arr


def _apply(X, tdim, func, out_dims, sizes, dtypes):
    def wrapped(xa):
        lead = xa.shape[:-2]
        flat = xa.reshape((-1,) + xa.shape[-2:])
        res = [func(s) for s in flat]
        return tuple(np.stack([r[i] for r in res]).reshape(lead + res[0][i].shape)
                     for i in range(len(out_dims)))

    if X.chunks is not None:
        X = X.chunk({tdim: -1, _SER: -1})
    return xr.apply_ufunc(
        wrapped, X, input_core_dims=[[_SER, tdim]], output_core_dims=out_dims,
        dask="parallelized", output_dtypes=dtypes,
        dask_gufunc_kwargs={"output_sizes": sizes},
    )


def ccm(
    data: xr.DataArray | xr.Dataset,
    columns: Sequence[str] | None = None,
    *,
    lib_sizes: Sequence[int],
    E: int | Sequence[int],
    samples: int = 100,
    seed: int | None = None,
    tau: int = 1,
    Tp: int = 0,
    exclusion_radius: int = 0,
    knn: int | None = None,
    keep_samples: bool = False,
    dim: str | None = None,
    time_dim: str | None = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Convergent cross mapping (Sugihara et al. 2012) for every ordered pair of series.

    ``rho(library=x, target=y)`` is the skill of x's shadow manifold at recovering y; if it
    rises with library size and saturates high, **y causes x** (arrow ``y → x``).

    Parameters
    ----------
    data : Dataset (variables chosen by ``columns``) or DataArray with a series dim ``dim``.
    lib_sizes : list of int
        Library sizes; sizes >= the number of valid library points use all of them (no draw).
    E : int or one int per series
        Embedding dimension of each library series.
    samples : int
        Random libraries per size, drawn without replacement (see :mod:`xedm.core.ccm`).
    seed : int, optional
        Seed of ``numpy.random.Generator(PCG64(seed))``; None draws one (recorded in attrs).
    keep_samples : bool
        Also return every sample's rho as ``rho_sample`` over a ``sample`` dim.
    Tp, tau, exclusion_radius, knn : as in :func:`xedm.simplex` (Tp defaults to 0).

    Returns
    -------
    Dataset with ``rho`` (library, target, lib_size): mean over samples.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(400)
    >>> out = ds.edm.ccm(["x", "y"], lib_sizes=[20, 100, 300], E=2, samples=20, seed=1)
    >>> out.rho.dims
    ('library', 'target', 'lib_size')
    """
    X, labels, sdim, tdim = _series(data, dim, columns, time_dim)
    n = len(labels)
    T = X.sizes[tdim]
    Ev = _E_per_series(E, n)
    tau = v.check_tau(tau)
    Tp = v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    samples = v.check_int("samples", samples, 1)
    sizes = v.check_int_list("lib_sizes", lib_sizes, 1)
    for e in np.unique(Ev):
        v.check_embedding_fits(int(e), tau, T)
        k = int(e) + 1 if knn is None else knn
        if sizes.min() < k:
            raise ValueError(f"lib_sizes must be >= knn ({k} for E={e}); got {sizes.min()}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    seed = v.check_int("seed", seed, 0)
    backend = resolve_backend(backend, ["sorted_table", "ccm_skill"])
    bar = progress_bar(progress, "ccm", n)

    def one(x2d):
        res = _ccm.ccm(x2d, E=Ev, tau=tau, Tp=Tp, knn=knn, excl=excl, lib_sizes=sizes,
                       samples=samples, seed=seed, backend=backend, progress=bar)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN pairs stay NaN
            mean = np.nanmean(res["rho"], axis=-1)
        return mean, res["rho"], res["n_valid"]

    rho, rho_s, n_valid = _apply(
        X, tdim, one, [["library", "target", "lib_size"],
                       ["library", "target", "lib_size", "sample"], ["library", "target"]],
        {"library": n, "target": n, "lib_size": len(sizes), "sample": samples},
        [float, float, np.int64])
    ds = xr.Dataset({"rho": rho, "n_valid": n_valid})
    if keep_samples:
        ds["rho_sample"] = rho_s
    ds = ds.assign_coords(library=labels, target=labels, lib_size=sizes,
                          E=("library", Ev))
    ds.attrs.update(tau=tau, Tp=Tp, exclusion_radius=excl, knn=-1 if knn is None else knn,
                    samples=samples, seed=seed, backend=backend, neighbors="exact",
                    series_dim=sdim, meaning="rho(library=x, target=y) high: y causes x")
    return ds


def xmap(
    data: xr.DataArray | xr.Dataset,
    dim: str | None = None,
    *,
    E: int | Sequence[int] | None = None,
    E_max: int = 10,
    columns: Sequence[str] | None = None,
    tau: int = 1,
    Tp: int = 0,
    exclusion_radius: int = 0,
    knn: int | None = None,
    time_dim: str | None = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """All-pairs cross map at the full library: the causal map of many series.

    ``rho(library=i, target=j)`` is the full-library cross-map skill of series i's manifold at
    recovering series j (high: j causes i).  As in kEDM, the pair uses the **target's** E,
    which is chosen per series by leave-one-out simplex (E = 1..E_max, Tp = 1, the same
    exclusion radius and knn) when ``E=None`` and returned as the coordinate ``E`` along
    ``target``.  The choice of E is one fused pass per series over every E (no tables, as
    :func:`xedm.embed_dimension`); the cross maps use one neighbour table per library series
    and E in use (all those E from one pass), reused for every target.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.many_series(5, 300, seed=0)
    >>> cmap = ds.x.edm.xmap(dim="series", E=2)
    >>> cmap.rho.dims
    ('library', 'target')
    """
    X, labels, sdim, tdim = _series(data, dim, columns, time_dim)
    n = len(labels)
    T = X.sizes[tdim]
    tau = v.check_tau(tau)
    Tp = v.check_Tp(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    backend = resolve_backend(backend, ["simplex_sweep", "knn_sweep", "knn_single", "xmap_skill"])
    if E is None:
        E_max = v.check_E(E_max)
        v.check_embedding_fits(E_max, tau, T)
    else:
        Ev = _E_per_series(E, n)
        v.check_embedding_fits(int(Ev.max()), tau, T)
    bar = progress_bar(progress, "xmap", n)

    def one(x2d):
        return _ccm.xmap(x2d, E=None if E is None else Ev, E_max=E_max, tau=tau, Tp=Tp,
                         knn=knn, excl=excl, backend=backend, progress=bar)

    rho, Es = _apply(X, tdim, one, [["library", "target"], ["target"]],
                     {"library": n, "target": n}, [float, np.int64])
    ds = xr.Dataset({"rho": rho}).assign_coords(library=labels, target=labels)
    if Es.ndim == 1:
        ds = ds.assign_coords(E=("target", np.asarray(Es)))
    else:
        ds["E"] = Es
    ds.attrs.update(tau=tau, Tp=Tp, exclusion_radius=excl, knn=-1 if knn is None else knn,
                    E_max=E_max if E is None else int(np.max(Ev)), E_chosen=int(E is None),
                    backend=backend, neighbors="exact", series_dim=sdim,
                    meaning="rho(library=i, target=j) high: j causes i; pair uses E[target]")
    return ds
