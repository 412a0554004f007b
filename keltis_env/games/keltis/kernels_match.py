"""Whole games of the card game between compiled bots (numba, the ``fast`` extra): the
evaluation's games when every agent is a bot with a kernel (``heuristic``, ``planner``).

:func:`play_game` moves a dealt row (:mod:`.kernels`) to its end, each seat deciding
through its player's kernel (:func:`~.kernels_heuristic.heuristic_action`,
:func:`~.kernels_planner.planner_action`), and counts each seat's decisions and logs the
actions; :func:`advance_games` and :func:`act_games` do the same for games in which some
seats are decided outside (a network's, in lockstep). The kernels read only what the
player to move may see (their modules say so, and their tests hold their decisions equal
to the Python bots' on a view's row whatever the hidden cards are), so a full state's row
gives the moves of the match loop's bots.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel

from .actions import NUM_ACTIONS
from .constants import Phase
from .kernels import CURRENT, PHASE, apply, step
from .kernels_batch import HEURISTIC, PLANNER
from .kernels_heuristic import heuristic_action
from .kernels_planner import planner_action

_OVER = int(Phase.OVER)


@kernel
def play_game(s: Any, who: Any, kinds: Any, opts: Any, weights: Any, decisions: Any, actions: Any) -> int:
    """Play row ``s`` to its end: seat ``p`` is player ``who[p]``, of kind ``kinds[k]``
    (:data:`~.kernels_batch.HEURISTIC` with the heuristic's options ``opts[k]``, or
    :data:`~.kernels_batch.PLANNER` with the planner's weights ``weights[k]``). Adds each
    seat's decisions to ``decisions``, writes the actions into ``actions`` as far as it
    holds them, and returns how many were played; -1 when a player has no kernel (the row
    is then left where that player is to move)."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    count = 0
    while s[PHASE] != _OVER:
        p = s[CURRENT]
        k = who[p]
        if kinds[k] == HEURISTIC:
            action = heuristic_action(s, mask, opts[k])
        elif kinds[k] == PLANNER:
            action = planner_action(s, mask, weights[k])
        else:
            return -1
        apply(s, action)
        decisions[p] += 1
        if count < actions.shape[0]:
            actions[count] = action
        count += 1
    return count




@kernel
def advance_games(states: Any, games: Any, who: Any, kinds: Any, opts: Any, weights: Any, decisions: Any,
                  actions: Any, counts: Any, waiting: Any) -> None:
    """Move each game ``games[j]`` (row ``states[g]``, seat ``p`` played by player
    ``who[g, p]``, numbered as in :func:`play_game`) until it is over (``waiting[j]`` is
    then -1) or a seat whose player has no kernel is to move (``waiting[j]`` is that
    seat). Each move adds to ``decisions[g]`` and is logged in ``actions[g]`` at
    ``counts[g]``, as far as it holds them."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        waiting[j] = -1
        while s[PHASE] != _OVER:
            p = s[CURRENT]
            k = who[g, p]
            if kinds[k] == HEURISTIC:
                action = heuristic_action(s, mask, opts[k])
            elif kinds[k] == PLANNER:
                action = planner_action(s, mask, weights[k])
            else:
                waiting[j] = p
                break
            apply(s, action)
            decisions[g, p] += 1
            if counts[g] < actions.shape[1]:
                actions[g, counts[g]] = action
            counts[g] += 1


@kernel
def act_games(states: Any, games: Any, chosen: Any, decisions: Any, actions: Any, counts: Any, legal: Any) -> None:
    """``chosen[j]`` for the seat to move in game ``games[j]``, counted and logged as
    :func:`advance_games` counts and logs its moves; ``legal[j]`` says whether it was legal
    (an illegal action changes nothing)."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        p = s[CURRENT]
        legal[j] = step(s, chosen[j], mask)
        if legal[j]:
            decisions[g, p] += 1
            if counts[g] < actions.shape[1]:
                actions[g, counts[g]] = chosen[j]
            counts[g] += 1


__all__ = ["act_games", "advance_games", "play_game"]
