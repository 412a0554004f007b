"""An evaluation's games played whole inside the compiled kernels, when every agent is a
card-game bot with a kernel.

When an evaluation plays the bots of :data:`~keltis_env.evaluation.play.AUTO_BACKEND`
through their kernels (``task.compiled``) and every agent is one of them (``heuristic``,
``planner``, with their options; not ``backend=python``), a game needs no match loop:
it is dealt by the Python engine from the task's seed, as the match loop deals it, moved
into a row of the one driver's table (:class:`~keltis_env.compiled.table.GameTable`), and
played to its end by one call (its ``advance``), each seat deciding through its agent's
kernel with that agent's options. The kernels make the Python bots' decisions
from what the player to move may see, so the moves, scores, ends and records are those of
the game played by the match loop; ``tests/test_evaluate_compiled.py`` holds them equal.

What the match loop adds, kept:

* the per-move time limit: a game's call is timed, and a game that took longer in all
  than one move may take is played again under the match loop (whose moves are the same,
  and which judges each move), so that no game is won or lost on time differently;
* the measured times: a game's time is shared among its seats by their decisions (the
  kernels are not timed move by move);
* records: the call logs the actions, which are saved as the match loop saves them.

Without numba, or for a game or agents the kernels do not play, every game goes through
the match loop (:func:`~keltis_env.evaluation.play.play_task`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .play import AUTO_BACKEND, SPEC_CACHES, agent_name, play_task, played_spec
from .results import GameResult

#: the agents whose kernels play whole games (of a game whose compiled core has a ``match`` part)
KERNEL_BOTS = AUTO_BACKEND
#: the most actions of a game the call logs (a longer game is played by the match loop
#: when its record is kept); the card game's games are far shorter (its deck ends them)
MAX_ACTIONS = 4096


def playable(task: Any) -> bool:
    """Whether the kernels play ``task``'s game whole: the bots play through their kernels
    (``task.compiled``), the game has them, and every agent is a spec of a bot with a
    kernel that is not told to decide through the Python code. Read from the task alone
    (nothing is loaded)."""
    if not task.compiled or not has_match_kernels(task.game):
        return False
    return all(kernel_spec(spec) for spec in task.specs)


@functools.cache
def has_match_kernels(game: str) -> bool:
    """Whether ``game``'s compiled core plays whole games (its descriptor declares the
    ``match`` part; nothing is loaded)."""
    from keltis_env.compiled import has_core

    return has_core(game, "match")


def kernel_spec(spec: Any) -> bool:
    """Whether the agent ``spec`` is a bot with a kernel (:data:`KERNEL_BOTS`) that is not
    told to decide through the Python code (``backend=python``)."""
    from keltis_env.bots import parse_spec

    if not isinstance(spec, str):
        return False
    try:
        name, options = parse_spec(spec)
    except ValueError:
        return False
    return name in KERNEL_BOTS and options.get("backend", "auto") in ("auto", "compiled")


_TABLES: dict[tuple[str, tuple[str, ...]], tuple[Any, list[int]] | None] = {}  # per process: (game, specs) -> table
SPEC_CACHES.append(_TABLES)


def _tables(task: Any) -> tuple[Any, list[int]] | None:
    """A one-game :func:`agent_table` for ``task``'s agents, made once per process."""
    key = (task.game, tuple(task.specs))
    if key not in _TABLES:
        _TABLES[key] = agent_table(task, 1, [played_spec(s, task.game) for s in task.specs])
    return _TABLES[key]


def agent_table(task: Any, rows: int, players: list[str | None]) -> tuple[Any, list[int]] | None:
    """``rows`` games of ``task``'s game on the one driver's table
    (:class:`~keltis_env.compiled.table.GameTable`), each game's moves logged, and each
    agent's player number there (``players[a]``: the spec the kernels play agent ``a``
    with, or ``None`` where it is decided outside); ``None`` without numba or for a game
    whose kernels do not play whole games (its compiled core has no ``match`` part)."""
    from keltis_env.compiled import core_module

    try:  # loaded on demand: the Python path imports no kernels
        if core_module(task.game, "match") is None:
            return None
    except ImportError:
        return None
    from keltis_env.compiled.table import GameTable

    table = GameTable(task.game, task_config(task), rows, log=MAX_ACTIONS)
    return table, [table.player(spec) for spec in players]


