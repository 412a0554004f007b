"""The dice game's compiled core (numba, the ``fast`` extra): games as rows of one ``int64``
array, kernels over them, and one call that steps N games with auto-reset.

The Python engine (:mod:`.state`) is the reference and the API for records, views and
bots; these kernels implement the same rules (docs/rules.md R11) over flat arrays, and
``tests/test_kernels_dice.py`` holds the two equal on every action: legal actions, the
whole state, observations (bit for bit) and scores. Nothing on the Python path imports
this module; without numba, importing it raises an ``ImportError`` naming the extra.

A row (:data:`STATE_SIZE` entries) holds the scalars (players, current and first seat,
phase, end, turns played, turn cap, the extra-turn flag, rolls made, the seed and its
64-bit dice key, markers in the upper zone and the count that ends the game, and whether
the bonus layout is drawn at every deal), the five sorted ``DICE`` and the ``COUNTS`` of
each face, ``POS[p][c]``, ``MARKERS[p]``, ``UPPER[p]``, ``STONES[p]`` and the bonus board
``BONUS[c][r]``, as in the Python state. The dice come from the seed exactly as there
(:func:`keltis_env.games.dice.state.roll_faces`), so a position continues with the same
dice in both engines. New deals and the batched steps (N games in one call, with
auto-reset) are in :mod:`.kernels_batch`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.kernels import GOLDEN, kernel, mix64

from .actions import BONUS_ADVANCE, BONUS_ENTER, MOVE, NUM_ACTIONS, PASS
from .config import GameConfig
from .constants import (
    CLOVER,
    EXTRA_TURN,
    MARKERS_PER_PLAYER,
    MAX_PLAYERS,
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
    EndReason,
    Phase,
)
from .state import GameState, dice_key

_C, _P, _ROWS = NUM_COLORS, MAX_PLAYERS, TOP_ROW + 1
# the scalars
(NUM_PLAYERS, CURRENT, FIRST, PHASE, END, TURN, MAX_TURNS, EXTRA, ROLLS, SEED, KEY, UPPER_TOTAL, UPPER_TO_END,
 RANDOM_LAYOUT) = range(14)
DICE = 16
COUNTS = DICE + NUM_DICE
POS = COUNTS + NUM_FACES
MARKERS = POS + _P * _C
UPPER = MARKERS + _P
STONES = UPPER + _P
BONUS = STONES + _P
STATE_SIZE = BONUS + _C * _ROWS

_REROLL, _MOVE, _BONUS, _OVER = int(Phase.REROLL), int(Phase.MOVE), int(Phase.BONUS), int(Phase.OVER)
_ALL_UPPER, _UPPER_COUNT, _TRUNCATED = int(EndReason.ALL_UPPER), int(EndReason.UPPER_COUNT), int(EndReason.TRUNCATED)
_ROW_VALUES = np.array(ROW_VALUES, dtype=np.int64)
_STONE_SCORES = np.array(STONE_SCORES, dtype=np.int64)
_ROLL_SPACE = np.uint64(NUM_FACES**NUM_DICE)


# ---------------------------------------------------------------------- dice
@kernel
def _outcome(s: Any) -> int:
    """This game's next roll as one of the 7776 outcomes of five dice (the Python engine's
    ``_outcome(key, rolls)``)."""
    key = np.uint64(s[KEY])
    return int(mix64(key + np.uint64(s[ROLLS] + 1) * GOLDEN) % _ROLL_SPACE)


@kernel
def _set_dice(s: Any, faces: Any) -> None:
    """Five faces onto the table, sorted, and the count of each face."""
    faces.sort()
    s[COUNTS:COUNTS + NUM_FACES] = 0
    for i in range(NUM_DICE):
        s[DICE + i] = faces[i]
        s[COUNTS + faces[i]] += 1


@kernel
def roll_all(s: Any) -> None:
    """R11.1: roll all five dice."""
    outcome = _outcome(s)
    faces = np.empty(NUM_DICE, dtype=np.int64)
    for i in range(NUM_DICE):
        faces[i] = outcome % NUM_FACES
        outcome //= NUM_FACES
    _set_dice(s, faces)
    s[ROLLS] += 1
    s[PHASE] = _REROLL


@kernel
def _reroll(s: Any, mask: int) -> None:
    """R11.2 (keep, or re-roll the dice of ``mask`` once), then R11.3 (the stone rule)."""
    if mask:
        faces = np.empty(NUM_DICE, dtype=np.int64)
        kept = 0
        for i in range(NUM_DICE):
            if not (mask >> i) & 1:
                faces[kept] = s[DICE + i]
                kept += 1
        outcome = _outcome(s)
        for i in range(kept, NUM_DICE):  # the roll's lowest digits go to the re-rolled dice, in order
            faces[i] = outcome % NUM_FACES
            outcome //= NUM_FACES
        s[ROLLS] += 1
        _set_dice(s, faces)
    if s[COUNTS + STONE_FACE] >= STONE_FACES_FOR_STONE:
        s[STONES + s[CURRENT]] += 1
    s[PHASE] = _MOVE


# ---------------------------------------------------------------------- rules
@kernel
def legal_mask(s: Any, mask: Any) -> int:
    """Write the current player's legal actions into ``mask`` (int8, 1 = legal); returns
    how many there are (0 when the game is over)."""
    mask[:] = 0
    phase = s[PHASE]
    p = s[CURRENT]
    count = 0
    if phase == _REROLL:
        mask[:MOVE] = 1
        count = MOVE
    elif phase == _MOVE:
        can_enter = s[MARKERS + p] < MARKERS_PER_PLAYER
        for c in range(_C):
            row = s[POS + p * _C + c]
            if s[COUNTS + c] and ((row < TOP_ROW) if row else can_enter):
                mask[MOVE + c] = 1
                count += 1
        if count == 0:
            mask[PASS] = 1
            count = 1
    elif phase == _BONUS:
        count = _bonus_mask(s, p, mask)
    return count


@kernel
def _bonus_mask(s: Any, p: int, mask: Any) -> int:
    """The clover bonus's options of ``p`` into ``mask``; returns how many."""
    count = 0
    can_enter = s[MARKERS + p] < MARKERS_PER_PLAYER
    for c in range(_C):
        row = s[POS + p * _C + c]
        if 0 < row < TOP_ROW:
            mask[BONUS_ADVANCE + c] = 1
            count += 1
        elif row == 0 and can_enter:
            mask[BONUS_ENTER + c] = 1
            count += 1
    return count


