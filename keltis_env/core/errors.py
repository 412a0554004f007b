"""The error types of every game of the package (standard library only).

Each is a ``ValueError``: bad input, named precisely, and nothing changed. They share
:class:`KeltisError`, so a caller can catch every refusal of the package in one clause.
"""

from __future__ import annotations

import traceback as _traceback
from typing import Any

#: the most characters of a value that an error message shows (a huge repr is cut)
SHOWN_CHARS = 120


class KeltisError(ValueError):
    """Base of the package's refusals: the message names what is wrong and what is allowed."""


class ConfigError(KeltisError):
    """Game options that are malformed or out of range."""


class ActionError(KeltisError):
    """An action id or string that is malformed or not legal in the current state."""


class StateError(KeltisError):
    """A state dict that is malformed or describes an impossible position."""


class RecordError(KeltisError):
    """A game record that is malformed or does not replay."""


class GamePluginError(KeltisError):
    """A game entry point of another distribution (group ``keltis_env.games``) that cannot be loaded."""


class AgentError(KeltisError, KeyError):
    """An agent name the environment does not have; a ``KeyError`` too, as the dicts of
    agents raise, but printed as its message (no quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StopRequest(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, as the runner of a match raises it from its own signal handler
    (:func:`keltis_env.evaluation.play.user_stops`). It passes through a controller's
    guard; any other ``KeyboardInterrupt`` raised while a controller decides is that
    controller's failure, never the user's Ctrl-C."""


class MoveTimeout(BaseException):
    """Raised in a controller's ``act`` when its per-move time limit runs out (a
    ``BaseException``, so that an agent's ``except Exception`` does not swallow it)."""


class ControllerError(RuntimeError):
    """A controller (a bot or a user's agent) failed while it decided: it raised, exited
    (``SystemExit``), raised ``KeyboardInterrupt`` itself, or its process died.

    Plain text only, so that it crosses process boundaries whatever the agent raised:
    ``seat``, ``controller`` (its name or spec), ``kind`` (the exception's type name),
    ``detail`` (its message, cut to :data:`SHOWN_CHARS`) and ``trace`` (the whole
    traceback as text, empty when there is none)."""

    def __init__(self, seat: int, controller: str, kind: str, detail: str, trace: str = "") -> None:
        self.seat = seat
        self.controller = controller
        self.kind = kind
        self.detail = detail
        self.trace = trace
        message = f"{kind}: {detail}" if detail else kind
        super().__init__(f"{controller} at seat {seat} failed: {message}")

    def __reduce__(self) -> tuple[type, tuple[int, str, str, str, str]]:
        return type(self), (self.seat, self.controller, self.kind, self.detail, self.trace)

    @classmethod
    def of(cls, seat: int, controller: str, exc: BaseException) -> ControllerError:
        """The error for ``exc``, raised by ``controller`` at ``seat`` (its text made safely:
        a hostile ``__str__`` cannot break it)."""
        try:
            trace = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:
            trace = ""
        return cls(seat, controller, type(exc).__name__, describe_text(exc), trace)


def describe_text(value: object, limit: int = SHOWN_CHARS) -> str:
    """``str(value)``, cut to ``limit`` characters; a ``str`` that raises or returns no
    string is named instead of propagating."""
    return _described(value, str, "str", limit)


def describe_value(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, cut to ``limit`` characters; a ``__repr__`` that raises or returns
    no string is named instead of propagating (error messages show user objects this way)."""
    return _described(value, repr, "repr", limit)


def _described(value: object, show: Any, name: str, limit: int) -> str:
    try:
        text = show(value)
        if not isinstance(text, str):
            raise TypeError(f"{name}() returned a non-string")
    except Exception as exc:  # any user object
        return f"<{type(value).__name__} whose {name}() raised {type(exc).__name__}>"
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text):,} characters)"


__all__ = [
    "SHOWN_CHARS",
    "ActionError",
    "AgentError",
    "ConfigError",
    "ControllerError",
    "GamePluginError",
    "KeltisError",
    "MoveTimeout",
    "RecordError",
    "StateError",
    "StopRequest",
    "describe_text",
    "describe_value",
]
