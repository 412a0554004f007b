"""Head-to-head evaluation of agents with duplicate deals and seat rotation.

``evaluate(["ismcts", "heuristic"], games=400, seed=0)`` plays 400 games and returns an
:class:`EvaluationResult`. An *agent* is a bot spec for :func:`keltis_env.bots.make_bot`
(``"random"``, ``"heuristic"``, ``"ismcts:iterations=400"``, ``"ppo:PATH"``); the number
of agents is the number of players (2-4); the same spec may appear more than once
(``["heuristic", "random", "random", "random"]``), each copy being its own agent.

Duplicate deals
    Each *deal* is a game seed. A deal is played once per seating: in rotation ``r``
    agent ``i`` sits at seat ``(i + r) % n``, so over a deal every agent plays every seat
    exactly once with the same cards, tiles and first player, and the luck of the deal
    cancels out. ``games`` is rounded up to a whole number of deals (a multiple of the
    number of agents). Deal seeds come from ``seed`` alone.

Counting
    A game's victory is shared as :func:`keltis_env.core.rewards.win_shares` shares it: a sole
    winner gets 1 win, each of ``k`` players tied for the highest score gets ``1/k``.
    ``win_rate`` is wins / games with a 95% Wilson score interval (:func:`wilson_interval`);
    ``mean_score`` has a 95% normal interval, mean +/- 1.96 sample standard deviations /
    sqrt(games) (:func:`mean_interval`). The intervals treat games as independent; duplicate
    deals make the games of a deal negatively correlated for the agents' comparison, so
    the intervals are, if anything, conservative. A truncated game (R8) counts from the
    standings at its cut, like the environments' rewards. With three or more distinct
    specs, agents are also rated with openskill's Plackett-Luce model, one update per game
    in game order.

Reproducibility
    Bots are made with ``make_bot(spec, seed=...)`` inside the worker processes (specs
    travel, never bots); each worker makes one bot per agent and re-seeds it with
    :meth:`~keltis_env.bots.base.Bot.seed` before every game, from a seed derived from
    ``seed``, the deal, the rotation and the agent. A bot must therefore keep no state
    between games besides its random generator. The games, and so every result except
    the measured decision times, are identical for a given seed whatever the number of
    workers.

Interruption
    Ctrl-C (``KeyboardInterrupt``) during :func:`evaluate` stops the worker processes (they
    ignore SIGINT themselves and are terminated by the main process) and raises
    :class:`EvaluationInterrupted`, a ``KeyboardInterrupt`` that carries the games finished
    so far as an :class:`EvaluationResult` marked ``partial``. Game records of unfinished
    games are removed, so ``records_dir`` holds exactly the finished games.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import multiprocessing
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIN_PLAYERS = 2
MAX_PLAYERS = 4
Z95 = 1.959963984540054  # two-sided 95% standard normal quantile


class EvaluationError(ValueError):
    """Bad arguments for an evaluation (agent specs, counts, options, output paths)."""


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an evaluation; ``result`` holds the games finished before it
    (``result.partial`` is true)."""

    def __init__(self, result: EvaluationResult) -> None:
        super().__init__(f"evaluation interrupted after {result.games} of {result.planned_games} games")
        self.result = result


# ---------------------------------------------------------------------- statistics
def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (``successes`` may be
    fractional, as shared wins are). ``(0.0, 1.0)`` when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0))
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float] | None:
    """``mean +/- z * s / sqrt(n)`` with the sample standard deviation ``s`` (n - 1 in the
    denominator); ``None`` with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return mean - half, mean + half


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs, platforms and processes)."""
    text = "/".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 1


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class GameResult:
    """One game: who sat where and how it ended. Per-seat lists are indexed by seat."""

    index: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[int, ...]  # seats[s] = index of the agent at seat s
    scores: tuple[int, ...]
    shares: tuple[float, ...]  # win shares (R9 ties shared)
    turns: int
    end: str
    truncated: bool
    decisions: tuple[int, ...]
    think_seconds: tuple[float, ...]

    def seat_of(self, agent: int) -> int:
        return self.seats.index(agent)


