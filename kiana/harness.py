"""Harness profiles: which harness produced a document, its version and each provider's role.

kiana's core speaks of a run's ``version`` and a provider's ``role``
(:data:`kiana.vocabulary.Role`: ``subject``, the code under test, or ``baseline``).
A :class:`Harness` profile says where a harness's documents keep them (field paths of
``../shared/FORMAT.md``):

* which documents are its own: ``run.spec.sourceNative.source`` is one of
  :attr:`Harness.sources`;
* the version: the ``run.metadata.labels`` key :attr:`Harness.version_label`;
* the role: ``subject`` when the document's ``run.metadata.labels`` entry
  :attr:`Harness.role_label` says so (``subject`` or ``baseline``; no other value is
  read), else ``subject`` when the provider (the third segment of
  ``run.spec.sourceNative.externalId``) is one of :attr:`Harness.subject_providers` or
  starts with one of :attr:`Harness.subject_prefixes`, else ``baseline``.

:data:`LIGER` (source ``liger-kernel-bench``, label ``liger_version``, providers
``liger`` and ``liger_*`` under test) is the default: a document naming no source is
Liger's, as every document was before profiles.  A document whose source no profile
claims is read by the **plain profile** (:func:`plain`): version in
``run.metadata.labels.version``, a provider under test when its document says
``run.metadata.labels.role: subject``, a baseline otherwise; its runs' harness is the
source itself.  A run without its profile's version label is rejected with a reason
that names the label and the known sources (a Liger document with a misspelt source
finds out that way).

The loader computes ``harness``, ``version`` and ``role`` with its checks
(:func:`harness_sql`, :func:`version_sql`, :func:`role_sql`, used by
:mod:`kiana.load.columns`); everything downstream reads those columns and never looks
at a provider's name.  A third harness with its own conventions is one more entry of
:data:`PROFILES`.

>>> LIGER.role("liger_triton"), LIGER.role("torch")
('subject', 'baseline')
>>> profile("tritonbench").version_label, profile("tritonbench").role("triton", {"role": "subject"})
('version', 'subject')
>>> profile(None) is LIGER
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kiana.vocabulary import ROLES, Role


@dataclass(frozen=True)
class Harness:
    """One harness's conventions (see the module docstring)."""

    #: The ``harness`` column of its runs: the first of :attr:`sources`.
    name: str
    #: How texts name it ("Liger"): "did a Liger kernel get slower?".
    display: str
    #: The ``run.spec.sourceNative.source`` values it claims.
    sources: tuple[str, ...]
    #: The ``run.metadata.labels`` key holding a run's version.
    version_label: str
    #: Providers under test, by exact name ...
    subject_providers: tuple[str, ...] = ()
    #: ... or by the start of their name.
    subject_prefixes: tuple[str, ...] = ()
    #: A ``run.metadata.labels`` key whose value (``subject`` | ``baseline``) is the role.
    role_label: str | None = None

    def __post_init__(self) -> None:
        if not self.sources or self.sources[0] != self.name:
            raise ValueError(f"harness {self.name!r}: its name must be its first source")

    def is_subject_provider(self, provider: str) -> bool:
        """Whether ``provider`` is under test by its name alone."""
        return provider in self.subject_providers or provider.startswith(self.subject_prefixes)

    def role(self, provider: str, labels: Mapping[str, object] | None = None) -> Role:
        """The role of a run of ``provider`` whose ``run.metadata.labels`` are ``labels``
        (what :func:`role_sql` computes in the loader)."""
        said = (labels or {}).get(self.role_label) if self.role_label else None
        if said in ROLES:
            return "subject" if said == "subject" else "baseline"
        return "subject" if self.is_subject_provider(provider) else "baseline"


#: Liger-Kernel's benchmark scripts (``../shared/FORMAT.md``): the default profile.
LIGER = Harness(
    name="liger-kernel-bench",
    display="Liger",
    sources=("liger-kernel-bench",),
    version_label="liger_version",
    subject_providers=("liger",),
    subject_prefixes=("liger_",),
)

#: Every profile that claims sources; the first is the default (a document without
#: ``run.spec.sourceNative.source``).
PROFILES: tuple[Harness, ...] = (LIGER,)
DEFAULT = PROFILES[0]

#: The plain profile's labels: ``run.metadata.labels.version`` and ``.role``.
PLAIN_VERSION_LABEL = "version"
PLAIN_ROLE_LABEL = "role"


def plain(source: str) -> Harness:
    """The plain profile of a source no profile claims (see the module docstring)."""
    return Harness(
        name=source,
        display=source,
        sources=(source,),
        version_label=PLAIN_VERSION_LABEL,
        role_label=PLAIN_ROLE_LABEL,
    )


_CLAIMED = {source: harness for harness in PROFILES for source in harness.sources}


def profile(source: str | None) -> Harness:
    """The profile of a document whose ``run.spec.sourceNative.source`` is ``source``
    (also of a run whose ``harness`` column is ``source``)."""
    if source is None or not source.strip():
        return DEFAULT
    return _CLAIMED.get(source) or plain(source)


