"""pyEDM's auxiliary functions on xedm: ``sampleData`` (pyEDM's own files), ``ComputeError``,
``Embed`` and ``SurrogateData``.

``SurrogateData`` draws from the same generators as pyEDM 2.5.7, in the same order
(Python's :mod:`random` for ``ebisuzaki`` and ``seasonal``, numpy's global generator through
pandas for ``random_shuffle``), so after the same ``random.seed`` / ``numpy.random.seed``
both give the same surrogates.  xedm's own :func:`xedm.surrogates` takes a seed instead.
"""

from __future__ import annotations

import cmath
import importlib.util
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.validate import check_int, check_number

#: pyEDM's sample files -> the names of its ``sampleData``
SAMPLE_FILES = {
    "TentMap": "TentMap.csv", "TentMapNoise": "TentMapNoise.csv", "circle": "circle.csv",
    "circleNoise": "circle_noise.csv", "circle_noTime": "circle_noTime.csv",
    "columnNameSpace": "columnNameSpace.csv", "block_3sp": "block_3sp.csv",
    "sardine_anchovy_sst": "sardine_anchovy_sst.csv", "Lorenz5D": "LorenzData1000.csv",
    "SumFlow_1980-2005": "S12CD-S333-SumFlow_1980-2005.csv",
}
_SAMPLES: dict[str, pd.DataFrame] = {}


def pyedm_dir() -> Path:
    """The installed pyEDM package's folder (pyEDM itself is not imported)."""
    spec = importlib.util.find_spec("pyEDM")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pyEDM's sample data are pyEDM's own files, and pyEDM is not "
                          "installed: pip install pyEDM (xedm.datasets generates systems "
                          "without it)")
    return Path(next(iter(spec.submodule_search_locations)))


def sample_data() -> dict[str, pd.DataFrame]:
    """pyEDM's ``sampleData``: its own CSV files, read from the installed pyEDM (once)."""
    if not _SAMPLES:
        folder = pyedm_dir() / "data"
        _SAMPLES.update({name: pd.read_csv(folder / f) for name, f in SAMPLE_FILES.items()})
    return _SAMPLES


def ComputeError(obs, pred, digits: int = 6) -> dict:
    """pyEDM's ``ComputeError``: ``{"rho", "MAE", "CAE", "RMSE"}`` of the pairs where both
    are finite, each rounded to ``digits``.

    As pyEDM's: ``MAE`` is the signed maximum error ``max(obs - pred)`` (xedm's ``mae`` is
    the mean absolute error), ``CAE`` the sum of absolute errors; with fewer than 5 pairs it
    prints a note and returns ``{"rho", "MAE", "RMSE"}`` all NaN.

    Examples
    --------
    >>> import numpy as np
    >>> err = ComputeError(np.array([1., 2, 3, 4, 5]), np.array([1.1, 2, 2.9, 4.2, 5]))
    >>> {k: float(v) for k, v in err.items()}
    {'rho': 0.99741, 'MAE': 0.1, 'CAE': 0.4, 'RMSE': 0.109545}
    """
    digits = check_int("digits", digits)
    o = np.asarray(obs, dtype=float).ravel()
    p = np.asarray(pred, dtype=float).ravel()
    if o.shape != p.shape:
        raise ValueError(f"obs and pred must have the same length, got {o.size} and {p.size}")
    keep = np.isfinite(p) & np.isfinite(o)
    o, p = o[keep], p[keep]
    if len(p) < 5:
        print(f"ComputeError(): Not enough data ({len(p)}) to compute error statistics.")
        return {"rho": np.nan, "MAE": np.nan, "RMSE": np.nan}
    err = o - p
    return {"rho": round(np.corrcoef(o, p)[0, 1], digits), "MAE": round(err.max(), digits),
            "CAE": round(np.abs(err).sum(), digits),
            "RMSE": round(np.sqrt(np.mean(err ** 2)), digits)}


def Embed(dataFrame=None, E=0, tau=-1, columns="", includeTime=False, pathIn="./",
          dataFile=None) -> pd.DataFrame:
    """pyEDM's ``Embed``: the time-delay embedding of ``columns`` as a DataFrame.

    Columns ``x(t-0), y(t-0), x(t-1), y(t-1), ...`` (lag ``j * |tau|``; ``x(t+j)`` for
    ``tau > 0``), the first ``(E-1)|tau|`` rows (last, for tau > 0) NaN; with
    ``includeTime`` the first column of ``dataFrame`` comes first.  ``dataFile`` reads
    ``pathIn + dataFile`` instead of ``dataFrame``.  xedm's functions embed internally
    (``E``, ``tau``, ``columns=[...]``).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"Time": [1, 2, 3], "x": [1.0, 2.0, 3.0]})
    >>> Embed(df, E=2, tau=-1, columns="x")
       x(t-0)  x(t-1)
    0     1.0     NaN
    1     2.0     1.0
    2     3.0     2.0
    """
    E, tau = check_int("E", E), check_int("tau", tau)
    if E < 1:
        raise ValueError(f"E={E} is invalid: E must be >= 1")
    if tau == 0:
        raise ValueError("tau=0 is invalid: tau must be non-zero (pyEDM's tau=-1 is one "
                         "step into the past)")
    if dataFile is not None:
        dataFrame = pd.read_csv(str(pathIn) + str(dataFile))
    if not isinstance(dataFrame, pd.DataFrame):
        raise TypeError(f"dataFrame must be a pandas DataFrame, got "
                        f"{type(dataFrame).__name__}")
    if isinstance(columns, str):
        columns = columns.split()
    columns = list(columns)
    if not columns:
        raise ValueError("columns is required, e.g. columns='x y'")
    missing = [c for c in columns if c not in dataFrame.columns]
    if missing:
        raise ValueError(f"columns: {missing} not in the DataFrame "
                         f"(columns: {list(dataFrame.columns)})")
    sign = "-" if tau < 0 else "+"
    out = {f"{c}(t{sign}{j * abs(tau)})": dataFrame[c].shift(-j * tau)
           for j in range(E) for c in columns}
    df = pd.DataFrame(out, index=dataFrame.index)
    return dataFrame.iloc[:, [0]].join(df) if includeTime else df


