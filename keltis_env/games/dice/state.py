"""The dice game's state and the rules that change it (docs/rules.md R11).

A :class:`GameState` holds everything about one game, including what decides the future
dice. It changes only through :meth:`GameState.apply`, one decision at a time; decisions
are the integer ids of :mod:`keltis_env.games.dice.actions`. A turn is a phase machine (R11):
the dice are rolled (step 1, no decision) -> ``REROLL`` (step 2: keep, or re-roll a
non-empty subset once; then step 3, the stone rule, is applied) -> ``MOVE`` (step 4:
choose a colour, or ``pass`` when none can be chosen) -> ``BONUS`` while a clover is
pending (step 5) -> the next turn's roll. ``OVER`` ends the game.

Randomness is explicit: the state keeps its ``seed`` and the number of ``rolls`` made;
roll number ``i`` of a game is :func:`roll_faces` ``(seed, i, k)``, a pure function (the
``i``-th output of SplitMix64 keyed by the seed). So a clone or a dict round-trip
continues with exactly the same dice, and no global random state is read or changed.

Representation invariants (kept by ``apply``; checked by ``from_dict``):

* ``dice`` is a tuple of 5 faces sorted ascending (colour indices 0..4, then the stone
  face 5): dice are interchangeable, so the state keeps one canonical order and actions
  number the dice 1..5 in that order; ``counts[f]`` (dice showing face ``f``) is derived;
* ``pos[p][c]`` is the row (1..9) of player ``p``'s marker in column ``c``, 0 for none;
  a player has at most one marker per column by construction, ``markers[p]`` (markers
  on the board, at most 4) is derived, and so are ``upper[p]`` (own markers on rows
  7..9) and ``upper_total`` (all players');
* ``bonus[c][r]`` is the bonus symbol on row ``r`` of column ``c`` (index 0 unused);
* ``turn`` counts completed turns, extra turns included; ``extra_turn`` says that the
  current turn is an extra turn earned in the previous one.

Dependencies go one way: this module uses :mod:`.serialize` (``to_dict``/``from_dict``)
and :mod:`.view` (``view``), which read a state only through its attributes and never
import this module at run time. :func:`sample_state` (a state from a view) lives here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from itertools import product
from typing import Any

from keltis_env.core.state import TurnBasedState
from keltis_env.core.validation import as_integer, game_seed

from .actions import BONUS_ADVANCE, BONUS_ENTER, MOVE, NUM_ACTIONS, PASS, action_to_string
from .config import GameConfig
from .constants import (
    CLOVER,
    COLORS,
    EXTRA_TURN,
    MARKERS_PER_PLAYER,
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    ROW_VALUES,
    STONE,
    STONE_FACE,
    STONE_FACES_FOR_STONE,
    STONE_SCORES,
    TOP_ROW,
    UPPER_FIRST_ROW,
    UPPER_MARKERS_TO_END,
    EndReason,
    Phase,
    stone_score,
)
from .serialize import state_from_dict, state_to_dict
from .view import PlayerView

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_REROLL_ACTIONS = tuple(range(MOVE))  # keep (0) and the 31 re-roll masks
_COLUMNS = tuple(range(NUM_COLORS))
_STONE_TOP = len(STONE_SCORES) - 1  # 9 or more stones score as 9


def _mix64(z: int) -> int:
    """SplitMix64's finaliser: a bijective scramble of a 64-bit integer."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def dice_key(seed: int) -> int:
    """The 64-bit key of a seed's dice sequence (seeds equal modulo 2**64 share it)."""
    return _mix64((seed + _GOLDEN) & _MASK64)


