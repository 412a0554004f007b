"""Per-player view -> flat observation vector and action mask (numpy).

The observation layout is one ordered list of named :class:`Segment` s, built by
:func:`observation_segments`; every index range is derived from that list, and the
documentation's observation table is generated from it (:func:`observation_table`).

Seats are relative to the observer: segment ``p0.*`` is the observing player, ``p1.*``
the next player in turn order, and so on (as in the Hanabi Learning Environment). All
values lie in ``[0, 1]`` except ``p*.score``, which is the score divided by 50.

The encoder reads only the fields of a :class:`~keltis_env.games.keltis.view.PlayerView` (or a
zero-copy :class:`~keltis_env.games.keltis.view.LiveView` with the same fields), so an
observation can never hold a card hidden from its player (R10).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import add
from typing import Any

import numpy as np

from keltis_env.core.features import Feature
from keltis_env.core.segments import Segment, SegmentEncoder, build_segments, segments_table
from keltis_env.games.keltis.actions import NUM_ACTIONS
from keltis_env.games.keltis.constants import (
    END_ROW,
    FIGURES_PER_PLAYER,
    GOAL_FIGURES_TO_END,
    HAND_SIZE,
    MAX_TILE_POINTS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    REMOVED_CARDS,
    TILE_NAMES,
    WISHING_SCORES,
)
from keltis_env.games.keltis.state import Phase

SCORE_SCALE = 50.0
_NUM_TILE_TYPES = len(TILE_NAMES)
_WISHING_LEVELS = len(WISHING_SCORES)  # 0, 1, 2, 3, 4, 5+ stones
_FIGURE_OFFSETS = tuple(c * (END_ROW + 1) for c in range(NUM_COLORS))
_MAX_PILE = NUM_CARDS // NUM_COLORS  # 22 cards of a colour
_COPIES = "copies of each card kind (red 0..10, yellow 0..10, ...) / 2"


def observation_segments(num_players: int) -> list[Segment]:
    """The observation layout for ``num_players`` players, in order."""
    spec: list[tuple[str, int, str]] = [
        # Counts first (cards, pile sizes): one bincount fills them all (see encode).
        ("hand", NUM_CARD_KINDS, f"own hand: {_COPIES}"),
        ("discards", NUM_CARD_KINDS, f"all discard piles, buried cards included: {_COPIES}"),
    ]
    spec += [(f"p{i}.played", NUM_CARD_KINDS, f"cards in player p{i}'s rows: {_COPIES}") for i in range(num_players)]
    spec += [
        ("discard_sizes", NUM_COLORS, f"size of each discard pile / {_MAX_PILE}"),
        ("unseen", NUM_CARD_KINDS, f"cards hidden from the observer (other hands, draw pile, removed): {_COPIES}"),
        ("discard_top", NUM_COLORS * NUM_VALUES, "top card of each discard pile: one-hot value per colour"),
        ("phase", 3, "step of the turn: one-hot play, draw, bonus (all zero when the game is over)"),
        ("closed_pile", NUM_COLORS, "colour discarded onto this turn, closed for this draw (R3b): one-hot"),
        ("tiles", NUM_COLORS * END_ROW * _NUM_TILE_TYPES,
         "tile on each path (5) and row 1..9: one-hot wish, clover, points1, points2, points3"),
    ]
    for i in range(num_players):
        spec += [
            (f"p{i}.last", NUM_COLORS * NUM_VALUES, f"p{i}'s last card value per colour: one-hot (none if no card)"),
            (f"p{i}.direction", NUM_COLORS * 2, f"p{i}'s row direction per colour: ascending, descending flags (R4)"),
            (f"p{i}.figure", NUM_COLORS * (END_ROW + 1), f"p{i}'s figure row per path: one-hot, row 0 = no figure"),
            (f"p{i}.large", NUM_COLORS + 1, f"p{i}'s large figure: one-hot start stone, then path red..pink"),
            (f"p{i}.wishing", _WISHING_LEVELS, f"p{i}'s wishing stones: one-hot 0, 1, 2, 3, 4, 5+"),
            (f"p{i}.to_act", 1, f"1 if p{i} makes the current decision"),
        ]
    spec += [
        ("draw_pile", 1, "cards left in the draw pile / cards in it after the deal"),
        ("goal_count", 1, f"figures of all players in the goal area / {GOAL_FIGURES_TO_END}"),
        ("turn", 1, "turns played / max_turns"),
    ]
    for i in range(num_players):
        spec += [
            (f"p{i}.tile_points", 1, f"p{i}'s points from point tiles / {MAX_TILE_POINTS}"),
            (f"p{i}.score", 1, f"p{i}'s score if the game ended now / {SCORE_SCALE:g}"),
        ]
    return build_segments(spec)


def observation_table(num_players: int = 2) -> str:
    """The observation layout as a Markdown table (the documentation quotes this)."""
    return segments_table(observation_segments(num_players))


class ObservationEncoder(SegmentEncoder):
    """Encodes views of a ``num_players`` game into float32 vectors and int8 masks."""

    #: ``p*.score`` is the score divided by this
    score_scale = SCORE_SCALE

    def __init__(self, num_players: int) -> None:
        super().__init__(num_players, observation_segments(num_players))
        ix = self.index
        n = num_players
        self._count_end = ix["unseen"].start
        self._discards = ix["discards"].start
        self._played = [ix[f"p{i}.played"].start for i in range(n)]
        self._dsizes = ix["discard_sizes"].start
        self._seen_end = ix[f"p{n - 1}.played"].stop
        assert self._seen_end == NUM_CARD_KINDS * (n + 2) and ix["discards"].start == NUM_CARD_KINDS
        self._unseen = ix["unseen"].start
        self._top = ix["discard_top"].start
        self._phase = ix["phase"].start
        self._closed = ix["closed_pile"].start
        self._tiles = ix["tiles"].start
        self._last = [ix[f"p{i}.last"].start for i in range(n)]
        self._dir = [ix[f"p{i}.direction"].start for i in range(n)]
        self._fig_offsets = [tuple(ix[f"p{i}.figure"].start + o for o in _FIGURE_OFFSETS) for i in range(n)]
        self._large = [ix[f"p{i}.large"].start for i in range(n)]
        self._wish = [ix[f"p{i}.wishing"].start for i in range(n)]
        self._act = [ix[f"p{i}.to_act"].start for i in range(n)]
        self._draw = ix["draw_pile"].start
        self._goal = ix["goal_count"].start
        self._turn = ix["turn"].start
        self._tp = [ix[f"p{i}.tile_points"].start for i in range(n)]
        self._score = [ix[f"p{i}.score"].start for i in range(n)]
        self._deck_after_deal = NUM_CARDS - REMOVED_CARDS[n] - HAND_SIZE * n
        self._scalar_columns = [self._draw, self._goal, self._turn, *self._tp, *self._score]
        # The vector is counted * scale + offset, from one bincount. Scale of each count:
        # 1/2 per card copy, 1/22 per card in a pile, 1 for a one-hot. The unseen segment
        # counts every copy seen (each card of the hand, the discards and the rows is listed
        # there too), so that unseen = 1 - seen / 2 is the same product and sum.
        scale = np.ones(self.size, dtype=np.float32)
        scale[: self._count_end] = 0.5
        scale[self._dsizes : self._dsizes + NUM_COLORS] = 1.0 / _MAX_PILE
        scale[self._unseen : self._unseen + NUM_CARD_KINDS] = -0.5
        self._scale = scale
        self._offset = np.zeros(self.size, dtype=np.float32)
        self._offset[self._unseen : self._unseen + NUM_CARD_KINDS] = 1.0
        # Tiles change only when a wishing stone is taken (R6): their one-hot indices are
        # cached per tiles object and number of stones taken. The cache holds the object,
        # so its identity cannot be reused by another while cached.
        self._tile_cache: tuple[Any, int, list[int]] = (None, -1, [])
        # Rows only ever grow (R3a), so a player's rows object and its number of cards
        # identify its row indices; cached per (relative seat, absolute seat).
        self._rows_cache: list[list[tuple[Any, int, list[int]]]] = [[(None, -1, [])] * n for _ in range(n)]
        assert FIGURES_PER_PLAYER == NUM_COLORS  # a figure for every path

    def _tile_ones(self, view: Any) -> list[int]:
        tiles = view.tiles
        taken = sum(view.wishing)
        cached_tiles, cached_taken, cached = self._tile_cache
        if cached_tiles is tiles and cached_taken == taken:
            return cached
        ones: list[int] = []
        tile_base = self._tiles - 1  # tile codes start at 1
        for c, dark in enumerate(view.dark_rows):
            column = tiles[c]
            for r in (*dark, END_ROW):
                t = column[r]
                if t:
                    ones.append(tile_base + (c * END_ROW + r - 1) * _NUM_TILE_TYPES + t)
        self._tile_cache = (tiles, taken, ones)
        return ones

    def _row_indices(self, i: int, player_rows: Any, directions: Any) -> list[int]:
        """Indices of relative seat ``i``'s played cards, last values and directions."""
        out: list[int] = []
        played = self._played[i]
        last = self._last[i]
        direction = self._dir[i]
        unseen = self._unseen
        for c, row in enumerate(player_rows):
            if row:
                base = played + c * NUM_VALUES
                out += map(base.__add__, row)
                out += map((unseen + c * NUM_VALUES).__add__, row)
                out.append(last + c * NUM_VALUES + row[-1])
                d = directions[c]
                if d:
                    out.append(direction + 2 * c + (0 if d > 0 else 1))
        return out

    def encode(self, view: Any) -> np.ndarray:
        """The observation vector of ``view`` (a PlayerView or LiveView)."""
        counted = np.bincount(np.array(self._indices(view), dtype=np.int64), minlength=self.size)
        obs = np.multiply(counted, self._scale, dtype=np.float32)
        obs += self._offset
        obs[self._draw] = view.deck_size / self._deck_after_deal
        obs[self._goal] = view.goal_count / GOAL_FIGURES_TO_END
        obs[self._turn] = view.turn / view.config.max_turns
        scores = view.scores
        tile_points = view.tile_points
        n = self.num_players
        me = view.player
        for i in range(n):
            p = (me + i) % n
            obs[self._tp[i]] = tile_points[p] / MAX_TILE_POINTS
            obs[self._score[i]] = scores[p] / SCORE_SCALE
        return obs

    def encode_into(self, views: Sequence[Any], out: np.ndarray, encoders: Sequence[Any] | None = None) -> None:
        """Encode ``views`` into the rows of ``out`` (float32, ``(len(views), size)``): the
        values of :meth:`encode`, with one numpy pass for all of them. ``encoders`` (one per
        view; default this one) hold their own caches of what changes slowly in a game, so
        a batch of views from many games should pass each game's encoder."""
        n = len(views)
        if not n:
            return
        size = self.size
        idx = array("q")
        lengths = []
        for k, view in enumerate(views):
            ones = (self if encoders is None else encoders[k])._indices(view)
            idx.extend(ones)
            lengths.append(len(ones))
        flat = np.frombuffer(idx, dtype=np.int64) + np.repeat(np.arange(n, dtype=np.int64) * size, lengths)
        counted = np.bincount(flat, minlength=n * size).reshape(n, size)
        np.multiply(counted, self._scale, out=out, dtype=np.float32)
        out += self._offset
        out[:, self._scalar_columns] = [self._scalars(view) for view in views]

    def _scalars(self, view: Any) -> list[float]:
        """The values that are not counts, in the order of ``_scalar_columns``: pile size,
        goal count, turn, then each relative seat's tile points and score."""
        n = self.num_players
        me = view.player
        scores = view.scores
        tile_points = view.tile_points
        seats = [(me + i) % n for i in range(n)]
        return [view.deck_size / self._deck_after_deal, view.goal_count / GOAL_FIGURES_TO_END,
                view.turn / view.config.max_turns, *(tile_points[p] / MAX_TILE_POINTS for p in seats),
                *(scores[p] / SCORE_SCALE for p in seats)]

    def _indices(self, view: Any) -> list[int]:
        """Every count and one-hot index of ``view``'s observation, as a list of positions
        (a position listed k times counts k)."""
        n = self.num_players
        me = view.player
        # Every count (card copies, pile sizes) and every one-hot index goes into one
        # index list, turned into the vector by a single bincount: per-element numpy
        # writes would cost more than the whole encoding.
        hand = view.hand
        unseen = self._unseen
        idx = list(hand)
        idx += map(unseen.__add__, hand)
        idx += self._tile_ones(view)
        top_base = self._top
        dsizes = self._dsizes
        for c, pile in enumerate(view.discards):
            if pile:
                idx += map((self._discards + c * NUM_VALUES).__add__, pile)
                idx += map((unseen + c * NUM_VALUES).__add__, pile)
                idx += [dsizes + c] * len(pile)
                idx.append(top_base + c * NUM_VALUES + pile[-1])
        all_rows = view.rows
        all_directions = view.directions
        positions = view.positions
        large = view.large
        wishing = view.wishing
        phase = view.phase
        actor = view.current_player if phase != Phase.OVER else -1
        rows_cache = self._rows_cache
        for i in range(n):
            p = (me + i) % n
            player_rows = all_rows[p]
            cards = sum(map(len, player_rows))
            cached = rows_cache[i][p]
            if cached[0] is player_rows and cached[1] == cards:
                idx += cached[2]
            else:
                row_idx = self._row_indices(i, player_rows, all_directions[p])
                rows_cache[i][p] = (player_rows, cards, row_idx)
                idx += row_idx
            idx += map(add, self._fig_offsets[i], positions[p])
            idx.append(self._large[i] + large[p] + 1)
            w = wishing[p]
            idx.append(self._wish[i] + (w if w < _WISHING_LEVELS else _WISHING_LEVELS - 1))
            if p == actor:
                idx.append(self._act[i])
        if phase != Phase.OVER:
            idx.append(self._phase + phase)
        if view.discarded_color >= 0:
            idx.append(self._closed + view.discarded_color)
        return idx

    @staticmethod
    def mask(legal_actions: Any) -> np.ndarray:
        """An int8 vector over all action ids: 1 for the legal ones."""
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        if legal_actions:
            mask[list(legal_actions)] = 1
        return mask


