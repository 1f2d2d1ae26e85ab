"""pyEDM's functions on xedm: a pyEDM script runs by changing its import.

>>> from xedm.compat import pyedm as pyEDM          # was: import pyEDM

Each function takes pyEDM's parameters (``dataFrame`` with time in its first column,
``columns``/``target`` as names or space-separated strings, ``lib``/``pred`` as 1-based row
ranges such as ``"1 100"``, ``tau=-1``, ``knn=0`` for the default, ...) and returns pyEDM's
DataFrames (``Time, Observations, Predictions, Pred_Variance``; ``LibSize, x:y, y:x``; ``E,
rho``; Multiview's ``{"Predictions", "View"}``; ...) with pyEDM's numbers, computed by
xedm.  The differences that pyEDM's own conventions force (its random CCM libraries, its
treatment of NaN and of several lib segments, its "MAE") are listed in docs/from-pyedm.md;
arguments that would change pyEDM's results and have no xedm counterpart
(``generateSteps``, ``returnObject``, an S-map ``solver``, ``ignoreNan=False``, tau > 0),
and those pyEDM itself ignores (Multiview's ``knn`` and ``excludeTarget``), raise a
ValueError saying so.  Arguments that only
tune pyEDM's own parallelism (``numProcess``, ``mpMethod``, ``chunksize``, ``kdWorkers``,
``parallel``, ``sharedMB``) and ``verbose`` are accepted and have no effect.

Examples
--------
>>> import numpy as np, pandas as pd
>>> t = np.arange(1, 201)
>>> df = pd.DataFrame({"Time": t, "x": np.sin(0.3 * t)})
>>> out = Simplex(df, columns="x", target="x", lib="1 100", pred="101 190", E=2)
>>> list(out.columns)
['Time', 'Observations', 'Predictions', 'Pred_Variance']
>>> EmbedDimension(df, columns="x", target="x", lib="1 100", pred="101 190", maxE=3,
...                showPlot=False).columns.tolist()
['E', 'rho']
"""

from ._args import RADII, row_slices
from .auxiliary import ComputeError, Embed, SurrogateData, sample_data
from .ccm import CCM
from .multiview import Multiview
from .multiview import _view_order as _view_order  # tests use pyEDM's ranking
from .multiview import _view_table as _view_table
from .predict import (
    EmbedDimension,
    PredictExclusionRadius,
    PredictInterval,
    PredictNonlinear,
    Simplex,
    SMap,
)

__all__ = ["CCM", "ComputeError", "Embed", "EmbedDimension", "Examples", "Multiview",
           "PredictExclusionRadius", "PredictInterval", "PredictNonlinear", "RADII", "SMap",
           "Simplex", "SurrogateData", "row_slices", "sampleData"]


def Examples() -> None:
    """pyEDM's ``Examples()``: its canonical calls on its sample data (pyEDM installed, for
    ``sampleData``), each printed, then run here; the plots shown (``showPlot=True``).

    Examples
    --------
    >>> Examples()  # doctest: +SKIP
    EmbedDimension( dataFrame = sampleData["TentMap"], columns = 'TentMap', ...
    """
    from .examples import EXAMPLES, command

    data = sample_data()
    for where, func, name, kw in EXAMPLES:
        if where == "Examples":
            print(command(func, name, kw))
            print()
            globals()[func](data[name], **kw)


def __getattr__(name: str):
    """``sampleData``: pyEDM's sample DataFrames, read from the installed pyEDM's own files
    (ImportError naming ``pip install pyEDM`` without it); xedm ships no copy."""
    if name == "sampleData":
        return sample_data()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
