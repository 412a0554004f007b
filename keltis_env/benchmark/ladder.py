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

Seeds an agent cannot use to rebuild a deal: the track's deals are public, and so are the
seeds of the package's bots (derived from the track's seed, the deal and the seating), so a
``py:`` agent gets its seeds under a secret drawn when the run starts
(:func:`~keltis_env.evaluation.play.keyed_seed`), kept in the run folder
(:data:`SECRET_FILE`) and revealed in the scorecard. With ``private_deals`` the deals
themselves are dealt from a seed drawn from the operating system's randomness: the run
announces the commitment (the SHA-256 of the deal seeds) before the first game and the
scorecard reveals the seed (docs/benchmark.md: the trust model).
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from keltis_env.bots import agent_file
from keltis_env.evaluation import GameResult, aggregate, mean_interval
from keltis_env.evaluation.errors import EvaluationError, check_integer
from keltis_env.evaluation.play import (
    Terminated,
    deal_commitment,
    deal_seeds,
    new_secret,
    private_seed,
    sigterm_interrupts,
    user_code,
)
from keltis_env.evaluation.store import RUN_FILE, hold_run_folder

from .games import check_specs, load_games, play_table, table_tasks
from .protocol import BenchmarkError, Protocol, Track, load_protocol, sha256_file
from .rating import Outcome, fit_rating
from .scorecard import RungResult, Scorecard

RUN_KIND = "keltis-ladder-run"
#: the run folder's file of the run's secrets: the key of a ``py:`` agent's seeds and the
#: seed of private deals (both revealed in the scorecard at the end)
SECRET_FILE = "secret.json"


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


def _identity(protocol: Protocol, track: Track, agent: str, agent_sha: str | None, quick: bool,
              private: bool = False) -> dict[str, Any]:
    return {"kind": RUN_KIND, "protocol": protocol.version, "protocol_sha256": protocol.sha256, "track": track.name,
            "agent": agent, "agent_sha256": agent_sha, "quick": quick, **({"private_deals": True} if private else {})}


def _kept_private(folder: Path) -> bool:
    """Whether the run kept in ``folder`` plays private deals (its ``run.json`` says so)."""
    try:
        kept = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # reported by the resume's own check
    return isinstance(kept, dict) and kept.get("private_deals") is True


def _run_secrets(folder: Path | None, resume: bool, private: bool) -> tuple[bytes | None, int | None]:
    """The key of a ``py:`` agent's seeds and the seed of private deals (``None``: the
    track's): new ones for a new run (written to the run folder, if any), the kept ones for a
    resumed run (a folder of an earlier release has none: its games went on as they began)."""
    if resume and folder is not None:
        path = folder / SECRET_FILE
        if not path.is_file():
            if private:
                raise BenchmarkError(f"--resume {folder}: its private deals' seed ({SECRET_FILE}) is missing; the run "
                                     "cannot go on with the same deals")
            return None, None
        try:
            kept = json.loads(path.read_text(encoding="utf-8"))
            key = bytes.fromhex(kept["agent_key"])
            seed = kept.get("seed")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BenchmarkError(f"--resume {folder}: cannot read {path}: {exc}") from None
        if private and not isinstance(seed, int):
            raise BenchmarkError(f"--resume {folder}: {path} holds no seed of the private deals")
        return key, seed if private else None
    key, seed = new_secret(), private_seed() if private else None
    if folder is not None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(folder / SECRET_FILE, json.dumps({"agent_key": key.hex(), "seed": seed}) + "\n")
    return key, seed


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


#: what a rung's move takes, by the kind of its spec (milliseconds per decision, from the
#: rungs' own scorecards in benchmarks/results on a two-core machine; ismcts: the card game's,
#: about twice the dice game's, so the estimate errs long): the ladder's estimate of its time
#: before it starts (:func:`expected_seconds`)
RUNG_MS_PER_DECISION: dict[str, float] = {
    "random": 0.005, "heuristic": 0.1, "planner": 0.25, "ppo": 1.0, "rllib": 0.5, "ismcts": 70.0,
}


def _decisions_per_game(game: str, players: int, games: int = 3) -> float:
    """The mean decisions of a game between random players (a few games on the Python engine)."""
    import random

    from keltis_env.core.game import get_game

    spec = get_game(game)
    total = 0
    for seed in range(games):
        state = spec.new_state(spec.make_config(num_players=players), seed)
        rng = random.Random(seed)
        while not state.is_over:
            state.apply(rng.choice(state.legal_actions()))
            total += 1
    return total / games


def expected_seconds(track: Track, rungs: Sequence[str], quick: bool, workers: int) -> float | None:
    """About how long the rungs' own moves take over the run's games on ``workers`` workers
    (:data:`RUNG_MS_PER_DECISION`; the agent's moves come on top); ``None`` when a rung's kind
    of spec has no figure."""
    decisions = _decisions_per_game(track.game, track.players)
    total = 0.0
    for name in rungs:
        kind = track.rungs[name].split(":", 1)[0]
        ms = RUNG_MS_PER_DECISION.get(kind)
        if ms is None:
            return None
        share = (track.players - 1) / track.players  # the rung's seats of every game
        total += track.games_for(quick) * decisions * share * ms / 1000
    return total / max(1, workers)


