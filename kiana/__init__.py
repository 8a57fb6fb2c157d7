"""kiana: when did a GPU kernel get slower?  The public API."""

from __future__ import annotations

__version__ = "0.1.0"
