"""``bench/`` holds what guards a target (issue 42): every script says its target in its
docstring and has a row in ``bench/README.md``'s table, the helpers are named as such,
and no script imports a private name of kiana."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
#: Modules the scripts share, not scripts of their own.
HELPERS = ("common.py", "corpus.py", "scale_corpus.py")
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS)


def _table() -> str:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    start = text.index("## What each script guards")
    return text[start : text.index("\n## ", start + 1)]


def _private(tree: ast.AST) -> list[str]:
    """Names of kiana imported whose module path or name starts with ``_``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kiana"):
            parts = (node.module or "").split(".")
            names = [a.name for a in node.names]
            found += [f"{node.module}.{n}" for n in names if n.startswith("_")]
            if any(p.startswith("_") and p != "_version" for p in parts):
                found.append(str(node.module))
        elif isinstance(node, ast.Import):
            found += [
                a.name
                for a in node.names
                if a.name.startswith("kiana") and any(p.startswith("_") for p in a.name.split("."))
            ]
    return found


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_says_its_target_and_has_a_row(script: str) -> None:
    tree = ast.parse((BENCH / script).read_text(encoding="utf-8"))
    assert "Target:" in (ast.get_docstring(tree) or ""), f"{script}: no 'Target:' in its docstring"
    assert f"`{script}`" in _table(), f"{script}: no row in bench/README.md's table"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_no_script_imports_a_private_name(script: str) -> None:
    assert _private(ast.parse((BENCH / script).read_text(encoding="utf-8"))) == []


def test_the_private_import_check_sees_one() -> None:
    tree = ast.parse("from kiana.generate.corpus import _RealisticDraws\nimport kiana._x\n")
    assert _private(tree) == ["kiana.generate.corpus._RealisticDraws", "kiana._x"]
