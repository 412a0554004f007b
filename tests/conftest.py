"""Shared helpers: explicit positions for scenario tests (docs/rules.md R1-R10).

:func:`make_state` builds a :class:`GameState` from a compact description ("player 0
holds these cards, has figures here, these tiles lie there") and fills in everything the
test does not care about so that every invariant holds: the 110 cards are completed into
the unnamed hands, the removed pile (2 players) and the draw pile; the 25 tiles are
completed onto the unnamed tile stones. The state goes through ``GameState.from_dict``,
so a helper call that breaks an invariant fails loudly instead of building a bad position.

A third game, ``toy`` (``tests/plugins/keltis_toy``), is installed for the whole session
the way another distribution's game is: :func:`install_plugin_distribution` writes a
``keltis_toy-0.1.dist-info`` folder (``METADATA`` and ``entry_points.txt`` naming
``keltis_toy.game:GAME`` in the group ``keltis_env.games``) into a temporary folder, and
that folder and ``tests/plugins`` go on ``sys.path`` and ``PYTHONPATH`` (subprocesses and
spawned workers find it too). Every test that iterates the registry sees it; a test that
must not (the README's generated blocks) uses the fixture ``builtin_games_only``.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal as _signal
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from keltis_env.games.keltis import GameConfig, GameState, string_to_action
from keltis_env.games.keltis.constants import (
    COLORS,
    COPIES_PER_CARD,
    END_ROW,
    FIGURES_PER_PLAYER,
    HAND_SIZE,
    NUM_CARD_KINDS,
    REMOVED_CARDS,
    TILE_CODES,
    TILE_NAMES,
    TILE_SET,
    card_color,
    card_name,
    card_value,
    parse_card,
)

PLUGINS = Path(__file__).resolve().parent / "plugins"


def install_plugin_distribution(site: Path, name: str = "keltis_toy", version: str = "0.1",
                                entry_points: Mapping[str, str] | None = None) -> Path:
    """Write the ``dist-info`` folder of an installed distribution ``name`` declaring the
    game entry points ``entry_points`` (entry-point name -> ``module:attribute``) into
    ``site``; returns the folder."""
    points = entry_points if entry_points is not None else {"toy": "keltis_toy.game:GAME"}
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = ["[keltis_env.games]", *(f"{key} = {value}" for key, value in points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return info


def _install_toy_game() -> None:
    site = Path(tempfile.mkdtemp(prefix="keltis-plugins-"))
    atexit.register(shutil.rmtree, site, True)
    install_plugin_distribution(site)
    paths = [str(site), str(PLUGINS)]
    sys.path[:0] = paths
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [os.environ.get("PYTHONPATH")])])


_install_toy_game()


@pytest.fixture
def builtin_games_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry without the games of other distributions, for the test's duration."""
    from keltis_env.core import game as registry

    registry.load_plugins()
    own = {n: g for n, g in registry._GAMES.items() if g.state_cls.__module__.startswith("keltis_env.")}
    monkeypatch.setattr(registry, "_GAMES", own)
    yield


#: Every card of the game, as names, both copies.
ALL_CARDS: tuple[str, ...] = tuple(card_name(k) for k in range(NUM_CARD_KINDS) for _ in range(COPIES_PER_CARD))


