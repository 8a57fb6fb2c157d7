"""The report in a real browser: headless Debian Chromium driven by Playwright.

Checks: no console error, the charts render (non-empty SVG), filtering the findings
table works, no request leaves the page, no dialog opens, and no element injected by
hostile strings exists.  Saves screenshots to tests/artifacts/.  Skips when
/usr/bin/chromium is absent (``.ci/install-chromium`` installs it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import MARKS, chromium
from tests.report_fixtures import build_page, sample_database

ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = MARKS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def _report(tmp_path: Path, hostile: bool) -> Path:
    from kiana import report

    con = sample_database(tmp_path, hostile=hostile)
    out = tmp_path / "report.html"
    report.write(out, build_page(con, command_line="kiana report <test>"))
    return out


class Watch:
    """Console errors, dialogs and network requests seen by one page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", self._dialog)

        def route(r: Any) -> None:
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                self.requests.append(r.request.url)
                r.abort()

        page.route("**/*", route)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def _open(browser: Any, path: Path) -> tuple[Any, Watch]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(path.resolve().as_uri(), wait_until="load")
    return page, watch


def _rendered_svgs(page: Any) -> int:
    return _rendered_svgs_in(page, "div.chart svg")


def _rendered_svgs_in(page: Any, selector: str) -> int:
    """How many ``selector`` SVGs are drawn (wider than 50 px, over 3 marks)."""
    count: int = page.evaluate(
        """(selector) => Array.from(document.querySelectorAll(selector))
                 .filter(s => s.getBoundingClientRect().width > 50
                              && s.querySelectorAll('path, rect, line').length > 3).length""",
        selector,
    )
    return count


def test_report_renders_and_filters(browser: Any, tmp_path: Path) -> None:
    page, watch = _open(browser, _report(tmp_path, hostile=False))
    page.evaluate("() => window.kianaRenderAll()")
    page.wait_for_function(
        "() => document.querySelectorAll('div.chart[data-rendered] svg').length"
        " === document.querySelectorAll('div.chart').length",
        timeout=15_000,
    )
    charts = page.locator("div.chart").count()
    assert charts >= 3
    assert _rendered_svgs(page) == charts

    rows = page.locator("#findings-table tbody tr")
    total = rows.count()
    assert total >= 2
    page.select_option('select[data-filter="verdict"][data-table="findings-table"]', "regression")
    visible = page.locator("#findings-table tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    for i in range(visible.count()):
        assert visible.nth(i).get_attribute("data-verdict") == "regression"
    assert "showing" in page.locator('[data-count="findings-table"]').inner_text()
    page.select_option('select[data-filter="verdict"][data-table="findings-table"]', "")
    assert page.locator("#findings-table tbody tr:not([hidden])").count() == total
    # sorting by the finding's change does not break the page
    page.locator("#findings-table th", has_text=re.compile(r"^\s*change\s*$")).click()

    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "report-top.png"))
    page.locator("#f-1").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-finding.png"))
    assert watch.errors == []
    assert watch.requests == []
    assert watch.dialogs == []
    page.close()


def test_hostile_strings_stay_text(browser: Any, tmp_path: Path) -> None:
    page, watch = _open(browser, _report(tmp_path, hostile=True))
    page.evaluate("() => window.kianaRenderAll()")
    page.wait_for_function(
        "() => document.querySelectorAll('div.chart[data-rendered] svg').length > 0",
        timeout=15_000,
    )
    page.wait_for_timeout(300)
    assert page.locator("img[src=x], svg[onload], script[src]").count() == 0
    scripts = page.evaluate(
        "() => Array.from(document.scripts).filter(s => s.type !== 'application/json').length"
    )
    assert scripts == 2  # the Vega bundle and kiana's own script, nothing injected
    text = page.locator("body").inner_text()
    assert 'layer_norm"><img src=x onerror=alert(1)>' in text  # shown as text
    assert "</script><script>alert(7)</script>" in text  # a reject's reason, as text
    assert "[U+202E]" in text  # direction override made visible
    if os.environ.get("KIANA_SCREENSHOTS"):
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-hostile.png"), full_page=True)
    assert watch.dialogs == []
    assert watch.requests == []
    assert watch.errors == []
    page.close()


