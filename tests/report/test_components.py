"""Snapshot tests of the report's HTML components, one at a time, and hostile strings."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from kiana.report.components import (
    Cell,
    Column,
    Html,
    Row,
    badge,
    counter,
    esc,
    filter_bar,
    fmt_change,
    fmt_number,
    fmt_ratio,
    join,
    json_script,
    json_text,
    section,
    stat_cards,
    table,
)
from tests.report_fixtures import PAYLOADS


def test_esc_escapes_markup_and_quotes() -> None:
    assert str(esc('<a href="x">&\'')) == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert str(esc(None)) == ""
    assert str(esc(Html("<b>ok</b>"))) == "<b>ok</b>"


def test_esc_makes_direction_overrides_visible() -> None:
    assert str(esc("abc\u202edef\u200b")) == "abc[U+202E]def[U+200B]"


def test_badge() -> None:
    assert str(badge("regression")) == '<span class="badge regression">regression</span>'
    assert str(badge("<x>")) == '<span class="badge other">&lt;x&gt;</span>'


def test_stat_cards() -> None:
    assert str(stat_cards([("runs", 12345)])) == (
        '<div class="cards"><div class="card"><div class="num">12,345</div>'
        '<div class="label">runs</div></div></div>'
    )


def test_table_with_sort_key_and_filter_attribute() -> None:
    html = table(
        [Column("kernel", key="kernel"), Column("change", "right")],
        [["layer_norm", Cell("+1.0%", sort=0.01)]],
        id="t1",
        sortable=True,
    )
    assert str(html) == (
        '<table id="t1" class="data sortable"><thead><tr><th class="left" tabindex="0">kernel'
        '</th><th class="right" tabindex="0">change</th></tr></thead><tbody>'
        '<tr data-kernel="layer_norm"><td class="left">layer_norm</td>'
        '<td class="right" data-sort="0.01">+1.0%</td></tr></tbody></table>'
    )


def test_empty_table_says_so() -> None:
    assert '<tr class="empty"><td colspan="1">none</td></tr>' in str(
        table([Column("a")], [], empty="none")
    )


def test_section_and_filter_bar() -> None:
    assert str(section("x y", "T<", Html("<b>"), intro="i&")) == (
        '<section id="x-y"><h2>T&lt;</h2><p class="intro">i&amp;</p><b></section>'
    )
    bar = str(filter_bar("tbl", {"gpu": ["H100"]}, preset={"gpu": ("listed", "listed <x>")}))
    assert '<option value="@listed" selected>listed &lt;x&gt;</option>' in bar
    assert '<select data-filter="gpu" data-table="tbl">' in bar
    assert 'data-count="tbl"' in bar and "data-count" not in str(filter_bar("t", {}, of=None))
    assert (
        str(counter("t x", " <b>"))
        == '<span class="count" data-count="t-x" data-of=" &lt;b&gt;"></span>'
    )


def test_a_row_carries_its_data_attributes() -> None:
    row = Row(["layer_norm"], {"listed": '"><b>'})
    html = str(table([Column("kernel", key="kernel")], [row]))
    assert '<tr data-kernel="layer_norm" data-listed="&quot;&gt;&lt;b&gt;">' in html


def test_a_filtered_table_can_say_that_nothing_matches() -> None:
    html = str(table([Column("a"), Column("b")], [["x", "y"]], none="nothing <matches>"))
    assert html.endswith(
        '<tfoot><tr class="empty none" hidden><td colspan="2">nothing &lt;matches&gt;'
        "</td></tr></tfoot></table>"
    )
    assert "<tfoot>" not in str(table([Column("a")], [["x"]]))


def test_a_plain_str_is_never_markup() -> None:
    """Only an :class:`Html` is inserted as it is: a str body, cell or part is escaped."""
    attack = "<script>alert(1)</script>"
    assert str(section("s", "t", attack)) == (
        '<section id="s"><h2>t</h2>&lt;script&gt;alert(1)&lt;/script&gt;</section>'
    )
    assert "<script>" not in str(table([Column("a")], [[attack]]))
    assert str(join(Html("<b>"), attack)) == "<b>&lt;script&gt;alert(1)&lt;/script&gt;"
    assert not isinstance(esc(attack), str)
    with pytest.raises(TypeError):
        Html("<b>") + attack  # type: ignore[operator]
    with pytest.raises(TypeError):
        attack + Html("<b>")  # type: ignore[operator]
    with pytest.raises(TypeError):
        Html(Html("<b>"))  # type: ignore[arg-type]


def test_formats() -> None:
    assert fmt_change(0.1234) == "+12.3%"
    assert fmt_change(float("nan")) == "–"
    assert fmt_ratio(1.834) == "1.83×"
    assert fmt_number(0.012345) == "0.0123"
    assert fmt_number(None) == "–"


def test_json_script_cannot_be_closed_by_data() -> None:
    value = {"label": "</script><script>alert(1)</script>", "x": "a\u2028b&c", "n": float("nan")}
    block = str(json_script(value, data_chart="c1"))
    inner = block.removeprefix('<script type="application/json" data-chart="c1">')
    inner = inner.removesuffix("</script>")
    assert "<" not in inner and ">" not in inner and "&" not in inner and "\u2028" not in inner
    assert json.loads(inner) == {**value, "n": None}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_strings_never_become_markup(payload: str) -> None:
    html = "".join(str(part) for part in [
        esc(payload), table([Column("name", key="name")], [[payload]]), badge(payload),
        section("s", payload, ""), stat_cards([(payload, payload)]),
        filter_bar("t", {"k": [payload]}, preset={"k": (payload, payload)}),
        table([Column("a")], [Row([payload], {payload: payload})], none=payload),
    ])  # fmt: skip
    parser = _Tags()
    parser.feed(html)
    allowed = {"table", "thead", "tbody", "tfoot", "tr", "th", "td", "span", "section", "h2", "div",
               "label", "select", "option", "input"}  # fmt: skip
    for tag, attrs in parser.tags:
        assert tag in allowed
        assert not any(name.startswith("on") for name, _ in attrs)
        assert not any((value or "").lower().startswith("javascript:") for name, value in attrs
                       if name in ("href", "src"))  # fmt: skip
    assert "\u202e" not in html
    assert re.fullmatch(r"[^<>&\u2028\u2029]*", json_text(payload))
