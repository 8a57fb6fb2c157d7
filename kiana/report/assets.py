"""What the page inlines: the Vega bundle (once per page), the style sheet and kiana's
own script (table sorting and filtering; charts drawn at once on the first screen, the
others as they scroll into view, all of them before printing).

The page carries a Content-Security-Policy that allows only these inline scripts (by
their SHA-256), no network at all, and inline styles.  Vega compiles its expressions
with ``Function``, hence ``'unsafe-eval'``; injected markup still cannot run a script
(inline handlers and unknown ``<script>`` blocks are refused by the hashes).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kiana.errors import KianaError

#: The Vega-Lite version kiana's chart specs are written for (kiana.report.charts builds
#: them as plain dicts, checked equal to Altair's output in tests/test_report_speed.py).
VEGA_LITE_VERSION = "6.4"


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one classic script defining ``window.vegaEmbed``.

    Built by vl-convert for :data:`VEGA_LITE_VERSION` (about 0.9 MB, ~3 s the first
    time; then cached on disk)."""
    import vl_convert as vlc

    wanted = VEGA_LITE_VERSION
    version = wanted if wanted in vlc.get_vegalite_versions() else None
    cache = _cache_dir() / f"vega-bundle-vl{version or 'latest'}-vlc{_vlc_version()}.js"
    try:
        return cache.read_text(encoding="utf-8")
    except OSError:
        pass
    try:
        bundle: str = vlc.javascript_bundle(vl_version=version)  # type: ignore[call-arg]
    except (ValueError, RuntimeError, OSError) as exc:  # what vl-convert raises
        raise KianaError(
            f"cannot build the Vega JavaScript bundle: {exc}",
            hint="reinstall vl-convert-python (pip install --force-reinstall vl-convert-python)",
        ) from exc
    # Defensive: a literal "</script" or "<!--" would end or confuse the inline block.
    bundle = re.sub(r"<(/script|!--)", r"<\\\1", bundle, flags=re.IGNORECASE)
    try:  # a cache only: a read-only home just means building it again next time
        from kiana.safe import write_text

        write_text(cache, bundle, mkdirs=True)
    except (OSError, KianaError):  # a link on the way: no cache, never written through
        pass
    return bundle


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kiana"


def _vlc_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vl-convert-python")
    except PackageNotFoundError:
        return "unknown"


def script_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(scripts: Iterable[str]) -> str:
    hashes = " ".join(script_hash(s) for s in scripts)
    return (
        "default-src 'none'; "
        f"script-src {hashes} 'unsafe-eval'; "
        "style-src 'unsafe-inline'; img-src data:; font-src data:; "
        "connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


STYLE = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#f6f8fa;
  --reg:#cf222e; --imp:#1a7f37; --drift:#9a6700; --inc:#6e7781; --unch:#8c959f; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); margin: 0; background: #fff; }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--bg); }
header h1 { margin: 0 0 4px; font-size: 22px; }
header .sub { color: var(--muted); }
.headline { font-size: 17px; margin: 10px 0 4px; }
nav { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line);
  padding: 6px 28px; }
