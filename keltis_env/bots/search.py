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
margin would leave no candidate to search). NaN and the infinities are never allowed.

The search sees only the view and what it samples from it, never the
game's real state.

This module imports no game: a game's bots subclass :class:`SearchModel` and
:class:`SearchBot` (``keltis_env.games.keltis.bots.ismcts``,
``keltis_env.games.dice.bots.ismcts``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from math import inf
from typing import Any, ClassVar

from keltis_env.core.game import get_game
from keltis_env.core.validation import as_finite

from .base import Bot


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


class SearchBot(Bot):
    """Determinised search over candidate actions with successive halving; see the module
    documentation. A game's search bot subclasses this with its model and its defaults.

    Options: ``iterations`` (rollouts per decision) or ``seconds`` (time per decision),
    ``top_k`` (candidates searched), ``depth`` (rounds of turns simulated past this one),
    ``stage`` (sampled worlds between two halvings), ``prior`` (pseudo-samples of the
    ranker's values), ``win_bonus`` (worth of a win over the score difference),
    ``margin`` (candidates more than this many points below the best are not searched).
    """

    name = "search"
    #: Rollouts per decision when neither ``iterations`` nor ``seconds`` is given.
    default_iterations: ClassVar[int] = 64
    #: With a budget in iterations, at most iterations / this many candidates are searched.
    rollouts_per_candidate: ClassVar[int] = 8

    def __init__(
        self,
        model: SearchModel,
        game: str,
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
            raise ValueError(f"give {self.name} a budget in iterations or in seconds, not both")
        if iterations is None and seconds is None:
            iterations = self.default_iterations
        self.model = model
        self.game = game
        self.sample_state: Callable[[Any, Any], Any] = get_game(game).sample_state
        what = f"{self.name} option"
        self.iterations = (_check_int(f"{what} iterations", iterations, 0, MAX_ITERATIONS)
                           if iterations is not None else None)
        self.seconds = (_check_number(f"{what} seconds", seconds, 0.0, MAX_SECONDS, strict=True)
                        if seconds is not None else None)
        self.top_k = _check_int(f"{what} top_k", top_k, 1)
        self.depth = _check_int(f"{what} depth", depth, 0)
        self.stage = _check_int(f"{what} stage", stage, 1)
        self.prior = _check_number(f"{what} prior", prior)
        self.win_bonus = _check_number(f"{what} win_bonus", win_bonus)
        self.margin = _check_number(f"{what} margin", margin)

    def __repr__(self) -> str:
        budget = f"iterations={self.iterations}" if self.iterations is not None else f"seconds={self.seconds}"
        return f"{type(self).__name__}({budget}, top_k={self.top_k}, depth={self.depth})"

    # ------------------------------------------------------------------ search
    def act(self, view: Any) -> int:
        return self.search(view)[0]

    def action_values(self, view: Any) -> list[tuple[int, float]]:
        """The values behind :meth:`act`'s choice (it plays the first of the highest): the
        surviving candidates' search scores, in points of final score difference; the
        ranker's values where nothing is searched (a win on the spot, ``iterations=0``), a
        lone candidate or legal action with its own. Actions not listed were not searched
        or were dropped by the halving. Draws the same random numbers as :meth:`act`."""
        return self.search(view)[1]

    def search(self, view: Any) -> tuple[int, list[tuple[int, float]]]:
        """The action to play and the values it was chosen by (see :meth:`action_values`)."""
        legal = view.legal_actions
        if not legal:
            name = type(self).__name__
            raise ValueError(f"{name}.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:
            return int(legal[0]), [(int(legal[0]), 0.0)]
        model = self.model
        root = model.begin(view)
        ranked = sorted(model.candidates(view, root), key=lambda av: -av[1])
        if ranked[0][1] >= model.winning or self.iterations == 0:
            return ranked[0][0], ranked  # a win on the spot, or no search: the ranker's own choice
        top_k = self.top_k
        if self.iterations is not None:
            # A small budget is spread over fewer candidates: each needs several samples.
            top_k = min(top_k, max(2, self.iterations // self.rollouts_per_candidate))
        cut = ranked[0][1] - self.margin
        cands = [av for av in ranked[:top_k] if av[1] >= cut]
        if len(cands) == 1:
            return cands[0][0], cands
        me = view.player
        depth = self.depth
        totals = [0.0] * len(cands)
        alive = list(range(len(cands)))
        samples = 0  # sampled worlds seen by every surviving candidate
        rollouts = 0
        deadline = time.perf_counter() + self.seconds if self.seconds is not None else None
        rng = self.rng
        while True:
            world = self.sample_state(view, rng)
            context = model.prepare(view, world, root)
            for i in alive:
                state = world.clone()
                state.apply(cands[i][0])
                totals[i] += self._rollout(state, me, context, depth)
            rollouts += len(alive)
            samples += 1
            if self.iterations is not None and rollouts + len(alive) > self.iterations:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            if samples % self.stage == 0 and len(alive) > 2:
                alive.sort(key=lambda j: -totals[j])
                alive = alive[: max(2, (len(alive) + 1) // 2)]
        # Shrink towards the ranker: prior pseudo-samples of its value differences.
        ref = cands[0][1]
        best_i = alive[0]
        best_score = -inf
        values = []
        for i in alive:
            mean = totals[i] / samples
            score = (samples * mean + self.prior * (cands[i][1] - ref)) / (samples + self.prior)
            values.append((cands[i][0], score))
            if score > best_score:
                best_i, best_score = i, score
        return cands[best_i][0], values

    def _rollout(self, state: Any, me: int, context: Any, depth: int) -> float:
        """Play on with the model's policy for ``depth`` rounds of turns (or to the end of
        the game) and return the worth of the position reached for ``me``."""
        model = self.model
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
            state.apply(legal[0] if len(legal) == 1 else model.policy(state, context))
        if state.is_over:
            scores = state.scores()
            mine = scores[me]
            other = max(s for q, s in enumerate(scores) if q != me)
            bonus = self.win_bonus if mine > other else -self.win_bonus if mine < other else 0.0
            return mine - other + bonus
        return model.evaluate(state, me, context)


__all__ = ["MAX_ITERATIONS", "MAX_SECONDS", "SearchBot", "SearchModel"]
