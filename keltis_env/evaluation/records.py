"""The folder of an evaluation's game records: it must hold no game records before, and
after an interruption it holds exactly the finished games' records."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from pathlib import Path

from .errors import EvaluationError
from .results import GameResult

_RECORD_FILE = re.compile(r"\.?game_(\d+)\.json")  # a game's record, or a temporary file of one


def check_records_dir(records_dir: str | Path) -> Path:
    """The records folder, created if missing; it must hold no game records yet, so that
    it ends up holding exactly this evaluation's games."""
    from keltis_env.core.files import OutputPathError, check_output_dir

    try:
        folder = check_output_dir(records_dir, "the game records folder")
    except OutputPathError as exc:
        raise EvaluationError(str(exc)) from None
    if any(_RECORD_FILE.match(p.name) for p in folder.iterdir()):
        raise EvaluationError(
            f"the game records folder {folder} already holds game records (game_*.json); give a new or empty folder"
        )
    return folder


def remove_unfinished_records(folder: Path, finished: Sequence[GameResult]) -> None:
    """Delete the records (and temporary files) of games that did not finish: an
    interrupted game's record may be half written."""
    done = {r.index for r in finished}
    for path in folder.iterdir():
        match = _RECORD_FILE.match(path.name)
        if match is not None and (path.name.startswith(".") or int(match.group(1)) not in done):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


__all__ = ["check_records_dir", "remove_unfinished_records"]
