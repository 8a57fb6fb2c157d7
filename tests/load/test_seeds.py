from __future__ import annotations

import duckdb
import pytest

import kiana.load
from kiana.errors import UsageError
from tests.conftest import SEEDS


def _runs(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, object]]:
    frame = kiana.load.runs(con)
    return {row["kernel"]: row for row in frame.iter_rows(named=True)}


def test_seeds_load_with_their_medians(con: duckdb.DuckDBPyConnection) -> None:
    summary = kiana.load.load(con, [SEEDS])
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    runs = _runs(con)
    assert runs["layer_norm"]["median_ns"] == 178816
    assert runs["fused_linear_cpo_loss"]["median_ns"] == 77002724


def test_seed_layer_norm_fields(con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [SEEDS])
    run = _runs(con)["layer_norm"]
    assert (run["p20_ns"], run["p80_ns"]) == (177952, 179712)
    assert (run["pass"], run["provider"], run["version"]) == (
        "backward",
        "huggingface",
        "0.6.0",
    )
    assert run["gpu"] == "NVIDIA H100 80GB HBM3"
    assert run["architecture"] == "sm_90"
    assert run["workload"] == "hidden4096-rows4096-fp32"
    assert run["family"] == "liger_kernel_bench"
    assert str(run["observed_at"]) == "2025-07-17 18:18:18"


def test_seed_cpo_fields(con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [SEEDS])
    run = _runs(con)["fused_linear_cpo_loss"]
    assert (run["p20_ns"], run["p80_ns"]) == (77002724, 77002724)
    assert (run["pass"], run["provider"], run["version"]) == ("full", "huggingface", "0.4.1")
    assert run["gpu"] == "NVIDIA A100 SXM4-80GB"


def test_nothing_in_a_document_is_dropped(con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [SEEDS])
    origins = dict(con.execute("SELECT origin, count(*) FROM measurements GROUP BY ALL").fetchall())
    assert origins == {"measurements": 4, "timing": 2, "sourceNative": 6}
    assert con.execute("SELECT count(*) FROM labels").fetchall() == [(2,)]
    assert con.execute("SELECT count(*) FROM protocols").fetchall() == [(2,)]
    assert con.execute("SELECT gpu, architecture FROM environments ORDER BY gpu").fetchall() == [
        ("NVIDIA A100 SXM4-80GB", "sm_80"),
        ("NVIDIA H100 80GB HBM3", "sm_90"),
    ]


def test_runs_selects_only_the_named_columns(con: duckdb.DuckDBPyConnection) -> None:
    kiana.load.load(con, [SEEDS])
    frame = kiana.load.runs(con, ["median_ns", "kernel"], where="kernel = 'layer_norm'")
    assert frame.columns == ["median_ns", "kernel"]
    assert frame.rows() == [(178816, "layer_norm")]
    assert kiana.load.runs(con).columns == list(kiana.load.RUNS_COLUMNS)


def test_runs_names_unknown_columns(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UsageError, match="no runs column 'medain', 'gpu_name'") as info:
        kiana.load.runs(con, ["kernel", "medain", "gpu_name"])
    assert "median_ns" in str(info.value.hint)
    with pytest.raises(UsageError, match="list of column names"):
        kiana.load.runs(con, "kernel = 'x'")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="each column once"):
        kiana.load.runs(con, ["kernel", "kernel"])
    with pytest.raises(UsageError, match="each column once"):
        kiana.load.runs(con, [])
