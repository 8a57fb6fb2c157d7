"""Liger CSVs that attack the importer: links, FIFOs, foreign files, values and
configs out of range, identity fields in another spelling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kiana.errors import InputError
from kiana.importers.liger import import_csvs, read_csv_file
from kiana.importers.workloads import parse_scalar
from tests.culprits.test_culprits import csv_text, rows


def test_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_text("secret")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    with pytest.raises(InputError, match="a symbolic link: not followed") as caught:
        read_csv_file(tmp_path / "link.csv")
    assert "secret" not in str(caught.value)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(InputError, match="not a regular file"):
        read_csv_file(tmp_path / "pipe.csv")


def test_a_foreign_header_is_described_not_quoted(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("password=hunter2,token=abc\n1,2\n")
    with pytest.raises(InputError, match="none shown: not column names") as caught:
        import_csvs([path])
    assert "hunter2" not in str(caught.value)


def test_spellings_of_one_series_import_as_one(tmp_path: Path) -> None:
    plain = rows("rms_norm", "0.5.0", "2025-01-01 00:00:00")
    odd = [
        {**r, "kernel_operation_mode": " Forward", "kernel_provider": r["kernel_provider"].upper(),
         "x_value": r["x_value"] + ".0", "metric_unit": "MS"}
        for r in plain
    ]  # fmt: skip
    (tmp_path / "a.csv").write_text(csv_text(plain))
    (tmp_path / "b.csv").write_text(csv_text(odd))
    docs = [import_csvs([tmp_path / n]).documents for n in ("a.csv", "b.csv")]
    specs = [
        [
            (d["run"]["spec"]["sourceNative"]["externalId"], d["run"]["spec"]["workloadDigest"])
            for d in ds
        ]
        for ds in docs
    ]
    assert specs[0] == specs[1] and len(specs[0]) == 8
    assert parse_scalar("1024.0") == 1024 and parse_scalar("1e400") == "1e400"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"y_value_50": "1e308"}, "out of range (above 1e9)"),
        ({"timestamp": "0001-01-01 00:00:00"}, "out of range (1970-2099)"),
        ({"extra_benchmark_config_str": "[" * 60_000 + "]" * 60_000}, "nested"),
        ({"extra_benchmark_config_str": '{"a":' * 30 + "1" + "}" * 30}, "deeper than 16"),
        ({"y_value_50": "x" * 5000}, "(5,000 characters)"),
    ],
)
def test_values_out_of_range_are_skipped_rows(
    tmp_path: Path, change: dict[str, str], reason: str
) -> None:
    path = tmp_path / "all_benchmark_data.csv"
    path.write_text(
        csv_text([{**r, **change} for r in rows("rms_norm", "0.5.0", "2025-01-01 00:00:00")])
    )
    result = import_csvs([path])
    assert not result.documents and len(result.skipped) == 8
    assert reason in str(result.skipped[0]) and len(str(result.skipped[0])) < 400


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ('{"M": ' + "9" * 5000 + "}", "an integer of too many digits"),
        ('{"M": NaN}', "NaN is not a finite number"),
        ('{"M": -Infinity}', "-Infinity is not a finite number"),
        ('{"M": 1e400}', "a number past float range"),
    ],
)
def test_hostile_numbers_in_a_config_reject_the_row(config: str, reason: str) -> None:
    from kiana.importers.rows import LigerRowError, Row, row_spec

    cells = {"extra_benchmark_config_str": config, "kernel_name": "k", "kernel_provider": "liger",
             "kernel_operation_mode": "forward", "metric_name": "speed", "metric_unit": "ms",
             "x_name": "H", "x_value": "1", "y_value_50": "1", "y_value_20": "1",
             "y_value_80": "1", "gpu_name": "NVIDIA H100", "timestamp": "2025-01-01 00:00:00",
             "liger_version": "0.5.0"}  # fmt: skip
    with pytest.raises(LigerRowError) as caught:
        row_spec(Row(cells, "x.csv", 2))
    assert caught.value.reason == f"not a JSON number: {reason}"
    assert "9999" not in caught.value.message