def duration_text(seconds: float) -> str:
    """``seconds`` as a person says it: ``40 s``, ``12 min``, ``3 h 10 min``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def score(agent: str, track: str, rungs: Sequence[str] | None = None, quick: bool = False, workers: int = 2,
          protocol: Protocol | str | Path | None = None, out: str | Path | None = None, resume: bool = False,
          progress: bool = True, command: str | None = None, private_deals: bool = False,
          started: Callable[[dict[str, Any]], None] | None = None) -> Scorecard:
    """Score the agent spec ``agent`` (anything :func:`keltis_env.bots.make_bot` makes) on
    ``track`` (``"keltis-2p"``, ...) of ``protocol`` (default: the shipped ``v1``).

    ``rungs`` limits the run to some rungs (e.g. ``["heuristic", "planner"]``); the rating
    is then fitted to those. ``quick`` plays the protocol's quick deals (the scorecard says
    so). ``out``: a folder that keeps the finished games (new or empty; with
    ``resume=True``, the folder of an earlier run of the same agent, track and ``quick``,
    which is continued). ``command`` is recorded in the scorecard. ``private_deals``: deals
    dealt from a seed drawn from the operating system's randomness instead of the track's
    (a resumed run keeps its own); ``started`` is called before the first game with what
    the run announces: ``{"deals": N, "commitment": "sha256:..."}`` for private deals, else
    ``{"deals": N}``. Every argument is checked, and every spec made once, before any game
    is played; :class:`BenchmarkError` names what is wrong. Ctrl-C raises
    :class:`LadderInterrupted`.
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
    if resume and folder is not None and _kept_private(folder):
        private_deals = True
    if folder is not None:
        _open_run(folder, _identity(proto, tr, agent, agent_sha, quick, private_deals), resume)
    agent_key, private = _run_secrets(folder, resume, private_deals)
    seed = private if private is not None else tr.seed
    deals = tr.deals_for(quick)
    done: dict[str, list[GameResult]] = {}
    limit = move_seconds(proto)
    for name in names:
        tasks = table_tasks(tr.table(agent, name), tr.game, seed, deals, limit, tr.ppo_forward, agent_key)
        done[name] = load_games(folder / f"{name}.jsonl", tasks) if folder is not None else []
    revealed = None
    if private is not None:
        revealed = {"seed": private, "commitment": deal_commitment(private, deals),
                    "deal_seeds": deal_seeds(private, deals)}
    keyed = agent_key.hex() if agent_key is not None and user_code(agent) else None
    if started is not None:
        left = tr.games_for(quick) * len(names) - sum(len(g) for g in done.values())
        started({"deals": deals, "games": left, "seconds": expected_seconds(tr, names, quick, workers),
                 **({"commitment": revealed["commitment"]} if revealed else {})})

    def card() -> Scorecard:
        return make_scorecard(proto, tr, agent, agent_sha, quick, done, command, seed, revealed, keyed)

    total = tr.games_for(quick) * len(names)
    try:
        with contextlib.ExitStack() as held:
            if folder is not None:
                held.enter_context(hold_run_folder(folder, "the ladder's run folder", BenchmarkError))
            _play_rungs(tr, agent, names, deals, workers, folder, done, limit, total, progress, seed, agent_key)
    except KeyboardInterrupt as stop:
        signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
        raise LadderInterrupted(card(), signum) from None
    return card()


def _play_rungs(tr: Track, agent: str, names: Sequence[str], deals: int, workers: int, folder: Path | None,
                done: dict[str, list[GameResult]], limit: float, total: int, progress: bool, seed: int,
                agent_key: bytes | None) -> None:
    """Play the missing games of every rung in ladder order, keeping them in ``folder``."""
    from tqdm import tqdm

    with sigterm_interrupts(), tqdm(total=total, initial=sum(len(g) for g in done.values()), unit="game",
                                    desc="ladder", disable=not progress, leave=False) as bar:
        for name in names:
            bar.set_description(f"ladder {name}")
            store = folder / f"{name}.jsonl" if folder is not None else None
            play_table(tr.table(agent, name), tr.game, seed, deals, workers, store,
                       lambda _: bar.update(1), done[name], limit, tr.ppo_forward, agent_key)


def make_scorecard(protocol: Protocol, track: Track, agent: str, agent_sha: str | None, quick: bool,
                   games: dict[str, list[GameResult]], command: str | None = None, seed: int | None = None,
                   private_deals: dict[str, Any] | None = None, agent_seed_key: str | None = None) -> Scorecard:
    """The scorecard of finished games (rung -> games, in any order), dealt from ``seed``
    (default: the track's; private deals are revealed by ``private_deals``)."""
    seed = track.seed if seed is None else seed
    from keltis_env import __version__
    from keltis_env.core.recorded_paths import recorded_text

    from .rating import RatingError

    rows = []
    outcomes = []
    for name, results in games.items():
        specs = track.table(agent, name)
        stats = aggregate(specs, results, game=track.game, seed=seed).agents[0]
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
                     seed, recorded_text(agent), agent_sha, quick, rows, fitted,
                     None if command is None else recorded_text(command), custom_protocol=protocol.custom,
                     move_seconds=move_seconds(protocol), private_deals=private_deals,
                     agent_seed_key=agent_seed_key)


def _public_spec(spec: str, protocol: Protocol) -> str:
    """A rung's spec as the protocol writes it (its frozen file relative to the protocol folder)."""
    folder = protocol.folder.resolve()
    return spec.replace(str(folder) + "/", "").replace(str(folder.parent) + "/", "../")


__all__ = [
    "MOVE_SECONDS",
    "RUNG_MS_PER_DECISION",
    "RUN_FILE",
    "SECRET_FILE",
    "LadderInterrupted",
    "agent_file",
    "duration_text",
    "expected_seconds",
    "make_scorecard",
    "move_seconds",
    "score",
]
