"""The scorecard of an agent on a track: per rung its win rate with a 95% interval, its
mean score margin and its time per decision, and one rating on the track's fixed scale.

JSON form (:meth:`Scorecard.to_dict`, schema 1)::

    {"kind": "keltis-ladder-scorecard", "schema": 1,
     "protocol": "v1", "protocol_sha256": "...", "package_version": "0.2.0",
     "track": "keltis-2p", "game": "keltis", "players": 2, "seed": 2101,
     "agent": "ppo:my.zip", "agent_sha256": "..." | null,
     "quick": false, "partial": false, "command": "keltis ladder ..." | null,
     "rating": {"value": 812.3, "ci": [771.0, 853.9], "bound": null} | null,
     "rungs": [{"rung": "random", "spec": "random", "rating": 0.0, "games": 1100,
                "planned_games": 1100, "deals": 550, "wins": 1043.5, "win_rate": 0.9486,
                "win_rate_ci": [0.934, 0.96], "mean_margin": 31.2, "mean_margin_ci": [30.1, 32.3],
                "mean_score": 40.1, "ms_per_decision": 0.21}, ...]}

A run with private deals (``keltis ladder --private-deals``) adds ``"private_deals":
{"seed": S, "commitment": "sha256:...", "deal_seeds": [...]}``: the seed drawn from the
operating system's randomness that the deals were dealt from, revealed at the end, and the
commitment printed when the run started (the SHA-256 of the deal seeds). A run that scored
a ``py:`` agent adds ``"agent_seed_key"``: the secret (hex) under which that agent's seeds
were drawn (:func:`keltis_env.evaluation.play.keyed_seed`), so that its games can be replayed.

``win_rate`` counts a k-way tie for the highest score as 1/k win; ``mean_margin`` is the
agent's score minus the best score of the other players, averaged over games, with a 95%
normal interval. ``ms_per_decision`` is the only field that depends on the machine
(:data:`TIMING_FIELDS`); every other field is the same for any number of workers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rating import Rating

KIND = "keltis-ladder-scorecard"
SCHEMA = 1
#: fields of a rung that are measured times, not results
TIMING_FIELDS = ("ms_per_decision",)

#: the anchor of each shipped protocol's rating scale (benchmarks/VERSION/protocol.yaml's anchor)
SCALES = {"v1": "random = 0", "v2": "heuristic = 1000"}


@dataclass
class RungResult:
    rung: str
    spec: str
    rating: float | None
    games: int
    planned_games: int
    deals: int
    wins: float
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_margin: float
    mean_margin_ci: tuple[float, float] | None
    mean_score: float
    ms_per_decision: float
    time_forfeits: int = 0  # games the agent lost on time (a move over the per-move limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rung": self.rung, "spec": self.spec, "rating": self.rating, "games": self.games,
            "planned_games": self.planned_games, "deals": self.deals, "wins": self.wins,
            "win_rate": round(self.win_rate, 6), "win_rate_ci": [round(x, 6) for x in self.win_rate_ci],
            "mean_margin": round(self.mean_margin, 4),
            "mean_margin_ci": [round(x, 4) for x in self.mean_margin_ci] if self.mean_margin_ci else None,
            "mean_score": round(self.mean_score, 4), "ms_per_decision": round(self.ms_per_decision, 4),
            "time_forfeits": self.time_forfeits,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RungResult:
        margin_ci = d.get("mean_margin_ci")
        return cls(d["rung"], d["spec"], d.get("rating"), d["games"], d["planned_games"], d["deals"], d["wins"],
                   d["win_rate"], tuple(d["win_rate_ci"]), d["mean_margin"],  # type: ignore[arg-type]
                   tuple(margin_ci) if margin_ci else None, d["mean_score"],  # type: ignore[arg-type]
                   d["ms_per_decision"], int(d.get("time_forfeits", 0)))


@dataclass
class Scorecard:
    protocol: str
    protocol_sha256: str
    package_version: str
    track: str
    game: str
    players: int
    seed: int
    agent: str
    agent_sha256: str | None
    quick: bool
    rungs: list[RungResult]
    rating: Rating | None
    command: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: made under an edited copy of a frozen protocol (``protocol`` then reads "v1 (custom, sha256 …)")
    custom_protocol: bool = False
    #: the per-move time limit the games were played with (seconds; None: none recorded)
    move_seconds: float | None = None
    #: private deals: the seed they were dealt from, the commitment and the deal seeds (None: the track's)
    private_deals: dict[str, Any] | None = None
    #: the secret (hex) of a ``py:`` agent's seeds, revealed with the results (None: none was used)
    agent_seed_key: str | None = None

    @property
    def scale(self) -> str:
        """The anchor of the rating's scale, as the text shows it: ``random = 0`` (v1), ``heuristic = 1000`` (v2)."""
        return SCALES.get(self.protocol.split()[0], SCALES["v1"])

    @property
    def partial(self) -> bool:
        """Some rung has fewer games than the protocol plays."""
        return any(r.games < r.planned_games for r in self.rungs)

    def rung(self, name: str) -> RungResult:
        for r in self.rungs:
            if r.rung == name:
                return r
        raise KeyError(f"no rung {name!r} in this scorecard; rungs: {', '.join(r.rung for r in self.rungs)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": KIND, "schema": SCHEMA,
            "protocol": self.protocol, "protocol_sha256": self.protocol_sha256,
            "package_version": self.package_version,
            "track": self.track, "game": self.game, "players": self.players, "seed": self.seed,
            "agent": self.agent, "agent_sha256": self.agent_sha256,
            "quick": self.quick, "partial": self.partial, "command": self.command,
            "rating": self.rating.to_dict() if self.rating is not None else None,
            "rungs": [r.to_dict() for r in self.rungs],
            **({"custom_protocol": True} if self.custom_protocol else {}),
            "move_seconds": self.move_seconds,
            **({"private_deals": self.private_deals} if self.private_deals else {}),
            **({"agent_seed_key": self.agent_seed_key} if self.agent_seed_key else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scorecard:
        if d.get("kind") != KIND or d.get("schema") != SCHEMA:
            raise ValueError(f"not a ladder scorecard of schema {SCHEMA} (kind {d.get('kind')!r}, "
                             f"schema {d.get('schema')!r})")
        return cls(d["protocol"], d["protocol_sha256"], d["package_version"], d["track"], d["game"], d["players"],
                   d["seed"], d["agent"], d.get("agent_sha256"), bool(d["quick"]),
                   [RungResult.from_dict(r) for r in d["rungs"]],
                   Rating.from_dict(d["rating"]) if d.get("rating") else None, d.get("command"),
                   custom_protocol=bool(d.get("custom_protocol", False)), move_seconds=d.get("move_seconds"),
                   private_deals=d.get("private_deals"), agent_seed_key=d.get("agent_seed_key"))

    @classmethod
    def read(cls, path: str | Path) -> Scorecard:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def write_json(self, path: str | Path) -> None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")

    def write_markdown(self, path: str | Path) -> None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(path, self.markdown())

    def markdown(self) -> str:
        """The scorecard as a Markdown section (a heading, the facts, a table per rung)."""
        marks = [m for m, on in (("QUICK", self.quick), ("PARTIAL", self.partial)) if on]
        title = f"## `{self.agent}` on {self.track} (protocol {self.protocol})"
        lines = [
            title + (f": {', '.join(marks)}" if marks else ""),
            "",
            f"- rating: **{self.rating.text() if self.rating else 'not rated'}** (95% interval; {self.scale})",
            f"- package {self.package_version}; protocol file SHA-256 `{self.protocol_sha256[:16]}…`",
        ]
        if self.agent_sha256:
            lines.append(f"- agent file SHA-256 `{self.agent_sha256}`")
        if self.command:
            lines.append(f"- command: `{self.command}`")
        lines += self._limit_lines("- ")
        lines += self._deal_lines("- ")
        lines += [
            "",
            "| rung | rung rating | games | win rate | 95% CI | mean margin | 95% CI | ms/decision |",
            "|---|---:|---:|---:|---|---:|---|---:|",
        ]
        for r in self.rungs:
            games = f"{r.games}" if r.games == r.planned_games else f"{r.games} of {r.planned_games}"
            margin_ci = f"[{r.mean_margin_ci[0]:+.1f}, {r.mean_margin_ci[1]:+.1f}]" if r.mean_margin_ci else "–"
            rating = f"{r.rating:.0f}" if r.rating is not None else "–"
            lines.append(
                f"| {r.rung} | {rating} | {games} | {r.win_rate:.3f} | [{r.win_rate_ci[0]:.3f}, "
                f"{r.win_rate_ci[1]:.3f}] | {r.mean_margin:+.2f} | {margin_ci} | {r.ms_per_decision:.2f} |"
            )
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        """A plain-text report for the terminal."""
        head = f"{self.agent} on {self.track} (protocol {self.protocol}"
        head += ", QUICK" if self.quick else ""
        head += ", PARTIAL: interrupted" if self.partial else ""
        lines = [head + ")", "",
                 f"{'rung':<12}{'rating':>8}{'games':>12}{'win rate':>10}  {'95% CI':<16}{'margin':>8}{'ms/dec':>9}"]
        for r in self.rungs:
            games = f"{r.games}" if r.games == r.planned_games else f"{r.games}/{r.planned_games}"
            rating = f"{r.rating:.0f}" if r.rating is not None else "-"
            lines.append(f"{r.rung:<12}{rating:>8}{games:>12}{r.win_rate:>10.3f}  "
                         f"[{r.win_rate_ci[0]:.3f}, {r.win_rate_ci[1]:.3f}] {r.mean_margin:>+8.2f}"
                         f"{r.ms_per_decision:>9.2f}")
        lines += ["", f"rating: {self.rating.text() if self.rating else 'not rated'} (95% interval; {self.scale})"]
        lines += self._limit_lines("")
        lines += self._deal_lines("")
        return "\n".join(lines)

    def _deal_lines(self, bullet: str) -> list[str]:
        """The private deals revealed, and the key of a ``py:`` agent's seeds, when there were any."""
        lines = []
        if self.private_deals:
            lines.append(f"{bullet}private deals, now revealed: seed {self.private_deals['seed']} "
                         f"(deal d is dealt from derive_seed(seed, 'deal', d)); commitment "
                         f"{self.private_deals['commitment']}")
        if self.agent_seed_key:
            lines.append(f"{bullet}the agent's seeds were keyed with {self.agent_seed_key}")
        return lines

    def _limit_lines(self, bullet: str) -> list[str]:
        """The per-move limit and the games lost on time, when there were any."""
        if self.move_seconds is None:
            return []
        lost = [f"{r.rung} {r.time_forfeits}" for r in self.rungs if r.time_forfeits]
        text = f"{bullet}per-move time limit {self.move_seconds:g} s"
        text += f"; games lost on time (counted as losses): {', '.join(lost)}" if lost else "; no game lost on time"
        return [text]


def comparable(card: dict[str, Any]) -> dict[str, Any]:
    """A scorecard's JSON form without the measured times (what two runs of the same
    agent on the same protocol agree on)."""
    out = dict(card)
    out["rungs"] = [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in card["rungs"]]
    return out


__all__ = ["KIND", "SCHEMA", "TIMING_FIELDS", "RungResult", "Scorecard", "comparable"]