@kernel
def _has_bonus_step(s: Any, p: int) -> bool:
    """``p`` has an option for a clover bonus step."""
    can_enter = s[MARKERS + p] < MARKERS_PER_PLAYER
    for c in range(_C):
        row = s[POS + p * _C + c]
        if 0 < row < TOP_ROW or (row == 0 and can_enter):
            return True
    return False


@kernel
def _finish(s: Any, reason: int) -> None:
    s[END] = reason
    s[PHASE] = _OVER
    s[EXTRA] = 0


@kernel
def _end_turn(s: Any, extra: bool) -> None:
    """The turn is over: truncate at the cap, else the same player (extra turn) or the next rolls."""
    s[TURN] += 1
    if s[TURN] >= s[MAX_TURNS]:
        _finish(s, _TRUNCATED)
        return
    if not extra:
        s[CURRENT] = (s[CURRENT] + 1) % s[NUM_PLAYERS]
    s[EXTRA] = 1 if extra else 0
    roll_all(s)


@kernel
def _arrive(s: Any, p: int, c: int, old: int, row: int) -> None:
    """``p``'s marker in column ``c`` moves from ``old`` to ``row``: the end (R11), then the
    bonus of the square (R11.5)."""
    s[POS + p * _C + c] = row
    if old < UPPER_FIRST_ROW <= row:
        s[UPPER + p] += 1
        s[UPPER_TOTAL] += 1
        if s[UPPER + p] == MARKERS_PER_PLAYER:
            _finish(s, _ALL_UPPER)
            return
        if s[UPPER_TOTAL] >= s[UPPER_TO_END]:
            _finish(s, _UPPER_COUNT)
            return
    bonus = s[BONUS + c * _ROWS + row]
    if bonus == CLOVER:
        if _has_bonus_step(s, p):  # always, unless every own marker is on row 9
            s[PHASE] = _BONUS
            return
        _end_turn(s, False)
    elif bonus == STONE:
        s[STONES + p] += 1
        _end_turn(s, False)
    else:
        _end_turn(s, bonus == EXTRA_TURN)


