"""The determinised search that is generic over games (keltis_env/bots/search.py), on both
games: the card game's ``ismcts`` (plan model) and the dice game's ``ismcts`` (dice
heuristic).

Every searching bot must choose legal actions only, repeat its decisions for a seed with
an iteration budget, take a winning move, and decide from the view alone: two states that
differ only in what the view hides (other hands and the draw pile, R10; the future dice,
R11) give the same decision.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest
from conftest import make_state
from dice_helpers import position
from hypothesis import given, settings
from hypothesis import strategies as st

from keltis_env.bots import bot_factory, bot_names, make_bot
from keltis_env.bots.search import SearchBot, SearchModel
from keltis_env.core.game import game_names, get_game
from keltis_env.games import dice, keltis
from keltis_env.games.dice.bots.heuristic import DiceHeuristicBot
from keltis_env.games.dice.bots.ismcts import DiceISMCTSBot, DiceSearchModel
from keltis_env.games.keltis.bots.ismcts import ISMCTSBot, PlanSearchModel

#: the games with a search bot
GAMES = tuple(g for g in game_names() if "ismcts" in bot_names(g))
#: A small budget per game: enough candidates and samples to search, quick to run.
SMALL = defaultdict(lambda: "ismcts:iterations=12,top_k=3", {"dice": "ismcts:iterations=24,top_k=4"})


def new_state(game: str, players: int, seed: int, max_turns: int = 500) -> Any:
    descriptor = get_game(game)
    return descriptor.new_state(descriptor.make_config(players, max_turns=max_turns), seed)


def play(game: str, specs: list[str], seed: int, max_turns: int) -> list[int]:
    """One game between bots; every choice is checked against the legal actions."""
    state = new_state(game, len(specs), seed, max_turns)
    bots = [make_bot(spec, seed=seed * 10 + i, game=game) for i, spec in enumerate(specs)]
    actions = []
    while not state.is_over:
        seat = state.current_player
        view = state.view(seat)
        action = bots[seat].act(view)
        assert action in view.legal_actions, f"{specs[seat]} chose illegal action {action}"
        state.apply(action)
        actions.append(action)
    return actions


# ---------------------------------------------------------------------- legality
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31), players=st.integers(2, 4), game=st.sampled_from(GAMES))
def test_search_only_plays_legal_actions(seed: int, players: int, game: str) -> None:
    specs = [SMALL[game], "heuristic", "random", SMALL[game]][:players]
    play(game, specs, seed, max_turns=12 * players)


# ---------------------------------------------------------------------- determinism
@pytest.mark.parametrize("game", GAMES)
def test_same_seed_and_iteration_budget_same_decisions(game: str) -> None:
    specs = [SMALL[game], "heuristic"]
    first = play(game, specs, seed=7, max_turns=16)
    random.seed(99)  # the search must not read the global generators
    random.random()
    assert play(game, specs, seed=7, max_turns=16) == first


@pytest.mark.parametrize("game", GAMES)
def test_the_budget_counts_rollouts_and_reseeding_repeats_the_search(game: str) -> None:
    factory = bot_factory("ismcts", game)

    class Counting(factory):  # type: ignore[misc, valid-type]
        def _rollout(self, state: Any, me: int, context: Any, depth: int) -> float:
            self.rollouts += 1
            return float(super()._rollout(state, me, context, depth))

    state = new_state(game, 2, seed=3)
    while len(state.legal_actions()) < 3:  # a decision worth searching
        state.apply(state.legal_actions()[0])
    view = state.view(state.current_player)
    bot = Counting(seed=5, iterations=40, top_k=4)
    counts, choices = [], []
    for _ in range(2):
        bot.seed(5)
        bot.rollouts = 0
        choices.append(bot.act(view))
        counts.append(bot.rollouts)
    assert choices[0] == choices[1] and counts[0] == counts[1]
    assert 0 < counts[0] <= 40


# ---------------------------------------------------------------------- winning moves
class FlatRanker(SearchModel):
    """A game's search model whose ranker knows nothing: it offers ``actions``, all worth
    0, and never calls a move a win. Only the rollouts can tell the candidates apart."""

    def __init__(self, inner: SearchModel, actions: list[int]) -> None:
        self.inner = inner
        self.actions = actions

    def begin(self, view: Any) -> Any:
        return self.inner.begin(view)

    def candidates(self, view: Any, root: Any) -> list[tuple[int, float]]:
        return [(a, 0.0) for a in self.actions]

    def prepare(self, view: Any, world: Any, root: Any) -> Any:
        return self.inner.prepare(view, world, root)

    def starts_turn(self, state: Any) -> bool:
        return self.inner.starts_turn(state)

    def policy(self, state: Any, context: Any) -> int:
        return self.inner.policy(state, context)

    def evaluate(self, state: Any, player: int, context: Any) -> float:
        return self.inner.evaluate(state, player, context)


POINT_TILES = ("points3", "points3", "points2", "points2", "points2", "points1", "points1")
#: seven tile stones each leader's figures have reached (default layout, R1)
LEADER_STONES = {
    True: (("red", 1), ("red", 3), ("red", 5), ("red", 7), ("blue", 2), ("blue", 3), ("blue", 5)),
    False: (("yellow", 2), ("yellow", 4), ("yellow", 6), ("green", 1), ("green", 4), ("green", 6), ("green", 7)),
}


def card_goal_area_nearly_full(ahead: bool) -> Any:
    """Four figures in the goal area: player 0's blue 7 brings the fifth and ends the game
    at once (R8.1), which player 0 wins when ``ahead`` and loses otherwise."""
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


def dice_upper_zone_nearly_full(ahead: bool) -> Any:
    """Four markers in the upper zone: player 0's "move pink" (pink 6 -> 7) brings the
    fifth and ends the game (R11 end), which player 0 wins when ``ahead``."""
    markers = {0: {"red": 8, "green": 8, "pink": 6}, 1: {"blue": 9, "yellow": 7}}
    stones = {0: 5} if ahead else {1: 9}
    return position(markers=markers, stones=stones, dice=("pink", "yellow", "stone", "stone", "stone"), turn=20)


def winning_position(game: str, ahead: bool) -> tuple[Any, int, list[int]]:
    """(state, the move that ends the game, the candidates to offer a flat ranker)."""
    if game == "keltis":
        state = card_goal_area_nearly_full(ahead)
        names = ["play blue 7", "discard red 3", "discard pink 1", "discard yellow 9"]
        actions = [keltis.string_to_action(n) for n in names]
        assert set(actions) <= set(state.legal_actions())
        return state, actions[0], actions
    state = dice_upper_zone_nearly_full(ahead)
    return state, dice.string_to_action("move pink"), list(state.legal_actions())


@pytest.mark.parametrize("game", GAMES)
def test_takes_a_winning_move_and_avoids_a_losing_end(game: str) -> None:
    for ahead in (True, False):
        state, end_move, _ = winning_position(game, ahead)
        trial = state.clone()
        trial.apply(end_move)
        assert trial.is_over and trial.winners() == ([0] if ahead else [1])
        for spec in ("ismcts", SMALL[game]):
            chosen = make_bot(spec, seed=1, game=game).act(state.view(0))
            assert (chosen == end_move) == ahead, (spec, ahead)


@pytest.mark.parametrize("game", GAMES)
def test_the_rollouts_alone_find_the_winning_move(game: str) -> None:
    """With a ranker that values every candidate alike, the search still takes the move
    that wins on the spot: its rollouts end there with the win."""
    state, end_move, actions = winning_position(game, ahead=True)
    inner = PlanSearchModel() if game == "keltis" else DiceSearchModel(DiceHeuristicBot())

    class FlatSearch(SearchBot):
        game_name = game

        def new_model(self) -> SearchModel:
            return FlatRanker(inner, actions)

    bot = FlatSearch(seed=2, iterations=64, top_k=len(actions), prior=0.0)
    assert bot.act(state.view(0)) == end_move


# ---------------------------------------------------------------------- views only
def test_card_search_decides_from_the_view_not_the_hidden_cards() -> None:
    """At positions along a game, the real state and one that differs only in the cards
    player 0 cannot see (the opponent's hand, the draw pile, the removed cards, dealt
    anew) give the same decision."""
    state = new_state("keltis", 2, seed=12)
    heuristic = make_bot("heuristic", seed=0)
    compared = 0
    while not state.is_over and compared < 6:
        if state.current_player == 0 and len(state.legal_actions()) > 2 and state.turn % 6 == 0:
            other = keltis.sample_state(state.view(0), random.Random(state.turn))
            assert other.hands[1] != state.hands[1] and other.deck != state.deck
            assert other.view(0) == state.view(0)
            choices = [ISMCTSBot(seed=4, iterations=24).act(s.view(0)) for s in (state, other)]
            assert choices[0] == choices[1]
            compared += 1
        state.apply(heuristic.act(state.view(state.current_player)))
    assert compared == 6


def test_dice_search_decides_from_the_view_not_the_future_dice() -> None:
    """Two games in the same position whose future dice differ (different seeds) give the
    same decision: the search draws its own dice."""
    markers = {0: {"red": 3, "blue": 5}, 1: {"green": 4, "yellow": 2}}
    states = [
        position(
            markers=markers, stones={0: 1}, phase="reroll", dice=("red", "red", "blue", "pink", "stone"), turn=8, seed=s
        )
        for s in (1, 2)
    ]
    assert states[0].view(0) == states[1].view(0)
    futures = [s.clone() for s in states]
    for s in futures:
        s.apply(dice.string_to_action("reroll 1,2,3,4,5"))
    assert futures[0].dice != futures[1].dice  # the hidden future really differs
    choices = [DiceISMCTSBot(seed=6, iterations=48).act(s.view(0)) for s in states]
    assert choices[0] == choices[1]


# ---------------------------------------------------------------------- options
@pytest.mark.parametrize("game", GAMES)
def test_search_options_are_checked(game: str) -> None:
    factory = bot_factory("ismcts", game)
    with pytest.raises(ValueError, match="not both"):
        factory(iterations=10, seconds=0.1)
    for option, value in (("iterations", -1), ("seconds", 0), ("top_k", 0), ("depth", -1), ("stage", 0)):
        with pytest.raises(ValueError, match=option):
            factory(**{option: value})
    with pytest.raises(ValueError, match="has no option 'depht'"):
        make_bot("ismcts:depht=2", game=game)
    state = new_state(game, 3, seed=8)
    view = state.view(state.current_player)
    assert factory(seed=0, seconds=0.005).act(view) in view.legal_actions  # a time budget answers
    with pytest.raises(ValueError, match="no legal action"):
        factory(seed=0).act(state.view((state.current_player + 1) % 3))
