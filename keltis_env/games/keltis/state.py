"""The game state and the rules that change it (docs/rules.md R2-R9).

A :class:`GameState` holds everything about one game, hidden cards included. It is
changed only by :meth:`GameState.apply`, one decision at a time; decisions are the
integer ids of :mod:`keltis_env.games.keltis.actions`. The turn's steps are a phase machine
(R3): ``PLAY`` (play or discard a card) -> optional ``BONUS`` steps (R7, repeated while
clovers chain) -> ``DRAW`` (R3b) -> next player's ``PLAY``. ``OVER`` ends the game.

Representation invariants (kept by ``apply``; checked by ``from_dict``):

* a card is a *kind* ``colour * 11 + value``; both copies of a card share the kind;
* ``hands[p]`` is sorted; ``deck[-1]`` is the top of the draw pile;
* ``discards[c]`` holds values of colour ``c``, bottom first: ``discards[c][-1]`` is the
  pile's top;
* ``rows[p][c]`` is the list of values player ``p`` played in colour ``c``, in order;
  ``last[p][c]`` (its last value, -1 when empty) and ``direction[p][c]`` (+1 ascending,
  -1 descending, 0 not fixed yet) are caches derived from it;
* ``pos[p][c]`` is the row (1..9) of player ``p``'s figure on path ``c``, 0 for none:
  a player has at most one figure per path (R5) by construction;
* ``large[p]`` is the path of the large figure, -1 while it is on the start stone;
* ``tiles[c][r]`` is the tile code on row ``r`` of path ``c`` (index 0 unused).

Dependencies go one way: this module uses :mod:`.serialize` (``to_dict``/``from_dict``)
and :mod:`.view` (``view``), which read a state only through its attributes and never
import this module at run time. :func:`sample_state` (a state from a view) lives here.
"""

from __future__ import annotations

import random
from bisect import insort
from collections.abc import Mapping
from typing import Any

from keltis_env.core.errors import ActionError
from keltis_env.core.state import TurnBasedState
from keltis_env.core.validation import game_seed

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
    action_to_string,
    as_action_id,
)
from .config import GameConfig
from .constants import (
    CLOVER,
    COLORS,
    COPIES_PER_CARD,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    HAND_SIZE,
    LARGE_MULTIPLIER,
    NO_TILE,
    NUM_CARD_KINDS,
    NUM_COLORS,
    NUM_VALUES,
    REMOVED_CARDS,
    ROW_VALUES,
    SMALL_FIGURES,
    TILE_POINTS,
    TILE_SET,
    WISHING_SCORES,
    WISHING_STONE,
    EndReason,
    Phase,
    row_direction,
)
from .serialize import state_from_dict, state_to_dict
from .view import PlayerView

