"""The examples in kiana's docstrings run as written (from the repository root, where
``data/`` is): every module whose source holds a ``>>>`` prompt is doctested."""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests.conftest import ROOT

MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "kiana").rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8") and path.name != "__main__.py"
)


def test_some_module_has_examples() -> None:
    assert "kiana.pipeline" in MODULES


@pytest.mark.heavy
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
