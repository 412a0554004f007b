"""A rule-based player for the Keltis dice game (docs/rules.md R11).

Strategy
--------
Every decision is scored in points, the game's own currency, and the best one is taken.

1. **Which colour to take** (step 4). A move in column ``c`` with ``k`` dice is worth:

   * the change of the marker's row value (``-4, -3, -2, 1, 2, 3, 6, 7, 10``): entering
     a new column with one die costs 4 points, so new columns are opened only when
     nothing better is shown or when many dice show the colour; dice past row 9 are
     wasted, which this counts too;
   * the bonus of the square it ends on: a stone is worth what it adds on the stone
     table (+6 for the first one, since 0 stones score -10); a clover is worth the best
     one-row step it allows; an extra turn is worth ``extra_turn_value`` points (about
     what an average turn earns);
   * **the end of the game**: a move that ends it (R11 end) is worth ``+win_value`` when
     the bot then has the highest score, ``-win_value`` when it has not, and a small
     amount for a tie; the ending move's bonus is not counted, as it is not applied.
     A move that brings a marker into the upper zone while the bot is behind costs
     ``behind_penalty`` points per point of deficit (capped), because it brings an end
     that the bot would lose closer.

2. **When to re-roll** (step 2). The dice are interchangeable, so a re-roll is a number
   of dice of each face to throw again (at most 32 choices). For each choice the bot
   computes the exact expected value of the best move after the re-roll, over every
   outcome of the thrown dice, with the stone rule (two stone faces give one stone, worth
   its step on the stone table) and a forced ``pass`` worth 0. It keeps the roll unless a
   re-roll is expected to be better; among equal choices it throws the fewest dice.

3. **Which bonus to use** (a clover, step 5): the same scoring as a move of one row,
   over every own marker that can step up and every column it can enter on row 1.

The bot reads only its :class:`~keltis_env.games.dice.view.PlayerView` (or the zero-copy
``LiveView``); a re-roll decision takes about a millisecond, the others a few
microseconds. It draws no random numbers: ties go to the lowest action id (for the
re-roll, to the fewest dice thrown).
"""

from __future__ import annotations

from itertools import product
from typing import Any

from keltis_env.bots.base import Bot
from keltis_env.core.validation import as_finite
from keltis_env.games.dice.actions import BONUS_ADVANCE, BONUS_ENTER, KEEP, MOVE, PASS
from keltis_env.games.dice.constants import (
    CLOVER,
    EXTRA_TURN,
    MARKERS_PER_PLAYER,
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    ROW_VALUES,
    STONE,
    STONE_FACE,
    STONE_FACES_FOR_STONE,
    TOP_ROW,
    UPPER_FIRST_ROW,
    stone_score,
)
from keltis_env.games.dice.state import Phase, landing_row

_COLUMNS = range(NUM_COLORS)


def _code(counts: tuple[int, ...] | list[int]) -> int:
    """A multiset of faces as one integer: base-6 digits are the counts per face (no count
    exceeds 5, so adding codes adds multisets)."""
    return sum(k * NUM_FACES**f for f, k in enumerate(counts))


def _outcomes(m: int) -> list[tuple[int, float]]:
    """Every multiset of faces that ``m`` thrown dice can show, as (code, probability)."""
    out: dict[int, float] = {}
    for faces in product(range(NUM_FACES), repeat=m):
        code = sum(NUM_FACES**f for f in faces)
        out[code] = out.get(code, 0.0) + 1.0
    total = float(NUM_FACES**m)
    return [(code, n / total) for code, n in sorted(out.items())]


#: _OUTCOMES[m]: the outcomes of throwing m dice (at most 252, for m = 5).
_OUTCOMES = tuple(_outcomes(m) for m in range(NUM_DICE + 1))
#: Every multiset of five faces, as counts per face: what the table can show after step 2.
_FINALS = tuple(counts for counts in product(range(NUM_DICE + 1), repeat=NUM_FACES) if sum(counts) == NUM_DICE)
#: The index in _FINALS of each multiset's code.
_FINAL_INDEX = {_code(counts): i for i, counts in enumerate(_FINALS)}
#: Finals that give a stone (R11.3).
_FINAL_STONE = tuple(counts[STONE_FACE] >= STONE_FACES_FOR_STONE for counts in _FINALS)
_NO_MOVE = float("-inf")

