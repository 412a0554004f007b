"""The dice game's compiled core, batched (numba, the ``fast`` extra): new deals, random
legal play, and one call that steps N games with auto-reset, for every seat
(:func:`step_games`) or for a learner against random opponents (:func:`learner_step`).

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
    GOLDEN,
    MT_WORDS,
    SHAPED,
    BatchKernels,
    final_reward,
    kernel,
    mix64,
    mt_below,
    mt_sample,
    mt_seed,
    mt_shuffle,
    potential,
)

from .actions import NUM_ACTIONS
from .config import GameConfig
from .constants import (
    BONUS_SYMBOLS,
    BONUSES_PER_COLUMN,
    MAX_PLAYERS,
    NUM_COLORS,
    RANDOM_BONUS_ROWS,
    TOP_ROW,
    UPPER_MARKERS_TO_END,
    EndReason,
    Phase,
)
from .game import GAME
from .kernels import (
    BONUS,
    CURRENT,
    END,
    EXTRA,
    FIRST,
    KEY,
    MAX_TURNS,
    NUM_PLAYERS,
    PHASE,
    POS,
    RANDOM_LAYOUT,
    ROLLS,
    SEED,
    STATE_SIZE,
    TURN,
    UPPER_TO_END,
    UPPER_TOTAL,
    apply,
    encode,
    encoder_layout,
    legal_mask,
    roll_all,
    scores,
    step,
    unpack,
)
from .kernels_heuristic import TABLES, heuristic_action, options

_C, _ROWS = NUM_COLORS, TOP_ROW + 1
_OVER, _TRUNCATED = int(Phase.OVER), int(EndReason.TRUNCATED)
_SYMBOLS = np.array(BONUS_SYMBOLS, dtype=np.int64)
_BONUS_ROWS = np.array(RANDOM_BONUS_ROWS, dtype=np.int64)
_UPPER_TO_END = np.array([UPPER_MARKERS_TO_END.get(n, 0) for n in range(MAX_PLAYERS + 1)], dtype=np.int64)

#: the opponents the compiled step plays, numbered as ``learner_step`` takes them
OPPONENTS = ("random", "heuristic")
HEURISTIC = OPPONENTS.index("heuristic")
#: a seat's player in :func:`advance_games` that is decided outside the kernels (a neural
#: policy, a bot the kernels do not have): the kernel stops there
OUTSIDE = len(OPPONENTS)


# ---------------------------------------------------------------------- deals and batches
@kernel
def deal_seeded(s: Any, seed: int, mt: Any) -> None:
    """The Python engine's new game from ``seed`` (``GameState.new_game(config, seed)``) in
    row ``s``, with the options already in it (players, turn cap, bonus board: kept, or
    drawn when ``RANDOM_LAYOUT``), drawing as it draws (``mt``: scratch space for its
    generator): the first seat, the random bonus board, the dice's key, the first roll."""
    mt_seed(mt, seed)
    n = s[NUM_PLAYERS]
    s[FIRST] = mt_below(mt, n)
    if s[RANDOM_LAYOUT]:  # GameConfig.bonus_squares
        symbols = _SYMBOLS.copy()
        mt_shuffle(symbols, len(symbols), mt)
        pool = _BONUS_ROWS.copy()
        picked = np.empty(BONUSES_PER_COLUMN, dtype=_BONUS_ROWS.dtype)
        s[BONUS:BONUS + _C * _ROWS] = 0
        for c in range(_C):
            pool[:] = _BONUS_ROWS
            mt_sample(pool, BONUSES_PER_COLUMN, mt, picked)
            picked.sort()
            for i in range(BONUSES_PER_COLUMN):
                s[BONUS + c * _ROWS + picked[i]] = symbols[c * BONUSES_PER_COLUMN + i]
    s[SEED] = seed
    s[KEY] = np.int64(mix64(np.uint64(seed) + GOLDEN))
    s[ROLLS] = 0
    s[POS:BONUS] = 0  # positions, markers, upper-zone markers, stones
    s[UPPER_TOTAL] = 0
    s[UPPER_TO_END] = _UPPER_TO_END[n]
    s[CURRENT] = s[FIRST]
    s[TURN] = 0
    s[EXTRA] = 0
    s[END] = 0
    roll_all(s)


