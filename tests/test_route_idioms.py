"""The route modules use FastAPI's idioms (docs/architecture.md): a route that only blocks is a
plain ``def`` (FastAPI runs it in the threadpool), an ``async def`` route blocks nowhere or
awaits something that is not a thread (the hub, a backend, the request body), and no route hides its work in a nested
``def work()`` closure handed to a thread helper."""

from __future__ import annotations

import ast
from pathlib import Path

ROUTES = Path(__file__).resolve().parent.parent / "services" / "yitong_services" / "routes"
THREAD_HELPERS = {"run_in_threadpool", "in_thread", "run_sync"}


def _handlers(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and getattr(d.func.value, "id", "") == "router"
            for d in node.decorator_list
        ):
            yield node


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def test_routes_are_def_or_await_the_loop():
    problems, handlers = [], 0
    for path in sorted(ROUTES.glob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in tree.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "in_thread":
                problems.append(f"{path.name} defines in_thread")
        for fn in _handlers(tree):
            handlers += 1
            where = f"{path.name}:{fn.lineno} {fn.name}"
            nested = [s.name for s in fn.body if isinstance(s, ast.FunctionDef)]
            if nested:
                problems.append(f"{where}: blocking closure(s) {nested}; make the route a plain def")
            if isinstance(fn, ast.AsyncFunctionDef):
                awaited = [_called(a.value) for a in ast.walk(fn) if isinstance(a, ast.Await)]
                inner = any(isinstance(s, ast.AsyncFunctionDef) for s in ast.walk(fn) if s is not fn)
                if awaited and all(c in THREAD_HELPERS for c in awaited) and not inner:
                    problems.append(f"{where}: async but only awaits threads; make it a plain def")
    assert handlers > 50
    assert problems == []
