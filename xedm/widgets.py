"""Interactive explorers (ipywidgets) for forecasting, causality, causal maps and recurrence.

Each explorer is two objects: a **state** (plain Python: the parameters, a cache of results
and the calls that compute them; usable and testable without ipywidgets) and a **view** (the
widgets, the figure and the wiring).  Moving a slider updates the state; the view redraws
after the controls have been still for ``debounce`` seconds (no redraw per intermediate
value), and results already computed for the same parameters come from the cache.

``backend=`` and ``neighbors=`` are passed to every xedm call that takes them.

================================  ==========================================================
:func:`explore`                   the explorer for some data (also ``obj.edm.explore()``)
:class:`ForecastExplorer`         E, tau, Tp, theta, knn; skill vs E and theta, forecast
:class:`CausalityExplorer`        library/target, lib_size range, samples; CCM convergence
:class:`CausalMapExplorer`        xmap heatmap; pick a pair to see its convergence
:class:`RecurrenceExplorer`       E, tau, eps or recurrence rate; recurrence plot, measures
================================  ==========================================================

ipywidgets is imported only when a view is built; without it the view raises an ImportError
naming the extra to install (``pip install "xedm[widgets]"``).
"""

from __future__ import annotations

import asyncio
import inspect
import io
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "CausalMapExplorer",
    "CausalMapState",
    "CausalityExplorer",
    "CausalityState",
    "Debouncer",
    "Explorer",
    "ForecastExplorer",
    "ForecastState",
    "RecurrenceExplorer",
    "RecurrenceState",
    "State",
    "explore",
]


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError:  # pragma: no cover - exercised with ipywidgets hidden
        raise ImportError(
            'the xedm explorers need ipywidgets: pip install "xedm[widgets]"'
        ) from None
    return ipywidgets


