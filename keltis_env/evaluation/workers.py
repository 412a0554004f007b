"""The worker processes that play an evaluation's games, and how their main process
watches them.

Each worker is a ``spawn``-ed process with a pipe to the main process: it gets one game at
a time and answers with its result, or with its agent's failure as plain text
(:class:`~keltis_env.evaluation.errors.AgentPlayError`), which always unpickles whatever the
agent raised. A small shared array (:class:`Watch`) tells the main process which agent is
deciding, since when, and every action of the game so far. So the main process, which
waits on the pipes and the processes' sentinels at once (no helper threads, nothing that
can block on a dead worker):

* names the agent and its seat when a worker dies (``os._exit``, a crash, a kill);
* stops a worker whose agent runs past the per-move limit and ignores the interruption
  inside the worker (``SIGALRM``, :class:`~keltis_env.core.match.Match`), and records
  that game as a time forfeit, rebuilt from the actions the worker logged; a fresh
  worker takes its place;
* stops every worker, with a bounded wait and then ``SIGKILL``, when the run ends for any
  reason (Ctrl-C, SIGTERM, an agent's failure, the caller closing the iterator).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

from .errors import AgentPlayError
from .play import agent_name, forget_bots, one_blas_thread, play_task, sigint_ignored, start_worker
from .results import GameResult

#: the most actions of one game the shared log keeps (a longer game forfeited on time by a
#: worker that had to be stopped cannot be rebuilt, and ends the run with an error)
MAX_LOGGED = 8192
_HEAD = 8  # seat, agent, move start, actions logged, think seconds of seats 0-3
_POLL_SECONDS = 0.2


def grace_seconds(limit: float) -> float:
    """How long a move may run past its limit before its worker is stopped from outside
    (the worker's own interruption comes first; this catches an agent that ignores it)."""
    return max(1.0, 0.5 * limit)


class Watch:
    """A worker's shared record of the move being made (written by the worker, read by
    its main process): the seat and agent deciding (``-1`` for none), the move's start
    (``time.monotonic``, 0 between moves), and the game's actions so far."""

    def __init__(self, array: Any) -> None:
        self.array = array

    @classmethod
    def new(cls, ctx: Any) -> Watch:
        return cls(ctx.Array("d", _HEAD + MAX_LOGGED, lock=False))

    def reset(self) -> None:
        a = self.array
        a[0] = a[1] = -1.0
        a[2] = a[3] = 0.0
        for i in range(4, _HEAD):
            a[i] = 0.0

    def making(self, agent: int) -> None:
        """The agent ``agent`` is being made (or seeded) for the next game."""
        self.array[0] = -1.0
        self.array[1] = float(agent)

    def wrap(self, bot: Any, seat: int, agent: int) -> Any:
        return _Watched(bot, seat, agent, self)

    @property
    def seat(self) -> int | None:
        seat = int(self.array[0])
        return seat if seat >= 0 else None

    @property
    def agent(self) -> int | None:
        agent = int(self.array[1])
        return agent if agent >= 0 else None

    @property
    def move_started(self) -> float:
        return float(self.array[2])

    def actions(self) -> list[int] | None:
        """The game's actions so far; ``None`` when more were made than the log keeps."""
        count = int(self.array[3])
        if count > MAX_LOGGED:
            return None
        return [int(x) for x in self.array[_HEAD:_HEAD + count]]

    def think(self, num_players: int) -> list[float]:
        return [float(self.array[4 + s]) if s < _HEAD - 4 else 0.0 for s in range(num_players)]


class _Watched:
    """A bot whose moves are written to the worker's :class:`Watch`."""

    def __init__(self, bot: Any, seat: int, agent: int, watch: Watch) -> None:
        self.bot = bot
        self.seat = seat
        self.agent = agent
        self.watch = watch
        self.accepts_live_view = bool(getattr(bot, "accepts_live_view", False))

    def act(self, view: Any) -> Any:
        a = self.watch.array
        a[0] = float(self.seat)
        a[1] = float(self.agent)
        start = time.monotonic()
        a[2] = start
        try:
            action = self.bot.act(view)
        finally:
            a[2] = 0.0
            if self.seat < _HEAD - 4:
                a[4 + self.seat] += time.monotonic() - start
        count = int(a[3])
        if count < MAX_LOGGED and type(action) is int:
            a[_HEAD + count] = float(action)
        a[3] = count + 1.0
        a[0] = -1.0
        return action

    def __repr__(self) -> str:
        from keltis_env.core.errors import describe_value

        return describe_value(self.bot)


def _serve(conn: Any, array: Any, parent: int, shipped: dict[int, Any]) -> None:
    """A worker's loop: a game in, its result (or its agent's failure) out, until told
    to stop (``None``) or the main process is gone."""
    start_worker(parent)
    watch = Watch(array)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        if shipped:
            import dataclasses

            task = dataclasses.replace(task, specs=tuple(shipped.get(i, s) for i, s in enumerate(task.specs)))
        watch.reset()
        try:
            reply: tuple[str, Any] = ("done", play_task(task, watch))
        except AgentPlayError as exc:
            reply = ("failed", exc.__reduce__()[1])
        except BaseException as exc:  # the worker's own failure: reported, never pickled as it is
            from keltis_env.core.errors import ControllerError

            failure = ControllerError.of(-1, "worker", exc)
            agent = watch.agent if watch.agent is not None else 0
            reply = ("failed", (agent, _spec_text(task.specs[agent]), watch.seat, task.index,
                                f"stopped its worker process: {failure.kind}: {failure.detail}", failure.trace))
        try:
            conn.send(reply)
        except BaseException:
            os._exit(3)


def _spec_text(agent: Any) -> str:
    return agent_name(agent)


class _Worker:
    def __init__(self, ctx: Any, shipped: dict[int, Any]) -> None:
        self.watch = Watch.new(ctx)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, self.watch.array, os.getpid(), shipped),
                                   name="keltis-evaluation", daemon=True)
        self.process.start()
        child.close()
        self.task: Any = None
        self.sent_at = 0.0

    def send(self, task: Any, shipped: dict[int, Any]) -> None:
        self.task = task
        self.sent_at = time.monotonic()
        if shipped:
            import dataclasses

            task = dataclasses.replace(task, specs=tuple(None if i in shipped else s for i, s in enumerate(task.specs)))
        self.conn.send(task)

    def stop(self) -> None:
        """Stop the process: asked politely, then SIGKILL; bounded, never blocks for long."""
        with contextlib.suppress(OSError, ValueError):
            if self.process.is_alive():
                self.process.terminate()
            self.process.join(2.0)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(2.0)
        with contextlib.suppress(OSError):
            self.conn.close()