@kernel
def apply(s: Any, action: int) -> None:
    """Make one decision for the current player; ``action`` must be legal (see :func:`step`)."""
    p = s[CURRENT]
    phase = s[PHASE]
    if phase == _REROLL:
        _reroll(s, action)
    elif phase == _MOVE:
        if action == PASS:
            _end_turn(s, False)
            return
        c = action - MOVE
        row = s[POS + p * _C + c]
        if not row:
            s[MARKERS + p] += 1
        _arrive(s, p, c, row, min(row + s[COUNTS + c], TOP_ROW))
    elif action < BONUS_ENTER:
        c = action - BONUS_ADVANCE
        row = s[POS + p * _C + c]
        _arrive(s, p, c, row, row + 1)
    else:
        c = action - BONUS_ENTER
        s[MARKERS + p] += 1
        _arrive(s, p, c, 0, 1)


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


@kernel
def score(s: Any, p: int) -> int:
    """R11 scoring: each marker its row's value, plus the stone table."""
    total = _STONE_SCORES[min(s[STONES + p], len(_STONE_SCORES) - 1)]
    for c in range(_C):
        total += _ROW_VALUES[s[POS + p * _C + c]]
    return int(total)


@kernel
def scores(s: Any, out: Any) -> None:
    """Every player's score if the game ended now, into ``out``."""
    for p in range(s[NUM_PLAYERS]):
        out[p] = score(s, p)


# ---------------------------------------------------------------------- observations
# The encoder's layout as one int64 array (see encoder_layout): scalar positions first,
# then one entry per relative seat for each per-seat segment.
L_DICE, L_COUNTS, L_PHASE, L_EXTRA, L_BONUS, L_UPPER_COUNT, L_TURN, L_SIZE = range(8)
L_MARKER, L_MARKERS, L_STONES, L_UPPER, L_ACT, L_SCORE = (8 + _P * i for i in range(6))
LAYOUT_SIZE = 8 + 6 * _P
_NUM_SYMBOLS = 3  # stone, clover, extra: the width of a square's one-hot


def encoder_layout(encoder: Any) -> tuple[np.ndarray, np.ndarray, float]:
    """What :func:`encode` needs of ``encoder`` (the game's Python
    :class:`~keltis_env.games.dice.encoding.DiceObservationEncoder`: the one layout, read
    from its segments): positions, the scale of each entry, and the score scale."""
    ix = encoder.index
    layout = np.zeros(LAYOUT_SIZE, dtype=np.int64)
    for at, name in ((L_DICE, "dice"), (L_COUNTS, "face_counts"), (L_PHASE, "phase"), (L_EXTRA, "extra_turn"),
                     (L_BONUS, "bonus_squares"), (L_UPPER_COUNT, "upper_count"), (L_TURN, "turn")):
        layout[at] = ix[name].start
    layout[L_SIZE] = encoder.size
    assert ix["bonus_squares"].size == _C * TOP_ROW * _NUM_SYMBOLS
    for i in range(encoder.num_players):
        for at, name in ((L_MARKER, "marker"), (L_MARKERS, "markers"), (L_STONES, "stones"), (L_UPPER, "upper"),
                         (L_ACT, "to_act"), (L_SCORE, "score")):
            layout[at + i] = ix[f"p{i}.{name}"].start
    return layout, encoder._scale.copy(), float(encoder.score_scale)


