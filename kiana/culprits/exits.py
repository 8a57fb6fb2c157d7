"""``kiana gate``'s exit codes and limits: a module of its own, light to import (the
``--help`` text and the argument defaults read it without polars or DuckDB)."""

from __future__ import annotations

EXIT_PASSED, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2
EXIT_UNJUDGED, EXIT_ROWS, EXIT_TIMEOUT, EXIT_CRASH = 3, 4, 5, 6
#: ``kiana gate``'s exit status: code -> meaning (``--help``, README, tests/SECURITY.md).
EXIT_CODES: dict[int, str] = {
    EXIT_PASSED: "no Liger provider regressed, every head row of a Liger provider was judged, and none of their findings is inconclusive",
    EXIT_REGRESSED: "a Liger provider regressed: a finding with verdict 'regression'",
    EXIT_USAGE: "usage error: not a git repository, --base/--head unknown or swapped, no "
    "Liger CSVs, an output that cannot be written",
    EXIT_UNJUDGED: "fail closed: head rows of a Liger provider were rejected, conflict or were not judged "
    "(no step ends at their session), "
    "or a head CSV was refused (a link, a submodule), or a regression lies between an earlier "
    "session and the head's across one too noisy to place it, or a Liger finding of the head is "
    "inconclusive (too noisy to say whether it regressed): the pull request could not be judged",
    EXIT_ROWS: "more distinct rows than --max-rows: not judged",
    EXIT_TIMEOUT: "--timeout reached: not judged",
    EXIT_CRASH: "internal error: the gate could not judge (a bug: the comment says so)",
}

#: ``--max-rows`` and ``--timeout`` defaults: Liger's full history is ~4,500 distinct
#: rows and takes 10-13 s.
MAX_ROWS = 200_000
TIMEOUT_SECONDS = 900.0
