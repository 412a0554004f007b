"""The card game's bots: heuristic (rule-based), planner (the plan model's best action)
and ismcts (determinised search with the plan model).

Bots must only ever choose legal actions, be reproducible from their seed, and make the
sensible choice in a few explicit positions (docs/rules.md R4-R9). Strength is measured with
``keltis evaluate``, not here.
"""

from __future__ import annotations

import random

import pytest
from conftest import make_state
from hypothesis import given, settings
from hypothesis import strategies as st

from keltis_env.bots import bot_names, make_bot
from keltis_env.games.keltis import GameConfig, GameState, action_to_string, string_to_action
from keltis_env.games.keltis.bots.heuristic import HeuristicBot
from keltis_env.games.keltis.bots.ismcts import ISMCTSBot
from keltis_env.games.keltis.bots.plan import Planner, Weights
from keltis_env.games.keltis.bots.planner import PlannerBot, action_values


def play_game(specs: list[str], seed: int, max_turns: int = 500) -> tuple[GameState, list[int]]:
    """Play one game between bots (seat i plays specs[i]); check every choice is legal."""
    state = GameState.new_game(GameConfig(num_players=len(specs), max_turns=max_turns), seed)
    bots = [make_bot(spec, seed=seed * 10 + i) for i, spec in enumerate(specs)]
    actions = []
    while not state.is_over:
        seat = state.current_player
        view = state.view(seat)
        action = bots[seat].act(view)
        assert action in view.legal_actions, f"{specs[seat]} chose illegal {action} ({action_to_string(action)})"
        state.apply(action)
        actions.append(action)
    return state, actions


def choice(spec: str, state: GameState) -> str:
    return action_to_string(make_bot(spec, seed=0).act(state.view(state.current_player)))


def test_registered() -> None:
    assert {"random", "heuristic", "planner", "ismcts", "ppo"} <= set(bot_names("keltis"))
    assert isinstance(make_bot("heuristic", seed=1), HeuristicBot)
    assert isinstance(make_bot("planner", seed=1), PlannerBot)
    bot = make_bot("ismcts:iterations=40,top_k=3", seed=1)
    assert isinstance(bot, ISMCTSBot) and bot.iterations == 40 and bot.top_k == 3
    assert isinstance(make_bot("heuristic:paths=3", seed=1), HeuristicBot)


# ---------------------------------------------------------------------- legality
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), players=st.integers(2, 4), mix=st.integers(0, 2))
def test_heuristic_only_plays_legal_actions(seed: int, players: int, mix: int) -> None:
    specs = [("heuristic", "random", "heuristic:paths=3,gap=3")[(i + mix) % 3] for i in range(players)]
    state, _ = play_game(specs, seed)
    assert state.is_over


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31), players=st.integers(2, 4))
def test_ismcts_only_plays_legal_actions(seed: int, players: int) -> None:
    specs = ["ismcts:iterations=6,top_k=3", "heuristic", "random", "ismcts:iterations=0"][:players]
    state, _ = play_game(specs, seed, max_turns=24 * players)
    assert state.is_over


def test_bots_refuse_to_act_out_of_turn() -> None:
    state = GameState.new_game(GameConfig(num_players=2), 3)
    idle = 1 - state.current_player
    for spec in ("heuristic", "planner", "ismcts"):
        with pytest.raises(ValueError, match="no legal action"):
            make_bot(spec, seed=0).act(state.view(idle))


# ---------------------------------------------------------------------- determinism
@pytest.mark.parametrize("spec", ["heuristic", "ismcts:iterations=8,top_k=3"])
def test_same_seed_same_game(spec: str) -> None:
    specs = [spec, "heuristic"]
    _, first = play_game(specs, seed=11, max_turns=30)
    random.seed(12345)  # the bots must not read the global generators
    random.random()
    _, second = play_game(specs, seed=11, max_turns=30)
    assert first == second


def test_ismcts_reseeding_repeats_its_decision() -> None:
    state = GameState.new_game(GameConfig(num_players=2), 5)
    view = state.view(state.current_player)
    a = ISMCTSBot(seed=1, iterations=30)
    b = ISMCTSBot(seed=1, iterations=30)
    first = a.act(view)
    assert b.act(view) == first
    a.seed(1)
    assert a.act(view) == first


def test_ismcts_options() -> None:
    with pytest.raises(ValueError, match="not both"):
        ISMCTSBot(iterations=10, seconds=0.1)
    with pytest.raises(ValueError, match="iterations"):
        ISMCTSBot(iterations=-1)
    with pytest.raises(ValueError, match="seconds"):
        ISMCTSBot(seconds=0)
    with pytest.raises(ValueError, match="has no option"):
        make_bot("ismcts:depht=2")
    # a time budget answers, and stays legal
    state = GameState.new_game(GameConfig(num_players=3), 8)
    view = state.view(state.current_player)
    assert ISMCTSBot(seed=0, seconds=0.005).act(view) in view.legal_actions


