"""Scoring an agent on a track of the protocol: :func:`score`.

The agent plays each rung of the track's ladder at a table of its own (the agent against
``players - 1`` copies of the rung) over the track's duplicate deals, through the
evaluation toolkit (:mod:`keltis_env.evaluation`): the same deal seeds, seat rotation, bot
seeding and worker processes as ``keltis evaluate``. The results make a
:class:`~keltis_env.benchmark.scorecard.Scorecard`.

A run given an ``out`` folder keeps every finished game there (``run.json`` says which run
it is; ``<rung>.jsonl`` holds each rung's games), and ``resume=True`` continues such a run,
playing only the games it lacks. Ctrl-C or SIGTERM stops the worker processes and raises
:class:`LadderInterrupted` with a scorecard of the games finished so far.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from keltis_env.bots import agent_file
from keltis_env.evaluation import GameResult, aggregate, mean_interval
from keltis_env.evaluation.errors import EvaluationError, check_integer
from keltis_env.evaluation.play import Terminated, sigterm_interrupts
from keltis_env.evaluation.store import RUN_FILE, hold_run_folder

from .games import check_specs, load_games, play_table, table_tasks
from .protocol import BenchmarkError, Protocol, Track, load_protocol, sha256_file
from .rating import Outcome, fit_rating
from .scorecard import RungResult, Scorecard

RUN_KIND = "keltis-ladder-run"


class LadderInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a ladder run; ``scorecard`` holds the finished games
    (``partial``) and ``signum`` the signal."""

    def __init__(self, scorecard: Scorecard, signum: int = signal.SIGINT) -> None:
        super().__init__("ladder interrupted")
        self.scorecard = scorecard
        self.signum = signum


def _rungs(track: Track, rungs: Sequence[str] | None) -> list[str]:
    if rungs is None:
        return list(track.rungs)
    if isinstance(rungs, str) or not rungs:
        raise BenchmarkError("rungs must be a non-empty list of rung names, e.g. ['heuristic', 'planner']")
    unknown = [r for r in rungs if r not in track.rungs]
    if unknown:
        raise BenchmarkError(f"track {track.name} has no rung {unknown[0]!r}; its rungs are {', '.join(track.rungs)}")
    return [r for r in track.rungs if r in rungs]  # in ladder order, each once


def _identity(protocol: Protocol, track: Track, agent: str, agent_sha: str | None, quick: bool) -> dict[str, Any]:
    return {"kind": RUN_KIND, "protocol": protocol.version, "protocol_sha256": protocol.sha256, "track": track.name,
            "agent": agent, "agent_sha256": agent_sha, "quick": quick}


def _open_run(out: Path, identity: dict[str, Any], resume: bool) -> None:
    """Check (resume) or start (a new or empty folder) the run folder ``out``."""
    from keltis_env.evaluation.store import open_run_folder

    try:
        open_run_folder(out, identity, resume, "the same agent, track, --quick and protocol")
    except EvaluationError as exc:
        raise BenchmarkError(str(exc)) from None


#: the per-move time limit the ladder plays each protocol version with (seconds): an agent
#: over it loses that game on time. The rungs decide in milliseconds (``keltis ladder``
#: shows their ms per decision), far inside it, so v1's scorecards are unchanged by it.
MOVE_SECONDS = {"v1": 10.0, "v2": 10.0}
#: the limit of a protocol version the runner does not know (an edited or new protocol)
DEFAULT_MOVE_SECONDS = 10.0


def move_seconds(protocol: Protocol) -> float:
    """The per-move time limit of ``protocol``'s games."""
    return MOVE_SECONDS.get(protocol.version, DEFAULT_MOVE_SECONDS)


