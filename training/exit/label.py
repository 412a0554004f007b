"""Labelling a round: the search plays games and every decision of its seats becomes a
label, written in shards.

A label is what the learner sees and what the search concluded: the observation (the
game's encoder with ``env.features``, exactly the learner environment's observation of
that seat), the legal-action mask, the move the search played, the policy target (with
``label.target_temperature > 0``, ``softmax(mean / label.target_temperature)`` over every candidate the
search rolled out, those the halving dropped included, each with its mean rollout value in
points: :meth:`keltis_env.bots.search.SearchResult.policy_target`; all on the move where
nothing was searched; with ``move``, the move alone) and the value target: the final
reward of the deciding seat (``env.reward``, as the environment pays it; the fitted
network's metadata records it as what its value head estimates).

Games. In self-play (``label.opponent`` empty) the search sits in every seat and every
decision is labelled; game ``g`` of round ``k`` is dealt from ``derive_seed(seed,
"exit-label", k, g)``. Against an opponent the games come in duplicate deals: deal ``d``
is played once per seat of the search (game ``g``: deal ``g // n``, the search in seat
``g % n``) and only the search's decisions are labelled. Every bot is re-seeded before
every game from the run's seed, the round, the game and the seat, so a game depends on
its index alone, whichever process plays it and whenever. A game cut at ``env.max_turns``
gives no labels (counted as ``truncated_games``): it has no outcome by the rules, and most
of its decisions are the loop of discards and draws that ran into the limit, which a
network fitted to them learns to repeat.

Shards. The games of a round are cut into shards of ``label.shard_games`` games, each one
task of the worker processes and one file (``labels/shard_00000.npz``, the format of
:mod:`training.imitate.demonstrations`, written atomically by the worker). A shard
whose file exists is done: a run killed in the middle of labelling (Ctrl-C, SIGTERM,
SIGKILL, a power cut) resumes with the shards it lacks, and ends with the same shards as
an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.evaluation import derive_seed
from keltis_env.evaluation.play import start_worker

from ..common.config import ConfigError
from ..imitate.demonstrations import FORMAT, Demonstrations, load_demonstrations, save_demonstrations
from .config import ExitConfig


@dataclass(frozen=True)
class ShardTask:
    """One shard of a round: its games, the agents and where its file goes."""

    path: str
    round: int
    first: int  # index of the shard's first game in the round
    count: int  # games in the shard
    search: str  # the labelling search's agent spec
    opponent: str  # "" for self-play
    game: str
    num_players: int
    reward: str
    options: dict[str, Any]
    features: tuple[str, ...]
    seed: int
    temperature: float  # 0: the move is the target


def shard_tasks(config: ExitConfig, round_: int, search: str, folder: Path) -> list[ShardTask]:
    """Every shard of round ``round_`` (labelled by the agent spec ``search``) in order."""
    env, lab = config.env, config.label
    games = lab.games
    if lab.opponent:  # whole duplicate deals
        games = -(-games // env.num_players) * env.num_players
    return [ShardTask(str(folder / f"shard_{i:05d}.npz"), round_, first, min(lab.shard_games, games - first), search,
                      lab.opponent, env.game, env.num_players, env.reward, env.game_options(), tuple(env.features),
                      config.seed, lab.target_temperature)
            for i, first in enumerate(range(0, games, lab.shard_games))]


class _Labeller:
    """The controller of a searching seat (:class:`keltis_env.core.match.Match`): it plays
    the search's move and notes the decision with its policy target."""

    def __init__(self, seat: int, bot: Any, encoder: Any, sink: list[tuple[Any, ...]], temperature: float,
                 num_actions: int) -> None:
        self.seat = seat
        self.bot = bot
        self.encoder = encoder
        self.sink = sink
        self.temperature = temperature
        self.num_actions = num_actions

    def act(self, view: Any) -> int:
        target = None
        if self.temperature > 0:
            result = self.bot.analyse(view)
            action = result.action
            target = np.asarray(result.policy_target(self.num_actions, self.temperature), dtype=np.float16)
        else:
            action = self.bot.act(view)
        action = int(action)
        self.sink.append((self.encoder.encode(view).astype(np.float16), self.encoder.mask(view.legal_actions)
                          .astype(bool), action, self.seat, target))
        return action


_BOTS: dict[tuple[str, str, int, int], Any] = {}  # per process: (spec, game, players, seat) -> bot


def _bot(spec: str, game: str, num_players: int, seat: int) -> Any:
    from keltis_env.bots import make_bot

    key = (spec, game, num_players, seat)
    if key not in _BOTS:
        _BOTS[key] = make_bot(spec, seed=0, game=game, num_players=num_players)
    return _BOTS[key]


