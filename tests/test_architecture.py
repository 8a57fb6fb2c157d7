"""``docs/ARCHITECTURE.md`` matches the import graph: every module of ``kiana/`` sits on one
floor of its ``floors`` block, no import statement (lazy, typing-only or at the top)
points to a higher floor, and the graph has no circle.

The graph is read from every ``import`` and ``from ... import`` statement of every module
(:mod:`ast`, nothing imported): ``from kiana.x import y`` is an arrow to ``kiana.x.y``
where that is a module, else to ``kiana.x``."""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kiana"
FLOORS_BLOCK = re.compile(r"```text floors\n(.*?)```", re.S)


def modules(root: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package) of every ``.py`` under ``root``."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _target(name: str, known: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of ``root``'s package its import statements name."""
    known = modules(root)
    top = root.name
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, package) in known.items():
        here = name if package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named: list[str] = []
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                named = [
                    f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                    for alias in node.names
                ]
            for target in named:
                if target == top or target.startswith(f"{top}."):
                    found = _target(target, known)
                    if found is not None and found != name:
                        graph[name].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def floors() -> list[tuple[str, list[str]]]:
    """(floor, module patterns) from the top floor down, as ARCHITECTURE.md draws them."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    match = FLOORS_BLOCK.search(text)
    assert match, "docs/ARCHITECTURE.md has no ```text floors block"
    out = []
    for line in match.group(1).splitlines():
        name, colon, patterns = line.partition(":")
        if colon and not line.startswith(" "):
            out.append((name.strip(), [p.strip() for p in patterns.split(",") if p.strip()]))
    return out


def floor_of(module: str, drawn: list[tuple[str, list[str]]]) -> int | None:
    """The first floor (0: top) one of whose patterns ``module`` matches."""
    for number, (_, patterns) in enumerate(drawn):
        if any(fnmatchcase(module, pattern) for pattern in patterns):
            return number
    return None


def test_the_reader_sees_a_circle_and_an_arrow_up(tmp_path: Path) -> None:
    """The graph reader on a made-up package: a lazy import is an arrow, a circle of two
    modules is found, a module importing itself's package is an arrow to it."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text("from pkg.a import f\nimport pkg\n")
    graph = imports(package)
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a", "pkg"}
    assert circles(graph) == [["pkg.a", "pkg.b"]]


def test_every_module_has_a_floor() -> None:
    drawn = floors()
    assert [m for m in sorted(modules()) if floor_of(m, drawn) is None] == []


def test_no_import_points_up() -> None:
    """An import goes to the same floor or one below (the pipeline never takes words
    from the report, the shards never from the package's front door)."""
    drawn = floors()
    up = [
        f"{a} ({drawn[fa][0]}) -> {b} ({drawn[fb][0]})"
        for a, targets in sorted(imports().items())
        for b in sorted(targets)
        if (fa := floor_of(a, drawn)) is not None
        and (fb := floor_of(b, drawn)) is not None
        and fb < fa
    ]
    assert up == []


def test_no_circles() -> None:
    assert circles(imports()) == []
