"""How much a load reads and holds at once: :class:`LoadLimits`.

A load holds a few batches at a time (one being read, one checked, one stored), so its
memory is bounded by the batch size, not by the input's.  The defaults are the sizes
measured best on a 2-core machine (``bench/README.md``); tests pass smaller ones to cut a
handful of documents into many batches, lines and blocks::

    >>> from kiana.load.limits import LoadLimits
    >>> LoadLimits(batch_records=2).batch_records
    2
    >>> LoadLimits(batch_records=0)
    Traceback (most recent call last):
    ...
    kiana.errors.UsageError: LoadLimits.batch_records must be a positive integer (got 0)
    Hint: give a whole number of records, bytes or rows above zero
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kiana.errors import UsageError
from kiana.load.validate import MAX_DOCUMENT_BYTES

__all__ = ["DEFAULT_LIMITS", "LoadLimits"]


@dataclass(frozen=True)
class LoadLimits:
    """The sizes a load works in (every one a positive integer).

    * ``batch_records``, ``batch_bytes``: a batch ends at this many records or bytes of
      text, whichever comes first;
    * ``first_batch_records``: the first batch of a run of Python-read files, and of each
      file DuckDB reads, is smaller, so the checks and the storing start sooner (100k
      JSONL: ~2%);
    * ``block_bytes``: JSONL files are read (and pre-checked) in blocks of about this
      size, cut at the last newline;
    * ``max_line_bytes``: a JSONL line over it is rejected by the readers without being
      held in memory (the format's limit for one document,
      :data:`~kiana.load.validate.MAX_DOCUMENT_BYTES`, which the checks apply to every
      document, however it was read);
    * ``max_json_file_bytes``: a whole ``.json`` file over it is rejected (large corpora
      should be JSONL, which streams);
    * ``chunk_rows``: rows per Arrow record batch fetched from DuckDB's JSONL reader.
    """

    batch_records: int = 32_000
    first_batch_records: int = 4_096
    batch_bytes: int = 48 << 20
    block_bytes: int = 4 << 20
    max_line_bytes: int = MAX_DOCUMENT_BYTES
    max_json_file_bytes: int = 512 << 20
    chunk_rows: int = 4_096

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UsageError(
                    f"LoadLimits.{field.name} must be a positive integer (got {value!r})",
                    hint="give a whole number of records, bytes or rows above zero",
                )

    @property
    def first_batch(self) -> int:
        """The records of a first batch: ``first_batch_records``, at most a whole batch."""
        return min(self.first_batch_records, self.batch_records)


#: The limits of a load that names none.
DEFAULT_LIMITS = LoadLimits()
