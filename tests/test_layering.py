"""The package's layering, checked from the source (AST only: xedm is never imported, so this
runs in well under a second and catches a bad import before it can run).

The rules (DESIGN.md; docs/architecture.md describes the layers as built):

(a) no import circles among xedm's modules;
(b) imports only go down the layers of ``LAYERS`` (or stay within one layer), apart from the
    at most two justified entries of ``ALLOWED_UPWARD``;
(c) CuPy is imported only in ``xedm/kernels/`` and ``xedm/neighbors/`` (and the one helper of
    ``CUPY_ALLOWED``);
(d) no module of ``xedm/`` is over ``MAX_LINES`` lines.

Every ``import`` counts wherever it stands (module level or inside a function: a lazy import
still ties the two modules together), except those under ``if TYPE_CHECKING:``, which never
run; ``importlib.import_module("literal.name")`` counts as an import too.  A package's
``__init__`` that Python runs implicitly before a submodule is not an import edge; an
explicit ``from xedm.kernels import get_kernel`` is.  The checks run on a synthetic package
as well (``test_checks_find_planted_violations``), so each of them is known to be able to fail.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "xedm"
MAX_LINES = 600

# Layers, top first.  A module may import modules of its own layer and of the layers below;
# its layer is that of the longest name below that matches it (``xedm.core.embed`` ->
# "xedm.core"); the bare "xedm" names only the package's ``__init__``.  Top-level modules
# named ``_something`` (private helpers such as a memory-policy module) are leaves.  A module
# that no name matches fails test_every_module_has_a_layer: give it a layer here.
LAYERS: tuple[tuple[str, ...], ...] = (
    # what users call and see: the public namespace, the method declarations, the .edm
    # accessor, the xedm command, the explorers, the plots (they consume results, never
    # compute) and pyEDM's names; they may use each other (the accessor plots, cli runs the
    # public functions)
    (
        "xedm",
        "xedm.__main__",
        "xedm.api",
        "xedm.accessor",
        "xedm.cli",
        "xedm.widgets",
        "xedm.plot",
        "xedm.compat",
        "xedm.precompile",  # warmup: runs the public functions once (kernel caches)
        "xedm.ahead",  # the CPU session's calls, compiled ahead into the shipped kernels
    ),
    # the xarray layer: inputs, parameter checks, result Datasets, dask through apply_ufunc
    ("xedm.labeled",),
    # blocked fan-outs on dask.distributed: labeled/xmap hands its all-pairs work to it and it
    # runs core's cross maps on blocks, so it sits between the two
    ("xedm.distributed",),
    # algorithms on plain arrays (embedding, simplex, S-map, ccm, xmap, skill)
    ("xedm.core",),
    # surrogates, p and q values, convergence; the twin surrogates need recurrence's
    # thresholds, and nothing in recurrence needs stats, so recurrence is the layer below
    ("xedm.stats",),
    # recurrence plots and their measures on plain arrays (RQA's core)
    ("xedm.recurrence",),
    # the kNN-table contract and its methods
    ("xedm.neighbors",),
    # deterministic generators: numba through kernels/_numba only
    ("xedm.datasets",),
    # numba and CuPy kernels
    ("xedm.kernels",),
    # leaves, importable from anywhere, importing only other leaves: the options; the memory
    # and work policy (every layer sizes its work by it); the parameter checks every layer
    # shares (labeled/, core/, stats/); the neighbour methods' declarations (plain data, read
    # by the options' validator and by the dispatcher)
    ("xedm.options", "xedm.memory", "xedm.core.validate", "xedm.neighbors.registry"),
)
LEAF_PREFIX = "_"  # xedm._name (not xedm.__name__) is a leaf

# Imports that run up a layer and stay, each with its reason: (importer, imported, why).
# At most two; every entry must still be a real upward import (a stale one fails), so
# removing the import also removes its entry here.  None is needed today: the upward imports
# of the code at the time this test was written (neighbors.base -> core.embed,
# kernels.gpu_rqa -> recurrence, distributed -> labeled.cross) each have a home lower down.
ALLOWED_UPWARD: tuple[tuple[str, str, str], ...] = ()
MAX_UPWARD = 2

# Only the GPU layers import CuPy; the exception, with its reason:
CUPY_LAYERS = ("xedm.kernels", "xedm.neighbors")
CUPY_ALLOWED = {
    # moves a user's CuPy-backed xarray variables to the host on the way in and the results
    # back to the device on the way out (cupy.asarray); it computes nothing, and the device
    # I/O of xarray objects belongs to the xarray layer
    "xedm.labeled.device": "CuPy-backed input gives CuPy-backed output",
}
CUPY_NAMES = ("cupy", "cupyx")


# --------------------------------------------------------------------------- the checker
def modules_of(root: Path) -> dict[str, Path]:
    """{dotted module name: file} for every .py file under the package directory ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """Every imported dotted name of one module, with its line (``if TYPE_CHECKING:`` skipped).

    ``from M import n`` yields ``M.n`` and ``M`` (the caller keeps ``M.n`` when it is a
    module); relative imports are made absolute against ``base``, the module's package.
    """

    def __init__(self, base: str):
        self.base = base
        self.found: list[tuple[tuple[str, ...], int]] = []

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append(((alias.name,), node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.base.split(".")
            anchor = ".".join(parts[: len(parts) - node.level + 1])
            mod = f"{anchor}.{node.module}" if node.module else anchor
        else:
            mod = node.module or ""
        for alias in node.names:
            self.found.append(((f"{mod}.{alias.name}", mod), node.lineno))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            name == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self.found.append(((node.args[0].value,), node.lineno))
        self.generic_visit(node)


@functools.cache  # parsed once for all the checks
def imported_names(module: str, path: Path) -> list[tuple[tuple[str, ...], int]]:
    """The dotted names ``module`` imports (each a tuple of candidates, best first), with lines."""
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    visitor = _Imports(base)
    visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return visitor.found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of the package that ``name`` lies in (None: outside the package)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """{module: {module it imports: first line}} inside the package ``root``."""
    modules = modules_of(root)
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, path in modules.items():
        for candidates, line in imported_names(module, path):
            exact = [c for c in candidates if c in modules]
            target = exact[0] if exact else _resolve(candidates[-1], modules)
            if target is None or target == module:
                continue
            graph[module].setdefault(target, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def layer_of(module: str, layers=LAYERS, leaf_prefix=LEAF_PREFIX) -> int | None:
    """Index of the module's layer in ``layers`` (0 = top); None when no name matches."""
    top = module.split(".")[0]
    parts = module.split(".")
    if len(parts) > 1 and parts[1].startswith(leaf_prefix) and not parts[1].startswith("__"):
        return len(layers) - 1
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name == top and n < len(parts):
            break  # the bare package name is its __init__ only
        for i, names in enumerate(layers):
            if name in names:
                return i
    return None


def upward_imports(graph, layers=LAYERS, allowed=ALLOWED_UPWARD) -> list[str]:
    """'importer -> imported' for every import into a higher layer that ``allowed`` lacks."""
    ok = {(a, b) for a, b, _ in allowed}
    out = []
    for module, targets in graph.items():
        here = layer_of(module, layers)
        for target, line in targets.items():
            there = layer_of(target, layers)
            if here is None or there is None or (module, target) in ok:
                continue
            if there < here:
                out.append(f"{module} -> {target} (line {line})")
    return sorted(out)


def cupy_imports(root: Path, cupy_layers=CUPY_LAYERS, allowed=CUPY_ALLOWED) -> list[str]:
    """'module (line)' for every CuPy import outside ``cupy_layers`` and ``allowed``."""
    out = []
    for module, path in modules_of(root).items():
        if any(module == p or module.startswith(p + ".") for p in cupy_layers):
            continue
        if module in allowed:
            continue
        for candidates, line in imported_names(module, path):
            if candidates[-1].split(".")[0] in CUPY_NAMES:
                out.append(f"{module} (line {line})")
    return sorted(set(out))


def oversized(root: Path, limit: int = MAX_LINES) -> list[str]:
    """'module (lines)' for every module over ``limit`` lines."""
    out = []
    for module, path in modules_of(root).items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out.append(f"{module} ({n} lines)")
    return out


# --------------------------------------------------------------------------- xedm itself
@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def test_no_import_circles(graph):
    found = circles(graph)
    assert not found, "import circles (split the shared part into a module below them):\n" + (
        "\n".join(" <-> ".join(c) for c in found)
    )


def test_every_module_has_a_layer(graph):
    missing = [m for m in graph if layer_of(m) is None]
    assert not missing, f"modules without a layer (add them to LAYERS): {missing}"


def test_imports_go_down_the_layers(graph):
    up = upward_imports(graph)
    assert not up, (
        "imports into a higher layer (move the imported code down, or, for at most "
        f"{MAX_UPWARD} justified cases, list them in ALLOWED_UPWARD):\n" + "\n".join(up)
    )


def test_allowed_upward_is_short_justified_and_used(graph):
    assert len(ALLOWED_UPWARD) <= MAX_UPWARD
    for importer, imported, why in ALLOWED_UPWARD:
        assert why.strip(), f"{importer} -> {imported}: say why it may run up a layer"
        assert imported in graph.get(importer, {}), f"stale entry: {importer} -> {imported}"
        assert layer_of(imported) < layer_of(importer), f"not upward: {importer} -> {imported}"


def test_cupy_only_in_the_gpu_layers():
    found = cupy_imports(PACKAGE)
    assert not found, (
        f"CuPy imported outside {', '.join(CUPY_LAYERS)} (call a kernel instead):\n"
        + "\n".join(found)
    )
    for module in CUPY_ALLOWED:  # an exception names a module that exists
        assert module in modules_of(PACKAGE), f"stale CUPY_ALLOWED entry: {module}"


def test_no_module_over_the_size_limit():
    found = oversized(PACKAGE)
    assert not found, f"modules over {MAX_LINES} lines (split along the concept):\n" + (
        "\n".join(found)
    )


# --------------------------------------------------------------------------- the checker checked
def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


SYNTHETIC_LAYERS = (("pkg", "pkg.top"), ("pkg.core",), ("pkg.kernels",), ("pkg.options",))

# a package that keeps every rule, in every form of import the checker must follow
CLEAN = {
    "pkg/__init__.py": "from .top import run\n",
    "pkg/top.py": """\
        import importlib

        from pkg.core import algo


        def run():
            from . import options

            return importlib.import_module("pkg.core.algo"), algo, options
        """,
    "pkg/options.py": "OPTIONS = {}\n",
    "pkg/_memory.py": "from pkg.options import OPTIONS\n",
    "pkg/core/__init__.py": "",
    "pkg/core/algo.py": """\
        from typing import TYPE_CHECKING

        from .. import _memory
        from ..kernels import cpu

        if TYPE_CHECKING:
            import cupy

            from pkg.top import run  # type hints only: never runs
        """,
    "pkg/kernels/__init__.py": "from pkg.options import OPTIONS\n",
    "pkg/kernels/cpu.py": """\
        from pkg.kernels import OPTIONS


        def gpu():
            import cupy

            return cupy
        """,
}


def test_checks_pass_a_clean_package(tmp_path):
    root = _write(tmp_path, CLEAN)
    graph = import_graph(root)
    assert graph["pkg.top"] == {"pkg.core.algo": 3, "pkg.options": 7}
    assert graph["pkg.core.algo"] == {"pkg._memory": 3, "pkg.kernels.cpu": 4}
    assert graph["pkg.kernels.cpu"] == {"pkg.kernels": 1}
    assert circles(graph) == []
    assert all(layer_of(m, SYNTHETIC_LAYERS) is not None for m in graph)
    assert layer_of("pkg._memory", SYNTHETIC_LAYERS) == len(SYNTHETIC_LAYERS) - 1
    assert upward_imports(graph, SYNTHETIC_LAYERS, ()) == []
    assert cupy_imports(root, ("pkg.kernels",), {}) == []
    assert oversized(root, 20) == []


def test_checks_find_planted_violations(tmp_path):
    files = dict(CLEAN)
    # a circle through a function-level import: kernels.cpu -> kernels.gpu -> kernels.cpu
    files["pkg/kernels/cpu.py"] = "def f():\n    from pkg.kernels.gpu import g\n"
    files["pkg/kernels/gpu.py"] = "from . import cpu\n"
    # an import up a layer (kernels -> core), relative and lazy
    files["pkg/kernels/up.py"] = "def f():\n    from ..core.algo import x\n"
    # a leaf that imports a layer
    files["pkg/_memory.py"] = "import pkg.kernels.cpu\n"
    # CuPy outside the GPU layers, once as importlib's string
    files["pkg/core/gpu.py"] = "import importlib\n\ncp = importlib.import_module('cupy')\n"
    files["pkg/top.py"] = "import cupyx.scipy\n" + "\n" * 30
    # a module no layer names
    files["pkg/extra.py"] = ""
    root = _write(tmp_path, files)
    graph = import_graph(root)
    assert circles(graph) == [["pkg.kernels.cpu", "pkg.kernels.gpu"]]
    assert upward_imports(graph, SYNTHETIC_LAYERS, ()) == [
        "pkg._memory -> pkg.kernels.cpu (line 1)",
        "pkg.kernels.up -> pkg.core.algo (line 2)",
    ]
    allowed = (("pkg.kernels.up", "pkg.core.algo", "why"),)
    assert upward_imports(graph, SYNTHETIC_LAYERS, allowed) == [
        "pkg._memory -> pkg.kernels.cpu (line 1)"
    ]
    assert [m for m in graph if layer_of(m, SYNTHETIC_LAYERS) is None] == ["pkg.extra"]
    assert cupy_imports(root, ("pkg.kernels",), {}) == [
        "pkg.core.gpu (line 3)",
        "pkg.top (line 1)",
    ]
    assert cupy_imports(root, ("pkg.kernels",), {"pkg.top": "why"}) == ["pkg.core.gpu (line 3)"]
    assert oversized(root, 20) == ["pkg.top (31 lines)"]


def test_layer_names_match_whole_components():
    # "xedm.core" must not claim "xedm.corex", and the bare package name only its __init__
    assert layer_of("xedm.core.embed") == layer_of("xedm.core") == 3
    assert layer_of("xedm.corex") is None
    assert layer_of("xedm.newthing") is None
    assert layer_of("xedm") == 0
    assert layer_of("xedm.core.validate") == len(LAYERS) - 1
    assert layer_of("xedm._memory") == len(LAYERS) - 1
    assert layer_of("xedm.__main__") == 0
