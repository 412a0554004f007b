"""The card game's ``ismcts`` bot on its compiled search (``ismcts:backend=compiled``,
keltis_env/games/keltis/kernels_ismcts.py) beside the Python search (``backend=python``).

The two draw different random numbers, so their decisions are not compared one by one;
what is held equal is what the search is made of:

* the plan model's pieces: every rollout decision and every evaluation of a sampled world
  equal the Python model's (``PlanSearchModel.policy`` and ``.evaluate`` on the same world
  and the same fixed scales), and a compiled world is a deal of the cards the searcher has
  not seen, the rest of the position kept;
* the search's shape: the same ranked actions and ranker values, the same budget spent
  in the same stages (sampled worlds, rollouts, survivors), a win on the spot taken at
  once, ``iterations=0`` the planner's own move;
* what it reads: the view only (the hidden cards dealt anew change nothing), and a seed
  repeats every decision.

A cold run compiles the kernels (a minute or two on a busy 2-core machine); numba's cache
makes later runs load them in a few seconds.
"""

from __future__ import annotations

import inspect
import pickle
import random
import sys
from typing import Any

import numpy as np
import pytest
from conftest import random_positions
from test_search import card_goal_area_nearly_full

from keltis_env.bots import check_spec, make_bot
from keltis_env.bots.search import SearchBot
from keltis_env.core.game import get_game
from keltis_env.games.keltis import GameConfig, GameState, string_to_action
from keltis_env.games.keltis.bots import compiled
from keltis_env.games.keltis.bots.ismcts import ISMCTSBot, PlanSearchModel
from keltis_env.games.keltis.constants import NUM_CARDS, NUM_VALUES
from keltis_env.games.keltis.state import sample_state

GAME = get_game("keltis")
#: a small budget: several candidates and stages, quick to run
SMALL = "ismcts:backend=compiled,iterations=24"


@pytest.fixture(scope="module")
def kern() -> Any:
    """The kernel modules (loaded, and the compiled bot's search warmed up, once)."""
    pytest.importorskip("numba")
    from keltis_env.games.keltis import kernels, kernels_ismcts, kernels_plan

    assert make_bot("ismcts:backend=compiled").compiled is not None
    return kernels, kernels_ismcts, kernels_plan


def searched_positions(num_players: int, count: int, seed: int) -> list[GameState]:
    """Positions part-way through random games where the player to move has a choice."""
    return [s for s in random_positions(num_players, count, seed) if not s.is_over and len(s.legal_actions()) > 1]


# ---------------------------------------------------------------------- the plan model's pieces
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_every_rollout_move_and_evaluation_is_the_python_models(kern, num_players: int) -> None:
    """In worlds sampled by the Python search, with its fixed scales (the searcher's from
    the root, the others' from their sampled hands), the compiled greedy policy plays the
    Python model's move at every step of a rollout, and values every position reached as
    the Python evaluator does, bit for bit."""
    k, ki, kp = kern
    model = PlanSearchModel()
    w = kp.weights()
    rng = random.Random(num_players)
    pi, pf = np.zeros(kp.INT_SIZE, dtype=np.int64), np.zeros(kp.FLOAT_SIZE)
    mask, scores, values = np.zeros(k.NUM_ACTIONS, dtype=np.int8), np.zeros(4, dtype=np.int64), np.zeros(k.NUM_ACTIONS)
    steps = 0
    for state in searched_positions(num_players, 4, 30 + num_players):
        me = state.current_player
        view = state.view(me)
        root = model.begin(view)
        world = sample_state(view, rng)
        setups = model.prepare(view, world, root)
        clean = compiled.pack_view(view)
        root_pi, root_pf = kp.new_plan(clean, me, w)
        spi = np.zeros((num_players, kp.INT_SIZE), dtype=np.int64)
        spf = np.zeros((num_players, kp.FLOAT_SIZE))
        row = k.pack(world)
        ki.world_scales(row, me, w, root_pi, root_pf, spi, spf)
        for _ in range(10):
            if world.is_over:
                break
            assert ki.evaluate(row, me, w, spi, spf, pi, pf) == model.evaluate(world, me, setups)
            legal = world.legal_actions()
            want = legal[0] if len(legal) == 1 else model.policy(world, setups)
            assert ki.policy_action(row, w, spi, spf, pi, pf, mask, scores, values) == want
            world.apply(want)
            k.apply(row, want)
            steps += 1
    assert steps > 20


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_compiled_world_deals_the_unseen_cards_and_keeps_the_rest(kern, num_players: int) -> None:
    k, ki, _ = kern
    rng = np.array([7], dtype=np.uint64)
    kinds = k.NUM_CARD_KINDS
    for state in searched_positions(num_players, 4, 40 + num_players):
        me = state.current_player
        view = state.view(me)
        clean = compiled.pack_view(view)
        world = np.zeros_like(clean)
        cards = np.zeros(NUM_CARDS, dtype=np.int64)
        dealt = []
        for _ in range(3):
            ki.determinise(clean, me, world, cards, rng)
            unpacked = k.unpack(world, state.config)
            assert unpacked.view(me) == view  # the searcher's knowledge is kept
            assert [len(h) for h in unpacked.hands] == list(view.hand_sizes)
            full = np.zeros(kinds, dtype=np.int64)
            for q in range(num_players):
                full += world[k.HAND + q * kinds:k.HAND + (q + 1) * kinds]
                full += world[k.PLAYED + q * kinds:k.PLAYED + (q + 1) * kinds]
            full += world[k.REMOVED:k.REMOVED + kinds]
            np.add.at(full, world[k.DECK:k.DECK + world[k.DECK_SIZE]], 1)
            for c, pile in enumerate(view.discards):
                np.add.at(full, [c * NUM_VALUES + v for v in pile], 1)
            assert (full == 2).all()  # every card once, in one place
            dealt.append(world.copy())
        assert not np.array_equal(dealt[0], dealt[1]) or not np.array_equal(dealt[1], dealt[2])


