"""The ``.edm`` accessor on DataArray and Dataset: forwarding only.

Every method calls the function of the same name in :mod:`xedm` with the object as first
argument, so ``ds.edm.simplex(E=3, columns="x")`` is ``xedm.simplex(ds, E=3, columns="x")``.
"""

from __future__ import annotations

import xarray as xr


def _forward(name: str, module: str):
    def method(self, *args, **kwargs):
        import importlib

        func = getattr(importlib.import_module(module), name)
        return func(self._obj, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"Forward to :func:`{module}.{name}` with this object as ``data``."
    return method


class _EDMAccessor:
    def __init__(self, obj):
        self._obj = obj

    simplex = _forward("simplex", "xedm.labeled.edm")
    smap = _forward("smap", "xedm.labeled.edm")
    embed_dimension = _forward("embed_dimension", "xedm.labeled.edm")
    predict_interval = _forward("predict_interval", "xedm.labeled.edm")
    predict_nonlinear = _forward("predict_nonlinear", "xedm.labeled.edm")
    ccm = _forward("ccm", "xedm.labeled.xmap")
    xmap = _forward("xmap", "xedm.labeled.xmap")
    rqa = _forward("rqa", "xedm.labeled.rqa")
    recurrence_plot = _forward("recurrence_plot", "xedm.labeled.rqa")
    surrogates = _forward("surrogates", "xedm.labeled.surrogates")


@xr.register_dataarray_accessor("edm")
class EDMDataArrayAccessor(_EDMAccessor):
    """``da.edm``: EDM and RQA methods on a DataArray (time on ``dim``, other dims broadcast)."""


@xr.register_dataset_accessor("edm")
class EDMDatasetAccessor(_EDMAccessor):
    """``ds.edm``: EDM and RQA methods on a Dataset (variables chosen by ``columns``/``target``)."""
