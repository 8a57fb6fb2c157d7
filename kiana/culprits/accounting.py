"""What the gate could not judge of the head's rows, each with its reason.

Silence reads as "all clear", so every head row that did not reach a finding is counted:

* **refused** files: a link, a submodule, a folder that is a link
  (:mod:`kiana.culprits.headfiles`);
* **rejected** rows: the importer's or the loader's checks refused them (NaN, negative,
  p20 above p80, an unreadable timestamp, an empty GPU, ...), with the reason;
* **conflicting** sessions: replicates of one head session that disagree far beyond
  their noise (:mod:`kiana.stats.quality`), which are never judged;
* **not judged** rows (:mod:`kiana.culprits.headsessions`): no judged step ends at
  their session (dated before or inside the history, an older version, the same
  session as a base row, hidden by later rows, no history), each with its reason;
* **unmatched** rows: their series (kernel, pass, provider, GPU, workload, metric) has
  no run in the history, so nothing was compared; each unmatched series names its
  closest history series and the fields that differ (``Forward`` for ``forward`` and
  ``1024.0`` for ``1024`` are normalised when read: :func:`kiana.importers.rows.normalise`).

Refused files and rejected, conflicting or not judged rows of a provider under test
fail the gate closed (:data:`kiana.culprits.gate.EXIT_UNJUDGED`); a row whose provider cannot be read
counts as one under test.  The gate reads Liger-Kernel's CSVs, so a rejected row (which
never became a run with a ``role``) is judged by the Liger profile's rule
(:data:`kiana.harness.LIGER`); a conflicting session carries its runs' ``role``.
Unmatched series are listed with their closest history series; their rows of a
provider under test fail as not judged, unless the pull request adds their kernel,
GPU or workload (named as new).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from kiana.culprits.headsessions import Unjudged
from kiana.harness import LIGER
from kiana.vocabulary import subject_expr

#: The fields a series is told apart by, in the order the near-miss names them.
SERIES_FIELDS = ("kernel", "pass", "provider", "gpu", "workload", "metric")


@dataclass(frozen=True)
class Rejected:
    """One head row that did not become a judged run."""

    source: str  #: ``<file>`` or ``<commit>:<file>``
    line: int | None
    reason: str
    provider: str | None  #: None when the row could not be read that far

    @property
    def is_subject(self) -> bool:
        """Whether the row is of a provider under test (by the Liger profile), or unreadable."""
        return self.provider is None or LIGER.role(self.provider) == "subject"


@dataclass(frozen=True)
class Unmatched:
    """One head series with no history: how many rows, and its closest history series."""

    series: dict[str, str]
    rows: int
    closest: dict[str, str] | None
    differs: tuple[str, ...]  #: the fields where ``closest`` differs


@dataclass(frozen=True)
class Accounting:
    """Every head row the gate could not judge (module docstring)."""

    refused: tuple[str, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    conflicts: pl.DataFrame = field(default_factory=pl.DataFrame)
    unmatched: tuple[Unmatched, ...] = ()
    unjudged: tuple[Unjudged, ...] = ()  #: head points no judged step ends at
    replaced_series: int = 0  #: head series compared with the rows they replaced
    dropped_rows: int = 0  #: history rows of other files left out for that

    @property
    def unmatched_rows(self) -> int:
        return sum(u.rows for u in self.unmatched)

    @property
    def subject_conflicts(self) -> int:
        """The conflicting head session points of a provider under test."""
        if self.conflicts.height == 0 or "is_subject" not in self.conflicts.columns:
            return 0
        return self.conflicts.filter(pl.col("is_subject")).height

    @property
    def failing(self) -> int:
        """Refused files plus rejected and conflicting rows under test: each fails the gate."""
        subject = sum(r.is_subject for r in self.rejected)
        return len(self.refused) + subject + self.subject_conflicts

    @property
    def unjudged_failing(self) -> int:
        """Head rows of a provider under test that no judged step ends at (not new)."""
        return sum(u.rows for u in self.unjudged if u.failing)

    @property
    def new_rows(self) -> int:
        """Head rows of a provider under test in a kernel, GPU or workload the PR adds."""
        return sum(u.rows for u in self.unjudged if u.is_subject and u.new is not None)

    def unjudged_reasons(self, *, subject: bool = True) -> list[tuple[str, int]]:
        """Rows not judged by reason (of a provider under test, or of the others), most
        first; new kernels, GPUs and workloads apart."""
        counts: dict[str, int] = {}
        for item in self.unjudged:
            if item.is_subject == subject:
                counts[item.text] = counts.get(item.text, 0) + item.rows
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def reasons(self) -> list[tuple[str, int]]:
        """Rejected rows by reason, most frequent first."""
        counts: dict[str, int] = {}
        for item in self.rejected:
            counts[item.reason] = counts.get(item.reason, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def summary(self) -> dict[str, Any]:
        return {
            "refused": list(self.refused),
            "rejected": len(self.rejected),
            "rejected_liger": sum(r.is_subject for r in self.rejected),
            "rejected_reasons": dict(self.reasons()),
            "conflicts": self.conflicts.height,
            "conflicts_liger": self.subject_conflicts,
            "unmatched_rows": self.unmatched_rows,
            "unmatched": [
                {
                    "series": u.series,
                    "rows": u.rows,
                    "closest": u.closest,
                    "differs": list(u.differs),
                }
                for u in self.unmatched
            ],
            "not_judged_liger_rows": self.unjudged_failing,
            "not_judged_other_rows": sum(u.rows for u in self.unjudged if not u.is_subject),
            "new_liger_rows": self.new_rows,
            "not_judged_reasons": dict(self.unjudged_reasons()),
            "not_judged": [
                {
                    "series": u.series,
                    "session": u.session,
                    "rows": u.rows,
                    "reason": u.reason,
                    "new": u.new,
                    "liger": u.is_subject,
                }
                for u in self.unjudged[:20]
            ],
            "replaced_series": self.replaced_series,
            "dropped_history_rows": self.dropped_rows,
        }


def _iso(column: str) -> pl.Expr:
    return pl.col(column).dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def head_conflicts(quality: pl.DataFrame, runs: pl.DataFrame, origins: set[str]) -> pl.DataFrame:
    """The conflict rows of ``quality`` that lie in a head session: a session of a series
    whose head runs (``origin`` in ``origins``) start at or before it; ``is_subject``:
    its runs' ``role`` says under test."""
    if quality.height == 0 or runs.height == 0:
        return quality.head(0).with_columns(pl.lit(False).alias("is_subject"))
    keys = ["partition_id", "provider", "metric"]
    head = (
        runs.filter(pl.col("origin").is_in(sorted(origins)))
        .group_by(keys)
        .agg(
            _iso("observed_at").min().alias("_head_start"),
            subject_expr().any().alias("is_subject"),
        )
    )
    conflicts = quality.filter(pl.col("kind") == "conflict")
    joined = conflicts.join(head, on=keys, how="inner")
    return joined.filter(pl.col("session").cast(pl.String) >= pl.col("_head_start")).drop(
        "_head_start"
    )


def _distance(a: Sequence[str], b: Sequence[str]) -> tuple[int, float]:
    differing = sum(x != y for x, y in zip(a, b, strict=True))
    ratio = difflib.SequenceMatcher(None, " ".join(a).lower(), " ".join(b).lower()).ratio()
    return differing, -ratio


def _closest(series: tuple[str, ...], candidates: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The candidate with the fewest differing fields, then the most similar text."""
    if not candidates:
        return None
    counts = [sum(x != y for x, y in zip(series, c, strict=True)) for c in candidates]
    fewest = min(counts)
    near = [c for c, n in zip(candidates, counts, strict=True) if n == fewest]
    return min(near[:2000], key=lambda c: _distance(series, c))


def unmatched(runs: pl.DataFrame, origins: set[str], limit: int = 20) -> tuple[Unmatched, ...]:
    """Head series with no run outside the head, each with its closest history series
    (fewest differing fields, then the most similar text); the ``limit`` largest."""
    if runs.height == 0:
        return ()
    fields = list(SERIES_FIELDS)
    is_head = pl.col("origin").is_in(sorted(origins)).fill_null(False)
    head = runs.filter(is_head).group_by(fields).len("rows")
    past = runs.filter(~is_head).select(fields).unique()
    alone = head.join(past, on=fields, how="anti").sort(
        "rows", *fields, descending=[True, *[False] * len(fields)]
    )
    candidates = [tuple(str(v) for v in row) for row in past.iter_rows()]
    found = []
    for row in alone.head(limit).iter_rows(named=True):
        series = tuple(str(row[f]) for f in fields)
        best = _closest(series, candidates)
        differs = tuple(f for f, x, y in zip(fields, series, best or series, strict=True) if x != y)
        found.append(
            Unmatched(
                dict(zip(fields, series, strict=True)),
                int(row["rows"]),
                dict(zip(fields, best, strict=True)) if best else None,
                differs if best else (),
            )
        )
    rest = alone.slice(limit)
    if rest.height:
        found.append(
            Unmatched({"kernel": f"{rest.height:,} more series"}, int(rest["rows"].sum()), None, ())
        )
    return tuple(found)
