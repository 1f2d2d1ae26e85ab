"""pyEDM's documented examples through pyEDM and through xedm.compat.pyedm, per column.

Runs every example of ``xedm.compat.pyedm.examples.EXAMPLES`` (pyEDM 2.5.7's ``Examples()``,
the usage of its README, and its example script) unchanged through both, with plots off, one
process, and ``seed=0`` where a CCM example has none (pyEDM's own draws are then random), and
writes the largest absolute difference of every column (NaN pattern checked) to
``benchmarks/results/pyedm_examples.json``; prints the markdown table of docs/from-pyedm.md.

    PYTHONPATH=. python benchmarks/pyedm_examples.py
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


def columns(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """{column: max |a - b|} (None when the column is not numeric and equal); raises when
    the columns, rows or NaN patterns differ."""
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        raise AssertionError(f"frames differ: {list(a.columns)} {a.shape} vs "
                             f"{list(b.columns)} {b.shape}")
    out = {}
    for c in a.columns:
        if a[c].dtype == object and not np.issubdtype(np.asarray(b[c].tolist()).dtype,
                                                     np.number):
            if a[c].tolist() != b[c].tolist():
                raise AssertionError(f"column {c} differs")
            out[str(c)] = None
            continue
        x, y = a[c].to_numpy(float), b[c].to_numpy(float)
        if not (np.isnan(x) == np.isnan(y)).all():
            raise AssertionError(f"column {c}: NaN at different rows")
        ok = ~np.isnan(x)
        out[str(c)] = float(np.max(np.abs(x[ok] - y[ok]))) if ok.any() else 0.0
    return out


def run(func: str, data: str, kw: dict, pyEDM, compat) -> dict:
    """Both runs of one example: {frame name: {column: max abs difference}}, seconds."""
    kw = {**kw, "showPlot": False}
    if func == "CCM":
        kw.setdefault("seed", 0)
    fast = {"numProcess": 1} if "numProcess" in kw or func.startswith(("Embed", "Predict")) \
        else {}
    if func == "CCM":
        fast = {"parallel": False}
    df = pyEDM.sampleData[data]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(pyEDM, func)(df, **{**kw, **fast})
    t1 = time.perf_counter()
    got = getattr(compat, func)(df, **kw)
    t2 = time.perf_counter()
    frames = want.keys() if isinstance(want, dict) else [None]
    diff = {str(k): columns(want[k] if k else want, got[k] if k else got) for k in frames}
    return {"diff": diff, "pyedm_s": round(t1 - t0, 3), "compat_s": round(t2 - t1, 3)}


def table(rows: list[dict]) -> str:
    lines = ["| # | source | example | frame | column: max abs difference |",
             "|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        for frame, cols in r["diff"].items():
            text = ", ".join(f"{c} {'equal' if v is None else f'{v:.1e}'}"
                             for c, v in cols.items())
            lines.append(f"| {i} | {r['source']} | {r['func']} {r['data']} | "
                         f"{'' if frame == 'None' else frame} | {text} |")
    return "\n".join(lines)


def main() -> None:
    import pyEDM

    from xedm.compat import pyedm as compat
    from xedm.compat.pyedm.examples import EXAMPLES, command

    rows = []
    for source, func, data, kw in EXAMPLES:
        r = run(func, data, kw, pyEDM, compat)
        rows.append({"source": source, "func": func, "data": data,
                     "command": command(func, data, kw), **r})
        print(f"{func} {data}: {r['diff']}", file=sys.stderr)
    out = {"pyEDM": pyEDM.__version__, "numpy": np.__version__,
           "note": "showPlot=False, one process, seed=0 for CCM examples without a seed",
           "examples": rows}
    path = Path(__file__).parent / "results" / "pyedm_examples.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
