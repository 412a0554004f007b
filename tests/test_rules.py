"""Scenario tests, one group per section of docs/rules.md (R1-R10).

Every scenario starts from an explicit position (``conftest.make_state``), applies
scripted decisions and checks the state after each. The scenarios use the default tile
layout (R1); these rows are tile stones, every other stone never holds a tile:

    red: 1 3 5 7 9 | yellow: 2 4 6 8 9 | green: 1 4 6 7 9 | blue: 2 3 5 8 9 | pink: 3 4 6 7 9

A scenario names the tile of every tile stone its figures arrive on; ``make_state`` puts
the other tiles on the remaining tile stones.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from conftest import act, fig, hand_names, legal_strings, make_state, make_state_dict, tile_at

from keltis_env.games.keltis import (
    ActionError,
    EndReason,
    GameConfig,
    GameState,
    Phase,
    StateError,
    string_to_action,
)
from keltis_env.games.keltis.constants import (
    COLORS,
    DEFAULT_DARK_ROWS,
    END_ROW,
    NUM_CARD_KINDS,
    NUM_CARDS,
    ROW_VALUES,
    TILE_NAMES,
    TILE_SET,
    WISHING_SCORES,
    card_name,
    parse_card,
)
from keltis_env.games.keltis.view import PlayerView


def all_cards(state: GameState) -> Counter[int]:
    """Every card of the state, wherever it lies."""
    counts: Counter[int] = Counter(state.deck) + Counter(state.removed)
    for hand in state.hands:
        counts += Counter(hand)
    for c in range(len(COLORS)):
        counts += Counter(c * 11 + v for v in state.discards[c])
        for p in range(state.num_players):
            counts += Counter(c * 11 + v for v in state.rows[p][c])
    return counts


def tiles_on_board(state: GameState) -> dict[tuple[int, int], int]:
    return {(c, r): t for c in range(len(COLORS)) for r, t in enumerate(state.tiles[c]) if t}


def pass_turn(state: GameState) -> None:
    """The current player discards their lowest card and draws from the draw pile."""
    act(state, f"discard {card_name(state.hands[state.current][0])}", "draw deck")


def assert_illegal(state: GameState, action: str, *reason_words: str) -> None:
    """``action`` raises ActionError naming it and the reason, and changes nothing."""
    before = state.to_dict()
    with pytest.raises(ActionError) as info:
        state.apply(string_to_action(action))
    message = str(info.value)
    assert action in message
    for word in reason_words:
        assert word in message
    assert state.to_dict() == before


# ---------------------------------------------------------------------------- R1
def test_r1_components_are_declared_as_in_the_rules():
    assert NUM_CARDS == 110 and NUM_CARD_KINDS == 55
    assert ROW_VALUES[1:] == (-4, -3, -2, 1, 2, 3, 6, 7, 10)
    assert Counter(TILE_NAMES[t] for t in TILE_SET) == {
        "wish": 9, "clover": 9, "points1": 2, "points2": 3, "points3": 2,
    }
    assert DEFAULT_DARK_ROWS == ((1, 3, 5, 7), (2, 4, 6, 8), (1, 4, 6, 7), (2, 3, 5, 8), (3, 4, 6, 7))


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_r1_a_new_game_holds_110_cards_25_tiles_and_5_figures_each(num_players):
    state = GameState.new_game(GameConfig(num_players=num_players), seed=3)
    counts = all_cards(state)
    assert sum(counts.values()) == 110
    assert all(counts[k] == 2 for k in range(NUM_CARD_KINDS))
    # 25 tiles: on the 20 dark stones and the 5 end stones, nowhere else.
    tiles = tiles_on_board(state)
    assert set(tiles) == {(c, r) for c in range(5) for r in (*DEFAULT_DARK_ROWS[c], END_ROW)}
    assert Counter(tiles.values()) == Counter(TILE_SET)
    # 4 small and 1 large figure per player, all on the start stone.
    for p in range(num_players):
        assert state.pos[p] == [0] * 5 and state.large[p] == -1
        assert state.small_figures_left(p) == 4
        figures = state.to_dict()["players"][p]["figures"]
        assert len(figures) == 5 and sum(f["large"] for f in figures) == 1
        assert all(f["path"] is None and f["row"] == 0 for f in figures)


def test_r1_explicit_and_random_tile_layouts():
    layout = ((2, 3, 4, 5), (1, 2, 3, 4), (5, 6, 7, 8), (1, 3, 5, 8), (2, 4, 6, 8))
    state = GameState.new_game(GameConfig(tile_layout=layout), seed=1)
    assert set(tiles_on_board(state)) == {(c, r) for c in range(5) for r in (*layout[c], END_ROW)}
    layouts = set()
    for seed in range(6):
        state = GameState.new_game(GameConfig(tile_layout="random"), seed=seed)
        for c, rows in enumerate(state.dark_rows):
            assert len(set(rows)) == 4 and all(1 <= r <= 8 for r in rows)
            assert {r for r in range(1, 10) if state.tiles[c][r]} == {*rows, END_ROW}
        assert Counter(tiles_on_board(state).values()) == Counter(TILE_SET)
        layouts.add(state.dark_rows)
    assert len(layouts) > 1  # the layout is drawn from the seed, not fixed


def test_r1_two_copies_of_a_card_are_interchangeable():
    state = make_state(
        hands={0: ["red 5", "red 5", "blue 1", "blue 2", "blue 3", "blue 4", "blue 6", "blue 7"]},
        tiles={("red", 1): "points1"},
    )
    legal = state.legal_actions()
    assert len(legal) == len(set(legal))
    assert legal.count(string_to_action("play red 5")) == 1
    act(state, "play red 5", "draw deck")
    assert hand_names(state, 0).count("red 5") == 1
    assert state.rows[0][0] == [5]
    pass_turn(state)
    act(state, "play red 5")  # the second copy obeys R4 like any other red 5
    assert state.rows[0][0] == [5, 5] and fig(state, 0, "red") == 2


# ---------------------------------------------------------------------------- R2
def test_r2_two_players_remove_30_cards_and_deal_8_each():
    for seed in range(5):
        state = GameState.new_game(GameConfig(num_players=2), seed=seed)
        assert len(state.removed) == 30
        assert [len(h) for h in state.hands] == [8, 8]
        assert len(state.deck) == 64
        assert all(not pile for pile in state.discards)


@pytest.mark.parametrize(("num_players", "deck_size"), [(3, 110 - 24), (4, 110 - 32)])
def test_r2_three_and_four_players_keep_every_card(num_players, deck_size):
    state = GameState.new_game(GameConfig(num_players=num_players), seed=5)
    assert state.removed == []
    assert [len(h) for h in state.hands] == [8] * num_players
    assert len(state.deck) == deck_size


def test_r2_first_player_is_drawn_from_the_seed():
    firsts = set()
    for seed in range(40):
        state = GameState.new_game(GameConfig(num_players=4), seed=seed)
        again = GameState.new_game(GameConfig(num_players=4), seed=seed)
        assert state == again  # same seed, same deal, same first player
        assert state.current_player == state.first_player
        assert state.phase == Phase.PLAY and state.turn == 0
        firsts.add(state.first_player)
    assert firsts == {0, 1, 2, 3}


def test_r2_play_passes_in_increasing_seat_order():
    state = make_state(3, current=1, first_player=1)
    order = []
    for _ in range(4):
        order.append(state.current)
        pass_turn(state)
    assert order == [1, 2, 0, 1]


# ---------------------------------------------------------------------------- R3
def test_r3_a_turn_is_play_then_draw_back_to_eight_cards():
    state = make_state(hands={0: ["red 4"]}, deck_top=["blue 9", "green 1"], tiles={("red", 1): "points1"})
    act(state, "play red 4")
    assert state.phase == Phase.DRAW and state.current == 0
    assert len(state.hands[0]) == 7 and state.rows[0][0] == [4]
    assert set(legal_strings(state)) == {"draw deck"}  # every discard pile is empty
    act(state, "draw deck")
    assert "blue 9" in hand_names(state, 0) and len(state.hands[0]) == 8
    assert state.current == 1 and state.phase == Phase.PLAY and state.turn == 1
    assert state.deck[-1] == parse_card("green 1")  # the next card is now on top


def test_r3a_discard_goes_face_up_onto_its_colour_pile():
    state = make_state(hands={0: ["yellow 6"]}, discards={"yellow": [2]})
    act(state, "discard yellow 6")
    assert state.discards[1] == [2, 6]  # the new card is on top
    assert state.pos[0] == [0] * 5 and state.rows[0][1] == []  # no figure moves
    assert len(state.hands[0]) == 7 and state.phase == Phase.DRAW
    assert state.view(1).discards[1] == (2, 6)  # public


def test_r3b_draw_takes_the_top_card_of_a_discard_pile():
    state = make_state(hands={0: ["yellow 4"]}, discards={"green": [2, 8]})
    act(state, "play yellow 4")
    assert legal_strings(state) == {"draw deck", "draw green"}
    act(state, "draw green")
    assert "green 8" in hand_names(state, 0)
    assert state.discards[2] == [2]
    assert state.current == 1


def test_r3b_the_pile_discarded_onto_is_closed_for_this_draw_only():
    state = make_state(
        hands={0: ["red 9"], 1: ["pink 0"]}, discards={"red": [3], "blue": [5]}, deck_top=["yellow 1", "yellow 2"]
    )
    act(state, "discard red 9")
    assert state.discarded == 0
    assert legal_strings(state) == {"draw deck", "draw blue"}  # red is closed, blue is not
    assert_illegal(state, "draw red", "closed", "R3b")
    act(state, "draw blue")
    assert "blue 5" in hand_names(state, 0) and "red 9" not in hand_names(state, 0)
    # The next player may take the card just discarded.
    assert state.current == 1 and state.discarded == -1
    act(state, "discard pink 0")
    assert "draw red" in legal_strings(state)
    act(state, "draw red")
    assert "red 9" in hand_names(state, 1) and state.discards[0] == [3]


def test_r3b_playing_a_card_closes_no_pile():
    state = make_state(hands={0: ["yellow 9"]}, discards={"yellow": [3]})
    act(state, "play yellow 9")
    assert "draw yellow" in legal_strings(state)
    act(state, "draw yellow")
    assert "yellow 3" in hand_names(state, 0)


# ---------------------------------------------------------------------------- R4
def test_r4_the_first_card_of_a_colour_may_have_any_value():
    state = make_state(hands={0: ["red 0", "red 10", "red 5"]})
    assert {"play red 0", "play red 10", "play red 5"} <= legal_strings(state)


def test_r4_equal_values_before_the_direction_is_fixed():
    p0 = ["red 5", "red 3", "red 3", "red 4", "red 7", "blue 0", "blue 1", "blue 2"]
    state = make_state(hands={0: p0}, rows={0: {"red": [5]}}, figures={0: {"red": 1}}, tiles={("red", 3): "points1"})
    # Row [5]: every value is open, equal ones included.
    assert {"play red 3", "play red 4", "play red 5", "play red 7"} <= legal_strings(state)
    act(state, "play red 5", "draw deck")
    assert state.rows[0][0] == [5, 5] and state.direction[0][0] == 0
    pass_turn(state)
    # Row [5, 5]: still no direction, so lower and higher are both open.
    assert {"play red 3", "play red 4", "play red 7"} <= legal_strings(state)
    act(state, "play red 3", "draw deck")  # the first different value: descending
    assert state.rows[0][0] == [5, 5, 3] and state.direction[0][0] == -1
    pass_turn(state)
    legal = legal_strings(state)
    assert "play red 3" in legal  # equal is always allowed
    assert "play red 4" not in legal and "play red 7" not in legal
    assert_illegal(state, "play red 4", "descending", "R4")
    act(state, "play red 3")
    assert state.rows[0][0] == [5, 5, 3, 3] and fig(state, 0, "red") == 4


def test_r4_an_ascending_row_takes_only_equal_or_higher_cards():
    hand = ["red 2", "red 4", "red 9", "blue 0", "blue 1", "blue 2", "blue 3", "blue 4"]
    state = make_state(hands={0: hand}, rows={0: {"red": [1, 4]}}, figures={0: {"red": 2}})
    assert state.direction[0][0] == 1
    legal = legal_strings(state)
    assert {"play red 4", "play red 9"} <= legal and "play red 2" not in legal
    assert "discard red 2" in legal  # a card that cannot be played can still be discarded
    assert_illegal(state, "play red 2", "ascending", "R4")


# ---------------------------------------------------------------------------- R5
def test_r5_opening_a_path_by_a_card_with_a_small_figure():
    state = make_state(hands={0: ["yellow 7"]})
    act(state, "play yellow 7")
    assert fig(state, 0, "yellow") == 1
    assert state.large[0] == -1 and state.small_figures_left(0) == 3


def test_r5_opening_a_path_by_a_card_with_the_large_figure():
    state = make_state(hands={0: ["yellow 7"]})
    act(state, "play yellow 7 large")
    assert fig(state, 0, "yellow") == 1
    assert state.large[0] == 1 and state.small_figures_left(0) == 4
    assert state.rows[0][1] == [7]


def test_r5_each_later_card_moves_the_figure_exactly_one_stone():
    state = make_state(
        hands={0: ["pink 10", "pink 0"]},
        rows={0: {"pink": [0]}},
        figures={0: {"pink": 1}},
    )
    act(state, "play pink 10")  # whatever the value: one stone
    assert fig(state, 0, "pink") == 2 and state.phase == Phase.DRAW
    act(state, "draw deck")
    pass_turn(state)
    assert "play pink 0" not in legal_strings(state)  # now ascending (R4)
    assert_illegal(state, "play pink 0 large", "already open", "R5")  # no second figure on a path


def test_r5_at_most_one_figure_per_path():
    state = make_state(hands={0: ["red 3", "red 6"]}, rows={0: {"red": [2]}}, figures={0: {"red": 1}})
    legal = legal_strings(state)
    assert "play red 3 large" not in legal and "play red 6 large" not in legal
    assert_illegal(state, "play red 3 large", "already open", "R5")
    act(state, "play red 3")
    assert fig(state, 0, "red") == 2 and state.large[0] == -1


def test_r5_the_fifth_path_is_opened_by_whichever_figure_is_left():
    four_small = {"red": 1, "yellow": 1, "green": 1, "blue": 1}
    rows = {c: [0] for c in four_small}
    state = make_state(hands={0: ["pink 5"]}, figures={0: four_small}, rows={0: rows})
    assert "play pink 5" not in legal_strings(state) and "play pink 5 large" in legal_strings(state)
    assert_illegal(state, "play pink 5", "no small figure", "R5")
    act(state, "play pink 5 large")
    assert state.large[0] == 4 and fig(state, 0, "pink") == 1

    state = make_state(hands={0: ["pink 5"]}, figures={0: four_small}, large={0: "red"}, rows={0: rows})
    assert "play pink 5" in legal_strings(state) and "play pink 5 large" not in legal_strings(state)
    assert_illegal(state, "play pink 5 large", "large figure is already on a path")


def test_r5_completed_path_card_is_played_figure_stays_and_bonus_step_follows():
    state = make_state(
        hands={0: ["red 9", "red 2"]},
        rows={0: {"red": [0, 1, 2, 3, 4, 5, 6, 7, 8], "blue": [1]}},
        figures={0: {"red": 9, "blue": 1}},
        tiles={("red", 9): "points3", ("blue", 2): None},
        wishing={1: 1},
    )
    assert "play red 2" not in legal_strings(state)  # R4 still applies on a completed path
    act(state, "play red 9")
    assert fig(state, 0, "red") == 9 and state.rows[0][0][-1] == 9
    assert state.tile_points[0] == 0  # staying on the end stone triggers nothing (R6)
    assert state.phase == Phase.BONUS and state.current == 0
    legal = legal_strings(state)
    assert "bonus advance red" not in legal  # a figure on row 9 cannot advance (R7)
    assert {"bonus advance blue", "bonus open green small", "bonus open green large", "pass"} <= legal
    act(state, "bonus advance blue")
    assert fig(state, 0, "blue") == 2 and state.phase == Phase.DRAW


def test_r5_figures_of_different_players_share_a_stone():
    state = make_state(
        hands={0: ["green 4"]},
        rows={0: {"green": [2]}, 1: {"green": [9, 8, 8]}},
        figures={0: {"green": 2}, 1: {"green": 3}},
    )
    act(state, "play green 4")
    assert fig(state, 0, "green") == 3 and fig(state, 1, "green") == 3


@pytest.mark.parametrize(
    ("cards", "row"),
    [
        ([4], 1),  # the first card puts the figure on row 1
        ([2, 5, 7], 3),  # and each later card moves it one stone
        ([], 4),  # bonus steps open a path and advance a figure without a card (R7)
        ([2, 5, 7], 6),  # three cards and three bonus steps
        (list(range(9)), 9),  # the ninth card brings the figure onto the end stone
        ([0, 0, *range(1, 11)], 9),  # cards on a completed path do not move the figure
        ([1, 2, 3, 4, 5, 6], 9),
    ],
)
def test_r5_a_figure_stands_on_the_row_its_cards_and_bonus_steps_reach(cards, row):
    state = make_state(rows={0: {"green": cards}}, figures={0: {"green": row}})
    assert fig(state, 0, "green") == row and state.rows[0][2] == cards


@pytest.mark.parametrize(
    ("cards", "row", "least"),
    [
        ([2, 5, 7], 1, 3),  # three cards: at least row 3
        ([3, 3], 1, 2),
        (list(range(10)), 8, 9),  # ten cards: the figure reached the end stone
        ([9, 8, 7, 6, 5], 4, 5),
    ],
)
def test_r5_a_figure_behind_the_cards_played_on_its_path_is_refused(cards, row, least):
    data = make_state_dict(rows={0: {"green": cards}}, figures={0: {"green": row}})
    with pytest.raises(StateError) as info:
        GameState.from_dict(data)
    message = str(info.value)
    assert f"player 0 has played {len(cards)} green cards, but their green figure is on row {row}" in message
    assert f"so it is on row {least} or beyond (R5)" in message


# ---------------------------------------------------------------------------- R6
def test_r6_point_tile_scores_on_arrival_and_stays_on_the_board():
    state = make_state(
        hands={0: ["red 6"]}, rows={0: {"red": [1, 2, 3]}}, figures={0: {"red": 4}}, tiles={("red", 5): "points3"}
    )
    act(state, "play red 6")
    assert fig(state, 0, "red") == 5
    assert state.tile_points[0] == 3 and state.score(0) == ROW_VALUES[5] + 3 + WISHING_SCORES[0]
    assert tile_at(state, "red", 5) == "points3"
    assert state.phase == Phase.DRAW


def test_r6_point_tile_is_not_doubled_by_the_large_figure():
    state = make_state(
        hands={0: ["blue 6"]},
        rows={0: {"blue": [1, 2, 3, 4]}},
        figures={0: {"blue": 4}},
        large={0: "blue"},
        tiles={("blue", 5): "points2"},
    )
    act(state, "play blue 6")
    assert state.tile_points[0] == 2
    assert state.score(0) == 2 * ROW_VALUES[5] + 2 + WISHING_SCORES[0]


def test_r6_point_tile_scores_again_for_a_later_figure():
    state = make_state(
        hands={0: ["red 6"], 1: ["red 7"]},
        rows={0: {"red": [1, 2, 3]}, 1: {"red": [10, 9, 8]}},
        figures={0: {"red": 4}, 1: {"red": 4}},
        tiles={("red", 5): "points2"},
    )
    act(state, "play red 6", "draw deck")
    assert state.tile_points == [2, 0]
    act(state, "play red 7")
    assert fig(state, 1, "red") == 5
    assert state.tile_points == [2, 2] and tile_at(state, "red", 5) == "points2"


def test_r6_wishing_stone_leaves_the_board_with_its_new_owner():
    state = make_state(
        hands={0: ["yellow 3"], 1: ["yellow 4"]},
        rows={0: {"yellow": [1]}, 1: {"yellow": [2]}},
        figures={0: {"yellow": 1}, 1: {"yellow": 1}},
        tiles={("yellow", 2): "wish"},
    )
    act(state, "play yellow 3")
    assert state.wishing == [1, 0] and tile_at(state, "yellow", 2) is None
    assert state.phase == Phase.DRAW
    act(state, "draw deck", "play yellow 4")
    assert fig(state, 1, "yellow") == 2
    assert state.wishing == [1, 0]  # the stone is empty now
    assert GameState.from_dict(state.to_dict()) == state  # 24 tiles on the board + 1 held


def test_r6_clover_gives_a_bonus_step_and_stays():
    state = make_state(
        hands={0: ["green 1"]}, rows={0: {"green": [0, 0]}}, figures={0: {"green": 3}}, tiles={("green", 4): "clover"}
    )
    act(state, "play green 1")
    assert fig(state, 0, "green") == 4
    assert state.phase == Phase.BONUS and tile_at(state, "green", 4) == "clover"


def test_r6_tile_not_triggered_on_the_ending_move():
    # Four figures are in the goal area; the fifth arrives on a wishing stone.
    state = make_state(
        hands={0: ["red 7"]},
        rows={0: {"red": [1, 2, 3, 4, 5, 6], "yellow": [9] * 2}, 1: {"green": [0] * 2, "blue": [0] * 2}},
        figures={0: {"red": 6, "yellow": 8, "pink": 7}, 1: {"green": 7, "blue": 9}},
        tiles={("red", 7): "wish"},
    )
    assert state.goal_count == 4
    act(state, "play red 7")
    assert state.is_over and state.end == EndReason.GOAL
    assert state.wishing == [0, 0] and tile_at(state, "red", 7) == "wish"


def test_r6_tile_points_come_only_from_point_tiles_the_figures_reached():
    reached = {"rows": {0: {"red": [2, 4]}}, "figures": {0: {"red": 3}}, "tiles": {("red", 3): "points3"}}
    assert make_state(tile_points={0: 3}, **reached).tile_points == [3, 0]
    with pytest.raises(StateError, match=r"player 0 has 4 tile points, but the point tiles on the stones their "
                                         r"figures have reached are worth 3: .* once per stone \(R6\)"):
        make_state(tile_points={0: 4}, **reached)
    with pytest.raises(StateError, match=r"player 1 has 1 tile points, .* worth 0"):
        make_state(tile_points={1: 1}, **reached)


# ---------------------------------------------------------------------------- R7
def _clover_position(**extra):
    """Player 0's red figure on row 2 goes to the clover on red 3 with 'play red 4'."""
    kwargs = {
        "hands": {0: ["red 4"]},
        "rows": {0: {"red": [1, 2], "blue": [5]}},
        "figures": {0: {"red": 2, "blue": 1}},
        "tiles": {("red", 3): "clover", ("blue", 2): None, ("green", 1): None, ("yellow", 2): None},
        "wishing": {1: 3},
        "deck_top": ["pink 8"],
    }
    for key, value in extra.items():
        if isinstance(value, dict) and key in kwargs:
            merged = dict(kwargs[key])
            merged.update(value)
            kwargs[key] = merged
        else:
            kwargs[key] = value
    return make_state(**kwargs)