def make_state_dict(
    num_players: int = 2,
    *,
    hands: Mapping[int, Sequence[str]] | None = None,
    rows: Mapping[int, Mapping[str, Sequence[int]]] | None = None,
    figures: Mapping[int, Mapping[str, int]] | None = None,
    large: Mapping[int, str] | None = None,
    tiles: Mapping[tuple[str, int], str | None] | None = None,
    wishing: Mapping[int, int] | None = None,
    tile_points: Mapping[int, int] | None = None,
    discards: Mapping[str, Sequence[int]] | None = None,
    deck_top: Sequence[str] = (),
    deck_size: int | None = None,
    current: int = 0,
    first_player: int = 0,
    phase: str = "play",
    turn: int = 0,
    discarded_color: str | None = None,
    end: str | None = None,
    max_turns: int = 500,
    tile_layout: Any = "default",
    fill_seed: int = 0,
) -> dict[str, Any]:
    """The dict of an explicit position; see :func:`make_state`."""
    hands = dict(hands or {})
    rows = rows or {}
    figures = figures or {}
    large = large or {}
    tiles = dict(tiles or {})
    wishing = wishing or {}
    tile_points = tile_points or {}
    discards = discards or {}
    config = GameConfig(num_players=num_players, tile_layout=tile_layout, max_turns=max_turns)
    base = GameState.new_game(config, seed=fill_seed).to_dict()
    dark = {c: base["dark_rows"][c] for c in COLORS}

    # Tiles: the named ones, then the rest of the 25 onto the unnamed tile stones in a
    # fixed order; as many stones stay empty as wishing stones are held (R1, R6).
    stones = [(c, r) for c in COLORS for r in (*dark[c], END_ROW)]
    for stone in tiles:
        assert stone in stones, f"{stone} is not a tile stone of this layout"
    rest = Counter(TILE_NAMES[t] for t in TILE_SET)
    rest.subtract(t for t in tiles.values() if t is not None)
    rest["wish"] -= sum(wishing.values())
    assert all(v >= 0 for v in rest.values()), f"more tiles named than the game has: {rest}"
    free = [s for s in stones if s not in tiles]
    to_place = sorted(rest.elements(), key=lambda name: TILE_CODES[name])
    assert len(to_place) <= len(free), "more empty tile stones named than wishing stones held"
    board = {c: [None] * END_ROW for c in COLORS}
    for (c, r), name in tiles.items():
        board[c][r - 1] = name
    for (c, r), name in zip(free, to_place, strict=False):  # extra stones stay empty
        board[c][r - 1] = name

    # Cards: the named ones, then the rest shuffled into unnamed hands, removed, deck.
    in_turn = phase in ("draw", "bonus") or end == "goal"
    named: list[str] = list(deck_top)
    for cards in hands.values():
        named += cards
    for player_rows in rows.values():
        for c, values in player_rows.items():
            named += [f"{c} {v}" for v in values]
    for c, values in discards.items():
        named += [f"{c} {v}" for v in values]
    left = Counter(ALL_CARDS)
    left.subtract(card_name(parse_card(x)) for x in named)
    assert all(v >= 0 for v in left.values()), f"more copies named than exist: {-left}"
    pool = sorted(left.elements(), key=parse_card)
    random.Random(fill_seed).shuffle(pool)
    for p in range(num_players):  # unnamed hands, and named ones too short, are filled up
        size = HAND_SIZE - 1 if in_turn and p == current else HAND_SIZE
        given = list(hands.get(p, ()))
        assert len(given) <= size, f"player {p} holds {len(given)} cards; at most {size} in this step"
        hands[p], pool = given + pool[: size - len(given)], pool[size - len(given) :]
    n_removed = REMOVED_CARDS[num_players]
    removed, pool = pool[:n_removed], pool[n_removed:]
    # Piles are bottom first: the first card of deck_top is drawn first.
    if deck_size is None:
        deck, extra = pool + list(reversed(deck_top)), []
    else:
        under = deck_size - len(deck_top)
        assert 0 <= under <= len(pool), f"cannot make a draw pile of {deck_size} cards"
        deck, extra = pool[:under] + list(reversed(deck_top)), pool[under:]
    piles = {c: [] for c in COLORS}
    for x in extra:  # surplus cards lie at the bottom of the discard piles (public)
        k = parse_card(x)
        piles[COLORS[card_color(k)]].append(card_value(k))
    for c, values in discards.items():
        piles[c] += list(values)

    players = []
    for p in range(num_players):
        figs = [
            {"path": c, "row": row, "large": large.get(p) == c} for c, row in (figures.get(p) or {}).items() if row
        ]
        big_placed = any(f["large"] for f in figs)
        assert large.get(p) is None or big_placed, f"player {p}'s large figure is on {large[p]}, which has no figure"
        figs += [
            {"path": None, "row": 0, "large": i == 0 and not big_placed} for i in range(FIGURES_PER_PLAYER - len(figs))
        ]
        player_rows = rows.get(p) or {}
        players.append(
            {
                "hand": list(hands[p]),
                "rows": {c: list(player_rows.get(c, ())) for c in COLORS},
                "figures": figs,
                "wishing_stones": wishing.get(p, 0),
                "tile_points": tile_points.get(p, 0),
            }
        )
    base.update(
        {
            "tiles": board,
            "deck": deck,
            "removed": removed,
            "discards": {c: [f"{c} {v}" for v in piles[c]] for c in COLORS},
            "players": players,
            "first_player": first_player,
            "current_player": current,
            "phase": phase,
            "turn": turn,
            "discarded_color": discarded_color,
            "end": end,
        }
    )
    return base