# ----------------------------------------------------------------------------- state
class State:
    """Parameters and cached results of an explorer, independent of any widget.

    Parameters
    ----------
    data : DataArray or Dataset
    backend, neighbors : str, optional
        Passed to every xedm call that takes them.
    cache_size : int, default 64
        Results kept (least recently used dropped first).
    **params
        Initial values of the parameters (see each state's ``defaults``).
    """

    defaults: dict[str, Any] = {}

    def __init__(self, data, *, backend: str | None = None, neighbors: str | None = None,
                 cache_size: int = 64, **params: Any):
        self.data = data
        self.options = {"backend": backend, "neighbors": neighbors}
        self.params = dict(self.defaults)
        self._cache: OrderedDict = OrderedDict()
        self.cache_size = cache_size
        self.computed = 0  # calls actually made (not served from the cache)
        self.update(**params)

    def update(self, **changes: Any) -> dict:
        """Set parameters; returns the ones that changed.  Unknown names are refused."""
        bad = sorted(set(changes) - set(self.params))
        if bad:
            raise ValueError(f"unknown parameter(s) {bad}; this explorer has "
                             f"{sorted(self.params)}")
        for k, v in changes.items():
            _check_param(k, v)
        changed = {k: v for k, v in changes.items() if self.params[k] != v}
        self.params.update(changed)
        return changed

    def call(self, func: Callable, data, **kwargs: Any):
        """``func(data, **kwargs)`` with the explorer's backend/neighbours, cached on
        (function, data identity, arguments)."""
        sig = inspect.signature(func).parameters
        for k, v in self.options.items():
            if v is not None and k in sig:
                kwargs[k] = v
        if "progress" in sig:
            kwargs.setdefault("progress", False)
        key = (func.__name__, id(data), tuple(sorted((k, _hashable(v))
                                                     for k, v in kwargs.items())))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key][1]
        result = func(data, **kwargs)
        self.computed += 1
        self._cache[key] = (data, result)  # data kept alive: its id stays unique
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return result

    def results(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


# the numeric parameters of the explorers and their smallest values: a value the sliders
# cannot show is refused, not clamped (theta=-5 used to become 0 silently)
_MINIMUM = {"E": 1, "tau": 1, "E_max": 1, "samples": 1, "n_sizes": 2, "knn": 0, "lib_min": 2,
            "seed": 0, "surrogates": 0, "max_points": 2}


def _check_param(name: str, value) -> None:
    from .core import validate as v

    if name == "theta":
        v.check_theta(value)
        if np.ndim(value) != 0:
            raise ValueError(f"theta must be one number >= 0, got {value!r}")
    elif name in _MINIMUM:
        v.check_int(name, value, _MINIMUM[name])
    elif name == "Tp":
        v.check_Tp(value)


def _xmap_result(data) -> bool:
    return isinstance(data, xr.Dataset) and data.attrs.get("xedm_function") == "xmap"


def _hashable(v):
    if isinstance(v, list | tuple | np.ndarray):
        return tuple(np.asarray(v).tolist())
    if isinstance(v, slice):
        return ("slice", v.start, v.stop)
    return v


def _variables(ds: xr.Dataset, time_dim: str) -> list[str]:
    return [str(n) for n, v in ds.data_vars.items()
            if time_dim in v.dims and v.dtype.kind in "iuf"]


def _series_data(data, dim: str = "time") -> tuple[xr.Dataset, list[str]]:
    """(a Dataset of series, their names) from a 1-D or 2-D DataArray or a Dataset."""
    if isinstance(data, xr.Dataset):
        if dim not in data.dims:
            raise ValueError(f"dim={dim!r} is not a dimension of the data (dims: "
                             f"{list(data.dims)}); pass dim='<your time dimension>'")
        names = _variables(data, dim)
        if not names:
            raise ValueError(f"the Dataset has no numeric variable over {dim!r}")
        return data, names
    if not isinstance(data, xr.DataArray):
        raise TypeError(f"explore() takes a DataArray or Dataset, got {type(data).__name__}")
    if dim not in data.dims and not (data.ndim == 1 and dim == "time"):
        raise ValueError(f"dim={dim!r} is not a dimension of the data (dims: {list(data.dims)}); "
                         "pass dim='<your time dimension>'")
    if data.ndim == 1:
        name = str(data.name or "x")
        return data.to_dataset(name=name), [name]
    if data.ndim == 2:
        sdim = next(d for d in data.dims if d != dim)
        ds = xr.Dataset({str(label): data.sel({sdim: label}, drop=True)
                         for label in data[sdim].values})
        return ds, [str(v) for v in data[sdim].values]
    raise ValueError(f"explore() takes one series or a (series, {dim}) array; got dims "
                     f"{data.dims}: select first, e.g. data.isel({data.dims[0]}=0)")


class ForecastState(State):
    """Forecasting: skill vs E, skill vs theta, and the forecast at the chosen parameters.

    Parameters (``params``): ``column`` (state variable), ``target``, ``E``, ``tau``,
    ``Tp``, ``theta``, ``knn`` (0: the default), ``method`` ("simplex" or "smap"),
    ``E_max``.
    """

    defaults = {"column": None, "target": None, "E": 2, "tau": 1, "Tp": 1, "theta": 2.0,
                "knn": 0, "method": "smap", "E_max": 8}

    def __init__(self, data, **kwargs: Any):
        self.dim = kwargs.pop("dim", "time")
        self.ds, self.names = _series_data(data, self.dim)
        super().__init__(data, **kwargs)
        if self.params["column"] is None:
            self.params["column"] = self.names[0]
        if self.params["target"] is None:
            self.params["target"] = self.params["column"]

    def results(self) -> dict:
        from .labeled import edm, sweeps

        p = self.params
        common = {"columns": p["column"], "target": p["target"], "tau": p["tau"],
                  "dim": self.dim, "knn": p["knn"] or None}
        skill_E = self.call(sweeps.embed_dimension, self.ds, E_max=p["E_max"], Tp=p["Tp"],
                            **common)
        skill_theta = self.call(sweeps.predict_nonlinear, self.ds, E=p["E"], Tp=p["Tp"],
                                **common)
        if p["method"] == "smap":
            forecast = self.call(edm.smap, self.ds, E=p["E"], Tp=p["Tp"],
                                 theta=float(p["theta"]), **common)
        else:
            forecast = self.call(edm.simplex, self.ds, E=p["E"], Tp=p["Tp"], **common)
        return {"skill_E": skill_E, "skill_theta": skill_theta, "forecast": forecast}


class CausalityState(State):
    """CCM between two series: ``library``, ``target``, ``lib_min``/``lib_max`` (the range
    of library sizes, ``n_sizes`` of them), ``samples``, ``E``, ``tau``, ``seed``, and
    ``surrogates`` (ebisuzaki surrogates of the target for the null band and p-values; 0 for
    none)."""

    defaults = {"library": None, "target": None, "lib_min": 10, "lib_max": None,
                "n_sizes": 6, "samples": 30, "E": 2, "tau": 1, "seed": 1, "surrogates": 19}

    def __init__(self, data, **kwargs: Any):
        self.dim = kwargs.pop("dim", "time")
        self.ds, self.names = _series_data(data, self.dim)
        if len(self.names) < 2:
            raise ValueError("the causality explorer needs at least two series")
        super().__init__(data, **kwargs)
        p = self.params
        p["library"] = p["library"] or self.names[0]
        p["target"] = p["target"] or self.names[1]
        if p["lib_max"] is None:
            p["lib_max"] = int(self.ds.sizes[self.dim]) - 10

    def lib_sizes(self) -> list[int]:
        p = self.params
        lo, hi = int(p["lib_min"]), int(p["lib_max"])
        return sorted({int(round(v)) for v in np.geomspace(max(lo, 2), max(hi, lo + 1),
                                                           int(p["n_sizes"]))})

    def results(self) -> dict:
        from .labeled import xmap

        p = self.params
        pair = [p["library"], p["target"]] if p["library"] != p["target"] else [p["library"]]
        res = self.call(xmap.ccm, self.ds, columns=pair, lib_sizes=self.lib_sizes(),
                        E=p["E"], tau=p["tau"], samples=p["samples"], seed=p["seed"],
                        keep_samples=True, time_dim=self.dim,
                        surrogates=int(p["surrogates"]))
        return {"ccm": res}


class CausalMapState(State):
    """The all-pairs causal map (xmap, E chosen per series up to ``E_max``) and the CCM
    convergence of the picked pair (``library``, ``target``) over ``n_sizes`` sizes with
    ``samples`` samples."""

    defaults = {"library": None, "target": None, "E_max": 6, "tau": 1, "samples": 20,
                "n_sizes": 6, "seed": 1, "order": "cluster"}

    def __init__(self, data, *, dim: str | None = None, truth=None, **kwargs: Any):
        self.time_dim = kwargs.pop("time_dim", "time")
        self.result = None
        if _xmap_result(data):  # a map already computed: shown as it is, no series to re-map
            res = data.assign_coords(library=[str(v) for v in data.library.values],
                                     target=[str(v) for v in data.target.values])
            self.result, self.ds, self.names = res, None, list(res.library.values)
            self.truth = truth
            super().__init__(data, **kwargs)
            p = self.params
            p["library"] = p["library"] or self.names[0]
            p["target"] = p["target"] or self.names[min(1, len(self.names) - 1)]
            return
        if isinstance(data, xr.Dataset) and dim is None:
            self.ds, self.names = _series_data(data, self.time_dim)
        else:
            arr = data if dim is None else data.transpose(dim, self.time_dim)
            self.ds, self.names = _series_data(arr, self.time_dim)
        self.truth = truth
        super().__init__(data, **kwargs)
        p = self.params
        p["library"] = p["library"] or self.names[0]
        p["target"] = p["target"] or self.names[1]

    def results(self) -> dict:
        from .labeled import xmap

        p = self.params
        if self.result is not None:  # an xmap result: its map; convergence needs the series
            return {"xmap": self.result, "ccm": None}
        cmap = self.call(xmap.xmap, self.ds, columns=self.names, E_max=p["E_max"],
                         tau=p["tau"], time_dim=self.time_dim)
        E = cmap["E"].to_series()
        T = int(self.ds.sizes[self.time_dim])
        sizes = sorted({int(round(v)) for v in np.geomspace(10, T - 10, int(p["n_sizes"]))})
        pair = [p["library"], p["target"]]
        ccm = None
        if p["library"] != p["target"]:
            ccm = self.call(xmap.ccm, self.ds, columns=pair, lib_sizes=sizes,
                            E=[int(E[p["target"]]), int(E[p["library"]])],
                            tau=p["tau"], samples=p["samples"], seed=p["seed"],
                            keep_samples=True, time_dim=self.time_dim)
        return {"xmap": cmap, "ccm": ccm}


class RecurrenceState(State):
    """Recurrence: ``E``, ``tau``, ``threshold`` ("recurrence_rate" or "eps") and its
    ``value``; the plot shows the first ``max_points`` points, the measures use them all."""

    defaults = {"column": None, "E": 2, "tau": 1, "threshold": "recurrence_rate",
                "value": 0.05, "max_points": 500}

    def __init__(self, data, **kwargs: Any):
        self.dim = kwargs.pop("dim", "time")
        self.ds, self.names = _series_data(data, self.dim)
        super().__init__(data, **kwargs)
        self.params["column"] = self.params["column"] or self.names[0]

    def results(self) -> dict:
        from .labeled import rqa as _rqa

        p = self.params
        x = self.ds[p["column"]]
        thr = {p["threshold"]: float(p["value"])}
        part = x.isel({self.dim: slice(0, int(p["max_points"]))})
        R = self.call(_rqa.recurrence_plot, part, E=p["E"], tau=p["tau"], dim=self.dim, **thr)
        q = self.call(_rqa.rqa, x, E=p["E"], tau=p["tau"], dim=self.dim, **thr)
        return {"recurrence": R, "rqa": q}


# ----------------------------------------------------------------------------- views
class Debouncer:
    """Call ``func`` once the calls have stopped for ``delay`` seconds (on the running
    asyncio loop, i.e. Jupyter's); immediately when ``delay`` is 0 or no loop runs.

    Examples
    --------
    >>> calls = []
    >>> d = Debouncer(lambda: calls.append(1), delay=0)
    >>> d(); d(); calls
    [1, 1]
    """

    def __init__(self, func: Callable[[], Any], delay: float = 0.3):
        self.func = func
        self.delay = float(delay)
        self._handle = None

    def __call__(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        loop = None
        if self.delay > 0:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is None:
            self.func()
        else:
            self._handle = loop.call_later(self.delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.func()

    @property
    def pending(self) -> bool:
        return self._handle is not None

    def flush(self) -> None:
        """Run a pending call now."""
        if self._handle is not None:
            self._handle.cancel()
            self._fire()


class Explorer:
    """Base of the views: controls bound to ``state.params``, a figure, a status line.

    Attributes
    ----------
    state : State
    controls : dict of ipywidgets, by parameter name
    figure : matplotlib.figure.Figure
        Redrawn after each change (not managed by pyplot).
    image : ipywidgets.Image
        The figure as PNG, what the notebook shows.
    status : ipywidgets.HTML
        Measures, or the error a parameter combination gave.
    widget : ipywidgets.Box
        The whole explorer (displayed by Jupyter).
    """

    figsize = (9.0, 6.0)
    dpi = 80

    def __init__(self, state: State, debounce: float = 0.3):
        w = _ipywidgets()
        from matplotlib.figure import Figure

        self.state = state
        self.figure = Figure(figsize=self.figsize, layout="constrained")
        self.image = w.Image(format="png", layout=w.Layout(width="auto", max_width="100%"))
        self.status = w.HTML()
        self.redraws = 0
        self.controls = self._controls(w)
        for name, c in self.controls.items():
            c.layout.width = "auto"  # fill the grid cell, no wider
            c.layout.min_width = "0"
            c.observe(self._changed(name), names="value")
        self._debounced = Debouncer(self.redraw, debounce)
        box = w.HBox if len(self.controls) <= 3 else w.GridBox
        kw = {} if box is w.HBox else {"layout": w.Layout(
            grid_template_columns="repeat(3, minmax(0, 1fr))", width="100%")}
        self.widget = w.VBox([box(list(self.controls.values()), **kw), self.status,
                              self.image])
        self.redraw()

    def _controls(self, w) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _changed(self, name: str):
        def on_change(change):
            self.state.update(**{name: change["new"]})
            self._debounced()

        return on_change

    def set(self, **values: Any) -> None:
        """Move controls in code (as a user would) and redraw at once."""
        for k, v in values.items():
            if k not in self.controls:
                raise ValueError(f"no control {k!r}; this explorer has {sorted(self.controls)}")
            self.controls[k].value = v
        self._debounced.flush()

    def redraw(self) -> None:
        """Compute (or fetch from the cache) and draw the current state."""
        try:
            results = self.state.results()
        except (ValueError, TypeError) as err:
            self.status.value = f"<span style='color:#b00'>{_escape(str(err))}</span>"
            return
        self.figure.clear()
        self.status.value = self.draw(results) or ""
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.dpi)
        self.image.value = buf.getvalue()
        self.redraws += 1

    def draw(self, results: dict) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _repr_mimebundle_(self, include=None, exclude=None):
        # the live widget for Jupyter, and the current figure as PNG for static renderers
        # (nbconvert, the docs) that cannot run it
        import base64

        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        bundle["text/plain"] = f"<{type(self).__name__}: {self.status.value}>"
        return bundle


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slider(w, desc, value, lo, hi, step=1, cls=None):
    cls = cls or w.IntSlider
    return cls(value=value, min=lo, max=hi, step=step, description=desc,
               continuous_update=False, style={"description_width": "initial"},
               layout=w.Layout(width="auto"))


class ForecastExplorer(Explorer):
    """Forecasting explorer: E, tau, Tp, theta, knn sliders, method and variable dropdowns;
    draws skill vs E (chosen E marked), skill vs theta (chosen theta marked) and observed vs
    predicted.

    Parameters
    ----------
    data : DataArray (one series, or (series, time)) or Dataset
    debounce : float, default 0.3
        Seconds of stillness before redrawing.
    backend, neighbors : str, optional
    **params
        Initial parameters (see :class:`ForecastState`).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> from xedm.widgets import ForecastExplorer
    >>> ex = ForecastExplorer(xedm.datasets.logistic_map(300), E=2, debounce=0)
    >>> ex.set(E=3)
    >>> ex.state.params["E"], "E=3" in ex.figure.axes[2].get_title()
    (3, True)
    """

    figsize = (9.0, 6.5)

    def __init__(self, data, *, debounce: float = 0.3, **kwargs: Any):
        super().__init__(ForecastState(data, **kwargs), debounce)

    def _controls(self, w) -> dict:
        p, names = self.state.params, self.state.names
        from .labeled.edm import THETAS

        c = {
            "E": _slider(w, "E", p["E"], 1, max(p["E_max"], p["E"])),
            "tau": _slider(w, "tau", p["tau"], 1, 10),
            "Tp": _slider(w, "Tp", p["Tp"], 1, 20),
            "theta": w.SelectionSlider(options=[float(t) for t in THETAS],
                                       value=min(THETAS, key=lambda t: abs(t - p["theta"])),
                                       description="theta", continuous_update=False),
            "knn": _slider(w, "knn (0: default)", p["knn"], 0, 50),
            "method": w.Dropdown(options=["simplex", "smap"], value=p["method"],
                                 description="method"),
        }
        self.state.params["theta"] = float(c["theta"].value)
        if len(names) > 1:
            c["column"] = w.Dropdown(options=names, value=p["column"], description="column")
            c["target"] = w.Dropdown(options=names, value=p["target"], description="target")
        return c

    def draw(self, results: dict) -> str:
        from . import plot

        p = self.state.params
        fig = self.figure
        gs = fig.add_gridspec(2, 2)
        ax_e, ax_t = fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1])
        ax_f = fig.add_subplot(gs[1, :])
        plot.skill(results["skill_E"], ax=ax_e)
        ax_e.axvline(p["E"], color="0.5", ls="--", lw=1)
        plot.skill(results["skill_theta"], ax=ax_t)
        ax_t.axvline(p["theta"], color="0.5", ls="--", lw=1)
        plot.prediction(results["forecast"], ax=ax_f)
        f = results["forecast"]
        return (f"{p['method']} E={p['E']}, τ={p['tau']}, Tp={p['Tp']}"
                + (f", θ={p['theta']:g}" if p["method"] == "smap" else "")
                + f": ρ = {float(f.rho):.3f}, MAE = {float(f.mae):.3g}; best E = "
                  f"{results['skill_E'].attrs.get('best_E')}, best θ = "
                  f"{results['skill_theta'].attrs.get('best_theta')}")


