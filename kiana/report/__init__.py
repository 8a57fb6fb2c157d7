"""The self-contained HTML report: ``build(con)`` returns the page, ``write`` saves it.

Stages: :mod:`kiana.report.data` gathers small frames from the database, the runs and
the judgement; :mod:`kiana.report.charts` draws them with Altair (also the notebooks'
chart API, :mod:`kiana.charts`); :mod:`kiana.report.page` assembles escaped HTML with
the Vega bundle of :mod:`kiana.report.assets` inlined once.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.errors import InputError
from kiana.report.data import ReportOptions

if TYPE_CHECKING:
    import duckdb

    from kiana.stats import JudgeOptions

__all__ = ["ReportOptions", "build", "build_with_headline", "write"]


def build(
    con: duckdb.DuckDBPyConnection,
    options: ReportOptions | None = None,
    judge_options: JudgeOptions | None = None,
) -> str:
    """The report of everything in the database behind ``con``, as one HTML string."""
    return build_with_headline(con, options, judge_options)[0]


def build_with_headline(
    con: duckdb.DuckDBPyConnection,
    options: ReportOptions | None = None,
    judge_options: JudgeOptions | None = None,
) -> tuple[str, str]:
    """The page and its one-line headline (what a terminal shows after writing it)."""
    from kiana import load, stats
    from kiana.report import data, page

    options = options or ReportOptions()
    judge_options = judge_options or stats.JudgeOptions()
    runs = load.runs(con)
    judgement = stats.judge(runs, judge_options)
    options = dataclasses.replace(
        options,
        settings=options.settings or dataclasses.asdict(judge_options),
        threshold=options.threshold if options.threshold is not None else judge_options.threshold,
    )
    gathered = data.gather(con, runs, judgement, options)
    html = page.render(gathered, options, database=data.database_label(con))
    return html, page.headline(gathered)


def write(path: str | os.PathLike[str], html: str) -> Path:
    """Write the page (UTF-8) through a temporary file, so a reader never sees half."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    try:
        temporary.write_text(html, encoding="utf-8")
        temporary.replace(target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise InputError(
            f"cannot write the report to {target}: {exc.strerror or exc}",
            hint="check that the folder exists and is writable, or pick another -o path",
        ) from exc
    return target