def make_state(num_players: int = 2, **kwargs: Any) -> GameState:
    """An explicit position, validated by ``GameState.from_dict``.

    Arguments (all optional, keyword only): ``hands`` {seat: ["red 5", ...]} (a hand
    with fewer cards than the step needs is filled up from the unnamed cards),
    ``rows`` {seat: {"red": [values]}}, ``figures`` {seat: {"red": row}}, ``large``
    {seat: colour of the large figure}, ``tiles`` {("red", row): "clover" | None},
    ``wishing`` / ``tile_points`` {seat: n}, ``discards`` {"red": [values, top last]},
    ``deck_top`` [cards, next drawn first], ``deck_size``, ``current``, ``phase``,
    ``turn``, ``discarded_color``, ``end``, ``max_turns``, ``tile_layout``.
    """
    return GameState.from_dict(make_state_dict(num_players, **kwargs))


def random_positions(num_players: int, count: int, seed: int) -> list[GameState]:
    """Card-game states part-way through random games (up to 400 random moves; some over), seeded."""
    rng = random.Random(seed)
    config = GameConfig(num_players=num_players)
    states = []
    for k in range(count):
        state = GameState.new_game(config, seed * 1000 + k)
        for _ in range(rng.randrange(400)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        states.append(state)
    return states


def act(state: GameState, *actions: str) -> GameState:
    """Apply readable actions in order (``act(s, "play red 5", "draw deck")``)."""
    for text in actions:
        state.apply(string_to_action(text))
    return state


def legal_strings(state: GameState) -> set[str]:
    from keltis_env.games.keltis import action_to_string

    return {action_to_string(a) for a in state.legal_actions()}


def fig(state: GameState, player: int, color: str) -> int:
    """Row of ``player``'s figure on the ``color`` path (0: none)."""
    return state.pos[player][COLORS.index(color)]


def tile_at(state: GameState, color: str, row: int) -> str | None:
    code = state.tiles[COLORS.index(color)][row]
    return TILE_NAMES.get(code)


def hand_names(state: GameState, player: int) -> list[str]:
    return [card_name(k) for k in state.hands[player]]


@pytest.fixture
def no_games(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if an evaluation game is played (output paths are checked first)."""
    from keltis_env.evaluation import workers

    def refuse(task: object, watch: object = None) -> None:
        raise AssertionError("a game was played although an output path is wrong")

    monkeypatch.setattr(workers, "play_task", refuse)  # where the games are played, in this process or a worker


@pytest.fixture
def python_default_signal_handlers():
    """Ctrl-C and SIGTERM handled as Python does by default in this process, as in a command
    started from a terminal: a test of what Ctrl-C does needs it delivered, whatever an
    earlier test in the same worker process left installed."""
    previous = _signal.getsignal(_signal.SIGINT), _signal.getsignal(_signal.SIGTERM)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    yield
    _signal.signal(_signal.SIGINT, previous[0])
    _signal.signal(_signal.SIGTERM, previous[1])


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny networks: one torch thread (threads waiting on each other on a busy machine cost
    more); the count before is put back after the test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
