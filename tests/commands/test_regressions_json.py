"""``kiana regressions --json`` writes, chunk by chunk and column by column, exactly
the text of ``json.dumps`` of the frames' rows."""

from __future__ import annotations

import io
import json
import math
from datetime import datetime

import polars as pl
import pytest

from kiana import jsonstream


def _expected(frames: dict[str, pl.DataFrame | None]) -> str:
    # Datetimes are written as ISO 8601 UTC (``2026-01-01T12:00:00Z``), the rest as json.dumps.
    out = {
        name: [] if f is None else jsonstream.iso_datetimes(f).to_dicts()
        for name, f in frames.items()
    }
    return json.dumps(out, default=str, allow_nan=False) + "\n"


def _written(frames: dict[str, pl.DataFrame | None]) -> str:
    buffer = io.StringIO()
    jsonstream.write_json(buffer, frames)
    return buffer.getvalue()


HOSTILE = [
    "plain",
    "",
    None,
    'quote " and \\ backslash',
    "tab\tnewline\ncr\r",
    "\x00\x01\x1f control",
    "del \x7f",
    "tilde ~ and space ",
    "caf\u00e9 \u2014 \u4e2d\u6587",
    "emoji \U0001f680 astral",
    "%s %d %% percent",
    "</script><!--",
]

FLOATS = [
    0.0, -0.0, 1.0, -2.5, 0.1, 1e-4, 9.99e-5, 1e-5, -3.2e-7, 5e-324, 123456.789,
    1e15, 1e16, -1.5e17, 1.7976931348623157e308, 0.30000000000000004, None,
]  # fmt: skip


def test_every_type_and_value_as_json_dumps_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonstream, "_JSON_CHUNK", 5)
    n = len(FLOATS)
    frame = pl.DataFrame(
        {
            "name": (HOSTILE * 2)[:n],
            "change": FLOATS,
            "small": pl.Series([1.5, None, 2.25e-6] * 6, dtype=pl.Float32)[:n],
            "runs": [None if i % 4 == 0 else i * 10**i for i in range(n)],
            "flag": [None if i % 3 == 0 else i % 2 == 0 for i in range(n)],
            'key "%s"': list(range(n)),
        }
    )
    frames: dict[str, pl.DataFrame | None] = {
        "steps": frame,
        "empty": frame.head(0),
        "none": None,
        "dates": pl.DataFrame({"at": [None, datetime(2026, 1, 1, 12)], "n": [1, 2]}),
    }
    assert _written(frames) == _expected(frames)


def test_random_floats_as_python_repr() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    values = np.concatenate(
        [rng.normal(size=3000) * 10.0 ** rng.integers(-12, 20, size=3000), [0.0, -0.0]]
    )
    frames: dict[str, pl.DataFrame | None] = {"x": pl.DataFrame({"v": values})}
    assert _written(frames) == _expected(frames)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
def test_non_finite_floats_are_refused_as_by_json_dumps(bad: float) -> None:
    frame = pl.DataFrame({"v": [1.0, bad]})
    refused = r"^Out of range float values are not JSON compliant"
    with pytest.raises(ValueError, match=refused):
        json.dumps(frame.to_dicts(), allow_nan=False)
    with pytest.raises(ValueError, match=refused):
        _written({"x": frame})
