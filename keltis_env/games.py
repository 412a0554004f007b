"""The games of this package, by name: each is an environment module with a ``SPEC``."""

from __future__ import annotations

import importlib

from keltis_env.aec import GameSpec

#: game name -> module of its PettingZoo environment (which defines ``SPEC``, ``env``).
GAMES = {
    "keltis": "keltis_env.keltis_v0",
}


def game_module(name: str):  # noqa: ANN201 - a module
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; games are {', '.join(GAMES)}")
    return importlib.import_module(GAMES[name])


def game_spec(name: str) -> GameSpec:
    return game_module(name).SPEC