def test_notebook_chart_output_draws_offline(browser: Any, tmp_path: Path) -> None:
    """kiana.charts' renderer: a chart output draws with every request refused."""
    import kiana.charts
    from tests.report_fixtures import sample_runs

    spec = kiana.charts.to_spec(kiana.charts.speedup(sample_runs()))
    html = "".join(kiana.charts.render_html(spec)["text/html"] for _ in range(3))
    out = tmp_path / "output.html"
    # three chart outputs on one page: the bundle is defined once, nothing declared twice
    out.write_text(f"<!DOCTYPE html><html><body>{html}</body></html>")
    page, watch = _open(browser, out)
    page.wait_for_function(
        "() => document.querySelectorAll('div[id^=kiana-chart-] svg.marks').length === 3",
        timeout=15_000,
    )
    assert _rendered_svgs_in(page, "div[id^=kiana-chart-] svg.marks") == 3
    assert watch.requests == [] and watch.errors == []
    page.close()


_IN_VIEW = """() => Array.from(document.querySelectorAll('div.chart')).filter(c => {
    const box = c.getBoundingClientRect();
    return box.top < window.innerHeight && box.bottom > 0;
}).map(c => ({id: c.id, pending: c.classList.contains('pending'),
              drawn: c.querySelectorAll('svg').length > 0}))"""


def test_first_screen_draws_at_once(browser: Any, tmp_path: Path) -> None:
    """Right after load, no chart on the first screen waits to be scrolled to."""
    path = _report(tmp_path, hostile=False)
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    watch = Watch(page)
    # the charts in view as the page's scripts have run (before any observer fires)
    page.add_init_script(
        f"document.addEventListener('DOMContentLoaded', () => {{ window.kianaSeen = ({_IN_VIEW})(); }})"
    )
    page.goto(path.resolve().as_uri(), wait_until="load")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-first-screen.png"))
    for seen in (page.evaluate("() => window.kianaSeen"), page.evaluate(_IN_VIEW)):
        assert seen, "no chart on the first screen: make the viewport taller"
        assert [c["id"] for c in seen if c["pending"]] == []
    page.wait_for_function(f"() => ({_IN_VIEW})().every(c => c.drawn)", timeout=5_000)
    assert watch.errors == [] and watch.requests == []
    page.close()


@pytest.mark.parametrize("how", ["media", "beforeprint"])
def test_printing_draws_every_chart(browser: Any, tmp_path: Path, how: str) -> None:
    """Print (media print, or the beforeprint event) draws the charts never scrolled to."""
    path = _report(tmp_path, hostile=False)
    page = browser.new_page(viewport={"width": 1400, "height": 300})
    watch = Watch(page)
    page.goto(path.resolve().as_uri(), wait_until="load")
    assert page.locator("div.chart.pending").count() > 0, "every chart drew: shorter viewport"
    if how == "media":
        page.emulate_media(media="print")
    else:
        page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    page.wait_for_function(
        "() => document.querySelectorAll('div.chart svg').length"
        " === document.querySelectorAll('div.chart').length",
        timeout=15_000,
    )
    assert page.locator("div.chart.pending").count() == 0
    assert _rendered_svgs(page) == page.locator("div.chart").count()
    assert watch.errors == [] and watch.requests == []
    page.close()


def test_series_legend_shows_each_providers_line(browser: Any, tmp_path: Path) -> None:
    """The drawn legend: each provider's own colour (liger its fixed blue), opaque
    strokes, Liger solid and baselines dashed."""
    from kiana.report.charts import provider_color

    page, watch = _open(browser, _report(tmp_path, hostile=False))
    page.evaluate("() => window.kianaRenderAll()")
    page.wait_for_selector("#c-1-s .role-legend-symbol path", state="attached", timeout=15_000)
    symbols = page.evaluate(
        """() => {
            const chart = document.querySelector('#c-1-s');
            const names = Array.from(chart.querySelectorAll('.role-legend-label text'));
            const marks = Array.from(chart.querySelectorAll('.role-legend-symbol path'));
            return names.map((n, i) => ({name: n.textContent,
                stroke: marks[i].getAttribute('stroke'),
                dash: marks[i].getAttribute('stroke-dasharray'),
                opacity: marks[i].getAttribute('opacity')}));
        }"""
    )
    by_name = {s["name"]: s for s in symbols}
    assert set(by_name) == {"liger", "huggingface", "torch_compile"}
    for name, symbol in by_name.items():
        assert symbol["stroke"] == provider_color(name), symbol
        assert float(symbol["opacity"] or 1) == 1.0, symbol
    assert by_name["liger"]["dash"] in (None, "1,0")
    assert by_name["huggingface"]["dash"] == by_name["torch_compile"]["dash"] == "5,3"
    assert watch.errors == []
    page.close()


