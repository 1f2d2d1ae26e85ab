"""Sphinx configuration for xedm: pydata-sphinx-theme, MyST-NB (executed), numpydoc."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, os.path.abspath(".."))
# no progress bars in executed pages (the notebook kernels inherit the variable; see
# xedm.set_options)
os.environ["XEDM_PROGRESS"] = "0"

# the tutorials are the notebooks of notebooks/ (committed without outputs), copied here at
# each build and executed by MyST-NB.  With XEDM_EXECUTED_NOTEBOOKS=DIR (CI), a notebook that
# the tests executed (tests/test_notebooks.py writes it to DIR) is taken with its outputs and
# not executed again, provided its cells are the committed notebook's; any other runs here.
_HERE = Path(__file__).parent
_TUTORIALS = _HERE / "tutorials"
_TUTORIALS.mkdir(exist_ok=True)
_EXECUTED = os.environ.get("XEDM_EXECUTED_NOTEBOOKS")
_PRE_EXECUTED = []


def _cell_sources(path):
    cells = json.loads(Path(path).read_text())["cells"]
    return [(c["cell_type"], "".join(c["source"])) for c in cells]


for _nb in sorted((_HERE.parent / "notebooks").glob("*.ipynb")):
    _dest = _TUTORIALS / _nb.name
    _src = _nb
    _done = Path(_EXECUTED) / _nb.name if _EXECUTED else None
    if _done is not None and _done.exists() and _cell_sources(_done) == _cell_sources(_nb):
        _src = _done
        _PRE_EXECUTED.append(f"tutorials/{_nb.name}")
    if not _dest.exists() or _dest.read_bytes() != _src.read_bytes():
        shutil.copyfile(_src, _dest)

import xedm  # noqa: E402
from xedm import api as _api  # noqa: E402

# the function lists of the API reference come from xedm/api.py (one declaration per public
# method): each section's autosummary is written to _api_<section>.rst (beside api.md, so its
# toctree path means the same when included and when autosummary scans the file for the stub
# pages it generates), which docs/api.md includes
for _key in _api.SECTIONS:
    _text = ".. currentmodule:: xedm\n\n.. autosummary::\n   :toctree: generated/\n\n"
    _text += "".join(f"   {_n}\n" for _n in _api.section(_key))
    _file = _HERE / f"_api_{_key}.rst"
    if not _file.exists() or _file.read_text() != _text:
        _file.write_text(_text)

# the .edm accessor, as xarray lists its accessors: one row per method, linking to the function
# it forwards to (its full docstring is there), with the function's first line
def _summary(func):
    return (func.__doc__ or "").strip().splitlines()[0].rstrip(".")


_rows = [(f"``obj.edm.{_m.name}(...)``", f":func:`xedm.{_m.name}`", _summary(_m.function()))
         for _m in _api.METHODS if _m.accessor]
_rows += [("``obj.edm.plot(...)``", ":func:`xedm.plot.plot`",
           "Draw the result with the view of the function that made it"),
          ("``obj.edm.explore(...)``", ":func:`xedm.widgets.explore`",
           "Open an interactive explorer (Jupyter)")]
_text = ".. list-table::\n   :header-rows: 1\n   :widths: 30 25 45\n\n"
_text += "   * - method\n     - same as\n     - what it does\n"
_text += "".join(f"   * - {a}\n     - {b}\n     - {c}\n" for a, b, c in _rows)
_file = _HERE / "_api_accessor.rst"
if not _file.exists() or _file.read_text() != _text:
    _file.write_text(_text)

project = "xedm"
author = "The xedm developers"
copyright = "The xedm developers"
version = release = xedm.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "numpydoc",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "generated/*.md", "**.ipynb_checkpoints", "_api_*.rst"]

# MyST / MyST-NB: code cells in the .md pages run at build time
myst_enable_extensions = ["colon_fence", "dollarmath"]
nb_execution_mode = "cache"
nb_execution_excludepatterns = _PRE_EXECUTED  # executed by the tests (see above)
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
# explorers carry a live widget and a PNG of their figure: the static pages show the PNG
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None),
                              ("html", "image/png", 0)]
# tqdm bars of long calls are not page content
nb_output_stderr = "remove"

# API pages
templates_path = ["_templates"]  # classes: one page with their documented members
# the pages with autosummary lists, and the API sections that docs/api.md includes (which are
# not pages themselves)
autosummary_generate = sorted(p.name for p in _HERE.glob("*.md")
                              if "autosummary::" in p.read_text())
autosummary_generate += [f"_api_{_key}.rst" for _key in _api.SECTIONS]
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# links into other projects' docs need their inventories from the network: on with
# XEDM_DOCS_INTERSPHINX=1, off by default (offline builds, CI) so `-n -W` builds stay clean
intersphinx_mapping = {}
if os.environ.get("XEDM_DOCS_INTERSPHINX") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "xarray": ("https://docs.xarray.dev/en/stable", None),
        "matplotlib": ("https://matplotlib.org/stable", None),
    }

html_theme = "pydata_sphinx_theme"
html_title = f"xedm {release}"
html_theme_options = {
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "icon_links": [],
}
# the repository link of the navbar comes from pyproject.toml's [project.urls] (Repository,
# Source or Homepage), so the docs never show an address the project does not declare
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None
_URLS = {} if tomllib is None else tomllib.loads(
    (_HERE.parent / "pyproject.toml").read_text())["project"].get("urls", {})
for _key in ("Repository", "Source", "Homepage"):
    if _key in _URLS:
        html_theme_options["icon_links"].append(
            {"name": "Repository", "url": _URLS[_key], "icon": "fa-brands fa-git-alt"})
        break
# the left sidebar lists the pages of a section where there are some (tutorials, API); a
# single-page guide chapter gets none instead of an empty "Section Navigation" column
html_sidebars = {p.stem: [] for p in _HERE.glob("*.md") if p.stem not in ("tutorials", "api")}