def _death(worker: _Worker) -> AgentPlayError:
    """The failure of a worker that ended while it played ``worker.task``."""
    task = worker.task
    code = worker.process.exitcode
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"ended (exit status {code})"
    agent, seat = worker.watch.agent, worker.watch.seat
    names = [_spec_text(s) for s in task.specs]
    if agent is None:
        return AgentPlayError(task.seats[0], names[task.seats[0]], None, task.index,
                           f"(or another agent of the game: {', '.join(names)}): its worker process {how} "
                           "between moves")
    doing = "while deciding" if seat is not None else "while being made"
    return AgentPlayError(agent, names[agent], seat, task.index, f"{doing}: its worker process {how}")


def _forfeit_result(worker: _Worker) -> GameResult:
    """The game of a worker stopped because its agent ran past the limit: rebuilt from the
    logged actions, lost on time by the seat that was deciding."""
    from keltis_env.core.game import get_game
    from keltis_env.core.match import forfeit_shares

    task, watch = worker.task, worker.watch
    seat, actions = watch.seat, watch.actions()
    if seat is None or actions is None:
        raise _death(worker)
    spec = get_game(task.game)
    n = len(task.specs)
    config = spec.make_config(num_players=n, **task.options)
    state = spec.new_state(config, task.seed)
    decisions = [0] * n
    for action in actions:
        decisions[state.current_player] += 1
        state.apply(action)
    think = watch.think(n)
    think[seat] += time.monotonic() - watch.move_started if watch.move_started else 0.0
    if task.records is not None:
        from pathlib import Path

        names = [_spec_text(s) for s in task.specs]
        record = spec.record_cls(config=config, seed=task.seed, actions=actions, players=[names[a] for a in task.seats])
        record.save(Path(task.records) / f"game_{task.index:05d}.json")
    return GameResult(index=task.index, deal=task.deal, rotation=task.rotation, seed=task.seed, seats=task.seats,
                      scores=tuple(state.scores()), shares=tuple(forfeit_shares(n, seat)), turns=int(state.turn),
                      end="time", truncated=False, decisions=tuple(decisions), think_seconds=tuple(think),
                      forfeit=seat)