def test_r7_bonus_step_is_optional_pass():
    state = _clover_position()
    act(state, "play red 4")
    assert state.phase == Phase.BONUS
    before = (state.pos[0][:], state.large[0], state.tile_points[:], state.wishing[:])
    act(state, "pass")
    assert (state.pos[0], state.large[0], state.tile_points, state.wishing) == before
    assert state.phase == Phase.DRAW and state.current == 0
    act(state, "draw deck")  # the turn goes on with the draw (R3b)
    assert "pink 8" in hand_names(state, 0) and state.current == 1


def test_r7_bonus_step_advances_any_own_figure():
    state = _clover_position()
    act(state, "play red 4")
    legal = legal_strings(state)
    assert {"bonus advance red", "bonus advance blue"} <= legal
    assert not any(a.startswith("bonus advance") and a.split()[-1] not in ("red", "blue") for a in legal)
    act(state, "bonus advance blue")
    assert fig(state, 0, "blue") == 2 and fig(state, 0, "red") == 3
    assert state.phase == Phase.DRAW
    assert state.rows[0][3] == [5]  # no card is played for a bonus step


def test_r7_bonus_step_may_advance_the_figure_that_just_moved():
    state = _clover_position()
    act(state, "play red 4", "bonus advance red")
    assert fig(state, 0, "red") == 4 and state.phase == Phase.DRAW


