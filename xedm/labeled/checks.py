"""Every parameter rule of the public functions (one function each), and the checks of their
results.  Plain-value checks shared with core/ and stats/ are in :mod:`xedm.core.validate`;
the data's containers, dims and dtypes are checked in :mod:`xedm.labeled.inputs`.

Before a computation: the parameter problems that do not depend on the values (horizon,
prediction times, exclusion radius, library size, lags, surrogate settings, memory and work),
the library size also for lazy data, whose core runs only at compute time.
After it, for in-memory data: results with nothing finite raise, partly finite ones warn
(predictions, or rho where the predictions are finite: too few pairs, zero variance), and a
sweep's best value is NaN only for series without any finite rho; for dask-backed data each
block's results are checked when it is computed, and a block with nothing finite warns.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..core import validate as v
from ..core.embed import LibSpec, library_selection, prediction_times, static_library_size
from ..core.simplex import default_knn
from ..memory import check_memory, check_work
from ..stats.surrogates import METHODS, check_method, check_options
from .inputs import VAR, user_stacklevel


# ----------------------------------------------------------------------------- before
def check_estimator(solver, alpha, singular_values):
    """S-map's ``solver`` when it is a regressor (None for a solver name): it must have
    ``fit``; ``alpha`` and ``singular_values`` belong to the built-in solvers."""
    if isinstance(solver, str):
        return None
    expected = ("solver must be 'lstsq', 'ridge' or a scikit-learn-style regressor instance with "
                "fit(X, y, sample_weight), coef_ and intercept_ (e.g. "
                "sklearn.linear_model.Ridge(alpha=0.1))")
    if isinstance(solver, type):
        raise TypeError(f"{expected}; got the class {solver.__name__}: pass an instance, e.g. "
                        f"solver={solver.__name__}()")
    if not callable(getattr(solver, "fit", None)):
        raise TypeError(f"{expected}, got {solver!r}")
    kind = _estimator_type(solver)
    if kind not in (None, "regressor"):
        raise TypeError(f"{expected}; got {solver!r}, a {kind}")
    if alpha not in (0, 0.0):
        raise ValueError(
            f"alpha={alpha!r} is for solver='ridge'; a regressor carries its own "
            "regularisation (e.g. Ridge(alpha=...)): leave alpha out"
        )
    if singular_values:
        raise ValueError(
            "singular_values=True needs solver='lstsq' or 'ridge' (a regressor has no "
            "singular values of the weighted design matrix)"
        )
    return solver




def _estimator_type(solver) -> str | None:
    """A scikit-learn estimator's type ("regressor", "classifier", "clusterer", ...); None
    for other objects (they are checked when fitted)."""
    if not hasattr(solver, "get_params"):
        return None
    try:
        from sklearn.base import is_classifier, is_clusterer, is_regressor
    except ImportError:
        return None
    try:
        for kind, test in (("regressor", is_regressor), ("classifier", is_classifier),
                           ("clusterer", is_clusterer)):
            if test(solver):
                return kind
    except Exception:  # noqa: BLE001 - a foreign object with sklearn's names: fit decides
        return None
    return "transformer or other non-regressor"


PREDICTED = frozenset(("prediction", "observed", "rho", "mae", "rmse", "n"))


def check_horizon(Tp: int, T: int, name: str = "Tp") -> None:
    if abs(Tp) >= T:
        raise ValueError(
            f"{name}={Tp} leaves no library point: every target t+Tp lies outside the "
            f"{T} time points; use |{name}| < {T}"
        )


def pred_times(spec: dict, kE: int, tau: int) -> np.ndarray:
    """Prediction positions (static); an error when pred leaves none."""
    t = prediction_times(spec["pred_mask"], kE, tau, False)
    if t.size == 0:
        raise ValueError(
            f"pred selects no time point with a complete embedding window (with E={kE}, "
            f"tau={tau} the first (E-1)*tau = {(kE - 1) * tau} time points have none); "
            "choose a later pred, or a smaller E or tau"
        )
    return t


def check_exclusion(excl: int, T: int, lib, pred_t: np.ndarray, combos) -> None:
    """exclusion_radius must leave some prediction point a library point: ``combos`` are the
    (kernel E, tau, Tp) of the call (the union of their library sets counts)."""
    if excl == 0:
        return
    sel = np.zeros(T, dtype=bool)
    for kE, tau, Tp in combos:
        sel |= library_selection(T, lib, kE, tau, Tp, False)
    pos = np.flatnonzero(sel)
    if pos.size == 0:
        return  # the knn checks say why
    reach = int(max(pred_t[-1] - pos[0], pos[-1] - pred_t[0]))
    if excl >= reach:
        raise ValueError(
            f"exclusion_radius={excl} excludes every library point from every prediction point "
            f"(library states at positions {pos[0]}..{pos[-1]}, predictions at "
            f"{pred_t[0]}..{pred_t[-1]}); use exclusion_radius < {reach}"
        )


def library_check(smap_like: bool, knn, combos, T: int, lib, embedded: bool, fix: str,
                  pred_mask=None, excl: int = 0) -> None:
    """The core's static library-size checks, run up front for lazy (dask) data so that the
    error comes at the call, not at compute time.  ``combos``: (E, kernel tau, Tp)."""
    for E, tau, Tp in combos:
        if smap_like and knn is None:
            n_lib = static_library_size(T, lib, E, tau, Tp, embedded)
            if n_lib < 2:
                raise ValueError(
                    f"lib gives {n_lib} library points for E={E}, tau={tau}, Tp={Tp}; S-map "
                    "needs at least 2: use a longer lib or a smaller E"
                )
        else:
            default_knn(knn, E, T, lib, tau, Tp, embedded, fix, pred_mask, excl)


# ----------------------------------------------------------------------------- after
def degenerate_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(no finite value, finite values all equal) for each row of ``a`` (..., T): all-NaN and
    constant series.  Only rows whose first 16 values do not already differ are scanned whole.

    >>> degenerate_rows(np.array([[1.0, np.nan, 1.0], [np.nan] * 3, [1.0, 2.0, 1.0]]))
    (array([False,  True, False]), array([ True, False, False]))
    """
    a = np.asarray(a)
    if a.shape[-1] == 0:
        return np.ones(a.shape[:-1], bool), np.zeros(a.shape[:-1], bool)
    head = a[..., :16]
    fin = np.isfinite(head)
    first = np.take_along_axis(head, np.argmax(fin, axis=-1)[..., None], -1)
    maybe = ((head == first) | ~fin).all(axis=-1)
    none, same = np.zeros(a.shape[:-1], bool), np.zeros(a.shape[:-1], bool)
    for ix in zip(*np.nonzero(maybe), strict=True):
        row = a[ix]
        vals = row[np.isfinite(row)]
        none[ix] = vals.size == 0
        same[ix] = vals.size > 0 and bool((vals == vals[0]).all())
    return none, same