def score(agent: str, track: str, rungs: Sequence[str] | None = None, quick: bool = False, workers: int = 2,
          protocol: Protocol | str | Path | None = None, out: str | Path | None = None, resume: bool = False,
          progress: bool = True, command: str | None = None) -> Scorecard:
    """Score the agent spec ``agent`` (anything :func:`keltis_env.bots.make_bot` makes) on
    ``track`` (``"keltis-2p"``, ...) of ``protocol`` (default: the shipped ``v1``).

    ``rungs`` limits the run to some rungs (e.g. ``["heuristic", "planner"]``); the rating
    is then fitted to those. ``quick`` plays the protocol's quick deals (the scorecard says
    so). ``out``: a folder that keeps the finished games (new or empty; with
    ``resume=True``, the folder of an earlier run of the same agent, track and ``quick``,
    which is continued). ``command`` is recorded in the scorecard. Every argument is
    checked, and every spec made once, before any game is played; :class:`BenchmarkError`
    names what is wrong. Ctrl-C raises :class:`LadderInterrupted`.
    """
    proto = protocol if isinstance(protocol, Protocol) else load_protocol(protocol)
    tr = proto.track(track)
    names = _rungs(tr, rungs)
    if not isinstance(agent, str) or not agent.strip():
        raise BenchmarkError(f"the agent must be a bot spec such as 'heuristic' or 'ppo:PATH', got {agent!r}")
    try:
        workers = check_integer(workers, "workers", minimum=1, maximum=256)
    except EvaluationError as exc:
        raise BenchmarkError(str(exc)) from None
    if resume and out is None:
        raise BenchmarkError("resume needs the folder of the run to continue (out)")
    check_specs([agent] + [tr.rungs[r] for r in names], tr.game, tr.players)
    path = agent_file(agent)
    agent_sha = sha256_file(path) if path is not None else None
    folder = Path(out) if out is not None else None
    if folder is not None:
        _open_run(folder, _identity(proto, tr, agent, agent_sha, quick), resume)
    deals = tr.deals_for(quick)
    done: dict[str, list[GameResult]] = {}
    limit = move_seconds(proto)
    for name in names:
        tasks = table_tasks(tr.table(agent, name), tr.game, tr.seed, deals, limit, tr.ppo_forward)
        done[name] = load_games(folder / f"{name}.jsonl", tasks) if folder is not None else []

    def card() -> Scorecard:
        return make_scorecard(proto, tr, agent, agent_sha, quick, done, command)

    total = tr.games_for(quick) * len(names)
    try:
        with contextlib.ExitStack() as held:
            if folder is not None:
                held.enter_context(hold_run_folder(folder, "the ladder's run folder", BenchmarkError))
            _play_rungs(tr, agent, names, deals, workers, folder, done, limit, total, progress)
    except KeyboardInterrupt as stop:
        signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
        raise LadderInterrupted(card(), signum) from None
    return card()


def _play_rungs(tr: Track, agent: str, names: Sequence[str], deals: int, workers: int, folder: Path | None,
                done: dict[str, list[GameResult]], limit: float, total: int, progress: bool) -> None:
    """Play the missing games of every rung in ladder order, keeping them in ``folder``."""
    from tqdm import tqdm

    with sigterm_interrupts(), tqdm(total=total, initial=sum(len(g) for g in done.values()), unit="game",
                                    desc="ladder", disable=not progress, leave=False) as bar:
        for name in names:
            bar.set_description(f"ladder {name}")
            store = folder / f"{name}.jsonl" if folder is not None else None
            play_table(tr.table(agent, name), tr.game, tr.seed, deals, workers, store,
                       lambda _: bar.update(1), done[name], limit, tr.ppo_forward)


def make_scorecard(protocol: Protocol, track: Track, agent: str, agent_sha: str | None, quick: bool,
                   games: dict[str, list[GameResult]], command: str | None = None) -> Scorecard:
    """The scorecard of finished games (rung -> games, in any order)."""
    from keltis_env import __version__
    from keltis_env.core.recorded_paths import recorded_text

    from .rating import RatingError

    rows = []
    outcomes = []
    for name, results in games.items():
        specs = track.table(agent, name)
        stats = aggregate(specs, results, game=track.game, seed=track.seed).agents[0]
        ordered = sorted(results, key=lambda r: r.index)
        margins = []
        for r in ordered:
            seat = r.seat_of(0)
            margins.append(r.scores[seat] - max(s for i, s in enumerate(r.scores) if i != seat))
        rating = track.ratings.get(name)
        rows.append(RungResult(
            rung=name, spec=_public_spec(track.rungs[name], protocol), rating=rating, games=len(results),
            planned_games=track.games_for(quick), deals=track.deals_for(quick), wins=stats.wins,
            win_rate=stats.win_rate, win_rate_ci=stats.win_rate_ci,
            mean_margin=sum(margins) / len(margins) if margins else 0.0, mean_margin_ci=mean_interval(margins),
            mean_score=stats.mean_score, ms_per_decision=stats.ms_per_decision, time_forfeits=stats.time_forfeits,
        ))
        if rating is not None:
            outcomes.append(Outcome(name, track.players, stats.wins, len(results)))
    fitted = None
    if outcomes:
        with contextlib.suppress(RatingError):  # no games yet: not rated
            fitted = fit_rating(outcomes, track.ratings)
    # the agent and the command as the repository names them: a scorecard is committed and read elsewhere
    return Scorecard(protocol.label, protocol.sha256, __version__, track.name, track.game, track.players,
                     track.seed, recorded_text(agent), agent_sha, quick, rows, fitted,
                     None if command is None else recorded_text(command), custom_protocol=protocol.custom,
                     move_seconds=move_seconds(protocol))


def _public_spec(spec: str, protocol: Protocol) -> str:
    """A rung's spec as the protocol writes it (its frozen file relative to the protocol folder)."""
    folder = protocol.folder.resolve()
    return spec.replace(str(folder) + "/", "").replace(str(folder.parent) + "/", "../")


__all__ = ["MOVE_SECONDS", "RUN_FILE", "LadderInterrupted", "agent_file", "make_scorecard", "move_seconds", "score"]
