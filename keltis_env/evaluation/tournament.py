"""An evaluation from start to end: its arguments checked before any game is played,
the games played, the results aggregated (partial ones on Ctrl-C or SIGTERM)."""

from __future__ import annotations

import contextlib
import signal
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keltis_env.core.errors import describe_text, describe_value

from .errors import AgentPlayError, EvaluationError, EvaluationInterrupted, check_integer
from .play import Terminated, agent_name, compiled_pays, make_tasks, sigterm_interrupts, unguarded_main_script
from .records import claim_records_dir, remove_unfinished_records
from .results import EvaluationResult, GameResult, aggregate
from .store import hold_run_folder, load_games, open_run_folder, play_missing

MIN_PLAYERS = 2
MAX_PLAYERS = 4
#: The most games of one evaluation, and the most worker processes: a larger value is
#: refused before anything is made (the results of every game are held in memory).
MAX_GAMES = 1_000_000
MAX_WORKERS = 256
RUN_KIND = "keltis-evaluation-run"
#: The file of a run folder (``out``) that holds the finished games.
GAMES_FILE = "games.jsonl"


#: the per-move time limit of :func:`evaluate` unless it is given (``None`` turns it off)
DEFAULT_MOVE_SECONDS = 60.0


def check_agents(agent_specs: Sequence[Any], game: str = "keltis") -> None:
    """Raise :class:`EvaluationError` for an unknown game, a wrong number of agents or a
    bad spec (every spec is made once, so a missing policy file is found here, before any
    game is played). An agent may also be a bot object (with ``act(view)``), played as it is."""
    from keltis_env.bots import make_bot
    from keltis_env.core.game import game_names

    if game not in game_names():
        raise EvaluationError(f"unknown game {game!r}; games are {', '.join(game_names())}")

    if isinstance(agent_specs, str) or not isinstance(agent_specs, Sequence):
        raise EvaluationError("agent_specs must be a list of agent specs, e.g. ['heuristic', 'random']")
    n = len(agent_specs)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise EvaluationError(
            f"an evaluation needs {MIN_PLAYERS} to {MAX_PLAYERS} agents (one per player), got {n}"
        )
    for spec in agent_specs:
        if isinstance(spec, str):
            continue
        if not callable(getattr(spec, "act", None)):
            raise EvaluationError(f"an agent must be a spec string or a bot object with act(view), got "
                                  f"{describe_value(spec)}")
    for spec in dict.fromkeys(s for s in agent_specs if isinstance(s, str)):
        if not spec.strip():
            raise EvaluationError(f"an agent spec must be a non-empty string, got {spec!r}")
        try:
            make_bot(spec, seed=0, game=game, num_players=n)
        except (ValueError, TypeError, ImportError, OSError) as exc:
            raise EvaluationError(f"bad agent spec {spec!r}: {exc}") from None


def _unpicklable(agents: Sequence[Any]) -> str | None:
    """Why the bot objects among ``agents`` cannot go to worker processes (``None`` when they can)."""
    import pickle

    for i, agent in enumerate(agents):
        if isinstance(agent, str):
            continue
        try:
            pickle.dumps(agent)
        except Exception as exc:
            return f"agent {i} ({agent_name(agent)}) cannot be pickled for a worker process ({describe_text(exc)})"
    return None


