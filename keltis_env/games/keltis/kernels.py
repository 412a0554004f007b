"""The card game's compiled core (numba, the ``fast`` extra): batches of games as rows of
one ``int32`` array, and kernels over them.

The Python engine (:mod:`.state`) is the reference and the API for records, views and
bots; these kernels implement the same rules (docs/rules.md R2-R9) over flat arrays, and
``tests/test_kernels_keltis.py`` holds the two equal on every action: legal actions, the
whole state, observations (bit for bit) and scores. Nothing on the Python path imports
this module; without numba, importing it raises an ``ImportError`` naming the extra.

A state row (:data:`STATE_SIZE` entries) holds, at the offsets named below:

* scalars: players, current seat, first seat, phase, end, turns played, turn cap, figures
  in the goal area, the pile closed for this draw (-1 none), cards in the draw pile, and
  whether the tile layout is drawn at random at every deal;
* ``HAND[p][k]``: copies of card kind ``k`` in ``p``'s hand (a sorted hand is its counts),
  ``HAND_SIZES[p]``; ``REMOVED[k]`` likewise (2 players);
* ``DECK``: the draw pile's kinds, bottom first (the top is entry ``DECK_SIZE - 1``);
* ``PILE[c][j]``: discard pile ``c``'s values, bottom first, ``PILE_SIZES[c]``;
* ``PLAYED[p][k]``: copies of kind ``k`` in ``p``'s rows. A row never turns back (R4), so
  its values in order are these counts, ascending or descending by ``DIRECTION``;
* ``LAST``, ``DIRECTION``, ``POS`` (``[p][c]``), ``LARGE``, ``WISHING``, ``TILE_POINTS``
  (``[p]``), ``TILES[c][r]`` and ``DARK[c][i]``: as in the Python state.

New deals and the batched steps (N games in one call, with auto-reset) are in
:mod:`.kernels_batch`. Deals in the compiled core come from a per-game SplitMix64 generator
(:mod:`keltis_env.core.kernels`): the same seed deals the same games every time, but not
the games the Python engine deals from it. :func:`pack` and :func:`unpack` convert a
Python state to a row and back, so any position can move between the two.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.kernels import inlined, kernel

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
from .config import GameConfig
from .constants import (
    CLOVER,
    DARK_STONES_PER_PATH,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    HAND_SIZE,
    LARGE_MULTIPLIER,
    MAX_PLAYERS,
    MAX_TILE_POINTS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    POINTS_3,
    REMOVED_CARDS,
    ROW_VALUES,
    SMALL_FIGURES,
    TILE_NAMES,
    TILE_POINTS,
    WISHING_SCORES,
    WISHING_STONE,
    EndReason,
    Phase,
)
from .state import GameState

_K, _C, _V, _P = NUM_CARD_KINDS, NUM_COLORS, NUM_VALUES, MAX_PLAYERS
_MAX_PILE = NUM_CARDS // NUM_COLORS
_NUM_TILE_TYPES = len(TILE_NAMES)
# the scalars
NUM_PLAYERS, CURRENT, FIRST, PHASE, END, TURN, MAX_TURNS, GOAL, CLOSED, DECK_SIZE, RANDOM_LAYOUT = range(11)
HAND = 16
HAND_SIZES = HAND + _P * _K
REMOVED = HAND_SIZES + _P
DECK = REMOVED + _K
PILE = DECK + NUM_CARDS
PILE_SIZES = PILE + _C * _MAX_PILE
PLAYED = PILE_SIZES + _C
LAST = PLAYED + _P * _K
DIRECTION = LAST + _P * _C
POS = DIRECTION + _P * _C
LARGE = POS + _P * _C
WISHING = LARGE + _P
TILE_POINTS_AT = WISHING + _P
TILES = TILE_POINTS_AT + _P
DARK = TILES + _C * (END_ROW + 1)
STATE_SIZE = DARK + _C * DARK_STONES_PER_PATH

_PLAY, _DRAW, _BONUS, _OVER = int(Phase.PLAY), int(Phase.DRAW), int(Phase.BONUS), int(Phase.OVER)
_GOAL_END, _DECK_END, _TRUNCATED = int(EndReason.GOAL), int(EndReason.DECK), int(EndReason.TRUNCATED)
_ROW_VALUES = np.array(ROW_VALUES, dtype=np.int32)
_WISH_SCORES = np.array(WISHING_SCORES, dtype=np.int32)
_TILE_POINTS = np.array([TILE_POINTS.get(t, 0) for t in range(POINTS_3 + 1)], dtype=np.int32)


# ---------------------------------------------------------------------- rules
@inlined
def small_left(s: Any, p: int) -> int:
    """Small figures of ``p`` still on the start stone."""
    on = 0
    for c in range(_C):
        if s[POS + p * _C + c]:
            on += 1
    return SMALL_FIGURES - on + (1 if s[LARGE + p] >= 0 else 0)


@inlined
def legal_mask(s: Any, mask: Any) -> int:
    """Write the current player's legal actions into ``mask`` (int8, 1 = legal); returns
    how many there are (0 when the game is over)."""
    for a in range(NUM_ACTIONS):  # a loop, not a slice: no array view whose references are counted
        mask[a] = 0
    phase = s[PHASE]
    p = s[CURRENT]
    count = 0
    if phase == _PLAY:
        can_small = small_left(s, p) > 0
        can_large = s[LARGE + p] < 0
        for k in range(_K):
            if s[HAND + p * _K + k] == 0:
                continue
            mask[DISCARD + k] = 1
            count += 1
            c = k // _V
            if s[POS + p * _C + c]:
                top = s[LAST + p * _C + c]
                d = s[DIRECTION + p * _C + c]
                if top < 0 or d == 0 or (k % _V - top) * d >= 0:
                    mask[k] = 1
                    count += 1
            else:
                if can_small:
                    mask[k] = 1
                    count += 1
                if can_large:
                    mask[PLAY_LARGE + k] = 1
                    count += 1
    elif phase == _DRAW:
        mask[DRAW_DECK] = 1
        count = 1
        for c in range(_C):
            if s[PILE_SIZES + c] and c != s[CLOSED]:
                mask[DRAW_DISCARD + c] = 1
                count += 1
    elif phase == _BONUS:
        can_small = small_left(s, p) > 0
        can_large = s[LARGE + p] < 0
        for c in range(_C):
            r = s[POS + p * _C + c]
            if 0 < r < END_ROW:
                mask[BONUS_ADVANCE + c] = 1
                count += 1
            elif r == 0:
                if can_small:
                    mask[BONUS_OPEN_SMALL + c] = 1
                    count += 1
                if can_large:
                    mask[BONUS_OPEN_LARGE + c] = 1
                    count += 1
        mask[PASS] = 1
        count += 1
    return count


@inlined
def _finish(s: Any, reason: int) -> None:
    s[END] = reason
    s[PHASE] = _OVER
    s[CLOSED] = -1


@inlined
def _arrive(s: Any, p: int, c: int, row: int) -> bool:
    """Move ``p``'s figure on path ``c`` to ``row`` (R8.1, R6); returns whether a bonus
    step is earned (a clover)."""
    s[POS + p * _C + c] = row
    if row == GOAL_FIRST_ROW:
        s[GOAL] += 1
        if s[GOAL] >= GOAL_FIGURES_TO_END:
            _finish(s, _GOAL_END)  # R6: the ending move triggers no tile
            return False
    at = TILES + c * (END_ROW + 1) + row
    tile = s[at]
    if tile == 0:
        return False
    if tile == CLOVER:
        return True
    if tile == WISHING_STONE:
        s[WISHING + p] += 1
        s[at] = 0
        return False
    s[TILE_POINTS_AT + p] += _TILE_POINTS[tile]
    return False


@inlined
def _play(s: Any, p: int, k: int, large: bool) -> None:
    """R3a + R4 + R5: a card onto the own row, the figure moves."""
    c = k // _V
    v = k % _V
    s[HAND + p * _K + k] -= 1
    s[HAND_SIZES + p] -= 1
    s[PLAYED + p * _K + k] += 1
    at = p * _C + c
    top = s[LAST + at]
    if top >= 0 and s[DIRECTION + at] == 0 and v != top:
        s[DIRECTION + at] = 1 if v > top else -1
    s[LAST + at] = v
    row = s[POS + at]
    if row == 0:
        if large:
            s[LARGE + p] = c
        bonus = _arrive(s, p, c, 1)
    elif row == END_ROW:
        bonus = True  # R5: a completed path gives a bonus step
    else:
        bonus = _arrive(s, p, c, row + 1)
    if s[PHASE] != _OVER:
        s[PHASE] = _BONUS if bonus else _DRAW


@inlined
def _draw(s: Any, p: int, action: int) -> None:
    """R3b, then the turn passes; R8.2 ends the game on the last card of the pile."""
    if action == DRAW_DECK:
        s[DECK_SIZE] -= 1
        k = s[DECK + s[DECK_SIZE]]
        s[DECK + s[DECK_SIZE]] = 0  # a row is canonical: what is not in a pile is 0
        s[HAND + p * _K + k] += 1
        s[HAND_SIZES + p] += 1
        if s[DECK_SIZE] == 0:
            s[TURN] += 1
            _finish(s, _DECK_END)
            return
    else:
        c = action - DRAW_DISCARD
        s[PILE_SIZES + c] -= 1
        v = s[PILE + c * _MAX_PILE + s[PILE_SIZES + c]]
        s[PILE + c * _MAX_PILE + s[PILE_SIZES + c]] = 0
        s[HAND + p * _K + c * _V + v] += 1
        s[HAND_SIZES + p] += 1
    s[TURN] += 1
    s[CLOSED] = -1
    if s[TURN] >= s[MAX_TURNS]:
        _finish(s, _TRUNCATED)
        return
    s[CURRENT] = (p + 1) % s[NUM_PLAYERS]
    s[PHASE] = _PLAY


@inlined
def apply(s: Any, action: int) -> None:
    """Make one decision for the current player; ``action`` must be legal (see :func:`step`)."""
    p = s[CURRENT]
    if action < DRAW_DECK:
        if action < DISCARD:
            _play(s, p, action % _K, action >= PLAY_LARGE)
        else:
            k = action - DISCARD
            c = k // _V
            s[HAND + p * _K + k] -= 1
            s[HAND_SIZES + p] -= 1
            s[PILE + c * _MAX_PILE + s[PILE_SIZES + c]] = k % _V
            s[PILE_SIZES + c] += 1
            s[CLOSED] = c
            s[PHASE] = _DRAW
    elif action < BONUS_ADVANCE:
        _draw(s, p, action)
    elif action == PASS:
        s[PHASE] = _DRAW
    else:
        if action < BONUS_OPEN_SMALL:
            c = action - BONUS_ADVANCE
            bonus = _arrive(s, p, c, s[POS + p * _C + c] + 1)
        else:
            c = (action - BONUS_OPEN_SMALL) % _C
            if action >= BONUS_OPEN_LARGE:
                s[LARGE + p] = c
            bonus = _arrive(s, p, c, 1)
        if s[PHASE] != _OVER:
            s[PHASE] = _BONUS if bonus else _DRAW


@kernel
def step(s: Any, action: int, mask: Any) -> bool:
    """Apply ``action`` if it is legal (``mask`` is scratch space); returns whether it was.
    An illegal action changes nothing."""
    if action < 0 or action >= NUM_ACTIONS or s[PHASE] == _OVER:
        return False
    legal_mask(s, mask)
    if not mask[action]:
        return False
    apply(s, action)
    return True


@inlined
def score(s: Any, p: int) -> int:
    """R9: figures by row value (the large one doubled), point tiles, wishing stones."""
    total = s[TILE_POINTS_AT + p]
    for c in range(_C):
        total += _ROW_VALUES[s[POS + p * _C + c]]
    large = s[LARGE + p]
    if large >= 0:
        total += _ROW_VALUES[s[POS + p * _C + large]] * (LARGE_MULTIPLIER - 1)
    total += _WISH_SCORES[min(s[WISHING + p], len(_WISH_SCORES) - 1)]
    return int(total)


@inlined
def scores(s: Any, out: Any) -> None:
    """Every player's score if the game ended now, into ``out``."""
    for p in range(s[NUM_PLAYERS]):
        out[p] = score(s, p)