class CausalityExplorer(Explorer):
    """CCM explorer: library/target dropdowns, lib_size range, samples, E and tau; draws the
    convergence in both directions with the spread over samples (and a surrogate band when
    the result has one).

    Parameters
    ----------
    data : Dataset or (series, time) DataArray with at least two series
    debounce : float, default 0.3
    backend, neighbors : str, optional
    **params
        Initial parameters (see :class:`CausalityState`).
    """

    figsize = (8.0, 4.0)

    def __init__(self, data, *, debounce: float = 0.3, **kwargs: Any):
        super().__init__(CausalityState(data, **kwargs), debounce)

    def _controls(self, w) -> dict:
        p, names = self.state.params, self.state.names
        T = int(self.state.ds.sizes[self.state.dim])
        rng = w.IntRangeSlider(value=(p["lib_min"], p["lib_max"]), min=2, max=T,
                               description="lib_size", continuous_update=False)
        c = {
            "library": w.Dropdown(options=names, value=p["library"], description="library"),
            "target": w.Dropdown(options=names, value=p["target"], description="target"),
            "lib_size": rng,
            "samples": _slider(w, "samples", p["samples"], 1, 200),
            "E": _slider(w, "E", p["E"], 1, 10),
            "tau": _slider(w, "tau", p["tau"], 1, 10),
            "surrogates": _slider(w, "surrogates", p["surrogates"], 0, 199),
        }
        return c

    def _changed(self, name: str):
        if name != "lib_size":
            return super()._changed(name)

        def on_change(change):
            lo, hi = change["new"]
            self.state.update(lib_min=int(lo), lib_max=int(hi))
            self._debounced()

        return on_change

    def draw(self, results: dict) -> str:
        from . import plot

        ax = self.figure.add_subplot()
        res = results["ccm"]
        plot.ccm_convergence(res, ax=ax)
        top = res.rho.isel(lib_size=-1)
        p = self.state.params
        parts = [f"{plot.arrow(lib, tgt)}: ρ(L={int(res.lib_size[-1])}) = "
                 f"{float(top.sel(library=lib, target=tgt)):.3f}"
                 for lib, tgt in [(p["library"], p["target"]), (p["target"], p["library"])]
                 if lib in res.library and tgt in res.target and lib != tgt]
        return "; ".join(parts)