_ROLL_SPACE = NUM_FACES**NUM_DICE  # 7776 outcomes of five dice
#: Every outcome's faces, die by die: the five base-6 digits of the outcome, lowest first.
_DIGITS = tuple(t[::-1] for t in product(range(NUM_FACES), repeat=NUM_DICE))  # product: last digit fastest
#: Every outcome's faces sorted (the state's canonical dice order); 252 distinct tuples.
_SORTED: dict[tuple[int, ...], tuple[int, ...]] = {}
_SORTED_DIGITS = tuple(_SORTED.setdefault(tuple(sorted(d)), tuple(sorted(d))) for d in _DIGITS)
#: Dice showing each face, per sorted outcome.
_COUNTS = {d: tuple(d.count(f) for f in range(NUM_FACES)) for d in _SORTED.values()}


def _outcome(key: int, index: int) -> int:
    """Roll number ``index`` as one of the 7776 outcomes of five dice."""
    return _mix64((key + (index + 1) * _GOLDEN) & _MASK64) % _ROLL_SPACE


def _faces(key: int, index: int, count: int) -> tuple[int, ...]:
    return _DIGITS[_outcome(key, index)][:count]


def roll_faces(seed: int, index: int, count: int) -> list[int]:
    """The faces (0..5; 5 is the stone) of roll number ``index`` of the game seeded ``seed``
    when ``count`` dice are rolled, in the order they are dealt to the rolled dice.

    The faces are the lowest base-6 digits of a 64-bit hash of the seed and the index;
    the bias of that reduction is below 1e-15 per outcome.
    """
    return list(_faces(dice_key(seed), index, count))


def landing_row(row: int, dice: int) -> int:
    """R11.4: where a marker on ``row`` (0: none, it enters) ends after moving ``dice``
    rows: entering counts as the first row, and a marker stops on row 9."""
    target = row + dice
    return target if target < TOP_ROW else TOP_ROW


