"""The card game's plan model compiled (numba, the ``fast`` extra): one player's plan in one
position of a state row of :mod:`.kernels`, the same numbers as
:class:`~keltis_env.games.keltis.bots.plan.Planner` (time left, turn price, supply and plan
value of every colour, the worth of keeping the large figure).

A plan is two arrays that :func:`plan_context` fills for player ``p``: ``pi`` (int64,
:data:`INT_SIZE` entries: the player, the figures, the rows' ends and directions, the hand
and the unseen cards with their prefix and suffix sums, the plays left) and ``pf``
(float64, :data:`FLOAT_SIZE` entries: the turn price, the draw rate, the wishing stone's
worth, the expected goal-area end and every path's per-stone gains with the small and the
large figure). The weights are one float64 array (:func:`weights`, indexed as
:data:`WEIGHT_NAMES` lists them).

Every number is computed term by term in the Python model's order of operations (float64
both sides), so that values agree bit for bit; ``tests/test_kernels_keltis_planner.py``
holds them equal. The plan reads only what player ``p`` may know (R10): own hand, rows,
figures, tiles, discard piles, pile size, turn, goal area.

A colour's hand is changed without copying it: ``dv`` and ``delta`` say that one card of
value ``dv`` is taken out (``delta`` = -1) or added (+1) before the plan is made
(``delta`` = 0: the hand as it is), as the Python model's ``vals`` lists are.
"""

from __future__ import annotations

import importlib
from math import inf
from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel

from .constants import (
    CLOVER,
    COPIES_PER_CARD,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    LARGE_MULTIPLIER,
    MAX_PLAYERS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    POINTS_3,
    TILE_POINTS,
    WISHING_STONE,
    Phase,
)
from .kernels import (
    CURRENT,
    DECK_SIZE,
    DIRECTION,
    GOAL,
    HAND,
    LARGE,
    LAST,
    NUM_PLAYERS,
    PHASE,
    PILE,
    PILE_SIZES,
    PLAYED,
    POS,
    TILES,
    TURN,
    WISHING,
)

# The Python model, loaded by name: the bots stay outside the strictly type-checked engine
# modules (pyproject's mypy section), which a static import would pull in.
_PLAN = importlib.import_module(f"{__package__}.bots.plan")
_C, _V, _K, _R = NUM_COLORS, NUM_VALUES, NUM_CARD_KINDS, END_ROW + 1
_MAX_PILE = NUM_CARDS // NUM_COLORS
_PLAY, _OVER = int(Phase.PLAY), int(Phase.OVER)
#: the per-stone score steps and a wishing stone's worth by stones held, the Python model's tables
_STEP = np.array(_PLAN._STEP, dtype=np.int64)
_WISH_NEXT = np.array(_PLAN._WISH_NEXT, dtype=np.float64)
_TILE_POINTS = np.array([TILE_POINTS.get(t, 0) for t in range(POINTS_3 + 1)], dtype=np.int64)

#: the weights as :func:`weights` lists them (the fields of the Python model's ``Weights``)
WEIGHT_NAMES = ("clover", "bonus", "draw_fit", "open_fit", "feed", "large_keep", "goal_pace", "min_price")
W_CLOVER, W_BONUS, W_DRAW_FIT, W_OPEN_FIT, W_FEED, W_LARGE_KEEP, W_GOAL_PACE, W_MIN_PRICE = range(8)

# The int64 plan: the player, the player count, the large figure's path (-1 none), plays
# left, usable draws left, unseen cards in all; then per colour the figure's row, the row's
# last card (-1 none) and direction; the hand's counts by kind; the unseen counts by kind
# and, per colour, those of value <= v (prefix) and >= v (suffix).
I_PLAYER, I_N, I_LARGE, I_PLAYS, I_DRAWS, I_TOTAL = range(6)
I_POS = 6
I_LAST = I_POS + _C
I_DIR = I_LAST + _C
I_HAND = I_DIR + _C
I_UNSEEN = I_HAND + _K
I_PREFIX = I_UNSEEN + _K
I_SUFFIX = I_PREFIX + _K
INT_SIZE = I_SUFFIX + _K
# The float64 plan: the turn price, the draw rate, a wishing stone's worth, the expected
# turn of the goal area's end (absolute), whether the large-figure gains below are
# computed; per colour what the large figure would add there; the per-stone gains of every
# path, with the small figure (rows 0..END_ROW) then with the large one.
F_LAM, F_RATE, F_WISH, F_GOAL_TURN, F_LARGE_READY = range(5)
F_LARGE_GAINS = 5
F_GAINS = F_LARGE_GAINS + _C
FLOAT_SIZE = F_GAINS + 2 * _C * _R