def task_config(task: Any) -> Any:
    """The options of ``task``'s game."""
    from keltis_env.core.game import get_game

    return get_game(task.game).make_config(num_players=len(task.specs), **task.options)


def load_task(table: Any, g: int, task: Any, players: list[int]) -> Any:
    """``task``'s deal into game ``g`` of ``table``, each seat played by its agent's player
    (``players``, by agent); the deal's Python state is returned."""
    from keltis_env.core.game import get_game

    start = get_game(task.game).new_state(task_config(task), task.seed)
    table.load(g, start)
    table.who[g] = [players[a] for a in task.seats]
    return start


def play_compiled(tasks: Sequence[Any], watch: Any = None) -> Iterator[GameResult]:
    """Play ``tasks`` (each :func:`playable`), each game's result as it ends, in order:
    whole inside the kernels, or under the match loop where the kernels cannot decide it
    as the match loop would (see the module doc). ``watch``: the worker's shared record,
    slot ``i`` for ``tasks[i]`` (nothing is deciding while the kernels play)."""
    tables = _tables(tasks[0]) if tasks else None
    for slot, task in enumerate(tasks):
        result = _play(task, *tables) if tables is not None else None
        yield result if result is not None else play_task(task, watch, slot)


def _play(task: Any, table: Any, players: list[int]) -> GameResult | None:
    """``task``'s game played whole by the kernels; ``None`` when the match loop must play it."""
    import numpy as np

    start = load_task(table, 0, task, players)
    begun = time.perf_counter()
    waiting = int(table.advance(np.zeros(1, dtype=np.int64))[0])
    spent = time.perf_counter() - begun
    if waiting >= 0 or (task.move_seconds is not None and spent > task.move_seconds) or \
            (task.records is not None and table.counts[0] > MAX_ACTIONS):
        return None
    made = table.decisions[0].tolist()
    total = max(1, sum(made))
    return result_of(task, table.state(0, start), made, [spent * d / total for d in made], table.moves(0))


def result_of(task: Any, final: Any, decisions: list[int], think: list[float], actions: list[int],
              forfeit: Any = None) -> GameResult:
    """The result of ``task``'s game, whose position is now ``final`` (the Python state),
    as the match loop gives it (lost on time by ``forfeit``, a
    :class:`~keltis_env.core.match.Forfeit`, when it is one); its record (``actions``) is
    saved when records are kept."""
    from keltis_env.core.game import get_game
    from keltis_env.core.match import forfeit_shares
    from keltis_env.core.rewards import win_shares

    scores = tuple(final.scores())
    if task.records is not None:
        names = [agent_name(a) for a in task.specs]
        record = get_game(task.game).record_cls(config=final.config, seed=task.seed, actions=actions,
                                                players=[names[a] for a in task.seats])
        record.save(Path(task.records) / f"game_{task.index:05d}.json")
    if forfeit is not None:
        end, shares = "time", forfeit_shares(len(scores), forfeit.seat)
    else:
        end = final.end.name.lower() if hasattr(final.end, "name") else str(final.end)
        shares = win_shares(scores)
    return GameResult(index=task.index, deal=task.deal, rotation=task.rotation, seed=task.seed, seats=task.seats,
                      scores=scores, shares=tuple(shares), turns=int(final.turn), end=end,
                      truncated=forfeit is None and bool(final.truncated), decisions=tuple(decisions),
                      think_seconds=tuple(think), forfeit=forfeit.seat if forfeit is not None else None)


__all__ = ["KERNEL_BOTS", "MAX_ACTIONS", "agent_table", "has_match_kernels", "kernel_spec", "load_task",
           "play_compiled", "playable", "result_of", "task_config"]
