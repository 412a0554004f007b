"""Choosing among a fit's epochs by play (``fit.select_by``): the held-out loss of an
imitation falls slowly and evenly, while which of the teacher's near-tied moves comes out
on top, and with it the fitted policy's strength, swings from one epoch to the next. The
selector exports the policy as it stands after an epoch and plays it against an agent on
selection deals (never a run's reporting deals); :func:`training.imitate.fit.fit_demonstrations`
keeps the epoch that won most."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.sections import EnvConfig
from .config import FitConfig

#: The selection deals of a fit of seed ``s``: deal seed ``s * 1000 + SELECT_DEALS`` (a run's
#: periodic evaluations play ``s * 1000 + i`` for its i-th opponent, its final evaluation
#: ``10**6 + s * 1000 + i``).
SELECT_DEALS = 500


def play_selector(export: Callable[[Path], None], path: Path, fit: FitConfig, env: EnvConfig, seed: int,
                  workers: int, log: Any = print) -> Callable[[int], float] | None:
    """The ``select`` of :func:`~training.imitate.fit.fit_demonstrations` for ``fit.select_by``
    (``None`` when it is empty): ``export(path)`` writes the policy as it plays, which then
    plays ``fit.select_games`` games against ``fit.select_by`` on the deals of
    :data:`SELECT_DEALS`, the same deals for every epoch; returns its win rate."""
    if not fit.select_by:
        return None
    from keltis_env.evaluation import evaluate

    def score(epoch: int) -> float:
        export(path)
        try:
            specs = [f"ppo:{path}"] + [fit.select_by] * (env.num_players - 1)
            result = evaluate(specs, games=fit.select_games, seed=seed * 1000 + SELECT_DEALS, workers=max(1, workers),
                              game=env.game, progress=False, max_turns=env.max_turns, options=env.options)
        finally:
            path.unlink(missing_ok=True)
        me = result.agents[0]
        log(f"fit epoch {epoch}: {me.win_rate:.1%} [{me.win_rate_ci[0]:.1%}, {me.win_rate_ci[1]:.1%}] against "
            f"{fit.select_by} ({result.games} selection games)")
        return float(me.win_rate)

    return score


__all__ = ["SELECT_DEALS", "play_selector"]