# Lookup tables: faster than divmod on the hot path.
_COLOR_OF = tuple(k // NUM_VALUES for k in range(NUM_CARD_KINDS))
_VALUE_OF = tuple(k % NUM_VALUES for k in range(NUM_CARD_KINDS))
_NO_CARD = -1


class GameState(TurnBasedState):
    """One game of Keltis, hidden information included. Create with :meth:`new_game`.

    ``is_over``, ``terminated`` (R8.1, R8.2), ``truncated`` (R8), ``scores()`` and
    ``winners()`` (ties share the victory, R9) come from :class:`TurnBasedState`.
    """

    TRUNCATED = EndReason.TRUNCATED

    __slots__ = (
        "config",
        "current",
        "dark_rows",
        "deck",
        "direction",
        "discarded",
        "discards",
        "end",
        "first_player",
        "goal_count",
        "hands",
        "large",
        "last",
        "num_players",
        "phase",
        "pos",
        "removed",
        "rows",
        "tile_points",
        "tiles",
        "turn",
        "wishing",
    )

    config: GameConfig
    num_players: int
    dark_rows: tuple[tuple[int, ...], ...]
    hands: list[list[int]]
    deck: list[int]
    removed: list[int]
    discards: list[list[int]]
    rows: list[list[list[int]]]
    last: list[list[int]]
    direction: list[list[int]]
    pos: list[list[int]]
    large: list[int]
    tiles: list[list[int]]
    wishing: list[int]
    tile_points: list[int]
    phase: Phase
    current: int
    first_player: int
    discarded: int
    turn: int
    goal_count: int
    end: EndReason

    # ------------------------------------------------------------------ set-up (R2)
    @classmethod
    def new_game(cls, config: GameConfig | None = None, seed: int | None = None) -> GameState:
        """Deal a new game (R2). The same config and seed always give the same game.

        ``seed=None`` draws a seed from the operating system; pass an integer for a
        reproducible game. No global random state is read or changed.
        """
        config = config if config is not None else GameConfig()
        seed = game_seed(seed)
        rng = random.Random(seed)
        n = config.num_players
        s = cls.__new__(cls)
        s.config = config
        s.num_players = n
        s.dark_rows = config.dark_rows(rng)
        # R2.2: the 25 tiles go face up onto the 20 dark stones and the 5 end stones.
        tiles = list(TILE_SET)
        rng.shuffle(tiles)
        stones = [(c, r) for c in range(NUM_COLORS) for r in s.dark_rows[c]]
        stones += [(c, END_ROW) for c in range(NUM_COLORS)]
        s.tiles = [[NO_TILE] * (END_ROW + 1) for _ in range(NUM_COLORS)]
        for (c, r), tile in zip(stones, tiles, strict=True):
            s.tiles[c][r] = tile
        # R2.3-R2.4: shuffle, remove 30 unseen cards with 2 players, deal 8 each.
        cards = [k for k in range(NUM_CARD_KINDS) for _ in range(COPIES_PER_CARD)]
        rng.shuffle(cards)
        n_removed = REMOVED_CARDS[n]
        s.removed = sorted(cards[:n_removed])
        dealt = cards[n_removed:]
        s.hands = [sorted(dealt[p * HAND_SIZE : (p + 1) * HAND_SIZE]) for p in range(n)]
        s.deck = dealt[n * HAND_SIZE :]
        s.discards = [[] for _ in range(NUM_COLORS)]
        s.rows = [[[] for _ in range(NUM_COLORS)] for _ in range(n)]
        s.last = [[_NO_CARD] * NUM_COLORS for _ in range(n)]
        s.direction = [[0] * NUM_COLORS for _ in range(n)]
        s.pos = [[0] * NUM_COLORS for _ in range(n)]
        s.large = [-1] * n
        s.wishing = [0] * n
        s.tile_points = [0] * n
        # R2.5: the first player is drawn from the seed.
        s.first_player = rng.randrange(n)
        s.current = s.first_player
        s.phase = Phase.PLAY
        s.discarded = -1
        s.turn = 0
        s.goal_count = 0
        s.end = EndReason.NONE
        return s

    def clone(self) -> GameState:
        """An independent copy: changing one never changes the other."""
        s = GameState.__new__(GameState)
        s.config = self.config
        s.num_players = self.num_players
        s.dark_rows = self.dark_rows
        s.hands = [h[:] for h in self.hands]
        s.deck = self.deck[:]
        s.removed = self.removed[:]
        s.discards = [d[:] for d in self.discards]
        s.rows = [[r[:] for r in pr] for pr in self.rows]
        s.last = [x[:] for x in self.last]
        s.direction = [x[:] for x in self.direction]
        s.pos = [x[:] for x in self.pos]
        s.large = self.large[:]
        s.tiles = [t[:] for t in self.tiles]
        s.wishing = self.wishing[:]
        s.tile_points = self.tile_points[:]
        s.phase = self.phase
        s.current = self.current
        s.first_player = self.first_player
        s.discarded = self.discarded
        s.turn = self.turn
        s.goal_count = self.goal_count
        s.end = self.end
        return s

    # ------------------------------------------------------------------ queries
    def small_figures_left(self, player: int) -> int:
        """Small figures of ``player`` still on the start stone."""
        on_paths = sum(1 for r in self.pos[player] if r)
        return SMALL_FIGURES - on_paths + (1 if self.large[player] >= 0 else 0)

    def score(self, player: int) -> int:
        """The player's score if the game ended now (R9)."""
        return _score(self.pos[player], self.large[player], self.tile_points[player], self.wishing[player])

    def scores(self) -> list[int]:
        """Every player's score if the game ended now (R9); the encoder reads them at
        every step, hence no per-player method call."""
        return list(map(_score, self.pos, self.large, self.tile_points, self.wishing))

    # ------------------------------------------------------------------ legal actions
    def legal_actions(self) -> list[int]:
        """The sorted ids of every legal decision of the current player (empty when over)."""
        phase = self.phase
        if phase == Phase.PLAY:
            return self._legal_play()
        if phase == Phase.DRAW:
            return self._legal_draw()
        if phase == Phase.BONUS:
            return self._legal_bonus()
        return []

    def _legal_play(self) -> list[int]:
        p = self.current
        pos = self.pos[p]
        last = self.last[p]
        direction = self.direction[p]
        can_large = self.large[p] < 0
        can_small = self.small_figures_left(p) > 0
        plays: list[int] = []
        larges: list[int] = []
        discards: list[int] = []
        prev = -1
        for k in self.hands[p]:
            if k == prev:
                continue
            prev = k
            discards.append(DISCARD + k)
            c = _COLOR_OF[k]
            if pos[c]:
                top = last[c]
                d = direction[c]
                # R4: any value while the direction is open; else never against it.
                if top < 0 or d == 0 or (_VALUE_OF[k] - top) * d >= 0:
                    plays.append(k)
            else:
                # R5: the first card of a colour opens the path with a small or large figure.
                if can_small:
                    plays.append(k)
                if can_large:
                    larges.append(PLAY_LARGE + k)
        return plays + larges + discards

    def _legal_draw(self) -> list[int]:
        actions = [DRAW_DECK]
        closed = self.discarded  # R3b: the pile discarded onto this turn is closed
        discards = self.discards
        for c in range(NUM_COLORS):
            if discards[c] and c != closed:
                actions.append(DRAW_DISCARD + c)
        return actions

    def _legal_bonus(self) -> list[int]:
        p = self.current
        pos = self.pos[p]
        advance = [BONUS_ADVANCE + c for c in range(NUM_COLORS) if 0 < pos[c] < END_ROW]
        empty = [c for c in range(NUM_COLORS) if not pos[c]]
        small = [BONUS_OPEN_SMALL + c for c in empty] if self.small_figures_left(p) > 0 else []
        large = [BONUS_OPEN_LARGE + c for c in empty] if self.large[p] < 0 else []
        return advance + small + large + [PASS]

    def illegal_reason(self, action: int) -> str | None:
        """Why ``action`` is not legal now, or ``None`` when it is legal."""
        if type(action) is not int:
            try:
                action = as_action_id(action)
            except ActionError as exc:
                return str(exc)
        if not 0 <= action < NUM_ACTIONS:
            return f"action ids are integers 0..{NUM_ACTIONS - 1}, got {action}"
        phase = self.phase
        if phase == Phase.OVER:
            return "the game is over"
        step = _STEP_NAMES[phase]
        p = self.current
        if action < DRAW_DECK:
            if phase != Phase.PLAY:
                return f"cards are played or discarded in the play step, and this is the {step} step"
            k = action % NUM_CARD_KINDS
            c = _COLOR_OF[k]
            v = _VALUE_OF[k]
            if k not in self.hands[p]:
                return f"player {p} has no {COLORS[c]} {v} in hand"
            if action >= DISCARD:
                return None
            if self.pos[p][c]:
                if action >= PLAY_LARGE:
                    return f"the {COLORS[c]} path is already open; 'large' only opens a path (R5)"
                top, d = self.last[p][c], self.direction[p][c]
                if top >= 0 and d != 0 and (v - top) * d < 0:
                    kind = "ascending" if d > 0 else "descending"
                    return f"player {p}'s {COLORS[c]} row is {kind} and ends with {top} (R4)"
                return None
            if action >= PLAY_LARGE:
                return None if self.large[p] < 0 else f"player {p}'s large figure is already on a path"
            if self.small_figures_left(p) == 0:
                return f"player {p} has no small figure on the start stone; open with 'large' (R5)"
            return None
        if action < BONUS_ADVANCE:
            if phase != Phase.DRAW:
                return f"drawing happens in the draw step, and this is the {step} step"
            if action == DRAW_DECK:
                return None
            c = action - DRAW_DISCARD
            if not self.discards[c]:
                return f"the {COLORS[c]} discard pile is empty"
            if c == self.discarded:
                return f"the {COLORS[c]} pile is closed: the card discarded this turn cannot be drawn (R3b)"
            return None
        if phase != Phase.BONUS:
            return f"bonus steps and 'pass' need a pending bonus step, and this is the {step} step"
        if action == PASS:
            return None
        if action < BONUS_OPEN_SMALL:
            c = action - BONUS_ADVANCE
            r = self.pos[p][c]
            if r == 0:
                return f"player {p} has no figure on the {COLORS[c]} path"
            if r == END_ROW:
                return f"player {p}'s {COLORS[c]} figure is on the end stone"
            return None
        c = (action - BONUS_OPEN_SMALL) % NUM_COLORS
        if self.pos[p][c]:
            return f"player {p} already has a figure on the {COLORS[c]} path (R5)"
        if action < BONUS_OPEN_LARGE:
            return None if self.small_figures_left(p) else f"player {p} has no small figure on the start stone"
        return None if self.large[p] < 0 else f"player {p}'s large figure is already on a path"

    # ------------------------------------------------------------------ transitions
    def action_text(self, action: int) -> str:
        return action_to_string(action)

    def apply(self, action: int) -> None:
        """Make one decision for the current player.

        Raises :class:`ActionError` naming the action and why it is illegal; the state
        is then unchanged. Any integer type is accepted (numpy's included), bools are not.
        """
        if type(action) is not int:
            action = as_action_id(action)
        reason = self.illegal_reason(action)
        if reason is not None:
            self.refuse(action, reason)
        if action < DRAW_DECK:
            if action < DISCARD:
                self._play(action % NUM_CARD_KINDS, action >= PLAY_LARGE)
            else:
                self._discard(action - DISCARD)
        elif action < BONUS_ADVANCE:
            self._draw(action)
        else:
            self._bonus(action)

    def _play(self, k: int, large: bool) -> None:
        """R3a + R4 + R5: play a card onto the own row and move the figure."""
        p = self.current
        c = _COLOR_OF[k]
        v = _VALUE_OF[k]
        self.hands[p].remove(k)
        self.rows[p][c].append(v)
        top = self.last[p][c]
        if top >= 0 and self.direction[p][c] == 0 and v != top:
            self.direction[p][c] = 1 if v > top else -1
        self.last[p][c] = v
        row = self.pos[p][c]
        if row == 0:
            if large:
                self.large[p] = c
            bonus = self._arrive(p, c, 1)
        elif row == END_ROW:
            bonus = True  # R5: completed path, the figure stays and a bonus step follows
        else:
            bonus = self._arrive(p, c, row + 1)
        if self.phase != Phase.OVER:
            self.phase = Phase.BONUS if bonus else Phase.DRAW

    def _discard(self, k: int) -> None:
        p = self.current
        c = _COLOR_OF[k]
        self.hands[p].remove(k)
        self.discards[c].append(_VALUE_OF[k])
        self.discarded = c
        self.phase = Phase.DRAW

    def _draw(self, action: int) -> None:
        """R3b, then the turn passes; R8.2 ends the game on the last card of the pile."""
        p = self.current
        if action == DRAW_DECK:
            insort(self.hands[p], self.deck.pop())
            if not self.deck:
                self.turn += 1
                self._finish(EndReason.DECK)
                return
        else:
            c = action - DRAW_DISCARD
            insort(self.hands[p], c * NUM_VALUES + self.discards[c].pop())
        self.turn += 1
        self.discarded = -1
        if self.turn >= self.config.max_turns:
            self._finish(EndReason.TRUNCATED)
            return
        self.current = (p + 1) % self.num_players
        self.phase = Phase.PLAY

    def _bonus(self, action: int) -> None:
        """R7: one optional bonus step; a clover reached by it chains another one."""
        if action == PASS:
            self.phase = Phase.DRAW
            return
        p = self.current
        if action < BONUS_OPEN_SMALL:
            c = action - BONUS_ADVANCE
            bonus = self._arrive(p, c, self.pos[p][c] + 1)
        else:
            c = (action - BONUS_OPEN_SMALL) % NUM_COLORS
            if action >= BONUS_OPEN_LARGE:
                self.large[p] = c
            bonus = self._arrive(p, c, 1)
        if self.phase != Phase.OVER:
            self.phase = Phase.BONUS if bonus else Phase.DRAW

    def _arrive(self, p: int, c: int, row: int) -> bool:
        """Move player ``p``'s figure on path ``c`` to ``row``; apply R8.1 and R6.

        Returns whether a bonus step is earned (a clover).
        """
        self.pos[p][c] = row
        if row == GOAL_FIRST_ROW:
            self.goal_count += 1
            if self.goal_count >= GOAL_FIGURES_TO_END:
                self._finish(EndReason.GOAL)  # R6: the ending move triggers no tile
                return False
        tile = self.tiles[c][row]
        if tile == NO_TILE:
            return False
        if tile == CLOVER:
            return True
        if tile == WISHING_STONE:
            self.wishing[p] += 1
            self.tiles[c][row] = NO_TILE  # the stone leaves the board with its new owner
            return False
        self.tile_points[p] += TILE_POINTS[tile]
        return False

    def _finish(self, reason: EndReason) -> None:
        self.end = reason
        self.phase = Phase.OVER
        self.discarded = -1

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        return (
            f"GameState(players={self.num_players}, turn={self.turn}, current={self.current}, "
            f"phase={self.phase.name}, deck={len(self.deck)}, end={self.end.name})"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of the whole state; :meth:`from_dict` rebuilds it."""
        return state_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameState:
        """Rebuild a state from :meth:`to_dict`'s form, refusing any broken invariant."""
        return state_from_dict(data, cls)

    def view(self, player: int) -> PlayerView:
        """What ``player`` may know (R10), as a :class:`~keltis_env.games.keltis.view.PlayerView`."""
        return PlayerView.of(self, player)


def sample_state(view: PlayerView, rng: random.Random) -> GameState:
    """A full game state consistent with ``view``: the hidden cards dealt at random.

    Every card the viewer has not seen is shuffled and dealt to the other hands (at
    their known sizes), the removed pile (2 players) and the draw pile (its known size).
    The result is a legal state from which play can continue, e.g. for determinized
    search.
    """
    hidden = [k for k, n in enumerate(view.unseen_counts()) for _ in range(n)]
    rng.shuffle(hidden)
    s = GameState.__new__(GameState)
    s.config = view.config
    s.num_players = view.num_players
    s.dark_rows = view.dark_rows
    at = 0
    s.hands = []
    for p in range(view.num_players):
        if p == view.player:
            s.hands.append(list(view.hand))
        else:
            size = view.hand_sizes[p]
            s.hands.append(sorted(hidden[at : at + size]))
            at += size
    n_removed = REMOVED_CARDS[view.num_players]
    s.removed = sorted(hidden[at : at + n_removed])
    at += n_removed
    s.deck = hidden[at:]
    assert len(s.deck) == view.deck_size, "view's card counts are inconsistent"
    s.discards = [list(d) for d in view.discards]
    s.rows = [[list(r) for r in pr] for pr in view.rows]
    s.last = [[r[-1] if r else -1 for r in pr] for pr in view.rows]
    s.direction = [[row_direction(r) for r in pr] for pr in view.rows]
    s.pos = [list(x) for x in view.positions]
    s.large = list(view.large)
    s.tiles = [list(t) for t in view.tiles]
    s.wishing = list(view.wishing)
    s.tile_points = list(view.tile_points)
    s.phase = view.phase
    s.current = view.current_player
    s.first_player = view.first_player
    s.discarded = view.discarded_color
    s.turn = view.turn
    s.goal_count = view.goal_count
    s.end = view.end
    return s


_TOP_WISHING = len(WISHING_SCORES) - 1


def _score(pos: list[int], large: int, tile_points: int, wishing: int) -> int:
    """R9: figures by row value (the large one doubled), point tiles, wishing stones."""
    v = ROW_VALUES
    a, b, c, d, e = pos  # one entry per path
    total = v[a] + v[b] + v[c] + v[d] + v[e] + tile_points
    total += WISHING_SCORES[wishing if wishing < _TOP_WISHING else _TOP_WISHING]
    if large >= 0:
        total += v[pos[large]] * (LARGE_MULTIPLIER - 1)
    return total


_STEP_NAMES = {Phase.PLAY: "play", Phase.DRAW: "draw", Phase.BONUS: "bonus", Phase.OVER: "over"}

#: ``Phase`` and ``EndReason`` are declared in :mod:`.constants` and also exported here,
#: next to the state that uses them.
__all__ = ["EndReason", "GameState", "Phase", "row_direction", "sample_state"]
