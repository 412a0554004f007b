"""The toy race's descriptor: what the entry point ``keltis_env.games`` names."""

from __future__ import annotations

from typing import Any

from keltis_env.core.game import GameDescriptor

from .state import (
    ACTION_RANGES,
    GOAL,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    GameConfig,
    GameRecord,
    GameState,
    action_to_string,
    board_text,
    live_view,
    sample_state,
    string_to_action,
)


def max_game_length(config: Any) -> int:
    return int(config.max_turns)  # one decision a turn


def hand_text(state: Any, seat: int) -> str:
    return " ".join(map(str, state.view(seat).hand)) or "(empty)"


GAME = GameDescriptor(
    name="toy",
    long_name="Toy race, a one-colour ascending-card race (a test plugin)",
    env_name="toy_v0",
    version=0,
    min_players=MIN_PLAYERS,
    max_players=MAX_PLAYERS,
    information="imperfect",
    chance="sampled_stochastic",
    num_actions=NUM_ACTIONS,
    min_score=0,
    max_score=GOAL,
    max_game_length=max_game_length,
    config_cls=GameConfig,
    state_cls=GameState,
    record_cls=GameRecord,
    action_to_string=action_to_string,
    string_to_action=string_to_action,
    action_ranges=ACTION_RANGES,
    live_view=live_view,
    sample_state=sample_state,
    board_text=board_text,
    encoder="keltis_toy.encoding:ToyEncoder",
    bots={"lowest": "keltis_toy.bots:LowestBot"},
    hand_text=hand_text,
)
