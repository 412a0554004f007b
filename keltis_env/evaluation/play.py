"""Playing an evaluation's games: the games to play (duplicate deals, seats rotating, the
seeds derived from the evaluation's), one game with its bots, and the worker processes
that play them (Ctrl-C is handled by the main process alone)."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import signal
import threading
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


def make_tasks(specs: Sequence[str], deals: int, seed: int, game: str, options: dict[str, Any],
           records: str | None) -> list[_Task]:
    n = len(specs)
    out = []
    for deal in range(deals):
        deal_seed = derive_seed(seed, "deal", deal)
        for rotation in range(n):
            # agent i sits at seat (i + rotation) % n, so seats[s] = (s - rotation) % n
            seats = tuple((s - rotation) % n for s in range(n))
            bot_seeds = tuple(derive_seed(seed, "bot", deal, rotation, i) for i in range(n))
            out.append(_Task(len(out), deal, rotation, deal_seed, seats, bot_seeds, tuple(specs), game, options,
                             records))
    return out


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


def run_games(tasks: list[_Task], workers: int) -> Iterator[GameResult]:
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


__all__ = ["derive_seed", "make_tasks", "run_games"]
