"""Playing an evaluation's games: the games to play (duplicate deals, seats rotating, the
seeds derived from the evaluation's), one game with its bots, and the worker processes
that play them (Ctrl-C is handled by the main process alone)."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import signal
import threading
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import EvaluationError
from .results import GameResult


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs, platforms and processes)."""
    text = "/".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 1


@dataclass(frozen=True)
class _Task:
    index: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[int, ...]
    bot_seeds: tuple[int, ...]  # by agent
    specs: tuple[str, ...]
    game: str
    options: dict[str, Any]  # the game's options besides num_players
    records: str | None


_BOTS: dict[tuple[str, str, int, int], Any] = {}  # per process: (game, spec, agent, players) -> bot


def _bot(game: str, spec: str, agent: int, num_players: int) -> Any:
    from keltis_env.bots import make_bot

    key = (game, spec, agent, num_players)
    if key not in _BOTS:
        _BOTS[key] = make_bot(spec, seed=0, game=game, num_players=num_players)
    return _BOTS[key]


def _play(task: _Task) -> GameResult:
    from keltis_env.core.errors import ActionError
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    spec = get_game(task.game)
    n = len(task.specs)
    config = spec.make_config(num_players=n, **task.options)
    bots = []
    for seat in range(n):
        agent = task.seats[seat]
        bot = _bot(task.game, task.specs[agent], agent, n)
        bot.seed(task.bot_seeds[agent])
        bots.append(bot)
    match = Match(spec, spec.new_state(config, task.seed), bots, record=task.records is not None)
    try:
        result = match.run()
    except ActionError as exc:  # the match loop changed nothing: the offender is still to move
        agent = task.seats[match.to_move]
        raise EvaluationError(f"agent {agent} ({task.specs[agent]}) chose an illegal action: {exc}") from exc
    if task.records is not None:
        record = spec.record_cls(
            config=config, seed=task.seed, actions=list(result.actions), players=[task.specs[a] for a in task.seats]
        )
        record.save(Path(task.records) / f"game_{task.index:05d}.json")
    return GameResult(
        index=task.index,
        deal=task.deal,
        rotation=task.rotation,
        seed=task.seed,
        seats=task.seats,
        scores=result.scores,
        shares=result.shares,
        turns=result.turns,
        end=result.end,
        truncated=result.truncated,
        decisions=result.decisions,
        think_seconds=result.think_seconds,
    )


class Tasks(Sequence[_Task]):
    """The games of an evaluation in order, each made when it is asked for (an evaluation
    of many games holds no list of them): game ``i`` is deal ``i // n`` in rotation ``i % n``."""

    def __init__(self, specs: Sequence[str], deals: int, seed: int, game: str, options: dict[str, Any],
                 records: str | None) -> None:
        self.specs = tuple(specs)
        self.deals = deals
        self.seed = seed
        self.game = game
        self.options = options
        self.records = records

    def __len__(self) -> int:
        return self.deals * len(self.specs)

    @typing.overload
    def __getitem__(self, index: int) -> _Task: ...

    @typing.overload
    def __getitem__(self, index: slice) -> list[_Task]: ...

    def __getitem__(self, index: int | slice) -> _Task | list[_Task]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"game {index} of an evaluation of {size} games")
        n = len(self.specs)
        deal, rotation = divmod(index, n)
        seed = self.seed
        # agent i sits at seat (i + rotation) % n, so seats[s] = (s - rotation) % n
        seats = tuple((s - rotation) % n for s in range(n))
        bot_seeds = tuple(derive_seed(seed, "bot", deal, rotation, i) for i in range(n))
        return _Task(index, deal, rotation, derive_seed(seed, "deal", deal), seats, bot_seeds, self.specs, self.game,
                     self.options, self.records)

    def __iter__(self) -> Iterator[_Task]:
        return (self[i] for i in range(len(self)))


def make_tasks(specs: Sequence[str], deals: int, seed: int, game: str, options: dict[str, Any],
               records: str | None) -> Tasks:
    """The games of ``deals`` duplicate deals, every agent in every seat once per deal."""
    return Tasks(specs, deals, seed, game, options, records)


def _ignore_sigint() -> None:
    """Worker start-up: Ctrl-C in a terminal reaches every process of the group; the
    main process alone handles it and terminates the workers (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the workers are started (in the main thread only, where
    Python handles signals); a Ctrl-C in the meantime is lost, not half-handled."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_games(tasks: Sequence[_Task], workers: int) -> Iterator[GameResult]:
    """The games' results as they finish. Closing the iterator (or an exception in it,
    such as Ctrl-C) terminates the worker processes before it returns."""
    if workers <= 1 or len(tasks) <= 1:
        _BOTS.clear()  # a spec's file (ppo:PATH) may have changed since the last call
        try:
            for t in tasks:
                yield _play(t)
        finally:
            _BOTS.clear()
        return
    # spawn, not fork: the caller may hold threads (torch during training).
    ctx = multiprocessing.get_context("spawn")
    with _sigint_ignored():  # the workers start with SIGINT ignored (inherited), before any import
        pool = ctx.Pool(min(workers, len(tasks)), initializer=_ignore_sigint)
    try:
        yield from pool.imap_unordered(_play, tasks, chunksize=1)
        pool.close()
    finally:
        pool.terminate()  # a no-op for workers that finished; stops the others mid-game
        pool.join()


__all__ = ["Tasks", "derive_seed", "make_tasks", "run_games"]
