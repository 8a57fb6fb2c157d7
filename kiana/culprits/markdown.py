"""``kiana gate --markdown FILE``: the gate's result as a pull-request comment.

A headline (passed or failed, base and head), a short table of the findings that are
not ``unchanged`` (verdict, kernel and pass, provider, GPU, sessions, change, first
culprit), then, folded in ``<details>``, each finding's evidence and every culprit.
Text from the data (subjects, kernel names) is escaped for Markdown tables and HTML;
pull requests link to ``https://github.com/linkedin/Liger-Kernel/pull/N``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kiana.culprits.gate import GateResult

PULL_URL = "https://github.com/linkedin/Liger-Kernel/pull/"
_SPECIAL = re.compile(r"([\\`*_\[\]|<>#])")


def md(value: object) -> str:
    """Text safe in a Markdown table cell: Markdown and HTML characters escaped, one line."""
    text = " ".join(str(value if value is not None else "").split())
    return _SPECIAL.sub(
        lambda m: "&lt;" if m.group() == "<" else "&gt;" if m.group() == ">" else "\\" + m.group(),
        text,
    )


def code(value: object) -> str:
    """A code span (outside tables): its text kept as is, backticks replaced."""
    return "`" + " ".join(str(value).split()).replace("`", "'") + "`"


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
    return f"{link}`{str(culprit.get('commit'))[:10]}` {md(culprit.get('subject'))}"


def comment(result: GateResult) -> str:
    """The pull-request comment (Markdown, GitHub flavour)."""
    failed = result.regressions.height
    status = f"**failed**: {failed} Liger regression(s)" if failed else "**passed**"
    lines = [
        f"### kiana gate {status}",
        "",
        f"Benchmark rows of `{md(result.head_label)}` judged against the history up to "
        f"`{result.base[:12]}`: {result.head_rows:,} new or changed row(s), "
        f"{result.findings.height:,} finding(s).",
        "",
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
    for row in rows:
        first = (row.get("culprits") or [None])[0]
        lines.append(
            f"| {md(row['verdict'])} | {md(row['kernel'])} · {md(row['pass'])} | "
            f"{md(row['provider'])} | {md(row['gpu'])} | {md(_sessions(row))} | "
            f"{_pct(row['change'])} | {culprit_text(first) if first else ''} |"
        )
    lines += ["", "<details><summary>Evidence and culprits</summary>", ""]
    for row in rows:
        lines.append(
            f"**{md(row['kernel'])} · {md(row['pass'])} · {md(row['provider'])} on "
            f"{md(row['gpu'])}** ({md(row['verdict'])}, {_pct(row['change'])}): "
            f"{md(row['evidence'])}"
        )
        lines.append("")
        for number, item in enumerate(row.get("culprits") or [], 1):
            files = ", ".join(code(f) for f in item.get("files") or [])
            lines.append(f"{number}. {culprit_text(item)} ({md(item.get('role'))}: {files})")
        if not row.get("culprits") and row.get("culprits_command"):
            lines.append(
                f"No commit of the range touches the kernel; {code(row['culprits_command'])}"
            )
        lines.append("")
    lines.append("</details>")
    return "\n".join(lines) + "\n"
