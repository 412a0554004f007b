"""The games of this package, by name: each is an environment module with a ``SPEC``."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keltis_env.aec import GameSpec

#: game name -> module of its PettingZoo environment (which defines ``SPEC``, ``env``).
GAMES = {
    "keltis": "keltis_env.keltis_v0",
    "dice": "keltis_env.keltis_dice_v0",
}


def game_module(name: str):
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; games are {', '.join(GAMES)}")
    return importlib.import_module(GAMES[name])


def game_spec(name: str) -> GameSpec:
    return game_module(name).SPEC


def load_record(source: str | Path | Mapping[str, Any]) -> Any:
    """A game record of any game of the package, from a JSON file or a dict (its
    ``"game"`` field names the game)."""
    from keltis_env.engine.record import RecordError

    if isinstance(source, Mapping):
        data = source
    else:
        try:
            data = json.loads(Path(source).read_text())
        except FileNotFoundError:
            raise RecordError(f"no game record at {source}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecordError(f"{source} is not a JSON game record: {exc}") from None
    if not isinstance(data, Mapping):
        raise RecordError("a game record must be a JSON object")
    return game_spec(str(data.get("game", "keltis"))).record_cls.from_dict(data)
