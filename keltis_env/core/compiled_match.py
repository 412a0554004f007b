"""One game of an AEC environment on a game's compiled core (the ``fast`` extra): the
environments' ``backend="compiled"``.

:class:`CompiledMatch` answers the environment as the match loop
(:class:`~keltis_env.core.match.Match`, every seat decided from outside) does, with the
same rewards, illegal-action handling and errors, but the position is one row of the
game's compiled kernels (``keltis_env.games.<game>.kernels``): per decision one compiled
call makes the observation and the mask, one applies the action and scores the position.
The game is dealt by the Python engine (its seed, its layouts, or a reset option's
position) and moved into a row, so a seed gives the same game on both backends; the
Python state is made from the row only when asked for (:attr:`CompiledMatch.state`: a
new object at every read, which does not change the game).

A game's kernels module takes part through ``to_row(state)``, ``from_row(row, start)``,
``observer_args(encoder)``, the kernels ``observe`` and ``advance`` and the row offset ``END``
(:func:`compiled_kernels`). Nothing on the Python path imports this module's kernels:
they are loaded when a compiled backend is asked for.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .errors import ActionError
from .game import GameDescriptor, get_game
from .match import IllegalAction, action_id, check_illegal_action
from .rewards import check_reward_mode, final_rewards, potentials

#: the environments' ``backend`` values: ``"auto"`` is the compiled core where it can run
BACKENDS = ("python", "compiled", "auto")
#: what a game's kernels module gives the AEC backend
AEC_KERNELS = ("to_row", "from_row", "observer_args", "observe", "advance", "END")


def compiled_kernels(game: GameDescriptor) -> ModuleType | None:
    """``game``'s compiled kernels module with the AEC backend's functions, or ``None`` for a
    game without one. Without numba the kernels' one-line ``ImportError`` (naming the
    ``fast`` extra) is raised."""
    module = game.compiled_module("kernels")  # the descriptor says whether and where
    return module if module is not None and all(hasattr(module, name) for name in AEC_KERNELS) else None


def resolve_backend(game: GameDescriptor, backend: Any) -> str:
    """``"python"`` or ``"compiled"`` for ``backend`` (one of :data:`BACKENDS`): ``"auto"`` is
    ``"compiled"`` where numba imports and ``game`` has kernels, else ``"python"``. A bad
    value raises a one-line ``ValueError`` naming the allowed ones; ``"compiled"`` for a
    game without kernels a ``ValueError`` naming the game, and without numba the
    kernels' ``ImportError`` naming the extra."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if backend == "python":
        return backend
    try:
        found = compiled_kernels(game)
    except ImportError:
        if backend == "auto":
            return "python"
        raise
    if found is not None:
        return "compiled"
    if backend == "auto":
        return "python"
    raise ValueError(f"the game {game.name!r} has no compiled core for its environment "
                     f"(its descriptor's compiled kernels with {', '.join(AEC_KERNELS)}); use backend='python'")


class CompiledGame:
    """What the games of one environment share on the compiled core: ``game``'s kernels
    (:func:`compiled_kernels`), the observation layout of ``encoder`` and scratch space.
    Pickles by the game and the encoder; the copy loads the kernels again."""

    def __init__(self, game: str | GameDescriptor, encoder: Any) -> None:
        self.game = get_game(game)
        self.encoder = encoder
        self._bind()

    def _bind(self) -> None:
        kernels = compiled_kernels(self.game)
        if kernels is None:
            raise ValueError(f"the game {self.game.name!r} has no compiled core for its environment")
        self.kernels = kernels
        self.observe = kernels.observe
        self.advance = kernels.advance
        self.args = kernels.observer_args(self.encoder)
        self.size = self.encoder.size
        self.num_actions = self.game.num_actions
        self.scratch = np.zeros(self.num_actions, dtype=np.int8)
        self.end = kernels.END  # where a row holds how the game ended
        self.truncated_end = int(self.game.state_cls.TRUNCATED)

    def __getstate__(self) -> dict[str, Any]:
        return {"game": self.game, "encoder": self.encoder}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)
        self._bind()