@kernel
def encode(s: Any, me: int, layout: Any, scale: Any, score_scale: float, counts: Any, out: Any) -> None:
    """``me``'s observation of state ``s`` into ``out`` (float32), bit for bit the Python
    encoder's, whose layout, scale and score scale :func:`encoder_layout` gives; ``counts``
    (int64, the observation's size) is scratch space."""
    n = s[NUM_PLAYERS]
    size = layout[L_SIZE]
    counts[:size] = 0
    for c in range(_C):
        for r in range(1, _ROWS):
            code = s[BONUS + c * _ROWS + r]
            if code:
                counts[layout[L_BONUS] - 1 + (c * TOP_ROW + r - 1) * _NUM_SYMBOLS + code] = 1
    for i in range(NUM_DICE):
        counts[layout[L_DICE] + i * NUM_FACES + s[DICE + i]] = 1
    for f in range(NUM_FACES):
        counts[layout[L_COUNTS] + f] = s[COUNTS + f]
    phase = s[PHASE]
    actor = -1
    if phase != _OVER:
        counts[layout[L_PHASE] + phase] = 1
        actor = s[CURRENT]
    if s[EXTRA]:
        counts[layout[L_EXTRA]] = 1
    for i in range(n):
        p = (me + i) % n
        for c in range(_C):
            counts[layout[L_MARKER + i] + c * _ROWS + s[POS + p * _C + c]] = 1
        counts[layout[L_MARKERS + i] + s[MARKERS + p]] = 1
        counts[layout[L_STONES + i] + min(s[STONES + p], len(_STONE_SCORES) - 1)] = 1
        counts[layout[L_UPPER + i]] = s[UPPER + p]
        if p == actor:
            counts[layout[L_ACT + i]] = 1
    counts[layout[L_UPPER_COUNT]] = s[UPPER_TOTAL]
    for j in range(size):
        out[j] = np.float32(counts[j]) * scale[j]
    out[layout[L_TURN]] = s[TURN] / s[MAX_TURNS]
    for i in range(n):
        out[layout[L_SCORE + i]] = score(s, (me + i) % n) / score_scale


# ---------------------------------------------------------------------- Python states
def _signed(value: int) -> int:
    """A 64-bit pattern as the int64 that holds it."""
    return value - (1 << 64) if value >= 1 << 63 else value


def pack(state: GameState, random_layout: bool | None = None) -> np.ndarray:
    """``state`` as a row (``int64[STATE_SIZE]``); ``random_layout`` (default: the options'
    ``bonus_layout == "random"``) makes the row's next deal draw its board again. The
    seed must fit in 64 signed bits."""
    if not -(1 << 63) <= state.seed < 1 << 63:
        raise ValueError(f"the compiled core holds seeds of 64 signed bits, got {state.seed}")
    n = state.num_players
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    if random_layout is None:
        random_layout = state.config.bonus_layout == "random"
    s[[NUM_PLAYERS, CURRENT, FIRST, PHASE, END, TURN, MAX_TURNS, EXTRA, ROLLS, SEED, KEY, UPPER_TOTAL, UPPER_TO_END,
       RANDOM_LAYOUT]] = (n, state.current, state.first_player, int(state.phase), int(state.end), state.turn,
                          state.config.max_turns, int(state.extra_turn), state.rolls, state.seed,
                          _signed(state.key), state.upper_total, state.upper_to_end, int(random_layout))
    s[DICE:DICE + NUM_DICE] = state.dice
    s[COUNTS:COUNTS + NUM_FACES] = state.counts
    for p in range(n):
        s[POS + p * _C:POS + (p + 1) * _C] = state.pos[p]
    s[MARKERS:MARKERS + n] = state.markers
    s[UPPER:UPPER + n] = state.upper
    s[STONES:STONES + n] = state.stones
    s[BONUS:BONUS + _C * _ROWS] = np.array(state.bonus, dtype=np.int64).ravel()
    return s


