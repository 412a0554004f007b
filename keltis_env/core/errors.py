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


__all__ = ["ActionError", "ConfigError", "GamePluginError", "KeltisError", "RecordError", "StateError"]
