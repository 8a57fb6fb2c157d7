"""``kiana load`` and ``kiana partitions`` through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SEEDS, run_kiana


def kiana(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_kiana(*args, cwd=cwd)


@pytest.mark.heavy
def test_load_prints_a_summary(tmp_path: Path) -> None:
    out = kiana("load", str(SEEDS), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "loaded 2, already present 0, rejected 0" in out.stdout
    assert (tmp_path / "kiana.duckdb").exists()


@pytest.mark.heavy
def test_second_load_reports_already_present(tmp_path: Path) -> None:
    kiana("load", str(SEEDS), cwd=tmp_path)
    out = kiana("load", str(SEEDS), "--db", "kiana.duckdb", cwd=tmp_path)
    assert "loaded 0, already present 2" in out.stdout


@pytest.mark.heavy
def test_rejects_are_listed_and_do_not_fail(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    out = kiana("load", str(SEEDS), str(tmp_path / "bad.json"), cwd=tmp_path)
    assert out.returncode == 0
    assert "rejected 1" in out.stdout and "bad.json" in out.stdout


@pytest.mark.heavy
def test_strict_exits_non_zero_on_reject(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    out = kiana("load", "--strict", str(tmp_path / "bad.json"), cwd=tmp_path)
    assert out.returncode != 0
    assert "rejected" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.heavy
def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    out = kiana("load", "nowhere.json", cwd=tmp_path)
    assert out.returncode == 2
    assert "nowhere.json: no such file or folder" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.heavy
def test_partitions_json(tmp_path: Path) -> None:
    kiana("load", str(SEEDS), cwd=tmp_path)
    out = kiana("partitions", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["partitions"]
    assert {r["gpu"] for r in rows} == {"NVIDIA H100 80GB HBM3", "NVIDIA A100 SXM4-80GB"}


@pytest.mark.heavy
def test_partitions_without_database(tmp_path: Path) -> None:
    out = kiana("partitions", "--db", "missing.duckdb", cwd=tmp_path)
    assert out.returncode == 2 and "kiana load" in out.stderr


def test_help_does_not_import_heavy_packages() -> None:
    code = (
        "import sys, kiana.cli; kiana.cli.build_parser(); "
        "print(sorted(m for m in ('altair', 'scipy', 'polars', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_opening_a_database_does_not_import_the_loader() -> None:
    # kiana regressions, report and gate open a database; only a load needs the
    # loader's stages (pyarrow.compute, pandas with it: 0.35 s of every start)
    code = (
        "import sys; from kiana.load import connect; connect(None).close(); "
        "print(sorted(m for m in ('kiana.load.pipeline', 'pandas', 'pyarrow.compute') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.heavy
def test_partitions_of_memory_or_a_foreign_database_is_a_clear_error(tmp_path: Path) -> None:
    import duckdb

    duckdb.connect(str(tmp_path / "other.duckdb")).execute("CREATE TABLE t (x INT)").close()
    for db in (":memory:", "other.duckdb"):
        out = kiana("partitions", "--db", db, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and "hint:" in out.stderr


def test_open_db_is_the_one_door(tmp_path: Path) -> None:
    import argparse

    import kiana.load
    from kiana.commands.common import open_db
    from kiana.errors import DatabaseError

    def args(db: str | None) -> argparse.Namespace:
        return argparse.Namespace(db=db)

    file = str(tmp_path / "k.duckdb")
    for db in (":memory:", None):
        with pytest.raises(DatabaseError, match="new, empty database"):
            open_db(args(db), must_exist=True, read_only=True)
        con = open_db(args(db), must_exist=False, read_only=True)  # schema, no runs
        assert kiana.load.runs(con).height == 0
        con.close()
    for must_exist, read_only in ((True, True), (True, False), (False, True)):
        with pytest.raises(DatabaseError, match="no such database"):
            open_db(args(file), must_exist=must_exist, read_only=read_only)
    con = open_db(args(file), must_exist=False, read_only=False)  # created, with the schema
    kiana.load.load(con, [SEEDS])
    con.close()
    con = open_db(args(file), must_exist=True, read_only=True)
    assert kiana.load.runs(con).height == 2
    con.close()
    with pytest.raises(DatabaseError, match="folder"):
        open_db(args(str(tmp_path)), must_exist=True, read_only=True)


def test_progress_bar_draws_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from kiana.commands import load

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert load.progress_bar() is None
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    clock = iter([0.0, 0.5, 2.0])
    monkeypatch.setattr(load.time, "monotonic", lambda: next(clock))
    bar = load.progress_bar()
    assert bar is not None
    bar(1, 4, 10)  # within the first second: nothing
    assert terminal.getvalue() == ""
    bar(2, 4, 1234)
    assert terminal.getvalue() == "\r[" + "#" * 15 + "." * 15 + "] 2/4 files, 1,234 documents"


@pytest.mark.heavy
def test_a_folder_without_documents_exits_2_and_leaves_no_database(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("not a document")
    db = tmp_path / "new.duckdb"
    done = run_kiana("load", str(folder), "--db", str(db))
    assert done.returncode == 2
    assert "no document files under" in done.stderr and ".jsonl" in done.stderr
    assert not db.exists()


@pytest.mark.heavy
def test_a_failed_load_leaves_no_new_database(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    done = run_kiana("load", str(tmp_path / "MISSING"), "--db", str(db))
    assert done.returncode == 2 and not db.exists()
