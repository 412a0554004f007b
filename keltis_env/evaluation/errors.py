"""The evaluation's errors (bad arguments; Ctrl-C or SIGTERM with the games finished so
far) and its check of integer arguments."""

from __future__ import annotations

import operator
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import EvaluationResult


class EvaluationError(ValueError):
    """Bad arguments for an evaluation (agent specs, counts, options, output paths)."""


class AgentPlayError(EvaluationError):
    """An agent failed in play and the run stopped: it raised (``SystemExit`` and
    ``KeyboardInterrupt`` included), chose an illegal action, could not be made, or its
    worker process died. Plain text only, so that it crosses process boundaries whatever the
    agent did: ``agent`` (its index), ``spec``, ``seat`` (``None`` when it was not deciding),
    ``game`` (the game's index), ``what`` (what happened, one line) and ``trace`` (the
    agent's traceback as text, empty when there is none). The games finished before are
    kept (``--out``/``out`` resumes them)."""

    def __init__(self, agent: int, spec: str, seat: int | None, game: int, what: str, trace: str = "") -> None:
        self.agent = agent
        self.spec = spec
        self.seat = seat
        self.game = game
        self.what = what
        self.trace = trace
        where = f"at seat {seat} " if seat is not None else ""
        super().__init__(f"agent {agent} ({spec}) {where}in game {game} {what}")

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return type(self), (self.agent, self.spec, self.seat, self.game, self.what, self.trace)


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped an evaluation; ``result`` holds the games finished before
    it (``result.partial`` is true) and ``signum`` the signal (``signal.SIGINT`` for Ctrl-C)."""

    def __init__(self, result: EvaluationResult, signum: int = signal.SIGINT) -> None:
        super().__init__(f"evaluation interrupted after {result.games} of {result.planned_games} games")
        self.result = result
        self.signum = signum


def check_integer(value: Any, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a plain int: any integer type is accepted (numpy's included), not bools
    or non-integral numbers; with ``minimum`` or ``maximum``, a value beyond it is refused too."""
    kind = "an integer" if minimum is None else "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    try:
        if isinstance(value, bool):
            raise TypeError("a bool is not a count")
        number = operator.index(value)
    except TypeError:
        raise EvaluationError(f"{name} must be {kind}, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise EvaluationError(f"{name} must be {kind}, got {value!r}")
    if maximum is not None and number > maximum:
        raise EvaluationError(f"{name} must be at most {maximum:,}, got {value!r}")
    return number


__all__ = ["AgentPlayError", "EvaluationError", "EvaluationInterrupted", "check_integer"]
