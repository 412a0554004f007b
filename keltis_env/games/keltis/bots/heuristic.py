"""A rule-based Keltis player that plays like a sensible human (docs/rules.md R3-R9).

Strategy
--------
The bot reads only its :class:`~keltis_env.games.keltis.view.PlayerView` (``legal_actions``,
``hand``, ``rows``, ``directions``, ``positions``, ``tiles``, ``discards``, ...) and
follows a few fixed rules, in this order of importance:

**Time.** Its turns left are the draw pile divided by the number of players (R8.2),
fewer once figures crowd the goal area (R8.1: the fifth figure there ends the game).
Everything below gets more urgent as that number shrinks.

**The end of the game.** A move that ends the game at once - the fifth figure into the
goal area, or drawing the last card of the pile - is made when the bot is then ahead,
and avoided when it is behind (it draws from a discard pile instead of the last card).
While behind it does not hurry figures into a nearly full goal area; while ahead it
does.

**Commit to a few paths.** The bot aims at three or four paths (``paths``). A path is
opened only with at least ``open_cards`` cards of its colour in hand (one fewer early in
the game), only while that many turns are left that the figure can leave the minus area
(rows 1-3 cost -4/-3/-2), and only if the cards make a run: it opens with the card at
the end of the run, its lowest card when the colour's cards are mostly high enough to
climb, its highest when most are low, so that the row's direction (R4) suits the hand.
The large figure goes on the colour with the most cards, once it has enough
(``large_cards``), since it doubles that path's row value, negative rows included.

**Advance with the closest card.** On an open path the bot plays the fitting card
closest to the row's last card (equal values cost nothing), because a jump kills every
card in between, in hand and still to come. It prefers steps onto a wishing stone (a
lot while it holds fewer than two: 0 and 1 stones score -4 and -3), a clover (a free
step), a point tile, and out of the minus area or into the goal area (the +3 steps of
the row values), and paths it holds more cards for. A card whose gap is larger than
``gap`` (``gap`` + 3 when time is short) is not played while a useless card can be
discarded instead.

**Discard the useless, not to the opponent.** Cards against an open row's direction, and
colours the bot will not open, are discarded first; among those it prefers cards that
fit no opponent's row (discards are public and the next player may take them, R3b).

**Draw what helps.** It takes a discard pile's top card when the card continues one of
its rows closely (gap at most ``gap``), else the top of the draw pile.

**Bonus steps** (clover, card on a completed path, R7) advance the figure whose next
stone is worth most: a tile, leaving the minus area, entering the goal area, the large
figure's path. Early in the game a bonus step may open a path the hand supports. The
bot passes only when no step gains anything.

A decision takes a few tens of microseconds.
"""

from __future__ import annotations

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
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    NUM_COLORS,
    NUM_VALUES,
    ROW_VALUES,
    TILE_POINTS,
    WISHING_STONE,
)
from keltis_env.games.keltis.state import Phase

from .compiled import check_backend, compiled_decider

_NEVER = -1000.0