#: A re-roll choice: (action, indices in _FINALS of its outcomes, their probabilities).
Choice = tuple[int, tuple[int, ...], tuple[float, ...]]
_CHOICES: dict[tuple[int, ...], tuple[Choice, ...]] = {}


def reroll_choices(counts: tuple[int, ...]) -> tuple[Choice, ...]:
    """The distinct keep/re-roll choices for dice showing ``counts`` (dice per face), keep
    first, then by number of dice thrown: the dice are interchangeable, so a choice is a
    number of dice of each face to throw again (at most 32 choices). Its action throws the
    last dice of each face's run (the dice are sorted)."""
    known = _CHOICES.get(counts)
    if known is not None:
        return known
    starts = [sum(counts[:f]) for f in range(NUM_FACES)]
    out = []
    for thrown in sorted(product(*(range(k + 1) for k in counts)), key=sum):
        kept = _code([k - t for k, t in zip(counts, thrown, strict=True)])
        mask = 0
        for f, t in enumerate(thrown):
            for i in range(starts[f] + counts[f] - t, starts[f] + counts[f]):
                mask |= 1 << i
        outcomes = _OUTCOMES[sum(thrown)]
        out.append((mask, tuple(_FINAL_INDEX[kept + code] for code, _ in outcomes), tuple(p for _, p in outcomes)))
    choices = _CHOICES[counts] = tuple(out)
    return choices


def _finite(name: str, value: Any) -> float:
    """An option's value if it is a finite number (NaN and the infinities are refused)."""
    number = as_finite(value)
    if number is None:
        raise ValueError(f"heuristic option {name} must be a finite number, got {value!r}")
    return number