#: a plan value this many points below the best action's is encoded as 0 (``plan`` feature)
PLAN_SCALE = 8.0


def fill_plan(view: Any, row: np.ndarray) -> None:
    """Write the ``plan`` feature of ``view`` into ``row`` (see :func:`plan_feature`); a module
    function, so that an encoder with the feature pickles."""
    from keltis_env.games.keltis.bots.planner import action_values, choose

    if view.phase == Phase.OVER or view.current_player != view.player or not view.legal_actions:
        return
    values = action_values(view)
    best = max(v for _, v in values)
    for a, v in values:
        row[a] = max(0.0, 1.0 + (v - best) / PLAN_SCALE)
    row[NUM_ACTIONS + choose(values)] = 1.0


def plan_feature(num_players: int) -> Feature:
    """The ``plan`` observation feature (:mod:`keltis_env.core.features`): the plan model's
    value of each legal action (``planner``'s :func:`~keltis_env.games.keltis.bots.planner.action_values`,
    read from the same view) and its choice (:func:`fill_plan`). Zero where the view's player is not to act."""
    return Feature("plan", (
        ("plan.values", NUM_ACTIONS,
         f"plan model's value of each legal action: 1 + (value - best) / {PLAN_SCALE:g}, at least 0 (0 if illegal)"),
        ("plan.choice", NUM_ACTIONS, "plan model's choice (the planner bot's move): one-hot"),
    ), fill_plan)