@kernel
def observe(s: Any, me: int, layout: Any, scale: Any, score_scale: float, counts: Any, mask: Any, values: Any,
            out: Any) -> None:
    """``me``'s observation of ``s`` into ``out`` (:func:`encode`; the game has no observation
    features, so ``mask`` and ``values``, the card game's scratch space, are not read)."""
    encode(s, me, layout, scale, score_scale, counts, out)


@kernel
def bot_action(s: Any, mask: Any, kind: int, k: int, opts: Any, tables: Any) -> int:
    """The choice of player ``k`` of kind ``kind`` (:data:`HEURISTIC`, the only bot the kernels
    have): the heuristic with options ``opts[k]`` (``tables``: its tables); ``mask`` is
    scratch space."""
    return int(heuristic_action(s, mask, opts[k], tables))


# the batched kernels both games share (keltis_env.core.batch_kernels), over this game's rows
_KIT = batch_kernels("dice", deal_seeded=deal_seeded, step=step, apply=apply, legal_mask=legal_mask, scores=scores,
                     observe=observe, bot_action=bot_action, NUM_ACTIONS=NUM_ACTIONS, MAX_PLAYERS=MAX_PLAYERS,
                     NUM_PLAYERS=NUM_PLAYERS, PHASE=PHASE, CURRENT=CURRENT, END=END, OVER=_OVER,
                     RANDOM=OPPONENTS.index("random"), OUTSIDE=OUTSIDE)
deal, random_action, deal_games = _KIT.deal, _KIT.random_action, _KIT.deal_games
start_games, act_games, advance_games = _KIT.start_games, _KIT.act_games, _KIT.advance_games
observe_games, step_games, settle_games = _KIT.observe_games, _KIT.step_games, _KIT.settle_games




def new_games(config: GameConfig, count: int, rng: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """``count`` rows of new games with options ``config``, dealt from ``rng`` (one
    generator per game, :func:`keltis_env.core.kernels.seed_generators`)."""
    states = np.zeros((count, STATE_SIZE), dtype=np.int64)
    states[:, NUM_PLAYERS] = config.num_players
    states[:, MAX_TURNS] = config.max_turns
    states[:, RANDOM_LAYOUT] = config.bonus_layout == "random"
    if config.bonus_layout != "random":
        states[:, BONUS:BONUS + _C * _ROWS] = np.array(config.bonus_squares(), dtype=np.int64).ravel()
    deal_games(states, rng, seeds)
    return states


@kernel
def _opponents(s: Any, seat: int, mask: Any, rng: Any, g: int, opponent: int, opts: Any, tables: Any) -> None:
    """The opponents (``opponent``: 0 random, 1 the heuristic with options ``opts``) move
    until ``seat`` is to move or the game is over."""
    while s[PHASE] != _OVER and s[CURRENT] != seat:
        if opponent == HEURISTIC:
            apply(s, heuristic_action(s, mask, opts, tables))
        else:
            apply(s, random_action(s, mask, rng, g))


@kernel
def _start(s: Any, seat: int, mask: Any, rng: Any, g: int, seeds: Any, mt: Any, final: Any, last_potential: Any,
           opponent: int, opts: Any, tables: Any) -> None:
    """A new game in row ``s``, its opponents moved until ``seat`` is to move; the shaped
    reward's base is the deal's potential, as the match loop pays it."""
    deal(s, rng, g, seeds, mt)
    scores(s, final)
    last_potential[g] = potential(final, s[NUM_PLAYERS], seat)
    _opponents(s, seat, mask, rng, g, opponent, opts, tables)


@kernel
def learner_step(states: Any, seats: Any, actions: Any, rng: Any, seeds: Any, reward_mode: int, cap_ends: bool,
                 next_step: bool, layout: Any, scale: Any, score_scale: float, counts: Any, opponent: int, opts: Any,
                 tables: Any, obs: Any, masks: Any, rewards: Any,
                 terminated: Any, truncated: Any, final_scores: Any, final_obs: Any, pending: Any,
                 last_potential: Any, legal: Any) -> None:
    """One learner step in each of N games, as the card game's
    :func:`keltis_env.games.keltis.kernels_batch.learner_step` (the same rewards, turn caps
    and both auto-reset modes) with this game's rules and encoder, against random
    opponents or (``opponent`` = 1) the compiled heuristic with options ``opts``
    (:mod:`.kernels_heuristic`)."""
    mask = masks[0].copy()
    final = np.zeros(MAX_PLAYERS, dtype=np.int64)
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint64)
    for g in range(states.shape[0]):
        s = states[g]
        seat = seats[g]
        n = s[NUM_PLAYERS]
        terminated[g] = False
        truncated[g] = False
        final_scores[g, :] = 0
        if pending[g]:  # the game ended at the previous call (next-step auto-reset): the action is ignored
            pending[g] = False
            rewards[g] = 0.0
            _start(s, seat, mask, rng, g, seeds, mt, final, last_potential, opponent, opts, tables)
        elif not (0 <= actions[g] < NUM_ACTIONS and legal[g, actions[g]]):
            rewards[g] = -1.0  # an illegal action changes nothing
            terminated[g] = True
        else:
            apply(s, actions[g])
            _opponents(s, seat, mask, rng, g, opponent, opts, tables)
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
            encode(s, seat, layout, scale, score_scale, counts, obs[g])
            continue
        if terminated[g] or truncated[g]:
            encode(s, seat, layout, scale, score_scale, counts, final_obs[g])
            _start(s, seat, mask, rng, g, seeds, mt, final, last_potential, opponent, opts, tables)
        legal_mask(s, legal[g])
        masks[g, :] = legal[g]
        encode(s, seat, layout, scale, score_scale, counts, obs[g])


