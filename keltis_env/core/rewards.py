"""Final rewards from final scores, shared by every environment and the evaluation.

``"win"`` (default): a sole winner gets ``+1`` and every other player ``-1``. When
several players share the highest score they share the victory (R9): each of them gets
``0`` and every other player ``-1``; if all players tie, all get ``0``. With two players
this is the usual zero-sum ``+1 / -1 / 0``.

``"score"``: each player gets their score minus the mean score of the other players,
divided by ``SCORE_SCALE`` (50). It sums to zero over the players.

Both are paid only when a game ends, and also when it is truncated (R8), from the
standings at that moment, so that stalling never pays better than playing on.
"""

from __future__ import annotations

from collections.abc import Sequence

REWARD_MODES = ("win", "score")
SCORE_SCALE = 50.0


def check_reward_mode(mode: str) -> str:
    if mode not in REWARD_MODES:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")
    return mode


def final_rewards(scores: Sequence[int], mode: str = "win") -> list[float]:
    """The reward of each seat for a game that ended (or was cut) with ``scores``."""
    n = len(scores)
    if mode == "win":
        best = max(scores)
        winners = sum(1 for s in scores if s == best)
        top = 1.0 if winners == 1 else 0.0
        return [top if s == best else -1.0 for s in scores]
    if mode == "score":
        total = sum(scores)
        return [(s - (total - s) / (n - 1)) / SCORE_SCALE for s in scores]
    raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")


def win_shares(scores: Sequence[int]) -> list[float]:
    """Each seat's share of the victory: 1 for a sole winner, 1/k for each of k tied
    winners, 0 for the others (how the evaluation counts wins)."""
    best = max(scores)
    k = sum(1 for s in scores if s == best)
    return [1.0 / k if s == best else 0.0 for s in scores]
