"""The card game's plan model: one player's position valued in points (docs/rules.md R4-R10).

For one player, from what that player may know (R10):

* **Time left.** The player's remaining turns (one card played per turn) until the draw
  pile runs out (R8.2), cut short when the figures near the goal area make an early end
  likely (R8.1).
* **Supply per colour.** The hand's cards that fit the row (R4; a colour not begun takes
  all its cards, a row whose direction is open takes the better direction) plus the
  expected number of fitting cards still to be drawn, counted from the cards not seen
  yet (``draw_fit`` of them get played). Playing a card far from the row's last one
  loses the unseen cards in between: that is how the model keeps the range.
* **Worth of each stone.** Its row-value step (-4, +1, +1, +3, +1, +1, +3, +1, +3;
  doubled for the large figure) plus its tile: a wishing stone on the uneven scale of
  R9 (0 and 1 stones cost -4 and -3, the second one is worth 5), a clover (one free
  step), or its points. Cards beyond the end stone give bonus steps (R5).
* **The price of a turn.** Turns are scarce, so each path's plan is "play ``k`` more
  cards there" with ``k`` chosen to maximise its gain minus ``lam * k``, where the price
  ``lam`` (at least ``min_price``) is the smallest one at which all the plans fit into
  the turns left (a Lagrange multiplier of the time constraint). A path is worth
  opening only when its supply carries it out of the minus area at that price; the
  large figure is worth keeping for the path where doubling gains most.

:class:`Planner` holds that plan; :mod:`.planner` turns it into action values and the
``planner`` bot, :mod:`.ismcts` searches with it.
"""

from __future__ import annotations

from math import inf
from typing import Any

from keltis_env.games.keltis.constants import (
    CLOVER,
    COPIES_PER_CARD,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    LARGE_MULTIPLIER,
    NUM_COLORS,
    NUM_VALUES,
    ROW_VALUES,
    TILE_POINTS,
    WISHING_SCORES,
    WISHING_STONE,
)
from keltis_env.games.keltis.state import Phase

#: Score step of each stone: _STEP[r] = ROW_VALUES[r] - ROW_VALUES[r - 1] (index 0 unused).
_STEP = (0, *(ROW_VALUES[r] - ROW_VALUES[r - 1] for r in range(1, END_ROW + 1)))
#: Worth of one more wishing stone when holding w: the next two stones' gains averaged,
#: since the second stone is the big one (-3 -> +2).
_WISH_NEXT = tuple(
    (
        (WISHING_SCORES[min(w + 1, 5)] - WISHING_SCORES[min(w, 5)])
        + (WISHING_SCORES[min(w + 2, 5)] - WISHING_SCORES[min(w + 1, 5)])
    )
    / 2
    for w in range(12)
)
def _wish_curve(stones: float) -> float:
    """R9's wishing-stone score, linear between whole numbers of stones."""
    top = len(WISHING_SCORES) - 1
    if stones >= top:
        return float(WISHING_SCORES[top])
    lo = int(stones)
    return WISHING_SCORES[lo] + (stones - lo) * (WISHING_SCORES[lo + 1] - WISHING_SCORES[lo])


class Weights:
    """The tunable numbers of the plan model (in points of final score, or shares).
    Tuned in self-play: ``min_price`` and ``feed`` matter most."""

    __slots__ = ("bonus", "clover", "draw_fit", "feed", "goal_pace", "large_keep", "min_price", "open_fit")

    def __init__(
        self,
        clover: float = 2.5,
        bonus: float = 2.0,
        draw_fit: float = 0.7,
        open_fit: float = 0.5,
        feed: float = 0.8,
        large_keep: float = 0.8,
        goal_pace: float = 1.0,
        min_price: float = 0.75,
    ) -> None:
        self.clover = clover  # a clover: one free step somewhere
        self.bonus = bonus  # a card beyond the end stone: one bonus step (R5)
        self.draw_fit = draw_fit  # share of the fitting cards still to come that get played
        self.open_fit = open_fit  # share of a colour's unseen cards that fit a row not begun
        self.feed = feed  # weight of what a discard is worth to an opponent
        self.large_keep = large_keep  # weight of keeping the large figure for a later path
        self.goal_pace = goal_pace  # scales the estimate of how soon the goal area fills
        self.min_price = min_price  # least price of a turn (tempo: the end may come sooner)