nav a { margin-right: 16px; color: #0969da; text-decoration: none; }
main { padding: 0 28px 40px; max-width: 1500px; }
section { margin-top: 26px; }
h2 { font-size: 18px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0 0 6px; }
.intro, .note { color: var(--muted); max-width: 980px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; min-width: 92px;
  background: #fff; }
.card .num { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .label { color: var(--muted); font-size: 12px; }
table.data { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 3px 6px;
  vertical-align: top; }
table.data td { overflow-wrap: break-word; max-width: 460px; }
table.data th { background: var(--bg); position: sticky; top: 34px; text-align: left; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; }
td.right, th.right { text-align: right; font-variant-numeric: tabular-nums; }
tr.empty td { color: var(--muted); font-style: italic; }
.scroll table.data th { top: 0; }
/* a finding is one line: cells whole, a long step breaks after its arrow only */
#findings-table td, #memory-table td { white-space: nowrap; }
.step { white-space: normal; } .step span { white-space: nowrap; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px;
  font-weight: 600; color: #fff; background: var(--inc); }
.badge.regression { background: var(--reg); } .badge.improvement { background: var(--imp); }
.badge.drift { background: var(--drift); } .badge.unchanged { background: var(--unch); }
.bad { color: var(--reg); font-weight: 600; } .good { color: var(--imp); }
.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 8px 0; }
.filters select, .filters input { font: inherit; padding: 2px 4px; }
.filters .count { color: var(--muted); }
.finding { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 12px 0; }
/* an anchor (#f-3, #findings) lands below the sticky nav, not under it */
.finding, section { scroll-margin-top: 52px; }
.finding details { color: var(--muted); margin: 2px 0 6px; }
ol.culprits { margin: 0; padding-left: 18px; }
td ol.culprits { list-style: none; padding: 0; white-space: nowrap; max-width: 360px;
  overflow: hidden; text-overflow: ellipsis; }
td ol.culprits li { display: inline; }
td ol.culprits li:first-child { display: inline-block; max-width: 300px; overflow: hidden;
  text-overflow: ellipsis; vertical-align: bottom; }
.finding .meta { color: var(--muted); margin-bottom: 6px; }
.finding .meta > details { display: inline-block; vertical-align: top; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.chart { min-height: 60px; min-width: 300px; }
.chart-scroll { max-height: min(720px, 75vh); overflow: auto; border: 1px solid var(--line);
  border-radius: 6px; padding: 6px; }
.chart-filter label, .chart-filter select { font: inherit; }
.chart-filter { margin: 6px 0; }
.chart-filter .vega-bind { display: inline-block; margin-right: 18px; }
.chart.pending::before { content: "chart renders when scrolled into view"; color: var(--muted); }
@media print { nav { position: static; } .chart.pending::before { content: none; }
  .scroll, .chart-scroll { max-height: none; overflow: visible; } }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; }
dt { color: var(--muted); } dd { margin: 0; font-family: ui-monospace, monospace;
  word-break: break-all; }
code { font-family: ui-monospace, monospace; }
"""

#: Table sorting/filtering and lazy chart rendering.  No strings from data are ever
#: parsed as HTML here: rows are filtered on their data-* attributes.
SCRIPT = r"""
(function () {
  "use strict";
  function cellKey(row, i) {
    var c = row.cells[i]; if (!c) return "";
    var s = c.getAttribute("data-sort"); if (s === null) s = c.textContent.trim();
    var n = parseFloat(s);
    return (s !== "" && isFinite(n) && /^[-+]?[0-9.]/.test(s)) ? n : s.toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, i) {
      function sort() {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellKey(a, i), y = cellKey(b, i);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
    });
  });
  function applyFilters(tableId) {
    var table = document.getElementById(tableId); if (!table) return;
    var selects = document.querySelectorAll('select[data-table="' + tableId + '"]');
    var search = document.querySelector('input[data-search="' + tableId + '"]');
    var needle = search ? search.value.trim().toLowerCase() : "";
    var shown = 0, total = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      if (row.classList.contains("empty")) return;
      total++;
      var ok = true;
      selects.forEach(function (s) {
        var have = row.getAttribute("data-" + s.getAttribute("data-filter"));
        if (s.value === "") return;
        // "@listed": the rows whose data-listed is "yes" (what kiana regressions lists)
        if (s.value.charAt(0) === "@") have = row.getAttribute("data-" + s.value.slice(1));
        if (have !== (s.value.charAt(0) === "@" ? "yes" : s.value)) ok = false;
      });
      if (ok && needle && row.textContent.toLowerCase().indexOf(needle) < 0) ok = false;
      row.hidden = !ok; if (ok) shown++;
    });
    var none = table.querySelector("tfoot tr.none");
    if (none) none.hidden = shown > 0 || total === 0;
    var count = document.querySelector('[data-count="' + tableId + '"]');
    if (count) count.textContent = "showing " + shown + " of " + total +
      (count.getAttribute("data-of") || "");
  }
  var ids = {};
  document.querySelectorAll("[data-table],[data-search]").forEach(function (el) {
    var id = el.getAttribute("data-table") || el.getAttribute("data-search");
    ids[id] = true;
    el.addEventListener(el.tagName === "SELECT" ? "change" : "input", function () {
      applyFilters(id);
    });
  });
  Object.keys(ids).forEach(applyFilters);

  function render(target) {
    if (target.getAttribute("data-rendered")) return;
    target.setAttribute("data-rendered", "1");
    target.classList.remove("pending");
    var block = document.querySelector('script[data-chart="' + target.id + '"]');
    if (!block || typeof vegaEmbed !== "function") return;
    vegaEmbed(target, JSON.parse(block.textContent), {actions: false, renderer: "svg"})
      .then(function (result) { target.kianaView = result.view; })
      .catch(function (err) { target.textContent = "chart failed: " + err; console.error(err); });
  }
  var charts = document.querySelectorAll("div.chart[id]");
  function renderAll() { charts.forEach(render); }
  // The first screen draws at once; the rest as it scrolls into view.
  var height = window.innerHeight || document.documentElement.clientHeight || 1000;
  var later = Array.prototype.filter.call(charts, function (c) {
    var box = c.getBoundingClientRect();
    if (box.top < height + 200 && box.bottom > -200) { render(c); return false; }
    return true;
  });
  if ("IntersectionObserver" in window) {
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { io.unobserve(e.target); render(e.target); }
      });
    }, {rootMargin: "600px 0px"});
    later.forEach(function (c) { io.observe(c); });
  } else {
    renderAll();
  }
  // Printing (or print preview) draws every chart first.
  window.addEventListener("beforeprint", renderAll);
  if (window.matchMedia) {
    var printing = window.matchMedia("print");
    var onPrint = function (e) { if (e.matches) renderAll(); };
    if (printing.addEventListener) printing.addEventListener("change", onPrint);
    else if (printing.addListener) printing.addListener(onPrint);
  }
  window.kianaRenderAll = renderAll;
})();
"""
