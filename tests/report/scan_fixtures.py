"""What the scan tests read: the rows of a report's findings tables, as HTML gives them,
and the findings ``kiana regressions --wide`` lists, one line each; no tests here."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kiana.vocabulary import VERDICTS

#: The findings tables of the page and the metric of each.
TABLES = {"findings-table": "latency", "memory-table": "memory"}


class _Rows(HTMLParser):
    """The body rows of the findings tables: each row's attributes and cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, dict[str, str], list[str]]] = []
        self._table: str | None = None
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table = found.get("id") if found.get("id") in TABLES else None
        elif self._table and tag == "tbody":
            self._in_body = True
        elif self._table and self._in_body and tag == "tr":
            self.rows.append((self._table, found, []))
        elif self._table and self._in_body and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1][2].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def report_rows(html: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """``(metric, tr attributes, cell texts)`` of every finding row of the page."""
    parser = _Rows()
    parser.feed(html)
    return [(TABLES[table], attrs, cells) for table, attrs, cells in parser.rows if cells]


def row_key(metric: str, cells: list[str]) -> str:
    """A report row as ``kiana regressions --wide`` begins its line: verdict,
    kernel/pass, provider, GPU, metric, sessions (cells: #, verdict, kernel, pass,
    provider, GPU, step, ...)."""
    _, verdict, kernel, pass_, provider, gpu, step = cells[:7]
    return " ".join([verdict, f"{kernel}/{pass_}", provider, gpu, metric, step])


def cli_lines(stdout: str) -> list[str]:
    """The finding lines of ``kiana regressions --wide`` (a verdict first, unindented),
    their runs of spaces made one."""
    return [
        re.sub(r" +", " ", line)
        for line in stdout.splitlines()
        if line.split(" ", 1)[0] in VERDICTS
    ]
