"""The error types of every game of the package (standard library only).

Each is a ``ValueError``: bad input, named precisely, and nothing changed. They share
:class:`KeltisError`, so a caller can catch every refusal of the package in one clause.
"""

from __future__ import annotations


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


__all__ = ["ActionError", "AgentError", "ConfigError", "GamePluginError", "KeltisError", "RecordError", "StateError"]
