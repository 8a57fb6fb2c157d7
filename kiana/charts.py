"""Kiana's charts for notebooks: the HTML report's charts as Altair charts.

Each takes the polars frames the API returns and gives an Altair chart, made with
Altair's ``from_dict`` from the very Vega-Lite spec the report draws
(:mod:`kiana.report.charts`)::

    analysis = kiana.analyze(con)
    runs, steps = analysis.runs, analysis.judgement.steps
    row = analysis.findings.row(0, named=True)
    kiana.charts.finding(runs, steps, row)              # series + sweep side by side
    kiana.charts.series(runs, partition_id=..., step=("0.5.0", "0.6.0"))
    kiana.charts.sweep(steps, row)
    kiana.charts.speedup(runs)                          # the code under test over its baselines
    kiana.charts.overview(analysis.findings)            # kernel x GPU heat map

Altair is imported inside the functions, so ``import kiana.charts`` stays light.

Offline: the first chart made here enables the ``"kiana"`` renderer (unless another
renderer than Altair's default was chosen): each chart output is a Vega-Lite mime
bundle that JupyterLab draws with its own Vega, nothing fetched from a CDN, so an
executed notebook saved and opened later shows its charts without a network or a
re-run.  ``kiana.charts.offline(html=True)`` (the ``"kiana-html"`` renderer) inlines the
report's Vega bundle in HTML instead, for front ends that draw HTML only;
``alt.renderers.enable("default")`` goes back to Altair's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from kiana.report import frames
from kiana.report.charts import overview_spec, series_spec, speedup_spec, sweep_spec
from kiana.report.charts.spec import visible_strings
from kiana.vocabulary import is_bridge

if TYPE_CHECKING:
    import altair as alt

__all__ = ["finding", "offline", "overview", "series", "speedup", "sweep", "to_spec"]

#: The names of kiana's offline renderers in ``alt.renderers``.
RENDERER = "kiana"
HTML_RENDERER = "kiana-html"


#: The mime type JupyterLab's built-in Vega renderer draws (Vega 5, Vega-Lite 5), which
#: also draws kiana's specs (written for Vega-Lite 6 with nothing 5 lacks).
VEGALITE_MIME = "application/vnd.vegalite.v5+json"


def render_offline(spec: dict[str, Any], **metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Altair renderer: the chart as a Vega-Lite mime bundle, which JupyterLab (and VS
    Code) draw with their own bundled Vega, offline, also from a saved notebook opened
    untrusted; no URL is loaded.  No ``text/html`` beside it: JupyterLab prefers HTML
    to Vega-Lite and does not run an untrusted output's script, so the chart would be
    an empty box (front ends that draw HTML only: :func:`render_html`, the ``"kiana-html"``
    renderer).  ``metadata["embed_options"]`` (``alt.renderers.set_embed_options``) go to
    vega-embed."""
    embed = dict(metadata.get("embed_options") or {})
    bundle = {VEGALITE_MIME: spec, "text/plain": f"<kiana chart: {_describe(spec)}>"}
    return bundle, ({VEGALITE_MIME: {"embed_options": embed}} if embed else {})


def render_html(spec: dict[str, Any], **metadata: Any) -> dict[str, str]:
    """An Altair renderer for front ends that draw HTML only (Colab, the classic
    Notebook): the chart as inline HTML holding the report's Vega bundle (defined once
    per page however many charts it shows) and the spec; no URL is loaded."""
    return {"text/html": inline_html(spec, dict(metadata.get("embed_options") or {}))}


def _describe(spec: dict[str, Any]) -> str:
    title = spec.get("title")
    if isinstance(title, str) and title:
        return title
    parts = spec.get("hconcat") or []
    titles = [p.get("title") for p in parts if isinstance(p, dict) and p.get("title")]
    return " | ".join(str(t) for t in titles) or "Vega-Lite"


#: Defines ``vegaEmbed`` once per page: the bundle's top-level declarations live in a
#: function of their own, so a second chart output does not declare them again.
_ONCE = "if (typeof window.vegaEmbed !== 'function') {{ (function () {{\n{bundle}\n}})(); }}"


def inline_html(spec: dict[str, Any], embed: dict[str, Any] | None = None) -> str:
    """A chart as self-contained HTML: a target, the Vega bundle (once per page) and the
    call that draws ``spec`` into the target."""
    from uuid import uuid4

    from kiana.report.assets import vega_bundle
    from kiana.report.components import json_text

    target = f"kiana-chart-{uuid4().hex}"
    return (
        f'<div id="{target}"></div><script type="text/javascript">'
        f"{_ONCE.format(bundle=vega_bundle())}</script>"
        '<script type="text/javascript">'
        f'vegaEmbed("#{target}", {json_text(spec)}, {json_text(embed or {})}).catch(function (err) {{'
        f' document.getElementById("{target}").textContent = "chart failed: " + err; }});'
        "</script>"
    )


