"""Recording a teacher's decisions (:class:`~training.imitate.demonstrations.Demonstrations`):
its games in every seat, or a DAgger round's games played by another agent, labelled by
the teacher (see :mod:`training.imitate`).
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from ..common.config import ConfigError
from ..common.sections import EnvConfig, check_specs
from .config import RecordConfig
from .demonstrations import Demonstrations, recording_meta, save_demonstrations


def soft_targets(values: list[tuple[int, float]], num_actions: int, temperature: float) -> tuple[int, np.ndarray]:
    """The teacher's move (the first of its highest values) and ``softmax(value /
    temperature)`` over the valued actions (0 for the others)."""
    actions = np.array([a for a, _ in values], dtype=np.int64)
    v = np.array([x for _, x in values], dtype=np.float64)
    best = int(actions[int(np.argmax(v))])  # argmax: the first of the highest
    z = np.exp((v - v.max()) / temperature)
    target = np.zeros(num_actions, dtype=np.float64)
    np.add.at(target, actions, z / z.sum())
    return best, target.astype(np.float16)


class _Recorder:
    """The controller of one seat in a recorded game (:class:`keltis_env.core.match.Match`):
    at every decision it notes the observation, the mask and the teacher's choice (with its
    soft target when ``temperature > 0``), and plays that choice, or the actor's when the
    actor has this seat."""

    def __init__(self, seat: int, teacher: Any, actor: Any, encoder: Any, sink: list[tuple[Any, ...]],
                 temperature: float = 0.0, num_actions: int = 0) -> None:
        self.seat = seat
        self.teacher = teacher
        self.actor = actor  # None: the teacher's move is played
        self.encoder = encoder
        self.sink = sink
        self.temperature = temperature
        self.num_actions = num_actions

    def act(self, view: Any) -> int:
        target: np.ndarray | None = None
        if self.temperature > 0:
            label, target = soft_targets(self.teacher.action_values(view), self.num_actions, self.temperature)
        else:
            label = int(self.teacher.act(view))
        self.sink.append((self.encoder.encode(view).astype(np.float16), self.encoder.mask(view.legal_actions)
                          .astype(bool), label, self.seat, target))
        return label if self.actor is None else int(self.actor.act(view))


def _record(
    game: str, teacher: str, num_players: int, reward: str, options: dict[str, Any], seeds: list[int],
    actor: str | None = None, temperature: float = 0.0, features: tuple[str, ...] = (),
) -> tuple[Any, ...]:
    """The teacher's decision in every position of the games of ``seeds``; the moves are
    the teacher's, or with ``actor`` (an agent spec) the actor's in all seats (half of the
    games) or in one random seat."""
    from keltis_env.bots import make_bot
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    descriptor = get_game(game)
    config = descriptor.make_config(num_players=num_players, **options)
    encoder = descriptor.make_encoder(num_players, features)
    bots = [make_bot(teacher, seed=i, game=game, num_players=num_players) for i in range(num_players)]
    actor_bot = make_bot(actor, seed=0, game=game, num_players=num_players) if actor else None
    obs, masks, actions, returns, targets = [], [], [], [], []
    for seed in seeds:
        for i, bot in enumerate(bots):
            bot.seed(seed * 10 + i)
        game_rng = random.Random(seed)
        acting = set(range(num_players)) if game_rng.random() < 0.5 else {game_rng.randrange(num_players)}
        if actor_bot is None:
            acting = set()
        decisions: list[tuple[Any, ...]] = []
        seats = [_Recorder(p, bots[p], actor_bot if p in acting else None, encoder, decisions, temperature,
                           descriptor.num_actions) for p in range(num_players)]
        match = Match(descriptor, descriptor.new_state(config, seed), seats, reward=reward)
        final = match.run().rewards
        for o, m, a, p, t in decisions:
            obs.append(o)
            masks.append(m)
            actions.append(a)
            returns.append(final[p])
            if t is not None:
                targets.append(t)
    width = descriptor.num_actions if temperature > 0 else 0
    soft = np.stack(targets) if targets else np.zeros((len(actions), width), np.float16)
    return np.stack(obs), np.stack(masks), np.array(actions), np.array(returns, dtype=np.float32), soft


def record_demonstrations(env: EnvConfig, record: RecordConfig, seed: int, workers: int, actor: str | None = None,
                          round_: int = 0, progress: bool = False) -> Demonstrations:
    """The teacher's labels (see the module doc), recorded by ``workers`` processes: its own
    games, or with ``actor`` the games of DAgger round ``round_``, their deals drawn from
    ``seed``. Every game depends on its seed alone; the decisions come in the order of the
    workers' shares of the games (``progress``: a bar counting games)."""
    from tqdm import tqdm

    from keltis_env.evaluation.play import one_blas_thread

    workers = max(1, workers)
    rng = random.Random(f"pretrain/{seed}/{round_}")
    seeds = [rng.randrange(2**62) for _ in range(record.dagger_games if actor else record.games)]
    # worker i's games are seeds[i::workers], in pieces of at most _PIECE games, each piece a task
    pieces = [chunk[k : k + _PIECE] for i in range(workers) for chunk in [seeds[i :: workers]]
              for k in range(0, len(chunk), _PIECE)]
    args = [(env.game, record.teacher, env.num_players, env.reward, env.game_options(), c, actor,
             record.target_temperature, tuple(env.features)) for c in pieces]
    with tqdm(total=len(seeds), desc=f"record {record.teacher}", unit="game", disable=not progress,
              leave=False) as bar:
        if workers == 1:
            parts = []
            for a in args:
                parts.append(_record(*a))
                bar.update(len(a[5]))
        else:
            pool = ProcessPoolExecutor(min(workers, len(args)), mp_context=get_context("forkserver"),
                                       initializer=one_blas_thread)
            try:
                futures = {pool.submit(_record, *a): len(a[5]) for a in args}  # in the order of the work
                for done in as_completed(futures):
                    bar.update(futures[done])
                parts = [f.result() for f in futures]
            except BaseException:  # Ctrl-C, SIGTERM, a failing teacher: stop now, not after every game
                _stop_pool(pool)
                raise
            pool.shutdown()
    return Demonstrations(*(np.concatenate([part[k] for part in parts]) for k in range(5)))


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Drop ``pool``'s waiting tasks and kill its workers (a plain shutdown would first play
    every game already queued)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # no public kill before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.kill()
    for process in workers:
        process.join(timeout=10)


