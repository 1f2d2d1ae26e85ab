"""Figures for print: the ``"paper"`` style (column widths, fonts of at least 7 pt at the
printed size, colour-blind-safe colours, vector output with real text), and the width that
the views lay their panels out for."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

#: printed widths in inches: a journal's single column (89 mm) and double column (183 mm)
WIDTHS = {"single": 3.5, "double": 7.2}

#: Okabe & Ito's colour-blind-safe palette (yellow left out: too faint on white)
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]

#: the smallest font size (points, at the printed width) the paper style uses
MIN_PT = 7.0

# the active style: None (matplotlib's own rc) or {"name": ..., "width": inches}
_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("xedm_style",
                                                                      default=None)


def width_inches(width: str | float) -> float:
    """The printed width of ``width``: ``"single"``, ``"double"`` or inches.

    Examples
    --------
    >>> width_inches("single"), width_inches(5)
    (3.5, 5.0)
    """
    if isinstance(width, str):
        if width not in WIDTHS:
            raise ValueError(f"width={width!r}: use 'single', 'double' or a width in inches")
        return WIDTHS[width]
    try:
        value = float(width)
    except (TypeError, ValueError):
        raise TypeError(f"width must be 'single', 'double' or inches, got {width!r}") from None
    if not 1.0 <= value <= 20.0:
        raise ValueError(f"width={width!r} inches: give 1 to 20")
    return value


def rc(width: str | float = "single") -> dict[str, Any]:
    """The matplotlib rc settings of the paper style at ``width`` (see :func:`paper`).

    Examples
    --------
    >>> rc("double")["figure.figsize"]
    (7.2, 4.8)
    """
    from cycler import cycler

    w = width_inches(width)
    return {
        "figure.figsize": (w, round(w * 2 / 3, 2)),
        "figure.dpi": 150,
        "figure.constrained_layout.use": True,
        # "small" (legends, names) is 0.833 of font.size: 7 pt
        "font.size": 8.4,
        "axes.titlesize": 8.4,
        "axes.labelsize": 8.4,
        "xtick.labelsize": MIN_PT,
        "ytick.labelsize": MIN_PT,
        "legend.fontsize": MIN_PT,
        "legend.title_fontsize": MIN_PT,
        "figure.titlesize": 9.0,
        "figure.labelsize": 8.4,
        "axes.linewidth": 0.6,
        "lines.linewidth": 1.0,
        "lines.markersize": 3.5,
        "xtick.major.width": 0.6,
        "ytick.major.width": 0.6,
        "axes.prop_cycle": cycler(color=OKABE_ITO),
        "image.cmap": "viridis",
        # vector output with text a journal's editor can select and restyle
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "svg.fonttype": "none",
        "savefig.dpi": 600,
    }


@contextlib.contextmanager
def paper(width: str | float = "single"):
    """A context in which xedm's views draw figures for print.

    Figures are ``width`` wide (``"single"``: 3.5 in, ``"double"``: 7.2 in, or inches),
    their text at least 7 pt at that size, colours from Okabe & Ito's colour-blind-safe
    palette (maps in viridis), PDF/SVG text kept as text (fonts embedded as TrueType).
    ``result.edm.plot(style="paper", width=...)`` does the same for one figure.  Save the
    figure as PDF or SVG for a vector file (:func:`savefig` keeps the style's settings).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import xarray as xr
    >>> from xedm import plot
    >>> ds = xr.Dataset({"rho": ("E", [0.5, 0.9, 0.8])}, coords={"E": [1, 2, 3]})
    >>> with plot.paper("single"):
    ...     ax = plot.skill(ds)
    >>> float(ax.figure.get_figwidth()), ax.title.get_fontsize()
    (3.5, 8.4)
    """
    import matplotlib as mpl

    w = width_inches(width)
    token = _ACTIVE.set({"name": "paper", "width": w})
    try:
        with mpl.rc_context(rc(w)):
            yield
    finally:
        _ACTIVE.reset(token)


def active_width() -> float | None:
    """The figure width (inches) of the active style, None outside one."""
    style = _ACTIVE.get()
    return None if style is None else style["width"]


def min_font() -> float:
    """The smallest font size a view may shrink text to: 7 pt in the paper style."""
    return MIN_PT if _ACTIVE.get() is not None else 4.0


def styled(style: str | None, width: str | float | None):
    """The context of ``style=`` and ``width=`` as :func:`xedm.plot.plot` takes them."""
    if style is None:
        if width is not None:
            raise ValueError("width= needs style='paper' (the default style has no width)")
        return contextlib.nullcontext()
    if style != "paper":
        raise ValueError(f"style={style!r}: use None or 'paper'")
    return paper("single" if width is None else width)


def savefig(fig, path, **kwargs: Any):
    """``fig.savefig(path)`` (``fig`` a Figure, or an Axes of one) with the paper style's
    output settings: text kept as text in PDF and SVG (TrueType fonts embedded), 600 dpi
    for a raster file.

    Examples
    --------
    >>> import matplotlib, os, tempfile
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> path = os.path.join(tempfile.mkdtemp(), "fig.svg")
    >>> savefig(fig, path)
    >>> "<text" in open(path).read() or "font" in open(path).read()
    True
    """
    import matplotlib as mpl

    if not hasattr(fig, "savefig"):  # an Axes, as a single-panel view returns
        fig = fig.figure
    keys = ("pdf.fonttype", "ps.fonttype", "svg.fonttype", "savefig.dpi")
    settings = {k: v for k, v in rc().items() if k in keys}
    with mpl.rc_context(settings):
        fig.savefig(path, **kwargs)
