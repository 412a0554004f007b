"""The card game's ``ismcts`` search compiled (numba, the ``fast`` extra): one whole decision
in one call, on a state row of :mod:`.kernels`, with the plan model of :mod:`.kernels_plan`
and :mod:`.kernels_planner`.

:func:`search` is the determinised search of :class:`~keltis_env.bots.search.SearchBot`
with the plan model of :class:`~keltis_env.games.keltis.bots.ismcts.PlanSearchModel`, step
for step:

* **Candidates.** Every legal action valued by the planner's
  :func:`~.kernels_planner.action_values`, best first (the lowest id among equals); a value
  of at least :data:`WINNING` wins on the spot and is taken at once, as is the best-ranked
  action with ``iterations=0``. The best ``top_k`` within ``margin`` points of the best are
  searched (at most one per ``per_candidate`` iterations, at least 2); a single one is
  played unsearched.
* **Worlds.** Every sample deals the cards the searcher has not seen (R10: all copies less
  its hand, the rows and the discard piles) at random into the other hands (at their
  public sizes), the removed cards (2 players) and the draw pile (:func:`determinise`), as
  :func:`~keltis_env.games.keltis.state.sample_state` does. All surviving candidates are
  rolled out in the same world (common random numbers).
* **Rollouts.** Every seat plays the plan model's greedy action for ``depth`` rounds of
  turns (a round ends when the searcher is about to play a card again), each player's plan
  on the scale fixed for the world (:func:`fixed_plan`): the searcher's turn price,
  expected end and unseen pool from the root, the others' from their sampled hands.
* **Evaluation.** A finished game is worth the searcher's score minus the best other,
  plus or minus ``win_bonus``; an unfinished one the difference of the plan values
  (:func:`plan_total`, the Python ``Planner.value``).
* **Selection.** Successive halving after every ``stage`` worlds (the worse half dropped,
  at least 2 kept), then the survivor of the best mean shrunk towards the ranker's value
  differences by ``prior`` pseudo-samples.

The search reads only what the searcher may know: :func:`search` clears the other hands,
the draw pile and the removed cards of the row it is given before anything else, so the
full state's row and the seat's view's row give the same decision. Its random numbers
come from the SplitMix64 generator it is given (:mod:`keltis_env.core.kernels`): the
same seed makes the same decision, not the decision the Python search makes with
``random.Random`` (the two play equally well, not identically).
``tests/test_compiled_ismcts.py`` holds the rollout moves and evaluations equal to the
Python model's bit for bit, and the ranking and the stages equal to the Python search's.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel, shuffle

from .actions import NUM_ACTIONS
from .constants import (
    CLOVER,
    COPIES_PER_CARD,
    END_ROW,
    LARGE_MULTIPLIER,
    MAX_PLAYERS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    POINTS_3,
    REMOVED_CARDS,
    TILE_POINTS,
    WISHING_SCORES,
    WISHING_STONE,
    Phase,
)
from .kernels import (
    CURRENT,
    DECK,
    DECK_SIZE,
    DIRECTION,
    HAND,
    HAND_SIZES,
    LARGE,
    LAST,
    NUM_PLAYERS,
    PHASE,
    PILE,
    PILE_SIZES,
    PLAYED,
    POS,
    REMOVED,
    STATE_SIZE,
    TILES,
    TURN,
    WISHING,
    apply,
    legal_mask,
    score,
)
from .kernels_plan import (
    F_GAINS,
    F_GOAL_TURN,
    F_LAM,
    F_LARGE_READY,
    F_RATE,
    F_WISH,
    FLOAT_SIZE,
    I_DIR,
    I_DRAWS,
    I_HAND,
    I_LARGE,
    I_LAST,
    I_N,
    I_PLAYER,
    I_PLAYS,
    I_POS,
    I_TOTAL,
    I_UNSEEN,
    INT_SIZE,
    W_CLOVER,
    W_DRAW_FIT,
    large_option,
    plan_context,
    plan_length,
    plan_value,
    supply,
    time_left,
)
from .kernels_planner import action_values, best_action, plan_action_values

# The Python model's tables, loaded by name (see kernels_plan: the bots stay outside the
# strictly type-checked engine modules).
_PLAN = importlib.import_module(f"{__package__}.bots.plan")
_K, _C, _V, _R = NUM_CARD_KINDS, NUM_COLORS, NUM_VALUES, END_ROW + 1
_MAX_PILE = NUM_CARDS // NUM_COLORS
_PLAY, _DRAW, _OVER = int(Phase.PLAY), int(Phase.DRAW), int(Phase.OVER)
_STEP = np.array(_PLAN._STEP, dtype=np.int64)
_WISH_NEXT = np.array(_PLAN._WISH_NEXT, dtype=np.float64)
_WISH_SCORES = np.array(WISHING_SCORES, dtype=np.float64)
_TILE_POINTS = np.array([TILE_POINTS.get(t, 0) for t in range(POINTS_3 + 1)], dtype=np.float64)
_REMOVED = np.array([REMOVED_CARDS.get(n, 0) for n in range(MAX_PLAYERS + 1)], dtype=np.int64)

#: Ranked values at or above this win the game on the spot (the Python model's ``winning``).
WINNING = 500.0

#: the search's settings as :func:`search` takes them (float64, by these indices)
OPTION_NAMES = ("iterations", "top_k", "depth", "stage", "prior", "win_bonus", "margin", "per_candidate")
O_ITERATIONS, O_TOP_K, O_DEPTH, O_STAGE, O_PRIOR, O_WIN_BONUS, O_MARGIN, O_PER_CANDIDATE = range(8)
#: what :func:`search` reports in ``info``: ranked actions, sampled worlds, rollouts played
INFO_RANKED, INFO_SAMPLES, INFO_ROLLOUTS = range(3)
INFO_SIZE = 3


# ---------------------------------------------------------------------- the worlds
@kernel
def clear_hidden(s: Any, me: int) -> None:
    """Zero what ``me`` may not see in row ``s``: the other hands (their sizes stay), the
    draw pile's cards (its size stays) and the removed cards."""
    n = s[NUM_PLAYERS]
    for q in range(n):
        if q != me:
            for k in range(_K):
                s[HAND + q * _K + k] = 0
    for k in range(_K):
        s[REMOVED + k] = 0
    for j in range(NUM_CARDS):
        s[DECK + j] = 0


