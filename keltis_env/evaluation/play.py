"""Playing an evaluation's games: the games to play (duplicate deals, seats rotating, the
seeds derived from the evaluation's), one game with its bots, and the worker processes
that play them (Ctrl-C and SIGTERM are handled by the main process alone; a worker whose
main process is gone stops too; BLAS runs one thread in a process that plays)."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import os
import secrets
import signal
import sys
import threading
import time
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keltis_env.core.errors import StopRequest

from .errors import AgentPlayError
from .results import GameResult


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs, platforms and processes)."""
    text = "/".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 1


def keyed_seed(key: bytes, *parts: Any) -> int:
    """A 63-bit seed from any parts under the secret ``key`` (HMAC-SHA256): the same parts
    and key give the same seed, and without the key the seed tells nothing of the parts
    (an agent cannot match it against the seeds of public deals)."""
    text = "/".join(map(str, parts)).encode()
    return int.from_bytes(hmac.new(key, text, hashlib.sha256).digest()[:8], "big") >> 1


def new_secret() -> bytes:
    """32 bytes of the operating system's randomness (a run's key for :func:`keyed_seed`)."""
    return secrets.token_bytes(32)


def private_seed() -> int:
    """A run seed drawn from the operating system's randomness (63 bits): deals dealt from it
    cannot be known before the run reveals it."""
    return secrets.randbits(63)


def deal_seeds(seed: int, deals: int) -> list[int]:
    """The deal seeds of an evaluation or ladder table of ``deals`` deals under ``seed``
    (deal ``d`` is dealt from ``derive_seed(seed, "deal", d)``, as :class:`Tasks` deals it)."""
    return [derive_seed(seed, "deal", d) for d in range(deals)]


def deal_commitment(seed: int, deals: int) -> str:
    """``sha256:HEX``, the SHA-256 of the deal seeds (decimal, comma-separated) of ``deals``
    deals under ``seed``: printed when a run with private deals starts, it shows, once the
    run reveals ``seed``, that the deals were fixed before the first game."""
    text = ",".join(map(str, deal_seeds(seed, deals)))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def user_code(spec: Any) -> bool:
    """Whether the agent spec ``spec`` runs code that is not the package's (a ``py:`` agent)."""
    from keltis_env.bots.external import PREFIX

    return isinstance(spec, str) and spec.strip().startswith(PREFIX)


@dataclass(frozen=True)
class _Task:
    index: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[int, ...]
    bot_seeds: tuple[int, ...]  # by agent
    specs: tuple[Any, ...]  # by agent: a spec string, or a bot object (evaluate() takes those too)
    game: str
    options: dict[str, Any]  # the game's options besides num_players
    records: str | None
    move_seconds: float | None = None  # the per-move time limit (None: no limit)
    compiled: bool = False  # the bots of AUTO_BACKEND through their kernels (played_spec)
    ppo_forward: str | None = None  # the forward pass of ppo agents whose spec names none (a protocol's)


def agent_name(agent: Any) -> str:
    """How results and errors name an agent: its spec, or for a bot object its ``name``
    attribute (a string) or its class name."""
    if isinstance(agent, str):
        return agent
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


_BOTS: dict[tuple[Any, ...], Any] = {}  # per process: (game, spec, agent, players, slot) -> bot

#: bots whose ``backend`` option (where their game's bot takes one) changes their speed,
#: never a move (their tests hold every decision of every backend equal): an evaluation
#: plays them with ``backend=auto`` (the compiled kernels where numba is installed) unless
#: the spec names a backend
AUTO_BACKEND = ("heuristic", "planner")


#: per process, what else is made from the agents' specs (the compiled core's players), dropped with the bots
SPEC_CACHES: list[dict[Any, Any]] = []


def forget_bots() -> None:
    """Drop this process's bots and what is made from their specs (a spec's file,
    ``ppo:PATH``, may have changed since they were made)."""
    _BOTS.clear()
    for cache in SPEC_CACHES:
        cache.clear()


