"""The one driver's table of games: N games of one game as rows of its compiled core, each
seat played by a player the kernels play or by one decided outside them (numba, the
``fast`` extra).

:class:`GameTable` holds what every compiled path that mixes kernel play with Python
decisions needs, and makes its kernel calls: the rows (``states``), each game's generator
(``rng``: random play) and deal seeds (``seeds``: now and next; a deal is the Python
engine's deal from its seed), the player of each seat (``who``: 0 is decided outside, else a
player the kernels play: ``random``, ``heuristic`` with its options, the card game's
``planner``, numbered by :meth:`GameTable.player`), each seat's decisions and each game's
moves (``decisions``, ``counts``, and ``log`` as far as the table keeps them), and the
encoder's arguments for the observation features. A row is dealt from its seed
(:meth:`GameTable.start`) or loaded from any Python state (:meth:`GameTable.load`). Its
kernels are both games' (:mod:`keltis_env.core.batch_kernels`).

The training collector's compiled games (``training.sb3.compiled_batch``), RLlib's batched
games (``training.rllib.games``) and the evaluation's compiled games
(:mod:`keltis_env.evaluation.compiled_games`: whole games of kernel bots;
:mod:`keltis_env.evaluation.compiled_lockstep`: lockstep groups with ``ppo`` agents) are
thin adapters over it; the learner batch (:mod:`keltis_env.compiled.batch`) is its fused
fast path for one learner seat against kernel opponents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.game import GameDescriptor, get_game

from . import require_core


class GameTable:
    """``n`` games of ``game`` with ``config``, observed with ``features``; see the module."""

    def __init__(self, game: str | GameDescriptor, config: Any, n: int, features: tuple[str, ...] = (), *,
                 log: int = 0) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"the number of games must be an integer >= 1, got {n!r}")
        self.game = get_game(game)
        self.batch = require_core(self.game)  # the batched kernels
        kernels = self.game.compiled_module("kernels")
        assert kernels is not None
        self.unpack, self.pack = kernels.unpack, kernels.pack
        self.to_row, self.from_row = kernels.to_row, kernels.from_row
        self.config = config
        self.n = n = int(n)
        self.num_players = int(config.num_players)
        self.num_actions = int(self.game.num_actions)
        self.states = self.batch.new_games(config, n, np.zeros(n, np.uint64), np.zeros((n, 2), np.int64))
        self.rng = np.zeros(n, np.uint64)  # each game's generator (random play, the next deal's seed)
        self.seeds = np.zeros((n, 2), np.int64)  # each game's deal seeds: now, next
        self.who = np.zeros((n, self.num_players), np.int64)  # each seat's player (0: decided outside)
        self.decisions = np.zeros((n, self.num_players), np.int64)  # each seat's moves, as act and advance count them
        self.counts = np.zeros(n, np.int64)  # each game's moves
        self.log = np.zeros((n, log), np.int64)  # each game's first moves, ``log`` of them (:meth:`moves`)
        self._nobody = np.full(n, -1, np.int64)  # no learner's seat in any game
        self.features = tuple(features)
        self.size, self.encoding = self.batch.encoding_args(self.num_players, self.features)
        self._encodings = {self.features: (self.size, self.encoding)}
        self._players: dict[str | None, int] = {None: 0}
        self.tables = self.batch.opponent_tables([None])  # the players' kinds, options, weights

    def seed_slots(self, seed: int) -> None:
        """Generators drawn from ``seed`` for every game, and slot ``g``'s next deal the Python
        engine's deal from ``seed + g``."""
        from keltis_env.core.kernels import seed_generators

        self.rng[:] = seed_generators(seed, self.n)
        self.seeds[:, 1] = seed + np.arange(self.n)

    # ------------------------------------------------------------------ players
    def plays(self, spec: str) -> bool:
        """Whether the kernels play the agent ``spec`` themselves."""
        return spec.split(":", 1)[0] in self.batch.OPPONENTS

    def player(self, spec: str | None) -> int:
        """The kernels' player number of ``spec`` (0: decided outside, also for ``None`` and
        for a spec the kernels do not play); a new one extends the players' tables (its
        options checked as the bots' registry checks them)."""
        key = spec if spec is not None and self.plays(spec) else None
        k = self._players.get(key)
        if k is None:
            specs = sorted(self._players, key=self._players.__getitem__)
            self.tables = self.batch.opponent_tables([*specs, key])
            k = self._players[key] = len(specs)
        return k

    def share(self, other: GameTable) -> None:
        """The players of ``other`` (a table of the same game and number of players), with
        their numbers, and the encoder's arguments it has made (:meth:`encoding_of`)."""
        self._players, self.tables = dict(other._players), other.tables
        self._encodings = other._encodings

    # ------------------------------------------------------------------ games
    def position(self, g: int) -> Any:
        """Game ``g``'s position as the Python engine's state."""
        return self.unpack(self.states[g], self.config)

    def load(self, g: int, state: Any) -> None:
        """The Python engine's position ``state`` (its options with it) into row ``g``, its
        decisions and moves counted from zero."""
        self.states[g] = self.to_row(state)
        self.decisions[g] = 0
        self.counts[g] = 0

    def state(self, g: int, start: Any) -> Any:
        """Game ``g``'s position as the Python engine's state, a game that started from the
        Python state ``start`` (:meth:`load`; its options)."""
        return self.from_row(self.states[g], start)

    def moves(self, g: int) -> list[int]:
        """Game ``g``'s moves since :meth:`load`, as far as the table logs them (its ``log``)."""
        moves: list[int] = self.log[g, :self.counts[g]].tolist()
        return moves

    def start(self, games: np.ndarray, seats: np.ndarray, fresh: np.ndarray, last_potential: np.ndarray) -> None:
        """Start the games ``games``: the next deal where ``fresh[j]`` (else the row holds a
        position already), and each learner's (seat ``seats[g]``) potential at the start."""
        self.batch.start_games(self.states, seats, games, self.rng, self.seeds, fresh, last_potential)

    def act(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``actions[j]`` for the seat to move in game ``games[j]``; whether each was legal (an
        illegal one changes nothing; a legal one is counted and logged)."""
        legal = np.zeros(len(games), np.bool_)
        self.batch.act_games(self.states, games, np.asarray(actions, np.int64), legal, self.decisions, self.log,
                             self.counts)
        return legal

    def advance(self, games: np.ndarray, seats: np.ndarray | None = None) -> np.ndarray:
        """The kernels' players move in ``games`` until each is at its seat ``seats[g]`` (-1 or
        no ``seats``: none), over, or at a seat decided outside: that seat, else -1. Their
        moves are counted and logged."""
        waiting = np.empty(len(games), np.int64)
        self.batch.advance_games(self.states, self._nobody if seats is None else seats, games, self.who, self.rng,
                                 waiting, self.decisions, self.log, self.counts, *self.tables)
        return waiting

    def observe(self, games: np.ndarray, mes: np.ndarray, obs: np.ndarray, masks: np.ndarray | None = None,
                rows: np.ndarray | None = None, features: tuple[str, ...] | None = None) -> None:
        """Seat ``mes[j]``'s observation of game ``games[j]`` into ``obs[rows[j]]`` (``rows``
        default ``0..len(games)-1``; with ``features``, default the table's) and, with
        ``masks``, the legal actions of the seat to move into ``masks[rows[j]]``."""
        rows = np.arange(len(games), dtype=np.int64) if rows is None else rows
        scratch = masks if masks is not None else np.zeros((1, self.num_actions), np.bool_)
        self.batch.observe_games(self.states, games, mes, rows, masks is not None, obs, scratch,
                                 *self.encoding_of(self.features if features is None else features)[1])

    def privileged(self, games: np.ndarray, mes: np.ndarray, out: np.ndarray, at: int,
                   rows: np.ndarray | None = None) -> None:
        """What seat ``mes[j]`` of game ``games[j]`` does not see (the game's
        :meth:`~keltis_env.core.game.GameDescriptor.make_privileged` encoding) into
        ``out[rows[j], at:]`` (``rows`` default ``0..len(games)-1``)."""
        rows = np.arange(len(games), dtype=np.int64) if rows is None else rows
        self.batch.privileged_games(self.states, games, mes, rows, at, out)

    def encoding_of(self, features: tuple[str, ...]) -> tuple[int, tuple[Any, ...]]:
        """The observation size with ``features`` and the encoder's arguments (made once)."""
        made = self._encodings.get(features)
        if made is None:
            made = self._encodings[features] = self.batch.encoding_args(self.num_players, features)
        return made

    def settle(self, games: np.ndarray, seats: np.ndarray, reward_number: int,
               last_potential: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each learner's (seat ``seats[g]``) reward in ``games`` since ``last_potential`` (as
        the learner view pays it), whether each game is over, and the scores of those over."""
        rewards = np.zeros(len(games))
        over = np.zeros(len(games), np.bool_)
        scores = np.zeros((len(games), 4), np.int64)
        self.batch.settle_games(self.states, seats, games, reward_number, last_potential, rewards, over, scores)
        return rewards, over, scores


__all__ = ["GameTable"]
