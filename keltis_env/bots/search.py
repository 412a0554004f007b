"""Determinised search at a player's information set, for any game of the package.

A bot that searches cannot see what its view hides (the other hands and the draw pile in
the card game, the future dice in the dice game). Every *iteration* of the search draws a
full state consistent with the view from the game's own ``sample_state(view, rng)``
(:attr:`keltis_env.core.game.GameDescriptor.sample_state`) and plays candidate actions on
in that sampled world. What the search needs from a game is a :class:`SearchModel`:

* a **ranker** (:meth:`SearchModel.candidates`): the legal actions worth comparing, each
  with a value from a quick model of the game (higher is better);
* a **rollout policy** (:meth:`SearchModel.policy`): a fast player for every seat of a
  sampled world, acting on what that seat may know there;
* an **evaluator** (:meth:`SearchModel.evaluate`): the worth of an unfinished position for
  the searching player, in points of score difference against the best other player.

The search (:class:`SearchBot`):

1. **Candidates.** The model ranks the actions; the best ``top_k`` within ``margin``
   points of the best are searched (fewer with a small budget: at most one per
   ``rollouts_per_candidate`` iterations, at least 2). A value at or above the model's
   ``winning`` threshold is a win on the spot and is taken at once; a decision with a
   single candidate is not searched; ``iterations=0`` plays the best-ranked action.
   With a network and ``confident=P``, a decision where the policy gives one of the
   ranked actions a probability of at least ``P`` is not searched either: the policy's
   most probable ranked action is played (a win on the spot still comes first).
2. **Rollouts.** In a sampled world each surviving candidate is applied and the game is
   played on by the rollout policy for ``depth`` rounds of turns (until the searching
   player is about to start its ``depth``-th turn after this one; with ``depth=0`` until
   anyone starts a turn), or to the end of the game. All candidates share the same
   sampled world (common random numbers), so their comparison is not blurred by the luck
   of the sample.
3. **Evaluation.** A finished game is worth the searcher's score minus the best other
   score, plus ``win_bonus`` for a win (minus for a loss; nothing for a shared win); an
   unfinished one is worth what the model's evaluator says.
4. **Selection.** The search runs in stages of ``stage`` sampled worlds; after each stage
   the worse half of the candidates is dropped (successive halving), so most of the
   budget goes to the close calls. The answer is the candidate with the best mean value,
   shrunk towards the ranker's value differences by ``prior`` pseudo-samples.

Budget: ``iterations`` counts rollouts (one candidate in one sampled world); with it the
search is deterministic for a given seed. ``seconds`` instead stops at a time limit (not
reproducible).

Allowed values (anything else is refused when the bot is made, naming the option):
``iterations`` 0 to 10,000,000 (:data:`MAX_ITERATIONS`); ``seconds`` more than 0 and at
most 3600 (:data:`MAX_SECONDS`); ``top_k`` and ``stage`` integers >= 1; ``depth`` an
integer >= 0; ``prior``, ``win_bonus`` and ``margin`` finite numbers >= 0 (a negative
margin would leave no candidate to search); ``net`` a policy file of this game and player
count (a missing, corrupt or mismatched file is refused when the bot is made, the player
count at the first decision if the maker did not give it), ``leaf`` ``value``, ``model``
or ``both``, ``rollout`` ``model`` or ``net``, ``policy_weight`` and ``value_scale`` finite
numbers >= 0, ``confident`` a number > 0 and <= 1, these five only with ``net``. NaN and
the infinities are never allowed.

With a network (``net=PATH``, a policy file of :mod:`keltis_env.policy` for the game and
player count; :class:`~keltis_env.bots.net_guide.NetGuide`):

* **Ranker.** ``policy_weight`` points per unit of the policy's log-probability are added
  to the ranker's values (a win on the spot is still judged by the model alone), so the
  policy chooses which candidates are searched and, through ``prior``, shrinks the
  search's values towards its own preferences.
* **Leaves** (``leaf=value``, the default). A rollout plays ``depth`` rounds (default 1
  with a network) and then on to the searcher's next decision, where the value head reads
  the searcher's view of the sampled world; its output times ``value_scale`` is the
  position's worth in points. The positions of a stage (its sampled worlds times its
  candidates) are valued in one batch. ``leaf=model`` keeps the game's evaluator;
  ``leaf=both`` values the same positions at the mean of the two.
* **Rollouts** (``rollout=net``): the policy's most probable legal action for every seat,
  from that seat's view of the sampled world; ``rollout=model`` (default) keeps the
  game's rollout policy.
* **Budget** (``confident=P``, off by default): the decisions where the policy is sure
  (a ranked action at probability ``P`` or more) cost one network call,
  so at the same mean time per decision the others can be given more ``iterations``.

:meth:`SearchBot.analyse` returns the decision with every candidate's statistics
(:class:`SearchResult`: rollouts, mean value, ranker value and the policy's prior), from
which a learner takes policy targets (:meth:`SearchResult.policy_target`).

The search sees only the view and what it samples from it, never the
game's real state; so does its network.

A network whose output is unusable at run time (logits of the legal actions that are NaN,
+inf or all -inf, or a NaN or infinite value: finite weights can overflow) stops the
decision with :class:`~keltis_env.policy.PolicyOutputError` naming the bot and the file;
ranked values that leave no candidate (NaN) raise ``ValueError`` naming the bot. Neither
falls back to another move, and no search loop runs without a candidate (weights that are
NaN or infinite in the file are refused when the bot is made).

This module imports no game: a game's bots subclass :class:`SearchModel` and
:class:`SearchBot` (``keltis_env.games.keltis.bots.ismcts``,
``keltis_env.games.dice.bots.ismcts``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from math import exp, inf
from typing import Any, ClassVar, NamedTuple

from keltis_env.core.game import get_game
from keltis_env.core.rewards import potentials
from keltis_env.core.validation import as_finite

from .base import Bot
from .net_guide import NetGuide


class SearchModel(ABC):
    """A game's part of the determinised search: ranker, rollout policy and evaluator."""

    #: Candidate values at or above this win the game on the spot (taken without search).
    winning: ClassVar[float] = inf

    def begin(self, view: Any) -> Any:
        """Data computed once per decision from the searcher's view, passed to
        :meth:`candidates` and :meth:`prepare` (``None`` by default)."""
        return None

    @abstractmethod
    def candidates(self, view: Any, root: Any) -> list[tuple[int, float]]:
        """Legal actions of the view's player worth comparing, with their values (higher is
        better), in any order. Actions equivalent to a listed one may be left out."""

    def prepare(self, view: Any, world: Any, root: Any) -> Any:
        """Data for the rollouts and evaluations in one sampled ``world`` (``None`` by
        default): what the rollouts of all candidates in that world share."""
        return None

    @abstractmethod
    def starts_turn(self, state: Any) -> bool:
        """Whether the current player of ``state`` is about to start a turn (rounds of
        turns are counted from these moments)."""

    @abstractmethod
    def policy(self, state: Any, context: Any) -> int:
        """The rollout policy: a legal action for the current player of ``state``, chosen
        from what that player may know there (``context``: from :meth:`prepare`)."""

    @abstractmethod
    def evaluate(self, state: Any, player: int, context: Any) -> float:
        """The worth of the unfinished ``state`` for ``player``, in points of final score
        difference against the best other player."""