class CompiledMatch:
    """A game in progress on the compiled core ``core`` (a :class:`CompiledGame`), started
    from the Python state ``state`` (which it keeps for its options and never moves), every
    seat decided from outside. The parts of :class:`~keltis_env.core.match.Match` the
    environments use: :meth:`step`, :attr:`over`, :attr:`illegal`, :meth:`take_rewards`,
    :attr:`to_move` and :attr:`state`; and :meth:`observe`, :meth:`scores` and
    :attr:`truncated`."""

    def __init__(self, core: CompiledGame, state: Any, *, reward: str = "win", illegal_action: str = "raise") -> None:
        self.core = core
        self.reward_mode = check_reward_mode(reward)
        self.illegal_action = check_illegal_action(illegal_action)
        self._start = state  # its options (and the dice game's seed), which the row does not hold
        self.num_players = state.num_players
        self.illegal: IllegalAction | None = None
        self.row = core.kernels.to_row(state)
        #: the seat that decides next (the last mover once the game is over)
        self.to_move = int(state.current_player)
        self._ended = bool(state.is_over)
        self._scores = np.zeros(core.game.max_players, dtype=np.int64)
        self._scores[: self.num_players] = state.scores()
        # what take_rewards has paid: the potentials at its last call ("shaped"), and whether the end is paid
        self._potentials = potentials(self.scores()) if self.reward_mode == "shaped" else []
        self._settled = False

    # ------------------------------------------------------------------ queries
    @property
    def over(self) -> bool:
        """The game ended by the rules, by truncation or by an illegal action."""
        return self._ended or self.illegal is not None

    @property
    def state(self) -> Any:
        """The position as the Python engine's state: a new object at every read (changing it
        does not change the game)."""
        return self.core.kernels.from_row(self.row, self._start)

    @property
    def truncated(self) -> bool:
        """The game was cut at its turn cap."""
        return int(self.row[self.core.end]) == self.core.truncated_end

    def scores(self) -> list[int]:
        """Every seat's score now."""
        return [int(x) for x in self._scores[: self.num_players]]

    def observe(self, seat: int) -> dict[str, np.ndarray]:
        """``seat``'s observation and action mask (zeros unless it is to act in a game that goes on)."""
        core = self.core
        obs = np.empty(core.size, dtype=np.float32)
        mask = np.empty(core.num_actions, dtype=np.int8)
        core.observe(self.row, seat, self.illegal is None, *core.args, obs, mask)
        return {"observation": obs, "action_mask": mask}

    # ------------------------------------------------------------------ rewards
    def rewards(self) -> list[float]:
        """Every seat's final reward; all 0 while the game goes on."""
        n = self.num_players
        if self.illegal is not None:
            return [-1.0 if p == self.illegal.seat else 0.0 for p in range(n)]
        if not self._ended:
            return [0.0] * n
        return final_rewards(self.scores(), self.reward_mode)

    def take_rewards(self) -> list[float]:
        """Every seat's reward due since the last call, then marked as paid (as
        :meth:`Match.take_rewards <keltis_env.core.match.Match.take_rewards>`)."""
        n = self.num_players
        if self._settled:
            due = [0.0] * n
        elif self.illegal is not None:
            due = self.rewards()
        elif self.reward_mode == "shaped":
            now = potentials(self.scores())
            due = [after - before for after, before in zip(now, self._potentials, strict=True)]
            self._potentials = now
        else:
            due = self.rewards() if self._ended else [0.0] * n
        if self.over:
            self._settled = True
        return due

    # ------------------------------------------------------------------ moves
    def step(self, action: Any) -> bool:
        """Apply ``action`` for the seat to move, under the illegal-action policy; returns
        :attr:`over`. An illegal action is named by the Python engine, as on the Python
        backend."""
        if self._ended or self.illegal is not None:
            raise RuntimeError("the game is over; no more actions")
        if type(action) is not int:
            action = action_id(action)
        core = self.core
        if type(action) is int and 0 <= action < core.num_actions:
            code: int = core.advance(self.row, action, core.scratch, self._scores)
            if code >= 0:
                self.to_move = code >> 1
                self._ended = over = code & 1 == 1
                return over
        seat = self.to_move
        try:
            self.state.apply(action)  # raises the engine's error, which names the action and why
        except ActionError as exc:
            if self.illegal_action == "raise":
                raise
            self.illegal = IllegalAction(seat, action, str(exc))
            return True
        raise AssertionError(f"the compiled core refused the action {action!r}, which the Python engine allows")


__all__ = ["AEC_KERNELS", "BACKENDS", "CompiledGame", "CompiledMatch", "compiled_kernels", "resolve_backend"]