@kernel
def unseen_cards(s: Any, me: int, out: Any) -> int:
    """The cards ``me`` has not seen (all copies less its hand, every row and every discard
    pile), one entry per card into ``out``; returns how many."""
    n = s[NUM_PLAYERS]
    counts = np.empty(_K, dtype=np.int64)
    for k in range(_K):
        seen = s[HAND + me * _K + k]
        for q in range(n):
            seen += s[PLAYED + q * _K + k]
        counts[k] = COPIES_PER_CARD - seen
    for c in range(_C):
        for j in range(s[PILE_SIZES + c]):
            counts[c * _V + s[PILE + c * _MAX_PILE + j]] -= 1
    total = 0
    for k in range(_K):
        for _ in range(counts[k]):
            out[total] = k
            total += 1
    return total


@kernel
def determinise(root: Any, me: int, world: Any, cards: Any, rng: Any) -> None:
    """A world consistent with ``me``'s knowledge of ``root`` (whose hidden parts are clear)
    into ``world``: the unseen cards shuffled and dealt to the other hands, the removed
    cards and the draw pile (``cards`` is scratch space of ``NUM_CARDS`` entries)."""
    world[:] = root
    total = unseen_cards(root, me, cards)
    shuffle(cards, total, rng, 0)
    n = root[NUM_PLAYERS]
    at = 0
    for q in range(n):
        if q != me:
            for _ in range(root[HAND_SIZES + q]):
                world[HAND + q * _K + cards[at]] += 1
                at += 1
    for _ in range(_REMOVED[n]):
        world[REMOVED + cards[at]] += 1
        at += 1
    deck = root[DECK_SIZE]
    if at + deck != total:
        raise ValueError("the row's card counts are inconsistent: the unseen cards do not fill the hidden places")
    for j in range(deck):
        world[DECK + j] = cards[at + j]


