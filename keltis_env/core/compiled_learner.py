"""The learner view's game on a game's compiled core: ``KeltisLearnerEnv(backend="compiled")``.

A learner episode (:class:`keltis_env.envs.episode.LearnerEpisode`) is dealt, and its opponents
play until the learner's first decision, on the match loop exactly as on the Python
backend; the position then moves into a row of the game's compiled kernels
(:class:`~keltis_env.core.compiled_match.CompiledMatch`) and stays there. Every learner
action and every opponent's action is one compiled ``advance``; the learner's observation
and mask are one compiled ``observe`` (with features, such as the card game's ``plan``,
the game's ``kernels_batch.observe``). An opponent bot acts on its view as on the Python
backend: the view of the Python state made from the row, so it sees what it sees there
and moves the same way, with the same per-move time limit.

Nothing here imports numba or the kernels statically: they are loaded when the compiled
backend is asked for (:func:`resolve_learner_backend`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from .compiled_match import CompiledGame, CompiledMatch, resolve_backend
from .errors import ActionError, describe_value
from .game import GameDescriptor
from .match import Forfeit, Match, MatchResult, action_id, finished_result
from .rewards import potentials


def feature_kernels(game: GameDescriptor, features: tuple[str, ...]) -> ModuleType | None:
    """``game``'s ``kernels_batch`` module when it computes every one of ``features`` (its
    ``FEATURES``, ``observe`` and ``encoding_args``), else ``None``."""
    module = game.compiled_module("batch")  # the descriptor says whether and where
    if module is None or not all(hasattr(module, name) for name in ("FEATURES", "observe", "encoding_args")):
        return None
    return module if set(features) <= set(module.FEATURES) else None


def kernel_bot(core: LearnerCore, spec: str) -> tuple[int, np.ndarray, np.ndarray]:
    """The agent ``spec`` as the kernels' player 0 of the game's ``kernels_batch.bot_action``:
    its kind and the players' options and other tables (``opponent_tables``)."""
    assert core.bots is not None
    kinds, opts, extra = core.bots.opponent_tables([spec])
    return int(kinds[0]), opts, extra


def resolve_learner_backend(game: GameDescriptor, backend: Any, features: tuple[str, ...]) -> str:
    """``"python"`` or ``"compiled"`` for the learner view of ``game`` with ``features``: as
    :func:`~keltis_env.core.compiled_match.resolve_backend`, and the features must be ones
    the compiled core computes (``"auto"`` falls back to ``"python"``, ``"compiled"`` is
    refused in one line naming them)."""
    resolved = resolve_backend(game, backend)
    if resolved == "python" or not features or feature_kernels(game, features) is not None:
        return resolved
    if backend == "auto":
        return "python"
    raise ValueError(f"the compiled core of the game {game.name!r} does not compute the observation feature(s) "
                     f"{', '.join(map(repr, features))}; use backend='python'")


class LearnerCore:
    """What the learner's games of one environment share on the compiled core: the
    :class:`CompiledGame` of the standard observation and, with ``features``, the
    game's ``kernels_batch.observe`` and its arguments. Pickles by the game, the
    number of players and the features."""

    def __init__(self, game: GameDescriptor, num_players: int, features: tuple[str, ...]) -> None:
        self.game = game
        self.num_players = num_players
        self.features = tuple(features)
        self._bind()

    def _bind(self) -> None:
        self.compiled = CompiledGame(self.game, self.game.make_encoder(self.num_players))
        #: the game's kernels of the bots that move inside them (heuristic, planner), or ``None``
        core = self.game.compiled
        self.bots = feature_kernels(self.game, ()) if core is not None and core.match is not None else None
        self.batch = feature_kernels(self.game, self.features) if self.features else None
        if self.batch is not None:
            self.size, self.batch_args = self.batch.encoding_args(self.num_players, self.features)
            self.values = np.zeros(self.compiled.num_actions, dtype=np.float64)
        else:
            self.size = self.compiled.size

    def observe(self, row: np.ndarray, seat: int, live: bool) -> tuple[np.ndarray, np.ndarray]:
        """``seat``'s observation and action mask (bool; the legal set when it is to act in a
        game that goes on and ``live``, else all False) of the position ``row``."""
        core = self.compiled
        obs = np.empty(self.size, dtype=np.float32)
        mask = np.zeros(core.num_actions, dtype=np.int8)
        if self.batch is None:
            core.observe(row, seat, live, *core.args, obs, mask)
            return obs, mask.astype(bool)
        self.batch.observe(row, seat, *self.batch_args, core.scratch, self.values, obs)
        if live and seat == int(row[core.kernels.CURRENT]) and int(row[core.end]) == 0:
            core.kernels.legal_mask(row, mask)
        return obs, mask.astype(bool)

    def __getstate__(self) -> dict[str, Any]:
        return {"game": self.game, "num_players": self.num_players, "features": self.features}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)
        self._bind()


