"""The card game's descriptor (registered by the package's ``__init__``)."""

from __future__ import annotations

from typing import Any

from keltis_env.core.game import CompiledCore, GameDescriptor

from .actions import ACTION_RANGES, NUM_ACTIONS, action_to_string, string_to_action
from .config import GameConfig
from .constants import (
    COLORS,
    MAX_DECISIONS_PER_TURN,
    MAX_PLAYERS,
    MIN_PLAYERS,
    SCORE_MAX,
    SCORE_MIN,
    card_color,
    card_value,
)
from .record import GameRecord
from .render_text import board_text
from .state import GameState, sample_state
from .view import LiveView


def hand_text(state: Any, seat: int) -> str:
    """``red 3 7 | green 0 | ...``: the seat's own cards by colour (from its view, R10),
    the line ``keltis play`` shows the person."""
    hand = state.view(seat).hand
    groups = []
    for c, color in enumerate(COLORS):
        values = [str(card_value(k)) for k in hand if card_color(k) == c]
        if values:
            groups.append(f"{color} {' '.join(values)}")
    return " | ".join(groups) or "(empty)"


def max_game_length(config: Any) -> int:
    """Most decisions of a game: every turn up to truncation at its most decisions."""
    return int(config.max_turns) * MAX_DECISIONS_PER_TURN


GAME = GameDescriptor(
    name="keltis",
    long_name="Keltis, the card game (docs/rules.md R1-R10)",
    env_name="keltis_v0",
    version=0,
    min_players=MIN_PLAYERS,
    max_players=MAX_PLAYERS,
    information="imperfect",
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
    encoder="keltis_env.games.keltis.encoding:ObservationEncoder",
    painter="keltis_env.games.keltis.render_image:board_image",
    bots={
        "heuristic": "keltis_env.games.keltis.bots.heuristic:HeuristicBot",
        "planner": "keltis_env.games.keltis.bots.planner:PlannerBot",
        "ismcts": "keltis_env.games.keltis.bots.ismcts:ISMCTSBot",
        "gumbel": "keltis_env.games.keltis.bots.gumbel:GumbelBot",
    },
    features={"plan": "keltis_env.games.keltis.encoding:plan_feature",
              "rows": "keltis_env.games.keltis.encoding:rows_feature"},
    privileged="keltis_env.games.keltis.encoding:PrivilegedEncoder",
    hand_text=hand_text,
    chance_model="keltis_env.games.keltis.chance:Chance",
    symmetries={
        "colours": "keltis_env.games.keltis.symmetry:colour_symmetry",
        "colours_affine": "keltis_env.games.keltis.symmetry:affine_colour_symmetry",
    },
    compiled=CompiledCore(kernels="keltis_env.games.keltis.kernels", batch="keltis_env.games.keltis.kernels_batch",
                          match="keltis_env.games.keltis.kernels_match",
                          worlds="keltis_env.games.keltis.kernels_gumbel"),
    docs_page="docs/keltis_v0.md",
)
