"""A lockstep group of games with ``ppo`` agents played on the card game's compiled core,
when every other agent is a bot with a kernel (``heuristic``, ``planner``).

The games are dealt by the Python engine from the tasks' seeds, as the match loop deals
them, and moved into rows of the one driver's table
(:class:`~keltis_env.compiled.table.GameTable`). One call (its ``advance``) moves every
game's kernel bots until a ``ppo`` agent is to move or the game is over; the games
waiting on one network are observed by one call (its ``observe``: the Python encoder's
observation bit for bit, its ``plan`` feature included, and the legal actions), the
network runs once on them (:meth:`~keltis_env.bots.ppo.PPOBot.batch_logits_each`), each
game's bot chooses from its row (its own random generator, seeded as for the game played
alone), and one call applies the choices (its ``act``). So each game's moves, scores, end and record
are those of the game played alone by the match loop; ``tests/test_evaluate_compiled.py``
holds them equal.

Times: a forward pass is charged to its games in equal shares, and a share over the
per-move limit loses that game on time, as in :mod:`~keltis_env.evaluation.lockstep`. The
kernel bots' moves are timed per call; a call longer than one move may take sends the
group's unfinished games to the match loop, one at a time, which judges each move. The
worker's :class:`~keltis_env.evaluation.workers.Watch` gets every game's actions, so a
game whose worker is stopped over the limit is rebuilt as in the match loop.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from keltis_env.core.errors import StopRequest

from .compiled_games import MAX_ACTIONS, agent_table, has_match_kernels, kernel_spec, load_task, result_of
from .errors import AgentPlayError
from .play import SPEC_CACHES, agent_name, failed_text, make_bots, play_task, played_spec
from .results import GameResult


def _ppo_spec(spec: Any) -> bool:
    from keltis_env.bots import parse_spec

    try:
        return isinstance(spec, str) and parse_spec(spec)[0] == "ppo"
    except ValueError:
        return False


def lockstep_playable(task: Any) -> bool:
    """Whether ``task``'s group is played on the compiled core: the bots play through their
    kernels (``task.compiled``), the game has them, some agent is a ``ppo`` spec and every
    other a spec of a bot with a kernel (read from the task alone; whether the ppo agents'
    observations are the compiled core's is checked when their bots are made)."""
    if not task.compiled or not has_match_kernels(task.game):
        return False
    ppo = [_ppo_spec(s) for s in task.specs]
    return any(ppo) and all(p or kernel_spec(s) for p, s in zip(ppo, task.specs, strict=True))


_SETUP: dict[tuple[str, tuple[str, ...]], Any] = {}  # per process: (game, specs) -> table and players
SPEC_CACHES.append(_SETUP)


def _setup(task: Any, bots: list[Any]) -> tuple[Any, list[int]] | None:
    """A one-game :func:`~.compiled_games.agent_table` for ``task``'s agents (``bots``: a
    game's bots by seat), the ``ppo`` agents decided outside, made once per process;
    ``None`` without numba or when a ``ppo`` agent's observation is not the compiled core's
    (another game's encoder, other features)."""
    key = (task.game, tuple(task.specs))
    if key in _SETUP:
        return _SETUP[key]
    made = agent_table(task, 1, [None if _ppo_spec(s) else played_spec(s, task.game) for s in task.specs])
    if made is not None and not all(_observes(made[0], bot) for seat, bot in enumerate(bots)
                                    if _ppo_spec(task.specs[task.seats[seat]])):
        made = None
    _SETUP[key] = made
    return made


def _observes(table: Any, bot: Any) -> bool:
    """Whether ``table`` observes games as ``bot``'s encoder does (its features the compiled
    core's, its size the same)."""
    features = tuple(getattr(getattr(bot, "info", None), "features", ()) or ())
    if not set(features) <= set(getattr(table.batch, "FEATURES", ())):
        return False
    return bool(table.encoding_of(features)[0] == bot.encoder.size)


def play_lockstep(tasks: Sequence[Any], watch: Any, fallback: Any) -> Iterator[GameResult]:
    """Play ``tasks`` (each :func:`lockstep_playable`) on the compiled core (see the module
    doc), each game's result as it ends; ``fallback(tasks, watch)`` plays them instead
    when the compiled core cannot (its results then). ``watch``: the worker's shared
    record, slot ``i`` for ``tasks[i]``."""
    bots = [make_bots(task, watch, slot) for slot, task in enumerate(tasks)]
    setup = _setup(tasks[0], bots[0])
    if setup is None:
        yield from fallback(tasks, watch)
        return
    yield from _Group(tasks, bots, setup, watch).play()


class _Group:
    """A group's games on a table of the one driver, and their times."""

    def __init__(self, tasks: Sequence[Any], bots: list[list[Any]], setup: tuple[Any, list[int]], watch: Any) -> None:
        import numpy as np

        from keltis_env.compiled.table import GameTable

        self.tasks, self.bots, self.watch = tasks, bots, watch
        like, players = setup
        self.table = table = GameTable(like.game, like.config, len(tasks), log=MAX_ACTIONS)
        table.share(like)
        self.starts = [load_task(table, g, t, players) for g, t in enumerate(tasks)]
        self.n = n = len(tasks[0].specs)
        self.logged = [0] * len(tasks)
        self.think = np.zeros((len(tasks), n))
        self.ppo = [_ppo_spec(s) for s in tasks[0].specs]  # by agent

    def result(self, g: int, forfeit: Any = None) -> GameResult:
        table = self.table
        return result_of(self.tasks[g], table.state(g, self.starts[g]), table.decisions[g].tolist(),
                         self.think[g].tolist(), table.moves(g), forfeit)

    def log(self, games: Any) -> None:
        """Write the games' new actions to the watch."""
        watch = self.watch
        for g in games:
            g = int(g)
            upto = int(self.table.counts[g])
            for action in self.table.log[g, self.logged[g]:min(upto, MAX_ACTIONS)].tolist():
                watch.log(g, 4, action)
            self.logged[g] = upto

    def play(self) -> Iterator[GameResult]:
        import numpy as np

        active = np.arange(len(self.tasks), dtype=np.int64)
        limit = self.tasks[0].move_seconds
        while active.size:
            begun = time.perf_counter()
            waiting = self.table.advance(active)
            spent = time.perf_counter() - begun
            if limit is not None and spent > limit:  # some move may have been over the limit: the match loop judges
                for g in active.tolist():
                    yield play_task(self.tasks[g], self.watch, g)
                return
            self._charge(active, waiting, spent)
            if self.watch is not None:
                self.log(active)
            for g in active[waiting < 0].tolist():
                yield self.result(g)
            going = []
            by_network: dict[Any, list[tuple[int, int]]] = {}
            for g, seat in zip(active[waiting >= 0].tolist(), waiting[waiting >= 0].tolist(), strict=True):
                by_network.setdefault(self.bots[g][seat].network_key, []).append((g, seat))
            for games in by_network.values():
                for g, forfeit in self._decide(games):
                    if forfeit is None:
                        going.append(g)
                    else:
                        yield self.result(g, forfeit)
            active = np.array(sorted(going), dtype=np.int64)

    def _charge(self, active: Any, waiting: Any, spent: float) -> None:
        """A kernel call's time, shared by its games and, in each, by its kernel bots' seats."""
        if not active.size:
            return
        share = spent / active.size
        for g in active.tolist():
            seats = [s for s in range(self.n) if not self.ppo[self.tasks[g].seats[s]]]
            for s in seats:
                self.think[g, s] += share / len(seats)

    def _decide(self, games: list[tuple[int, int]]) -> list[tuple[int, Any]]:
        """One forward pass for ``games`` (game, seat), each game's choice applied; each game
        with its forfeit (``None`` when it goes on)."""
        import numpy as np

        from keltis_env.core.match import Forfeit

        first, seat = games[0]
        bot = self.bots[first][seat]
        features = tuple(getattr(bot.info, "features", ()) or ())
        index = np.array([g for g, _ in games], dtype=np.int64)
        mes = np.array([s for _, s in games], dtype=np.int64)
        obs = np.empty((len(games), bot.encoder.size), dtype=np.float32)
        masks = np.zeros((len(games), self.table.num_actions), dtype=np.bool_)
        if self.watch is not None:
            self.watch.deciding(seat, self.tasks[first].seats[seat], first)
        begun = time.perf_counter()
        try:
            self.table.observe(index, mes, obs, masks, features=features)
            legals = [np.flatnonzero(m).tolist() for m in masks]
            logits = bot.logits_of_moves(obs, legals)
        except StopRequest:
            raise
        except BaseException as exc:
            raise self._failed(first, seat, exc) from None
        share = (time.perf_counter() - begun) / len(games)
        limit = self.tasks[first].move_seconds
        chosen = np.zeros(len(games), dtype=np.int64)
        outcome: list[tuple[int, Any]] = []
        for i, (g, s) in enumerate(games):
            started = time.perf_counter()
            try:
                chosen[i] = self.bots[g][s].choose(legals[i], logits[i])
            except StopRequest:
                raise
            except BaseException as exc:
                raise self._failed(g, s, exc) from None
            spent = share + time.perf_counter() - started
            self.think[g, s] += spent
            if self.watch is not None:
                self.watch.log(g, s, None, spent)
            outcome.append((g, Forfeit(s, spent, limit) if limit is not None and spent > limit else None))
        go = np.array([o is None for _, o in outcome], dtype=np.bool_)
        self.table.act(index[go], chosen[go])
        if self.watch is not None:
            self.log(index[go])
            self.watch.done()
        return outcome

    def _failed(self, g: int, seat: int, exc: BaseException) -> AgentPlayError:
        from keltis_env.core.errors import ControllerError, describe_value

        task = self.tasks[g]
        agent = task.seats[seat]
        failure = ControllerError.of(seat, describe_value(self.bots[g][seat]), exc)
        return AgentPlayError(agent, agent_name(task.specs[agent]), seat, task.index, failed_text(failure),
                              failure.trace)


__all__ = ["lockstep_playable", "play_lockstep"]