class DiceHeuristicBot(Bot):
    """Greedy in points with exact re-roll expectations; see the module documentation.

    Options (``make_bot("heuristic:extra_turn_value=4", game="dice")``):
    ``extra_turn_value`` (points an extra turn is worth, default 3), ``win_value``
    (points for winning by ending the game, default 50), ``behind_penalty`` (points per
    point of deficit for entering the upper zone while behind, default 0.2).
    """

    name = "heuristic"
    #: It reads a view only during ``act`` and keeps nothing: a zero-copy view will do.
    accepts_live_view = True

    def __init__(
        self,
        seed: int | None = None,
        extra_turn_value: float = 3.0,
        win_value: float = 50.0,
        behind_penalty: float = 0.2,
    ) -> None:
        super().__init__(seed)
        self.extra_turn_value = _finite("extra_turn_value", extra_turn_value)
        self.win_value = _finite("win_value", win_value)
        self.behind_penalty = _finite("behind_penalty", behind_penalty)

    def __repr__(self) -> str:
        return (
            f"DiceHeuristicBot(extra_turn_value={self.extra_turn_value}, win_value={self.win_value}, "
            f"behind_penalty={self.behind_penalty})"
        )

    # ------------------------------------------------------------------ decisions
    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("DiceHeuristicBot.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:
            return legal[0]
        phase = view.phase
        if phase == Phase.REROLL:
            return self._reroll(view)
        if phase == Phase.MOVE:
            return max(legal, key=lambda a: (self._move_value(view, a - MOVE, view.counts[a - MOVE]), -a))
        return max(legal, key=lambda a: (self._bonus_value(view, a), -a))

    def _reroll(self, view: Any) -> int:
        """Step 2: the keep/re-roll choice with the highest expected value of step 3-5
        (among equals, the first: keep, then the fewest dice thrown)."""
        best_action, best_value = KEEP, _NO_MOVE
        for action, value in self.reroll_values(view):
            if value > best_value + 1e-9:
                best_action, best_value = action, value
        return best_action

    def reroll_values(self, view: Any) -> list[tuple[int, float]]:
        """Every distinct keep/re-roll choice (:func:`reroll_choices`) with the exact
        expected value of the best move after it, stone rule included (step 3-5)."""
        p = view.player
        stone_gain = stone_score(view.stones[p] + 1) - stone_score(view.stones[p])
        # The value of every move a colour allows, per number of dice showing it (a colour
        # that cannot be chosen, or shown by no die, allows none).
        a, b, c, d, e = (
            [_NO_MOVE, *(self._move_value(view, col, k) for k in range(1, NUM_DICE + 1))]
            if self._can_choose(view, col)
            else [_NO_MOVE] * (NUM_DICE + 1)
            for col in _COLUMNS
        )
        best = [max(a[i], b[j], c[k], d[m], e[n]) for i, j, k, m, n, _ in _FINALS]
        values = [
            (x if x != _NO_MOVE else 0.0) + (stone_gain if stone else 0.0)
            for x, stone in zip(best, _FINAL_STONE, strict=True)
        ]
        return [
            (action, sum(prob * values[i] for i, prob in zip(finals, probs, strict=True)))
            for action, finals, probs in reroll_choices(tuple(view.counts))
        ]

    def action_values(self, view: Any) -> list[tuple[int, float]]:
        """The bot's value of each of the player's choices: the expected value of each
        distinct re-roll choice (step 2), or the points of each move or bonus step."""
        legal = view.legal_actions
        if view.phase == Phase.REROLL:
            return self.reroll_values(view)
        if view.phase == Phase.MOVE:
            return [(x, self._move_value(view, x - MOVE, view.counts[x - MOVE]) if x < PASS else 0.0) for x in legal]
        return [(x, self._bonus_value(view, x)) for x in legal]

    # ------------------------------------------------------------------ evaluation
    @staticmethod
    def _can_choose(view: Any, c: int) -> bool:
        row = view.positions[view.player][c]
        return row < TOP_ROW if row else view.markers[view.player] < MARKERS_PER_PLAYER

    def _move_value(self, view: Any, c: int, k: int) -> float:
        """Points of moving in column ``c`` with ``k`` dice (0 dice: not a move)."""
        if not k:
            return 0.0
        row = view.positions[view.player][c]
        return self._arrival_value(view, c, row, landing_row(row, k))

    def _bonus_value(self, view: Any, action: int) -> float:
        p = view.player
        if action < BONUS_ENTER:
            c = action - BONUS_ADVANCE
            row = view.positions[p][c]
            return self._arrival_value(view, c, row, row + 1)
        return self._arrival_value(view, action - BONUS_ENTER, 0, 1)

    def _arrival_value(self, view: Any, c: int, old: int, new: int) -> float:
        """Points of player's marker in column ``c`` going from ``old`` to ``new``."""
        p = view.player
        gain = ROW_VALUES[new] - ROW_VALUES[old]
        if old < UPPER_FIRST_ROW <= new:
            ends = view.upper[p] + 1 == MARKERS_PER_PLAYER or view.upper_total + 1 >= view.upper_to_end
            scores = list(view.scores)
            scores[p] += gain
            best_other = max(s for q, s in enumerate(scores) if q != p)
            margin = scores[p] - best_other
            if ends:  # the ending move's bonus is not applied (R11 end)
                if margin > 0:
                    return self.win_value + gain
                return gain + (0.0 if margin == 0 else -self.win_value)
            if margin < 0:
                gain -= self.behind_penalty * min(-margin, 20)
        bonus = view.bonus[c][new]
        if bonus == STONE:
            gain += stone_score(view.stones[p] + 1) - stone_score(view.stones[p])
        elif bonus == EXTRA_TURN:
            gain += self.extra_turn_value
        elif bonus == CLOVER:
            gain += self._clover_value(view, c, new)
        return gain

    @staticmethod
    def _clover_value(view: Any, moved: int, row: int) -> float:
        """The best one-row step a clover allows after the marker in ``moved`` reached ``row``
        (bonuses of that step are not looked at: one level of look-ahead)."""
        p = view.player
        positions = list(view.positions[p])
        positions[moved] = row
        steps = [ROW_VALUES[r + 1] - ROW_VALUES[r] for r in positions if 0 < r < TOP_ROW]
        if sum(1 for r in positions if r) < MARKERS_PER_PLAYER and 0 in positions:
            steps.append(ROW_VALUES[1])
        return float(max(steps, default=0))


__all__ = ["DiceHeuristicBot", "reroll_choices"]
