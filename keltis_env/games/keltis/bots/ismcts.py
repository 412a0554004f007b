"""Determinized Monte Carlo search at the bot's information set (ISMCTS) for Keltis.

The bot has two parts: a *plan model* that values positions and actions from one
player's view, and a search that samples the hidden cards and looks a few turns ahead
with that model.

Plan model (:class:`Planner`)
-----------------------------
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

An action's value is the change it makes to this plan value: the step and tile it
reaches now, minus what it costs the plans (cards used or thrown away, range lost,
figures spent), minus what a discard is worth to the opponents (``feed``), plus, for
draws, the expected worth of the card taken. A move that ends the game (fifth figure in
the goal area, last card of the draw pile) is worth +/-1000 by whether it wins.
:func:`action_values` gives these values; ``ismcts:iterations=0`` plays the best of them
without searching.

Search (:class:`ISMCTSBot`)
---------------------------
The bot cannot see the other hands, the order of the draw pile or, with 2 players, the
removed cards. Every *iteration* samples a full state consistent with its view
(:func:`~keltis_env.games.keltis.view.sample_state`: the hidden cards dealt at random) and
evaluates candidate actions in that sampled world:

1. **Candidates.** The plan model ranks the legal actions; the best ``top_k`` within
   ``margin`` points of the best are searched (fewer with a small budget: at most one
   per 8 iterations, at least 2). A move that wins the game on the spot is
   taken at once; a decision with a single candidate is not searched.
2. **Rollouts.** In a sampled world each surviving candidate is applied and the game is
   played on by the plan model's greedy policy, for every player (on their sampled
   hands), for ``depth`` rounds of turns (until the searching player is about to play a
   card for the ``depth``-th time), or to the end of the game. All candidates share the
   same sampled world (common random numbers), so their comparison is not blurred by
   the luck of the sample.
3. **Evaluation.** A finished game is worth the searcher's score minus the best other
   score, plus ``win_bonus`` for a win (minus for a loss). An unfinished one is worth
   the difference of the players' plan values (:meth:`Planner.value`), with each
   player's turn price and expected end of the game fixed at the root so that the
   values of different rollouts are comparable.
4. **Selection.** The search runs in stages of ``stage`` sampled worlds; after each
   stage the worse half of the candidates is dropped (successive halving), so most of
   the budget goes to the close calls. The answer is the candidate with the best mean
   value, shrunk towards the plan model's own ranking by ``prior`` pseudo-samples.

Budget: ``iterations`` counts rollouts (one candidate in one sampled world); with it the
bot is deterministic for a given seed. ``seconds`` instead stops at a time limit (not
reproducible). The default, 64 rollouts of 2 rounds, takes about 20-30 ms per searched
decision (at most about 50 ms) on the reference machine (2 shared cores, Python 3.11).

Spec examples: ``ismcts``, ``ismcts:iterations=256``, ``ismcts:seconds=0.1``,
``ismcts:iterations=0`` (plan model only), ``ismcts:iterations=200,depth=1,top_k=8``.
"""

from __future__ import annotations

import time
from math import inf
from typing import Any

from keltis_env.bots.base import Bot
from keltis_env.games.keltis.actions import (
    BONUS_ADVANCE,
    BONUS_OPEN_LARGE,
    BONUS_OPEN_SMALL,
    DISCARD,
    DRAW_DECK,
    DRAW_DISCARD,
    PASS,
    PLAY_LARGE,
)
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
from keltis_env.games.keltis.view import LiveView, sample_state

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


