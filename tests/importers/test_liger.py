"""The Liger CSV importer: rows -> documents, slugs, GPUs, skipped rows, the CLI."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiana.importers.gpus import parse_gpu
from kiana.importers.liger import (
    ImportResult,
    convert_rows,
    import_csvs,
    read_rows,
    text_lines,
)
from kiana.importers.rows import (
    COLUMNS,
    KERNEL_TITLES,
    LABEL_COMMIT,
    LABEL_CSV,
    Row,
    row_document,
)
from kiana.importers.workloads import workload_params, workload_slug
from tests.conftest import run_kiana

LIGER = Path(__file__).parents[2].parent / "shared" / "liger"
SEEDS = Path(__file__).parents[2].parent / "shared" / "seeds"
REAL_CSVS = sorted(LIGER.glob("*.csv"))
needs_real = pytest.mark.skipif(
    not REAL_CSVS, reason=f"the real Liger CSVs are not here ({LIGER} is absent)"
)
DIGESTS = ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest")

BASE = {
    "kernel_name": "layer_norm",
    "kernel_provider": "huggingface",
    "kernel_operation_mode": "backward",
    "metric_name": "speed",
    "metric_unit": "ms",
    "x_name": "N",
    "x_label": "hidden size",
    "x_value": "4096",
    "y_value_50": "0.17881600558757782",
    "y_value_20": "0.17795200645923615",
    "y_value_80": "0.17971199750900269",
    "extra_benchmark_config_str": '{"M": 4096, "dtype": "torch.float32", "eps": 1e-06}',
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "timestamp": "2025-07-17 18:18:18",
    "liger_version": "0.6.0",
}


def csv_text(*rows: dict[str, str], columns: tuple[str, ...] = COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def row(**changes: str) -> Row:
    return Row({**BASE, **changes}, "t.csv", 2)


def slug(x_name: str, x_value: str, config: dict[str, Any]) -> str:
    return workload_slug(x_name, workload_params(x_name, x_value, config))


@pytest.fixture(scope="module")
def real() -> ImportResult:
    if not REAL_CSVS:
        pytest.skip(f"the real Liger CSVs are not here ({LIGER} is absent)")
    return import_csvs(REAL_CSVS)


def without_digests(doc: dict[str, Any]) -> dict[str, Any]:
    """The document less its digests and kiana's provenance labels (the seeds predate them)."""
    doc = json.loads(json.dumps(doc))
    for key in DIGESTS:
        doc["run"]["spec"].pop(key)
    for label in (LABEL_CSV, LABEL_COMMIT):
        doc["run"]["metadata"]["labels"].pop(label, None)
    return doc


# --- the seeds -----------------------------------------------------------------------


@pytest.mark.heavy
@needs_real
@pytest.mark.parametrize(
    "seed",
    [
        "fused_linear_cpo_loss-full-huggingface-a100.json",
        "layer_norm-backward-huggingface-h100.json",
    ],
)
def test_seed_row_round_trips_except_digests(seed: str, real: ImportResult) -> None:
    expected = json.loads((SEEDS / seed).read_text())
    external_id = expected["run"]["spec"]["sourceNative"]["externalId"]
    result = real
    docs = [
        d
        for d in result.documents
        if d["run"]["spec"]["sourceNative"]["externalId"] == external_id
        and "timing" in d["run"]["spec"]
    ]
    assert len(docs) == 1
    assert json.dumps(without_digests(docs[0])) == json.dumps(without_digests(expected))
    assert docs[0]["run"]["metadata"]["labels"][LABEL_CSV] == "all_benchmark_data.csv"


def test_same_row_gives_same_digests() -> None:
    first, second = row_document(row()), row_document(row())
    assert [first["run"]["spec"][k] for k in DIGESTS] == [second["run"]["spec"][k] for k in DIGESTS]


# --- workload slugs ------------------------------------------------------------------


def test_slug_of_layer_norm_seed() -> None:
    config = {"M": 4096, "dtype": "torch.float32", "eps": 1e-06}
    assert slug("N", "4096", config) == "hidden4096-rows4096-fp32"


