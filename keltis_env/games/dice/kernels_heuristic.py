"""The dice game's ``heuristic`` bot compiled (numba, the ``fast`` extra): the same
decisions as :class:`~keltis_env.games.dice.bots.heuristic.DiceHeuristicBot` at the same
options, on a state row of :mod:`.kernels`, for the batched learner step's opponents.

The re-roll tables (every distinct keep/re-roll choice of every roll, with the outcomes of
the thrown dice and their probabilities) are built once from the Python bot's own
:func:`~keltis_env.games.dice.bots.heuristic.reroll_choices`, so the two sum the same
expectations in the same order; ``tests/test_kernels_dice.py`` holds the decisions equal.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel

from .actions import BONUS_ADVANCE, BONUS_ENTER, MOVE, NUM_ACTIONS, PASS
from .constants import (
    CLOVER,
    EXTRA_TURN,
    MARKERS_PER_PLAYER,
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    ROW_VALUES,
    STONE,
    STONE_SCORES,
    TOP_ROW,
    UPPER_FIRST_ROW,
)
from .kernels import (
    BONUS,
    COUNTS,
    CURRENT,
    MARKERS,
    NUM_PLAYERS,
    PHASE,
    POS,
    STONES,
    UPPER,
    UPPER_TO_END,
    UPPER_TOTAL,
    legal_mask,
    score,
)

# The Python bot, loaded by name: the bots stay outside the strictly type-checked engine
# modules (pyproject's mypy section), which a static import would pull in.
_BOT = importlib.import_module(f"{__package__}.bots.heuristic")
_C, _ROWS = NUM_COLORS, TOP_ROW + 1
_REROLL, _MOVE = 0, 1
_ROW_VALUES = np.array(ROW_VALUES, dtype=np.int64)
_STONE_SCORES = np.array(STONE_SCORES, dtype=np.int64)


def _tables() -> tuple[np.ndarray, ...]:
    """Every roll's re-roll choices, flattened: the index of a roll's counts (by their
    base-6 code), each roll's first choice, each choice's action and first outcome, each
    outcome's final roll and probability, the finals' counts and whether they give a stone."""
    finals = np.array(_BOT._FINALS, dtype=np.int64)
    index = np.full(NUM_FACES ** NUM_FACES, -1, dtype=np.int64)
    first_choice, actions, first_outcome = [0], [], [0]
    outcome_final: list[int] = []
    outcome_prob: list[float] = []
    for i, counts in enumerate(_BOT._FINALS):
        index[_BOT._code(counts)] = i
        for action, final_ids, probs in _BOT.reroll_choices(tuple(counts)):
            actions.append(action)
            outcome_final.extend(final_ids)
            outcome_prob.extend(probs)
            first_outcome.append(len(outcome_final))
        first_choice.append(len(actions))
    return (index, np.array(first_choice, dtype=np.int64), np.array(actions, dtype=np.int64),
            np.array(first_outcome, dtype=np.int64), np.array(outcome_final, dtype=np.int64),
            np.array(outcome_prob, dtype=np.float64), finals, np.array(_BOT._FINAL_STONE, dtype=np.bool_))


#: the re-roll tables (:func:`_tables`), passed to the kernels as arguments: numba caches no
#: compiled code that holds arrays this large as constants
TABLES = _tables()
_NO_MOVE = -np.inf


def options(bot: Any = None) -> np.ndarray:
    """The options of ``bot`` (a ``DiceHeuristicBot``; default: the bot's defaults) as the
    kernels take them: ``extra_turn_value``, ``win_value``, ``behind_penalty``."""
    bot = bot if bot is not None else _BOT.DiceHeuristicBot()
    return np.array([bot.extra_turn_value, bot.win_value, bot.behind_penalty], dtype=np.float64)


@kernel
def _stone_gain(s: Any, p: int) -> float:
    stones = s[STONES + p]
    top = len(_STONE_SCORES) - 1
    return float(_STONE_SCORES[min(stones + 1, top)] - _STONE_SCORES[min(stones, top)])


@kernel
def _clover_value(s: Any, p: int, moved: int, row: int) -> float:
    """The best one-row step a clover allows once ``p``'s marker in ``moved`` is on ``row``."""
    best = -1000
    on_board = 0
    free = False
    for c in range(_C):
        r = row if c == moved else s[POS + p * _C + c]
        if r:
            on_board += 1
        else:
            free = True
        if 0 < r < TOP_ROW:
            best = max(best, _ROW_VALUES[r + 1] - _ROW_VALUES[r])
    if on_board < MARKERS_PER_PLAYER and free:
        best = max(best, _ROW_VALUES[1])
    return float(best) if best > -1000 else 0.0


@kernel
def _arrival_value(s: Any, p: int, c: int, old: int, new: int, opts: Any) -> float:
    """Points of ``p``'s marker in column ``c`` going from ``old`` to ``new`` (the bot's
    ``_arrival_value``)."""
    gain = float(_ROW_VALUES[new] - _ROW_VALUES[old])
    if old < UPPER_FIRST_ROW <= new:
        ends = s[UPPER + p] + 1 == MARKERS_PER_PLAYER or s[UPPER_TOTAL] + 1 >= s[UPPER_TO_END]
        mine = score(s, p) + (_ROW_VALUES[new] - _ROW_VALUES[old])
        best_other = -(10**9)
        for q in range(s[NUM_PLAYERS]):
            if q != p:
                best_other = max(best_other, score(s, q))
        margin = mine - best_other
        if ends:  # the ending move's bonus is not applied (R11 end)
            if margin > 0:
                return float(opts[1] + gain)
            return float(gain + (0.0 if margin == 0 else -opts[1]))
        if margin < 0:
            gain -= opts[2] * min(-margin, 20)
    bonus = s[BONUS + c * _ROWS + new]
    if bonus == STONE:
        gain += _stone_gain(s, p)
    elif bonus == EXTRA_TURN:
        gain += opts[0]
    elif bonus == CLOVER:
        gain += _clover_value(s, p, c, new)
    return float(gain)


@kernel
def _move_value(s: Any, p: int, c: int, k: int, opts: Any) -> float:
    """Points of moving in column ``c`` with ``k`` dice."""
    if not k:
        return 0.0
    row = s[POS + p * _C + c]
    return float(_arrival_value(s, p, c, row, min(row + k, TOP_ROW), opts))


@kernel
def _reroll(s: Any, p: int, opts: Any, tables: Any) -> int:
    """The keep/re-roll choice with the highest expected value (the first among equals)."""
    roll_index, first_choice, choice_action, first_outcome, outcome_final, outcome_prob, finals, stones = tables
    table = np.full((_C, NUM_DICE + 1), _NO_MOVE)
    for c in range(_C):
        row = s[POS + p * _C + c]
        if (row < TOP_ROW) if row else s[MARKERS + p] < MARKERS_PER_PLAYER:
            for k in range(1, NUM_DICE + 1):
                table[c, k] = _move_value(s, p, c, k, opts)
    stone_gain = _stone_gain(s, p)
    values = np.empty(len(finals))
    for i in range(len(finals)):
        best = _NO_MOVE
        for c in range(_C):
            best = max(best, table[c, finals[i, c]])
        values[i] = (best if best != _NO_MOVE else 0.0) + (stone_gain if stones[i] else 0.0)
    code = 0
    for f in range(NUM_FACES - 1, -1, -1):
        code = code * NUM_FACES + s[COUNTS + f]
    roll = roll_index[code]
    best_action, best_value = 0, _NO_MOVE
    for choice in range(first_choice[roll], first_choice[roll + 1]):
        total = 0.0
        for o in range(first_outcome[choice], first_outcome[choice + 1]):
            total += outcome_prob[o] * values[outcome_final[o]]
        if total > best_value + 1e-9:
            best_action, best_value = choice_action[choice], total
    return int(best_action)


@kernel
def heuristic_action(s: Any, mask: Any, opts: Any, tables: Any) -> int:
    """The heuristic bot's action for the player to move in ``s`` (``mask`` is scratch
    space, ``opts`` from :func:`options`, ``tables`` is :data:`TABLES`); -1 when the game
    is over."""
    count = legal_mask(s, mask)
    if count == 0:
        return -1
    p = s[CURRENT]
    if count == 1:
        for a in range(NUM_ACTIONS):
            if mask[a]:
                return a
    if s[PHASE] == _REROLL:
        return int(_reroll(s, p, opts, tables))
    best_action, best_value = -1, _NO_MOVE
    for a in range(NUM_ACTIONS):
        if not mask[a]:
            continue
        if s[PHASE] == _MOVE:
            value = _move_value(s, p, a - MOVE, s[COUNTS + a - MOVE], opts) if a < PASS else 0.0
        elif a < BONUS_ENTER:
            row = s[POS + p * _C + a - BONUS_ADVANCE]
            value = _arrival_value(s, p, a - BONUS_ADVANCE, row, row + 1, opts)
        else:
            value = _arrival_value(s, p, a - BONUS_ENTER, 0, 1, opts)
        if best_action < 0 or value > best_value:
            best_action, best_value = a, value
    return best_action


__all__ = ["TABLES", "heuristic_action", "options"]