# ---------------------------------------------------------------------- plans on a fixed scale
@kernel
def fixed_plan(s: Any, p: int, w: Any, spi: Any, spf: Any, pi: Any, pf: Any) -> None:
    """Player ``p``'s plan in ``s`` into ``pi``, ``pf`` with the turn price, the expected
    end of the game and the unseen pool of the plan ``spi``, ``spf`` (made earlier, by
    :func:`~.kernels_plan.plan_context`): the Python ``Planner(..., lam, goal_turn, pool)``
    the search's rollouts and evaluations use, so that their values are comparable."""
    pi[I_PLAYER] = p
    pi[I_N] = s[NUM_PLAYERS]
    pi[I_LARGE] = s[LARGE + p]
    for c in range(_C):
        pi[I_POS + c] = s[POS + p * _C + c]
        pi[I_LAST + c] = s[LAST + p * _C + c]
        pi[I_DIR + c] = s[DIRECTION + p * _C + c]
    for k in range(_K):
        pi[I_HAND + k] = s[HAND + p * _K + k]
    pi[I_UNSEEN:INT_SIZE] = spi[I_UNSEEN:INT_SIZE]
    total = spi[I_TOTAL]
    pi[I_TOTAL] = total
    goal_turn = spf[F_GOAL_TURN]
    pf[F_GOAL_TURN] = goal_turn
    time_left(s, p, goal_turn - s[TURN], pi)
    pf[F_RATE] = pi[I_DRAWS] * w[W_DRAW_FIT] / total if total else 0.0
    wish = _WISH_NEXT[min(s[WISHING + p], 11)]
    pf[F_WISH] = wish
    for c in range(_C):
        for r in range(_R):
            t = s[TILES + c * _R + r]
            tile_gain = 0.0
            if t == WISHING_STONE:
                tile_gain = wish
            elif t == CLOVER:
                tile_gain = w[W_CLOVER]
            elif t:
                tile_gain = _TILE_POINTS[t]
            pf[F_GAINS + c * _R + r] = _STEP[r] + tile_gain
            pf[F_GAINS + (_C + c) * _R + r] = _STEP[r] * LARGE_MULTIPLIER + tile_gain
    pf[F_LARGE_READY] = 0.0
    pf[F_LAM] = spf[F_LAM]


@kernel
def _wish_curve(stones: float) -> float:
    """R9's wishing-stone score, linear between whole numbers of stones."""
    top = len(_WISH_SCORES) - 1
    if stones >= top:
        return float(_WISH_SCORES[top])
    lo = int(stones)
    return float(_WISH_SCORES[lo] + (stones - lo) * (_WISH_SCORES[lo + 1] - _WISH_SCORES[lo]))


@kernel
def plan_total(s: Any, w: Any, pi: Any, pf: Any) -> float:
    """The plan's player's position as one number (the Python ``Planner.value``): score,
    every colour's plan value, planned wishing stones on R9's uneven scale, the large
    figure kept, and the price of the turns left."""
    p = pi[I_PLAYER]
    total = 0.0
    stones = 0.0
    for c in range(_C):
        sup = supply(pi, pf, w, c, -1, 0, pi[I_LAST + c], pi[I_DIR + c])
        total += plan_value(pf, w, c, pi[I_POS + c], sup, pi[I_LARGE] == c)
        k = plan_length(pi, pf, w, c, sup)
        r = pi[I_POS + c]
        while k > 0 and r < END_ROW:
            r += 1
            if s[TILES + c * _R + r] == WISHING_STONE:
                stones += k if k < 1 else 1.0
            k -= 1
    wishing = s[WISHING + p]
    total += _wish_curve(wishing + stones) - _wish_curve(wishing) - stones * pf[F_WISH]
    return float(score(s, p) + total + large_option(pi, pf, w, -1) + pf[F_LAM] * pi[I_PLAYS])


# ---------------------------------------------------------------------- rollouts
@kernel
def policy_action(s: Any, w: Any, spi: Any, spf: Any, pi: Any, pf: Any, mask: Any, scores: Any,
                  values: Any) -> int:
    """The plan model's greedy action for the player to move in ``s``, on that player's
    fixed scale (``spi[p]``, ``spf[p]``): the Python ``PlanSearchModel.policy``; a single
    legal action unvalued. ``pi``, ``pf``, ``mask``, ``scores`` and ``values`` are scratch."""
    count = legal_mask(s, mask)
    if count == 1:
        for a in range(NUM_ACTIONS):
            if mask[a]:
                return a
    p = s[CURRENT]
    for q in range(s[NUM_PLAYERS]):
        scores[q] = score(s, q)
    fixed_plan(s, p, w, spi[p], spf[p], pi, pf)
    plan_action_values(s, pi, pf, w, mask, scores, values)
    return int(best_action(mask, values))


@kernel
def evaluate(s: Any, me: int, w: Any, spi: Any, spf: Any, pi: Any, pf: Any) -> float:
    """The worth of the unfinished ``s`` for ``me``: its plan value less the best other
    player's, every plan on its fixed scale (the Python ``PlanSearchModel.evaluate``)."""
    mine = 0.0
    best = -np.inf
    for q in range(s[NUM_PLAYERS]):
        fixed_plan(s, q, w, spi[q], spf[q], pi, pf)
        v = plan_total(s, w, pi, pf)
        if q == me:
            mine = v
        elif v > best:
            best = v
    return float(mine - best)


