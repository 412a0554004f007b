"""The learner's episode and its opponent pool: one implementation for every runner.

A *learner episode* is a game in which one seat, the learner's, is decided from outside
and the other seats are played by opponents drawn from a weighted pool of named bots. The
learner's Gymnasium view (:class:`keltis_env.envs.learner.KeltisLearnerEnv`) is a thin wrapper
around one :class:`LearnerEpisode`; the batched self-play collector
(``training.sb3.collector``) steps many of them together and batches the forward passes of
their neural opponents, which it marks as decided from outside too
(``LearnerEpisode(decided_outside=...)``).

Both draw the same way from the same generator, so the same seed and reset options give
the same game: :meth:`LearnerEpisode.start` takes

* the seat: ``options["seat"]``, else the episode's fixed seat, else one drawn uniformly;
* the opponents: ``options["opponents"]`` (an entry name per other seat, in seat order),
  else one entry per other seat drawn independently with probabilities proportional to
  the weights (:meth:`OpponentPool.draw`);
* after a seeded reset, a seed for every bot of the pool, in the pool's order;
* the position: ``options["state"]`` or ``options["record"]`` (with ``"upto"``), read by
  :func:`keltis_env.core.match.start_position`, else a new deal seeded from the generator.

Then the opponents play until the learner is to move (:meth:`LearnerEpisode.play`,
:meth:`LearnerEpisode.check_started`): a position where the game ends before that is
refused. The final reward and info are those of :meth:`LearnerEpisode.result`.

This module uses numpy and no environment library (no Gymnasium, PettingZoo or torch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from keltis_env.bots import Bot, make_bot
from keltis_env.core.game import GameDescriptor
from keltis_env.core.learner_game import check_turn_cap
from keltis_env.core.match import RESET_OPTIONS as GAME_RESET_OPTIONS
from keltis_env.core.match import Match, check_illegal_action, check_reset_options, start_position
from keltis_env.core.rewards import check_reward_mode

#: the AEC environments' reset options and the learner's own
RESET_OPTIONS = (*GAME_RESET_OPTIONS, "seat", "opponents")


def check_weight(name: str, weight: Any) -> float:
    """``weight`` as a float: a finite number >= 0, else a ``ValueError`` naming the entry."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0 or weight == float("inf"):
        raise ValueError(f"the weight of opponent {name!r} must be a finite number >= 0, got {weight!r}")
    return float(weight)


def opponent_list(
    opponents: str | Bot | Sequence[str | Bot], weights: Sequence[float] | None, weights_name: str = "opponent_weights"
) -> list[tuple[str | Bot, float]]:
    """The pool's initial ``(opponent, weight)`` pairs: a single spec or bot is a pool of
    one, the weights are 1 when ``None``. ``weights_name`` names the weights argument in
    the error messages."""
    listed = [opponents] if isinstance(opponents, (str, Bot)) else list(opponents)
    if not listed:
        raise ValueError("opponents must name at least one opponent")
    if weights is None:
        return [(opponent, 1.0) for opponent in listed]
    if len(weights) != len(listed):
        raise ValueError(f"{weights_name} has {len(weights)} weights for {len(listed)} opponents")
    return list(zip(listed, weights, strict=True))


class OpponentEntry:
    """One opponent of a pool: a name, a bot, its sampling weight and the agent spec it was
    made from (``None`` for a bot given as an instance)."""

    __slots__ = ("bot", "name", "spec", "weight")

    def __init__(self, name: str, bot: Bot, weight: float, spec: str | None) -> None:
        self.name = name
        self.bot = bot
        self.weight = weight
        self.spec = spec

    def __repr__(self) -> str:
        return f"OpponentEntry({self.name!r}, weight={self.weight:g})"


