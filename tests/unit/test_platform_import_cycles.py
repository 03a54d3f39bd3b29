"""The platform apps (runs, teams, telemetry, ...) import each other without a cycle.

They are top-level packages side by side in platform/, not one root package, so
import-linter (which checks umbra, see .importlinter) cannot state this; the graph is
built here from the source with ``ast``: every import counts, also those inside functions."""
from __future__ import annotations

import ast
from pathlib import Path

PLATFORM = Path(__file__).resolve().parents[2] / "platform"


def platform_apps(root: Path = PLATFORM) -> set[str]:
    """The top-level packages under ``root``."""
    return {p.parent.name for p in root.glob("*/__init__.py")}


def _imports(tree: ast.AST, package: str) -> list[tuple[str, int]]:
    """``(top-level name, line)`` of each module that ``tree`` (a module of ``package``) imports."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: stays inside the importing app
                found.append((package.split(".")[0], node.lineno))
            elif node.module:
                found.append((node.module.split(".")[0], node.lineno))
    return found


def app_imports(root: Path = PLATFORM) -> dict[tuple[str, str], list[str]]:
    """``{(app, imported app): ["file:line", ...]}`` for imports between two apps."""
    apps = platform_apps(root)
    where: dict[tuple[str, str], list[str]] = {}
    for app in sorted(apps):
        for path in sorted((root / app).rglob("*.py")):
            package = ".".join(path.relative_to(root).parent.parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, line in _imports(tree, package):
                if name in apps and name != app:
                    where.setdefault((app, name), []).append(f"{path.relative_to(root)}:{line}")
    return where


def app_graph(root: Path = PLATFORM) -> dict[str, set[str]]:
    """``{app: apps it imports}`` (self-imports left out)."""
    graph: dict[str, set[str]] = {app: set() for app in platform_apps(root)}
    for importer, imported in app_imports(root):
        graph[importer].add(imported)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_platform_apps_import_each_other_without_a_cycle():
    graph = app_graph()
    assert {"runs", "teams", "telemetry", "api"} <= set(graph), sorted(graph)  # it found the apps
    found = cycles(graph)
    in_cycle = {app for component in found for app in component}
    edges = {f"{a} -> {b}": sites for (a, b), sites in app_imports().items() if {a, b} <= in_cycle}
    assert found == [], f"apps importing each other in a cycle: {found}; the imports: {edges}"


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "__init__.py").write_text("")
    (tmp_path / "alpha" / "views.py").write_text("from beta.models import B\n")
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta" / "__init__.py").write_text("from . import models\n")
    (tmp_path / "beta" / "models.py").write_text("def later():\n    import alpha.views\n")
    (tmp_path / "gamma").mkdir()
    (tmp_path / "gamma" / "__init__.py").write_text("import alpha\n")  # imports, is not imported
    graph = app_graph(tmp_path)
    assert graph == {"alpha": {"beta"}, "beta": {"alpha"}, "gamma": {"alpha"}}
    assert cycles(graph) == [["alpha", "beta"]]


def test_no_cycle_in_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