#: the fewest games per process for which an evaluation plays the bots of :data:`AUTO_BACKEND`
#: through their kernels: loading them costs about a second of CPU in every process; games
#: whose every agent has a kernel, or a ``ppo`` agent's games against them, are then played on
#: the compiled core (:mod:`~keltis_env.evaluation.compiled_games`,
#: :mod:`~keltis_env.evaluation.compiled_lockstep`), which saves 15 ms a game (the heuristic
#: against the planner: 17 ms in Python, 2 compiled) to 30-45 ms (a ``ppo`` agent against the
#: heuristic), so 100 games repay it; other games save 5-10 ms a game through the bots' kernels
COMPILED_FROM_GAMES = 100


def compiled_pays(games: int, processes: int) -> bool:
    """Whether ``games`` games played by ``processes`` processes are enough for the
    kernels' loading to pay (:data:`COMPILED_FROM_GAMES` per process)."""
    return games >= COMPILED_FROM_GAMES * max(1, processes)


def played_spec(spec: str, game: str) -> str:
    """The spec an evaluation makes the bot from: ``spec`` itself, or for a bot of
    :data:`AUTO_BACKEND` that takes a ``backend`` option and is given none, ``spec`` with
    ``backend=auto`` (the same decisions, faster). Results still name the agent by ``spec``."""
    import inspect

    from keltis_env.bots import bot_factory, parse_spec

    name, options = parse_spec(spec)
    if name not in AUTO_BACKEND or "backend" in options:
        return spec
    if "backend" not in inspect.signature(bot_factory(name, game)).parameters:
        return spec
    return with_option(spec, "backend", "auto")


def with_option(spec: str, key: str, value: str) -> str:
    """``spec`` with the option ``key=value`` appended (after ``:`` or ``,``)."""
    if ":" not in spec:
        return f"{spec}:{key}={value}"
    return f"{spec}{key}={value}" if spec.rstrip().endswith((":", ",")) else f"{spec},{key}={value}"


def with_forward(spec: str, forward: str | None) -> str:
    """``spec`` with ``forward=FORWARD`` where it is a ``ppo`` spec that names no ``forward``
    (``None``: ``spec`` itself): how a benchmark protocol plays policies by the forward pass
    it was frozen with (:attr:`keltis_env.benchmark.protocol.Protocol.ppo_forward`)."""
    from keltis_env.bots import parse_spec

    if forward is None:
        return spec
    name, options = parse_spec(spec)
    if name != "ppo" or "forward" in options:
        return spec
    return with_option(spec, "forward", forward)


def _bot(game: str, spec: Any, agent: int, num_players: int, slot: int = 0, compiled: bool = False,
         ppo_forward: str | None = None) -> Any:
    """The bot of ``agent`` for the game in ``slot`` of the games played at once (each game
    its own bot, made once per process; with ``compiled``, from :func:`played_spec`; with
    ``ppo_forward``, a ``ppo`` spec without a forward pass of its own plays by it). A bot
    with ``twin()`` (``ppo``) is made once per spec and twinned for every other agent and
    slot: the twins share its network, and so their forward passes."""
    from keltis_env.bots import make_bot
    from keltis_env.bots.ppo import PPOBot

    if not isinstance(spec, str):
        return spec  # a bot object: played as it is
    made = with_forward(played_spec(spec, game) if compiled else spec, ppo_forward)
    key = (game, made, agent, num_players, slot)
    bot = _BOTS.get(key)
    if bot is None:
        origin = _BOTS.get((game, made, num_players))  # the first bot made of this spec
        if origin is not None and callable(getattr(origin, "twin", None)):
            bot = origin.twin()
        else:
            bot = make_bot(made, seed=0, game=game, num_players=num_players)
            if isinstance(bot, PPOBot):
                bot.load_kernels()  # not in its first move's time
            _BOTS.setdefault((game, made, num_players), bot)
        _BOTS[key] = bot
    return bot