#: The largest budgets a search takes: an hour, or ten million rollouts, per decision.
MAX_SECONDS = 3600.0
MAX_ITERATIONS = 10_000_000


def _check_int(name: str, value: Any, least: int, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (most is not None and value > most):
        bounds = f"{least}..{most}" if most is not None else f">= {least}"
        raise ValueError(f"{name} must be an integer {bounds}, got {value!r}")
    return value


def _check_number(name: str, value: Any, least: float = 0.0, most: float = inf, strict: bool = False) -> float:
    """``value`` as a float if it is a finite number from ``least`` (excluded when
    ``strict``) to ``most``; NaN and the infinities are never allowed."""
    number = as_finite(value)
    if number is None or not (least < number if strict else least <= number) or number > most:
        low = f"> {least:g}" if strict else f">= {least:g}"
        bounds = f"{low} and <= {most:g}" if most < inf else low
        raise ValueError(f"{name} must be a finite number {bounds}, got {value!r}")
    return number


@dataclass(frozen=True)
class CandidateResult:
    """One candidate of a decision, as the search saw it (all values in points of final
    score difference, win bonus included).

    ``rank``: the ranker's value (with a network, its policy term included); ``prior``:
    the network policy's probability of the action among the legal actions (``None``
    without a network); ``samples``: the sampled worlds it was rolled out in (0: not
    searched; fewer than the others: dropped by the halving); ``mean``: its mean rollout
    value over those samples (``None`` if none); ``score``: the value the choice was made
    by (the mean shrunk towards the ranker), for the candidates that survived the
    halving, else ``None``."""

    action: int
    rank: float
    prior: float | None
    samples: int
    mean: float | None
    score: float | None


@dataclass(frozen=True)
class SearchResult:
    """A decision of :class:`SearchBot` with what it was made from (:meth:`SearchBot.analyse`).

    ``candidates``: every action the ranker listed, best-ranked first (the actions it left
    out as equivalent to a listed one are not there); ``samples``: sampled worlds;
    ``rollouts``: rollouts played (0: not searched: a single candidate, a win on the
    spot, ``iterations=0`` or a sure policy); ``sure``: the action is the network
    policy's own, played unsearched because its probability reached ``confident``."""

    action: int
    candidates: tuple[CandidateResult, ...]
    samples: int
    rollouts: int
    sure: bool = False

    @property
    def values(self) -> list[tuple[int, float]]:
        """:meth:`SearchBot.action_values`: the survivors' scores, or the ranker's values
        where nothing was searched (only the action played, with its ranker value, where
        the policy was sure)."""
        if self.sure:
            return [(c.action, c.rank) for c in self.candidates if c.action == self.action]
        if not self.rollouts:
            return [(c.action, c.rank) for c in self.candidates]
        return [(c.action, c.score) for c in self.candidates if c.score is not None]

    def policy_target(self, num_actions: int, temperature: float = 1.0) -> list[float]:
        """A distribution over all ``num_actions`` action ids for training a policy on the
        search: ``softmax(mean / temperature)`` over the searched candidates (every
        candidate with samples, the dropped ones with their own mean); all on the chosen
        action where nothing was searched."""
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        target = [0.0] * num_actions
        searched = [(c.action, c.mean) for c in self.candidates if c.mean is not None]
        if not searched:
            target[self.action] = 1.0
            return target
        top = max(m for _, m in searched)
        weights = [(a, exp((m - top) / temperature)) for a, m in searched]
        total = sum(w for _, w in weights)
        for a, w in weights:
            target[a] = w / total
        return target


#: What a network may do in a search (see :class:`~keltis_env.bots.net_guide.NetGuide`): who plays the rollouts, and
#: what an unfinished position reached by a rollout is worth.
ROLLOUT_CHOICES = ("model", "net")
LEAF_CHOICES = ("value", "model", "both")


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


class Tally(NamedTuple):
    """What the rollouts of one decision gave, per candidate (by its index): what
    :meth:`SearchBot._search` returns, and a compiled search in its place."""

    totals: list[float]  # the sum of its rollouts' values
    counts: list[int]  # its rollouts
    alive: list[int]  # the survivors of the halving, in the order of the last halving
    samples: int  # sampled worlds seen by every survivor
    rollouts: int


def _result(ranked: list[tuple[int, float]], logp: dict[int, float] | None, action: int,
            stats: dict[int, tuple[int, float | None, float | None]] | None = None,
            samples: int = 0, rollouts: int = 0, sure: bool = False) -> SearchResult:
    """The decision ``action`` with every ranked candidate, its prior and, where it was
    searched, its (samples, mean, score) from ``stats``."""
    stats = stats or {}
    cands = tuple(
        CandidateResult(a, v, None if logp is None else exp(logp[a]), *stats.get(a, (0, None, None)))
        for a, v in ranked
    )
    return SearchResult(action, cands, samples, rollouts, sure)


class SearchBot(Bot):
    """Determinised search over candidate actions with successive halving; see the module
    documentation. A game's search bot subclasses this with its model and its defaults.

    Options: ``iterations`` (rollouts per decision) or ``seconds`` (time per decision),
    ``top_k`` (candidates searched), ``depth`` (rounds of turns simulated past this one),
    ``stage`` (sampled worlds between two halvings), ``prior`` (pseudo-samples of the
    ranker's values), ``win_bonus`` (worth of a win over the score difference),
    ``margin`` (candidates more than this many points below the best are not searched).

    With a network, ``net=PATH`` (a policy file of this game and player count) and:
    ``leaf`` (``value``: the value head evaluates where a rollout stops, which is then
    the searcher's next decision; ``model``: the game's evaluator; ``both``: the mean of
    the two at the searcher's next decision), ``rollout``
    (``model``: the game's rollout policy; ``net``: the network's most probable action),
    ``policy_weight`` (points per unit of the policy's log-probability added to the
    ranker's values; 0: the model ranks alone), ``value_scale`` (points per unit of the
    value head's output; by default ``win_bonus`` + :attr:`value_points` for a value of
    the ``win`` reward, :data:`~keltis_env.core.rewards.SCORE_SCALE` for the ``score``
    and ``shaped`` rewards; a ``shaped`` value, the return still to come, is added to the
    position's potential), ``confident`` (a probability; where the policy's most probable ranked action
    has at least this much, it is played without search; off by default). Without ``net``
    these five are refused.
    """

    name = "search"
    #: The registered game this search plays; a game's search bot sets it with :meth:`new_model`.
    game_name: ClassVar[str] = ""
    #: Rollouts per decision when neither ``iterations`` nor ``seconds`` is given.
    default_iterations: ClassVar[int] = 64
    #: With a budget in iterations, at most iterations / this many candidates are searched.
    rollouts_per_candidate: ClassVar[int] = 8
    #: Rounds of turns a rollout plays, without and with a network's value at the leaves.
    default_depth: ClassVar[int] = 2
    default_net_depth: ClassVar[int] = 1
    #: Points of final score difference one unit of a ``win`` value is worth, beyond the
    #: win bonus (a value of +1 is a sure win by a typical margin).
    value_points: ClassVar[float] = 10.0
    default_policy_weight: ClassVar[float] = 1.0

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
        *,
        num_players: int | None = None,
    ) -> None:
        super().__init__(seed)
        if iterations is not None and seconds is not None:
            raise ValueError(f"give {self.name} a budget in iterations or in seconds, not both")
        if iterations is None and seconds is None:
            iterations = self.default_iterations
        game = self.game_name
        self.model = self.new_model()
        self.game = game
        self.sample_state: Callable[[Any, Any], Any] = get_game(game).sample_state
        what = f"{self.name} option"
        self.iterations = (_check_int(f"{what} iterations", iterations, 0, MAX_ITERATIONS)
                           if iterations is not None else None)
        self.seconds = (_check_number(f"{what} seconds", seconds, 0.0, MAX_SECONDS, strict=True)
                        if seconds is not None else None)
        self.top_k = _check_int(f"{what} top_k", top_k, 1)
        if depth is None:
            depth = self.default_depth if net is None else self.default_net_depth
        self.depth = _check_int(f"{what} depth", depth, 0)
        self.stage = _check_int(f"{what} stage", stage, 1)
        self.prior = _check_number(f"{what} prior", prior)
        self.win_bonus = _check_number(f"{what} win_bonus", win_bonus)
        self.margin = _check_number(f"{what} margin", margin)
        self.net: NetGuide | None = None
        self.leaf = "model"
        self.rollout = "model"
        self.policy_weight = 0.0
        self.confident: float | None = None
        if net is None:
            given = [k for k, v in (("leaf", leaf), ("rollout", rollout), ("policy_weight", policy_weight),
                                    ("value_scale", value_scale), ("confident", confident)) if v is not None]
            if given:
                raise ValueError(f"{what} {given[0]} needs a network: give net=PATH too, e.g. "
                                 f"{self.name}:net=policies/{game}_2p.zip,{given[0]}=...")
            return
        if not isinstance(net, str) or not net:
            raise ValueError(f"{what} net must be a policy file's path, got {net!r}")
        self.leaf = _check_choice(f"{what} leaf", "value" if leaf is None else leaf, LEAF_CHOICES)
        self.rollout = _check_choice(f"{what} rollout", "model" if rollout is None else rollout, ROLLOUT_CHOICES)
        self.policy_weight = _check_number(f"{what} policy_weight",
                                           self.default_policy_weight if policy_weight is None else policy_weight)
        scale = None if value_scale is None else _check_number(f"{what} value_scale", value_scale)
        if confident is not None:
            self.confident = _check_number(f"{what} confident", confident, 0.0, 1.0, strict=True)
        guide = NetGuide(net, game, num_players, 0.0, needs_value=self.leaf != "model", owner=self.name)
        if scale is None:
            from keltis_env.core.rewards import SCORE_SCALE

            scale = self.win_bonus + self.value_points if guide.info.value_target == "win" else SCORE_SCALE
        guide.points = scale
        self.value_scale = scale
        self.net = guide

    def new_model(self) -> SearchModel:
        """The game's :class:`SearchModel` for this bot (a new one per bot)."""
        raise NotImplementedError(f"{type(self).__name__} must say its game's search model (new_model)")

    def __repr__(self) -> str:
        budget = f"iterations={self.iterations}" if self.iterations is not None else f"seconds={self.seconds}"
        net = "" if self.net is None else f", net={self.net.path!r}, leaf={self.leaf}, rollout={self.rollout}"
        if self.confident is not None:
            net += f", confident={self.confident:g}"
        return f"{type(self).__name__}({budget}, top_k={self.top_k}, depth={self.depth}{net})"

    # ------------------------------------------------------------------ search
    def act(self, view: Any) -> int:
        return self.analyse(view).action

    def action_values(self, view: Any) -> list[tuple[int, float]]:
        """The values behind :meth:`act`'s choice (it plays the first of the highest): the
        surviving candidates' search scores, in points of final score difference; the
        ranker's values where nothing is searched (a win on the spot, ``iterations=0``), a
        lone candidate or legal action with its own, the action alone where the policy is
        sure (``confident``). Actions not listed were not searched
        or were dropped by the halving. Draws the same random numbers as :meth:`act`."""
        return self.analyse(view).values

    def search(self, view: Any) -> tuple[int, list[tuple[int, float]]]:
        """The action to play and the values it was chosen by (see :meth:`action_values`)."""
        result = self.analyse(view)
        return result.action, result.values

    def analyse(self, view: Any) -> SearchResult:
        """The decision at ``view`` with every candidate's statistics (:class:`SearchResult`):
        what :meth:`act` plays, drawing the same random numbers."""
        legal = view.legal_actions
        if not legal:
            name = type(self).__name__
            raise ValueError(f"{name}.act called for a view with no legal action (not this player's turn)")
        guide = self.net
        if guide is not None:
            guide.check_players(view.num_players)
        if len(legal) == 1:
            only = int(legal[0])
            return SearchResult(only, (CandidateResult(only, 0.0, None if guide is None else 1.0, 0, None, None),),
                                0, 0)
        root = self.model.begin(view)
        ranked, logp, winning = self._ranked(view, root)
        if winning or self.iterations == 0:
            return _result(ranked, logp, ranked[0][0])  # a win on the spot, or no search: the ranker's own choice
        if logp is not None and self.confident is not None:
            top_logp, top = max((logp[a], -a) for a, _ in ranked)  # the lowest id among equals
            if exp(top_logp) >= self.confident:
                return _result(ranked, logp, -top, sure=True)  # the policy is sure: its choice, unsearched
        cands = self._candidates(ranked)
        if not cands:
            raise ValueError(f"{self.name}: no candidate to search: the ranked values of the legal actions are not "
                             f"numbers ({', '.join(f'{a}: {v!r}' for a, v in ranked[:4])}); a search ranks by "
                             "finite values")
        if len(cands) == 1:
            return _result(ranked, logp, cands[0][0])
        return self._choose(ranked, logp, cands, self._search(view, root, cands))

    def _ranked(self, view: Any, root: Any) -> tuple[list[tuple[int, float]], dict[int, float] | None, bool]:
        """The model's candidates with their values, best first (with a network, its policy's
        term added unless the best one wins on the spot); the policy's log-probabilities
        (``None`` without a network); whether the best candidate wins on the spot."""
        model = self.model
        ranked = sorted(model.candidates(view, root), key=lambda av: -av[1])
        if not ranked:
            raise ValueError(f"{self.name}: the search model listed no candidate among the "
                             f"{len(view.legal_actions)} legal actions; it must list at least one")
        winning = ranked[0][1] >= model.winning
        logp: dict[int, float] | None = None
        if self.net is not None:
            logp = self.net.log_prior(view)
            if self.policy_weight and not winning:
                w = self.policy_weight
                ranked = sorted(((a, v + w * logp[a]) for a, v in ranked), key=lambda av: -av[1])
        return ranked, logp, winning

    def _candidates(self, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The ranked actions searched: the best ``top_k`` (fewer with a small budget) within
        ``margin`` points of the best."""
        top_k = self.top_k
        if self.iterations is not None:
            # A small budget is spread over fewer candidates: each needs several samples.
            top_k = min(top_k, max(2, self.iterations // self.rollouts_per_candidate))
        cut = ranked[0][1] - self.margin
        return [av for av in ranked[:top_k] if av[1] >= cut]

    def _search(self, view: Any, root: Any, cands: list[tuple[int, float]]) -> Tally:
        """The rollouts of the candidates in sampled worlds, stage by stage, the worse half
        dropped after each stage, until the budget is spent. Every pass plays at least one
        rollout (the halving keeps two candidates, or all of fewer), so a budget in
        iterations always ends it; with no candidate it is refused, never run."""
        if not cands:
            raise ValueError(f"{self.name}: a search needs at least one candidate, got none")
        model = self.model
        guide = self.net
        me = view.player
        depth = self.depth
        n = len(cands)
        totals = [0.0] * n
        counts = [0] * n
        alive = list(range(n))
        samples = 0  # sampled worlds seen by every surviving candidate
        rollouts = 0
        deadline = time.perf_counter() + self.seconds if self.seconds is not None else None
        rng = self.rng
        # With the value head at the leaves, the positions reached are valued in batches.
        batched = guide is not None and self.leaf != "model"
        needs_context = guide is None or self.leaf != "value" or self.rollout == "model"
        # leaf=both: half the value head's worth, half the game evaluator's
        net_share = 0.5 if self.leaf == "both" else 1.0
        # a value head trained on the "shaped" reward estimates the return still to come,
        # the final potential minus the potential now (keltis_env.core.rewards.potentials)
        shaped = batched and guide.info.value_target == "shaped"  # type: ignore[union-attr]
        pending: list[tuple[int, Any]] = []

        def flush() -> None:
            if pending:
                for (i, _), v in zip(pending, guide.points_of([row for _, row in pending]), strict=True):  # type: ignore[union-attr]
                    totals[i] += net_share * v
                pending.clear()

        while True:
            world = self.sample_state(view, rng)
            context = model.prepare(view, world, root) if needs_context else None
            for i in alive:
                state = world.clone()
                state.apply(cands[i][0])
                value = self._rollout(state, me, context, depth)
                if value is None:
                    pending.append((i, guide.encode(state, me)))  # type: ignore[union-attr]
                    if shaped:  # that value head estimates the rest of the margin: add the margin so far
                        totals[i] += net_share * guide.points * potentials(state.scores())[me]  # type: ignore[union-attr]
                    if net_share < 1.0:
                        totals[i] += (1.0 - net_share) * model.evaluate(state, me, context)
                else:
                    totals[i] += value
                counts[i] += 1
            rollouts += len(alive)
            samples += 1
            if self.iterations is not None and rollouts + len(alive) > self.iterations:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            if samples % self.stage == 0 and len(alive) > 2:
                if batched:
                    flush()
                alive.sort(key=lambda j: -totals[j])
                alive = alive[: max(2, (len(alive) + 1) // 2)]
        flush()
        return Tally(totals, counts, alive, samples, rollouts)

    def _choose(self, ranked: list[tuple[int, float]], logp: dict[int, float] | None,
                cands: list[tuple[int, float]], tally: Tally) -> SearchResult:
        """The survivor with the best score: its mean value shrunk towards the ranker by
        ``prior`` pseudo-samples of the ranker's value differences."""
        totals, counts, alive, samples = tally.totals, tally.counts, tally.alive, tally.samples
        ref = cands[0][1]
        best_i = alive[0]
        best_score = -inf
        scores: dict[int, float] = {}
        for i in alive:
            mean = totals[i] / samples
            score = (samples * mean + self.prior * (cands[i][1] - ref)) / (samples + self.prior)
            scores[i] = score
            if score > best_score:
                best_i, best_score = i, score
        stats: dict[int, tuple[int, float | None, float | None]] = {
            cands[i][0]: (counts[i], totals[i] / counts[i] if counts[i] else None, scores.get(i))
            for i in range(len(cands))
        }
        # the survivors in the order they were scored (the order action_values lists them)
        order = {cands[i][0]: k for k, i in enumerate(alive)}
        ranked_alive = sorted((av for av in ranked if av[0] in order), key=lambda av: order[av[0]])
        others = [av for av in ranked if av[0] not in order]
        return _result(ranked_alive + others, logp, cands[best_i][0], stats, samples, tally.rollouts)

    def _rollout(self, state: Any, me: int, context: Any, depth: int) -> float | None:
        """Play on with the rollout policy for ``depth`` rounds of turns (or to the end of
        the game) and return the worth of the position reached for ``me``; ``None`` where
        the network's value head is to value it (``state`` is then left at the searcher's
        next decision, where its view is encoded)."""
        model = self.model
        guide = self.net
        play = guide.act if guide is not None and self.rollout == "net" else None
        rounds = depth
        while not state.is_over:
            if model.starts_turn(state):
                if state.current == me:
                    rounds -= 1  # a full round of turns has been played
                    if rounds <= 0:
                        break
                elif rounds == 0:
                    break
            legal = state.legal_actions()
            if len(legal) == 1:
                state.apply(legal[0])
            else:
                state.apply(play(state) if play is not None else model.policy(state, context))
        if guide is not None and self.leaf != "model":
            # The value head reads the searcher's view where it is about to decide.
            while not state.is_over and state.current != me:
                legal = state.legal_actions()
                if len(legal) == 1:
                    state.apply(legal[0])
                else:
                    state.apply(play(state) if play is not None else model.policy(state, context))
            if not state.is_over:
                return None
        if state.is_over:
            scores = state.scores()
            mine = scores[me]
            other = max(s for q, s in enumerate(scores) if q != me)
            bonus = self.win_bonus if mine > other else -self.win_bonus if mine < other else 0.0
            return mine - other + bonus
        return model.evaluate(state, me, context)


__all__ = [
    "LEAF_CHOICES",
    "MAX_ITERATIONS",
    "MAX_SECONDS",
    "ROLLOUT_CHOICES",
    "CandidateResult",
    "SearchBot",
    "SearchModel",
    "SearchResult",
    "Tally",
]