def shown(names, limit: int = 5) -> str:
    """A list of series names for a message (the first ``limit`` and a count)."""
    names = [x.item() if isinstance(x, np.generic) else x for x in names]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"{names[:limit]}{more}"


def _all_nan_series(X, y, dim: str) -> tuple[int, int]:
    """(series whose columns or target have no finite value, all series)."""
    col_ok = np.isfinite(X).any(dim)
    bad = ~(col_ok.all(VAR) if VAR in col_ok.dims else col_ok) | ~np.isfinite(y).any(dim)
    return int(bad.sum()), int(bad.size)


def _why(X, y, dim: str, excl: int, n_max: int | None = None) -> str:
    """Why nothing finite came out (only on that path, so cost does not matter)."""
    bad, total = _all_nan_series(X, y, dim)
    if bad == total:
        return "the data has no finite values (all NaN or inf)"
    if n_max is not None and n_max < 3:
        return (f"at most {n_max} (observed, predicted) pairs, and rho needs 3: widen pred "
                "(forecasts past the data have no observed value), or check lib, the NaN "
                "gaps and exclusion_radius")
    if n_max is not None:
        return "observed or predicted values have zero variance (a constant series?)"
    return ("no prediction point has a complete, finite embedding window and a library point "
            "with a finite target" + (f" outside exclusion_radius={excl}" if excl else "")
            + "; check the NaN gaps, lib and pred, or use a smaller E or tau")


