"""The judgement of every shard, kept in bounded memory.

:class:`Judged` collects what :func:`kiana.stats.judge` returns for each shard.  What
every reader needs whole is kept in memory, merged: findings (in the judge's order,
most important first), quality, change points, trade-offs, coverage, the version
table and counts.  The big frames, each shard's runs and steps, stay in memory while
there is one shard; with more, each is written to a Parquet file of a temporary folder
(removed with the object) and read back one shard at a time (:meth:`Judged.steps`,
:meth:`Judged.runs`) or filtered (:meth:`Judged.steps_of`, :meth:`Judged.runs_of`).
:meth:`Judged.judgement` rebuilds the single :class:`~kiana.stats.Judgement` of
everything (for notebooks and small databases: it holds every step).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from kiana.stats import Coverage, Judgement
from kiana.stats.calibration import Calibration
from kiana.stats.coverage import REASONS
from kiana.stats.sweeps import FINDING_ORDER
from kiana.stats.sweeps import order_findings as order_findings
from kiana.stats.versions import version_table
from kiana.vocabulary import FINDING_KEYS, VERDICTS


def own_buffers(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with buffers of its own.  polars keeps the strings of a filtered,
    joined or grouped frame in the buffers of the frame it came from (string views), so
    a few rows kept of each shard hold every string of that shard: 0.25 GiB a shard at
    10M runs, 12.8 GiB for the report.  Through Arrow the rows kept are copied.

    >>> big = pl.DataFrame({"s": ["x" * 20] * 1000, "i": range(1000)})
    >>> own_buffers(big.filter(pl.col("i") < 2)).equals(big.head(2))
    True
    """
    owned = pl.from_arrow(frame.to_arrow())
    assert isinstance(owned, pl.DataFrame)
    return owned


def findings_order_sql() -> str:
    """:data:`FINDING_ORDER` as an SQL ``ORDER BY`` list (DuckDB sorts a stored
    judgement's findings as it reads them, without a second copy in memory), with the
    null order of :func:`order_findings` (polars puts nulls first either way); the
    finding keys are unique, so the order is total."""
    rank = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(VERDICTS))
    sql = {"_rank": f"CASE verdict {rank} ELSE {len(VERDICTS)} END"}
    terms = [(sql.get(c, '"' + c + '"'), "DESC" if d else "ASC") for c, d in FINDING_ORDER]
    return ", ".join(f"{term} {way} NULLS FIRST" for term, way in terms)


def merge_coverage(parts: list[Coverage]) -> Coverage:
    """The coverage of the union of shards: partitions and series never cross a GPU,
    so every count adds up."""
    reasons: dict[str, int] = {}
    renamed: dict[str, int] = {}
    for part in parts:
        for reason, count in part.not_compared.items():
            reasons[reason] = reasons.get(reason, 0) + count
        for name, count in part.renamed.items():
            renamed[name] = renamed.get(name, 0) + count
    order = [*REASONS, "no step"]
    return Coverage(
        series=sum(p.series for p in parts),
        compared=sum(p.compared for p in parts),
        partitions=sum(p.partitions for p in parts),
        partitions_compared=sum(p.partitions_compared for p in parts),
        subject_series=sum(p.subject_series for p in parts),
        subject_compared=sum(p.subject_compared for p in parts),
        not_compared={
            r: reasons[r]
            for r in sorted(reasons, key=lambda r: order.index(r) if r in order else len(order))
        },
        renamed=dict(sorted(renamed.items())),
    )


#: The small frames of a judgement (kept whole in memory) and their files.
SMALL: tuple[str, ...] = ("findings", "quality", "changepoints", "tradeoffs", "versions")


@dataclass(frozen=True)
class Written:
    """What :func:`write_judgement` wrote of one shard's judgement, and its counts."""

    steps: Path
    small: dict[str, Path | None]
    coverage: Coverage
    runs: int
    runs_judged: int
    calibration: Calibration | None


