"""The docs pages show only code that runs: every Python block of docs/*.md is a MyST-NB code
cell (executed by the docs build), and each page's cells run here, top to bottom, in a
namespace of their own (matplotlib without a display, no progress bars).

The strict docs build executes the same cells; this test fails earlier and names the page.
Where the tests hand their executed notebooks to a docs build (``XEDM_EXECUTED_NOTEBOOKS``
set: CI, see .ci/run) that build runs every page's cells right after, so the tests leave
the execution to it and keep only the quick checks (CI time).
"""

import logging
import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent / "docs"
PAGES = sorted(DOCS.glob("*.md"))
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^```(python|py|ipython3?|pycon)\s*$", re.M)


def cells(path):
    """The sources of a page's code cells (MyST option lines ``:key: value`` left out)."""
    out = []
    for body in CELL.findall(path.read_text()):
        lines = body.splitlines()
        while lines and re.match(r"^:\w[\w-]*:", lines[0]):
            lines.pop(0)
        out.append("\n".join(lines))
    return out


def test_every_python_block_is_an_executed_cell():
    plain = {p.name: len(FENCE.findall(p.read_text())) for p in PAGES}
    assert not {k: v for k, v in plain.items() if v}, (
        "docs pages with ```python blocks that the build does not run; write them as "
        f"```{{code-cell}} ipython3 cells: {plain}"
    )
    for p in PAGES:
        if cells(p):
            assert p.read_text().startswith("---\nfile_format: mystnb"), (
                f"{p.name} has code cells but no MyST-NB front matter: they would not run"
            )


def test_cells_are_found():
    # the extraction itself can fail: a page known to hold cells must yield them
    assert len(cells(DOCS / "quickstart.md")) >= 3


@pytest.mark.skipif(bool(os.environ.get("XEDM_EXECUTED_NOTEBOOKS")),
                    reason="the docs build that follows executes every page (CI)")
@pytest.mark.parametrize("path", [p for p in PAGES if cells(p)], ids=lambda p: p.name)
def test_page_code_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import xedm

    monkeypatch.chdir(DOCS)  # pages read files relative to docs/, as the build runs them
    monkeypatch.setitem(os.environ, "XEDM_PROGRESS", "0")
    namespace = {"__name__": f"docs_{path.stem}"}
    # pages may configure logging (neighbors.md shows how): put it back afterwards
    root, xlog = logging.getLogger(), logging.getLogger("xedm")
    saved = root.handlers[:], root.level, xlog.level
    monkeypatch.setattr(root, "handlers", saved[0][:])
    monkeypatch.setattr(root, "level", saved[1])
    monkeypatch.setattr(xlog, "level", saved[2])
    with xedm.set_options(progress=False):
        for i, source in enumerate(cells(path)):
            try:
                exec(compile(source, f"{path.name} cell {i + 1}", "exec"), namespace)
            except Exception as exc:  # name the page and cell
                raise AssertionError(f"{path.name}, code cell {i + 1} fails: {exc!r}") from exc
            finally:
                plt.close("all")


@pytest.mark.parametrize("value, expected", [("0", "False"), ("1", "True")])
def test_progress_env_var(value, expected):
    # the docs build and the notebook tests set XEDM_PROGRESS=0: no bars in executed pages
    import subprocess
    import sys

    env = {**os.environ, "XEDM_PROGRESS": value,
           "PYTHONPATH": os.pathsep.join([str(DOCS.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", "import xedm; print(xedm.get_option('progress'))"],
                         env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == expected
