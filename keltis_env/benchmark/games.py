"""Playing one table of the benchmark (an agent against copies of a rung, or two rungs in
the calibration) with the evaluation toolkit's duplicate deals, seat rotation and worker
processes, keeping every finished game in a file so that an interrupted run resumes.

The file holds one JSON line per finished game (a
:class:`~keltis_env.evaluation.GameResult`), appended and flushed as each game ends; a
line cut short by a crash is removed when the file is read again. Games already in the
file are not played again; each is checked against the game the protocol plays under its
index (its seed and seating), so a file from another table or protocol is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keltis_env.evaluation import EvaluationError, GameResult
from keltis_env.evaluation.play import make_tasks, run_games

from .protocol import BenchmarkError


def load_games(path: Path, tasks: Any) -> list[GameResult]:
    """The finished games kept in ``path`` (none when it does not exist), checked
    against ``tasks``."""
    if not path.exists():
        return []
    games: dict[int, GameResult] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
            result = GameResult(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
        except (ValueError, TypeError) as exc:
            if number == len(lines):  # the last game was being written when the run stopped: drop it
                from keltis_env.core.files import atomic_write_text

                atomic_write_text(path, "".join(f"{kept}\n" for kept in lines[:-1]))
                break
            raise BenchmarkError(f"{path}, line {number}: not a finished game ({exc})") from None
        if not 0 <= result.index < len(tasks):
            raise BenchmarkError(f"{path}, line {number}: game {result.index} is not one of this table's "
                                f"{len(tasks)} games")
        task = tasks[result.index]
        if (task.seed, task.seats) != (result.seed, tuple(result.seats)):
            raise BenchmarkError(f"{path}, line {number}: game {result.index} was played with other deals or "
                                "seats than this table's; the folder belongs to another run")
        games[result.index] = result
    return list(games.values())


def play_table(specs: list[str], game: str, seed: int, deals: int, workers: int, store: Path | None,
               on_game: Callable[[GameResult], None], done: list[GameResult]) -> list[GameResult]:
    """Play the games of ``deals`` duplicate deals between ``specs`` that ``done`` does not
    hold yet; each finished game is appended to ``done`` and to ``store`` and reported to
    ``on_game``. Returns ``done``; Ctrl-C (or SIGTERM under
    :func:`~keltis_env.evaluation.play.sigterm_interrupts`) leaves the finished games in both."""
    tasks = make_tasks(specs, deals, seed, game, {}, None)
    finished = {r.index for r in done}
    todo = [t for t in tasks if t.index not in finished]
    if not todo:
        return done
    with contextlib.ExitStack() as stack:
        out = None
        if store is not None:
            store.parent.mkdir(parents=True, exist_ok=True)
            out = stack.enter_context(open(store, "a", encoding="utf-8"))
        games = stack.enter_context(contextlib.closing(run_games(todo, workers)))
        for result in games:
            done.append(result)
            if out is not None:
                out.write(json.dumps(dataclasses.asdict(result)) + "\n")
                out.flush()
            on_game(result)
    return done


def table_tasks(specs: list[str], game: str, seed: int, deals: int) -> Any:
    return make_tasks(specs, deals, seed, game, {}, None)


def check_specs(specs: list[str], game: str, players: int) -> None:
    """Every spec made once for a ``players``-player game (a missing file, a policy for
    another game or player count, or a bad option is found before any game)."""
    from keltis_env.evaluation import check_agents

    for spec in dict.fromkeys(specs):
        try:
            check_agents([spec] * players, game)
        except EvaluationError as exc:
            raise BenchmarkError(str(exc)) from None


__all__ = ["check_specs", "load_games", "play_table", "table_tasks"]
