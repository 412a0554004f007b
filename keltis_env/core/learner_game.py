"""The learner's game: one value with the arguments every learner front-end takes.

A learner game is a game of a registered game with a number of players, in which one seat,
the learner's, is decided from outside. What the learner receives is set by the same
arguments on every path (the learner view, its compiled backend, the vector environment,
SB3's VecEnv, the training collector, RLlib's games): :class:`LearnerGame` holds them, with
their defaults and checks written once here. Every constructor builds one (or takes one)
and reads its checked values; an error names the argument as the user wrote it (the
constructor's keyword, or a config's key through :meth:`LearnerGame.named`).

The opponents are not part of it: the learner view takes a weighted pool of any agents,
the vector environments one agent spec that their compiled core plays; each checks its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .game import GameDescriptor, game_for_env
from .match import check_illegal_action
from .rewards import check_reward_mode

#: how a game cut at its turn cap (R8) ends a learner's episode: ``"truncate"`` (Gymnasium's
#: truncation: a trainer bootstraps the value of the position) or ``"end"`` (terminated at
#: the standings: the cap is the end of the game, nothing is bootstrapped)
TURN_CAPS = ("truncate", "end")


def check_turn_cap(value: Any) -> str:
    if not isinstance(value, str) or value not in TURN_CAPS:
        raise ValueError(f"turn_cap must be one of {', '.join(map(repr, TURN_CAPS))}, got {value!r}")
    return value


class LearnerGameError(ValueError):
    """A refused learner-game argument; ``field`` names the :class:`LearnerGame` field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class LearnerGame:
    """The learner-game arguments, checked: ``game`` (a registered game's name or environment
    name, or a descriptor; kept as its registry name), ``num_players``, ``reward`` (``"win"``, ``"score"``,
    ``"shaped"``), ``turn_cap`` (:data:`TURN_CAPS`), ``features`` (the game's optional
    observation features, a tuple), ``illegal_action`` (``"terminate"`` or ``"raise"``) and
    ``options`` (the game's own options, e.g. ``max_turns``). :attr:`config` is the game's
    config made from them, :attr:`descriptor` the game."""

    game: str | GameDescriptor = "keltis"
    num_players: int = 2
    reward: str = "win"
    turn_cap: str = "truncate"
    features: Sequence[str] | None = ()
    illegal_action: str = "terminate"
    options: Mapping[str, Any] = field(default_factory=dict)
    descriptor: GameDescriptor = field(init=False, repr=False, compare=False)
    config: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def checked(name: str, check: Any, *args: Any) -> Any:
            try:
                return check(*args)
            except ValueError as exc:
                raise LearnerGameError(name, str(exc)) from None

        descriptor = checked("game", game_for_env, self.game)
        if not isinstance(self.options, Mapping):
            raise LearnerGameError("options", f"options must be a mapping of the game's options, got "
                                              f"{type(self.options).__name__}")
        known = descriptor.option_names()
        unknown = [name for name in self.options if name not in known]
        if unknown and hasattr(descriptor.config_cls, "__dataclass_fields__"):
            raise TypeError(f"unknown option(s) {', '.join(map(repr, unknown))} for the game {descriptor.name!r}; "
                            f"its options are {', '.join(known) or 'none'}")
        config = checked("num_players", lambda: descriptor.make_config(self.num_players, **dict(self.options)))
        put = object.__setattr__  # a frozen dataclass keeps its checked values
        put(self, "descriptor", descriptor)
        put(self, "game", descriptor.name)
        put(self, "config", config)
        put(self, "num_players", config.num_players)
        put(self, "options", dict(self.options))
        put(self, "reward", checked("reward", check_reward_mode, self.reward))
        put(self, "turn_cap", checked("turn_cap", check_turn_cap, self.turn_cap))
        put(self, "features", checked("features", descriptor.check_features, self.features))
        put(self, "illegal_action", checked("illegal_action", check_illegal_action, self.illegal_action))

    @classmethod
    def named(cls, names: Mapping[str, str], **values: Any) -> LearnerGame:
        """A :class:`LearnerGame` from ``values`` whose refusal names the argument as
        ``names`` maps the field (e.g. ``{"turn_cap": "env_config['turn_cap']"}``)."""
        try:
            return cls(**values)
        except LearnerGameError as exc:
            shown = names.get(exc.field)
            message = str(exc)
            if shown is not None and message.startswith(exc.field):
                message = shown + message[len(exc.field):]
            raise LearnerGameError(exc.field, message) from None

    @property
    def reward_number(self) -> int:
        """The reward mode's number, as the kernels take it."""
        from .rewards import REWARD_MODES

        return REWARD_MODES.index(self.reward)


__all__ = ["TURN_CAPS", "LearnerGame", "LearnerGameError", "check_turn_cap"]