class OpponentPool:
    """Named, weighted opponents of ``game`` for ``num_players`` players. Entries are agent
    specs (made into bots by ``make``, :func:`keltis_env.bots.make_bot` by default) or
    :class:`~keltis_env.bots.Bot` instances, named by their spec or their bot's ``name``;
    an entry added under an existing name replaces it."""

    def __init__(self, game: str, num_players: int, make: Callable[[str], Bot] | None = None) -> None:
        self.game = game
        self.num_players = num_players
        self._make = make or self._make_bot
        self.entries: list[OpponentEntry] = []

    def _make_bot(self, spec: str) -> Bot:
        return make_bot(spec, game=self.game, num_players=self.num_players)

    def make(self, spec: str) -> Bot:
        """The bot of the agent spec ``spec``, as :meth:`add` makes it; a ``ValueError``
        names the whole spec."""
        try:
            return self._make(spec)
        except ValueError as exc:  # name the whole spec: the bot's own message may name a part
            raise type(exc)(f"bad opponent spec {spec!r}: {exc}") from None

    def add(self, opponent: str | Bot, weight: float = 1.0, name: str | None = None) -> str:
        """Add an opponent (agent spec or Bot); returns its entry name."""
        if isinstance(opponent, str):
            default_name, spec = opponent, opponent
        elif isinstance(opponent, Bot):
            default_name, spec = getattr(opponent, "name", type(opponent).__name__), None
        else:
            raise TypeError(f"an opponent is an agent spec (str) or a Bot, got {type(opponent).__name__}")
        name = name or default_name
        weight = check_weight(name, weight)
        bot = opponent if spec is None else self.make(spec)
        assert isinstance(bot, Bot)
        self.entries = [e for e in self.entries if e.name != name]
        self.entries.append(OpponentEntry(name, bot, weight, spec))
        return name

    def remove(self, name: str) -> None:
        """Drop an entry (an episode that drew it keeps playing it)."""
        kept = [e for e in self.entries if e.name != name]
        if len(kept) == len(self.entries):
            raise KeyError(f"no opponent named {name!r}; the pool has {self.names()}")
        if not kept:
            raise ValueError("cannot remove the last opponent of the pool")
        self.entries = kept

    def set_weights(self, weights: Mapping[str, float]) -> None:
        """Set the weights of the named entries (others keep theirs); nothing changes when
        one name or weight is refused."""
        by_name = {e.name: e for e in self.entries}
        checked = {}
        for name, weight in weights.items():
            if name not in by_name:
                raise KeyError(f"no opponent named {name!r}; the pool has {sorted(by_name)}")
            checked[name] = check_weight(name, weight)
        for name, weight in checked.items():
            by_name[name].weight = weight

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def weights(self) -> dict[str, float]:
        return {e.name: e.weight for e in self.entries}

    def draw(self, rng: np.random.Generator, count: int) -> list[OpponentEntry]:
        """``count`` entries drawn independently, with probabilities proportional to the weights."""
        entries = self.entries
        weights = np.array([e.weight for e in entries], dtype=np.float64)
        total = weights.sum()
        if total <= 0:
            raise ValueError(f"every opponent weight is zero: {self.weights()}")
        picks = rng.choice(len(entries), size=count, p=weights / total)
        return [entries[int(i)] for i in picks]

    def named(self, names: Sequence[str], count: int) -> list[OpponentEntry]:
        """The entries ``names`` (``count`` of them, one per other seat, in seat order)."""
        by_name = {e.name: e for e in self.entries}
        if isinstance(names, str) or len(names) != count or any(name not in by_name for name in names):
            raise ValueError(
                f"options['opponents'] must name {count} pool entries (one per other seat, in seat order) "
                f"from {sorted(by_name)}, got {names!r}"
            )
        return [by_name[name] for name in names]

    def seed_bots(self, rng: np.random.Generator) -> None:
        """Seed every bot of the pool from ``rng``, in the pool's order."""
        for i, entry in enumerate(self.entries):
            entry.bot.seed(int(rng.integers(2**62)) + i)




def check_seat(seat: Any, num_players: int) -> int:
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < num_players:
        raise ValueError(f"seat must be an integer in 0..{num_players - 1}, got {seat!r}")
    return seat


