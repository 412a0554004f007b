"""The card game's compiled core, batched (numba, the ``fast`` extra): new deals, random
legal play, and one call that steps N games with auto-reset, for every seat
(:func:`step_games`) or for a learner against random, heuristic or planner opponents
(:func:`learner_step`; the heuristic is :mod:`.kernels_heuristic`, the planner
:mod:`.kernels_planner`), with the learner view's observation features (:data:`FEATURES`:
``plan`` and ``rows``, :func:`observe`) computed in the step.

States are rows of :mod:`.kernels`; a batch is a 2-D array of them (one game per row) with
one generator per game (:func:`keltis_env.core.kernels.seed_generators`) and a pair of deal
seeds per game (the current game's and the next's): a new deal is the Python engine's deal
from its seed, and the seed after is drawn from the game's generator. The kernels that
deal, play at random, and start, act in, advance, observe and settle games for the one
driver's table are both games' (:mod:`keltis_env.core.batch_kernels`), compiled over this
game's rows.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from keltis_env.core.batch_kernels import batch_kernels
from keltis_env.core.kernels import (
    MT_WORDS,
    SHAPED,
    BatchKernels,
    borrow,
    final_reward,
    inlined,
    kernel,
    mt_below,
    mt_sample,
    mt_seed,
    mt_shuffle,
    potential,
)

from .actions import NUM_ACTIONS
from .config import GameConfig
from .constants import (
    COPIES_PER_CARD,
    DARK_STONES_PER_PATH,
    END_ROW,
    HAND_SIZE,
    MAX_PLAYERS,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    REMOVED_CARDS,
    TILE_SET,
    EndReason,
    Phase,
)
from .game import GAME
from .kernels import (
    CLOSED,
    CURRENT,
    DARK,
    DECK,
    DECK_SIZE,
    DIRECTION,
    END,
    FIRST,
    GOAL,
    HAND,
    HAND_SIZES,
    LARGE,
    LAST,
    LAYOUT_SIZE,
    MAX_TURNS,
    NOTE_SIZE,
    NUM_PLAYERS,
    PHASE,
    PLAYED,
    RANDOM_LAYOUT,
    REMOVED,
    STATE_SIZE,
    TILES,
    TURN,
    apply,
    apply_noted,
    counts_scratch,
    encode,
    encode_noted,
    encoder_layout,
    legal_mask,
    scores,
    step,
    unpack,
)
from .kernels_heuristic import heuristic_action, options
from .kernels_planner import action_values, best_action, planner_action
from .kernels_planner import options as planner_weights

_C, _K = NUM_COLORS, NUM_CARD_KINDS
_PLAY, _OVER, _TRUNCATED = int(Phase.PLAY), int(Phase.OVER), int(EndReason.TRUNCATED)
_TILE_SET = np.array(TILE_SET, dtype=np.int32)
_COLOUR_CARDS = NUM_CARDS // NUM_COLORS  # the rows feature's scale (encoding._MAX_PILE)
_REMOVED = np.array([REMOVED_CARDS.get(n, 0) for n in range(MAX_PLAYERS + 1)], dtype=np.int32)

#: the opponents the compiled step plays, numbered as ``learner_step`` takes them
OPPONENTS = ("random", "heuristic", "planner")
HEURISTIC = OPPONENTS.index("heuristic")
PLANNER = OPPONENTS.index("planner")
#: a seat's player in :func:`advance_games` that is decided outside the kernels (a neural
#: policy, a bot the kernels do not have): the kernel stops there
OUTSIDE = len(OPPONENTS)


# ---------------------------------------------------------------------- deals and batches
@kernel
def deal_seeded(s: Any, seed: int, mt: Any) -> None:
    """The Python engine's deal from ``seed`` (R2, ``GameState.new_game(config, seed)``) in
    row ``s``, with the options already in it (players, turn cap, layout: the dark rows
    kept, or drawn when ``RANDOM_LAYOUT``), drawing as it draws (``mt``: scratch space for
    its generator, :func:`keltis_env.core.kernels.mt_scratch`)."""
    mt_seed(mt, seed)
    n = s[NUM_PLAYERS]
    if s[RANDOM_LAYOUT]:  # GameConfig.dark_rows: a sample of the middle rows per path
        pool = np.empty(END_ROW - 1, dtype=np.int32)
        picked = np.empty(DARK_STONES_PER_PATH, dtype=np.int32)
        for c in range(_C):
            for r in range(END_ROW - 1):
                pool[r] = r + 1
            mt_sample(pool, DARK_STONES_PER_PATH, mt, picked)
            s[DARK + c * DARK_STONES_PER_PATH:DARK + (c + 1) * DARK_STONES_PER_PATH] = np.sort(picked)
    s[HAND:DARK] = 0  # everything but the scalars (the options among them) and the dark rows
    tiles = _TILE_SET.copy()
    mt_shuffle(tiles, len(tiles), mt)
    at = 0
    for c in range(_C):
        for j in range(DARK_STONES_PER_PATH):
            s[TILES + c * (END_ROW + 1) + s[DARK + c * DARK_STONES_PER_PATH + j]] = tiles[at]
            at += 1
    for c in range(_C):
        s[TILES + c * (END_ROW + 1) + END_ROW] = tiles[at]
        at += 1
    cards = np.empty(NUM_CARDS, dtype=np.int32)
    for k in range(NUM_CARDS):
        cards[k] = k // COPIES_PER_CARD
    mt_shuffle(cards, NUM_CARDS, mt)
    removed = _REMOVED[n]
    for j in range(removed):
        s[REMOVED + cards[j]] += 1
    for p in range(n):
        for j in range(HAND_SIZE):
            s[HAND + p * _K + cards[removed + p * HAND_SIZE + j]] += 1
        s[HAND_SIZES + p] = HAND_SIZE
        s[LARGE + p] = -1
        for c in range(_C):
            s[LAST + p * _C + c] = -1
    start = removed + n * HAND_SIZE
    s[DECK_SIZE] = NUM_CARDS - start
    s[DECK:DECK + NUM_CARDS - start] = cards[start:]
    s[FIRST] = mt_below(mt, n)
    s[CURRENT] = s[FIRST]
    s[PHASE] = _PLAY
    s[END] = 0
    s[TURN] = 0
    s[GOAL] = 0
    s[CLOSED] = -1



#: where :func:`encoding_args` puts the features in the layout it returns (after the
#: standard encoder's entries): the start of the ``plan`` and the ``rows`` segments (-1: none)
L_PLAN_AT, L_ROWS_AT = LAYOUT_SIZE, LAYOUT_SIZE + 1


@kernel
def rows_into(s: Any, me: int, out: Any, at: int) -> None:
    """``me``'s ``rows`` feature of ``s`` into ``out[at:]``, as
    :func:`~keltis_env.games.keltis.encoding.fill_rows` writes it (R4: which rows take each
    card, and what putting it on the observer's row would cut off)."""
    n = s[NUM_PLAYERS]
    out[at:at + 3 * NUM_CARD_KINDS] = 0.0
    for i in range(n):
        p = (me + i) % n
        for c in range(NUM_COLORS):
            last = s[LAST + p * NUM_COLORS + c]
            d = s[DIRECTION + p * NUM_COLORS + c]
            for v in range(NUM_VALUES):
                if not (last < 0 or d == 0 or (v >= last if d > 0 else v <= last)):
                    continue
                k = c * NUM_VALUES + v
                if i:
                    out[at + 2 * NUM_CARD_KINDS + k] += 1.0 / (n - 1)
                    continue
                out[at + k] = 1.0
                lo, hi = 0, 0  # encoding.row_cut
                if last >= 0 and v != last:
                    if v > last:
                        lo, hi = (0 if d == 0 else last), v
                    else:
                        lo, hi = v + 1, (NUM_VALUES if d == 0 else last + 1)
                free = 0
                for w in range(lo, hi):
                    free += COPIES_PER_CARD
                    for q in range(n):
                        free -= s[PLAYED + q * NUM_CARD_KINDS + c * NUM_VALUES + w]
                out[at + NUM_CARD_KINDS + k] = free / _COLOUR_CARDS


@kernel
def observe(s: Any, me: int, layout: Any, scale: Any, offset: Any, score_scale: float, counts: Any, plan: bool,
            plan_scale: float, plan_weights: Any, mask: Any, values: Any, out: Any) -> None:
    """``me``'s observation of ``s`` into ``out``: the standard part (:func:`encode`) and, with
    ``plan``, the ``plan`` feature after it, as
    :func:`~keltis_env.games.keltis.encoding.fill_plan` writes it: where ``me`` is to act,
    ``plan.values`` = ``max(0, 1 + (value - best) / plan_scale)`` for each legal action (the
    plan model's values with ``plan_weights``, :func:`.kernels_planner.action_values`) and
    ``plan.choice`` the one-hot of the planner's choice; zeros elsewhere; and the ``rows``
    feature where ``layout`` places it (:func:`rows_into`). ``mask`` (int8) and ``values``
    (float64), one entry per action, are scratch space."""
    encode(s, me, layout, scale, offset, score_scale, counts, out)
    observe_features(s, me, layout, plan, plan_scale, plan_weights, mask, values, out)


@kernel
def observe_features(s: Any, me: int, layout: Any, plan: bool, plan_scale: float, plan_weights: Any, mask: Any,
                     values: Any, out: Any) -> None:
    """The features of :func:`observe` (``rows`` where ``layout`` places it, ``plan`` with
    ``plan``) into ``out``, the rest of it left as it is."""
    if layout[L_ROWS_AT] >= 0:
        rows_into(s, me, out, layout[L_ROWS_AT])
    if not plan:
        return
    base = layout[L_PLAN_AT]
    out[base:base + 2 * NUM_ACTIONS] = 0.0
    if s[PHASE] == _OVER or s[CURRENT] != me or action_values(s, mask, plan_weights, values) == 0:
        return
    choice = best_action(mask, values)
    best = values[choice]
    for a in range(NUM_ACTIONS):
        if mask[a]:
            x = 1.0 + (values[a] - best) / plan_scale
            out[base + a] = x if x > 0.0 else 0.0  # Python's max(0.0, x)
    out[base + NUM_ACTIONS + choice] = 1.0


@kernel
def bot_action(s: Any, mask: Any, kind: int, k: int, opts: Any, weights: Any) -> int:
    """The choice of player ``k`` of kind ``kind``: the heuristic with options ``opts[k]``
    (:data:`HEURISTIC`) or the planner with weights ``weights[k]`` (:data:`PLANNER`);
    ``mask`` is scratch space."""
    if kind == HEURISTIC:
        return int(heuristic_action(s, mask, opts[k]))
    return int(planner_action(s, mask, weights[k]))


# the batched kernels both games share (keltis_env.core.batch_kernels), over this game's rows
_KIT = batch_kernels("keltis", deal_seeded=deal_seeded, step=step, apply=apply, legal_mask=legal_mask, scores=scores,
                     observe=observe, bot_action=bot_action, NUM_ACTIONS=NUM_ACTIONS, MAX_PLAYERS=MAX_PLAYERS,
                     NUM_PLAYERS=NUM_PLAYERS, PHASE=PHASE, CURRENT=CURRENT, END=END, OVER=_OVER,
                     RANDOM=OPPONENTS.index("random"), OUTSIDE=OUTSIDE)
deal, random_action, deal_games = _KIT.deal, _KIT.random_action, _KIT.deal_games
start_games, act_games, advance_games = _KIT.start_games, _KIT.act_games, _KIT.advance_games
observe_games, step_games, settle_games = _KIT.observe_games, _KIT.step_games, _KIT.settle_games




@kernel
def _opponents(s: Any, seat: int, mask: Any, rng: Any, g: int, opponent: int, opts: Any, weights: Any) -> None:
    """The opponents (``opponent``: 0 random, 1 the heuristic with options ``opts``, 2 the
    planner with weights ``weights``) move until ``seat`` is to move or the game is over."""
    while s[PHASE] != _OVER and s[CURRENT] != seat:
        if opponent == HEURISTIC:
            apply(s, heuristic_action(s, mask, opts))
        elif opponent == PLANNER:
            apply(s, planner_action(s, mask, weights))
        else:
            apply(s, random_action(s, mask, rng, g))


@inlined
def _opponents_noted(s: Any, seat: int, mask: Any, rng: Any, g: int, opponent: int, opts: Any, weights: Any,
                     notes: Any) -> None:
    """:func:`_opponents`, noting what their moves change in ``seat``'s observation
    (:func:`~.kernels.apply_noted`)."""
    while s[PHASE] != _OVER and s[CURRENT] != seat:
        if opponent == HEURISTIC:
            action = heuristic_action(s, mask, opts)
        elif opponent == PLANNER:
            action = planner_action(s, mask, weights)
        else:
            action = random_action(s, mask, rng, g)
        apply_noted(s, action, seat, notes)


@kernel
def _start(s: Any, seat: int, mask: Any, rng: Any, g: int, seeds: Any, mt: Any, final: Any, last_potential: Any,
           opponent: int, opts: Any, weights: Any) -> None:
    """A new game in row ``s``, its opponents moved until ``seat`` is to move; the shaped
    reward's base is the deal's potential, as the match loop pays it."""
    deal(s, rng, g, seeds, mt)
    scores(s, final)
    last_potential[g] = potential(final, s[NUM_PLAYERS], seat)
    _opponents(s, seat, mask, rng, g, opponent, opts, weights)


@kernel
def learner_step(states: Any, seats: Any, actions: Any, rng: Any, seeds: Any, reward_mode: int, cap_ends: bool,
                 next_step: bool, layout: Any, scale: Any, offset: Any, score_scale: float, counts: Any, plan: bool,
                 plan_scale: float, plan_weights: Any, opponent: int, opts: Any, weights: Any, obs: Any, masks: Any,
                 rewards: Any, terminated: Any, truncated: Any, final_scores: Any, final_obs: Any, pending: Any,
                 last_potential: Any, legal: Any) -> None:
    """One learner step in each of N games against random opponents, (``opponent`` = 1) the
    compiled heuristic with options ``opts`` (:mod:`.kernels_heuristic`) or (``opponent`` =
    2) the compiled planner with weights ``weights`` (:mod:`.kernels_planner`): the learner
    (seat ``seats[g]``) plays ``actions[g]``, the opponents move until it is to move again.
    Rewards as the learner view pays them (``reward_mode`` numbered as ``REWARD_MODES``;
    an illegal action: -1 and the episode ends); a game cut at its turn cap is truncated,
    or ends when ``cap_ends``. ``final_scores[g]`` gets the scores of a game that ends, and
    ``last_potential`` holds each learner's potential after its previous step (the shaped
    reward's base). Observations are :func:`observe`'s (``plan``: with the ``plan``
    feature, the plan model's values with ``plan_weights`` over ``plan_scale``).

    Auto-reset: a game that ends is dealt again and its opponents move, at once (``obs``
    and ``masks`` are then the new game's, ``final_obs[g]`` the ended game's last
    observation), or with ``next_step`` at the next call (Gymnasium's default: ``obs`` is
    the ended game's last observation, its mask all 0, ``pending[g]`` is set, and the next
    call deals, ignores the action and pays 0)."""
    mask = masks[0].copy()
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    final = np.zeros(MAX_PLAYERS, dtype=np.int64)
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint64)
    notes = np.zeros(NOTE_SIZE, dtype=np.int64)
    _learner_games(states, seats, actions, rng, seeds, reward_mode, cap_ends, next_step, layout, scale, offset,
                   score_scale, counts, plan, plan_scale, plan_weights, opponent, opts, weights, obs, masks,
                   rewards, terminated, truncated, final_scores, final_obs, pending, last_potential, legal, mask,
                   values, final, mt, notes)