def test_heuristic_options() -> None:
    with pytest.raises(ValueError, match="paths"):
        HeuristicBot(paths=0)
    with pytest.raises(ValueError, match="has no option"):
        make_bot("heuristic:colour=3")


# ---------------------------------------------------------------------- sensible play
def late_game_with_strong_red() -> GameState:
    """Player 0 near the end: a red row 1..6 (figure on row 6), red 7 and 8 in hand, and
    three greens that could open a new path - in the minus area, with 3 turns left."""
    return make_state(
        2,
        hands={0: ["red 7", "red 8", "green 0", "green 1", "green 3", "blue 10", "pink 0", "pink 10"]},
        rows={0: {"red": [1, 2, 3, 4, 5, 6], "yellow": [2, 3, 4, 5]}, 1: {"blue": [0, 2, 3, 5, 6]}},
        figures={0: {"red": 6, "yellow": 4}, 1: {"blue": 5}},
        tiles={("red", 7): "points1", ("green", 1): None},  # no clover to make opening green pay
        wishing={1: 1},
        deck_size=6,
        turn=58,
    )


@pytest.mark.parametrize("spec", ["heuristic", "planner", "ismcts:iterations=0", "ismcts:iterations=24"])
def test_completes_a_strong_row_rather_than_opening_late(spec: str) -> None:
    state = late_game_with_strong_red()
    assert choice(spec, state) == "play red 7"


POINT_TILES = ("points3", "points3", "points2", "points2", "points2", "points1", "points1")
#: seven tile stones each leader's figures have reached (default layout, R1)
LEADER_STONES = {
    True: (("red", 1), ("red", 3), ("red", 5), ("red", 7), ("blue", 2), ("blue", 3), ("blue", 5)),
    False: (("yellow", 2), ("yellow", 4), ("yellow", 6), ("green", 1), ("green", 4), ("green", 6), ("green", 7)),
}


def goal_area_nearly_full(ahead: bool) -> GameState:
    """Four figures stand in the goal area; player 0's blue 7 would bring the fifth and end
    the game at once (R8.1). Wishing stones and tile points put player 0 clearly ahead or
    behind."""
    return make_state(
        2,
        hands={0: ["blue 7", "red 3", "green 2", "green 4", "yellow 9", "pink 1", "pink 2", "pink 3"]},
        rows={
            0: {"red": [0, 1, 2, 3, 4, 5, 6], "blue": [0, 1, 2, 3, 4, 5]},
            1: {"yellow": [1, 2, 3, 4, 5, 6, 7], "green": [9, 8, 7, 6, 5, 4, 3], "pink": [0, 1, 2, 3, 4, 5, 6]},
        },
        figures={0: {"red": 7, "blue": 6}, 1: {"yellow": 7, "green": 7, "pink": 7}},
        wishing={0: 5 if ahead else 0, 1: 0 if ahead else 5},
        # all 14 points of the point tiles, on stones the leader's figures have passed (R6)
        tiles=dict(zip(LEADER_STONES[ahead], POINT_TILES, strict=True)),
        tile_points={0: 14 if ahead else 0, 1: 0 if ahead else 14},
        deck_size=20,
        turn=40,
    )


@pytest.mark.parametrize("spec", ["heuristic", "planner", "ismcts:iterations=0", "ismcts:iterations=12"])
def test_ends_the_game_when_ahead_not_when_behind(spec: str) -> None:
    end_move = "play blue 7"
    for ahead in (True, False):
        state = goal_area_nearly_full(ahead)
        assert state.goal_count == 4
        trial = state.clone()
        trial.apply(string_to_action(end_move))
        assert trial.is_over and trial.winners() == ([0] if ahead else [1])
        assert (choice(spec, state) == end_move) == ahead


def last_card(ahead: bool) -> GameState:
    """Player 0 must draw; one card is left in the draw pile (drawing it ends the game,
    R8.2) and the green discard pile is open. Five wishing stones put player 0 14 points
    ahead of player 1 or, held by player 1, behind."""
    return make_state(
        2,
        hands={0: ["red 3", "red 4", "green 2", "green 4", "yellow 9", "pink 1", "pink 2"]},
        rows={0: {"red": [1, 2]}, 1: {"blue": [1, 2]}},
        figures={0: {"red": 2}, 1: {"blue": 2}},
        wishing={0: 5 if ahead else 0, 1: 0 if ahead else 5},
        discards={"green": [6]},
        deck_size=1,
        phase="draw",
        turn=60,
    )