@dataclass
class AgentStats:
    """Totals of one agent over all games."""

    index: int
    spec: str
    label: str
    games: int = 0
    wins: float = 0.0
    scores: list[int] = field(default_factory=list)
    seat_games: list[int] = field(default_factory=list)
    decisions: int = 0
    think_seconds: float = 0.0

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def win_rate_ci(self) -> tuple[float, float]:
        return wilson_interval(self.wins, self.games)

    @property
    def mean_score(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0

    @property
    def mean_score_ci(self) -> tuple[float, float] | None:
        return mean_interval(self.scores)

    @property
    def ms_per_decision(self) -> float:
        return 1000.0 * self.think_seconds / self.decisions if self.decisions else 0.0

    def to_dict(self) -> dict[str, Any]:
        ci = self.mean_score_ci
        return {
            "agent": self.index,
            "spec": self.spec,
            "label": self.label,
            "games": self.games,
            "wins": self.wins,
            "win_rate": self.win_rate,
            "win_rate_ci": list(self.win_rate_ci),
            "mean_score": self.mean_score,
            "mean_score_ci": list(ci) if ci is not None else None,
            "seat_games": self.seat_games,
            "decisions": self.decisions,
            "ms_per_decision": self.ms_per_decision,
        }


@dataclass
class EvaluationResult:
    """Everything an evaluation measured; ``to_dict`` gives the JSON form."""

    agent_specs: list[str]
    game: str
    seed: int
    deals: int
    results: list[GameResult]
    agents: list[AgentStats]
    ratings: list[dict[str, Any]] | None
    #: games the evaluation set out to play; more than ``games`` when it was interrupted
    planned_games: int | None = None
    #: the game's options the games were played with (``max_turns``, a layout, ...), as given
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """The evaluation was interrupted before every planned game was played."""
        return self.planned_games is not None and self.games < self.planned_games

    @property
    def num_players(self) -> int:
        return len(self.agent_specs)

    @property
    def games(self) -> int:
        return len(self.results)

    @property
    def mean_turns(self) -> float:
        return sum(r.turns for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def truncation_rate(self) -> float:
        return sum(r.truncated for r in self.results) / len(self.results) if self.results else 0.0

    def end_reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.results:
            counts[r.end] = counts.get(r.end, 0) + 1
        return counts

    def agent(self, spec_or_label: str) -> AgentStats:
        """The first agent with this label or spec."""
        for a in self.agents:
            if spec_or_label in (a.label, a.spec):
                return a
        raise KeyError(f"no agent {spec_or_label!r}; agents are {[a.label for a in self.agents]}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": self.game,
            "players": self.num_players,
            "seed": self.seed,
            "games": self.games,
            "deals": self.deals,
            "agents": [a.to_dict() for a in self.agents],
            "mean_turns": self.mean_turns,
            "truncation_rate": self.truncation_rate,
            "end_reasons": self.end_reasons(),
            "ratings": self.ratings,
            "ties_counting": "a k-way tie for the highest score gives each tied agent 1/k win",
            "partial": self.partial,
            "planned_games": self.planned_games if self.planned_games is not None else self.games,
            "options": self.options,
        }

    def write_json(self, path: str | Path) -> None:
        """The summary as JSON, written atomically (a temporary file, then a rename)."""
        from keltis_env.core.files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    def write_csv(self, path: str | Path) -> None:
        """One row per game; per agent: its spec, seat, score and win share. Written
        atomically, like :meth:`write_json`."""
        from keltis_env.core.files import atomic_write_text

        header = ["game", "deal", "rotation", "seed", "turns", "end", "truncated"]
        for i in range(self.num_players):
            header += [f"agent{i}", f"agent{i}_seat", f"agent{i}_score", f"agent{i}_win"]
        out = io.StringIO(newline="")
        writer = csv.writer(out)
        writer.writerow(header)
        for r in self.results:
            row: list[Any] = [r.index, r.deal, r.rotation, r.seed, r.turns, r.end, int(r.truncated)]
            for i, spec in enumerate(self.agent_specs):
                s = r.seat_of(i)
                row += [spec, s, r.scores[s], _fmt_share(r.shares[s])]
            writer.writerow(row)
        atomic_write_text(path, out.getvalue())

    def summary(self) -> str:
        """A readable report: the per-agent table, game statistics and ratings."""
        if self.partial:
            lines = [
                f"{self.game}: PARTIAL RESULT, interrupted after {self.games} of {self.planned_games} games, "
                f"seed {self.seed}",
                "(a deal not yet played in every seating does not cancel the luck of the deal)",
            ]
        else:
            lines = [
                f"{self.game}: {self.games} games ({self.deals} deals x {self.num_players} seatings), seed {self.seed}"
            ]
        lines += [
            "",
            f"{'agent':<28}{'games':>6}{'wins':>9}{'win rate':>10}  {'95% CI':<15}{'mean score':>11}  "
            f"{'95% CI':<15}{'ms/dec':>8}",
        ]
        for a in self.agents:
            lo, hi = a.win_rate_ci
            ci = a.mean_score_ci
            score_ci = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci is not None else "-"
            lines.append(
                f"{a.label:<28}{a.games:>6}{a.wins:>9.1f}{a.win_rate:>10.3f}  [{lo:.3f}, {hi:.3f}] "
                f"{a.mean_score:>11.2f}  {score_ci:<15}{a.ms_per_decision:>8.2f}"
            )
        ends = ", ".join(f"{k} {v}" for k, v in sorted(self.end_reasons().items()))
        lines += [
            "",
            f"mean game length {self.mean_turns:.1f} turns; truncated {100 * self.truncation_rate:.1f}%; ends: {ends}",
            "ties: a k-way tie for the highest score counts 1/k win for each tied agent",
        ]
        if self.options:
            lines.append("game options: " + ", ".join(f"{k}={v}" for k, v in self.options.items()))
        if self.ratings:
            lines += ["", "openskill (Plackett-Luce) ratings:", f"{'agent':<28}{'mu':>8}{'sigma':>8}{'ordinal':>9}"]
            for r in sorted(self.ratings, key=lambda x: -x["ordinal"]):
                lines.append(f"{r['label']:<28}{r['mu']:>8.2f}{r['sigma']:>8.2f}{r['ordinal']:>9.2f}")
        return "\n".join(lines)


def _fmt_share(x: float) -> str:
    return f"{x:.6g}"


# ---------------------------------------------------------------------- playing
@dataclass(frozen=True)
class _Task:
    index: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[int, ...]
    bot_seeds: tuple[int, ...]  # by agent
    specs: tuple[str, ...]
    game: str
    options: dict[str, Any]  # the game's options besides num_players
    records: str | None


_BOTS: dict[tuple[str, str, int, int], Any] = {}  # per process: (game, spec, agent, players) -> bot


def _bot(game: str, spec: str, agent: int, num_players: int) -> Any:
    from keltis_env.bots import make_bot

    key = (game, spec, agent, num_players)
    if key not in _BOTS:
        _BOTS[key] = make_bot(spec, seed=0, game=game, num_players=num_players)
    return _BOTS[key]


def _play(task: _Task) -> GameResult:
    from keltis_env.core.errors import ActionError
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    spec = get_game(task.game)
    n = len(task.specs)
    config = spec.make_config(num_players=n, **task.options)
    bots = []
    for seat in range(n):
        agent = task.seats[seat]
        bot = _bot(task.game, task.specs[agent], agent, n)
        bot.seed(task.bot_seeds[agent])
        bots.append(bot)
    match = Match(spec, spec.new_state(config, task.seed), bots, record=task.records is not None)
    try:
        result = match.run()
    except ActionError as exc:  # the match loop changed nothing: the offender is still to move
        agent = task.seats[match.to_move]
        raise EvaluationError(f"agent {agent} ({task.specs[agent]}) chose an illegal action: {exc}") from exc
    if task.records is not None:
        record = spec.record_cls(
            config=config, seed=task.seed, actions=list(result.actions), players=[task.specs[a] for a in task.seats]
        )
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
    )


def _tasks(specs: Sequence[str], deals: int, seed: int, game: str, options: dict[str, Any],
           records: str | None) -> list[_Task]:
    n = len(specs)
    out = []
    for deal in range(deals):
        deal_seed = derive_seed(seed, "deal", deal)
        for rotation in range(n):
            # agent i sits at seat (i + rotation) % n, so seats[s] = (s - rotation) % n
            seats = tuple((s - rotation) % n for s in range(n))
            bot_seeds = tuple(derive_seed(seed, "bot", deal, rotation, i) for i in range(n))
            out.append(_Task(len(out), deal, rotation, deal_seed, seats, bot_seeds, tuple(specs), game, options,
                             records))
    return out


def _ignore_sigint() -> None:
    """Worker start-up: Ctrl-C in a terminal reaches every process of the group; the
    main process alone handles it and terminates the workers (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
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


def _run(tasks: list[_Task], workers: int) -> Iterator[GameResult]:
    """The games' results as they finish. Closing the iterator (or an exception in it,
    such as Ctrl-C) terminates the worker processes before it returns."""
    if workers <= 1 or len(tasks) <= 1:
        _BOTS.clear()  # a spec's file (ppo:PATH) may have changed since the last call
        try:
            for t in tasks:
                yield _play(t)
        finally:
            _BOTS.clear()
        return
    # spawn, not fork: the caller may hold threads (torch during training).
    ctx = multiprocessing.get_context("spawn")
    with _sigint_ignored():  # the workers start with SIGINT ignored (inherited), before any import
        pool = ctx.Pool(min(workers, len(tasks)), initializer=_ignore_sigint)
    try:
        yield from pool.imap_unordered(_play, tasks, chunksize=1)
        pool.close()
    finally:
        pool.terminate()  # a no-op for workers that finished; stops the others mid-game
        pool.join()


_RECORD_FILE = re.compile(r"\.?game_(\d+)\.json")  # a game's record, or a temporary file of one


def _check_records_dir(records_dir: str | Path) -> Path:
    """The records folder, created if missing; it must hold no game records yet, so that
    it ends up holding exactly this evaluation's games."""
    from keltis_env.core.files import OutputPathError, check_output_dir

    try:
        folder = check_output_dir(records_dir, "the game records folder")
    except OutputPathError as exc:
        raise EvaluationError(str(exc)) from None
    if any(_RECORD_FILE.match(p.name) for p in folder.iterdir()):
        raise EvaluationError(
            f"the game records folder {folder} already holds game records (game_*.json); give a new or empty folder"
        )
    return folder


