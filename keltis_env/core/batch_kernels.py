"""The batched kernels every game's compiled core shares, written once (numba, the ``fast``
extra): deals from seeds, random play, the calls that start, act in, advance, observe
and settle games for the one driver's table, and one that steps every game with each seat
decided by the caller (:func:`step_games`) (:class:`keltis_env.compiled.table.GameTable`).

Each is a plain function here over a game's row kernels, compiled once per game by
:func:`batch_kernels` with that game's kernels as its globals: numba compiles a global
call into the caller, and caches the result on disk under the game's name. (A kernel that
takes another kernel as an argument is not cached at all, and one that closes over kernels
is cached under a key that changes in every process, which hashes the pickled kernels
with their random ids.) What a game gives is :data:`ROW_KERNELS`.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import numpy as np

from .kernels import MT_WORDS, SHAPED, below, borrow, final_reward, inlined, kernel, potential, take_deal_seed

#: what :func:`batch_kernels` takes from a game: its row kernels and the row's offsets
ROW_KERNELS = (
    "deal_seeded",  # deal_seeded(s, seed, mt): the Python engine's deal from seed into row s
    "step",  # step(s, action, mask) -> bool: the action if legal (mask: scratch)
    "apply",  # apply(s, action): a legal action
    "legal_mask",  # legal_mask(s, mask) -> int: the legal actions of the seat to move, and their number
    "scores",  # scores(s, out): every seat's score
    "observe",  # observe(s, me, *encoding, mask, values, out): me's observation (mask, values: scratch)
    "bot_action",  # bot_action(s, mask, kind, k, opts, extra) -> int: the choice of player k, of a bot kind
    "NUM_ACTIONS",
    "MAX_PLAYERS",
    "NUM_PLAYERS",  # the offsets of a row's player count, phase, seat to move and end reason
    "PHASE",
    "CURRENT",
    "END",
    "OVER",  # the phase of a game that is over
    "RANDOM",  # the player kinds: random play, and a seat decided outside the kernels
    "OUTSIDE",
)

# Declared, not defined (ruff: the F821 of the whole file): each game's copies of the kernels
# below see its own (batch_kernels).
# ruff: noqa: F821
deal_seeded: Any
step: Any
apply: Any
legal_mask: Any
scores: Any
observe: Any
bot_action: Any
NUM_ACTIONS: int
MAX_PLAYERS: int
NUM_PLAYERS: int
PHASE: int
CURRENT: int
END: int
OVER: int
RANDOM: int
OUTSIDE: int


def deal(s: Any, rng: Any, g: int, seeds: Any, mt: Any) -> None:
    """The next game of slot ``g`` in row ``s``: the Python engine's deal from the slot's next
    seed (:func:`keltis_env.core.kernels.take_deal_seed`; ``mt``: scratch space)."""
    deal_seeded(s, take_deal_seed(rng, g, seeds), mt)


def random_action(s: Any, mask: Any, rng: Any, g: int) -> int:
    """A legal action drawn uniformly from game ``g``'s generator (``mask`` is scratch space);
    -1 when the game is over."""
    count = legal_mask(s, mask)
    if count == 0:
        return -1
    pick = below(rng, g, count)
    for a in range(NUM_ACTIONS):
        if mask[a]:
            if pick == 0:
                return a
            pick -= 1
    return -1


def deal_games(states: Any, rng: Any, seeds: Any) -> None:
    """Deal the next game in every row (:func:`deal`; slot ``g`` for row ``g``)."""
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint64)
    for g in range(states.shape[0]):
        deal(states[g], rng, g, seeds, mt)


def start_games(states: Any, seats: Any, games: Any, rng: Any, seeds: Any, fresh: Any, last_potential: Any) -> None:
    """Start the games ``games``: deal row ``g`` from generator ``g`` where ``fresh[j]`` (else
    the row holds a position already), and set the shaped reward's base, the learner's
    (seat ``seats[g]``) potential at the start, as the match loop pays it."""
    final = np.zeros(MAX_PLAYERS, dtype=np.int64)
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint64)
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        if fresh[j]:
            deal(s, rng, g, seeds, mt)
        scores(s, final)
        last_potential[g] = potential(final, s[NUM_PLAYERS], seats[g])


def act_games(states: Any, games: Any, actions: Any, legal: Any, decisions: Any, log: Any, counts: Any) -> None:
    """``actions[j]`` for the seat to move in game ``games[j]``; ``legal[j]`` says whether it
    was legal (an illegal action changes nothing). A legal one is counted and logged as
    :func:`advance_games` counts and logs its moves."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    states = borrow(states)  # the caller holds it: its rows cost no reference counting
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        p = s[CURRENT]
        legal[j] = step(s, actions[j], mask)
        if legal[j]:
            decisions[g, p] += 1
            if counts[g] < log.shape[1]:
                log[g, counts[g]] = actions[j]
            counts[g] += 1