def _rho_why(n_max: int) -> str:
    if n_max < 3:
        return (f"at most {n_max} (observed, predicted) pairs, and rho needs 3: widen pred "
                "(a pred shorter than the embedding window (E-1)*tau + 3 has too few points), "
                "or check lib, the NaN gaps and exclusion_radius (a radius close to the "
                "series length leaves almost no neighbours)")
    return ("the observed or predicted values have zero variance (a constant series: every "
            "neighbour is at distance 0 and predicts the same value)")


def check_skill(func: str, rho: np.ndarray, n: np.ndarray, prediction: np.ndarray,
                inside: np.ndarray, excl: int) -> None:
    """Warn when rho is NaN although predictions are finite (series without any finite
    prediction are :func:`check_predictions`' business), saying why: no finite prediction
    at a time inside the data (only forecasts past it), fewer than 3 pairs, or zero
    variance.  ``inside`` (P,): which prediction times lie inside the data; a call that
    asks for forecasts past the data only (no observed values by design) is not warned."""
    bad = ~np.isfinite(np.asarray(rho))
    if not bad.any() or not inside.any():
        return
    fin = np.isfinite(prediction)
    bad &= fin.any(axis=-1)
    if not bad.any():
        return
    k, total = int(bad.sum()), bad.size
    some = "" if k == total else f" for {k} of {total} series"
    if not fin[..., inside][bad].any():
        why = ("no prediction inside the data is finite (only forecasts past its end): no "
               "prediction point has a library point" + (
                   f" outside exclusion_radius={excl}" if excl else "") + " with a complete, "
               "finite window and target; use a smaller exclusion_radius, E or tau, or "
               "check lib and the NaN gaps")
    else:
        why = _rho_why(int(np.max(np.asarray(n)[bad])))
    warnings.warn(f"{func}: rho (and the skill) is NaN{some}: {why}", UserWarning,
                  stacklevel=user_stacklevel())


def check_variance(func: str, prediction: np.ndarray, variance: np.ndarray) -> None:
    """Warn when ``pred_variance`` overflows (inf) where the prediction is finite: a variance
    is in the data's unit squared, so beyond |values| of about 1e154 it has no float64 value,
    whatever the scaling inside (the predictions and skills are unit-free)."""
    over = np.isinf(variance) & np.isfinite(prediction)
    if over.any():
        warnings.warn(f"{func}: pred_variance is inf at {int(over.sum())} of {over.size} "
                      "predictions: the variance of values this large (the data's unit "
                      "squared) exceeds float64's range (about 1.8e308); the predictions and "
                      "skills are exact; divide the data by a power of 10 (e.g. 1e150) for a "
                      "finite pred_variance", UserWarning, stacklevel=user_stacklevel())


