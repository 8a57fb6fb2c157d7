"""Case generators shared by the reliability tests, and the script that counts them.

The tests (``tests/load/test_fuzz.py``, ``tests/load/test_faults.py``, ``tests/load/test_scale_limits.py``,
``tests/report/test_hostile.py``, ``tests/stats/test_robustness.py``) draw their cases from here;
``python -m tests.reliability`` runs the same generators at a larger size and rewrites
the figures table of ``tests/RELIABILITY.md`` (cases tried per category, documents
lost, crashes, kills survived).

A *case* is one input file: its bytes, its suffix, the names of the valid documents
in it (which must load) and of the documents that must be rejected.  Documents are
told apart by ``run.metadata.name``: valid ones are ``valid-<n>``, mutated ones
``mut-<n>``, so a mutated document can never be mistaken for a valid one.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kiana.export import TABLES as EXPORTED_TABLES
from tests.conftest import run_kiana

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "data" / "seeds" / "layer_norm-backward-huggingface-h100.json"
REPORT = Path(__file__).resolve().parent / "RELIABILITY.md"

T = TypeVar("T")
Doc = dict[str, Any]


class Chooser(Protocol):
    """What the generators need from a source of randomness: ``random.Random`` has it,
    and so has :class:`Drawn` (hypothesis)."""

    def choice(self, seq: Sequence[T]) -> T: ...

    def randint(self, a: int, b: int) -> int: ...


class Drawn:
    """A :class:`Chooser` over hypothesis' ``st.data()``, so that failures shrink."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data = data
        self._st = st

    def choice(self, seq: Sequence[T]) -> T:
        value: T = self._data.draw(self._st.sampled_from(list(seq)))
        return value

    def randint(self, a: int, b: int) -> int:
        value: int = self._data.draw(self._st.integers(a, b))
        return value


# --- documents ---------------------------------------------------------------------


def seed_document() -> Doc:
    doc: Doc = json.loads(SEED.read_text())
    return doc


_BASE_TIME = datetime(2024, 1, 1)


def make_document(
    n: int,
    *,
    prefix: str = "valid",
    kernel: str = "layer_norm",
    provider: str = "liger",
    version: str = "0.5.0",
    workload: str = "hidden4096-rows4096-fp32",
    median: float | None = None,
    spread: float = 0.02,
    alt: bool | None = None,
) -> Doc:
    """One valid document, distinct for each ``n`` (time, median and name differ).

    Mutated documents (``alt``, the default for prefix ``mut``) are of another GPU and
    timed pass, so their protocol and environment digests are their own: a mutated
    environment seen first can never make the valid documents conflict with it."""
    from kiana.documents import Gpu, RunSpec, build_document

    alt = prefix == "mut" if alt is None else alt
    gpu = (
        Gpu("NVIDIA", "A100", "SXM4-80GB", "sm_80", "NVIDIA A100-SXM4-80GB")
        if alt
        else Gpu("NVIDIA", "H100", "80GB HBM3", "sm_90", "NVIDIA H100 80GB HBM3")
    )
    value = median if median is not None else 100_000 + 32 * n
    spec = RunSpec(
        kernel=kernel,
        kernel_title=kernel.replace("_", " ").title(),
        pass_="forward" if alt else "backward",
        provider=provider,
        gpu=gpu,
        workload=workload,
        observed_at=_BASE_TIME + timedelta(seconds=n),
        version=version,
        median=value,
        p20=value * (1 - spread / 2),
        p80=value * (1 + spread / 2),
    )
    doc = build_document(spec)
    doc["run"]["metadata"]["name"] = f"{prefix}-{n}"
    return doc