def make_bots(task: _Task, watch: Any, slot: int = 0) -> list[Any]:
    """The task's bots by seat (those of ``slot`` when several games are played at once),
    each re-seeded for the game; :class:`AgentPlayError` when one cannot be made (whatever
    its code raised, ``SystemExit`` included)."""
    from keltis_env.core.errors import ControllerError

    n = len(task.specs)
    bots = []
    for seat in range(n):
        agent = task.seats[seat]
        if watch is not None:
            watch.making(agent, slot)
        try:
            bot = _bot(task.game, task.specs[agent], agent, n, slot, task.compiled, task.ppo_forward)
            if callable(getattr(bot, "seed", None)):
                bot.seed(task.bot_seeds[agent])
        except StopRequest:
            raise
        except BaseException as exc:
            failure = ControllerError.of(seat, agent_name(task.specs[agent]), exc)
            raise AgentPlayError(agent, agent_name(task.specs[agent]), None, task.index,
                                 f"could not be made or seeded for the game: {failure.kind}: {failure.detail}",
                                 failure.trace) from None
        bots.append(bot)
    return bots


def start_match(task: _Task, controllers: list[Any]) -> Any:
    """The task's new game under the match loop (recorded when its records are kept), with
    the evaluation's time limit and guard; ``None`` controllers decide from outside."""
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    spec = get_game(task.game)
    config = spec.make_config(num_players=len(task.specs), **task.options)
    return Match(spec, spec.new_state(config, task.seed), controllers, record=task.records is not None,
                 move_seconds=task.move_seconds, guard=True)


def match_failure(task: _Task, match: Any, exc: BaseException) -> AgentPlayError:
    """The :class:`AgentPlayError` of a match loop's ``ActionError`` (the agent to move chose
    an illegal action: nothing changed) or ``ControllerError`` (the agent failed)."""
    from keltis_env.core.errors import ActionError

    names = [agent_name(a) for a in task.specs]
    if isinstance(exc, ActionError):
        agent = task.seats[match.to_move]
        return AgentPlayError(agent, names[agent], match.to_move, task.index, f"chose an illegal action: {exc}")
    seat = getattr(exc, "seat", match.to_move)
    agent = task.seats[seat]
    return AgentPlayError(agent, names[agent], seat, task.index, failed_text(exc), getattr(exc, "trace", None))


def finish_match(task: _Task, match: Any) -> GameResult:
    """The result of the task's finished game; its record is saved when records are kept."""
    result = match.result()
    if task.records is not None:
        names = [agent_name(a) for a in task.specs]
        record = match.game.record_cls(config=match.state.config, seed=task.seed, actions=list(result.actions),
                                       players=[names[a] for a in task.seats])
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
        forfeit=result.forfeit.seat if result.forfeit is not None else None,
    )


def play_task(task: _Task, watch: Any = None, slot: int = 0) -> GameResult:
    """Play one game under the match loop. ``watch`` (in a worker process): the worker's
    shared record of the move being made, which its main process reads when the worker
    dies or runs over; the game is the one in ``slot`` of the games the worker was given."""
    from keltis_env.core.errors import ActionError, ControllerError

    bots = make_bots(task, watch, slot)
    if watch is not None:
        bots = [watch.wrap(bot, seat, task.seats[seat], slot) for seat, bot in enumerate(bots)]
    match = start_match(task, bots)
    try:
        match.run()
    except (ActionError, ControllerError) as exc:  # the match loop changed nothing: the offender is still to move
        raise match_failure(task, match, exc) from None
    return finish_match(task, match)


def failed_text(exc: Any) -> str:
    """What a :class:`~keltis_env.core.errors.ControllerError` says happened, as a phrase."""
    if exc.kind == "SystemExit":
        return f"called sys.exit({exc.detail})" if exc.detail else "called sys.exit()"
    if exc.kind == "KeyboardInterrupt":
        return "raised KeyboardInterrupt (not a Ctrl-C of the run)"
    return f"raised {exc.kind}: {exc.detail}" if exc.detail else f"raised {exc.kind}"


