"""Report of benchmarks/compare.py: the printed table, the tools' versions, JSON encoding."""

from __future__ import annotations

import math
import platform


def fmt_s(v):
    return "-" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.1f}")


def fmt_ratio(v):
    if v is None:
        return "-"
    return f"{v:.2f}x" if v < 100 else f"{v:.0f}x"


def fmt_d(v):
    return "-" if v is None else f"{v:.1e}"


def print_table(rows):
    head = [
        "row",
        "case",
        "xedm s",
        "kEDM s",
        "pyEDM s",
        "xedm/kEDM",
        "pyEDM/xedm",
        "|drho| py",
        "|drho| k",
        "target",
    ]
    body = [
        [
            r.name,
            r.label,
            fmt_s(r.xedm_s),
            fmt_s(r.kedm_s),
            fmt_s(r.pyedm_s),
            fmt_ratio(r.x_over_k),
            fmt_ratio(r.p_over_x),
            fmt_d(r.d_rho_pyedm),
            fmt_d(r.d_rho_kedm),
            r.target,
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    print(line)
    print("-" * len(line))
    for b in body:
        print("  ".join(str(x).ljust(w) for x, w in zip(b, widths, strict=True)))
    print()
    for r in rows:
        for n in r.notes:
            print(f"  [{r.name}] {n}")


def versions(tools):
    import numpy as np

    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("numba", "xarray", "scipy", "pandas"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            pass
    for k, m in tools.items():
        out[k] = getattr(m, "__version__", "?") if m is not None else None
    return out


def json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:
        pass
    if isinstance(o, float) and math.isnan(o):
        return None
    return str(o)
