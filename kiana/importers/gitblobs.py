"""Blobs by object id through one ``git cat-file --batch`` process (``git show REV:PATH``
would parse the path), whole or streamed: a reader that stops part way leaves the rest in
the pipe, and git is killed and waited for when the reader closes (no zombie, no git
blocked on a full pipe).  Plain ``git``, run as :mod:`kiana.importers.gitread` runs it:
the local object database only, no hooks, no network."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kiana.errors import InputError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class Blobs:
    """Blobs by object id through one ``git cat-file --batch`` process (a context
    manager).  :meth:`read` gives the text (UTF-8, bad bytes replaced, a BOM dropped:
    the trusted history), :meth:`read_bytes` the bytes, :meth:`open` a stream of them;
    each None for an object that is missing, not a blob, or larger than ``limit``."""

    def __init__(self, repo: Path, limit: int) -> None:
        self.limit = limit
        self._unread = 0  #: bytes of the last blob still in the pipe (its newline too)
        self._serial = 0  #: requests made: a stream of an earlier one reads nothing
        try:
            self._process = subprocess.Popen(
                ["git", "-C", str(repo), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise InputError("git is not installed", hint="install git") from None

    def __enter__(self) -> Blobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the process; killed when a stream stopped before its blob's end (git may
        be blocked writing the rest into the pipe), then always waited for."""
        process = self._process
        if self._unread and process.poll() is None:
            process.kill()
        if process.stdin is not None and not process.stdin.closed:
            process.stdin.close()  # flushed after each request: nothing left to write
        if process.stdout is not None:
            process.stdout.close()
        process.wait()

    def read(self, blob: str) -> str | None:
        data = self.read_bytes(blob)
        return None if data is None else data.decode("utf-8", "replace").removeprefix("\ufeff")

    def read_bytes(self, blob: str) -> bytes | None:
        """The blob's bytes as committed (None: missing, not a blob, over the limit)."""
        size = self._request(blob)
        if size is None:
            return None
        stdout = self._process.stdout
        assert stdout is not None
        data = stdout.read(size)
        stdout.read(1)  # the newline after the content
        self._unread = 0
        return data

    def open(self, blob: str) -> io.BufferedReader | None:
        """The blob's bytes as committed, read from the pipe as the caller reads them
        (None: missing, not a blob, over the limit).  The next request first discards
        what the caller left unread; :meth:`close` kills git instead."""
        size = self._request(blob)
        return None if size is None else io.BufferedReader(_BlobReader(self, self._serial))

    def _request(self, blob: str) -> int | None:
        """Ask for ``blob``: its size, its content next in the pipe (None: missing, not a
        blob, or over the limit, then nothing of it is left in the pipe)."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        _discard(process.stdout, self._unread)
        self._unread = 0
        self._serial += 1
        process.stdin.write(blob.encode("ascii", "replace") + b"\n")
        process.stdin.flush()
        header = process.stdout.readline().decode("ascii", "replace").split()
        if len(header) != 3 or header[1] != "blob" or not header[2].isdigit():
            return None
        size = int(header[2])
        if size > self.limit:
            _discard(process.stdout, size + 1)
            return None
        self._unread = size + 1  # the newline after the content
        return size

    def fill(self, serial: int, buffer: memoryview) -> int:
        """Fill ``buffer`` from the blob of request ``serial`` (0 at its end, or when a
        later request made it stale)."""
        stdout = self._process.stdout
        if serial != self._serial or self._unread <= 1 or stdout is None or stdout.closed:
            return 0
        data = stdout.read(min(len(buffer), self._unread - 1))
        if not data:
            self._unread = 0
            return 0
        buffer[: len(data)] = data
        self._unread -= len(data)
        if self._unread == 1:
            _discard(stdout, 1)
            self._unread = 0
        return len(data)


class _BlobReader(io.RawIOBase):
    """One blob of a :class:`Blobs` process, as a raw binary stream."""

    def __init__(self, blobs: Blobs, serial: int) -> None:
        self._blobs = blobs
        self._serial = serial

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        return self._blobs.fill(self._serial, memoryview(buffer).cast("B"))


def _discard(stream: object, size: int) -> None:
    read = getattr(stream, "read")  # noqa: B009 - a binary stream
    while size > 0:
        chunk = read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)


def read_blobs(repo: Path, blobs: Iterable[str], limit: int) -> dict[str, str | None]:
    """The text of each blob (None: missing or larger than ``limit``)."""
    with Blobs(repo, limit) as reader:
        return {blob: reader.read(blob) for blob in dict.fromkeys(blobs)}


def read_blob_bytes(repo: Path, blobs: Iterable[str], limit: int) -> dict[str, bytes | None]:
    """The bytes of each blob (None: missing or larger than ``limit``), for a reader that
    decodes them as it decodes a file (:func:`kiana.importers.liger.decode_csv`)."""
    with Blobs(repo, limit) as reader:
        return {blob: reader.read_bytes(blob) for blob in dict.fromkeys(blobs)}