class LearnerEpisode:
    """One learner game of ``game`` (a descriptor) with ``config`` against opponents from
    ``pool`` (see the module documentation). ``encoder`` encodes the learner's view
    (:meth:`observe`); ``seat`` fixes the learner's seat (``None``: drawn every episode);
    ``reward`` and ``illegal_action`` are the match loop's options for the learner's
    actions. Opponents whose bot satisfies ``decided_outside`` get no controller: the match
    loop stops at their seats as at the learner's, for a caller that decides them itself.
    ``move_seconds`` is the opponents' per-move time limit (``None``: none): an opponent over
    it loses the game on time (:class:`~keltis_env.core.match.Match`); the episode then ends
    with ``end="time"`` and ``forfeit`` (the opponent's seat) in the final info, and the
    learner's reward is 0 (the offender's is -1, as for an illegal action). ``turn_cap``
    (:data:`TURN_CAPS`) says how a game cut at its turn cap ends the episode. Under
    ``reward="shaped"`` the learner is paid after each of its actions (:meth:`take_reward`),
    and :meth:`result` pays what is still due."""

    __slots__ = ("config", "decided_outside", "encoder", "fixed_seat", "game", "illegal_action", "match",
                 "move_seconds", "pool", "reward_mode", "seat", "seat_entries", "turn_cap")

    def __init__(
        self,
        game: GameDescriptor,
        config: Any,
        pool: OpponentPool,
        encoder: Any,
        *,
        reward: str = "win",
        illegal_action: str = "terminate",
        seat: int | None = None,
        decided_outside: Callable[[Bot], bool] | None = None,
        move_seconds: float | None = None,
        turn_cap: str = "truncate",
    ) -> None:
        from keltis_env.core.match import check_move_seconds

        self.move_seconds = check_move_seconds(move_seconds)
        self.turn_cap = check_turn_cap(turn_cap)
        self.game = game
        self.config = config
        self.pool = pool
        self.encoder = encoder
        self.reward_mode = check_reward_mode(reward)
        self.illegal_action = check_illegal_action(illegal_action)
        n = config.num_players
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n):
            raise ValueError(f"seat must be None (random) or an integer in 0..{n - 1}, got {seat!r}")
        self.fixed_seat = seat
        self.decided_outside = decided_outside
        self.seat = 0
        #: the entry playing each seat (``None`` for the learner's)
        self.seat_entries: list[OpponentEntry | None] = []
        self.match: Match | None = None  # the learner's seat outside, the opponents controllers

    @property
    def state(self) -> Any:
        """The game's state (``None`` before the first start)."""
        return None if self.match is None else self.match.state

    def start(self, rng: np.random.Generator, options: Mapping[str, Any] | None = None, *, reseed_bots: bool = False,
              play: bool = True, deal_seed: int | None = None) -> dict[str, Any]:
        """A new game from ``options`` (:data:`RESET_OPTIONS`; unknown ones are ignored
        with a warning), drawing from ``rng``; ``reseed_bots`` (after a seeded reset) seeds
        the pool's bots from it too. ``deal_seed`` (a seeded reset's seed) is the deal's seed,
        the game ``keltis_v0.env().reset(seed=deal_seed)`` deals; without it the deal's seed
        is drawn from ``rng`` (it is drawn in both cases, so the draws after stay the same).
        With ``play`` the opponents then play until the learner is to move; otherwise the caller plays them (and calls
        :meth:`check_started`). Returns the reset info (``seat``)."""
        options = check_reset_options(options, RESET_OPTIONS)
        n = self.config.num_players
        seat = options.get("seat", self.fixed_seat)
        seat = int(rng.integers(n)) if seat is None else check_seat(seat, n)
        names = options.get("opponents")
        chosen = self.pool.draw(rng, n - 1) if names is None else self.pool.named(names, n - 1)
        seat_entries: list[OpponentEntry | None] = [*chosen[:seat], None, *chosen[seat:]]
        if reseed_bots:  # the bots' randomness follows the episode seed too
            self.pool.seed_bots(rng)
        state = start_position(self.game, self.config, options)
        drawn = int(rng.integers(2**63))
        if state is None:
            state = self.game.new_state(self.config, drawn if deal_seed is None else deal_seed)
        outside = self.decided_outside
        controllers = [
            None if e is None or (outside is not None and outside(e.bot)) else e.bot for e in seat_entries
        ]
        match = Match(self.game, state, controllers, reward=self.reward_mode, illegal_action=self.illegal_action,
                      move_seconds=self.move_seconds)
        if play:
            match.play()  # the opponents before the learner's first turn
            self._check_started(match)
        self.seat = seat
        self.seat_entries = seat_entries
        self.match = match
        return {"seat": seat}

    def check_started(self) -> None:
        """Refuse a game that ended before the learner's first decision."""
        assert self.match is not None
        self._check_started(self.match)

    @staticmethod
    def _check_started(match: Match) -> None:
        if match.forfeit is not None:
            late = match.forfeit
            raise RuntimeError(f"the opponent at seat {late.seat} took {late.seconds:.1f} s on a move before the "
                               f"learner's first decision, over the limit of {late.limit:g} s")
        if match.over:
            raise ValueError("the game is over before the learner's first decision; start from another position")

    def play(self) -> bool:
        """The opponents' moves until the learner is to move (or a seat decided outside, or
        the end); returns whether the game is over."""
        assert self.match is not None
        return self.match.play()

    def step(self, action: Any) -> bool:
        """The learner's action, then the opponents' moves (:meth:`play`); returns whether
        the game is over. Under ``illegal_action="raise"`` the engine's error propagates
        and nothing changes."""
        match = self.match
        assert match is not None
        return match.step(action) or match.play()

    def take_reward(self) -> float:
        """The learner's reward due since the last call while the game goes on: under
        ``"shaped"`` the change of its potential (its own move's and the opponents' since);
        0 under ``"win"`` and ``"score"``."""
        match = self.match
        assert match is not None
        if self.reward_mode != "shaped":
            return 0.0
        return match.take_rewards()[self.seat]

    def result(self) -> tuple[float, dict[str, Any], bool]:
        """The learner's final reward (what is still due: under ``"shaped"`` the last change
        of its potential), the final info and whether the episode counts as truncated (a
        game cut at its turn cap, under ``turn_cap="truncate"``). After the learner's
        illegal action (``illegal_action="terminate"``): ``-1`` and ``illegal_action``,
        ``reason``, ``seat``; else ``score``, ``scores`` (by absolute seat), ``seat``, ``win``
        (the learner's share of the victory), ``turns``, ``end`` and ``opponents`` (entry
        names by seat, ``None`` for the learner's)."""
        match = self.match
        assert match is not None
        seat = self.seat
        if match.illegal is not None:
            illegal = match.illegal
            return -1.0, {"illegal_action": illegal.action, "reason": illegal.reason, "seat": seat}, False
        result = match.result()
        due = match.due_rewards()[seat]
        info = {
            "score": result.scores[seat],
            "scores": list(result.scores),
            "seat": seat,
            "win": result.shares[seat],
            "turns": result.turns,
            "end": result.end,
            "opponents": [e.name if e is not None else None for e in self.seat_entries],
        }
        if result.forfeit is not None:
            info["forfeit"] = result.forfeit.seat
        return float(due), info, result.truncated and self.turn_cap == "truncate"

    def legal_actions(self) -> list[int]:
        """The learner's legal actions; none when it is not to move (another seat's turn,
        the game over)."""
        match = self.match
        if match is None or match.illegal is not None or match.forfeit is not None:
            return []
        state = match.state
        if state.is_over or state.current_player != self.seat:
            return []
        legal: list[int] = state.legal_actions()
        return legal

    def view(self) -> Any:
        """The learner's live view of the game."""
        return self.game.live_view(self.state, self.seat)

    def observe(self) -> np.ndarray:
        """The learner's encoded observation."""
        obs: np.ndarray = self.encoder.encode(self.view())
        return obs


__all__ = [
    "RESET_OPTIONS",
    "LearnerEpisode",
    "OpponentEntry",
    "OpponentPool",
    "check_seat",
    "check_weight",
    "opponent_list",
]
