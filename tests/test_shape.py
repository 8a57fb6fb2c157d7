"""The package's shape: one module per concept, short functions, no import cycles.

No file in ``kiana/`` is over :data:`MAX_LINES` lines, no function over
:data:`MAX_FUNCTION_LINES`, and no module imports (at import time, outside
``TYPE_CHECKING``) a module that imports it back, however indirectly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

MAX_LINES = 450
MAX_FUNCTION_LINES = 80
PACKAGE = ROOT / "kiana"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def test_no_file_is_over_the_limit() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.heavy
def test_no_function_is_over_the_limit() -> None:
    long = {}
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert long == {}


def _top_level_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The kiana modules ``path`` imports while it is imported (not inside functions,
    not under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" in ast.unparse(node.test):
                body.extend(node.orelse)
                continue
            body.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            body.extend([*node.body, *node.orelse, *node.finalbody])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from package import submodule`` imports the submodule (the package is
            # only initialised first); any other name is the module's own.
            submodules = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
            found.update(submodules)
            if node.module in modules and len(submodules) < len(node.names):
                found.add(node.module)
    return found


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _top_level_imports(path, modules) - {name} for name, path in modules.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []
