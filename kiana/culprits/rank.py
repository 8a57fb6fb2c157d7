"""Culprits: the commits worth reading first for a finding of a Liger provider.

A finding compares two sessions; each session of rows imported with ``kiana import
liger --git`` has an origin ``<sha>:<path>``: the commit that recorded its rows.  Liger
pull requests that change a kernel usually commit their re-run benchmark rows with the
change, so the ranking is:

1. the commit that recorded the later session's rows, when it touches the kernel's
   files (role ``recorded``);
2. the other commits between the two recording commits (``git log --first-parent
   FROM..TO``: the main branch's merges and squashes) that touch the kernel's files,
   by the kind of file they touch (its own sources, then modules its sources import,
   then only its benchmark script; roles ``source``, ``imported``, ``benchmark``), the
   newest first within a kind;
3. last, role ``late``: commits merged more than :data:`LATE` after the later session
   was measured.  The code that session measured cannot hold them (on real history, the
   cross_entropy B200 speed-up had three of its top six culprits merged weeks after its
   later session); only the recording commit may be later, and it keeps its place.
   A commit whose date is unknown (out of range) keeps its kind.

A session of Liger's CI history (:mod:`kiana.importers.ci`) has for origin the commit
it *measured*, exactly: the window of a CI step is the first-parent commits between its
two measured commits, ``(FROM, TO]`` (``git log --first-parent FROM..TO``, the later
measured commit included, never a date window), and rule 1 does not apply (its rows
were committed to ``gh-pages``, not with the code): every commit ranks by rules 2-3.

The kernel's files are :mod:`kiana.culprits.layout`'s rule.  Each culprit is a dict:
``commit`` (full sha), ``subject``, ``pr`` (the number in ``(#123)``, or null), ``date``
(committer date, ISO 8601 UTC), ``files`` (the kernel's files it touched), ``role``.

:func:`annotate` adds to findings or steps ``culprits`` (that list; null when it could
not be looked up: no repository, a session without a recording commit, a commit the
repository does not hold, or not a provider under test) and a ``git log`` command that lists
them (``culprits_command``), with the window it covers (``culprits_since``,
``culprits_until``: the two sessions' times, the end widened by :data:`SLACK`, since a
session's rows are committed after they are measured).  Without commits the command
is ``git log --first-parent --since ... --until ... -- PATHS``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from kiana.culprits import history, layout
from kiana.culprits.layout import KernelFiles
from kiana.culprits.recorded import CI, source_of

#: How long after the later session its rows may land in a commit (the hint's window).
SLACK = timedelta(days=14)
#: A commit merged this long after the later session was measured is ``late`` (a day
#: absorbs a benchmark machine's clock and time zone).
LATE = timedelta(days=1)
LATE_ROLE = "late"

#: ``<commit>:<csv>``: a full sha, or the abbreviation a CI folder names (a CI history
#: imported from a checkout without a repository: git reads it in the repository).
_ORIGIN = re.compile(r"^([0-9a-f]{7,40}):(.+)$")

CULPRIT_DTYPE = pl.List(
    pl.Struct(
        {
            "commit": pl.String,
            "subject": pl.String,
            "pr": pl.Int64,
            "date": pl.String,
            "files": pl.List(pl.String),
            "role": pl.String,
        }
    )
)
#: The columns :func:`annotate` adds, in order.
CULPRIT_COLUMNS: tuple[str, ...] = (
    "culprits",
    "culprits_since",
    "culprits_until",
    "culprits_command",
)


def origin_commit(origin: object) -> str | None:
    """The sha of ``<sha>:<path>``; None for an origin without a commit."""
    match = _ORIGIN.match(origin) if isinstance(origin, str) else None
    return match.group(1) if match else None


def recording_commit(origin: object) -> str | None:
    """The commit that recorded a session's rows with the code (rule 1): the origin's
    commit, except for Liger's CI history, whose commit is the code it measured and
    whose rows were recorded elsewhere (the ``gh-pages`` branch): None there."""
    return None if source_of(origin) == CI else origin_commit(origin)


def kernel_files_at(repo: Path | None, kernel: str, commit: str | None) -> KernelFiles:
    """The kernel's files (with rule 4's imports when ``repo`` holds ``commit``)."""
    if repo is None or commit is None:
        return layout.kernel_files(kernel)
    read = {}
    for path in layout.primary_modules(kernel):
        text = history.show(repo, commit, path)
        if text is not None:
            read[path] = text
    return layout.kernel_files(kernel, read, history.tree(repo, commit))


def _naive(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _is_late(date: str | None, measured: datetime | None) -> bool:
    if date is None or measured is None:
        return False
    try:
        merged = datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ")
        return merged - LATE > _naive(measured)
    except (ValueError, OverflowError):
        return False


def rank(
    found: tuple[history.Commit, ...],
    files: KernelFiles,
    recorded: str | None,
    measured: datetime | None = None,
) -> list[dict[str, Any]]:
    """The commits of ``found`` (newest first) touching the kernel, ranked (module
    docstring); ``recorded``: the sha of the commit that recorded the later session,
    ``measured``: when that session was measured (later commits go last, ``late``)."""
    ranked: list[tuple[int, int, dict[str, Any]]] = []
    for age, commit in enumerate(found):
        kinds = {path: files.kind(path) for path in commit.files}
        touched = sorted(path for path, kind in kinds.items() if kind is not None)
        if not touched:
            continue
        strongest = min(layout.KINDS.index(k) for k in kinds.values() if k is not None)
        role = "recorded" if commit.sha == recorded else layout.KINDS[strongest]
        order = -1 if role == "recorded" else strongest
        if role != "recorded" and _is_late(commit.date, measured):
            role, order = LATE_ROLE, len(layout.KINDS)
        item = {
            "commit": commit.sha,
            "subject": commit.subject,
            "pr": commit.pr,
            "date": commit.date,
            "files": touched,
            "role": role,
        }
        ranked.append((order, age, item))
    return [item for _, _, item in sorted(ranked, key=lambda t: (t[0], t[1]))]


def _iso(value: object) -> str | None:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value) if value is not None else None


def _window(row: Mapping[str, Any]) -> tuple[str | None, str | None]:
    start, end = row.get("from_observed_at"), row.get("to_observed_at")
    if isinstance(end, datetime):
        try:
            end = end + SLACK
        except OverflowError:  # a session at 9999-12-31 (a hostile row)
            end = datetime.max
    return _iso(start), _iso(end)


class Finder:
    """Culprits of many findings and steps of one repository, each range and kernel
    looked up once (``repo`` None: only the ``git log`` hints)."""

    def __init__(
        self,
        repo: Path | None,
        *,
        first_parent: bool = True,
        span: tuple[str, str] | None = None,
    ) -> None:
        self.repo = repo
        self.first_parent = first_parent
        #: One range for every row (the gate: base..head) instead of each row's origins.
        self.span = span
        self._memo: dict[
            tuple[str, str, str, str | None, datetime | None], list[dict[str, Any]] | None
        ] = {}
        self._files: dict[tuple[str, str | None], KernelFiles] = {}

    def files(self, kernel: str, commit: str | None) -> KernelFiles:
        key = (kernel, commit if self.repo is not None else None)
        if key not in self._files:
            self._files[key] = kernel_files_at(self.repo, kernel, key[1])
        return self._files[key]

    def lookup(
        self,
        kernel: str,
        start: str,
        end: str,
        recorded: str | None,
        measured: datetime | None = None,
    ) -> list[dict[str, Any]] | None:
        """The ranked culprits of ``kernel`` among the commits of ``start..end`` (shas);
        None when the repository does not hold them."""
        key = (kernel, start, end, recorded, measured)
        if key not in self._memo:
            assert self.repo is not None
            try:
                found = history.commits(self.repo, start, end, first_parent=self.first_parent)
            except history.GitError:
                self._memo[key] = None
            else:
                files = self.files(kernel, end)
                self._memo[key] = rank(found, files, recorded, measured)
        return self._memo[key]

    def command(
        self, kernel: str, start: str | None, end: str | None, row: Mapping[str, Any]
    ) -> str:
        files = self.files(kernel, end)
        mode = "--first-parent" if self.first_parent else "--no-merges"
        if start and start == end:  # the work tree on its base: its uncommitted changes
            return shlex.join(["git", "diff", start[:12], "--", *files.pathspecs()])
        if start and end:
            where = [f"{start[:12]}..{end[:12]}"]
        else:
            since, until = _window(row)
            where = [f"--since={since}", f"--until={until}"]
        return shlex.join(["git", "log", mode, "--name-only", *where, "--", *files.pathspecs()])

    def annotate_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        kernel = str(row.get("kernel") or "")
        if not row.get("is_subject") or not kernel:
            return dict.fromkeys(CULPRIT_COLUMNS)
        recorded = recording_commit(row.get("to_origin"))
        start, end = self.span or (
            origin_commit(row.get("from_origin")),
            origin_commit(row.get("to_origin")),
        )
        since, until = _window(row)
        culprits = None
        measured = row.get("to_observed_at")
        if self.repo is not None and start and end:
            culprits = self.lookup(
                kernel, start, end, recorded, measured if isinstance(measured, datetime) else None
            )
        if culprits is None:
            start = end = None
        return {
            "culprits": culprits,
            "culprits_since": since,
            "culprits_until": until,
            "culprits_command": self.command(kernel, start, end, row),
        }


#: The columns a culprit list depends on (rows sharing them share their culprits).
_KEYS = (
    "provider",
    "is_subject",
    "kernel",
    "from_origin",
    "to_origin",
    "from_observed_at",
    "to_observed_at",
)


def annotate(
    frame: pl.DataFrame,
    repo: Path | None = None,
    *,
    lists: bool = True,
    finder: Finder | None = None,
) -> pl.DataFrame:
    """``frame`` (findings or steps of :func:`kiana.stats.judge`) with the culprit
    columns (module docstring), looked up once per distinct pair of sessions;
    ``lists=False`` leaves out the ``culprits`` list (the hint columns alone, cheap to
    write for a million steps); ``finder`` replaces ``Finder(repo)`` (the gate's range)."""
    finder = finder or Finder(repo)
    names = [n for n in CULPRIT_COLUMNS if lists or n != "culprits"]
    frame = frame.drop(CULPRIT_COLUMNS, strict=False)
    keys = [k for k in _KEYS if k in frame.columns]
    if frame.height == 0 or "provider" not in keys or "kernel" not in keys:
        return frame.with_columns(
            pl.lit(None, CULPRIT_DTYPE if n == "culprits" else pl.String).alias(n) for n in names
        )
    if finder.repo is None and _plain_times(frame):
        return frame.with_columns(_hints(frame, finder, names))
    distinct = frame.select(keys).unique(maintain_order=True)
    values = [finder.annotate_row(row) for row in distinct.iter_rows(named=True)]
    table = distinct.with_columns(
        pl.Series(n, [v[n] for v in values], dtype=CULPRIT_DTYPE if n == "culprits" else pl.String)
        for n in names
    )
    return frame.join(table, on=keys, how="left", nulls_equal=True, maintain_order="left")


#: The years whose ISO form both polars and Python write with four digits.
_YEARS = (1000, 9998)


def _plain_times(frame: pl.DataFrame) -> bool:
    """Whether the hints of ``frame`` may be written by :func:`_hints`: both session
    times naive datetimes, every one within :data:`_YEARS` (a hostile row's year 1 or
    9999 takes the row-by-row path, whose overflow guard it needs)."""
    naive = pl.Datetime("us")
    columns = ("from_observed_at", "to_observed_at")
    if any(frame.schema.get(c) != naive for c in columns):
        return False
    years = frame.select(
        *(pl.col(c).dt.year().min().alias(f"{c}_lo") for c in columns),
        *(pl.col(c).dt.year().max().alias(f"{c}_hi") for c in columns),
    ).row(0)
    return all(y is None or _YEARS[0] <= y <= _YEARS[1] for y in years)


def _hints(frame: pl.DataFrame, finder: Finder, names: list[str]) -> list[pl.Expr]:
    """The culprit columns without a repository (every row's ``git log --since --until``
    hint, as :meth:`Finder.annotate_row` writes it), as expressions: one lookup of the
    kernels' paths, no loop over rows."""
    subject = pl.col("is_subject").fill_null(False) & (pl.col("kernel").fill_null("") != "")
    since = pl.col("from_observed_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    until = (pl.col("to_observed_at") + SLACK).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    mode = "--first-parent" if finder.first_parent else "--no-merges"
    kernels = frame.get_column("kernel").drop_nulls().unique().to_list()
    tails = {k: shlex.join(["--", *finder.files(k, None).pathspecs()]) for k in kernels}
    # the window's two arguments hold only digits, letters, "-", ":" and "=": nothing
    # shlex quotes (None, as the f-string of the row-by-row path writes a missing time)
    command = pl.concat_str(
        pl.lit(shlex.join(["git", "log", mode, "--name-only"]) + " --since="),
        since.fill_null("None"),
        pl.lit(" --until="),
        until.fill_null("None"),
        pl.lit(" "),
        pl.col("kernel").replace_strict(tails, default="--", return_dtype=pl.String),
    )
    columns = {
        "culprits": pl.lit(None, CULPRIT_DTYPE),
        "culprits_since": since,
        "culprits_until": until,
        "culprits_command": command,
    }
    return [pl.when(subject).then(columns[n]).otherwise(None).alias(n) for n in names]
