"""Liger-Kernel benchmark CSVs -> kernelindex.dev/v1alpha1 documents.

Liger-Kernel keeps its results in ``benchmark/data/*.csv`` (see ``../shared/FORMAT.md``,
"The Liger CSV").  Each row becomes one document, written by
:func:`kiana.documents.build_document`, so it has exactly the seeds' shape.

This module reads CSV files (:func:`import_csvs`) and converts rows
(:func:`convert_rows`, which the git importer :mod:`kiana.importers.git` shares); one
row -> one spec is :mod:`kiana.importers.rows`, the workload slug
:mod:`kiana.importers.workloads`, GPU names :mod:`kiana.importers.gpus`.

A row missing a column, or with a value that cannot be read, is skipped with its file,
line, column and reason; a file whose header holds none of the columns below is not
Liger's (:class:`NotLigerCsvError`, exit status 2).

Column by column
================
``kernel_name``
    ``RunSpec.kernel``; the display title (``LayerNorm``, ``Fused linear + CPO loss``)
    comes from :data:`kiana.importers.rows.KERNEL_TITLES` (unknown kernels: the name,
    words capitalised).
``kernel_provider``
    ``RunSpec.provider`` (third segment of ``externalId``, middle of the title).  One
    rule renames: Liger writes one CSV per backend, ``all_benchmark_data_<backend>.csv``
    (``all_benchmark_data_cutile.csv``; ``all_benchmark_data.csv`` is Triton's), and some
    versions of a per-backend file name the backend's own rows plain ``liger``, like the
    Triton rows of ``all_benchmark_data.csv``, while others name the Triton rows
    ``liger_triton``.  One implementation must keep one name, and each name must mean one
    implementation, so in a per-backend file (backend taken from the file name, see
    :func:`csv_backend`) a provider of exactly ``liger`` becomes ``liger_<backend>``
    (``liger_cutile``), and ``liger_triton`` (``liger_triton_<x>``) becomes ``liger``
    (``liger_<x>``): Triton's code is ``liger`` in every file, comparable across the main
    CSV and the backend CSVs.  The import warns once per file and name.  Every other
    provider keeps its name (``torch``, ``liger_cutile``, ...).
``kernel_operation_mode``
    the timed pass (``forward``, ``backward``, ``full``, ``no-grad-forward``, ...).
``metric_name`` / ``metric_unit``
    ``speed``/``ms`` -> a latency document (``timing.latencyNs.median`` and ``p20``/``p80``
    measurements in integer ns, round half to even, computed exactly from the decimal
    text); ``memory``/``MB`` -> a memory document (``p20``, ``median``, ``p80`` in MB,
    no ``timing``).  Any other pair is rejected.
``y_value_20`` / ``y_value_50`` / ``y_value_80``
    the quantiles; ``sourceNative.metrics`` keeps the harness's own floats
    (``ms_20``/``ms_50``/``ms_80`` or ``mb_20``/``mb_50``/``mb_80``).  Non-finite or
    negative values are rejected.
``x_name`` / ``x_value`` / ``extra_benchmark_config_str``
    the workload: the JSON config with the swept parameter ``x_name = x_value`` put in
    (it replaces a ``null`` placeholder of the same name).  The workload slug follows
    :mod:`kiana.importers.workloads`; the full parameter dict goes to the workload digest.
``x_label``
    a display label of the swept parameter only (``hidden size``); not carried.
``gpu_name``
    :func:`kiana.importers.gpus.parse_gpu` -> :class:`kiana.documents.Gpu` (vendor,
    product, form factor, architecture).
``timestamp``
    ``observedAt`` (``2024-09-03 15:31:39`` -> ``2024-09-03T15:31:39.000Z``; taken as UTC).
``liger_version``
    ``run.metadata.labels.liger_version``.

Beside it, two provenance labels say where the row was recorded (later stages tell
benchmark sessions apart by them: one file at one commit):

``liger_csv``
    the CSV as Liger names it: ``benchmark/data/<name>.csv`` (its path in the repository)
    for git imports, the file's base name for CSV files given on the command line (never
    an absolute path: a run's id is the sha256 of its document, so one file imported from
    two folders must give identical documents).
``liger_commit``
    git imports only: the full sha of the commit whose version of the file holds the row,
    the first commit where that row's content appeared (rows are deduplicated keeping the
    oldest).
"""

from __future__ import annotations

import csv
import errno
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kiana.documents import RunSpec, build_document
from kiana.errors import InputError
from kiana.harness import LIGER as PROFILE
from kiana.importers.gpus import gpu_is_known
from kiana.importers.rows import COLUMNS, LigerRowError, Row, Skipped, normalise, row_spec
from kiana.importers.workloads import part_name, separate_collisions
from kiana.safe import name_like, terminal


class NotLigerCsvError(InputError):
    """A CSV whose header holds none of Liger's columns (or no header at all)."""

    def __init__(self, source: str, header: Sequence[str]) -> None:
        self.source = source
        super().__init__(
            f"{source}: not a Liger benchmark CSV: none of Liger's columns in its header "
            f"({describe_header(header)})",
            hint=f"pass Liger-Kernel's benchmark/data/*.csv, whose columns are "
            f"{', '.join(COLUMNS)}",
        )


