"""Hand-made runs frames for the statistics tests (no tests here)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from kiana.harness import LIGER
from kiana.load.schema import RUN_COLUMNS

T0 = datetime(2025, 1, 1)


def run(
    version: str,
    median: float,
    *,
    spread: float = 0.01,
    provider: str = "liger",
    workload: str = "w0",
    kernel: str = "layer_norm",
    pass_: str = "forward",
    gpu: str = "NVIDIA H100 80GB HBM3",
    metric: str = "latency",
    day: int | None = None,
    minute: int = 0,
    status: str = "passed",
    p20: float | None = None,
    p80: float | None = None,
) -> dict[str, Any]:
    """One run; ``spread`` is the relative p20-p80 spread, split evenly around the median."""
    lo = median * (1 - spread / 2) if p20 is None else p20
    hi = median * (1 + spread / 2) if p80 is None else p80
    return {
        "partition_id": f"{kernel}|{pass_}|{workload}|{gpu}",
        "provider": provider,
        "metric": metric,
        "kernel": kernel,
        "pass": pass_,
        "gpu": gpu,
        "workload": workload,
        "harness": LIGER.name,
        "version": version,
        "role": LIGER.role(provider),
        "observed_at": T0
        + timedelta(days=day if day is not None else _day(version), minutes=minute),
        "status": status,
        "median": median,
        "p20": lo,
        "p80": hi,
    }


def _day(version: str) -> int:
    digits = [int(p) for p in version.split(".") if p.isdigit()]
    return sum(d * 100 ** (2 - i) for i, d in enumerate(digits[:3])) % 100000 if digits else 0


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame of the runs table's shape (columns the stats do not read are filled)."""
    schema = {
        "partition_id": pl.String, "provider": pl.String, "metric": pl.String,
        "kernel": pl.String, "pass": pl.String, "gpu": pl.String, "workload": pl.String,
        "harness": pl.String, "version": pl.String, "role": pl.String,
        "observed_at": pl.Datetime("us"), "status": pl.String,
        "median": pl.Float64, "p20": pl.Float64, "p80": pl.Float64,
    }  # fmt: skip
    df = pl.DataFrame(rows, schema=schema)
    extra = [name for name, _ in RUN_COLUMNS if name not in df.columns]
    return df.with_columns(pl.lit(None, pl.String).alias(name) for name in extra)


def series(versions: list[str], medians: list[float], **kwargs: Any) -> list[dict[str, Any]]:
    return [run(v, m, **kwargs) for v, m in zip(versions, medians, strict=True)]


def assert_no_nan(df: pl.DataFrame) -> None:
    for name, dtype in df.schema.items():
        if dtype in (pl.Float64, pl.Float32):
            assert not df[name].is_nan().any(), f"NaN in {name}"
            assert df[name].is_finite().fill_null(True).all(), f"inf in {name}"


def sitting(version: str, day: int, medians: dict[str, float], **kw: Any) -> list[dict[str, Any]]:
    """One session: one run per provider, minutes apart."""
    return [
        run(version, m, provider=p, day=day, minute=i, **kw)
        for i, (p, m) in enumerate(medians.items())
    ]


def sweep_rows(
    changes: list[float], *, spread: float, provider: str = "liger", base: float = 100.0, **kw: Any
) -> list[dict[str, Any]]:
    """Two sessions (0.7.0 on day 1, 0.8.0 on day 9) of one provider over a sweep whose
    workload ``w<i>`` moves by ``changes[i]``."""
    rows: list[dict[str, Any]] = []
    for w, change in enumerate(changes):
        level = base * (w + 1)
        common = {"workload": f"w{w}", "spread": spread, "provider": provider, "minute": w, **kw}
        rows.append(run("0.7.0", level, day=1, **common))
        rows.append(run("0.8.0", level * (1 + change), day=9, **common))
    return rows


def realistic_config(seed: int = 3) -> Any:
    """The corpus configuration of the realistic noise model (shifted sittings, heavy
    tails: docs/CALIBRATION.md) with planted changes, as bench/detection.py makes it."""
    from kiana.generate import CorpusConfig

    return CorpusConfig(
        seed=seed, sweep_size=5, regression_rate=0.06, improvement_rate=0.05,
        rerun_rate=0.05, conflict_rate=0.01, noise="realistic",
    )  # fmt: skip


def realistic_corpus(seed: int = 3) -> tuple[Any, Any]:
    """The corpus of :func:`realistic_config` and an in-memory database it is loaded
    into: ``(corpus, con)``."""
    import kiana
    from kiana.generate import generate

    corpus = generate(realistic_config(seed))
    con = kiana.connect()
    kiana.load_documents(con, corpus.documents())
    return corpus, con


#: Liger's real CSVs, outside the repository (tests that read them skip without them).
LIGER_CSVS = Path(__file__).resolve().parents[1].parent / "shared" / "liger"


def real_runs() -> pl.DataFrame:
    """The runs of ``../shared/liger``, imported into memory (callers skip first)."""
    import kiana
    from kiana.importers.liger import import_csvs
    from kiana.load.judged import judged_runs

    con = kiana.connect()
    kiana.load_documents(con, import_csvs(sorted(LIGER_CSVS.glob("*.csv"))).documents)
    return judged_runs(con)
