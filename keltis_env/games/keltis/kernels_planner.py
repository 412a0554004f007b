"""The card game's ``planner`` bot compiled (numba, the ``fast`` extra): the plan model's
value of every legal action (:mod:`.kernels_plan`) and the bot's choice, the same as
:func:`~keltis_env.games.keltis.bots.planner.action_values` and
:class:`~keltis_env.games.keltis.bots.planner.PlannerBot`, on a state row of
:mod:`.kernels`, for the batched learner step's opponents.

Every value is the Python model's, term by term and in the same order of operations
(float64 both sides), so that :func:`action_values` writes the Python values bit for bit;
the choice is the first legal action, in ascending action id, with the highest value, as
the bot takes it, and a single legal action is returned unvalued (its value is 0, as in
Python). The Python bot draws no random numbers (it never reads its ``rng``) and has no
options: its decision is a function of the position and its weights (the model's
``Weights``, :func:`~.kernels_plan.weights`) alone, and so is this one.
``tests/test_kernels_keltis_planner.py`` holds values and decisions equal.

The ``plan`` observation feature (:func:`keltis_env.games.keltis.encoding.fill_plan`)
reads the same two things: :func:`action_values` with the default weights gives its
``plan.values`` (``max(0, 1 + (value - best) / PLAN_SCALE)`` for the legal actions) and
its return value's choice (:func:`best_action`) its ``plan.choice``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel

from .actions import (
    BONUS_ADVANCE,
    BONUS_OPEN_LARGE,
    BONUS_OPEN_SMALL,
    DISCARD,
    DRAW_DECK,
    DRAW_DISCARD,
    NUM_ACTIONS,
    PASS,
    PLAY_LARGE,
)
from .constants import (
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    MAX_PLAYERS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    ROW_VALUES,
    Phase,
)
from .kernels import (
    CURRENT,
    DECK_SIZE,
    DIRECTION,
    GOAL,
    LAST,
    NUM_PLAYERS,
    PHASE,
    PILE,
    PILE_SIZES,
    POS,
    legal_mask,
    score,
)
from .kernels_plan import (
    FLOAT_SIZE,
    I_DIR,
    I_LARGE,
    I_LAST,
    I_POS,
    I_UNSEEN,
    INT_SIZE,
    W_FEED,
    base_value,
    colour_value,
    gain,
    large_option,
    plan_context,
    weights,
)

_C, _V = NUM_COLORS, NUM_VALUES
_MAX_PILE = NUM_CARDS // NUM_COLORS
_PLAY, _DRAW = int(Phase.PLAY), int(Phase.DRAW)
_ROW_VALUES = np.array(ROW_VALUES, dtype=np.int64)
#: worth of ending the game: winning or losing outweighs any plan (the Python ``_DECISIVE``)
_DECISIVE = 1000.0


# ---------------------------------------------------------------------- the end and the others
@kernel
def end_value(scores: Any, n: int, player: int, mine: int) -> float:
    """Worth of ending the game now with ``scores``, ``player``'s replaced by ``mine``:
    decisive win, loss, or a shared win (the Python ``end_value``)."""
    best_other = -(10**9)
    for q in range(n):
        if q != player and scores[q] > best_other:
            best_other = scores[q]
    if mine > best_other:
        return _DECISIVE + mine - best_other
    if mine < best_other:
        return -_DECISIVE + mine - best_other
    return 0.0


@kernel
def feed_value(s: Any, player: int, c: int, v: int) -> float:
    """How much a public card (colour ``c``, value ``v``) is worth to the opponents."""
    best = 0.0
    for q in range(s[NUM_PLAYERS]):
        if q == player:
            continue
        last = s[LAST + q * _C + c]
        if last < 0:
            continue  # a colour not begun: an opponent rarely opens a path for one card
        worth = 1.0 if s[POS + q * _C + c] >= END_ROW else 2.0
        d = s[DIRECTION + q * _C + c]
        gap = v - last if d > 0 else last - v if d < 0 else abs(v - last)
        if gap < 0:
            continue
        value = worth * (1.0 if gap <= 2 else 0.6 if gap <= 4 else 0.25)
        if value > best:
            best = value
    return best


# ---------------------------------------------------------------------- play or discard
@kernel
def advance_value(pi: Any, pf: Any, w: Any, c: int) -> float:
    """A bonus step on path ``c``: the next stone's gain and the plan from there."""
    row = pi[I_POS + c]
    large = pi[I_LARGE] == c
    last, d = pi[I_LAST + c], pi[I_DIR + c]
    return float(gain(pf, w, c, row + 1, large) + colour_value(pi, pf, w, c, -1, 0, last, d, row + 1, large)
                 - colour_value(pi, pf, w, c, -1, 0, last, d, row, large))


