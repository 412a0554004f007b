"""The dice game's bots: registration, the heuristic's documented choices and values (the
search's ranker), the search's re-roll rule for rollouts, the heuristic's strength. The
search itself is tested with the card game's in test_search.py; its strength is measured
with ``keltis evaluate``."""

from __future__ import annotations

from math import comb

import pytest
from dice_helpers import position

from keltis_env.bots import RandomBot, bot_names, make_bot
from keltis_env.core.rewards import win_shares
from keltis_env.games.dice import GameConfig, GameState, action_to_string, string_to_action
from keltis_env.games.dice.actions import KEEP, rerolled_dice
from keltis_env.games.dice.bots.heuristic import DiceHeuristicBot, reroll_choices
from keltis_env.games.dice.bots.ismcts import DiceISMCTSBot, quick_reroll
from keltis_env.games.dice.constants import NUM_FACES
from keltis_env.games.dice.state import Phase


def choice(bot, state: GameState) -> str:
    return action_to_string(bot.act(state.view(state.current_player)))


def test_the_bots_are_registered_for_the_dice_game():
    assert {"random", "heuristic", "ismcts"} <= set(bot_names("dice"))
    assert isinstance(make_bot("random", game="dice"), RandomBot)
    assert isinstance(make_bot("heuristic", game="dice"), DiceHeuristicBot)
    bot = make_bot("heuristic:extra_turn_value=4", seed=1, game="dice")
    assert isinstance(bot, DiceHeuristicBot) and bot.extra_turn_value == 4.0
    search = make_bot("ismcts", seed=1, game="dice")
    assert isinstance(search, DiceISMCTSBot) and search.iterations == DiceISMCTSBot.default_iterations
    search = make_bot("ismcts:iterations=32,depth=1", seed=1, game="dice")
    assert search.iterations == 32 and search.depth == 1


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
        s = GameState.new_game(GameConfig(), seed=g)
        while not s.is_over:
            s.apply(bots[s.current_player].act(s.view(s.current_player)))
        wins += win_shares(s.scores())[seat]
    assert wins / games >= 0.85


# ---------------------------------------------------------------------- values (the search's ranker)
def positions_along_games(games: int = 12):
    """Views of the player to act, along games between heuristic and random players."""
    bots = [DiceHeuristicBot(), RandomBot(seed=0)]
    for g in range(games):
        s = GameState.new_game(GameConfig(num_players=2 + g % 3), seed=g)
        while not s.is_over:
            view = s.view(s.current_player)
            yield view
            s.apply(bots[(s.current_player + g) % 2].act(view))


def test_heuristic_values_every_choice_and_plays_the_best_one():
    bot = DiceHeuristicBot()
    for view in positions_along_games():
        values = dict(bot.action_values(view))
        assert set(values) <= set(view.legal_actions)
        choice = bot.act(view)
        assert choice in values and values[choice] >= max(values.values()) - 1e-9
        if view.phase != Phase.REROLL:
            assert set(values) == set(view.legal_actions)
        else:  # one re-roll choice per multiset of dice thrown, keep first
            actions = list(values)
            assert actions[0] == KEEP
            thrown = {tuple(sorted(view.dice[d - 1] for d in rerolled_dice(a))) for a in actions}
            assert len(thrown) == len(actions)


def test_reroll_choices_are_the_distinct_multisets_of_dice_to_throw():
    counts = (2, 0, 1, 0, 0, 2)  # red red green stone stone
    choices = reroll_choices(counts)
    assert len(choices) == 3 * 2 * 3  # 0-2 reds, 0-1 green, 0-2 stones
    dice = (0, 0, 2, 5, 5)
    for action, finals, probs in choices:
        thrown = [dice[d - 1] for d in rerolled_dice(action)]
        assert abs(sum(probs) - 1.0) < 1e-12 and len(finals) == len(probs)
        assert len(probs) == len({f for f in finals})  # one entry per outcome
        assert len(probs) == comb(len(thrown) + NUM_FACES - 1, NUM_FACES - 1)  # multisets of thrown faces


# ---------------------------------------------------------------------- the rollouts' re-roll rule
def test_quick_reroll_keeps_a_good_roll_and_throws_all_but_one_colour_of_a_bad_one():
    bot = DiceHeuristicBot()
    good = position(markers={0: {"red": 3}}, phase="reroll", dice=("red", "red", "red", "stone", "stone"))
    assert quick_reroll(bot, good.view(0)) == KEEP  # red 3 -> 6 (extra turn) and a stone
    bad = position(markers={0: {"red": 9}}, phase="reroll", dice=("red", "red", "red", "red", "blue"))
    action = quick_reroll(bot, bad.view(0))
    assert action != KEEP and action in bad.legal_actions()
    kept = [f for i, f in enumerate(bad.dice) if not action >> i & 1]
    assert len(set(kept)) <= 1  # the dice kept show a single colour


def test_quick_reroll_is_always_legal():
    bot = DiceHeuristicBot()
    for view in positions_along_games(6):
        if view.phase == Phase.REROLL:
            assert quick_reroll(bot, view) in view.legal_actions


# ---------------------------------------------------------------------- the search
def test_ismcts_without_search_plays_the_heuristic_move():
    """``ismcts:iterations=0`` plays the ranker's best choice: the heuristic's move and
    clover step (re-roll choices are ranked by the same expected values)."""
    heuristic, ranker = DiceHeuristicBot(), make_bot("ismcts:iterations=0", game="dice")
    for view in positions_along_games(6):
        if view.phase != Phase.REROLL:
            assert ranker.act(view) == heuristic.act(view)
        elif view.legal_actions:
            values = dict(heuristic.action_values(view))
            assert values[ranker.act(view)] == pytest.approx(max(values.values()), abs=1e-9)
