"""Every file kiana writes, written without following a link.

A pull request controls its checkout: it can make ``reports/`` a link to a folder
outside, or plant a link at the name kiana is about to write (``o/report.html``, a
document's predictable name, a temporary file's fixed name).  Opening such a path
writes through the link into its target.  So every writer of ``kiana/`` goes through
this module:

* the parent folder is opened one component at a time with ``O_NOFOLLOW |
  O_DIRECTORY`` relative to the one before (``openat``), so no component can be a link:
  a linked folder is refused and named (:class:`OutputRefused`, exit 2);
* a link (or a folder) at the file's own name is refused the same way;
* the bytes go to a new, random temporary name beside it, created with ``O_CREAT |
  O_EXCL | O_NOFOLLOW`` relative to that folder's descriptor, and are renamed into
  place (``renameat``): a reader never sees half a file, and a link planted at the name
  after the check is replaced, its target never opened.

POSIX.1-2008 ``openat``/``renameat``; the attack is CWE-59 (link following).  For the
files that DuckDB and Spark write themselves (a database, Parquet parts), where no
descriptor can be handed over, :func:`refuse_links` checks the path beforehand.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_text(folder / "out" / "a.txt", "hello\\n", mkdirs=True)
>>> (folder / "out" / "a.txt").read_text()
'hello\\n'
>>> (folder / "link").symlink_to(folder / "out")
>>> write_text(folder / "link" / "b.txt", "x")
Traceback (most recent call last):
...
kiana.safe.files.OutputRefused: ... is a symbolic link: kiana writes no file through a link
Hint: ...
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal, overload

from kiana.errors import KianaError
from kiana.safe.text import terminal

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_HINT = (
    "write to a path none of whose folders is a symbolic link (a link in a pull request "
    "may point outside the repository); remove the link or pick another path"
)


class OutputRefused(KianaError):
    """An output path that kiana will not write: a link on the way, a folder at the name."""


def _refuse(shown: Path, why: str) -> OutputRefused:
    return OutputRefused(f"{terminal(shown, 300)} {why}", hint=_HINT)


def _linked(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def open_folder(folder: Path, *, mkdirs: bool = False) -> int:
    """A descriptor of ``folder`` opened without following a link in any component
    (created, with ``mkdirs``, where missing).  :class:`OutputRefused` naming the linked
    component; ``OSError`` for any other failure.  The caller closes it."""
    absolute = folder.is_absolute()
    fd = os.open("/" if absolute else ".", _DIR_FLAGS)
    walked = Path(folder.anchor) if absolute else Path()
    try:
        for part in folder.parts[1:] if absolute else folder.parts:
            walked = walked / part
            try:
                step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not mkdirs:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _linked(fd, part):
                    raise _refuse(
                        walked, "is a symbolic link: kiana writes no file through a link"
                    ) from None
                raise
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_links(path: Path, *, below: bool = False) -> None:
    """Refuse ``path`` when a component of it that exists is a link (for the files
    other libraries open themselves: DuckDB's database, Parquet written by DuckDB or
    Spark), and with ``below``, when anything in the folder ``path`` is one."""
    if below and path.is_dir():
        refuse_links(path)
        for folder, names, files in os.walk(path):
            for name in (*names, *files):
                if os.path.islink(os.path.join(folder, name)):
                    raise _refuse(
                        Path(folder) / name,
                        "is a symbolic link: kiana writes no file through a link",
                    )
        return
    walked = Path(path.anchor) if path.is_absolute() else Path()
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        walked = walked / part
        try:
            mode = os.lstat(walked).st_mode
        except OSError:
            return
        if stat.S_ISLNK(mode):
            raise _refuse(walked, "is a symbolic link: kiana writes no file through a link")


@overload
def open_output(
    path: Path, mode: Literal["w"] = "w", *, mkdirs: bool = False
) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def open_output(
    path: Path, mode: Literal["wb"], *, mkdirs: bool = False
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
def open_output(
    path: Path, mode: Literal["w", "wb"] = "w", *, mkdirs: bool = False
) -> contextlib.AbstractContextManager[IO[str]] | contextlib.AbstractContextManager[IO[bytes]]:
    """A file to write ``path`` through (text: UTF-8, ``\\n``), renamed into place when
    the block ends without an exception, removed otherwise (module docstring)."""
    return _output(Path(path), mode, mkdirs)  # type: ignore[return-value]


@contextlib.contextmanager
def _output(path: Path, mode: str, mkdirs: bool) -> Iterator[IO[str] | IO[bytes]]:
    if path.name in ("", ".", ".."):
        raise _refuse(path, "names no file")
    folder = open_folder(path.parent, mkdirs=mkdirs)
    temporary = f".{path.name[:40]}.{secrets.token_hex(8)}.tmp"
    try:
        if _linked(folder, path.name):
            raise _refuse(path, "is a symbolic link: kiana writes no file through a link")
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode):
                raise _refuse(path, "is a folder: give a file name")
        fd = os.open(temporary, _NEW_FLAGS, 0o666, dir_fd=folder)
        try:
            out: IO[str] | IO[bytes] = (
                os.fdopen(fd, "w", encoding="utf-8") if mode == "w" else os.fdopen(fd, "wb")
            )
            with out:
                yield out
            os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def write_output(path: Path, text: str, *, hint: str, mkdirs: bool = False) -> None:
    """:func:`write_text`, and an ``OSError`` (a missing folder, no permission, a full
    disk) as a :class:`OutputRefused` naming ``path`` and ending with ``hint``."""
    try:
        write_text(path, text, mkdirs=mkdirs)
    except OSError as exc:
        raise OutputRefused(
            f"{terminal(path, 300)}: cannot write: {exc.strerror or exc}", hint=hint
        ) from None


def write_bytes(path: Path, data: bytes, *, mkdirs: bool = False) -> None:
    """Write ``data`` to ``path`` (:func:`open_output`)."""
    with open_output(path, "wb", mkdirs=mkdirs) as out:
        out.write(data)


def write_text(path: Path, text: str, *, mkdirs: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` (:func:`open_output`)."""
    with open_output(path, "w", mkdirs=mkdirs) as out:
        out.write(text)


def publish(folder: Path, made: str, name: str) -> None:
    """Rename the file ``made`` that another library wrote in ``folder`` (checked with
    :func:`refuse_links`) to ``name``, without following a link."""
    fd = open_folder(folder)
    try:
        if _linked(fd, name):
            raise _refuse(folder / name, "is a symbolic link: kiana writes no file through a link")
        os.replace(made, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
