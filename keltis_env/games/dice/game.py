"""The dice game's descriptor (registered by the package's ``__init__``)."""

from __future__ import annotations

from typing import Any

from keltis_env.core.game import CompiledCore, GameDescriptor

from .actions import ACTION_RANGES, NUM_ACTIONS, action_to_string, string_to_action
from .config import GameConfig
from .constants import MAX_PLAYERS, MIN_PLAYERS, SCORE_MAX, SCORE_MIN
from .record import GameRecord
from .render_text import board_text
from .state import GameState, sample_state
from .view import LiveView


def max_game_length(config: Any) -> int:
    """Most decisions of a game: every turn up to truncation at its most decisions (which
    depend on the clovers of the layout)."""
    return int(config.max_turns) * int(config.max_decisions_per_turn())


GAME = GameDescriptor(
    name="dice",
    long_name="Keltis, the dice game (docs/rules.md R11)",
    env_name="keltis_dice_v0",
    version=0,
    min_players=MIN_PLAYERS,
    max_players=MAX_PLAYERS,
    information="perfect",
    chance="sampled_stochastic",
    num_actions=NUM_ACTIONS,
    min_score=SCORE_MIN,
    max_score=SCORE_MAX,
    max_game_length=max_game_length,
    config_cls=GameConfig,
    state_cls=GameState,
    record_cls=GameRecord,
    action_to_string=action_to_string,
    string_to_action=string_to_action,
    action_ranges=ACTION_RANGES,
    live_view=LiveView,
    sample_state=sample_state,
    board_text=board_text,
    encoder="keltis_env.games.dice.encoding:DiceObservationEncoder",
    painter="keltis_env.games.dice.render_image:board_image",
    bots={
        "heuristic": "keltis_env.games.dice.bots.heuristic:DiceHeuristicBot",
        "ismcts": "keltis_env.games.dice.bots.ismcts:DiceISMCTSBot",
    },
    chance_model="keltis_env.games.dice.chance:Chance",
    compiled=CompiledCore(kernels="keltis_env.games.dice.kernels", batch="keltis_env.games.dice.kernels_batch"),
    docs_page="docs/keltis_dice_v0.md",
)
