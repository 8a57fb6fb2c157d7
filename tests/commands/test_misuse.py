"""Misuse through a real subprocess: each mistake a new user makes gets its own exit
status (kiana.cli.EXIT_CODES) and one message that points the right way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kiana.cli import EXIT_CODES, main
from tests.conftest import SEEDS, run_kiana
from tests.culprits.test_culprits import csv_text, liger_repo, rows

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def liger_csv(folder: Path) -> Path:
    """A small Liger CSV (rms_norm at two sessions of 0.5.0), as benchmark/data/ has it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "all_benchmark_data.csv"
    path.write_text(
        csv_text(
            rows("rms_norm", "0.5.0", "2025-01-01 00:00:00"),
            rows("rms_norm", "0.5.0", "2025-02-01 00:00:00", liger=1.2),
        )
    )
    return path


def test_every_exit_status_is_listed_in_the_help() -> None:
    done = run_kiana("--help")
    assert done.returncode == 0
    for code, meaning in EXIT_CODES.items():
        assert f"{code:>3}  {meaning}" in done.stdout


@pytest.mark.heavy
def test_load_of_a_liger_csv_points_to_kiana_import_liger(tmp_path: Path) -> None:
    csv = liger_csv(tmp_path)
    done = run_kiana("load", str(csv), "--db", "k.duckdb", cwd=tmp_path)
    assert done.returncode == 2
    assert "a CSV file" in done.stderr
    assert (
        f"hint: Liger-Kernel's benchmark CSVs go through `kiana import liger {csv}" in done.stderr
    )
    assert not (tmp_path / "k.duckdb").exists()


@pytest.mark.heavy
def test_import_of_a_folder_reads_its_csv_files(tmp_path: Path) -> None:
    liger_csv(tmp_path / "benchmark" / "data")
    done = run_kiana("import", "liger", "benchmark/data/", "--db", "k.duckdb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "written 16 into k.duckdb (loaded 16," in done.stdout


@pytest.mark.heavy
def test_import_of_a_folder_without_csv_says_what_to_give(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = run_kiana("import", "liger", "empty", "--db", "k.duckdb", cwd=tmp_path)
    assert done.returncode == 2
    assert "empty: a folder with no .csv file in it" in done.stderr
    assert "hint: give Liger's benchmark/data/ folder" in done.stderr


@pytest.mark.heavy
def test_import_without_an_output_loads_the_default_database(tmp_path: Path) -> None:
    liger_csv(tmp_path)
    done = run_kiana("import", "liger", "all_benchmark_data.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "into kiana.duckdb" in done.stdout and "the default --db" in done.stdout
    after = run_kiana("regressions", cwd=tmp_path)  # the next command finds the rows
    assert after.returncode == 0, after.stderr
    assert "rms_norm/forward" in after.stdout


def test_a_single_dash_long_option_names_the_option_meant(tmp_path: Path) -> None:
    done = run_kiana("load", str(SEEDS), "-db", "y.duckdb", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: kiana load ")
    assert "kiana load: error: unrecognized argument -db; did you mean --db?" in done.stderr
    assert not (tmp_path / "y.duckdb").exists() and not (tmp_path / "kiana.duckdb").exists()


def test_a_misspelt_option_of_a_nested_command_names_it(tmp_path: Path) -> None:
    done = run_kiana("import", "liger", "x.csv", "--jsnl", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "kiana import liger: error: unrecognized argument --jsnl; did you mean --jsonl?" in (
        done.stderr
    )


@pytest.mark.heavy
def test_an_error_naming_hostile_input_is_one_inert_line(tmp_path: Path) -> None:
    done = run_kiana("load", "x\n::error::safe to merge.json", cwd=tmp_path)
    assert done.returncode == 2
    assert "\n::error" not in done.stderr
    assert "x\\n::error::safe to merge.json" in done.stderr


def test_an_internal_error_is_one_line_with_its_own_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kiana.commands.partitions as partitions

    def broken(args: object) -> int:
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(partitions, "run", broken)
    monkeypatch.delenv("KIANA_TRACEBACK", raising=False)
    assert main(["partitions", "--db", ":memory:"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("kiana partitions: internal error: RuntimeError: disk on fire (a bug")
    assert "KIANA_TRACEBACK=1" in err


def test_an_interrupt_deep_in_duckdb_exits_130_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kiana.commands.regressions as regressions

    def interrupted(args: object) -> int:
        try:
            raise RuntimeError("Query interrupted")  # what DuckDB raises on SIGINT
        except RuntimeError:
            raise ValueError("TransactionException: Current transaction is aborted") from None

    monkeypatch.setattr(regressions, "run", interrupted)
    assert main(["regressions", "--db", ":memory:"]) == 130
    err = capsys.readouterr().err
    assert err == "kiana regressions: interrupted: nothing was judged; run it again " + (
        "(--kernel or --gpu make it quicker)\n"
    )


@pytest.mark.heavy
@needs_git
def test_culprits_come_from_the_imported_repository_without_git(tmp_path: Path) -> None:
    repo, shas = liger_repo(tmp_path / "Liger-Kernel")
    done = run_kiana("import", "liger", "--git", str(repo.path), "--db", "k.duckdb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"culprits will come from {repo.path.resolve()}" in done.stdout
    found = run_kiana("regressions", "--db", "k.duckdb", "--no-changepoints", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert f"culprit 1: {shas['pr'][:12]} Refactor rms_norm (#4)" in found.stdout
    report = run_kiana("report", "--db", "k.duckdb", "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert shas["pr"][:10] in (tmp_path / "r.html").read_text()
    repo.path.rename(tmp_path / "moved")  # the path is gone: the git log hint, no error
    gone = run_kiana("regressions", "--db", "k.duckdb", "--no-changepoints", cwd=tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert "culprit 1:" not in gone.stdout
