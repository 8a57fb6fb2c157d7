"""Execute the notebooks top to bottom, as a reader would (cwd = notebooks/, the
folder JupyterLab starts them in; they find data/ relative to the repository), and
check that on the bundled data/ they show what their text promises."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest

from kiana.charts import VEGALITE_MIME

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Per notebook, texts its outputs must show on data/, and texts they must not: the
#: fallbacks a notebook prints when the data holds nothing to show.
PROMISES: dict[str, tuple[list[str], list[str]]] = {
    "01-explore": (
        ["rejected 0", "partitions", "findings: ", "not listed by default", "regression"],
        ["no finding"],
    ),
    "02-release-compare": (["comparing Liger "], ["no Liger findings for this pair"]),
}


def test_notebooks_exist_and_are_stored_without_outputs() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {"01-explore.ipynb", "02-release-compare.ipynb"} <= names
    assert {p.stem for p in NOTEBOOKS} == set(PROMISES), "say what a new notebook shows"
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [] and cell.get("execution_count") is None, path.name


#: What would make a chart output fetch Vega from the network (Altair's default renderer
#: loads it from jsDelivr): a script with a ``src``, a CDN, requirejs paths, an ES import.
REMOTE = re.compile(
    r"<script[^>]*\bsrc\s*=|cdn\.jsdelivr|unpkg\.com|cdnjs|require\.config|import\(\s*[\"']http",
    re.IGNORECASE,
)


def _text(output: Any) -> str:
    return str(output.get("text") or output.get("data", {}).get("text/plain", ""))


@pytest.mark.heavy  # a Jupyter kernel per notebook, judging all of data/: over 3 s each
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    client.execute()  # raises CellExecutionError at the first cell that fails
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    texts = [_text(output) for cell in code for output in cell.outputs]
    # Every chart the notebook draws is an Altair chart (not a fallback string).
    charts = [
        cell for cell in code if "kiana.charts." in cell.source and "import" not in cell.source
    ]
    assert charts, "the notebook draws no chart"
    for cell in charts:
        assert [_text(o) for o in cell.outputs if "data" in o][-1].startswith("<kiana chart"), (
            cell.source
        )
        # a Vega-Lite mime bundle JupyterLab draws itself, and no HTML it would prefer
        data = [o.get("data", {}) for o in cell.outputs if "data" in o][-1]
        assert VEGALITE_MIME in data and "text/html" not in data, cell.source
    for cell in code:
        for output in cell.outputs:
            for kind, value in output.get("data", {}).items():
                found = REMOTE.search(str(value))
                assert found is None, (
                    f"{path.name}: {kind} output loads {found and found.group()!r}"
                )
    # the README's API: kiana.analyze, not the statistics assembled by hand
    source = "".join(cell.source for cell in code)
    assert "kiana.analyze(" in source and "kiana.stats.judge(" not in source
    shown, fallbacks = PROMISES[path.stem]
    for text in shown:
        assert any(text in t for t in texts), f"{path.name} never shows {text!r}"
    for text in fallbacks:
        assert not any(text in t for t in texts), f"{path.name} fell back to {text!r}"
