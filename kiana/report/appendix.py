"""The page's last two sections: data quality (rejects, warnings, spread, versions,
sessions not judged, digest conflicts) and how the page was made."""

from __future__ import annotations

import dataclasses

import polars as pl

from kiana._version import __version__
from kiana.load.quality import DataQuality
from kiana.report.components import (
    Column,
    Html,
    capped,
    definition_list,
    fmt_ratio,
    note,
    percent_cell,
    table,
)
from kiana.report.data import Gathered, ReportData
from kiana.vocabulary import UNSTABLE


def quality_section(g: Gathered, quality: DataQuality, limit: int) -> Html:
    rejects = table(
        (Column("problem"), Column("documents", "right"), Column("example reason"),
         Column("example source"), Column("JSON path")),
        ([r["problem"], r["documents"], r["example"], r["source"], r["json_path"]]
         for r in quality.rejects.head(limit).iter_rows(named=True)),
        empty="no document was rejected",
    )  # fmt: skip
    warnings = table(
        (Column("kind"), Column("runs", "right"), Column("example"), Column("example source")),
        ([r["kind"], r["runs"], r["example"], r["source"]]
         for r in quality.warnings.head(limit).iter_rows(named=True)),
        empty="no warnings",
    )  # fmt: skip
    spread = table(
        (Column("GPU"), Column("latency runs", "right"), Column("p20 = p80", "right"),
         Column("no p20/p80", "right")),
        ([r["gpu"], r["runs"], percent_cell(r["zero_spread"]), percent_cell(r["no_spread"])]
         for r in g.spread.iter_rows(named=True)),
        empty="no latency runs",
    )  # fmt: skip
    versions = table(
        (Column("version"), Column("order", "right"), Column("kind"), Column("runs", "right"),
         Column("first observed")),
        ([r["version"], r["version_rank"],
          "PEP 440" if r["version_kind"] == "pep440" else Html('<span class="bad">not PEP 440</span>'),
          r["runs"], str(r["first_observed_at"])] for r in g.versions.iter_rows(named=True)),
    )  # fmt: skip
    shaky = _kind(g.not_judged, UNSTABLE)
    sessions = _not_judged_table(g.not_judged.filter(_kind_is_not(g.not_judged, UNSTABLE)), limit)
    unstable = _unstable_table(shaky, limit)
    conflicts = table(
        (Column("kind"), Column("detail"), Column("source")),
        ([r["kind"], r["detail"], r["source"]] for r in quality.conflicts.head(limit).iter_rows(named=True)),
        empty="no digest conflicts",
    )  # fmt: skip
    spread_note = note(
        "p20 = p80 means the harness had too few repetitions to measure "
        "noise: no noise information, not no noise."
    )
    versions_note = note(
        "Labels that are not PEP 440 versions (main, a git hash) are placed "
        "by the time they were first observed."
    )
    return Html(
        f'<h3>Rejected documents, by problem</h3><div class="scroll">{rejects}</div>'
        f"<h3>Warnings on loaded runs</h3>{warnings}"
        f"<h3>Spread (p20–p80) per GPU</h3>{spread_note}{spread}"
        f"<h3>Versions, in kiana's order</h3>{versions_note}"
        f'<div class="scroll">{versions}</div>'
        f"<h3>Unstable series ({shaky.height:,})</h3>{unstable}"
        f"<h3>Sessions not judged ({g.not_judged.height - shaky.height:,})</h3>{sessions}"
        f"<h3>Digest conflicts</h3>{conflicts}"
    )  # fmt: skip


NOT_JUDGED = (
    ("kernel", "kernel"), ("pass", "pass"), ("provider", "provider"), ("GPU", "gpu"),
    ("workload", "workload"), ("metric", "metric"), ("version", "version"),
    ("session", "session"), ("runs", "runs"), ("max/min", "ratio"), ("why", "message"),
)  # fmt: skip


def _kind_is_not(frame: pl.DataFrame, kind: str) -> pl.Expr:
    return pl.col("kind") != kind if "kind" in frame.columns else pl.lit(True)


def _kind(frame: pl.DataFrame, kind: str) -> pl.DataFrame:
    """The judgement's quality rows of one kind (none when it has no quality rows)."""
    return frame.filter(pl.col("kind") == kind) if "kind" in frame.columns else frame.clear()


UNSTABLE_COLUMNS = (
    ("kernel", "kernel"), ("pass", "pass"), ("provider", "provider"), ("GPU", "gpu"),
    ("metric", "metric"), ("levels", "levels"), ("switches", "switches"), ("high/low", "ratio"),
    ("sessions", "runs"),
)  # fmt: skip


