"""The recurrence explorer: the recurrence plot and the RQA measures."""

from __future__ import annotations

from typing import Any

from .base import Explorer, State, _series_data, _slider, _time_dim


class RecurrenceState(State):
    """Recurrence: ``E``, ``tau``, ``threshold`` ("recurrence_rate" or "eps") and its
    ``value``; the plot shows the first ``max_points`` points, the measures use them all."""

    defaults = {"column": None, "E": 2, "tau": 1, "threshold": "recurrence_rate",
                "value": 0.05, "max_points": 500}

    def __init__(self, data, **kwargs: Any):
        self.dim = _time_dim(data, kwargs.pop("time_dim", None) or kwargs.pop("dim", None))
        self.ds, self.names = _series_data(data, self.dim)
        super().__init__(data, **kwargs)
        self.params["column"] = self.params["column"] or self.names[0]

    def results(self) -> dict:
        from ..labeled import rqa as _rqa

        p = self.params
        x = self.ds[p["column"]]
        thr = {p["threshold"]: float(p["value"])}
        part = x.isel({self.dim: slice(0, int(p["max_points"]))})
        R = self.call(_rqa.recurrence_plot, part, E=p["E"], tau=p["tau"], time_dim=self.dim, **thr)
        q = self.call(_rqa.rqa, x, E=p["E"], tau=p["tau"], time_dim=self.dim, **thr)
        return {"recurrence": R, "rqa": q}


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
        from .. import plot

        ax = self.figure.add_subplot()
        plot.recurrence_plot(results["recurrence"], ax=ax)
        q = results["rqa"]
        return ", ".join(f"{m} = {float(q[m]):.3g}" for m in
                         ("RR", "DET", "L", "LAM", "TT", "ENTR") if m in q)