def test_r7_bonus_open_with_small_figure():
    state = _clover_position(hands={0: ["red 4", "green 9"]})
    act(state, "play red 4", "bonus open green small")
    assert fig(state, 0, "green") == 1 and state.large[0] == -1
    assert state.small_figures_left(0) == 1  # red, blue and green hold small figures
    assert state.rows[0][2] == [] and state.phase == Phase.DRAW
    act(state, "draw deck")
    pass_turn(state)
    # The first green card now advances the figure the bonus step placed (R5).
    assert "play green 9 large" not in legal_strings(state)
    act(state, "play green 9")
    assert fig(state, 0, "green") == 2


def test_r7_bonus_open_with_large_figure():
    state = _clover_position()
    act(state, "play red 4", "bonus open yellow large")
    assert fig(state, 0, "yellow") == 1 and state.large[0] == 1
    assert state.small_figures_left(0) == 2
    assert state.phase == Phase.DRAW


def test_r7_bonus_open_needs_that_figure_on_the_start_stone():
    four_small = {"red": 2, "yellow": 1, "green": 1, "blue": 1}
    rows = {"red": [1, 2], "yellow": [0], "green": [0], "blue": [0]}
    state = make_state(hands={0: ["red 4"]}, figures={0: four_small}, rows={0: rows}, tiles={("red", 3): "clover"})
    act(state, "play red 4")
    legal = legal_strings(state)
    assert "bonus open pink large" in legal and "bonus open pink small" not in legal
    assert_illegal(state, "bonus open pink small", "no small figure")
    act(state, "bonus open pink large")
    assert fig(state, 0, "pink") == 1 and state.large[0] == 4

    state = make_state(
        hands={0: ["red 4"]}, figures={0: {"red": 2}}, large={0: "red"}, rows={0: {"red": [1, 2]}},
        tiles={("red", 3): "clover"},
    )
    act(state, "play red 4")
    legal = legal_strings(state)
    assert "bonus open pink small" in legal and not any(a.endswith("large") for a in legal)
    assert_illegal(state, "bonus open pink large", "large figure is already on a path")