def weights(values: Any = None) -> np.ndarray:
    """The plan model's weights (a Python ``Weights``; default: its defaults) as the kernels
    take them (float64, indexed by :data:`WEIGHT_NAMES`)."""
    values = values if values is not None else _PLAN.Weights()
    return np.array([float(getattr(values, name)) for name in WEIGHT_NAMES], dtype=np.float64)


# ---------------------------------------------------------------------- time left
@kernel
def goal_end_turn(s: Any, pace: float) -> float:
    """Estimated turn (0 = now) in which the fifth figure enters the goal area (R8.1): the
    Python model's ``_goal_end_turn``."""
    need = GOAL_FIGURES_TO_END - s[GOAL]
    n = s[NUM_PLAYERS]
    current = s[CURRENT]
    arrivals = np.empty(MAX_PLAYERS * _C, dtype=np.float64)
    count = 0
    for q in range(n):
        active = 0
        for c in range(_C):
            r = s[POS + q * _C + c]
            if 0 < r < GOAL_FIRST_ROW:
                active += 1
        if not active:
            continue
        per_step = (1.0 + 0.6 * (active - 1)) / 0.85 * pace
        offset = (q - current + n) % n
        for c in range(_C):
            r = s[POS + q * _C + c]
            if 0 < r < GOAL_FIRST_ROW:
                own_turns = (GOAL_FIRST_ROW - r) * per_step
                arrivals[count] = offset + (own_turns - 1) * n
                count += 1
    if count < need:
        return inf
    return float(np.sort(arrivals[:count])[need - 1])


@kernel
def time_left(s: Any, player: int, goal_turn: float, pi: Any) -> None:
    """Plays and usable draws left to ``player`` (into ``pi``): turns until the pile runs
    out (R8.2), cut short at turn ``goal_turn`` (0 = now) (the Python ``_time_left``)."""
    n = s[NUM_PLAYERS]
    phase = s[PHASE]
    if phase == _OVER:
        pi[I_PLAYS] = 0
        pi[I_DRAWS] = 0
        return
    last = s[DECK_SIZE] - 1
    if goal_turn < last:
        last = int(goal_turn)
    first = (player - s[CURRENT] + n) % n
    own_turn_running = first == 0 and phase != _PLAY
    if own_turn_running:
        first = n
    plays = (last - first) // n + 1 if last >= first else 0
    pi[I_PLAYS] = plays
    pi[I_DRAWS] = plays if own_turn_running else max(plays - 1, 0)


# ---------------------------------------------------------------------- one colour
@kernel
def gain(pf: Any, w: Any, c: int, r: int, large: bool) -> float:
    """The worth of the stone at row ``r`` of path ``c`` (past the end stone: a bonus step)."""
    if r > END_ROW:
        return float(w[W_BONUS])
    return float(pf[F_GAINS + ((_C if large else 0) + c) * _R + r])


@kernel
def supply(pi: Any, pf: Any, w: Any, c: int, dv: int, delta: int, last: int, d: int) -> float:
    """Cards that can still go on colour ``c`` (the Python ``Planner.supply``): the hand's
    cards (changed by ``dv``, ``delta``; see the module doc) that fit a row ending in
    ``last`` with direction ``d``, plus the fitting cards still to be drawn."""
    rate = pf[F_RATE]
    at = I_HAND + c * _V
    if last < 0:
        n, lo, hi = 0, _V, -1
        for v in range(_V):
            x = pi[at + v] + (delta if v == dv else 0)
            if x > 0:
                n += x
                lo = min(lo, v)
                hi = v
        if n == 0:
            return float(rate * pi[I_SUFFIX + c * _V] * w[W_OPEN_FIT])
        up = pi[I_SUFFIX + c * _V + lo]
        down = pi[I_PREFIX + c * _V + hi]
        return float(n + rate * (up if up > down else down))
    best = -1.0
    if d >= 0:
        n = 0
        for v in range(last, _V):
            n += pi[at + v] + (delta if v == dv else 0)
        best = n + rate * pi[I_SUFFIX + c * _V + last]
    if d <= 0:
        n = 0
        for v in range(last + 1):
            n += pi[at + v] + (delta if v == dv else 0)
        down = n + rate * pi[I_PREFIX + c * _V + last]
        if down > best:
            best = down
    return float(best)


