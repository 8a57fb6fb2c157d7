"""Which hunks of a shared benchmark module change what a provider runs.

A benchmark script imports helpers (``benchmark/scripts/utils.py``: ``run_benchmarks``,
the CSV writer, argument parsing).  A change there voids a baseline's control only where
it can change what the provider runs (:mod:`kiana.culprits.changes`): a hunk that only
routes the results, after they were measured, does not (Liger's #1228, 2026-05-28,
changed the CSV file name ``run_benchmarks`` writes to, three lines after its
measuring loop; the cuTile jsd B200 "improvement" of 0.8.0 rested on it while torch of
the same sittings moved -1.8% to -8.2%).

The rule, on the module's text at the two commits (Python's ``ast``; hunks from
:class:`difflib.SequenceMatcher` over lines, the changed lines of each side):

* a hunk inside a top-level function that lies wholly *after* the function's last
  measuring statement (a statement of its body that calls one of the function's own
  parameters: the benchmark function the script passes in, ``bench_test_fn``) routes
  output: it runs once the measurement is done, so it cannot change it;
* any other hunk (module level, a function that measures nothing itself, lines before
  or inside the measuring loop), or a side that does not parse, matters.

:func:`mattering_hunks` gives the hunks that matter, each named
``utils.py @@ -452,1 +452,3 @@ (run_benchmarks)``, the evidence's note.

>>> old = "def run(fn, n):\\n    for i in range(n):\\n        fn(i)\\n    save('a.csv')\\n"
>>> mattering_hunks("utils.py", old, old.replace("'a.csv'", "'b.csv'"))
[]
>>> mattering_hunks("utils.py", old, old.replace("range(n)", "range(2 * n)"))
['utils.py @@ -2,1 +2,1 @@ (run)']
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _measured_until(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The last line of the last statement of ``func``'s body that calls one of its own
    parameters (None when none does: it measures nothing itself)."""
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    last: int | None = None
    for stmt in func.body:
        calls = (n for n in ast.walk(stmt) if isinstance(n, ast.Call))
        if any(isinstance(c.func, ast.Name) and c.func.id in params for c in calls):
            last = stmt.end_lineno
    return last


def _routes_output(tree: ast.Module | None, first: int, last: int) -> tuple[bool, str | None]:
    """Whether lines ``first..last`` (1-based; an empty range at ``first``) of one side lie
    in a top-level function after its measurement; and that function's name."""
    if tree is None:
        return False, None
    for func in _functions(tree):
        end = func.end_lineno or func.lineno
        if func.lineno <= first and max(first, last) <= end:
            until = _measured_until(func)
            return until is not None and first > until, func.name
    return False, None


def _hunks(old: list[str], new: list[str]) -> Iterator[tuple[int, int, int, int]]:
    """``(old_start, old_count, new_start, new_count)`` of each changed block (1-based)."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            yield i1 + 1, i2 - i1, j1 + 1, j2 - j1


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def mattering_hunks(name: str, old: str, new: str) -> list[str]:
    """The hunks between ``old`` and ``new`` (a module's text at two commits) that can
    change what a provider runs (module docstring), each named for the evidence."""
    trees = (_parse(old), _parse(new))
    found: list[str] = []
    for a, na, b, nb in _hunks(old.splitlines(), new.splitlines()):
        routes_old, fa = _routes_output(trees[0], a, a + na - 1) if na else (True, None)
        routes_new, fb = _routes_output(trees[1], b, b + nb - 1) if nb else (True, None)
        if na == 0 and nb == 0:
            continue
        if not (routes_old and routes_new):
            where = fb or fa
            found.append(f"{name} @@ -{a},{na} +{b},{nb} @@" + (f" ({where})" if where else ""))
    return found