def opponent_args(spec: str) -> tuple[Any, ...]:
    """``learner_step``'s opponent arguments for an agent spec of :data:`OPPONENTS`
    (``heuristic`` with its options, e.g. ``heuristic:extra_turn_value=4``)."""
    name = spec.split(":", 1)[0] if isinstance(spec, str) else None
    if name not in OPPONENTS:
        raise ValueError(f"opponents must be one of {', '.join(map(repr, OPPONENTS))} (the compiled core's), "
                         f"got {spec!r}")
    # the bots' registry, loaded by name (outside the strictly type-checked engine modules)
    bot = importlib.import_module("keltis_env.bots").make_bot(spec, game="dice")  # random's options checked too
    return OPPONENTS.index(name), options(bot if name == "heuristic" else None), TABLES


def opponent_tables(specs: list[str | None]) -> tuple[Any, ...]:
    """:func:`advance_games`'s player arguments for the players ``specs`` (an agent spec of
    :data:`OPPONENTS`, or ``None`` for a player decided outside): their kinds, the
    heuristic's options (one row per player) and its tables."""
    rows = [opponent_args(spec)[:2] if spec is not None else (OUTSIDE, options(None)) for spec in specs]
    rows = rows or [(OUTSIDE, options(None))]
    return np.array([r[0] for r in rows], dtype=np.int64), np.stack([r[1] for r in rows]), TABLES


def encoding_args(num_players: int, features: tuple[str, ...] = ()) -> tuple[int, tuple[Any, ...]]:
    """The observation size and :func:`encode`'s arguments for ``num_players`` players:
    the Python encoder's layout, scale and score scale, and scratch counts. The game has no
    observation features (``features`` is empty: :class:`~keltis_env.compiled.batch.LearnerBatch`
    refuses any)."""
    encoder = GAME.make_encoder(num_players)  # the one observation layout (its encoding module, loaded on demand)
    layout, scale, score_scale = encoder_layout(encoder)
    return encoder.size, (layout, scale, score_scale, np.zeros(encoder.size, dtype=np.int64))


#: this game's kernels, as :class:`keltis_env.compiled.batch.LearnerBatch` steps them
KERNELS = BatchKernels(new_games, learner_step, encoding_args, NUM_ACTIONS, unpack, opponent_args)


__all__ = ["HEURISTIC", "KERNELS", "OPPONENTS", "OUTSIDE", "act_games", "advance_games", "bot_action", "deal",
           "deal_games", "encoding_args", "learner_step", "new_games", "observe", "observe_games", "opponent_args",
           "opponent_tables", "random_action", "settle_games", "start_games", "step_games"]
