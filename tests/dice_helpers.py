"""Explicit positions of the dice game for scenario tests (docs/rules.md R11).

:func:`position` builds a :class:`GameState` from a compact description (markers, stones,
dice, phase, ...) through ``GameState.from_dict``, so a helper call that breaks an
invariant fails loudly instead of building a bad position.
"""

from __future__ import annotations

from typing import Any

from keltis_env.games.dice import GameConfig, GameState, action_to_string, string_to_action
from keltis_env.games.dice.constants import COLORS, FACE_NAMES


def position(
    num_players: int = 2,
    *,
    markers: dict[int, dict[str, int]] | None = None,
    stones: dict[int, int] | None = None,
    dice: tuple[str, ...] = ("red", "yellow", "green", "blue", "pink"),
    phase: str = "move",
    current: int = 0,
    turn: int = 0,
    extra_turn: bool = False,
    end: str | None = None,
    seed: int = 0,
    rolls: int = 1,
    max_turns: int = 500,
    bonus_layout: Any = "default",
) -> GameState:
    """An explicit position (R11), validated by ``GameState.from_dict``."""
    markers = markers or {}
    stones = stones or {}
    config = GameConfig(num_players=num_players, bonus_layout=bonus_layout, max_turns=max_turns)
    base = GameState.new_game(config, seed=seed).to_dict()
    base.update(
        {
            "rolls": rolls,
            "dice": list(dice),
            "players": [
                {"markers": {c: (markers.get(p) or {}).get(c, 0) for c in COLORS}, "stones": stones.get(p, 0)}
                for p in range(num_players)
            ],
            "first_player": 0,
            "current_player": current,
            "phase": phase,
            "turn": turn,
            "extra_turn": extra_turn,
            "end": end,
        }
    )
    return GameState.from_dict(base)


def act(state: GameState, *actions: str) -> GameState:
    for text in actions:
        state.apply(string_to_action(text))
    return state


def legal(state: GameState) -> set[str]:
    return {action_to_string(a) for a in state.legal_actions()}


def row(state: GameState, player: int, color: str) -> int:
    return state.pos[player][COLORS.index(color)]


def faces(names: list[str] | tuple[str, ...]) -> tuple[int, ...]:
    return tuple(sorted(FACE_NAMES.index(n) for n in names))
