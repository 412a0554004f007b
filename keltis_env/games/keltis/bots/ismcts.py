"""Determinised search at the bot's information set (ISMCTS) for the card game.

The generic search (:mod:`keltis_env.bots.search`) with the card game's plan model
(:mod:`.plan`, :mod:`.planner`) as its ranker, rollout policy and evaluator. The bot
cannot see the other hands, the order of the draw pile or, with 2 players, the removed
cards (R10); every iteration deals them at random
(:func:`~keltis_env.games.keltis.state.sample_state`) and plays on in that world:

* **Ranker.** The plan model's :func:`~.planner.action_values`; a move that wins the game
  on the spot (worth about +1000) is taken at once.
* **Rollouts.** The plan model's greedy policy for every player, on their sampled hands;
  a round of turns ends when the searcher is about to play a card again.
* **Evaluation.** An unfinished position is worth the difference of the players' plan
  values (:meth:`~.plan.Planner.value`), with each player's turn price and expected end
  of the game fixed at the root (for the searcher) or at the sampled world (for the
  others), so that the values of different rollouts are comparable.

The default, 64 rollouts of 2 rounds over at most 6 candidates within 3 points of the
best, takes about 20-30 ms per searched decision (at most about 50 ms) on the reference
machine (2 shared cores, Python 3.11).

Spec examples: ``ismcts``, ``ismcts:iterations=256``, ``ismcts:seconds=0.1``,
``ismcts:iterations=0`` (plan model only: the ``planner`` bot),
``ismcts:iterations=200,depth=1,top_k=8``.

Backend (``backend=``, the card game's bots' option of :mod:`.compiled`): ``python`` (the
default) searches with this module's code; ``compiled`` makes the whole decision in one
call of the compiled search (:mod:`~keltis_env.games.keltis.kernels_ismcts`, numba, the
``fast`` extra: refused in one line without it): the same candidates, rollouts, evaluation,
stages and settings, the plan model's moves and values bit for bit, but its own random
numbers, so its decisions differ from the Python search's while its play is as strong.
``auto`` is ``compiled`` where numba can be imported, else ``python``. The compiled search
takes its budget in iterations: ``seconds=`` with ``backend=compiled`` is refused in one line
(with ``auto`` it searches in Python). Spec examples: ``ismcts:backend=compiled``,
``ismcts:backend=compiled,iterations=640``.

With a network (``net=``, below) ``compiled`` runs the guided search on the compiled core
(:class:`CompiledRootModel`, :class:`~.compiled.CompiledGuidedSearch`,
:mod:`~keltis_env.games.keltis.kernels_guided`): the root ranked by the plan model's kernel
plus the policy's term (its own priors, symmetry averaging included), each stage's rollouts
in one kernel call, which writes the network's observations of the positions where they
stop (the compiled encoder, the file's features bit for bit), and the value head run once a
stage on all of them by the guide (:meth:`~keltis_env.bots.net_guide.NetGuide.points_of`),
with the Python search's weights (``leaf=value``, ``both``, ``model``; a ``shaped`` value
head's potential). The rollouts play the plan model: ``rollout=net`` is refused in one line
with ``backend=compiled`` (with ``auto`` it searches in Python), as are features the compiled
encoder does not write. Spec example:
``ismcts:backend=compiled,net=policies/keltis_2p_value.zip,leaf=both,iterations=176,confident=0.7``.

Guided by a policy file (:class:`~keltis_env.bots.net_guide.NetGuide`):
``ismcts:net=policies/keltis_2p.zip`` (the policy ranks the candidates, rollouts of one round
end at the value head), ``ismcts:net=policies/keltis_2p.zip,rollout=net`` (the policy plays
the rollouts), ``...,leaf=model`` (the game's evaluator at the leaves), ``...,leaf=both``
(the mean of the value head and the evaluator),
``...,policy_weight=0`` (the model ranks alone), ``...,value_scale=30``,
``...,confident=0.8`` (the policy's move, unsearched, where it gives it 0.8 or more).

Model (``model=``): ``plan`` (the default) is the plan model above; ``rules`` searches with
the rules and the network alone (:class:`~.rules_model.RulesSearchModel`, which never calls
the plan model): the policy ranks the candidates, the policy (``rollout=net``, the default)
or uniform random moves (``rollout=random``) play the rollouts, the value head
(``leaf=value``, the default), the score margin if the game ended now (``leaf=score``) or
their mean (``leaf=both``) values the leaves. It needs ``net=``, searches in Python and
refuses ``leaf=model``, ``rollout=model``, ``policy_weight=0`` and ``backend=compiled``.
Spec example: ``ismcts:model=rules,net=policies/keltis_2p_scratch.zip,rollout=random,leaf=score``.
"""

