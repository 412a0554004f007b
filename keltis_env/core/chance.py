"""Explicit chance: a game's random events as chance nodes with exact probabilities
(standard library only).

The engines draw their randomness from a seed (deck order, dice); frameworks that model
chance explicitly (OpenSpiel) need every random event as a node of the game tree instead,
with its outcomes and their probabilities. A game that supports this names a *chance
model* in its descriptor (``GameDescriptor.chance_model``, ``"module:attribute"``): a
class with the same shape in every game (``keltis_env.games.<game>.chance.Chance``):

* ``Chance(config)``: a game about to be set up; its first chance node is pending;
* ``.state``: the engine state, ``None`` while the set-up's chance events are still
  pending (no position exists yet);
* ``.node()``: the pending :class:`ChanceNode`, or ``None`` when a player decides (or the
  game is over);
* ``.apply_outcome(outcome)``: resolve the pending node; returns the outcome's text;
* ``.apply_action(action)``: a player's decision (the engine refuses an illegal one);
  a decision that needs a random event (a draw, a roll) leaves its chance node pending;
* ``.clone()``; ``.rebased(state)``: the same pending event over another engine state
  consistent with the same view (a resampled state);
* ``Chance.max_outcomes(config)`` and ``Chance.max_nodes(config)``: the largest outcome
  id + 1 and the most chance nodes a game can have.

The engine state the model keeps is a real engine state: decisions go through its
``apply``, so the rules stay the engine's; the model only decides what the random
events are and how likely each outcome is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: ``ChanceNode.seen_by`` for an outcome every player sees (a tile, a die)
EVERYONE = -1
#: ``ChanceNode.seen_by`` for an outcome no player sees (a card removed unseen)
NOBODY = -2


@dataclass(frozen=True)
class ChanceNode:
    """One pending random event: what happens (public), who sees the outcome, and the
    outcomes (ids) with their exact probabilities, in ascending id order."""

    what: str  # public description, e.g. "deal a card to player 1"
    seen_by: int  # EVERYONE, NOBODY or the one seat that sees the outcome
    outcomes: Mapping[int, float]
    outcome_text: Callable[[int], str]  # outcome id -> text, e.g. "deal red 7 to player 1"

    def check(self, outcome: int) -> None:
        """Refuse an outcome this node does not have, naming the event and the outcomes."""
        if outcome not in self.outcomes:
            raise ValueError(f"{outcome!r} is not an outcome of the chance event {self.what!r}; "
                             f"its outcomes are {sorted(self.outcomes)}")


def counted_outcomes(counts: Mapping[int, int]) -> dict[int, float]:
    """Drawing one item from a pool holding ``counts[i]`` copies of item ``i``: each item
    id with its probability, ascending (items with no copies left are not outcomes)."""
    total = sum(counts.values())
    return {item: n / total for item, n in sorted(counts.items()) if n}


def uniform_outcomes(count: int) -> dict[int, float]:
    """Outcomes ``0..count-1``, equally likely."""
    return dict.fromkeys(range(count), 1.0 / count)


__all__ = ["EVERYONE", "NOBODY", "ChanceNode", "counted_outcomes", "uniform_outcomes"]
