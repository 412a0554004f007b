"""The one driver's table of games: N games of one game as rows of its compiled core, each
seat played by a player the kernels play or by one decided outside them (numba, the
``fast`` extra).

:class:`GameTable` holds what every compiled path that mixes kernel play with Python
decisions needs, and makes its kernel calls: the rows (``states``), each game's generator
(``rng``: random play) and deal seeds (``seeds``: now and next; a deal is the Python
engine's deal from its seed), the player of each seat (``who``: 0 is decided outside, else a
player the kernels play: ``random``, ``heuristic`` with its options, the card game's
``planner``, numbered by :meth:`GameTable.player`), and the encoder's arguments for the
observation features. The training collector's compiled games
(``training.sb3.compiled_batch``) and RLlib's batched games (``training.rllib.games``) are
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

    def __init__(self, game: str | GameDescriptor, config: Any, n: int, features: tuple[str, ...] = ()) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"the number of games must be an integer >= 1, got {n!r}")
        self.game = get_game(game)
        self.batch = require_core(self.game)  # the batched kernels
        kernels = self.game.compiled_module("kernels")
        assert kernels is not None
        self.unpack, self.pack = kernels.unpack, kernels.pack
        self.config = config
        self.n = n = int(n)
        self.num_players = int(config.num_players)
        self.num_actions = int(self.game.num_actions)
        self.states = self.batch.new_games(config, n, np.zeros(n, np.uint64), np.zeros((n, 2), np.int64))
        self.rng = np.zeros(n, np.uint64)  # each game's generator (random play, the next deal's seed)
        self.seeds = np.zeros((n, 2), np.int64)  # each game's deal seeds: now, next
        self.who = np.zeros((n, self.num_players), np.int64)  # each seat's player (0: decided outside)
        self.size, self.encoding = self.batch.encoding_args(self.num_players, tuple(features))
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

    # ------------------------------------------------------------------ games
    def position(self, g: int) -> Any:
        """Game ``g``'s position as the Python engine's state."""
        return self.unpack(self.states[g], self.config)

    def start(self, games: np.ndarray, seats: np.ndarray, fresh: np.ndarray, last_potential: np.ndarray) -> None:
        """Start the games ``games``: the next deal where ``fresh[j]`` (else the row holds a
        position already), and each learner's (seat ``seats[g]``) potential at the start."""
        self.batch.start_games(self.states, seats, games, self.rng, self.seeds, fresh, last_potential)

    def act(self, games: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``actions[j]`` for the seat to move in game ``games[j]``; whether each was legal (an
        illegal one changes nothing)."""
        legal = np.zeros(len(games), np.bool_)
        self.batch.act_games(self.states, games, np.asarray(actions, np.int64), legal)
        return legal

    def advance(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The kernels' players move in ``games`` until each is at its seat ``seats[g]`` (-1:
        none), over, or at a seat decided outside: that seat, else -1."""
        waiting = np.empty(len(games), np.int64)
        self.batch.advance_games(self.states, seats, games, self.who, self.rng, waiting, *self.tables)
        return waiting

    def observe(self, games: np.ndarray, mes: np.ndarray, obs: np.ndarray, masks: np.ndarray | None = None,
                rows: np.ndarray | None = None) -> None:
        """Seat ``mes[j]``'s observation of game ``games[j]`` into ``obs[rows[j]]`` (``rows``
        default ``0..len(games)-1``) and, with ``masks``, the legal actions of the seat to
        move into ``masks[rows[j]]``."""
        rows = np.arange(len(games), dtype=np.int64) if rows is None else rows
        scratch = masks if masks is not None else np.zeros((1, self.num_actions), np.bool_)
        self.batch.observe_games(self.states, games, mes, rows, masks is not None, obs, scratch, *self.encoding)

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