def test_r7_clover_chain_into_a_second_clover():
    state = _clover_position(tiles={("blue", 2): "clover"}, wishing={1: 2})
    act(state, "play red 4")
    assert state.phase == Phase.BONUS
    act(state, "bonus advance blue")  # blue 1 -> blue 2, another clover
    assert fig(state, 0, "blue") == 2 and state.phase == Phase.BONUS
    act(state, "bonus advance red")  # red 3 -> red 4: no tile, the chain ends
    assert fig(state, 0, "red") == 4 and state.phase == Phase.DRAW
    act(state, "draw deck")
    assert state.current == 1 and len(state.hands[0]) == 8


def test_r7_clover_opens_a_new_path_with_the_large_figure_and_its_tile_acts():
    state = _clover_position(tiles={("green", 1): "points3"}, wishing={1: 2})
    act(state, "play red 4", "bonus open green large")
    assert fig(state, 0, "green") == 1 and state.large[0] == 2
    assert state.tile_points[0] == 3  # a bonus step's arrival triggers the tile (R6)
    assert state.phase == Phase.DRAW
    assert "bonus open blue large" not in legal_strings(state)


def test_r7_bonus_step_onto_a_wishing_stone_takes_it():
    state = _clover_position(tiles={("blue", 2): "wish"}, wishing={1: 2})
    act(state, "play red 4", "bonus advance blue")
    assert state.wishing[0] == 1 and tile_at(state, "blue", 2) is None


