"""Files a user names, read bounded (standard library only): :func:`read_bounded`.

A record, a config, a recipe or a benchmark protocol is read only when it is a regular file
no larger than the reader's limit, and at most that many bytes are read: a FIFO without a
writer, a device such as ``/dev/zero`` or a file of gigabytes is refused before anything is
read, so that no read hangs or fills the memory. The readers phrase the refusal in their own
terms (:class:`NotRegularFileError`, :class:`FileTooLargeError`, or the ``OSError`` of a
missing or unreadable file).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFileError(OSError):
    """The path names a folder, a FIFO, a device or a socket, not a regular file (``folder``
    says whether it is a folder)."""

    def __init__(self, path: str | os.PathLike[str], folder: bool) -> None:
        super().__init__(f"{path} is {'a folder' if folder else 'not a regular file'}")
        self.folder = folder


class FileTooLargeError(OSError):
    """The file is larger than the reader takes (``size``: its bytes, or ``None`` when it
    grew past the limit while it was read; ``limit``)."""

    def __init__(self, path: str | os.PathLike[str], size: int | None, limit: int) -> None:
        super().__init__(f"{path} is larger than {limit:,} bytes")
        self.size = size
        self.limit = limit


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a
    :class:`NotRegularFileError` or :class:`FileTooLargeError` before anything is read, or
    the ``OSError`` of opening or reading it (``FileNotFoundError`` for a missing file)."""
    # O_NONBLOCK: opening a FIFO that has no writer returns at once (and is refused below)
    fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFileError(path, stat.S_ISDIR(info.st_mode))
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise FileTooLargeError(path, info.st_size, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(path, None, limit)
    return data


__all__ = ["FileTooLargeError", "NotRegularFileError", "read_bounded"]
