"""Reading the shape of the source tree without importing it: its import graph and its folders.

The graph holds every import of every module, those under ``if TYPE_CHECKING:`` included (a
circle closed only for the type checker is still a circle a reader must untangle). It is built
from the files by an AST walk rather than with grimp so that a test can check a modified copy
of the tree in a temporary folder, as tests/test_architecture.py does for the contracts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["circles", "folders_over", "import_graph", "package_circles"]

Graph = Mapping[str, frozenset[str]]


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at ``root`` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _target(module: str, level: int, name: str | None, here: str, is_package: bool) -> str:
    """The dotted name an import statement in ``here`` names."""
    if level == 0:
        return module
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([module] if module else [])]) if name is None else ""


def import_graph(root: Path, package: str) -> dict[str, frozenset[str]]:
    """Module -> the modules of ``package`` it imports (directly, TYPE_CHECKING included)."""
    modules = _modules(root, package)
    graph: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    edges.add(_known(alias.name, modules))
            elif isinstance(node, ast.ImportFrom):
                base = _target(node.module or "", node.level, None, name, is_package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    edges.add(sub if sub in modules else _known(base, modules))
        graph[name] = frozenset(e for e in edges if e and e != name)
    return graph


def _known(name: str, modules: Mapping[str, Path]) -> str:
    """``name`` or its nearest enclosing module of the package; "" when outside it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _strongly_connected(
    nodes: Iterable[str], edges: Mapping[str, Iterable[str]]
) -> list[list[str]]:
    """The components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def circles(graph: Graph) -> list[list[str]]:
    """Every circle of modules (each as the sorted members of one strongly connected set)."""
    return _strongly_connected(graph, graph)


def package_circles(graph: Graph) -> list[tuple[str, list[str]]]:
    """Every circle among the children (modules and sub-packages) of one package: an import
    that runs back up from a lower child to a higher one, at any depth."""
    packages = {m.rpartition(".")[0] for m in graph if "." in m}
    packages |= {m for m in graph if any(other.startswith(m + ".") for other in graph)}
    found: list[tuple[str, list[str]]] = []
    for package in sorted(packages):
        prefix = package + "."

        def child(module: str, prefix: str = prefix) -> str | None:
            if not module.startswith(prefix):
                return None
            return prefix + module[len(prefix) :].split(".")[0]

        edges: dict[str, set[str]] = {}
        for module, targets in graph.items():
            a = child(module)
            if a is None:
                continue
            edges.setdefault(a, set())
            for target in targets:
                b = child(target)
                if b is not None and b != a:
                    edges[a].add(b)
        found += [(package, c) for c in _strongly_connected(edges, edges)]
    return found


def folders_over(root: Path, limit: int) -> dict[str, int]:
    """The folders under ``root`` holding more than ``limit`` modules (``__init__`` aside)."""
    counts = {}
    for folder in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
        if folder.name == "__pycache__":
            continue
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        if count > limit:
            counts[str(folder.relative_to(root.parent))] = count
    return counts
