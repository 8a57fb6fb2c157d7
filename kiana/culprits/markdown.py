"""``kiana gate --markdown FILE``: the gate's result as a pull-request comment.

A headline (passed, failed, or could not judge; base and head), the warnings, what of
the head was not judged and why (refused files, rejected rows by reason, conflicting
sessions, rows that match no history with their closest series), a table of the
findings that are not ``unchanged`` (verdict, kernel and pass, provider, GPU, sessions,
change, first culprit), then, folded in ``<details>``, each finding's evidence and
every culprit.

Every string from the data goes through :func:`kiana.safe.markdown` (Markdown and HTML
escaped, mentions, links and entities inert, one line, cut at 200 characters) or
:func:`kiana.safe.code`.  The comment stays under :data:`LIMIT` characters (GitHub
refuses comments over 65,536): the worst findings in full, then counts, then the name
of the full result (``--json-file``).  Pull requests link to
``https://github.com/linkedin/Liger-Kernel/pull/N``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kiana.culprits.accounting import Accounting
from kiana.culprits.gate import GateResult
from kiana.safe import code
from kiana.safe import markdown as md

PULL_URL = "https://github.com/linkedin/Liger-Kernel/pull/"
#: The longest comment written, in characters (GitHub's limit is 65,536).
LIMIT = 60_000
#: Items listed per section of "not judged" (the rest are counted).
LISTED = 10

__all__ = ["LIMIT", "PULL_URL", "code", "comment", "culprit_text", "failure", "md"]


def _pct(value: object) -> str:
    return f"{value * 100:+.1f}%" if isinstance(value, int | float) else "n/a"


def _sessions(row: Mapping[str, Any]) -> str:
    return (
        f"{row['from_version']} ({str(row['from_session'])[:10]}) → "
        f"{row['to_version']} ({str(row['to_session'])[:10]})"
    )


def culprit_text(culprit: Mapping[str, Any]) -> str:
    """``[#4](url) `a179cbfda0` Refactor rms_norm``."""
    pr = culprit.get("pr")
    link = f"[#{int(pr)}]({PULL_URL}{int(pr)}) " if isinstance(pr, int) else ""
    return f"{link}{code(str(culprit.get('commit'))[:10])} {md(culprit.get('subject'))}"


def _series(series: Mapping[str, str] | None) -> str:
    if not series:
        return "none"
    return " · ".join(md(v) for v in series.values())


def _not_judged(books: Accounting) -> list[str]:
    """The section on head rows that were not judged, each kind with its reasons."""
    lines: list[str] = []
    if books.refused:
        lines.append(f"- **{len(books.refused)} head file(s) refused** (never read):")
        lines += [f"  - {md(r, 300)}" for r in books.refused[:LISTED]]
    if books.rejected:
        liger = sum(r.is_subject for r in books.rejected)
        lines.append(
            f"- **{len(books.rejected):,} head row(s) rejected** ({liger:,} of a Liger "
            "provider or unreadable), by reason:"
        )
        lines += [f"  - {n:,} × {md(reason)}" for reason, n in books.reasons()[:LISTED]]
        lines += [
            f"  - e.g. {md(r.source)}{f':{r.line}' if r.line else ''}: {md(r.reason)}"
            for r in books.rejected[:3]
        ]
    if books.conflicts.height:
        lines.append(
            f"- **{books.conflicts.height:,} head session point(s) conflict** ({books.subject_conflicts:,} "
            "of a Liger provider): replicates that disagree far beyond their noise, never judged:"
        )
        for row in books.conflicts.head(LISTED).iter_rows(named=True):
            lines.append(
                f"  - {md(row['kernel'])} · {md(row['pass'])} · {md(row['provider'])} · "
                f"{md(row['gpu'])} · {md(row['workload'])}: {row['runs']} runs differ "
                f"{float(row['ratio'] or 0):.2f}x"
            )
    for subject, who in ((True, "of a Liger provider"), (False, "of a baseline")):
        reasons = books.unjudged_reasons(subject=subject)
        if reasons:
            total = sum(n for _, n in reasons)
            lines.append(
                f"- **{total:,} head row(s) {who} not judged** (no judged step ends at "
                "them), by reason:"
            )
            lines += [f"  - {n:,} × {md(reason)}" for reason, n in reasons]
    if books.unmatched:
        lines.append(
            f"- **{books.unmatched_rows:,} head row(s) match no history** (nothing to compare "
            "them with); closest series:"
        )
        for item in books.unmatched[:LISTED]:
            differs = ", ".join(item.differs) or "-"
            lines.append(
                f"  - {item.rows:,} row(s) of {_series(item.series)}; closest: "
                f"{_series(item.closest)} (differs in: {md(differs)})"
            )
    if books.replaced_series:
        lines.append(
            f"- {books.replaced_series:,} series compared with the rows they replace (same "
            f"file at the base) first; {books.dropped_rows:,} history row(s) of other files "
            "measured in between left out"
        )
    return ["**Not judged, or judged differently:**", "", *lines, ""] if lines else []


def _headline(result: GateResult) -> str:
    return result.outcome.headline()


def _finding_row(row: Mapping[str, Any]) -> str:
    first = (row.get("culprits") or [None])[0]
    return (
        f"| {md(row['verdict'])} | {md(row['kernel'])} · {md(row['pass'])} | "
        f"{md(row['provider'])} | {md(row['gpu'])} | {md(_sessions(row))} | "
        f"{_pct(row['change'])} | {culprit_text(first) if first else ''} |"
    )


def _details(row: Mapping[str, Any]) -> list[str]:
    lines = [
        f"**{md(row['kernel'])} · {md(row['pass'])} · {md(row['provider'])} on "
        f"{md(row['gpu'])}** ({md(row['verdict'])}, {_pct(row['change'])}): "
        f"{md(row['evidence'], 600)}",
        "",
    ]
    for number, item in enumerate(row.get("culprits") or [], 1):
        files = ", ".join(code(f) for f in (item.get("files") or [])[:8])
        lines.append(f"{number}. {culprit_text(item)} ({md(item.get('role'))}: {files})")
    if not row.get("culprits") and row.get("culprits_command"):
        lines.append(
            f"No commit of the range touches the kernel; {code(row['culprits_command'], 600)}"
        )
    return [*lines, ""]


def comment(result: GateResult, *, artifact: str | None = None) -> str:
    """The pull-request comment (Markdown, GitHub flavour), at most :data:`LIMIT`
    characters; ``artifact`` names the full result (the ``--json-file``)."""
    full = (
        f"the full result is {code(artifact)}"
        if artifact
        else "the full result: `kiana gate --json`"
    )
    lines = [
        _headline(result),
        "",
        f"Benchmark rows of {code(result.head_label)} judged against the history up to "
        f"{code(result.base[:12])}: {result.head_rows:,} new or changed row(s), "
        f"{result.findings.height:,} finding(s).",
        "",
        *[f"> **warning**: {md(w, 400)}" for w in result.warnings],
        *([""] if result.warnings else []),
        *_not_judged(result.accounting),
    ]
    shown = result.findings.filter(result.findings["verdict"] != "unchanged")
    if shown.height == 0:
        lines.append("No finding moved beyond the noise and the threshold.")
        return "\n".join(lines) + "\n"
    lines += [
        "| verdict | kernel · pass | provider | GPU | sessions | change | first culprit |",
        "| --- | --- | --- | --- | --- | ---: | --- |",
    ]
    rows = list(shown.iter_rows(named=True))
    used = sum(len(line) + 1 for line in lines)
    budget = LIMIT - 3_000  # the footer and the details' frame
    table = 0
    for row in rows:
        line = _finding_row(row)
        if used + len(line) + 1 > budget * 0.6:
            break
        lines.append(line)
        used += len(line) + 1
        table += 1
    if table < len(rows):
        counts: dict[str, int] = {}
        for row in rows[table:]:
            counts[str(row["verdict"])] = counts.get(str(row["verdict"]), 0) + 1
        tally = ", ".join(f"{n:,} {md(v)}" for v, n in counts.items())
        lines += ["", f"… and {len(rows) - table:,} more finding(s) ({tally}): {full}."]
    lines += ["", "<details><summary>Evidence and culprits</summary>", ""]
    used = sum(len(line) + 1 for line in lines)
    for index, row in enumerate(rows[:table]):
        block = _details(row)
        size = sum(len(line) + 1 for line in block)
        if used + size > budget:
            lines += [f"… evidence of {table - index:,} more finding(s): {full}.", ""]
            break
        lines += block
        used += size
    lines.append("</details>")
    return "\n".join(lines) + "\n"


def failure(what: str, detail: str, *, base: str | None = None) -> str:
    """The comment when the gate could not judge at all (a crash, a limit, a usage
    error): it says so, so that no one reads a verdict into its absence."""
    lines = [
        f"### kiana gate **could not judge** this pull request: {md(what)}",
        "",
        md(detail, 1_000),
        "",
        "This is not a verdict: the benchmark rows were not judged. See the job's log.",
    ]
    if base:
        lines[2:2] = [f"Base: {code(base[:12])}.", ""]
    return "\n".join(lines) + "\n"
