"""The README's notebook snippet ("In a notebook") runs as written from the repository
root, where a reader of the README stands, and its chart shows the most important Liger
finding (a regression on the bundled data/), not a baseline's drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kiana.harness import LIGER

pytestmark = pytest.mark.heavy  # every test here is over the quick loop's budget

ROOT = Path(__file__).resolve().parents[1]


def notebook_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## In a notebook", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section shows one Python snippet"
    return str(blocks[0])


def test_the_readme_snippet_runs_from_the_repository_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import altair as alt

    monkeypatch.chdir(ROOT)
    code = notebook_snippet()
    assert "../data" not in code
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)
    top = scope["top"]
    assert isinstance(top, dict)
    assert top["is_subject"] and LIGER.role(str(top["provider"])) == "subject", top["provider"]
    assert top["verdict"] == "regression", top
    chart = eval(code.strip().splitlines()[-1].split("#")[0], scope)
    assert isinstance(chart, alt.HConcatChart)