@kernel
def _learner_games(states: Any, seats: Any, actions: Any, rng: Any, seeds: Any, reward_mode: int, cap_ends: bool,
                   next_step: bool, layout: Any, scale: Any, offset: Any, score_scale: float, counts: Any,
                   plan: bool, plan_scale: float, plan_weights: Any, opponent: int, opts: Any, weights: Any,
                   obs: Any, masks: Any, rewards: Any, terminated: Any, truncated: Any, final_scores: Any,
                   final_obs: Any, pending: Any, last_potential: Any, legal: Any, mask: Any, values: Any,
                   final: Any, mt: Any, notes: Any) -> None:
    """:func:`learner_step`'s loop, with its scratch space (``mask`` .. ``notes``)."""
    features = plan or layout[L_ROWS_AT] >= 0
    # every array here lives as long as the call (learner_step holds it): borrowed, the rows
    # taken of them and passed on cost no atomic reference counting (a quarter of the time)
    states, obs, legal, rng = borrow(states), borrow(obs), borrow(legal), borrow(rng)
    layout, scale, offset = borrow(layout), borrow(scale), borrow(offset)
    mask, final, notes, final_obs = borrow(mask), borrow(final), borrow(notes), borrow(final_obs)
    for g in range(states.shape[0]):
        s = states[g]
        seat = seats[g]
        n = s[NUM_PLAYERS]
        terminated[g] = False
        truncated[g] = False
        for p in range(final_scores.shape[1]):
            final_scores[g, p] = 0
        action = actions[g]
        # obs[g] holds the learner's observation of the row from the previous call: moves
        # rewrite only what they change in it (apply_noted, encode_noted), a new game all of it
        started = pending[g]
        if pending[g]:  # the game ended at the previous call (next-step auto-reset): the action is ignored
            pending[g] = False
            rewards[g] = 0.0
            _start(s, seat, mask, rng, g, seeds, mt, final, last_potential, opponent, opts, weights)
        elif not (0 <= action < NUM_ACTIONS and legal[g, action]):
            rewards[g] = -1.0  # an illegal action changes nothing
            terminated[g] = True
        else:
            apply_noted(s, action, seat, notes)
            _opponents_noted(s, seat, mask, rng, g, opponent, opts, weights, notes)
            encode_noted(s, seat, notes, layout, scale, offset, score_scale, obs[g])
            scores(s, final)
            now = potential(final, n, seat)
            reward = now - last_potential[g] if reward_mode == SHAPED else 0.0
            if s[PHASE] == _OVER:
                final_scores[g, :n] = final[:n]
                if reward_mode != SHAPED:
                    reward = final_reward(final, n, seat, reward_mode)
                truncated[g] = s[END] == _TRUNCATED and not cap_ends
                terminated[g] = not truncated[g]
            rewards[g] = reward
            last_potential[g] = now
        if (terminated[g] or truncated[g]) and next_step:
            pending[g] = True
            masks[g, :] = 0
            legal[g, :] = 0
            observe_features(s, seat, layout, plan, plan_scale, plan_weights, mask, values, obs[g])
            continue
        if terminated[g] or truncated[g]:
            final_obs[g, :] = obs[g]
            observe_features(s, seat, layout, plan, plan_scale, plan_weights, mask, values, final_obs[g])
            _start(s, seat, mask, rng, g, seeds, mt, final, last_potential, opponent, opts, weights)
            started = True
        legal_mask(s, legal[g])
        for a in range(NUM_ACTIONS):
            masks[g, a] = legal[g, a]
        if started:
            observe(s, seat, layout, scale, offset, score_scale, counts, plan, plan_scale, plan_weights, mask, values,
                    obs[g])
        elif features:
            observe_features(s, seat, layout, plan, plan_scale, plan_weights, mask, values, obs[g])


