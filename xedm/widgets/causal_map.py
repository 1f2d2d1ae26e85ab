"""The causal-map explorer: the xmap heatmap and the CCM convergence of a picked pair."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from .base import Explorer, State, _series_data, _slider, _time_dim, _xmap_result


class CausalMapState(State):
    """The all-pairs causal map (xmap, E chosen per series up to ``E_max``) and the CCM
    convergence of the picked pair (``library``, ``target``) over ``n_sizes`` sizes with
    ``samples`` samples."""

    defaults = {"library": None, "target": None, "E_max": 6, "tau": 1, "samples": 20,
                "n_sizes": 6, "seed": 1, "order": "cluster"}

    def __init__(self, data, *, dim: str | None = None, truth=None, **kwargs: Any):
        self.time_dim = kwargs.pop("time_dim", None)
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
        if self.time_dim is None:
            two = isinstance(data, xr.DataArray) and data.ndim == 2 and dim in data.dims
            self.time_dim = (next(str(d) for d in data.dims if d != dim) if two
                             else _time_dim(data, None))
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
        from ..labeled import xmap

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
        from .. import plot

        p = self.state.params
        ax_m, ax_c = self.figure.subplots(1, 2, width_ratios=[1.1, 1])
        cmap = results["xmap"]
        truth = self.state.truth
        if truth is not None:
            truth = truth.assign_coords(driver=[str(v) for v in truth.driver.values],
                                        driven=[str(v) for v in truth.driven.values])
        plot.causal_map(cmap, ax=ax_m, order=p["order"], truth=truth)
        rows = [str(v) for v in cmap.library.values]  # the map's order (as causal_map's)
        cols = [str(v) for v in cmap.target.values]
        if p["order"] == "cluster" and rows == cols:
            idx = plot.cluster_order(cmap.rho.transpose("library", "target").values)
            rows = cols = [rows[i] for i in idx]
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
        ax_c.set_ylabel("ρ")  # the map's colour bar beside it already names the skill
        rho = float(cmap.rho.sel(library=p["library"], target=p["target"]))
        return f"{plot.arrow(p['library'], p['target'])}: xmap ρ = {rho:.3f}"
