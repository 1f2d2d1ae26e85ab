"""The forecasting explorer: skill vs E and theta, and the forecast (simplex or S-map)."""

from __future__ import annotations

from typing import Any

from .base import Explorer, State, _series_data, _slider, _time_dim

#: time steps of the forecast panel (the last ones): more would draw a solid band
ZOOM = 150


class ForecastState(State):
    """Forecasting: skill vs E, skill vs theta, and the forecast at the chosen parameters.

    Parameters (``params``): ``column`` (state variable), ``target``, ``E``, ``tau``,
    ``Tp``, ``theta``, ``knn`` (0: the default), ``method`` ("simplex" or "smap"),
    ``E_max``, and ``lib`` / ``pred``: the library and the predicted points as
    ``(first, last)`` row positions along time, both included (None: every row; with both
    None each point is predicted from all the others, leave-one-out).
    """

    defaults = {"column": None, "target": None, "E": 2, "tau": 1, "Tp": 1, "theta": 2.0,
                "knn": 0, "method": "smap", "E_max": 8, "lib": None, "pred": None}

    def __init__(self, data, **kwargs: Any):
        self.dim = _time_dim(data, kwargs.pop("time_dim", None) or kwargs.pop("dim", None))
        self.ds, self.names = _series_data(data, self.dim)
        super().__init__(data, **kwargs)
        if self.params["column"] is None:
            self.params["column"] = self.names[0]
        if self.params["target"] is None:
            self.params["target"] = self.params["column"]

    def rows(self, name: str):
        """``lib`` or ``pred`` as a slice of time labels, both ends included (None: every
        row)."""
        value = self.params[name]
        T = int(self.ds.sizes[self.dim])
        if value is None or tuple(value) == (0, T - 1):
            return None
        lo, hi = (int(v) for v in value)
        if not 0 <= lo <= hi < T:
            raise ValueError(f"{name}={value!r}: give (first, last) rows with 0 <= first <= "
                             f"last <= {T - 1}")
        if self.dim not in self.ds.coords:
            return slice(lo, hi)
        labels = self.ds[self.dim].values
        return slice(labels[lo], labels[hi])

    def results(self) -> dict:
        from ..labeled import edm, sweeps

        p = self.params
        common = {"columns": p["column"], "target": p["target"], "tau": p["tau"],
                  "time_dim": self.dim, "knn": p["knn"] or None, "lib": self.rows("lib"),
                  "pred": self.rows("pred")}
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


class ForecastExplorer(Explorer):
    """Forecasting explorer: E, tau, Tp, theta, knn sliders, library and prediction rows
    (range sliders), method and variable dropdowns; draws skill vs E (chosen E marked),
    skill vs theta (chosen theta marked) and observed vs predicted.

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
        from ..labeled.edm import THETAS

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
        T = int(self.state.ds.sizes[self.state.dim])
        for name in ("lib", "pred"):  # rows along time; the whole series by default
            c[name] = w.IntRangeSlider(value=p[name] or (0, T - 1), min=0, max=T - 1,
                                       description=f"{name} rows", continuous_update=False,
                                       style={"description_width": "initial"})
        if len(names) > 1:
            c["column"] = w.Dropdown(options=names, value=p["column"], description="column")
            c["target"] = w.Dropdown(options=names, value=p["target"], description="target")
        return c

    def draw(self, results: dict) -> str:
        from .. import plot

        p = self.state.params
        fig = self.figure
        gs = fig.add_gridspec(2, 2)
        ax_e, ax_t = fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1])
        ax_f = fig.add_subplot(gs[1, :])
        plot.skill(results["skill_E"], ax=ax_e)
        ax_e.axvline(p["E"], color="0.5", ls="--", lw=1)
        plot.skill(results["skill_theta"], ax=ax_t)
        ax_t.axvline(p["theta"], color="0.5", ls="--", lw=1)
        f = results["forecast"]
        # a long forecast drawn whole is a solid band: show its last ZOOM steps
        tdim = f.prediction.dims[-1]
        shown = f.isel({tdim: slice(-ZOOM, None)}) if f.sizes[tdim] > ZOOM else f
        plot.prediction(shown, ax=ax_f)
        if shown is not f:
            ax_f.set_title(f"{ax_f.get_title()} (last {ZOOM} of {f.sizes[tdim]} steps)".strip())
        return (f"{p['method']} E={p['E']}, τ={p['tau']}, Tp={p['Tp']}"
                + (f", θ={p['theta']:g}" if p["method"] == "smap" else "")
                + f": ρ = {float(f.rho):.3f}, MAE = {float(f.mae):.3g}; best E = "
                  f"{results['skill_E'].attrs.get('best_E')}, best θ = "
                  f"{results['skill_theta'].attrs.get('best_theta')}")
