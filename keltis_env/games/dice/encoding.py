"""Dice-game view -> flat observation vector and action mask (numpy), docs/rules.md R11.

The layout is one ordered list of named segments (:func:`observation_segments`, built
with the shared :func:`keltis_env.core.segments.build_segments`); index ranges are derived
from it and the documentation's table is generated from it (:func:`observation_table`).

Seats are relative to the observer: ``p0.*`` is the observing player, ``p1.*`` the next
player in turn order, and so on. Every value lies in ``[0, 1]`` except ``p*.score``
(the score / 50, in ``[-0.52, 1]``). The encoder reads only the fields of a
:class:`~keltis_env.games.dice.view.PlayerView` (or the zero-copy ``LiveView``), which
hold everything but the future dice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from keltis_env.core.rewards import SCORE_SCALE
from keltis_env.core.segments import Segment, SegmentEncoder, build_segments, segments_table
from keltis_env.games.dice.actions import NUM_ACTIONS
from keltis_env.games.dice.constants import (
    BONUS_NAMES,
    FACE_NAMES,
    MARKERS_PER_PLAYER,
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    STONE_SCORES,
    TOP_ROW,
    UPPER_MARKERS_TO_END,
)
from keltis_env.games.dice.state import Phase

_STONE_LEVELS = len(STONE_SCORES)  # 0..8, 9+
_NUM_SYMBOLS = len(BONUS_NAMES)
_ROWS = TOP_ROW + 1  # rows 0 (no marker) .. 9
_FACES = ", ".join(FACE_NAMES)


def observation_segments(num_players: int) -> list[Segment]:
    """The observation layout for ``num_players`` players, in order."""
    spec: list[tuple[str, int, str]] = [
        ("dice", NUM_DICE * NUM_FACES, f"face of dice 1..5 (sorted, as actions number them): one-hot {_FACES}"),
        ("face_counts", NUM_FACES, f"dice showing each face ({_FACES}) / {NUM_DICE}"),
        ("phase", 3, "step of the turn: one-hot reroll, move, bonus (all zero when the game is over)"),
        ("extra_turn", 1, "1 if the current turn is an extra turn"),
        ("bonus_squares", NUM_COLORS * TOP_ROW * _NUM_SYMBOLS,
         "bonus symbol on each column (5) and row 1..9: one-hot stone, clover, extra"),
    ]
    for i in range(num_players):
        spec += [
            (f"p{i}.marker", NUM_COLORS * _ROWS, f"p{i}'s marker row per column: one-hot, row 0 = no marker"),
            (f"p{i}.markers", MARKERS_PER_PLAYER + 1, f"p{i}'s markers on the board: one-hot 0..4"),
            (f"p{i}.stones", _STONE_LEVELS, f"p{i}'s stones: one-hot 0..8, 9+"),
            (f"p{i}.upper", 1, f"p{i}'s markers in the upper zone (rows 7..9) / {MARKERS_PER_PLAYER}"),
            (f"p{i}.to_act", 1, f"1 if p{i} makes the current decision"),
            (f"p{i}.score", 1, f"p{i}'s score if the game ended now / {SCORE_SCALE:g}"),
        ]
    end = UPPER_MARKERS_TO_END[num_players]
    spec += [
        ("upper_count", 1, f"markers of all players in the upper zone / {end} (the count that ends the game)"),
        ("turn", 1, "turns played / max_turns"),
    ]
    return build_segments(spec)


def observation_table(num_players: int = 2) -> str:
    """The observation layout as a Markdown table (the documentation quotes this)."""
    return segments_table(observation_segments(num_players))


class DiceObservationEncoder(SegmentEncoder):
    """Encodes views of a ``num_players`` dice game into float32 vectors and int8 masks."""

    #: ``p*.score`` is the score divided by this
    score_scale = SCORE_SCALE

    def __init__(self, num_players: int) -> None:
        super().__init__(num_players, observation_segments(num_players))
        ix = self.index
        n = num_players
        self._dice = ix["dice"].start
        self._counts = ix["face_counts"].start
        self._phase = ix["phase"].start
        self._extra = ix["extra_turn"].start
        self._bonus = ix["bonus_squares"].start
        # start of each column's one-hot row block, per relative seat
        self._marker = [tuple(ix[f"p{i}.marker"].start + c * _ROWS for c in range(NUM_COLORS)) for i in range(n)]
        self._markers = [ix[f"p{i}.markers"].start for i in range(n)]
        self._stones = [ix[f"p{i}.stones"].start for i in range(n)]
        self._upper = [ix[f"p{i}.upper"].start for i in range(n)]
        self._act = [ix[f"p{i}.to_act"].start for i in range(n)]
        self._score = [ix[f"p{i}.score"].start for i in range(n)]
        self._upper_count = ix["upper_count"].start
        self._turn = ix["turn"].start
        # an index array: a list would be converted on every write
        self._scalar_columns = np.array([self._turn, *self._score], dtype=np.intp)
        # Every entry is a small count (one-hots count 1) times its scale.
        scale = np.ones(self.size, dtype=np.float32)
        scale[ix["face_counts"].slice] = 1.0 / NUM_DICE
        for i in range(n):
            scale[self._upper[i]] = 1.0 / MARKERS_PER_PLAYER
        scale[self._upper_count] = 1.0 / UPPER_MARKERS_TO_END[n]
        self._scale = scale
        # The bonus layout never changes during a game: the counts it sets are cached as
        # a template per board (the cache holds the board, so its identity stays valid).
        self._template: tuple[Any, bytes] = (None, b"")
        self._masks: dict[tuple[int, ...], np.ndarray] = {}
        self._dice_patches: dict[tuple[int, ...], bytes] = {}
        assert self._counts == self._dice + NUM_DICE * NUM_FACES  # adjacent: one patch writes both

    def _board_template(self, board: Any) -> bytes:
        cached_board, template = self._template
        if cached_board is board:
            return template
        counts = bytearray(self.size)
        base = self._bonus - 1  # symbol codes start at 1
        for c, column in enumerate(board):
            for r, code in enumerate(column):
                if code:
                    counts[base + (c * TOP_ROW + r - 1) * _NUM_SYMBOLS + code] = 1
        template = bytes(counts)
        self._template = (board, template)
        return template

    def _dice_patch(self, dice: Any) -> bytes:
        """The bytes of the ``dice`` and ``face_counts`` segments (adjacent) for ``dice``."""
        patch = bytearray(NUM_DICE * NUM_FACES + NUM_FACES)
        for i, f in enumerate(dice):
            patch[i * NUM_FACES + f] = 1
            patch[NUM_DICE * NUM_FACES + f] += 1
        result = bytes(patch)
        self._dice_patches[tuple(dice)] = result  # at most 252 sorted rolls
        return result

    def _write_counts(self, view: Any, counts: bytearray | memoryview) -> None:
        """Write ``view``'s counts (one byte per entry, before scaling) into ``counts``,
        which holds zeros or this game's board template."""
        n = self.num_players
        me = view.player
        dice = view.dice
        patch = self._dice_patches.get(dice)
        if patch is None:
            patch = self._dice_patch(dice)
        counts[self._dice : self._counts + NUM_FACES] = patch
        phase = view.phase
        if phase != Phase.OVER:
            counts[self._phase + phase] = 1
            actor = view.current_player
        else:
            actor = -1
        if view.extra_turn:
            counts[self._extra] = 1
        positions = view.positions
        markers = view.markers
        stones = view.stones
        upper = view.upper
        for i in range(n):
            p = (me + i) % n
            for start, row in zip(self._marker[i], positions[p], strict=True):
                counts[start + row] = 1
            counts[self._markers[i] + markers[p]] = 1
            s = stones[p]
            counts[self._stones[i] + (s if s < _STONE_LEVELS else _STONE_LEVELS - 1)] = 1
            counts[self._upper[i]] = upper[p]
            if p == actor:
                counts[self._act[i]] = 1
        counts[self._upper_count] = view.upper_total

    def _scalars(self, view: Any) -> list[float]:
        """The values that are not counts, in the order of ``_scalar_columns``: the turn,
        then each relative seat's score."""
        n = self.num_players
        me = view.player
        scores = view.scores
        return [view.turn / view.config.max_turns, *(scores[(me + i) % n] / SCORE_SCALE for i in range(n))]

    def encode(self, view: Any) -> np.ndarray:
        """The observation vector of ``view`` (a PlayerView or LiveView)."""
        # The counts are written into a byte buffer (every count is below 256), then
        # turned into floats and scaled by one vectorised multiply: per-element numpy
        # writes would cost more than the whole encoding.
        counts = bytearray(self._board_template(view.bonus))
        self._write_counts(view, counts)
        obs = np.frombuffer(counts, dtype=np.uint8) * self._scale  # uint8 * float32 -> a new float32 array
        obs[self._scalar_columns] = self._scalars(view)
        return obs

    def encode_into(self, views: Sequence[Any], out: np.ndarray, encoders: Sequence[Any] | None = None) -> None:
        """Encode ``views`` into the rows of ``out`` (float32, ``(len(views), size)``): the
        values of :meth:`encode`, with one numpy pass for all of them. ``encoders`` (one per
        view; default this one) hold their own caches of the game's board, so a batch of
        views from many games should pass each game's encoder."""
        n = len(views)
        if not n:
            return
        size = self.size
        counts = bytearray(n * size)
        window = memoryview(counts)
        for k, view in enumerate(views):
            encoder = self if encoders is None else encoders[k]
            row = window[k * size : (k + 1) * size]
            row[:] = encoder._board_template(view.bonus)
            encoder._write_counts(view, row)
        np.multiply(np.frombuffer(counts, dtype=np.uint8).reshape(n, size), self._scale, out=out)
        out[:, self._scalar_columns] = [self._scalars(view) for view in views]

    def mask(self, legal_actions: Any) -> np.ndarray:
        """An int8 vector over all action ids: 1 for the legal ones (a fresh array)."""
        key = tuple(legal_actions)
        cached = self._masks.get(key)
        if cached is None:
            cached = np.zeros(NUM_ACTIONS, dtype=np.int8)
            if key:
                cached[list(key)] = 1
            self._masks[key] = cached
        return cached.copy()


__all__ = ["DiceObservationEncoder", "observation_segments", "observation_table"]
