"""The quick loop's rule, a pytest plugin (``tests/conftest.py`` loads it): in the quick
loop (a ``-m`` that deselects ``heavy``), a test that takes longer than
``KIANA_TEST_SECONDS`` (3 by default; 0 turns the rule off) fails unless it is marked
``heavy`` or ``browser``, so ``-m "not heavy and not browser"`` stays quick.  The full
run (``.ci/run``, on whatever machine CI lends) applies it only where
``KIANA_TEST_SECONDS`` is set: a loaded or slower machine must not fail a test for its
speed (speed targets live in ``bench/``).  A test is charged for its setup and call, not for fixtures it shares with
other tests (module, package or session scope): which test comes first moves with
``-m``, ``-k`` and the marks."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

_LIMIT = pytest.StashKey[float]()


def pytest_configure(config: pytest.Config) -> None:
    """The limit of this run: ``KIANA_TEST_SECONDS`` (3 s by default in the quick loop;
    none in a run that keeps the heavy tests, unless the variable is set)."""
    given = os.environ.get("KIANA_TEST_SECONDS")
    if given is not None:
        config.stash[_LIMIT] = float(given)
    else:
        quick = "not heavy" in (config.getoption("markexpr", "") or "")
        config.stash[_LIMIT] = 3.0 if quick else 0.0


_SETUP_SECONDS = pytest.StashKey[float]()
#: Seconds spent so far setting up fixtures shared by several tests (module, package or
#: session scope): a test is not charged for them, so the rule does not depend on which
#: test happens to come first (``-m``, ``-k`` and the heavy marks move that).
_SHARED_SETUP = [0.0]


_SHARED_BEFORE = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_SHARED_BEFORE] = _SHARED_SETUP[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
    if fixturedef.scope == "function":
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _SHARED_SETUP[0] += time.perf_counter() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if call.when == "setup":
        shared = _SHARED_SETUP[0] - item.stash.get(_SHARED_BEFORE, 0.0)
        item.stash[_SETUP_SECONDS] = max(call.duration - shared, 0.0)
        return
    limit = item.config.stash[_LIMIT]
    if call.when != "call" or not report.passed or limit <= 0:
        return
    if item.get_closest_marker("heavy") or item.get_closest_marker("browser"):
        return  # outside the quick loop
    seconds = item.stash.get(_SETUP_SECONDS, 0.0) + call.duration
    if seconds > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {seconds:.1f} s (its setup and call; shared fixtures not counted), over the quick loop's "
            f"{limit:g} s: make it quicker or mark it @pytest.mark.heavy "
            "(KIANA_TEST_SECONDS sets the limit)"
        )
