"""xedm: Empirical Dynamic Modeling and recurrence analysis on labeled (xarray) data.

Importing xedm registers the ``.edm`` accessor on ``xr.DataArray`` and ``xr.Dataset``.

>>> import xedm
>>> ds = xedm.datasets.coupled_logistic(500)
>>> skill = ds.edm.embed_dimension(columns="x", E_max=6)
>>> int(skill.attrs["best_E"]) >= 1
True
"""

from __future__ import annotations

from . import accessor as _accessor  # noqa: F401  (registers .edm)
from . import api as _api
from .options import get_option, set_options  # noqa: F401  (declared in xedm/api.py)

__version__ = "0.2.0"

#: submodules users reach as attributes (imported on first use)
_SUBMODULES = ("datasets", "plot", "widgets")


def __getattr__(name: str):
    # submodules and the public methods (declared in xedm/api.py) imported on first use, so
    # `import xedm` stays fast; `xedm.rqa` is then the function itself (real signature and
    # docstring)
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"xedm.{name}")
    if name in _api.names():
        func = _api.method(name).function()
        globals()[name] = func
        return func
    raise AttributeError(f"module 'xedm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


#: every public method (declared once in xedm/api.py) and the datasets module
__all__ = [*_api.names(), "datasets"]
