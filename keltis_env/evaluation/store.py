"""Finished games kept on disk, so that a long evaluation (``keltis evaluate --out``) or a
benchmark run (``keltis ladder --out``) that stops, by Ctrl-C, a crash or the end of a
session, resumes where it stopped and ends with the result of a run never stopped.

A run folder holds ``run.json`` (what the run is: its agents, seed, deals, game options...)
and one file of games per table, one JSON line per finished game (a
:class:`~keltis_env.evaluation.GameResult`, its timings included), appended and flushed as
each game ends. A line cut short by a crash is removed when the file is read again. Games
already in the file are not played again; each is checked against the game the run plays
under its index (its seed and seating), so a file from another run is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import no_space_left

from .errors import EvaluationError
from .play import Tasks, stops_deferred
from .results import GameResult
from .workers import run_games

RUN_FILE = "run.json"
#: identity keys that folders written by earlier releases lack: a folder without one is
#: taken to agree (its games were played by the package's own bots, well inside any limit)
LATER_KEYS = frozenset({"move_seconds"})


def open_run_folder(out: Path, identity: dict[str, Any], resume: bool, same: str) -> None:
    """Start the run folder ``out`` (new or empty: ``run.json`` is written with
    ``identity``) or, with ``resume``, check that it holds a run of the same ``identity``.
    ``same`` says what a resumed run must keep (e.g. ``"the same agents, seed and
    games"``). :class:`EvaluationError` names what is wrong and changes nothing."""
    from keltis_env.core.output_files import OutputPathError, atomic_write_text, check_output_dir

    run_file = out / RUN_FILE
    if resume:
        if not run_file.is_file():
            raise EvaluationError(f"--resume {out}: no {RUN_FILE} there; give the --out folder of an earlier run")
        try:
            kept = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EvaluationError(f"--resume {out}: cannot read {run_file}: {exc}") from None
        if not isinstance(kept, dict):
            raise EvaluationError(f"--resume {out}: {run_file} is not a run's description")
        differ = [k for k in identity if kept.get(k) != identity[k] and (k in kept or k not in LATER_KEYS)]
        if differ:
            what = ", ".join(f"{k} {kept.get(k)!r} (now {identity[k]!r})" for k in differ)
            raise EvaluationError(f"--resume {out}: that run differs: {what}; resume it with {same}, or start a new "
                                  "run with --out")
        return
    try:
        check_output_dir(out, "the run folder")
    except OutputPathError as exc:
        raise EvaluationError(str(exc)) from None
    if out.is_dir() and any(out.iterdir()):
        raise EvaluationError(f"--out {out} is not empty; give a new or empty folder, or --resume {out} to continue "
                              "the run it holds")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_file, json.dumps(identity, indent=1) + "\n")


@contextlib.contextmanager
def hold_run_folder(out: Path, what: str, error: type[Exception] = EvaluationError) -> Iterator[None]:
    """``out`` owned by this run while the block runs (a second run on the same folder, a
    ``--resume`` in another terminal, is refused: ``error`` naming the folder and the
    process that holds it); released when the block ends or the process dies."""
    from keltis_env.core.output_files import FolderLock, OutputPathError

    lock = FolderLock(out, what)
    try:
        lock.acquire()
    except OutputPathError as exc:
        raise error(str(exc)) from None
    try:
        yield
    finally:
        lock.release()


def load_games(path: Path, tasks: Tasks) -> list[GameResult]:
    """The finished games kept in ``path`` (none when it does not exist), each checked
    against the task of its index in ``tasks``."""
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
                from keltis_env.core.output_files import atomic_write_text

                atomic_write_text(path, "".join(f"{kept}\n" for kept in lines[:-1]))
                break
            raise EvaluationError(f"{path}, line {number}: not a finished game ({exc})") from None
        if not 0 <= result.index < len(tasks):
            raise EvaluationError(f"{path}, line {number}: game {result.index} is not one of this run's "
                                  f"{len(tasks)} games")
        task = tasks[result.index]
        if (task.seed, task.seats) != (result.seed, tuple(result.seats)):
            raise EvaluationError(f"{path}, line {number}: game {result.index} was played with other deals or "
                                  "seats than this run's; the folder belongs to another run")
        games[result.index] = result
    return list(games.values())


def play_missing(tasks: Tasks, workers: int, store: Path | None,
                 on_game: Callable[[GameResult], None], done: list[GameResult]) -> list[GameResult]:
    """Play the games of ``tasks`` that ``done`` does not hold yet; each finished game is
    appended to ``done`` and to ``store`` and reported to ``on_game``. Returns ``done``;
    Ctrl-C (or SIGTERM under :func:`~keltis_env.evaluation.play.sigterm_interrupts`)
    leaves the finished games in both."""
    finished = {r.index for r in done}
    # a new run passes the lazy task sequence on as it is: an evaluation of many games holds no list of them
    todo = [t for t in tasks if t.index not in finished] if finished else tasks
    if not len(todo):
        return done
    with contextlib.ExitStack() as stack:
        out = None
        if store is not None:
            store.parent.mkdir(parents=True, exist_ok=True)
            out = stack.enter_context(open(store, "a", encoding="utf-8"))
        games = stack.enter_context(contextlib.closing(run_games(todo, workers)))
        for result in games:
            with stops_deferred():  # kept everywhere or nowhere: a Ctrl-C waits for the three
                if out is not None:
                    line = json.dumps(dataclasses.asdict(result)) + "\n"
                    # a line cut short by a full disk is dropped when the file is read again
                    with no_space_left(store, f"the finished games ({store.name})", len(line)):
                        out.write(line)
                        out.flush()
                done.append(result)
                on_game(result)
    return done


__all__ = ["RUN_FILE", "hold_run_folder", "load_games", "open_run_folder", "play_missing"]
