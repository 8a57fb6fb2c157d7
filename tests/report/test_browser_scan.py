"""A report a maintainer can scan, in a real browser, on ``data/`` and on Liger's real
CSVs: the findings table shows what ``kiana regressions`` lists, ten findings and more
per screen, a chart link lands below the sticky nav, the speedup map draws exactly the
kernels, passes and GPUs with a comparison, and sweep labels are whole.  Screenshots
go to tests/artifacts/.  Skips without /usr/bin/chromium."""

from __future__ import annotations

from typing import Any

from tests.browser import MARKS
from tests.report.conftest import Made
from tests.report.scan_fixtures import cli_lines
from tests.report.test_browser import ARTIFACTS, Watch

pytestmark = MARKS


def _open(browser: Any, made: Made) -> tuple[Any, Watch]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(made.page.resolve().as_uri(), wait_until="load")
    return page, watch


_VISIBLE_ROWS = "(id) => document.querySelectorAll('#' + id + ' tbody tr:not([hidden])').length"


def test_the_table_shows_what_kiana_regressions_lists(browser: Any, data_report: Made) -> None:
    page, watch = _open(browser, data_report)
    listed = len(cli_lines(data_report.listing))
    total = page.locator("#findings-table tbody tr").count()
    assert 0 < listed < total
    assert page.evaluate(_VISIBLE_ROWS, "findings-table") == listed
    counter = page.locator('[data-count="findings-table"]').inner_text()
    assert counter == f"showing {listed} of {total} latency findings"
    verdict = 'select[data-filter="verdict"][data-table="findings-table"]'
    page.select_option(verdict, "")
    assert page.evaluate(_VISIBLE_ROWS, "findings-table") == total
    page.select_option(verdict, "unchanged")
    assert page.locator("#findings-table tfoot tr.none").is_hidden()
    page.fill('input[data-search="findings-table"]', "no such kernel anywhere")
    assert page.locator("#findings-table tfoot tr.none").is_visible()  # says why it is empty
    assert watch.errors == [] and watch.requests == []
    page.close()


def test_ten_findings_and_more_fit_a_screen(browser: Any, data_report: Made) -> None:
    page, watch = _open(browser, data_report)
    page.locator('nav a[href="#findings"]').click()
    page.wait_for_timeout(200)
    whole = page.evaluate(
        """() => Array.from(document.querySelectorAll('#findings-table tbody tr:not([hidden])'))
                 .filter(r => { const b = r.getBoundingClientRect();
                                return b.top >= 0 && b.bottom <= window.innerHeight; }).length"""
    )
    assert whole >= 10, whole
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-data-findings.png"))
    assert watch.errors == []
    page.close()


def test_a_chart_link_lands_below_the_sticky_nav(browser: Any, data_report: Made) -> None:
    page, watch = _open(browser, data_report)
    page.locator("#findings-table a", has_text="chart").first.click()
    page.wait_for_timeout(300)
    boxes = page.evaluate(
        """() => ({nav: document.querySelector('nav').getBoundingClientRect().bottom,
                   title: document.querySelector('#f-1 h3').getBoundingClientRect().top})"""
    )
    assert boxes["nav"] <= boxes["title"] <= boxes["nav"] + 60, boxes
    assert watch.errors == []
    page.close()


def test_real_data_first_screen(browser: Any, real_report: Made) -> None:
    """Liger's real history: every listed finding one line, on the first screen with
    the headline; a memory table listing nothing says so."""
    page, watch = _open(browser, real_report)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-real-first-screen.png"))
    heights = page.evaluate(
        """() => Array.from(document.querySelectorAll('#findings-table tbody tr:not([hidden])'))
                 .map(r => [r.getBoundingClientRect().height, r.getBoundingClientRect().bottom])"""
    )
    assert heights and len(heights) == len(
        [line for line in cli_lines(real_report.listing) if " latency " in line]
    )
    assert all(height < 30 for height, _ in heights), heights  # one line each
    if len(heights) <= 10:
        assert all(bottom <= 1000 for _, bottom in heights), heights
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1400
    assert watch.errors == [] and watch.requests == []
    page.close()


def test_real_speedup_map_rows_are_the_comparisons(browser: Any, real_report: Made) -> None:
    import kiana
    from kiana.report import frames

    con = kiana.connect(str(real_report.db))
    summary = frames.speedup_summary(frames.speedup_frame(kiana.runs(con)))
    con.close()
    page, watch = _open(browser, real_report)
    page.locator("#speedup").scroll_into_view_if_needed()
    page.wait_for_selector("#c-speedup svg .role-legend", state="attached", timeout=30_000)
    drawn = page.evaluate(
        """() => Array.from(document.querySelectorAll('#c-speedup .role-axis-label text'))
                 .map(t => t.textContent).filter(t => t.includes(' · '))"""
    )
    assert drawn == frames.speedup_rows(summary)
    marks = page.locator("#c-speedup .mark-symbol.role-mark path").count()
    assert marks == summary.height  # one dot per Liger provider and baseline
    right = page.evaluate(
        "() => document.querySelector('#c-speedup svg').getBoundingClientRect().right"
    )
    assert right <= 1400
    page.screenshot(path=str(ARTIFACTS / "report-real-speedup.png"))
    assert watch.errors == [] and watch.requests == []
    page.close()


def test_real_sweep_labels_are_whole(browser: Any, real_report: Made) -> None:
    page, watch = _open(browser, real_report)
    page.locator("#f-1").scroll_into_view_if_needed()
    page.wait_for_selector("#c-1-w svg", state="attached", timeout=30_000)
    drawn = page.evaluate(
        """() => Array.from(document.querySelectorAll('#c-1-w .role-axis-label text'))
                 .map(t => t.textContent)"""
    )
    workloads = page.evaluate(
        """() => JSON.parse(document.querySelector('script[data-chart="c-1-w"]').textContent)
                 .layer[0].data.values.map(v => v.workload)"""
    )
    assert workloads and set(workloads) <= set(drawn)  # each workload's name drawn whole
    assert all("…" not in label for label in drawn)
    assert watch.errors == []
    page.close()