@kernel
def privileged_games(states: Any, games: Any, mes: Any, rows: Any, at: int, out: Any) -> None:
    """What seat ``mes[j]`` of game ``games[j]`` does not see into ``out[rows[j], at:]``, as
    :class:`~keltis_env.games.keltis.encoding.PrivilegedEncoder` writes it: the other seats'
    hands in turn order from the seat, then the removed cards, copies of each kind / 2."""
    for j in range(games.shape[0]):
        s = states[games[j]]
        n = s[NUM_PLAYERS]
        me = mes[j]
        r = rows[j]
        for i in range(1, n):
            p = (me + i) % n
            for k in range(_K):
                out[r, at + (i - 1) * _K + k] = np.float32(0.5) * s[HAND + p * _K + k]
        for k in range(_K):
            out[r, at + (n - 1) * _K + k] = np.float32(0.5) * s[REMOVED + k]


def new_games(config: GameConfig, count: int, rng: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """``count`` rows of new games with options ``config``, row ``g`` the Python engine's deal
    from ``seeds[g, 1]`` (:func:`deal`; ``rng``: one generator per game,
    :func:`keltis_env.core.kernels.seed_generators`, which draws the seeds after)."""
    states = np.zeros((count, STATE_SIZE), dtype=np.int32)
    states[:, NUM_PLAYERS] = config.num_players
    states[:, MAX_TURNS] = config.max_turns
    states[:, RANDOM_LAYOUT] = config.tile_layout == "random"
    if config.tile_layout != "random":
        states[:, DARK:DARK + _C * DARK_STONES_PER_PATH] = np.array(config.dark_rows(), dtype=np.int32).ravel()
    deal_games(states, rng, seeds)
    return states


#: the observation features the compiled step computes (:func:`observe`)
FEATURES = ("plan", "rows")


def encoding_args(num_players: int, features: tuple[str, ...] = ()) -> tuple[int, tuple[Any, ...]]:
    """The observation size with ``features`` (of :data:`FEATURES`) and :func:`observe`'s
    arguments for ``num_players`` players: the Python encoder's layout, scale, offset and
    score scale, scratch counts, and whether to add the ``plan`` feature, its scale and the
    plan model's default weights (those of the feature)."""
    encoder = GAME.make_encoder(num_players, features)  # the one layout (its encoding module, loaded on demand)
    base = getattr(encoder, "base", encoder)  # the standard part of an encoder with features
    layout, scale, offset, score_scale = encoder_layout(base)
    starts = {seg.name: seg.start for seg in encoder.segments}
    layout = np.concatenate([layout, np.array([starts.get("plan.values", -1), starts.get("rows.fits", -1)],
                                              dtype=layout.dtype)])
    # loaded on demand, as the encoder is, and not statically: the encoder's imports (the bots'
    # plan model) are outside the modules pyproject's mypy section checks
    plan_scale = float(importlib.import_module(f"{__package__}.encoding").PLAN_SCALE)

    return encoder.size, (layout, scale, offset, score_scale, counts_scratch(base.size),
                          "plan" in features, plan_scale, planner_weights())


def opponent_args(spec: str) -> tuple[Any, ...]:
    """``learner_step``'s opponent arguments for an agent spec of :data:`OPPONENTS`
    (``heuristic`` with its options, e.g. ``heuristic:paths=3,gap=3``; ``planner``, which
    has none): the opponent's number, the heuristic's options and the planner's weights
    (the defaults for the opponents that do not read them). The bots' registry checks the
    spec's options, so a bad one is refused as ``make_bot`` refuses it."""
    name = spec.split(":", 1)[0] if isinstance(spec, str) else None
    if name not in OPPONENTS:
        raise ValueError(f"opponents must be one of {', '.join(map(repr, OPPONENTS))} (the compiled core's), "
                         f"got {spec!r}")
    # the bots' registry, loaded by name (outside the strictly type-checked engine modules)
    bot = importlib.import_module("keltis_env.bots").make_bot(spec, game="keltis")  # random's options checked too
    return (OPPONENTS.index(name), options(bot if name == "heuristic" else None),
            planner_weights(bot if name == "planner" else None))


def opponent_tables(specs: list[str | None]) -> tuple[Any, ...]:
    """:func:`advance_games`'s player arguments for the players ``specs`` (an agent spec of
    :data:`OPPONENTS`, or ``None`` for a player decided outside): their kinds, the
    heuristic's options and the planner's weights, one row per player."""
    rows = [opponent_args(spec) if spec is not None else (OUTSIDE, options(None), planner_weights(None))
            for spec in specs] or [(OUTSIDE, options(None), planner_weights(None))]
    return (np.array([r[0] for r in rows], dtype=np.int64), np.stack([r[1] for r in rows]),
            np.stack([r[2] for r in rows]))


#: this game's kernels, as :class:`keltis_env.compiled.batch.LearnerBatch` steps them
KERNELS = BatchKernels(new_games, learner_step, encoding_args, NUM_ACTIONS, unpack, opponent_args, FEATURES)


__all__ = ["FEATURES", "HEURISTIC", "KERNELS", "OPPONENTS", "OUTSIDE", "PLANNER", "act_games", "advance_games",
           "bot_action", "deal", "deal_games", "encoding_args", "learner_step", "new_games", "observe", "observe_games",
           "opponent_args", "opponent_tables", "privileged_games", "random_action", "settle_games", "start_games",
           "step_games"]