# ---------------------------------------------------------------------- the search's shape
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_search_ranks_and_spends_its_budget_as_the_python_search(kern, num_players: int) -> None:
    """The same ranked actions with the same values, the same worlds, rollouts and
    survivors (the stages do not depend on the random numbers), every survivor rolled
    out in every world."""
    searched = 0
    for state in searched_positions(num_players, 5, 50 + num_players):
        view = state.view(state.current_player)
        for options in ("iterations=40", "iterations=64,stage=2,top_k=8,margin=6"):
            fast = make_bot(f"ismcts:backend=compiled,{options}", seed=1).analyse(view)
            slow = make_bot(f"ismcts:{options}", seed=1).analyse(view)
            assert sorted((c.action, c.rank) for c in fast.candidates) == sorted(
                (c.action, c.rank) for c in slow.candidates)
            assert (fast.samples, fast.rollouts) == (slow.samples, slow.rollouts)
            survivors = [c for c in fast.candidates if c.score is not None]
            assert len(survivors) == len([c for c in slow.candidates if c.score is not None])
            assert all(c.samples == fast.samples for c in survivors)
            assert fast.action in view.legal_actions
            if fast.rollouts:
                assert fast.action in [c.action for c in survivors] and fast.rollouts <= 64
                searched += 1
    assert searched >= 3


def test_a_move_that_wins_on_the_spot_is_taken_and_a_losing_end_avoided(kern) -> None:
    end_move = string_to_action("play blue 7")
    for ahead in (True, False):
        state = card_goal_area_nearly_full(ahead)
        result = make_bot("ismcts:backend=compiled", seed=1).analyse(state.view(0))
        assert (result.action == end_move) == ahead
        if ahead:
            assert result.rollouts == 0  # taken at once, unsearched


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_no_iterations_plays_the_planners_move(kern, num_players: int) -> None:
    bot, planner = make_bot("ismcts:backend=compiled,iterations=0", seed=0), make_bot("planner")
    state = GameState.new_game(GameConfig(num_players=num_players), 5)
    while not state.is_over:
        view = state.view(state.current_player)
        action = bot.act(view)
        assert action == planner.act(view)
        state.apply(action)


# ---------------------------------------------------------------------- legality, seeds, views
@pytest.mark.parametrize(("num_players", "layout"), [(2, "default"), (3, "random"), (4, "default"), (2, "random")])
def test_compiled_search_plays_whole_games_with_legal_moves(kern, num_players: int, layout: str) -> None:
    """One compiled bot for every seat (its kept row rewritten across seats), on the live
    view as the match loop hands it."""
    bot = make_bot(SMALL, seed=num_players)
    state = GameState.new_game(GameConfig(num_players=num_players, tile_layout=layout), 60 + num_players)
    moves = 0
    while not state.is_over:
        seat = state.current_player
        action = bot.act(GAME.live_view(state, seat))
        assert action in state.legal_actions()
        state.apply(action)
        moves += 1
    assert moves > 50


def test_a_seed_repeats_every_decision_whatever_else_draws_random_numbers(kern) -> None:
    games = []
    for run in range(2):
        bot = make_bot(SMALL, seed=11)
        state = GameState.new_game(GameConfig(num_players=3), 7)
        actions = []
        while not state.is_over and len(actions) < 120:
            random.random(), np.random.random()  # the global generators are not the bot's
            action = bot.act(state.view(state.current_player))
            actions.append(action)
            state.apply(action)
        games.append(actions)
        if run == 0:
            other = make_bot(SMALL, seed=12)
            replay = GameState.new_game(GameConfig(num_players=3), 7)
            differs = 0
            for action in actions:
                differs += other.act(replay.view(replay.current_player)) != action
                replay.apply(action)
            assert differs  # another seed searches other worlds
    assert games[0] == games[1]


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_decision_depends_on_the_view_only_not_the_hidden_cards(kern, num_players: int) -> None:
    """The other hands, the draw pile and the removed cards dealt anew: the same view, and
    the same seed gives the same decision; so does the full state's row in the kernel."""
    k, ki, kp = kern
    rng = random.Random(num_players)
    compared = 0
    for state in searched_positions(num_players, 6, 70 + num_players):
        seat = state.current_player
        view = state.view(seat)
        other = sample_state(view, rng)
        assert other.view(seat) == view and (other.hands != state.hands or other.deck != state.deck)
        choices = [make_bot(SMALL, seed=3).analyse(GAME.live_view(s, seat)) for s in (state, other)]
        assert choices[0] == choices[1]
        opts = ki.options(make_bot(SMALL))
        outs = [np.zeros(k.NUM_ACTIONS, dtype=d) for d in (np.int64, float, np.int64, float, float)]
        picks = [ki.search(row, kp.weights(), opts, np.array([5], dtype=np.uint64), *outs,
                           np.zeros(ki.INFO_SIZE, dtype=np.int64)) for row in (k.pack(state), k.pack(other),
                                                                               compiled.pack_view(view))]
        assert picks[0] == picks[1] == picks[2]
        compared += 1
    assert compared >= 4


