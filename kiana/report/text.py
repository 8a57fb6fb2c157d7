"""The page's words outside HTML: the headline, the coverage line and a step's label
(what ``kiana report`` also prints in the terminal)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from kiana.report.data import ReportData, coverage, own_findings, verdict_counts, versions_frame
from kiana.vocabulary import VERDICTS


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def headline(data: ReportData) -> str:
    """One line: the findings by verdict (unchanged aside), among how many, on what."""
    own = own_findings(data.judgement.findings)
    counts = verdict_counts(own)
    parts = [_n(counts[v], v) if v in ("regression", "improvement") else f"{counts[v]:,} {v}"
             for v in VERDICTS if v != "unchanged" and counts[v]]  # fmt: skip
    found = ", ".join(parts) if parts else "no regressions"
    runs = data.runs
    versions = versions_frame(runs)["liger_version"].to_list() if runs.height else []
    span = f"Liger {versions[0]} → {versions[-1]}" if versions else "no versions"
    return (
        f"{found} among {_n(own.height, 'finding')}: "
        f"{_n(runs['kernel'].n_unique(), 'kernel')} on {_n(runs['gpu'].n_unique(), 'GPU')}, "
        f"{span} ({_n(len(versions), 'version')}, {_n(runs.height, 'run')})."
    )


def coverage_line(data: ReportData) -> str | None:
    """``compared 30 of 1,112 series; not compared: 1,050 with one session only, ...``
    when the judgement says what it covered, else None."""
    return coverage_text(coverage(data.judgement))


def coverage_text(found: Mapping[str, Any] | None) -> str | None:
    """The line of a coverage dict (``kiana.report.data.coverage``); None for None."""
    if found is None:
        return None
    text = f"compared {found['compared']:,} of {found['series']:,} series"
    partitions, compared = found.get("partitions"), found.get("partitions_compared")
    if isinstance(partitions, int) and isinstance(compared, int):
        text += f" ({compared:,} of {partitions:,} partitions)"
    reasons = found.get("not_compared")
    if isinstance(reasons, Mapping):
        counted = sorted(
            ((str(r), int(n)) for r, n in reasons.items() if isinstance(n, int) and n > 0),
            key=lambda item: (-item[1], item[0]),
        )
        if counted:
            text += "; not compared: " + ", ".join(f"{n:,} {_reason(r)}" for r, n in counted)
    return text


def _reason(reason: str) -> str:
    """``one_session_only`` -> ``with one session only``."""
    words = reason.replace("_", " ").strip()
    return words if words.startswith(("with ", "without ")) else f"with {words}"


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _day(value: object) -> str | None:
    """The date part of a session or a time (``datetime``, ``date`` or ISO text)."""
    if isinstance(value, datetime | date):
        return value.isoformat()[:10]
    found = _DAY.search(value) if isinstance(value, str) else None
    return found.group() if found else None


def step_label(row: Mapping[str, Any]) -> str:
    """``0.5.0 → 0.6.0``; with sessions, each side's date too:
    ``0.8.0 (2026-06-16) → 0.8.0 (2026-07-05)``."""

    def side(prefix: str) -> str:
        version = row.get(f"{prefix}_version")
        if f"{prefix}_session" not in row:
            return str(version)
        day = _day(row[f"{prefix}_session"]) or _day(row.get(f"{prefix}_observed_at"))
        return f"{version} ({day})" if day else str(version)

    return f"{side('from')} → {side('to')}"