#: Games per recording task: small enough for a progress bar that moves, large enough that
#: building the bots of a task (a ``ppo:`` policy loads its network) costs little.
_PIECE = 25


def record(env: EnvConfig, rec: RecordConfig, seed: int, workers: int, out: str | Path, progress: bool = True,
           actor: str | None = None, round_: int = 1) -> dict[str, Any]:
    """Record the teacher's games (or, with ``actor``, DAgger round ``round_`` played by
    that agent) and save them to ``out``; the recording's metadata."""
    if not rec.teacher:
        raise ConfigError("record needs record.teacher (an agent spec: planner, ismcts, ...)")
    if actor is not None:
        check_specs([actor], env.game, env.num_players, field="--actor")
        if isinstance(round_, bool) or not isinstance(round_, int) or round_ < 1:
            raise ConfigError(f"--round must be a positive integer, got {round_!r}")
    start = time.perf_counter()
    data = record_demonstrations(env, rec, seed, workers, actor=actor, round_=round_ if actor else 0,
                                 progress=progress)
    meta = recording_meta(env, rec, seed, len(data), actor, round_ if actor else 0)
    meta["seconds"] = round(time.perf_counter() - start, 1)
    save_demonstrations(out, data, meta)
    return meta


__all__ = ["record", "record_demonstrations", "soft_targets"]
