"""The rules-only search model of the card game (``ismcts:model=rules,net=PATH``): a
determinised search that knows nothing but the rules and a policy file.

The plan model (:mod:`.plan`, :mod:`.planner`) is hand-written knowledge of the game; a
network learned from scratch that is improved by a search guided by it is no longer learned
from scratch. :class:`RulesSearchModel` replaces it in the generic search
(:mod:`keltis_env.bots.search`) with what the rules give and what the network knows:

* **Ranker.** Every legal action, each worth 0 points; the search adds the policy's term
  (``policy_weight`` points per unit of log-probability), so the network's policy alone
  chooses the candidates (the ``top_k`` most probable within ``margin`` points) and, through
  ``prior``, the values the search's means are shrunk towards. ``policy_weight=0`` is
  refused: nothing would rank. No move is taken as a win on the spot.
* **Rollouts.** ``rollout=net`` (the default): the policy's most probable legal action for
  every seat, from that seat's view of the sampled world
  (:meth:`~keltis_env.bots.net_guide.NetGuide.act`); ``rollout=random``: a uniform random
  legal action, drawn from the bot's own seeded generator.
* **Leaves.** ``leaf=value`` (the default): the value head at the searcher's next decision,
  the positions of a stage valued in one batch (as for every guided search);
  ``leaf=score``: the score margin if the game ended now (the searcher's score minus the best
  other score, R9: :meth:`~keltis_env.games.keltis.state.GameState.scores`), where the
  rollout's ``depth`` rounds end; ``leaf=both``: the mean of the two at the searcher's next
  decision. A finished game is worth its final margin plus or minus ``win_bonus``.

The spec's ``leaf=model`` and ``rollout=model`` name the plan model, as does
``backend=compiled`` (its kernels rank and roll out with it): with ``model=rules`` each is
refused in one line (``backend=auto`` searches in Python). ``model=rules`` without ``net=``
is refused too: the policy is the ranker. ``leaf=score`` and ``rollout=random`` are
``model=rules`` options: the plan model's search refuses them.

Spec examples: ``ismcts:model=rules,net=policies/keltis_2p_scratch.zip`` (policy rollouts,
value head at the leaves), ``...,rollout=random,leaf=score,depth=2`` (rules only but for the
ranker), ``...,iterations=32,top_k=4``.
"""

from __future__ import annotations

import random
from typing import Any

from keltis_env.bots.search import SearchModel
from keltis_env.games.keltis.state import Phase

#: The values of the card game search's ``model`` option: the plan model (the default) or the rules alone.
MODELS = ("plan", "rules")
#: The rules model's leaves and rollouts as the spec names them, and as the generic search
#: knows them (its "model" evaluator and rollout policy are this module's score margin and
#: random moves).
RULES_LEAVES = {"value": "value", "score": "model", "both": "both"}
RULES_ROLLOUTS = {"net": "net", "random": "model"}


class RulesSearchModel(SearchModel):
    """The rules as the search's model: every legal action as a candidate (the network's
    policy ranks them), uniform random legal moves as the rollout policy, the score margin
    if the game ended now as the evaluator. It never calls the plan model."""

    def __init__(self) -> None:
        #: the generator of the random rollouts: the searching bot's own, set before each search
        self.rng = random.Random(0)

    def candidates(self, view: Any, root: Any) -> list[tuple[int, float]]:
        """Every legal action at 0 points: the search's policy term is the whole ranking."""
        return [(int(a), 0.0) for a in view.legal_actions]

    def starts_turn(self, state: Any) -> bool:
        return bool(state.phase == Phase.PLAY)

    def policy(self, state: Any, context: Any) -> int:
        """A uniform random legal action (``rollout=random``)."""
        legal = state.legal_actions()
        return int(legal[self.rng.randrange(len(legal))])

    def evaluate(self, state: Any, player: int, context: Any) -> float:
        """The margin of ``player`` if the game ended now: its score minus the best other score."""
        scores = state.scores()
        return float(scores[player] - max(s for q, s in enumerate(scores) if q != player))


def check_model(bot: str, model: Any) -> str:
    """``model`` if it is one of :data:`MODELS`; else a ``ValueError`` naming the bot's option."""
    if not isinstance(model, str) or model not in MODELS:
        raise ValueError(f"{bot} option model must be one of {', '.join(MODELS)}, got {model!r}")
    return model


def plan_options(bot: str, leaf: Any, rollout: Any) -> None:
    """Refuse the rules model's own ``leaf`` and ``rollout`` values for the plan model's search."""
    for option, value, own in (("leaf", leaf, "score"), ("rollout", rollout, "random")):
        if value == own:
            raise ValueError(f"{bot} option {option}={own} is the rules model's: give model=rules too "
                             f"(e.g. {bot}:model=rules,net=PATH,{option}={own})")


def rules_options(bot: str, net: Any, leaf: Any, rollout: Any, policy_weight: Any,
                  backend: str) -> tuple[str, str]:
    """The generic search's ``leaf`` and ``rollout`` for the rules model's spec values (see the
    module doc); a one-line ``ValueError`` for a combination that needs the plan model or
    that leaves nothing to rank."""
    if net is None:
        raise ValueError(f"{bot} option model=rules needs a network, whose policy ranks the candidates: give "
                         f"net=PATH too, e.g. {bot}:model=rules,net=policies/keltis_2p_scratch.zip")
    if backend == "compiled":
        raise ValueError(f"{bot} option backend=compiled cannot run model=rules: the compiled search ranks and "
                         "rolls out with the plan model; give backend=python (or auto)")
    leaf = "value" if leaf is None else leaf
    rollout = "net" if rollout is None else rollout
    if leaf == "model" or rollout == "model":
        option, allowed = ("leaf", RULES_LEAVES) if leaf == "model" else ("rollout", RULES_ROLLOUTS)
        raise ValueError(f"{bot} option {option}=model is the plan model's, which model=rules never calls; give "
                         f"{option}={' or '.join(allowed)}")
    if leaf not in RULES_LEAVES:
        raise ValueError(f"{bot} option leaf must be one of {', '.join(RULES_LEAVES)} with model=rules, got {leaf!r}")
    if rollout not in RULES_ROLLOUTS:
        raise ValueError(f"{bot} option rollout must be one of {', '.join(RULES_ROLLOUTS)} with model=rules, "
                         f"got {rollout!r}")
    if policy_weight is not None and not isinstance(policy_weight, bool) and policy_weight == 0:
        raise ValueError(f"{bot} option policy_weight must be > 0 with model=rules: the policy is the only "
                         "ranker (0 would rank every action alike)")
    return RULES_LEAVES[leaf], RULES_ROLLOUTS[rollout]


def spec_names(leaf: str, rollout: str) -> tuple[str, str]:
    """The spec's names of the generic search's ``leaf`` and ``rollout`` under the rules model."""
    leaves = {v: k for k, v in RULES_LEAVES.items()}
    rollouts = {v: k for k, v in RULES_ROLLOUTS.items()}
    return leaves[leaf], rollouts[rollout]


__all__ = ["MODELS", "RULES_LEAVES", "RULES_ROLLOUTS", "RulesSearchModel", "check_model", "plan_options",
           "rules_options", "spec_names"]