@pytest.mark.parametrize("spec", ["heuristic", "planner", "ismcts:iterations=0", "ismcts:iterations=12"])
def test_draws_the_last_card_only_when_ahead(spec: str) -> None:
    assert choice(spec, last_card(ahead=True)) == "draw deck"
    assert choice(spec, last_card(ahead=False)).startswith("draw ")
    assert choice(spec, last_card(ahead=False)) != "draw deck"


def test_heuristic_discards_what_nobody_can_use() -> None:
    """Only big jumps are playable; red 1/2 fit nobody's row while yellow 9 continues the
    opponent's yellow row: the heuristic throws away a red card (R3a: discards are public)."""
    state = make_state(
        2,
        hands={0: ["red 1", "red 2", "yellow 9", "green 8", "green 9", "green 10", "pink 9", "pink 10"]},
        rows={0: {"red": [4, 5], "green": [0, 1], "pink": [0]}, 1: {"yellow": [5, 6, 8]}},
        figures={0: {"red": 2, "green": 2, "pink": 1}, 1: {"yellow": 3}},
        deck_size=40,
        turn=20,
    )
    assert choice("heuristic", state) in ("discard red 1", "discard red 2")


def test_heuristic_opens_with_the_large_figure_on_its_best_colour() -> None:
    state = make_state(
        2, hands={0: ["red 1", "red 3", "red 5", "red 7", "yellow 2", "yellow 8", "blue 10", "pink 4"]}, turn=0
    )
    assert choice("heuristic", state) == "play red 1 large"


@pytest.mark.parametrize("spec", ["heuristic", "planner", "ismcts:iterations=0"])
def test_bonus_step_onto_a_wishing_stone(spec: str) -> None:
    """A clover gave a bonus step (R7). Red (the large figure: +2) and green (+1) both
    advance from row 5 to row 6, but green's row 6 holds a wishing stone, and with one
    stone held (-3 points) a second one is worth 5 more (R9)."""
    state = make_state(
        2,
        hands={0: ["red 6", "red 7", "red 8", "green 5", "green 6", "green 7", "green 8"]},
        rows={0: {"red": [1, 2, 3, 4, 5], "green": [0, 1, 2, 3, 4]}},
        figures={0: {"red": 5, "green": 5}},
        large={0: "red"},
        wishing={0: 1},
        tiles={("green", 6): "wish"},
        phase="bonus",
        deck_size=40,
        turn=20,
    )
    assert choice(spec, state) == "bonus advance green"


# ---------------------------------------------------------------------- the planner model
def test_planner_values_every_legal_action_and_prefers_closing_gaps() -> None:
    state = late_game_with_strong_red()
    view = state.view(0)
    values = dict(action_values(view, Weights()))
    assert set(values) == set(view.legal_actions)
    assert values[string_to_action("play red 7")] > values[string_to_action("play red 8")]
    assert values[string_to_action("play red 7")] > values[string_to_action("play green 0")]


def test_planner_counts_time_left() -> None:
    state = late_game_with_strong_red()
    planner = Planner(state.view(0), 0, Weights())
    assert planner.plays == 3  # 6 cards left, 2 players, player 0 to play now


# ---------------------------------------------------------------------- planner = ismcts without search
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31), players=st.integers(2, 4))
def test_planner_plays_what_ismcts_plays_without_search(seed: int, players: int) -> None:
    """``planner`` is the plan model's best action: ``ismcts:iterations=0``, decision for
    decision, over whole games (every seat's view, every phase)."""
    state = GameState.new_game(GameConfig(num_players=players, max_turns=40 * players), seed)
    planner, no_search = make_bot("planner", seed=seed), make_bot("ismcts:iterations=0", seed=seed)
    driver = make_bot("heuristic", seed=seed)
    rng = random.Random(seed)
    checked = 0
    while not state.is_over:
        view = state.view(state.current_player)
        choice = planner.act(view)
        assert choice == no_search.act(view)
        assert choice == max(action_values(view), key=lambda av: av[1])[0]
        checked += 1
        # follow the planner, the heuristic or chance, so that many kinds of position come up
        mover = (planner, driver)[rng.randrange(2)]
        state.apply(mover.act(view) if rng.random() < 0.9 else rng.choice(view.legal_actions))
    assert checked > 20


def test_planner_has_no_options_and_draws_no_random_numbers() -> None:
    with pytest.raises(ValueError, match="has no option 'iterations'"):
        make_bot("planner:iterations=3")
    state = late_game_with_strong_red()
    view = state.view(0)
    assert {PlannerBot(seed=s).act(view) for s in range(5)} == {string_to_action("play red 7")}
