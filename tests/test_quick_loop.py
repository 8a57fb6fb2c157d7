"""The quick loop stays quick: a test over ``SLOW_TEST_SECONDS`` fails unless it is
marked ``heavy`` (the rule lives in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

pytest_plugins = ["pytester"]

SLOW = """
import time
import pytest

def test_slow():
    time.sleep(0.12)

@pytest.mark.heavy
def test_slow_but_marked():
    time.sleep(0.12)

def test_quick():
    pass
"""


def test_a_slow_unmarked_test_fails_and_says_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIANA_TEST_SECONDS", "0.1")
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    heavy: slow\n")
    pytester.makepyfile(SLOW)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_slow took 0.* over the quick loop's 0.1 s*heavy*"])