class Tasks(Sequence[_Task]):
    """The games of an evaluation in order, each made when it is asked for (an evaluation
    of many games holds no list of them): game ``i`` is deal ``i // n`` in rotation ``i % n``."""

    def __init__(self, specs: Sequence[Any], deals: int, seed: int, game: str, options: dict[str, Any],
                 records: str | None, move_seconds: float | None = None, compiled: bool = False,
                 ppo_forward: str | None = None, agent_key: bytes | None = None) -> None:
        self.agent_key = agent_key
        self.specs = tuple(specs)
        self.deals = deals
        self.seed = seed
        self.game = game
        self.options = options
        self.records = records
        self.move_seconds = move_seconds
        self.compiled = compiled
        self.ppo_forward = ppo_forward

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
        bot_seeds = tuple(self._bot_seed(deal, rotation, i) for i in range(n))
        return _Task(index, deal, rotation, derive_seed(seed, "deal", deal), seats, bot_seeds, self.specs, self.game,
                     self.options, self.records, self.move_seconds, self.compiled, self.ppo_forward)

    def __iter__(self) -> Iterator[_Task]:
        return (self[i] for i in range(len(self)))

    def _bot_seed(self, deal: int, rotation: int, agent: int) -> int:
        """Agent ``agent``'s seed in the game of ``deal`` and ``rotation``: derived from the
        run's seed; under ``agent_key``, an agent of code not the package's (``py:``) gets a
        keyed seed instead, from which it cannot tell which deal it plays (the package's
        bots keep theirs, so their results do not change)."""
        if self.agent_key is not None and user_code(self.specs[agent]):
            return keyed_seed(self.agent_key, self.seed, "bot", deal, rotation, agent)
        return derive_seed(self.seed, "bot", deal, rotation, agent)


def make_tasks(specs: Sequence[Any], deals: int, seed: int, game: str, options: dict[str, Any],
               records: str | None, move_seconds: float | None = None, compiled: bool = False,
               ppo_forward: str | None = None, agent_key: bytes | None = None) -> Tasks:
    """The games of ``deals`` duplicate deals, every agent in every seat once per deal
    (``compiled``: the bots of :data:`AUTO_BACKEND` play through their kernels;
    ``ppo_forward``: the forward pass of ``ppo`` agents whose spec names none, :func:`with_forward`;
    ``agent_key``: the secret under which ``py:`` agents get their seeds, :meth:`Tasks._bot_seed`)."""
    return Tasks(specs, deals, seed, game, options, records, move_seconds, compiled, ppo_forward, agent_key)


#: while a finished game is kept (:func:`stops_deferred`): ``[True]``, then the stop requests
#: that arrived meanwhile
_DEFERRED: list[Any] = []


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """A Ctrl-C or SIGTERM (under :func:`sigterm_interrupts`) that arrives in the block stops
    the run when the block ends, not inside it: a finished game is kept in every place or in
    none (counted, written to the run folder, reported)."""
    if _DEFERRED:  # nested: the outer block decides
        yield
        return
    _DEFERRED.append(True)
    try:
        yield
    finally:
        pending = _DEFERRED[1:]
        _DEFERRED.clear()
        if pending:
            raise pending[0]


class Interrupted(StopRequest):
    """Ctrl-C, raised while an evaluation plays (see :func:`sigterm_interrupts`)."""


