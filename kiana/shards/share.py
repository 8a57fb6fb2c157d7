"""DuckDB's memory while shards are read and a stored judgement is updated: the share
it may hold (:func:`duckdb_share`), what a transaction holds beyond it (:func:`held`), and
giving it back after (:func:`release`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb

from kiana.load.database import restore_memory_limit
from kiana.shards.runs import DUCKDB_SHARE, memory_limit

#: DuckDB's memory while the shards' runs are read, after every origin was written
#: (a shard's rows stream out of DuckDB: its filter, the join with its origins).  Not
#: lower: under 128 MiB the 10M scale corpus's largest shard, a GPU of 752k runs, ran
#: out of DuckDB memory while its runs were read (``bench/README.md``, issue 41).
READ_SHARE = 384 << 20


@contextlib.contextmanager
def duckdb_share(con: duckdb.DuckDBPyConnection, share: int = DUCKDB_SHARE) -> Iterator[None]:
    """DuckDB's ``memory_limit`` at most ``share`` while the shards are read (unless
    set lower, e.g. by ``--memory-limit``), restored after.  DuckDB keeps what it
    buffered up to its limit (80% of RAM by default, the database file's blocks too):
    beside the judge of a shard, that would otherwise stay resident."""
    limit = memory_limit(con)
    if limit is not None and limit <= share:
        yield
        return
    (before,) = con.execute("SELECT current_setting('memory_limit')").fetchall()[0]
    con.execute(f"SET memory_limit = '{(share + held(con)) // 2**20}MiB'")
    try:
        yield
    except BaseException:
        # In a transaction the error aborted (an update's), the SET fails too: the
        # error that aborted it is the one to report, not "the transaction is aborted".
        with contextlib.suppress(duckdb.Error):
            restore_memory_limit(con, before)
        raise
    restore_memory_limit(con, before)


def held(con: duckdb.DuckDBPyConnection) -> int:
    """Bytes DuckDB holds beyond the database file's cached blocks: what a transaction
    wrote and has not committed (an update's spliced rows, before it reads the GPUs it
    judges again whole: 0.3-0.5 GiB at 10M runs), which the share comes on top of."""
    (n,) = con.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
        "WHERE tag NOT IN ('BASE_TABLE', 'ALLOCATOR')"
    ).fetchall()[0]
    return int(n)


#: DuckDB's memory, for a moment, once an update is committed (:func:`release`).
RELEASED = 256 << 20


def release(con: duckdb.DuckDBPyConnection, *, checkpoint: bool = True) -> None:
    """Give back what DuckDB holds after an update or a rebuild: the rows it committed
    stay in memory until a checkpoint writes them to the file (0.7 GiB at 10M runs:
    overflow strings, in-memory row groups), and the blocks it cached stay up to its
    limit, which the update's share no longer bounds; the stored judgement is read
    next, in the same process (4.19 GiB peak at 10M runs, 3.51 GiB after this).  The
    checkpoint is what closing the database would do anyway; ``checkpoint=False`` only
    evicts (after reading the stored judgement: 0.38 GiB of cached blocks at 10M).  If
    another transaction prevents it, or DuckDB cannot evict down to :data:`RELEASED`,
    it is left as it is."""
    limit = memory_limit(con)
    if limit is not None and limit <= RELEASED:
        return
    (before,) = con.execute("SELECT current_setting('memory_limit')").fetchall()[0]
    try:
        if checkpoint:
            con.execute("CHECKPOINT")
        con.execute(f"SET memory_limit = '{RELEASED // 2**20}MiB'")
    except duckdb.Error:
        pass
    finally:
        restore_memory_limit(con, before)
