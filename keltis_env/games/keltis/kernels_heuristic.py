"""The card game's ``heuristic`` bot compiled (numba, the ``fast`` extra): the same
decisions as :class:`~keltis_env.games.keltis.bots.heuristic.HeuristicBot` at the same
options, on a state row of :mod:`.kernels`, for the batched learner step's opponents.

Every score below is the Python bot's, term by term and in the same order of operations
(float64 both sides), and the best action is the first legal one, in ascending action id,
with the highest score, as the bot takes it; a single legal action is returned unscored.
The Python bot draws nothing at random (it never reads its ``rng``), so its decision is a
function of the position and its options alone, and so is this one.
``tests/test_kernels_keltis_heuristic.py`` holds the decisions equal.

The bot reads its player's view; everything it reads is public or that player's own
(hand, rows, directions, figures, tiles, discard piles, pile size, scores), and a row
holds all of it: a row's last card is ``LAST`` (-1 for an empty row), a discard pile's top
is its last entry.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from keltis_env.core.kernels import borrow, inlined, kernel

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
    CLOVER,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    MAX_PLAYERS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    POINTS_3,
    ROW_VALUES,
    TILE_POINTS,
    WISHING_STONE,
    Phase,
)
from .kernels import (
    CLOSED,
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
    POS,
    TILES,
    WISHING,
    legal_mask,
    score,
    small_left,
)

# The Python bot, loaded by name: the bots stay outside the strictly type-checked engine
# modules (pyproject's mypy section), which a static import would pull in.
_BOT = importlib.import_module(f"{__package__}.bots.heuristic")
_C, _V, _K = NUM_COLORS, NUM_VALUES, NUM_CARD_KINDS
_MAX_PILE = NUM_CARDS // NUM_COLORS  # a discard pile's entries in a row, as .kernels lays them out
_PLAY, _DRAW, _OVER = int(Phase.PLAY), int(Phase.DRAW), int(Phase.OVER)
_NEVER = -1000.0
_DISCARD_MOST = 3.0  # the highest score of a discard (_discard_score)
_ROW_VALUES = np.array(ROW_VALUES, dtype=np.int64)
_TILE_POINTS = np.array([TILE_POINTS.get(t, 0) for t in range(POINTS_3 + 1)], dtype=np.int64)
#: the options as :func:`options` lists them
PATHS, GAP, OPEN_CARDS, LARGE_CARDS = range(4)
# What the bot's ``_Position`` derives from the view once per decision, as entries of one
# int64 array: the player, the player count, turns left, open paths, small figures left,
# fitting cards on open paths, whether a useless card is in hand, how many kinds of card
# are in hand, the unopened colour with the most cards in hand; then cards in hand per
# colour, the card that opens each colour, every player's score and the kinds in hand
# (ascending), and room for the legal moves. Whether a useless card is in hand is found
# when first asked (-1 until then).
_ME, _N, _TURNS, _OPEN, _SMALL, _FITS, _USELESS, _KINDS, _BEST = range(9)
_CARDS = 9
_OPENING = _CARDS + _C
_SCORES = _OPENING + _C
_HELD = _SCORES + MAX_PLAYERS
_MOVES = _HELD + _K  # the play phase's legal moves (_play_moves)
_CONTEXT_SIZE = _MOVES + 3 * _K


def options(bot: Any = None) -> np.ndarray:
    """The options of ``bot`` (a ``HeuristicBot``; default: the bot's defaults) as the
    kernels take them (int64, indexed by :data:`PATHS`, :data:`GAP`, :data:`OPEN_CARDS`,
    :data:`LARGE_CARDS`)."""
    bot = bot if bot is not None else _BOT.HeuristicBot()
    return np.array([bot.paths, bot.gap, bot.open_cards, bot.large_cards], dtype=np.int64)


# ---------------------------------------------------------------------- colours
@inlined
def _fit_gap(s: Any, p: int, c: int, v: int) -> int:
    """How far ``v`` is from the end of ``p``'s row ``c`` in its direction; -1 if it does
    not fit (R4) (the bot's ``fit_gap``, ``None`` there)."""
    last = s[LAST + p * _C + c]
    if last < 0:
        return 0 if s[POS + p * _C + c] else -1
    d = s[DIRECTION + p * _C + c]
    if d > 0:
        return v - last if v >= last else -1
    if d < 0:
        return last - v if v <= last else -1
    return int(abs(v - last))


@inlined
def _fitting_count(s: Any, p: int, c: int) -> int:
    """Cards of colour ``c`` in ``p``'s hand that fit the row."""
    count = 0
    for v in range(_V):
        n = s[HAND + p * _K + c * _V + v]
        if n and _fit_gap(s, p, c, v) >= 0:
            count += n
    return count


@inlined
def _may_open(s: Any, x: Any, c: int, opts: Any) -> bool:
    """Open a new path only with enough cards and time, and few paths open."""
    if s[POS + x[_ME] * _C + c]:
        return False
    turns = x[_TURNS]
    need = opts[OPEN_CARDS] - (1 if turns >= 20 else 0)
    cards = x[_CARDS + c]
    return bool(x[_OPEN] < opts[PATHS] and cards >= need and turns >= 10 - min(cards, 5))


@inlined
def _useless(s: Any, x: Any, opts: Any) -> bool:
    """Whether a card in hand is of little use (usefulness below 0.15), found once."""
    if x[_USELESS] < 0:
        x[_USELESS] = 0
        for i in range(x[_KINDS]):
            k = x[_HELD + i]
            if _usefulness(s, x, k // _V, k % _V, opts) < 0.15:
                x[_USELESS] = 1
                break
    return bool(x[_USELESS] > 0)


@inlined
def _best_unopened(s: Any, x: Any) -> int:
    """The unopened colour with the most cards in hand (the first among equals), -1 if none."""
    best, best_n = -1, 0
    for c in range(_C):
        if not s[POS + x[_ME] * _C + c] and x[_CARDS + c] > best_n:
            best, best_n = c, x[_CARDS + c]
    return best


@inlined
def _usefulness(s: Any, x: Any, c: int, v: int, opts: Any) -> float:
    """0 for a card the bot will not use, up to 1 for one that continues a row closely."""
    p = x[_ME]
    row = s[POS + p * _C + c]
    if row:
        if row >= END_ROW and s[LAST + p * _C + c] < 0:
            return 0.3
        gap = _fit_gap(s, p, c, v)
        if gap < 0:
            return 0.0
        return 1.0 if gap <= 2 else 0.7 if gap <= 5 else 0.4
    cards = x[_CARDS + c]
    if x[_OPEN] >= opts[PATHS] or x[_TURNS] < 8:
        return 0.0
    return float(0.2 * min(cards, 4) if cards >= opts[OPEN_CARDS] - 1 else 0.05 * cards)


@inlined
def _feeds(s: Any, x: Any, c: int, v: int) -> float:
    """How much card ``v`` of colour ``c`` on a discard pile would help an opponent: up to
    1 when it continues one of their rows closely."""
    best = 0.0
    for q in range(x[_N]):
        if q == x[_ME]:
            continue
        last = s[LAST + q * _C + c]
        if last < 0:  # an empty row
            continue
        d = s[DIRECTION + q * _C + c]
        gap = v - last if d > 0 else last - v if d < 0 else abs(v - last)
        if gap < 0:
            continue
        worth = 1.0 if gap <= 2 else 0.5 if gap <= 4 else 0.2
        if worth > best:
            best = worth
    return best


# ---------------------------------------------------------------------- stones and the end
@inlined
def _lead(x: Any, mine: int) -> int:
    """``mine`` less the best other player's score."""
    other = -(10**9)
    for q in range(x[_N]):
        if q != x[_ME]:
            other = max(other, x[_SCORES + q])
    return mine - other


@inlined
def _step_worth(s: Any, x: Any, c: int, row: int) -> float:
    """What moving the figure on path ``c`` from ``row`` to the next stone brings."""
    if row >= END_ROW:
        return 2.0  # a card on a completed path gives a bonus step (R5)
    p = x[_ME]
    nxt = row + 1
    big = 2 if s[LARGE + p] == c else 1
    worth = (_ROW_VALUES[nxt] - _ROW_VALUES[row]) * big * 0.7
    tile = s[TILES + c * (END_ROW + 1) + nxt]
    if tile == WISHING_STONE:
        worth += 4.0 if s[WISHING + p] < 2 else 2.0
    elif tile == CLOVER:
        worth += 2.5
    elif tile:
        worth += _TILE_POINTS[tile]
    if nxt == GOAL_FIRST_ROW and s[GOAL] >= 2:
        # Entering a filling goal area brings the end closer: good only when ahead.
        worth += 1.5 if _lead(x, x[_SCORES + p]) > 0 else -1.5 * (s[GOAL] - 1)
    return float(worth)


@inlined
def _end_worth(x: Any, mine: int) -> float:
    """Ending the game with ``mine`` as the player's score: decisive when it wins or loses."""
    lead = _lead(x, mine)
    return 100.0 if lead > 0 else -100.0 if lead < 0 else 0.0


@inlined
def _ends_game(s: Any, row: int, new_row: int) -> bool:
    """Whether moving a figure from ``row`` to ``new_row`` ends the game (R8.1)."""
    return new_row == GOAL_FIRST_ROW and row < GOAL_FIRST_ROW and s[GOAL] == GOAL_FIGURES_TO_END - 1


@inlined
def _ending_worth(s: Any, x: Any, c: int, row: int, new_row: int) -> float:
    """The worth of the game-ending move of the figure on path ``c`` to ``new_row``."""
    p = x[_ME]
    gain = (_ROW_VALUES[new_row] - _ROW_VALUES[row]) * (2 if s[LARGE + p] == c else 1)
    return float(_end_worth(x, x[_SCORES + p] + gain))


# ---------------------------------------------------------------------- the position
@inlined
def _context(s: Any, opts: Any, x: Any, phase: int) -> None:
    """What the bot derives from the view of the player to move, into ``x``: in the draw
    phase only what a drawing action's score reads (the player, the player count, cards in
    hand per colour, turns left, the scores)."""
    p = s[CURRENT]
    n = s[NUM_PLAYERS]
    x[_ME], x[_N] = p, n
    kinds = 0
    for c in range(_C):
        cards = 0
        for v in range(_V):
            held = s[HAND + p * _K + c * _V + v]
            if held:
                cards += held
                x[_HELD + kinds] = c * _V + v
                kinds += 1
        x[_CARDS + c] = cards
    x[_KINDS] = kinds
    for q in range(n):
        x[_SCORES + q] = score(s, q)
    # Turns left to this player: the pile, shortened when the goal area fills up.
    turns = s[DECK_SIZE] // n + 1
    goal = s[GOAL]
    if goal >= 2:
        near = 0
        for q in range(n):
            for c in range(_C):
                r = s[POS + q * _C + c]
                if 4 <= r < GOAL_FIRST_ROW:
                    near += 1
        missing = GOAL_FIGURES_TO_END - goal
        if near >= missing:
            turns = min(turns, 2 * missing + 2)
    x[_TURNS] = turns
    if phase == _DRAW:
        return
    opened = 0
    for c in range(_C):
        if s[POS + p * _C + c]:
            opened += 1
    x[_OPEN] = opened
    x[_SMALL] = small_left(s, p)
    if phase != _PLAY:
        return
    fits = 0  # cards in hand that fit their open rows (_fitting_count over the open colours)
    for i in range(kinds):
        k = x[_HELD + i]
        c = k // _V
        if s[POS + p * _C + c] and _fit_gap(s, p, c, k % _V) >= 0:
            fits += s[HAND + p * _K + k]
    x[_FITS] = fits
    x[_USELESS] = -1
    # The card that opens each colour in hand, the end of the run the hand makes: its lowest
    # card (lo) if most are high (lo + hi >= 10) or lo <= 1, else its highest (hi).
    for c in range(_C):
        x[_OPENING + c] = -1
    for i in range(kinds - 1, -1, -1):  # the highest card first, then lower ones
        k = x[_HELD + i]
        c = k // _V
        if x[_OPENING + c] < 0:
            x[_OPENING + c] = k % _V  # hi for now; lo is the colour's first kind in hand
    for i in range(kinds):
        k = x[_HELD + i]
        c = k // _V
        hi = x[_OPENING + c]
        if hi >= _V:  # done: the colour's lowest card came earlier
            continue
        lo = k % _V
        x[_OPENING + c] = _V + (lo if lo + hi >= 10 or lo <= 1 else hi)
    for c in range(_C):
        if x[_OPENING + c] >= _V:
            x[_OPENING + c] -= _V
    x[_BEST] = _best_unopened(s, x)


# ---------------------------------------------------------------------- play or discard
@inlined
def _advance_score(s: Any, x: Any, c: int, v: int, limit: int, opts: Any) -> float:
    """Playing value ``v`` on the open colour ``c``."""
    p = x[_ME]
    row = s[POS + p * _C + c]
    if _ends_game(s, row, row + 1 if row < END_ROW else row):
        return float(_ending_worth(s, x, c, row, row + 1))
    last = s[LAST + p * _C + c]
    d = s[DIRECTION + p * _C + c]
    at = HAND + p * _K + c * _V
    behind = 0
    if last < 0:  # no card on the row yet (opened by a bonus step): start at the end of the run
        gap = abs(v - x[_OPENING + c])
    elif d == 0 and v != last:
        gap = abs(v - last)
        # the card fixes the direction: the cards on the other side of it no longer fit
        for y in range(0, v) if v > last else range(v + 1, _V):
            behind += s[at + y]
    else:
        gap = abs(v - last)
        if d != 0:  # fitting cards strictly between the row's end and this card are killed
            for y in range(last, v) if d > 0 else range(v + 1, last + 1):
                behind += s[at + y]
    worth = 10.0 - 2.0 * gap - 3.0 * behind
    worth += _step_worth(s, x, c, row)
    worth += 0.5 * min(x[_CARDS + c] - 1, 4)
    if gap > limit and _useless(s, x, opts):
        worth -= 20.0  # keep the range; throw away a useless card instead
    return float(worth)


@inlined
def _open_score(s: Any, x: Any, c: int, v: int, large: bool, opts: Any) -> float:
    """Opening colour ``c`` with value ``v``, with the large figure if ``large``."""
    if not _may_open(s, x, c, opts):
        return _NEVER + 1 if large else _NEVER + 2  # only when nothing else is legal
    p = x[_ME]
    if v != x[_OPENING + c]:
        return _NEVER + 3
    cards = x[_CARDS + c]
    worth = 4.0 + cards - 2.0 * x[_OPEN]
    if s[TILES + c * (END_ROW + 1) + 1] == WISHING_STONE:
        worth += 1.0
    best_colour = x[_BEST]
    if large:
        if x[_SMALL] == 0:
            worth += 5.0  # the last figure is the large one
        elif c != best_colour or cards < opts[LARGE_CARDS]:
            worth -= 10.0
        else:
            worth += 1.0
    elif s[LARGE + p] < 0 and c == best_colour and cards >= opts[LARGE_CARDS]:
        worth -= 2.0  # this is the path for the large figure
    return float(worth)


@inlined
def _discard_score(s: Any, x: Any, k: int, opts: Any) -> float:
    """Discarding card ``k``: best for cards that are useless to the bot and to the others."""
    c, v = k // _V, k % _V
    use = _usefulness(s, x, c, v, opts)
    worth = _DISCARD_MOST - 4.0 * use - 2.0 * _feeds(s, x, c, v)  # use, feeds >= 0
    if s[HAND + x[_ME] * _K + k] > 1 and use > 0:
        worth -= 1.0  # a pair is two free steps on a row
    return float(worth)


@inlined
def _play_score(s: Any, x: Any, a: int, limit: int, opts: Any) -> float:
    """The score of play-or-discard action ``a``."""
    if a >= DISCARD:
        return float(_discard_score(s, x, a - DISCARD, opts))
    large = a >= PLAY_LARGE
    k = a - PLAY_LARGE if large else a
    c, v = k // _V, k % _V
    if s[POS + x[_ME] * _C + c]:  # a figure is on the path (a bonus step may have opened it without a card)
        return float(_advance_score(s, x, c, v, limit, opts))
    return float(_open_score(s, x, c, v, large, opts))


# ---------------------------------------------------------------------- draw and bonus
@inlined
def _draw_score(s: Any, x: Any, a: int, opts: Any) -> float:
    """The score of drawing action ``a``."""
    if a == DRAW_DECK:
        if s[DECK_SIZE] == 1:  # the last card ends the game (R8.2)
            return float(_end_worth(x, x[_SCORES + x[_ME]]))
        return 0.0
    p = x[_ME]
    c = a - DRAW_DISCARD
    v = s[PILE + c * _MAX_PILE + s[PILE_SIZES + c] - 1]
    worth = -1.0
    if s[POS + p * _C + c]:
        gap = _fit_gap(s, p, c, v)
        if 0 <= gap <= opts[GAP]:
            worth = 3.0 - gap
    elif x[_CARDS + c] >= opts[OPEN_CARDS] and x[_TURNS] > 10:
        worth = 0.5  # helps a path the bot is about to open
    if worth > 0:
        worth += 0.5 * _feeds(s, x, c, v)  # and the next player does not get it
    return worth


@inlined
def _bonus_score(s: Any, x: Any, a: int, opts: Any) -> float:
    """The score of bonus-step action ``a``."""
    if a == PASS:
        return 0.0
    p = x[_ME]
    if a < BONUS_OPEN_SMALL:
        c = a - BONUS_ADVANCE
        row = s[POS + p * _C + c]
        if _ends_game(s, row, row + 1):
            return float(_ending_worth(s, x, c, row, row + 1))
        worth = 1.0 + _step_worth(s, x, c, row)
        worth += 0.5 * min(_fitting_count(s, p, c), 4)
        return float(worth)
    large = a >= BONUS_OPEN_LARGE
    c = a - (BONUS_OPEN_LARGE if large else BONUS_OPEN_SMALL)
    if not _may_open(s, x, c, opts) or (large and x[_SMALL] > 0):
        return -1.0
    return float(0.5 + x[_CARDS + c] - 2.0 * x[_OPEN])


@inlined
def _play_moves(s: Any, x: Any) -> int:
    """The legal moves of the play phase in ascending action id, as
    :func:`~.kernels.legal_mask` finds them, from the kinds in hand (:func:`_context`) into
    ``x`` from :data:`_MOVES`; returns how many there are."""
    p = x[_ME]
    kinds = x[_KINDS]
    count = 0
    for i in range(kinds):  # a card on its row, or opening a path with a small figure
        k = x[_HELD + i]
        c = k // _V
        if s[POS + p * _C + c]:
            top = s[LAST + p * _C + c]
            d = s[DIRECTION + p * _C + c]
            if not (top < 0 or d == 0 or (k % _V - top) * d >= 0):
                continue
        elif x[_SMALL] == 0:
            continue
        x[_MOVES + count] = k
        count += 1
    if s[LARGE + p] < 0:  # opening a path with the large figure
        for i in range(kinds):
            k = x[_HELD + i]
            if not s[POS + p * _C + k // _V]:
                x[_MOVES + count] = PLAY_LARGE + k
                count += 1
    for i in range(kinds):  # discarding
        x[_MOVES + count] = DISCARD + x[_HELD + i]
        count += 1
    return count


@kernel
def heuristic_action(s: Any, mask: Any, opts: Any) -> int:
    """The heuristic bot's action for the player to move in ``s`` (``mask`` is scratch
    space, ``opts`` from :func:`options`); -1 when the game is over."""
    if s[PHASE] == _OVER:
        return -1
    x = np.empty(_CONTEXT_SIZE, dtype=np.int64)  # _context writes what is read
    return int(_choose(s, mask, opts, x))


@inlined
def _better(a: int, worth: float, best_action: int, best: float) -> bool:
    """Whether action ``a`` scored ``worth`` beats the best so far (the first of the highest
    scores, the actions taken in ascending order)."""
    return best_action < 0 or worth > best


@kernel
def _choose(s: Any, mask: Any, opts: Any, x: Any) -> int:
    """:func:`heuristic_action` in a game that goes on, with ``mask`` and ``x`` its scratch
    space (``x`` for the position's context). The legal moves of the play and draw phases are
    taken straight from the hand and the piles in ascending action id, as
    :func:`~.kernels.legal_mask` writes them (:func:`_play_moves`;
    ``tests/test_kernels_keltis_heuristic.py`` holds the two equal); the bonus phase reads the
    mask. A single legal move of the draw or bonus phase is taken unscored. Every array lives
    as long as the call (the caller holds it): borrowed, passing them on costs no atomic
    reference counting."""
    s, mask, opts, x = borrow(s), borrow(mask), borrow(opts), borrow(x)
    phase = s[PHASE]
    best_action, best = -1, 0.0
    if phase == _DRAW:
        closed = s[CLOSED]
        count = 1
        for c in range(_C):
            if s[PILE_SIZES + c] and c != closed:
                count += 1
        if count == 1:
            return DRAW_DECK
        _context(s, opts, x, phase)
        best_action, best = DRAW_DECK, _draw_score(s, x, DRAW_DECK, opts)
        for c in range(_C):
            if s[PILE_SIZES + c] and c != closed:
                worth = _draw_score(s, x, DRAW_DISCARD + c, opts)
                if worth > best:
                    best_action, best = DRAW_DISCARD + c, worth
        return best_action
    if phase != _PLAY:
        count = legal_mask(s, mask)
        if count == 1:
            for a in range(NUM_ACTIONS):
                if mask[a]:
                    return a
        _context(s, opts, x, phase)
        for a in range(NUM_ACTIONS):
            if mask[a]:
                worth = _bonus_score(s, x, a, opts)
                if _better(a, worth, best_action, best):
                    best_action, best = a, worth
        return best_action
    _context(s, opts, x, phase)
    late = x[_TURNS] <= 6
    limit = opts[GAP] + (3 if late or x[_FITS] >= x[_TURNS] else 0)
    count = _play_moves(s, x)
    for i in range(count):
        a = x[_MOVES + i]
        if a >= DISCARD and best_action >= 0 and best >= _DISCARD_MOST:
            break  # no discard scores more (_discard_score), and a tie keeps the earlier move
        worth = _play_score(s, x, a, limit, opts)
        if _better(a, worth, best_action, best):
            best_action, best = a, worth
    return best_action


__all__ = ["GAP", "LARGE_CARDS", "OPEN_CARDS", "PATHS", "heuristic_action", "options"]