def block_check(func: str, core):
    """``core`` of dask-backed data, checking each block's results at compute time (the
    in-memory checks cannot run at the call without computing): a block with no finite
    prediction or no finite rho warns, naming the dask chunk and why (raising would lose
    the other chunks' results)."""
    import functools

    @functools.wraps(core)
    def checked(Xb, yb):
        res = core(Xb, yb)
        if Xb.shape[0] == 0:
            return res
        where = f"{func} (one dask chunk of the data)"
        none_finite = not (np.isfinite(Xb).any() and np.isfinite(yb).any())
        pred = res.get("prediction")
        rho = np.asarray(res["rho"])
        if none_finite:
            msg = f"{where}: the data are all NaN (or inf); its results are NaN"
        elif pred is not None and not np.isfinite(pred).any():
            msg = (f"{where}: no prediction is finite: no prediction point has a complete, "
                   "finite embedding window and a library point with a finite target; check "
                   "the NaN gaps, lib and pred, or use a smaller E or tau")
        elif not np.isfinite(rho).any():
            msg = f"{where}: no rho is finite: {_rho_why(int(np.max(res['n'], initial=0)))}"
        else:
            return res
        warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
        return res

    return checked


def check_predictions(func: str, prediction: np.ndarray, X, y, dim: str, excl: int) -> None:
    """Raise when no prediction is finite; warn (with counts) when some series have none."""
    fin = np.isfinite(prediction)
    if fin.all():
        return
    ok = fin.any(axis=-1)
    if ok.all():
        return
    if not ok.any():
        raise ValueError(f"{func}: no prediction is finite: {_why(X, y, dim, excl)}")
    bad, _ = _all_nan_series(X, y, dim)
    warnings.warn(
        f"{func}: {ok.size - int(ok.sum())} of {ok.size} series gave no finite prediction "
        f"({bad} of them all-NaN); their prediction and skill are NaN",
        UserWarning, stacklevel=3,
    )


def check_sweep(func: str, ds: xr.Dataset, d: str, X, y, dim: str, excl: int) -> None:
    """A sweep raises when no value of ``d`` gives a finite rho anywhere, and warns naming the
    values (and counting the series) that give none."""
    fin = np.isfinite(ds.variables["rho"].data)
    if fin.all():
        return
    labels = ds[d].values.tolist()
    flat = fin.reshape(-1, fin.shape[-1])
    B = flat.shape[0]
    if not flat.any():
        n_max = int(np.max(ds["n"].data)) if ds["n"].size else 0
        raise ValueError(f"{func}: no {d} in {labels} gave a finite rho: "
                         f"{_why(X, y, dim, excl, n_max)}")
    parts = []
    some = flat.any(axis=1)
    live = flat[some]
    n_live = live.shape[0]
    if n_live < B:
        nan_series, _ = _all_nan_series(X, y, dim)
        parts.append(f"{B - n_live} of {B} series have no finite rho for any {d} "
                     f"({nan_series} of them all-NaN): their best_{d} is NaN")
    n_bad = (~live).sum(axis=0).tolist()
    if B == 1:
        vals = [str(lab) for lab, k in zip(labels, n_bad, strict=True) if k]
    else:
        vals = [f"{lab} ({'all' if k == n_live else k} of {n_live} series)"
                for lab, k in zip(labels, n_bad, strict=True) if k]
    if vals:
        where = f"in the other {n_live} series, " if n_live < B else ""
        parts.append(f"{where}{d} = {', '.join(vals)} gave no finite rho")
    warnings.warn(f"{func}: " + "; ".join(parts), UserWarning, stacklevel=3)


def _pick(rho: np.ndarray, labels: np.ndarray, as_float: bool = False) -> np.ndarray:
    """Label of the highest finite rho along the last axis (ties to the first); NaN where
    none is finite (the result is then float)."""
    fin = np.isfinite(rho)
    best = labels[np.argmax(np.where(fin, rho, -np.inf), axis=-1)]
    none = ~fin.any(axis=-1)
    if as_float or none.any():
        best = np.where(none, np.nan, best.astype(np.float64))
    return best


