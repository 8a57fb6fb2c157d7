"""The quick loop stays quick: a test over ``KIANA_TEST_SECONDS`` fails unless it is
marked ``heavy`` (the rule is the plugin ``tests/quickloop.py``)."""

from __future__ import annotations

from typing import Any

import pytest

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


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str, *args: str
) -> Any:
    """``source`` run by pytest with the quick loop's rule at 0.1 s."""
    monkeypatch.setenv("KIANA_TEST_SECONDS", "0.1")
    pytester.makeini("[pytest]\nmarkers =\n    heavy: slow\n")
    pytester.makepyfile(source)
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "tests.quickloop", *args)


FIXTURES = """
import time
import pytest

@pytest.fixture(scope="module")
def shared():
    time.sleep(0.15)

@pytest.fixture
def own():
    time.sleep(0.15)

def test_first_user_of_the_shared_fixture(shared):
    pass

def test_second_user_of_the_shared_fixture(shared):
    pass

def test_own_slow_fixture(own):
    pass
"""


#: What the rule says of each file: the slow test fails (and the marked one passes), the
#: test with a slow fixture of its own fails (and the users of a slow shared one pass).
CASES = {
    "slow": (SLOW, "*test_slow took 0.* over the quick loop's 0.1 s*heavy*"),
    "fixtures": (FIXTURES, "*test_own_slow_fixture took 0.*"),
}


@pytest.mark.heavy  # a pytest run inside the run
@pytest.mark.parametrize("case", CASES)
def test_the_slow_unmarked_test_fails_and_only_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    source, said = CASES[case]
    result = _run(pytester, monkeypatch, source)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([said])


@pytest.mark.heavy  # a pytest run inside the run
def test_the_full_run_does_not_time_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``KIANA_TEST_SECONDS`` and without a ``-m`` that drops the heavy tests (CI's
    full run), no test fails for its speed."""
    monkeypatch.delenv("KIANA_TEST_SECONDS", raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    heavy: slow\n")
    pytester.makepyfile("import time\n\ndef test_slow():\n    time.sleep(3.2)\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "tests.quickloop")
    result.assert_outcomes(passed=1)


@pytest.mark.heavy  # a pytest run inside the run
def test_the_quick_loop_times_tests_by_default(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-m "not heavy"`` without ``KIANA_TEST_SECONDS`` applies the 3 s default: a
    4 s test fails."""
    pytester.makeini("[pytest]\nmarkers =\n    heavy: slow\n")
    monkeypatch.delenv("KIANA_TEST_SECONDS", raising=False)
    pytester.makepyfile("import time\n\ndef test_slow():\n    time.sleep(3.2)\n")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "tests.quickloop", "-m", "not heavy"
    )
    result.assert_outcomes(failed=1)
