"""Headless Chromium for the browser tests: Debian's binary, the flags that work on a
machine with no network, the marks that skip (with the reason) where it is absent,
and one launcher."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
SKIP_REASON = "needs Debian's chromium at /usr/bin/chromium (run .ci/install-chromium)"
#: ``pytestmark`` of a browser test module.
MARKS = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium (playwright), closed after."""
    from playwright import sync_api  # a [test] dependency: missing, the test fails

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
