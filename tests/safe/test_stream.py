"""kiana.safe.stream: what a command prints is inert and bounded (issue 40, item 4)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from kiana.safe.stream import LINE_LIMIT, InertStream, inert_streams


def _text(written: str, *, actions: bool, cap: int | None = None) -> str:
    raw = io.StringIO()
    out = InertStream(raw, json=False, actions=actions, cap=cap)
    out.write(written)
    out.finish()
    return raw.getvalue()


def test_the_legacy_syntax_is_broken_anywhere_in_a_line() -> None:
    assert "##[" not in _text("kernel ##[error]merge me\n", actions=False)


def test_under_actions_every_double_colon_is_broken() -> None:
    shown = _text("name a::error::b\n", actions=True)
    assert "::" not in shown


def test_outside_actions_only_a_leading_double_colon_is_broken() -> None:
    first, second = _text("  ::warning::x\nstd::vector\n", actions=False).splitlines()
    assert not first.lstrip().startswith("::") and second == "std::vector"


def test_a_long_run_without_spaces_is_cut_saying_how_much() -> None:
    shown = _text("kernel " + "k" * 100_000 + " done\n", actions=False)
    assert (
        "k" * 301 not in shown and "(99,700 characters cut)" in shown and shown.endswith("done\n")
    )


def test_a_long_line_is_cut() -> None:
    shown = _text("word " * 200_000 + "\n", actions=False)
    assert len(shown) < LINE_LIMIT + 100 and "characters cut" in shown


def test_a_cap_drops_the_rest_and_says_so() -> None:
    shown = _text("line of text\n" * 10_000, actions=False, cap=1_000)
    assert len(shown.encode()) < 1_200 and "output cut at 1,000 bytes" in shown


def test_json_keeps_its_meaning_without_a_runner_command() -> None:
    value = {"kernel": "::error::x ##[warning]y"}
    raw = io.StringIO()
    out = InertStream(raw, json=True, actions=True)
    out.write(json.dumps(value) + "\n")
    out.finish()
    assert "::" not in raw.getvalue() and "##[" not in raw.getvalue()
    assert json.loads(raw.getvalue()) == value


def test_actions_output_is_fenced_with_a_random_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    with inert_streams(json=False):
        print("::error::merge")
    lines = capsys.readouterr().out.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and lines[-1] == f"::{token}::"
    assert lines[1] == ":\\:error:\\:merge"


def test_json_output_is_not_fenced(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    with inert_streams(json=True):
        print(json.dumps({"a": 1}))
    assert json.loads(capsys.readouterr().out) == {"a": 1}


def test_the_streams_are_restored(capsys: pytest.CaptureFixture[str]) -> None:
    before = sys.stdout
    with inert_streams(json=False):
        assert sys.stdout is not before
    assert sys.stdout is before