@kernel
def best_bonus(pi: Any, pf: Any, w: Any) -> float:
    """Worth of a bonus step taken at its best (0 if passing is best)."""
    best = 0.0
    for c in range(_C):
        row = pi[I_POS + c]
        if 0 < row < END_ROW:
            value = advance_value(pi, pf, w, c)
            if value > best:
                best = value
    return best


@kernel
def _play_value(s: Any, pi: Any, pf: Any, w: Any, a: int, base: Any, large_opt: float, scores: Any) -> float:
    """The value of playing card action ``a`` (a figure moves, or a path opens)."""
    player = s[CURRENT]
    large = a >= PLAY_LARGE
    k = a - PLAY_LARGE if large else a
    c, v = k // _V, k % _V
    row, last, d = pi[I_POS + c], pi[I_LAST + c], pi[I_DIR + c]
    if last >= 0 and d == 0 and v != last:
        d = 1 if v > last else -1
    new_row = row + 1 if row < END_ROW else row
    if s[GOAL] == GOAL_FIGURES_TO_END - 1 and new_row == GOAL_FIRST_ROW and row < GOAL_FIRST_ROW:
        big = 2 if (large or pi[I_LARGE] == c) else 1
        mine = scores[player] + (_ROW_VALUES[new_row] - _ROW_VALUES[row]) * big
        return float(end_value(scores, s[NUM_PLAYERS], player, mine))
    on_large = large or pi[I_LARGE] == c
    step = best_bonus(pi, pf, w) if row == END_ROW else gain(pf, w, c, new_row, on_large)
    value = step + colour_value(pi, pf, w, c, v, -1, v, d, new_row, on_large) - base[c]
    if row == 0:
        # Opening a path uses a figure: the large one now, or keep it for later.
        value += -large_opt if large else large_option(pi, pf, w, c) - large_opt
    return float(value)


@kernel
def _play_values(s: Any, pi: Any, pf: Any, w: Any, mask: Any, scores: Any, out: Any) -> None:
    """The values of the legal play-or-discard actions into ``out``."""
    base = np.empty(_C, dtype=np.float64)
    for c in range(_C):
        base[c] = base_value(pi, pf, w, c)
    large_opt = large_option(pi, pf, w, -1)
    for a in range(DRAW_DECK):
        if not mask[a]:
            continue
        if a >= DISCARD:
            k = a - DISCARD
            c, v = k // _V, k % _V
            out[a] = (colour_value(pi, pf, w, c, v, -1, pi[I_LAST + c], pi[I_DIR + c], pi[I_POS + c],
                                   pi[I_LARGE] == c)
                      - base[c] - w[W_FEED] * feed_value(s, s[CURRENT], c, v))
        else:
            out[a] = _play_value(s, pi, pf, w, a, base, large_opt, scores)


# ---------------------------------------------------------------------- bonus and draw
@kernel
def _bonus_values(s: Any, pi: Any, pf: Any, w: Any, mask: Any, scores: Any, out: Any) -> None:
    """The values of the legal bonus-step actions into ``out``."""
    player = s[CURRENT]
    large_opt = large_option(pi, pf, w, -1)
    for a in range(BONUS_ADVANCE, NUM_ACTIONS):
        if not mask[a]:
            continue
        if a == PASS:
            out[a] = 0.0
        elif a < BONUS_OPEN_SMALL:
            c = a - BONUS_ADVANCE
            row = pi[I_POS + c]
            if s[GOAL] == GOAL_FIGURES_TO_END - 1 and row + 1 == GOAL_FIRST_ROW:
                mine = scores[player] + (_ROW_VALUES[row + 1] - _ROW_VALUES[row]) * (2 if pi[I_LARGE] == c else 1)
                out[a] = end_value(scores, s[NUM_PLAYERS], player, mine)
            else:
                out[a] = advance_value(pi, pf, w, c)
        else:
            large = a >= BONUS_OPEN_LARGE
            c = a - (BONUS_OPEN_LARGE if large else BONUS_OPEN_SMALL)
            last, d = pi[I_LAST + c], pi[I_DIR + c]
            value = (gain(pf, w, c, 1, large) + colour_value(pi, pf, w, c, -1, 0, last, d, 1, large)
                     - base_value(pi, pf, w, c))
            value += -large_opt if large else large_option(pi, pf, w, c) - large_opt
            out[a] = value


@kernel
def _draw_gain(pi: Any, pf: Any, w: Any, base: Any, c: int, v: int) -> float:
    """What taking card ``v`` of colour ``c`` into the hand adds to that colour's plan."""
    value = colour_value(pi, pf, w, c, v, 1, pi[I_LAST + c], pi[I_DIR + c], pi[I_POS + c], pi[I_LARGE] == c)
    return float(value - base[c])


