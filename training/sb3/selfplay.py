"""Many learner games stepped together, with the neural opponents' decisions batched.

A :class:`GameBatch` holds the games of one collector worker
(:class:`training.sb3.collector.BatchedSelfPlayVecEnv`). Each game is a learner episode
(:class:`keltis_env.envs.episode.LearnerEpisode`, the one behind the learner's view
:class:`keltis_env.envs.learner.KeltisLearnerEnv`: the same opponent pool, the same seeding and
reset options, the same draws of seat, opponents and deal, the same rewards and infos) on
the match loop (:class:`keltis_env.core.match.Match`), the learner's seat decided from
outside. What the batch adds is the batching: the games step together.

Opponents are of two kinds:

* **bots** (``random``, ``heuristic``, ``planner``, ``ismcts``, ...) are the controllers of
  their seats and act on their own views inside :meth:`Match.play`, as in the learner view;
* **neural policies** (``ppo:PATH``: frozen snapshots of the learner, trained policies)
  are seats decided from outside too. Whenever games wait on such seats, the batch encodes
  all of their views into one array and runs one forward pass per network for all of
  them; each game's policy then picks its action from its own row of logits
  (:meth:`keltis_env.bots.ppo.PPOBot.choose`, with the game's own random generator when
  it samples), so a game's moves never depend on the other games of the batch. A turn of
  several decisions (play, draw, bonus steps) takes several such rounds; no decision gets
  a forward pass of its own.

The batch writes the learner's observations and action masks into arrays it is given
(shared memory in a worker process) and keeps time per part: the engine (moves, legal
actions, bookkeeping), the encoding, the opponent bots and the opponent networks.

This module imports neither torch nor Stable-Baselines3, so collector workers start light
(their process is :func:`training.sb3.workers.worker`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from keltis_env.bots import Bot, make_bot
from keltis_env.bots.ppo import PPOBot
from keltis_env.core.learner_game import LearnerGame
from keltis_env.envs.episode import LearnerEpisode, OpponentPool, opponent_list

#: the parts of a worker's time (seconds), see :attr:`GameBatch.timers`
TIMERS = ("engine", "encoding", "opponent_bots", "opponent_networks")
#: what ``VecEnv.env_method`` may call on the games (the learner view's names)
METHODS = ("action_masks", "add_opponent", "remove_opponent", "set_opponent_weights", "opponent_names",
           "opponent_weights")
Info = dict[str, Any]
#: what ``VecEnv.get_attr`` may read from a game
ATTRIBUTES = ("seat", "num_players", "game", "reward_mode")


def set_learner(games: Any, learner: LearnerGame) -> None:
    """A batch's learner-game attributes from ``learner`` (the Python and the compiled batch
    read the same): ``learner``, ``spec``, ``game``, ``num_players``, ``config``,
    ``reward_mode``, ``illegal_action``, ``turn_cap``, ``features``, ``num_actions``."""
    games.learner = learner
    games.spec = learner.descriptor
    games.game = learner.game
    games.num_players = learner.num_players
    games.config = learner.config
    games.reward_mode = learner.reward
    games.illegal_action = learner.illegal_action
    games.turn_cap = learner.turn_cap
    games.features = learner.features
    games.num_actions = int(learner.descriptor.num_actions)


def batch_arrays(n_games: int, size: int, num_actions: int, obs: np.ndarray | None,
                 masks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The learners' observation and mask arrays: ``obs`` and ``masks`` when given (shared
    memory), checked for their shapes, else new ones."""
    obs = np.zeros((n_games, size), np.float32) if obs is None else obs
    masks = np.zeros((n_games, num_actions), bool) if masks is None else masks
    if obs.shape != (n_games, size) or masks.shape != (n_games, num_actions):
        raise ValueError(f"obs and masks must have shapes {(n_games, size)} and {(n_games, num_actions)}, got "
                         f"{obs.shape} and {masks.shape}")
    return obs, masks


def hidden_size(games: Any) -> int:
    """The values a batch's learner rows add after the observation: its privileged
    encoder's (:attr:`PooledGames.hidden`), 0 without one."""
    return 0 if games.hidden is None else int(games.hidden.size)


def _neural(bot: Bot) -> bool:
    """A neural policy: its decisions go through the batched forward pass."""
    return isinstance(bot, PPOBot)


class _Game(LearnerEpisode):
    """One game of the batch: a learner episode, its own random generator (the learner
    view's ``np_random``) and the learner's number of actions so far."""

    __slots__ = ("episode_length", "episode_return", "np_random")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.np_random: np.random.Generator | None = None
        self.episode_length = 0
        self.episode_return = 0.0