class GameState(TurnBasedState):
    """One dice game. Create with :meth:`new_game` (or :meth:`from_dict`).

    ``is_over``, ``terminated``, ``truncated``, ``winners()`` (ties share the victory)
    come from :class:`~keltis_env.core.state.TurnBasedState`.
    """

    TRUNCATED = EndReason.TRUNCATED

    __slots__ = (
        "bonus",
        "config",
        "counts",
        "current",
        "dice",
        "end",
        "extra_turn",
        "first_player",
        "key",
        "markers",
        "num_players",
        "phase",
        "pos",
        "rolls",
        "seed",
        "stones",
        "turn",
        "upper",
        "upper_to_end",
        "upper_total",
    )

    config: GameConfig
    num_players: int
    bonus: tuple[tuple[int, ...], ...]
    seed: int
    key: int
    rolls: int
    dice: tuple[int, ...]
    counts: tuple[int, ...]
    pos: list[list[int]]
    markers: list[int]
    upper: list[int]
    upper_total: int
    upper_to_end: int
    stones: list[int]
    phase: Phase
    current: int
    first_player: int
    turn: int
    extra_turn: bool
    end: EndReason

    # ------------------------------------------------------------------ set-up
    @classmethod
    def new_game(cls, config: GameConfig | None = None, seed: int | None = None) -> GameState:
        """A new game, its first roll made. The same config and seed give the same game.

        ``seed=None`` draws a seed from the operating system. The first player is drawn
        from the seed, as in the card game (R2.5), then the random bonus layout if any.
        """
        config = config if config is not None else GameConfig()
        seed = game_seed(seed)
        n = config.num_players
        rng = random.Random(seed)
        s = cls.__new__(cls)
        s.config = config
        s.num_players = n
        s.first_player = rng.randrange(n)
        s.bonus = config.bonus_squares(rng)
        s.seed = seed
        s.key = dice_key(seed)
        s.rolls = 0
        s.pos = [[0] * NUM_COLORS for _ in range(n)]
        s.markers = [0] * n
        s.upper = [0] * n
        s.upper_total = 0
        s.upper_to_end = UPPER_MARKERS_TO_END[n]
        s.stones = [0] * n
        s.current = s.first_player
        s.turn = 0
        s.extra_turn = False
        s.end = EndReason.NONE
        s._roll_all()
        return s

    def clone(self) -> GameState:
        """An independent copy that continues identically (same future dice)."""
        s = GameState.__new__(GameState)
        s.config = self.config
        s.num_players = self.num_players
        s.bonus = self.bonus
        s.seed = self.seed
        s.key = self.key
        s.rolls = self.rolls
        s.dice = self.dice  # tuples: shared, never changed in place
        s.counts = self.counts
        s.pos = [x[:] for x in self.pos]
        s.markers = self.markers[:]
        s.upper = self.upper[:]
        s.upper_total = self.upper_total
        s.upper_to_end = self.upper_to_end
        s.stones = self.stones[:]
        s.phase = self.phase
        s.current = self.current
        s.first_player = self.first_player
        s.turn = self.turn
        s.extra_turn = self.extra_turn
        s.end = self.end
        return s

    # ------------------------------------------------------------------ queries
    def score(self, player: int) -> int:
        """The player's score if the game ended now (R11 scoring): each marker its row's
        value, no doubling, plus the stone table."""
        v = ROW_VALUES
        a, b, c, d, e = self.pos[player]  # five columns
        return v[a] + v[b] + v[c] + v[d] + v[e] + stone_score(self.stones[player])

    def scores(self) -> list[int]:
        """Every player's :meth:`score` (inlined: the encoder reads them at every step)."""
        v = ROW_VALUES
        top = _STONE_TOP
        return [
            v[a] + v[b] + v[c] + v[d] + v[e] + STONE_SCORES[s if s < top else top]
            for (a, b, c, d, e), s in zip(self.pos, self.stones, strict=True)
        ]

    # ------------------------------------------------------------------ legal actions
    def legal_actions(self) -> list[int]:
        """The sorted ids of every legal decision of the current player (empty when over)."""
        phase = self.phase
        if phase == Phase.REROLL:
            return list(_REROLL_ACTIONS)
        if phase == Phase.MOVE:
            return self._legal_move()
        if phase == Phase.BONUS:
            return self._legal_bonus()
        return []

    def _legal_move(self) -> list[int]:
        p = self.current
        pos = self.pos[p]
        counts = self.counts
        can_enter = self.markers[p] < MARKERS_PER_PLAYER
        moves = [
            MOVE + c
            for c in _COLUMNS
            if counts[c] and (pos[c] < TOP_ROW if pos[c] else can_enter)
        ]
        return moves or [PASS]

    def _legal_bonus(self) -> list[int]:
        pos = self.pos[self.current]
        advance = [BONUS_ADVANCE + c for c in _COLUMNS if 0 < pos[c] < TOP_ROW]
        if self.markers[self.current] < MARKERS_PER_PLAYER:
            advance += [BONUS_ENTER + c for c in _COLUMNS if not pos[c]]
        return advance

    def illegal_reason(self, action: int) -> str | None:
        """Why ``action`` is not legal now, or ``None`` when it is legal."""
        if type(action) is not int:
            action = _integer_or_same(action)
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            return f"action ids are integers 0..{NUM_ACTIONS - 1}"
        phase = self.phase
        if phase == Phase.OVER:
            return "the game is over"
        p = self.current
        step = _STEP_NAMES[phase]
        if action < MOVE:
            if phase == Phase.REROLL:
                return None
            return f"dice are kept or re-rolled in the reroll step, not the {step} step"
        if action <= PASS:
            if phase != Phase.MOVE:
                return f"markers are moved (or the move passed) in the move step, not the {step} step"
            if action == PASS:
                if self._legal_move() == [PASS]:
                    return None
                return "a colour can be chosen, and moving is then mandatory (R11.4)"
            c = action - MOVE
            if not self.counts[c]:
                return f"no die shows {COLORS[c]}"
            row = self.pos[p][c]
            if row == TOP_ROW:
                return f"player {p}'s {COLORS[c]} marker is on row 9; that column can no longer be chosen (R11.4)"
            if not row and self.markers[p] >= MARKERS_PER_PLAYER:
                return f"player {p} has all {MARKERS_PER_PLAYER} markers on the board and cannot enter a fifth column"
            return None
        if phase != Phase.BONUS:
            return f"bonus steps need a pending clover bonus, and this is the {step} step"
        if action < BONUS_ENTER:
            c = action - BONUS_ADVANCE
            row = self.pos[p][c]
            if not row:
                return f"player {p} has no marker in the {COLORS[c]} column"
            if row == TOP_ROW:
                return f"player {p}'s {COLORS[c]} marker is on row 9 and cannot move up"
            return None
        c = action - BONUS_ENTER
        if self.pos[p][c]:
            return f"player {p} already has a marker in the {COLORS[c]} column"
        if self.markers[p] >= MARKERS_PER_PLAYER:
            return f"player {p} has all {MARKERS_PER_PLAYER} markers on the board"
        return None

    # ------------------------------------------------------------------ transitions
    def action_text(self, action: int) -> str:
        return action_to_string(action)

    def apply(self, action: int) -> None:
        """Make one decision for the current player.

        Raises :class:`~keltis_env.core.errors.ActionError` naming the action and why it
        is illegal; the state is then unchanged. Any integer type is accepted (numpy's
        included), bools are not.
        """
        if type(action) is not int:
            action = _integer_or_same(action)
        reason = self.illegal_reason(action)
        if reason is not None:
            self.refuse(action, reason)
        phase = self.phase
        if phase == Phase.REROLL:
            self._apply_reroll(action)
        elif phase == Phase.MOVE:
            self._apply_move(action)
        else:
            self._apply_bonus(action)

    def _apply_reroll(self, mask: int) -> None:
        """R11.2 (keep, or re-roll the dice of ``mask`` once), then R11.3 (the stone rule)."""
        if mask:
            dice = self.dice
            kept = [f for i, f in enumerate(dice) if not mask >> i & 1]
            kept += _faces(self.key, self.rolls, NUM_DICE - len(kept))
            self.rolls += 1
            self._set_dice(kept)
        if self.counts[STONE_FACE] >= STONE_FACES_FOR_STONE:
            self.stones[self.current] += 1  # one stone, however many stone faces
        self.phase = Phase.MOVE

    def _apply_move(self, action: int) -> None:
        """R11.4: move (or enter) a marker as many rows as dice show the colour."""
        if action == PASS:
            self._end_turn(False)
            return
        c = action - MOVE
        p = self.current
        row = self.pos[p][c]
        if not row:
            self.markers[p] += 1
        self._arrive(p, c, row, landing_row(row, self.counts[c]))

    def _apply_bonus(self, action: int) -> None:
        """R11.5 clover: one own marker one row up, or a new marker on row 1."""
        p = self.current
        if action < BONUS_ENTER:
            c = action - BONUS_ADVANCE
            row = self.pos[p][c]
            self._arrive(p, c, row, row + 1)
        else:
            c = action - BONUS_ENTER
            self.markers[p] += 1
            self._arrive(p, c, 0, 1)

    def _arrive(self, p: int, c: int, old: int, row: int) -> None:
        """Player ``p``'s marker in column ``c`` moves from ``old`` to ``row``: check the
        end (R11 end, the ending move's bonus is not applied), then the bonus (R11.5)."""
        self.pos[p][c] = row
        if old < UPPER_FIRST_ROW <= row:
            self.upper[p] += 1
            self.upper_total += 1
            if self.upper[p] == MARKERS_PER_PLAYER:
                self._finish(EndReason.ALL_UPPER)
                return
            if self.upper_total >= self.upper_to_end:
                self._finish(EndReason.UPPER_COUNT)
                return
        bonus = self.bonus[c][row]
        if bonus == CLOVER:
            if self._legal_bonus():  # always, unless every own marker is on row 9 (then the game is over)
                self.phase = Phase.BONUS
                return
            self._end_turn(False)
        elif bonus == STONE:
            self.stones[p] += 1
            self._end_turn(False)
        else:
            self._end_turn(bonus == EXTRA_TURN)

    def _end_turn(self, extra: bool) -> None:
        """The turn is over: truncate at max_turns, else the same player (extra turn) or
        the next one rolls."""
        self.turn += 1
        if self.turn >= self.config.max_turns:
            self._finish(EndReason.TRUNCATED)
            return
        if not extra:
            self.current = (self.current + 1) % self.num_players
        self.extra_turn = extra
        self._roll_all()

    def _roll_all(self) -> None:
        """R11.1: roll all five dice."""
        dice = _SORTED_DIGITS[_outcome(self.key, self.rolls)]
        self.dice = dice
        self.counts = _COUNTS[dice]
        self.rolls += 1
        self.phase = Phase.REROLL

    def _set_seed(self, seed: int) -> None:
        """Key the future dice to ``seed`` (see :func:`roll_faces`)."""
        self.seed = seed
        self.key = dice_key(seed)

    def _set_dice(self, faces: list[int]) -> None:
        """Put five faces on the table, in the canonical (sorted) order."""
        dice = _SORTED[tuple(sorted(faces))]
        self.dice = dice
        self.counts = _COUNTS[dice]

    def _finish(self, reason: EndReason) -> None:
        self.end = reason
        self.phase = Phase.OVER
        self.extra_turn = False

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        # "DiceState": a printed position names its game (the card game's says "GameState").
        return (
            f"DiceState(players={self.num_players}, turn={self.turn}, current={self.current}, "
            f"phase={self.phase.name}, dice={self.dice}, end={self.end.name})"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of the whole state; :meth:`from_dict` rebuilds it."""
        return state_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameState:
        """Rebuild a state from :meth:`to_dict`'s form, refusing any broken invariant."""
        return state_from_dict(data, cls)

    def view(self, player: int) -> PlayerView:
        """What ``player`` may know (everything but the future dice), as a
        :class:`~keltis_env.games.dice.view.PlayerView`."""
        return PlayerView.of(self, player)


def sample_state(view: PlayerView, rng: random.Random) -> GameState:
    """A full state consistent with ``view`` whose future dice are drawn from ``rng``.

    The view hides only the future dice, so this is the position itself with a fresh
    dice sequence: play from it continues legally (for search, or to let a bot that
    only holds a view simulate).
    """
    seed = rng.getrandbits(63)
    s = GameState.__new__(GameState)
    s.config = view.config
    s.num_players = view.num_players
    s.bonus = view.bonus
    s.seed = seed
    s.key = dice_key(seed)
    s.rolls = 0
    s._set_dice(list(view.dice))
    s.pos = [list(x) for x in view.positions]
    s.markers = list(view.markers)
    s.upper = list(view.upper)
    s.upper_total = view.upper_total
    s.upper_to_end = view.upper_to_end
    s.stones = list(view.stones)
    s.phase = view.phase
    s.current = view.current_player
    s.first_player = view.first_player
    s.turn = view.turn
    s.extra_turn = view.extra_turn
    s.end = view.end
    return s


def _integer_or_same(action: Any) -> Any:
    """An action of any integer type as a plain int; anything else unchanged, for
    ``illegal_reason`` to refuse with the range of the ids."""
    value = as_integer(action)
    return action if value is None else value


_STEP_NAMES = {Phase.REROLL: "reroll", Phase.MOVE: "move", Phase.BONUS: "bonus", Phase.OVER: "over"}

#: ``Phase`` and ``EndReason`` are declared in :mod:`.constants` and also exported here,
#: next to the state that uses them.
__all__ = ["EndReason", "GameState", "Phase", "dice_key", "landing_row", "roll_faces", "sample_state"]