def unpack(s: np.ndarray, config: GameConfig) -> GameState:
    """The Python state of row ``s`` (a game with options ``config``)."""
    n = int(s[NUM_PLAYERS])
    state = GameState.__new__(GameState)
    state.config = config
    state.num_players = n
    state.bonus = tuple(tuple(int(x) for x in s[BONUS + c * _ROWS:BONUS + (c + 1) * _ROWS]) for c in range(_C))
    state.seed = int(s[SEED])
    state.key = dice_key(state.seed)
    state.rolls = int(s[ROLLS])
    state.dice = tuple(int(f) for f in s[DICE:DICE + NUM_DICE])
    state.counts = tuple(int(x) for x in s[COUNTS:COUNTS + NUM_FACES])
    state.pos = [[int(x) for x in s[POS + p * _C:POS + (p + 1) * _C]] for p in range(n)]
    state.markers = [int(x) for x in s[MARKERS:MARKERS + n]]
    state.upper = [int(x) for x in s[UPPER:UPPER + n]]
    state.upper_total = int(s[UPPER_TOTAL])
    state.upper_to_end = int(s[UPPER_TO_END])
    state.stones = [int(x) for x in s[STONES:STONES + n]]
    state.phase = Phase(int(s[PHASE]))
    state.current = int(s[CURRENT])
    state.first_player = int(s[FIRST])
    state.turn = int(s[TURN])
    state.extra_turn = bool(s[EXTRA])
    state.end = EndReason(int(s[END]))
    return state


# ---------------------------------------------------------------------- one game of the AEC environment
# The AEC environment's compiled backend (keltis_env.core.compiled_match) deals with the
# Python engine, moves the position into a row and then makes two calls a decision:
# observe (observation and mask) and advance (the action, then every score).
def observer_args(encoder: Any) -> tuple[Any, ...]:
    """:func:`observe`'s arguments between ``live`` and ``obs``: ``encoder``'s layout (see
    :func:`encoder_layout`) and the scratch space of :func:`encode`."""
    return (*encoder_layout(encoder), np.zeros(encoder.size, dtype=np.int64))


@kernel
def observe(s: Any, me: int, live: bool, layout: Any, scale: Any, score_scale: float, counts: Any, obs: Any,
            mask: Any) -> None:
    """``me``'s observation into ``obs`` (:func:`encode`) and its action mask into ``mask``:
    the legal set when ``me`` is to act in a game that goes on (``live``: not ended by an
    illegal action), else zeros."""
    encode(s, me, layout, scale, score_scale, counts, obs)
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
    """Any position of the Python engine as a row (:func:`pack`), whatever its seed: a seed
    beyond 64 signed bits is held as the one it equals modulo 2**64, which rolls the same
    dice (:func:`~keltis_env.games.dice.state.dice_key`)."""
    if -(1 << 63) <= state.seed < 1 << 63:
        return pack(state)
    same_dice = state.clone()
    same_dice.seed = _signed(state.seed & ((1 << 64) - 1))
    return pack(same_dice)


def from_row(s: np.ndarray, start: GameState) -> GameState:
    """The Python state of row ``s``, a game that started from the Python state ``start``
    (its options and its seed, which the row may hold modulo 2**64)."""
    state = unpack(s, start.config)
    if state.seed != start.seed:
        state.seed, state.key = start.seed, start.key
    return state


__all__ = [
    "STATE_SIZE",
    "advance",
    "apply",
    "encode",
    "encoder_layout",
    "from_row",
    "legal_mask",
    "observe",
    "observer_args",
    "pack",
    "roll_all",
    "score",
    "scores",
    "step",
    "to_row",
    "unpack",
]