def add_best(ds: xr.Dataset, d: str, lazy: bool = False) -> xr.Dataset:
    """Add ``best_<d>`` (highest rho; ties to the first, i.e. smallest E) as variable and, for
    one in-memory series, attr; NaN for series without a finite rho (dask: always float)."""
    rho = ds["rho"]
    labels = ds[d].values
    if lazy:
        best = xr.apply_ufunc(_pick, rho, input_core_dims=[[d]], kwargs={"labels": labels,
                              "as_float": True}, dask="parallelized", output_dtypes=[float])
        ds[f"best_{d}"] = best
        return ds
    best = _pick(rho.data, labels)
    ds[f"best_{d}"] = (rho.dims[:-1], best)
    if best.ndim == 0:
        ds.attrs[f"best_{d}"] = best.item()
    return ds


def E_per_series(E, n: int, name="E") -> np.ndarray:
    if np.ndim(E) == 0:
        return np.full(n, v.check_E(E), np.int64)
    arr = np.array([v.check_E(e) for e in np.asarray(E).tolist()], np.int64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be one int or one per series ({n}), got {len(arr)}")
    return arr



def library_bounds(T: int, E: int, tau: int, Tp: int) -> tuple[int, int]:
    """First and last time index of the library points of a NaN-free series."""
    return max((E - 1) * tau, -Tp), T - 1 - max(Tp, 0)



def check_library_points(T: int, E: int, tau: int, Tp: int, knn: int | None, name: str = "E"):
    """What a NaN-free series of length T allows at most: at least one library point (Tp),
    and knn+1 of them (as simplex: leave-one-out takes one away).  ``name`` is the parameter
    the user passed ("E" or "E_max")."""
    v.check_embedding_fits(E, tau, T, name=name)
    span = (E - 1) * tau
    lo, hi = library_bounds(T, E, tau, Tp)
    n_lib = max(0, hi - lo + 1)
    if n_lib == 0 and Tp != 0:
        raise ValueError(
            f"Tp={Tp} leaves no target inside the data: with {name}={E}, tau={tau} and {T} time "
            f"points, Tp must lie in [{-(T - 1)}, {T - 1 - span}]; use a smaller |Tp|"
        )
    k = E + 1 if knn is None else knn
    if n_lib < k + 1:
        raise ValueError(
            f"the series give {n_lib} library points for {name}={E}, tau={tau}, Tp={Tp} "
            f"({T} time points), but knn={k} needs at least knn+1 = {k + 1}; use a longer "
            f"series, a smaller {name} or a smaller knn"
        )



def check_series_exclusion(T: int, E: int, tau: int, Tp: int, excl: int) -> None:
    """:func:`check_exclusion` for the cross maps, where the whole series is both the library
    and the prediction set."""
    check_exclusion(excl, T, LibSpec.whole(T), np.arange((E - 1) * tau, T, dtype=np.int64),
                    [(E, tau, Tp)])



def check_sample_cost(n: int, T: int, sizes, samples: int, k: int, n_tp: int,
                       n_boot: int, backend: str = "cpu") -> None:
    """Refuse (or warn about) a number of samples whose sampled libraries ((sizes x samples,
    T) masks and their random numbers), per-sample skills ((n, n, sizes, samples)) or
    bootstrap of the convergence statistics cannot fit in this machine's memory, or whose
    cross maps take hours, before any work is done.  Work: every sample of every library
    series predicts its T points for every target, each walking its sorted neighbour row
    until knn members of the sampled library (about knn * T / L entries)."""
    n_sizes = len(sizes)
    need = n_sizes * samples * (5 * T + 24 * n * n * n_tp)
    what = f"ccm with samples={samples}, {n_sizes} lib_sizes, {n} series of {T} points"
    check_memory(need, what + " (the sampled libraries and every sample's rho)",
                 "use fewer samples")
    if n_sizes >= 3:  # the bootstrap of the convergence statistics: (n_boot, samples) weights
        check_memory(24.0 * n_boot * samples, f"ccm with n_boot={n_boot} and samples="
                     f"{samples} (the bootstrap of rho_ci)", "use a smaller n_boot (e.g. 1000)")
    per_sample = sum(T * (k + 1) * max(T / max(int(L), 1), 1.0) for L in sizes)
    check_work(float(n) * n * n_tp * samples * per_sample, what, "use fewer samples",
               backend=backend)



def check_Tp_list(Tp, name: str = "Tp") -> tuple[np.ndarray, bool]:
    """(Tp values, whether a list was given): distinct integers (``name``: the parameter
    as the user passed it, e.g. causal_network's ``lags``)."""
    if np.ndim(Tp) == 0:
        vals, listed = [v.check_int(name, Tp)], False
    else:
        vals, listed = [v.check_int(name, t) for t in list(Tp)], True
    if not vals:
        raise ValueError(f"{name}=[] is empty; give one {name} or a list of distinct {name}")
    if len(set(vals)) != len(vals):
        raise ValueError(f"{name}={vals} repeats a value; give each lag once")
    if max(map(abs, vals)) >= 2**62:
        raise ValueError(f"{name}={vals} has values too large to be time steps")
    return np.array(vals, np.int64), listed



def check_significance(n, method, seed, quantiles, options, p_method="empirical") -> dict:
    """The surrogate settings of ccm/xmap, validated (``n`` = 0: no significance test)."""
    n = v.check_int("surrogates", n, 0, " (the number of surrogates per target; 0 for none)")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"surrogate_method={method!r} is invalid; choose one of "
                         f"{list(METHODS)}")
    q = v.check_quantiles(quantiles)
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"surrogate_options must be a dict, got {type(options).__name__}")
    if options and not n:
        raise ValueError(f"surrogate_options={options!r} is given but surrogates=0 draws none; "
                         "set surrogates= (e.g. 99) or leave surrogate_options out")
    if p_method not in ("empirical", "normal"):
        raise ValueError(f"p_method={p_method!r} is invalid; choose 'empirical' (rank among "
                         "the surrogates) or 'normal' (Fisher-z tail of the surrogates)")
    if n and options:
        check_options(method, options, "surrogate_options")
    opts = check_method(method, **(options or {})) if n else {}
    if n and seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    if n:
        seed = v.check_int("seed", seed, 0)
    return {"n": n, "method": method, "seed": seed, "options": opts, "p_method": p_method,
            "quantiles": q}