def _large_history_report(tmp_path: Path) -> tuple[Path, int, int]:
    """A report of a large generated history: every kernel and GPU of the generator's
    catalog, each kernel also under six more names (over 1,800 rows of the speedup map,
    7 GPUs).  Returns the page, the map's rows and the rows of one kernel (``rms_norm``)."""
    import kiana
    from kiana import report
    from kiana.generate import CorpusConfig, generate
    from kiana.generate.catalog import GPUS, KERNELS
    from kiana.report import frames

    config = CorpusConfig(
        seed=1, kernels=tuple(KERNELS), gpus=tuple(GPUS), versions=("0.5.0", "0.6.0"),
        sweep_size=3,
    )  # fmt: skip
    con = kiana.connect()
    kiana.load_documents(con, list(generate(config).documents()))
    for i in range(1, 7):
        con.execute(
            f"INSERT INTO runs SELECT * REPLACE (kernel || '_v{i}' AS kernel, "
            f"partition_id || '_v{i}' AS partition_id, run_id || '{i}' AS run_id) "
            "FROM runs WHERE NOT regexp_matches(kernel, '_v[0-9]$')"
        )
    summary = frames.speedup_summary(frames.speedup_frame(kiana.runs(con)))
    out = tmp_path / "large.html"
    report.write(out, build_page(con, command_line="kiana report <large>"))
    one = summary.filter(summary["kernel"] == "rms_norm")["row"].n_unique()
    return out, summary["row"].n_unique(), one


_ROW_LABELS = """() => Array.from(document.querySelectorAll('#c-speedup .role-axis-label text'))
                 .map(t => t.textContent).filter(t => t.includes(' · '))"""


def test_speedup_map_fits_a_1400px_window(browser: Any, tmp_path: Path) -> None:
    """On a large history the dot chart keeps inside the window (legends included), the
    page does not grow past a screen for it, and every row is there to scroll or to
    pick by kernel."""
    path, rows, one_kernel = _large_history_report(tmp_path)
    assert rows > 1800 and one_kernel > 1
    page, watch = _open(browser, path)
    page.locator("#speedup").scroll_into_view_if_needed()
    page.wait_for_selector("#c-speedup svg .role-legend", state="attached", timeout=60_000)
    geometry = page.evaluate(
        """() => {
            const box = (s) => document.querySelector(s).getBoundingClientRect();
            const legends = Array.from(document.querySelectorAll('#c-speedup .role-legend'))
                .map(l => l.getBoundingClientRect().right);
            return {window: window.innerWidth, height: window.innerHeight,
                    page: document.documentElement.scrollWidth,
                    svg: box('#c-speedup svg').right, legend: Math.max(...legends),
                    scroller: box('.chart-scroll').height};
        }"""
    )
    assert geometry["page"] <= geometry["window"], geometry  # no sideways scrolling
    assert geometry["svg"] <= geometry["window"] and geometry["legend"] <= geometry["window"]
    assert geometry["scroller"] <= 0.8 * geometry["height"], geometry
    assert len(page.evaluate(_ROW_LABELS)) == rows  # every row
    assert "first 150" not in page.locator("#speedup").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-speedup-large.png"))

    page.select_option("#speedup-filter select >> nth=0", "rms_norm")
    page.wait_for_function(f"() => ({_ROW_LABELS})().length < {rows}", timeout=10_000)
    shown = page.evaluate(_ROW_LABELS)
    assert len(shown) == one_kernel and all(t.startswith("rms_norm · ") for t in shown)
    assert watch.errors == [] and watch.requests == []
    page.close()