def _shipped_agents(tasks: Sequence[Any]) -> dict[int, Any]:
    """The bot objects among the agents (sent to each worker once, not with every game)."""
    first = tasks[0]
    return {i: s for i, s in enumerate(first.specs) if not isinstance(s, str)}


def run_games(tasks: Sequence[Any], workers: int) -> Iterator[GameResult]:
    """The games' results as they finish. An agent's failure raises
    :class:`~keltis_env.evaluation.errors.AgentPlayError`, the same with one worker (this
    process) or several (:func:`play_in_workers`). Closing the iterator (or an exception in
    it, such as Ctrl-C) stops the worker processes before it returns."""
    if workers <= 1 or len(tasks) <= 1:
        forget_bots()  # a spec's file (ppo:PATH) may have changed since the last call
        try:
            with one_blas_thread():  # the caller's own limits come back after the games
                for t in tasks:
                    yield play_task(t)
        finally:
            forget_bots()
        return
    yield from play_in_workers(tasks, workers)


def play_in_workers(tasks: Sequence[Any], workers: int) -> Iterator[GameResult]:
    """The games' results as they finish, played by ``workers`` processes (see the module
    doc). An agent's failure raises :class:`AgentPlayError`; closing the iterator, or any
    exception in it, stops every worker before it returns."""
    ctx = multiprocessing.get_context("spawn")
    shipped = _shipped_agents(tasks)
    pending = iter(tasks)
    pool: list[_Worker] = []
    try:
        with sigint_ignored():  # the workers start with SIGINT ignored (inherited), before any import
            pool = [_Worker(ctx, shipped) for _ in range(min(workers, len(tasks)))]
        more = True
        while True:
            for w in pool:
                if w.task is None and more:
                    task = next(pending, None)
                    if task is None:
                        more = False
                    else:
                        _send(w, task, shipped)
            busy = [w for w in pool if w.task is not None]
            if not busy:
                return
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=_POLL_SECONDS)
            for w in busy:
                result = _collect(w, ready)
                if result is not None:
                    w.task = None
                    yield result
            for i, w in enumerate(pool):
                if w.task is not None and _over_time(w):
                    w.stop()
                    result = _forfeit_result(w)
                    pool[i] = _Worker(ctx, shipped)
                    yield result
    finally:
        for w in pool:
            w.stop()


def _send(worker: _Worker, task: Any, shipped: dict[int, Any]) -> None:
    try:
        worker.send(task, shipped)
    except (OSError, ValueError):  # the worker is gone: its sentinel says so next
        worker.task = task


def _collect(worker: _Worker, ready: list[Any]) -> GameResult | None:
    """The worker's result when it sent one; raises its agent's failure, or the failure of
    a worker that ended without an answer."""
    answered = worker.conn in ready
    if not answered and worker.process.sentinel not in ready:
        return None
    try:
        if not answered and not worker.conn.poll():
            raise EOFError
        kind, payload = worker.conn.recv()
    except (EOFError, OSError):
        worker.process.join(2.0)
        raise _death(worker) from None
    if kind == "failed":
        raise AgentPlayError(*payload)
    result: GameResult = payload
    return result


def _over_time(worker: _Worker) -> bool:
    limit = worker.task.move_seconds
    started = worker.watch.move_started
    return limit is not None and started > 0 and time.monotonic() - started > limit + grace_seconds(limit)


__all__ = ["MAX_LOGGED", "Watch", "grace_seconds", "play_in_workers", "run_games"]
