"""Scenario tests for the Keltis dice game, one or more per rule of docs/rules.md R11.

Positions are built directly (:func:`position`, validated by ``GameState.from_dict``),
decisions are scripted as readable actions, and the state after them is checked. The
dice of a re-roll come from the state's seed and roll counter (``roll_faces``), so the
tests either compute them or pick a roll index whose outcome they need.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from dice_helpers import act, faces, legal, position, row

from keltis_env.games.dice import (
    ACTION_RANGES,
    NUM_ACTIONS,
    ActionError,
    ConfigError,
    EndReason,
    GameConfig,
    GameRecord,
    GameState,
    Phase,
    PlayerView,
    RecordError,
    StateError,
    action_to_string,
    roll_faces,
    sample_state,
    string_to_action,
)
from keltis_env.games.dice.constants import (
    BONUS_SYMBOLS,
    CLOVER,
    COLORS,
    DEFAULT_BONUS_SQUARES,
    EXTRA_TURN,
    FACE_NAMES,
    NO_BONUS,
    SCORE_MAX,
    SCORE_MIN,
    STONE,
    STONE_SCORES,
    UPPER_MARKERS_TO_END,
    stone_score,
)

STONE_FACE_NAME = "stone"


def roll_index_where(seed: int, count: int, wanted, start: int = 1) -> int:
    """The first roll index >= start whose ``count`` thrown dice satisfy ``wanted``."""
    for index in range(start, start + 5000):
        if wanted([FACE_NAMES[f] for f in roll_faces(seed, index, count)]):
            return index
    raise AssertionError("no such roll in 5000 tries")


# ---------------------------------------------------------------------- R11: static facts
def test_r11_board_default_bonus_layout_and_stone_table():
    # column: row=symbol, as docs/rules.md R11 lists them.
    expected = {
        "red": {2: CLOVER, 4: STONE, 6: EXTRA_TURN},
        "yellow": {2: STONE, 5: EXTRA_TURN, 7: CLOVER},
        "green": {3: EXTRA_TURN, 5: CLOVER, 8: STONE},
        "blue": {3: CLOVER, 6: STONE, 8: EXTRA_TURN},
        "pink": {3: STONE, 4: CLOVER, 7: STONE},
    }
    for c, name in enumerate(COLORS):
        assert {r: s for r, s in enumerate(DEFAULT_BONUS_SQUARES[c]) if s != NO_BONUS} == expected[name]
    assert Counter(BONUS_SYMBOLS) == {STONE: 6, CLOVER: 5, EXTRA_TURN: 4}
    assert STONE_SCORES == (-10, -4, -3, -2, 1, 2, 3, 6, 7, 10)
    assert [stone_score(k) for k in range(13)] == [-10, -4, -3, -2, 1, 2, 3, 6, 7, 10, 10, 10, 10]
    assert UPPER_MARKERS_TO_END == {2: 5, 3: 7, 4: 8}
    assert (SCORE_MIN, SCORE_MAX) == (-26, 50)
    assert NUM_ACTIONS == 48
    assert list(ACTION_RANGES) == ["keep", "reroll", "move", "pass", "bonus_advance", "bonus_enter"]


def test_r11_scoring_rows_without_doubling_plus_the_stone_table():
    s = position(markers={0: {"red": 1, "yellow": 4, "green": 7, "blue": 9}, 1: {"pink": 3}}, stones={0: 9, 1: 0},
                 turn=20)
    assert s.scores() == [-4 + 1 + 6 + 10 + 10, -2 - 10]
    for stones, points in enumerate(STONE_SCORES):
        assert position(stones={0: stones}, turn=20).score(0) == points
    assert position(stones={0: 15}, turn=20).score(0) == 10  # 9 or more score +10
    tied = position(markers={0: {"red": 4}, 1: {"blue": 4}})
    assert tied.winners() == [0, 1]  # ties share the victory


# ---------------------------------------------------------------------- R11.1-2: roll and re-roll
def test_r11_1_a_turn_starts_with_all_five_dice_rolled_then_the_reroll_step():
    s = GameState.new_game(GameConfig(num_players=3), seed=11)
    assert s.phase == Phase.REROLL and s.rolls == 1
    assert s.dice == tuple(sorted(roll_faces(11, 0, 5)))
    assert legal(s) == {"keep"} | {action_to_string(a) for a in range(1, 32)}
    assert len(s.legal_actions()) == 32


def test_r11_2_keep_changes_no_die():
    s = position(phase="reroll", dice=("red", "red", "blue", "pink", "stone"))
    act(s, "keep")
    assert s.dice == faces(["red", "red", "blue", "pink", "stone"])
    assert s.phase == Phase.MOVE and s.rolls == 1


def test_r11_2_reroll_throws_exactly_the_chosen_dice_once():
    s = position(phase="reroll", dice=("red", "red", "green", "blue", "stone"), seed=5, rolls=3)
    # dice 1..5 in the state's sorted order: red, red, green, blue, stone
    act(s, "reroll 1,3,5")
    thrown = roll_faces(5, 3, 3)
    assert s.dice == tuple(sorted([0, 3, *thrown]))  # the second red and the blue are kept
    assert s.rolls == 4 and s.phase == Phase.MOVE
    with pytest.raises(ActionError, match="reroll step"):
        s.apply(string_to_action("reroll 1"))  # a single re-roll per turn


def test_r11_2_reroll_strings_and_ids():
    assert string_to_action("reroll 1,3,4") == 0b01101
    assert string_to_action("reroll 4 1 3") == 0b01101
    assert action_to_string(31) == "reroll 1,2,3,4,5"
    assert string_to_action("keep") == 0
    for bad in ("reroll", "reroll 0", "reroll 6", "reroll 1,1", "reroll a", "move", "move purple", "bonus red"):
        with pytest.raises(ActionError, match="cannot read action"):
            string_to_action(bad)


def test_actions_round_trip_through_their_readable_form():
    for a in range(NUM_ACTIONS):
        assert string_to_action(action_to_string(a)) == a
    assert action_to_string(string_to_action("move green")) == "move green"
    assert action_to_string(string_to_action("bonus advance red")) == "bonus advance red"
    assert action_to_string(string_to_action("bonus enter blue")) == "bonus enter blue"
    assert action_to_string(string_to_action("pass")) == "pass"
    for bad in (-1, NUM_ACTIONS, True, 2.0):
        with pytest.raises(ActionError, match="out of range"):
            action_to_string(bad)


# ---------------------------------------------------------------------- R11.3: the stone rule
@pytest.mark.parametrize(
    ("dice", "gained"),
    [
        (("red", "red", "blue", "pink", "green"), 0),
        (("red", "red", "blue", "pink", "stone"), 0),  # one stone face gives nothing
        (("red", "red", "blue", "stone", "stone"), 1),
        (("red", "blue", "stone", "stone", "stone"), 1),  # three stone faces: still one stone
        (("stone",) * 5, 1),
    ],
)
def test_r11_3_two_or_more_stone_faces_give_exactly_one_stone(dice, gained):
    s = position(phase="reroll", dice=dice, stones={0: 2, 1: 4}, turn=6)
    act(s, "keep")
    assert s.stones == [2 + gained, 4]


def test_r11_3_the_stone_rule_reads_the_dice_after_the_reroll():
    seed = 3
    # Two stone faces thrown again; the roll index is one where both come up colours.
    index = roll_index_where(seed, 2, lambda f: STONE_FACE_NAME not in f)
    s = position(phase="reroll", dice=("red", "red", "blue", "stone", "stone"), seed=seed, rolls=index)
    act(s, "reroll 4,5")
    assert s.stones[0] == 0
    # ... and two colours thrown again can bring the two stone faces that give one.
    index = roll_index_where(seed, 2, lambda f: f == [STONE_FACE_NAME] * 2)
    s = position(phase="reroll", dice=("red", "red", "blue", "pink", "pink"), seed=seed, rolls=index)
    act(s, "reroll 4,5")
    assert s.stones[0] == 1 and s.counts[5] == 2


def test_r11_3_and_r11_5_a_turn_gives_at_most_two_stones():
    # after 3 turns: at most 6 stones in all; once the next roll is kept, at most 7
    assert sum(position(phase="reroll", stones={0: 4, 1: 2}, turn=3).stones) == 6
    assert sum(position(phase="move", stones={0: 4, 1: 3}, turn=3).stones) == 7
    with pytest.raises(StateError, match=r"the players hold 7 stones in all after 3 turns; a turn gives at most 2 "
                                         r"\(one by the roll, R11.3, one by a stone square, R11.5\), so at most 6"):
        position(phase="reroll", stones={0: 4, 1: 3}, turn=3)
    with pytest.raises(StateError, match="so at most 7 here"):
        position(phase="move", stones={0: 8}, turn=3)


# ---------------------------------------------------------------------- R11.4: moving
def test_r11_4_a_marker_moves_exactly_as_many_rows_as_dice_show_its_colour():
    s = position(markers={0: {"blue": 1}}, dice=("blue", "blue", "blue", "red", "stone"))
    act(s, "move blue")
    assert row(s, 0, "blue") == 4
    assert s.current == 1 and s.phase == Phase.REROLL and s.turn == 1  # no bonus on blue 4


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_r11_4_a_new_marker_enters_on_row_k_with_k_dice(k):
    dice = ("pink",) * k + ("stone",) * (5 - k)
    s = position(markers={0: {"red": 5}}, dice=dice, max_turns=500)
    act(s, "move pink")
    assert row(s, 0, "pink") == k
    assert s.markers[0] == 2


def test_r11_4_only_colours_shown_can_be_chosen_and_moving_is_mandatory():
    s = position(markers={0: {"red": 4}}, dice=("red", "green", "green", "stone", "stone"))
    assert legal(s) == {"move red", "move green"}
    with pytest.raises(ActionError, match="no die shows yellow"):
        s.apply(string_to_action("move yellow"))
    with pytest.raises(ActionError, match="mandatory"):
        s.apply(string_to_action("pass"))


def test_r11_4_at_most_four_markers_a_fifth_column_cannot_be_entered():
    four = {"red": 1, "yellow": 4, "green": 5, "blue": 6}
    s = position(markers={0: four}, dice=("red", "pink", "pink", "pink", "stone"))
    assert legal(s) == {"move red"}
    before = s.to_dict()
    with pytest.raises(ActionError, match="all 4 markers on the board"):
        s.apply(string_to_action("move pink"))
    assert s.to_dict() == before  # an illegal action changes nothing


def test_r11_4_a_marker_stops_on_row_9():
    s = position(markers={0: {"green": 6}}, dice=("green",) * 5)
    act(s, "move green")
    assert row(s, 0, "green") == 9


def test_r11_4_a_column_whose_marker_is_on_row_9_cannot_be_chosen():
    s = position(markers={0: {"green": 9, "red": 2}}, dice=("red", "green", "green", "stone", "blue"))
    assert legal(s) == {"move red", "move blue"}
    with pytest.raises(ActionError, match="row 9"):
        s.apply(string_to_action("move green"))


def test_r11_4_when_no_colour_can_be_chosen_nothing_moves_and_the_turn_passes():
    markers = {0: {"red": 9, "yellow": 2, "green": 3, "blue": 1}}  # 4 markers, red done
    s = position(markers=markers, dice=("red", "red", "pink", "stone", "stone"), stones={0: 1})
    assert legal(s) == {"pass"}
    act(s, "pass")
    assert s.pos[0] == [9, 2, 3, 1, 0]
    assert s.stones[0] == 1  # (the stone of step 3 was taken before)
    assert s.current == 1 and s.turn == 1 and s.phase == Phase.REROLL


# ---------------------------------------------------------------------- R11.5: bonus squares
def test_r11_5_stone_square_gives_a_stone_where_the_move_ends_only():
    s = position(markers={0: {"red": 3}}, dice=("red", "blue", "blue", "pink", "green"))
    act(s, "move red")  # red 4 is a stone square
    assert s.stones[0] == 1 and s.current == 1
    s = position(markers={0: {"red": 3}}, dice=("red", "red", "blue", "pink", "green"))
    act(s, "move red")  # passes red 4, ends on red 5: nothing
    assert row(s, 0, "red") == 5 and s.stones[0] == 0


def test_r11_5_clover_moves_any_own_marker_one_row_up():
    s = position(markers={0: {"red": 1, "blue": 4}}, dice=("red", "yellow", "green", "blue", "pink"))
    act(s, "move red")  # red 2 is a clover
    assert s.phase == Phase.BONUS and s.current == 0
    # advance any own marker not on row 9, or enter a column without one on row 1
    assert legal(s) == {"bonus advance red", "bonus advance blue"} | {
        f"bonus enter {c}" for c in ("yellow", "green", "pink")
    }
    act(s, "bonus advance blue")
    assert row(s, 0, "blue") == 5 and s.current == 1 and s.phase == Phase.REROLL


def test_r11_5_clover_can_enter_a_new_marker_on_row_1():
    s = position(markers={0: {"red": 1}}, dice=("red", "yellow", "green", "blue", "pink"))
    act(s, "move red", "bonus enter green")
    assert row(s, 0, "green") == 1 and s.markers[0] == 2


def test_r11_5_clover_steps_chain_into_further_bonuses():
    # blue 2 -> 3 is a clover; its step pink 3 -> 4 is another clover; then red 3 -> 4 a stone.
    s = position(markers={0: {"blue": 2, "pink": 3, "red": 3}}, dice=("blue", "red", "red", "red", "green"))
    act(s, "move blue")
    assert s.phase == Phase.BONUS
    act(s, "bonus advance pink")
    assert s.phase == Phase.BONUS and s.current == 0
    act(s, "bonus advance red")
    assert s.stones[0] == 1 and s.current == 1 and s.phase == Phase.REROLL


def test_r11_5_clover_with_four_markers_cannot_enter_and_skips_row_9():
    s = position(markers={0: {"red": 1, "yellow": 9, "green": 5, "blue": 6}}, dice=("red",) + ("stone",) * 4)
    act(s, "move red")
    assert legal(s) == {"bonus advance red", "bonus advance green", "bonus advance blue"}
    with pytest.raises(ActionError, match="all 4 markers"):
        s.apply(string_to_action("bonus enter pink"))
    with pytest.raises(ActionError, match="row 9"):
        s.apply(string_to_action("bonus advance yellow"))


def test_r11_5_extra_turn_gives_a_whole_new_turn_to_the_same_player():
    s = position(
        phase="reroll", markers={0: {"red": 5}}, dice=("red", "yellow", "yellow", "stone", "stone"), seed=8, rolls=2
    )
    act(s, "keep", "move red")  # red 6: extra turn
    assert s.current == 0 and s.extra_turn and s.turn == 1
    assert s.phase == Phase.REROLL  # steps 1-5 again: a fresh roll of all five dice
    assert s.dice == tuple(sorted(roll_faces(8, 2, 5))) and s.rolls == 3
    assert s.stones[0] == 1  # from the first turn's stone rule
    act(s, "keep")
    moves = s.legal_actions()
    s.apply(moves[0])
    if s.phase == Phase.REROLL:  # the extra turn is over unless it earned another
        assert (s.current, s.extra_turn) in ((1, False), (0, True))


def test_r11_5_a_clover_chain_that_ends_on_an_extra_turn_square_gives_the_extra_turn():
    # red 1 -> 2 (clover), then yellow 4 -> 5 (extra turn)
    s = position(markers={0: {"red": 1, "yellow": 4}}, dice=("red", "green", "green", "blue", "pink"))
    act(s, "move red", "bonus advance yellow")
    assert s.current == 0 and s.extra_turn and s.phase == Phase.REROLL and s.turn == 1


def test_r11_5_in_an_extra_turn_a_clover_still_chains():
    # the extra turn itself: blue 2 -> 3 is a clover, whose step enters a new marker.
    s = position(markers={0: {"blue": 2}}, dice=("blue", "red", "red", "stone", "green"), extra_turn=True, turn=1)
    act(s, "move blue", "bonus enter pink")
    assert row(s, 0, "pink") == 1 and s.current == 1 and not s.extra_turn


def test_r11_5_a_pending_clover_step_lies_under_a_marker_of_the_player_to_move():
    # red 2 is a clover: after "move red" from red 1 the position is in the bonus step
    s = position(markers={0: {"red": 2, "blue": 4}}, phase="bonus")
    assert s.phase == Phase.BONUS and "bonus advance blue" in legal(s)
    # red 3 and blue 4 are plain squares: no move of player 0 can have ended on a clover
    with pytest.raises(StateError, match=r"phase 'bonus': .* player 0's move ended on a clover square \(R11\.5\)"):
        position(markers={0: {"red": 3, "blue": 4}}, phase="bonus")
    # the clover under player 1's marker is no bonus of player 0's
    with pytest.raises(StateError, match="none of their markers is on one"):
        position(markers={0: {"red": 3}, 1: {"red": 2}}, phase="bonus")


# ---------------------------------------------------------------------- R11 end
def test_r11_end_one_player_with_all_four_markers_in_the_upper_zone():
    markers = {0: {"red": 7, "yellow": 8, "green": 9, "blue": 5}, 1: {"red": 7}}
    s = position(3, markers=markers, dice=("blue", "blue", "red", "stone", "pink"))
    act(s, "move blue")
    assert s.is_over and s.end == EndReason.ALL_UPPER and s.terminated and not s.truncated
    assert s.upper_total == 5 < UPPER_MARKERS_TO_END[3]
    assert s.legal_actions() == []


@pytest.mark.parametrize(("num_players", "end_count"), [(2, 5), (3, 7), (4, 8)])
def test_r11_end_the_upper_zone_count_reaching_5_7_8(num_players, end_count):
    # spread end_count - 1 markers over the players, at most 3 each (never all 4 of one)
    markers: dict[int, dict[str, int]] = {p: {} for p in range(num_players)}
    placed = 0
    for c in COLORS[:3]:
        for p in range(num_players):
            if placed < end_count - 1:
                markers[p][c] = 8
                placed += 1
    markers[0]["pink"] = 6
    s = position(num_players, markers=markers, dice=("pink", "red", "yellow", "green", "stone"))
    assert s.upper_total == end_count - 1 and not s.is_over
    act(s, "move pink")
    assert s.is_over and s.end == EndReason.UPPER_COUNT and s.upper_total == end_count


def test_r11_end_one_below_the_count_does_not_end():
    s = position(3, markers={0: {"red": 7, "yellow": 7}, 1: {"red": 7, "blue": 8}, 2: {"pink": 6}}, current=2,
                 dice=("pink", "red", "red", "red", "red"))
    act(s, "move pink")
    assert not s.is_over and s.upper_total == 5


def test_r11_end_the_ending_moves_bonus_is_not_applied():
    # Four markers up; pink 7 is a stone square and yellow 7 a clover: neither acts on
    # the move that brings the fifth marker up.
    markers = {0: {"red": 8, "green": 8, "pink": 5}, 1: {"blue": 9, "red": 7, "yellow": 6}}
    s = position(markers=markers, dice=("pink", "pink", "stone", "red", "red"))
    act(s, "move pink")
    assert s.is_over and s.end == EndReason.UPPER_COUNT
    assert s.stones[0] == 0 and row(s, 0, "pink") == 7
    s = position(markers=markers, dice=("yellow", "pink", "stone", "red", "red"), current=1)
    act(s, "move yellow")
    assert s.is_over and s.phase == Phase.OVER and row(s, 1, "yellow") == 7 and s.legal_actions() == []
    # the same moves one marker earlier in the game do get their bonus
    markers[1].pop("red")
    s = position(markers=markers, dice=("pink", "pink", "stone", "red", "red"))
    act(s, "move pink")
    assert not s.is_over and s.stones[0] == 1


def test_r11_end_a_clover_step_can_end_the_game():
    markers = {0: {"red": 1, "blue": 6, "green": 8}, 1: {"green": 7, "blue": 9}}
    s = position(markers=markers, dice=("red", "yellow", "yellow", "stone", "pink"))
    act(s, "move red")  # red 2: clover
    act(s, "bonus advance blue")  # blue 6 -> 7: the fourth... and fifth marker up
    assert s.upper_total == 4 and not s.is_over
    markers[1]["red"] = 8
    s = position(markers=markers, dice=("red", "yellow", "yellow", "stone", "pink"))
    act(s, "move red", "bonus advance blue")
    assert s.is_over and s.end == EndReason.UPPER_COUNT


def test_r11_end_max_turns_truncates():
    s = position(markers={0: {"red": 3}}, dice=("red", "blue", "blue", "green", "green"), max_turns=1)
    act(s, "move green")
    assert s.is_over and s.end == EndReason.TRUNCATED and s.truncated and not s.terminated and s.turn == 1
    s = GameState.new_game(GameConfig(max_turns=3), seed=2)
    while not s.is_over:
        s.apply(s.legal_actions()[0])
    assert s.turn == 3 and s.truncated


def test_r11_end_the_last_mover_made_the_ending_move():
    four_up = {"red": 7, "yellow": 8, "green": 9, "blue": 7}
    s = position(markers={1: four_up}, current=1, phase="over", end="all_upper")
    assert s.terminated and s.end == EndReason.ALL_UPPER
    with pytest.raises(StateError, match=r"end 'all_upper': the last mover, player 0, is the one player with all 4"):
        position(markers={1: four_up}, current=0, phase="over", end="all_upper")
    five_up = {0: {"red": 8, "green": 8, "pink": 7}, 1: {"blue": 9, "yellow": 7}}
    s = position(markers=five_up, current=1, phase="over", end="upper_count")
    assert s.end == EndReason.UPPER_COUNT
    eight_up = {0: {"red": 8, "green": 8, "pink": 7}, 1: {"blue": 3}, 2: {"red": 9, "blue": 7, "yellow": 7},
                3: {"green": 7, "pink": 9}}
    with pytest.raises(StateError, match="the last mover, player 1, moved the marker that ended the game into the"):
        position(4, markers=eight_up, current=1, phase="over", end="upper_count")


# ---------------------------------------------------------------------- errors and options
def test_illegal_actions_name_the_action_and_the_reason_and_change_nothing():
    s = position(phase="reroll")
    before = s.to_dict()
    cases = {
        "move red": "move step",
        "bonus advance red": "clover bonus",
        "pass": "move step",
    }
    for text, reason in cases.items():
        with pytest.raises(ActionError, match=rf"illegal action \d+ \({text}\) for player 0: .*{reason}"):
            s.apply(string_to_action(text))
    for bad in (-1, 48, "keep", None):
        with pytest.raises(ActionError, match=r"0\.\.47"):
            s.apply(bad)
    assert s.to_dict() == before
    over = position(markers={0: {"red": 9, "yellow": 9, "green": 9, "blue": 9}}, end="all_upper", phase="over")
    with pytest.raises(ActionError, match="game is over"):
        over.apply(0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_players": 1}, "num_players"),
        ({"num_players": 5}, "num_players"),
        ({"num_players": True}, "num_players"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": 2.5}, "max_turns"),
        ({"bonus_layout": "odd"}, "bonus_layout"),
        ({"bonus_layout": [{}] * 4}, "bonus_layout"),
        ({"bonus_layout": [{10: "stone"}] + [{}] * 4}, "row 10"),
        ({"bonus_layout": [{2: "gold"}] + [{}] * 4}, "unknown symbol 'gold'"),
    ],
)
def test_invalid_options_raise_clear_errors(options, message):
    with pytest.raises(ConfigError, match=message):
        GameConfig(**options)


def test_unknown_options_are_named():
    with pytest.raises(ConfigError, match="unknown game option"):
        GameConfig.from_dict({"num_players": 2, "tiles": "x"})


def test_explicit_layouts_as_mappings_or_lists_give_the_same_board():
    as_maps = [{2: "clover"}, {"3": "stone", 9: "extra"}, {}, {}, {1: None}]
    as_lists = [[None, "clover"] + [None] * 7, [None, None, "stone"] + [None] * 5 + ["extra"], [None] * 9,
                [None] * 9, [None] * 9]
    a, b = GameConfig(bonus_layout=as_maps), GameConfig(bonus_layout=as_lists)
    assert a == b and a.bonus_squares()[1][9] == EXTRA_TURN
    assert GameConfig.from_dict(a.to_dict()) == a
    s = GameState.new_game(a, seed=1)
    assert GameState.from_dict(s.to_dict()) == s
    assert a.max_decisions_per_turn() == 3  # one clover on the board


def test_the_declared_game_length_holds_on_a_board_of_clovers():
    """Clover chains (R11.5) make turns long on such a board: the game's declared
    maximum length follows the layout's clovers."""
    from keltis_env.games.dice import GAME

    config = GameConfig(bonus_layout=[["clover"] * 9] * 5, max_turns=3)
    assert GAME.max_game_length(config) == 3 * config.max_decisions_per_turn() == 3 * (2 + 45)
    longest = 0
    for seed in range(60):
        s = GameState.new_game(config, seed=seed)
        rng, decisions = random.Random(seed), 0
        while not s.is_over:
            s.apply(rng.choice(s.legal_actions()))
            decisions += 1
        longest = max(longest, decisions)
    assert 3 * (2 + 5) < longest <= GAME.max_game_length(config)  # more than the default board allows


