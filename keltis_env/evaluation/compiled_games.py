"""An evaluation's games played whole inside the compiled kernels, when every agent is a
card-game bot with a kernel.

When an evaluation plays the bots of :data:`~keltis_env.evaluation.play.AUTO_BACKEND`
through their kernels (``task.compiled``) and every agent is one of them (``heuristic``,
``planner``, with their options; not ``backend=python``), a game needs no match loop:
it is dealt by the Python engine from the task's seed, as the match loop deals it, moved
into a row of the compiled core, and played to its end by one call
(the game's ``kernels_match.play_game``), each seat deciding through its
agent's kernel with that agent's options. The kernels make the Python bots' decisions
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

#: the agents whose kernels play whole games (those of a game with a ``kernels_match`` module)
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


_TABLES: dict[tuple[str, tuple[str, ...]], tuple[Any, ...] | None] = {}  # per process: (game, specs) -> tables
SPEC_CACHES.append(_TABLES)


def _tables(task: Any) -> tuple[Any, ...] | None:
    """The kernels' module, the kernels' rows and the players' kinds, options and weights
    (one row per agent) for ``task``'s agents, made once per process; ``None`` without numba."""
    key = (task.game, tuple(task.specs))
    if key in _TABLES:
        return _TABLES[key]
    from keltis_env.compiled import core_module

    try:  # loaded on demand: the Python path imports no kernels
        match = core_module(task.game, "match")
    except ImportError:
        match = None
    if match is None:
        _TABLES[key] = None
        return None
    kernels = core_module(task.game, "kernels")
    batch = core_module(task.game, "batch")
    tables = (match, kernels, *batch.opponent_tables([played_spec(s, task.game) for s in task.specs]))
    _TABLES[key] = tables
    return tables


def play_compiled(tasks: Sequence[Any], watch: Any = None) -> Iterator[GameResult]:
    """Play ``tasks`` (each :func:`playable`), each game's result as it ends, in order:
    whole inside the kernels, or under the match loop where the kernels cannot decide it
    as the match loop would (see the module doc). ``watch``: the worker's shared record,
    slot ``i`` for ``tasks[i]`` (nothing is deciding while the kernels play)."""
    tables = _tables(tasks[0]) if tasks else None
    for slot, task in enumerate(tasks):
        result = _play(task, tables) if tables is not None else None
        yield result if result is not None else play_task(task, watch, slot)


def _play(task: Any, tables: tuple[Any, ...]) -> GameResult | None:
    """``task``'s game played whole by the kernels; ``None`` when the match loop must play it."""
    import numpy as np

    from keltis_env.core.game import get_game

    match, kernels, kinds, opts, weights = tables
    descriptor = get_game(task.game)
    n = len(task.specs)
    start = descriptor.new_state(descriptor.make_config(num_players=n, **task.options), task.seed)
    row = kernels.to_row(start)
    decisions = np.zeros(n, dtype=np.int64)
    actions = np.zeros(MAX_ACTIONS, dtype=np.int64)
    begun = time.perf_counter()
    count = int(match.play_game(row, np.asarray(task.seats, dtype=np.int64), kinds, opts, weights, decisions,
                                actions))
    spent = time.perf_counter() - begun
    if count < 0 or (task.move_seconds is not None and spent > task.move_seconds) or \
            (task.records is not None and count > MAX_ACTIONS):
        return None
    made = decisions.tolist()
    total = max(1, sum(made))
    return result_of(task, descriptor, kernels.from_row(row, start), made, [spent * d / total for d in made],
                     actions[:count].tolist())


def result_of(task: Any, descriptor: Any, final: Any, decisions: list[int], think: list[float], actions: list[int],
              forfeit: Any = None) -> GameResult:
    """The result of ``task``'s game, whose position is now ``final`` (the Python state),
    as the match loop gives it (lost on time by ``forfeit``, a
    :class:`~keltis_env.core.match.Forfeit`, when it is one); its record (``actions``) is
    saved when records are kept."""
    from keltis_env.core.match import forfeit_shares
    from keltis_env.core.rewards import win_shares

    scores = tuple(final.scores())
    if task.records is not None:
        names = [agent_name(a) for a in task.specs]
        record = descriptor.record_cls(config=final.config, seed=task.seed, actions=actions,
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


__all__ = ["KERNEL_BOTS", "MAX_ACTIONS", "has_match_kernels", "kernel_spec", "play_compiled",
           "playable", "result_of"]
