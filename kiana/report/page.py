"""The report page: sections assembled from :class:`ReportData` (through the frames of
:func:`kiana.report.data.gather`) with the escaping components; one ``<html>`` string
with everything inlined.  A function of its data: no database, no judging here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from kiana._version import __version__
from kiana.errors import KianaError
from kiana.findings.counts import Counts
from kiana.findings.wording import (
    plain_sentence,
    rerun_line,
    step_label,
    workloads_text,
    worth_rerun,
)
from kiana.harness import display_name
from kiana.report import assets, charts, frames
from kiana.report.appendix import provenance, quality_section
from kiana.report.components import (
    Cell,
    Column,
    Html,
    Row,
    badge,
    capped,
    change_cell,
    counter,
    esc,
    filter_bar,
    fmt_number,
    fmt_ratio,
    join,
    json_script,
    note,
    number,
    percent_cell,
    safe_id,
    section,
    stat_cards,
    table,
)
from kiana.report.culprits import culprits_html
from kiana.report.data import Gathered, ReportData, gather
from kiana.report.listing import Table
from kiana.report.text import coverage_line, coverage_text, headline
from kiana.stats import JudgeOptions
from kiana.vocabulary import VERDICTS, is_bridge

SECTIONS = (
    ("summary", "Summary"),
    ("findings", "Findings"),
    ("charts", "Top findings"),
    ("speedup", "Speedup over baselines"),
    ("memory", "Memory"),
    ("quality", "Data quality"),
    ("provenance", "How it was made"),
)


def subject_name(data: ReportData) -> str | None:
    """The display name of the data's one harness ("Liger"), None for several."""
    runs = data.runs
    return display_name(runs["harness"].unique().to_list()) if runs.height else None


def summary(g: Gathered, name: str | None) -> Html:
    c = g.counts
    keys = ("documents read", "runs", "rejects", "partitions", "kernels", "GPUs", "versions")
    cards = stat_cards(
        [*((f"{name} versions" if k == "versions" and name else k, c[k]) for k in keys),
         ("findings", c["findings"])]
    )  # fmt: skip
    verdicts = "".join(
        f'<div class="card"><div class="num">{esc(fmt_number(c[v]))}</div>'
        f'<div class="label">{badge(v)}</div></div>'
        for v in VERDICTS
    )
    covered = coverage_text(g.coverage)
    extra = note(
        f"Findings by verdict: each finding is one kernel, pass, provider, GPU and pair of "
        f"sessions over its workload sweep ({c['findings']:,} findings of {c['steps']:,} steps). "
        + (f"Coverage: {covered}. " if covered else "")
        + f"{c['latency runs']:,} latency runs and {c['memory runs']:,} memory runs passed; "
        f"{c['not passed']:,} runs did not pass and are kept but never judged."
    )
    return Html(f'{cards}<div class="cards">{verdicts}</div>{extra}')


FINDING_COLUMNS = (
    Column("#", "right"), Column("verdict", key="verdict"), Column("kernel", key="kernel"),
    Column("pass"), Column("provider", key="provider"), Column("GPU", key="gpu"),
    Column("step"), Column("work\u00adloads", "right"), Column("change", "right"),
    Column("±", "right"), Column("worst change", "right"), Column("control"),
    Column("chart"),
)  # fmt: skip


def findings_table(found: Table, charted: set[int], *, table_id: str, limit: int) -> Html:
    """The table of one metric's findings (``found``, a
    :class:`~kiana.report.listing.Table`: its first rows in
    :func:`kiana.report.data.sort_findings`' order), listing by default what ``kiana
    regressions`` lists (its ``listed`` column), with what the default hides and what
    is folded said under its filters (``found.counts``:
    :func:`kiana.findings.counts.count_findings` of the same findings)."""
    shown, cap = capped(found.rows, limit, "findings", total=found.height)
    rows = [
        Row(_finding_cells(r, charted), {"listed": "yes" if r.get("listed") else "no"})
        for r in shown.iter_rows(named=True)
    ]
    columns: tuple[Column, ...] = FINDING_COLUMNS
    if "culprits_command" in shown.columns:  # kiana.culprits.annotate: one more column
        columns = (*columns, Column("culprits"))
        rows = [
            Row([*row.cells, culprits_html(r, top=1)], row.data)
            for row, r in zip(rows, shown.iter_rows(named=True), strict=True)
        ]
    body = table(
        columns, rows, id=table_id, sortable=True, empty="no findings",
        none="no finding matches the filters (verdict 'all' shows every finding)",
    )  # fmt: skip
    what = "memory findings" if table_id == "memory-table" else "latency findings"
    of = (
        f" rows of this table (the first {limit:,} of {found.height:,} {what})"
        if found.height > limit
        else f" {what}"
    )
    preset = {"verdict": ("listed", "listed (as kiana regressions)")}
    bar = filter_bar(table_id, found.options, preset=preset, of=None)
    said = Html(f'<p class="note">{counter(table_id, of)}. {listed_text(found.counts)}</p>')
    return Html(f'{bar}{said}<div class="scroll">{body}</div>{cap}')


