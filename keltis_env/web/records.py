"""The records a server may open: the files named on the command line (``keltis serve
--record PATH``, a record or a folder of ``*.json`` records), listed by name. A page opens
one by that name only, so no other path is ever read; a file larger than
:data:`MAX_RECORD_BYTES` is refused before it is read, and so is an upload
(:data:`MAX_UPLOAD_BYTES`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import NOT_FOUND, TOO_LARGE, UNPROCESSABLE, WebError

#: the largest record file the server reads, and the largest upload it takes (bytes)
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_UPLOAD_BYTES = 1024 * 1024


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
    """The JSON in ``data``, or a :class:`WebError` saying it is not JSON."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise WebError(UNPROCESSABLE, f"{source} is not a JSON game record: {exc}") from None


__all__ = ["MAX_RECORD_BYTES", "MAX_UPLOAD_BYTES", "RecordFiles", "parse_record"]
