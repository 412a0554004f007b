"""Every file the project writes whole: its path checked before any work, then written atomically
(standard library only).

This module is the one place that says how the project treats an output path:

* **Checked first.** A command checks every path it will write (:func:`check_output_file`,
  :func:`check_output_dir`) before it plays, trains or draws anything, so that a path that
  cannot be written costs nothing and ends in one clear message instead of a traceback at
  the end of a long run. Two outputs of one command must not be the same path, nor one
  inside the other. Checking changes nothing the user can see.
* **Checked by what the path is**, never by permission bits (which say nothing for root):
  the folder that will hold the file, or its nearest existing ancestor, must be a folder in
  which a file can really be created (the check creates a temporary file there and removes
  it at once), so a read-only file system, ``/proc`` or ``/sys`` is refused up front. The
  empty path and a path naming a folder are refused.
* **Missing folders are created**, as ``mkdir -p`` would, by the writer.
* **Written atomically.** Files are written to a temporary file in the same folder, flushed
  to disk and moved into place with :func:`os.replace` (:func:`atomic_write_bytes`,
  :func:`atomic_write_text`, and :func:`atomic_path` for writers that want a path of their
  own, such as a zip or ``numpy.savez``): an interrupted or failed write leaves either the
  old file or the new one, never half a file, and no temporary file behind. The new file
  keeps the permissions of the one it replaces.
* **Links and special files.** A symbolic link is written through, to its target. A
  character device (``/dev/null``, a terminal) or a pipe is written directly, never
  replaced; any other file that is not a regular file (a block device, a socket) is
  refused.

Append-only logs (TensorBoard events, progress CSVs that grow row by row) are the one
exception to atomic writing: they are appended to in place.

* **A full disk** (``ENOSPC``, or ``EDQUOT``: the user's quota) while a file is written
  atomically raises :class:`DiskFullError`, one line naming the folder, the file and how
  much it needed beside what is free; the old file is kept. :func:`no_space_left` turns the
  same error of any other writer (an appended log) into one.

* **One writer per folder.** A folder that a long job fills over time (a training run)
  is claimed by that job while it runs (:func:`claim_folder`, :class:`FolderLock`): an
  advisory ``flock`` on the file :data:`LOCK_NAME` in it, which the operating system drops
  when the process ends however it ends (Ctrl-C, a crash, ``kill -9``), so a stale lock
  never blocks a later run. A second job that wants the folder is refused at once with
  :class:`FolderInUseError`, which names the folder and the process holding it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import KeltisError


class OutputPathError(KeltisError):
    """An output path that cannot be written; the message names it and why."""


class FolderInUseError(OutputPathError):
    """A folder claimed by another running job (:func:`claim_folder`); the message names
    the folder and, when it can be read, the process that holds it."""


#: the errors of a write that found no room: no space on the device, or the user's quota spent
DISK_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


class DiskFullError(OSError):
    """A write that found no space left on the device; ``str()`` is one line naming the
    folder, what was written and how much it needed (``folder``, ``what``, ``needed``: bytes
    or ``None`` when unknown, ``free``: bytes free on that device or ``None``)."""

    def __init__(self, folder: Path, what: str, needed: int | None, free: int | None, code: int = errno.ENOSPC) -> None:
        super().__init__(code, os.strerror(code))
        self.folder = folder
        self.what = what
        self.needed = needed
        self.free = free

    def __str__(self) -> str:
        need = f"about {_size(self.needed)}" if self.needed is not None else "more space"
        free = f", {_size(self.free)} free" if self.free is not None else ""
        return f"no space left on the device of {self.folder} for {self.what} (it needed {need}{free})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.folder, self.what, self.needed, self.free, self.errno)


def _size(count: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _free_bytes(folder: Path) -> int | None:
    try:
        info = os.statvfs(folder)
    except (AttributeError, OSError):
        return None
    return info.f_bavail * info.f_frsize


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write's failure for want of space (:data:`DISK_FULL`)."""
    return isinstance(exc, DiskFullError) or (isinstance(exc, OSError) and exc.errno in DISK_FULL)


@contextlib.contextmanager
def no_space_left(path: str | os.PathLike[str], what: str, needed: int | None = None) -> Iterator[None]:
    """Meanwhile, a full disk while writing ``what`` at ``path`` raises :class:`DiskFullError`
    (naming ``path``'s folder and ``needed`` bytes) instead of a bare ``OSError``."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        folder = Path(path).parent
        raise DiskFullError(folder, what, needed, _free_bytes(folder), exc.errno or errno.ENOSPC) from None


def check_output_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` when a file can be written there, else
    :class:`OutputPathError` naming ``what`` (e.g. ``"the game record"``), the path and
    the reason. A missing folder is fine when it can be created (the writers create it,
    as ``mkdir -p`` would); checking leaves nothing behind."""
    out = Path(path)
    if str(path) == "":
        raise OutputPathError(f"cannot write {what}: the path is empty; give a file name")
    failure = f"cannot write {what} to {out}"
    if out.is_dir():
        raise OutputPathError(f"{failure}: it is a folder; give a file name")
    if _is_special(out):  # links followed: /dev/stdout may lead to a pipe or a terminal
        mode = out.stat().st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise OutputPathError(f"{failure}: it is neither a regular file, a character device nor a pipe")
        if not os.access(out, os.W_OK):
            raise OutputPathError(f"{failure}: it is not writable")
        return out
    _check_folder(_target(out).parent, failure)
    return out


