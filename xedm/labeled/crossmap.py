"""The parts of :func:`xedm.ccm` and :func:`xedm.xmap` below their entry points: the checked
parameters (one frozen dataclass each, built by one function), the numeric work on one
(series, time) block, the result's layout, and the Dataset assembly (coords and attrs)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..core import ccm as _ccm
from ..core import validate as v
from ..core.ccm import SAMPLINGS
from ..core.network import library_E_xmap
from ..kernels import resolve_backend
from ..neighbors.base import neighbor_attrs, resolve_method
from ..stats.convergence import convergence
from ..stats.significance import (
    map_qvalues,
    nanmean,
    null_significance,
    surrogate_p_values,
)
from ..stats.surrogates import make_surrogates
from .checks import (
    E_per_series,
    check_E_from,
    check_library_points,
    check_sample_cost,
    check_series_exclusion,
    check_significance,
    check_surrogate_cost,
    check_Tp_list,
)
from .cross import (
    _any_finite,
    any_finite_rows,
    best_Tp,
    check_block_result,
    significance_attrs,
)
from .inputs import one_time_chunk, progress_bar, user_stacklevel

_PAIRS = ["library", "target", "Tp"]


@dataclass(frozen=True, eq=False)
class CrossParams:
    """The checked parameters of a cross map shared by ccm and xmap."""

    labels: object  # the series labels (library and target coords)
    sdim: str  # the series dim of the input
    n: int  # number of series
    Ev: np.ndarray | None  # E per series (None: xmap chooses it)
    tau: int
    Tps: np.ndarray  # the horizons, int64
    lagged: bool  # Tp given as a list: a Tp dim and best_Tp
    knn: int | None
    excl: int
    keep_null: bool
    sig: dict  # the surrogate settings (:func:`~xedm.labeled.checks.check_significance`)
    backend: str
    search: object  # the neighbour method (:func:`xedm.neighbors.base.resolve_method`)
    bar: Callable  # progress over series
    text: str  # the parameters as the warnings and errors name them

    @property
    def Tp_text(self):
        return self.Tps.tolist() if self.lagged else int(self.Tps[0])

    @property
    def n_sur(self) -> int:
        return self.sig["n"]

    @property
    def sizes(self) -> dict:
        """Sizes of the result's dims."""
        return {"library": self.n, "target": self.n, "Tp": len(self.Tps),
                "quantile": len(self.sig["quantiles"]), "surrogate": self.n_sur}

    def checker(self, what: str, lazy: bool) -> Callable:
        """The per-block check of :func:`~xedm.labeled.cross.apply_cross`."""
        def check(xa, rho):
            check_block_result(xa, rho, self.labels, self.sdim, what, self.text, lazy)
        return check

    def surrogates(self, x):
        """The surrogates of every series of ``x`` (None without significance)."""
        if not self.n_sur:
            return None
        S, _ = make_surrogates(x, self.sig["method"], self.n_sur, self.sig["seed"],
                               **self.sig["options"])
        return S


@dataclass(frozen=True, eq=False)
class CCMParams(CrossParams):
    lib_sizes: np.ndarray
    samples: int
    seed: int
    n_boot: int
    keep_samples: bool
    E_from: str = "library"  # whose E embeds the library of a pair
    one_size: bool = False  # lib_sizes given as one int: no lib_size dim (as Tp)
    sampling: str = "xedm"  # how the random libraries are drawn (xedm.core.ccm)

    @property
    def conv(self) -> bool:
        """Three or more library sizes: the convergence statistics."""
        return len(self.lib_sizes) >= 3


@dataclass(frozen=True, eq=False)
class XmapParams(CrossParams):
    E_max: int  # as given when E is given (then unchecked and unused by the cross maps)
    E_from: str = "target"  # whose E embeds the library of a pair


def _check_E(T, Ev, tau, tps, knn, excl):
    """The library and exclusion checks of every distinct E in ``Ev`` at every Tp of ``tps``."""
    for e in np.unique(Ev).tolist():
        for tp in tps:
            check_library_points(T, e, tau, tp, knn)
            check_series_exclusion(T, e, tau, tp, excl)


def _E_text(Ev) -> str:
    return f"E={Ev.tolist() if len(np.unique(Ev)) > 1 else int(Ev[0])}"


