"""The stored judgement read back as a :class:`~kiana.shards.results.Judged`.

Findings, quality, change points, trade-offs, versions and coverage are read whole
(the judge's small frames); steps and runs stay in the database and are read one GPU
at a time (:meth:`StoredJudged.steps`, :meth:`StoredJudged.runs`) or filtered in SQL
(:meth:`StoredJudged.steps_of`, :meth:`StoredJudged.runs_of`).  Every frame is in the
order one judge of every run gives (:func:`kiana.shards.judge_all` with one shard): the
stored rows carry the position of their session in its series, the quality's
``rerun`` rows and the trade-offs are made from the stored A/A steps and findings as
the judge makes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import polars as pl

from kiana.shards.creep import INDEX
from kiana.shards.results import Judged, merge_coverage, order_findings
from kiana.shards.runs import Shard, shard_runs
from kiana.shards.unit import POS
from kiana.stats import Coverage
from kiana.stats.calibration import Calibration
from kiana.vocabulary import FINDING_KEYS

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import JudgeOptions

SERIES_ORDER = "partition_id, provider, metric"


class StoredJudged(Judged):
    """The stored judgement of ``con`` (module docstring); ``note`` says how it came to
    be current (read as it was, updated, rebuilt).  Steps and runs are read from ``con``
    when asked for: keep it open while reading them."""

    def __init__(self, con: duckdb.DuckDBPyConnection, options: JudgeOptions, note: str) -> None:
        from kiana.stats import _no_nan
        from kiana.stats.tradeoffs import tradeoffs

        super().__init__(spill=False)
        self._con = con
        self.note = note
        gpus = con.sql("SELECT * FROM judged_gpus ORDER BY gpu").pl()
        self._gpus: list[tuple[str, int]] = [
            (str(g), int(n)) for g, n in gpus.select("gpu", "runs").iter_rows()
        ]
        self.runs_total = int(gpus["runs"].sum())
        self.runs_judged = int(gpus["runs_judged"].sum())
        findings = order_findings(con.sql("SELECT * FROM judged_findings").pl())
        self._small["findings"] = [findings]
        self._small["quality"] = [self._quality()]
        self._small["changepoints"] = [
            con.sql(f"SELECT * FROM judged_changepoints ORDER BY {SERIES_ORDER}, {INDEX}")
            .pl()
            .drop(INDEX)
        ]
        self._small["tradeoffs"] = [_no_nan(tradeoffs(findings, options.session_gap))]
        self._small["versions"] = [self._versions()]
        self._coverage = [
            merge_coverage([Coverage(**json.loads(c)) for c in gpus["coverage"].to_list()])
        ]
        self._calibrations = [Calibration(con.sql("SELECT * FROM judged_calibration").pl())]

    def _quality(self) -> pl.DataFrame:
        """Conflicts, outliers and A/A pairs, as the judge lists them."""
        from kiana.stats.quality import quality
        from kiana.stats.reruns import rerun_quality

        con = self._con
        conflicts = con.sql(
            f"SELECT * FROM judged_points WHERE conflict ORDER BY {SERIES_ORDER}, position"
        ).pl()
        outliers = con.sql(f"SELECT * FROM judged_outliers ORDER BY {SERIES_ORDER}, {POS}").pl()
        aa = con.sql(f"SELECT * FROM judged_aa ORDER BY {SERIES_ORDER}, {POS}").pl()
        parts = [quality(conflicts), outliers.drop(POS), rerun_quality(aa)]
        merged: pl.DataFrame = pl.concat(parts, how="vertical_relaxed")
        return merged

    def _versions(self) -> pl.DataFrame:
        from kiana.stats.versions import version_table

        firsts = self._con.sql(
            "SELECT version, min(first_observed_at) AS observed_at FROM judged_versions "
            "GROUP BY version"
        ).pl()
        return version_table(firsts)

    @property
    def shards(self) -> int:
        return len(self._gpus)

    def _steps(self, where: str = "", params: dict[str, object] | None = None) -> pl.DataFrame:
        frame: pl.DataFrame = self._con.sql(
            f"SELECT * EXCLUDE ({POS}) FROM judged_steps {where} ORDER BY {SERIES_ORDER}, {POS}",
            params=params,
        ).pl()
        return frame

    def steps(self) -> Iterator[pl.DataFrame]:
        """Every GPU's steps, one GPU at a time."""
        for gpu, _ in self._gpus:
            yield self._steps("WHERE gpu = $gpu", {"gpu": gpu})

    def runs(self) -> Iterator[pl.DataFrame]:
        """Every GPU's runs, one GPU at a time."""
        for gpu, n in self._gpus:
            yield shard_runs(self._con, Shard((gpu,), n))

    def steps_of(self, findings: pl.DataFrame) -> pl.DataFrame:
        """The steps behind ``findings`` (the same finding keys), read in SQL."""
        keys = list(FINDING_KEYS)
        wanted = findings.select(keys).unique()  # noqa: F841 (read by DuckDB)
        on = " AND ".join(f's."{k}" IS NOT DISTINCT FROM w."{k}"' for k in keys)
        frame: pl.DataFrame = self._con.sql(
            f"SELECT s.* EXCLUDE ({POS}) FROM judged_steps s "
            f"WHERE EXISTS (SELECT 1 FROM wanted w WHERE {on}) "
            f"ORDER BY s.partition_id, s.provider, s.metric, s.{POS}"
        ).pl()
        return frame

    def runs_of(self, partitions: list[str]) -> pl.DataFrame:
        """The runs of the ``partitions`` named, read in SQL."""
        return shard_runs(
            self._con, where="partition_id IN (SELECT unnest($parts))", params={"parts": partitions}
        )

    def every_step(self) -> pl.DataFrame:
        """Every stored step, in the judge's order."""
        return self._steps()

    def all_runs(self) -> pl.DataFrame:
        """Every run judged, in the judge's order."""
        return shard_runs(self._con)