def test_slug_of_cpo_seed() -> None:
    config = {"T": 1024, "H": 4096, "V": 128256, "mode": "forward", "dtype": "torch.bfloat16"}
    assert slug("B", "4", config) == "batch4-hidden4096-seq1024-vocab128256-bf16"


def test_unusual_eps_is_written() -> None:
    assert slug("N", "8", {"M": 2, "eps": 1e-05}) == "eps1em05-hidden8-rows2"


def test_unusual_mode_is_written() -> None:
    assert slug("B", "2", {"mode": "backward"}) == "batch2-backward"


def test_null_placeholder_of_swept_parameter_is_replaced() -> None:
    assert slug("T", "512", {"T": None, "E": 128}) == "experts128-seq512"


def test_swept_parameter_keeps_shared_part_name() -> None:
    assert slug("T", "1024", {"seq_len": 8192, "bsz": 1}) == "batch1-seq1024-seqlen8192"


def test_booleans_negative_ints_floats_and_text() -> None:
    config = {"bias": False, "dim": -1, "beta": 0.1, "hidden_act": "gelu_pytorch_tanh"}
    assert slug("V", "64", config) == "gelu-pytorch-tanh-beta0p1-nobias-dimneg1-vocab64"


def test_nested_config_value_is_hashed_stably() -> None:
    first = slug("N", "8", {"shape": {"a": [1, 2]}})
    assert first == slug("N", "8", {"shape": {"a": [1, 2]}})
    assert first != slug("N", "8", {"shape": {"a": [1, 3]}})
    assert first.startswith("hidden8-shapeh")


def test_list_of_numbers_is_joined() -> None:
    assert slug("N", "8", {"shape": [2, 3]}) == "hidden8-shape2x3"


def test_one_point_of_two_sweeps_gets_sweep_suffix() -> None:
    t_sweep = row(
        x_name="T",
        x_value="8192",
        extra_benchmark_config_str='{"sweep_dim": "T", "T": null, "E": 128}',
    )
    e_sweep = row(
        x_name="E",
        x_value="128",
        extra_benchmark_config_str='{"sweep_dim": "E", "T": 8192, "E": null}',
    )
    result = convert_rows([t_sweep, e_sweep])
    slugs = {d["run"]["spec"]["sourceNative"]["externalId"].split("/")[4] for d in result.documents}
    assert slugs == {"experts128-seq8192-sweep-seq", "experts128-seq8192-sweep-experts"}
    assert result.warnings


def test_configs_the_sweep_suffix_cannot_separate_get_a_hash() -> None:
    underscore = row(extra_benchmark_config_str='{"M": 4096, "act": "a_b"}')
    hyphen = row(extra_benchmark_config_str='{"M": 4096, "act": "a-b"}')
    result = convert_rows([underscore, hyphen])
    slugs = [d["run"]["spec"]["sourceNative"]["externalId"].split("/")[4] for d in result.documents]
    assert [s.rsplit("-h", 1)[0] for s in slugs] == ["a-b-hidden4096-rows4096"] * 2
    assert len(set(slugs)) == 2
    assert [w for w in result.warnings if "-h<hash" in w] == [
        "kernel layer_norm: 2 different configs give workload 'a-b-hidden4096-rows4096' "
        "(one point of several sweeps); each got a -sweep-<parameter> suffix, or "
        "-h<hash of its parameters> where that still clashed"
    ]


@pytest.mark.heavy
def test_real_slugs_are_collision_free_within_a_kernel(real: ImportResult) -> None:
    result = real
    seen: dict[tuple[str, str], set[str]] = {}
    for doc in result.documents:
        kernel, _, _, _, workload, _ = doc["run"]["spec"]["sourceNative"]["externalId"].split("/")
        digest = doc["run"]["spec"]["workloadDigest"]
        seen.setdefault((kernel, workload), set()).add(digest)
    assert all(len(digests) == 1 for digests in seen.values())


