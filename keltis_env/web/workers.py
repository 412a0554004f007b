"""The agents named on the command line play in a process of their own, one per game.

An agent given with ``keltis serve --agent`` (a ``py:`` module's code, a policy file) is
code the server cannot trust to behave: it may call ``os._exit``, crash the interpreter or
never answer. So a game's such agents are made and asked for their moves in a child process
(:class:`AgentWorker`, started with ``spawn``), and the server's side of each is a
:class:`WorkerBot` that sends the seat's view (only what that seat may know) and waits for
the answer on the pipe and on the process's sentinel at once, never longer than the
per-move limit:

* the worker ends (``os._exit``, a crash, a kill): :class:`ProcessEndedError` names how, and the
  game ends with a message naming the agent and its seat;
* the answer does not come within the limit: the worker is killed at once (nothing of it is
  left running) and the move is lost on time, as the match loop judges a late answer;
* the agent raises (``SystemExit`` included): :class:`AgentRaisedError` carries what it raised
  as text, and the game ends with the same message as for an agent in the server's process;
* the agent answers with something that is not a legal action: the match loop refuses it
  (:class:`~keltis_env.core.errors.ActionError`), as in the server's process.

A worker runs in a process group of its own, confined (:mod:`.confine`) before any agent is
made: it and the processes it starts may signal only that group, and cannot reach the
server or any other process. It stops, with everything it started (the whole group is
killed), when its game ends, is closed or expires, when the server stops, and by itself
when the server's process is gone. The bundled bots need none (they play in the server's
process, :class:`~keltis_env.web.agents.TimedBot`). A policy file (``ppo:``) is warmed up
in the worker before the first move (:func:`~keltis_env.web.agents.warm_up`), so that its
first timed move pays for no loading.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import wait
from typing import Any

from .confine import abi

#: how long a worker may take to start and make its agents (a policy file loads torch)
START_SECONDS = 120.0
#: how long past the limit an answer is waited for before the worker is killed (the pipe's delay)
GRACE_SECONDS = 0.1
#: the most characters of an agent's traceback a worker sends back
TRACE_CHARS = 20_000
_PARENT_POLL_SECONDS = 0.5
#: the agent specs warmed up in the worker before the first move (policy files: loading takes seconds)
WARMED = ("ppo:", "rllib:")


class AgentProcessError(RuntimeError):
    """A failure of a game's agents in their worker; ``seat`` is the agent's seat where it
    is not known otherwise (an agent that could not be made)."""

    seat: int | None = None


class ProcessEndedError(AgentProcessError):
    """The worker process of a game's agents ended while an agent decided or was made;
    the message says how (``its process ended (exit status 7) while it decided``)."""


class AgentRaisedError(AgentProcessError):
    """What an agent raised in its worker, as text: ``kind`` (the exception's type name),
    ``detail`` (its message) and ``trace`` (its traceback)."""

    def __init__(self, kind: str, detail: str, trace: str) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.trace = trace


def _watch_parent(parent: int) -> None:
    """End this worker when the server's process ``parent`` is gone (checked twice a second
    in a thread of its own, which an agent's busy loop does not stop)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_SECONDS)
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)  # the worker's group: it and whatever its agents started
        os._exit(1)

    threading.Thread(target=watch, name="server-watch", daemon=True).start()


def _failure(seat: int, spec: str, exc: BaseException) -> tuple[str, str, str]:
    from keltis_env.core.errors import ControllerError

    failure = ControllerError.of(seat, spec, exc)
    return failure.kind, failure.detail, failure.trace[-TRACE_CHARS:]


def _serve(conn: Any, parent: int, game: str, num_players: int, agents: dict[int, tuple[str, int]]) -> None:
    """The worker: make the agents (``seat -> (spec, seed)``), answer ``("ready",)`` or
    ``("unmade", seat, kind, detail, trace)``, then answer each ``(seat, view)`` with
    ``("action", id)``, ``("illegal", message)`` or ``("raised", kind, detail, trace)``,
    until ``None`` or the server is gone."""
    from .confine import confine

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is the server's to handle
    unconfined = confine()  # before any other thread, and before any agent's code runs
    if unconfined is not None and abi() is not None:  # a machine that can confine, but did not
        conn.send(("unmade", min(agents), "RuntimeError", f"its process could not be confined: {unconfined}", ""))
        return
    _watch_parent(parent)
    from keltis_env.bots import make_bot
    from keltis_env.core.errors import ActionError
    from keltis_env.core.match import action_id

    from .agents import warm_up

    bots = {}
    for seat, (spec, seed) in sorted(agents.items()):
        try:
            bots[seat] = make_bot(spec, seed=seed, game=game, num_players=num_players)
            if spec.startswith(WARMED):
                warm_up(spec, game, num_players)
        except BaseException as exc:  # whatever the agent's code raises, SystemExit included
            conn.send(("unmade", seat, *_failure(seat, spec, exc)))
            return
    conn.send(("ready",))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        seat, view = task
        try:
            action = action_id(bots[seat].act(view))
            if type(action) is not int:
                raise ActionError(f"the agent of seat {seat} ({agents[seat][0]}) returned a "
                                  f"{type(action).__name__}, not an action id")
            reply: tuple[Any, ...] = ("action", action)
        except ActionError as exc:
            reply = ("illegal", str(exc))
        except BaseException as exc:
            reply = ("raised", *_failure(seat, agents[seat][0], exc))
        conn.send(reply)