class CausalMapExplorer(Explorer):
    """Causal-map explorer: the xmap heatmap (clustered or in the data's order) and the CCM
    convergence of the pair picked with the library/target dropdowns (outlined on the map).

    Parameters
    ----------
    data : (series, time) DataArray or Dataset of series
    dim : str, optional
        The series dim of a DataArray.
    truth : DataArray, optional
        Known ``(driver, driven)`` links, marked on the map.
    debounce : float, default 0.3
    backend, neighbors : str, optional
    **params
        Initial parameters (see :class:`CausalMapState`).
    """

    figsize = (10.0, 4.5)

    def __init__(self, data, *, dim: str | None = None, truth=None, debounce: float = 0.3,
                 **kwargs: Any):
        super().__init__(CausalMapState(data, dim=dim, truth=truth, **kwargs), debounce)

    def _controls(self, w) -> dict:
        p, names = self.state.params, self.state.names
        return {
            "library": w.Dropdown(options=names, value=p["library"], description="library"),
            "target": w.Dropdown(options=names, value=p["target"], description="target"),
            "order": w.Dropdown(options=[("clustered", "cluster"), ("data order", None)],
                                value=p["order"], description="order"),
            "samples": _slider(w, "samples", p["samples"], 1, 200),
            "E_max": _slider(w, "E_max", p["E_max"], 1, 12),
        }

    def select(self, library, target) -> None:
        """Pick a pair (as clicking would): the convergence panel shows it."""
        self.set(library=str(library), target=str(target))

    def draw(self, results: dict) -> str:
        from . import plot

        p = self.state.params
        ax_m, ax_c = self.figure.subplots(1, 2, width_ratios=[1.1, 1])
        cmap = results["xmap"]
        truth = self.state.truth
        if truth is not None:
            truth = truth.assign_coords(driver=[str(v) for v in truth.driver.values],
                                        driven=[str(v) for v in truth.driven.values])
        plot.causal_map(cmap, ax=ax_m, order=p["order"], truth=truth)
        rows = [t.get_text() for t in ax_m.get_yticklabels()]
        cols = [t.get_text() for t in ax_m.get_xticklabels()]
        if p["library"] in rows and p["target"] in cols:
            ax_m.plot([cols.index(p["target"])], [rows.index(p["library"])], "s",
                      markersize=12, markerfacecolor="none", markeredgecolor="red", mew=2)
        if results["ccm"] is None:
            ax_c.set_axis_off()
            if self.state.result is not None:
                return ("an xmap result: the map as computed (explore the series themselves, "
                        "kind='causal_map', for the picked pair's convergence)")
            return "pick two different series"
        plot.ccm_convergence(results["ccm"], ax=ax_c)
        rho = float(cmap.rho.sel(library=p["library"], target=p["target"]))
        return f"{plot.arrow(p['library'], p['target'])}: xmap ρ = {rho:.3f}"


