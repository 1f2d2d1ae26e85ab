"""The ``.edm`` accessor on DataArray and Dataset: forwarding only.

Every method calls the public function of the same name with the object as first argument, so
``ds.edm.simplex(E=3, columns="x")`` is ``xedm.simplex(ds, E=3, columns="x")``.  The methods
are generated from the functions the first time they are looked up: their signature is the
function's without ``data`` and their docstring is the function's, so ``help(ds.edm.simplex)``,
Jupyter's ``?`` and the API docs show the real parameters, and a parameter added to a function
appears here without any edit.

Forwarding another function is its declaration in :mod:`xedm.api`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from typing import Any

import xarray as xr

from . import api

#: method name -> module of the public function it forwards to (the function has the same
#: name and takes the data as its first parameter); declared in xedm/api.py
FORWARDED: dict[str, str] = api.forwarded()

_PUBLIC = "xedm"  # where users (and the API docs) find the functions


def _drop_parameter(doc: str, name: str) -> str:
    """``doc`` without the numpydoc entry of parameter ``name`` (the accessor's object)."""
    lines = doc.splitlines()
    out: list[str] = []
    skipping = False
    indent = None
    for line in lines:
        stripped = line.lstrip()
        here = len(line) - len(stripped)
        if skipping:
            if stripped and here <= indent:
                skipping = False
            else:
                continue
        if re.match(rf"{name}\s*:", stripped) and not skipping:
            skipping, indent = True, here
            continue
        out.append(line)
    return "\n".join(out)


def _qualify(doc: str) -> str:
    """Cross references written inside a function's module (``:func:`simplex```) made absolute
    (``:func:`~xedm.simplex```), so they resolve from the accessor's pages too."""
    return re.sub(r":func:`(\w+)`", rf":func:`~{_PUBLIC}.\1`", doc)


def _first_param(sig: inspect.Signature) -> str:
    params = list(sig.parameters.values())
    if not params or params[0].kind not in (inspect.Parameter.POSITIONAL_ONLY,
                                            inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise TypeError("a forwarded function must take the data as its first parameter")
    return params[0].name


def forward(func) -> Any:
    """A method calling ``func(self._obj, ...)`` with ``func``'s signature minus its first
    parameter and ``func``'s docstring (the ``data`` entry left out).

    Examples
    --------
    >>> import inspect
    >>> def f(data, E=2, *, tau=1):
    ...     '''Do f.'''
    >>> m = forward(f)
    >>> str(inspect.signature(m))
    '(self, E=2, *, tau=1)'
    """
    sig = inspect.signature(func)
    data = _first_param(sig)
    params = list(sig.parameters.values())[1:]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    @functools.wraps(func)
    def method(self, *args, **kwargs):
        return func(self._obj, *args, **kwargs)

    method.__signature__ = sig.replace(parameters=[self_param, *params])
    del method.__wrapped__  # inspect must read __signature__, not the function's own
    name = func.__name__
    head = (f"Accessor form of :func:`{_PUBLIC}.{name}`: ``obj.edm.{name}(...)`` is "
            f"``{_PUBLIC}.{name}(obj, ...)``, with this object as ``{data}``.\n\n")
    body = inspect.cleandoc(func.__doc__ or "")
    method.__doc__ = _qualify(head + _drop_parameter(body, data))
    method.__qualname__ = f"_EDMAccessor.{name}"
    method.__module__ = __name__
    return method


class _Forward:
    """Class attribute resolving to the generated method on first lookup (so ``import xedm``
    does not import every module: rqa's is only loaded when ``.edm.rqa`` is first used)."""

    def __init__(self, module: str):
        self.module = module
        self.method = None

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if self.method is None:
            func = getattr(importlib.import_module(self.module), self.name)
            self.method = forward(func)
        return self.method if obj is None else self.method.__get__(obj, objtype)


class _EDMAccessor:
    def __init__(self, obj):
        self._obj = obj

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(FORWARDED))

    def plot(self, **kwargs):
        """Plot this xedm result with the view that suits the function that made it.

        Dispatches on ``attrs["xedm_function"]`` (set by every xedm function; the result's
        variables and dims are used when it is missing) to :func:`xedm.plot.plot`.

        Parameters
        ----------
        **kwargs
            Passed to the view (``ax=``, ``var=``, ...): see :func:`xedm.plot.plot`.

        Returns
        -------
        matplotlib.axes.Axes or matplotlib.figure.Figure
            The Axes, or the Figure for a multi-panel view (S-map coefficients with the
            forecast).

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import xedm
        >>> x = xedm.datasets.logistic_map(300)
        >>> ax = x.edm.embed_dimension(E_max=5).edm.plot()
        >>> ax.get_xlabel()
        'embedding dimension E'
        """
        from . import plot

        return plot.plot(self._obj, **kwargs)

    def explore(self, kind: str | None = None, **kwargs):
        """An interactive explorer (ipywidgets) of this data: see :func:`xedm.widgets.explore`.

        Parameters
        ----------
        kind : {"forecast", "causality", "causal_map", "recurrence"}, optional
            Which explorer; by default "forecast" for one series or a Dataset, "causal_map"
            for the result of :func:`xedm.xmap`.
        **kwargs
            Passed to the explorer (initial parameters, ``backend=``, ``neighbors=``, ...).

        Returns
        -------
        xedm.widgets.Explorer
            Displays itself in Jupyter; ``.state`` holds the parameters and the results.
        """
        from . import widgets

        return widgets.explore(self._obj, kind, **kwargs)


for _name, _module in FORWARDED.items():
    _f = _Forward(_module)
    _f.__set_name__(_EDMAccessor, _name)
    setattr(_EDMAccessor, _name, _f)
del _name, _module, _f


@xr.register_dataarray_accessor("edm")
class EDMDataArrayAccessor(_EDMAccessor):
    """``da.edm``: EDM and RQA methods on a DataArray (time on ``dim``, other dims broadcast)."""


@xr.register_dataset_accessor("edm")
class EDMDatasetAccessor(_EDMAccessor):
    """``ds.edm``: EDM and RQA methods on a Dataset (variables chosen by ``columns``/``target``)."""