from __future__ import annotations

from typing import Any

from keltis_env.bots.search import CandidateResult, SearchBot, SearchModel, SearchResult
from keltis_env.games.keltis.state import Phase
from keltis_env.games.keltis.view import LiveView

from .compiled import CompiledGuidedSearch, check_backend, compiled_guided, compiled_search
from .plan import Planner, Weights
from .planner import action_values, choose
from .rules_model import RulesSearchModel, check_model, plan_options, rules_options, spec_names

#: A player's fixed scale for a search: (turn price, goal turn, unseen pool).
Setup = tuple[float, float, tuple[Any, ...]]


def _setup(p: Planner) -> Setup:
    return p.lam, p.goal_turn, (p.unseen, p.prefix, p.suffix, sum(map(sum, p.unseen)))


class PlanSearchModel(SearchModel):
    """The plan model as the search's ranker, rollout policy and evaluator."""

    #: Action values at or above this are game-winning moves (see :func:`.planner.end_value`).
    winning = 500.0

    def __init__(self, weights: Weights | None = None) -> None:
        self.weights = weights or Weights()

    def begin(self, view: Any) -> Planner:
        return Planner(view, view.player, self.weights)

    def candidates(self, view: Any, root: Planner) -> list[tuple[int, float]]:
        return action_values(view, self.weights, planner=root)

    def prepare(self, view: Any, world: Any, root: Planner) -> list[Setup]:
        """Every player's scale: the searcher's from its root view, the others' from their
        sampled hands."""
        w = self.weights
        me = view.player
        return [
            _setup(root) if q == me else _setup(Planner(LiveView(world, q), q, w)) for q in range(view.num_players)
        ]

    def starts_turn(self, state: Any) -> bool:
        return bool(state.phase == Phase.PLAY)

    def _planner(self, state: Any, q: int, setups: list[Setup]) -> Planner:
        lam, goal, pool = setups[q]
        return Planner(LiveView(state, q), q, self.weights, lam=lam, goal_turn=goal, pool=pool)

    def policy(self, state: Any, context: list[Setup]) -> int:
        p = state.current
        planner = self._planner(state, p, context)
        return choose(action_values(planner.view, self.weights, planner=planner))

    def evaluate(self, state: Any, player: int, context: list[Setup]) -> float:
        values = [self._planner(state, q, context).value() for q in range(state.num_players)]
        return values[player] - max(v for q, v in enumerate(values) if q != player)


class CompiledRootModel(PlanSearchModel):
    """The plan model of the search guided by a network on the compiled core: the root is
    the view's state row with what it hides cleared, its actions ranked by the plan model's
    kernel (the Python ranker's actions and values); the rollouts run in the kernels
    (:class:`~.compiled.CompiledGuidedSearch`)."""

    def __init__(self, search: CompiledGuidedSearch, weights: Weights | None = None) -> None:
        super().__init__(weights)
        self.search = search

    def begin(self, view: Any) -> Any:
        return self.search.root(view)

    def candidates(self, view: Any, root: Any) -> list[tuple[int, float]]:
        return self.search.rank(root, self.weights)