def test_r7_bonus_step_never_advances_a_figure_on_the_end_stone():
    state = _clover_position(
        figures={0: {"red": 2, "blue": 1, "yellow": 9}},
        rows={0: {"red": [1, 2], "blue": [5], "yellow": list(range(9))}},
    )
    act(state, "play red 4")
    assert "bonus advance yellow" not in legal_strings(state)
    assert_illegal(state, "bonus advance yellow", "end stone")
    assert_illegal(state, "bonus advance green", "no figure")
    assert_illegal(state, "bonus open red small", "already has a figure", "R5")


# ---------------------------------------------------------------------------- R8
_FOUR_IN_GOAL = {
    "rows": {0: {"yellow": [9] * 2, "pink": [1] * 2}, 1: {"green": [0] * 2, "blue": [0] * 2}},
    "figures": {0: {"yellow": 8, "pink": 7}, 1: {"green": 7, "blue": 9}},
}


def test_r8_fifth_figure_entering_the_goal_area_by_a_card_ends_the_game():
    state = make_state(
        hands={0: ["red 8"]},
        rows={**_FOUR_IN_GOAL["rows"], 0: {**_FOUR_IN_GOAL["rows"][0], "red": [1, 2]}},
        figures={**_FOUR_IN_GOAL["figures"], 0: {**_FOUR_IN_GOAL["figures"][0], "red": 6}},
        tiles={("red", 7): None},
        wishing={1: 1},
    )
    act(state, "play red 8")
    assert state.is_over and state.phase == Phase.OVER
    assert state.end == EndReason.GOAL and state.terminated and not state.truncated
    assert state.goal_count == 5 and state.legal_actions() == []
    assert len(state.hands[0]) == 7  # nothing further of that turn: no draw
    assert state.turn == 0
    assert_illegal(state, "draw deck", "game is over")


