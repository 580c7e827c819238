"""No import cycles in ``server/cudalens`` or ``gpu_runner`` (docs/architecture.md, "No
cycles").

The imports of every module are read with ``ast`` (nothing is imported): module-level ones,
ones inside functions, and ones under ``if TYPE_CHECKING:`` all count, since each is a
dependency of one module on another. Relative imports are resolved against the importing
module's package. ``from pkg import name`` depends on the module ``pkg.name`` when that is a
module, else on ``pkg`` (where ``name`` is defined). ``import a.b.c`` depends on ``a.b.c``
only: Python runs the packages' ``__init__`` first, but a package importing its own
submodules is how a package exposes them, not a cycle of design.

The strongly connected components of the graph (Tarjan's algorithm) with more than one
module, or a module importing itself, are cycles; the test fails naming each cycle's modules
and the import lines (``file:line``) that close it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"cudalens": ROOT / "server" / "cudalens", "gpu_runner": ROOT / "gpu_runner"}


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int


def module_files(packages: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> its file, for every ``.py`` under each package root (a package's
    ``__init__.py`` is the package's own name)."""
    found: dict[str, Path] = {}
    for name, root in packages.items():
        for path in sorted(root.rglob("*.py")):
            parts = (name, *path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from {'.' * level}{name} import ...`` written in ``module``.

    Raises:
        ValueError: the relative import climbs above the top-level package.
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(package) - 1:
        raise ValueError(f"{module}: relative import of level {level} climbs above "
                         f"{package[0]!r}")
    base = package[:len(package) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """The edges from ``module`` (source file ``path``) to the modules of ``modules`` it
    imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    rel = str(path.relative_to(ROOT))
    edges: list[Edge] = []

    def add(target: str, line: int) -> None:
        edge = Edge(module, target, rel, line)
        if target in modules and edge not in edges:  # one edge per statement and module
            edges.append(edge)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module)
                    if node.level else node.module or "")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node.lineno)
    return edges


def graph(packages: dict[str, Path]) -> tuple[list[str], list[Edge]]:
    modules = module_files(packages)
    edges = [e for name, path in modules.items() for e in imports_of(name, path, modules)]
    return sorted(modules), edges


def strongly_connected(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the strongly connected components of the graph, each
    a sorted list of node names."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        succ[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(succ[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(nodes: list[str], edges: list[Edge]) -> list[tuple[list[str], list[Edge]]]:
    """Each cycle (a component of two or more modules, or a module importing itself) with the
    import edges inside it."""
    self_loops = {e.source for e in edges if e.source == e.target}
    out = []
    for component in strongly_connected(nodes, edges):
        members = set(component)
        if len(component) > 1 or component[0] in self_loops:
            inside = [e for e in edges if e.source in members and e.target in members]
            out.append((component, sorted(inside, key=lambda e: (e.path, e.line))))
    return out


def describe(found: list[tuple[list[str], list[Edge]]]) -> str:
    lines = []
    for component, inside in found:
        lines.append(f"import cycle among {', '.join(component)}:")
        lines += [f"  {e.path}:{e.line}: {e.source} imports {e.target}" for e in inside]
    return "\n".join(lines)


def test_no_import_cycles_in_the_server_or_the_runner():
    nodes, edges = graph(PACKAGES)
    assert len(nodes) > 200  # the walk found the packages
    found = cycles(nodes, edges)
    assert not found, "expected no import cycles; found:\n" + describe(found)


# -- the walker itself, on a package written for the test -----------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / "toy"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return {"toy": root}


def test_a_cycle_through_a_function_level_and_a_relative_import_is_named(tmp_path, monkeypatch):
    packages = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from toy import b\n",
        "sub/__init__.py": "",
        "b.py": "def f():\n    from .sub import c\n",
        "sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n",
        "d.py": "import toy.a\n",  # into the cycle, not part of it
    })
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    nodes, edges = graph(packages)
    found = cycles(nodes, edges)
    assert [c for c, _ in found] == [["toy.a", "toy.b", "toy.sub.c"]]
    assert describe(found).splitlines() == [
        "import cycle among toy.a, toy.b, toy.sub.c:",
        "  toy/a.py:1: toy.a imports toy.b",
        "  toy/b.py:2: toy.b imports toy.sub.c",
        "  toy/sub/c.py:3: toy.sub.c imports toy.a",
    ]


def test_an_acyclic_package_and_a_name_from_a_package_give_no_cycle(tmp_path, monkeypatch):
    packages = _package(tmp_path, {
        "__init__.py": "from toy.a import A\n",  # the package exposes its submodule
        "a.py": "from toy import helpers\nA = 1\n",
        "helpers.py": "X = 2\n",
        "e.py": "from toy import A\n",  # a name of the package: depends on toy
    })
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    nodes, edges = graph(packages)
    assert {(e.source, e.target) for e in edges} == {
        ("toy", "toy.a"), ("toy.a", "toy.helpers"), ("toy.e", "toy")}
    assert cycles(nodes, edges) == []


def test_a_module_importing_itself_is_a_cycle(tmp_path, monkeypatch):
    packages = _package(tmp_path, {"__init__.py": "", "s.py": "def f():\n    import toy.s\n"})
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    nodes, edges = graph(packages)
    assert [c for c, _ in cycles(nodes, edges)] == [["toy.s"]]


def test_a_relative_import_above_the_top_package_is_refused():
    with pytest.raises(ValueError, match="climbs above 'toy'"):
        _resolve_relative("toy.a", False, 3, None)
