"""Keltis's random events as explicit chance nodes (docs/rules.md R2, R3b), for frameworks that
model chance explicitly (see :mod:`keltis_env.core.chance` for the shape every game's
``Chance`` has).

The set-up (R2), one event at a time: the first player (public, uniform), the dark rows of
each path when the tile layout is ``"random"`` (public, uniform over the 70 sets of 4 rows
in 1..8), the 25 tiles, stone by stone (public), then, from the shuffled 110 cards, the 30
cards removed unseen with 2 players (seen by nobody) and the 8 cards of each hand (seen by
its owner). During play, every draw from the pile (R3b) is an event seen only by the
drawing player. Each card or tile is drawn from what is left with probability
proportional to its copies left, which is exactly the distribution of the engine's
shuffles; the draw pile's order is never decided before a card is drawn.

The engine state exists once the set-up is complete; its ``deck`` then holds the cards
not yet drawn in no particular order, and a draw puts the drawn card on top before the
engine's own ``apply`` takes it.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any

from keltis_env.core.chance import EVERYONE, NOBODY, ChanceNode, counted_outcomes, uniform_outcomes

from .actions import DRAW_DECK
from .config import GameConfig
from .constants import (
    COLORS,
    COPIES_PER_CARD,
    DARK_STONES_PER_PATH,
    END_ROW,
    HAND_SIZE,
    MAX_PLAYERS,
    NO_TILE,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    REMOVED_CARDS,
    TILE_NAMES,
    TILE_SET,
    Phase,
    card_name,
)
from .state import GameState

#: every set of dark rows a path can have in a random layout (outcome id = index)
LAYOUTS = tuple(combinations(range(1, END_ROW), DARK_STONES_PER_PATH))


class Chance:
    """A Keltis game whose random events are explicit (see the module documentation)."""

    __slots__ = ("_node", "cards", "config", "dark_rows", "drawing", "first_player", "hands", "removed",
                 "state", "tile_pool", "tiles")

    def __init__(self, config: GameConfig) -> None:
        self.config = config
        self.state: GameState | None = None
        self.first_player = -1
        self.dark_rows: list[tuple[int, ...]] = [] if config.tile_layout == "random" else list(config.dark_rows())
        self.tiles: list[int] = []
        self.tile_pool = Counter(TILE_SET)
        self.cards = Counter({k: COPIES_PER_CARD for k in range(NUM_CARD_KINDS)})
        self.removed: list[int] = []
        self.hands: list[list[int]] = [[] for _ in range(config.num_players)]
        self.drawing = False  # a draw from the pile is decided, its card not yet drawn
        self._node: ChanceNode | None = None

    # ------------------------------------------------------------------ static facts
    @staticmethod
    def max_outcomes(config: GameConfig) -> int:
        """Largest outcome id + 1: layouts, card kinds, tile codes or seats."""
        return max(len(LAYOUTS), NUM_CARD_KINDS, max(TILE_NAMES) + 1, MAX_PLAYERS)

    @staticmethod
    def max_nodes(config: GameConfig) -> int:
        """The most chance events of a game: the set-up's, then one per card drawn from the pile."""
        layout = NUM_COLORS if config.tile_layout == "random" else 0
        return 1 + layout + len(TILE_SET) + NUM_CARDS  # every card is removed, dealt or drawn at most once

    # ------------------------------------------------------------------ the pending event
    def node(self) -> ChanceNode | None:
        if self._node is None and (self.state is None or self.drawing):
            self._node = self._pending()
        return self._node

    def _pending(self) -> ChanceNode:
        if self.state is not None:  # a draw from the pile (R3b), seen by the drawing player
            p = self.state.current
            return ChanceNode(f"player {p} draws from the pile", p, counted_outcomes(Counter(self.state.deck)),
                              lambda k: f"player {p} draws {card_name(k)}")
        n = self.config.num_players
        if self.first_player < 0:
            return ChanceNode("first player", EVERYONE, uniform_outcomes(n), lambda p: f"player {p} starts")
        if len(self.dark_rows) < NUM_COLORS:
            color = COLORS[len(self.dark_rows)]
            return ChanceNode(f"dark rows of the {color} path", EVERYONE, uniform_outcomes(len(LAYOUTS)),
                              lambda i: f"{color} dark rows {' '.join(map(str, LAYOUTS[i]))}")
        if len(self.tiles) < len(TILE_SET):
            c, r = self._stones()[len(self.tiles)]
            return ChanceNode(f"tile on {COLORS[c]} row {r}", EVERYONE, counted_outcomes(self.tile_pool),
                              lambda t: f"{TILE_NAMES[t]} on {COLORS[c]} row {r}")
        if len(self.removed) < REMOVED_CARDS[n]:
            return ChanceNode("remove a card unseen", NOBODY, counted_outcomes(self.cards),
                              lambda k: f"remove {card_name(k)}")
        p = sum(map(len, self.hands)) // HAND_SIZE
        return ChanceNode(f"deal a card to player {p}", p, counted_outcomes(self.cards),
                          lambda k: f"deal {card_name(k)} to player {p}")

    def _stones(self) -> list[tuple[int, int]]:
        """The stones that hold a tile, in the engine's order (R2.2)."""
        stones = [(c, r) for c in range(NUM_COLORS) for r in self.dark_rows[c]]
        return stones + [(c, END_ROW) for c in range(NUM_COLORS)]

    # ------------------------------------------------------------------ transitions
    def apply_outcome(self, outcome: int) -> str:
        node = self.node()
        if node is None:
            raise ValueError("no chance event is pending: a player decides")
        node.check(outcome)
        self._node = None
        if self.state is not None:
            deck = self.state.deck
            i = deck.index(outcome)
            deck[i], deck[-1] = deck[-1], deck[i]  # the drawn card on top of the pile
            self.drawing = False
            self.state.apply(DRAW_DECK)
        elif self.first_player < 0:
            self.first_player = outcome
        elif len(self.dark_rows) < NUM_COLORS:
            self.dark_rows.append(LAYOUTS[outcome])
        elif len(self.tiles) < len(TILE_SET):
            self.tiles.append(outcome)
            self.tile_pool[outcome] -= 1
        else:
            self.cards[outcome] -= 1
            if len(self.removed) < REMOVED_CARDS[self.config.num_players]:
                self.removed.append(outcome)
            else:
                self.hands[sum(map(len, self.hands)) // HAND_SIZE].append(outcome)
                if sum(map(len, self.hands)) == HAND_SIZE * self.config.num_players:
                    self.state = self._start()
        return node.outcome_text(outcome)

    def _start(self) -> GameState:
        """The dealt position (R2): the engine's own new game, its random parts replaced by
        the outcomes drawn here."""
        s = GameState.new_game(self.config, seed=0)
        s.dark_rows = tuple(self.dark_rows)
        s.tiles = [[NO_TILE] * (END_ROW + 1) for _ in range(NUM_COLORS)]
        for (c, r), tile in zip(self._stones(), self.tiles, strict=True):
            s.tiles[c][r] = tile
        s.removed = sorted(self.removed)
        s.hands = [sorted(hand) for hand in self.hands]
        s.deck = sorted(self.cards.elements())  # the pile's order is decided draw by draw
        s.first_player = s.current = self.first_player
        return s

    def apply_action(self, action: int) -> None:
        state = self.state
        if state is None or self.drawing:
            raise ValueError("a chance event is pending, not a player's decision")
        if action == DRAW_DECK and state.phase == Phase.DRAW:
            self.drawing = True  # which card is the next chance event
            self._node = None
        else:
            state.apply(action)

    # ------------------------------------------------------------------ copies
    def clone(self) -> Chance:
        return self.rebased(None if self.state is None else self.state.clone())

    def rebased(self, state: Any) -> Chance:
        """This game with ``state`` as its engine state (a clone, or a state sampled from a
        view of it); the set-up and a pending draw are kept."""
        other = Chance.__new__(Chance)
        other.config = self.config
        other.state = state
        other.drawing = self.drawing
        other._node = None
        if state is None:  # still setting up: copy what was drawn so far
            other.first_player = self.first_player
            other.dark_rows = self.dark_rows[:]
            other.tiles = self.tiles[:]
            other.tile_pool = self.tile_pool.copy()
            other.cards = self.cards.copy()
            other.removed = self.removed[:]
            other.hands = [h[:] for h in self.hands]
        else:  # the set-up lives in the state now
            other.first_player = self.first_player
            other.dark_rows, other.tiles, other.removed, other.hands = self.dark_rows, self.tiles, [], []
            other.tile_pool, other.cards = self.tile_pool, Counter()
        return other


__all__ = ["LAYOUTS", "Chance"]
