"""Many learner games stepped on the compiled core, with the neural opponents' decisions batched.

:class:`CompiledGameBatch` is :class:`training.sb3.selfplay.GameBatch` (the same
constructor, :meth:`~CompiledGameBatch.reset`, :meth:`~CompiledGameBatch.step` with parts,
pool methods, attributes, infos and :attr:`~CompiledGameBatch.timers`) with the games held
as rows of the game's compiled core (``keltis_env.games.<game>.kernels_batch``, numba):

* the engine, the encoder and the opponents the kernels have (``random``, ``heuristic``
  with its options, for the card game ``planner``) run in kernel calls over all the games
  of a step: :func:`advance_games` plays every game until it is at its learner's turn, over,
  or at a seat decided outside;
* seats decided outside are handed back to Python: neural policies (``ppo:``) get one
  forward pass per network and decision round for every game waiting on them (their
  observations encoded by the kernel encoder into one array), as in ``GameBatch``; any
  other bot (``ismcts``, ...) acts on the Python engine's view of the position converted
  from the row (``kernels.unpack``). Then the kernels apply those actions and go on.

What is drawn per game is drawn as the learner view draws it, from the game's own
generator (``np_random``): the learner's seat, the opponents by weight, the bots' seeds
after a seeded reset, the deal's seed; then the Python engine's deal from that seed, made
by the kernels (a seeded reset's seed is the deal's seed, as in the learner view), and the
compiled generator seeded from the drawn number for random play. Same seeds, same
trajectories, and the same deals as the learner view. Reset options (``seat``, ``opponents``, ``state``,
``record`` with ``upto``) are the learner view's: a given position is packed into a row.

The learner's reward is the learner view's (``win``, ``score``, ``shaped``); a game that
ends reports the learner view's final info (``score``, ``scores``, ``seat``, ``win``,
``turns``, ``end``, ``opponents``; after an illegal action ``illegal_action``, ``reason``
and ``seat``, the reason being the Python engine's message) read from the final row.

Timers: ``engine`` (the learner's moves, rewards, deals, bookkeeping), ``encoding`` (the
kernel encoder), ``opponent_bots`` (the kernel that plays the compiled opponents, and the
Python bots), ``opponent_networks`` (forward passes and choices).
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from keltis_env.bots import Bot, make_bot
from keltis_env.bots.ppo import PPOBot
from keltis_env.compiled.table import GameTable
from keltis_env.core.errors import ActionError
from keltis_env.core.game import get_game
from keltis_env.core.match import check_reset_options, start_position
from keltis_env.core.rewards import win_shares
from keltis_env.envs.episode import RESET_OPTIONS, OpponentEntry, OpponentPool, check_seat

from .selfplay import GameBatch, Info, PooledGames, batch_arrays, hidden_size

#: the collector's engines: ``compiled`` (this module), ``python`` (``GameBatch``) and
#: ``auto`` (compiled where :func:`compiled_unsupported` finds nothing against it)
BACKENDS = ("auto", "compiled", "python")


def kernels_module(game: str, part: str = "batch") -> Any:
    """The part ``part`` of the game's compiled core (:class:`~keltis_env.core.game.CompiledCore`:
    by default its batched kernels, where the collector's are)."""
    return get_game(game).compiled_module(part)


def compiled_unsupported(game: str, features: Sequence[str]) -> str | None:
    """Why the compiled backend cannot run ``game`` with observation ``features``; ``None`` if it can."""
    if importlib.util.find_spec("numba") is None:
        return "the compiled core needs numba (the 'fast' extra): pip install 'keltis-rl[fast]'"
    name = get_game(game).name
    if get_game(game).compiled is None or not hasattr(kernels_module(name), "advance_games"):
        return f"the game {name!r} has no compiled collector kernels (its descriptor's compiled batch, advance_games)"
    computed = tuple(getattr(kernels_module(name), "FEATURES", ()))
    missing = [f for f in features if f not in computed]
    if missing:
        return (f"the compiled core does not compute the observation features {missing} "
                f"(it computes: {', '.join(computed) or 'none'})")
    return None


