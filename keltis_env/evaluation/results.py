"""The evaluation's results: one game's (:class:`GameResult`), one agent's totals
(:class:`AgentStats`) and the whole evaluation's (:class:`EvaluationResult`: its summary,
JSON and CSV), and :func:`aggregate`, which makes them from finished games."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import check_integer
from .ratings import plackett_luce_ratings
from .stats import mean_interval, wilson_interval


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
    forfeit: int | None = None  # the seat that lost the game on time (end "time"), if one did

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
    time_forfeits: int = 0  # games this agent lost on time (over the per-move limit)

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
        from keltis_env.core.recorded_paths import recorded_text

        ci = self.mean_score_ci
        return {
            "agent": self.index,
            "spec": recorded_text(self.spec),  # a result file is read elsewhere: no machine's absolute path
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
            "time_forfeits": self.time_forfeits,
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

    def finished(self, agent: int) -> dict[str, Any]:
        """Agent ``agent``'s win rate over the games that ended by the rules (R8), the games
        cut at ``max_turns`` counted apart: ``{"games", "wins", "win_rate", "win_rate_ci",
        "truncated_games", "truncated_wins"}``. In the card game a truncated game is a loop of
        discards and take-backs; a lead that comes from such games is not a lead in play."""
        done = [r for r in self.results if not r.truncated]
        cut = [r for r in self.results if r.truncated]
        wins = sum(r.shares[r.seat_of(agent)] for r in done)
        return {
            "games": len(done),
            "wins": wins,
            "win_rate": wins / len(done) if done else 0.0,
            "win_rate_ci": list(wilson_interval(wins, len(done))),
            "truncated_games": len(cut),
            "truncated_wins": sum(r.shares[r.seat_of(agent)] for r in cut),
        }

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
            "finished": [self.finished(a.index) for a in self.agents],
            "end_reasons": self.end_reasons(),
            "time_forfeits": sum(a.time_forfeits for a in self.agents),
            "ratings": self.ratings,
            "ties_counting": "a k-way tie for the highest score gives each tied agent 1/k win",
            "partial": self.partial,
            "planned_games": self.planned_games if self.planned_games is not None else self.games,
            "options": self.options,
        }

    def write_json(self, path: str | Path) -> None:
        """The summary as JSON, written atomically (a temporary file, then a rename)."""
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")

    def write_csv(self, path: str | Path) -> None:
        """One row per game; per agent: its spec, seat, score and win share. Written
        atomically, like :meth:`write_json`."""
        from keltis_env.core.output_files import atomic_write_text

        header = ["game", "deal", "rotation", "seed", "turns", "end", "truncated", "forfeit_seat"]
        for i in range(self.num_players):
            header += [f"agent{i}", f"agent{i}_seat", f"agent{i}_score", f"agent{i}_win"]
        out = io.StringIO(newline="")
        writer = csv.writer(out)
        writer.writerow(header)
        for r in self.results:
            row: list[Any] = [r.index, r.deal, r.rotation, r.seed, r.turns, r.end, int(r.truncated),
                              "" if r.forfeit is None else r.forfeit]
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
        w = max(28, 2 + max((len(a.label) for a in self.agents), default=0))  # long specs (py:path/file.py:NAME)
        lines += [
            "",
            f"{'agent':<{w}}{'games':>6}{'wins':>9}{'win rate':>10}  {'95% CI':<15}{'mean score':>11}  "
            f"{'95% CI':<15}{'ms/dec':>8}",
        ]
        for a in self.agents:
            lo, hi = a.win_rate_ci
            ci = a.mean_score_ci
            score_ci = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci is not None else "-"
            lines.append(
                f"{a.label:<{w}}{a.games:>6}{a.wins:>9.1f}{a.win_rate:>10.3f}  [{lo:.3f}, {hi:.3f}] "
                f"{a.mean_score:>11.2f}  {score_ci:<15}{a.ms_per_decision:>8.2f}"
            )
        ends = ", ".join(f"{k} {v}" for k, v in sorted(self.end_reasons().items()))
        lines += [
            "",
            f"mean game length {self.mean_turns:.1f} turns; truncated {100 * self.truncation_rate:.1f}%; ends: {ends}",
            "ties: a k-way tie for the highest score counts 1/k win for each tied agent",
        ]
        forfeits = [a for a in self.agents if a.time_forfeits]
        if forfeits:
            lost = ", ".join(f"{a.label} {a.time_forfeits}" for a in forfeits)
            lines.append(f"lost on time (a move over the per-move limit; counted as losses above): {lost}")
        if any(r.truncated for r in self.results):
            cut = sum(r.truncated for r in self.results)
            lines.append(f"the {self.games - cut} games that ended by the rules, the {cut} truncated ones apart:")
            for a in self.agents:
                f = self.finished(a.index)
                lo, hi = f["win_rate_ci"]
                lines.append(f"  {a.label:<{w}}win rate {f['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] over {f['games']} "
                             f"games; {f['truncated_wins']:.1f} wins in the {cut} truncated")
        if self.options:
            lines.append("game options: " + ", ".join(f"{k}={v}" for k, v in self.options.items()))
        if self.ratings:
            lines += ["", "openskill (Plackett-Luce) ratings:", f"{'agent':<{w}}{'mu':>8}{'sigma':>8}{'ordinal':>9}"]
            for r in sorted(self.ratings, key=lambda x: -x["ordinal"]):
                lines.append(f"{r['label']:<{w}}{r['mu']:>8.2f}{r['sigma']:>8.2f}{r['ordinal']:>9.2f}")
        return "\n".join(lines)


def _fmt_share(x: float) -> str:
    return f"{x:.6g}"


def _labels(specs: Sequence[str]) -> list[str]:
    labels = []
    for i, spec in enumerate(specs):
        labels.append(spec if specs.count(spec) == 1 else f"{spec} #{specs[:i + 1].count(spec)}")
    return labels


def aggregate(
    agent_specs: Sequence[str], results: Sequence[GameResult], game: str = "keltis", seed: int = 0,
    deals: int | None = None, planned_games: int | None = None, options: dict[str, Any] | None = None
) -> EvaluationResult:
    """Per-agent totals, intervals and ratings from finished games (in any order).
    ``planned_games``: how many games the evaluation set out to play (the result is
    ``partial`` when fewer are given); ``deals`` defaults to the deals the games belong to."""
    seed = check_integer(seed, "seed")
    if deals is not None:
        deals = check_integer(deals, "deals", minimum=0)
    if planned_games is not None:
        planned_games = check_integer(planned_games, "planned_games", minimum=0)
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
            if r.forfeit == seat:
                a.time_forfeits += 1
    ratings = plackett_luce_ratings(ordered, labels) if len(set(specs)) >= 3 else None
    if deals is None:
        deals = len({r.deal for r in ordered})
    return EvaluationResult(specs, game, seed, deals, ordered, agents, ratings, planned_games, dict(options or {}))


__all__ = ["AgentStats", "EvaluationResult", "GameResult", "aggregate"]