class RecurrenceExplorer(Explorer):
    """Recurrence explorer: E, tau, threshold kind (eps or recurrence rate) and value; draws
    the recurrence plot and lists RR, DET, L, LAM, TT, ENTR.

    Parameters
    ----------
    data : DataArray (one series) or Dataset
    debounce : float, default 0.3
    backend : str, optional
    **params
        Initial parameters (see :class:`RecurrenceState`).
    """

    figsize = (5.5, 5.5)

    def __init__(self, data, *, debounce: float = 0.3, **kwargs: Any):
        super().__init__(RecurrenceState(data, **kwargs), debounce)

    def _controls(self, w) -> dict:
        p = self.state.params
        c = {
            "E": _slider(w, "E", p["E"], 1, 10),
            "tau": _slider(w, "tau", p["tau"], 1, 10),
            "threshold": w.ToggleButtons(options=["recurrence_rate", "eps"],
                                         value=p["threshold"], description="threshold"),
            "value": w.FloatLogSlider(value=p["value"], base=10, min=-3, max=0, step=0.05,
                                      description="value", continuous_update=False,
                                      readout_format=".3g"),
        }
        if len(self.state.names) > 1:
            c["column"] = w.Dropdown(options=self.state.names, value=p["column"],
                                     description="column")
        return c

    def draw(self, results: dict) -> str:
        from . import plot

        ax = self.figure.add_subplot()
        plot.recurrence_plot(results["recurrence"], ax=ax)
        q = results["rqa"]
        return ", ".join(f"{m} = {float(q[m]):.3g}" for m in
                         ("RR", "DET", "L", "LAM", "TT", "ENTR") if m in q)