def row_accepts(last: int, direction: int, value: int) -> bool:
    """Whether a row whose last card is ``last`` (-1: no card) and whose direction is
    ``direction`` (+1, -1, 0 open) takes a card of ``value`` now (R4)."""
    return last < 0 or direction == 0 or (value >= last if direction > 0 else value <= last)


def row_cut(last: int, direction: int, value: int) -> tuple[int, int]:
    """The values (a range ``lo..hi - 1``) that a row (``last``, ``direction``) takes now and
    would no longer take once a card of ``value`` (which it takes) is put on it (R4)."""
    if last < 0 or value == last:
        return 0, 0  # a first card, or the same value: the row takes what it took
    if value > last:  # the row goes (or goes on) up: every value below the new card is lost
        return (0 if direction == 0 else last), value
    return value + 1, (NUM_VALUES if direction == 0 else last + 1)


def fill_rows(view: Any, row: np.ndarray) -> None:
    """Write the ``rows`` feature of ``view`` into ``row`` (see :func:`rows_feature`): every
    value is a function of the observation's rows, directions and card counts."""
    n = len(view.rows)
    me = view.player
    free = [[2] * NUM_VALUES for _ in range(NUM_COLORS)]  # copies of each card in no row
    for rows in view.rows:
        for c, cards in enumerate(rows):
            for v in cards:
                free[c][v] -= 1
    kinds = NUM_CARD_KINDS
    for i in range(n):
        p = (me + i) % n
        for c, cards in enumerate(view.rows[p]):
            last = cards[-1] if cards else -1
            d = view.directions[p][c]
            for v in range(NUM_VALUES):
                if not row_accepts(last, d, v):
                    continue
                k = c * NUM_VALUES + v
                if i:
                    row[2 * kinds + k] += 1.0 / (n - 1)
                    continue
                row[k] = 1.0
                lo, hi = row_cut(last, d, v)
                row[kinds + k] = sum(free[c][lo:hi]) / _MAX_PILE


