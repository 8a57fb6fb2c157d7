"""The self-contained HTML report: ``render(ReportData) -> str``, ``write`` saves it.

Rendering is a function of its data.  Whoever calls it gathers the data (the CLI in
``kiana.commands.report.collect``; in a notebook)::

    analysis = kiana.analyze(con, judge_options)
    data = kiana.report.ReportData(
        analysis.runs, analysis.judgement, judge_options,
        quality=kiana.load.quality.collect(con),
    )
    kiana.report.write("report.html", kiana.report.render(data))

Stages: :mod:`kiana.report.data` turns the data into small frames;
:mod:`kiana.report.charts` builds their Vega-Lite specs (the notebooks' Altair charts
in :mod:`kiana.charts` are made from the same specs); :mod:`kiana.report.page`
assembles escaped HTML (:mod:`kiana.report.components`) with the Vega bundle of
:mod:`kiana.report.assets` inlined once.
"""

from __future__ import annotations

import os
from pathlib import Path

from kiana.report.data import ReportData, ReportOptions
from kiana.report.page import render
from kiana.report.text import coverage_line, headline

__all__ = ["ReportData", "ReportOptions", "coverage_line", "headline", "render", "write"]


def write(path: str | os.PathLike[str], html: str) -> Path:
    """Write the page (UTF-8) through a new temporary file renamed into place, so a
    reader never sees half, and never through a link (:func:`kiana.safe.write_text`: a
    linked folder or name is refused)."""
    from kiana.safe import write_output

    target = Path(path)
    write_output(
        target, html, hint="check that the folder exists and is writable, or pick another -o path"
    )
    return target
