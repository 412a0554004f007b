"""The folder of an evaluation's game records: it must hold no game records before, it is
owned by one evaluation at a time (a lock in it), and after an interruption it holds
exactly the finished games' records."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from .errors import EvaluationError
from .results import GameResult

_RECORD_FILE = re.compile(r"\.?game_(\d+)\.json")  # a game's record, or a temporary file of one


from keltis_env.core.output_files import LOCK_NAME  # noqa: E402 - the lock file of a folder in use


def check_records_dir(records_dir: str | Path) -> Path:
    """The records folder, checked without changing anything: it can be written or
    created, and it holds no game records yet (:func:`claim_records_dir` checks again
    once it owns the folder)."""
    from keltis_env.core.output_files import OutputPathError, check_output_dir

    try:
        folder = check_output_dir(records_dir, "the game records folder")
    except OutputPathError as exc:
        raise EvaluationError(str(exc)) from None
    _check_no_records(folder)
    return folder


def _check_no_records(folder: Path) -> None:
    if folder.is_dir() and any(_RECORD_FILE.match(p.name) for p in folder.iterdir()):
        raise EvaluationError(
            f"the game records folder {folder} already holds game records (game_*.json); give a new or empty folder"
        )


@contextlib.contextmanager
def claim_records_dir(records_dir: str | Path) -> Iterator[Path]:
    """The records folder, created if missing and owned by this evaluation while the block
    runs (:class:`~keltis_env.core.output_files.FolderLock`: a lock the system drops when
    the process ends, so a killed evaluation blocks nothing). The folder must hold no game
    records, so that it ends up holding exactly this evaluation's games;
    :class:`EvaluationError` otherwise, or when another evaluation holds it."""
    from keltis_env.core.output_files import FolderLock, OutputPathError

    folder = check_records_dir(records_dir)
    lock = FolderLock(folder, "the game records folder")
    try:
        lock.acquire()
    except OutputPathError as exc:  # held by another process, or the folder cannot be made
        raise EvaluationError(str(exc)) from None
    try:
        _check_no_records(folder)  # again, now that no other evaluation can add any
        yield folder
    finally:
        lock.release()


def remove_unfinished_records(folder: Path, finished: Sequence[GameResult]) -> None:
    """Delete the records (and temporary files) of games that did not finish: an
    interrupted game's record may be half written."""
    done = {r.index for r in finished}
    for path in folder.iterdir():
        match = _RECORD_FILE.match(path.name)
        if match is not None and (path.name.startswith(".") or int(match.group(1)) not in done):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


__all__ = ["LOCK_NAME", "check_records_dir", "claim_records_dir", "remove_unfinished_records"]
