"""How a finding reads: its step's label, its numbers as percentages, one row of the
table the CLI prints and the report shows (:func:`finding_table`), and one plain
sentence (:func:`plain_sentence`).

>>> percent(0.154)
'+15.4%'
>>> step_label({"from_version": "0.5.0", "to_version": "0.6.0"})
'0.5.0 → 0.6.0'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import polars as pl

from kiana.vocabulary import is_bridge

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _day(value: object) -> str | None:
    """The date part of a session or a time (``datetime``, ``date`` or ISO text)."""
    if isinstance(value, datetime | date):
        return value.isoformat()[:10]
    found = _DAY.search(value) if isinstance(value, str) else None
    return found.group() if found else None


def step_label(row: Mapping[str, Any]) -> str:
    """``0.5.0 → 0.6.0``; with sessions, each side's date too:
    ``0.8.0 (2026-06-16) → 0.8.0 (2026-07-05)``; a session of Liger's CI history also
    its folder, the commit measured: ``0.7.0 (2026-01-30, CI 7644a0f-v0.7.0)``."""
    from kiana.culprits.recorded import ci_folder_of

    def side(prefix: str) -> str:
        version = row.get(f"{prefix}_version")
        if f"{prefix}_session" not in row:
            return str(version)
        day = _day(row[f"{prefix}_session"]) or _day(row.get(f"{prefix}_observed_at"))
        folder = ci_folder_of(row.get(f"{prefix}_origin"))
        tag = ", ".join(t for t in (day, folder and f"CI {folder}") if t)
        return f"{version} ({tag})" if tag else str(version)

    return f"{side('from')} → {side('to')}"


#: The columns of :func:`finding_table`, in order.
TABLE_COLUMNS: tuple[str, ...] = (
    "verdict", "kernel", "pass", "provider", "gpu", "metric", "step", "change", "±",
    "worst", "workloads", "control", "culprit", "evidence",
)  # fmt: skip


def percent(value: object, *, signed: bool = True) -> str:
    """``0.154`` -> ``+15.4%`` (``15.4%`` unsigned); ``–`` for no number."""
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "–"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def control_text(row: Mapping[str, Any]) -> str:
    """``huggingface -0.3%``: the same-session control and its change; ``none``."""
    provider = row.get("control_provider")
    if not provider:
        return "none"
    change = row.get("control_change")
    return f"{provider} {percent(change)}" if change is not None else str(provider)


def workloads_text(row: Mapping[str, Any]) -> str:
    """``3/4``: the workloads that reached the verdict on their own, of the sweep."""
    return f"{row.get('workloads_affected') or 0}/{row.get('workloads_total') or 0}"


def first_culprit(row: Mapping[str, Any]) -> str:
    """``1a2b3c4d5e subject (+2)``: the first culprit and how many more; empty without."""
    culprits = row.get("culprits")
    if not culprits:
        return ""
    first = culprits[0]
    more = f" (+{len(culprits) - 1})" if len(culprits) > 1 else ""
    return f"{str(first.get('commit'))[:10]} {first.get('subject')}{more}"


def finding_table(findings: pl.DataFrame) -> pl.DataFrame:
    """Findings for people (a polars frame of :data:`TABLE_COLUMNS`, all strings): the
    step with its sessions' dates, the change, its standard error, the worst workload's
    change and the control's as percentages; the same text the CLI prints and the
    report shows."""
    rows = [
        {
            "verdict": r["verdict"], "kernel": r["kernel"], "pass": r["pass"],
            "provider": r["provider"], "gpu": r["gpu"], "metric": r["metric"],
            "step": step_label(r), "change": percent(r.get("change")),
            "±": percent(r.get("change_se"), signed=False),
            "worst": percent(r.get("worst_change")), "workloads": workloads_text(r),
            "control": control_text(r), "culprit": first_culprit(r),
            "evidence": r.get("evidence") or "",
        }
        for r in findings.iter_rows(named=True)
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=dict.fromkeys(TABLE_COLUMNS, pl.String))


_MOVED = {"regression": "slower", "improvement": "faster"}


def _workloads_clause(row: Mapping[str, Any], verdict: str, own: int | None) -> str:
    """``, 5 of them moved that way, 3 regressions on their own``: the workloads that
    moved the finding's way (``workloads_affected``) and, where the caller counted them
    (``own``: the steps of the sweep chart with the finding's verdict), those whose own
    step reached the verdict, so the sentence agrees with the chart (issue 39)."""
    affected = int(row.get("workloads_affected") or 0)
    text = f", {affected} of them moved that way" if affected else ""
    if own is not None and verdict in ("regression", "improvement", "drift"):
        word = verdict if own == 1 or verdict == "drift" else f"{verdict}s"
        text += f", {own:,} {word} on {'its' if own == 1 else 'their'} own"
    return text


def plain_sentence(row: Mapping[str, Any], own: int | None = None) -> str:
    """A finding in plain words, the same numbers as :func:`finding_table`:
    ``liger got 15.4% slower (± 1.0%) over its 4 workloads, 4 of them moved that way, 3
    regressions on their own; worst +16.2%; the same-session control huggingface moved
    -0.3%.`` (``own``: the workloads whose own step has the finding's verdict, as the
    sweep chart colours them; not said when not given)."""
    change, verdict = row.get("change"), str(row.get("verdict"))
    size = percent(abs(change), signed=False) if isinstance(change, int | float) else "–"
    se = percent(row.get("change_se"), signed=False)
    total = row.get("workloads_total") or 0
    if verdict in _MOVED:
        what = f"{row['provider']} got {size} {_MOVED[verdict]} (± {se})"
    elif verdict == "drift":
        what = f"the machine moved, not {row['provider']}: {percent(change)} (± {se})"
    elif verdict == "inconclusive":
        what = f"{row['provider']} moved {percent(change)} (± {se}), too little known to decide"
        if row.get("reruns"):
            what += f"; {row['reruns']} runs per session would decide it"
    else:
        what = f"{row['provider']} did not move beyond the noise: {percent(change)} (± {se})"
    control = (
        f"the same-session control {row['control_provider']} moved {percent(row.get('control_change'))}"
        if row.get("control_provider")
        else "no same-session control"
    )
    across = (
        "; in one of the two steps between these sessions (the session between them was too"
        " noisy to say which)"
        if is_bridge(row)
        else ""
    )
    return (
        f"{what} over its {total} workloads{_workloads_clause(row, verdict, own)}; "
        f"worst {percent(row.get('worst_change'))}; {control}{across}."
    )


def worth_rerun(findings: pl.DataFrame) -> pl.DataFrame:
    """The ``inconclusive`` findings whose data lean one way
    (:func:`kiana.stats.rules.leaning`), with a ``lean`` column, the code under test
    first, the largest changes first: the findings a rerun would settle (``reruns``: the
    runs per session each would need, null where the scatter alone is too large)."""
    from kiana.stats.rules import leaning

    if findings.height == 0 or "change_se" not in findings.columns:
        return findings.clear().with_columns(pl.lit(None, pl.String).alias("lean"))
    lean = leaning(pl.col("verdict"), pl.col("change"), pl.col("change_se"))
    leaning_ = findings.with_columns(lean.alias("lean")).filter(pl.col("lean").is_not_null())
    return leaning_.sort(
        pl.col("is_subject").fill_null(False), pl.col("change").abs(),
        descending=[True, True], nulls_last=True, maintain_order=True,
    )  # fmt: skip


def rerun_line(row: Mapping[str, Any]) -> str:
    """``jsd/full liger NVIDIA H100 PCIe 0.3.0 → 0.3.1: +5.8% ± 2.3%, leans regression;
    about 5 runs per session on each side would settle it`` (one :func:`worth_rerun` row)."""
    head = f"{row['kernel']}/{row['pass']} {row['provider']} {row['gpu']} {step_label(row)}"
    est = f"{percent(row.get('change'))} ± {percent(row.get('change_se'), signed=False)}"
    reruns = row.get("reruns")
    need = (
        f"about {reruns:,} run(s) per session on each side would settle it"
        if isinstance(reruns, int)
        else "the workloads or sittings scatter too much: reruns alone will not settle it"
    )
    who = "" if row.get("is_subject", True) else " (a baseline's)"
    return f"{head}{who}: {est}, leans {row['lean']}; {need}"
