"""Output files of the ``keltis`` commands: checked before any work starts, written atomically.

A command checks every path it will write (:func:`check_output_file`,
:func:`check_output_dir`) before it plays, trains or draws anything, so that a path that
cannot be written costs nothing and ends in one clear message instead of a traceback at
the end of a long run. Missing folders are created, as ``mkdir -p`` would, where they can
be (the check refuses a path with a file in the way or a folder that is not writable).
Files are then written to a temporary file in the same folder and moved into
place with :func:`os.replace` (:func:`atomic_write_bytes`, :func:`atomic_write_text`):
an interrupted or failed run leaves either the old file or the new one, never half a
file.

This module is not a command: it defines no ``HELP``, so the ``keltis`` parser skips it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


class OutputPathError(ValueError):
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
    _check_folder(out.parent, f"cannot write {what} to {out}")
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


def _new_file_mode(path: Path) -> int:
    """The permissions the written file gets: those of the file it replaces, else what a
    plain ``open(path, "w")`` would give (0o666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and
    :func:`os.replace`, creating the folder if needed; on any failure the temporary file
    is removed and ``path`` is as it was."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(out)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """:func:`atomic_write_bytes` for text."""
    atomic_write_bytes(path, text.encode(encoding))


__all__ = ["OutputPathError", "atomic_write_bytes", "atomic_write_text", "check_output_dir", "check_output_file"]