def evaluate(
    agent_specs: list[str],
    games: int,
    seed: int,
    workers: int = 2,
    game: str = "keltis",
    progress: bool = True,
    max_turns: int | None = None,
    records_dir: str | Path | None = None,
    options: dict[str, Any] | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    move_seconds: float | None = DEFAULT_MOVE_SECONDS,
) -> EvaluationResult:
    """Play ``games`` games (rounded up to whole deals) between the agents; see the module doc.

    ``workers`` processes play the games (1: in this process). They are started with the
    ``spawn`` method (safe when the caller holds threads, as torch does), which runs the main
    script again in each worker. So a script that calls this from its top level outside an
    ``if __name__ == "__main__":`` block (as pasted from the README) plays in this process
    instead, with a ``RuntimeWarning`` saying so; put the call under that guard to use the
    workers. The results are the same either way.
    An agent is a spec string or a bot object (with ``act(view)``; it is seeded with
    ``seed(n)`` before every game when it has that method). Bot objects go to the worker
    processes by pickling; one that does not pickle is played in this process
    (``workers=1``) with a ``RuntimeWarning`` that says why; a run folder (``out``) needs
    spec strings, which name the agents.
    ``move_seconds`` is the per-move time limit (default :data:`DEFAULT_MOVE_SECONDS`,
    ``None`` for none): an agent that takes longer loses that game on time (its ``end`` is
    ``"time"``, :attr:`GameResult.forfeit` its seat; see :class:`~keltis_env.core.match.Match`).
    An agent that fails (raises, exits, returns an illegal action, or kills its worker
    process) stops the evaluation with :class:`~keltis_env.evaluation.errors.AgentPlayError`,
    which names the agent, its seat, the game and what happened; the finished games are
    kept in ``out``.
    ``max_turns`` overrides the game's truncation limit; ``options`` are the game's other
    options (``{"tile_layout": "random"}``, ``{"bonus_layout": "random"}``: those a training
    run's ``env.options`` holds). ``records_dir``, when given, receives one game record per
    game (``game_00000.json``, ...), replayable with ``keltis replay``; it is created if missing, must not hold
    game records yet, and is held by this evaluation alone while it runs (a second evaluation given the same
    folder is refused: :func:`~keltis_env.evaluation.records.claim_records_dir`). Every argument is checked
    before any game is played; the counts and the seed may be of any integer type (numpy's included), not
    bools or floats; ``games`` is at most :data:`MAX_GAMES` (1,000,000) and ``workers`` at most
    :data:`MAX_WORKERS` (256).

    ``out``: a folder (new or empty) that keeps every finished game (``run.json``, ``games.jsonl``,
    :mod:`~keltis_env.evaluation.store`); with ``resume=True``, the folder of an earlier evaluation of the
    same agents, games, seed, game and options (and the same agent files: a ``ppo:PATH`` whose file changed is
    refused), which is continued: only the games it lacks are played, and the result is the one of an
    evaluation never stopped (the timings of each game included). ``records_dir`` cannot be combined with
    ``resume``.

    Ctrl-C raises :class:`EvaluationInterrupted` (a ``KeyboardInterrupt``) carrying the finished games as a
    ``partial`` result, once the workers are stopped; the records of unfinished games are removed.
    SIGTERM does the same while the games are played (its ``signum`` says which signal), unless
    the caller installed its own SIGTERM handler. A worker process stops when the calling
    process is gone, even when that one was killed without a chance to stop it.
    """
    plan = _plan(agent_specs, games, seed, workers, game, max_turns, records_dir, options, out, resume, move_seconds)
    if plan.run_dir is not None:
        open_run_folder(plan.run_dir, _identity(plan), resume,
                        "the same agents (and agent files), games, seed, game, options and move_seconds")
    return _play(plan, progress)


@dataclass(frozen=True)
class _Plan:
    """An evaluation's arguments, checked: what is played, by how many workers, and where
    the games are kept."""

    specs: list[Any]  # spec strings, or bot objects
    deals: int
    seed: int
    game: str
    options: dict[str, Any]  # the game's options of every game (max_turns included when given)
    workers: int
    records_dir: str | Path | None
    run_dir: Path | None
    move_seconds: float | None