class HeuristicBot(Bot):
    """The rule-based strategy of this module's documentation.

    Options (agent spec ``heuristic:paths=3,gap=3``): ``paths`` (paths to commit to),
    ``gap`` (largest jump played while a useless card can go), ``open_cards`` (cards of a
    colour needed to open its path), ``large_cards`` (cards needed to open with the large
    figure), ``backend`` (``python``, the default: this code; ``compiled``: the compiled kernel,
    :mod:`.compiled`, the ``fast`` extra; ``auto``: the compiled kernel when numba is
    installed, else this code). Every backend makes the same decisions.
    """

    name = "heuristic"
    #: It reads the view only during ``act`` and changes nothing in it: the match loop may
    #: pass the zero-copy live view (the same fields, the same decisions).
    accepts_live_view = True

    def __init__(
        self,
        seed: int | None = None,
        paths: int = 4,
        gap: int = 2,
        open_cards: int = 3,
        large_cards: int = 4,
        backend: str = "python",
    ) -> None:
        super().__init__(seed)
        check_backend("heuristic", backend)
        for key, value, low in (("paths", paths, 1), ("gap", gap, 0), ("open_cards", open_cards, 1),
                                ("large_cards", large_cards, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"heuristic option {key} must be an integer >= {low}, got {value!r}")
        self.paths = paths
        self.gap = gap
        self.open_cards = open_cards
        self.large_cards = large_cards
        self.backend = backend
        #: the compiled decision, or None for this module's Python code
        self.compiled = compiled_decider(self, backend)

    def __repr__(self) -> str:
        return f"HeuristicBot(paths={self.paths}, gap={self.gap})"

    def act(self, view: Any) -> int:
        if self.compiled is not None:
            action = self.compiled.decide(view, self)
            if action < 0:
                raise ValueError("HeuristicBot.act called for a view with no legal action (not this player's turn)")
            return action
        legal = view.legal_actions
        if not legal:
            raise ValueError("HeuristicBot.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:
            return legal[0]
        pos = _Position(view, self.open_cards, self.paths)
        if view.phase == Phase.DRAW:
            scored = [(a, self._draw_score(pos, a)) for a in legal]
        elif view.phase == Phase.BONUS:
            scored = [(a, self._bonus_score(pos, a)) for a in legal]
        else:
            scored = self._play_scores(pos, legal)
        best_a, best_s = scored[0]
        for a, s in scored:
            if s > best_s:
                best_a, best_s = a, s
        return best_a

    # ------------------------------------------------------------------ play or discard
    def _play_scores(self, pos: _Position, legal: Any) -> list[tuple[int, float]]:
        late = pos.turns_left <= 6
        limit = self.gap + (3 if late or pos.hand_fits >= pos.turns_left else 0)
        out = []
        for a in legal:
            if a >= DISCARD:
                out.append((a, self._discard_score(pos, a - DISCARD)))
                continue
            large = a >= PLAY_LARGE
            k = a - PLAY_LARGE if large else a
            c, v = divmod(k, NUM_VALUES)
            if pos.pos[c]:  # a figure is on the path (a bonus step may have opened it without a card)
                out.append((a, self._advance_score(pos, c, v, limit)))
            else:
                out.append((a, self._open_score(pos, c, v, large)))
        return out

    def _advance_score(self, pos: _Position, c: int, v: int, limit: int) -> float:
        """Playing value ``v`` on the open colour ``c`` (R4 already checked by the engine)."""
        row = pos.pos[c]
        ending = pos.ending_step(c, row, row + 1 if row < END_ROW else row)
        if ending is not None:
            return ending
        last = pos.lasts[c]
        d = pos.dirs[c]
        vals = pos.hand[c]
        if last < 0:
            # No card on the row yet (opened by a bonus step): start at the end of the run.
            gap = abs(v - pos.opening_card(c))
            behind = 0
        elif d == 0 and v != last:
            gap = abs(v - last)
            # The card fixes the direction: count what would still fit afterwards.
            up = v > last
            behind = sum(1 for x in vals if (x < v if up else x > v))
        else:
            gap = abs(v - last)
            # Fitting cards strictly between the row's end and this card are killed.
            behind = sum(1 for x in vals if (last <= x < v if d > 0 else v < x <= last if d < 0 else False))
        # Rank the closest fitting card first, then by what the next stone brings.
        score = 10.0 - 2.0 * gap - 3.0 * behind
        score += pos.step_worth(c, row)
        score += 0.5 * min(len(vals) - 1, 4)  # a path with more cards in hand is a stronger commitment
        if gap > limit and pos.has_useless:
            score -= 20.0  # keep the range; throw away a useless card instead
        return score

    def _open_score(self, pos: _Position, c: int, v: int, large: bool) -> float:
        """Opening colour ``c`` with value ``v``, with the large figure if ``large``."""
        vals = pos.hand[c]
        if not pos.may_open(c, self.open_cards, self.paths):
            return _NEVER + 1 if large else _NEVER + 2  # only when nothing else is legal
        if v != pos.opening_card(c):
            return _NEVER + 3
        score = 4.0 + len(vals) - 2.0 * pos.open_paths
        if pos.tiles[c][1] == WISHING_STONE:
            score += 1.0
        best_colour = pos.best_unopened()
        if large:
            if pos.small_left == 0:
                score += 5.0  # the last figure is the large one
            elif c != best_colour or len(vals) < self.large_cards:
                score -= 10.0
            else:
                score += 1.0
        elif pos.large_free and c == best_colour and len(vals) >= self.large_cards:
            score -= 2.0  # this is the path for the large figure
        return score

    def _discard_score(self, pos: _Position, k: int) -> float:
        """Discarding card ``k``: best for cards that are useless to us and to the others."""
        c, v = divmod(k, NUM_VALUES)
        use = pos.usefulness(c, v, self.open_cards, self.paths)
        score = 3.0 - 4.0 * use - 2.0 * pos.feeds(c, v)
        if pos.hand[c].count(v) > 1 and use > 0:
            score -= 1.0  # a pair is two free steps on a row
        return score

    # ------------------------------------------------------------------ draw
    def _draw_score(self, pos: _Position, a: int) -> float:
        if a == DRAW_DECK:
            if pos.view.deck_size == 1:  # the last card ends the game (R8.2)
                return pos.end_worth(pos.scores)
            return 0.0
        c = a - DRAW_DISCARD
        v = pos.view.discards[c][-1]
        score = -1.0
        if pos.pos[c]:
            gap = pos.fit_gap(c, v)
            if gap is not None and gap <= self.gap:
                score = 3.0 - gap
        elif len(pos.hand[c]) >= self.open_cards and pos.turns_left > 10:
            score = 0.5  # helps a path we are about to open
        if score > 0:
            score += 0.5 * pos.feeds(c, v)  # and the next player does not get it
        return score

    # ------------------------------------------------------------------ bonus steps
    def _bonus_score(self, pos: _Position, a: int) -> float:
        if a == PASS:
            return 0.0
        if a < BONUS_OPEN_SMALL:
            c = a - BONUS_ADVANCE
            row = pos.pos[c]
            ending = pos.ending_step(c, row, row + 1)
            if ending is not None:
                return ending
            score = 1.0 + pos.step_worth(c, row)
            fitting = pos.fitting_count(c)
            score += 0.5 * min(fitting, 4)
            return score
        large = a >= BONUS_OPEN_LARGE
        c = a - (BONUS_OPEN_LARGE if large else BONUS_OPEN_SMALL)
        if not pos.may_open(c, self.open_cards, self.paths) or (large and pos.small_left > 0):
            return -1.0
        return 0.5 + len(pos.hand[c]) - 2.0 * pos.open_paths


class _Position:
    """What the rules need to know about the view of the player to act."""

    __slots__ = (
        "dirs",
        "goal_count",
        "hand",
        "hand_fits",
        "has_useless",
        "large",
        "large_free",
        "lasts",
        "me",
        "n",
        "open_paths",
        "pos",
        "rows",
        "scores",
        "small_left",
        "tiles",
        "turns_left",
        "view",
        "wishing",
    )

    def __init__(self, view: Any, open_cards: int, paths: int) -> None:
        self.view = view
        me = self.me = view.player
        self.n = n = view.num_players
        self.hand = hand = [[] for _ in range(NUM_COLORS)]
        for k in view.hand:
            hand[k // NUM_VALUES].append(k % NUM_VALUES)
        self.rows = rows = view.rows[me]
        self.pos = pos = view.positions[me]
        self.lasts = [r[-1] if r else -1 for r in rows]
        self.dirs = view.directions[me]
        self.large = view.large[me]
        self.large_free = self.large < 0
        self.open_paths = sum(1 for r in pos if r)
        self.small_left = 4 - self.open_paths + (0 if self.large_free else 1)
        self.tiles = view.tiles
        self.wishing = view.wishing[me]
        self.scores = list(view.scores)
        self.goal_count = view.goal_count
        # Turns left to this player: the pile, shortened when the goal area fills up.
        turns = view.deck_size // n + 1
        if self.goal_count >= 2:
            near = sum(1 for q in range(n) for r in view.positions[q] if 4 <= r < GOAL_FIRST_ROW)
            missing = GOAL_FIGURES_TO_END - self.goal_count
            if near >= missing:
                turns = min(turns, 2 * missing + 2)
        self.turns_left = turns
        self.hand_fits = sum(self.fitting_count(c) for c in range(NUM_COLORS) if pos[c])
        self.has_useless = any(
            self.usefulness(k // NUM_VALUES, k % NUM_VALUES, open_cards, paths) < 0.15 for k in view.hand
        )

    # ------------------------------------------------------------------ colours
    def fit_gap(self, c: int, v: int) -> int | None:
        """How far ``v`` is from the end of our row ``c`` in its direction; None if it
        does not fit (R4)."""
        last = self.lasts[c]
        if last < 0:
            return 0 if self.pos[c] else None
        d = self.dirs[c]
        if d > 0:
            return v - last if v >= last else None
        if d < 0:
            return last - v if v <= last else None
        return abs(v - last)

    def fitting_count(self, c: int) -> int:
        return sum(1 for v in self.hand[c] if self.fit_gap(c, v) is not None)

    def may_open(self, c: int, open_cards: int, paths: int) -> bool:
        """Rule: open a new path only with enough cards and time, and few paths open."""
        if self.pos[c]:
            return False
        need = open_cards - (1 if self.turns_left >= 20 else 0)
        cards = len(self.hand[c])
        return self.open_paths < paths and cards >= need and self.turns_left >= 10 - min(cards, 5)

    def opening_card(self, c: int) -> int:
        """The end of the run the hand makes: lowest card if most cards are high, else highest."""
        vals = self.hand[c]
        lo, hi = min(vals), max(vals)
        return lo if lo + hi >= 10 or lo <= 1 else hi

    def best_unopened(self) -> int:
        best, best_n = -1, 0
        for c in range(NUM_COLORS):
            if not self.pos[c] and len(self.hand[c]) > best_n:
                best, best_n = c, len(self.hand[c])
        return best

    def usefulness(self, c: int, v: int, open_cards: int, paths: int) -> float:
        """0 for a card we will not use, up to 1 for one that continues a row closely."""
        if self.pos[c]:
            if self.pos[c] >= END_ROW and self.lasts[c] < 0:
                return 0.3
            gap = self.fit_gap(c, v)
            if gap is None:
                return 0.0
            return 1.0 if gap <= 2 else 0.7 if gap <= 5 else 0.4
        cards = len(self.hand[c])
        if self.open_paths >= paths or self.turns_left < 8:
            return 0.0
        return 0.2 * min(cards, 4) if cards >= open_cards - 1 else 0.05 * cards

    def feeds(self, c: int, v: int) -> float:
        """How much a discarded card would help an opponent: up to 1 when it continues
        one of their rows closely."""
        best = 0.0
        view = self.view
        for q in range(self.n):
            if q == self.me:
                continue
            row = view.rows[q][c]
            if not row:
                continue
            last = row[-1]
            d = view.directions[q][c]
            gap = v - last if d > 0 else last - v if d < 0 else abs(v - last)
            if gap < 0:
                continue
            worth = 1.0 if gap <= 2 else 0.5 if gap <= 4 else 0.2
            if worth > best:
                best = worth
        return best

    # ------------------------------------------------------------------ stones
    def step_worth(self, c: int, row: int) -> float:
        """What moving our figure on path ``c`` from ``row`` to the next stone brings."""
        if row >= END_ROW:
            return 2.0  # a card on a completed path gives a bonus step (R5)
        nxt = row + 1
        big = 2 if self.large == c else 1
        score = (ROW_VALUES[nxt] - ROW_VALUES[row]) * big * 0.7
        tile = self.tiles[c][nxt]
        if tile == WISHING_STONE:
            score += 4.0 if self.wishing < 2 else 2.0
        elif tile == CLOVER:
            score += 2.5
        elif tile:
            score += TILE_POINTS[tile]
        if nxt == GOAL_FIRST_ROW and self.goal_count >= 2:
            # Entering a filling goal area brings the end closer: good only when ahead.
            lead = self.scores[self.me] - max(s for q, s in enumerate(self.scores) if q != self.me)
            score += 1.5 if lead > 0 else -1.5 * (self.goal_count - 1)
        return score

    def ending_step(self, c: int, row: int, new_row: int) -> float | None:
        """If moving to ``new_row`` ends the game (R8.1), what that is worth; else None."""
        if new_row != GOAL_FIRST_ROW or row >= GOAL_FIRST_ROW or self.goal_count != GOAL_FIGURES_TO_END - 1:
            return None
        scores = list(self.scores)
        scores[self.me] += (ROW_VALUES[new_row] - ROW_VALUES[row]) * (2 if self.large == c else 1)
        return self.end_worth(scores)

    def end_worth(self, scores: list[int]) -> float:
        """Ending the game with these scores: decisive when it wins or loses."""
        me = scores[self.me]
        other = max(s for q, s in enumerate(scores) if q != self.me)
        if me > other:
            return 100.0
        if me < other:
            return -100.0
        return 0.0