def paths_of(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path (container or leaf) below the root of a JSON value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from paths_of(child, (*prefix, index))


SEED_PATHS: tuple[tuple[str | int, ...], ...] = tuple(
    p for p in paths_of(seed_document()) if p[:3] != ("run", "metadata", "name")
)

#: Paths the loader requires (as strings where a string is needed): dropping one, or
#: one of its ancestors, must reject the document.
REQUIRED: tuple[tuple[str | int, ...], ...] = (
    ("run", "apiVersion"),
    ("run", "kind"),
    ("run", "spec", "status"),
    ("run", "spec", "observedAt"),
    ("run", "spec", "timing", "latencyNs", "median"),
    ("run", "spec", "sourceNative", "benchmark"),
    ("run", "spec", "sourceNative", "externalId"),
    ("run", "spec", "protocolDigest"),
    ("run", "spec", "workloadDigest"),
    ("run", "spec", "environmentDigest"),
    ("run", "spec", "implementationDigest"),
    ("run", "metadata", "labels", "liger_version"),
    ("protocol", "apiVersion"),
    ("protocol", "spec", "comparability", "family"),
    ("environment", "apiVersion"),
    ("environment", "spec", "hardware", "vendor"),
    ("environment", "spec", "hardware", "product"),
)
REQUIRED_STRINGS = tuple(p for p in REQUIRED if p[-1] != "median")


def _is_prefix(short: tuple[str | int, ...], long: tuple[str | int, ...]) -> bool:
    return long[: len(short)] == short


class Raw:
    """JSON text written as it is (deep nesting, which would overflow a recursive encoder)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _deep(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "1" + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


#: Values a field is retyped to.  ``nan``/``inf`` are written as JSON's NaN/Infinity.
RETYPES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    "-5",
    [],
    {},
    [1, "a", None],
    {"metric": "latency"},
    10**30,
    -(10**30),
    2**63,
    2**64,
    1e308,
    -1e308,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
    "\u202e\x00\ud7ff",
)
#: Key names added to objects (labels, metrics, ...): quotes, JSON-path syntax, empty.
KEYS: tuple[str, ...] = ('a"b', "", "$.*", "a\\b", "\u202e", "'", "a.b", "[0]", '$."x"', "\x00")
NUMBERS: tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    float("-inf"),
    0,
    -1,
    -1e308,
    1e308,
    10**30,
    2**63,
    2**63 - 1,
    9 * 10**18,
    0.5,
    5e-324,
)


def _parent(doc: Any, path: tuple[str | int, ...]) -> Any:
    node = doc
    for key in path[:-1]:
        node = node[key]
    return node


def get(doc: Any, path: tuple[str | int, ...]) -> Any:
    node = doc
    for key in path:
        node = node[key]
    return node


class Dup:
    """A JSON object written with one key twice (first the original, then ``second``)."""

    def __init__(self, items: dict[str, Any], key: str, second: Any) -> None:
        self.items = items
        self.key = key
        self.second = second


def encode(value: Any) -> str:
    """``json.dumps`` that also writes :class:`Dup` objects (and NaN/Infinity)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Dup):
        parts = [f"{json.dumps(k)}:{encode(v)}" for k, v in value.items.items()]
        parts.append(f"{json.dumps(value.key)}:{encode(value.second)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)


@dataclass
class Mutated:
    """One mutated document: its JSON text and whether the loader must reject it."""

    category: str
    label: str
    text: str
    name: str
    must_reject: bool


def mutate(n: int, rng: Chooser) -> Mutated:
    """A document ``mut-<n>`` with one field dropped, retyped, duplicated, made
    non-finite, huge or deeply nested."""
    doc = make_document(n, prefix="mut")
    kind = rng.choice(("drop", "retype", "duplicate", "number", "deep", "key"))
    name = f"mut-{n}"
    if kind == "key":
        objects = [p for p in SEED_PATHS if isinstance(get(doc, p), dict)]
        path = rng.choice(objects)
        key = rng.choice(KEYS)
        get(doc, path)[key] = rng.choice(RETYPES)
        return Mutated("odd keys", f"{path}[{key!r}]", encode(doc), name, must_reject=False)
    if kind == "number":
        numeric = [p for p in SEED_PATHS if isinstance(get(doc, p), int | float)]
        path = rng.choice(numeric)
        value = rng.choice(NUMBERS)
        _parent(doc, path)[path[-1]] = value
        # the median moves out of [p20, p80] (or is not a positive finite integer)
        median = path == ("run", "spec", "timing", "latencyNs", "median")
        return Mutated(
            "huge, negative and non-finite numbers", f"{path}={value!r}", encode(doc), name, median
        )
    path = rng.choice(SEED_PATHS)
    if kind == "drop":
        parent = _parent(doc, path)
        del parent[path[-1]]
        must = any(_is_prefix(path, r) for r in REQUIRED) and not isinstance(path[-1], int)
        return Mutated("drop a field", f"drop {path}", encode(doc), name, must)
    if kind == "retype":
        value = rng.choice(RETYPES)
        _parent(doc, path)[path[-1]] = value
        must = (path in REQUIRED_STRINGS and not isinstance(value, str)) or (
            any(_is_prefix(path, r) and path != r for r in REQUIRED) and not isinstance(value, dict)
        )
        return Mutated("retype a field", f"{path}={value!r}", encode(doc), name, must)
    if kind == "deep":
        depth = rng.choice((64, 1000, 5000))
        _parent(doc, path)[path[-1]] = _deep(depth, rng.choice(("list", "dict")))
        must = any(_is_prefix(path, r) for r in REQUIRED)
        return Mutated("deep nesting", f"{path} nested {depth}", encode(doc), name, must)
    # duplicate: a key of an object written twice, the second time with another value
    objects = [p for p in SEED_PATHS if isinstance(_parent(doc, p), dict)]
    path = rng.choice(objects)
    parent_path = path[:-1]
    parent = get(doc, parent_path)
    second = rng.choice(RETYPES)
    dup = Dup(parent, str(path[-1]), second)
    if parent_path:
        _parent(doc, parent_path)[parent_path[-1]] = dup
        text = encode(doc)
    else:
        text = encode(dup)
    return Mutated("duplicate a field", f"duplicate {path}", text, name, must_reject=False)


# --- files -------------------------------------------------------------------------


@dataclass
class Case:
    """One input file and what the loader must make of it."""

    category: str
    suffix: str
    data: bytes
    valid: list[str] = field(default_factory=list)
    doomed: list[str] = field(default_factory=list)
    min_rejects: int = 0


GARBAGE: tuple[str, ...] = ("1", '"x"', "null", "[]", "[1,2]", "true", '{"run": 1}', "{}")


def make_case(counter: Iterator[int], rng: Chooser) -> Case:
    """One file of a random layout holding valid and mutated documents."""
    layout = rng.choice(
        (
            "json",
            "json-array",
            "jsonl",
            "truncated",
            "invalid-utf8",
            "bom",
            "crlf",
            "empty",
            "jsonl-bad-middle",
            "garbage-array",
        )
    )
    gz = rng.choice((False, False, False, True))
    valid: list[Doc] = []
    mutated: list[Mutated] = []
    for _ in range(rng.randint(0, 3)):
        valid.append(make_document(next(counter)))
    for _ in range(rng.randint(0, 3)):
        mutated.append(mutate(next(counter), rng))
    texts = [json.dumps(d) for d in valid] + [m.text for m in mutated]
    names = [d["run"]["metadata"]["name"] for d in valid]
    doomed = [m.name for m in mutated if m.must_reject]
    suffix = ".jsonl"
    min_rejects = len(doomed)
    if layout == "json":
        if mutated:
            one = mutated[0]
            case = Case(one.category, ".json", one.text.encode(), [], [one.name] * one.must_reject)
            case.min_rejects = int(one.must_reject)
        elif valid:
            case = Case("valid document", ".json", texts[0].encode(), names[:1])
        else:
            case = Case("empty file", ".json", b"", min_rejects=1)
        return _gz(case) if gz else case
    if layout == "json-array":
        order = list(range(len(texts)))
        body = "[" + ",".join(texts[i] for i in order) + "]"
        case = Case("array of documents", ".json", body.encode(), names, doomed, min_rejects)
        if not texts:
            case.category, case.min_rejects = "empty array", 1
    elif layout == "garbage-array":
        junk = [rng.choice(GARBAGE) for _ in range(rng.randint(1, 3))]
        body = "[" + ",".join([*texts, *junk]) + "]"
        case = Case("array mixing documents and garbage", ".json", body.encode(), names, doomed)
        case.min_rejects = min_rejects + len(junk)
    elif layout == "truncated":
        doc = make_document(next(counter), prefix="mut")
        whole = json.dumps(doc).encode()
        cut = rng.randint(0, len(whole) - 1)
        lines = [*texts, whole[:cut].decode("utf-8", "ignore")]
        body = "".join(line + "\n" for line in lines)
        case = Case("truncated document", suffix, body.encode(), names, doomed)
        case.min_rejects = min_rejects + (1 if cut else 0)
        if not texts and not whole[:cut].strip():
            case.min_rejects = 1  # an empty file
    elif layout == "invalid-utf8":
        doc = make_document(next(counter), prefix="mut")
        whole = json.dumps(doc).encode()
        at = rng.randint(0, len(whole))
        bad = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c"))
        lines = [t.encode() for t in texts] + [whole[:at] + bad + whole[at:]]
        case = Case("invalid UTF-8", suffix, b"\n".join(lines) + b"\n", names, doomed)
        case.doomed.append(doc["run"]["metadata"]["name"])
        case.min_rejects = min_rejects + 1
    elif layout in ("bom", "crlf"):
        end = "\r\n" if layout == "crlf" else "\n"
        body = "".join(t + end for t in texts)
        data = (b"\xef\xbb\xbf" if layout == "bom" else b"") + body.encode()
        case = Case(f"{layout.upper()} in JSONL", suffix, data, names, doomed, min_rejects)
        if not texts:
            case.min_rejects = 1
        elif layout == "bom" and rng.choice((False, True)) and len(valid) == 1 and not mutated:
            case = Case("BOM in a .json file", ".json", b"\xef\xbb\xbf" + texts[0].encode(), names)
    elif layout == "empty":
        data = rng.choice((b"", b"\n", b"  \r\n\t", b"[]", b"[ ]"))
        suffix = ".json" if data.strip().startswith(b"[") else rng.choice((".json", ".jsonl"))
        case = Case("empty file or array", suffix, data, min_rejects=1)
    elif layout == "jsonl-bad-middle":
        first = make_document(next(counter))
        last = make_document(next(counter))
        bad = rng.choice(("{bad", "[1,", "NaN", '{"run": }', "\x00", "}{"))
        body = "\n".join([json.dumps(first), *texts, bad, json.dumps(last)]) + "\n"
        case = Case("JSONL with a bad line in the middle", suffix, body.encode())
        case.valid = [first["run"]["metadata"]["name"], *names, last["run"]["metadata"]["name"]]
        case.doomed, case.min_rejects = doomed, min_rejects + 1
    else:  # plain jsonl
        body = "".join(t + "\n" for t in texts)
        case = Case("JSONL of documents", suffix, body.encode(), names, doomed, min_rejects)
        if not texts:
            case.min_rejects = 1
    return _gz(case) if gz else case


def _gz(case: Case) -> Case:
    case.data = gzip.compress(case.data, mtime=0)
    case.suffix += ".gz"
    case.category += " (gzip)"
    return case


def write_cases(directory: Path, cases: Sequence[Case]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, case in enumerate(cases):
        path = directory / f"case{i:04d}{case.suffix}"
        path.write_bytes(case.data)
        paths.append(path)
    return paths


@dataclass
class Checked:
    """What one load of a batch of cases showed."""

    read: int = 0
    lost: list[str] = field(default_factory=list)  # valid documents not loaded
    wrongly_loaded: list[str] = field(default_factory=list)  # must-reject documents loaded
    problems: list[str] = field(default_factory=list)  # broken invariants


def check_load(con: Any, paths: Sequence[Path], cases: Sequence[Case]) -> Checked:
    """Load ``paths`` and check every invariant of the loader against ``cases``."""
    import kiana.load

    (runs_before,) = con.execute("SELECT count(*) FROM runs").fetchone()
    summary = kiana.load.load(con, paths)
    out = Checked(read=summary.read)
    if summary.read != summary.loaded + summary.already_present + summary.rejected:
        out.problems.append(f"read != loaded + already_present + rejected: {summary}")
    rejects = con.execute(
        "SELECT source, json_path, reason FROM rejects WHERE load_id = ?", [summary.load_id]
    ).fetchall()
    if len(rejects) != summary.rejected:
        out.problems.append(f"{len(rejects)} reject rows for {summary.rejected} rejected")
    names = {str(p) for p in paths}
    for source, _path, reason in rejects:
        if not any(source == n or source.startswith((n + ":", n + "[")) for n in names):
            out.problems.append(f"reject source {source!r} names no input file")
        if not reason or not reason.strip():
            out.problems.append(f"reject of {source} gives no reason")
    minimum = sum(c.min_rejects for c in cases)
    if summary.rejected < minimum:
        out.problems.append(f"{summary.rejected} rejected, expected at least {minimum}")
    (runs_total,) = con.execute("SELECT count(*) FROM runs").fetchone()
    (loaded_here,) = con.execute(
        "SELECT count(*) FROM runs WHERE load_id = ?", [summary.load_id]
    ).fetchone()
    if loaded_here != summary.loaded:
        out.problems.append(f"{loaded_here} runs rows for {summary.loaded} loaded")
    if runs_total != runs_before + summary.loaded:
        out.problems.append(f"{runs_before} runs + {summary.loaded} loaded = {runs_total} runs")
    stored = {row[0] for row in con.execute("SELECT name FROM runs").fetchall()}
    for case in cases:
        out.lost.extend(n for n in case.valid if n not in stored)
        out.wrongly_loaded.extend(n for n in case.doomed if n in stored)
    return out


def fuzz_batch(directory: Path, rng: Chooser, counter: Iterator[int]) -> tuple[list[Case], Checked]:
    """One random batch of files, loaded into a fresh in-memory database."""
    import kiana.load

    cases = [make_case(counter, rng) for _ in range(rng.randint(1, 6))]
    paths = write_cases(directory, cases)
    con = kiana.load.connect(None)
    try:
        return cases, check_load(con, paths, cases)
    finally:
        con.close()


ALL_KINDS = ("drop", "retype", "duplicate", "key", "number", "deep")


def sweep_cases(counter: Iterator[int], kinds: Sequence[str] = ALL_KINDS) -> list[Case]:
    """Every mutation of every path of the seed, deterministically: one JSONL file per
    category, each with a valid document before and after every mutated line."""
    by_category: dict[str, Case] = {}

    def add(m: Mutated) -> None:
        case = by_category.setdefault(m.category, Case(m.category, ".jsonl", b""))
        before, after = make_document(next(counter)), make_document(next(counter))
        case.data += (json.dumps(before) + "\n" + m.text + "\n" + json.dumps(after) + "\n").encode()
        case.valid += [before["run"]["metadata"]["name"], after["run"]["metadata"]["name"]]
        if m.must_reject:
            case.doomed.append(m.name)
            case.min_rejects += 1

    class Fixed:
        """A chooser that always picks the given values, in order."""

        def __init__(self, *values: Any) -> None:
            self.values = list(values)

        def choice(self, seq: Sequence[T]) -> T:
            value: T = self.values.pop(0)
            return value

        def randint(self, a: int, b: int) -> int:
            value: int = self.values.pop(0)
            return value

    doc = make_document(0)
    for path in SEED_PATHS:
        if "drop" in kinds:
            add(mutate(next(counter), Fixed("drop", path)))
        for value in RETYPES if "retype" in kinds else ():
            add(mutate(next(counter), Fixed("retype", path, value)))
        if "duplicate" in kinds and isinstance(_parent(doc, path), dict):
            for value in RETYPES[:6]:
                add(mutate(next(counter), Fixed("duplicate", path, path, value)))
        if "key" in kinds and isinstance(get(doc, path), dict):
            for key in KEYS:
                add(mutate(next(counter), Fixed("key", path, key, "v")))
        if "number" in kinds and isinstance(get(doc, path), int | float):
            for value in NUMBERS:
                add(mutate(next(counter), Fixed("number", path, value)))
    deep_paths = (("run",), ("run", "spec", "measurements"), ("run", "metadata", "labels"))
    for path in deep_paths if "deep" in kinds else ():
        for depth in (64, 1000, 5000):
            for shape in ("list", "dict"):
                add(mutate(next(counter), Fixed("deep", path, depth, shape)))
    return list(by_category.values())


# --- subprocesses ------------------------------------------------------------------

#: What ``CHILD`` prints once ``main`` returned (a SIGINT after it came as Python exited).
RETURNED = "kiana-reliability: main returned"
#: ``kiana load`` with a smaller batch size (argv[1]), so that one load is many batches
#: and a kill can land between any two of them.  Everything else is the real CLI.
CHILD = (
    "import functools, sys; import kiana.load as k; "
    "k.load = functools.partial(k.load, limits=k.LoadLimits(batch_records=int(sys.argv[1]))); "
    "from kiana.cli import main; code = main(['load', *sys.argv[2:]]); "
    f"print({RETURNED!r}, file=sys.stderr, flush=True); sys.exit(code)"
)


def kiana(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return run_kiana(*args, cwd=cwd, timeout=timeout)


def write_corpus(path: Path, count: int, *, start: int = 0) -> Path:
    """``count`` valid documents as one JSONL file (several versions and providers)."""
    with path.open("w") as out:
        for n in range(start, start + count):
            doc = make_document(
                n,
                provider=("liger", "huggingface", "torch")[n % 3],
                version=f"0.{n % 7}.0",
                workload=f"hidden{256 * (1 + n % 5)}-rows4096-fp32",
            )
            out.write(json.dumps(doc) + "\n")
    return path


#: The tables a snapshot compares: every table kiana exports but its metadata.
TABLES = tuple(t for t in EXPORTED_TABLES if t != "kiana_meta")


def snapshot(db: Path) -> dict[str, Any]:
    """What must be equal between two databases holding the same loads: the sorted
    run ids, a digest of every run, and the row count of every table."""
    import kiana.load

    con = kiana.load.connect(db, read_only=True)
    try:
        out: dict[str, Any] = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in TABLES
        }
        out["run_ids"] = [
            r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY 1").fetchall()
        ]
        out["runs_digest"] = con.execute(
            "SELECT md5(string_agg(run_id || partition_id || median::VARCHAR || version, ',' "
            "ORDER BY run_id)) FROM runs"
        ).fetchone()[0]  # type: ignore[index]
        for table in ("measurements", "labels", "protocols", "environments", "warnings"):
            out[table + "_digest"] = con.execute(
                f"SELECT md5(string_agg(x, ',' ORDER BY x)) FROM "
                f"(SELECT concat_ws('|', COLUMNS(* EXCLUDE (load_id))) AS x FROM {table})"
                if table == "warnings"
                else f"SELECT md5(string_agg(x, ',' ORDER BY x)) FROM "
                f"(SELECT concat_ws('|', COLUMNS(*)) AS x FROM {table})"
            ).fetchone()[0]  # type: ignore[index]
        return out
    finally:
        con.close()


@dataclass
class KillResult:
    killed: bool
    runs_after_kill: int
    state: str  # "none" | "whole" | "broken"
    rerun_matches: bool


def load_state(db: Path, before: int, reference: dict[str, Any]) -> tuple[int, str]:
    """The runs ``db`` holds after a load into it was stopped, and what that is: "none"
    of the load (``before``), its "whole" (the ``reference``'s), or "broken"."""
    import kiana.load

    con = kiana.load.connect(db, read_only=True)
    try:
        (count,) = con.execute("SELECT count(*) FROM runs").fetchone()  # type: ignore[misc]
    finally:
        con.close()
    state = {before: "none", reference["runs"]: "whole"}.get(count, "broken")
    return int(count), state


def kill_once(
    db: Path, corpus: Path, reference: dict[str, Any], before: int, delay: float, batch: int
) -> KillResult:
    """Start ``kiana load`` of ``corpus`` into ``db`` (already holding ``before`` runs),
    SIGKILL it after ``delay`` seconds, check the database, load again and compare."""

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(batch), str(corpus), "--db", str(db), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(delay)
    killed = child.poll() is None
    if killed:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    count, state = load_state(db, before, reference)
    rerun = subprocess.run(
        [sys.executable, "-c", CHILD, str(batch), str(corpus), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    after = snapshot(db)
    ok = rerun.returncode == 0 and all(
        after[k] == reference[k] for k in after if k not in ("loads", "rejects")
    )
    # The loads table counts loads: one more if the killed load had committed.
    ok = ok and after["loads"] == reference["loads"] + (1 if state == "whole" else 0)
    return KillResult(killed, int(count), state, ok)


def has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux: /proc/PID/fd)."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if Path(os.readlink(fd)) == path:
                return True
    return False


@dataclass
class InterruptResult:
    landed: bool  # the load was still running when SIGINT was sent
    state: str  # "none" | "whole" | "broken"
    told: bool  # the exit status is 130 and the one line says what the database holds


#: The one line after Ctrl-C, by what the database holds afterwards.
SAID_AFTER_CTRL_C = {
    "none": "kiana load: interrupted: nothing of this load was stored; run it again",
    "whole": "kiana load: interrupted after this load was stored (load ",
}


def interrupt_once(db: Path, corpus: Path, reference: dict[str, Any], before: int, delay: float,
                   batch: int) -> InterruptResult:  # fmt: skip
    """Start ``kiana load`` of ``corpus`` into ``db`` (holding ``before`` runs), send
    SIGINT (Ctrl-C) ``delay`` seconds after it opened ``db``, and check the exit status, the one line and
    the database: none of the load or all of it, and the line says which.  A SIGINT that
    lands after ``main`` returned (``CHILD`` says so) did not land during the load: Python,
    shutting down, exits 0 or is killed by it (-2; 130 to a shell)."""

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(batch), str(corpus), "--db", str(db), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not has_open(child.pid, db.resolve()) and child.poll() is None:
        assert time.monotonic() < deadline, "kiana load never opened its database"
        time.sleep(0.01)
    time.sleep(delay)  # from the moment the command opened --db: it is at work
    landed = child.poll() is None
    if landed:
        child.send_signal(signal.SIGINT)
    _, err = child.communicate()
    returned, err = RETURNED in err, err.replace(RETURNED + "\n", "")
    if returned and child.returncode in (0, -signal.SIGINT):  # it came as Python exited
        landed = False
    _, state = load_state(db, before, reference)
    if not landed:
        told = child.returncode in (0, -signal.SIGINT) and state == "whole" and err == ""
    else:
        told = (
            child.returncode == 130
            and err.count("\n") == 1
            and err.startswith(SAID_AFTER_CTRL_C.get(state, "\0"))
        )
    return InterruptResult(landed, state, told)


# --- the figures table ---------------------------------------------------------------


@dataclass
class Tally:
    cases: int = 0
    lost: int = 0
    crashes: int = 0
    kills: int = 0
    note: str = ""


def _fuzz(tallies: dict[str, Tally], rounds: int, root: Path) -> None:
    counter = iter(range(10**9))
    rng = random.Random(7)
    for i in range(rounds):
        try:
            cases, checked = fuzz_batch(root / f"fuzz{i}", rng, counter)
        except Exception as exc:  # a crash of the loader is what we count here
            tallies.setdefault("fuzz: crash", Tally()).crashes += 1
            print(f"crash in round {i}: {exc!r}", file=sys.stderr)
            continue
        for case in cases:
            tally = tallies.setdefault("fuzz: " + case.category.removesuffix(" (gzip)"), Tally())
            tally.cases += 1
        lost = len(checked.lost) + len(checked.problems) + len(checked.wrongly_loaded)
        tallies.setdefault("fuzz: batch invariants", Tally()).cases += 1
        tallies["fuzz: batch invariants"].lost += lost
    import kiana.load

    cases = sweep_cases(counter)
    paths = write_cases(root / "sweep", cases)
    con = kiana.load.connect(None)
    try:
        checked = check_load(con, paths, cases)
    except Exception:
        tallies.setdefault("sweep: crash", Tally()).crashes += 1
    else:
        for case in cases:
            tally = tallies.setdefault("sweep: " + case.category, Tally())
            tally.cases += case.data.count(b"\n") // 3
        bad = len(checked.lost) + len(checked.problems) + len(checked.wrongly_loaded)
        tallies.setdefault("sweep: batch invariants", Tally(cases=1)).lost += bad
    finally:
        con.close()


def _cli(tallies: dict[str, Tally], rounds: int, root: Path) -> None:
    counter = iter(range(10**8, 10**9))
    rng = random.Random(11)
    tally = tallies.setdefault("CLI: kiana load on fuzzed files (no traceback)", Tally())
    for i in range(rounds):
        cases = [make_case(counter, rng) for _ in range(4)]
        paths = write_cases(root / f"cli{i}", cases)
        out = kiana("load", *map(str, paths), "--db", str(root / f"cli{i}.duckdb"), "--strict")
        tally.cases += 1
        if "Traceback" in out.stderr or out.returncode not in (0, 2):
            tally.crashes += 1


def _fault_setup(root: Path, prefix: str) -> tuple[Path, Path, dict[str, Any], float]:
    """For a fault category: a 1,500-document corpus, a database holding the seeds, the
    snapshot of the seeds and the corpus loaded whole, and the seconds that load took."""
    import shutil

    corpus = write_corpus(root / f"{prefix}corpus.jsonl", 1500)
    reference_db, base = root / f"{prefix}reference.duckdb", root / f"{prefix}base.duckdb"
    kiana("load", str(ROOT / "data" / "seeds"), "--db", str(reference_db), "-q")
    shutil.copy(reference_db, base)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", CHILD, "100", str(corpus), "--db", str(reference_db), "-q"],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    full = time.monotonic() - started
    return corpus, base, snapshot(reference_db), full


def _copies(base: Path, stem: str, count: int) -> Iterator[Path]:
    """``count`` copies of the database ``base`` beside it, one at a time."""
    import shutil

    for i in range(count):
        db = base.parent / f"{stem}{i}.duckdb"
        shutil.copy(base, db)
        yield db


def _kills(tallies: dict[str, Tally], kills: int, root: Path) -> None:
    corpus, base, reference, full = _fault_setup(root, "")
    tally = tallies.setdefault("faults: SIGKILL during kiana load, then rerun", Tally())
    rng = random.Random(3)
    landed = 0
    for db in _copies(base, "kill", kills):
        result = kill_once(db, corpus, reference, 2, rng.uniform(0.2, full * 1.05), 100)
        tally.cases += 1
        landed += result.killed
        tally.kills += result.killed and result.state != "broken" and result.rerun_matches
        tally.lost += result.state == "broken" or not result.rerun_matches
    tally.note = (
        f"1,500 documents in 15 batches; an uninterrupted load takes {full:.1f} s; "
        f"{landed} of {kills} kills landed during the load (the rest after it ended; "
        "those databases were checked too)"
    )


def _interrupts(tallies: dict[str, Tally], count: int, root: Path) -> None:
    corpus, base, reference, full = _fault_setup(root, "ctrl-c-")
    tally = tallies.setdefault("faults: Ctrl-C (SIGINT) during kiana load", Tally())
    rng = random.Random(5)
    landed = stored = 0
    for db in _copies(base, "ctrl-c", count):
        result = interrupt_once(db, corpus, reference, 2, rng.uniform(0, full * 0.6), 100)
        tally.cases += 1
        landed += result.landed
        stored += result.landed and result.state == "whole"
        tally.lost += result.state == "broken"
        tally.crashes += not result.told
    tally.note = (
        f"1,500 documents in 15 batches; {landed} of {count} landed during the load "
        f"({stored} of them after its commit); crashes: an exit status other than 130 or a "
        "line that does not say what the database holds"
    )


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150, help="random fuzz batches")
    parser.add_argument("--cli", type=int, default=10, help="fuzzed batches through the CLI")
    parser.add_argument("--kills", type=int, default=25, help="SIGKILLs of kiana load")
    parser.add_argument("--interrupts", type=int, default=25, help="Ctrl-Cs of kiana load")
    parser.add_argument("--output", type=Path, default=REPORT)
    args = parser.parse_args(argv)
    tallies: dict[str, Tally] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _fuzz(tallies, args.rounds, root)
        _cli(tallies, args.cli, root)
        _kills(tallies, args.kills, root)
        _interrupts(tallies, args.interrupts, root)
        for name, run in EXTRA.items():
            try:
                tallies[name] = run(root)
            except Exception as exc:
                tallies[name] = Tally(cases=1, crashes=1, note=f"{type(exc).__name__}: {exc}")
    write_report(tallies, args.output, time.monotonic() - started)
    print(args.output.read_text())
    bad = sum(t.lost + t.crashes for t in tallies.values())
    return 1 if bad else 0


#: Further categories (faults, scale, report, stats), registered by name; each runs once
#: and returns its tally.  Filled in below, after the helpers they use.
EXTRA: dict[str, Callable[[Path], Tally]] = {}


def _pytest_tally(target: str, note: str) -> Callable[[Path], Tally]:
    """A category measured by running its tests: cases = tests run, crashes = failures."""

    def run(_root: Path) -> Tally:
        import re

        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *target.split()],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        counts = dict(
            (word, int(number)) for number, word in re.findall(r"(\d+) (\w+)", done.stdout)
        )
        passed = counts.get("passed", 0) + counts.get("xfailed", 0)
        failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
        skipped = counts.get("skipped", 0)
        extra = f"; {skipped} skipped" if skipped else ""
        return Tally(cases=passed + failed, crashes=failed, note=note + extra)

    return run


EXTRA.update(
    {
        "faults: two loads on one database, full disk, file size limit": _pytest_tally(
            "tests/load/test_faults.py::test_two_loads_at_once_one_waits_or_fails_clearly "
            "tests/load/test_faults.py::test_full_disk_is_a_clear_error_and_the_database_survives "
            "tests/load/test_faults.py::test_file_size_limit_is_a_clear_error_and_the_database_survives",
            "tests run",
        ),
        "scale: oversized documents, JSONL of 100 and 300 MB": _pytest_tally(
            "tests/load/test_scale_limits.py",
            "tests run; peak RSS flat as the input grows (about 0.9 GiB at 100, 300 and 600 MiB)",
        ),
        "report: hostile strings (HTML + headless Chromium)": _pytest_tally(
            "tests/report/test_hostile.py", "tests run"
        ),
        "stats: degenerate series through judge": _pytest_tally(
            "tests/stats/test_robustness.py", "tests run"
        ),
    }
)


def write_report(tallies: dict[str, Tally], path: Path, seconds: float) -> None:
    total = Tally()
    for t in tallies.values():
        total.cases += t.cases
        total.lost += t.lost
        total.crashes += t.crashes
        total.kills += t.kills
    rows = [
        f"| {name} | {t.cases:,} | {t.lost} | {t.crashes} | {t.kills or ''} | {t.note} |"
        for name, t in sorted(tallies.items())
    ]
    text = f"""# Reliability figures

Regenerated by `.venv/bin/python -m tests.reliability` ({seconds:.0f} s on this machine); the
tests in `tests/load/test_fuzz.py`, `tests/load/test_faults.py`, `tests/load/test_scale_limits.py`,
`tests/report/test_hostile.py` and `tests/stats/test_robustness.py` draw their cases from the same
generators (`tests/reliability.py`) at a smaller size.

*Cases* counts input files (fuzz), mutated documents (sweep: every mutation of every
path of the seed, between two valid documents), loads, kills, reports or judgements.
*Lost* counts valid documents that did not load, documents that had to be rejected but
loaded, and broken invariants (read = loaded + already present + rejected, every
reject names its source and a reason, whole-or-nothing after a kill, identical tables
after a rerun).  *Crashes* counts exceptions that escaped the loader or the judge and
tracebacks printed by the CLI.

| category | cases | lost | crashes | kills survived | note |
| --- | ---: | ---: | ---: | ---: | --- |
{chr(10).join(rows)}
| **total** | **{total.cases:,}** | **{total.lost}** | **{total.crashes}** | **{total.kills}** | |
"""
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
