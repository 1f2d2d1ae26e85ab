"""A check of a drawn figure's text: none runs into another, none leaves the figure, none is
smaller than a size (measured from the boxes the renderer gives each text)."""

from __future__ import annotations

import numpy as np

from ._base import renderer


def visible_texts(fig) -> list:
    """Every text ``fig`` draws: titles, axis labels, tick labels, legends, annotations and
    the figure's own texts (visible and not empty)."""
    fig.draw_without_rendering()
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            found += [ax.xaxis.label, ax.yaxis.label, ax.xaxis.offsetText,
                      ax.yaxis.offsetText]
            for axis in (ax.xaxis, ax.yaxis):
                for tick in axis._update_ticks():  # the ticks drawn (inside the view)
                    found += [tick.label1, tick.label2]
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            found += [*leg.get_texts(), leg.get_title()]
    found += [t for t in (fig._suptitle, fig._supxlabel, fig._supylabel) if t is not None]
    found += [*fig.texts, *(t for leg in fig.legends for t in [*leg.get_texts(),
                                                                  leg.get_title()])]
    unique = list({id(t): t for t in found}.values())  # (the suptitle is in fig.texts too)
    return [t for t in unique if t.get_visible() and t.get_text().strip()]


def _corners(text, r) -> np.ndarray:
    """(4, 2) display corners of ``text``: its turned box when it is turned about its
    anchor by an angle that is not a multiple of 90°, else its window extent."""
    angle = text.get_rotation() % 90
    if angle and text.get_rotation_mode() == "anchor":
        rot = text.get_rotation()
        text.set_rotation(0)
        box = text.get_window_extent(r)
        text.set_rotation(rot)
        x, y = text.get_transform().transform(text.get_unitless_position())
        pts = np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1],
                        [box.x0, box.y1]]) - (x, y)
        a = np.deg2rad(rot)
        turn = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        return pts @ turn.T + (x, y)
    box = text.get_window_extent(r)
    return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])


def _apart(a: np.ndarray, b: np.ndarray, slack: float = 1.0) -> bool:
    """True when the convex quadrilaterals ``a`` and ``b`` overlap by at most ``slack``
    pixels along some axis (separating axes)."""
    for poly in (a, b):
        for k in range(4):
            edge = poly[(k + 1) % 4] - poly[k]
            normal = np.array([-edge[1], edge[0]])
            norm = np.hypot(*normal)
            if norm == 0:
                continue
            normal /= norm
            pa, pb = a @ normal, b @ normal
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= slack:
                return True
    return False


def text_problems(fig, min_size: float | None = None) -> list[str]:
    """What is wrong with the text of a drawn figure, one sentence each: a text that
    overlaps another, one that leaves the figure, one smaller than ``min_size`` points.

    Parameters
    ----------
    fig : matplotlib Figure
    min_size : float, optional
        The smallest font size allowed (points at the figure's size), e.g. 7 for a figure
        drawn at its printed width (:func:`xedm.plot.paper`).

    Returns
    -------
    list of str
        Empty when the figure's text is clean.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.set_title("a title")
    >>> text_problems(fig)
    []
    >>> _ = ax.text(0.5, 1.02, "on the title", transform=ax.transAxes)
    >>> text_problems(fig)
    ["'a title' overlaps 'on the title'"]
    """
    r = renderer(fig)
    texts = visible_texts(fig)
    boxes = [_corners(t, r) for t in texts]
    page = fig.bbox
    out = []
    for t, c in zip(texts, boxes, strict=True):
        if (c[:, 0].min() < page.x0 - 1 or c[:, 1].min() < page.y0 - 1
                or c[:, 0].max() > page.x1 + 1 or c[:, 1].max() > page.y1 + 1):
            out.append(f"{t.get_text()!r} leaves the figure")
        if min_size is not None and t.get_fontsize() < min_size - 0.01:
            out.append(f"{t.get_text()!r} is {t.get_fontsize():.3g} pt (< {min_size:g})")
    lo, hi = np.array([c.min(axis=0) for c in boxes]), np.array([c.max(axis=0)
                                                                 for c in boxes])
    for i in range(len(texts)):
        near = np.flatnonzero((np.minimum(hi[i], hi[i + 1:]) - np.maximum(lo[i], lo[i + 1:])
                               > 1).all(axis=1)) + i + 1
        for j in near:
            if not _apart(boxes[i], boxes[j]):
                out.append(f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}")
    return out
