"""The records a server reads and writes.

* :class:`RecordFiles`: the records a page may open, the files named on the command line
  (``keltis serve --record PATH``, a record or a folder of ``*.json`` records), listed by
  name. A page opens one by that name only, so no other path is ever read; a file larger
  than :data:`MAX_RECORD_BYTES` is refused before it is read, and so is an upload
  (:data:`MAX_UPLOAD_BYTES`).
* :class:`SaveFolder`: where a game is saved on request (``--save-dir``). The record of an
  unfinished game names its deal, so while a person plays it is written here and the
  person is told only the file's name; the file's path is made by the server from the
  game's name and id, never from a request, and the folder holds at most
  :data:`MAX_SAVED` records."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import CONFLICT, NOT_FOUND, TOO_LARGE, TOO_MANY, UNPROCESSABLE, WebError

#: the largest record file the server reads, and the largest upload it takes (bytes)
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_UPLOAD_BYTES = 1024 * 1024
#: the save folder of ``keltis serve`` unless ``--save-dir`` names another (relative: to the working folder)
DEFAULT_SAVE_DIR = "keltis-saves"
#: the most records (``*.json`` files) a save folder may hold; a save of a new game past it is refused
MAX_SAVED = 1000
#: the subfolder of the save folder where the games and replays open on the server are kept
LIVE_FOLDER = "live"
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


class RecordFiles:
    """The allowed record files by name: ``paths`` are files or folders (their ``*.json``
    files, not their subfolders); a name shared by two files gets its folder's name too."""

    def __init__(self, paths: Sequence[str | Path] = ()) -> None:
        files: list[Path] = []
        for given in paths:
            path = Path(given)
            if path.is_dir():
                files += sorted(p for p in path.glob("*.json") if p.is_file())
            elif path.is_file():
                files.append(path)
            else:
                raise ValueError(f"--record {str(given)!r}: no such file or folder")
        self.files: dict[str, Path] = {}
        for path in files:
            name = path.name if path.name not in self.files else f"{path.parent.name}/{path.name}"
            self.files.setdefault(name, path.resolve())

    def names(self) -> list[str]:
        return list(self.files)

    def read(self, name: Any) -> Any:
        """The JSON of the record called ``name`` (one of :meth:`names`)."""
        path = self.files.get(name) if isinstance(name, str) else None
        if path is None:
            shown = ", ".join(self.files) or "none (start the server with --record PATH)"
            raise WebError(NOT_FOUND, f"unknown record {name!r}; records are: {shown}")
        try:
            size = path.stat().st_size
            if size > MAX_RECORD_BYTES:
                raise WebError(TOO_LARGE, f"record {name!r} is {size:,} bytes; the limit is {MAX_RECORD_BYTES:,}")
            return parse_record(path.read_bytes(), name)
        except OSError as exc:
            raise WebError(NOT_FOUND, f"cannot read record {name!r}: {exc.strerror}") from None


def parse_record(data: bytes, source: str) -> Any:
    """The JSON in ``data``, or a :class:`WebError` saying it is not JSON (or holds text
    that is not Unicode)."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise WebError(UNPROCESSABLE, f"{source} is not a JSON game record: {exc}") from None
    check_text(parsed, source, UNPROCESSABLE)
    return parsed


def check_text(node: Any, source: str, status: int) -> None:
    """Refuse (``status``) JSON whose strings or keys hold a lone surrogate (``"\\ud800"``):
    JSON allows the escape, but it is not a character, so no answer could repeat it."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(item[exc.start])
                raise WebError(status, f"{source} holds a lone surrogate (\\u{code:04x}) in a string; "
                                       "text must be Unicode characters") from None


class SaveFolder:
    """The folder games are saved into (created at the first save). A game's file is
    ``<game>-<id>.json`` (the id is the server's, letters, digits, ``-`` and ``_``), written
    atomically and replaced by the game's next save, so a game holds one file however often
    it is saved. A save that would make the folder hold more than ``limit`` records is
    refused (429), and so is one the folder cannot take (409); neither writes anything."""

    def __init__(self, folder: str | Path, limit: int = MAX_SAVED) -> None:
        self.folder = Path(folder)
        self.limit = limit

    def save(self, name: str, data: Any) -> str:
        """Write the record ``data`` as ``name`` (a server-made file name) and return the name."""
        from keltis_env.core.output_files import atomic_write_text

        if Path(name).name != name or not name.endswith(".json"):
            raise ValueError(f"a saved record's name is a plain *.json file name, got {name!r}")
        path = self.folder / name
        if not path.exists() and self.count() >= self.limit:
            raise WebError(TOO_MANY, f"the save folder holds {self.limit} records, its limit; move some out of it "
                                     "(or start the server with another --save-dir)")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(data, indent=1))
        except OSError as exc:
            raise WebError(CONFLICT, f"the server cannot save records: {exc.strerror or exc}") from None
        return name

    def count(self) -> int:
        """The records the folder holds now."""
        return sum(1 for _ in self.folder.glob("*.json")) if self.folder.is_dir() else 0

    def live(self) -> LiveFolder:
        """Where this folder keeps the games and replays open on the server."""
        return LiveFolder(self.folder / LIVE_FOLDER)


class LiveFolder:
    """The games and replays open on a server, one file each (``<id>.json``, written by the
    server after every change, atomically), so that they survive a restart of the server
    (:meth:`load`). A game's file names its deal: it stays on the server like a save. A
    closed or expired session's file is removed; a failure to write is reported on the
    server's standard error and never fails the request that caused it."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"a session id is letters, digits, '-' and '_', got {key!r}")
        return self.folder / f"{key}.json"

    def write(self, key: str, data: Any) -> bool:
        from keltis_env.core.output_files import atomic_write_text

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self._path(key), json.dumps(data))
        except OSError as exc:
            print(f"keltis serve: warning: cannot keep game {key} in {self.folder}: {exc.strerror or exc}",
                  file=sys.stderr)
            return False
        return True

    def remove(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            print(f"keltis serve: warning: cannot remove {self._path(key)}: {exc.strerror or exc}", file=sys.stderr)

    def load(self) -> list[dict[str, Any]]:
        """Every kept session's data (a file that cannot be read as one is reported and left alone)."""
        found = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(data, dict) or data.get("id") != path.stem:
                    raise ValueError("not a kept game")
            except (OSError, ValueError) as exc:
                print(f"keltis serve: warning: {path} is not a game this server kept ({exc}); left alone",
                      file=sys.stderr)
                continue
            found.append(data)
        return found


__all__ = ["DEFAULT_SAVE_DIR", "LIVE_FOLDER", "MAX_RECORD_BYTES", "MAX_SAVED", "MAX_UPLOAD_BYTES", "LiveFolder",
           "RecordFiles", "SaveFolder",
           "check_text", "parse_record"]