def describe_header(header: Sequence[str]) -> str:
    """What a foreign header holds, without quoting it: only short, name-like cells
    are shown (the file may be a link to a secret, ``/proc/self/environ``).

    >>> describe_header(["a", "b"])
    'found: a, b'
    >>> describe_header(["GH_TOKEN=ghp_0123456789abcdef\\x00HOME=/root"])
    'found 1 column(s); none shown: not column names'
    """
    if not header:
        return "no header, the file is empty"
    shown = [cell for cell in header[:5] if name_like(cell)]
    if len(shown) < min(len(header), 5):
        return f"found {len(header):,} column(s); none shown: not column names"
    more = f", ... ({len(header):,} in all)" if len(header) > 5 else ""
    return "found: " + ", ".join(shown) + more


#: Liger's per-backend CSVs: ``all_benchmark_data_<backend>.csv``.
_PER_BACKEND = re.compile(r"^all_benchmark_data_(?P<backend>[A-Za-z0-9_]+)\.csv$")


def csv_backend(csv_name: str) -> str | None:
    """The backend a per-backend CSV is named after (``.../all_benchmark_data_cutile.csv``
    -> ``cutile``); None for ``all_benchmark_data.csv`` (Triton) and any other name."""
    match = _PER_BACKEND.match(csv_name.replace("\\", "/").rsplit("/", 1)[-1])
    return match["backend"] if match else None


#: One line as ``io.StringIO(text, newline="")`` reads it: up to ``\r\n``, ``\r`` or
#: ``\n`` (kept), or the rest of the text.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def text_lines(text: str) -> Iterator[str]:
    r"""The lines of ``text`` exactly as ``io.StringIO(text, newline="")`` yields them,
    without its copy of the text (four bytes a character: 0.9 GB for a 229 MB CSV).

    >>> list(text_lines("a,b\r\nc\rd\n\fe"))
    ['a,b\r\n', 'c\r', 'd\n', '\x0ce']
    """
    for match in _LINE.finditer(text):
        yield match.group()


def read_rows(
    text: str | Iterable[str],
    source: str,
    *,
    csv_name: str | None = None,
    commit: str | None = None,
    defaults: Mapping[str, str] | None = None,
) -> Iterator[Row | Skipped]:
    """Records of one CSV text, or of its lines read lazily (an iterable of lines kept
    with their line ends, as ``open(..., newline="")`` yields them: a caller streaming a
    file stops the read when it stops iterating).  ``line`` is the 1-based line a record
    starts on: the csv reader's own position, either way.

    ``csv_name`` is the file as Liger names it (``benchmark/data/<name>.csv``, or a base
    name), each row's ``liger_csv`` label; in a per-backend file a provider of exactly
    ``liger`` becomes ``liger_<backend>`` (module docstring, ``kernel_provider``).
    ``commit`` (git imports) is each row's ``liger_commit`` label.  ``defaults`` fills
    columns the file lacks (the git importer passes the release version for CSVs written
    before Liger recorded ``liger_version``).

    Raises :class:`NotLigerCsvError` (on the first ``next``) when the file is empty or
    its header holds none of :data:`~kiana.importers.rows.COLUMNS`; a header holding
    some of them reads on, and rows missing a column are skipped one by one.
    """
    backend = csv_backend(csv_name) if csv_name is not None else None
    reader = csv.reader(text_lines(text) if isinstance(text, str) else text)
    try:
        header = next(reader)
    except StopIteration:
        raise NotLigerCsvError(source, []) from None
    except csv.Error as exc:
        yield Skipped(source, 1, None, f"unreadable CSV header: {exc}")
        return
    header = [h.strip().lstrip("\ufeff") for h in header]
    if not set(header) & set(COLUMNS):
        raise NotLigerCsvError(source, header)
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Skipped(source, start, None, f"unreadable CSV record: {exc}")
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            yield Skipped(source, line, None, f"expected {len(header)} fields, found {len(cells)}")
            continue
        record = dict(defaults or {})
        record.update(normalise(dict(zip(header, cells, strict=True))))
        renamed_from = None
        provider = record.get("kernel_provider")
        renamed = backend_provider(provider, backend)
        if renamed is not None:
            renamed_from, record["kernel_provider"] = provider, renamed
        yield Row(record, source, line, csv=csv_name, commit=commit, renamed_from=renamed_from)


#: Liger's own provider names (the Liger profile's providers under test: ``liger`` and
#: ``liger_*``).
LIGER = PROFILE.subject_providers[0]
LIGER_PREFIX = PROFILE.subject_prefixes[0]
#: The Triton provider names of a per-backend CSV (``liger_triton``, ``liger_triton_*``).
TRITON = f"{LIGER_PREFIX}triton"