@kernel
def final_margin(s: Any, me: int, win_bonus: float) -> float:
    """A finished game's worth for ``me``: its score less the best other, plus ``win_bonus``
    for a win, minus it for a loss (nothing for a shared win)."""
    mine = score(s, me)
    other = -(10**9)
    for q in range(s[NUM_PLAYERS]):
        if q != me:
            other = max(other, score(s, q))
    bonus = win_bonus if mine > other else -win_bonus if mine < other else 0.0
    return float(mine - other + bonus)


@kernel
def rollout(s: Any, me: int, depth: int, win_bonus: float, w: Any, spi: Any, spf: Any, pi: Any, pf: Any,
            mask: Any, scores: Any, values: Any) -> float:
    """Play ``s`` on by the greedy plan policy for ``depth`` rounds of turns (until ``me``
    is about to start its ``depth``-th turn from now; with 0 until anyone starts one) or
    to the end, and return the position's worth for ``me``."""
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
    if s[PHASE] == _OVER:
        return float(final_margin(s, me, win_bonus))
    return float(evaluate(s, me, w, spi, spf, pi, pf))


@kernel
def world_scales(world: Any, me: int, w: Any, root_pi: Any, root_pf: Any, spi: Any, spf: Any) -> None:
    """Every player's fixed scale in a sampled world: the searcher's from the root, the
    others' from their sampled hands (the Python ``PlanSearchModel.prepare``)."""
    for q in range(world[NUM_PLAYERS]):
        if q == me:
            spi[q, :] = root_pi
            spf[q, :] = root_pf
        else:
            plan_context(world, q, w, spi[q], spf[q])


# ---------------------------------------------------------------------- the search
@kernel
def rank(s: Any, w: Any, mask: Any, values: Any, ranked: Any) -> int:
    """The legal actions of ``s`` into ``ranked`` by their plan-model values (``values``),
    best first and the lowest id first among equals; returns how many."""
    count = action_values(s, mask, w, values)
    m = 0
    for a in range(NUM_ACTIONS):
        if not mask[a]:
            continue
        j = m
        while j > 0 and values[ranked[j - 1]] < values[a]:
            ranked[j] = ranked[j - 1]
            j -= 1
        ranked[j] = a
        m += 1
    return int(count)