class ISMCTSBot(SearchBot):
    """Determinised search guided by the plan model (or, with ``model=rules``, by the rules and a
    network alone); see the module documentation and
    :class:`~keltis_env.bots.search.SearchBot` for the options."""

    name = "ismcts"
    #: It reads the view only during ``act`` (the sampled worlds copy what they need).
    accepts_live_view = True
    default_iterations = 64
    game_name = "keltis"

    def __init__(
        self,
        seed: int | None = None,
        iterations: int | None = None,
        seconds: float | None = None,
        top_k: int = 6,
        depth: int | None = None,
        stage: int = 6,
        prior: float = 8.0,
        win_bonus: float = 10.0,
        margin: float = 3.0,
        net: str | None = None,
        leaf: str | None = None,
        rollout: str | None = None,
        policy_weight: float | None = None,
        value_scale: float | None = None,
        confident: float | None = None,
        backend: str = "python",
        model: str = "plan",
        *,
        num_players: int | None = None,
    ) -> None:
        check_backend(self.name, backend)
        #: the search's model: "plan" (PlanSearchModel) or "rules" (RulesSearchModel)
        self.model_name = check_model(self.name, model)
        if self.model_name == "rules":
            leaf, rollout = rules_options(self.name, net, leaf, rollout, policy_weight, backend)
            backend = "python"
        else:
            plan_options(self.name, leaf, rollout)
        if backend == "compiled":
            if net is not None and rollout not in (None, "model"):
                raise ValueError(f"{self.name} option rollout={rollout} cannot run on backend=compiled: its rollouts "
                                 "play the plan model (rollout=model, the default); give backend=python for "
                                 f"rollout={rollout}")
            if seconds is not None:
                raise ValueError(f"{self.name} option backend=compiled takes its budget in iterations, not seconds: "
                                 "give iterations=N (or backend=python with seconds=...)")
        super().__init__(seed, iterations, seconds, top_k, depth, stage, prior, win_bonus, margin, net, leaf, rollout,
                         policy_weight, value_scale, confident, num_players=num_players)
        self.backend = backend
        #: the compiled search, or None for the Python one (always with a network or a budget in seconds)
        self.compiled = compiled_search(backend) if net is None and seconds is None else None
        #: the compiled search guided by the network, or None for the Python one
        self.guided: CompiledGuidedSearch | None = None
        if self.net is not None and seconds is None and self.rollout == "model" and self.model_name == "plan":
            info = self.net.info
            self.guided = compiled_guided(backend, info.num_players, info.features)
            if self.guided is not None:
                self.model = CompiledRootModel(self.guided, self.weights)

    def __repr__(self) -> str:
        text = super().__repr__()
        if self.model_name == "rules":
            leaf, rollout = spec_names(self.leaf, self.rollout)
            text = text.replace(f"leaf={self.leaf}, rollout={self.rollout}", f"leaf={leaf}, rollout={rollout}")
            return f"{text[:-1]}, model=rules)"
        return text if self.backend == "python" else f"{text[:-1]}, backend={self.backend})"

    def analyse(self, view: Any) -> SearchResult:
        """The decision at ``view`` (see :meth:`SearchBot.analyse`), through the compiled
        search where the bot has one; the candidates' priors are then ``None``."""
        if self.compiled is None or len(view.legal_actions) < 2:
            return super().analyse(view)
        action, rows, samples, rollouts = self.compiled.decide(view, self)
        cands = tuple(CandidateResult(a, rank, None, count, mean, score) for a, rank, count, mean, score in rows)
        return SearchResult(action, cands, samples, rollouts)

    def _search(self, view: Any, root: Any, cands: list[tuple[int, float]]) -> Any:
        """The rollouts of the candidates (see :meth:`SearchBot._search`): compiled, stage by
        stage, where the bot searches with a network on the compiled core."""
        if isinstance(self.model, RulesSearchModel):
            self.model.rng = self.rng  # the random rollouts draw from the bot's seeded generator
        if self.guided is None:
            return super()._search(view, root, cands)
        return self.guided.search(root, cands, self)

    def new_model(self) -> PlanSearchModel | RulesSearchModel:
        return RulesSearchModel() if self.model_name == "rules" else PlanSearchModel()

    @property
    def weights(self) -> Weights:
        """The plan model's weights (a search with ``model=rules`` has none)."""
        if not isinstance(self.model, PlanSearchModel):
            raise ValueError(f"{self.name} with model=rules has no plan model, hence no plan weights")
        return self.model.weights


__all__ = ["CompiledRootModel", "ISMCTSBot", "PlanSearchModel"]