def _plan(agent_specs: list[str], games: int, seed: int, workers: int, game: str, max_turns: int | None,
          records_dir: str | Path | None, options: dict[str, Any] | None, out: str | Path | None,
          resume: bool, move_seconds: float | None) -> _Plan:
    """:func:`evaluate`'s arguments checked, in its order (see its doc), before any game."""
    from keltis_env.core.match import check_move_seconds

    check_agents(agent_specs, game)
    games = check_integer(games, "games", minimum=1, maximum=MAX_GAMES)
    workers = check_integer(workers, "workers", minimum=1, maximum=MAX_WORKERS)
    try:
        move_seconds = check_move_seconds(move_seconds)
    except ValueError as exc:
        raise EvaluationError(str(exc)) from None
    script = unguarded_main_script() if workers > 1 else None
    if script is not None:
        # stacklevel 3: the line of the script that called evaluate()
        warnings.warn(f"evaluate(): {script} calls it outside an 'if __name__ == \"__main__\":' block, where worker "
                      "processes cannot start (each would run the script again); playing in this process (workers=1)",
                      RuntimeWarning, stacklevel=3)
        workers = 1
    unpicklable = _unpicklable(agent_specs) if workers > 1 else None
    if unpicklable is not None:
        warnings.warn(f"evaluate(): {unpicklable}; playing in this process (workers=1)", RuntimeWarning, stacklevel=3)
        workers = 1
    if out is not None and not all(isinstance(a, str) for a in agent_specs):
        raise EvaluationError("a run folder (out) names its agents by spec, so every agent must be a spec string; "
                              "evaluate bot objects without out, or give them as py:FILE.py:NAME specs")
    if max_turns is not None:
        max_turns = check_integer(max_turns, "max_turns", minimum=1)
    seed = check_integer(seed, "seed")
    specs = list(agent_specs)
    played = _check_options(game, len(specs), options, max_turns)
    if resume and out is None:
        raise EvaluationError("resume needs the folder of the evaluation to continue (out)")
    if resume and records_dir is not None:
        raise EvaluationError("records cannot be kept for a resumed evaluation (the games played before have none); "
                              "keep records in a new evaluation")
    return _Plan(specs, -(-games // len(specs)), seed, game, played, workers, records_dir,
                 Path(out) if out is not None else None, move_seconds)


def _play(plan: _Plan, progress: bool) -> EvaluationResult:
    """The plan's games (those its run folder lacks), aggregated; on Ctrl-C or SIGTERM,
    :class:`EvaluationInterrupted` with the finished ones, their records alone kept."""
    specs, seed, game, played = plan.specs, plan.seed, plan.game, plan.options
    names = [agent_name(a) for a in specs]
    with contextlib.ExitStack() as claimed:  # the run and records folders are this evaluation's until the end
        if plan.run_dir is not None:
            claimed.enter_context(hold_run_folder(plan.run_dir, "the evaluation's run folder"))
        folder = claimed.enter_context(claim_records_dir(plan.records_dir)) if plan.records_dir is not None else None
        games = plan.deals * len(specs)
        tasks = make_tasks(specs, plan.deals, seed, game, played, str(folder) if folder is not None else None,
                           plan.move_seconds, compiled_pays(games, min(plan.workers, games)))
        from tqdm import tqdm

        store = plan.run_dir / GAMES_FILE if plan.run_dir is not None else None
        results: list[GameResult] = load_games(store, tasks) if store is not None else []
        try:
            with (
                sigterm_interrupts(),
                tqdm(total=len(tasks), initial=len(results), desc="evaluate", unit="game", disable=not progress,
                     leave=False) as bar,
            ):
                play_missing(tasks, plan.workers, store, lambda _: bar.update(1), results)
        except AgentPlayError:
            if folder is not None:  # the workers are stopped: the records of finished games alone are kept
                remove_unfinished_records(folder, results)
            raise
        except KeyboardInterrupt as stop:
            signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
            # the workers are stopped (closing run_games terminates them), so no record changes now
            if folder is not None:
                remove_unfinished_records(folder, results)
            partial = aggregate(names, results, game=game, seed=seed, planned_games=len(tasks), options=played)
            raise EvaluationInterrupted(partial, signum) from None
        return aggregate(names, results, game=game, seed=seed, deals=plan.deals, planned_games=len(tasks),
                         options=played)


def _identity(plan: _Plan) -> dict[str, Any]:
    """What a resumed evaluation must share with the one it continues."""
    from keltis_env.bots import agent_file
    from keltis_env.core.output_files import sha256_file

    files = []
    for spec in plan.specs:
        path = agent_file(spec)
        files.append(sha256_file(path) if path is not None else None)
    return {"kind": RUN_KIND, "agents": plan.specs, "agent_sha256": files, "deals": plan.deals, "seed": plan.seed,
            "game": plan.game, "options": plan.options, "move_seconds": plan.move_seconds}


def _check_options(game: str, num_players: int, options: dict[str, Any] | None,
                   max_turns: int | None) -> dict[str, Any]:
    """The game's options for every game (``max_turns`` included when given), checked by
    building the game's config once; :class:`EvaluationError` names the allowed options."""
    from keltis_env.core.errors import KeltisError
    from keltis_env.core.game import get_game

    played = dict(options or {})
    if "num_players" in played:
        raise EvaluationError("options must not hold num_players: the number of agents is the player count")
    if max_turns is not None:
        if played.get("max_turns", max_turns) != max_turns:
            raise EvaluationError(f"max_turns {max_turns} and options max_turns {played['max_turns']} disagree")
        played["max_turns"] = max_turns
    descriptor = get_game(game)
    try:
        descriptor.make_config(num_players=num_players, **played)
    except (KeltisError, TypeError, ValueError) as exc:
        names = ", ".join(descriptor.option_names())
        raise EvaluationError(f"game options {played}: {exc} (options of {game}: {names})") from None
    return played


__all__ = ["DEFAULT_MOVE_SECONDS", "MAX_GAMES", "MAX_PLAYERS", "MAX_WORKERS", "MIN_PLAYERS", "check_agents", "evaluate"]