def _unstable_table(frame: pl.DataFrame, limit: int) -> Html:
    """Sweep series that alternate between two levels (:mod:`kiana.stats.unstable`):
    their findings are inconclusive, "could not judge"."""
    shown, cap = capped(frame, limit, "unstable series")
    columns = [(title, name) for title, name in UNSTABLE_COLUMNS if name in frame.columns]
    right = {"switches", "ratio", "runs"}
    body = table(
        [Column(title, "right" if name in right else "left") for title, name in columns],
        ([fmt_ratio(r[n]) if n == "ratio" else r[n] for _, n in columns]
         for r in shown.iter_rows(named=True)),
        empty="no series alternates between levels",
    )  # fmt: skip
    explained = note(
        "Each alternates between two levels across sessions (autotuning, a launch "
        "configuration) without a commit touching the kernel, or, where the commits are "
        "not known, visiting each level more than once: not a change, so its steps are not "
        "judged as regressions or improvements (could not judge)."
    )
    return Html(f'{explained}<div class="scroll">{body}</div>{cap}')


def _not_judged_table(frame: pl.DataFrame, limit: int) -> Html:
    """Session points the judge left out (replicates that disagree far beyond their
    noise), with the columns the judgement gives."""
    shown, cap = capped(frame, limit, "sessions not judged")
    columns = [(title, name) for title, name in NOT_JUDGED if name in frame.columns]
    right = {"runs", "ratio"}
    body = table(
        [Column(title, "right" if name in right else "left") for title, name in columns],
        ([fmt_ratio(r[n]) if n == "ratio" else r[n] for _, n in columns]
         for r in shown.iter_rows(named=True)),
        empty="every session was judged",
    )  # fmt: skip
    return Html(f'<div class="scroll">{body}</div>{cap}')


def sources_table(findings: pl.DataFrame) -> Html:
    """The sessions of the findings shown, by source (Liger's CI history,
    ``benchmark/data`` in git, CSV files, other documents: :mod:`kiana.culprits.recorded`),
    with the CI folders (the commits measured) they hold; nothing when no session comes from
    Liger's labels (another harness's documents, say)."""
    from kiana.culprits.recorded import SOURCE_TITLES, SOURCES, ci_folder_of, source_of

    sides: dict[str | None, set[tuple[object, object]]] = {}
    for row in findings.iter_rows(named=True):
        for side in ("from", "to"):
            origin = row.get(f"{side}_origin")
            sides.setdefault(source_of(origin), set()).add((origin, row.get(f"{side}_session")))
    if set(sides) <= {None}:  # no session of Liger's: nothing to tell apart
        return Html("")
    titles: dict[str | None, str] = {None: "other documents (no Liger labels)"}
    titles.update(SOURCE_TITLES)
    body = table(
        (Column("source"), Column("what it is"), Column("sessions", "right"),
         Column("measured commits (CI folders)")),
        ([source or "–", titles[source], len(sides[source]),
          ", ".join(sorted({str(ci_folder_of(o)) for o, _ in sides[source] if ci_folder_of(o)}))]
         for source in (*SOURCES, None) if source in sides),
        empty="no finding shown",
    )  # fmt: skip
    return Html(
        "<h3>Sources of the sessions of the findings shown</h3>"
        f"{note('A session of Liger CI history is marked CI <folder> beside its date.')}"
        f'<div class="scroll">{body}</div>'
    )


def provenance(data: ReportData, findings: pl.DataFrame | None = None) -> Html:
    options = data.options
    items: list[tuple[str, object]] = [
        ("kiana version", __version__),
        ("generated at (UTC)", data.generated_at.isoformat()),
        ("command line", options.command_line or "(Python API)"),
        ("database", data.database),
    ]
    items += [(f"judge: {k}", v) for k, v in dataclasses.asdict(data.judge_options).items()]
    loads = table(
        (Column("load"), Column("started"), Column("kiana"), Column("inputs"),
         Column("read", "right"), Column("loaded", "right"), Column("already present", "right"),
         Column("rejected", "right"), Column("warned", "right")),
        ([r["load_id"], str(r["started_at"]), r["kiana_version"], r["inputs"], r["read"],
          r["loaded"], r["already_present"], r["rejected"], r["warned"]]
         for r in data.quality.loads.iter_rows(named=True)),
    )  # fmt: skip
    sources = sources_table(findings) if findings is not None else Html("")
    return Html(f"{definition_list(items)}<h3>Loads</h3>{loads}{sources}")
