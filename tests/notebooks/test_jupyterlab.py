"""An executed, saved notebook opened in a real JupyterLab (headless Chromium, every
request off the machine refused, no cell re-run): its charts are drawn, by JupyterLab's
own Vega renderer from the Vega-Lite mime bundle kiana.charts emits, with no error."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kiana.charts import VEGALITE_MIME
from tests.browser import MARKS

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "report" / "artifacts"

pytestmark = [
    *MARKS,
    pytest.mark.heavy,  # a kernel to execute the notebook, a JupyterLab server: ~30 s
    pytest.mark.skipif(
        shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None,
        reason="needs JupyterLab (pip install -e '.[notebooks]')",
    ),
]


def _executed(tmp: Path, name: str, data: Path) -> tuple[Path, int]:
    """The notebook executed top to bottom, signed as trusted (the lab's notary, under
    ``data``) and saved into ``tmp``, and its chart outputs.  Its user's own notebook is
    trusted once they run it; JupyterLab 4.6.7 draws no Vega-Lite output of an untrusted
    one (4.6.6 did: its text is shown instead)."""
    import nbclient
    import nbformat
    from nbformat.sign import NotebookNotary

    notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )  # fmt: skip
    client.execute()
    path = tmp / f"{name}.ipynb"
    NotebookNotary(data_dir=str(data)).sign(notebook)
    nbformat.write(notebook, path)
    charts = sum(
        VEGALITE_MIME in output.get("data", {})
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    return path, charts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """A JupyterLab server (no token, its own config and data folders) over a folder:
    its URL, the folder, and its data folder (the notary's signatures)."""
    root = tmp_path_factory.mktemp("lab")
    home = tmp_path_factory.mktemp("jupyter")
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "IPYTHONDIR": str(home / "ipython")}  # fmt: skip
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=1)  # localhost only
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start in 60 s")
        yield url, root, home / "data"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def chromium(browser: Any) -> Any:
    return browser


#: Charts drawn by JupyterLab's Vega renderer, and by the inline HTML.
#: Only the notebook on show: JupyterLab restores the workspace's other tabs (the
#: notebook of the test before) beside it.
_SHOWN = ".jp-NotebookPanel:not(.lm-mod-hidden)"
_DRAWN = f"""() => ({{
  vega: Array.from(document.querySelectorAll('{_SHOWN} .jp-RenderedVegaCommon5'))
    .filter(e => e.querySelector('canvas, svg.marks')).length,
  html: document.querySelectorAll('{_SHOWN} div[id^=kiana-chart-] svg.marks').length,
}})"""


@pytest.mark.parametrize("name", ["01-explore", "02-release-compare"])
def test_saved_notebook_draws_its_charts_in_jupyterlab(
    lab: tuple[str, Path, Path], chromium: Any, name: str
) -> None:
    url, root, data = lab
    path, charts = _executed(root, name, data)
    assert charts >= 1
    page = chromium.new_page(viewport={"width": 1400, "height": 4000})
    errors: list[str] = []
    outside: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "console", lambda m: m.type == "error" and "declared" in m.text and errors.append(m.text)
    )

    def route(r: Any) -> None:
        if r.request.url.startswith(url):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    # ?reset: a fresh workspace, without the tabs an earlier test left open
    page.goto(f"{url}/lab/tree/{path.name}?reset", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    deadline = time.monotonic() + 60
    drawn = page.evaluate(_DRAWN)
    while drawn["vega"] < charts and time.monotonic() < deadline:
        page.mouse.wheel(0, 1500)  # cells out of view may wait to be drawn
        page.wait_for_timeout(500)
        drawn = page.evaluate(_DRAWN)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"jupyterlab-{name}.png"))
    assert drawn["vega"] == charts, drawn
    assert errors == []
    assert outside == []
    page.close()
