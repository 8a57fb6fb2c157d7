"""``kiana.safe``: data strings made inert for terminals, CI logs and Markdown; files
written without following links."""

from __future__ import annotations

import pytest

from kiana.safe import code, excerpt, markdown, terminal


@pytest.mark.parametrize(
    "text", ["a\nb", "a\rb", "\x1b[2J", "a\u202eb", "a\u2028b", "a\u200bb", "\x00", "\x85"]
)
def test_terminal_leaves_one_visible_line(text: str) -> None:
    out = terminal(text)
    assert out.isprintable() and "\n" not in out and "\\" in out


def test_terminal_neutralises_a_leading_workflow_command() -> None:
    assert terminal("  ::error::x").startswith("\\")


@pytest.mark.parametrize(
    ("text", "absent"),
    [
        ("@octocat", "@octocat"),
        ("@org/team", "@org/team"),
        ("https://evil.example/x", "https://"),
        ("HTTP://EVIL", "HTTP://"),
        ("www.evil.example", "www.evil"),
        ("&#64;user", "&#64;"),
        ("<script>", "<script"),
        ("[x](http://y)", "[x]("),
        ("a|b", "a|b"),
        ("#123", " #123"),
    ],
)
def test_markdown_makes_mentions_links_and_html_inert(text: str, absent: str) -> None:
    assert absent not in markdown(text)


def test_markdown_is_one_bounded_line() -> None:
    out = markdown("x" * 1000 + "\n\u202e", limit=50)
    assert len(out) == 50 and out.endswith("…") and "\n" not in out


def test_code_spans_keep_text_but_never_break_out() -> None:
    assert code("a`b\nc") == "`a'b c`"


def test_excerpt_is_short_and_says_how_long_the_text_was() -> None:
    assert excerpt("s" * 10_000) == "'" + "s" * 39 + "…' (10,000 characters)"


def test_terminal_breaks_the_legacy_command_syntax_anywhere() -> None:
    assert "##[" not in terminal("kernel ##[error]safe to merge")


def test_terminal_cuts_at_a_limit_saying_how_much() -> None:
    assert terminal("k" * 100_000, 300) == "k" * 300 + "… (99,700 characters cut)"