# ---------------------------------------------------------------------- observations
# The encoder's layout as one int32 array (see encoder_layout): scalar positions first,
# then one entry per relative seat for each per-seat segment.
(L_DISCARDS, L_DSIZES, L_UNSEEN, L_TOP, L_PHASE, L_CLOSED, L_TILES, L_DRAW, L_GOAL, L_TURN, L_DEALT,
 L_SIZE) = range(12)
L_PLAYED, L_LAST, L_DIR, L_FIGURE, L_LARGE, L_WISH, L_ACT, L_TP, L_SCORE = (12 + _P * i for i in range(9))
LAYOUT_SIZE = 12 + 9 * _P


def encoder_layout(encoder: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """What :func:`encode` needs of ``encoder`` (the game's Python
    :class:`~keltis_env.games.keltis.encoding.ObservationEncoder`: the one layout, read from
    its segments): positions, the scale and the offset of each entry, and the score scale."""
    enc = encoder
    num_players = enc.num_players
    ix = enc.index
    layout = np.zeros(LAYOUT_SIZE, dtype=np.int32)
    for at, name in ((L_DISCARDS, "discards"), (L_DSIZES, "discard_sizes"), (L_UNSEEN, "unseen"),
                     (L_TOP, "discard_top"), (L_PHASE, "phase"), (L_CLOSED, "closed_pile"), (L_TILES, "tiles"),
                     (L_DRAW, "draw_pile"), (L_GOAL, "goal_count"), (L_TURN, "turn")):
        layout[at] = ix[name].start
    layout[L_DEALT] = NUM_CARDS - REMOVED_CARDS[num_players] - HAND_SIZE * num_players
    layout[L_SIZE] = enc.size
    for i in range(num_players):
        for at, name in ((L_PLAYED, "played"), (L_LAST, "last"), (L_DIR, "direction"), (L_FIGURE, "figure"),
                         (L_LARGE, "large"), (L_WISH, "wishing"), (L_ACT, "to_act"), (L_TP, "tile_points"),
                         (L_SCORE, "score")):
            layout[at + i] = ix[f"p{i}.{name}"].start
    return layout, enc._scale.copy(), enc._offset.copy(), float(enc.score_scale)


@kernel
def _count_cards(s: Any, me: int, layout: Any, counts: Any) -> None:
    """The card counts of ``me``'s observation (hand, discards, rows, and every seen copy
    again in ``unseen``), as the Python encoder lists them."""
    unseen = layout[L_UNSEEN]
    for k in range(_K):
        x = s[HAND + me * _K + k]
        counts[k] += x
        counts[unseen + k] += x
    for c in range(_C):
        size = s[PILE_SIZES + c]
        for j in range(size):
            k = c * _V + s[PILE + c * _MAX_PILE + j]
            counts[layout[L_DISCARDS] + k] += 1
            counts[unseen + k] += 1
        if size:
            counts[layout[L_DSIZES] + c] += size
            counts[layout[L_TOP] + c * _V + s[PILE + c * _MAX_PILE + size - 1]] += 1
    for c in range(_C):
        for r in range(1, END_ROW + 1):
            t = s[TILES + c * (END_ROW + 1) + r]
            if t:
                counts[layout[L_TILES] - 1 + (c * END_ROW + r - 1) * _NUM_TILE_TYPES + t] += 1


@kernel
def encode(s: Any, me: int, layout: Any, scale: Any, offset: Any, score_scale: float, counts: Any,
           out: Any) -> None:
    """``me``'s observation of state ``s`` into ``out`` (float32), bit for bit the Python
    encoder's (:class:`~keltis_env.games.keltis.encoding.ObservationEncoder`), whose layout,
    scale, offset and score scale :func:`encoder_layout` gives; ``counts`` (int32, the
    observation's size) is scratch space."""
    n = s[NUM_PLAYERS]
    size = layout[L_SIZE]
    for j in range(size):
        counts[j] = 0
    _count_cards(s, me, layout, counts)
    phase = s[PHASE]
    actor = s[CURRENT] if phase != _OVER else -1
    for i in range(n):
        p = (me + i) % n
        for k in range(_K):
            x = s[PLAYED + p * _K + k]
            counts[layout[L_PLAYED + i] + k] += x
            counts[layout[L_UNSEEN] + k] += x
        for c in range(_C):
            last = s[LAST + p * _C + c]
            if last >= 0:
                counts[layout[L_LAST + i] + c * _V + last] += 1
                d = s[DIRECTION + p * _C + c]
                if d:
                    counts[layout[L_DIR + i] + 2 * c + (0 if d > 0 else 1)] += 1
            counts[layout[L_FIGURE + i] + c * (END_ROW + 1) + s[POS + p * _C + c]] += 1
        counts[layout[L_LARGE + i] + s[LARGE + p] + 1] += 1
        counts[layout[L_WISH + i] + min(s[WISHING + p], len(_WISH_SCORES) - 1)] += 1
        if p == actor:
            counts[layout[L_ACT + i]] += 1
    if phase != _OVER:
        counts[layout[L_PHASE] + phase] += 1
    if s[CLOSED] >= 0:
        counts[layout[L_CLOSED] + s[CLOSED]] += 1
    for j in range(size):
        out[j] = np.float32(counts[j]) * scale[j] + offset[j]
    out[layout[L_DRAW]] = s[DECK_SIZE] / layout[L_DEALT]
    out[layout[L_GOAL]] = s[GOAL] / GOAL_FIGURES_TO_END
    out[layout[L_TURN]] = s[TURN] / s[MAX_TURNS]
    for i in range(n):
        p = (me + i) % n
        out[layout[L_TP + i]] = s[TILE_POINTS_AT + p] / MAX_TILE_POINTS
        out[layout[L_SCORE + i]] = score(s, p) / score_scale


@inlined
def _one(layout_at: int, scale: Any, offset: Any, out: Any) -> None:
    """A one-hot entry that is set: count 1."""
    out[layout_at] = np.float32(1) * scale[layout_at] + offset[layout_at]


@inlined
def _clear(at: int, size: int, offset: Any, out: Any) -> None:
    """Entries ``at .. at + size - 1`` with count 0: their offsets."""
    for j in range(at, at + size):
        out[j] = offset[j]


@inlined
def encode_kind(s: Any, me: int, k: int, layout: Any, scale: Any, offset: Any, out: Any) -> None:
    """The entries of ``me``'s observation that count the card kind ``k``: the hand, the
    discards, each row and the unseen copies (:func:`encode`'s values)."""
    n = s[NUM_PLAYERS]
    c, v = k // _V, k % _V
    pile = PILE + c * _MAX_PILE
    piled = 0
    for j in range(s[PILE_SIZES + c]):
        if s[pile + j] == v:
            piled += 1
    hand = s[HAND + me * _K + k]
    seen = hand + piled
    out[k] = np.float32(hand) * scale[k] + offset[k]
    at = layout[L_DISCARDS] + k
    out[at] = np.float32(piled) * scale[at] + offset[at]
    for i in range(n):
        x = s[PLAYED + ((me + i) % n) * _K + k]
        seen += x
        at = layout[L_PLAYED + i] + k
        out[at] = np.float32(x) * scale[at] + offset[at]
    at = layout[L_UNSEEN] + k
    out[at] = np.float32(seen) * scale[at] + offset[at]


@inlined
def encode_pile(s: Any, c: int, layout: Any, scale: Any, offset: Any, out: Any) -> None:
    """The entries of an observation about discard pile ``c``: its size and its top card."""
    size = s[PILE_SIZES + c]
    at = layout[L_DSIZES] + c
    out[at] = np.float32(size) * scale[at] + offset[at]
    _clear(layout[L_TOP] + c * _V, _V, offset, out)
    if size:
        _one(layout[L_TOP] + c * _V + s[PILE + c * _MAX_PILE + size - 1], scale, offset, out)


@inlined
def encode_path(s: Any, me: int, p: int, c: int, layout: Any, scale: Any, offset: Any, out: Any) -> None:
    """The entries of ``me``'s observation that a move of player ``p`` on path ``c`` changes:
    ``p``'s row of colour ``c`` (last card, direction), figure on the path, large figure and
    wishing stones, and the tile where the figure stands."""
    n = s[NUM_PLAYERS]
    i = (p - me) % n
    last = s[LAST + p * _C + c]
    _clear(layout[L_LAST + i] + c * _V, _V, offset, out)
    _clear(layout[L_DIR + i] + 2 * c, 2, offset, out)
    if last >= 0:
        _one(layout[L_LAST + i] + c * _V + last, scale, offset, out)
        d = s[DIRECTION + p * _C + c]
        if d:
            _one(layout[L_DIR + i] + 2 * c + (0 if d > 0 else 1), scale, offset, out)
    row = s[POS + p * _C + c]
    _clear(layout[L_FIGURE + i] + c * (END_ROW + 1), END_ROW + 1, offset, out)
    _one(layout[L_FIGURE + i] + c * (END_ROW + 1) + row, scale, offset, out)
    _clear(layout[L_LARGE + i], _C + 1, offset, out)
    _one(layout[L_LARGE + i] + s[LARGE + p] + 1, scale, offset, out)
    _clear(layout[L_WISH + i], len(_WISH_SCORES), offset, out)
    _one(layout[L_WISH + i] + min(s[WISHING + p], len(_WISH_SCORES) - 1), scale, offset, out)
    if row:  # a wishing stone taken there leaves the tile's place empty
        at = layout[L_TILES] + (c * END_ROW + row - 1) * _NUM_TILE_TYPES
        _clear(at, _NUM_TILE_TYPES, offset, out)
        t = s[TILES + c * (END_ROW + 1) + row]
        if t:
            _one(at - 1 + t, scale, offset, out)


@inlined
def encode_turn(s: Any, me: int, layout: Any, scale: Any, offset: Any, score_scale: float, out: Any) -> None:
    """The entries of ``me``'s observation that every decision may change: the step of the
    turn, the closed pile, who acts, the draw pile, the goal, the turn, tile points and scores."""
    n = s[NUM_PLAYERS]
    phase = s[PHASE]
    _clear(layout[L_PHASE], 3, offset, out)
    if phase != _OVER:
        _one(layout[L_PHASE] + phase, scale, offset, out)
    _clear(layout[L_CLOSED], _C, offset, out)
    if s[CLOSED] >= 0:
        _one(layout[L_CLOSED] + s[CLOSED], scale, offset, out)
    actor = s[CURRENT] if phase != _OVER else -1
    for i in range(n):
        p = (me + i) % n
        at = layout[L_ACT + i]
        if p == actor:
            _one(at, scale, offset, out)
        else:
            out[at] = offset[at]
        out[layout[L_TP + i]] = s[TILE_POINTS_AT + p] / MAX_TILE_POINTS
        out[layout[L_SCORE + i]] = score(s, p) / score_scale
    out[layout[L_DRAW]] = s[DECK_SIZE] / layout[L_DEALT]
    out[layout[L_GOAL]] = s[GOAL] / GOAL_FIGURES_TO_END
    out[layout[L_TURN]] = s[TURN] / s[MAX_TURNS]


#: where :func:`apply_noted` notes what a move changes: the card kinds (one bit each), and
#: the discard piles (bits 0..4) and the paths of each player (bit 8 + 5 * player + path)
NOTE_KINDS, NOTE_PLACES, NOTE_SIZE = 0, 1, 2
_PATH_BITS = 8


@inlined
def apply_noted(s: Any, action: int, me: int, notes: Any) -> None:
    """:func:`apply` (``action`` legal), noting in ``notes`` (int64, :data:`NOTE_SIZE`) what
    it may change in ``me``'s observation: the card kind it moves, the pile, the path; see
    :func:`encode_noted`."""
    p = s[CURRENT]
    if action < DRAW_DECK:
        kind = (action - DISCARD) if action >= DISCARD else action % _K
        notes[NOTE_KINDS] |= np.int64(1) << kind
        if action >= DISCARD:
            notes[NOTE_PLACES] |= np.int64(1) << (kind // _V)
        else:
            notes[NOTE_PLACES] |= np.int64(1) << (_PATH_BITS + p * _C + kind // _V)
    elif action == DRAW_DECK:
        if p == me:  # another player's draw from the deck changes nothing it sees
            notes[NOTE_KINDS] |= np.int64(1) << s[DECK + s[DECK_SIZE] - 1]
    elif action < BONUS_ADVANCE:
        c = action - DRAW_DISCARD
        notes[NOTE_KINDS] |= np.int64(1) << (c * _V + s[PILE + c * _MAX_PILE + s[PILE_SIZES + c] - 1])
        notes[NOTE_PLACES] |= np.int64(1) << c
    elif action != PASS:
        notes[NOTE_PLACES] |= np.int64(1) << (_PATH_BITS + p * _C + (action - BONUS_ADVANCE) % _C)
    apply(s, action)


@inlined
def encode_noted(s: Any, me: int, notes: Any, layout: Any, scale: Any, offset: Any, score_scale: float,
                 out: Any) -> None:
    """``out``, ``me``'s observation of ``s`` before the moves noted in ``notes``
    (:func:`apply_noted`), brought up to date (:func:`encode`'s values): only the entries
    those moves can change are written again; ``notes`` is cleared."""
    kinds = notes[NOTE_KINDS]
    for k in range(_K):
        if kinds & (np.int64(1) << k):
            encode_kind(s, me, k, layout, scale, offset, out)
    places = notes[NOTE_PLACES]
    for c in range(_C):
        if places & (np.int64(1) << c):
            encode_pile(s, c, layout, scale, offset, out)
    for p in range(s[NUM_PLAYERS]):
        for c in range(_C):
            if places & (np.int64(1) << (_PATH_BITS + p * _C + c)):
                encode_path(s, me, p, c, layout, scale, offset, out)
    encode_turn(s, me, layout, scale, offset, score_scale, out)
    notes[NOTE_KINDS] = 0
    notes[NOTE_PLACES] = 0


def counts_scratch(size: int) -> np.ndarray:
    """:func:`encode`'s scratch space for an observation of ``size`` entries."""
    return np.zeros(size, dtype=np.int32)


# ---------------------------------------------------------------------- Python states
def pack(state: GameState, random_layout: bool | None = None) -> np.ndarray:
    """``state`` as a row (``int32[STATE_SIZE]``); ``random_layout`` (default: the options'
    ``tile_layout == "random"``) makes the row's next deal draw its layout again."""
    n = state.num_players
    s = np.zeros(STATE_SIZE, dtype=np.int32)
    if random_layout is None:
        random_layout = state.config.tile_layout == "random"
    s[[NUM_PLAYERS, CURRENT, FIRST, PHASE, END, TURN, MAX_TURNS, GOAL, CLOSED, DECK_SIZE, RANDOM_LAYOUT]] = (
        n, state.current, state.first_player, int(state.phase), int(state.end), state.turn, state.config.max_turns,
        state.goal_count, state.discarded, len(state.deck), int(random_layout))
    for p in range(n):
        np.add.at(s, HAND + p * _K + np.array(state.hands[p], dtype=np.int64), 1)
        s[HAND_SIZES + p] = len(state.hands[p])
        for c in range(_C):
            np.add.at(s, PLAYED + p * _K + c * _V + np.array(state.rows[p][c], dtype=np.int64), 1)
        s[LAST + p * _C:LAST + (p + 1) * _C] = state.last[p]
        s[DIRECTION + p * _C:DIRECTION + (p + 1) * _C] = state.direction[p]
        s[POS + p * _C:POS + (p + 1) * _C] = state.pos[p]
    np.add.at(s, REMOVED + np.array(state.removed, dtype=np.int64), 1)
    s[DECK:DECK + len(state.deck)] = state.deck
    for c in range(_C):
        pile = state.discards[c]
        s[PILE + c * _MAX_PILE:PILE + c * _MAX_PILE + len(pile)] = pile
        s[PILE_SIZES + c] = len(pile)
        s[TILES + c * (END_ROW + 1):TILES + (c + 1) * (END_ROW + 1)] = state.tiles[c]
        s[DARK + c * DARK_STONES_PER_PATH:DARK + (c + 1) * DARK_STONES_PER_PATH] = state.dark_rows[c]
    s[LARGE:LARGE + n] = state.large
    s[WISHING:WISHING + n] = state.wishing
    s[TILE_POINTS_AT:TILE_POINTS_AT + n] = state.tile_points
    return s


def _kinds(counts: np.ndarray) -> list[int]:
    """The sorted kinds of a count vector."""
    return [int(k) for k in np.repeat(np.arange(len(counts)), counts)]


def unpack(s: np.ndarray, config: GameConfig) -> GameState:
    """The Python state of row ``s`` (a game with options ``config``)."""
    n = int(s[NUM_PLAYERS])
    state = GameState.__new__(GameState)
    state.config = config
    state.num_players = n
    state.dark_rows = tuple(tuple(int(r) for r in s[DARK + c * DARK_STONES_PER_PATH:DARK + (c + 1) *
                                                    DARK_STONES_PER_PATH]) for c in range(_C))
    state.hands = [_kinds(s[HAND + p * _K:HAND + (p + 1) * _K]) for p in range(n)]
    state.deck = [int(k) for k in s[DECK:DECK + s[DECK_SIZE]]]
    state.removed = _kinds(s[REMOVED:REMOVED + _K])
    state.discards = [[int(v) for v in s[PILE + c * _MAX_PILE:PILE + c * _MAX_PILE + s[PILE_SIZES + c]]]
                      for c in range(_C)]
    state.direction = [[int(d) for d in s[DIRECTION + p * _C:DIRECTION + (p + 1) * _C]] for p in range(n)]
    state.rows = []
    for p in range(n):
        played = s[PLAYED + p * _K:PLAYED + (p + 1) * _K]
        rows = [_kinds(played[c * _V:(c + 1) * _V]) for c in range(_C)]  # values ascending
        state.rows.append([row[::-1] if state.direction[p][c] < 0 else row for c, row in enumerate(rows)])
    state.last = [[int(x) for x in s[LAST + p * _C:LAST + (p + 1) * _C]] for p in range(n)]
    state.pos = [[int(x) for x in s[POS + p * _C:POS + (p + 1) * _C]] for p in range(n)]
    state.large = [int(x) for x in s[LARGE:LARGE + n]]
    state.tiles = [[int(t) for t in s[TILES + c * (END_ROW + 1):TILES + (c + 1) * (END_ROW + 1)]] for c in range(_C)]
    state.wishing = [int(x) for x in s[WISHING:WISHING + n]]
    state.tile_points = [int(x) for x in s[TILE_POINTS_AT:TILE_POINTS_AT + n]]
    state.phase = Phase(int(s[PHASE]))
    state.current = int(s[CURRENT])
    state.first_player = int(s[FIRST])
    state.discarded = int(s[CLOSED])
    state.turn = int(s[TURN])
    state.goal_count = int(s[GOAL])
    state.end = EndReason(int(s[END]))
    return state


# ---------------------------------------------------------------------- one game of the AEC environment
# The AEC environment's compiled backend (keltis_env.core.compiled_match) deals with the
# Python engine, moves the position into a row and then makes two calls a decision:
# observe (observation and mask) and advance (the action, then every score).
def observer_args(encoder: Any) -> tuple[Any, ...]:
    """:func:`observe`'s arguments between ``live`` and ``obs``: ``encoder``'s layout (see
    :func:`encoder_layout`) and the scratch space of :func:`encode`."""
    return (*encoder_layout(encoder), counts_scratch(encoder.size))


@kernel
def observe(s: Any, me: int, live: bool, layout: Any, scale: Any, offset: Any, score_scale: float, counts: Any,
            obs: Any, mask: Any) -> None:
    """``me``'s observation into ``obs`` (:func:`encode`) and its action mask into ``mask``:
    the legal set when ``me`` is to act in a game that goes on (``live``: not ended by an
    illegal action), else zeros."""
    encode(s, me, layout, scale, offset, score_scale, counts, obs)
    if live and me == s[CURRENT] and s[END] == 0:
        legal_mask(s, mask)
    else:
        mask[:] = 0


@kernel
def advance(s: Any, action: int, mask: Any, out: Any) -> int:
    """:func:`step` (``mask`` is scratch space), then every score into ``out``. Returns -1 for
    an illegal action (nothing changed), else twice the seat to move next, plus 1 when the
    game is now over."""
    if not step(s, action, mask):
        return -1
    scores(s, out)
    return int(2 * s[CURRENT] + (1 if s[END] != 0 else 0))


def to_row(state: GameState) -> np.ndarray:
    """Any position of the Python engine as a row (:func:`pack`)."""
    return pack(state)


def from_row(s: np.ndarray, start: GameState) -> GameState:
    """The Python state of row ``s``, a game that started from the Python state ``start``
    (its options)."""
    return unpack(s, start.config)
