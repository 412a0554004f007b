"""The batched self-play collector: a Stable-Baselines3 ``VecEnv`` for MaskablePPO.

``BatchedSelfPlayVecEnv(game="keltis", num_players=2, n_envs=64, workers=2,
opponents=["heuristic", "ppo:snap.zip"], weights=[0.5, 0.5], reward="score")`` holds
``n_envs`` learner games (any game of the registry, :func:`keltis_env.core.game.get_game`)
in ``workers`` processes (``workers=0``: in this process). Each worker steps its games
together (:class:`training.sb3.selfplay.GameBatch`): the learner's action in every game, then
the opponents, bots on their own views and neural policies in one batched forward pass per
network and decision round across all the worker's games, until every game is at the
learner's turn again; then it encodes the learner's observations and legal actions into
arrays shared with this process. One message per worker and step crosses the process
boundary, carrying no observation but the final one of a game that ended.

On the Python engine, for bot opponents and the same seeds, the trajectories are those of ``n_envs`` copies of
the learner's view (:class:`keltis_env.envs.learner.KeltisLearnerEnv`) in SB3's ``DummyVecEnv``
or ``SubprocVecEnv``: the same observations, action masks, rewards, dones and infos
(``terminal_observation``, ``TimeLimit.truncated``, Monitor's ``episode``, and the
learner view's final ``score``, ``scores``, ``seat``, ``win``, ``turns``, ``end``,
``opponents``). ``tests/test_collector.py`` checks this.

What MaskablePPO and the opponent pool need:

* ``env_method("action_masks")`` (sb3-contrib's ``get_action_masks``) returns the masks
  of the last step without a call to the workers; ``has_attr("action_masks")`` is true;
* ``env_method`` also takes the learner view's pool methods (``add_opponent``,
  ``remove_opponent``, ``set_opponent_weights``, ``opponent_names``,
  ``opponent_weights``), for every game or for ``indices``;
* :meth:`timers` tells where the workers' time went (engine, encoding, opponent bots,
  opponent networks) and how long this process waited for them.

For :class:`training.sb3.pipeline.PipelinedMaskablePPO` the games are also split into
``parts`` (``pipeline``, default 2: a slice of every worker's games each), stepped with
:meth:`step_part_async` / :meth:`step_part_wait` while this process chooses the actions
of another part; each worker steps its parts in the order they were sent.

``backend`` picks the engine of the games (:data:`training.sb3.compiled_batch.BACKENDS`):
``"python"`` (the default), the Python engine as above; ``"compiled"``, the game's compiled
core (:class:`training.sb3.compiled_batch.CompiledGameBatch`: the same interface, infos and
opponents, the engine, encoder and the compiled bots in numba kernels, with deals of its
own: same seeds, same trajectories, but not the Python engine's games); ``"auto"``,
compiled where the game has those kernels, numba is installed and they compute the
observation features, else Python (training's ``collector_backend``, default ``auto``).
:attr:`backend` says which one runs.

``relabel`` (training's ``relabel``) names one of the game's relabellings (the card game's
``colours_affine`` or ``colours``: :meth:`keltis_env.core.game.GameDescriptor.make_symmetry`), or
``"none"`` (the default). With one, every game plays under a relabelling drawn at its deal
(from ``relabel_seed``): the learner sees its observations, masks and terminal observations
relabelled and its actions are mapped back, so that it learns every colour's part of the
game from every game (data augmentation for a network that plays averaged over them).

``privileged=True`` appends what the learner's seat does not see to each of its observation
rows, terminal observations included (the game's
:meth:`~keltis_env.core.game.GameDescriptor.make_privileged` block; :attr:`seat_size` says
where the seat's part ends), for a critic that reads it in training only
(:mod:`training.common.critic`); the opponents never get it.

Reset options are the learner view's (:data:`keltis_env.envs.episode.RESET_OPTIONS`: a
``state`` or a ``record`` with ``upto`` to start from, the learner's ``seat``, the
``opponents`` by entry name), given as in SB3's VecEnvs: ``set_options(dict or list of
dicts, one per game)``, then ``reset()``. They apply to that reset only; a game that ends
restarts with none, as SB3's automatic resets do. Unknown options are ignored with a
warning, here, before they reach the workers.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from keltis_env.core.game import get_game
from keltis_env.core.learner_game import check_turn_cap
from keltis_env.core.match import check_reset_options
from keltis_env.core.rewards import check_reward_mode
from keltis_env.envs.episode import RESET_OPTIONS, OpponentPool

from .compiled_batch import make_game_batch, resolve_backend
from .selfplay import ATTRIBUTES, METHODS, TIMERS, Info
from .workers import by_worker, shut_down, worker

#: attributes answered here, without the workers
_STATIC = ("render_mode", "game", "num_players", "reward_mode", "observation_space", "action_space", "seat_size")


class BatchedSelfPlayVecEnv(VecEnv):
    """``n_envs`` learner games in ``workers`` processes (see the module doc)."""

    def __init__(
        self,
        n_envs: int,
        opponents: Sequence[str],
        weights: Sequence[float] | None = None,
        *,
        game: str = "keltis",
        num_players: int = 2,
        reward: str = "win",
        workers: int = 2,
        game_options: Mapping[str, Any] | None = None,
        features: Sequence[str] = (),
        pipeline: int = 2,
        start_method: str = "forkserver",
        turn_cap: str = "truncate",
        backend: str = "python",
        relabel: str = "none",
        relabel_seed: int = 0,
        privileged: bool = False,
    ) -> None:
        _check_counts(n_envs, workers, pipeline)
        descriptor = get_game(game)
        features = descriptor.check_features(features)
        if relabel != "none" and relabel not in descriptor.symmetries:
            offered = ", ".join(["none", *sorted(descriptor.symmetries)])
            raise ValueError(f"relabel must be one of {offered} for the game {descriptor.name!r}, got {relabel!r}")
        #: the relabellings the games play under (None: none), and each game's current one
        self.relabel = None if relabel == "none" else descriptor.make_symmetry(relabel, num_players, features)
        self._which = np.zeros(n_envs, dtype=np.int64)
        self._relabel_rng = np.random.default_rng(relabel_seed)
        #: the engine the games run on: "compiled" or "python" (``backend="auto"`` resolved)
        self.backend = resolve_backend(backend, descriptor.name, features)
        self.game = descriptor.name
        self.num_players = num_players
        self.reward_mode = check_reward_mode(reward)
        self.render_mode = None
        options = dict(game_options or {})
        descriptor.make_config(num_players=num_players, **options)  # refuse bad options here, not in a worker
        specs = [opponents] if isinstance(opponents, str) else list(opponents)
        checker = OpponentPool(self.game, num_players)
        for spec in specs:  # the learner view's checks and messages, before any process starts
            checker.make(spec)
        size = int(descriptor.make_encoder(num_players, features).size)
        #: values of the seat's observation; with ``privileged``, what the seat does not see follows them
        self.seat_size = size
        if privileged:
            if self.relabel is not None:
                raise ValueError("privileged observations do not combine with relabel yet: use relabel='none'")
            size += int(descriptor.make_privileged(num_players).size)
        n_actions = int(descriptor.num_actions)
        observation_space = spaces.Box(descriptor.obs_low, descriptor.obs_high, (size,), np.float32)
        super().__init__(n_envs, observation_space, spaces.Discrete(n_actions))
        kwargs = {"opponents": specs, "weights": None if weights is None else list(weights), "game": self.game,
                  "num_players": num_players, "reward": reward, "game_options": options,
                  "features": features, "turn_cap": check_turn_cap(turn_cap), "backend": self.backend,
                  "privileged": privileged}
        self._masks = np.zeros((n_envs, n_actions), bool)
        self._waited = 0.0  # seconds this process spent waiting for the workers
        self._steps = 0
        self.waiting = False
        self.closed = False
        self.remotes: list[Any] = []
        self.processes: list[Any] = []
        #: answers each worker still owes this process (its ready message, then one per command)
        self._owed: list[int] = []
        self._local: Any = None  # the games, with workers=0
        #: the pipeline's parts: global game indices, each part a slice of every worker's games
        self.parts: list[np.ndarray] = []
        self._part_slices: list[list[tuple[int, int]]] = []  # per part, per worker: its local games
        self._part_sent: list[float | None] = []
        if workers == 0:
            self._local = make_game_batch(n_envs, **kwargs)
            self._obs = self._local.obs
            self._masks = self._local.masks
            self._groups = [list(range(n_envs))]
            self._where = [(0, i) for i in range(n_envs)]
            return
        self._start_workers(min(workers, n_envs), pipeline, start_method, kwargs, size, n_actions)

    def _start_workers(self, workers: int, pipeline: int, start_method: str, kwargs: dict[str, Any], size: int,
                       n_actions: int) -> None:
        """The worker processes, their shares of the games and the buffers shared with them."""
        n_envs = self.num_envs
        ctx = mp.get_context(start_method)
        obs_buffer = ctx.RawArray(ctypes.c_float, n_envs * size)
        mask_buffer = ctx.RawArray(ctypes.c_bool, n_envs * n_actions)
        self._obs = np.frombuffer(obs_buffer, dtype=np.float32).reshape(n_envs, size)
        self._shared_masks = np.frombuffer(mask_buffer, dtype=np.bool_).reshape(n_envs, n_actions)
        bounds = [round(k * n_envs / workers) for k in range(workers + 1)]
        self._groups = [list(range(bounds[k], bounds[k + 1])) for k in range(workers)]
        self._where = [(k, j) for k, group in enumerate(self._groups) for j in range(len(group))]
        self._split_parts(pipeline)
        try:
            for k in range(workers):
                remote, work_remote = ctx.Pipe()
                args = (work_remote, remote, {**kwargs, "size": size, "num_actions": n_actions}, obs_buffer,
                        mask_buffer, bounds[k], bounds[k + 1])
                # forkserver: workers start clean, never as a copy of a process with torch threads
                process = ctx.Process(target=worker, args=args, daemon=True)
                process.start()
                work_remote.close()
                self.remotes.append(remote)
                self.processes.append(process)
                self._owed.append(1)
            self._answers(range(workers))
        except BaseException:
            self.close()
            raise

    def _split_parts(self, pipeline: int) -> None:
        """The pipeline's parts (at most ``pipeline``): a slice of every worker's games each."""
        parts = min(pipeline, min(len(group) for group in self._groups))
        if parts:
            for p in range(parts):
                slices = [(round(p * len(g) / parts), round((p + 1) * len(g) / parts)) for g in self._groups]
                self._part_slices.append(slices)
                self.parts.append(np.array([g[0] + j for g, (lo, hi) in zip(self._groups, slices, strict=True)
                                            for j in range(lo, hi)], dtype=np.int64))
            self._part_sent = [None] * parts

    # ------------------------------------------------------------------ stepping
    def reset(self) -> np.ndarray:
        if len(self._options) != self.num_envs:
            raise ValueError(f"set_options takes one dict for all {self.num_envs} games or a list of one per game, "
                             f"got a list of {len(self._options)}")
        seeds = list(self._seeds)
        # read here (an unknown option warns once, in this process); the workers get the known ones
        options = [
            {k: v for k, v in check_reset_options(o, RESET_OPTIONS).items() if k in RESET_OPTIONS} or None
            for o in self._options
        ]
        start = time.perf_counter()
        if self._local is not None:
            self.reset_infos = self._local.reset(seeds, options)
        else:
            for k, group in enumerate(self._groups):
                self._send(k, ("reset", ([seeds[i] for i in group], [options[i] for i in group])))
            self.reset_infos = [x for answer in self._answers(range(len(self.remotes))) for x in answer]
            self._masks = self._shared_masks.copy()
        self._waited += time.perf_counter() - start
        self._reset_seeds()
        self._reset_options()
        self._redraw(np.arange(self.num_envs))
        return self._seen(np.arange(self.num_envs), self._obs)

    def step_async(self, actions: np.ndarray) -> None:
        if any(sent is not None for sent in self._part_sent):
            raise RuntimeError("a part is being stepped (step_part_async): wait for it first")
        self._actions = self._played(np.arange(self.num_envs), np.asarray(actions))
        self._sent = time.perf_counter()
        if self._local is None:
            for k, group in enumerate(self._groups):
                self._send(k, ("step", self._actions[group[0] : group[-1] + 1].tolist()))
            self.waiting = True

    def step_wait(self) -> Any:
        if self._local is not None:
            rewards, dones, infos, reset_infos = self._local.step(self._actions.tolist())
        else:
            rewards, dones, infos, reset_infos = self._gather([len(group) for group in self._groups])
            self.waiting = False
            self._masks = self._shared_masks.copy()
        self._waited += time.perf_counter() - self._sent
        self._steps += 1
        self.reset_infos = reset_infos
        everyone = np.arange(self.num_envs)
        self._new_episodes(everyone, dones, infos)
        return self._seen(everyone, self._obs), np.array(rewards, dtype=np.float32), np.array(dones, dtype=bool), infos

    # ------------------------------------------------------------------ the pipeline's parts
    def step_part_async(self, part: int, actions: np.ndarray) -> None:
        """Send the learner's actions of the games ``parts[part]`` (in that order) to the
        workers, which step those games only. While they do, this process may choose the
        actions of another part (:class:`training.sb3.pipeline.PipelinedMaskablePPO`); each
        worker steps its parts in the order they were sent."""
        if not self.parts:
            raise RuntimeError("this collector has no parts: its games run in this process (workers=0)")
        if self.waiting or self._part_sent[part] is not None:
            raise RuntimeError(f"part {part} (or a whole step) is already being stepped")
        actions = np.asarray(actions)
        if actions.shape[:1] != self.parts[part].shape:
            raise ValueError(f"part {part} has {len(self.parts[part])} games, got {actions.shape[:1]} actions")
        actions = self._played(self.parts[part], actions)
        self._part_sent[part] = time.perf_counter()
        at = 0
        for k, (lo, hi) in enumerate(self._part_slices[part]):
            self._send(k, ("step_part", (lo, hi, actions[at : at + hi - lo].tolist())))
            at += hi - lo

    def step_part_wait(self, part: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """The results of :meth:`step_part_async` for ``part``: the new observations, action
        masks, rewards, dones and infos of its games (the rows of ``step_wait``'s arrays at
        ``parts[part]``); ``reset_infos`` is updated at those games."""
        sent = self._part_sent[part]
        if sent is None:
            raise RuntimeError(f"part {part} was not sent")
        start = time.perf_counter()
        rewards, dones, infos, reset_infos = self._gather([hi - lo for lo, hi in self._part_slices[part]])
        self._waited += time.perf_counter() - start
        self._part_sent[part] = None
        idx = self.parts[part]
        masks = self._shared_masks[idx]  # fancy indexing: copies
        self._masks[idx] = masks
        for j, info in zip(idx.tolist(), reset_infos, strict=True):
            self.reset_infos[j] = info
        self._new_episodes(idx, dones, infos)
        return (self._seen(idx, self._obs[idx]), self._seen_masks(idx, masks), np.array(rewards, dtype=np.float32),
                np.array(dones, dtype=bool), infos)

    # ------------------------------------------------------------------ relabelled games
    def _redraw(self, idx: np.ndarray) -> None:
        """New relabellings for the games ``idx`` (at their deal)."""
        if self.relabel is not None and len(idx):
            self._which[idx] = self._relabel_rng.integers(self.relabel.size, size=len(idx))

    def _seen(self, idx: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The observations of the games ``idx`` (rows of ``obs``) as the learner sees them: a copy."""
        if self.relabel is None:
            return obs.copy()
        return np.asarray(self.relabel.relabel(self._which[idx], obs)[0])

    def _seen_masks(self, idx: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.relabel is None:
            return masks
        return np.take_along_axis(masks, self.relabel.action_source[self._which[idx]], axis=1)

    def _played(self, idx: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The learner's actions of the games ``idx`` mapped back from what it saw to the game's ids."""
        if self.relabel is None:
            return actions
        return np.asarray(self.relabel.action_source[self._which[idx], actions.astype(np.int64)])

    def _new_episodes(self, idx: np.ndarray, dones: Sequence[bool], infos: list[Info]) -> None:
        """The games ``idx`` that ended: their terminal observations relabelled as the learner
        saw their episode, then a new relabelling for the game just dealt."""
        if self.relabel is None:
            return
        ended = [k for k, done in enumerate(dones) if done]
        for k in ended:
            terminal = infos[k].get("terminal_observation")
            if terminal is not None:
                infos[k]["terminal_observation"] = self._seen(idx[k : k + 1], np.asarray(terminal)[None])[0]
        self._redraw(idx[ended])

    def _gather(self, sizes: Sequence[int]) -> tuple[list[float], list[bool], list[Info], list[Info]]:
        """Every worker's answer to a step of ``sizes[k]`` of its games, in order: rewards,
        dones, infos and reset infos (only the games that ended carry infos across)."""
        rewards: list[float] = []
        dones: list[bool] = []
        infos: list[Info] = []
        reset_infos: list[Info] = []
        answers = self._answers(range(len(self.remotes)))
        for k, (r, ended, ended_infos, ended_resets) in zip(sizes, answers, strict=True):
            d = [False] * k
            i: list[Info] = [{"TimeLimit.truncated": False} for _ in range(k)]
            ri: list[Info] = [{} for _ in range(k)]
            for j, info, reset_info in zip(ended, ended_infos, ended_resets, strict=True):
                d[j], i[j], ri[j] = True, info, reset_info
            rewards += r
            dones += d
            infos += i
            reset_infos += ri
        return rewards, dones, infos, reset_infos

    def _send(self, k: int, message: Any) -> None:
        """Send worker ``k`` a command; it owes one answer more."""
        self.remotes[k].send(message)
        self._owed[k] += 1

    def _answers(self, workers: Iterable[int]) -> list[Any]:
        """Every worker's answer (``workers``: their indices), in order. A worker's error is
        raised once all have answered, so that no answer is left in a pipe for the next
        command. The answers owed are counted one by one, so that :meth:`close` reads exactly
        those still in the pipes, whenever an interrupt (Ctrl-C, SIGTERM) stopped this."""
        replies = []
        for k in workers:
            try:
                replies.append(self.remotes[k].recv())
            except (EOFError, ConnectionResetError):
                raise RuntimeError("a collector worker process has died; see its error output above") from None
            self._owed[k] -= 1
        for ok, value in replies:
            if not ok:
                raise value
        return [value for _, value in replies]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        shut_down(self.remotes, self.processes, self._owed)

    # ------------------------------------------------------------------ the games' methods
    def _by_worker(self, indices: Iterable[int]) -> dict[int, list[int]]:
        return by_worker(indices, self._where)

    def _ask(self, cmd: str, indices: Any, make: Any) -> list[Any]:
        order = list(self._get_indices(indices))
        if self._local is not None:
            return list(make(order))
        targets = self._by_worker(order)
        for k, local in targets.items():
            self._send(k, (cmd, make(local)))
        answers = dict(zip(targets, map(iter, self._answers(list(targets))), strict=True))
        return [next(answers[self._where[i][0]]) for i in order]

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and indices is None and not method_args and not method_kwargs:
            # MaskablePPO's get_action_masks: no round trip to the workers
            return list(self._seen_masks(np.arange(self.num_envs), self._masks))
        if method_name not in METHODS:
            raise AttributeError(f"the collector's games have no method {method_name!r}; they have "
                                 f"{', '.join(METHODS)}")
        if self._local is not None:
            local = self._local
            return self._ask("call", indices, lambda order: local.call(method_name, order, method_args, method_kwargs))
        return self._ask("call", indices, lambda local: (method_name, local, method_args, method_kwargs))

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        n = len(list(self._get_indices(indices)))
        if attr_name in _STATIC:
            return [getattr(self, attr_name)] * n
        if attr_name not in ATTRIBUTES:
            raise AttributeError(f"the collector's games have no attribute {attr_name!r}; they have "
                                 f"{', '.join(sorted({*ATTRIBUTES, *_STATIC}))}")
        if self._local is not None:
            local = self._local
            return self._ask("get", indices, lambda order: local.get(attr_name, order))
        return self._ask("get", indices, lambda local: (attr_name, local))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"the collector's games have no attribute to set ({attr_name!r}); change the opponents "
                             f"with env_method: {', '.join(METHODS[1:4])}")

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in METHODS or attr_name in ATTRIBUTES or attr_name in _STATIC

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))  # no gymnasium wrappers: the games are built in

    # ------------------------------------------------------------------ where the time goes
    def timers(self, reset: bool = False) -> dict[str, float]:
        """Seconds spent per part: each worker part (``engine``, ``encoding``,
        ``opponent_bots``, ``opponent_networks``) summed over the workers, which run at the
        same time, and ``waited``, this process's time waiting for the workers to step."""
        if self._local is not None:
            parts = [dict(self._local.timers)]
            if reset:
                self._local.timers = dict.fromkeys(TIMERS, 0.0)
        else:
            for k in range(len(self.remotes)):
                self._send(k, ("timers", reset))
            parts = self._answers(range(len(self.remotes)))
        out = {key: sum(p[key] for p in parts) for key in TIMERS}
        out["waited"] = self._waited
        out["workers"] = float(max(1, len(self.remotes)))
        if reset:
            self._waited = 0.0
        return out


# ---------------------------------------------------------------------- arguments
def _check_counts(n_envs: int, workers: int, pipeline: int) -> None:
    """Refuse a bad ``n_envs``, ``workers`` or ``pipeline``, naming it."""
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"n_envs must be an integer >= 1, got {n_envs!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0: the games run in this process), got {workers!r}")
    if isinstance(pipeline, bool) or not isinstance(pipeline, int) or pipeline < 1:
        raise ValueError(f"pipeline must be an integer >= 1 (1: no parts), got {pipeline!r}")


__all__ = ["BatchedSelfPlayVecEnv"]