def test_r8_a_figure_moving_inside_the_goal_area_is_not_counted_again():
    state = make_state(
        hands={0: ["red 4"]},
        rows={0: {"red": [1, 2], "yellow": [9] * 2, "pink": [1] * 2, "blue": [3] * 2}, 1: {"green": [0] * 2}},
        figures={0: {"red": 2, "yellow": 8, "pink": 7, "blue": 7}, 1: {"green": 7}},
        tiles={("red", 3): "clover"},
    )
    assert state.goal_count == 4
    act(state, "play red 4", "bonus advance pink")  # pink 7 -> 8: already in the goal area
    assert not state.is_over and state.goal_count == 4 and fig(state, 0, "pink") == 8
    assert state.phase == Phase.DRAW


def test_r8_the_fourth_figure_in_the_goal_area_does_not_end_the_game():
    state = make_state(
        hands={0: ["red 4"]},
        rows={0: {"red": [1, 2], "yellow": [9] * 2, "pink": [1] * 2, "green": [3] * 2}, 1: {"blue": [0] * 2}},
        figures={0: {"red": 2, "yellow": 8, "pink": 7, "green": 6}, 1: {"blue": 9}},
        large={0: "green"},
        tiles={("red", 3): "clover", ("green", 7): "clover"},
    )
    assert state.goal_count == 3
    act(state, "play red 4", "bonus advance green")
    assert not state.is_over and state.goal_count == 4
    assert state.phase == Phase.BONUS  # the green 7 clover acted: the game goes on
    act(state, "pass", "draw deck")
    assert state.current == 1 and not state.is_over