@kernel
def plan_value(pf: Any, w: Any, c: int, row: int, sup: float, large: bool) -> float:
    """Best ``gain(k) - lam * k`` over the number ``k`` of further cards on path ``c`` from
    row ``row`` (at most ``sup``): the Python ``Planner.plan``'s first value."""
    lam = pf[F_LAM]
    best = 0.0
    cum = 0.0
    k = 0
    r = row
    while k + 1 <= sup:
        r += 1
        cum += gain(pf, w, c, r, large)
        k += 1
        obj = cum - lam * k
        if obj > best:
            best = obj
    frac = sup - k
    if frac > 1e-9:
        r += 1
        part = cum + gain(pf, w, c, r, large) * frac
        obj = part - lam * (k + frac)
        if obj > best:
            best = obj
    return best


@kernel
def plan_length(pi: Any, pf: Any, w: Any, c: int, sup: float) -> float:
    """How many cards the best plan of path ``c`` plays (the Python ``_plan_length``)."""
    large = pi[I_LARGE] == c
    lam = pf[F_LAM]
    best = 0.0
    best_k = 0.0
    cum = 0.0
    k = 0
    r = pi[I_POS + c]
    while k + 1 <= sup:
        r += 1
        cum += gain(pf, w, c, r, large)
        k += 1
        if cum - lam * k > best:
            best = cum - lam * k
            best_k = k
    frac = sup - k
    if frac > 1e-9:
        r += 1
        part = cum + gain(pf, w, c, r, large) * frac
        if part - lam * (k + frac) > best:
            best_k = k + frac
    return best_k


@kernel
def colour_value(pi: Any, pf: Any, w: Any, c: int, dv: int, delta: int, last: int, d: int, row: int,
                 large: bool) -> float:
    """The plan value of colour ``c`` with the hand changed by ``dv``, ``delta``, the row
    ending in ``last`` with direction ``d``, the figure on ``row``, large or not."""
    return float(plan_value(pf, w, c, row, supply(pi, pf, w, c, dv, delta, last, d), large))


@kernel
def base_value(pi: Any, pf: Any, w: Any, c: int) -> float:
    """The plan value of colour ``c`` as it is (the Python ``colour_value(c)``)."""
    return float(colour_value(pi, pf, w, c, -1, 0, pi[I_LAST + c], pi[I_DIR + c], pi[I_POS + c], pi[I_LARGE] == c))


@kernel
def large_option(pi: Any, pf: Any, w: Any, exclude: int) -> float:
    """What keeping the large figure for a later path other than ``exclude`` is worth (0
    once it is placed); the per-path gains are computed once per plan."""
    if pi[I_LARGE] >= 0:
        return 0.0
    if not pf[F_LARGE_READY]:
        for c in range(_C):
            if pi[I_POS + c]:
                pf[F_LARGE_GAINS + c] = 0.0
            else:
                last, d, row = pi[I_LAST + c], pi[I_DIR + c], pi[I_POS + c]
                pf[F_LARGE_GAINS + c] = (colour_value(pi, pf, w, c, -1, 0, last, d, row, True)
                                         - colour_value(pi, pf, w, c, -1, 0, last, d, row, False))
        pf[F_LARGE_READY] = 1.0
    best = 0.0
    for c in range(_C):
        if c != exclude and pf[F_LARGE_GAINS + c] > best:
            best = pf[F_LARGE_GAINS + c]
    return float(best * w[W_LARGE_KEEP])


@kernel
def _demand(pi: Any, pf: Any, w: Any, supplies: Any, lam: float) -> float:
    """Cards all the colours' plans play at turn price ``lam`` (which the plan keeps)."""
    pf[F_LAM] = lam
    total = 0.0
    for c in range(_C):
        total += plan_length(pi, pf, w, c, supplies[c])
    return total


@kernel
def time_price(pi: Any, pf: Any, w: Any) -> float:
    """The price of one turn: the smallest ``lam`` (at least ``min_price``, bisected up to
    12) at which the plans of all colours fit into the plays left (the Python ``_time_price``)."""
    plays = pi[I_PLAYS]
    supplies = np.empty(_C, dtype=np.float64)
    for c in range(_C):
        supplies[c] = supply(pi, pf, w, c, -1, 0, pi[I_LAST + c], pi[I_DIR + c])
    floor = w[W_MIN_PRICE]
    if _demand(pi, pf, w, supplies, floor) <= plays:
        return float(floor)
    lo, hi = floor, 12.0
    for _ in range(10):
        mid = (lo + hi) / 2
        if _demand(pi, pf, w, supplies, mid) > plays:
            lo = mid
        else:
            hi = mid
    return float(hi)


