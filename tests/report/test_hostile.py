"""Hostile strings in every string field of the documents: the report (``kiana report
PATH -o out.html``) shows them as text; in headless Chromium no dialog opens, no
injected element exists and no request leaves the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import reliability as rel
from tests.browser import CHROMIUM, SKIP_REASON
from tests.conftest import write_jsonl

#: Payloads for any string; those of SLASHLESS also fit the "/"-separated ids.
PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "</script><script>alert(3)</script>",
    "javascript:alert(4)",
    "\u202eevil\u202c",
    "'\"><svg onload=alert(5)>",
)
SLASHLESS = ('"><img src=x onerror=alert(6)>', "\u202egpu", "'><svg onload=alert(7)>")


def hostile_documents() -> list[dict[str, Any]]:
    """Two versions x two providers of one hostile kernel, every string field hostile."""
    docs = []
    kernel, pass_ = SLASHLESS[0], SLASHLESS[2]
    for n, (provider, version) in enumerate(
        [(p, v) for p in ("liger", SLASHLESS[1]) for v in (PAYLOADS[0], PAYLOADS[3])]
    ):
        doc = rel.make_document(n, median=100_000 * (1 + n % 2))
        run = doc["run"]
        spec = run["spec"]
        stamp = spec["sourceNative"]["externalId"].rsplit("/", 1)[1]
        spec["sourceNative"]["benchmark"] = f"{kernel}/{pass_}"
        spec["sourceNative"]["externalId"] = "/".join(
            [kernel, pass_, provider, "h100", SLASHLESS[2], stamp]
        )
        spec["sourceNative"]["source"] = PAYLOADS[2]
        run["metadata"]["name"] = PAYLOADS[1] + str(n)
        run["metadata"]["title"] = PAYLOADS[2]
        # a source no profile claims: the plain profile's labels (and the payload is the
        # harness's name, which the page shows)
        role = "subject" if provider == "liger" else "baseline"
        run["metadata"]["labels"] = {"version": version, "role": role, PAYLOADS[5]: PAYLOADS[4]}
        hw = doc["environment"]["spec"]["hardware"]
        hw.update(vendor=PAYLOADS[1], product=PAYLOADS[0], formFactor=PAYLOADS[4])
        doc["environment"]["metadata"]["title"] = PAYLOADS[5]
        doc["protocol"]["metadata"]["title"] = PAYLOADS[0]
        doc["protocol"]["spec"]["comparability"]["notes"] = PAYLOADS[2]
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    data = write_jsonl(tmp / "hostile.jsonl", hostile_documents())
    out = tmp / "out.html"
    done = rel.kiana("report", str(data), "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return out


def test_hostile_documents_all_load(tmp_path: Path) -> None:
    import kiana.load

    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in hostile_documents()))
    summary = kiana.load.load(kiana.load.connect(None), [path])
    assert (summary.loaded, summary.rejected) == (4, 0), summary.first_rejects


@pytest.mark.heavy
def test_no_raw_markup_from_the_data_in_the_html(report: Path) -> None:
    html = report.read_text()
    for payload in ("<img src=x onerror=alert(2)>", "<svg onload=alert(5)>"):
        assert payload not in html
    assert "<script>alert(1)</script>" not in html
    assert "<script>alert(3)</script>" not in html
    assert PAYLOADS[2] not in html  # also the harness's name: "did a ... kernel get slower?"
    assert "did a &lt;/script&gt;" in html


@pytest.fixture(scope="module")
def page(
    request: pytest.FixtureRequest, report: Path
) -> Iterator[tuple[Any, dict[str, list[str]]]]:
    if not CHROMIUM.exists():
        pytest.skip(SKIP_REASON)
    browser = request.getfixturevalue("browser")
    seen: dict[str, list[str]] = {"dialogs": [], "requests": [], "errors": []}
    tab = browser.new_page()

    def dialog(d: Any) -> None:
        seen["dialogs"].append(d.message)
        d.dismiss()

    def route(r: Any) -> None:
        if r.request.url.startswith(("file://", "data:", "blob:", "about:")):
            r.continue_()
        else:
            seen["requests"].append(r.request.url)
            r.abort()

    tab.on("dialog", dialog)
    tab.on("pageerror", lambda e: seen["errors"].append(str(e)))
    tab.route("**/*", route)
    tab.goto(report.resolve().as_uri(), wait_until="load")
    tab.evaluate("() => window.kianaRenderAll && window.kianaRenderAll()")
    tab.wait_for_timeout(1500)
    yield tab, seen
    tab.close()


@pytest.mark.browser
def test_no_dialog_opens(page: tuple[Any, dict[str, list[str]]]) -> None:
    assert page[1]["dialogs"] == []


@pytest.mark.browser
def test_no_request_leaves_the_page(page: tuple[Any, dict[str, list[str]]]) -> None:
    assert page[1]["requests"] == []


@pytest.mark.browser
def test_no_injected_element_exists(page: tuple[Any, dict[str, list[str]]]) -> None:
    tab = page[0]
    assert tab.locator("img[src=x], [onerror], [onload], svg[onload]").count() == 0
    inline = tab.evaluate(
        "() => Array.from(document.scripts).filter(s => s.textContent.includes('alert(')"
        " && s.type !== 'application/json').length"
    )
    assert inline == 0
    links = tab.evaluate(
        "() => Array.from(document.querySelectorAll('[href],[src]'))"
        ".filter(e => (e.getAttribute('href') || e.getAttribute('src') || '')"
        ".trim().toLowerCase().startsWith('javascript:')).length"
    )
    assert links == 0


@pytest.mark.browser
def test_hostile_strings_are_shown_as_text(page: tuple[Any, dict[str, list[str]]]) -> None:
    text = page[0].locator("body").inner_text()
    assert "onerror=alert(6)" in text  # the kernel name, as text