def _finding_cells(r: dict[str, Any], charted: set[int]) -> list[object]:
    rank = int(r["rank"])
    link = Html(f'<a href="#f-{rank}">chart</a>') if rank in charted else ""
    return [
        Cell(rank, sort=rank),
        Cell(badge(r["verdict"]), sort=_verdict_rank(r["verdict"]), key=r["verdict"]),
        r["kernel"], r["pass"], r["provider"], r["gpu"], _step_cell(r),
        Cell(workloads_text(r), sort=number(r["workloads_affected"]) or 0),
        change_cell(r.get("change", r["median_change"]), r["verdict"]),
        percent_cell(r.get("change_se")),
        change_cell(r["worst_change"], r["verdict"]), r["control_provider"], link,
    ]  # fmt: skip


def _step_cell(r: dict[str, Any]) -> Cell:
    """The step, each side whole: it may break after the arrow only (a findings row is
    one line when the table fits the window)."""
    label = step_label(r)
    before, arrow, after = label.partition(" → ")
    if not arrow:
        return Cell(label)
    return Cell(
        Html(f'<span class="step"><span>{esc(before)}</span> → <span>{esc(after)}</span></span>'),
        sort=label,
    )


def listed_text(counts: Counts) -> Html:
    """What the table lists by default and what it does not, in the words and numbers
    of ``kiana regressions`` (:class:`kiana.findings.counts.Counts`)."""
    text = "By default the table lists what kiana regressions lists"
    if unlisted := counts.not_listed():
        text += f"; not listed: {unlisted} (verdict 'all' shows them)"
    text += counts.folded_clause("named in their evidence, not counted again")
    return esc(text + ".")


def _verdict_rank(verdict: object) -> int:
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)


def memory_section(g: Gathered, charted: set[int], limit: int) -> Html:
    if g.listing.memory.height == 0:
        return note(f"No memory findings ({g.counts['memory runs']:,} memory runs).")
    return tradeoff_table(g.tradeoffs, limit) + findings_table(
        g.listing.memory, charted, table_id="memory-table", limit=limit
    )


def tradeoff_table(frame: pl.DataFrame, limit: int) -> Html:
    """A latency change and the opposite memory change of the same sittings."""
    if frame.height == 0:
        return note("No trade-off: no latency change came with the opposite memory change.")
    shown, cap = capped(frame, limit, "trade-offs")
    cols = (Column("kernel"), Column("pass"), Column("provider"), Column("GPU"),
            Column("step"), Column("trade-off"), Column("latency change", "right"),
            Column("memory change", "right"), Column("workloads", "right"))  # fmt: skip
    rows = (
        [r["kernel"], r["pass"], r["provider"], r["gpu"],
         step_label(r), r.get("kind") or "", change_cell(r["latency_change"]),
         change_cell(r["memory_change"]),
         f"{max(r['latency_workloads'], r['memory_workloads'])}/{r['workloads_total']}"]
        for r in shown.iter_rows(named=True)
    )  # fmt: skip
    body = table(cols, rows, id="tradeoffs-table", sortable=True, empty="no trade-off")
    return Html(
        f"<h3>Trade-offs: latency against memory in the same sittings ({frame.height:,})</h3>"
        + f'<div class="scroll">{body}</div>{cap}'
    )


def _reruns_html(findings: pl.DataFrame, top: int = 10) -> str:
    """The inconclusive findings that lean one way, worth a rerun, with the runs each
    would need (:func:`kiana.findings.wording.worth_rerun`); '' for none."""
    leaning = worth_rerun(findings)
    if leaning.height == 0:
        return ""
    items = "".join(
        f"<li>{esc(rerun_line(r))}</li>" for r in leaning.head(top).iter_rows(named=True)
    )
    more = f"<li>… and {leaning.height - top:,} more</li>" if leaning.height > top else ""
    # Folded: one line in the header, so the findings stay on the first screen.
    return (
        f'<details class="coverage"><summary>Worth a rerun ({leaning.height:,} inconclusive '
        f"finding(s) leaning one way)</summary><ul>{items}{more}</ul></details>"
    )