def backend_provider(provider: str | None, backend: str | None) -> str | None:
    """The provider a per-backend CSV's row is imported under, when it is renamed (the
    ``kernel_provider`` rule of the module docstring); None when it keeps its name."""
    if backend is None or provider is None:
        return None
    name = provider.strip()
    if name == LIGER:
        return f"{LIGER_PREFIX}{backend}"
    if name == TRITON or name.startswith(TRITON + "_"):
        return LIGER + name[len(TRITON) :]
    return None


@dataclass(frozen=True)
class ImportResult:
    """Documents made from Liger rows, and every row that did not make one."""

    documents: tuple[dict[str, Any], ...]
    rows_read: int
    skipped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=())

    @property
    def by_metric(self) -> dict[str, int]:
        counts = Counter(doc["run"]["spec"]["measurements"][0]["metric"] for doc in self.documents)
        return dict(sorted(counts.items()))

    @property
    def skipped_by_reason(self) -> dict[str, int]:
        counts = Counter(_reason_kind(s) for s in self.skipped)
        return dict(counts.most_common())


def _reason_kind(skipped: Skipped) -> str:
    reason = re.sub(r"'[^']*'|\d+", "…", skipped.reason.split(":")[0])
    return f"{skipped.column}: {reason}" if skipped.column else reason


def convert_rows(rows: Iterable[Row | Skipped], *, sources: Sequence[str] = ()) -> ImportResult:
    """Rows -> documents, with the slug-collision backstop (rule 6 of
    :mod:`kiana.importers.workloads`) over all of them."""
    converted: list[tuple[RunSpec, str]] = []
    skipped: list[Skipped] = []
    renamed: Counter[tuple[str, str, str]] = Counter()
    read = 0
    for item in rows:
        read += 1
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        if item.renamed_from is not None:
            renamed[(item.csv or item.source, item.renamed_from.strip(),
                     item.cells["kernel_provider"])] += 1  # fmt: skip
        try:
            spec = row_spec(item)
        except LigerRowError as exc:
            skipped.append(Skipped(exc.source, exc.line, exc.column, exc.reason))
            continue
        x_name = item.cells["x_name"].strip()
        converted.append((spec, part_name(x_name)))
    warnings = [
        f"{csv}: {count} row(s) of provider {was!r} imported as {now!r} (one name per "
        f"implementation: Triton's is {LIGER!r}, as in all_benchmark_data.csv)"
        for (csv, was, now), count in sorted(renamed.items())
    ]
    specs, collisions = separate_collisions(converted)
    warnings += collisions
    unknown = sorted({s.gpu.name for s in specs if not gpu_is_known(s.gpu)})
    warnings += [f"unknown GPU {name!r}: architecture recorded as 'unknown'" for name in unknown]
    return ImportResult(
        documents=tuple(build_document(s) for s in specs),
        rows_read=read,
        skipped=tuple(skipped),
        warnings=tuple(terminal(w) for w in warnings),
        sources=tuple(sources),
    )


#: The largest CSV read, in bytes (Liger's largest is 0.65 MB).
MAX_CSV_BYTES = 256 * 1024 * 1024


def decode_csv(data: bytes) -> str:
    """A CSV's bytes as text: UTF-8, a BOM dropped; :class:`UnicodeDecodeError` otherwise.
    The one decoding of a file read from disk and of a blob read from git (the gate's
    ``--head``), so both refuse the same bytes."""
    return data.decode("utf-8-sig")


def _refuse(path: Path, why: str, hint: str) -> InputError:
    return InputError(f"{terminal(path)}: {why}", hint=hint)


def read_csv_file(path: Path) -> str:
    """The text of one CSV file: a regular file, opened without following a link
    (``O_NOFOLLOW``: a link is refused and named, never read) and without blocking on a
    FIFO, at most :data:`MAX_CSV_BYTES`, UTF-8 (a BOM dropped).  Errors never quote
    the file."""
    hint = "pass Liger CSVs, e.g. benchmark/data/*.csv"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _refuse(path, "no such file", hint) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(
                path, "a symbolic link: not followed", "pass the file it points to, if you trust it"
            ) from None
        raise _refuse(path, f"cannot read: {exc.strerror}", hint) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, "not a regular file: not read", hint)
        data = handle.read(MAX_CSV_BYTES + 1)
    if len(data) > MAX_CSV_BYTES:
        raise _refuse(path, f"larger than {MAX_CSV_BYTES >> 20} MiB: not read", hint)
    try:
        return decode_csv(data)
    except UnicodeDecodeError as exc:
        raise _refuse(
            path, f"not UTF-8 (byte {exc.start:,})", "pass UTF-8 CSV files written by Liger"
        ) from None


def csv_rows(paths: Sequence[Path]) -> Iterator[Row | Skipped]:
    """Every record of the given CSV files, file by file."""
    for path in paths:
        yield from read_rows(read_csv_file(path), str(path), csv_name=path.name)


def import_csvs(paths: Sequence[Path]) -> ImportResult:
    """Every row of the given CSV files -> documents (or skipped, with a reason)."""
    return convert_rows(csv_rows(paths), sources=[str(p) for p in paths])