def _ebisuzaki(x: np.ndarray, count: int) -> list[np.ndarray]:
    """Ebisuzaki's phase randomisation with pyEDM's draws and quirks: one
    ``random.random()`` per positive frequency below Nyquist, the spectrum mirrored, and for
    an even length one more draw scaling the last term; rescaled to the data's std."""
    n = len(x)
    if n % 2:
        raise ValueError(f"method='ebisuzaki' needs an even number of rows (got {n}): "
                         "pyEDM 2.5.7 fails on odd lengths; use "
                         "xedm.surrogates(..., method='ebisuzaki') instead")
    half = n // 2
    sigma = np.std(x)
    amp = np.abs(np.fft.fft(x))
    amp[0] = 0
    out = []
    for _ in range(count):
        phases = [2 * math.pi * random.random() for _ in range(half - 1)]
        angles = [0, *phases, 0, *[-a for a in reversed(phases)]]
        z = [a * cmath.exp(complex(0, t)) for a, t in zip(amp, angles, strict=False)]
        z[-1] = complex(math.sqrt(2) * amp[-1] * math.cos(2 * math.pi * random.random()))
        real = (np.fft.ifft(z) / n).real
        out.append(np.array([sigma * r / np.std(real) for r in real]))
    return out


def _seasonal(y: np.ndarray, count: int, alpha, smooth: float) -> list[np.ndarray]:
    """A smoothing spline (scipy's UnivariateSpline, smoothing factor ``smooth``) plus the
    residuals in random order plus Gaussian noise of std ``alpha`` (default: range / 5)."""
    from scipy.interpolate import UnivariateSpline

    n = len(y)
    t = np.arange(n)
    spline = UnivariateSpline(t, y)
    spline.set_smoothing_factor(smooth)
    trend = spline(t)
    residual = list(y - trend)
    alpha = np.ptp(y) / 5 if alpha is None else alpha
    out = []
    for _ in range(count):
        noise = [random.normalvariate(0, alpha) for _ in range(n)]
        out.append(trend + random.sample(residual, n) + noise)
    return out


def SurrogateData(dataFrame=None, column=None, method="ebisuzaki", numSurrogates=10,
                  alpha=None, smooth=0.8, outputFile=None) -> pd.DataFrame:
    """pyEDM's ``SurrogateData``: the time column, then ``column_1 .. column_n``, rounded to
    8 decimals (``outputFile``: also written as CSV).

    ``method``: ``"ebisuzaki"`` (random phases, the data's power spectrum and std; even
    lengths only, as pyEDM's), ``"random_shuffle"`` (a permutation) or ``"seasonal"`` (a
    smoothing spline, shuffled residuals and Gaussian noise of std ``alpha``).  The draws are
    pyEDM's (Python's :mod:`random`; numpy's global generator for ``random_shuffle``): seed
    those to reproduce a pyEDM run.  :func:`xedm.surrogates` is xedm's, seeded.

    Examples
    --------
    >>> import random, numpy as np, pandas as pd
    >>> df = pd.DataFrame({"Time": np.arange(1, 9), "x": np.sin(np.arange(8.0))})
    >>> random.seed(1)
    >>> SurrogateData(df, "x", numSurrogates=2).columns.tolist()
    ['Time', 'x_1', 'x_2']
    """
    if not isinstance(dataFrame, pd.DataFrame):
        raise TypeError(f"dataFrame must be a pandas DataFrame, got "
                        f"{type(dataFrame).__name__}")
    if column is None or column not in dataFrame.columns:
        raise ValueError(f"column={column!r}: name one column of the DataFrame "
                         f"({list(dataFrame.columns)})")
    count = check_int("numSurrogates", numSurrogates, 1)
    if alpha is not None:  # pyEDM's noise std of "seasonal"
        alpha = check_number("alpha", alpha, "0.1 (the std of the added noise)", 0)
    smooth = check_number("smooth", smooth, "0.8", 0)
    kind = str(method).lower()
    x = dataFrame[column].to_numpy()
    if kind == "random_shuffle":
        series = [dataFrame[column].sample(n=len(dataFrame)).to_numpy() for _ in range(count)]
    elif kind == "ebisuzaki":
        series = _ebisuzaki(x, count)
    elif kind == "seasonal":
        series = _seasonal(x, count, alpha, smooth)
    else:
        raise ValueError(f"method={method!r}: use 'ebisuzaki', 'random_shuffle' or "
                         "'seasonal'")
    df = pd.DataFrame(dataFrame.iloc[:, 0])
    for i, s in enumerate(series):
        df[i + 1] = s
    df = df.round(8)
    df.columns = [df.columns[0], *[f"{column}_{i + 1}" for i in range(count)]]
    if outputFile:
        df.to_csv(outputFile, index=False)
    return df