def test_random_layout_keeps_the_symbol_counts_and_follows_the_seed():
    config = GameConfig(bonus_layout="random")
    boards = [GameState.new_game(config, seed=seed).bonus for seed in range(20)]
    for board in boards:
        assert sorted(code for column in board for code in column if code) == sorted(BONUS_SYMBOLS)
        assert all(sum(1 for code in column if code) == 3 and not column[1] and not column[9] for column in board)
    assert len(set(boards)) > 10
    assert GameState.new_game(config, seed=3).bonus == boards[3]


# ---------------------------------------------------------------------- state dicts, views, records
def test_state_dicts_refuse_broken_invariants_naming_them():
    good = position(markers={0: {"red": 3}}).to_dict()

    def broken(**changes: Any) -> dict[str, Any]:
        data = {**good, **changes}
        return data

    five = {"players": [{"markers": dict.fromkeys(COLORS, 2), "stones": 0}, good["players"][1]]}
    cases = [
        (broken(**five), "5 markers on the board"),
        (broken(dice=["red"] * 4), "'dice' must list 5 faces"),
        (broken(dice=["red"] * 4 + ["gold"]), "'dice' must list 5 faces"),
        (broken(phase="over"), "phase 'over' goes with an end reason"),
        (broken(end="all_upper", phase="over"), "all_upper"),
        (broken(turn=600), "'turn' must be an integer in 0..500"),
        (broken(format="keltis-state"), "expected format"),
        (broken(extra_turn=1), "extra_turn"),
        (broken(options={"num_players": 7}), "num_players"),
        (broken(bonus_squares={**good["bonus_squares"], "red": [None] * 9}), "bonus_squares differ"),
        (broken(players=good["players"][:1]), "must list 2 players"),
    ]
    renamed = {"players": [{"marker": good["players"][0]["markers"], "stones": 0}, good["players"][1]]}
    cases += [
        (broken(score=[1, 2]), r"unknown key\(s\) \['score'\] in the state; allowed keys are format, version"),
        (broken(**renamed), r"unknown key\(s\) \['marker'\] in players\[0\]; allowed keys are markers, stones"),
        (broken(players=[{"markers": good["players"][0]["markers"]}, good["players"][1]]),
         r"players\[0\] lacks the key\(s\) stones"),
        (broken(players=[{**good["players"][0], "colour": "red"}, good["players"][1]]),
         r"unknown key\(s\) \['colour'\]"),
    ]
    up = {"players": [{"markers": {**dict.fromkeys(COLORS, 0), "red": 7, "yellow": 7, "green": 7}, "stones": 0},
                      {"markers": {**dict.fromkeys(COLORS, 0), "red": 8, "blue": 8}, "stones": 0}]}
    cases.append((broken(**up), "end 'upper_count' goes with exactly 5"))
    for data, message in cases:
        with pytest.raises(StateError, match=message):
            GameState.from_dict(data)
    with pytest.raises(StateError, match=r"'players\[0\]' must be a dict, got NoneType"):
        GameState.from_dict({**good, "players": [None, None]})


