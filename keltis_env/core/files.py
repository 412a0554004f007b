"""Every file the project writes whole: its path checked before any work, then written atomically
(standard library only).

A command checks every path it will write (:func:`check_output_file`,
:func:`check_output_dir`) before it plays, trains or draws anything, so that a path that
cannot be written costs nothing and ends in one clear message instead of a traceback at
the end of a long run. Missing folders are created, as ``mkdir -p`` would, where they can
be (the check refuses a path with a file in the way or a folder that is not writable).

Files are then written to a temporary file in the same folder, flushed to disk and moved
into place with :func:`os.replace` (:func:`atomic_write_bytes`, :func:`atomic_write_text`,
and :func:`atomic_path` for writers that want a path of their own, such as a zip or
``numpy.savez``): an interrupted or failed write leaves either the old file or the new one,
never half a file, and no temporary file behind. A symbolic link is written through, to
its target; a path that names something other than a regular file (``/dev/null``, a
pipe) is written directly, never replaced. The new file keeps the permissions of the one
it replaces.

Append-only logs (TensorBoard events, progress CSVs that grow row by row) are the one
exception: they are appended to in place.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import KeltisError


class OutputPathError(KeltisError):
    """An output path that cannot be written; the message names it and why."""


def check_output_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` when a file can be written there, else
    :class:`OutputPathError` naming ``what`` (e.g. ``"the game record"``), the path and
    the reason. A missing folder is fine when it can be created (the writers create it,
    as ``mkdir -p`` would); checking creates and changes nothing."""
    out = Path(path)
    if str(path) == "":
        raise OutputPathError(f"cannot write {what}: the path is empty")
    if out.is_dir():
        raise OutputPathError(f"cannot write {what} to {out}: it is a folder; give a file name")
    _check_folder(_target(out).parent, f"cannot write {what} to {out}")
    return out


def _check_folder(folder: Path, failure: str) -> None:
    """``folder`` exists and is writable, or can be created: its nearest existing
    ancestor is a writable folder."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{failure}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"{failure}: the folder {existing} is not writable")


def check_output_dir(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` of a writable folder, created (with its
    parents) when missing, else :class:`OutputPathError` naming ``what``, the path and the
    reason."""
    out = Path(path)
    if str(path) == "":
        raise OutputPathError(f"cannot write {what}: the path is empty")
    if out.exists() and not out.is_dir():
        raise OutputPathError(f"cannot create {what} {out}: a file of that name exists")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot create {what} {out}: {exc.strerror or exc}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write {what} into {out}: the folder is not writable")
    return out


def _target(path: Path) -> Path:
    """The file a write to ``path`` lands in: a symbolic link's target, else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _is_special(path: Path) -> bool:
    """``path`` exists and is not a regular file (a device, a pipe, a socket)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _new_file_mode(path: Path) -> int:
    """The permissions the written file gets: those of the file it replaces, else what a
    plain ``open(path, "w")`` would give (0o666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path in ``path``'s folder (same suffix, so writers that add one, such as
    ``numpy.savez`` or a ``.zip`` saver, keep it) for the caller to write; when the block
    ends without an error the file is flushed to disk and moved onto ``path``; on any
    error, Ctrl-C included, it is removed and ``path`` is as it was. The folder is created
    if needed. A special file (``/dev/null``) is not replaced: the finished temporary file
    is copied into it."""
    out = _target(Path(path))
    special = _is_special(out)
    if not special:
        out.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(out)
    folder = tempfile.gettempdir() if special else out.parent
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{out.name}.", suffix=f".tmp{out.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if special:
            with open(tmp, "rb") as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            tmp.unlink()
            return
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """:func:`atomic_write_bytes` for text."""
    atomic_write_bytes(path, text.encode(encoding))


__all__ = [
    "OutputPathError",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_dir",
    "check_output_file",
]
