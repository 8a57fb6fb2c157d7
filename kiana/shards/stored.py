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
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from kiana.shards.creep import INDEX
from kiana.shards.results import Judged, findings_order_sql, merge_coverage, own_buffers
from kiana.shards.runs import Shard, shard_runs, write_origins
from kiana.shards.unit import POS
from kiana.stats import Coverage
from kiana.stats.calibration import Calibration
from kiana.stats.packing import pack
from kiana.vocabulary import FINDING_KEYS

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import JudgeOptions

SERIES_ORDER = "partition_id, provider, metric"

#: Rows per frame of :meth:`StoredJudged.steps`.
STEP_SLICE = 100_000
#: DuckDB's memory while it reads one such frame (it sorts one, and keeps the blocks it
#: read up to its limit: 223 MiB of them after the 1M-run long clone's steps under 384).
STEP_SHARE = 128 << 20


def series_batches(
    con: duckdb.DuckDBPyConnection, gpu: str, rows: int
) -> list[dict[str, list[str]]]:
    """The stored series of ``gpu`` in their order (:data:`SERIES_ORDER`), cut into
    batches of consecutive series of at most ``rows`` steps together (a longer series
    alone): each batch as the lists ``p``, ``v``, ``m`` of its partitions, providers and
    metrics.

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute(
    ...     "CREATE TABLE judged_steps AS SELECT 'H100' AS gpu, * FROM (VALUES "
    ...     "('b', 'liger', 'latency'), ('a', 'torch', 'latency'), ('a', 'liger', 'latency'), "
    ...     "('a', 'liger', 'latency'), ('a', 'liger', 'latency')) t(partition_id, provider, metric)"
    ... )
    >>> [batch["p"] for batch in series_batches(con, "H100", 2)]
    [['a'], ['a', 'b']]
    >>> series_batches(con, "B200", 2)
    []
    """
    keys = con.sql(
        f"SELECT {SERIES_ORDER}, count(*) FROM judged_steps WHERE gpu = $gpu "
        f"GROUP BY ALL ORDER BY {SERIES_ORDER}",
        params={"gpu": gpu},
    ).fetchall()
    packed = pack((((p, v, m), int(n)) for p, v, m, n in keys), rows)
    return [
        {"p": [s[0] for s in series], "v": [s[1] for s in series], "m": [s[2] for s in series]}
        for series, _ in packed
    ]


