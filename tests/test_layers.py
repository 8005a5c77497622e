"""The house's floor plan (issue #22): layers that never import upward, no import circle, and no
function-local import of the project's own modules.

The layers, bottom up, as ``fsstgpu/__init__.py``'s docstring and the README's layout table
tell them: base -> CPU codec -> column API -> GPU runtime -> formats -> integrations -> the face.
A module may import its own layer and the layers below. The graph is read from the installed
package's sources (the ``package-dir`` mapping resolved: ``kernels/`` is ``fsstgpu.kernels``),
every import statement included, those inside functions too; ``from fsstgpu import x`` is an
import of the submodule ``fsstgpu.x`` when there is one (the compiled ``fsstgpu._native`` too).
Optional third-party modules (cupy, distributed, pandas) may be imported lazily; this checks
only the project's own.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

#: every module of the package and the layer it belongs to (a name ending in ".*": every module
#: of that subpackage); bottom up
LAYERS = (
    ("base", ("fsstgpu.errors", "fsstgpu.limits", "fsstgpu.types", "fsstgpu.parallel",
              "fsstgpu.device", "fsstgpu.memory", "fsstgpu.blob_hooks")),
    ("CPU codec", ("fsstgpu._native", "fsstgpu.native", "fsstgpu.native.*", "fsstgpu.checksum",
                   "fsstgpu.utf8", "fsstgpu.symbol_table", "fsstgpu.training", "fsstgpu.blocks",
                   "fsstgpu.encoder", "fsstgpu.decoder", "fsstgpu.arrow_layout", "fsstgpu.scan",
                   "fsstgpu.checks", "fsstgpu.splits", "fsstgpu.inputs", "fsstgpu.bitmaps")),
    ("column API", ("fsstgpu.arrays", "fsstgpu.slicing", "fsstgpu.rows", "fsstgpu.columns")),
    ("GPU runtime", ("fsstgpu.gpu", "fsstgpu.gpu.*", "fsstgpu.kernels", "fsstgpu.kernels.*")),
    ("formats", ("fsstgpu.formats", "fsstgpu.formats.*")),
    ("integrations", ("fsstgpu.integrations", "fsstgpu.integrations.*", "fsstgpu.testing",
                      "fsstgpu.datasets", "fsstgpu.datasets.*")),
    ("face", ("fsstgpu", "fsstgpu.api", "fsstgpu.cli", "fsstgpu.cli.*")),
)
#: the subpackages whose modules are read (the ones pyproject.toml installs)
PACKAGES = ("fsstgpu", "fsstgpu.native", "fsstgpu.gpu", "fsstgpu.integrations", "fsstgpu.kernels",
            "fsstgpu.formats", "fsstgpu.cli", "fsstgpu.datasets")
#: compiled extensions: modules without a Python source
EXTENSIONS = ("fsstgpu._native",)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module``'s layer (None: in no layer)."""
    for k, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member.endswith(".*") and
                                    module.startswith(member[:-1]) and module != member[:-2]):
                return k
    return None


def package_modules() -> dict[str, Path]:
    """Every module of the package: its dotted name -> its source file."""
    found = {}
    for package in PACKAGES:
        folder = Path(importlib.import_module(package).__file__).resolve().parent
        for path in sorted(folder.glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def _statements(module: str, source: str, known):
    """(statement, its base, inside a function?) for each import statement in ``source``; the
    base is a ``from`` statement's module with its relative dots resolved (None for ``import``).
    """
    tree = ast.parse(source)
    local = {id(node) for fn in ast.walk(tree)
             if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
             for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))}
    package = module if known(module + ".__init__") else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, None, id(node) in local
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            yield node, base, id(node) in local


def imports_of(module: str, source: str, known) -> list[tuple[str, int, bool]]:
    """(imported project module, line, inside a function?) for each import in ``source``.

    ``known(name)`` tells whether a dotted name is a module; an import of ``a.b.c`` where only
    ``a.b`` is one counts as an import of ``a.b``.
    """
    found = []
    for node, base, inside in _statements(module, source, known):
        if base is None:
            names = [alias.name for alias in node.names]
        else:
            names = [f"{base}.{alias.name}" if known(f"{base}.{alias.name}") else base
                     for alias in node.names]
        for name in names:
            if name.split(".")[0] != "fsstgpu":
                continue
            while not known(name) and "." in name:
                name = name.rpartition(".")[0]
            if name != module:
                found.append((name, node.lineno, inside))
    return found


def package_waits(module: str, source: str, known) -> list[tuple[str, int, bool]]:
    """(package, line, inside a function?) for each import in ``source`` that waits for a package
    of the project to finish its own import.

    CPython makes ``from P import x`` (also ``from . import x``) wait while another thread is
    still running ``P/__init__.py``, and ``import P.x`` (``as y`` too) wait for the top package P.
    ``from P.m import x`` of a plain module ``P.m`` waits for ``P.m`` alone. A module whose import
    waits for a package whose ``__init__`` imports that module back deadlocks two threads that
    import the two at once (CPython then hands one of them a half-made module).
    """
    found = []
    for node, base, inside in _statements(module, source, known):
        waited = ([alias.name.partition(".")[0] for alias in node.names if "." in alias.name]
                  if base is None else [base])
        for name in waited:
            if name.split(".")[0] == "fsstgpu" and known(name + ".__init__") and name != module:
                found.append((name, node.lineno, inside))
    return found


