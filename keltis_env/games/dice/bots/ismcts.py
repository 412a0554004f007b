"""Determinised search for the dice game (docs/rules.md R11): ``make_bot("ismcts", game="dice")``.

The dice game hides only the future dice, so every iteration of the generic search
(:mod:`keltis_env.bots.search`) is the position itself with a fresh dice sequence drawn by
the game's ``sample_state``. The game's part (:class:`DiceSearchModel`):

* **Ranker.** The dice heuristic's values
  (:meth:`~.heuristic.DiceHeuristicBot.action_values`): the exact expected points of each
  distinct keep/re-roll choice (step 2), the points of each move (step 4) or clover step
  (step 5). A move that ends the game with a win is worth at least the heuristic's
  ``win_value`` and is taken at once.
* **Rollouts.** Every player plays the heuristic's moves and clover steps, with a cheaper
  re-roll rule (:func:`quick_reroll`: keep the roll, or keep one colour's dice and throw
  the others, valued with the heuristic's move values), for ``depth`` rounds of turns
  (a round ends when the searcher is about to roll again, an extra turn included) or to
  the end of the game.
* **Evaluation.** An unfinished position is worth the searcher's score minus the best
  other score (R11 scoring: row values and the stone table); a finished game adds
  ``win_bonus`` for a win.

Rollouts look two rounds ahead by default: enough to see what a choice does to the next
turns (bonus squares within reach, dice wasted at the top, the race to end the game),
which the one-turn heuristic does not; three rounds, or twice the rollouts, played no
better against ``heuristic`` in 200-game trials. The default, 128 rollouts over at most 6 candidates within
3 points of the best, takes about 25 ms per decision, forced ones included, on the
reference machine (2 shared cores, Python 3.11, ``keltis evaluate --workers 1`` at a
load average near 5).

Spec examples: ``ismcts``, ``ismcts:iterations=256``, ``ismcts:seconds=0.05``,
``ismcts:iterations=0`` (the heuristic's ranking only), ``ismcts:depth=3,top_k=8``.

Guided by a policy file (:class:`~keltis_env.bots.net_guide.NetGuide`):
``ismcts:net=policies/dice_2p.zip`` (the policy ranks the candidates, rollouts of one round
end at the value head), ``ismcts:net=policies/dice_2p.zip,rollout=net`` (the policy plays
the rollouts), ``...,leaf=model`` (the game's evaluator at the leaves), ``...,leaf=both``
(the mean of the value head and the evaluator),
``...,policy_weight=0`` (the model ranks alone), ``...,value_scale=30``.
"""

from __future__ import annotations

from math import comb
from typing import Any

from keltis_env.bots.search import SearchBot, SearchModel
from keltis_env.games.dice.constants import (
    NUM_COLORS,
    NUM_DICE,
    NUM_FACES,
    STONE_FACE,
    STONE_FACES_FOR_STONE,
    Phase,
    stone_score,
)
from keltis_env.games.dice.state import landing_row
from keltis_env.games.dice.view import LiveView

from .heuristic import DiceHeuristicBot

_COLUMNS = range(NUM_COLORS)
#: _BINOMIAL[n][j]: probability that j of n thrown dice show one given face.
_BINOMIAL = tuple(
    tuple(comb(n, j) * (1 / NUM_FACES) ** j * (1 - 1 / NUM_FACES) ** (n - j) for j in range(n + 1))
    for n in range(NUM_DICE + 1)
)


def quick_reroll(heuristic: DiceHeuristicBot, view: Any) -> int:
    """A cheap re-roll rule for rollouts (step 2): keep the roll, or keep the dice of one
    colour and throw all the others, whichever ``heuristic``'s move values expect to be
    worth most. Only the kept colour is counted after a throw (the other colours the
    thrown dice may show are not), so the rule throws a little less often than the
    heuristic's exact expectation; it is some twenty times faster."""
    p = view.player
    counts = view.counts
    row_of = view.positions[p]
    best_value = 0.0
    best_colour = -1
    keep = None
    for c in _COLUMNS:
        if not heuristic._can_choose(view, c):
            continue
        k = counts[c]
        row = row_of[c]
        # the value of moving with k + j dice, j = 0..n; dice past row 9 change nothing
        by_row: dict[int, float] = {}
        values = []
        for total in range(k, NUM_DICE + 1):
            if not total:
                values.append(0.0)
                continue
            to = landing_row(row, total)
            value = by_row.get(to)
            if value is None:
                value = by_row[to] = heuristic._move_value(view, c, total)
            values.append(value)
        if k and (keep is None or values[0] > keep):
            keep = values[0]
        value = sum(q * v for q, v in zip(_BINOMIAL[NUM_DICE - k], values, strict=True))
        if best_colour < 0 or value > best_value:
            best_value, best_colour = value, c
    if best_colour < 0:
        return 0  # no colour can be chosen: nothing to hope for
    if keep is not None:
        if counts[STONE_FACE] >= STONE_FACES_FOR_STONE:  # the roll kept gives a stone (R11.3)
            keep += stone_score(view.stones[p] + 1) - stone_score(view.stones[p])
        if keep >= best_value:
            return 0
    mask = 0
    for i, face in enumerate(view.dice):
        if face != best_colour:
            mask |= 1 << i
    return mask


class DiceSearchModel(SearchModel):
    """The dice heuristic as the search's ranker and rollout policy; the score difference
    as its evaluator. See the module documentation."""

    def __init__(self, heuristic: DiceHeuristicBot | None = None) -> None:
        self.heuristic = heuristic or DiceHeuristicBot()
        #: the heuristic values a winning end at least this much (and nothing else as much)
        self.winning = self.heuristic.win_value

    def candidates(self, view: Any, root: Any) -> list[tuple[int, float]]:
        # Rounded, so that choices the heuristic values alike (up to rounding errors) keep
        # its order: keep first, then the fewest dice thrown, then the lowest action id.
        return [(a, round(v, 9)) for a, v in self.heuristic.action_values(view)]

    def starts_turn(self, state: Any) -> bool:
        return bool(state.phase == Phase.REROLL)

    def policy(self, state: Any, context: Any) -> int:
        view = LiveView(state, state.current)
        if state.phase == Phase.REROLL:
            return quick_reroll(self.heuristic, view)
        return self.heuristic.act(view)

    def evaluate(self, state: Any, player: int, context: Any) -> float:
        scores = state.scores()
        return float(scores[player] - max(s for q, s in enumerate(scores) if q != player))


class DiceISMCTSBot(SearchBot):
    """Determinised search guided by the dice heuristic; see the module documentation and
    :class:`~keltis_env.bots.search.SearchBot` for the options."""

    name = "ismcts"
    default_iterations = 128
    #: It reads the view only during ``act`` (the search copies what it needs).
    accepts_live_view = True
    game_name = "dice"

    def new_model(self) -> DiceSearchModel:
        return DiceSearchModel()


__all__ = ["DiceISMCTSBot", "DiceSearchModel", "quick_reroll"]
