"""Evaluation during training: a policy file against fixed opponents, for the periodic and
final reports of a run (:class:`OpponentResult`, not to be confused with a single match's
:class:`keltis_env.core.match.MatchResult`): win
rate with its 95% interval, mean scores, mean game length and truncation rate.

The games are played by the project's evaluation toolkit
(:func:`keltis_env.evaluation.evaluate`: duplicate deals, seats rotating).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class OpponentResult:
    """The policy's results against one opponent (the opponent in every other seat)."""

    opponent: str
    games: int
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_score: float
    opponent_mean_score: float
    mean_turns: float
    truncation_rate: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["win_rate_ci"] = list(self.win_rate_ci)
        return d


def evaluate_policy(
    policy_spec: str,
    opponent: str,
    games: int,
    seed: int,
    num_players: int = 2,
    workers: int = 1,
    max_turns: int | None = None,
    game: str = "keltis",
    options: dict[str, Any] | None = None,
) -> OpponentResult:
    """Play ``policy_spec`` (e.g. ``"ppo:RUN/policy.zip"``) against ``num_players - 1``
    copies of ``opponent`` in ``game`` with the game's ``options`` (a run's
    ``env.options``: the games it trained on); ``games`` is rounded up to whole deals."""
    from keltis_env.evaluation import evaluate

    specs = [policy_spec] + [opponent] * (num_players - 1)
    result = evaluate(specs, games=games, seed=seed, workers=workers, game=game, progress=False,
                      max_turns=max_turns, options=options)
    me, others = result.agents[0], result.agents[1:]
    return OpponentResult(
        opponent=opponent,
        games=result.games,
        win_rate=me.win_rate,
        win_rate_ci=me.win_rate_ci,
        mean_score=me.mean_score,
        opponent_mean_score=sum(a.mean_score for a in others) / len(others),
        mean_turns=result.mean_turns,
        truncation_rate=result.truncation_rate,
    )


__all__ = ["OpponentResult", "evaluate_policy"]