def _remove_unfinished_records(folder: Path, finished: Sequence[GameResult]) -> None:
    """Delete the records (and temporary files) of games that did not finish: an
    interrupted game's record may be half written."""
    done = {r.index for r in finished}
    for path in folder.iterdir():
        match = _RECORD_FILE.match(path.name)
        if match is not None and (path.name.startswith(".") or int(match.group(1)) not in done):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _labels(specs: Sequence[str]) -> list[str]:
    labels = []
    for i, spec in enumerate(specs):
        labels.append(spec if specs.count(spec) == 1 else f"{spec} #{specs[:i + 1].count(spec)}")
    return labels


def check_agents(agent_specs: Sequence[str], game: str = "keltis") -> None:
    """Raise :class:`EvaluationError` for an unknown game, a wrong number of agents or a
    bad spec (every spec is made once, so a missing policy file is found here, before any
    game is played)."""
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
    for spec in dict.fromkeys(agent_specs):
        if not isinstance(spec, str) or not spec.strip():
            raise EvaluationError(f"an agent spec must be a non-empty string, got {spec!r}")
        try:
            make_bot(spec, seed=0, game=game, num_players=n)
        except (ValueError, TypeError, ImportError, OSError) as exc:
            raise EvaluationError(f"bad agent spec {spec!r}: {exc}") from None


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
) -> EvaluationResult:
    """Play ``games`` games (rounded up to whole deals) between the agents; see the module doc.

    ``workers`` processes play the games (1: in this process). They are started with the
    ``spawn`` method (safe when the caller holds threads, as torch does), so a script that
    calls this with ``workers > 1`` needs the usual ``if __name__ == "__main__":`` guard.
    ``max_turns`` overrides the game's truncation limit; ``options`` are the game's other
    options (``{"tile_layout": "random"}``, ``{"bonus_layout": "random"}``: those a training
    run's ``env.options`` holds). ``records_dir``, when given, receives one game record per
    game (``game_00000.json``, ...), replayable with ``keltis replay``; it is created if missing and must not hold
    game records yet. Every argument is checked before any game is played.

    Ctrl-C raises :class:`EvaluationInterrupted` (a ``KeyboardInterrupt``) carrying the finished games as a
    ``partial`` result, once the workers are stopped; the records of unfinished games are removed.
    """
    check_agents(agent_specs, game)
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise EvaluationError(f"games must be a positive integer, got {games!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise EvaluationError(f"workers must be a positive integer, got {workers!r}")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
        raise EvaluationError(f"max_turns must be a positive integer, got {max_turns!r}")
    specs = list(agent_specs)
    n = len(specs)
    played = _check_options(game, n, options, max_turns)
    deals = -(-games // n)
    folder = _check_records_dir(records_dir) if records_dir is not None else None
    tasks = _tasks(specs, deals, seed, game, played, str(folder) if folder is not None else None)
    from tqdm import tqdm

    results: list[GameResult] = []
    try:
        with (
            contextlib.closing(_run(tasks, workers)) as finished,
            tqdm(total=len(tasks), desc="evaluate", unit="game", disable=not progress, leave=False) as bar,
        ):
            for r in finished:
                results.append(r)
                bar.update(1)
    except KeyboardInterrupt:
        # the workers are stopped (closing _run terminates them), so no record changes now
        if folder is not None:
            _remove_unfinished_records(folder, results)
        partial = aggregate(specs, results, game=game, seed=seed, planned_games=len(tasks), options=played)
        raise EvaluationInterrupted(partial) from None
    return aggregate(specs, results, game=game, seed=seed, deals=deals, planned_games=len(tasks), options=played)


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


def aggregate(
    agent_specs: Sequence[str], results: Sequence[GameResult], game: str = "keltis", seed: int = 0,
    deals: int | None = None, planned_games: int | None = None, options: dict[str, Any] | None = None
) -> EvaluationResult:
    """Per-agent totals, intervals and ratings from finished games (in any order).
    ``planned_games``: how many games the evaluation set out to play (the result is
    ``partial`` when fewer are given); ``deals`` defaults to the deals the games belong to."""
    specs = list(agent_specs)
    n = len(specs)
    ordered = sorted(results, key=lambda r: r.index)
    labels = _labels(specs)
    agents = [AgentStats(i, spec, labels[i], seat_games=[0] * n) for i, spec in enumerate(specs)]
    for r in ordered:
        for seat, i in enumerate(r.seats):
            a = agents[i]
            a.games += 1
            a.wins += r.shares[seat]
            a.scores.append(r.scores[seat])
            a.seat_games[seat] += 1
            a.decisions += r.decisions[seat]
            a.think_seconds += r.think_seconds[seat]
    ratings = _ratings(ordered, labels) if len(set(specs)) >= 3 else None
    if deals is None:
        deals = len({r.deal for r in ordered})
    return EvaluationResult(specs, game, seed, deals, ordered, agents, ratings, planned_games, dict(options or {}))


def _ratings(results: list[GameResult], labels: list[str]) -> list[dict[str, Any]]:
    """openskill Plackett-Luce ratings, one update per game, in game order."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    current = [model.rating(name=label) for label in labels]
    for r in results:
        teams = [[current[i]] for i in r.seats]
        updated = model.rate(teams, scores=[float(s) for s in r.scores])
        for seat, i in enumerate(r.seats):
            current[i] = updated[seat][0]
    return [
        {"label": label, "mu": rt.mu, "sigma": rt.sigma, "ordinal": rt.ordinal()}
        for label, rt in zip(labels, current, strict=True)
    ]


__all__ = [
    "AgentStats",
    "EvaluationError",
    "EvaluationInterrupted",
    "EvaluationResult",
    "GameResult",
    "aggregate",
    "check_agents",
    "derive_seed",
    "evaluate",
    "mean_interval",
    "wilson_interval",
]