@kernel
def halve(alive: Any, live: int, totals: Any) -> int:
    """Sort the ``live`` survivors ``alive`` by their totals, best first (stable), and keep
    the better half (at least 2); returns how many are kept."""
    for i in range(1, live):
        x = alive[i]
        j = i
        while j > 0 and totals[alive[j - 1]] < totals[x]:
            alive[j] = alive[j - 1]
            j -= 1
        alive[j] = x
    return max(2, (live + 1) // 2)


@kernel
def run_search(clean: Any, w: Any, opts: Any, rng: Any, ranked: Any, ncand: int, totals: Any, counts: Any,
               alive: Any, info: Any) -> int:
    """The rollouts of the first ``ncand`` of ``ranked`` in sampled worlds, stage by stage,
    the worse half dropped after each stage, until ``iterations`` are spent; ``totals`` and
    ``counts`` get each candidate's sum of values and rollouts, ``alive`` the survivors in
    the order of the last halving. Returns how many survive."""
    me = clean[CURRENT]
    n = clean[NUM_PLAYERS]
    iterations = int(opts[O_ITERATIONS])
    depth = int(opts[O_DEPTH])
    stage = int(opts[O_STAGE])
    win_bonus = opts[O_WIN_BONUS]
    root_pi = np.zeros(INT_SIZE, dtype=np.int64)
    root_pf = np.zeros(FLOAT_SIZE, dtype=np.float64)
    plan_context(clean, me, w, root_pi, root_pf)
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
    for i in range(ncand):
        totals[i] = 0.0
        counts[i] = 0
        alive[i] = i
    live = ncand
    samples = 0
    rollouts = 0
    while True:
        determinise(clean, me, world, cards, rng)
        world_scales(world, me, w, root_pi, root_pf, spi, spf)
        for j in range(live):
            i = alive[j]
            state[:] = world
            apply(state, ranked[i])
            totals[i] += rollout(state, me, depth, win_bonus, w, spi, spf, pi, pf, mask, scores, values)
            counts[i] += 1
        rollouts += live
        samples += 1
        if rollouts + live > iterations:
            break
        if samples % stage == 0 and live > 2:
            live = halve(alive, live, totals)
    info[INFO_SAMPLES] = samples
    info[INFO_ROLLOUTS] = rollouts
    return live


@kernel
def _choose(values: Any, ranked: Any, count: int, ncand: int, totals: Any, counts: Any, alive: Any, live: int,
            prior: float, samples: int, out_actions: Any, out_ranks: Any, out_counts: Any, out_means: Any,
            out_scores: Any) -> int:
    """The survivor with the best mean shrunk towards the ranker by ``prior``
    pseudo-samples of the ranker's value differences; every legal action's statistics
    into the outputs (survivors first, in ``alive`` order)."""
    ref = values[ranked[0]]
    best_i = alive[0]
    best_score = -np.inf
    survivor = np.zeros(count, dtype=np.bool_)
    for j in range(live):
        i = alive[j]
        survivor[i] = True
        mean = totals[i] / samples
        s = (samples * mean + prior * (values[ranked[i]] - ref)) / (samples + prior)
        out_actions[j] = ranked[i]
        out_ranks[j] = values[ranked[i]]
        out_counts[j] = counts[i]
        out_means[j] = totals[i] / counts[i]
        out_scores[j] = s
        if s > best_score:
            best_i, best_score = i, s
    j = live
    for i in range(count):
        if survivor[i]:
            continue
        out_actions[j] = ranked[i]
        out_ranks[j] = values[ranked[i]]
        out_counts[j] = counts[i] if i < ncand else 0
        out_means[j] = totals[i] / counts[i] if i < ncand and counts[i] else np.nan
        out_scores[j] = np.nan
        j += 1
    return int(ranked[best_i])


@kernel
def search(root: Any, w: Any, opts: Any, rng: Any, out_actions: Any, out_ranks: Any, out_counts: Any,
           out_means: Any, out_scores: Any, info: Any) -> int:
    """One decision of the searcher to move in ``root`` (a state row; what it may not see is
    ignored) with plan weights ``w`` (:func:`~.kernels_plan.weights`), settings ``opts``
    (:data:`OPTION_NAMES`) and SplitMix64 state ``rng`` (one ``uint64``). Returns the action
    (-1 when the game is over). Every legal action is listed in ``out_actions`` (its
    ranker value in ``out_ranks``): the survivors of the halving first, in the order they
    were scored, then the others best-ranked first; ``out_counts`` holds each one's
    rollouts, ``out_means`` its mean value (NaN if none) and ``out_scores`` the survivors'
    scores (NaN for the others); ``info`` the counts of :data:`INFO_RANKED` etc."""
    me = root[CURRENT]
    clean = root.copy()
    clear_hidden(clean, me)
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    ranked = np.zeros(NUM_ACTIONS, dtype=np.int64)
    count = rank(clean, w, mask, values, ranked)
    info[INFO_RANKED] = count
    info[INFO_SAMPLES] = 0
    info[INFO_ROLLOUTS] = 0
    for j in range(count):
        out_actions[j] = ranked[j]
        out_ranks[j] = values[ranked[j]]
        out_counts[j] = 0
        out_means[j] = np.nan
        out_scores[j] = np.nan
    if count == 0:
        return -1
    iterations = int(opts[O_ITERATIONS])
    best = values[ranked[0]]
    if count == 1 or best >= WINNING or iterations == 0:
        return int(ranked[0])  # a lone action, a win on the spot, or no search: the ranker's choice
    top_k = min(int(opts[O_TOP_K]), max(2, iterations // int(opts[O_PER_CANDIDATE])), count)
    cut = best - opts[O_MARGIN]
    ncand = 0
    while ncand < top_k and values[ranked[ncand]] >= cut:
        ncand += 1
    if ncand <= 1:
        return int(ranked[0])
    totals = np.zeros(ncand, dtype=np.float64)
    counts = np.zeros(ncand, dtype=np.int64)
    alive = np.zeros(ncand, dtype=np.int64)
    live = run_search(clean, w, opts, rng, ranked, ncand, totals, counts, alive, info)
    return int(_choose(values, ranked, count, ncand, totals, counts, alive, live, opts[O_PRIOR], info[INFO_SAMPLES],
                       out_actions, out_ranks, out_counts, out_means, out_scores))


def options(bot: Any) -> np.ndarray:
    """The settings of ``bot`` (an ``ISMCTSBot`` with a budget in iterations) as :func:`search`
    takes them (:data:`OPTION_NAMES`)."""
    return np.array([bot.iterations, bot.top_k, bot.depth, bot.stage, bot.prior, bot.win_bonus, bot.margin,
                     bot.rollouts_per_candidate], dtype=np.float64)


__all__ = ["INFO_RANKED", "INFO_ROLLOUTS", "INFO_SAMPLES", "INFO_SIZE", "OPTION_NAMES", "WINNING", "clear_hidden",
           "determinise", "evaluate", "fixed_plan", "options", "plan_total", "policy_action", "rank", "rollout",
           "run_search", "search", "unseen_cards", "world_scales"]
