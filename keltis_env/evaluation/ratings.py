"""Ratings of the agents of an evaluation with three or more distinct specs: openskill's
Plackett-Luce model, one update per game, in game order (openskill is imported on use)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import GameResult


def plackett_luce_ratings(results: Sequence[GameResult], labels: Sequence[str]) -> list[dict[str, Any]]:
    """openskill Plackett-Luce ratings, one update per game, in game order."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    current = [model.rating(name=label) for label in labels]
    for r in results:
        teams = [[current[i]] for i in r.seats]
        # a game lost on time ranks by its shares (the offender last), not by the scores at the cut
        ranked = r.shares if r.forfeit is not None else r.scores
        updated = model.rate(teams, scores=[float(s) for s in ranked])
        for seat, i in enumerate(r.seats):
            current[i] = updated[seat][0]
    return [
        {"label": label, "mu": rt.mu, "sigma": rt.sigma, "ordinal": rt.ordinal()}
        for label, rt in zip(labels, current, strict=True)
    ]


__all__ = ["plackett_luce_ratings"]
