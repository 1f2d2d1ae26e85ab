"""Sphinx configuration for xedm: pydata-sphinx-theme, MyST-NB (executed), numpydoc."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import xedm  # noqa: E402

project = "xedm"
author = "xedm developers"
copyright = "xedm developers"
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
exclude_patterns = ["_build", "generated/*.md", "**.ipynb_checkpoints"]

# MyST / MyST-NB: code cells in the .md pages run at build time
myst_enable_extensions = ["colon_fence", "dollarmath"]
nb_execution_mode = "cache"
nb_execution_timeout = 300
nb_execution_raise_on_error = True

# API pages
autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

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
}
