"""The evaluation's errors: bad arguments, and Ctrl-C with the games finished so far."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .results import EvaluationResult


class EvaluationError(ValueError):
    """Bad arguments for an evaluation (agent specs, counts, options, output paths)."""


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an evaluation; ``result`` holds the games finished before it
    (``result.partial`` is true)."""

    def __init__(self, result: EvaluationResult) -> None:
        super().__init__(f"evaluation interrupted after {result.games} of {result.planned_games} games")
        self.result = result


__all__ = ["EvaluationError", "EvaluationInterrupted"]