class LegalView:
    """The part of a view that a bot reading only its legal actions gets on the compiled core."""

    __slots__ = ("legal_actions",)

    def __init__(self, legal_actions: tuple[int, ...]) -> None:
        self.legal_actions = legal_actions


class CompiledLearnerMatch(CompiledMatch):
    """The game of a learner episode on the compiled core, taken over from ``host`` (the
    episode's :class:`~keltis_env.core.match.Match`, after the opponents' first moves):
    the parts of ``Match`` the learner view uses (:meth:`step`, :meth:`play`, :attr:`over`,
    :attr:`illegal`, :attr:`forfeit`, :meth:`take_rewards`, :meth:`due_rewards`,
    :meth:`result`, :attr:`to_move`, :attr:`state`). ``host`` keeps the controllers,
    the per-move time limit and the thinking times; its own state is not moved again."""

    def __init__(self, core: LearnerCore, host: Match, legal_only: Sequence[bool] | None = None,
                 kernel_bots: Sequence[tuple[int, np.ndarray, np.ndarray] | None] | None = None) -> None:
        super().__init__(core.compiled, host.state, reward=host.reward_mode, illegal_action=host.illegal_action)
        self.learner_core = core
        self.host = host
        #: the seats whose bot reads nothing of its view but ``legal_actions`` (ascending, as the
        #: engine lists them): they get a :class:`LegalView` from the kernels' mask, no Python state
        self.legal_only = list(legal_only) if legal_only is not None else [False] * self.num_players
        self._legal = np.zeros(core.compiled.num_actions, dtype=np.int8)
        #: per seat, the kernels' bot that moves it (:func:`kernel_bot`: the moves of its Python bot), or ``None``
        self.kernel_bots = list(kernel_bots) if kernel_bots is not None else [None] * self.num_players
        self.forfeit: Forfeit | None = host.forfeit
        self.decisions = list(host.decisions)
        if self.reward_mode == "shaped":  # the potentials paid up to now: those of the deal
            self._potentials = list(host._potentials)

    @property
    def over(self) -> bool:
        """The game ended by the rules, by truncation, by an illegal action or on time."""
        return self._ended or self.illegal is not None or self.forfeit is not None

    def observe_learner(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """``seat``'s observation and bool action mask (:meth:`LearnerCore.observe`)."""
        return self.learner_core.observe(self.row, seat, self.illegal is None and self.forfeit is None)

    # ------------------------------------------------------------------ rewards
    def _offender(self) -> int | None:
        return self.illegal.seat if self.illegal is not None else self.forfeit.seat if self.forfeit else None

    def rewards(self) -> list[float]:
        """Every seat's final reward; all 0 while the game goes on (as ``Match.rewards``)."""
        offender = self._offender()
        if offender is not None:
            return [-1.0 if p == offender else 0.0 for p in range(self.num_players)]
        return super().rewards()

    def due_rewards(self) -> list[float]:
        """Every seat's reward due since the last :meth:`take_rewards` (changes nothing), as
        :meth:`Match.due_rewards <keltis_env.core.match.Match.due_rewards>`."""
        n = self.num_players
        if self._settled:
            return [0.0] * n
        if self._offender() is not None:
            return self.rewards()
        if self.reward_mode == "shaped":
            now = potentials(self.scores())
            return [after - before for after, before in zip(now, self._potentials, strict=True)]
        return self.rewards() if self._ended else [0.0] * n

    def take_rewards(self) -> list[float]:
        """:meth:`due_rewards`, then marked as paid."""
        due = self.due_rewards()
        if self.over:
            self._settled = True
        elif self.reward_mode == "shaped":
            self._potentials = potentials(self.scores())
        return due

    # ------------------------------------------------------------------ moves
    def step(self, action: Any) -> bool:
        """The action of the seat to move (decided from outside), as ``CompiledMatch.step``."""
        seat = self.to_move
        over = super().step(action)
        if self.illegal is None:
            self.decisions[seat] += 1
        return over

    def play(self) -> bool:
        """The controllers' moves until a seat decided from outside is to move or the game is
        over; returns :attr:`over`. Each bot acts on its view of the Python state made from
        the row, under the host's time limit; an illegal choice raises as on the match loop."""
        host = self.host
        live_view = host.game.live_view
        plain = host.move_seconds is None and not host.guard
        core = self.core
        while not self.over:
            seat = self.to_move
            bot = host.controllers[seat]
            if bot is None:
                return False
            state: Any = None
            inside = self.kernel_bots[seat]
            if inside is not None:
                self._kernel_move(seat, inside)
                continue
            if self.legal_only[seat]:
                core.kernels.legal_mask(self.row, self._legal)
                view: Any = LegalView(tuple(int(a) for a in np.flatnonzero(self._legal)))
            else:
                state = self.state
                view = live_view(state, seat) if host._live[seat] else state.view(seat)
            if plain:
                t0 = time.perf_counter()
                action = bot.act(view)
                host.think[seat] += time.perf_counter() - t0
            else:
                action = host._ask(seat, bot, view)
                if host.forfeit is not None:
                    self.forfeit = host.forfeit
                    return True
            if type(action) is not int:
                action = action_id(action)
                if type(action) is not int:
                    raise ActionError(f"the controller of seat {seat} ({describe_value(bot)}) returned "
                                      f"{describe_value(action)} (a {type(action).__name__}), not an action id")
            code = core.advance(self.row, action, core.scratch, self._scores) if 0 <= action < core.num_actions else -1
            if code < 0:
                self._refused(seat, bot, self.state if state is None else state, action)
            self.to_move = code >> 1
            self._ended = code & 1 == 1
            self.decisions[seat] += 1
        return True

    def _kernel_move(self, seat: int, bot: tuple[int, np.ndarray, np.ndarray]) -> None:
        """The move of the kernels' bot ``bot`` (:func:`kernel_bot`) for ``seat``."""
        kernels, core = self.learner_core.bots, self.core
        assert kernels is not None
        kind, opts, extra = bot
        action = kernels.bot_action(self.row, self._legal, kind, 0, opts, extra)
        code = core.advance(self.row, action, core.scratch, self._scores)
        if code < 0:
            raise AssertionError(f"the kernels' bot of seat {seat} chose the illegal action {action}")
        self.to_move = code >> 1
        self._ended = code & 1 == 1
        self.decisions[seat] += 1

    @staticmethod
    def _refused(seat: int, bot: Any, state: Any, action: int) -> None:
        """Raise the match loop's error for a controller's illegal ``action`` in ``state``."""
        try:
            state.apply(action)
        except ActionError as exc:
            raise ActionError(f"the controller of seat {seat} ({describe_value(bot)}) chose an illegal action: "
                              f"{exc}") from exc
        raise AssertionError(f"the compiled core refused the action {action!r}, which the Python engine allows")

    def result(self) -> MatchResult:
        """The result of a finished game, as :meth:`Match.result <keltis_env.core.match.Match.result>`."""
        if not self.over:
            raise RuntimeError("the game is not over yet")
        return finished_result(self.state, self.scores(), self.rewards(), (), self.decisions, self.host.think,
                               self.illegal, self.forfeit)


__all__ = ["CompiledLearnerMatch", "LearnerCore", "LegalView", "feature_kernels", "kernel_bot",
           "resolve_learner_backend"]