def offline(*, html: bool = False) -> None:
    """Draw Altair charts with :func:`render_offline` (no network needed), or with
    :func:`render_html` (``html=True``) for a front end that draws HTML only."""
    import altair as alt

    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, render_offline)
        alt.renderers.register(HTML_RENDERER, render_html)
    alt.renderers.enable(HTML_RENDERER if html else RENDERER)


def _offline_unless_chosen() -> None:
    import altair as alt

    if alt.renderers.active in ("default", RENDERER):
        offline()


def _layer(spec: dict[str, Any]) -> alt.LayerChart:
    import altair as alt

    _offline_unless_chosen()
    return alt.LayerChart.from_dict(spec)


def series(runs: pl.DataFrame, **options: Any) -> alt.LayerChart:
    """One partition across versions: each provider's median as a line with its p20–p80
    band; providers under test drawn thick, same-run baselines thin and dashed.
    Options as :func:`kiana.report.charts.series_spec`: ``partition_id``, ``metric``,
    ``step=(from, to)`` (shaded), ``provider`` (drawn first), ``title``."""
    return _layer(series_spec(runs, **options))


def sweep(
    steps: pl.DataFrame,
    finding: Mapping[str, Any],
    *,
    threshold: float | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """The change of one finding's step across its workload sweep: a bar per workload
    coloured by verdict, the control (same-run baseline) change as a black tick."""
    return _layer(sweep_spec(steps, finding, threshold=threshold, title=title))


def finding(
    runs: pl.DataFrame,
    steps: pl.DataFrame,
    row: Mapping[str, Any],
    *,
    threshold: float | None = None,
) -> alt.HConcatChart:
    """Both charts of one finding side by side (series of its worst workload, sweep); a
    bridge's (:mod:`kiana.stats.bridges`: no step of its own, so no sweep) series alone,
    both its sessions shaded."""
    import altair as alt

    _offline_unless_chosen()
    bridge = is_bridge(row)
    worst = frames.charted_workload(runs, steps, row)
    left = series_spec(
        runs,
        partition_id=worst["partition_id"],
        metric=str(row["metric"]),
        step=frames.step_of(row),
        provider=str(row["provider"]),
        title=f"{'first' if bridge else 'worst'} workload: {worst['workload']}",
    )
    specs = [left] if bridge else [
        left, sweep_spec(steps, row, threshold=threshold, title="change across the sweep")
    ]  # fmt: skip
    # the pair holds the config; its charts may not
    parts = [_layer({k: v for k, v in spec.items() if k != "config"}) for spec in specs]
    pair = alt.hconcat(*parts).resolve_scale(color="independent", strokeDash="independent")
    return cast("alt.HConcatChart", pair)


def speedup(
    runs: pl.DataFrame, *, version: str | None = None, max_rows: int | None = None
) -> alt.LayerChart:
    """How much faster each provider under test is than each same-run baseline (baseline
    median / its median, >1 = faster) at the newest version measured (or
    ``version``): a dot chart with one row per kernel · pass · GPU that has such a
    comparison, a dot at the geometric mean over the workload sweep and a line from the
    slowest to the fastest workload, the side below 1× shaded red; colour the baseline,
    shape the provider under test (named by the harness's display name, "Liger", when the
    runs are one harness's).  With more than one kernel or GPU, selects under the chart
    narrow the rows.  Every row (or the first ``max_rows``)."""
    summary = frames.speedup_summary(frames.speedup_frame(runs, version=version))
    return _layer(speedup_spec(summary, max_rows=max_rows))


def overview(frame: pl.DataFrame, *, value: str = "change") -> alt.LayerChart:
    """A kernel · pass × GPU heat map of findings (or steps): their change (control-adjusted
    for the code under test, the number the verdict rests on),
    coloured red for slower and green for faster, for a release-wide look."""
    return _layer(overview_spec(frame, value=value))


def to_spec(chart: Any) -> dict[str, Any]:
    """The Vega-Lite JSON of a chart, without re-validating it against the schema and
    with inline data left inline (as the report's specs have it); every string (data,
    domains, titles) has direction overrides and invisible characters shown as
    ``[U+XXXX]``, the same way in data and in sort orders."""
    import altair as alt

    # inline data stays inline, where the spec had it (not moved to named "datasets")
    transformers = alt.data_transformers
    consolidate, transformers.consolidate_datasets = transformers.consolidate_datasets, False
    try:
        spec: dict[str, Any] = visible_strings(chart.to_dict(validate=False))
    finally:
        transformers.consolidate_datasets = consolidate
    return spec
