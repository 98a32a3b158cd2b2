"""The import graph of our three distributions: no cycles, counting every import (at module
level, under ``if TYPE_CHECKING:`` and lazy ones inside functions: a lazy import hides a cycle,
it does not remove it), and the platform service's packages import only downwards at import time
(docs/architecture.md, "What each may import"; lazy imports may reach up, as core.openapi does).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"yitong_services": ROOT / "services", "yitong_lab": ROOT / "extensions", "yitong_spawner": ROOT / "spawner"}
# services: which capability packages each may import at module level ("routes" only from core.app)
ALLOWED = {
    "core": {
        "core",
        "vcs",
        "datasets",
        "jobs",
        "ssh",
        "hpo",
        "models",
        "ops",
        "alerts",
    },  # app/context/settings/metrics compose the packages
    "vcs": {"core", "vcs"},
    "datasets": {"core", "vcs", "datasets"},
    "jobs": {"core", "vcs", "datasets", "jobs"},
    "ssh": {"core", "vcs", "datasets", "jobs", "ssh"},
    "hpo": {"core", "vcs", "datasets", "jobs", "hpo"},
    "models": {"core", "vcs", "datasets", "jobs", "models"},
    "ops": {"core", "vcs", "datasets", "jobs", "alerts", "ops"},  # alerts.nvml: the guarded NVML reader
    "alerts": {"core", "vcs", "datasets", "jobs", "alerts"},
    "routes": {"core", "vcs", "datasets", "jobs", "ssh", "hpo", "models", "alerts", "ops", "routes"},
}


def modules(package: str) -> dict[str, Path]:
    base = PACKAGES[package]
    out = {}
    for path in (base / package).rglob("*.py"):
        if "migrations" in path.parts or "labextension" in path.parts:
            continue
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _top_level_imports(tree: ast.Module):
    """Import nodes that run at import time: module body, try/if blocks, not TYPE_CHECKING."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" not in test:
                todo.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody + [n for h in node.handlers for n in h.body])


def edges(package: str, every: bool = False) -> dict[str, set[str]]:
    """Module -> modules of ``package`` it imports (``every``: lazy and TYPE_CHECKING ones too)."""
    mods = modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        tree = ast.parse(path.read_text())
        found = (
            (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
            if every
            else _top_level_imports(tree)
        )
        for node in found:
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_cycles(package):
    assert cycles(edges(package, every=True)) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_service_packages_import_only_downwards():
    wrong = []
    for module, targets in edges("yitong_services").items():
        parts = module.split(".")
        if len(parts) < 3:
            continue
        layer = parts[1]
        for target in targets:
            tparts = target.split(".")
            if len(tparts) < 2 or tparts[1] not in ALLOWED:
                continue
            if tparts[1] in ("routes", "hpo") and layer != tparts[1]:  # only core.app (and routes) above them
                if module != "yitong_services.core.app" and layer != "routes":
                    wrong.append(f"{module} -> {target}")
            elif layer in ALLOWED and tparts[1] not in ALLOWED[layer]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []
