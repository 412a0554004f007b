"""A run folder's log files: CSV logs appended row by row, files copied atomically."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path

#: ``eval.csv``'s columns: a run's periodic (selection) evaluations, a row per opponent
EVAL_FIELDS = ["timesteps", "learning_s", "opponent", "games", "win_rate", "ci_low", "ci_high", "mean_score",
               "opponent_mean_score", "mean_turns", "truncation_rate"]


def copy_file(source: Path, target: Path) -> None:
    """Copy ``source`` onto ``target``, atomically."""
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def append_csv(path: Path, fields: list[str], rows: list[dict[str, Any]]) -> None:
    """Add ``rows`` to the CSV log ``path`` (its header first when new)."""
    new = not path.is_file()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)


__all__ = ["EVAL_FIELDS", "append_csv", "copy_file"]
