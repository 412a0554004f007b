"""The card game's ``heuristic`` and ``planner`` bots on their compiled kernels
(keltis_env.games.keltis.bots.compiled) against the same bots on their Python code
(``backend=python``), the reference.

* Both backends make the same decision at every decision of games of 2, 3 and 4 players,
  with both tile layouts and several heuristic options, on the zero-copy live view and on
  the immutable view; one compiled bot plays every seat of every game, so that its kept
  row is rewritten across seats, games and player counts.
* The row a compiled bot decides from is the full state's row with the hidden parts
  zeroed (the other hands, the draw pile, the removed cards), and re-dealing the hidden
  cards at random changes neither the row nor the decision.
* The ``backend`` option is checked with a one-line error; without numba the bots play on
  their Python code, and ``backend=compiled`` is refused naming the extra.

A cold run compiles the kernels (a minute or two on a busy 2-core machine); numba's cache
makes later runs load them in about a second.
"""

from __future__ import annotations

import pickle
import random
import sys
from typing import Any

import numpy as np
import pytest
from conftest import make_state

from keltis_env.bots import check_spec, make_bot
from keltis_env.core.game import get_game
from keltis_env.games.keltis import GameConfig, GameState, action_to_string, string_to_action
from keltis_env.games.keltis.bots import compiled
from keltis_env.games.keltis.state import sample_state

GAME = get_game("keltis")
HEURISTICS = ("heuristic", "heuristic:paths=2,gap=4", "heuristic:open_cards=2,large_cards=2,gap=0")
SPECS = (*HEURISTICS, "planner")
#: (players, tile layout) of the compared games
TABLES = ((2, "default"), (2, "random"), (3, "default"), (3, "random"), (4, "default"), (4, "random"))


def python_twin(spec: str) -> Any:
    return make_bot(f"{spec}{',' if ':' in spec else ':'}backend=python")


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[Any, Any]]:
    """Per spec: one compiled bot (shared by every test and seat) and its Python twin."""
    pytest.importorskip("numba")
    made = {spec: (make_bot(f"{spec}{',' if ':' in spec else ':'}backend=compiled"), python_twin(spec))
            for spec in SPECS}
    for bot, twin in made.values():
        assert bot.compiled is not None and twin.compiled is None
    return made


def compare_game(pairs: dict[str, tuple[Any, Any]], num_players: int, layout: str, seed: int) -> set[str]:
    """Play a game to its end, every spec's two backends deciding at every decision on both
    kinds of view; the move played is a random spec's Python choice (a random legal action
    one time in ten). Returns the phases met with more than one legal action."""
    rng = random.Random(seed)
    state = GameState.new_game(GameConfig(num_players=num_players, tile_layout=layout), seed)
    met = set()
    while not state.is_over:
        seat = state.current_player
        view = state.view(seat)
        choices = {}
        for spec, (bot, twin) in pairs.items():
            want = twin.act(view)
            got_live, got_view = bot.act(GAME.live_view(state, seat)), bot.act(view)
            assert got_live == got_view == want, \
                f"{spec}, turn {state.turn}, phase {state.phase.name}: compiled {got_live}/{got_view}, Python {want}"
            choices[spec] = want
        if len(view.legal_actions) > 1:
            met.add(state.phase.name)
        move = choices[rng.choice(SPECS)] if rng.random() < 0.9 else rng.choice(view.legal_actions)
        state.apply(move)
    return met


@pytest.mark.parametrize(("num_players", "layout"), TABLES)
def test_both_backends_make_the_same_decision_at_every_decision(pairs, num_players: int, layout: str) -> None:
    met: set[str] = set()
    for seed in range(3):
        met |= compare_game(pairs, num_players, layout, 100 * num_players + seed)
    assert met == {"PLAY", "DRAW", "BONUS"}


