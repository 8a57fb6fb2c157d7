"""Liger CSV import: one implementation per provider name (per-backend CSVs) and the
provenance labels each document carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiana.importers.liger import (
    ImportResult,
    NotLigerCsvError,
    convert_rows,
    csv_backend,
    import_csvs,
    read_rows,
)
from kiana.importers.rows import LABEL_CSV, Row, row_document
from tests.importers.test_liger import BASE, csv_text, imported, kiana, row, small_csv

__all__ = ["small_csv"]  # a fixture, shared

# --- one implementation per provider name ---------------------------------------------


def providers_of(result: ImportResult) -> list[str]:
    return sorted(
        d["run"]["spec"]["sourceNative"]["externalId"].split("/")[2] for d in result.documents
    )


@pytest.fixture
def backend_csvs(tmp_path: Path) -> tuple[Path, Path]:
    """A per-backend CSV whose own rows say plain ``liger``, and the Triton main file."""
    rows = [
        {**BASE, "kernel_provider": "liger"},
        {**BASE, "kernel_provider": "liger", "x_value": "8192"},
        {**BASE, "kernel_provider": "liger_triton"},
        {**BASE, "kernel_provider": "torch"},
    ]
    cutile = tmp_path / "all_benchmark_data_cutile.csv"
    cutile.write_text(csv_text(*rows))
    main = tmp_path / "all_benchmark_data.csv"
    main.write_text(csv_text({**BASE, "kernel_provider": "liger"}))
    return cutile, main


def test_csv_backend_comes_from_the_file_name() -> None:
    assert csv_backend("all_benchmark_data_cutile.csv") == "cutile"
    assert csv_backend("benchmark/data/all_benchmark_data_cutedsl.csv") == "cutedsl"
    assert csv_backend("benchmark/data/all_benchmark_data.csv") is None
    assert csv_backend("results.csv") is None


def test_plain_liger_of_a_backend_file_becomes_liger_backend(
    backend_csvs: tuple[Path, Path],
) -> None:
    cutile, main = backend_csvs
    result = import_csvs([cutile, main])
    # The cutile file's own rows (plain "liger") become liger_cutile; its Triton rows
    # (liger_triton) become liger, the Triton name of the main file.
    assert providers_of(result) == ["liger", "liger", "liger_cutile", "liger_cutile", "torch"]
    renames = [w for w in result.warnings if "imported as" in w]
    assert renames == [
        "all_benchmark_data_cutile.csv: 2 row(s) of provider 'liger' imported as "
        "'liger_cutile' (one name per implementation: Triton's is 'liger', as in "
        "all_benchmark_data.csv)",
        "all_benchmark_data_cutile.csv: 1 row(s) of provider 'liger_triton' imported as "
        "'liger' (one name per implementation: Triton's is 'liger', as in "
        "all_benchmark_data.csv)",
    ]


def test_triton_variants_of_a_backend_file_take_the_main_files_names() -> None:
    from kiana.importers.liger import backend_provider

    assert backend_provider("liger_triton_rms_norm", "cutile") == "liger_rms_norm"
    assert backend_provider("liger_cutile_rms_norm", "cutile") is None
    assert backend_provider("liger_triton", None) is None
    assert backend_provider("liger_tritonx", "cutile") is None


def test_main_file_keeps_plain_liger_without_warning(backend_csvs: tuple[Path, Path]) -> None:
    _, main = backend_csvs
    result = import_csvs([main])
    assert providers_of(result) == ["liger"]
    assert result.warnings == ()


def test_renaming_needs_the_file_name() -> None:
    text = csv_text({**BASE, "kernel_provider": "liger"})
    (renamed,) = read_rows(text, "x", csv_name="all_benchmark_data_cutedsl.csv")
    (kept,) = read_rows(text, "x")
    assert isinstance(renamed, Row) and isinstance(kept, Row)
    assert (renamed.cells["kernel_provider"], renamed.renamed_from) == ("liger_cutedsl", "liger")
    assert (kept.cells["kernel_provider"], kept.renamed_from) == ("liger", None)


# --- provenance labels ---------------------------------------------------------------


def labels_of(result: ImportResult) -> list[dict[str, str]]:
    return [d["run"]["metadata"]["labels"] for d in result.documents]


def test_csv_file_label_is_its_base_name(small_csv: Path) -> None:
    assert (
        labels_of(import_csvs([small_csv]))
        == [{"liger_version": "0.6.0", LABEL_CSV: "small.csv"}] * 2
    )


def test_one_file_from_two_folders_gives_identical_documents(
    small_csv: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere" / small_csv.name
    other.parent.mkdir()
    other.write_bytes(small_csv.read_bytes())
    first, second = import_csvs([small_csv]), import_csvs([other])
    assert first.documents == second.documents
    assert first.sources != second.sources


def test_rows_without_a_file_name_carry_no_provenance_label() -> None:
    assert row_document(row())["run"]["metadata"]["labels"] == {"liger_version": "0.6.0"}


@pytest.mark.heavy
def test_cli_labels_reach_the_labels_table(small_csv: Path, tmp_path: Path) -> None:
    con = imported(small_csv, tmp_path)
    rows = con.execute(
        "select key, value, count(*) from labels group by all order by key"
    ).fetchall()
    assert rows == [(LABEL_CSV, "small.csv", 2), ("liger_version", "0.6.0", 2)]


# --- files that are not Liger's ------------------------------------------------------


def test_cli_csv_without_liger_columns_is_an_input_error(tmp_path: Path) -> None:
    other = tmp_path / "people.csv"
    other.write_text("name,age\nada,36\n")
    done = kiana(other, "--jsonl", tmp_path / "out.jsonl")
    assert done.returncode == 2
    assert (
        f"{other}: not a Liger benchmark CSV: none of Liger's columns in its header "
        "(found: name, age)" in done.stderr
    )
    assert "hint: pass Liger-Kernel's benchmark/data/*.csv, whose columns are kernel_name," in (
        done.stderr
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_empty_file_is_an_input_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    done = kiana(empty)
    assert done.returncode == 2
    assert "not a Liger benchmark CSV" in done.stderr
    assert "no header, the file is empty" in done.stderr


def test_one_foreign_file_among_liger_files_fails_the_import(
    small_csv: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(NotLigerCsvError, match=r"other\.csv: not a Liger benchmark CSV"):
        import_csvs([small_csv, other])


def test_header_with_some_liger_columns_reads_on_row_by_row() -> None:
    text = "kernel_name,kernel_provider\nrms_norm,liger\n"
    result = convert_rows(read_rows(text, "part.csv"))
    assert [s.reason for s in result.skipped] == ["missing column"]


def test_byte_order_mark_in_the_header_is_ignored() -> None:
    (item,) = read_rows("\ufeff" + csv_text(BASE), "bom.csv")
    assert isinstance(item, Row) and item.cells["kernel_name"] == "layer_norm"