def test_r8_fifth_figure_entering_the_goal_area_by_a_bonus_step_ends_the_game():
    state = make_state(
        hands={0: ["red 4"]},
        rows={0: {"red": [1, 2], "yellow": [9] * 2, "pink": [1] * 2, "green": [3] * 2}, 1: {"blue": [0] * 2}},
        figures={0: {"red": 2, "yellow": 8, "pink": 7, "green": 6}, 1: {"blue": 9, "red": 7}},
        tiles={("red", 3): "clover", ("green", 7): "clover"},
    )
    assert state.goal_count == 4
    act(state, "play red 4")
    assert state.phase == Phase.BONUS
    act(state, "bonus advance green")  # the fifth figure, by a bonus step
    assert state.is_over and state.end == EndReason.GOAL and state.goal_count == 5
    assert fig(state, 0, "green") == 7
    assert state.legal_actions() == []  # the green 7 clover gives no bonus step (R6)
    assert len(state.hands[0]) == 7 and state.turn == 0  # and there is no draw


def test_r8_drawing_the_last_card_of_the_draw_pile_ends_the_game():
    state = make_state(hands={0: ["yellow 4"]}, deck_size=1, deck_top=["blue 3"])
    act(state, "play yellow 4")
    assert not state.is_over
    act(state, "draw deck")
    assert state.is_over and state.end == EndReason.DECK and state.terminated and not state.truncated
    assert state.deck == [] and "blue 3" in hand_names(state, 0) and len(state.hands[0]) == 8
    assert state.legal_actions() == []


def test_r8_drawing_with_cards_left_or_from_a_discard_pile_does_not_end_the_game():
    state = make_state(hands={0: ["yellow 4"], 1: ["yellow 4"]}, deck_size=2, discards={"green": [3]})
    act(state, "play yellow 4", "draw deck")
    assert not state.is_over and len(state.deck) == 1
    act(state, "play yellow 4", "draw green")
    assert not state.is_over and len(state.deck) == 1


def test_r8_truncation_after_max_turns_is_not_termination():
    state = make_state(max_turns=3)
    for turn in range(1, 3):
        pass_turn(state)
        assert not state.is_over and state.turn == turn
    pass_turn(state)
    assert state.is_over and state.turn == 3
    assert state.end == EndReason.TRUNCATED and state.truncated and not state.terminated
    assert state.legal_actions() == []


def test_r8_1_a_goal_end_leaves_the_last_movers_fifth_figure_on_row_7():
    ended = {
        "rows": {0: {"yellow": [9] * 2, "pink": [1] * 2, "red": [1, 2, 8]}, 1: {"green": [0] * 2, "blue": [0] * 2}},
        "figures": {0: {"yellow": 8, "pink": 8, "red": 7}, 1: {"green": 7, "blue": 9}},
        "tiles": {("red", 7): None},
        "wishing": {1: 1},
        "phase": "over",
        "end": "goal",
    }
    state = make_state(current=0, **ended)
    assert state.terminated and state.end == EndReason.GOAL and state.goal_count == 5
    # Player 1 did not make the ending move: their figures are on rows 7 and 9, but the
    # row-7 figure of the fifth arrival is player 0's, so player 1 cannot be the last mover.
    ended["figures"] = {0: {"yellow": 8, "pink": 8, "red": 8}, 1: {"green": 8, "blue": 9}}
    ended["rows"] = {0: {**ended["rows"][0], "red": [1, 2, 3, 8]}, 1: ended["rows"][1]}
    with pytest.raises(StateError, match=r"the last mover, player 0, moved the fifth figure .* row 7 \(R8\.1\)"):
        make_state(current=0, **ended)


def test_r8_a_truncated_game_ends_at_exactly_max_turns():
    state = make_state(max_turns=3, turn=3, phase="over", end="truncated")
    assert state.truncated and state.phase == Phase.OVER
    with pytest.raises(StateError, match=r"end 'truncated' needs turn == max_turns \(3\), got turn 2 \(R8\)"):
        make_state(max_turns=3, turn=2, phase="over", end="truncated")


# ---------------------------------------------------------------------------- R9
def test_r9_figures_score_their_row_value_and_the_large_figure_doubles():
    state = make_state(
        rows={0: {"red": [0], "yellow": [0], "green": [0], "blue": [0]}},  # bonus steps did the rest
        figures={0: {"red": 1, "yellow": 4, "green": 7, "blue": 9}},
        large={0: "blue"},
        tile_points={0: 3},
        wishing={0: 1},
    )
    # red -4, yellow +1, green +6, blue 2 * 10, pink on the start stone 0; tiles 3; 1 stone -3.
    assert state.score(0) == -4 + 1 + 6 + 20 + 0 + 3 - 3
    assert state.score(1) == -4  # no figure out, no stone


def test_r9_the_large_figure_doubles_a_negative_row():
    state = make_state(rows={0: {"pink": [4, 4]}}, figures={0: {"pink": 2}}, large={0: "pink"})
    assert state.score(0) == 2 * -3 - 4
    state = make_state(rows={0: {"pink": [4, 4]}}, figures={0: {"pink": 2}})
    assert state.score(0) == -3 - 4