class StoredJudged(Judged):
    """The stored judgement of ``con`` (module docstring); ``note`` says how it came to
    be current (read as it was, updated, rebuilt).  Steps and runs are read from ``con``
    when asked for: keep it open while reading them."""

    def __init__(self, con: duckdb.DuckDBPyConnection, options: JudgeOptions, note: str) -> None:
        from kiana.shards.share import duckdb_share, release

        super().__init__(spill=False)
        self._con = con
        self.note = note
        self._origins_folder: Path | None = None
        # DuckDB sorts the findings as it reads them (a second copy in polars otherwise:
        # 0.7 GiB at 10M runs); then keeps what it read up to its limit: not here
        order = findings_order_sql()
        findings = con.sql(f"SELECT * FROM judged_findings ORDER BY {order}").pl()
        with duckdb_share(con):
            self._read(options, findings)
        release(con, checkpoint=False)

    def _read(self, options: JudgeOptions, findings: pl.DataFrame) -> None:
        from kiana.stats import _no_nan
        from kiana.stats.tradeoffs import tradeoffs

        con = self._con
        gpus = con.sql("SELECT * FROM judged_gpus ORDER BY gpu").pl()
        self._gpus: list[tuple[str, int]] = [
            (str(g), int(n)) for g, n in gpus.select("gpu", "runs").iter_rows()
        ]
        self.runs_total = int(gpus["runs"].sum())
        self.runs_judged = int(gpus["runs_judged"].sum())
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

        con = self._con
        conflicts = con.sql(
            f"SELECT * FROM judged_points WHERE conflict ORDER BY {SERIES_ORDER}, position"
        ).pl()
        outliers = con.sql(f"SELECT * FROM judged_outliers ORDER BY {SERIES_ORDER}, {POS}").pl()
        parts = [quality(conflicts), outliers.drop(POS), self._reruns()]
        merged: pl.DataFrame = pl.concat(parts, how="vertical_relaxed")
        return merged

    def _reruns(self) -> pl.DataFrame:
        """``rerun_quality`` of every stored A/A step, read one GPU at a time (1.6M A/A
        steps at 10M runs: 1.8 GiB read whole), in the order it gives them all at once:
        its groups come in the order of their first row once the steps are sorted by
        workload (:func:`kiana.stats.reruns.rerun_steps`, the steps in series order), so
        each GPU's groups carry that row's workload and series position, and all are
        sorted by them."""
        from kiana.stats.reruns import RERUN_KEYS, rerun_quality, rerun_steps

        first = {"_o_w": "workload", "_o_part": "partition_id", "_o_prov": "provider",
                 "_o_metric": "metric", "_o_pos": POS}  # fmt: skip
        parts = []
        for gpu, _ in self._gpus:
            aa = self._con.sql(
                f"SELECT * FROM judged_aa WHERE gpu = $gpu ORDER BY {SERIES_ORDER}, {POS}",
                params={"gpu": gpu},
            ).pl()
            firsts = (
                rerun_steps(aa)
                .group_by(RERUN_KEYS, maintain_order=True)
                .agg(pl.col(c).first().alias(a) for a, c in first.items())
            )
            parts.append(own_buffers(rerun_quality(aa).hstack(firsts.select(*first))))
            del aa
        if not parts:
            return rerun_quality(self._con.sql("SELECT * FROM judged_aa").pl())
        return pl.concat(parts).sort(*first, maintain_order=True).drop(*first)

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
        """Every GPU's steps, one GPU at a time, in frames of whole series of at most
        :data:`STEP_SLICE` rows together (a longer series alone), each read by a query
        of its own: what a reader annotates and writes holds one frame, and so does
        DuckDB, which sorts it.  Read a GPU at a time and sliced after, the 1M-run long
        clone's JSON writer peaked at 1.35 GiB, the B200's 399k steps (223 MiB as a
        frame) costing 0.55 GiB as DuckDB sorted them and polars took them.

        Each frame is read under DuckDB's :data:`STEP_SHARE`: it keeps what it read up to
        its limit, 80% of RAM by default, and at 10M runs the stored steps it cached grew
        by ~1.3 GiB over 20 GPUs beside the reader's frames.  With both, the 1M-run long
        clone's ``kiana regressions --json`` on its stored judgement peaks at 0.85 GiB."""
        from kiana.shards.share import duckdb_share

        for gpu, _ in self._gpus:
            batches = series_batches(self._con, gpu, STEP_SLICE)
            if not batches:  # an empty GPU: one (empty) frame
                yield self._steps("WHERE gpu = $gpu", {"gpu": gpu})
            for batch in batches:
                with duckdb_share(self._con, STEP_SHARE):
                    frame = self._steps(
                        f"WHERE gpu = $gpu AND ({SERIES_ORDER}) IN "
                        "(SELECT (p, v, m) FROM (SELECT unnest($p) p, unnest($v) v, unnest($m) m))",
                        {"gpu": gpu, **batch},
                    )
                yield frame
                del frame

    def runs(self) -> Iterator[pl.DataFrame]:
        """Every GPU's runs, one GPU at a time, as the judge's shards read them: every
        run's origin written once (:func:`~kiana.shards.runs.write_origins`, kept in
        :meth:`folder` for the next call), each GPU read under DuckDB's
        :data:`~kiana.shards.share.READ_SHARE`.  Read from the labels for each GPU instead,
        under DuckDB's default limit, the report of a stored 10M-run judgement peaked
        at 18.2 GiB."""
        from kiana.shards.share import READ_SHARE, duckdb_share

        origins = self._origins()
        for gpu, n in self._gpus:
            with duckdb_share(self._con, READ_SHARE):
                frame = shard_runs(self._con, Shard((gpu,), n), origins=origins)
            yield frame

    def _origins(self) -> Path:
        """The folder of every run's origin, by GPU (written at the first call)."""
        from kiana.shards.share import duckdb_share

        if self._origins_folder is None:
            with duckdb_share(self._con):
                self._origins_folder = write_origins(self._con, self.folder())
        return self._origins_folder

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
        from kiana.shards.share import READ_SHARE, duckdb_share

        with duckdb_share(self._con, READ_SHARE):
            return shard_runs(
                self._con,
                where="partition_id IN (SELECT unnest($parts))",
                params={"parts": partitions},
            )

    def every_step(self) -> pl.DataFrame:
        """Every stored step, in the judge's order."""
        return self._steps()

    def all_runs(self) -> pl.DataFrame:
        """Every run judged, in the judge's order."""
        return shard_runs(self._con)