#: Worth of ending the game: winning or losing outweighs any plan.
_DECISIVE = 1000.0


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
            key = (tuple(tc), wish_value, w.clover)
            pair = _GAINS_CACHE.get(key)
            if pair is None:
                tile_gain = [self.tile_value(t) if t else 0.0 for t in tc]
                pair = (
                    [_STEP[r] + tile_gain[r] for r in range(END_ROW + 1)],
                    [_STEP[r] * LARGE_MULTIPLIER + tile_gain[r] for r in range(END_ROW + 1)],
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
        suffix = self.suffix[c]
        prefix = self.prefix[c]
        if last < 0:
            if not vals:
                return rate * suffix[0] * self.w.open_fit
            up = suffix[min(vals)]
            down = prefix[max(vals)]
            return len(vals) + rate * (up if up > down else down)
        best = -1.0
        if d >= 0:
            best = sum(1 for v in vals if v >= last) + rate * suffix[last]
        if d <= 0:
            down = sum(1 for v in vals if v <= last) + rate * prefix[last]
            if down > best:
                best = down
        return best

    def plan(self, c: int, row: int, supply: float, large: bool) -> tuple[float, float]:
        """Best ``gain(k) - lam * k`` over the number ``k`` of further cards on path ``c``
        (at most ``supply``), and that plan's gain, starting from figure row ``row``."""
        gains = self.gains_large[c] if large else self.gains[c]
        lam = self.lam
        bonus = self.w.bonus
        best = 0.0
        best_gain = 0.0
        cum = 0.0
        k = 0
        r = row
        while k + 1 <= supply:
            r += 1
            cum += gains[r] if r <= END_ROW else bonus
            k += 1
            obj = cum - lam * k
            if obj > best:
                best = obj
                best_gain = cum
        frac = supply - k
        if frac > 1e-9:
            r += 1
            part = cum + (gains[r] if r <= END_ROW else bonus) * frac
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
        bonus = self.w.bonus
        best = 0.0
        best_k = 0.0
        cum = 0.0
        k = 0
        r = self.pos[c]
        while k + 1 <= supply:
            r += 1
            cum += gains[r] if r <= END_ROW else bonus
            k += 1
            if cum - lam * k > best:
                best = cum - lam * k
                best_k = k
        frac = supply - k
        if frac > 1e-9:
            r += 1
            part = cum + (gains[r] if r <= END_ROW else bonus) * frac
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


def end_value(view: Any, player: int, scores: list[int]) -> float:
    """Worth of ending the game now with ``scores``: decisive win, loss, or a shared win."""
    me = scores[player]
    best_other = max(s for q, s in enumerate(scores) if q != player)
    if me > best_other:
        return _DECISIVE + me - best_other
    if me < best_other:
        return -_DECISIVE + me - best_other
    return 0.0


def feed_value(view: Any, player: int, c: int, v: int) -> float:
    """How much a public card (colour ``c``, value ``v``) is worth to the opponents."""
    best = 0.0
    for q in range(view.num_players):
        if q == player:
            continue
        row = view.rows[q][c]
        if not row:
            continue  # a colour not begun: an opponent rarely opens a path for one card
        worth = 1.0 if view.positions[q][c] >= END_ROW else 2.0
        last = row[-1]
        d = view.directions[q][c]
        gap = v - last if d > 0 else last - v if d < 0 else abs(v - last)
        if gap < 0:
            continue
        value = worth * (1.0 if gap <= 2 else 0.6 if gap <= 4 else 0.25)
        if value > best:
            best = value
    return best


def action_values(view: Any, weights: Weights | None = None, planner: Planner | None = None) -> list[tuple[int, float]]:
    """Every legal action of the player to act, with its plan-model value (higher is better).

    Values are changes of the player's plan value in points (see the module doc); a move
    that ends the game is worth about +/-1000.
    """
    w = weights or Weights()
    player = view.current_player
    legal = view.legal_actions
    phase = view.phase
    if len(legal) == 1:
        return [(legal[0], 0.0)]
    p = planner or Planner(view, player, w)
    if phase == Phase.DRAW:
        return _draw_values(view, p, legal)
    if phase == Phase.BONUS:
        return _bonus_values(view, p, legal)
    return _play_values(view, p, legal)


def _play_values(view: Any, p: Planner, legal: Any) -> list[tuple[int, float]]:
    player = p.player
    out = []
    base = [p.colour_value(c) for c in range(NUM_COLORS)]
    large_opt = p.large_option()
    goal_ends = view.goal_count == GOAL_FIGURES_TO_END - 1
    cache: dict[int, float] = {}
    for a in legal:
        if a >= DISCARD:
            k = a - DISCARD
            c, v = divmod(k, NUM_VALUES)
            if k in cache:
                value = cache[k]
            else:
                vals = p.hand_vals[c][:]
                vals.remove(v)
                value = p.colour_value(c, vals=vals) - base[c] - p.w.feed * feed_value(view, player, c, v)
                cache[k] = value
            out.append((a, value))
            continue
        large = a >= PLAY_LARGE
        k = a - PLAY_LARGE if large else a
        c, v = divmod(k, NUM_VALUES)
        vals = p.hand_vals[c][:]
        vals.remove(v)
        row = p.pos[c]
        last = p.lasts[c]
        d = p.dirs[c]
        if last >= 0 and d == 0 and v != last:
            d = 1 if v > last else -1
        new_row = row + 1 if row < END_ROW else row
        if goal_ends and new_row == GOAL_FIRST_ROW and row < GOAL_FIRST_ROW:
            scores = list(view.scores)
            big = 2 if (large or p.large == c) else 1
            scores[player] += (ROW_VALUES[new_row] - ROW_VALUES[row]) * big
            out.append((a, end_value(view, player, scores)))
            continue
        on_large = large or p.large == c
        gains = p.gains_large[c] if on_large else p.gains[c]
        step = _best_bonus(view, p) if row == END_ROW else gains[new_row]
        value = step + p.colour_value(c, vals=vals, last=v, d=d, row=new_row, large=on_large) - base[c]
        if row == 0:
            # Opening a path uses a figure: the large one now, or keep it for later.
            value += -large_opt if large else p.large_option(exclude=c) - large_opt
        out.append((a, value))
    return out


def _best_bonus(view: Any, p: Planner) -> float:
    """Worth of a bonus step taken at its best (0 if passing is best)."""
    best = 0.0
    for c in range(NUM_COLORS):
        row = p.pos[c]
        if 0 < row < END_ROW:
            value = _advance_value(view, p, c)
            if value > best:
                best = value
    return best


def _advance_value(view: Any, p: Planner, c: int) -> float:
    row = p.pos[c]
    on_large = p.large == c
    gains = p.gains_large[c] if on_large else p.gains[c]
    return gains[row + 1] + p.colour_value(c, row=row + 1) - p.colour_value(c)


def _bonus_values(view: Any, p: Planner, legal: Any) -> list[tuple[int, float]]:
    player = p.player
    goal_ends = view.goal_count == GOAL_FIGURES_TO_END - 1
    large_opt = p.large_option()
    out = []
    for a in legal:
        if a == PASS:
            out.append((a, 0.0))
        elif a < BONUS_OPEN_SMALL:
            c = a - BONUS_ADVANCE
            row = p.pos[c]
            if goal_ends and row + 1 == GOAL_FIRST_ROW:
                scores = list(view.scores)
                scores[player] += (ROW_VALUES[row + 1] - ROW_VALUES[row]) * (2 if p.large == c else 1)
                out.append((a, end_value(view, player, scores)))
            else:
                out.append((a, _advance_value(view, p, c)))
        else:
            large = a >= BONUS_OPEN_LARGE
            c = a - (BONUS_OPEN_LARGE if large else BONUS_OPEN_SMALL)
            gains = p.gains_large[c] if large else p.gains[c]
            value = gains[1] + p.colour_value(c, row=1, large=large) - p.colour_value(c)
            value += -large_opt if large else p.large_option(exclude=c) - large_opt
            out.append((a, value))
    return out


def _draw_values(view: Any, p: Planner, legal: Any) -> list[tuple[int, float]]:
    player = p.player
    base: list[float | None] = [None] * NUM_COLORS

    def gain(c: int, v: int) -> float:
        b = base[c]
        if b is None:
            b = base[c] = p.colour_value(c)
        return p.colour_value(c, vals=[*p.hand_vals[c], v]) - b

    out = []
    deck_at = -1
    best_pile = 0.0
    for a in legal:
        if a == DRAW_DECK:
            if view.deck_size == 1:
                out.append((a, end_value(view, player, list(view.scores))))
            else:
                deck_at = len(out)
                out.append((a, 0.0))
            continue
        c = a - DRAW_DISCARD
        v = view.discards[c][-1]
        value = gain(c, v) + 0.5 * p.w.feed * feed_value(view, player, c, v)
        best_pile = max(best_pile, value)
        out.append((a, value))
    if deck_at >= 0 and best_pile > 0.0:
        # The expected gain of a card from the pile, over the cards not seen yet. (A
        # card never lowers a plan, so with no useful pile top the deck wins anyway.)
        total = 0
        expected = 0.0
        for c in range(NUM_COLORS):
            u = p.unseen[c]
            last = p.lasts[c]
            d = p.dirs[c] if last >= 0 else 0
            for v in range(NUM_VALUES):
                x = u[v]
                if x:
                    total += x
                    # a card against a row's fixed direction changes nothing (R4)
                    if d == 0 or (v - last) * d >= 0:
                        expected += x * gain(c, v)
        out[deck_at] = (DRAW_DECK, expected / total if total else 0.0)
    return out


def choose(values: list[tuple[int, float]]) -> int:
    """The action of highest value; the first (lowest id) among equals."""
    best_a, best_v = values[0]
    for a, v in values:
        if v > best_v:
            best_a, best_v = a, v
    return best_a


#: Rollouts per decision when neither ``iterations`` nor ``seconds`` is given.
DEFAULT_ITERATIONS = 64
#: With a budget in iterations, at most iterations / this many candidates are searched.
_ROLLOUTS_PER_CANDIDATE = 8
#: Action values at or above this are game-winning moves (see :func:`end_value`).
_WINNING = 500.0


class ISMCTSBot(Bot):
    """Determinized Monte Carlo search guided by the plan model; see the module doc.

    Options: ``iterations`` (rollouts per decision) or ``seconds`` (time per decision),
    ``top_k`` (candidates searched), ``depth`` (own turns simulated past this one),
    ``stage`` (sampled worlds between two halvings), ``prior`` (pseudo-samples of the
    plan model's ranking), ``win_bonus`` (worth of a win over the score difference),
    ``margin`` (candidates more than this many points below the best are not searched).
    """

    name = "ismcts"

    def __init__(
        self,
        seed: int | None = None,
        iterations: int | None = None,
        seconds: float | None = None,
        top_k: int = 6,
        depth: int = 2,
        stage: int = 6,
        prior: float = 8.0,
        win_bonus: float = 10.0,
        margin: float = 3.0,
    ) -> None:
        super().__init__(seed)
        if iterations is not None and seconds is not None:
            raise ValueError("give ismcts a budget in iterations or in seconds, not both")
        if iterations is None and seconds is None:
            iterations = DEFAULT_ITERATIONS
        bad_iterations = isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0
        if iterations is not None and bad_iterations:
            raise ValueError(f"iterations must be a non-negative integer, got {iterations!r}")
        if seconds is not None and (not isinstance(seconds, int | float) or seconds <= 0):
            raise ValueError(f"seconds must be a positive number, got {seconds!r}")
        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        if not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
        if not isinstance(stage, int) or stage < 1:
            raise ValueError(f"stage must be a positive integer, got {stage!r}")
        self.iterations = iterations
        self.seconds = float(seconds) if seconds is not None else None
        self.top_k = top_k
        self.depth = depth
        self.stage = stage
        self.prior = float(prior)
        self.win_bonus = float(win_bonus)
        self.margin = float(margin)
        self.weights = Weights()

    def __repr__(self) -> str:
        budget = f"iterations={self.iterations}" if self.iterations is not None else f"seconds={self.seconds}"
        return f"ISMCTSBot({budget}, top_k={self.top_k}, depth={self.depth})"

    # ------------------------------------------------------------------ search
    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("ISMCTSBot.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:
            return legal[0]
        w = self.weights
        me = view.player
        root = Planner(view, me, w)
        ranked = sorted(action_values(view, w, planner=root), key=lambda av: -av[1])
        if ranked[0][1] >= _WINNING:
            return ranked[0][0]
        if self.iterations == 0:
            return ranked[0][0]  # no search: the evaluation model's own choice
        cut = ranked[0][1] - self.margin
        top_k = self.top_k
        if self.iterations is not None:
            # A small budget is spread over fewer candidates: each needs several samples.
            top_k = min(top_k, max(2, self.iterations // _ROLLOUTS_PER_CANDIDATE))
        cands = [av for av in ranked[:top_k] if av[1] >= cut]
        if len(cands) == 1:
            return cands[0][0]
        k = len(cands)
        depth = self.depth
        totals = [0.0] * k
        alive = list(range(k))
        samples = 0  # sampled worlds seen by every surviving candidate
        rollouts = 0
        deadline = time.perf_counter() + self.seconds if self.seconds is not None else None
        my_setup = (root.lam, root.goal_turn, (root.unseen, root.prefix, root.suffix, sum(map(sum, root.unseen))))
        rng = self.rng
        while True:
            world = sample_state(view, rng)
            setups = []
            for q in range(view.num_players):
                if q == me:
                    setups.append(my_setup)
                else:
                    p = Planner(LiveView(world, q), q, w)
                    setups.append((p.lam, p.goal_turn, (p.unseen, p.prefix, p.suffix, sum(map(sum, p.unseen)))))
            for i in alive:
                state = world.clone()
                state.apply(cands[i][0])
                totals[i] += self._rollout(state, me, setups, depth)
            rollouts += len(alive)
            samples += 1
            if self.iterations is not None and rollouts + len(alive) > self.iterations:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            if samples % self.stage == 0 and len(alive) > 2:
                alive.sort(key=lambda j: -totals[j])
                alive = alive[: max(2, (len(alive) + 1) // 2)]
        # Shrink towards the plan model: prior pseudo-samples of its value differences.
        ref = cands[0][1]
        best_i = alive[0]
        best_score = None
        for i in alive:
            mean = totals[i] / samples
            score = (samples * mean + self.prior * (cands[i][1] - ref)) / (samples + self.prior)
            if best_score is None or score > best_score:
                best_i, best_score = i, score
        return cands[best_i][0]

    def _rollout(self, state: Any, me: int, setups: list[tuple[Any, ...]], depth: int) -> float:
        """Play on with the plan model's policy for ``depth`` rounds of turns (or to the
        end of the game) and return the value of the position for ``me``."""
        w = self.weights
        rounds = depth
        while not state.is_over:
            p = state.current
            if state.phase == Phase.PLAY:
                if p == me:
                    rounds -= 1  # a full round of turns has been played
                    if rounds <= 0:
                        break
                elif rounds == 0:
                    break
            view = LiveView(state, p)
            legal = state.legal_actions()
            if len(legal) == 1:
                state.apply(legal[0])
                continue
            lam, goal, pool = setups[p]
            planner = Planner(view, p, w, lam=lam, goal_turn=goal, pool=pool)
            state.apply(choose(action_values(view, w, planner=planner)))
        n = state.num_players
        if state.is_over:
            scores = state.scores()
            mine = scores[me]
            other = max(s for q, s in enumerate(scores) if q != me)
            bonus = self.win_bonus if mine > other else -self.win_bonus if mine < other else 0.0
            return mine - other + bonus
        values = []
        for q in range(n):
            lam, goal, pool = setups[q]
            values.append(Planner(LiveView(state, q), q, w, lam=lam, goal_turn=goal, pool=pool).value())
        return values[me] - max(v for q, v in enumerate(values) if q != me)