@pytest.mark.parametrize(("num_players", "layout"), TABLES)
def test_games_played_by_the_match_loop_are_the_same_on_both_backends(pairs, num_players: int, layout: str) -> None:
    """The match loop hands each bot the zero-copy live view of its seat, as evaluation
    does; every seat's spec differs, and the compiled bots play every game of the run."""
    from keltis_env.core.match import play_game

    for seed in range(4):
        seats = [SPECS[(seed + i) % len(SPECS)] for i in range(num_players)]
        games = [play_game("keltis", [pairs[spec][side] for spec in seats], seed, record=True, tile_layout=layout)
                 for side in (0, 1)]
        (_, fast), (_, reference) = games
        assert fast.actions == reference.actions and len(fast.actions) > 50


def test_a_changed_option_changes_the_compiled_decision_as_the_python_one(pairs) -> None:
    bot, twin, default = make_bot("heuristic:backend=compiled"), python_twin("heuristic"), python_twin("heuristic")
    differed = 0
    for seed in range(3):
        state = GameState.new_game(GameConfig(num_players=3), seed)
        rng = random.Random(seed)
        while not state.is_over:
            view = state.view(state.current_player)
            bot.gap = twin.gap = state.turn % 5
            bot.open_cards = twin.open_cards = 1 + state.turn % 3
            action = bot.act(view)
            assert action == twin.act(view)
            differed += action != default.act(view)
            state.apply(rng.choice(view.legal_actions))
    assert differed


# ---------------------------------------------------------------------- hidden information
def visible_row(state: GameState, seat: int) -> np.ndarray:
    """The full state's row with what ``seat`` may not see set to zero."""
    from keltis_env.games.keltis import kernels as kern

    row = kern.pack(state)
    kinds = kern.NUM_CARD_KINDS
    for q in range(state.num_players):
        if q != seat:
            row[kern.HAND + q * kinds:kern.HAND + (q + 1) * kinds] = 0
    row[kern.REMOVED:kern.REMOVED + kinds] = 0
    row[kern.DECK:kern.PILE] = 0
    return row


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_row_is_the_states_row_without_another_seats_hand_or_the_draw_pile(pairs, num_players: int) -> None:
    """One writer, every seat's view at every position (live and immutable views mixed):
    the kept row is always what a new one writes, and the state's row where the view sees."""
    writer = compiled.RowWriter()
    live = [compiled.RowWriter() for _ in range(num_players)]
    rng = random.Random(num_players)
    checked = 0
    for seed in range(3):
        state = GameState.new_game(GameConfig(num_players=num_players, tile_layout=("default", "random")[seed % 2]),
                                   seed)
        while not state.is_over:
            for seat in rng.sample(range(num_players), num_players):
                view = GAME.live_view(state, seat) if rng.random() < 0.5 else state.view(seat)
                want = visible_row(state, seat)
                assert np.array_equal(writer.write(view), want), f"turn {state.turn}, seat {seat}"
                assert np.array_equal(compiled.pack_view(view), want)
                checked += 1
            seat = state.current_player  # a writer of one seat's live views (the match loop's way)
            assert np.array_equal(live[seat].write(GAME.live_view(state, seat)), visible_row(state, seat))
            state.apply(rng.choice(state.legal_actions()))
    assert checked > 300


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_compiled_decision_never_reads_another_seats_hand_or_the_draw_pile(pairs, num_players: int) -> None:
    """The hidden cards re-dealt at random (other hands, draw pile, removed cards): the row
    and every compiled decision stay the same, and equal the Python bot's on the true view."""
    rng = random.Random(10 + num_players)
    redealt = 0
    for seed in range(2):
        state = GameState.new_game(GameConfig(num_players=num_players), 50 + seed)
        while not state.is_over:
            seat = state.current_player
            view = state.view(seat)
            row = compiled.pack_view(view)
            wants = {spec: twin.act(view) for spec, (_, twin) in pairs.items()}
            other = sample_state(view, rng)
            redealt += other.hands != state.hands or other.deck != state.deck
            assert np.array_equal(compiled.pack_view(other.view(seat)), row)
            for spec, (bot, _) in pairs.items():
                assert bot.act(GAME.live_view(other, seat)) == wants[spec], f"{spec}, turn {state.turn}"
            state.apply(wants[rng.choice(SPECS)])
    assert redealt > 50