def resolve_backend(backend: Any, game: str, features: Sequence[str]) -> str:
    """``"compiled"`` or ``"python"`` for the collector option ``backend`` (:data:`BACKENDS`):
    ``auto`` is compiled where it can be; ``compiled`` where it cannot is refused in one line."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "python":
        return backend
    reason = compiled_unsupported(game, features)
    if reason is None:
        return "compiled"
    if backend == "compiled":
        raise ValueError(f"backend 'compiled' cannot run this collector: {reason} (use backend 'python' or 'auto')")
    return "python"


class _Slot:
    """What one game of the batch keeps in Python: its generator, pool, the entries of its
    seats and the learner's episode so far."""

    __slots__ = ("entries", "episode_length", "episode_return", "np_random", "pool")

    def __init__(self, pool: OpponentPool) -> None:
        self.pool = pool
        self.np_random: np.random.Generator | None = None
        self.entries: list[OpponentEntry | None] = []
        self.episode_length = 0
        self.episode_return = 0.0


class CompiledGameBatch(PooledGames):
    """``n_games`` learner games of ``game`` on the compiled core (see the module doc); the
    arguments are :class:`~training.sb3.selfplay.GameBatch`'s."""

    def _build(self, n_games: int, obs: np.ndarray | None, masks: np.ndarray | None) -> None:
        reason = compiled_unsupported(self.game, self.features)
        if reason is not None:
            raise ValueError(f"backend 'compiled' cannot run this collector: {reason}")
        #: the games' rows and players on the compiled core (the one driver's table)
        self.table = table = GameTable(self.spec, self.config, n_games, self.features)
        self.kernels = table.batch
        self.size = table.size
        self.obs, self.masks = batch_arrays(n_games, self.size + hidden_size(self), self.num_actions, obs, masks)
        self._reward_number = self.learner.reward_number
        self.states, self.rng, self.seeds, self.who = table.states, table.rng, table.seeds, table.who
        self.seats = np.zeros(n_games, np.int64)
        self._last_potential = np.zeros(n_games)
        self.slots = [_Slot(OpponentPool(self.game, self.num_players, self._make)) for _ in range(n_games)]
        self._compiled_bots: dict[str, Bot] = {}

    # ------------------------------------------------------------------ the pool (per game)
    def _make(self, spec: str) -> Bot:
        """The bot of an agent spec: one instance per spec for the opponents the kernels play
        (it only holds their options), a shared network with a random generator per game for
        a neural policy, a bot per game for any other."""
        if self.table.plays(spec):
            bot = self._compiled_bots.get(spec)
            if bot is None:
                bot = make_bot(spec, game=self.game, num_players=self.num_players)
                self._player(spec)  # its options as the kernels take them, checked now
                self._compiled_bots[spec] = bot
            return bot
        return self._make_bot(spec)

    def _player(self, spec: str | None) -> int:
        """The kernels' player number of an entry's spec (0: decided outside)."""
        return self.table.player(spec)

    def _pool(self, i: int) -> OpponentPool:
        return self.slots[i].pool

    def _pools(self) -> list[OpponentPool]:
        return [slot.pool for slot in self.slots]

    def _seat(self, i: int) -> int:
        return int(self.seats[i])

    def position(self, i: int) -> Any:
        """Game ``i``'s position as the Python engine's state."""
        return self.table.position(i)

    # ------------------------------------------------------------------ episodes
    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[Mapping[str, Any] | None] | None = None) -> list[dict[str, Any]]:
        """Start a new game everywhere (``seeds[i]``, ``options[i]``: game ``i``'s, as the
        learner view's ``reset(seed=, options=)``); returns the reset infos."""
        n = len(self.slots)
        seeds = [None] * n if seeds is None else list(seeds)
        options = [None] * n if options is None else list(options)
        if len(seeds) != n or len(options) != n:
            raise ValueError(f"reset: {n} games, got {len(seeds)} seeds and {len(options)} options")
        everything = np.arange(n, dtype=np.int64)
        infos = self._start(everything, seeds, options)
        self._check_started(everything)
        self._observe(everything)
        return infos

    def step(self, actions: Sequence[Any], lo: int = 0, hi: int | None = None
             ) -> tuple[list[float], list[bool], list[Info], list[Info]]:
        """One learner action per game ``lo..hi-1`` (all by default), then the opponents
        until each is at the learner's turn again; a game that ends is reported and
        restarted (SB3's auto-reset infos). Returns rewards, dones, infos and reset infos,
        as :meth:`training.sb3.selfplay.GameBatch.step`. Under ``illegal_action="raise"`` an
        illegal action raises the engine's ``ActionError`` before any game moves."""
        clock = time.perf_counter
        t0 = clock()
        hi = len(self.slots) if hi is None else hi
        if not 0 <= lo < hi <= len(self.slots) or len(actions) != hi - lo:
            raise ValueError(f"step: games {lo}..{hi - 1} of {len(self.slots)} with {len(actions)} actions")
        games = np.arange(lo, hi, dtype=np.int64)
        n = hi - lo
        acts = np.asarray(actions, dtype=np.int64).reshape(n)
        if self.illegal_action == "raise":
            self._check_legal(games, acts)
        legal = self.table.act(games, acts)
        for slot in self.slots[lo:hi]:
            slot.episode_length += 1
        self.timers["engine"] += clock() - t0
        running = games[legal]
        self._advance(running)
        t0 = clock()
        rewards = np.zeros(n)
        over = np.zeros(n, np.bool_)
        settled, ended, _scores = self.table.settle(running, self.seats, self._reward_number, self._last_potential)
        rewards[running - lo] = settled
        over[running - lo] = ended
        over[~legal] = True
        infos: list[Info] = [{"TimeLimit.truncated": False} for _ in range(n)]
        reset_infos: list[Info] = [{} for _ in range(n)]
        done = games[over]
        self.timers["engine"] += clock() - t0
        if done.size:
            terminal = self._terminal(done)
            t0 = clock()
            for k, g in enumerate(done.tolist()):
                j = g - lo
                if legal[j]:
                    info, truncated = self._final_info(g)
                else:
                    rewards[j], info, truncated = -1.0, self._illegal_info(g, int(acts[j])), False
                info["terminal_observation"] = terminal[k]
                info["TimeLimit.truncated"] = truncated
                infos[j] = info
            self.timers["engine"] += clock() - t0
        for j in range(n):
            slot = self.slots[lo + j]
            slot.episode_return += float(rewards[j])
            if over[j]:
                infos[j]["episode"] = {"r": round(slot.episode_return, 6), "l": slot.episode_length,
                                       "t": round(time.time() - self._started, 6)}
        if done.size:
            for g, info in zip(done.tolist(), self._start(done, [None] * done.size, [None] * done.size), strict=True):
                reset_infos[g - lo] = info
        self._observe(games)
        return rewards.tolist(), over.tolist(), infos, reset_infos

    def _check_legal(self, games: np.ndarray, actions: np.ndarray) -> None:
        """Raise the engine's ``ActionError`` for the first game whose action is not legal
        (:meth:`step` under ``illegal_action="raise"``), before any game moves."""
        for g, a in zip(games.tolist(), actions.tolist(), strict=True):
            if not (0 <= a < self.num_actions and self.masks[g, a]):
                self._engine_refusal(g, a)
                raise ActionError(f"illegal action {a!r} in game {g}")

    def _engine_refusal(self, g: int, action: int) -> str:
        """The Python engine's message for ``action`` in game ``g`` (raised under ``"raise"``)."""
        state = self.position(g)
        try:
            state.apply(action)
        except ActionError as exc:
            if self.illegal_action == "raise":
                raise
            return str(exc)
        return f"action {action} is not legal here"

    def _illegal_info(self, g: int, action: int) -> Info:
        """The final info of an episode ended by the learner's illegal action (as the learner view's)."""
        return {"illegal_action": action, "reason": self._engine_refusal(g, action), "seat": int(self.seats[g])}

    def _final_info(self, g: int) -> tuple[Info, bool]:
        """The learner view's final info of game ``g`` (over) and whether it counts as truncated."""
        state = self.position(g)
        seat = int(self.seats[g])
        scores = [int(x) for x in state.scores()]
        end = state.end.name.lower() if hasattr(state.end, "name") else str(state.end)
        info = {"score": scores[seat], "scores": scores, "seat": seat, "win": win_shares(scores)[seat],
                "turns": int(state.turn), "end": end,
                "opponents": [e.name if e is not None else None for e in self.slots[g].entries]}
        return info, bool(state.truncated) and self.turn_cap == "truncate"

    def _terminal(self, games: np.ndarray) -> np.ndarray:
        """The learners' last observations of the games ``games`` (ended)."""
        t0 = time.perf_counter()
        out = np.zeros((len(games), self.obs.shape[1]), np.float32)
        self.table.observe(games, self.seats[games], out)
        if self.hidden is not None:
            self.table.privileged(games, self.seats[games], out, self.size)
        self.timers["encoding"] += time.perf_counter() - t0
        return out

    def _start(self, games: np.ndarray, seeds: Sequence[int | None],
               options: Sequence[Mapping[str, Any] | None]) -> list[Info]:
        """New games in the slots ``games``: the learner view's draws (seat, opponents, the
        bots' seeds after a seeded reset) from each game's generator, then a deal from the
        compiled generator seeded from it, or the position the options give; then the
        opponents move until the learner is to. Returns the reset infos."""
        t0 = time.perf_counter()
        infos = []
        fresh = np.ones(len(games), np.bool_)
        for j, (g, seed, given) in enumerate(zip(games.tolist(), seeds, options, strict=True)):
            opts = check_reset_options(given, RESET_OPTIONS) if given else {}
            infos.append(self._draw(g, seed, opts))
            state = start_position(self.spec, self.config, opts) if opts else None
            if state is not None:
                self.states[g] = self.table.pack(state)
                fresh[j] = False
            slot = self.slots[g]
            slot.episode_length = 0
            slot.episode_return = 0.0
        self.table.start(games, self.seats, fresh, self._last_potential)
        self.timers["engine"] += time.perf_counter() - t0
        self._advance(games)
        return infos

    def _draw(self, g: int, seed: int | None, options: Mapping[str, Any]) -> Info:
        """Game ``g``'s seat, opponents and compiled generator, drawn as the learner view
        draws them (``options``: checked reset options)."""
        slot = self.slots[g]
        if seed is not None or slot.np_random is None:
            slot.np_random, _ = seeding.np_random(seed)
        rng = slot.np_random
        n = self.num_players
        seat = options.get("seat")
        seat = int(rng.integers(n)) if seat is None else check_seat(seat, n)
        names = options.get("opponents")
        chosen = slot.pool.draw(rng, n - 1) if names is None else slot.pool.named(names, n - 1)
        slot.entries = [*chosen[:seat], None, *chosen[seat:]]
        if seed is not None:
            slot.pool.seed_bots(rng)
        drawn = int(rng.integers(2**63))  # the learner view's deal seed
        self.rng[g] = np.uint64(drawn)
        self.seeds[g, 1] = drawn if seed is None else seed
        self.seats[g] = seat
        self.who[g] = [0 if e is None else self._player(e.spec) for e in slot.entries]
        return {"seat": seat}

    def _check_started(self, games: np.ndarray) -> None:
        """Refuse a game that ended before the learner's first decision (a given position)."""
        over = self.table.settle(games, self.seats, self._reward_number, self._last_potential.copy())[1]
        if over.any():
            raise ValueError("the game is over before the learner's first decision; start from another position")

    def _observe(self, games: np.ndarray) -> None:
        """The learners' observations and legal actions in the games ``games`` (their rows)."""
        t0 = time.perf_counter()
        self.table.observe(games, self.seats[games], self.obs, self.masks, rows=games)
        if self.hidden is not None:
            self.table.privileged(games, self.seats[games], self.obs, self.size, rows=games)
        self.timers["encoding"] += time.perf_counter() - t0

    # ------------------------------------------------------------------ the opponents
    def _advance(self, games: np.ndarray) -> None:
        """Play the opponents of ``games`` until each is at its learner's turn or over: the
        compiled ones in the kernel, the seats decided outside in rounds (one forward pass
        per network for every game waiting on it, the Python bots on their views)."""
        clock = time.perf_counter
        pending = games
        while pending.size:
            t0 = clock()
            waiting = self.table.advance(pending, self.seats)
            self.timers["opponent_bots"] += clock() - t0
            outside = waiting >= 0
            if not outside.any():
                return
            pending, waiting = pending[outside], waiting[outside]
            actions = self._decide(pending, waiting)
            t0 = clock()
            legal = self.table.act(pending, actions)
            self.timers["engine"] += clock() - t0
            if not legal.all():
                j = int(np.flatnonzero(~legal)[0])
                entry = self.slots[int(pending[j])].entries[int(waiting[j])]
                raise RuntimeError(f"opponent {entry.name if entry else None!r} chose the illegal action "
                                   f"{int(actions[j])} in game {int(pending[j])}")

    def _decide(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The actions of the seats ``seats[j]`` of the games ``games[j]``, decided outside
        the kernels: the neural ones batched per network, the Python bots one by one."""
        clock = time.perf_counter
        actions = np.zeros(len(games), np.int64)
        by_network: dict[Any, list[int]] = {}
        python: list[int] = []
        for j, (g, p) in enumerate(zip(games.tolist(), seats.tolist(), strict=True)):
            entry = self.slots[g].entries[p]
            assert entry is not None
            if isinstance(entry.bot, PPOBot):
                by_network.setdefault(entry.bot.network_key, []).append(j)
            else:
                python.append(j)
        for rows in by_network.values():
            t0 = clock()
            picked = np.array(rows, np.int64)
            batch = np.zeros((len(rows), self.size), np.float32)
            legal = np.zeros((len(rows), self.num_actions), np.bool_)
            self.table.observe(games[picked], seats[picked], batch, legal)
            t1 = clock()
            self.timers["encoding"] += t1 - t0
            bots = [self.slots[int(games[j])].entries[int(seats[j])].bot for j in rows]  # type: ignore[union-attr]
            logits = bots[0].batch_logits(batch)
            for k, (j, bot) in enumerate(zip(rows, bots, strict=True)):
                actions[j] = bot.choose(np.flatnonzero(legal[k]).tolist(), logits[k])
            self.timers["opponent_networks"] += clock() - t1
        for j in python:
            t0 = clock()
            g, p = int(games[j]), int(seats[j])
            bot = self.slots[g].entries[p].bot  # type: ignore[union-attr]
            state = self.position(g)
            view = self.spec.live_view(state, p) if getattr(bot, "accepts_live_view", False) else state.view(p)
            actions[j] = bot.act(view)
            self.timers["opponent_bots"] += clock() - t0
        return actions


def make_game_batch(n_games: int, *, backend: str = "python", **kwargs: Any) -> Any:
    """The games of a collector worker on ``backend``: ``"python"`` (:class:`GameBatch`) or
    ``"compiled"`` (:class:`CompiledGameBatch`, the same interface on the compiled core);
    ``kwargs`` are :class:`GameBatch`'s."""
    if backend == "compiled":
        return CompiledGameBatch(n_games, **kwargs)
    if backend != "python":
        raise ValueError(f"a collector worker's backend is 'python' or 'compiled', got {backend!r}")
    return GameBatch(n_games, **kwargs)


__all__ = ["BACKENDS", "CompiledGameBatch", "compiled_unsupported", "kernels_module", "make_game_batch",
           "resolve_backend"]
