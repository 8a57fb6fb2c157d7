"""Which files of Liger-Kernel make up a kernel: the rule culprits are matched by.

A finding names a kernel as Liger's benchmarks do (``kernel_name``: ``rms_norm``,
``fused_linear_cross_entropy``, ``dpo_loss``).  Its files are, in Liger's layout:

1. ``src/liger_kernel/ops/<kernel>.py``: the Triton kernel (kind ``source``);
2. ``src/liger_kernel/chunked_loss/<kernel>*.py``: chunked losses (``source``);
3. ``src/liger_kernel/transformers/<kernel>*.py``: the ``nn.Module`` wrappers (``source``);
4. the liger_kernel modules that the kernel's own modules (``ops/<kernel>.py`` and
   ``chunked_loss/<kernel>.py``, as they are at the commit that recorded the later
   session) import: ``from liger_kernel.ops.utils import ...``, ``import
   liger_kernel.ops.utils``, ``from .utils import ...``, resolved to the ``.py`` file or
   package ``__init__.py`` present in that commit's tree (kind ``imported``; one level,
   not the imports of the imports);
5. ``benchmark/scripts/benchmark_<kernel>.py``: the script that measured it (kind
   ``benchmark``; a changed script changes the measurement, not the kernel).

``*`` stays inside one directory.  Without a repository only the patterns of 1-3 and 5
are known (the imports need the source): they are what the ``git log`` hint lists.

Liger's CI history names a kernel benchmarked in variants ``<kernel>_<param>=<value>``
(``dyt_beta=True``, read as ``dyt_beta=true``): its files are ``<kernel>``'s
(:func:`base_kernel`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

SOURCE, IMPORTED, BENCHMARK = "source", "imported", "benchmark"
#: Kinds of match, strongest first (the culprit ranking orders by it).
KINDS: tuple[str, ...] = (SOURCE, IMPORTED, BENCHMARK)

_SAFE_KERNEL = re.compile(r"^[A-Za-z0-9_.-]+$")
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+(liger_kernel(?:\.\w+)*)", re.M)


_VARIANT = re.compile(r"^(?P<kernel>[A-Za-z0-9_.-]+?)_[A-Za-z0-9]+=[A-Za-z0-9.]+$")


def base_kernel(kernel: str) -> str:
    """The kernel a CI variant name benchmarks (module docstring); any other name as is.

    >>> base_kernel("dyt_beta=true"), base_kernel("rms_norm")
    ('dyt', 'rms_norm')
    """
    match = _VARIANT.match(kernel)
    return match["kernel"] if match else kernel


def patterns(kernel: str) -> list[tuple[str, str]]:
    """(pattern, kind) of a kernel's files (rules 1-3 and 5 of the module docstring);
    none for a name that is not a plain identifier (it cannot name a Liger file)."""
    kernel = base_kernel(kernel)
    if not _SAFE_KERNEL.match(kernel) or kernel.startswith("."):
        return []
    root = "src/liger_kernel"
    return [
        (f"{root}/ops/{kernel}.py", SOURCE),
        (f"{root}/chunked_loss/{kernel}*.py", SOURCE),
        (f"{root}/transformers/{kernel}*.py", SOURCE),
        (f"benchmark/scripts/benchmark_{kernel}.py", BENCHMARK),
    ]


def primary_modules(kernel: str) -> list[str]:
    """The modules whose imports count (rule 4)."""
    if not patterns(kernel):
        return []
    kernel = base_kernel(kernel)
    return [f"src/liger_kernel/ops/{kernel}.py", f"src/liger_kernel/chunked_loss/{kernel}.py"]


def _matches(path: str, pattern: str) -> bool:
    """``fnmatch`` within one directory: ``*`` never crosses ``/``."""
    directory, name = posixpath.split(pattern)
    return posixpath.dirname(path) == directory and fnmatchcase(posixpath.basename(path), name)


def imported_files(module_path: str, text: str, tree: frozenset[str]) -> list[str]:
    """The files of ``tree`` that the liger_kernel imports of ``text`` (the module at
    ``module_path``, ``src/liger_kernel/...``) name, sorted."""
    package = posixpath.dirname(module_path).removeprefix("src/").split("/")
    found: set[str] = set()

    def add(dotted: list[str]) -> None:
        base = "src/" + "/".join(dotted)
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in tree and candidate != module_path:
                found.add(candidate)

    for dots, name, names in _FROM.findall(text):
        if dots:
            parent = package[: len(package) - (len(dots) - 1)] if len(dots) > 1 else package
            dotted = [*parent, *(name.split(".") if name else [])]
        elif name:  # absolute: kept below when it is liger_kernel itself
            dotted = name.split(".")
        else:
            continue
        if not dotted or dotted[0] != "liger_kernel":
            continue
        add(dotted)
        for item in names.strip("()").replace("\n", " ").split(","):
            word = item.strip().split(" ")[0]
            if word and word != "*":
                add([*dotted, word])
    for name in _IMPORT.findall(text):
        add(name.split("."))
    return sorted(found)


@dataclass(frozen=True)
class KernelFiles:
    """A kernel's files: patterns (rules 1-3, 5) and imported files (rule 4)."""

    kernel: str
    patterns: tuple[tuple[str, str], ...]
    imported: tuple[str, ...] = ()

    def kind(self, path: str) -> str | None:
        """The kind of match of one path (``source``, ``imported``, ``benchmark``), or
        None when the path is not one of the kernel's files."""
        for pattern, kind in self.patterns:
            if _matches(path, pattern):
                return kind
        return IMPORTED if path in self.imported else None

    def pathspecs(self) -> list[str]:
        """The paths to give ``git log -- PATHS`` (patterns, then imported files)."""
        return [p for p, _ in self.patterns] + list(self.imported)


def kernel_files(
    kernel: str, read: dict[str, str] | None = None, tree: frozenset[str] = frozenset()
) -> KernelFiles:
    """The files of ``kernel``; ``read`` maps the primary modules present at the
    recording commit to their text, ``tree`` lists that commit's files (rule 4)."""
    imported: set[str] = set()
    for path, text in (read or {}).items():
        imported.update(imported_files(path, text, tree))
    return KernelFiles(kernel, tuple(patterns(kernel)), tuple(sorted(imported)))
