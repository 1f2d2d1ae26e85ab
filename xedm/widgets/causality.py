"""The causality explorer: CCM convergence between two series, with a surrogate band."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Explorer, State, _series_data, _slider, _time_dim


class CausalityState(State):
    """CCM between two series: ``library``, ``target``, ``lib_min``/``lib_max`` (the range
    of library sizes, ``n_sizes`` of them), ``samples``, ``E``, ``tau``, ``seed``, and
    ``surrogates`` (ebisuzaki surrogates of the target for the null band and p-values; 0 for
    none)."""

    defaults = {"library": None, "target": None, "lib_min": 10, "lib_max": None,
                "n_sizes": 6, "samples": 30, "E": 2, "tau": 1, "seed": 1, "surrogates": 19}

    def __init__(self, data, **kwargs: Any):
        self.dim = _time_dim(data, kwargs.pop("time_dim", None) or kwargs.pop("dim", None))
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
        from ..labeled import xmap

        p = self.params
        pair = [p["library"], p["target"]] if p["library"] != p["target"] else [p["library"]]
        res = self.call(xmap.ccm, self.ds, columns=pair, lib_sizes=self.lib_sizes(),
                        E=p["E"], tau=p["tau"], samples=p["samples"], seed=p["seed"],
                        keep_samples=True, time_dim=self.dim,
                        surrogates=int(p["surrogates"]))
        return {"ccm": res}


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
            self._after_change(change)

        return on_change

    def draw(self, results: dict) -> str:
        from .. import plot

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
