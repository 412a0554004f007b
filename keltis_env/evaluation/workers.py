"""The worker processes that play an evaluation's games, and how their main process
watches them.

Each worker is a ``spawn``-ed process with a pipe to the main process: it gets a group of
games at a time (one game, or with a ``ppo`` agent several played in lockstep,
:mod:`~keltis_env.evaluation.lockstep`) and answers with each game's result as it ends, or
with its agent's failure as plain text
(:class:`~keltis_env.evaluation.errors.AgentPlayError`), which always unpickles whatever the
agent raised. A small shared array (:class:`Watch`) tells the main process which agent is
deciding, in which game of the group, since when, and every action of each game so far. So
the main process, which waits on the pipes and the processes' sentinels at once (no helper
threads, nothing that can block on a dead worker):

* names the agent and its seat when a worker dies (``os._exit``, a crash, a kill);
* stops a worker whose agent runs past the per-move limit and ignores the interruption
  inside the worker (``SIGALRM``, :class:`~keltis_env.core.match.Match`), and records
  that game as a time forfeit, rebuilt from the actions the worker logged; a fresh
  worker takes its place, and the group's other unfinished games are played again;
* stops every worker, with a bounded wait and then ``SIGKILL``, when the run ends for any
  reason (Ctrl-C, SIGTERM, an agent's failure, the caller closing the iterator).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

from keltis_env.core.output_files import DiskFullError

from .errors import AgentPlayError
from .lockstep import play_group, task_group_size
from .play import agent_name, forget_bots, one_blas_thread, play_task, sigint_ignored, start_worker
from .results import GameResult

#: the most actions of one game the shared log keeps (a longer game forfeited on time by a
#: worker that had to be stopped cannot be rebuilt, and ends the run with an error)
MAX_LOGGED = 8192
_HEAD = 4  # seat, agent, move start, slot
_SLOT = 5 + MAX_LOGGED  # per game of a group: actions logged, think seconds of seats 0-3, the actions
_POLL_SECONDS = 0.2
#: the most games all workers play at once (each one's log takes 64 KiB of shared memory)
MAX_SLOTS = 512


def grace_seconds(limit: float) -> float:
    """How long a move may run past its limit before its worker is stopped from outside
    (the worker's own interruption comes first; this catches an agent that ignores it)."""
    return max(1.0, 0.5 * limit)


class Watch:
    """A worker's shared record of the move being made (written by the worker, read by
    its main process): the seat and agent deciding (``-1`` for none), the move's start
    (``time.monotonic``, 0 between moves), the slot of its game among the games played at
    once (:mod:`~keltis_env.evaluation.lockstep`), and each of those games' actions so far
    and think seconds by seat."""

    def __init__(self, array: Any) -> None:
        self.array = array

    @classmethod
    def new(cls, ctx: Any, slots: int = 1) -> Watch:
        return cls(ctx.Array("d", _HEAD + slots * _SLOT, lock=False))

    def reset(self, slots: int = 1) -> None:
        """Nothing deciding; the first ``slots`` games with no action and no time."""
        a = self.array
        a[0] = a[1] = -1.0
        a[2] = a[3] = 0.0
        for slot in range(slots):
            at = _HEAD + slot * _SLOT
            a[at:at + 5] = [0.0] * 5

    def making(self, agent: int, slot: int = 0) -> None:
        """The agent ``agent`` is being made (or seeded) for the game in ``slot``."""
        self.array[0] = -1.0
        self.array[1] = float(agent)
        self.array[3] = float(slot)

    def wrap(self, bot: Any, seat: int, agent: int, slot: int = 0) -> Any:
        return _Watched(bot, seat, agent, self, slot)

    def deciding(self, seat: int, agent: int, slot: int) -> None:
        """The move of ``seat`` (``agent``) in the game of ``slot`` starts now."""
        a = self.array
        a[0], a[1], a[2], a[3] = float(seat), float(agent), time.monotonic(), float(slot)

    def log(self, slot: int, seat: int, action: Any, seconds: float = 0.0) -> None:
        """The game of ``slot``: ``seat`` took ``seconds`` more and chose ``action`` (``None``: no action yet)."""
        a = self.array
        at = _HEAD + slot * _SLOT
        if seat < 4:
            a[at + 1 + seat] += seconds
        if action is None:
            return
        count = int(a[at])
        if count < MAX_LOGGED and type(action) is int:
            a[at + 5 + count] = float(action)
        a[at] = count + 1.0

    def done(self) -> None:
        """No move is being made."""
        self.array[2] = 0.0
        self.array[0] = -1.0

    @property
    def seat(self) -> int | None:
        seat = int(self.array[0])
        return seat if seat >= 0 else None

    @property
    def agent(self) -> int | None:
        agent = int(self.array[1])
        return agent if agent >= 0 else None

    @property
    def slot(self) -> int:
        return int(self.array[3])

    @property
    def move_started(self) -> float:
        return float(self.array[2])

    def actions(self, slot: int | None = None) -> list[int] | None:
        """The actions so far of the game of ``slot`` (default: the one deciding); ``None``
        when more were made than the log keeps."""
        at = _HEAD + (self.slot if slot is None else slot) * _SLOT
        count = int(self.array[at])
        if count > MAX_LOGGED:
            return None
        return [int(x) for x in self.array[at + 5:at + 5 + count]]

    def think(self, num_players: int, slot: int | None = None) -> list[float]:
        at = _HEAD + (self.slot if slot is None else slot) * _SLOT
        return [float(self.array[at + 1 + s]) if s < 4 else 0.0 for s in range(num_players)]


class _Watched:
    """A bot whose moves are written to the worker's :class:`Watch`."""

    def __init__(self, bot: Any, seat: int, agent: int, watch: Watch, slot: int = 0) -> None:
        self.bot = bot
        self.seat = seat
        self.agent = agent
        self.slot = slot
        self.watch = watch
        self.accepts_live_view = bool(getattr(bot, "accepts_live_view", False))

    def act(self, view: Any) -> Any:
        watch = self.watch
        watch.deciding(self.seat, self.agent, self.slot)
        start = time.monotonic()
        try:
            action = self.bot.act(view)
        finally:
            watch.array[2] = 0.0
            watch.log(self.slot, self.seat, None, time.monotonic() - start)
        watch.log(self.slot, self.seat, action)
        watch.array[0] = -1.0
        return action

    def __repr__(self) -> str:
        from keltis_env.core.errors import describe_value

        return describe_value(self.bot)


def _serve(conn: Any, array: Any, parent: int, shipped: dict[int, Any]) -> None:
    """A worker's loop: a group of games in, each one's result (or its agent's failure)
    out as it ends, until told to stop (``None``) or the main process is gone."""
    start_worker(parent)
    watch = Watch(array)
    while True:
        try:
            tasks = conn.recv()
        except (EOFError, OSError):
            return
        if tasks is None:
            return
        if shipped:
            import dataclasses

            tasks = [dataclasses.replace(t, specs=tuple(shipped.get(i, s) for i, s in enumerate(t.specs)))
                     for t in tasks]
        _play_group(conn, tasks, watch)


def _play_group(conn: Any, tasks: list[Any], watch: Watch) -> None:
    """Play ``tasks`` and send each result as its game ends, or the first failure (which
    ends the group)."""
    watch.reset(len(tasks))
    reply: tuple[str, Any]
    try:
        if len(tasks) == 1:
            results: Any = iter([play_task(tasks[0], watch)])
        else:
            results = play_group(tasks, watch)
        for result in results:
            _reply(conn, ("done", result))
        return
    except AgentPlayError as exc:
        reply = ("failed", exc.__reduce__()[1])
    except DiskFullError as exc:  # a record found the disk full: the run's failure, not an agent's
        reply = ("disk_full", exc.__reduce__()[1])
    except BaseException as exc:  # the worker's own failure: reported, never pickled as it is
        from keltis_env.core.errors import ControllerError

        failure = ControllerError.of(-1, "worker", exc)
        agent = watch.agent if watch.agent is not None else 0
        task = tasks[watch.slot] if 0 <= watch.slot < len(tasks) else tasks[0]
        reply = ("failed", (agent, _spec_text(task.specs[agent]), watch.seat, task.index,
                            f"stopped its worker process: {failure.kind}: {failure.detail}", failure.trace))
    _reply(conn, reply)


def _reply(conn: Any, reply: tuple[str, Any]) -> None:
    try:
        conn.send(reply)
    except BaseException:
        os._exit(3)


def _spec_text(agent: Any) -> str:
    return agent_name(agent)


class _Worker:
    """A worker process, its pipe and its :class:`Watch`, and the group of games it plays
    (``group``, by slot) with the indices of those not answered yet (``pending``)."""

    def __init__(self, ctx: Any, shipped: dict[int, Any], slots: int = 1) -> None:
        self.watch = Watch.new(ctx, slots)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, self.watch.array, os.getpid(), shipped),
                                   name="keltis-evaluation", daemon=True)
        self.process.start()
        child.close()
        self.group: list[Any] = []
        self.pending: set[int] = set()
        self.sent_at = 0.0

    @property
    def task(self) -> Any:
        """The game being decided (the slot its watch names), else the first one unanswered."""
        slot = self.watch.slot
        if 0 <= slot < len(self.group) and self.group[slot].index in self.pending:
            return self.group[slot]
        return next((t for t in self.group if t.index in self.pending), None)

    def send(self, group: list[Any], shipped: dict[int, Any]) -> None:
        self.group = group
        self.pending = {t.index for t in group}
        self.sent_at = time.monotonic()
        if shipped:
            import dataclasses

            group = [dataclasses.replace(t, specs=tuple(None if i in shipped else s for i, s in enumerate(t.specs)))
                     for t in group]
        self.conn.send(group)

    def unfinished(self, but: int) -> list[Any]:
        """The games of the group not answered yet, but the game ``but``."""
        return [t for t in self.group if t.index in self.pending and t.index != but]

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
    """The failure of a worker that ended while it played ``worker.task`` (of its group)."""
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
    if task is None or watch.slot >= len(worker.group) or worker.group[watch.slot] is not task:
        raise _death(worker)
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
    it, such as Ctrl-C) stops the worker processes before it returns. Games are played in
    groups (:func:`~keltis_env.evaluation.lockstep.task_group_size`), each group at once."""
    if workers <= 1 or len(tasks) <= 1:
        forget_bots()  # a spec's file (ppo:PATH) may have changed since the last call
        size = task_group_size(tasks[0]) if len(tasks) else 1
        try:
            with one_blas_thread():  # the caller's own limits come back after the games
                for start in range(0, len(tasks), size):
                    group = tasks[start:start + size]
                    if len(group) == 1:
                        yield play_task(group[0])
                    else:
                        yield from play_group(group)
        finally:
            forget_bots()
        return
    yield from play_in_workers(tasks, workers)


class _Queue:
    """The games still to send: those given back by a stopped worker first, then the rest in order."""

    def __init__(self, tasks: Sequence[Any]) -> None:
        self.again: collections.deque[Any] = collections.deque()
        self.rest = iter(tasks)

    def take(self, count: int) -> list[Any]:
        group = []
        while len(group) < count and self.again:
            group.append(self.again.popleft())
        group.extend(itertools.islice(self.rest, count - len(group)))
        return group


def balanced_size(games: int, workers: int, most: int) -> int:
    """Games per group for ``games`` games on ``workers`` workers, at most ``most``: whole
    rounds of equal groups, so that no worker is left with a large group at the end."""
    if most <= 1:
        return 1
    rounds = -(-games // (workers * most))
    return max(1, -(-games // (workers * rounds)))


def play_in_workers(tasks: Sequence[Any], workers: int) -> Iterator[GameResult]:
    """The games' results as they finish, played by ``workers`` processes (see the module
    doc), each taking a group of games at a time. An agent's failure raises
    :class:`AgentPlayError`; closing the iterator, or any exception in it, stops every
    worker before it returns. A worker stopped for a move over the time limit gives its
    other unfinished games back, to be played again by another."""
    ctx = multiprocessing.get_context("spawn")
    shipped = _shipped_agents(tasks)
    count = min(workers, len(tasks))
    size = balanced_size(len(tasks), count, min(task_group_size(tasks[0]), max(1, MAX_SLOTS // count)))
    queue = _Queue(tasks)
    pool: list[_Worker] = []
    try:
        with sigint_ignored():  # the workers start with SIGINT ignored (inherited), before any import
            pool = [_Worker(ctx, shipped, size) for _ in range(count)]
        while True:
            for w in pool:
                if not w.pending:
                    group = queue.take(size)
                    if group:
                        _send(w, group, shipped)
            busy = [w for w in pool if w.pending]
            if not busy:
                return
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=_POLL_SECONDS)
            for w in busy:
                yield from _collect(w, ready)
            for i, w in enumerate(pool):
                if w.pending and _over_time(w):
                    w.stop()
                    result = _forfeit_result(w)
                    queue.again.extend(w.unfinished(result.index))
                    pool[i] = _Worker(ctx, shipped, size)
                    yield result
    finally:
        for w in pool:
            w.stop()


def _send(worker: _Worker, group: list[Any], shipped: dict[int, Any]) -> None:
    try:
        worker.send(group, shipped)
    except (OSError, ValueError):  # the worker is gone: its sentinel says so next
        worker.group = group
        worker.pending = {t.index for t in group}


def _collect(worker: _Worker, ready: list[Any]) -> list[GameResult]:
    """The results the worker sent; raises its agent's failure, or the failure of a worker
    that ended without an answer for every game of its group."""
    answered = worker.conn in ready
    if not answered and worker.process.sentinel not in ready:
        return []
    results: list[GameResult] = []
    full: Any = None
    try:
        while worker.pending and worker.conn.poll():
            kind, payload = worker.conn.recv()
            if kind == "failed":
                raise AgentPlayError(*payload)
            if kind == "disk_full":
                full = payload
                break
            worker.pending.discard(payload.index)
            results.append(payload)
    except (EOFError, OSError):
        pass
    if full is not None:  # raised here: the OSError above is the channel's, not this one
        raise DiskFullError(*full)
    if worker.pending and not worker.process.is_alive():
        if results:  # the finished games first; the death is found at the next wait
            return results
        worker.process.join(2.0)
        raise _death(worker) from None
    return results


def _over_time(worker: _Worker) -> bool:
    limit = worker.group[0].move_seconds
    started = worker.watch.move_started
    return limit is not None and started > 0 and time.monotonic() - started > limit + grace_seconds(limit)


__all__ = ["MAX_LOGGED", "MAX_SLOTS", "Watch", "balanced_size", "grace_seconds", "play_in_workers", "run_games"]
