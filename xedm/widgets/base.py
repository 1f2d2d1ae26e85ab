"""The parts every explorer shares: :class:`State` (parameters and cached results, no
widgets), :class:`Explorer` (the ipywidgets view of a state), :class:`Debouncer` and the
helpers that read series from the data and build controls."""

from __future__ import annotations

import asyncio
import inspect
import io
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr


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
    from ..core import validate as v

    if name == "theta":
        v.check_theta(value)
        if np.ndim(value) != 0:
            raise ValueError(f"theta must be one number >= 0, got {value!r}")
    elif name in _MINIMUM:
        v.check_int(name, value, _MINIMUM[name])
    elif name == "Tp":
        v.check_Tp(value)
    elif name in ("lib", "pred") and value is not None:
        if (np.ndim(value) != 1 or len(value) != 2
                or not all(isinstance(i, int | np.integer) for i in value)):
            raise ValueError(f"{name} must be (first, last) row positions or None, got "
                             f"{value!r}")


def _xmap_result(data) -> bool:
    return isinstance(data, xr.Dataset) and data.attrs.get("xedm_function") == "xmap"


def _hashable(v):
    if isinstance(v, list | tuple | np.ndarray):
        return tuple(np.asarray(v).tolist())
    if isinstance(v, slice):
        return ("slice", v.start, v.stop)
    return v


# columns of a table that keep time rather than measure the system (Year, Month of
# cppEDM's Thrips table): listed last, never the default series
_CLOCKS = {"time", "date", "datetime", "year", "month", "day", "doy", "hour", "minute",
           "second", "week", "season", "index"}
_TIME_NAMES = ("time", "date", "datetime", "t", "year", "index")


def _clock(name: str, values) -> bool:
    """A clock column: a calendar name, or values that only ever increase."""
    if name.lower() in _CLOCKS:
        return True
    v = np.asarray(values)
    return v.ndim == 1 and v.size > 2 and v.dtype.kind in "iu" and bool(np.all(np.diff(v) > 0))


def _time_dim(data, given: str | None) -> str:
    """The time dim: ``given``; else ``time``; else the only dim; else a dim named like time
    (``Time``, ``date``, ``year``, ``index``: a table read with pandas)."""
    if given is not None:
        return given
    dims = [str(d) for d in getattr(data, "dims", ())]
    if "time" in dims or not dims:
        return "time"
    if len(dims) == 1:
        return dims[0]
    for want in _TIME_NAMES:
        hit = [d for d in dims if d.lower() == want]
        if hit:
            return hit[0]
    raise ValueError(f"cannot tell the time dimension among {dims}: pass "
                     "time_dim='<your time dimension>'")


def _variables(ds: xr.Dataset, time_dim: str) -> list[str]:
    """The numeric variables over time, the clock columns (Year, Month, ...) last."""
    names = [str(n) for n, v in ds.data_vars.items()
             if time_dim in v.dims and v.dtype.kind in "iuf"]
    clocks = [n for n in names if ds[n].ndim == 1 and _clock(n, ds[n].values)]
    return [n for n in names if n not in clocks] + clocks


def _series_data(data, dim: str = "time") -> tuple[xr.Dataset, list[str]]:
    """(a Dataset of series, their names) from a 1-D or 2-D DataArray or a Dataset; the
    clock columns of a table (Year, Month, ...) come last, so the first name is a series."""
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
        return ds, _variables(ds, dim)
    raise ValueError(f"explore() takes one series or a (series, {dim}) array; got dims "
                     f"{data.dims}: select first, e.g. data.isel({data.dims[0]}=0)")


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

    def cancel(self) -> None:
        """Drop a pending call."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

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
            self._after_change(change)

        return on_change

    def _after_change(self, change) -> None:
        """Redraw: debounced while the user moves a control in the browser (ipywidgets
        holds a property lock while it applies a value from the front end), at once for a
        value set in code (``slider.value = 3`` in a cell: the cell's own loop turn would
        otherwise hold the redraw back until the cell ends)."""
        if getattr(self, "_batch", False):
            return  # set(): one redraw once every value is in
        if getattr(change.get("owner"), "_property_lock", None):
            self._debounced()
        else:
            self._debounced.cancel()
            self.redraw()

    def set(self, **values: Any) -> None:
        """Move controls in code (as a user would) and redraw at once."""
        for k in values:
            if k not in self.controls:
                raise ValueError(f"no control {k!r}; this explorer has {sorted(self.controls)}")
        self._batch = True
        try:
            for k, v in values.items():
                self.controls[k].value = v
        finally:
            self._batch = False
        self._debounced.cancel()
        self.redraw()

    def redraw(self) -> None:
        """Compute (or fetch from the cache) and draw the current state."""
        try:
            results = self.state.results()
        except (ValueError, TypeError) as err:
            self.status.value = f"<span style='color:#b00'>{_escape(str(err))}</span>"
            return
        self.figure.clear()
        self.status.value = self.draw(results) or ""
        from ..plot._base import fit_texts

        fit_texts(self.figure, passes=1)  # titles wrapped, never clipped or run into each other
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
