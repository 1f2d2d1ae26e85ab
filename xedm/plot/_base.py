"""Shared pieces of the plots: axes, names, numbers, legends placed off the data."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from .style import active_width, min_font

# what a dim or variable is called on an axis
NAMES = {
    "E": "embedding dimension E",
    "Tp": "prediction horizon Tp",
    "theta": "S-map nonlinearity θ",
    "lib_size": "library size L",
    "rho": "skill ρ (Pearson)",
    "mae": "mean absolute error",
    "rmse": "root mean squared error",
    "eps": "threshold ε",
    "recurrence_rate": "recurrence rate",
}


def new_axes(ax=None, **subplots: Any):
    """``ax``, or the Axes of a new constrained-layout figure (legends outside fit in)."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes (e.g. from plt.subplots()) or None, "
                            f"got {type(ax).__name__} {ax!r}")
        return ax
    import matplotlib.pyplot as plt

    if "figsize" in subplots:
        subplots["figsize"] = sized(*subplots["figsize"])
    fig, ax = plt.subplots(layout="constrained", **subplots)
    fig._xedm_own = True  # a figure of the view's own: finish() fits its texts
    return ax


def sized(width: float, height: float, min_height: float = 2.0) -> tuple[float, float]:
    """A figure size of ``width`` x ``height`` inches made the active style's width
    (:func:`xedm.plot.paper`), its height scaled with it (at least ``min_height``)."""
    w = active_width()
    if w is None:
        return (width, height)
    return (w, max(min_height, height * w / width))


def freeze_ticks(fig) -> None:
    """Give the tick labels of ``fig`` the active style's sizes now: matplotlib makes tick
    labels when it draws, which may be after the style's context has ended."""
    if active_width() is None:
        return
    import matplotlib as mpl

    rc = mpl.rcParams
    for ax in fig.axes:
        for a in ("x", "y"):
            ax.tick_params(axis=a, which="major", labelsize=rc[f"{a}tick.labelsize"],
                           width=rc[f"{a}tick.major.width"])


def finish(ax):
    """``ax``, its figure's texts fitted (:func:`fit_texts`) when the view made the figure
    (a figure of the caller's, e.g. an explorer's, is fitted by the caller once it is full)."""
    freeze_ticks(ax.figure)
    if getattr(ax.figure, "_xedm_own", False):
        fit_texts(ax.figure)
    return ax


def new_figure(nrows: int, fig=None, **kwargs: Any):
    """(Figure, Axes array) with ``nrows`` rows sharing x; on ``fig`` (cleared) when given."""
    import matplotlib.pyplot as plt

    if fig is None:
        w, h = kwargs.pop("figsize", (8, 2.2 * nrows))
        fig = plt.figure(layout="constrained", figsize=sized(w, h, min_height=1.3 * nrows))
    else:
        _clear(fig)
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes


def _clear(fig) -> None:
    """Clear a Figure given as ``fig=`` (refusing anything else)."""
    from matplotlib.figure import Figure, SubFigure

    if not isinstance(fig, (Figure, SubFigure)):
        raise TypeError(f"fig must be a matplotlib Figure or None, got {type(fig).__name__} "
                        f"{fig!r}")
    fig.clear()


def variable(obj: xr.Dataset | xr.DataArray, var: str) -> xr.DataArray:
    if not isinstance(var, str):
        raise TypeError(f"var must be the name of a variable (a str), got {var!r}")
    if isinstance(obj, xr.DataArray):
        return obj
    if var not in obj.data_vars:
        raise ValueError(f"variable {var!r} not in the result; it has {sorted(obj.data_vars)}")
    return obj[var]


