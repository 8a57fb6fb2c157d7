"""The page's words outside HTML: the headline, the coverage line and a step's label
(what ``kiana report`` also prints in the terminal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kiana.harness import display_name
from kiana.report.data import ReportData, coverage, findings_listing, versions_frame
from kiana.stats.coverage import renamed_clause
from kiana.vocabulary import VERDICTS


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def headline(data: ReportData) -> str:
    """One line: the findings by verdict (unchanged aside), among how many, on what."""
    shown = findings_listing(data)
    counts, own = shown.counts.verdicts, shown.counts.own
    # the regressions always (0 answers the page's question), the other verdicts found;
    # those of baselines said to be theirs (the headline counts the code under test)
    parts = [shown.counts.verdict_text(v, _n(counts[v], v) if v in ("regression", "improvement") else None)
             for v in VERDICTS if v == "regression" or (v != "unchanged" and counts[v])]  # fmt: skip
    moved = ", ".join(parts)
    runs, known = data.runs, data.totals
    if known is not None:  # runs are the charts' only: every shard's totals
        versions, harnesses = known.versions["version"].to_list(), list(known.harnesses)
        kernels, gpus, count = len(known.kernels), len(known.gpus), known.counts["runs"]
    else:
        versions = versions_frame(runs)["version"].to_list() if runs.height else []
        harnesses = runs["harness"].unique().to_list() if runs.height else []
        kernels, gpus, count = runs["kernel"].n_unique(), runs["gpu"].n_unique(), runs.height
    name = display_name(harnesses) if harnesses else None
    span = f"{name or 'versions'} {versions[0]} → {versions[-1]}" if versions else "no versions"
    memory = shown.memory.height
    split = f" ({own - memory:,} latency, {memory:,} memory)" if memory else ""
    return (
        f"{moved} among {_n(own, 'finding')}{split}: "
        f"{_n(kernels, 'kernel')} on {_n(gpus, 'GPU')}, "
        f"{span} ({_n(len(versions), 'version')}, {_n(count, 'run')})."
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
    renamed = found.get("renamed")
    if isinstance(renamed, Mapping):
        text += renamed_clause(renamed)
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
    """``one_session_only`` -> ``with one session only``; ``in an unstable sweep`` stays."""
    words = reason.replace("_", " ").strip()
    return words if words.startswith(("with ", "without ", "in ")) else f"with {words}"
