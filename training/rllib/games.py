"""Many league games stepped together on a game's compiled core, for RLlib's batched sampler.

:class:`LeagueGames` holds ``n`` games of a game with collector kernels
(``keltis_env.games.<game>.kernels_batch``: ``start_games``, ``act_games``,
``advance_games``, ``observe_games``, ``settle_games``). Every seat of every game is
played by a module id that the policy mapping (:class:`~training.rllib.league.LeagueMapping`)
draws per game, as in the per-game adapter:

* ``main``, the learner: its decisions are recorded as :class:`Trajectory` objects, one
  per seat and game (a game of ``main`` against itself has two);
* a bot of ``bots`` (the bots' module ids): played inside the kernels where the kernels
  have it (``random``, ``heuristic``, ``planner``), else on the Python engine's view of the
  position;
* any other module id (a frozen snapshot ``main_vK``): a neural policy, asked through
  the ``act`` callable of :meth:`LeagueGames.tick`.

One :meth:`~LeagueGames.tick` makes one decision in every game: the seats waiting on a
module are batched per module (one ``act`` call each, with every waiting game's
observation and legal-action mask), the kernels apply the actions and play their bots
until each game waits on a seat decided outside again or is over. A game that ends hands
back its learner trajectories and is dealt again with a new matchup.

Rewards are those of the per-game adapter (:class:`keltis_env.integrations.rllib.
TurnBasedMultiAgentEnv`) as RLlib's episodes keep them: the reward of a learner's
decision is what its seat received between that decision and its next one (or the end):
``win`` and ``score`` at the end only, ``shaped`` its change of potential; what a seat
receives before its first decision is not part of any step (RLlib keeps it out of the
episode's steps). A game cut at the turn cap is truncated, or (``turn_cap="end"``)
terminated. Deals come from the compiled core's generators (seeded from ``seed``), so
the games are not those the Python engine deals from that seed.

``relabel`` names one of the game's relabellings (the card game's ``colours_affine``) or
``"none"``. With one, every game draws a relabelling at its deal (from ``seed``), and
``main`` sees that game through it: its observations and masks are relabelled before
``act`` and in its trajectories, its actions are mapped back to the game's ids before they
are played, so that every game trains every colour's part (the SB3 collector's ``relabel``).
The other seats play the game as dealt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from keltis_env.bots import Bot, make_bot
from keltis_env.compiled.table import GameTable
from keltis_env.core.game import get_game
from keltis_env.core.learner_game import LearnerGame
from keltis_env.core.rewards import win_shares

#: the learner's module id (``keltis_env.integrations.rllib.MAIN``; not imported, so that this
#: module runs without Ray)
MAIN = "main"
#: ``act(module_id, observations, masks) -> (actions, extra outputs or None)``
Act = Callable[[str, np.ndarray, np.ndarray], tuple[np.ndarray, Mapping[str, np.ndarray] | None]]


def collector_kernels(game: str) -> Any:
    """``game``'s batched kernels with what :class:`LeagueGames` needs; ``ValueError`` naming
    what is missing otherwise (a game without a compiled core, or numba not installed)."""
    descriptor = get_game(game)
    try:
        module = descriptor.compiled_module("batch")
    except ImportError as exc:
        raise ValueError(f"the batched sampler needs numba (the 'fast' extra): {exc}") from None
    if module is None:
        raise ValueError(f"the game {game!r} has no compiled core (its descriptor declares none): "
                         "use resources.sampler: per_game")
    needed = ("start_games", "act_games", "advance_games", "observe_games", "settle_games", "opponent_tables")
    missing = [name for name in needed if not hasattr(module, name)]
    if missing:
        raise ValueError(f"the compiled core of {game!r} lacks {', '.join(missing)}: use resources.sampler: per_game")
    return module


class Trajectory:
    """One learner seat's decisions in one game, or a chunk of them: ``obs`` and ``masks``
    hold one more row than ``actions`` (the observation after the last action; at the
    end of a game, the final one with an all-zero mask). ``extras`` holds the ``act``
    outputs per action (e.g. RLlib's ``action_logp``, ``action_dist_inputs``)."""

    __slots__ = (
        "actions",
        "done",
        "extras",
        "game_id",
        "masks",
        "obs",
        "pending",
        "rewards",
        "seat",
        "t_started",
        "terminated",
        "total",
        "truncated",
        "uid",
    )

    def __init__(self, game_id: str, seat: int, uid: str, t_started: int = 0) -> None:
        self.game_id, self.seat, self.uid, self.t_started = game_id, seat, uid, t_started
        self.obs: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.extras: dict[str, list[Any]] = {}
        #: the action taken at the last observation, waiting for its reward: (action, extras)
        self.pending: tuple[int, dict[str, Any]] | None = None
        self.terminated = self.truncated = self.done = False
        self.total = 0.0  # the return over every chunk so far

    def complete(self, reward: float) -> None:
        """The pending action's transition ends with ``reward``."""
        assert self.pending is not None
        action, extras = self.pending
        self.actions.append(action)
        self.rewards.append(reward)
        for key, value in extras.items():
            self.extras.setdefault(key, []).append(value)
        self.total += reward
        self.pending = None

    def cut(self, keep: int | None = None) -> Trajectory:
        """End this chunk after its first ``keep`` steps (default: all of them) and return the
        chunk that continues it: the steps after those, from the observation where this one
        now ends, and the pending action."""
        k = len(self.actions) if keep is None else keep
        if not 0 <= k <= len(self.actions):
            raise ValueError(f"keep must be from 0 to {len(self.actions)} (the chunk's steps), got {keep}")
        rest = Trajectory(self.game_id, self.seat, self.uid, self.t_started + k)
        rest.obs, rest.masks, rest.pending, rest.total = self.obs[k:], self.masks[k:], self.pending, self.total
        rest.actions, rest.rewards = self.actions[k:], self.rewards[k:]
        rest.extras = {key: values[k:] for key, values in self.extras.items()}
        del self.obs[k + 1:], self.masks[k + 1:], self.actions[k:], self.rewards[k:]
        for values in self.extras.values():
            del values[k:]
        self.pending = None
        return rest

    def __len__(self) -> int:
        return len(self.actions)


class LeagueGames:
    """``n`` league games on the compiled core (see the module doc).

    ``mapping(key) -> {agent id: module id}`` seats a new game (agents ``player_0..``);
    ``bots`` are the module ids played as bots (their specs); ``reward``, ``turn_cap`` and
    ``options`` (the game's) are the per-game adapter's.
    """

    def __init__(self, n: int, mapping: Callable[[str], Mapping[str, str]], *, game: str = "keltis",
                 num_players: int = 2, reward: str = "win", turn_cap: str = "truncate",
                 options: Mapping[str, Any] | None = None, bots: Sequence[str] = (), seed: int = 0,
                 name: str = "g", relabel: str = "none") -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"the number of games must be an integer >= 1, got {n!r}")
        #: the learner game's arguments, checked (:class:`~keltis_env.core.learner_game.LearnerGame`)
        self.learner = LearnerGame(game=game, num_players=num_players, reward=reward, turn_cap=turn_cap,
                                   options=dict(options or {}))
        self.spec = self.learner.descriptor
        collector_kernels(self.spec.name)  # refuses a game or an install the batched sampler cannot run
        self.config = self.learner.config
        self.n, self.num_players, self.mapping, self.name = n, self.learner.num_players, mapping, name
        self.reward_number = self.learner.reward_number
        self.cap_ends = self.learner.turn_cap == "end"
        self.bots = list(bots)
        if relabel != "none" and relabel not in self.spec.symmetries:
            offered = ", ".join(["none", *sorted(self.spec.symmetries)])
            raise ValueError(f"relabel must be one of {offered} for the game {self.spec.name!r}, got {relabel!r}")
        self.relabel = None if relabel == "none" else self.spec.make_symmetry(relabel, num_players, ())
        self.relabel_rng = np.random.default_rng([seed, 1])  # apart from the bots' seeds: relabel none keeps them
        self.which = np.zeros(n, np.int64)  # each game's relabelling (0: the identity)
        #: the games' rows and players on the compiled core (the one driver's table)
        self.table = table = GameTable(self.spec, self.config, n)
        self.size, self.num_actions, self.states, self.who = table.size, table.num_actions, table.states, table.who
        table.seed_slots(seed)  # slot g's first game: the Python engine's deal from seed + g
        self.bot_seeds = np.random.default_rng(seed)
        self.potential = np.zeros((num_players, n))  # each seat's potential at its last decision
        self.no_learner = np.full(n, -1, np.int64)  # advance_games stops only outside or at the end
        self.seat_arrays = [np.full(n, p, np.int64) for p in range(num_players)]
        self.modules: list[list[str]] = [[] for _ in range(n)]
        self.game_ids = [""] * n
        self.python_bots: list[dict[int, Bot]] = [{} for _ in range(n)]
        self.tracks: list[dict[int, Trajectory]] = [{} for _ in range(n)]
        self.waiting = np.zeros(n, np.int64)  # the seat each game waits on (decided outside)
        self.started = 0  # games dealt so far
        self.obs = np.zeros((n, self.size), np.float32)
        self.masks = np.zeros((n, self.num_actions), np.bool_)
        #: with ``trace`` set to a list: (game id, seat, action) of every decision made outside the kernels
        self.trace: list[tuple[str, int, int]] | None = None
        self.starts: dict[str, Any] = {}  # game id -> its first position, while ``trace`` is set
        self.ended: list[dict[str, Any]] = []  # the games that ended since the last look: see _finish
        self.finished: list[Trajectory] = []  # the learner trajectories of the games that ended this tick

    # ------------------------------------------------------------------ games
    def reset(self) -> None:
        """New games everywhere (the trajectories of the games in play are dropped)."""
        self.tracks = [{} for _ in range(self.n)]
        self._start(np.arange(self.n, dtype=np.int64))

    def _start(self, games: np.ndarray) -> None:
        """Deal the games ``games`` and play their bots until each waits on a seat decided outside."""
        self._deal(games)
        self._advance(games)

    def _deal(self, games: np.ndarray) -> None:
        """Deal the games ``games`` with new matchups (the policy mapping's, keyed by a new game id)."""
        for g in games.tolist():
            self.started += 1
            key = self.game_ids[g] = f"{self.name}-{self.started}"
            seats = self.mapping(key)
            modules = [seats[f"player_{p}"] for p in range(self.num_players)]
            self.modules[g] = modules
            self.who[g] = [self._kernel_player(m) for m in modules]
            self.python_bots[g] = {p: make_bot(m, seed=int(self.bot_seeds.integers(2**63)), game=self.spec.name)
                                   for p, m in enumerate(modules) if m in self.bots and not self.who[g, p]}
            self.tracks[g] = {p: Trajectory(key, p, f"{key}/{p}") for p, m in enumerate(modules) if m == MAIN}
        if self.relabel is not None:
            self.which[games] = self.relabel_rng.integers(self.relabel.size, size=len(games))
        self.table.start(games, self.seat_arrays[0], np.ones(len(games), np.bool_),
                                 np.zeros(self.n))
        if self.trace is not None:
            for g in games.tolist():
                self.starts[self.game_ids[g]] = self.table.position(g).to_dict()

    def _kernel_player(self, module: str) -> int:
        """The kernels' player number of a bot the kernels play (0: decided outside)."""
        return self.table.player(module if module in self.bots else None)

    def _advance(self, games: np.ndarray) -> None:
        """The kernels play their bots in ``games``; games that end are finished and dealt again."""
        while games.size:
            waiting = self.table.advance(games, self.no_learner)
            self.waiting[games] = waiting
            over = games[waiting < 0]
            if not over.size:
                return
            self._finish(over)
            self._deal(over)
            games = over

    # ------------------------------------------------------------------ a decision everywhere
    def tick(self, act: Act) -> list[Trajectory]:
        """One decision in every game (see the module doc); returns the learner trajectories
        of the games that ended (``done``)."""
        actions = np.zeros(self.n, np.int64)
        codes: dict[str, list[int]] = {}
        for g, p in enumerate(self.waiting.tolist()):
            codes.setdefault(self.modules[g][p], []).append(g)
        for module, rows in codes.items():
            games = np.array(rows, np.int64)
            if module in self.bots:
                for g in rows:
                    actions[g] = self._bot_action(g)
                continue
            seats = self.waiting[games]
            obs, masks = self.obs[: len(rows)], self.masks[: len(rows)]
            self.table.observe(games, seats, obs, masks)
            if module == MAIN:
                self._settle(games, seats)
                if self.relabel is not None:  # main sees the games through their relabellings
                    obs, masks = self.relabel.relabel(self.which[games], obs, masks)[:2]
            chosen, extras = act(module, obs, masks)
            actions[games] = chosen if module != MAIN else self._played(games, chosen)
            if module == MAIN:
                self._record(games, seats, obs, masks, chosen, extras)
        if self.trace is not None:
            self.trace += [(self.game_ids[g], int(p), int(a)) for g, (p, a) in
                           enumerate(zip(self.waiting.tolist(), actions.tolist(), strict=True))]
        everything = np.arange(self.n, dtype=np.int64)
        legal = self.table.act(everything, actions)
        if not legal.all():
            g = int(np.flatnonzero(~legal)[0])
            raise RuntimeError(f"{self.modules[g][int(self.waiting[g])]!r} chose the illegal action "
                               f"{int(actions[g])} in game {g}")
        self._advance(everything)
        done, self.finished = self.finished, []
        return done

    def _played(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``main``'s actions in the games ``games``, as it saw them, mapped back to the game's ids."""
        if self.relabel is None:
            return actions
        return np.asarray(self.relabel.action_source[self.which[games], np.asarray(actions, np.int64)])

    def _bot_action(self, g: int) -> int:
        """The action of the Python bot whose seat game ``g`` waits on."""
        p = int(self.waiting[g])
        bot = self.python_bots[g][p]
        state = self.table.position(g)
        view = self.spec.live_view(state, p) if getattr(bot, "accepts_live_view", False) else state.view(p)
        return int(bot.act(view))

    def _settle(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """Each learner seat's reward since its last decision (``games[j]``, ``seats[j]``),
        given to its pending action; returns whether each game is over."""
        rewards = np.zeros(len(games))
        over = np.zeros(len(games), np.bool_)
        for p in np.unique(seats).tolist():
            pick = np.flatnonzero(seats == p)
            rewards[pick], over[pick], _scores = self.table.settle(games[pick], self.seat_arrays[p], self.reward_number,
                                                                   self.potential[p])
        for j, (g, p) in enumerate(zip(games.tolist(), seats.tolist(), strict=True)):
            track = self.tracks[g][p]
            if track.pending is not None:
                track.complete(float(rewards[j]))
        return over

    def _record(self, games: np.ndarray, seats: np.ndarray, obs: np.ndarray, masks: np.ndarray, actions: np.ndarray,
                extras: Mapping[str, np.ndarray] | None) -> None:
        for j, (g, p) in enumerate(zip(games.tolist(), seats.tolist(), strict=True)):
            track = self.tracks[g][p]
            track.obs.append(obs[j].copy())
            track.masks.append(masks[j].copy())
            track.pending = (int(actions[j]), {k: v[j] for k, v in (extras or {}).items()})

    def _finish(self, games: np.ndarray) -> None:
        """The games ``games`` are over: every learner seat gets its final reward and final
        observation; their trajectories go to the ``done`` list of this tick, and a summary
        of each game to :attr:`ended`."""
        for g in games.tolist():
            state = self.table.position(g)
            scores = [int(x) for x in state.scores()]
            truncated = bool(state.truncated) and not self.cap_ends
            shares = win_shares(scores)
            tracks = self.tracks[g]
            if tracks:
                seats = np.array(sorted(tracks), np.int64)
                rows = np.repeat(np.int64(g), len(seats))
                self._settle(rows, seats)
                obs = np.zeros((len(seats), self.size), np.float32)
                masks = np.zeros((len(seats), self.num_actions), np.bool_)
                self.table.observe(rows, seats, obs, masks)
                if self.relabel is not None:
                    obs, masks = self.relabel.relabel(self.which[rows], obs, masks)[:2]
                for j, p in enumerate(seats.tolist()):
                    track = tracks[p]
                    track.obs.append(obs[j])
                    track.masks.append(masks[j])
                    track.terminated, track.truncated, track.done = not truncated, truncated, True
                    if track.actions:
                        self.finished.append(track)
            self.ended.append({"modules": list(self.modules[g]), "scores": scores, "win_shares": shares,
                               "truncated": truncated, "returns": {p: t.total for p, t in tracks.items()},
                               "steps": {p: t.t_started + len(t) for p, t in tracks.items()}})
            self.tracks[g] = {}

    def pending(self) -> int:
        """How many learner decisions wait for their reward (one per learner seat that has decided)."""
        return sum(track.pending is not None for tracks in self.tracks for track in tracks.values())

    def steps_in_play(self) -> int:
        """How many completed learner steps the games in play hold (not yet in a chunk)."""
        return sum(len(track) for tracks in self.tracks for track in tracks.values())

    def cut(self, excess: int = 0) -> list[Trajectory]:
        """The learner trajectories of the games in play, as chunks that end at their last
        observation (not done); the games go on with their continuations.

        ``excess``: that many of the chunks' last steps stay with the continuations instead
        (one a chunk, over the chunks in turn, again while some are left; a chunk left with no
        step stays whole in its game), so that a batch that overshot its size by the last round
        of decisions comes out at its size; the steps left over go to the next batch.
        """
        tracks = [(g, p, track) for g in range(self.n) for p, track in self.tracks[g].items() if len(track)]
        keep = [len(track) for _, _, track in tracks]
        while excess > 0 and any(keep):
            for i, k in enumerate(keep):
                if excess > 0 and k > 0:
                    keep[i], excess = k - 1, excess - 1
        chunks = []
        for (g, p, track), k in zip(tracks, keep, strict=True):
            if k:
                self.tracks[g][p] = track.cut(k)
                chunks.append(track)
        return chunks


__all__ = ["MAIN", "LeagueGames", "Trajectory", "collector_kernels"]