def write_judgement(judgement: Judgement, runs: int, folder: Path, index: int) -> Written:
    """Write one shard's judgement under ``folder`` (its steps and its small frames)."""
    small: dict[str, Path | None] = {}
    for name in SMALL:
        frame: pl.DataFrame | None = getattr(judgement, name)
        small[name] = None if frame is None else folder / f"{name}-{index:05d}.parquet"
        if frame is not None:
            frame.write_parquet(folder / f"{name}-{index:05d}.parquet")
    steps = folder / f"steps-{index:05d}.parquet"
    judgement.steps.write_parquet(steps, compression="lz4", statistics=False)
    return Written(
        steps, small, judgement.coverage, runs, judgement.runs_judged, judgement.calibration
    )


@dataclass
class _Part:
    """One shard's big frames: in memory, or the Parquet files they were written to."""

    runs: pl.DataFrame | Path
    steps: pl.DataFrame | Path

    def frame(self, which: str) -> pl.DataFrame:
        held: pl.DataFrame | Path = getattr(self, which)
        return held if isinstance(held, pl.DataFrame) else pl.read_parquet(held)

    def scan(self, which: str) -> pl.LazyFrame:
        held: pl.DataFrame | Path = getattr(self, which)
        return held.lazy() if isinstance(held, pl.DataFrame) else pl.scan_parquet(held)


