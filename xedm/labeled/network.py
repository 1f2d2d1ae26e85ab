"""The xarray layer of direct causal networks: :func:`causal_network` (the pipeline is in
:mod:`xedm.core.network`) and :func:`to_networkx`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..core import validate as v
from ..core.network import network
from ..kernels import resolve_backend
from ..neighbors.base import neighbor_attrs, resolve_method
from .checks import (
    E_per_series,
    check_E_from,
    check_library_points,
    check_series_exclusion,
    check_significance,
    check_surrogate_cost,
    check_Tp_list,
    shown,
)
from .cross import XMAP_DIMS
from .inputs import cross_series, progress_bar
from .network_result import DENSE_BYTES, EDGES_FROM, count_reasons, edges_dataset, to_dense

#: the decision rule of each conditioning, as the result's attrs and the docs state it
RULE_PREDICTIVE = (
    "link[library=i, target=j] (j -> i directly) when: j is among the drivers selected for i "
    "by the predictive conditioning (among every other series, or 32 when there are more "
    "than 128: the 8 with the highest cross-map skill rho[i, j] and the 24 whose value and "
    "its square best explain i's own-model residual: forward selection, "
    "candidates dropped at p > 0.7, then each selected driver retested "
    "given the others: adding j's value z_j(t) to a multivariate embedding of i (i's value, "
    "its selected own lags and its other selected drivers) lowers the absolute errors of the "
    "leave-one-out local linear prediction of i(t + 1), one-sided Wilcoxon signed-rank test; "
    "each driver at its delay k in 1..max_lag: z_j(t + 1 - k)), "
    "gain_q <= alpha (Benjamini-Hochberg over the selected pairs), gain > 0, and not a "
    "synchrony pair (significant cross maps both ways peaking at Tp > 0) that passes both "
    "ways; a pair not linked is undetermined when either series is constant or has fewer "
    "than 20 effective points (points / (1 + decorrelation time)) per coordinate of the "
    "library's model (E + 1), or when it is a synchrony pair passing both ways")
RULE = ("link[library=i, target=j] (j -> i directly) when: q_value <= alpha (the cross map of "
        "i to j at its best lag Tp <= 0 beats the surrogates, Bonferroni over the driver "
        "lags, Benjamini-Hochberg over the off-diagonal pairs); best_Tp <= 0 (the skill "
        "peaks at a driver lag, Ye et al. 2015); partial_q <= alpha (Benjamini-Hochberg over "
        "the candidates) and partial_rho >= min_partial: j's estimate from i's manifold "
        "still predicts j given its estimates from the manifolds of i's other screened "
        "drivers k (p_value <= alpha before Benjamini-Hochberg, and best_Tp <= 0) and k's "
        "own values (partial cross mapping)")


def _series(data, series_dim, columns, time_dim):
    """(X (N, T) finite float64 in memory, labels, series dim, time dim)."""
    if (series_dim is None and columns is None and isinstance(data, xr.DataArray)
            and data.ndim == 2):
        tdim = "time" if time_dim is None else time_dim
        others = [d for d in data.dims if d != tdim]
        if tdim in data.dims and len(others) == 1:
            series_dim = others[0]
    X, labels, sdim, tdim = cross_series(data, series_dim, columns, time_dim, XMAP_DIMS)
    if X.ndim != 2:
        raise ValueError(f"causal_network takes (series, time) data; the data have other dims "
                         f"{list(X.dims[:-2])}: select one slice, e.g. data.isel(...)")
    x = np.asarray(X.values, np.float64)  # dask-backed data are computed here
    if not np.isfinite(x).all():
        bad = [labels[i] for i in np.flatnonzero(~np.isfinite(x).all(axis=1))][:5]
        bad = [b.item() if isinstance(b, np.generic) else b for b in bad]
        raise ValueError(f"causal_network needs finite series; series {bad} have NaN or inf: "
                         "fill or cut the gaps first (e.g. data.interpolate_na('time') or "
                         "data.dropna('time'))")
    return x, labels, sdim, tdim


def causal_network(
    data: xr.DataArray | xr.Dataset,
    series_dim: str | None = None,
    *,
    time_dim: str | None = None,
    columns: Sequence[str] | None = None,
    E: int | Sequence[int] | None = None,
    E_max: int = 10,
    E_from: str = "library",
    tau: int = 1,
    lags: Sequence[int] = (-2, -1, 0, 1, 2),
    knn: int | None = None,
    exclusion_radius: int = 0,
    surrogates: int = 29,
    surrogate_method: str = "ebisuzaki",
    surrogate_options: dict | None = None,
    p_method: str = "normal",
    seed: int | None = None,
    alpha: float = 0.05,
    min_partial: float = 0.2,
    conditioning: str = "predictive",
    max_lag: int = 5,
    backend: str | None = None,
    progress: bool | None = None,
    neighbors: str | None = None,
    result: str = "auto",
) -> xr.Dataset:
    """Direct causal network of many series: cross maps, a lag scan, surrogate significance,
    false-discovery control and a conditioning step (predictive by default), in one call.

    ``link[library=i, target=j]`` True means **j drives i directly** (the orientation of
    :func:`xedm.xmap`: a high skill of i's manifold at recovering j).  The pipeline and its
    assumptions are in docs/causal-networks.md; the decision rule is ``attrs["rule"]``:

    1. E per series (the best leave-one-out simplex E in 1..E_max, or given); the pair
       (library i, target j) embeds i with **the library's** E (``E_from="library"``, as CCM
       theory) or the target's (``"target"``, as :func:`xedm.xmap`'s default).
    2. The cross map of every pair at every lag of ``lags`` (time-lagged CCM), and at the
       driver lags (Tp <= 0) against ``surrogates`` of each target (in a network of more
       than 129 series with the predictive conditioning and the library's E: of each
       series' 32 candidate drivers only, the pairs that can become links; ``p_value`` and
       ``q_value`` are NaN on the others).
    3. Per pair, the best driver lag (``driver_Tp``) and its skill ``rho``; ``p_value``: the
       surrogate p-value there times the number of driver lags (capped at 1); ``q_value``:
       Benjamini-Hochberg over the off-diagonal pairs (the candidates, in a large
       network).  ``best_Tp``: the best lag overall; a
       real driver peaks at Tp <= 0 (Ye et al. 2015).
    4. Candidates: ``q_value <= alpha`` and ``best_Tp <= 0``.
    5. Conditioning, ``conditioning="predictive"`` (the default): for each series i, the
       drivers j (among every other series; past 128, 32 candidates: the 8 with the highest
       ``rho[i, j]`` and the 24 whose values and their squares at delays 1..``max_lag``
       best explain what i's own past leaves unexplained, ``xedm.core.screen``)
       whose values z_j(t) improve the leave-one-out
       local linear prediction of i(t + 1) from a multivariate embedding (i's value, its own
       lags, its other selected drivers) are selected forward (candidates dropped at
       p > 0.7; one-sided Wilcoxon signed-rank test of the absolute errors), then
       eliminated backward (retested given each other, the weakest above p = 0.3 leaves
       until none is left).  Each driver enters at the delays k = 1..``max_lag`` (its value
       z_j(t + 1 - k)); a selected delay's others stay candidates.  A series whose final
       model predicts better with a wider fit (a noisy series) is selected again with it.
       Every pair's ``gain_p`` and ``gain`` answer one question, what j adds to i's final
       model: a selected driver retested given the others, any other added to the final
       model (at each delay).  ``gain``: (mae_without -
       mae_with) / max(mae_without, mae_with), in [-1, 1] (mean absolute errors: the
       statistic the test ranks); ``gain_hi``: its one-sided 95 % upper confidence bound;
       ``lag``: the delay k;
       ``gain_q`` (Benjamini-Hochberg over the selected pairs), ``selected``,
       ``n_conditions`` (i's other selected drivers).  An indirect
       driver (j -> k -> i) or a shared driver (k -> i, k -> j) adds nothing once k is in
       i's embedding.  ``link``: selected, ``gain_q <= alpha``, ``gain > 0``; a
       ``synchrony`` pair only in the direction the test gives it (passing both ways it
       cannot be oriented).  The cross map's ``candidate`` (its FDR decision) is not
       required: the predictive test sees weak drivers the cross map misses.
       ``conditioning="partial"`` (partial cross mapping, after Leng et al. 2020): for each
       candidate j -> i, ``partial_rho`` is the partial correlation of j with its estimate from i's
       manifold given its estimates from the manifolds of i's other **screened** drivers k
       (``p_value <= alpha`` before Benjamini-Hochberg, ``best_Tp <= 0``: a looser screen than the
       candidates', so that an intermediary the FDR step missed still explains its path
       away) and k's own values (``n_conditions`` of them); ``partial_p`` its one-sided
       t-test, ``partial_q`` Benjamini-Hochberg over the candidates.  An indirect driver
       (j -> k -> i) or a shared driver (k -> i, k -> j) leaves i no knowledge of j beyond
       k's, and little partial correlation.
       ``link``: a candidate with ``partial_q <= alpha`` and ``partial_rho >= min_partial``.

    Parameters
    ----------
    data : DataArray (series, time) or Dataset (variables chosen by ``columns``)
        Finite numbers (NaN refused: fill or cut gaps first); dask-backed data are computed.
    series_dim : str, optional
        The series dim of a DataArray; found when the DataArray has exactly one dim besides
        the time dim.
    time_dim : str, optional
        The time dim (default ``"time"``).
    columns : list of str
        The variables of a Dataset, each a series.
    E : int or one int per series, optional
        Embedding dimensions; None chooses each series' own in 1..E_max.
    E_max : int
        Largest E tried when ``E=None``.
    E_from : {"library", "target"}
        Whose E embeds the library of each pair (default the library's, as CCM theory).
    tau, knn, exclusion_radius : as in :func:`xedm.xmap`.
    lags : list of int
        The lags Tp scanned (at least one <= 0); significance is tested at those <= 0.
    surrogates, surrogate_method, surrogate_options, p_method, seed
        The null of the cross maps, as in :func:`xedm.xmap` (``p_method="normal"`` lets a
        few dozen surrogates give p-values below 1 / (1 + n), which a large network needs).
    alpha : float
        The false-discovery level of both tests, in (0, 1).
    min_partial : float
        With ``conditioning="partial"``: the smallest partial correlation a link must keep,
        in [0, 1): with long series the t-test alone keeps the small remnants of indirect
        links (nonlinear coupling is not removed entirely by a linear partial correlation).
    conditioning : {"predictive", "partial"}
        How direct links are told from indirect ones: the predictive test (default) or
        partial cross mapping (the pipeline before; higher cost in recall on weak links).
    max_lag : int
        The longest delay, in steps, at which a driver is tested by the predictive
        conditioning (default 5: delays 1..5); less than a quarter of the series.
    backend, progress, neighbors : as in :func:`xedm.xmap`.
    result : {"auto", "dense", "edges"}
        The form of the result: ``"dense"`` the (library, target) matrices below;
        ``"edges"`` an edge list of the pairs tested (each series' candidates in a large
        network, every ordered pair otherwise) along a dim ``edge`` (coords ``library``,
        ``target``, ``library_index``, ``target_index``) with the same variables, plus per
        ``series``: ``E``, ``n_drivers`` and the facts of the per-series rules that decide
        the pairs not listed (``constant``, ``effective_points``, ``points_needed``,
        ``exact``: such a pair is "no link" unless they make it "undetermined");
        ``"auto"`` (default) edges past 1,000 series (a dense result of N = 10,000 takes
        about 19 GB, its edge list 0.07 GB; a dense result larger than this machine's memory
        is refused up front).  :func:`xedm.to_dense` expands an edge list.

    Returns
    -------
    Dataset over (library, target) (an edge list with ``result="edges"``): ``rho``,
    ``p_value``, ``q_value``, ``driver_Tp``, ``best_Tp``, ``E`` (the E that embedded the
    pair), ``candidate``, the conditional
    statistics (``gain``, ``gain_p``, ``gain_q``, ``selected``, ``lag``; or
    ``partial_rho``, ``partial_p``, ``partial_q``), ``n_conditions``, ``synchrony``
    (significant both ways with the skill peaking at Tp > 0 both ways: synchrony or strong
    shared forcing), ``link``, and the three-way answer: ``decision`` ("link", "no link" or
    "undetermined"), ``undetermined`` (bool) and ``undetermined_reason`` (int8: 0 where
    decided; else the code of the reason, ``xedm.core.network.REASONS``, its text in the
    variable's ``description`` and ``flag_meanings``: a constant series, too few independent
    points for the embedding, synchrony both ways, a gain that counts within the bound, a
    series its own past predicts exactly; docs/causal-networks.md); and ``rho_lag``
    (library, target, Tp).
    Every choice is in attrs.  A run with undetermined pairs warns once, with the count of
    each reason.

    Raises
    ------
    ValueError
        For NaN in the data, data with dims besides series and time, lags without one <= 0,
        and the parameter rules of :func:`xedm.xmap`.
    TypeError
        For non-numeric data or parameters of the wrong type.

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.3)
    >>> net = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0)
    >>> bool(net.link.sel(library="y", target="x"))  # x drives y
    True
    >>> bool(net.link.sel(library="x", target="y"))
    False
    >>> str(net.decision.sel(library="x", target="y").values)  # decided: no link
    'no link'
    """
    plan = network_plan(data, series_dim, time_dim=time_dim, columns=columns, E=E,
                        E_max=E_max, E_from=E_from, tau=tau, lags=lags, knn=knn,
                        exclusion_radius=exclusion_radius, surrogates=surrogates,
                        surrogate_method=surrogate_method,
                        surrogate_options=surrogate_options, p_method=p_method, seed=seed,
                        alpha=alpha, min_partial=min_partial, conditioning=conditioning,
                        max_lag=max_lag, backend=backend, neighbors=neighbors, result=result)
    from concurrent.futures import ThreadPoolExecutor

    x = plan["x"]
    # the surrogates are drawn on the host while the E choice and the positive lags' cross
    # maps run (on the GPU: an overlap; the same values either way)
    with ThreadPoolExecutor(1) as pool:
        S = pool.submit(draw_surrogates, plan)
        out = network(x, S=S, dense_cross=plan["form"] == "dense",
                      progress=progress_bar(progress, "causal_network", len(x)),
                      **plan["core"])
    rho_all = out.pop("rho_lag_all")
    return network_dataset(plan, out, rho_all)


def network_plan(data, series_dim=None, *, time_dim=None, columns=None, E=None, E_max=10,
                 E_from="library", tau=1, lags=(-2, -1, 0, 1, 2), knn=None,
                 exclusion_radius=0, surrogates=29, surrogate_method="ebisuzaki",
                 surrogate_options=None, p_method="normal", seed=None, alpha=0.05,
                 min_partial=0.2, conditioning="predictive", max_lag=5, backend=None,
                 neighbors=None, result="auto") -> dict:
    """Every parameter of :func:`causal_network` checked in one pass, before any work: a dict
    with ``x`` (N, T) the series, ``labels``, ``core`` (the keywords of
    :func:`xedm.core.network.network` but ``S``, ``dense_cross`` and ``progress``), ``sig``
    (the surrogates: :func:`draw_surrogates`), ``form`` ("dense" or "edges") and ``attrs``
    (the result's).  The batch job ``xedm network ... --out OUT.zarr`` runs the same plan
    block by block."""
    x, labels, sdim, tdim = _series(data, series_dim, columns, time_dim)
    N, T = x.shape
    E_from = check_E_from(E_from)
    tau = v.check_tau(tau)
    knn = v.check_knn(knn)
    excl = v.check_exclusion_radius(exclusion_radius)
    lags_arr, _ = check_Tp_list(list(lags) if np.ndim(lags) else [lags], "lags")
    lags_arr = np.unique(lags_arr)
    if not (lags_arr <= 0).any():
        raise ValueError(f"lags={list(lags)} has no lag <= 0: a driver's skill is tested at "
                         "Tp <= 0; include 0, e.g. lags=[-2, -1, 0, 1, 2]")
    alpha = v.check_fraction("alpha", alpha, "0.05")
    if conditioning not in ("predictive", "partial"):
        raise ValueError(f"conditioning={conditioning!r} must be 'predictive' (the default) "
                         "or 'partial' (partial cross mapping)")
    min_partial = v.check_fraction("min_partial", min_partial, "0.2", low_open=False)
    max_lag = v.check_int("max_lag", max_lag, 1, " (the longest driver delay tested, in "
                          "steps: e.g. 5)")
    if max_lag >= T // 4:
        raise ValueError(f"max_lag={max_lag} needs a longer series: at most {max(T // 4 - 1, 1)}"
                         f" for {T} time points (a quarter of the series)")
    form = _check_result(result, N)
    n_sur = v.check_int("surrogates", surrogates, 1,
                        " (causal_network tests every pair against surrogates: use e.g. 29)")
    sig = check_significance(n_sur, surrogate_method, seed, (), surrogate_options, p_method)
    if E is None:
        E_max = v.check_int("E_max", E_max, 1, " (the largest embedding dimension tried)")
        E_top, Ev = E_max, None
    else:
        Ev = E_per_series(E, N)
        E_top = int(Ev.max())
    for tp in [1, *lags_arr.tolist()]:
        check_library_points(T, E_top, tau, tp, knn, "E_max" if E is None else "E")
    check_series_exclusion(T, E_top, tau, 0, excl)
    backend = resolve_backend(backend, ["simplex_sweep", "knn_sweep", "knn_single",
                                        "xmap_skill", "conditional_state"], N * T * T)
    _check_cost(N, T, n_sur, len(lags_arr), max_lag, E_top, backend, conditioning, E_from)
    search = resolve_method(neighbors, n_lib=T, dim=E_top,
                            knn=E_top + 1 if knn is None else knn, n_pred=T, backend=backend)
    attrs = _attrs(sdim, lags_arr, E_from, sig, search, conditioning, dict(
        tau=tau, knn=-1 if knn is None else knn, exclusion_radius=excl, alpha=alpha,
        min_partial=min_partial, E_max=E_top, E_chosen=int(E is None), backend=backend,
        max_lag=max_lag))
    core = dict(E=Ev, E_max=E_top, E_from=E_from, tau=tau, lags=lags_arr, knn=knn, excl=excl,
                p_method=p_method, alpha=alpha, min_partial=min_partial, backend=backend,
                method=search, conditioning=conditioning, max_lag=max_lag)
    return {"x": x, "labels": labels, "core": core, "sig": sig, "n_sur": n_sur, "form": form,
            "attrs": attrs}


def draw_surrogates(plan: dict, x=None) -> np.ndarray:
    """The surrogates (N, n, T) of a :func:`network_plan`: every series', from its seed
    (``x``: the plan's series, given apart; default ``plan["x"]``; only ``sig`` and
    ``n_sur`` of the plan are read besides)."""
    from ..stats.surrogates import make_surrogates

    sig = plan["sig"]
    return make_surrogates(plan["x"] if x is None else x, sig["method"], plan["n_sur"],
                           sig["seed"], **sig["options"])[0]


def network_dataset(plan: dict, out: dict, rho_all=None) -> xr.Dataset:
    """The result of :func:`causal_network` from the pipeline's output ``out``
    (:func:`xedm.core.network.network`, or :func:`xedm.core.network.finish_rows` of a batch
    job) and the plan: an edge list, or the dense matrices (``rho_all``: every pair's cross
    maps) when the plan's form is "dense"; the summary warning of undetermined pairs."""
    labels = plan["labels"]
    core = plan["core"]
    ds = edges_dataset(out, labels, core["lags"], core["conditioning"]).assign_attrs(
        plan["attrs"])
    constant = [labels[i] for i in np.flatnonzero(ds.constant.values)]
    _warn_undetermined(count_reasons(ds), len(labels), constant)
    if plan["form"] == "dense":
        return to_dense(ds, rho_all)
    ds.attrs["result"] = "edges"
    return ds


def _check_cost(N: int, T: int, n_sur: int, n_lags: int, max_lag: int, E_top: int,
                backend: str, conditioning: str = "predictive",
                E_from: str = "library") -> None:
    """The work policy (:mod:`xedm.memory`): the surrogates (drawn and cross-mapped at the
    driver lags) and the cross maps with their conditioning rounds, refused up front when
    they cannot fit or take longer than the work limit (estimated: N = 10,000, L = 1,450
    as 5.5 minutes on a GPU, which took 98 s on an H100).  The rounds' factor is measured:
    N = 100, L = 1,000, E_max = 10 took 195 s on a loaded 2-core VM (about 4e10 here)."""
    from ..core.network import large_network
    from ..core.predictive import SCREEN
    from ..memory import check_work

    # the cross maps: N^2 per lag; the rounds N times the candidates per series, and in a
    # large network (core.network.large_network) the surrogates' cross maps too
    screened, only = large_network(N, conditioning, E_from)
    cand = SCREEN if screened else N
    check_surrogate_cost(N, T, n_sur, n_lags, False, backend,
                         libraries=SCREEN if only else None)
    check_work(float(N) * T * (N * n_lags + cand * max_lag) * (E_top + 1) * 40,
               f"causal_network of {N} series of {T} time points (E up to {E_top}, "
               f"{n_lags} lags, max_lag={max_lag})",
               "use fewer series, a shorter series, a smaller E_max or max_lag", backend=backend)


def _check_result(result, N: int) -> str:
    """``result`` of causal_network: "dense", "edges", or "auto" (edges past EDGES_FROM
    series)."""
    if result not in ("auto", "dense", "edges"):
        raise ValueError(f"result={result!r} must be 'auto' (the default: an edge list past "
                         f"{EDGES_FROM} series), 'edges' or 'dense'")
    if result == "auto":
        return "edges" if N > EDGES_FROM else "dense"
    if result == "dense":  # the matrices (about 190 B a pair) and every pair's cross maps
        from ..memory import check_memory

        check_memory(float(N) * N * DENSE_BYTES, f"causal_network(result='dense') of {N} "
                     "series", "pass result='edges' (the tested pairs only), or 'auto'")
    return result


def _warn_undetermined(counts, N: int, constant=()) -> None:
    """One warning for a run with undetermined pairs: how many (``counts`` per reason code,
    :func:`xedm.labeled.network_result.count_reasons`), and why (naming the constant
    series)."""
    from ..core.network import REASONS

    n = int(counts[1:].sum())
    if not n:
        return
    why = "; ".join(f"{int(counts[k])} {text}" for k, text in REASONS.items() if counts[k])
    import warnings

    if len(constant):
        why += f"; the constant series are {shown(constant)}"
    warnings.warn(f"causal_network: {n} of {N * (N - 1)} pairs are undetermined ({why}): the "
                  "data cannot tell link from no link there (longer series may); see the "
                  "result's 'decision' and 'undetermined_reason'", UserWarning, stacklevel=3)


def _attrs(sdim, lags, E_from, sig, search, conditioning, attrs) -> dict:
    """The attrs of a causal_network result: every choice, the rule and its family."""
    out = dict(attrs)
    from .cross import significance_attrs

    out.update(significance_attrs(sig))
    if conditioning == "predictive":
        from ..core.predictive import DEFAULTS

        cond = dict(
            conditioning="predictive",
            conditioning_method=(
                "predictive: leave-one-out local linear (S-map on the nearest neighbours) "
                "prediction of the library i at t + 1 from i's value at t, its own lags "
                "(selected like drivers) and the values at t + 1 - k of its selected drivers, k "
                "their delays in 1..max_lag (each "
                "series standardized; drivers weighted in the distance); forward selection, "
                "then each selected driver retested given the others; one-sided Wilcoxon "
                "signed-rank test of the absolute errors with and without the driver"),
            conditioning_options=str(DEFAULTS),
            conditioning_set=("the library's other selected drivers and its selected own "
                              "lags; candidate drivers: every other series, or 32 when "
                              "there are more than 128 (8 by rho, 24 by the residual "
                              "screen)"),
            fdr_family=("q_value: Benjamini-Hochberg over the off-diagonal pairs (over "
                        "the candidate drivers when each series has 32 of more than 128 "
                        "others and E_from='library': no surrogate null elsewhere, p_value "
                        "NaN); gain_q: over the selected pairs"),
            rule=RULE_PREDICTIVE)
    else:
        cond = dict(
            conditioning="partial",
            conditioning_method=(
                "partial cross mapping: partial correlation of the target with its estimate "
                "from the library's manifold given its estimates from the manifolds of the "
                "library's other screened drivers and their values, at the pair's lag and "
                "one step either side (after Leng et al. 2020), one-sided t-test"),
            conditioning_set=("every other driver k of the library with p_value <= alpha "
                              "(before Benjamini-Hochberg) and best_Tp <= 0"),
            fdr_family=("q_value: Benjamini-Hochberg over the off-diagonal pairs; partial_q: "
                        "over the candidates"),
            rule=RULE)
    out.update(
        E_from=E_from, lags=lags.tolist(), **neighbor_attrs(search, False), series_dim=sdim,
        **cond, meaning="link(library=i, target=j) True: j drives i directly",
        xedm_function="causal_network")
    return out


def to_networkx(data: xr.Dataset):
    """The links of a :func:`causal_network` result as a ``networkx.DiGraph``.

    Nodes are the series labels (every series, linked or not); an edge ``j -> i`` for each
    ``link[library=i, target=j]``, with attributes ``rho``, ``p`` (``p_value``), ``q``
    (``q_value``), ``lag`` (the delay in steps: the result's ``lag``, or ``-driver_Tp``
    for partial cross mapping), ``Tp`` (``driver_Tp``), ``E``, and the conditional
    statistics of the result (``gain`` and ``gain_q``, or ``partial_rho`` and
    ``partial_q``).
    networkx is imported here (``pip install networkx``, or the ``network`` extra).

    Parameters
    ----------
    data : Dataset
        A result of :func:`xedm.causal_network`.

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> import xedm
    >>> ds = xedm.datasets.coupled_logistic(500, beta_xy=0.0, beta_yx=0.3)
    >>> g = ds.edm.causal_network(columns=["x", "y"], E=2, seed=0).edm.to_networkx()
    >>> list(g.edges)
    [('x', 'y')]
    """
    if not isinstance(data, xr.Dataset) or "link" not in data or "rho" not in data:
        raise TypeError("to_networkx takes the Dataset of xedm.causal_network (with link and "
                        f"rho over (library, target), or an edge list), got "
                        f"{type(data).__name__}")
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("to_networkx needs networkx: pip install networkx "
                          "(or pip install 'xedm[network]')") from None
    g = nx.DiGraph(**{k: data.attrs[k] for k in ("E_from", "alpha", "lags") if k in data.attrs})

    def plain(x):
        return x.item() if isinstance(x, np.generic) else x

    extra = [k for k in ("gain", "gain_q", "partial_rho", "partial_q") if k in data]
    if "edge" in data.dims:  # an edge list: its links, every series a node
        g.add_nodes_from(plain(x) for x in data.series.values)
        links = data.isel(edge=np.flatnonzero(data.link.values))
        Es = np.asarray(data.E.values)
        at = (links.library_index.values if data.attrs.get("E_from", "library") == "library"
              else links.target_index.values)
        rows = {"E": Es[at]}
    else:
        libs = [plain(x) for x in data.library.values]
        g.add_nodes_from(dict.fromkeys(libs + [plain(x) for x in data.target.values]))
        i, j = np.nonzero(np.asarray(data.link.values))
        links = data.isel(library=xr.DataArray(i, dims="edge"),
                          target=xr.DataArray(j, dims="edge"))
        rows = {"E": np.asarray(links.E.values)}
    for k in ("rho", "p_value", "q_value", "driver_Tp", *extra):
        rows[k] = np.asarray(links[k].values)
    # the delay of the predictive test (steps) where the result has one, else -driver_Tp
    rows["delay"] = (np.asarray(links["lag"].values) if "lag" in links
                     else -np.asarray(rows["driver_Tp"]))
    lib, tgt = links.library.values, links.target.values
    for n in range(len(rows["rho"])):
        g.add_edge(plain(tgt[n]), plain(lib[n]), rho=float(rows["rho"][n]),
                   p=float(rows["p_value"][n]), q=float(rows["q_value"][n]),
                   lag=int(rows["delay"][n]), Tp=int(rows["driver_Tp"][n]),
                   E=int(rows["E"][n]), **{k: float(rows[k][n]) for k in extra})
    return g