def test_a_compiled_bot_asked_out_of_turn_is_refused_as_the_python_bot(pairs) -> None:
    state = GameState.new_game(GameConfig(num_players=2), 1)
    for bot, twin in pairs.values():
        view = state.view(1 - state.current_player)
        for player in (bot, twin):
            with pytest.raises(ValueError, match="no legal action"):
                player.act(view)


# ---------------------------------------------------------------------- the option
def test_the_python_code_is_the_default_and_auto_compiles_when_numba_is_installed(pairs) -> None:
    for name in ("heuristic", "planner"):
        assert make_bot(name).compiled is None
        assert make_bot(f"{name}:backend=python").compiled is None
        assert make_bot(f"{name}:backend=auto").compiled is not None
        assert make_bot(f"{name}:backend=compiled").compiled is not None


BAD_BACKENDS = [("heuristic:backend=fast", "'fast'"), ("planner:backend=Python", "'Python'"),
                ("planner:backend=1", "1"),
                ("heuristic:gap=3,backend=numba", "'numba'")]


@pytest.mark.parametrize(("spec", "shown"), BAD_BACKENDS)
def test_a_bad_backend_is_refused_in_one_line_naming_the_choices(spec: str, shown: str) -> None:
    name = spec.partition(":")[0]
    for check in (make_bot, check_spec):
        with pytest.raises(ValueError) as info:
            check(spec)
        message = str(info.value)
        assert "\n" not in message
        assert f"{name} option backend must be one of auto, compiled, python, got {shown}" in message


def test_a_compiled_bot_pickles_and_decides_on_compiled(pairs) -> None:
    bot, twin = pairs["planner"]
    copy = pickle.loads(pickle.dumps(bot))
    assert copy.compiled is not None and copy.compiled is not bot.compiled
    state = GameState.new_game(GameConfig(num_players=2), 3)
    while not state.is_over:
        view = state.view(state.current_player)
        action = copy.act(view)
        assert action == twin.act(view)
        state.apply(action)


def test_the_bots_sensible_choices_hold_on_both_backends(pairs) -> None:
    """A position of tests/test_bots.py: a strong red row late in the game is completed
    rather than a new path opened."""
    state = make_state(
        2,
        hands={0: ["red 7", "red 8", "green 0", "green 1", "green 3", "blue 10", "pink 0", "pink 10"]},
        rows={0: {"red": [1, 2, 3, 4, 5, 6], "yellow": [2, 3, 4, 5]}, 1: {"blue": [0, 2, 3, 5, 6]}},
        figures={0: {"red": 6, "yellow": 4}, 1: {"blue": 5}},
        tiles={("red", 7): "points1", ("green", 1): None},
        wishing={1: 1},
        deck_size=6,
        turn=58,
    )
    for spec in ("heuristic", "planner"):
        for bot in pairs[spec]:
            assert action_to_string(bot.act(state.view(0))) == "play red 7"
    assert string_to_action("play red 7") in state.view(0).legal_actions


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
    monkeypatch.setattr(compiled, "_KERNELS", {})
    monkeypatch.setattr(compiled, "_WARM", set())
    monkeypatch.setattr(compiled, "_LAYOUT", [])


@pytest.mark.parametrize("name", ["heuristic", "planner"])
def test_without_numba_the_bots_play_on_their_python_code(without_numba, name: str) -> None:
    bot, twin = make_bot(f"{name}:backend=auto"), make_bot(f"{name}:backend=python")
    assert bot.compiled is None
    state = GameState.new_game(GameConfig(num_players=3), 7)
    while not state.is_over:
        view = GAME.live_view(state, state.current_player)
        action = bot.act(view)
        assert action == twin.act(view) and action in view.legal_actions
        state.apply(action)
    assert "numba" not in [m for m in sys.modules if sys.modules[m] is not None]


@pytest.mark.parametrize("name", ["heuristic", "planner"])
def test_without_numba_the_compiled_backend_is_refused_naming_the_extra(without_numba, name: str) -> None:
    with pytest.raises(ValueError) as info:
        make_bot(f"{name}:backend=compiled")
    assert str(info.value) == (f"{name} option backend=compiled: the compiled kernels need numba (the 'fast' "
                               "extra): pip install 'keltis-rl[fast]'")