def test_views_hold_everything_public_and_not_the_future_dice():
    s = GameState.new_game(GameConfig(num_players=3), seed=4)
    v = s.view((s.current + 1) % 3)
    assert isinstance(v, PlayerView)
    assert not hasattr(v, "seed") and not hasattr(v, "rolls") and not hasattr(v, "key")
    assert v.legal_actions == () and s.view(s.current).legal_actions == tuple(s.legal_actions())
    assert v.dice == s.dice and v.positions == tuple(map(tuple, s.pos)) and v.scores == tuple(s.scores())
    with pytest.raises(ValueError, match="player 3 does not exist"):
        s.view(3)
    # a state rebuilt from a view plays on legally, with dice of the caller's seed
    t = sample_state(s.view(s.current), random.Random(99))
    assert t.legal_actions() == s.legal_actions() and t.seed == random.Random(99).getrandbits(63)
    t.apply(0)
    assert t.phase == Phase.MOVE


def test_records_replay_the_game_dice_included(tmp_path):
    record, state = GameRecord.start(GameConfig(num_players=3, bonus_layout="random"), seed=21, players=["a", "b", "c"])
    while not state.is_over:
        action = state.legal_actions()[-1]
        state.apply(action)
        record.actions.append(action)
    data = record.to_dict()
    assert data["game"] == "dice" and data["end"] in ("all_upper", "upper_count")
    assert data["final_scores"] == state.scores()
    path = tmp_path / "game.json"
    record.save(path)
    assert GameRecord.load(path).replay() == state
    from keltis_env.core.game import load_record

    assert load_record(path).replay() == state
    with pytest.raises(RecordError, match="final scores"):
        GameRecord.from_dict({**data, "final_scores": [0, 0, 0]})




def test_records_name_the_malformed_field_and_replay_only_0_to_len_actions():
    record, state = GameRecord.start(GameConfig(), seed=5)
    for _ in range(9):
        action = state.legal_actions()[0]
        state.apply(action)
        record.actions.append(action)
    data = record.to_dict()
    with pytest.raises(RecordError, match=r"actions\[2\] must be an action written as text, such as 'keep', got 7"):
        GameRecord.from_dict({**data, "actions": [*data["actions"][:2], 7]})
    with pytest.raises(RecordError, match=r"actions\[1\]: cannot read action 'move gold'"):
        GameRecord.from_dict({**data, "actions": [data["actions"][0], "move gold"]})
    with pytest.raises(RecordError, match=r"the record lacks the key\(s\) setup"):
        GameRecord.from_dict({k: v for k, v in data.items() if k != "setup"})
    for upto in (-1, 10, "3"):
        with pytest.raises(RecordError, match="an integer from 0 to 9"):
            record.replay(upto)
    assert record.replay(0) == GameState.new_game(GameConfig(), seed=5) and record.replay(9) == state