def chart_cards(g: Gathered, options: JudgeOptions) -> Html:
    if g.charted.height == 0:
        return note("No finding other than 'unchanged': nothing to chart.")
    cards: list[str] = []
    for r in g.charted.iter_rows(named=True):
        rank = int(r["rank"])
        body = _card_charts(g, r, options, rank)
        title = (
            f"#{rank} {r['kernel']} · {r['pass']} · {r['provider']} on {r['gpu']}: {step_label(r)}"
        )
        blamed = culprits_html(r)
        if blamed:
            body = Html(f'<div class="meta">Commits to read first: {blamed}</div>') + body
        stats = (
            f"<details><summary>statistics</summary><p>{esc(r.get('evidence') or '')}</p></details>"
        )
        body = (
            Html(f'<div class="meta">{esc(plain_sentence(r, _own_steps(g, r)))}</div>{stats}')
            + body
        )
        cards.append(
            f'<div class="finding" id="f-{rank}"><h3>{badge(r["verdict"])} {esc(title)}</h3>'
            f"{body}</div>"
        )
    return Html("".join(cards))


def _own_steps(g: Gathered, r: dict[str, Any]) -> int | None:
    """How many workloads of a finding's sweep chart have its verdict on their own step
    (what the chart colours), None for a bridge or where the steps cannot be read."""
    if is_bridge(r):
        return None
    try:
        sweep = frames.sweep_frame(g.steps, r)
    except KianaError:
        return None
    return sweep.filter(pl.col("verdict") == r["verdict"]).height if sweep.height else None


def _card_charts(g: Gathered, r: dict[str, Any], options: JudgeOptions, rank: int) -> Html:
    """A finding card's charts: its worst workload's series and its sweep; a bridge's
    (:mod:`kiana.stats.bridges`, no steps of its own) series of its first workload."""
    bridge = is_bridge(r)
    try:
        worst = frames.charted_workload(g.runs, g.steps, r)
        left = charts.series_spec(
            g.runs,
            partition_id=worst["partition_id"],
            metric=str(r["metric"]),
            step=frames.step_of(r),
            provider=str(r["provider"]),
            title=f"{r['provider']} and its baselines, {worst['workload']}",
            gap=options.session_gap,
        )
        right = None if bridge else charts.sweep_spec(
            g.steps, r, threshold=options.threshold, title="change across the workload sweep"
        )  # fmt: skip
    except KianaError as exc:  # a finding the charts cannot draw still gets its card
        return note(f"no chart: {exc.message}")
    drawn = _chart(f"c-{rank}-s", left) + (
        Html("") if right is None else _chart(f"c-{rank}-w", right)
    )
    what = (
        "the two sessions compared across the noisy one between them are shaded (a bridge has"
        " no step of its own: the change lies in one of the two steps)"
        if bridge
        else "the flagged step is shaded. Right: the change of this step at each workload; black"
        " ticks show the same-run control's change"
    )
    return Html(f'<div class="charts">{drawn}</div>') + note(
        f"Left: median (line) and p20–p80 (band) of every provider in the partition of the "
        f"{'first' if bridge else 'worst'} workload ({worst['workload']}); {what}."
    )


def _chart(chart_id: str, spec: dict[str, Any]) -> Html:
    """A chart's placeholder and its Vega-Lite JSON (a ``charts.*_spec`` dict, made
    visible, with no ``$schema`` URL the browser could be tempted to fetch)."""
    spec = {k: v for k, v in spec.items() if k != "$schema"}
    return Html(f'<div class="chart pending" id="{safe_id(chart_id)}"></div>') + json_script(
        spec, data_chart=chart_id
    )


