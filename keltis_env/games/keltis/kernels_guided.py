"""The card game's network-guided ``ismcts`` search on the compiled core
(``ismcts:backend=compiled,net=PATH``; numba, the ``fast`` extra): the rollouts of a stage
compiled, the network's value head run once per stage on all the positions they stopped at.

The search is :meth:`~keltis_env.bots.search.SearchBot._search` with a network
(:class:`~keltis_env.bots.net_guide.NetGuide`) and ``rollout=model``, the plan model's
pieces those of :mod:`.kernels_ismcts`:

* :func:`run_stage` plays the sampled worlds of one stage (or, once at most 2 candidates
  are left, of the whole budget): in each world every surviving candidate is applied and
  played on by the plan model's greedy policy for ``depth`` rounds of turns
  (:func:`guided_rollout`); with ``leaf=value`` or ``both`` on to the searcher's next
  decision, whose observation is written as the network reads it (:func:`.kernels_batch.observe`,
  with the file's features), with ``leaf=model`` valued by the plan model's evaluator. A
  finished game is worth its final margin, as without a network. ``leaf=both`` adds half
  the evaluator's value at the same position, a value head of the ``shaped`` reward the
  position's potential times its share of the value scale.
* :func:`guided_search` runs the stages: after each, the positions written are valued by
  the value head in one batch (``points_of``, the guide's own call) and added to their
  candidates' totals (all of it, or half with ``leaf=both``), then the worse half of the
  candidates is dropped (:func:`.kernels_ismcts.halve`).

Its random numbers come from the SplitMix64 generator it is given: the same seed makes the
same decision, not the Python search's. ``tests/test_compiled_guided_search.py`` holds the
observations equal to the Python encoder's bit for bit and the values equal to the guide's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel, potential

from .actions import NUM_ACTIONS
from .constants import MAX_PLAYERS, NUM_CARDS, Phase
from .kernels import CURRENT, NUM_PLAYERS, PHASE, STATE_SIZE, apply, score
from .kernels_batch import FEATURES, encoding_args, observe
from .kernels_ismcts import (
    INFO_ROLLOUTS,
    INFO_SAMPLES,
    O_DEPTH,
    O_ITERATIONS,
    O_STAGE,
    O_WIN_BONUS,
    determinise,
    evaluate,
    final_margin,
    halve,
    policy_action,
    world_scales,
)
from .kernels_plan import FLOAT_SIZE, INT_SIZE, plan_context

_PLAY, _OVER = int(Phase.PLAY), int(Phase.OVER)

#: the ``leaf`` option as :func:`run_stage` takes it (by these indices)
LEAVES = ("model", "value", "both")
LEAF_MODEL, LEAF_VALUE, LEAF_BOTH = range(3)
#: what :func:`run_stage` returns: the budget is spent; a stage ended (halve the candidates);
#: the observation buffer is full (value its rows, then go on)
DONE, HALVE, FLUSH = range(3)
#: positions valued in one batch at most (the buffer :func:`guided_search` gives :func:`run_stage`)
MAX_ROWS = 512
#: where :func:`run_stage` reports the positions it wrote (after the counts of :mod:`.kernels_ismcts`)
INFO_ROWS = 3
INFO_SIZE = 4


@kernel
def guided_rollout(s: Any, me: int, depth: int, to_decision: bool, w: Any, spi: Any, spf: Any, pi: Any, pf: Any,
                   mask: Any, scores: Any, values: Any) -> bool:
    """Play ``s`` on by the greedy plan policy for ``depth`` rounds of turns (as
    :func:`.kernels_ismcts.rollout`) and, with ``to_decision``, on to ``me``'s next decision
    (where the value head reads ``me``'s view); returns whether the game is over."""
    rounds = depth
    while s[PHASE] != _OVER:
        if s[PHASE] == _PLAY:
            if s[CURRENT] == me:
                rounds -= 1  # a full round of turns has been played
                if rounds <= 0:
                    break
            elif rounds == 0:
                break
        apply(s, policy_action(s, w, spi, spf, pi, pf, mask, scores, values))
    if to_decision:
        while s[PHASE] != _OVER and s[CURRENT] != me:
            apply(s, policy_action(s, w, spi, spf, pi, pf, mask, scores, values))
    return bool(s[PHASE] == _OVER)


@kernel
def run_stage(clean: Any, w: Any, opts: Any, leaf: int, shaped_points: float, rng: Any, actions: Any, alive: Any,
              live: int, totals: Any, counts: Any, info: Any, root_pi: Any, root_pf: Any, obs: Any, who: Any,
              layout: Any, scale: Any, offset: Any, score_scale: float, obs_counts: Any, plan: bool,
              plan_scale: float, plan_weights: Any) -> int:
    """Sampled worlds for the ``live`` candidates ``alive`` (indices into ``actions``) of the
    searcher to move in ``clean`` (its hidden parts clear), until the budget is spent
    (:data:`DONE`), a stage ends with more than 2 candidates (:data:`HALVE`) or ``obs`` has
    no room for another world's positions (:data:`FLUSH`). Finished games and, with
    ``leaf=model``, the evaluator's values are added to ``totals``; ``leaf=both`` adds half
    the evaluator's value and the position; ``shaped_points`` times the searcher's
    potential is added for a value head of the shaped reward (0 otherwise). The positions
    for the value head are written to ``obs`` from row 0 (the candidate of each in ``who``);
    ``info`` counts worlds and rollouts on from earlier stages and holds the rows written
    at :data:`INFO_ROWS`. ``root_pi``, ``root_pf``: the searcher's plan at the root."""
    me = clean[CURRENT]
    n = clean[NUM_PLAYERS]
    iterations = int(opts[O_ITERATIONS])
    depth = int(opts[O_DEPTH])
    stage = int(opts[O_STAGE])
    win_bonus = opts[O_WIN_BONUS]
    spi = np.zeros((n, INT_SIZE), dtype=np.int64)
    spf = np.zeros((n, FLOAT_SIZE), dtype=np.float64)
    pi = np.zeros(INT_SIZE, dtype=np.int64)
    pf = np.zeros(FLOAT_SIZE, dtype=np.float64)
    world = np.zeros(STATE_SIZE, dtype=clean.dtype)
    state = np.zeros(STATE_SIZE, dtype=clean.dtype)
    cards = np.zeros(NUM_CARDS, dtype=np.int64)
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    scores = np.zeros(MAX_PLAYERS, dtype=np.int64)
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    rows = 0
    model_share = 1.0 if leaf == LEAF_MODEL else 0.5 if leaf == LEAF_BOTH else 0.0
    while True:
        if leaf != LEAF_MODEL and rows + live > obs.shape[0]:
            info[INFO_ROWS] = rows
            return FLUSH
        determinise(clean, me, world, cards, rng)
        world_scales(world, me, w, root_pi, root_pf, spi, spf)
        for j in range(live):
            i = alive[j]
            state[:] = world
            apply(state, actions[i])
            if guided_rollout(state, me, depth, leaf != LEAF_MODEL, w, spi, spf, pi, pf, mask, scores, values):
                totals[i] += final_margin(state, me, win_bonus)
            else:
                if leaf != LEAF_MODEL:
                    observe(state, me, layout, scale, offset, score_scale, obs_counts, plan, plan_scale, plan_weights,
                            mask, values, obs[rows])
                    who[rows] = i
                    rows += 1
                    if shaped_points != 0.0:  # that value head estimates the rest of the margin: add the margin so far
                        for q in range(n):
                            scores[q] = score(state, q)
                        totals[i] += shaped_points * potential(scores, n, me)
                if model_share != 0.0:
                    totals[i] += model_share * evaluate(state, me, w, spi, spf, pi, pf)
            counts[i] += 1
        info[INFO_ROLLOUTS] += live
        info[INFO_SAMPLES] += 1
        info[INFO_ROWS] = rows
        if info[INFO_ROLLOUTS] + live > iterations:
            return DONE
        if info[INFO_SAMPLES] % stage == 0 and live > 2:
            return HALVE



def check_features(features: tuple[str, ...], owner: str) -> None:
    """Refuse, in one line naming them, observation features the compiled encoder does not
    write (it writes :data:`.kernels_batch.FEATURES`)."""
    missing = [f for f in features if f not in FEATURES]
    if missing:
        raise ValueError(f"{owner} option backend=compiled encodes the observation features "
                         f"{', '.join(FEATURES)} only; the network reads {', '.join(missing)} too: give backend=python")


class Encoding:
    """:func:`.kernels_batch.observe`'s arguments for a network of ``num_players`` players and
    ``features`` (the Python encoder's layout, scales and scratch space)."""

    def __init__(self, num_players: int, features: tuple[str, ...]) -> None:
        self.size, self.args = encoding_args(num_players, features)


def guided_search(clean: Any, w: Any, opts: Any, leaf: str, shaped_points: float, rng: Any, actions: Any,
                  encoding: Encoding, points_of: Callable[[Any], list[float]], net_share: float
                  ) -> tuple[list[float], list[int], list[int], int, int]:
    """The rollouts of the candidates ``actions`` of the searcher to move in ``clean`` (its
    hidden parts clear), stage by stage (:func:`run_stage`), the positions of each valued by
    ``points_of`` (the guide's value head, in points) in one batch and ``net_share`` of each
    value added to its candidate's total, the worse half dropped after each stage, until
    ``opts``' budget is spent. Returns the totals, the rollouts and the survivors (in the
    order of the last halving) per candidate index, the sampled worlds and the rollouts."""
    ncand = len(actions)
    me = int(clean[CURRENT])
    root_pi = np.zeros(INT_SIZE, dtype=np.int64)
    root_pf = np.zeros(FLOAT_SIZE, dtype=np.float64)
    plan_context(clean, me, w, root_pi, root_pf)
    totals = np.zeros(ncand, dtype=np.float64)
    counts = np.zeros(ncand, dtype=np.int64)
    alive = np.arange(ncand, dtype=np.int64)
    info = np.zeros(INFO_SIZE, dtype=np.int64)
    obs = np.zeros((max(MAX_ROWS, ncand), encoding.size), dtype=np.float32)
    who = np.zeros(obs.shape[0], dtype=np.int64)
    cands = np.asarray(actions, dtype=np.int64)
    code = LEAVES.index(leaf)
    live = ncand
    while True:
        status = run_stage(clean, w, opts, code, shaped_points, rng, cands, alive, live, totals, counts, info,
                           root_pi, root_pf, obs, who, *encoding.args)
        rows = int(info[INFO_ROWS])
        if rows:
            for i, v in zip(who[:rows].tolist(), points_of(obs[:rows]), strict=True):
                totals[i] += net_share * v
        if status == DONE:
            break
        if status == HALVE:
            live = int(halve(alive, live, totals))
    return (totals.tolist(), counts.tolist(), alive[:live].tolist(), int(info[INFO_SAMPLES]),
            int(info[INFO_ROLLOUTS]))


__all__ = ["DONE", "FLUSH", "HALVE", "INFO_ROWS", "INFO_SIZE", "LEAVES", "MAX_ROWS", "Encoding", "check_features",
           "guided_rollout", "guided_search", "run_stage"]
