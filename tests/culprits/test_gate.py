"""``kiana gate``: the pull-request gate on Liger-like repositories the tests build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from kiana.cli import main
from kiana.culprits.gate import EXIT_REGRESSED, EXIT_UNJUDGED, GateResult, gate
from kiana.culprits.markdown import _headline
from kiana.stats import Judgement
from tests.culprits.test_culprits import CSV, OPS, LigerRepo, csv_text, rows

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

JAN, FEB, MAR = "2025-01-01 00:00:00", "2025-02-01 00:00:00", "2025-03-01 00:00:00"


def base_repo(path: Path) -> LigerRepo:
    """main: rms_norm and swiglu recorded at 0.5.0 (liger and huggingface)."""
    repo = LigerRepo(path)
    repo.commit(
        {
            f"{OPS}/rms_norm.py": "from liger_kernel.ops.utils import calculate_settings\n",
            f"{OPS}/swiglu.py": "from liger_kernel.ops.utils import calculate_settings\n",
            f"{OPS}/utils.py": "def calculate_settings(): ...\n",
            "README.md": "Liger\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", JAN)),
        },
        "Add kernels (#1)",
    )
    repo.git("checkout", "-q", "-b", "pr")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> LigerRepo:
    return base_repo(tmp_path / "Liger-Kernel")


def slower_pr(repo: LigerRepo) -> dict[str, str]:
    """On branch pr: a utils tweak, an unrelated swiglu commit, then the rms_norm change
    with its rows re-recorded 10% slower (baselines unchanged) in the same commit."""
    return {
        "utils": repo.commit({f"{OPS}/utils.py": "def calculate_settings(): 1\n"}, "utils (#2)"),
        "swiglu": repo.commit({f"{OPS}/swiglu.py": "# swiglu v2\n"}, "swiglu docs (#3)"),
        "change": repo.commit(
            {
                f"{OPS}/rms_norm.py": "from liger_kernel.ops.utils import calculate_settings\n#2\n",
                CSV: csv_text(
                    rows("rms_norm", "0.5.0", FEB, liger=1.10), rows("swiglu", "0.5.0", JAN)
                ),
            },
            "Rewrite rms_norm (#4)",
        ),
    }


@pytest.mark.heavy
def test_slower_kernel_fails_naming_its_commit_first(
    repo: LigerRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shas = slower_pr(repo)
    assert main(["gate", str(repo.path), "--base", "main", "--head", "pr"]) == 1
    out = capsys.readouterr().out
    assert f"culprit 1: {shas['change'][:12]} Rewrite rms_norm (#4)" in out
    assert f"culprit 2: {shas['utils'][:12]} utils (#2)" in out
    assert shas["swiglu"][:12] not in out
    assert "regression   rms_norm/forward liger" in out and "FAILED: 1 Liger regression" in out
    result = gate(repo.path, "main", "pr")
    (finding,) = result.regressions.iter_rows(named=True)
    assert finding["kernel"] == "rms_norm"
    assert finding["to_origin"] == f"{shas['change']}:{CSV}"
    assert [c["commit"] for c in finding["culprits"]] == [shas["change"], shas["utils"]]
    assert finding["culprits"][0]["role"] == "recorded"


@pytest.mark.heavy
def test_unrelated_commit_after_the_change_is_not_ranked_first(repo: LigerRepo) -> None:
    shas = slower_pr(repo)
    later = repo.commit({f"{OPS}/utils.py": "def calculate_settings(): 2\n"}, "utils again (#5)")
    (finding,) = gate(repo.path, "main", "pr").regressions.iter_rows(named=True)
    ranked = [c["commit"] for c in finding["culprits"]]
    assert ranked[0] == shas["change"]
    assert ranked[1:] == [later, shas["utils"]]


@pytest.mark.heavy
def test_clean_pr_passes(repo: LigerRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit(
        {
            f"{OPS}/rms_norm.py": "# comments only\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", FEB), rows("swiglu", "0.5.0", JAN)),
        },
        "Tidy rms_norm (#6)",
    )
    assert main(["gate", str(repo.path), "--base", "main", "--head", "pr"]) == 0
    out = capsys.readouterr().out
    assert "8 new or changed row(s)" in out and "passed: no Liger regression" in out


@pytest.mark.heavy
def test_a_fix_with_its_rows_is_an_improvement_and_passes(repo: LigerRepo) -> None:
    fix = repo.commit(
        {
            f"{OPS}/swiglu.py": "# faster\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", FEB, liger=0.8)),
        },
        "Speed up swiglu (#7)",
    )
    result = gate(repo.path, "main", "pr")
    assert result.regressions.height == 0
    (better,) = result.findings.filter(result.findings["verdict"] == "improvement").iter_rows(
        named=True
    )
    assert better["kernel"] == "swiglu" and better["culprits"][0]["commit"] == fix


@pytest.mark.heavy
def test_uncommitted_csv_edits_are_judged(
    repo: LigerRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    change = repo.commit({f"{OPS}/swiglu.py": "# swiglu v2\n"}, "Rework swiglu (#8)")
    repo.write({CSV: csv_text(rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", MAR, 1.1))})
    assert main(["gate", str(repo.path), "--base", "main"]) == 1
    out = capsys.readouterr().out
    assert "regression   swiglu/forward liger" in out
    assert f"culprit 1: {change[:12]} Rework swiglu (#8)" in out
    assert "work tree at" in out
    (finding,) = gate(repo.path, "main").regressions.iter_rows(named=True)
    assert finding["to_origin"] == CSV  # no commit holds these rows yet
    assert finding["culprits"][0]["role"] == "source"
    repo.write({CSV: csv_text(rows("rms_norm", "0.5.0", JAN), rows("swiglu", "0.5.0", MAR))})
    assert main(["gate", str(repo.path), "--base", "main"]) == 0


def test_nothing_new_passes(repo: LigerRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(repo.path), "--base", "main"]) == 0
    assert "the head adds or changes no benchmark row" in capsys.readouterr().out


@pytest.mark.heavy
def test_sparse_checkout_with_benchmark_and_src_only(
    repo: LigerRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    slower_pr(repo)
    repo.git("sparse-checkout", "set", "--no-cone", "/benchmark/", "/src/")
    assert not (repo.path / "README.md").exists()
    assert (repo.path / CSV).exists()
    repo.write({CSV: csv_text(rows("rms_norm", "0.5.0", MAR, 1.1), rows("swiglu", "0.5.0", JAN))})
    assert main(["gate", str(repo.path), "--base", "main"]) == 1
    assert "regression   rms_norm/forward liger" in capsys.readouterr().out


@pytest.mark.heavy
def test_json_and_markdown(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shas = slower_pr(repo)
    note = tmp_path / "comment.md"
    args = ["gate", str(repo.path), "--base", "main", "--head", "pr", "--json"]
    assert main([*args, "--markdown", str(note)]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["gate"]["regressed"] is True
    assert found["gate"]["base"] == repo.git("rev-parse", "main")
    assert found["gate"]["verdicts"] == {"regression": 1, "unchanged": 1}
    liger = next(f for f in found["findings"] if f["provider"] == "liger")
    assert liger["culprits"][0] == {
        "commit": shas["change"], "subject": "Rewrite rms_norm (#4)", "pr": 4,
        "date": liger["culprits"][0]["date"], "files": [f"{OPS}/rms_norm.py"], "role": "recorded",
    }  # fmt: skip
    assert liger["culprits_command"].startswith("git log --no-merges --name-only ")
    text = note.read_text()
    assert text.startswith("### kiana gate **failed**: 1 Liger regression(s)")
    assert "| regression | rms\\_norm · forward | liger |" in text
    assert f"[#4](https://github.com/linkedin/Liger-Kernel/pull/4) `{shas['change'][:10]}`" in text
    assert "<details><summary>Evidence and culprits</summary>" in text
    assert text.rstrip().endswith("</details>")


@pytest.mark.heavy
def test_markdown_escapes_what_the_data_says(repo: LigerRepo, tmp_path: Path) -> None:
    repo.commit(
        {
            f"{OPS}/rms_norm.py": "# v2\n",
            CSV: csv_text(rows("rms_norm", "0.5.0", FEB, 1.2), rows("swiglu", "0.5.0", JAN)),
        },
        "<script>x</script> | pipe (#9)",
    )
    note = tmp_path / "c.md"
    assert (
        main(["gate", str(repo.path), "--base", "main", "--head", "pr", "--markdown", str(note)])
        == 1
    )
    text = note.read_text()
    assert "<script>" not in text
    assert "&lt;script&gt;x&lt;/script&gt; \\| pipe" in text


def test_usage_errors_exit_2(
    repo: LigerRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["gate", str(plain), "--base", "main"]) == 2
    assert "not a git repository" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "missing"), "--base", "main"]) == 2
    assert main(["gate", str(repo.path), "--base", "no-such-branch"]) == 2
    err = capsys.readouterr().err
    assert "--base 'no-such-branch': unknown revision" in err and "hint: fetch it first" in err
    assert main(["gate", str(repo.path), "--base", "main", "--head", "nope"]) == 2
    assert main(["gate", str(repo.path), "--base=-all"]) == 2
    empty = LigerRepo(tmp_path / "empty")
    empty.commit({"src/liger_kernel/ops/rms_norm.py": "# no benchmarks\n"}, "code only")
    assert main(["gate", str(empty.path), "--base", "main"]) == 2
    err = capsys.readouterr().err
    assert "no Liger CSVs" in err and "hint:" in err


def test_help_says_what_the_exit_codes_mean(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = capsys.readouterr().out
    assert "1  a Liger provider regressed" in out and "2  usage error" in out


def _result_with(findings: pl.DataFrame) -> GateResult:
    empty = pl.DataFrame()
    judgement = Judgement(steps=empty, findings=findings, changepoints=empty, versions=empty,
                          runs_judged=0, coverage=None, quality=empty)  # type: ignore[arg-type]  # fmt: skip
    return GateResult(base="b" * 40, head="h" * 40, worktree=False, history_rows=1, head_rows=1,
                      findings=findings, steps=empty, judgement=judgement)  # fmt: skip


def _regression(basis: str) -> pl.DataFrame:
    return pl.DataFrame({"is_subject": [True], "verdict": ["regression"], "basis": [basis]})


def test_a_regression_across_a_noisy_session_fails_closed_not_as_the_prs() -> None:
    bridged = _result_with(_regression("bridge"))
    assert bridged.regressions.height == 0 and bridged.unplaced.height == 1
    assert bridged.exit_code == EXIT_UNJUDGED
    assert "too noisy to say whether this pull request caused them" in _headline(bridged)
    assert _result_with(_regression("adjusted")).exit_code == EXIT_REGRESSED


@pytest.mark.heavy
def test_a_judged_bridge_at_the_head_fails_closed_in_comment_and_json() -> None:
    """A bridge the judge made (not a hand-made row): the head's findings selected by
    the origin of their later session, as the gate selects them, exit 3, and the
    comment and JSON say it could not be placed."""
    import kiana
    from kiana.culprits.markdown import comment
    from kiana.pipeline import Selection
    from tests.stats_fixtures import realistic_corpus

    _, con = realistic_corpus(3)
    every = kiana.analyze(con).findings
    bridge = every.filter(pl.col("basis") == "bridge", pl.col("verdict") == "regression").row(
        0, named=True
    )
    head = kiana.analyze(con, selection=Selection(to_origin=(bridge["to_origin"],)))
    own = head.findings.filter(
        pl.col("kernel") == bridge["kernel"], pl.col("pass") == bridge["pass"],
        pl.col("gpu") == bridge["gpu"],
    )  # fmt: skip
    assert own.filter(pl.col("basis") == "bridge").height >= 1
    result = GateResult(
        base="b" * 40, head="h" * 40, worktree=False, history_rows=1, head_rows=own.height,
        findings=own.filter(pl.col("basis").eq_missing("bridge") | (pl.col("verdict") != "regression")),
        steps=pl.DataFrame(), judgement=head.judgement,
    )  # fmt: skip
    assert result.exit_code == EXIT_UNJUDGED and result.unplaced.height >= 1
    text = comment(result)
    assert "too noisy to say whether this pull request caused them" in text
    assert bridge["kernel"] in text
    assert json.loads(json.dumps(result.summary()))["unplaced"] == result.unplaced.height


def _finding(verdict: str, basis: str, *, subject: bool = True) -> pl.DataFrame:
    return pl.DataFrame({"is_subject": [subject], "verdict": [verdict], "basis": [basis]})


def test_an_inconclusive_liger_finding_of_the_head_fails_closed() -> None:
    noisy = _result_with(_finding("inconclusive", "inconclusive"))
    assert noisy.exit_code == EXIT_UNJUDGED and noisy.summary()["uncertain"] == 1
    assert "too noisy to say whether it regressed" in _headline(noisy)


def test_an_outlier_session_before_the_head_or_a_noisy_baseline_does_not_fail() -> None:
    assert _result_with(_finding("inconclusive", "outlier")).exit_code == 0
    assert _result_with(_finding("inconclusive", "inconclusive", subject=False)).exit_code == 0