def check_surrogate_cost(n: int, T: int, n_sur: int, n_tp: int, keep_null: bool,
                         backend: str = "cpu", libraries: int | None = None) -> None:
    """Refuse surrogates whose series (three copies: drawn, scaled, grouped by E) or kept
    per-pair rho cannot fit in half of this machine's memory, before any work is done.
    ``libraries``: the library series that cross-map each target's surrogates (default n;
    causal_network's candidates in a large network)."""
    if not n_sur:
        return
    need = 24 * n * n_sur * T + (8 * n * n * n_tp * n_sur if keep_null else 0)
    fix = ("use fewer surrogates" + (" or keep_null=False" if keep_null else "")
           + ", or map subsets of the targets")
    check_memory(need, f"surrogates={n_sur} for {n} series of {T} time points (the surrogate "
                 f"series{', and every surrogate rho' if keep_null else ''})", fix, share=0.5)
    # each surrogate is drawn (FFTs, permutations: ~100 operations a value) and cross-mapped
    # from every library series (a few neighbours per point)
    check_work(float(n_sur) * n * T * (100 + 8 * (n if libraries is None else libraries)
                                       * n_tp),
               f"surrogates={n_sur} for {n} series of {T} time points", fix, backend=backend)


E_FROM = ("library", "target")


def check_E_from(E_from) -> str:
    if E_from not in E_FROM:
        raise ValueError(f"E_from={E_from!r} is invalid; choose 'library' (the library's own E "
                         "embeds it, as CCM theory and pyEDM's CCM) or 'target' (the target's "
                         "E, as kEDM)")
    return E_from