class Terminated(StopRequest):
    """SIGTERM, raised as an interrupt while an evaluation plays (see :func:`sigterm_interrupts`)."""


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Meanwhile, in the main thread, SIGTERM raises :class:`Terminated` and Ctrl-C
    :class:`Interrupted`, both :class:`~keltis_env.core.errors.StopRequest`: they stop an
    evaluation (workers stopped, finished games kept) and pass through the guard around an
    agent's move, where any other ``KeyboardInterrupt`` is the agent's failure. Only for a
    signal whose handling is Python's default: a handler the caller installed (as training
    does) stays in charge."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        signal.signal(signum, signal.SIG_IGN)  # once: stopping the workers is not cut short
        request = Terminated if signum == signal.SIGTERM else Interrupted
        if _DEFERRED:  # a finished game is being kept: it stops once that is done (stops_deferred)
            _DEFERRED.append(request)
            return
        raise request

    installed = []
    for signum, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
        if signal.getsignal(signum) == default:
            signal.signal(signum, stop)
            installed.append((signum, default))
    try:
        yield
    finally:
        for signum, default in installed:
            signal.signal(signum, default)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def exit_with_parent(parent: int) -> None:
    """Make this worker stop when the main process ``parent`` is gone (killed without a
    chance to stop its workers): on Linux the kernel sends it SIGTERM
    (``PR_SET_PDEATHSIG``); elsewhere a thread checks the parent twice a second."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
        if armed:
            if os.getppid() != parent:  # gone before the request took effect
                os._exit(1)
            return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def one_blas_thread() -> Any:
    """Limit BLAS (numpy's OpenBLAS) to one thread in this process; the limiter, whose
    ``restore_original_limits()`` undoes it (or use it as a context manager).

    A process that plays multiplies one observation at a time by a network's layers. BLAS
    threads gain nothing there. With layers of a thousand units or more, OpenBLAS starts a
    thread per core for each such product, and workers side by side then slow each other,
    and the searches they play against, several times over."""
    import numpy  # noqa: F401  (a limit applies to the libraries loaded when it is set)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def start_worker(parent: int, sigterm_exits: bool = False) -> None:
    """A worker process's start-up (the initializer of a ``multiprocessing`` pool, started
    by the main process ``parent``): Ctrl-C in a terminal reaches every process of the
    group; the main process alone handles it and terminates the workers (no traceback per
    worker). The worker stops with its main process (:func:`exit_with_parent`) and runs
    BLAS on one thread (:func:`one_blas_thread`). With ``sigterm_exits``, SIGTERM ends the
    worker through Python (``sys.exit(1)``), so that its ``finally`` blocks run (a file
    being written leaves no temporary file)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sigterm_exits:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    exit_with_parent(parent)
    one_blas_thread()


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
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


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


def _unguarded_line(source: str, line: int) -> bool:
    """Whether ``line`` of the script ``source`` lies outside every
    ``if __name__ == "__main__":`` block (a worker started by ``spawn`` runs it again)."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.If) and _is_main_guard(node.test)
                and node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno)):
            return False
    return True


def unguarded_main_script() -> str | None:
    """The main script's path when this call comes from its top level outside an
    ``if __name__ == "__main__":`` block: a worker process started by ``spawn`` imports the
    script again and would run the call again (multiprocessing refuses it with a
    ``RuntimeError``). ``None`` when workers can start (a guarded call, ``python -c``, a
    notebook, ``python -m package``)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if main is None or path is None or (name is not None and name.rpartition(".")[2] == "__main__"):
        return None  # spawn does not run such a main module again
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        unguarded = _unguarded_line(Path(path).read_text(encoding="utf-8"), frame.f_lineno)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return str(path) if unguarded else None


__all__ = [
    "SPEC_CACHES",
    "Interrupted",
    "Tasks",
    "Terminated",
    "agent_name",
    "compiled_pays",
    "deal_commitment",
    "deal_seeds",
    "derive_seed",
    "exit_with_parent",
    "finish_match",
    "forget_bots",
    "keyed_seed",
    "make_bots",
    "make_tasks",
    "match_failure",
    "new_secret",
    "one_blas_thread",
    "play_task",
    "played_spec",
    "private_seed",
    "sigint_ignored",
    "sigterm_interrupts",
    "start_match",
    "start_worker",
    "stops_deferred",
    "unguarded_main_script",
    "user_code",
    "with_forward",
    "with_option",
]