def label_shard(task: ShardTask) -> tuple[str, int]:
    """Play the shard's games, write its labels to ``task.path``; (path, decisions)."""
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    descriptor = get_game(task.game)
    n = task.num_players
    config = descriptor.make_config(num_players=n, **task.options)
    encoder = descriptor.make_encoder(n, task.features)
    obs, masks, actions, returns, targets = [], [], [], [], []
    truncated = 0
    for g in range(task.first, task.first + task.count):
        deal, searcher = divmod(g, n) if task.opponent else (g, -1)
        decisions: list[tuple[Any, ...]] = []
        seats: list[Any] = []
        for seat in range(n):
            searching = not task.opponent or seat == searcher
            bot = _bot(task.search if searching else task.opponent, task.game, n, seat)
            bot.seed(derive_seed(task.seed, "exit-label-bot", task.round, g, seat))
            seats.append(_Labeller(seat, bot, encoder, decisions, task.temperature, descriptor.num_actions)
                         if searching else bot)
        state = descriptor.new_state(config, derive_seed(task.seed, "exit-label", task.round, deal))
        result = Match(descriptor, state, seats, reward=task.reward).run()
        if result.truncated:  # no outcome by the rules, and its decisions are mostly the loop that hit max_turns
            truncated += 1
            continue
        final = result.rewards
        for o, m, a, seat, t in decisions:
            obs.append(o)
            masks.append(m)
            actions.append(a)
            returns.append(final[seat])
            targets.append(t)
    width = descriptor.num_actions if task.temperature > 0 else 0
    if not actions:  # every game of the shard was truncated
        data = Demonstrations(np.zeros((0, encoder.size), np.float16), np.zeros((0, descriptor.num_actions), bool),
                              np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros((0, width), np.float16))
    else:
        data = Demonstrations(np.stack(obs), np.stack(masks), np.array(actions, dtype=np.int64),
                              np.array(returns, dtype=np.float32),
                              np.stack(targets) if width else np.zeros((len(actions), 0), np.float16))
    meta = {"format": FORMAT, "game": task.game, "num_players": n, "features": list(task.features),
            "reward": task.reward, "teacher": task.search, "opponent": task.opponent, "games": task.count,
            "first_game": task.first, "seed": task.seed, "soft_temperature": task.temperature,
            "decisions": len(data), "actor": None, "round": task.round, "truncated_games": truncated}
    save_demonstrations(task.path, data, meta)
    return task.path, len(data)


def shard_done(path: str | Path) -> bool:
    """Whether the shard at ``path`` is written whole (an interrupted write leaves no file,
    only a temporary one that :func:`label_round` removes)."""
    if not Path(path).is_file():
        return False
    try:
        load_demonstrations(path)
    except ConfigError:
        return False
    return True


def _run(tasks: list[ShardTask], workers: int) -> Generator[tuple[str, int], None, None]:
    """The shards' (path, decisions) as they finish; closing the iterator stops the workers."""
    if workers <= 1 or len(tasks) <= 1:
        try:
            for t in tasks:
                yield label_shard(t)
        finally:
            _BOTS.clear()  # a network file of the same path may change between rounds
        return
    ctx = get_context("spawn")  # spawn: the workers are children of this process (see start_worker)
    # SIGTERM ends a worker through Python: a shard being written leaves no temporary file
    pool = ctx.Pool(min(workers, len(tasks)), initializer=start_worker, initargs=(os.getpid(), True),
                    maxtasksperchild=None)
    done = False
    try:
        yield from pool.imap_unordered(label_shard, tasks, chunksize=1)
        pool.close()  # every shard written: the workers leave by themselves
        pool.join()
        done = True
    finally:
        if not done:  # stopped: SIGTERM to the workers (a worker already shutting down would print its SystemExit)
            pool.terminate()
            pool.join()


def label_round(config: ExitConfig, round_: int, search: str, folder: Path, progress: bool = True,
                log: Any = print) -> dict[str, Any]:
    """Label round ``round_`` into ``folder`` with the search ``search``, skipping the
    shards already there; the round's totals (games, decisions, shards, seconds of this
    session's labelling)."""
    from tqdm import tqdm

    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".shard_*.tmp*"):  # a write cut short by SIGKILL
        stale.unlink()
    tasks = shard_tasks(config, round_, search, folder)
    todo = [t for t in tasks if not shard_done(t.path)]
    games = sum(t.count for t in tasks)
    start = time.perf_counter()
    if len(todo) < len(tasks):
        log(f"round {round_}: {len(tasks) - len(todo)} of {len(tasks)} shards labelled already")
    with tqdm(total=games, initial=games - sum(t.count for t in todo), desc=f"round {round_} label", unit="game",
              disable=not progress, leave=False) as bar:
        counts = {t.path: t.count for t in tasks}
        with contextlib.closing(_run(todo, config.workers)) as finished:
            for path, _ in finished:
                bar.update(counts[path])
    metas = [load_demonstrations(t.path)[1] for t in tasks]
    return {"games": games, "decisions": sum(int(m["decisions"]) for m in metas),
            "truncated_games": sum(int(m.get("truncated_games", 0)) for m in metas), "shards": len(tasks),
            "search": search, "seconds": round(time.perf_counter() - start, 1)}


__all__ = ["ShardTask", "label_round", "label_shard", "shard_done", "shard_tasks"]
