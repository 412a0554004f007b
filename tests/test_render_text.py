"""The text boards (keltis_env.games.*.render_text): every line of every view of any
position fits an 80-column terminal, the ``ansi`` render mode included."""

from __future__ import annotations

import random
from typing import Any

import pytest

from keltis_env import keltis_dice_v0, keltis_v0
from keltis_env.core.game import get_game
from keltis_env.games.keltis import GameConfig, GameState
from keltis_env.games.keltis.render_text import board_text

WIDTH = 80


def positions(game: str, players: int, count: int, seed: int) -> list[Any]:
    """Positions of random play from the start to the end, truncated games included."""
    spec = get_game(game)
    rng = random.Random(seed)
    states = []
    for _ in range(count):
        config = spec.make_config(num_players=players, max_turns=rng.choice([15, 500]))
        state = spec.new_state(config, rng.randrange(10**6))
        for _ in range(rng.randrange(0, 800)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        states.append(state)
    return states


def views(game: str, state: Any) -> list[str]:
    board = get_game(game).board_text
    if game == "dice":
        return [board(state)]
    return [board(state, show_hands=hands) for hands in ("all", "current", None, 0)]


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_text_board_lines_are_at_most_80_columns_in_any_position(game: str, players: int) -> None:
    over = 0
    for state in positions(game, players, 80, seed=100 + players):
        over += state.is_over
        for text in views(game, state):
            wide = [line for line in text.splitlines() if len(line) > WIDTH]
            assert not wide, text
        lines = views(game, state)[-1].splitlines()
        hands = 1 if game == "keltis" else 0  # show_hands=0: one hand line
        assert len(lines) == 12 + players + hands, "the board's height depends only on the player count"
    assert over, "some positions are finished games"


def _crowded(players: int = 4) -> GameState:
    """Every player's large figure on one stone with a tile, long rows in every colour, the
    turn counter in four digits: the widest lines the board can have."""
    state = GameState.new_game(GameConfig(num_players=players), seed=1)
    state.turn = 9999
    for p in range(players):
        state.pos[p] = [4, 4, 4, 4, 4]
        state.large[p] = 0
        state.wishing[p], state.tile_points[p] = 9, 14
        state.rows[p] = [list(range(11)) for _ in range(5)]
        state.direction[p] = [1, -1, 1, -1, 0]
    state.tiles[0][4] = 1
    state.discards = [[10] * 12 for _ in range(5)]
    state.discarded = 1
    return state


def test_a_crowded_board_still_fits_80_columns_and_shortens_long_rows() -> None:
    text = board_text(_crowded(), show_hands="all")
    assert max(len(line) for line in text.splitlines()) <= WIDTH, text
    assert "0*1*2*3*" in text  # four large figures on one stone, closer together
    assert "red .." in text and "^" in text and "v" in text  # long rows: the last cards
    assert "10 (12) x" in text  # the closed pile


def test_player_line_shows_the_last_card_and_the_direction_of_each_path() -> None:
    state = GameState.new_game(GameConfig(num_players=2), seed=2)
    state.rows[0] = [[3, 5], [], [9], [], [8, 8, 4]]
    state.direction[0] = [1, 0, 0, 0, -1]
    line = next(line for line in board_text(state).splitlines() if line.startswith("p0 "))
    assert line.endswith("red 3 5^  green 9  pink 8 8 4v"), line


@pytest.mark.parametrize(("module", "players"), [(keltis_v0, 4), (keltis_dice_v0, 4)])
def test_ansi_render_mode_fits_80_columns(module: Any, players: int) -> None:
    env = module.env(num_players=players, render_mode="ansi")
    env.reset(seed=5)
    for _ in range(60):
        text = env.render()
        assert max(len(line) for line in text.splitlines()) <= WIDTH, text
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        mask = env.observe(agent)["action_mask"]
        env.step(int(mask.nonzero()[0][0]))