_KINDS = {
    "forecast": ForecastExplorer,
    "causality": CausalityExplorer,
    "causal_map": CausalMapExplorer,
    "recurrence": RecurrenceExplorer,
}


def explore(data, kind: str | None = None, **kwargs: Any) -> Explorer:
    """The explorer of ``kind`` for ``data`` (also ``data.edm.explore(kind)``).

    Parameters
    ----------
    data : DataArray or Dataset
    kind : {"forecast", "causality", "causal_map", "recurrence"}, optional
        Default: "forecast"; "causal_map" for the result of :func:`xedm.xmap` (its map as
        computed, with the library/target pick; the convergence panel needs the series).
    **kwargs
        Passed to the explorer: initial parameters, ``debounce``, ``backend``,
        ``neighbors`` (and ``dim``/``truth`` for the causal map).

    Returns
    -------
    Explorer
        Displayed by Jupyter; ``.state`` holds parameters and cached results.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xedm
    >>> ex = xedm.datasets.logistic_map(300).edm.explore(E=2, debounce=0)
    >>> type(ex).__name__, ex.state.params["E"]
    ('ForecastExplorer', 2)
    """
    if _xmap_result(data):
        kind = kind or "causal_map"
        if kind != "causal_map":
            raise ValueError(f"kind={kind!r} explores series, and this is the result of "
                             "xedm.xmap: use kind='causal_map' (the default for it), or "
                             "explore the data the map was made from")
    kind = kind or "forecast"
    if kind not in _KINDS:
        raise ValueError(f"kind={kind!r}; choose one of {sorted(_KINDS)}")
    return _KINDS[kind](data, **kwargs)
