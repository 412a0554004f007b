"""Final rewards from final scores, shared by every environment and the evaluation.

``"win"`` (default): a sole winner gets ``+1`` and every other player ``-1``. When
several players share the highest score they share the victory (R9): each of them gets
``0`` and every other player ``-1``; if all players tie, all get ``0``. With two players
this is the usual zero-sum ``+1 / -1 / 0``.

``"score"``: each player gets their score minus the mean score of the other players,
divided by ``SCORE_SCALE`` (50). It sums to zero over the players.

Both are paid only when a game ends, and also when it is truncated (R8), from the
standings at that moment, so that stalling never pays better than playing on.

``"shaped"``: a dense reward, potential-based (Ng, Harada and Russell, 1999) on the score
margin. The potential of a seat, :func:`potentials`, is its ``"score"`` reward if the game
ended now: its score minus the mean score of the others, over ``SCORE_SCALE``. After every
action each seat gets ``Φ(s') - Φ(s)``, the change of its potential (γ = 1), whoever
moved. The rewards of a game telescope: a seat's return is ``Φ(final) - Φ(start)``, which
is exactly its ``"score"`` reward for a game from the deal (every seat's potential is 0
there: all scores are equal). So the optimal policy is the ``"score"`` reward's, an action
that changes no score (a discard taken back) earns exactly 0, and a loop that comes back to
a position earns nothing in total.
"""

from __future__ import annotations

from collections.abc import Sequence

REWARD_MODES = ("win", "score", "shaped")
#: the modes paid only when a game ends (the others pay after every action)
TERMINAL_MODES = ("win", "score")
SCORE_SCALE = 50.0


def check_reward_mode(mode: str) -> str:
    if mode not in REWARD_MODES:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")
    return mode


def final_rewards(scores: Sequence[int], mode: str = "win") -> list[float]:
    """The reward of each seat for a game that ended (or was cut) with ``scores`` (under
    ``"shaped"``, what its rewards sum to over a game from the deal)."""
    if mode == "win":
        best = max(scores)
        winners = sum(1 for s in scores if s == best)
        top = 1.0 if winners == 1 else 0.0
        return [top if s == best else -1.0 for s in scores]
    if mode in ("score", "shaped"):  # shaped: the final potential, what its rewards sum to from the deal
        return potentials(scores)
    raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")


def potentials(scores: Sequence[int]) -> list[float]:
    """Each seat's potential for the ``"shaped"`` reward: its score minus the mean score of
    the others, over ``SCORE_SCALE`` (its ``"score"`` reward if the game ended now)."""
    n = len(scores)
    total = sum(scores)
    return [(s - (total - s) / (n - 1)) / SCORE_SCALE for s in scores]


def win_shares(scores: Sequence[int]) -> list[float]:
    """Each seat's share of the victory: 1 for a sole winner, 1/k for each of k tied
    winners, 0 for the others (how the evaluation counts wins)."""
    best = max(scores)
    k = sum(1 for s in scores if s == best)
    return [1.0 / k if s == best else 0.0 for s in scores]