def advance_games(states: Any, seats: Any, games: Any, who: Any, rng: Any, waiting: Any, decisions: Any, log: Any,
                  counts: Any, kinds: Any, opts: Any, extra: Any) -> None:
    """Play the kernels' players in the games ``games`` until each is at its learner's turn
    (seat ``seats[g]``; -1: none), over, or at a seat whose player is decided outside:
    ``waiting[j]`` is then that seat, else -1. Seat ``p`` of game ``g`` is played by player
    ``who[g, p]``, of kind ``kinds[k]`` (``RANDOM``, a bot the game's ``bot_action``
    plays with ``opts`` and ``extra``, or ``OUTSIDE``); random play draws from game ``g``'s
    generator. Each move adds to ``decisions[g, p]`` and is logged in ``log[g]`` at
    ``counts[g]``, as far as it holds them."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    states, rng = borrow(states), borrow(rng)  # the caller holds them: rows and calls cost no reference counting
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        waiting[j] = -1
        while s[PHASE] != OVER and s[CURRENT] != seats[g]:
            p = s[CURRENT]
            k = who[g, p]
            kind = kinds[k]
            if kind == OUTSIDE:
                waiting[j] = p
                break
            action = random_action(s, mask, rng, g) if kind == RANDOM else bot_action(s, mask, kind, k, opts, extra)
            apply(s, action)
            decisions[g, p] += 1
            if counts[g] < log.shape[1]:
                log[g, counts[g]] = action
            counts[g] += 1


def observe_games(states: Any, games: Any, mes: Any, rows: Any, with_masks: bool, obs: Any, masks: Any,
                  *encoding: Any) -> None:
    """Seat ``mes[j]``'s observation of game ``games[j]`` (the game's ``observe`` with the
    arguments ``encoding``) into ``obs[rows[j]]`` and, ``with_masks``, the legal actions of
    the seat to move into ``masks[rows[j]]`` (bool; all false when the game is over)."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    for j in range(games.shape[0]):
        s = states[games[j]]
        r = rows[j]
        observe(s, mes[j], *encoding, mask, values, obs[r])
        if with_masks:
            legal_mask(s, mask)
            for a in range(NUM_ACTIONS):
                masks[r, a] = mask[a] != 0


def step_games(states: Any, actions: Any, rng: Any, seeds: Any, obs: Any, masks: Any, final_scores: Any, ends: Any,
               legal: Any, *encoding: Any) -> None:
    """One decision in each of N games, every seat decided by the caller: ``actions[g]`` for
    the seat to move in game ``g``. A game that ends is dealt again at once (auto-reset):
    ``ends[g]`` is its end reason (0 while it goes on) and ``final_scores[g]`` its scores. An
    illegal action changes nothing (``legal[g]`` = 0). Then ``obs[g]`` (the game's
    ``observe`` with the arguments ``encoding``) and ``masks[g]`` are the seat to move's."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    values = np.zeros(NUM_ACTIONS, dtype=np.float64)
    mt = np.zeros(MT_WORDS + 1, dtype=np.uint64)
    for g in range(states.shape[0]):
        s = states[g]
        ends[g] = 0
        legal[g] = step(s, actions[g], mask)
        if s[PHASE] == OVER:
            ends[g] = s[END]
            scores(s, final_scores[g])
            deal(s, rng, g, seeds, mt)
        legal_mask(s, masks[g])
        observe(s, s[CURRENT], *encoding, mask, values, obs[g])


def settle_games(states: Any, seats: Any, games: Any, reward_mode: int, last_potential: Any, rewards: Any,
                 over: Any, final_scores: Any) -> None:
    """The learner's reward in each game ``games[j]`` after its action and the opponents'
    (as the game's ``learner_step`` pays it), whether the game is over, and then its scores."""
    final = np.zeros(MAX_PLAYERS, dtype=np.int64)
    for j in range(games.shape[0]):
        g = games[j]
        s = states[g]
        n = s[NUM_PLAYERS]
        seat = seats[g]
        scores(s, final)
        now = potential(final, n, seat)
        reward = now - last_potential[g] if reward_mode == SHAPED else 0.0
        over[j] = s[PHASE] == OVER
        if over[j]:
            final_scores[j, :n] = final[:n]
            if reward_mode != SHAPED:
                reward = final_reward(final, n, seat, reward_mode)
        rewards[j] = reward
        last_potential[g] = now


class BatchKit(NamedTuple):
    """A game's compiled copies of this module's kernels."""

    deal: Any
    random_action: Any
    deal_games: Any
    start_games: Any
    act_games: Any
    advance_games: Any
    observe_games: Any
    step_games: Any
    settle_games: Any


_SHARED = {"np": np, "MT_WORDS": MT_WORDS, "SHAPED": SHAPED, "below": below, "borrow": borrow,
           "final_reward": final_reward, "potential": potential, "take_deal_seed": take_deal_seed}


def batch_kernels(game: str, **row_kernels: Any) -> BatchKit:
    """This module's kernels compiled for ``game`` (its name: their cache files are named
    after it) over its :data:`ROW_KERNELS`, each given by name; a missing or unknown one is
    a ``TypeError``."""
    missing = [name for name in ROW_KERNELS if name not in row_kernels]
    unknown = [name for name in row_kernels if name not in ROW_KERNELS]
    if missing or unknown:
        raise TypeError(f"batch_kernels({game!r}) takes the row kernels {', '.join(ROW_KERNELS)}; missing: "
                        f"{', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}")
    namespace = {**_SHARED, **row_kernels}  # the globals of the game's copies, which call one another
    made = {}
    for name in BatchKit._fields:
        template = globals()[name]
        copy = types.FunctionType(template.__code__, namespace, name, template.__defaults__)
        copy.__qualname__ = f"{game}.{name}"
        copy.__doc__ = template.__doc__
        copy.__module__ = __name__
        made[name] = namespace[name] = (inlined if name in INLINED else kernel)(copy)
    return BatchKit(**made)


#: the kernels written into each kernel calling them (:func:`~.kernels.inlined`): a random
#: player's move, on the learner step's hot path
INLINED = ("random_action",)


__all__ = ["ROW_KERNELS", "BatchKit", "batch_kernels"]