class AgentWorker:
    """The process that plays one game's agents ``seat -> (spec, seed)`` for ``game`` with
    ``num_players``. :meth:`start` waits until they are made; :meth:`bot` is a seat's
    stand-in for the match loop; :meth:`stop` kills the process (from any thread)."""

    def __init__(self, game: str, num_players: int, agents: Mapping[int, tuple[str, int]]) -> None:
        self.game = game
        self.num_players = num_players
        self.agents = dict(agents)
        self.process: Any = None
        self.conn: Any = None
        self.stopped = False
        self._lock = threading.Lock()

    def start(self, seconds: float = START_SECONDS) -> None:
        """Start the worker and wait (at most ``seconds``) until its agents are made; a
        failure stops it and raises :class:`ProcessEndedError` or, for an agent that raised,
        :class:`AgentRaisedError`, with the seat in ``.seat``."""
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, os.getpid(), self.game, self.num_players,
                                                        self.agents), name="keltis-serve-agents", daemon=True)
        first = min(self.agents)
        try:
            self.process.start()
        except Exception as exc:  # no process (out of resources; a main module that starts servers unguarded)
            self.process = None
            raise _at(ProcessEndedError(f"its process could not be started: {type(exc).__name__}: "
                                 f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"), first) from None
        finally:
            child.close()
        try:
            reply = self._answer(seconds, "while its agents were made")
        except ProcessEndedError as exc:
            raise _at(exc, first) from None
        if reply is None:
            self.stop()
            raise _at(ProcessEndedError(f"its process did not make its agents within {seconds:g} s"), first)
        if reply[0] == "unmade":
            self.stop()
            raise _at(AgentRaisedError(*reply[2:]), reply[1])

    def bot(self, seat: int, name: str, limit: float | None) -> WorkerBot:
        """The stand-in for the agent at ``seat`` in the match loop, under the per-move ``limit``."""
        return WorkerBot(self, seat, name, limit)

    def ask(self, seat: int, view: Any, limit: float | None) -> Any:
        """The agent's action for ``view``; ``None`` once the limit has passed (the worker is
        then killed); :class:`ProcessEndedError`, :class:`AgentRaisedError` or an
        :class:`~keltis_env.core.errors.ActionError` when it fails."""
        from keltis_env.core.errors import ActionError

        with contextlib.suppress(OSError, ValueError):  # a closed pipe: the worker is gone, as the answer says
            self.conn.send((seat, view))
        reply = self._answer(None if limit is None else limit + GRACE_SECONDS, "while it decided")
        if reply is None:
            self.stop()
            return None
        if reply[0] == "illegal":
            raise ActionError(reply[1])
        if reply[0] == "raised":
            raise AgentRaisedError(*reply[1:])
        return reply[1]

    def _answer(self, seconds: float | None, doing: str) -> tuple[Any, ...] | None:
        """The worker's next answer, ``None`` when none came within ``seconds``; raises
        :class:`ProcessEndedError` when the worker ended first (or was stopped meanwhile)."""
        try:  # the pipe may be closed meanwhile by stop() in another thread (the game was closed)
            ready = wait([self.conn, self.process.sentinel], timeout=seconds)
            if not ready:
                return None
            if self.conn in ready or self.conn.poll():
                answer: tuple[Any, ...] = self.conn.recv()
                return answer
        except (EOFError, OSError, ValueError):
            pass
        self.process.join(2.0)
        raise ProcessEndedError(f"{self._how()} {doing}")

    def _how(self) -> str:
        if self.stopped:
            return "its process was stopped (the game was closed)"
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return f"its process was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"its process was killed by signal {-code}"
        return f"its process ended (exit status {code})"

    def stop(self) -> None:
        """Kill the worker and wait for it (bounded); safe to call twice and from any thread."""
        with self._lock:
            if self.process is None or self.stopped:
                return
            self.stopped = True
        with contextlib.suppress(OSError):  # the worker's group: what its agents started ends with it
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError):
            if self.process.is_alive():
                self.process.kill()  # an agent gets no say in how it ends
            self.process.join(5.0)
        with contextlib.suppress(OSError):
            self.conn.close()

    @property
    def pid(self) -> int | None:
        return None if self.process is None else int(self.process.pid)


def _at(exc: AgentProcessError, seat: int) -> AgentProcessError:
    exc.seat = seat
    return exc


class WorkerBot:
    """An agent of a worker as the match loop sees it: ``act(view)`` asks the worker.
    ``stopped_on_time``: its worker was killed because a move ran past the limit."""

    def __init__(self, worker: AgentWorker, seat: int, name: str, limit: float | None) -> None:
        self.worker = worker
        self.seat = seat
        self.name = name
        self.limit = limit
        self.stopped_on_time = False

    def act(self, view: Any) -> Any:
        action = self.worker.ask(self.seat, view, self.limit)
        if action is None:
            self.stopped_on_time = True
        return action

    def __repr__(self) -> str:
        return self.name


__all__ = ["GRACE_SECONDS", "START_SECONDS", "AgentProcessError", "AgentRaisedError", "AgentWorker",
           "ProcessEndedError", "WorkerBot"]