def _read_graph(read) -> dict[str, list[tuple[str, int, bool]]]:
    """``read(module, source, known)`` for every module of the package."""
    modules = package_modules()
    names = set(modules) | set(EXTENSIONS)
    inits = {f"{m}.__init__" for m, p in modules.items() if p.name == "__init__.py"}

    def known(name):
        return name in names or name in inits

    return {m: read(m, p.read_text(encoding="utf-8"), known) for m, p in modules.items()}


def import_graph() -> dict[str, list[tuple[str, int, bool]]]:
    return _read_graph(imports_of)


def wait_graph() -> dict[str, list[tuple[str, int, bool]]]:
    """:func:`import_graph` with the waits for packages' imports (:func:`package_waits`) added."""
    waits = _read_graph(package_waits)
    return {m: found + waits[m] for m, found in import_graph().items()}


def circles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    edges = {m: sorted({t for t, _, _ in found}) for m, found in graph.items()}
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


GRAPH = import_graph()


def test_every_module_has_a_layer():
    assert [m for m in sorted(GRAPH) if layer_of(m) is None] == []


def test_no_import_circle():
    assert circles(GRAPH) == []


def test_no_module_waits_for_a_package_that_imports_it():
    """Two threads importing fsstgpu and one of its modules at once (a numcodecs worker loading
    the "fsst" codec while the main thread runs ``import fsstgpu``) must not deadlock: import
    names from modules (``from fsstgpu.native import x``), not modules from the package
    (``from fsstgpu import native`` waits for all of ``fsstgpu/__init__.py``)."""
    graph = wait_graph()
    assert circles(graph) == [], [
        f"{m} line {line} waits for {t}" for m, found in sorted(graph.items())
        for t, line, _ in found if t in {c for cs in circles(graph) for c in cs}
        and m in {c for cs in circles(graph) for c in cs} and t != m]


def test_no_upward_import():
    upward = [f"{m} ({LAYERS[layer_of(m)][0]}) line {line} imports {t} "
              f"({LAYERS[layer_of(t)][0]})"
              for m, found in sorted(GRAPH.items()) for t, line, _ in found
              if layer_of(t) is not None and layer_of(m) is not None
              and layer_of(t) > layer_of(m)]
    assert upward == []


def test_no_function_local_import_of_the_project():
    local = [f"{m} line {line}: {t}" for m, found in sorted(GRAPH.items())
             for t, line, inside in found if inside]
    assert local == []


def test_the_graph_is_read_through_the_package_dir_mapping():
    assert ("fsstgpu.kernels.loader", True) in {(t, True) for t, _, _ in
                                                GRAPH["fsstgpu.kernels.fsst_decode"]}
    assert any(t == "fsstgpu._native" for t, _, _ in GRAPH["fsstgpu.native.codec"])
    assert layer_of("fsstgpu.formats.files") > layer_of("fsstgpu.gpu.decode") > layer_of(
        "fsstgpu.columns") > layer_of("fsstgpu.native.codec") > layer_of("fsstgpu.errors")


def test_the_scan_finds_each_breach():
    modules = {"fsstgpu.a", "fsstgpu.b", "fsstgpu.sub.__init__", "fsstgpu.sub", "fsstgpu.sub.c"}

    def known(name):
        return name in modules

    source = ("from fsstgpu import a\nimport fsstgpu.sub.c\nfrom . import b\n"
              "def f():\n    from fsstgpu.sub.c import thing\n")
    assert imports_of("fsstgpu.b", source, known) == [
        ("fsstgpu.a", 1, False), ("fsstgpu.sub.c", 2, False), ("fsstgpu.sub.c", 5, True)]
    assert imports_of("fsstgpu.sub", "from . import c\nfrom .. import a\n", known) == [
        ("fsstgpu.sub.c", 1, False), ("fsstgpu.a", 2, False)]
    waits = ("from fsstgpu import a\nfrom fsstgpu.sub import c\nfrom fsstgpu.sub.c import x\n"
             "import fsstgpu.sub.c as y\nfrom . import a\n")
    assert package_waits("fsstgpu.b", waits, lambda name: name in modules | {"fsstgpu.__init__"}
                         ) == [("fsstgpu", 1, False), ("fsstgpu.sub", 2, False),
                               ("fsstgpu", 4, False), ("fsstgpu", 5, False)]
    graph = {"x": [("y", 1, False)], "y": [("z", 1, False)], "z": [("x", 3, False)], "w": []}
    assert circles(graph) == [["x", "y", "z"]]


@pytest.mark.parametrize("module", ["fsstgpu.api", "fsstgpu.columns", "fsstgpu.gpu.decode"])
def test_import_statements_name_real_modules(module):
    for target, _, _ in GRAPH[module]:
        importlib.import_module(target)
