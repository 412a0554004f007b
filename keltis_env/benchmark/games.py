"""Playing one table of the benchmark (an agent against copies of a rung, or two rungs in
the calibration) with the evaluation toolkit's duplicate deals, seat rotation and worker
processes, keeping every finished game in a file so that an interrupted run resumes
(:mod:`keltis_env.evaluation.store`: one JSON line per finished game, each checked against
the game the protocol plays under its index, so a file from another table is refused).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from keltis_env.evaluation import EvaluationError, GameResult
from keltis_env.evaluation import store as _store
from keltis_env.evaluation.play import make_tasks

from .protocol import BenchmarkError


def load_games(path: Path, tasks: Any) -> list[GameResult]:
    """The finished games kept in ``path`` (none when it does not exist), checked
    against ``tasks``."""
    try:
        return _store.load_games(path, tasks)
    except EvaluationError as exc:
        raise BenchmarkError(str(exc)) from None


def play_table(specs: list[str], game: str, seed: int, deals: int, workers: int, store: Path | None,
               on_game: Callable[[GameResult], None], done: list[GameResult],
               move_seconds: float | None = None, ppo_forward: str | None = None,
               agent_key: bytes | None = None) -> list[GameResult]:
    """Play the games of ``deals`` duplicate deals between ``specs`` that ``done`` does not
    hold yet; each finished game is appended to ``done`` and to ``store`` and reported to
    ``on_game``. Returns ``done``; Ctrl-C (or SIGTERM under
    :func:`~keltis_env.evaluation.play.sigterm_interrupts`) leaves the finished games in both.
    ``move_seconds``: the per-move time limit (an agent over it loses that game on time);
    ``ppo_forward``: the protocol's forward pass for ``ppo`` specs that name none;
    ``agent_key``: the run's secret for the seeds of ``py:`` agents
    (:func:`~keltis_env.evaluation.play.keyed_seed`)."""
    tasks = table_tasks(specs, game, seed, deals, move_seconds, ppo_forward, agent_key)
    return _store.play_missing(tasks, workers, store, on_game, done)


def table_tasks(specs: list[str], game: str, seed: int, deals: int, move_seconds: float | None = None,
                ppo_forward: str | None = None, agent_key: bytes | None = None) -> Any:
    return make_tasks(specs, deals, seed, game, {}, None, move_seconds, ppo_forward=ppo_forward,
                      agent_key=agent_key)


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
