"""The dice game's random events as explicit chance nodes (docs/rules.md R11), for frameworks
that model chance explicitly (see :mod:`keltis_env.core.chance` for the shape every game's
``Chance`` has).

The set-up: the first player (uniform), then, when the bonus layout is ``"random"``, for
each column the set of its 3 bonus rows (uniform over the 35 sets of distinct rows in
2..8) and the symbol on each of them, lowest row first, drawn from the 15 symbols left
with probability proportional to their copies left (exactly the engine's shuffle). Then
every roll of the dice: the 5 dice at the start of each turn (R11.1) and the dice re-rolled
in step 2 (R11.2). Dice are interchangeable, so a roll's outcome is the multiset of its
faces (252 outcomes for 5 dice), with its multinomial probability. Every event is public:
with chance explicit, the game hides nothing.

The engine state exists from the first roll on. A roll's faces replace the engine's
(seeded) dice; a re-roll puts the kept and the new faces on the table and then applies
"keep" through the engine, so that step 3 (the stone rule) and everything after it stay
the engine's own rules.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations, combinations_with_replacement
from math import factorial, prod
from typing import Any

from keltis_env.core.chance import EVERYONE, ChanceNode, counted_outcomes, uniform_outcomes

from .config import GameConfig
from .constants import (
    BONUS_NAMES,
    BONUS_SYMBOLS,
    BONUSES_PER_COLUMN,
    COLORS,
    FACE_NAMES,
    MAX_PLAYERS,
    NO_BONUS,
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    RANDOM_BONUS_ROWS,
    TOP_ROW,
    Phase,
)
from .state import GameState

KEEP = 0  # the reroll step's "keep" action (no die re-rolled)
#: the sets of bonus rows a column can have in a random layout (outcome id = index)
ROW_SETS = tuple(combinations(RANDOM_BONUS_ROWS, BONUSES_PER_COLUMN))
#: ``ROLLS[k]``: every multiset of faces ``k`` dice can show, sorted (outcome id = index)
ROLLS = {k: tuple(combinations_with_replacement(range(NUM_FACES), k)) for k in range(1, NUM_DICE + 1)}


def _roll_outcomes(k: int) -> dict[int, float]:
    """The multisets of ``k`` fair dice with their multinomial probabilities."""
    total = NUM_FACES**k
    return {i: factorial(k) / prod(factorial(c) for c in Counter(faces).values()) / total
            for i, faces in enumerate(ROLLS[k])}


_ROLL_OUTCOMES = {k: _roll_outcomes(k) for k in ROLLS}


class Chance:
    """A dice game whose random events are explicit (see the module documentation)."""

    __slots__ = ("_node", "config", "first_player", "rerolling", "rolling", "rows", "state", "symbol_pool", "symbols")

    def __init__(self, config: GameConfig) -> None:
        self.config = config
        self.state: GameState | None = None
        self.first_player = -1
        self.rows: list[tuple[int, ...]] = []  # a random layout's bonus rows, column by column
        self.symbols: list[int] = []  # its symbols placed so far, column by column, lowest row first
        # the symbols left to place: none unless the layout is random
        self.symbol_pool = Counter(BONUS_SYMBOLS) if config.bonus_layout == "random" else Counter()
        self.rolling = True  # the first roll is pending
        self.rerolling = 0  # the dice mask of a decided re-roll whose faces are pending
        self._node: ChanceNode | None = None

    # ------------------------------------------------------------------ static facts
    @staticmethod
    def max_outcomes(config: GameConfig) -> int:
        """Largest outcome id + 1: the rolls of 5 dice (252) outnumber everything else."""
        return max(len(ROLLS[NUM_DICE]), len(ROW_SETS), max(BONUS_NAMES) + 1, MAX_PLAYERS)

    @staticmethod
    def max_nodes(config: GameConfig) -> int:
        """The most chance events: the set-up's, then at most a roll and a re-roll a turn."""
        layout = NUM_COLORS * (1 + BONUSES_PER_COLUMN) if config.bonus_layout == "random" else 0
        return 1 + layout + 2 * int(config.max_turns)

    # ------------------------------------------------------------------ the pending event
    def node(self) -> ChanceNode | None:
        if self._node is None and (self.state is None or self.rolling or self.rerolling):
            self._node = self._pending()
        return self._node

    def _pending(self) -> ChanceNode:
        if self.first_player < 0:
            return ChanceNode("first player", EVERYONE, uniform_outcomes(self.config.num_players),
                              lambda p: f"player {p} starts")
        if self.symbol_pool.total():
            if len(self.symbols) == BONUSES_PER_COLUMN * len(self.rows):
                color = COLORS[len(self.rows)]
                return ChanceNode(f"bonus rows of the {color} column", EVERYONE, uniform_outcomes(len(ROW_SETS)),
                                  lambda i: f"{color} bonus rows {' '.join(map(str, ROW_SETS[i]))}")
            c, i = divmod(len(self.symbols), BONUSES_PER_COLUMN)
            row = self.rows[c][i]
            return ChanceNode(f"bonus on {COLORS[c]} row {row}", EVERYONE, counted_outcomes(self.symbol_pool),
                              lambda s: f"{BONUS_NAMES[s]} on {COLORS[c]} row {row}")
        if self.rerolling:
            k = self.rerolling.bit_count()
            return ChanceNode(f"re-roll {k} {'die' if k == 1 else 'dice'}", EVERYONE, _ROLL_OUTCOMES[k],
                              lambda i: "re-roll " + " ".join(FACE_NAMES[f] for f in ROLLS[k][i]))
        return ChanceNode("roll the dice", EVERYONE, _ROLL_OUTCOMES[NUM_DICE],
                          lambda i: "roll " + " ".join(FACE_NAMES[f] for f in ROLLS[NUM_DICE][i]))

    # ------------------------------------------------------------------ transitions
    def apply_outcome(self, outcome: int) -> str:
        node = self.node()
        if node is None:
            raise ValueError("no chance event is pending: a player decides")
        node.check(outcome)
        self._node = None
        if self.first_player < 0:
            self.first_player = outcome
        elif self.symbol_pool.total():
            if len(self.symbols) == BONUSES_PER_COLUMN * len(self.rows):
                self.rows.append(ROW_SETS[outcome])
            else:
                self.symbols.append(outcome)
                self.symbol_pool[outcome] -= 1
        elif self.rerolling:
            state = self.state
            assert state is not None
            mask, self.rerolling = self.rerolling, 0
            kept = [f for i, f in enumerate(state.dice) if not mask >> i & 1]
            state._set_dice(kept + list(ROLLS[mask.bit_count()][outcome]))
            state.apply(KEEP)  # step 3 (the stone rule) and the move step, by the engine
        else:
            if self.state is None:
                self.state = self._start()
            self.rolling = False
            self.state._set_dice(list(ROLLS[NUM_DICE][outcome]))
        return node.outcome_text(outcome)

    def _start(self) -> GameState:
        """The position before the first roll: the engine's own new game, its random parts
        replaced by the outcomes drawn here."""
        s = GameState.new_game(self.config, seed=0)
        s.first_player = s.current = self.first_player
        if self.symbols:
            board = []
            for c in range(NUM_COLORS):
                column = [NO_BONUS] * (TOP_ROW + 1)
                for i, row in enumerate(self.rows[c]):
                    column[row] = self.symbols[c * BONUSES_PER_COLUMN + i]
                board.append(tuple(column))
            s.bonus = tuple(board)
        return s

    def apply_action(self, action: int) -> None:
        state = self.state
        if state is None or self.rolling or self.rerolling:
            raise ValueError("a chance event is pending, not a player's decision")
        if state.phase == Phase.REROLL and action != KEEP:
            reason = state.illegal_reason(action)
            if reason is not None:
                state.refuse(action, reason)
            self.rerolling = action  # the new faces are the next chance event
            return
        rolls = state.rolls
        state.apply(action)
        if state.rolls != rolls and not state.is_over:
            self.rolling = True  # the engine started a turn: its dice are the next chance event

    # ------------------------------------------------------------------ copies
    def clone(self) -> Chance:
        return self.rebased(None if self.state is None else self.state.clone())

    def rebased(self, state: Any) -> Chance:
        """This game with ``state`` as its engine state (a clone, or a state sampled from a
        view of it); a pending roll or re-roll is kept."""
        other = Chance.__new__(Chance)
        other.config = self.config
        other.state = state
        other.first_player = self.first_player
        other.rows = self.rows[:]
        other.symbols = self.symbols[:]
        other.symbol_pool = self.symbol_pool.copy()
        other.rolling = self.rolling
        other.rerolling = self.rerolling
        other._node = None
        return other


__all__ = ["ROLLS", "ROW_SETS", "Chance"]