# ---------------------------------------------------------------------- the plan
@kernel
def _unseen(s: Any, p: int, pi: Any) -> None:
    """The cards ``p`` has not seen (R10): all copies less own hand, every row and every
    discard pile; per colour their prefix and suffix sums, and their total."""
    n = s[NUM_PLAYERS]
    for k in range(_K):
        seen = s[HAND + p * _K + k]
        for q in range(n):
            seen += s[PLAYED + q * _K + k]
        pi[I_UNSEEN + k] = COPIES_PER_CARD - seen
    for c in range(_C):
        size = s[PILE_SIZES + c]
        for j in range(size):
            pi[I_UNSEEN + c * _V + s[PILE + c * _MAX_PILE + j]] -= 1
    total = 0
    for c in range(_C):
        acc = 0
        for v in range(_V):
            acc += pi[I_UNSEEN + c * _V + v]
            pi[I_PREFIX + c * _V + v] = acc
        for v in range(_V):
            pi[I_SUFFIX + c * _V + v] = acc - (pi[I_PREFIX + c * _V + v - 1] if v else 0)
        total += acc
    pi[I_TOTAL] = total


@kernel
def _tile_value(pf: Any, w: Any, tile: int) -> float:
    """A tile's worth in the plan (the Python ``tile_value``)."""
    if tile == WISHING_STONE:
        return float(pf[F_WISH])
    if tile == CLOVER:
        return float(w[W_CLOVER])
    return float(_TILE_POINTS[tile])


@kernel
def plan_context(s: Any, p: int, w: Any, pi: Any, pf: Any) -> None:
    """Player ``p``'s plan in position ``s`` with weights ``w`` into ``pi`` and ``pf``: the
    Python ``Planner(view of p, p, weights)``, turn price included."""
    pi[I_PLAYER] = p
    pi[I_N] = s[NUM_PLAYERS]
    pi[I_LARGE] = s[LARGE + p]
    for c in range(_C):
        pi[I_POS + c] = s[POS + p * _C + c]
        pi[I_LAST + c] = s[LAST + p * _C + c]
        pi[I_DIR + c] = s[DIRECTION + p * _C + c]
    for k in range(_K):
        pi[I_HAND + k] = s[HAND + p * _K + k]
    _unseen(s, p, pi)
    goal_turn = s[TURN] + goal_end_turn(s, w[W_GOAL_PACE])
    pf[F_GOAL_TURN] = goal_turn
    time_left(s, p, goal_turn - s[TURN], pi)
    total = pi[I_TOTAL]
    pf[F_RATE] = pi[I_DRAWS] * w[W_DRAW_FIT] / total if total else 0.0
    pf[F_WISH] = _WISH_NEXT[min(s[WISHING + p], 11)]
    for c in range(_C):
        for r in range(_R):
            t = s[TILES + c * _R + r]
            tile_gain = _tile_value(pf, w, t) if t else 0.0
            pf[F_GAINS + c * _R + r] = _STEP[r] + tile_gain
            pf[F_GAINS + (_C + c) * _R + r] = _STEP[r] * LARGE_MULTIPLIER + tile_gain
    pf[F_LARGE_READY] = 0.0
    pf[F_LAM] = 0.0
    pf[F_LAM] = time_price(pi, pf, w)


@kernel
def new_plan(s: Any, p: int, w: Any) -> tuple[Any, Any]:
    """Player ``p``'s plan in ``s`` as new arrays ``(pi, pf)`` (see :func:`plan_context`)."""
    pi = np.zeros(INT_SIZE, dtype=np.int64)
    pf = np.zeros(FLOAT_SIZE, dtype=np.float64)
    plan_context(s, p, w, pi, pf)
    return pi, pf


__all__ = ["FLOAT_SIZE", "INT_SIZE", "WEIGHT_NAMES", "base_value", "colour_value", "gain", "goal_end_turn",
           "large_option", "new_plan", "plan_context", "plan_length", "plan_value", "supply", "time_left",
           "time_price", "weights"]