@pytest.mark.parametrize(("stones", "points"), [(0, -4), (1, -3), (2, 2), (3, 3), (4, 6), (5, 10), (6, 10), (9, 10)])
def test_r9_wishing_stone_table(stones, points):
    state = make_state(wishing={0: stones})
    assert state.score(0) == points


def test_r9_point_tiles_count_once_and_are_not_doubled():
    state = make_state(
        rows={0: {"red": [2]}}, figures={0: {"red": 3}}, large={0: "red"}, tile_points={0: 5},
        tiles={("red", 1): "points3", ("red", 3): "points2"},  # both passed by the large figure
    )
    assert state.score(0) == 2 * -2 + 5 - 4


def test_r9_highest_total_wins_and_ties_share_the_victory():
    state = make_state(3, figures={0: {"blue": 1}, 1: {"red": 1}}, wishing={2: 2})
    assert state.scores() == [-8, -8, 2] and state.winners() == [2]
    state = make_state(3, figures={0: {"blue": 1}, 1: {"red": 1}})
    assert state.scores() == [-8, -8, -4] and state.winners() == [2]
    state = make_state(3, figures={2: {"pink": 1}})
    assert state.winners() == [0, 1]  # both tied on -4: they share the victory


# ---------------------------------------------------------------------------- R10
_VIEW_FIELDS = {
    "player", "config", "num_players", "current_player", "first_player", "phase", "end", "turn", "hand",
    "hand_sizes", "rows", "directions", "positions", "large", "tiles", "dark_rows", "wishing", "tile_points",
    "discards", "deck_size", "discarded_color", "goal_count", "legal_actions", "scores",
}


def test_r10_a_players_view_holds_no_hidden_card():
    data = make_state_dict(
        hands={0: ["red 1", "red 2", "red 3", "red 4", "red 5", "red 6", "red 7", "red 8"]},
        rows={1: {"blue": [4, 6]}},
        figures={1: {"blue": 2}},
        discards={"green": [1, 2, 3]},
    )
    state = GameState.from_dict(data)
    view = state.view(0)
    assert {f.name for f in dataclasses.fields(PlayerView)} == _VIEW_FIELDS  # no field for hidden cards
    assert view.hand == tuple(state.hands[0])
    assert view.hand_sizes == (8, 8) and view.deck_size == len(state.deck)
    # The same position with the hidden cards (player 1's hand, draw pile, removed)
    # dealt differently gives player 0 exactly the same view.
    hidden = data["players"][1]["hand"] + data["deck"] + data["removed"]
    shuffled = hidden[::-1]
    other = dict(data)
    other["players"] = [data["players"][0], {**data["players"][1], "hand": shuffled[:8]}]
    other["deck"], other["removed"] = shuffled[8 : 8 + len(data["deck"])], shuffled[8 + len(data["deck"]) :]
    other_state = GameState.from_dict(other)
    assert other_state.hands[1] != state.hands[1] and other_state.deck != state.deck
    assert other_state.view(0) == view
    assert other_state.view(1) != state.view(1)  # player 1's own hand is in their view


def test_r10_public_information_is_in_every_view():
    state = make_state(
        rows={1: {"blue": [4, 6]}, 0: {"red": [3]}},
        figures={1: {"blue": 2}, 0: {"red": 1}},
        large={0: "red"},
        discards={"green": [1, 2, 3]},
        wishing={1: 1},
        tiles={("red", 1): "points2"},
        tile_points={0: 2},
    )
    view = state.view(0)
    assert view.rows[1][3] == (4, 6) and view.positions[1][3] == 2 and view.large == (0, -1)
    assert view.discards[2] == (1, 2, 3)  # buried discards included
    assert view.wishing == (0, 1) and view.tile_points == (2, 0)
    assert view.tiles == tuple(tuple(t) for t in state.tiles)
    assert view.scores == tuple(state.scores())
    assert view.legal_actions == tuple(state.legal_actions()) and state.view(1).legal_actions == ()


# ---------------------------------------------------------------------------- illegal actions
@pytest.mark.parametrize(
    ("position", "action", "reason"),
    [
        ({"hands": {0: ["red 1"] * 2 + ["yellow 1"] * 2 + ["green 1"] * 2 + ["blue 1"] * 2}}, "play pink 3",
         "no pink 3 in hand"),
        ({}, "draw deck", "draw step"),
        ({}, "pass", "bonus step"),
        ({}, "bonus advance red", "bonus step"),
        ({"phase": "draw"}, "discard red 0", "play step"),
        ({"phase": "bonus", "figures": {0: {"red": 1}}, "tiles": {("red", 1): "clover"}}, "draw deck", "bonus"),
        ({"phase": "draw", "discards": {"red": [4]}, "discarded_color": "red"}, "draw red", "closed"),
        ({"phase": "draw"}, "draw yellow", "empty"),
        ({"phase": "over", "end": "truncated", "turn": 3, "max_turns": 3}, "draw deck", "game is over"),
    ],
)
def test_illegal_actions_raise_action_error_and_leave_the_state_unchanged(position, action, reason):
    state = make_state(**position)
    assert_illegal(state, action, reason, f"player {state.current}")


def test_illegal_action_ids_out_of_range_raise():
    state = make_state()
    before = state.to_dict()
    for bad in (-1, 187, 10**6, True, 3.0, "1"):
        with pytest.raises(ActionError, match=r"ids are integers 0\.\.186"):
            state.apply(bad)
    assert state.to_dict() == before