def rows_feature(num_players: int) -> Feature:
    """The ``rows`` observation feature (:mod:`keltis_env.core.features`): for every card, what
    putting it on a row would do (R4), spelled out from the observation's rows (:func:`fill_rows`).
    It adds no information to the observation (every value is a function of its ``p*.last``,
    ``p*.direction`` and ``p*.played`` segments), only the form: no model, no bot."""
    return Feature("rows", (
        ("rows.fits", NUM_CARD_KINDS, "1 if the observer's row of the card's colour takes the card now (R4)"),
        ("rows.cuts", NUM_CARD_KINDS,
         f"copies in no row of the values that row takes now and would no longer take after the card / {_MAX_PILE} "
         "(0 where it does not take the card)"),
        ("rows.others", NUM_CARD_KINDS, "share of the other players whose row of the card's colour takes it now"),
    ), fill_rows)


class PrivilegedEncoder:
    """What a seat does not see, for a critic that reads it in training only (the actor
    never does; :mod:`training.common.critic`): the other seats' hands, in turn order from the
    seat (blocks ``p1.hand``, ``p2.hand``, ...), then the cards removed from the game
    (2 players; zeros otherwise), each block as ``copies of each card kind / 2``. It reads the
    game's *state*, never a view: nothing an environment hands a seat goes through it."""

    def __init__(self, num_players: int) -> None:
        self.num_players = num_players
        #: values per position: one block of card kinds per other seat and one removed block
        self.size = num_players * NUM_CARD_KINDS

    def encode(self, state: Any, seat: int, out: np.ndarray) -> None:
        """The block of ``seat`` in ``state`` into ``out`` (``size`` values)."""
        n, k = self.num_players, NUM_CARD_KINDS
        out[:self.size] = 0.0
        for i in range(1, n):
            for kind in state.hands[(seat + i) % n]:
                out[(i - 1) * k + kind] += 0.5
        for kind in state.removed:
            out[(n - 1) * k + kind] += 0.5


__all__ = [
    "PLAN_SCALE",
    "ObservationEncoder",
    "PrivilegedEncoder",
    "fill_plan",
    "observation_segments",
    "observation_table",
    "plan_feature",
    "row_accepts",
    "row_cut",
    "rows_feature",
]