def display_name(harnesses: Iterable[str | None]) -> str | None:
    """The display name of the one harness of some data ("Liger"), None when the data
    holds several (or none): texts then use a neutral word."""
    names = {profile(h).name for h in harnesses}
    return profile(names.pop()).display if len(names) == 1 else None


def known_sources() -> str:
    """The sources the profiles claim and the label each reads its version from, for
    messages: ``liger-kernel-bench (labels.liger_version)``."""
    return ", ".join(f"{s} (labels.{h.version_label})" for h in PROFILES for s in h.sources)


# --------------------------------------------------------------------------- SQL


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in(column: str, values: Iterable[str]) -> str:
    return " OR ".join(f"{column} = {_quoted(v)}" for v in values) or "false"


def harness_sql(source: str) -> str:
    """The ``harness`` of a run from the text of its ``sourceNative.source``
    (:func:`profile`'s name) as a DuckDB expression."""
    claims = " ".join(f"WHEN {_in(source, h.sources)} THEN {_quoted(h.name)}" for h in PROFILES[1:])
    return (
        f"CASE WHEN {source} IS NULL OR trim({source}) = '' OR {_in(source, DEFAULT.sources)} "
        f"THEN {_quoted(DEFAULT.name)} {claims} ELSE {source} END"
    )


def per_profile_sql(harness: str, values: Mapping[str, str], plain_value: str) -> str:
    """``values[h.name]`` for the runs of each claiming profile ``h``, else ``plain_value``."""
    whens = " ".join(f"WHEN {_quoted(name)} THEN {value}" for name, value in values.items())
    return f"CASE {harness} {whens} ELSE {plain_value} END"


def version_label_sql(harness: str) -> str:
    """The key of the version label of the runs of ``harness`` (an SQL expression)."""
    keys = {h.name: _quoted(h.version_label) for h in PROFILES}
    return per_profile_sql(harness, keys, _quoted(PLAIN_VERSION_LABEL))


def version_sql(harness: str, labels: str) -> str:
    """The raw JSON leaf of a run's version (``labels``: its raw
    ``run.metadata.labels``), by its profile (constant JSON paths)."""
    leaves = {h.name: f"{labels}->{_quoted('$.' + h.version_label)}" for h in PROFILES}
    return per_profile_sql(harness, leaves, f"{labels}->{_quoted('$.' + PLAIN_VERSION_LABEL)}")


def role_key_sql(harness: str) -> str:
    """The key of the role label of the runs of ``harness`` (NULL: its profile reads none)."""
    keys = {h.name: _quoted(h.role_label) if h.role_label else "NULL" for h in PROFILES}
    return per_profile_sql(harness, keys, _quoted(PLAIN_ROLE_LABEL))


def missing_version(harness: Harness) -> str:
    """Why a run of ``harness`` without its version label is rejected."""
    return (
        f"$.run.metadata.labels.{harness.version_label} is missing or not a string: "
        f"every run needs its {harness.display} release"
    )


def missing_version_sql(harness: str) -> str:
    """:func:`missing_version` of a run's harness, as an SQL expression; for the plain
    profile, a reason naming the run's source and the sources that have a profile."""
    reasons = {h.name: _quoted(missing_version(h)) for h in PROFILES}
    unknown = (
        f"'$.run.metadata.labels.{PLAIN_VERSION_LABEL} is missing or not a string: no profile "
        "claims the source ' || {harness}[:60] || ' (run.spec.sourceNative.source), so the "
        f"plain profile reads its version there (sources with a profile: {known_sources()})'"
    )
    return per_profile_sql(harness, reasons, unknown.replace("{harness}", harness))


def role_label_sql(harness: str, labels: str) -> str:
    """The raw JSON leaf of a run's role label, NULL where its profile reads none."""
    leaves = {
        h.name: f"{labels}->{_quoted('$.' + h.role_label)}" if h.role_label else "NULL"
        for h in PROFILES
    }
    return per_profile_sql(harness, leaves, f"{labels}->{_quoted('$.' + PLAIN_ROLE_LABEL)}")


def role_sql(harness: str, provider: str, said: str) -> str:
    """A run's ``role`` (``said``: the text of its role label, :func:`role_label_sql`),
    in SQL that DuckDB and Spark read alike (the Spark runner reads an old lake's runs
    with it)."""
    by_name = " ".join(
        f"WHEN {harness} = {_quoted(h.name)} AND ({_names(provider, h)}) THEN 'subject'"
        for h in PROFILES
        if h.subject_providers or h.subject_prefixes
    )
    return f"CASE WHEN {said} IN ({', '.join(map(_quoted, ROLES))}) THEN {said} {by_name} ELSE 'baseline' END"


def _names(provider: str, harness: Harness) -> str:
    exact = [f"{provider} = {_quoted(p)}" for p in harness.subject_providers]
    prefix = [  # substr, not DuckDB's starts_with: Spark SQL has no starts_with
        f"substr({provider}, 1, {len(p)}) = {_quoted(p)}" for p in harness.subject_prefixes
    ]
    return " OR ".join(exact + prefix)