@kernel
def _draw_values(s: Any, pi: Any, pf: Any, w: Any, mask: Any, scores: Any, out: Any) -> None:
    """The values of the legal draws into ``out``: a pile's top by its gain (and what it
    keeps from the next player), the draw pile by the expected gain of a card not seen yet."""
    player = s[CURRENT]
    base = np.empty(_C, dtype=np.float64)
    for c in range(_C):
        base[c] = base_value(pi, pf, w, c)
    best_pile = 0.0
    for c in range(_C):
        a = DRAW_DISCARD + c
        if not mask[a]:
            continue
        v = s[PILE + c * _MAX_PILE + s[PILE_SIZES + c] - 1]
        value = _draw_gain(pi, pf, w, base, c, v) + 0.5 * w[W_FEED] * feed_value(s, player, c, v)
        best_pile = max(best_pile, value)
        out[a] = value
    if s[DECK_SIZE] == 1:
        out[DRAW_DECK] = end_value(scores, s[NUM_PLAYERS], player, scores[player])
        return
    out[DRAW_DECK] = 0.0
    if best_pile > 0.0:
        # The expected gain of a card from the pile, over the cards not seen yet. (A card
        # never lowers a plan, so with no useful pile top the deck wins anyway.)
        total = 0
        expected = 0.0
        for c in range(_C):
            last = pi[I_LAST + c]
            d = pi[I_DIR + c] if last >= 0 else 0
            for v in range(_V):
                x = pi[I_UNSEEN + c * _V + v]
                if x:
                    total += x
                    # a card against a row's fixed direction changes nothing (R4)
                    if d == 0 or (v - last) * d >= 0:
                        expected += x * _draw_gain(pi, pf, w, base, c, v)
        out[DRAW_DECK] = expected / total if total else 0.0


# ---------------------------------------------------------------------- values and choice
@kernel
def action_values(s: Any, mask: Any, w: Any, out: Any) -> int:
    """The plan model's value of every legal action of the player to move in ``s`` into
    ``out`` (float64, one entry per action id; the others are left as they are), with
    weights ``w`` (:func:`~.kernels_plan.weights`); ``mask`` gets the legal actions.
    Returns how many there are (0 when the game is over; one legal action is worth 0)."""
    count = legal_mask(s, mask)
    if count == 0:
        return 0
    if count == 1:
        for a in range(NUM_ACTIONS):
            if mask[a]:
                out[a] = 0.0
        return 1
    n = s[NUM_PLAYERS]
    scores = np.zeros(MAX_PLAYERS, dtype=np.int64)
    for q in range(n):
        scores[q] = score(s, q)
    pi = np.zeros(INT_SIZE, dtype=np.int64)
    pf = np.zeros(FLOAT_SIZE, dtype=np.float64)
    plan_context(s, s[CURRENT], w, pi, pf)
    plan_action_values(s, pi, pf, w, mask, scores, out)
    return int(count)


@kernel
def plan_action_values(s: Any, pi: Any, pf: Any, w: Any, mask: Any, scores: Any, out: Any) -> None:
    """The value of every legal action (``mask``) of the player to move into ``out``, with
    the plan made in ``pi``/``pf`` (:func:`plan_context`, or a plan on a fixed scale as the
    search makes); ``scores`` holds the players' scores."""
    phase = s[PHASE]
    if phase == _PLAY:
        _play_values(s, pi, pf, w, mask, scores, out)
    elif phase == _DRAW:
        _draw_values(s, pi, pf, w, mask, scores, out)
    else:
        _bonus_values(s, pi, pf, w, mask, scores, out)


@kernel
def best_action(mask: Any, values: Any) -> int:
    """The legal action (``mask``) of highest value; the lowest id among equals (-1 if none)."""
    best_a, best = -1, 0.0
    for a in range(NUM_ACTIONS):
        if mask[a] and (best_a < 0 or values[a] > best):
            best_a, best = a, values[a]
    return best_a


@kernel
def planner_action(s: Any, mask: Any, w: Any) -> int:
    """The planner bot's action for the player to move in ``s`` (``mask`` is scratch space,
    ``w`` the weights of :func:`~.kernels_plan.weights`); -1 when the game is over."""
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    if action_values(s, mask, w, values) == 0:
        return -1
    return int(best_action(mask, values))


def options(bot: Any = None) -> np.ndarray:
    """The weights of ``bot`` (a ``PlannerBot``; default: the bot's defaults) as the kernels
    take them (:func:`~.kernels_plan.weights`)."""
    return weights(bot.weights if bot is not None else None)


__all__ = ["action_values", "advance_value", "best_action", "best_bonus", "end_value", "feed_value", "options",
           "planner_action"]