def _check_folder(folder: Path, failure: str) -> None:
    """``folder`` exists and a file can be created in it, or it can be created: its
    nearest existing ancestor is a folder that takes new files. Tried for real (a
    temporary file is created and removed), since permission bits say nothing for root
    nor for a read-only file system or ``/proc``."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{failure}: {existing} is not a folder")
    try:
        fd, name = tempfile.mkstemp(dir=existing, prefix=".keltis-check.", suffix=".tmp")
    except OSError as exc:
        raise OutputPathError(
            f"{failure}: no file can be created in the folder {existing} ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)


def check_output_dir(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` of a folder that files can be written into:
    an existing folder, or one that can be created (with its parents; the writers create
    it), else :class:`OutputPathError` naming ``what``, the path and the reason. Checking
    leaves nothing behind."""
    out = Path(path)
    if str(path) == "":
        raise OutputPathError(f"cannot write {what}: the path is empty; give a folder")
    if out.exists() and not out.is_dir():
        raise OutputPathError(f"cannot create {what} {out}: a file of that name exists")
    _check_folder(out, f"cannot write {what} into {out}" if out.is_dir() else f"cannot create {what} {out}")
    return out


def overlapping(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two output paths are the same path or one lies inside the other (links
    resolved), so that writing one would clobber or block the other."""
    a, b = Path(os.path.realpath(first)), Path(os.path.realpath(second))
    return a == b or a in b.parents or b in a.parents


def partial_path(path: Path) -> Path:
    """Where a partial result goes instead of ``path`` (a run that was stopped early):
    ``out.json`` -> ``out.partial.json``."""
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def _target(path: Path) -> Path:
    """The file a write to ``path`` lands in: a symbolic link's target, else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _is_special(path: Path) -> bool:
    """``path`` exists and is neither a regular file nor a folder (a device, a pipe, a
    socket)."""
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
def atomic_path(path: str | os.PathLike[str], needed: int | None = None) -> Iterator[Path]:
    """A temporary path in ``path``'s folder (same suffix, so writers that add one, such as
    ``numpy.savez`` or a ``.zip`` saver, keep it) for the caller to write; when the block
    ends without an error the file is flushed to disk and moved onto ``path``; on any
    error, Ctrl-C included, it is removed and ``path`` is as it was. The folder is created
    if needed. A special file (``/dev/null``) is not replaced: the finished temporary file
    is copied into it. A full disk raises :class:`DiskFullError` (``needed``: the bytes to be
    written, when the caller knows them)."""
    special = _is_special(Path(path))  # written through its links, as open() does
    out = Path(path) if special else _target(Path(path))
    if not special:
        out.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(out)
    folder = tempfile.gettempdir() if special else out.parent
    with _full_disk(out, needed):
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{out.name}.", suffix=f".tmp{out.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        with _full_disk(out, needed, tmp):
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


@contextlib.contextmanager
def _full_disk(out: Path, needed: int | None, tmp: Path | None = None) -> Iterator[None]:
    """:func:`no_space_left` for the atomic write of ``out``: what it needed is ``needed``,
    else the size of the file it replaces, else what was written of it before the disk
    was full."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        if needed is None:
            with contextlib.suppress(OSError):
                needed = out.stat().st_size if out.is_file() else (tmp.stat().st_size if tmp else None)
        raise DiskFullError(out.parent, out.name, needed, _free_bytes(out.parent), exc.errno or errno.ENOSPC) from None


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path, len(data)) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """:func:`atomic_write_bytes` for text."""
    atomic_write_bytes(path, text.encode(encoding))


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: the file in a claimed folder that carries its lock (and the holder's process id and command)
LOCK_NAME = ".keltis.lock"


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on the open file ``fd`` without waiting; False when another
    open file (of this process or another) holds it. The lock dies with the process."""
    if sys.platform == "win32":  # pragma: no cover - msvcrt's byte-range lock, also dropped at exit
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a releasing holder removes it)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _holder(path: Path) -> str:
    """The holder's line in a lock file (``pid 123: python -m ...``), or "" when unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return text[0][:300] if text else ""


class FolderLock:
    """The claim of one folder by this process (see the module doc). :meth:`acquire` creates
    the folder if needed and takes the lock or raises :class:`FolderInUseError`;
    :meth:`release` removes the lock file and drops the lock. Also a context manager."""

    def __init__(self, folder: str | os.PathLike[str], what: str) -> None:
        self.folder = Path(folder)
        self.what = what
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> FolderLock:
        """Take the folder; a refusal changes nothing in it (the holder's lock file stays as it is)."""
        if self._fd is not None:
            return self
        path = self.folder / LOCK_NAME
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                if not _try_lock(fd):
                    os.close(fd)
                    holder = _holder(path)
                    by = f" by {holder}" if holder else " by another process"
                    raise FolderInUseError(f"{self.what} {self.folder} is in use{by}; wait for it to end or stop it "
                                           f"(the lock is {path}, dropped when that process ends)")
                if _same_file(fd, path):  # not a file that its last holder removed while we opened it
                    break
                os.close(fd)
        except OSError as exc:
            raise OutputPathError(f"cannot claim {self.what} {self.folder}: {exc.strerror or exc}") from None
        command = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()} ({command[:200]})\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the folder back (removing the lock file first, so that no one waits on a stale one)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            (self.folder / LOCK_NAME).unlink()
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def claim_folder(folder: str | os.PathLike[str], what: str) -> Iterator[Path]:
    """``folder`` (created if missing), owned by this process while the block runs, else
    :class:`FolderInUseError` naming ``what`` (e.g. ``"the training run folder"``), the
    folder and the holder; released when the block ends or the process dies."""
    with FolderLock(folder, what) as lock:
        yield lock.folder


__all__ = [
    "DISK_FULL",
    "LOCK_NAME",
    "DiskFullError",
    "FolderInUseError",
    "FolderLock",
    "OutputPathError",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_dir",
    "check_output_file",
    "claim_folder",
    "is_disk_full",
    "no_space_left",
    "overlapping",
    "partial_path",
    "sha256_file",
]