# --- GPUs, titles, numbers, times ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "product", "form", "arch"),
    [
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100", "SXM4-80GB", "sm_80"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100", "80GB HBM3", "sm_90"),
        ("NVIDIA H100 PCIe", "NVIDIA H100", "PCIe", "sm_90"),
        ("NVIDIA B200", "NVIDIA B200", "", "sm_100"),
        ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", "", "sm_86"),
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090", "", "sm_89"),
    ],
)
def test_gpu_names_of_the_real_csvs(name: str, product: str, form: str, arch: str) -> None:
    gpu = parse_gpu(name)
    assert (gpu.vendor, gpu.product, gpu.form_factor, gpu.architecture, gpu.name) == (
        "nvidia",
        product,
        form,
        arch,
        name,
    )


def test_unknown_gpu_keeps_its_name_and_warns() -> None:
    gpu = parse_gpu("NVIDIA Z900 Prototype")
    assert (gpu.product, gpu.architecture) == ("NVIDIA Z900 Prototype", "unknown")
    result = convert_rows([row(gpu_name="NVIDIA Z900 Prototype")])
    assert len(result.documents) == 1
    assert any("Z900" in w for w in result.warnings)


@needs_real
def test_every_real_kernel_has_a_title() -> None:
    kernels = {r["kernel_name"] for p in REAL_CSVS for r in csv.DictReader(p.open())}
    assert kernels <= set(KERNEL_TITLES)


def test_ms_to_ns_rounds_half_to_even() -> None:
    doc = row_document(row(y_value_50="0.0000025", y_value_20="0.0000015", y_value_80="0.0000035"))
    values = [m["value"] for m in doc["run"]["spec"]["measurements"]]
    assert doc["run"]["spec"]["timing"]["latencyNs"]["median"] == 2
    assert values == [2, 4]


def test_timestamp_becomes_observed_at_z() -> None:
    doc = row_document(row(timestamp="2024-09-03 15:31:39"))
    assert doc["run"]["spec"]["observedAt"] == "2024-09-03T15:31:39.000Z"


def test_no_grad_forward_mode_is_the_pass() -> None:
    doc = row_document(row(kernel_operation_mode="no-grad-forward"))
    assert doc["run"]["spec"]["sourceNative"]["benchmark"] == "layer_norm/no-grad-forward"
    assert doc["protocol"]["metadata"]["name"] == "liger-bench-do-bench-no-grad-forward"


def test_memory_row_has_mb_measurements_and_no_timing() -> None:
    doc = row_document(
        row(
            metric_name="memory",
            metric_unit="MB",
            y_value_50="80.5",
            y_value_20="80.0",
            y_value_80="81",
        )
    )
    spec = doc["run"]["spec"]
    assert "timing" not in spec
    assert spec["measurements"] == [
        {"unit": "MB", "value": 80.0, "metric": "memory", "statistic": "p20"},
        {"unit": "MB", "value": 80.5, "metric": "memory", "statistic": "median"},
        {"unit": "MB", "value": 81.0, "metric": "memory", "statistic": "p80"},
    ]


# --- rows that cannot become documents -----------------------------------------------


def skipped_of(*rows: dict[str, str], columns: tuple[str, ...] = COLUMNS) -> list[str]:
    result = convert_rows(read_rows(csv_text(*rows, columns=columns), "bad.csv"))
    assert result.rows_read == len(result.documents) + len(result.skipped)
    return [str(s) for s in result.skipped]


def test_bad_number_is_skipped_with_line_and_column() -> None:
    assert skipped_of(BASE, {**BASE, "y_value_50": "fast"}) == [
        "bad.csv:3, column 9 (y_value_50): not a number: 'fast'"
    ]


def test_nan_is_skipped() -> None:
    assert "not a finite number" in skipped_of({**BASE, "y_value_80": "nan"})[0]


def test_unparseable_config_is_skipped() -> None:
    assert (
        "column 12 (extra_benchmark_config_str): not JSON"
        in skipped_of({**BASE, "extra_benchmark_config_str": "{M: 1"})[0]
    )