# ---------------------------------------------------------------------- the option
def test_the_python_search_is_the_default_and_auto_compiles_when_numba_is_installed(kern) -> None:
    assert make_bot("ismcts").compiled is None
    assert make_bot("ismcts:backend=python").compiled is None
    assert make_bot("ismcts:backend=auto").compiled is not None
    assert make_bot("ismcts:backend=compiled,iterations=200,depth=1,top_k=8").compiled is not None
    # a budget in seconds: the Python search, under auto
    assert make_bot("ismcts:backend=auto,seconds=0.01").compiled is None


def test_the_bot_takes_the_generic_searchs_options_with_the_same_defaults() -> None:
    ours = inspect.signature(ISMCTSBot.__init__).parameters
    theirs = inspect.signature(SearchBot.__init__).parameters
    assert [name for name in ours if name not in ("backend", "model")] == list(theirs)
    assert all(ours[name].default == theirs[name].default for name in theirs)


BAD = [("ismcts:backend=numba", "ismcts option backend must be one of auto, compiled, python, got 'numba'"),
       ("ismcts:iterations=8,backend=1", "ismcts option backend must be one of auto, compiled, python, got 1"),
       ("ismcts:backend=compiled,seconds=0.1", "ismcts option backend=compiled takes its budget in iterations, not "
                                               "seconds: give iterations=N (or backend=python with seconds=...)"),
       ("ismcts:backend=compiled,net=policies/keltis_2p.zip,rollout=net", "ismcts option rollout=net cannot run on "
        "backend=compiled: its rollouts play the plan model (rollout=model, the default); give backend=python for "
        "rollout=net")]


@pytest.mark.parametrize(("spec", "message"), BAD)
def test_a_bad_backend_is_refused_in_one_line_naming_what_is_allowed(spec: str, message: str) -> None:
    for check in (make_bot, check_spec):
        with pytest.raises(ValueError) as info:
            check(spec)
        assert "\n" not in str(info.value) and message in str(info.value)


def test_a_compiled_search_pickles_and_searches_compiled_again(kern) -> None:
    bot = make_bot(SMALL, seed=4)
    copy = pickle.loads(pickle.dumps(bot))
    assert copy.compiled is not None and copy.compiled is not bot.compiled
    state = GameState.new_game(GameConfig(num_players=2), 3)
    view = state.view(state.current_player)
    assert copy.analyse(view) == bot.analyse(view) and copy.analyse(view).rollouts > 0


def test_a_changed_option_changes_the_compiled_search(kern) -> None:
    bot = make_bot(SMALL, seed=0)
    state = searched_positions(2, 3, 90)[0]
    view = state.view(state.current_player)
    before = bot.analyse(view)
    bot.iterations, bot.rng = 0, random.Random(0)
    after = bot.analyse(view)
    assert before.rollouts > 0 and after.rollouts == 0


# ---------------------------------------------------------------------- without numba
@pytest.fixture
def without_numba(monkeypatch) -> None:
    """numba cannot be imported, and no kernel module or compiled bot was loaded before."""
    for name in [m for m in sys.modules if m.split(".")[-1].startswith("kernels")]:
        monkeypatch.delitem(sys.modules, name)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], child):
            monkeypatch.delattr(sys.modules[parent], child)
    monkeypatch.setitem(sys.modules, "numba", None)  # an import of numba fails
    monkeypatch.setattr(compiled, "_WARM", set())
    monkeypatch.setattr(compiled, "_LAYOUT", [])


def test_without_numba_auto_searches_in_python_and_compiled_is_refused_naming_the_extra(without_numba) -> None:
    bot = make_bot("ismcts:backend=auto,iterations=8", seed=0)
    assert bot.compiled is None
    state = GameState.new_game(GameConfig(num_players=2), 1)
    view = state.view(state.current_player)
    assert bot.act(view) in view.legal_actions
    with pytest.raises(ValueError) as info:
        make_bot("ismcts:backend=compiled")
    assert str(info.value) == ("ismcts option backend=compiled: the compiled kernels need numba (the 'fast' extra): "
                               "pip install 'keltis-rl[fast]'")