def ccm_params(labels, sdim, T, *, lib_sizes, E, samples, seed, tau, Tp, exclusion_radius,
               knn, keep_samples, surrogates, surrogate_method, quantiles, keep_null,
               surrogate_options, p_method, n_boot, backend, progress, neighbors,
               neighbors_recall, E_from="library", sampling="xedm") -> CCMParams:
    """Check the parameters of :func:`xedm.ccm` for n = len(labels) series of T points."""
    n = len(labels)
    E_from = check_E_from(E_from)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling={sampling!r}: use 'xedm' (Floyd's draws) or 'pyedm' "
                         "(pyEDM 2.5.7's libraries for the same seed)")
    Ev = E_per_series(E, n)
    tau = v.check_tau(tau)
    Tps, lagged = check_Tp_list(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    samples = v.check_int("samples", samples, 1)
    sizes = v.check_int_list("lib_sizes", lib_sizes, 1)
    n_boot = v.check_int("n_boot", n_boot, 1)
    for e in np.unique(Ev).tolist():
        _check_E(T, np.array([e]), tau, Tps.tolist(), knn, excl)
        k = e + 1 if knn is None else knn
        if sizes.min() < max(k, 2):
            why = ("" if k >= 2 else ": a library of one point predicts the same value "
                   "everywhere, which has no correlation")
            raise ValueError(f"lib_sizes must be >= knn ({k} for E={e}) and >= 2{why}; "
                             f"got {sizes.min()}")
    if sizes.max() > T:
        raise ValueError(f"lib_sizes={sizes.tolist()}: {sizes.max()} is larger than the data "
                         f"({T} time points); a library holds at most every state: use sizes "
                         f"up to {T}")
    keep_samples = v.check_bool("keep_samples", keep_samples)
    keep_null = v.check_bool("keep_null", keep_null)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    seed = v.check_int("seed", seed, 0)
    sig = check_significance(surrogates, surrogate_method, seed, quantiles, surrogate_options,
                              p_method)
    backend = resolve_backend(backend, ["sorted_table", "ccm_skill"], n * T * T)
    check_sample_cost(n, T, sizes, samples, int(Ev.max()) + 1 if knn is None else knn,
                      len(Tps), n_boot, backend)
    check_surrogate_cost(n, T, sig["n"], len(Tps), keep_null, backend)
    search = resolve_method(neighbors, n_lib=T, dim=int(Ev.max()),
                            knn=int(Ev.max()) + 1 if knn is None else knn, n_pred=T,
                            backend=backend, recall=neighbors_recall)
    bar = progress_bar(progress, "ccm", n)
    Tp_text = Tps.tolist() if lagged else int(Tps[0])
    text = (f"{_E_text(Ev)}, tau={tau}, Tp={Tp_text}, knn={knn}, exclusion_radius={excl}, "
            f"lib_sizes={sizes.tolist()}")
    return CCMParams(labels, sdim, n, Ev, tau, Tps, lagged, knn, excl, keep_null, sig, backend,
                     search, bar, text, sizes, samples, seed, n_boot, keep_samples, E_from,
                     one_size=np.ndim(lib_sizes) == 0, sampling=sampling)


def ccm_block(p: CCMParams, x2d: np.ndarray) -> tuple:
    """ccm of one (series, time) block: the arrays of :func:`ccm_layout`, in its order."""
    S = p.surrogates(x2d)

    def run(Ev):
        return _ccm.ccm(x2d, E=Ev, tau=p.tau, Tp=p.Tps, knn=p.knn, excl=p.excl,
                        lib_sizes=p.lib_sizes, samples=p.samples, seed=p.seed,
                        backend=p.backend, progress=p.bar, S=S, method=p.search,
                        sampling=p.sampling)

    if p.E_from == "library":
        res = run(p.Ev)
    else:  # the target's E: one run per distinct E, its targets' columns kept
        res = None
        for e in np.unique(p.Ev).tolist():
            part, cols = run(np.full(p.n, e, np.int64)), p.Ev == e
            if res is None:
                res = part
            for key, val in part.items():
                res[key][:, cols] = val[:, cols]
    rho_s = res["rho"]
    mean = nanmean(rho_s, axis=-1)
    out = [rho_s, mean, res["n_valid"]]
    if p.conv:
        st = convergence(rho_s, p.lib_sizes, res["n_valid"][:, :, None], p.seed, p.n_boot)
        out += [st["kendall_tau"], st["kendall_p"], st["fisher_z"], st["fisher_p"],
                st["rho_ci"]]
    if p.n_sur:
        null = res["rho_null"]
        out += list(null_significance(mean, null, p.sig["quantiles"], p.sig["p_method"]))
        if p.keep_null:
            out.append(null)
    return tuple(out)


def ccm_layout(p: CCMParams) -> tuple[list, list, dict, list]:
    """Names, dims, dim sizes and dtypes of the outputs of :func:`ccm_block`."""
    out_dims = [_PAIRS + ["lib_size", "sample"], _PAIRS + ["lib_size"], ["library", "target"]]
    names = ["rho_sample", "rho", "n_valid"]
    dtypes = [float, float, np.int64]
    if p.conv:
        out_dims += [_PAIRS] * 4 + [_PAIRS + ["lib_size", "ci"]]
        names += ["kendall_tau", "kendall_p", "fisher_z", "fisher_p", "rho_ci"]
        dtypes += [float] * 5
    if p.n_sur:
        out_dims += [_PAIRS + ["lib_size"], _PAIRS + ["lib_size", "quantile"]]
        names += ["p_value", "rho_null"]
        dtypes += [float, float]
        if p.keep_null:
            out_dims.append(_PAIRS + ["lib_size", "surrogate"])
            names.append("rho_surrogate")
            dtypes.append(float)
    sizes = {**p.sizes, "lib_size": len(p.lib_sizes), "sample": p.samples, "ci": 2}
    return names, out_dims, sizes, dtypes


def ccm_dataset(p: CCMParams, names, res, lazy: bool) -> xr.Dataset:
    """The Dataset of :func:`xedm.ccm` from the outputs ``res`` named ``names``."""
    ds = xr.Dataset(dict(zip(names, res, strict=True)))
    if not p.keep_samples:
        ds = ds.drop_vars("rho_sample")
    ds = ds.assign_coords(library=p.labels, target=p.labels, lib_size=p.lib_sizes, Tp=p.Tps,
                          E=(p.E_from, p.Ev))
    if p.conv:
        ds = ds.assign_coords(ci=["low", "high"])
    ds = ds.assign_coords(_null_coords(p))
    if p.lagged:
        ds["best_Tp"] = best_Tp(ds.rho.isel(lib_size=int(np.argmax(p.lib_sizes))))
    else:
        ds = ds.squeeze("Tp", drop=True)
    if p.one_size:
        ds = ds.squeeze("lib_size")  # the size stays, as a scalar coordinate
    ds.attrs.update(tau=p.tau, Tp=p.Tp_text, exclusion_radius=p.excl,
                    knn=-1 if p.knn is None else p.knn, samples=p.samples, seed=p.seed,
                    sampling=p.sampling, backend=p.backend, **neighbor_attrs(p.search, lazy),
                    series_dim=p.sdim, E_from=p.E_from,
                    meaning="rho(library=x, target=y) high: y causes x")
    if p.conv:
        ds.attrs.update(n_boot=p.n_boot, convergence=(
            "kendall_*: Kendall's tau of mean rho vs lib_size, one-sided p (rising); "
            "fisher_*: z-test of rho at the largest vs the smallest lib_size, n = n_valid, "
            "one-sided p; rho_ci: 95% percentile bootstrap of the mean over samples"))
    if p.n_sur:
        ds.attrs.update(significance_attrs(p.sig))
    ds.attrs["xedm_function"] = "ccm"
    return ds


def _null_coords(p: CrossParams) -> dict:
    """The coordinates of the surrogates' outputs: ``quantile``, and ``surrogate`` with
    ``keep_null`` (none without surrogates)."""
    coords = {}
    if p.n_sur:
        coords["quantile"] = list(p.sig["quantiles"])
        if p.keep_null:
            coords["surrogate"] = np.arange(p.n_sur)
    return coords


def xmap_params(labels, sdim, T, *, E, E_max, tau, Tp, exclusion_radius, knn, surrogates,
                surrogate_method, seed, quantiles, keep_null, surrogate_options, p_method,
                backend, progress, neighbors, neighbors_recall, E_from="target") -> XmapParams:
    """Check the parameters of :func:`xedm.xmap` for n = len(labels) series of T points."""
    n = len(labels)
    E_from = check_E_from(E_from)
    tau = v.check_tau(tau)
    Tps, lagged = check_Tp_list(Tp)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    keep_null = v.check_bool("keep_null", keep_null)
    sig = check_significance(surrogates, surrogate_method, seed, quantiles, surrogate_options,
                              p_method)
    backend = resolve_backend(backend, ["simplex_sweep", "knn_sweep", "knn_single", "xmap_skill"],
                              n * T * T)
    Ev = None
    if E is None:
        E_max = v.check_int("E_max", E_max, 1,
                            " (E_max is the largest embedding dimension tried: use 1 or more)")
        # every E up to E_max may be chosen (at Tp = 1) and then used for the cross maps
        check_library_points(T, E_max, tau, 1, knn, "E_max")
        for tp in Tps:
            check_library_points(T, E_max, tau, tp, knn, "E_max")
            check_series_exclusion(T, 1, tau, tp, excl)
        E_text = f"E chosen in 1..{E_max}"
    else:
        Ev = E_per_series(E, n)
        _check_E(T, Ev, tau, Tps, knn, excl)
        E_text = _E_text(Ev)
    Tp_text = Tps.tolist() if lagged else int(Tps[0])
    text = f"{E_text}, tau={tau}, Tp={Tp_text}, knn={knn}, exclusion_radius={excl}"
    check_surrogate_cost(n, T, sig["n"], len(Tps), keep_null, backend)
    E_top = int(E_max) if E is None else int(np.max(Ev))
    search = resolve_method(neighbors, n_lib=T, dim=E_top, knn=E_top + 1 if knn is None else knn,
                            n_pred=T, backend=backend, recall=neighbors_recall)
    bar = progress_bar(progress, "xmap", n)
    return XmapParams(labels, sdim, n, Ev, tau, Tps, lagged, knn, excl, keep_null, sig, backend,
                      search, bar, text, E_max, E_from)


def xmap_block(p: XmapParams, x2d: np.ndarray) -> tuple:
    """xmap of one (series, time) block: the arrays of :func:`xmap_layout`, in its order."""
    n, nTp, n_sur = p.n, len(p.Tps), p.n_sur
    live = any_finite_rows(x2d)
    # all-NaN series (warned about in check) stay out of the computation: their rows and
    # columns are NaN, their E the smallest (1) when E is chosen
    res = None
    if live.any():
        x = np.ascontiguousarray(x2d if live.all() else x2d[live])  # no copy when all live
        kw = dict(tau=p.tau, Tp=p.Tps, knn=p.knn, excl=p.excl, backend=p.backend,
                  progress=p.bar, S=p.surrogates(x), quantiles=p.sig["quantiles"],
                  keep_null=p.keep_null, method=p.search)
        if p.E_from == "library":  # each library's own E (one cross map per distinct E)
            Ev = p.Ev[live] if p.Ev is not None else _ccm.choose_E(
                x, E_tab=np.arange(1, p.E_max + 1), tau=p.tau, knn=p.knn, excl=p.excl,
                backend=p.backend)
            res = library_E_xmap(x, E=Ev, **kw)
        else:
            res = _ccm.xmap(x, E=None if p.Ev is None else p.Ev[live], E_max=p.E_max, **kw)
    everyone = bool(live.all())  # every series takes part: the results as they are
    rho = res["rho"] if everyone else np.full((n, n, nTp), np.nan)
    Es = np.ones(n, np.int64) if p.Ev is None else p.Ev.copy()
    out = [rho, Es]
    pair = np.ix_(live, live)
    if res is not None:
        if not everyone:
            rho[pair] = res["rho"]
        Es[live] = res["E"]
    if n_sur:
        ge = np.zeros((n, n, nTp), np.int64)
        nn = np.zeros((n, n, nTp), np.int64)
        qn = np.full((n, n, nTp, len(p.sig["quantiles"])), np.nan)
        zm = np.full((n, n, nTp), np.nan)
        zs = np.full((n, n, nTp), np.nan)
        if res is not None:
            ge[pair], nn[pair], qn[pair] = res["count_ge"], res["n_null"], res["null_q"]
            zm[pair], zs[pair] = res["z_mean"], res["z_sd"]
        pv = surrogate_p_values(rho, ge, nn, zm, zs, p.sig["p_method"])
        out += [pv, map_qvalues(pv), qn]
        if p.keep_null:
            rn = np.full((n, n, nTp, n_sur), np.nan)
            if res is not None:
                rn[pair] = res["rho_null"]
            out.append(rn)
    return tuple(out)


def xmap_layout(p: XmapParams) -> tuple[list, list, dict, list]:
    """Names, dims, dim sizes and dtypes of the outputs of :func:`xmap_block`."""
    names, out_dims, dtypes = ["rho", "E"], [_PAIRS, [p.E_from]], [float, np.int64]
    if p.n_sur:
        names += ["p_value", "q_value", "rho_null"]
        out_dims += [_PAIRS, _PAIRS, _PAIRS + ["quantile"]]
        dtypes += [float, float, float]
        if p.keep_null:
            names.append("rho_surrogate")
            out_dims.append(_PAIRS + ["surrogate"])
            dtypes.append(float)
    return names, out_dims, p.sizes, dtypes


def xmap_pair_blocks(p: XmapParams, X: xr.DataArray, tdim: str) -> list:
    """rho and E of a dask-backed 2-D X as (library x target) blocks, one task each
    (:func:`xedm.distributed.xmap_blocks`); no significance."""
    from ..distributed import _label_array, xmap_blocks

    X = one_time_chunk(X, tdim, "xmap")
    rho, Es = xmap_blocks(X.data, E=p.Ev, E_max=p.E_max, tau=p.tau, Tp=p.Tps, knn=p.knn,
                          excl=p.excl, backend=p.backend, method=p.search.method,
                          recall=p.search.recall, labels=p.labels)
    # named here: dask would otherwise hash the check's closure (the labels pickled: 0.2-0.4 s
    # of the graph's construction at N = 20,000)
    from dask.base import tokenize

    labels = _label_array(p.labels)
    rho = rho.map_blocks(_pair_block_check(labels, p.text), dtype=rho.dtype,
                         name="xedm-check-" + tokenize(rho.name, p.text, labels.astype(str)))
    return [xr.DataArray(rho, dims=_PAIRS), xr.DataArray(Es, dims=["target"])]


def xmap_dataset(p: XmapParams, names, res, lazy: bool) -> xr.Dataset:
    """The Dataset of :func:`xedm.xmap` from the outputs ``res`` named ``names``."""
    # one Dataset built with every coordinate (assigning them one by one and squeezing Tp
    # afterwards took 3-9 ms, 2-7 % of a whole map of 1,000 series on a GPU)
    arrs = {"rho": res[0], **dict(zip(names[2:], res[2:], strict=True))}
    coords = {"library": p.labels, "target": p.labels}
    if p.lagged:
        coords["Tp"] = p.Tps
    else:  # one Tp: its dim dropped
        arrs = {name: a.isel(Tp=0, drop=True) for name, a in arrs.items()}
    coords.update(_null_coords(p))
    Es = res[1]
    if Es.ndim == 1:
        coords["E"] = (p.E_from, Es.data)  # dask-backed data: stays lazy
    ds = xr.Dataset(arrs, coords=coords)
    if Es.ndim != 1:
        ds["E"] = Es
    if p.lagged:
        ds["best_Tp"] = best_Tp(ds.rho)
    ds.attrs.update(tau=p.tau, Tp=p.Tp_text, exclusion_radius=p.excl,
                    knn=-1 if p.knn is None else p.knn,
                    E_max=p.E_max if p.Ev is None else int(np.max(p.Ev)),
                    E_chosen=int(p.Ev is None),
                    backend=p.backend, **neighbor_attrs(p.search, lazy),
                    series_dim=p.sdim, E_from=p.E_from,
                    meaning=("rho(library=i, target=j) high: j causes i; pair uses "
                             f"E[{p.E_from}]"))
    if p.n_sur:
        ds.attrs.update(significance_attrs(p.sig))
        ds.attrs["fdr_family"] = ("q_value: Benjamini-Hochberg over the off-diagonal "
                                  "(library, target) pairs of the map"
                                  + (", separately at each Tp" if p.lagged else ""))
    ds.attrs["xedm_function"] = "xmap"
    return ds


def _pair_block_check(labels, params: str):
    """A map_blocks function for the (library, target, Tp) blocks of a distributed xmap: a
    block without one finite rho warns at compute time, naming its pairs (the in-memory
    call raises; a lazy one must not lose the other blocks).  ``labels``: one NumPy array
    (:func:`xedm.distributed._label_array`): every task carries the check, and a list of
    20,000 NumPy scalars took 0.16 s to pickle, once per task (the 4 block tasks of a map on
    4 GPUs started 0.2-0.4 s after it was submitted)."""

    def show(part):
        part = [x.item() if isinstance(x, np.generic) else x for x in part]
        return str(part) if len(part) <= 4 else f"[{part[0]!r}, ..., {part[-1]!r}]"

    def check(block, block_info=None):
        if block.size and not _any_finite(block):
            where = ""
            if block_info and 0 in block_info:
                (a0, a1), (b0, b1) = block_info[0]["array-location"][:2]
                where = (f" (library {show(labels[a0:a1])} x target {show(labels[b0:b1])}, one "
                         "dask block of the result)")
            warnings.warn(
                f"xmap{where}: no (library, target) pair has a finite rho for {params}: the "
                "series are all NaN, or too short, too gappy (NaN) or constant for these "
                "parameters", UserWarning, stacklevel=user_stacklevel())
        return block

    return check