def label(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def short(name, chars: int = 14) -> str:
    """A series' name cut in the middle to ``chars`` characters (``…``), its end kept.

    Examples
    --------
    >>> short("sea_surface_temperature_anomaly", 12)
    'sea_sur…maly'
    """
    name = label(name)
    if len(name) <= chars:
        return name
    tail = max(2, chars // 3)
    return name[:chars - tail - 1] + "…" + name[-tail:]


def num(value: Any, digits: int = 3) -> str:
    """A number for a title: integers as they are, floats to ``digits`` significant digits."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | str):
        return str(value)
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return str(value)


def axis_name(obj, name: str) -> str:
    """How ``name`` (a dim or variable) reads on an axis: its ``long_name`` or a known name,
    with ``units`` from its attrs; a trailing ``_`` (the second time axis of a recurrence
    matrix) is dropped."""
    attrs = {}
    if name in getattr(obj, "coords", {}) or (isinstance(obj, xr.Dataset) and name in obj):
        attrs = obj[name].attrs
    base = name[:-1] if name.endswith("_") and len(name) > 1 else name
    text = attrs.get("long_name") or NAMES.get(base, base)
    units = attrs.get("units")
    return f"{text} [{units}]" if units else text


def params(attrs: dict, keys: tuple[str, ...]) -> str:
    """``"E=3, Tp=1"`` from the keys present in attrs (τ, θ spelled as symbols)."""
    symbols = {"tau": "τ", "theta": "θ"}
    return ", ".join(f"{symbols.get(k, k)}={num(attrs[k])}" for k in keys if k in attrs)


def p_floor(attrs: dict) -> float | None:
    """The smallest p-value ``n`` surrogates can give, ``1/(n+1)``, when the result's
    p-values are empirical ranks among its ``attrs["surrogates"]`` (else None)."""
    n = attrs.get("surrogates")
    if not isinstance(n, int | np.integer) or n < 1 or attrs.get("p_method") == "normal":
        return None
    return 1.0 / (int(n) + 1)


def p_text(p: float, floor: float | None, digits: int = 2) -> str:
    """``"p = 0.2"``, or ``"p ≤ 1/20"`` at the floor of 19 surrogates (a smaller p was not
    measurable).

    Examples
    --------
    >>> p_text(0.05, 1 / 20), p_text(0.2, 1 / 20), p_text(0.013, None)
    ('p ≤ 1/20', 'p = 0.2', 'p = 0.013')
    """
    if floor is not None and np.isfinite(p) and p <= floor * (1 + 1e-9):
        return f"p ≤ 1/{round(1 / floor)}"
    return f"p = {num(p, digits)}"


def outside_legend(ax, **kwargs: Any):
    """A legend to the right of the axes, never over the data (under the axes in a
    figure narrower than 5 inches of the paper style, where the data keeps the width)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    w = active_width()
    if w is not None and w < 5:
        kwargs.pop("borderaxespad", None)
        return legend_below(ax, handles, **kwargs)
    kwargs.setdefault("loc", "upper left")
    kwargs.setdefault("bbox_to_anchor", (1.01, 1.0))
    kwargs.setdefault("borderaxespad", 0.0)
    kwargs.setdefault("frameon", False)
    return ax.legend(**kwargs)


def legend_below(ax, handles, title: str | None = None, **kwargs: Any):
    """A legend of ``handles`` under the axes, off the data and the title: the figure's
    legend under every axes (laid out by the layout engine) when the view made the figure,
    else the axes' legend under its x tick labels.  As many columns as the width holds."""
    fig = ax.figure
    size = max(min_font(), ax.title.get_fontsize() * 0.85)
    r = renderer(fig)
    from matplotlib.font_manager import FontProperties

    prop = FontProperties(size=size)
    wide = [r.get_text_width_height_descent(h.get_label(), prop, ismath=False)[0]
            for h in handles]
    em = size * fig.dpi / 72
    entry = max(wide, default=0) + 4.5 * em  # handle, pads, column spacing
    room = fig.bbox.width * (0.95 if getattr(fig, "_xedm_own", False) else
                             ax.get_position().width)
    chars = int(max(16, 0.9 * room / (0.55 * size * fig.dpi / 72)))
    for h in handles:  # an entry wider than the figure: wrapped
        h.set_label(wrap(h.get_label(), chars))
    wide = [r.get_text_width_height_descent(h.get_label(), prop, ismath=False)[0]
            for h in handles]
    ncol = int(max(1, min(len(handles), room // max(entry, 1))))
    kwargs = {"ncol": ncol, "frameon": False, "fontsize": size, "title": title,
              "title_fontsize": size, "handlelength": 1.8, "columnspacing": 1.2, **kwargs}
    if getattr(fig, "_xedm_own", False) and fig.get_layout_engine() is not None:
        return fig.legend(handles=handles, loc="outside lower center", **kwargs)
    return ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=under_ticks(ax), borderaxespad=0.0, **kwargs)


def under_ticks(ax):
    """The axes' transform moved down past its x tick labels and label (fixed in inches,
    so it holds when a layout engine resizes the axes): a legend anchored at (0.5, 0) in
    it lies under them."""
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    r = renderer(fig)
    tight = ax.xaxis.get_tightbbox(r)
    below = 0.0 if tight is None else ax.get_window_extent(r).y0 - tight.y0
    shift = ScaledTranslation(0, -(max(below, 0.0) / fig.dpi + 0.04), fig.dpi_scale_trans)
    return ax.transAxes + shift


def call_view(view, obj, made: str, kwargs: dict):
    """``view(obj, **kwargs)``, with a keyword that neither the view nor matplotlib takes
    refused as a TypeError naming it and the view's parameters (matplotlib's own message
    is an AttributeError about ``Line2D.set()``)."""
    import inspect
    import re

    sig = inspect.signature(view).parameters.values()
    own = [p.name for p in list(sig)[1:] if p.kind is not p.VAR_KEYWORD]
    try:
        return view(obj, **kwargs)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as err:
        m = re.search(r"unexpected keyword argument '(\w+)'", str(err))
        if m is None or m.group(1) not in kwargs:
            if not kwargs or (isinstance(err, (TypeError, ValueError))
                              and any(re.search(rf"\b{re.escape(k)}\b", str(err))
                                      for k in kwargs)):
                raise  # the default view failed, or the message names the keyword already
            # a keyword's value the view cannot use (a missing variable or dim, a wrong
            # type): say which keywords were given, not matplotlib's or pandas' internals
            given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            cls = TypeError if isinstance(err, (TypeError, AttributeError)) else ValueError
            raise cls(f"plot: the {view.__name__} view (the plot of a {made} result) cannot use "
                      f"{given}: {type(err).__name__}: {err}; its parameters are {own}"
                      ) from None
        key = m.group(1)
        to_mpl = any(p.kind is p.VAR_KEYWORD for p in sig)
        raise TypeError(
            f"plot: {key}={kwargs[key]!r} is not a parameter of the {view.__name__} view (the "
            f"plot of a {made} result), whose parameters are {own}"
            + ("; other keywords go to matplotlib, which does not take it either" if to_mpl
               else "") + f": leave {key} out"
        ) from None


# ----------------------------------------------------------------------------- text that fits
# a line may break after these characters (names such as ∂x(t+1)/∂x(t-1) or long_variable_name)
_BREAKS = " /_,→↔-;:"


def wrap(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters, after a space, ``/``,
    ``_``, ``,``, an arrow or ``-`` where it can, inside a word only where it must.

    Examples
    --------
    >>> wrap("∂TentMap(t+1)/∂TentMap(t-1)", 16)
    '∂TentMap(t+1)/\\n∂TentMap(t-1)'
    >>> wrap("short", 16)
    'short'
    >>> wrap("rho = 0.98, RMSE = 0.293", 12).split("\\n")
    ['rho = 0.98,', 'RMSE = 0.293']
    """
    import re

    width = max(int(width), 4)
    out = []
    # a relation ("RMSE = 0.293", "p ≤ 1/20") and a fraction of numbers stay on one line
    text = re.sub(r" ([=<>≤≥≈]) ", "\u00a0\\1\u00a0", str(text))
    text = re.sub(r"(\d)/(\d)", "\\1\u2215\\2", text)
    for para in text.split("\n"):
        tokens, cur = [], ""
        for ch in para:  # tokens end after a break character
            cur += ch
            if ch in _BREAKS:
                tokens.append(cur)
                cur = ""
        if cur:
            tokens.append(cur)
        line = ""
        for tok in tokens:
            if len(line) + len(tok.rstrip()) <= width:
                line += tok
                continue
            if line.strip():
                out.append(line.rstrip())
            while len(tok.rstrip()) > width:  # a word longer than a line: cut it
                out.append(tok[:width])
                tok = tok[width:]
            line = tok
        out.append(line.rstrip())
    return "\n".join(out).replace("\u00a0", " ").replace("\u2215", "/")


def renderer(fig):
    """The renderer of ``fig``'s canvas (Agg, or the figure's own)."""
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else fig._get_renderer()


def _fit(text, limit: float, r, vertical: bool = False) -> bool:
    """Wrap a Text to ``limit`` pixels (its height when ``vertical``); True if it changed."""
    if not text.get_visible() or not text.get_text() or limit <= 0:
        return False
    box = text.get_window_extent(r)
    size = box.height if vertical else box.width
    if size <= limit + 0.5:
        return False
    raw = getattr(text, "_xedm_raw", None) or text.get_text()
    text._xedm_raw = raw
    longest = max(len(s) for s in text.get_text().split("\n"))
    width = max(6, int(longest * limit / size * 0.95))
    new = wrap(raw.replace("\n", " ") if "\n" not in raw else raw, width)
    if new == text.get_text():
        return False
    text.set_text(new)
    return True


def _overlapping(texts, r) -> bool:
    boxes = [t.get_window_extent(r) for t in texts if t.get_visible() and t.get_text()]
    boxes.sort(key=lambda b: (b.x0, b.y0))
    return any(min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0)
               > 0.5 for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _fit_ticks(ax, r) -> bool:
    changed = False
    xt = ax.get_xticklabels()
    if _overlapping(xt, r):
        if not all(t.get_rotation() == 90 for t in xt):
            ax.tick_params(axis="x", labelrotation=90)
        else:
            size = xt[0].get_fontsize()
            ax.tick_params(axis="x", labelsize=max(min_font(), size * 0.8))
        changed = True
    yt = ax.get_yticklabels()
    if _overlapping(yt, r):
        ax.tick_params(axis="y", labelsize=max(min_font(), yt[0].get_fontsize() * 0.8))
        changed = True
    return changed


def fit_texts(fig, passes: int = 2):
    """Make the texts of ``fig`` fit: titles and axis labels wrapped to their axes, legend
    entries to their axes (or 30 characters for a legend outside), the suptitle to the figure,
    tick labels turned or made smaller where they run into each other.  Returns ``fig``."""
    import warnings

    freeze_ticks(fig)
    for _ in range(passes):
        r = renderer(fig)
        with warnings.catch_warnings():  # a layout before the texts are wrapped may fail
            warnings.filterwarnings("ignore", "constrained_layout not applied")
            fig.draw_without_rendering()  # runs the layout engine: the boxes are final
        changed = False
        for ax in fig.axes:
            if not ax.get_visible() or not ax.axison:
                continue
            box = ax.get_window_extent(r)
            # the width of the axes' cell of the grid too: a layout that has collapsed the
            # axes for now must not wrap its title into a column of letters
            spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
            cell = (spec.get_position(fig).width * fig.bbox.width * 0.8 if spec is not None
                    else 0.0)
            for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
                changed |= _fit(t, max(box.width, cell), r)
            changed |= _fit(ax.yaxis.label, box.height, r, vertical=True)
            leg = ax.get_legend()
            if leg is not None:
                lb = leg.get_window_extent(r)
                inside = lb.x0 < box.x1 - 1 and lb.y1 > box.y0 + 1
                limit = 0.7 * box.width if inside else 30 * fig.dpi * 10 / 72 * 0.55
                for t in [*leg.get_texts(), leg.get_title()]:
                    changed |= _fit(t, limit, r)
            changed |= _fit_ticks(ax, r)
        for t in (getattr(fig, "_suptitle", None), getattr(fig, "_supxlabel", None)):
            if t is not None:
                changed |= _fit(t, 0.95 * fig.bbox.width, r)
        if not changed:
            break
    fig.draw_without_rendering()  # the layout of the fitted texts (warns if it fails)
    _keep_inside(fig, drawn=True)
    return fig


def _keep_inside(fig, drawn: bool = False) -> None:
    """Narrow the area the layout engine fills where a tick label sticks out of the figure
    (constrained layout leaves room for the height of x tick labels, not their width).
    ``drawn``: the figure's layout is current (the first pass needs no new one)."""
    engine = fig.get_layout_engine()
    if engine is None or not hasattr(engine, "set") or "rect" not in engine.get():
        return
    for k in range(3):
        if k or not drawn:
            fig.draw_without_rendering()  # a second layout can move the axes a little more
        r = renderer(fig)
        boxes = [b for b in (ax.get_tightbbox(r) for ax in fig.axes if ax.get_visible())
                 if b is not None]
        if not boxes:
            return
        page = fig.bbox
        left = max(0.0, page.x0 - min(b.x0 for b in boxes) + 2) / page.width
        right = max(0.0, max(b.x1 for b in boxes) - page.x1 + 2) / page.width
        left, right = (left if left > 0.0005 else 0.0), (right if right > 0.0005 else 0.0)
        if not (left or right):
            return
        x0, y0, w, h = engine.get()["rect"]
        engine.set(rect=(x0 + left, y0, w - left - right, h))


def figure_grid(n: int, fig=None, ncols: int = 3, panel=(3.0, 2.4), **kwargs: Any):
    """(Figure, flat Axes list) of ``n`` panels in rows of ``ncols`` sharing both axes; the
    panels left over are hidden."""
    import matplotlib.pyplot as plt

    w = active_width()
    if w is not None:  # the style's width: as many columns of panels as it holds
        ncols = int(max(1, min(ncols, w // 1.7)))
        panel = (w / ncols, max(1.8, panel[1] * w / ncols / panel[0]))
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    if fig is None:
        size = (panel[0] * ncols + 0.8, panel[1] * nrows + 0.8)
        fig = plt.figure(layout="constrained",
                         figsize=size if w is None else (w, panel[1] * nrows + 0.8))
    else:
        _clear(fig)
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False, **kwargs).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    for i in range(max(0, n - ncols), n):  # above an empty cell: the x tick labels shown
        if i + ncols >= n:
            axes[i].xaxis.set_tick_params(labelbottom=True)
    return fig, list(axes[:n])
