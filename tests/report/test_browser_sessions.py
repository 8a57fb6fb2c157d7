"""A same-label finding's series in a real browser: the report draws the two 0.8.0
sessions of the step as two liger points at two x positions, the step shaded between
them (headless Chromium, the scene graph of the drawn chart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import MARKS
from tests.report.sessions_fixtures import session_database
from tests.report.test_browser import Watch, browser
from tests.report_fixtures import NOW

__all__ = ["browser"]  # the fixture, shared with test_browser.py

pytestmark = MARKS

#: The symbol and rect items of a drawn chart: the datum's provider, point and x.
_ITEMS = """(id) => {
  const view = document.getElementById(id).kianaView, out = [];
  const walk = (node) => {
    if (!node) return;
    if (node.marktype === 'symbol' || node.marktype === 'rect') {
      (node.items || []).forEach(i => out.push({mark: node.marktype, x: i.x, x2: i.x2,
        width: i.width, provider: i.datum && i.datum.provider, point: i.datum && i.datum.point,
        from: i.datum && i.datum.from, to: i.datum && i.datum.to}));
    }
    (node.items || []).forEach(walk);
  };
  walk(view.scenegraph().root);
  return out;
}"""


def test_two_sessions_of_one_label_are_two_points(browser: Any, tmp_path: Path) -> None:
    from kiana import report
    from kiana.commands.report import collect

    data = collect(session_database(tmp_path), generated_at=NOW)
    top = data.judgement.findings.filter(data.judgement.findings["verdict"] == "regression")
    assert top.height and top["from_version"][0] == top["to_version"][0] == "0.8.0"
    path = report.write(tmp_path / "report.html", report.render(data))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = Watch(page)
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.evaluate("() => window.kianaRenderAll()")
    page.wait_for_function("() => document.getElementById('c-1-s').kianaView", timeout=15_000)
    items = page.evaluate(_ITEMS, "c-1-s")
    step = next(i for i in items if i["mark"] == "rect" and i["from"])
    liger = [i for i in items if i["mark"] == "symbol" and i["provider"] == "liger"]
    assert len(liger) == 3  # 0.7.0, then 0.8.0 twice
    at_step = {i["x"] for i in liger if i["point"] in (step["from"], step["to"])}
    assert len(at_step) == 2, liger
    assert step["from"].startswith(str(top["from_session"][0]))
    assert step["to"].startswith(str(top["to_session"][0]))
    left, right = sorted(at_step)
    assert step["x"] == pytest.approx(left, abs=1) and step["width"] == pytest.approx(
        right - left, abs=1
    )
    labels = page.evaluate("() => document.querySelector('#c-1-s svg').textContent")
    assert labels.count("0.8.0") >= 2
    assert watch.errors == [] and watch.requests == []
    page.close()