#: Entries past the end stone in a path's gains: one per card of the game, more than any supply.
_BEYOND_END = NUM_COLORS * NUM_VALUES * COPIES_PER_CARD + 1

_GAINS_CACHE: dict[tuple[Any, ...], tuple[list[float], list[float]]] = {}


def unseen_pool(view: Any, hand: Any = None) -> tuple[list[list[int]], list[list[int]], list[list[int]], int]:
    """The cards a player has not seen (R10): all copies minus own hand, every row and
    every discard pile. Returns (counts, prefix, suffix, total) where ``counts[c][v]`` is
    the number of unseen cards of colour ``c`` and value ``v``, ``prefix[c][v]`` those
    of value <= v and ``suffix[c][v]`` those of value >= v."""
    hand = view.hand if hand is None else hand
    unseen = [[COPIES_PER_CARD] * NUM_VALUES for _ in range(NUM_COLORS)]
    for k in hand:
        unseen[k // NUM_VALUES][k % NUM_VALUES] -= 1
    for pr in view.rows:
        for c in range(NUM_COLORS):
            u = unseen[c]
            for v in pr[c]:
                u[v] -= 1
    for c, pile in enumerate(view.discards):
        u = unseen[c]
        for v in pile:
            u[v] -= 1
    prefix = []
    suffix = []
    total = 0
    for u in unseen:
        pre = []
        acc = 0
        for x in u:
            acc += x
            pre.append(acc)
        prefix.append(pre)
        suffix.append([acc - (pre[v - 1] if v else 0) for v in range(NUM_VALUES)])
        total += acc
    return unseen, prefix, suffix, total


class Planner:
    """One player's plan in one position: time left, per-colour supply and values.

    Built from a view-like object (``PlayerView`` or ``LiveView``) of ``player``; all
    values are in points of that player's final score. The search passes ``lam`` (turn
    price), ``goal_turn`` (absolute turn of the expected goal-area end) and ``pool``
    (:func:`unseen_pool`) fixed at its root, so that positions met later are valued on
    the same scale; ``hand`` replaces the view's hand.
    """

    __slots__ = (
        "_large_gains",
        "deck",
        "dirs",
        "draw_rate",
        "gains",
        "gains_large",
        "goal_turn",
        "hand_vals",
        "lam",
        "large",
        "lasts",
        "n",
        "player",
        "plays",
        "pos",
        "prefix",
        "suffix",
        "unseen",
        "view",
        "w",
        "wish_value",
    )

    def __init__(
        self,
        view: Any,
        player: int,
        weights: Weights,
        hand: Any = None,
        lam: float | None = None,
        goal_turn: float | None = None,
        pool: tuple[Any, ...] | None = None,
    ) -> None:
        w = self.w = weights
        self.view = view
        self.player = player
        self.n = view.num_players
        hand = view.hand if hand is None else hand
        hand_vals: list[list[int]] = [[], [], [], [], []]
        for k in hand:
            hand_vals[k // NUM_VALUES].append(k % NUM_VALUES)
        self.hand_vals = hand_vals
        if pool is None:
            pool = unseen_pool(view, hand)
        self.unseen, self.prefix, self.suffix, total_unseen = pool
        rows = view.rows
        self.pos = view.positions[player]
        self.lasts = [r[-1] if r else -1 for r in rows[player]]
        self.dirs = view.directions[player]
        self.large = view.large[player]
        self.deck = view.deck_size
        # Time left (R8): plays this player still makes, draws that can still be played.
        if goal_turn is None:
            goal_turn = view.turn + _goal_end_turn(view, w.goal_pace)
        self.goal_turn = goal_turn
        plays, draws = _time_left(view, player, goal_turn - view.turn)
        self.plays = plays
        self.draw_rate = draws * w.draw_fit / total_unseen if total_unseen else 0.0
        # Per-stone gains of each path, with the small and with the large figure.
        self.wish_value = wish_value = _WISH_NEXT[min(view.wishing[player], 11)]
        self.gains = []
        self.gains_large = []
        for tc in view.tiles:
            key = (tuple(tc), wish_value, w.clover, w.bonus)
            pair = _GAINS_CACHE.get(key)
            if pair is None:
                tile_gain = [self.tile_value(t) if t else 0.0 for t in tc]
                # past the end stone, every card is a bonus step (R5): as many as there are cards
                beyond = [w.bonus] * _BEYOND_END
                pair = (
                    [_STEP[r] + tile_gain[r] for r in range(END_ROW + 1)] + beyond,
                    [_STEP[r] * LARGE_MULTIPLIER + tile_gain[r] for r in range(END_ROW + 1)] + beyond,
                )
                if len(_GAINS_CACHE) > 4096:
                    _GAINS_CACHE.clear()
                _GAINS_CACHE[key] = pair
            self.gains.append(pair[0])
            self.gains_large.append(pair[1])
        self._large_gains: list[float] | None = None
        self.lam = 0.0
        self.lam = self._time_price() if lam is None else lam

    def tile_value(self, tile: int) -> float:
        if tile == WISHING_STONE:
            return self.wish_value
        if tile == CLOVER:
            return self.w.clover
        return float(TILE_POINTS[tile])

    # ------------------------------------------------------------------ one colour
    def supply(self, c: int, vals: list[int], last: int, d: int) -> float:
        """Cards that can still go on colour ``c``: the hand's cards that fit the row (R4)
        plus the expected number of fitting cards still to be drawn. A row whose direction
        is still open takes the better direction; a colour not begun takes all its hand
        cards (they can always be played in order) and the unseen cards beyond them."""
        rate = self.draw_rate
        if last < 0:
            if not vals:
                return rate * self.suffix[c][0] * self.w.open_fit
            up = self.suffix[c][min(vals)]
            down = self.prefix[c][max(vals)]
            return len(vals) + rate * (up if up > down else down)
        # (plain loops: this runs some hundred thousand times a game in a search)
        best = -1.0
        if d >= 0:
            n = 0
            for v in vals:
                if v >= last:
                    n += 1
            best = n + rate * self.suffix[c][last]
        if d <= 0:
            n = 0
            for v in vals:
                if v <= last:
                    n += 1
            down = n + rate * self.prefix[c][last]
            if down > best:
                best = down
        return best

    def plan(self, c: int, row: int, supply: float, large: bool) -> tuple[float, float]:
        """Best ``gain(k) - lam * k`` over the number ``k`` of further cards on path ``c``
        (at most ``supply``), and that plan's gain, starting from figure row ``row``."""
        gains = self.gains_large[c] if large else self.gains[c]
        lam = self.lam
        best = 0.0
        best_gain = 0.0
        cum = 0.0
        k = 0
        r = row
        while k + 1 <= supply:
            r += 1
            cum += gains[r]
            k += 1
            obj = cum - lam * k
            if obj > best:
                best = obj
                best_gain = cum
        frac = supply - k
        if frac > 1e-9:
            r += 1
            part = cum + gains[r] * frac
            obj = part - lam * (k + frac)
            if obj > best:
                best = obj
                best_gain = part
        return best, best_gain

    def colour_value(self, c: int, vals: list[int] | None = None, last: int | None = None, d: int | None = None,
                     row: int | None = None, large: bool | None = None) -> float:
        """The plan value of colour ``c``, optionally after a change (hand, row, figure)."""
        if vals is None:
            vals = self.hand_vals[c]
        if last is None:
            last = self.lasts[c]
        if d is None:
            d = self.dirs[c]
        if row is None:
            row = self.pos[c]
        if large is None:
            large = self.large == c
        return self.plan(c, row, self.supply(c, vals, last, d), large)[0]

    def _time_price(self) -> float:
        """The price of one turn: the smallest ``lam`` at which the plans of all colours
        fit into the plays left (a Lagrange multiplier of the time constraint)."""
        plays = self.plays
        supplies = [self.supply(c, self.hand_vals[c], self.lasts[c], self.dirs[c]) for c in range(NUM_COLORS)]

        def demand(lam: float) -> float:
            self.lam = lam
            total = 0.0
            for c in range(NUM_COLORS):
                total += self._plan_length(c, supplies[c])
            return total

        floor = self.w.min_price
        if demand(floor) <= plays:
            return floor
        lo, hi = floor, 12.0
        for _ in range(10):
            mid = (lo + hi) / 2
            if demand(mid) > plays:
                lo = mid
            else:
                hi = mid
        return hi

    def _plan_length(self, c: int, supply: float) -> float:
        gains = self.gains_large[c] if self.large == c else self.gains[c]
        lam = self.lam
        best = 0.0
        best_k = 0.0
        cum = 0.0
        k = 0
        r = self.pos[c]
        while k + 1 <= supply:
            r += 1
            cum += gains[r]
            k += 1
            if cum - lam * k > best:
                best = cum - lam * k
                best_k = k
        frac = supply - k
        if frac > 1e-9:
            r += 1
            part = cum + gains[r] * frac
            if part - lam * (k + frac) > best:
                best_k = k + frac
        return best_k

    def large_option(self, exclude: int = -1) -> float:
        """What keeping the large figure for a later path is worth (0 once it is placed)."""
        if self.large >= 0:
            return 0.0
        gains = self._large_gains
        if gains is None:
            gains = self._large_gains = [
                0.0 if self.pos[c] else self.colour_value(c, large=True) - self.colour_value(c, large=False)
                for c in range(NUM_COLORS)
            ]
        best = 0.0
        for c in range(NUM_COLORS):
            if c != exclude and gains[c] > best:
                best = gains[c]
        return best * self.w.large_keep

    def value(self) -> float:
        """This player's position as one number: score, plus every colour's plan value
        (gain minus the price of its turns), plus the price of the turns left.

        Used to compare positions reached by different lines of play (search leaves).
        Planned wishing stones are counted on the real, uneven scale (R9: 0 -> -4,
        1 -> -3, 2 -> +2, ...) rather than at the smoothed per-stone worth the plans use,
        so that picking up a planned stone does not change the value.
        """
        total = 0.0
        stones = 0.0
        tiles = self.view.tiles
        for c in range(NUM_COLORS):
            vals = self.hand_vals[c]
            supply = self.supply(c, vals, self.lasts[c], self.dirs[c])
            total += self.plan(c, self.pos[c], supply, self.large == c)[0]
            k = self._plan_length(c, supply)
            if k > 0:
                tc = tiles[c]
                r = self.pos[c]
                while k > 0 and r < END_ROW:
                    r += 1
                    if tc[r] == WISHING_STONE:
                        stones += k if k < 1 else 1.0
                    k -= 1
        wishing = self.view.wishing[self.player]
        total += _wish_curve(wishing + stones) - _wish_curve(wishing) - stones * self.wish_value
        return self.view.scores[self.player] + total + self.large_option() + self.lam * self.plays


def _time_left(view: Any, player: int, goal_turn: float) -> tuple[int, int]:
    """(plays, usable draws) left to ``player``: turns until the pile runs out (R8.2),
    cut short at turn ``goal_turn`` (0 = now) if the goal area is likely to fill first
    (R8.1)."""
    n = view.num_players
    current = view.current_player
    phase = view.phase
    if phase == Phase.OVER:
        return 0, 0
    # Turn i (0 = the current one) draws the (i+1)-th card of the pile if everyone draws
    # from it, so turns 0 .. deck-1 remain.
    last = view.deck_size - 1
    if goal_turn < last:
        last = int(goal_turn)
    first = (player - current) % n
    own_turn_running = first == 0 and phase != Phase.PLAY
    if own_turn_running:
        first = n
    plays = (last - first) // n + 1 if last >= first else 0
    draws = plays if own_turn_running else max(plays - 1, 0)
    return plays, draws


def _goal_end_turn(view: Any, pace: float) -> float:
    """Estimated turn (0 = now) in which the fifth figure enters the goal area (R8.1)."""
    need = GOAL_FIGURES_TO_END - view.goal_count
    n = view.num_players
    current = view.current_player
    arrivals = []
    for q in range(n):
        pos = view.positions[q]
        active = sum(1 for r in pos if 0 < r < GOAL_FIRST_ROW)
        if not active:
            continue
        # A player spreads its plays over its open paths below the goal.
        per_step = (1.0 + 0.6 * (active - 1)) / 0.85 * pace
        offset = (q - current) % n
        for r in pos:
            if 0 < r < GOAL_FIRST_ROW:
                own_turns = (GOAL_FIRST_ROW - r) * per_step
                arrivals.append(offset + (own_turns - 1) * n)
    if len(arrivals) < need:
        return inf
    arrivals.sort()
    return arrivals[need - 1]


__all__ = ["Planner", "Weights", "unseen_pool"]