class PooledGames:
    """What a worker's games offer the collector whatever steps them (:class:`GameBatch` on
    the Python engine, :class:`training.sb3.compiled_batch.CompiledGameBatch` on the
    compiled core): every game's opponent pool, the learner's masks, ``env_method`` and
    ``get_attr``. A subclass says where game ``i``'s pool and seat are."""

    game: str
    num_players: int
    features: tuple[str, ...]
    masks: np.ndarray
    _networks: dict[str, PPOBot]

    def __init__(
        self,
        n_games: int,
        opponents: Sequence[str],
        weights: Sequence[float] | None = None,
        *,
        game: str = "keltis",
        num_players: int = 2,
        reward: str = "win",
        illegal_action: str = "terminate",
        game_options: Mapping[str, Any] | None = None,
        features: Sequence[str] = (),
        turn_cap: str = "truncate",
        privileged: bool = False,
        obs: np.ndarray | None = None,
        masks: np.ndarray | None = None,
    ) -> None:
        """The learner-game arguments (:class:`~keltis_env.core.learner_game.LearnerGame`) and
        the opponents' pool; the games themselves are the subclass's (:meth:`_build`).
        ``privileged``: each learner observation row goes on with what the learner's seat
        does not see (:meth:`~keltis_env.core.game.GameDescriptor.make_privileged`), for a
        critic that reads it (:mod:`training.common.critic`); the opponents never get it."""
        set_learner(self, LearnerGame(game=game, num_players=num_players, reward=reward, turn_cap=turn_cap,
                                      features=features, illegal_action=illegal_action,
                                      options=dict(game_options or {})))
        #: the encoder of what the learner's seat does not see, or None
        self.hidden = self.spec.make_privileged(num_players) if privileged else None
        self._networks = {}  # one loaded policy per spec, shared by the games
        self.timers = dict.fromkeys(TIMERS, 0.0)
        self._build(n_games, obs, masks)
        self._started = time.time()
        for spec, weight in opponent_list(opponents, weights, "weights"):
            for i in range(n_games):
                self.add_opponent(i, spec, weight)  # type: ignore[arg-type]

    def _build(self, n_games: int, obs: np.ndarray | None, masks: np.ndarray | None) -> None:
        """The ``n_games`` games and their arrays (``obs``, ``masks``: the caller's, or new)."""
        raise NotImplementedError

    def _pool(self, i: int) -> OpponentPool:
        raise NotImplementedError

    def _pools(self) -> list[OpponentPool]:
        raise NotImplementedError

    def _seat(self, i: int) -> int:
        raise NotImplementedError

    def _make_bot(self, spec: str) -> Bot:
        """The bot of an agent spec; a neural policy's network is loaded once and shared by
        the games, each with a random generator of its own (the pool names the spec in errors)."""
        if not spec.startswith("ppo:"):
            return make_bot(spec, game=self.game, num_players=self.num_players)
        shared = self._networks.get(spec)
        if shared is None:
            shared = make_bot(spec, game=self.game, num_players=self.num_players)
            assert isinstance(shared, PPOBot)
            if shared.info.features != self.features:  # its views are encoded in the learner's batches
                raise ValueError(f"a neural opponent must take the learner's observation: it was trained with "
                                 f"features {list(shared.info.features)}, the learner has {list(self.features)}")
            self._networks[spec] = shared
        bot = copy.copy(shared)  # the network and encoder shared, a random generator of its own
        bot.seed(None)
        return bot

    def add_opponent(self, i: int, opponent: str, weight: float = 1.0, name: str | None = None) -> str:
        """Add an opponent (agent spec) to game ``i``'s pool; an entry of the same name is replaced."""
        if not isinstance(opponent, str):
            raise TypeError(f"a collector's opponent is an agent spec (str), got {type(opponent).__name__}")
        return self._pool(i).add(opponent, weight, name)

    def remove_opponent(self, i: int, name: str) -> None:
        self._pool(i).remove(name)
        in_use = {e.spec for pool in self._pools() for e in pool.entries}
        for spec in [s for s in self._networks if s not in in_use]:
            del self._networks[spec]  # no game plays it any more: its network is dropped

    def set_opponent_weights(self, i: int, weights: Mapping[str, float]) -> None:
        self._pool(i).set_weights(weights)

    def opponent_names(self, i: int) -> list[str]:
        return self._pool(i).names()

    def opponent_weights(self, i: int) -> dict[str, float]:
        return self._pool(i).weights()

    def action_masks(self, i: int) -> np.ndarray:
        return self.masks[i].copy()

    def call(self, method: str, indices: Sequence[int], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        """``VecEnv.env_method`` for the games ``indices``."""
        if method not in METHODS:
            raise AttributeError(f"the collector's games have no method {method!r}; they have {', '.join(METHODS)}")
        fn = getattr(self, method)
        return [fn(i, *args, **kwargs) for i in indices]

    def get(self, attribute: str, indices: Sequence[int]) -> list[Any]:
        if attribute not in ATTRIBUTES:
            raise AttributeError(f"the collector's games have no attribute {attribute!r}; they have "
                                 f"{', '.join(ATTRIBUTES)}")
        if attribute == "seat":
            return [self._seat(i) for i in indices]
        return [getattr(self, attribute)] * len(indices)


class GameBatch(PooledGames):
    """``n_games`` learner games of ``game`` against opponents drawn from a pool (see the
    module doc). ``obs`` (float32, ``(n_games, observation size)``) and ``masks`` (bool,
    ``(n_games, number of actions)``) receive the learner's observations and legal actions
    after every :meth:`reset` and :meth:`step`; arrays of their own are made when omitted."""

    def _build(self, n_games: int, obs: np.ndarray | None, masks: np.ndarray | None) -> None:
        self._dense = self.reward_mode == "shaped"
        self.encoder = self.spec.make_encoder(self.num_players, self.features)
        self._batched_encoding = callable(getattr(self.encoder, "encode_into", None))
        self.size = int(self.encoder.size)
        self.obs, self.masks = batch_arrays(n_games, self.size + hidden_size(self), self.num_actions, obs, masks)
        # Each game has an encoder of its own: it caches per game what changes slowly (tiles, rows).
        self.games = [
            _Game(self.spec, self.config, OpponentPool(self.game, self.num_players, self._make_bot),
                  self.spec.make_encoder(self.num_players, self.features), reward=self.reward_mode,
                  illegal_action=self.illegal_action, decided_outside=_neural, turn_cap=self.turn_cap)
            for _ in range(n_games)
        ]

    # ------------------------------------------------------------------ the pool (per game)
    def _pool(self, i: int) -> OpponentPool:
        return self.games[i].pool

    def _pools(self) -> list[OpponentPool]:
        return [game.pool for game in self.games]

    def _seat(self, i: int) -> int:
        return int(self.games[i].seat)

    # ------------------------------------------------------------------ episodes
    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[Mapping[str, Any] | None] | None = None) -> list[dict[str, Any]]:
        """Start a new game everywhere (``seeds[i]`` reseeds game ``i`` and ``options[i]``
        are its reset options, as ``reset(seed=, options=)`` of the learner view); returns
        the reset infos."""
        n = len(self.games)
        seeds = [None] * n if seeds is None else list(seeds)
        options = [None] * n if options is None else list(options)
        if len(seeds) != n or len(options) != n:
            raise ValueError(f"reset: {n} games, got {len(seeds)} seeds and {len(options)} options")
        infos = [self._start(i, seeds[i], options[i]) for i in range(n)]
        self._advance(self.games)
        for g in self.games:
            g.check_started()
        self._observe()
        return infos

    def step(self, actions: Sequence[Any], lo: int = 0, hi: int | None = None
             ) -> tuple[list[float], list[bool], list[Info], list[Info]]:
        """One learner action per game, then the opponents until each game is at the learner's
        turn again; a game that ends is reported and restarted (SB3's auto-reset:
        ``terminal_observation``, ``TimeLimit.truncated``, Monitor's ``episode``). Returns
        rewards, dones, infos and reset infos. With ``lo``/``hi`` only the games
        ``lo..hi-1`` move (``actions`` holds theirs) and only their rows of ``obs`` and
        ``masks`` change: the collector's pipeline steps a worker's games in parts."""
        clock = time.perf_counter
        t0 = clock()
        hi = len(self.games) if hi is None else hi
        if not 0 <= lo < hi <= len(self.games) or len(actions) != hi - lo:
            raise ValueError(f"step: games {lo}..{hi - 1} of {len(self.games)} with {len(actions)} actions")
        games = self.games[lo:hi]
        n = len(games)
        running = []
        for i, g in enumerate(games):
            match = g.match
            assert match is not None
            g.episode_length += 1
            if not match.step(actions[i]):  # under "raise" an illegal action propagates, nothing changed
                running.append(g)
        self.timers["engine"] += clock() - t0
        self._advance(running)
        rewards = [0.0] * n
        dones = [False] * n
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": False} for _ in range(n)]  # as SB3's VecEnvs
        reset_infos: list[dict[str, Any]] = [{} for _ in range(n)]
        restarted = []
        for i, g in enumerate(games):
            match = g.match
            assert match is not None
            if not match.over:
                if self._dense:  # "shaped": the change of the learner's potential since its last action
                    rewards[i] = g.take_reward()
                    g.episode_return += rewards[i]
                continue
            t0 = clock()
            terminal = g.observe()
            if self.hidden is not None:
                terminal = np.concatenate([terminal, np.zeros(self.hidden.size, np.float32)])
                self.hidden.encode(match.state, g.seat, terminal[self.size:])
            t1 = clock()
            self.timers["encoding"] += t1 - t0
            rewards[i], info, truncated = g.result()
            dones[i] = True
            info["terminal_observation"] = terminal
            info["TimeLimit.truncated"] = truncated
            g.episode_return += rewards[i]
            info["episode"] = {"r": round(g.episode_return, 6), "l": g.episode_length,  # as SB3's Monitor
                               "t": round(time.time() - self._started, 6)}
            infos[i] = info
            self.timers["engine"] += clock() - t1
            reset_infos[i] = self._start(lo + i, None)  # times itself
            restarted.append(g)
        self._advance(restarted)
        for g in restarted:
            g.check_started()
        self._observe(lo, hi)
        return rewards, dones, infos, reset_infos

    def _start(self, i: int, seed: int | None, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A new game for slot ``i``: the learner view's ``reset(seed=, options=)``; its
        opponents play in the next :meth:`_advance`."""
        clock = time.perf_counter
        t0 = clock()
        g = self.games[i]
        if seed is not None or g.np_random is None:  # Gymnasium's Env.reset(seed=) and np_random
            g.np_random, _ = seeding.np_random(seed)
        info = g.start(g.np_random, options, reseed_bots=seed is not None, play=False, deal_seed=seed)
        g.episode_length = 0
        g.episode_return = 0.0
        self.timers["engine"] += clock() - t0
        return info

    def _encode(self, games: Sequence[_Game], seats: Sequence[int], out: np.ndarray) -> list[Any]:
        """Encode the views of ``seats`` in ``games`` into the rows of ``out`` (in one numpy
        pass where the game's encoder can, ``encode_into``); returns the views."""
        live_view = self.spec.live_view
        views = [live_view(g.match.state, seat) for g, seat in zip(games, seats, strict=True)]  # type: ignore[union-attr]
        if self._batched_encoding:
            self.encoder.encode_into(views, out, [g.encoder for g in games])
        else:
            for k, (g, view) in enumerate(zip(games, views, strict=True)):
                out[k] = g.encoder.encode(view)
        return views

    def _observe(self, lo: int = 0, hi: int | None = None) -> None:
        """The learner's observations and legal actions in the games ``lo..hi-1`` (all by default)."""
        clock = time.perf_counter
        t0 = clock()
        games = self.games[lo:hi]
        self._encode(games, [g.seat for g in games], self.obs[lo:hi, :self.size])
        if self.hidden is not None:
            for i, g in enumerate(games):
                self.hidden.encode(g.match.state, g.seat, self.obs[lo + i, self.size:])
        t1 = clock()
        self.timers["encoding"] += t1 - t0
        masks = self.masks[lo:hi]
        masks[:] = False
        for i, g in enumerate(games):
            legal = g.legal_actions()
            if legal:
                masks[i, legal] = True
        self.timers["engine"] += clock() - t1

    # ------------------------------------------------------------------ the opponents
    def _advance(self, games: Sequence[_Game]) -> None:
        """Play the opponents of ``games`` until each is at its learner's turn or over:
        bots inside the match loop, the networks' decisions in rounds of one forward pass
        per network for every game waiting on it."""
        clock = time.perf_counter
        timers = self.timers
        pending = list(games)
        while pending:
            waiting: dict[tuple[int, str], list[_Game]] = {}
            for g in pending:
                match = g.match
                assert match is not None
                think = sum(match.think)
                t0 = clock()
                over = match.play()  # the bots' turns; stops at the learner and at network seats
                spent = sum(match.think) - think
                timers["opponent_bots"] += spent
                timers["engine"] += clock() - t0 - spent
                if not over and match.to_move != g.seat:
                    entry = g.seat_entries[match.to_move]
                    assert entry is not None and _neural(entry.bot)
                    waiting.setdefault(entry.bot.network_key, []).append(g)
            pending = []
            for group in waiting.values():
                t0 = clock()
                batch = np.empty((len(group), self.size), np.float32)
                views = self._encode(group, [g.match.to_move for g in group], batch)  # type: ignore[union-attr]
                t1 = clock()
                timers["encoding"] += t1 - t0
                first = group[0].seat_entries[group[0].match.to_move]  # type: ignore[union-attr]
                assert first is not None
                logits = first.bot.batch_logits(batch)
                actions = []
                for k, g in enumerate(group):
                    entry = g.seat_entries[g.match.to_move]  # type: ignore[union-attr]
                    assert entry is not None
                    actions.append(entry.bot.choose(views[k].legal_actions, logits[k]))
                t2 = clock()
                timers["opponent_networks"] += t2 - t1
                for g, action in zip(group, actions, strict=True):
                    g.match.step(action)  # type: ignore[union-attr]
                    pending.append(g)
                timers["engine"] += clock() - t2


__all__ = ["ATTRIBUTES", "METHODS", "TIMERS", "GameBatch"]