class Judged:
    """Every shard's judgement (see the module docstring).  ``spill``: write each
    shard's runs and steps to disk once there is more than one shard."""

    def __init__(self, *, spill: bool = True) -> None:
        self._spill = spill
        self._folder: Path | None = None
        self._parts: list[_Part] = []
        self._small: dict[str, list[pl.DataFrame]] = {k: [] for k in SMALL}
        self._coverage: list[Coverage] = []
        self._calibrations: list[Calibration] = []
        self.runs_total = 0
        self.runs_judged = 0
        #: How the judgement came to be (judged now, or the stored one: kiana.shards.store).
        self.note = "judged in memory"

    def add(self, runs: pl.DataFrame, judgement: Judgement) -> None:
        """Keep one shard's runs and judgement (no more once findings were read)."""
        self.runs_total += runs.height
        self.runs_judged += judgement.runs_judged
        self._parts.append(_Part(runs, judgement.steps))
        if self._spill and len(self._parts) > 1:
            for index, part in enumerate(self._parts):
                self._write(index, part)
        for name, frames in self._small.items():
            frame = getattr(judgement, name)
            if frame is not None:
                frames.append(frame)
        self._coverage.append(judgement.coverage)
        if judgement.calibration is not None:
            self._calibrations.append(judgement.calibration)

    def add_written(self, runs: Path, steps: Path, written: Written) -> None:
        """Keep one shard judged in another process (:func:`write_judgement` wrote it
        under :meth:`folder`): its runs and steps stay on disk, the rest is read."""
        self.runs_total += written.runs
        self.runs_judged += written.runs_judged
        self._parts.append(_Part(runs, steps))
        for name, frames in self._small.items():
            path = written.small.get(name)
            if path is not None:
                frames.append(pl.read_parquet(path))
        self._coverage.append(written.coverage)
        if written.calibration is not None:
            self._calibrations.append(written.calibration)

    def folder(self) -> Path:
        """The temporary folder of the shards' files (removed with this object)."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="kiana-shards-"))
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def _write(self, index: int, part: _Part) -> None:
        self.folder()
        assert self._folder is not None
        for which in ("runs", "steps"):
            held = getattr(part, which)
            if isinstance(held, pl.DataFrame):
                path = self._folder / f"{which}-{index:05d}.parquet"
                held.write_parquet(path, compression="lz4", statistics=False)
                setattr(part, which, path)

    # ------------------------------------------------------------------ merged, small
    @property
    def shards(self) -> int:
        return len(self._parts)

    def _concat(self, name: str) -> pl.DataFrame:
        frames = self._small[name]
        return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")

    @property
    def findings(self) -> pl.DataFrame:
        """Every finding, most important first (merged once; the shards' frames go)."""
        if len(self._small["findings"]) > 1:
            self._small["findings"] = [order_findings(self._concat("findings"))]
        return self._small["findings"][0]

    @property
    def quality(self) -> pl.DataFrame:
        return self._concat("quality")

    @property
    def changepoints(self) -> pl.DataFrame:
        return self._concat("changepoints")

    @property
    def tradeoffs(self) -> pl.DataFrame | None:
        if not self._small["tradeoffs"]:
            return None
        merged = self._concat("tradeoffs")
        if len(self._small["tradeoffs"]) == 1:
            return merged
        return merged.sort("memory_change", descending=True, maintain_order=True)

    @property
    def coverage(self) -> Coverage:
        return self._coverage[0] if len(self._coverage) == 1 else merge_coverage(self._coverage)

    @property
    def versions(self) -> pl.DataFrame:
        """The version table of every shard's judged runs (its order needs every
        version's first observation, which the shards' tables carry)."""
        if len(self._small["versions"]) == 1:
            return self._small["versions"][0]
        firsts = self._concat("versions").select(
            "version", pl.col("first_observed_at").alias("observed_at")
        )
        return version_table(firsts)

    @property
    def calibration(self) -> Calibration | None:
        """The shards' calibrations in one (each is fitted per GPU, so they only add up)."""
        if len(self._calibrations) <= 1:
            return self._calibrations[0] if self._calibrations else None
        frames = [c.frame for c in self._calibrations]
        return Calibration(pl.concat(frames, how="vertical_relaxed"))

    # ------------------------------------------------------------------ big, per shard
    def steps(self) -> Iterator[pl.DataFrame]:
        """Every shard's steps, one shard at a time."""
        for part in self._parts:
            yield part.frame("steps")

    def runs(self) -> Iterator[pl.DataFrame]:
        """Every shard's runs, one shard at a time."""
        for part in self._parts:
            yield part.frame("runs")

    def steps_of(self, findings: pl.DataFrame) -> pl.DataFrame:
        """The steps behind ``findings`` (the same finding keys), from every shard."""
        keys = list(FINDING_KEYS)
        wanted = findings.select(keys).unique().lazy()
        frames = [part.scan("steps").join(wanted, on=keys, how="semi") for part in self._parts]
        return _collect(frames)

    def runs_of(self, partitions: list[str]) -> pl.DataFrame:
        """The runs of the ``partitions`` named, from every shard."""
        wanted = pl.lit(pl.Series(partitions, dtype=pl.String)).implode()
        frames = [
            part.scan("runs").filter(pl.col("partition_id").is_in(wanted)) for part in self._parts
        ]
        return _collect(frames)

    def judgement(self, steps: pl.DataFrame | None = None) -> Judgement:
        """One :class:`~kiana.stats.Judgement` of every shard: with every step in memory,
        or with ``steps`` (those of some findings: :meth:`steps_of`)."""
        return Judgement(
            steps=self.every_step() if steps is None else steps,
            findings=self.findings,
            changepoints=self.changepoints,
            versions=self.versions,
            runs_judged=self.runs_judged,
            coverage=self.coverage,
            quality=self.quality,
            tradeoffs=self.tradeoffs,
            calibration=self.calibration,
        )

    def every_step(self) -> pl.DataFrame:
        """Every shard's steps in one frame (shard by shard, each in the judge's order)."""
        return _collect([part.scan("steps") for part in self._parts])

    def all_runs(self) -> pl.DataFrame:
        """Every shard's runs in one frame (shard by shard, each in the judge's order)."""
        return _collect([part.scan("runs") for part in self._parts])


def _collect(frames: list[pl.LazyFrame]) -> pl.DataFrame:
    if len(frames) == 1:
        return frames[0].collect()
    return pl.concat(frames, how="vertical_relaxed").collect()
