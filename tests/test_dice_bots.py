"""The dice game's bots: registration, the heuristic's documented choices, its strength."""

from __future__ import annotations

from dice_helpers import position

from keltis_env.bots import RandomBot, bot_names, make_bot
from keltis_env.core.rewards import win_shares
from keltis_env.games.dice import DiceConfig, DiceState, action_to_string, string_to_action
from keltis_env.games.dice.bots.heuristic import DiceHeuristicBot


def choice(bot, state: DiceState) -> str:
    return action_to_string(bot.act(state.view(state.current_player)))


def test_both_bots_are_registered_for_the_dice_game():
    assert {"random", "heuristic"} <= set(bot_names("dice"))
    assert isinstance(make_bot("random", game="dice"), RandomBot)
    assert isinstance(make_bot("heuristic", game="dice"), DiceHeuristicBot)
    bot = make_bot("heuristic:extra_turn_value=4", seed=1, game="dice")
    assert isinstance(bot, DiceHeuristicBot) and bot.extra_turn_value == 4.0


def test_heuristic_advances_rather_than_entering_a_new_column_on_row_1():
    s = position(markers={0: {"red": 3}}, dice=("red", "blue", "stone", "stone", "stone"))
    assert choice(DiceHeuristicBot(), s) == "move red"  # red 3 -> 4: +3 (and a stone); blue 1: -4


def test_heuristic_takes_the_winning_end_and_avoids_the_losing_one():
    # "move pink" (pink 6 -> 7) brings the fifth marker into the upper zone and ends the game
    markers = {0: {"red": 8, "green": 8, "pink": 6}, 1: {"blue": 9, "yellow": 7}}
    ahead = position(markers=markers, stones={0: 5}, dice=("pink", "yellow", "stone", "stone", "stone"), turn=20)
    assert choice(DiceHeuristicBot(), ahead) == "move pink"
    behind = position(markers=markers, stones={1: 9}, dice=("pink", "yellow", "stone", "stone", "stone"), turn=20)
    assert choice(DiceHeuristicBot(), behind) == "move yellow"


def test_heuristic_keeps_a_good_roll_and_rerolls_a_bad_one():
    good = position(markers={0: {"red": 3}}, phase="reroll", dice=("red", "red", "red", "stone", "stone"))
    assert choice(DiceHeuristicBot(), good) == "keep"  # red 3 -> 6 (extra turn) and a stone
    # only a new column on row 1 is possible: throwing dice again is better
    bad = position(markers={0: {"red": 9}}, phase="reroll", dice=("red", "red", "red", "red", "blue"))
    assert choice(DiceHeuristicBot(), bad) != "keep"


def test_heuristic_uses_the_clover_on_the_best_step():
    s = position(markers={0: {"red": 1, "blue": 6, "green": 3}}, dice=("red", "yellow", "yellow", "pink", "pink"))
    s.apply(string_to_action("move red"))  # red 2: clover
    # blue 6 -> 7 and green 3 -> 4 are +3 each; red 2 -> 3 is +1 and entering a column -4
    assert choice(DiceHeuristicBot(), s) in ("bonus advance blue", "bonus advance green")


def test_heuristic_beats_random_in_most_two_player_games():
    games, wins = 60, 0.0
    for g in range(games):
        seat = g % 2  # the heuristic's seat alternates
        bots = [RandomBot(seed=g), RandomBot(seed=g)]
        bots[seat] = DiceHeuristicBot(seed=g)
        s = DiceState.new_game(DiceConfig(), seed=g)
        while not s.is_over:
            s.apply(bots[s.current_player].act(s.view(s.current_player)))
        wins += win_shares(s.scores())[seat]
    assert wins / games >= 0.85
