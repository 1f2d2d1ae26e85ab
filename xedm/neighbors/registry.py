"""The neighbour methods and what each can do: one declaration per method.

``neighbors=NAME`` selects a :class:`Method`; its module (``xedm.neighbors.<module>``) is
imported only when the method runs and implements the one contract of
:mod:`xedm.neighbors.contract`: ``tables(prep, k_list, excl, *, backend, search)``.  The
dispatcher (:mod:`xedm.neighbors.base`) reads this table and never names a method module, and
no method module imports the dispatcher.  Adding a method: its module and one entry here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Method:
    """A neighbour method's capabilities.

    ``backends``: the ``backend`` values it serves ("cpu", "gpu"; the methods that search on
    the host serve "gpu" too, their tables feeding the GPU kernels); ``exact``: identical
    tables to brute force (order included), else approximate (a measured recall);
    ``max_dim``: the most coordinates per state (E times the columns) it searches (None:
    any); ``needs``: the optional package it imports (None: none beyond xedm's
    dependencies); ``backend_error`` / ``dim_error``: the messages when asked for a backend
    or a dimension it lacks (formatted with ``backend`` and ``dim``).
    """

    name: str
    module: str
    backends: tuple[str, ...] = ("cpu", "gpu")
    exact: bool = True
    max_dim: int | None = None
    needs: str | None = None
    backend_error: str = ""
    dim_error: str = ""

    def load(self) -> ModuleType:
        """The method's module (imported on first use)."""
        return importlib.import_module(f"{__package__}.{self.module}")

    def check(self, backend: str, dim: int) -> None:
        """A ValueError when the method cannot search ``dim``-coordinate states on
        ``backend``."""
        if backend not in self.backends:
            raise ValueError(self.backend_error.format(backend=backend, dim=dim))
        if self.max_dim is not None and dim > self.max_dim:
            raise ValueError(self.dim_error.format(backend=backend, dim=dim))


#: every method ``neighbors=`` accepts, in the order error messages list them
REGISTRY: dict[str, Method] = {m.name: m for m in (
    # picks one of the others by a written rule (its module: the rule and its CPU search)
    Method("auto", "auto", exact=False),
    Method("exact", "exact"),
    # kdtree, sorted1d, nndescent and hnsw search on the host whatever the backend; their
    # tables feed the GPU kernels as well
    Method("kdtree", "kdtree"),
    Method("sorted1d", "sorted1d", max_dim=1, dim_error=(
        "neighbors='sorted1d' searches one-coordinate states only (E=1 with one column, "
        "or one embedded column); these states have {dim} coordinates: use "
        "neighbors='exact', 'kdtree' or 'auto'")),
    Method("nndescent", "nndescent", exact=False, needs="pynndescent"),
    Method("hnsw", "hnsw", exact=False, needs="faiss"),
    Method("ivf", "ivf", backends=("gpu",), exact=False, needs="cupy", backend_error=(
        "neighbors='ivf' is the GPU neighbour method and needs backend='gpu' (got "
        "backend={backend!r}): install the gpu extra (pip install \"xedm[gpu]\", or "
        "\"xedm[gpu-cuda13]\" on CUDA 13) and pass backend='gpu', or use neighbors='hnsw' "
        "(approximate, CPU), 'kdtree', 'exact' or 'auto'")),
)}
METHODS = tuple(REGISTRY)
EXACT_METHODS = tuple(m.name for m in REGISTRY.values() if m.exact)
