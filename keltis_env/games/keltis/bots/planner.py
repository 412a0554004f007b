"""The card game's plan model as a player: action values and the ``planner`` bot.

An action's value is the change it makes to the player's plan value
(:class:`~keltis_env.games.keltis.bots.plan.Planner`): the step and tile it reaches now,
minus what it costs the plans (cards used or thrown away, range lost, figures spent),
minus what a discard is worth to the opponents (``feed``), plus, for draws, the expected
worth of the card taken. A move that ends the game (fifth figure in the goal area, R8.1;
last card of the draw pile, R8.2) is worth +/-1000 by whether it wins.
:func:`action_values` gives these values for every legal action.

:class:`PlannerBot` (``make_bot("planner")``) plays the action of highest value, without
search: the ranker and rollout policy of the ``ismcts`` bot, which with
``ismcts:iterations=0`` plays the same. It reads only its view and draws no random
numbers (ties go to the lowest action id); a decision takes well under a millisecond.
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
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    NUM_COLORS,
    NUM_VALUES,
    ROW_VALUES,
)
from keltis_env.games.keltis.state import Phase

from .compiled import check_backend, compiled_decider
from .plan import Planner, Weights

#: Worth of ending the game: winning or losing outweighs any plan.
_DECISIVE = 1000.0


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


class PlannerBot(Bot):
    """Plays the plan model's best action (:func:`action_values`), without search.

    Option (agent spec ``planner:backend=compiled``): ``backend`` (``python``, the default:
    this code; ``compiled``: the compiled kernel, :mod:`.compiled`, the ``fast`` extra;
    ``auto``: the compiled kernel when numba is installed, else this code). Every backend
    makes the same decisions; :meth:`action_values` is always the Python model's.
    """

    name = "planner"
    #: It reads the view only during ``act`` and changes nothing in it: the match loop may
    #: pass the zero-copy live view (the same fields, the same decisions).
    accepts_live_view = True

    def __init__(self, seed: int | None = None, backend: str = "python") -> None:
        super().__init__(seed)
        check_backend("planner", backend)
        self.weights = Weights()
        self.backend = backend
        #: the compiled decision, or None for this module's Python code
        self.compiled = compiled_decider(self, backend)

    def act(self, view: Any) -> int:
        if self.compiled is not None:
            action = self.compiled.decide(view, self)
            if action < 0:
                raise ValueError("PlannerBot.act called for a view with no legal action (not this player's turn)")
            return action
        legal = view.legal_actions
        if not legal:
            raise ValueError("PlannerBot.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:
            return int(legal[0])
        return choose(action_values(view, self.weights))

    def action_values(self, view: Any) -> list[tuple[int, float]]:
        """Every legal action with its plan-model value (:func:`action_values`); :meth:`act`
        plays the first of the highest."""
        if not view.legal_actions:
            raise ValueError("PlannerBot.action_values called for a view with no legal action (not this player's turn)")
        return action_values(view, self.weights)


__all__ = ["PlannerBot", "action_values", "choose", "end_value", "feed_value"]