def speedup_section(g: Gathered, limit: int, name: str | None) -> Html:
    who = f"a {name} provider" if name else "a provider under test"
    if g.speedups.height == 0:
        return note(f"No partition has {who} and a baseline at the same version.")
    drawn = g.speedups["row"].n_unique()
    spec = charts.speedup_spec(g.speedups, filter_element="#speedup-filter")
    mine = name or "its"
    legend = note(
        f"One row per kernel · pass · GPU where {who} and a baseline were measured "
        f"in the same session ({drawn:,} rows, no empty ones). Each mark is {who} "
        "against one baseline at the newest version both ran: the dot is the "
        f"geometric mean over the workload sweep of baseline median / {mine} median, the line "
        f"runs from the slowest to the fastest workload. Right of the dashed 1× line "
        f"{name or 'it'} is faster; a dot or line in the red band left of it is slower (the "
        "workloads are listed below). Colour: the baseline, as in every chart; shape: "
        f"{'the ' + name + ' provider' if name else 'the provider under test'}. Hover a "
        "mark for its numbers"
        + (", pick a kernel or GPU to narrow the rows." if "params" in spec else ".")
    )
    chart = legend + Html(
        f'<div class="chart-filter" id="speedup-filter"></div>'
        f'<div class="chart-scroll">{_chart("c-speedup", spec)}</div>'
    )
    flips, cap = capped(g.flips, limit, "workloads below 1x")
    tag = name or "subject"
    cols = (Column("kernel", key="kernel"), Column("pass"), Column(f"{tag} provider"),
            Column("baseline"), Column("GPU"), Column("workload"), Column("version"),
            Column(f"{tag} median (ns)", "right"), Column("baseline median (ns)", "right"),
            Column("speedup", "right"))  # fmt: skip
    rows = (
        [r["kernel"], r["pass"], r["provider"], r["baseline"], r["gpu"], r["workload"],
         r["version"], r["median"], r["baseline_median"],
         Cell(Html(f'<span class="bad">{esc(fmt_ratio(r["speedup"]))}</span>'), r["speedup"])]
        for r in flips.iter_rows(named=True)
    )  # fmt: skip
    flip_table = table(cols, rows, id="flips-table", sortable=True, empty="no workload below 1×")
    return chart + Html(
        f"<h3>Workloads where {esc(name or 'the code under test')} is slower than a "
        f"baseline ({g.flips.height:,})</h3>"
        f'<div class="scroll">{flip_table}</div>{cap}'
    )


def _charts_intro(g: Gathered) -> str:
    """How many listed findings get a chart, and the option for more when capped."""
    listed = g.latency_counts.listed + g.memory_counts.listed
    if g.charted.height < listed:
        return (
            f"Charts for the {g.charted.height:,} most important of the {listed:,} listed "
            "findings (kiana report --top N charts more)."
        )
    return f"Charts for the {listed:,} listed findings, most important first."


def render(data: ReportData) -> str:
    """The whole page as one string: a function of ``data`` alone."""
    g = gather(data)
    options, rows = data.options, data.options.table_rows
    name = subject_name(data)
    who = name or "the code under test"
    charted = {int(r) for r in g.charted["rank"].to_list()} if g.charted.height else set()
    sections: list[tuple[str, Callable[[], Html], str | None]] = [
        ("summary", lambda: summary(g, name), None),
        ("findings", lambda: findings_table(g.listing.latency, charted,
                                            table_id="findings-table", limit=rows),
         "One row per kernel, timed pass, provider, GPU and pair of sessions, judged on its "
         f"whole workload sweep; change: its estimate (pooled, control-adjusted for {who}; "
         "+ = slower) ± its standard error. Memory findings are under Memory."),
        ("charts", lambda: chart_cards(g, data.judge_options),
         _charts_intro(g)),
        ("speedup", lambda: speedup_section(g, rows, name),
         f"Is {who} faster than the baselines measured beside it? Baseline median / its "
         f"median (2× = {who} takes half the time), per kernel, pass and GPU."),
        ("memory", lambda: memory_section(g, charted, rows),
         "Peak memory (MB), judged apart from latency: change is the relative change of the "
         "median peak memory (+ = more memory)."),
        ("quality", lambda: quality_section(g, data.quality, rows), None),
        ("provenance", lambda: provenance(data, g.listing.rows()), None),
    ]  # fmt: skip
    titles = dict(SECTIONS)
    body = join(*(section(key, titles[key], build(), intro) for key, build, intro in sections))
    nav = "".join(f'<a href="#{key}">{esc(title)}</a>' for key, title in SECTIONS)
    covered = coverage_line(data)
    bundle = assets.vega_bundle()
    csp = assets.content_security_policy([bundle, assets.SCRIPT])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(options.title)}</title><style>{assets.STYLE}</style></head><body>"
        f"<header><h1>{esc(options.title)}: did {esc('a ' + name if name else 'a')} kernel "
        "get slower?</h1>"
        f'<div class="headline">{esc(headline(data))}</div>'
        + (f'<div class="coverage">{esc(covered)}</div>' if covered else "")
        + _reruns_html(g.listing.rows())
        + f'<div class="sub">kiana {esc(__version__)} · generated '
        f"{esc(data.generated_at.isoformat())} · {esc(data.database)}</div></header>"
        f"<nav>{nav}</nav><main>{body}</main>"
        f"<script>{bundle}</script><script>{assets.SCRIPT}</script></body></html>\n"
    )