def test_missing_column_is_skipped() -> None:
    columns = tuple(c for c in COLUMNS if c != "liger_version")
    assert skipped_of(BASE, columns=columns) == [
        "bad.csv:2, column 15 (liger_version): missing column"
    ]


def test_unknown_metric_is_skipped() -> None:
    assert "unknown metric 'power'" in skipped_of({**BASE, "metric_name": "power"})[0]


def test_wrong_unit_is_skipped() -> None:
    assert "speed rows must be in ms" in skipped_of({**BASE, "metric_unit": "s"})[0]


def test_short_record_is_skipped() -> None:
    text = csv_text(BASE) + "layer_norm,liger\n"
    result = convert_rows(read_rows(text, "bad.csv"))
    assert [str(s) for s in result.skipped] == ["bad.csv:3: expected 15 fields, found 2"]


def test_multiline_record_keeps_its_start_line() -> None:
    text = csv_text(
        {**BASE, "y_value_50": "x"}, {**BASE, "x_label": "two\nlines", "y_value_50": "y"}
    )
    result = convert_rows(read_rows(text, "f.csv"))
    assert [s.line for s in result.skipped] == [2, 3]


def test_every_real_row_is_accounted_for(real: ImportResult) -> None:
    result = real
    records = sum(1 for p in REAL_CSVS for _ in csv.DictReader(p.open()))
    assert result.rows_read == records
    assert len(result.documents) + len(result.skipped) == records
    assert sum(result.by_metric.values()) == len(result.documents)


# --- the command line ----------------------------------------------------------------


def kiana(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_kiana("import", "liger", *map(str, args))


def imported(csv: Path, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """``kiana import liger CSV --db`` into a new file, opened."""
    from kiana import load

    db = tmp_path / "k.duckdb"
    done = kiana(csv, "--db", db)
    assert done.returncode == 0, done.stderr
    return load.connect(db)


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    memory = {
        **BASE,
        "metric_name": "memory",
        "metric_unit": "MB",
        "timestamp": "2025-07-17 18:19:00",
    }
    path.write_text(csv_text(BASE, memory, {**BASE, "y_value_50": "oops"}))
    return path


def test_cli_writes_one_file_per_document(small_csv: Path, tmp_path: Path) -> None:
    done = kiana(small_csv, "-o", tmp_path / "docs")
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "docs").glob("*.json"))) == 2


def test_cli_summary_counts_rows_metrics_and_skips(small_csv: Path, tmp_path: Path) -> None:
    done = kiana(small_csv, "--jsonl", tmp_path / "out.jsonl")
    assert "rows read: 3" in done.stdout
    assert "documents: 2 (latency 1, memory 1)" in done.stdout
    assert "skipped: 1" in done.stdout
    assert f"{small_csv}:4, column 9 (y_value_50): not a number" in done.stderr


def test_cli_writes_gzip_jsonl_by_suffix(small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl.gz"
    assert kiana(small_csv, "--jsonl", out).returncode == 0
    lines = gzip.decompress(out.read_bytes()).decode().splitlines()
    assert [json.loads(line)["run"]["kind"] for line in lines] == ["BenchmarkRun"] * 2


def test_cli_missing_file_is_an_error(tmp_path: Path) -> None:
    done = kiana(tmp_path / "nope.csv")
    assert done.returncode == 2
    assert "no such file" in done.stderr


@pytest.mark.heavy
def test_cli_loads_into_a_database(small_csv: Path, tmp_path: Path) -> None:
    con = imported(small_csv, tmp_path)
    assert con.execute("select count(*) from runs").fetchone() == (2,)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab,"\r\n\x0c\x85\u2028', max_size=40))
def test_text_lines_split_as_stringio_does(text: str) -> None:
    """The reference: ``io.StringIO(text, newline="")``, whose copy of a 229 MB CSV took
    0.9 GB; ``text_lines`` must split exactly as it does (csv line numbers depend on it)."""
    assert list(text_lines(text)) == list(io.StringIO(text, newline=""))
