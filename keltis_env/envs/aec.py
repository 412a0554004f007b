"""Shared PettingZoo AEC machinery for the turn-based games of this package.

A game plugs in through its :class:`~keltis_env.core.game.GameDescriptor`: how to make
its options and states, its observation encoder, its text board and its picture.
:class:`TurnBasedAECEnv` turns that into a PettingZoo AEC environment with the
classic-environment conventions:

* agents ``player_0 .. player_{n-1}``, seat ``i`` is ``player_i``;
* observation ``{"observation": float32 Box, "action_mask": int8 Box}``; the mask is the
  acting agent's legal set and all zeros for every other agent;
* one ``Discrete`` action space; every decision is one AEC step, so an agent may act
  several times in a row;
* the game runs on the match loop (:class:`~keltis_env.core.match.Match`, every seat
  decided from outside): rewards at the end (also on truncation), from
  :mod:`keltis_env.core.rewards`, or after every action under ``"shaped"``, and the
  illegal-action option ``illegal_action``:
  ``"raise"`` (the raw environment's default) lets the engine's error propagate,
  ``"terminate"`` (the default of :func:`wrap`'s users, the ``env()`` functions) ends the
  game with ``-1`` for the offending agent and ``0`` for the others, PettingZoo's
  classic convention;
* :func:`wrap` adds PettingZoo's standard wrappers (out-of-bounds assertions, order
  enforcing);
* a bool (Python's or numpy's) is not an action id: it is refused like any illegal action,
  by the ``illegal_action`` option, with the reason ``action ids are integers 0..N-1, got
  True``; so is a value whose ``__index__`` fails (a numpy array that is not a 0-d integer
  array, such as ``np.array([3])``).
  The wrapped environment passes bools on to this refusal rather than to PettingZoo's bare
  out-of-bounds assertion;
* options the environment does not have raise a ``TypeError`` naming them and listing the
  options it has; ``reset`` takes an integer seed of any integer type, or ``None``;
* the environment pickles, wrapped or not, at any point of a game, and the copy goes on
  exactly like the original (a ``"human"`` window is not carried: the copy opens its own);
* ``backend`` (:data:`~keltis_env.core.compiled_match.BACKENDS`): ``"python"`` (the default)
  runs the game on the match loop and the Python engine; ``"compiled"`` on the game's
  compiled core (:class:`~keltis_env.core.compiled_match.CompiledMatch`: dealt by the
  Python engine, then two compiled calls a decision), with the same observations, masks,
  rewards, terminations, truncations, infos and errors; ``"auto"`` is the compiled core
  where numba is installed and the game has one. ``state_`` is the game's Python state,
  on the compiled backend a copy made when read.
"""

from __future__ import annotations

import random
import sys
from operator import attrgetter
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import order_enforcing

from keltis_env.core.compiled_match import CompiledGame, CompiledMatch, resolve_backend
from keltis_env.core.errors import ActionError, AgentError
from keltis_env.core.game import GameDescriptor, game_for_env
from keltis_env.core.match import (
    ILLEGAL_ACTION_MODES,
    IllegalAction,
    Match,
    check_illegal_action,
    check_reset_options,
    check_seed,
    not_an_action_id,
    start_position,
)
from keltis_env.core.render import BoardRenderer, render_modes
from keltis_env.core.rewards import TERMINAL_MODES, check_reward_mode

__all__ = ["ENV_ARGUMENTS", "ILLEGAL_ACTION_MODES", "TurnBasedAECEnv", "not_an_action_id", "raw_env_class", "wrap"]

#: the arguments every game's environment takes besides the game's own options
ENV_ARGUMENTS = ("num_players", "render_mode", "reward", "illegal_action", "backend")
#: the most characters of a refused value that a message shows
_SHOWN = 120


def shown(value: Any) -> str:
    """``repr(value)``, cut to a readable length (a refused array may be large)."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def is_bool(action: Any) -> bool:
    """``action`` is a bool: Python's, numpy's, or a numpy array of bools."""
    return isinstance(action, (bool, np.bool_)) or (isinstance(action, np.ndarray) and action.dtype == np.bool_)


def check_env_options(game: GameDescriptor, options: dict[str, Any], arguments: tuple[str, ...] = ENV_ARGUMENTS,
                      what: str = "") -> None:
    """Refuse options that neither ``arguments`` nor ``game``'s own options name, with a
    ``TypeError`` that names them and lists the allowed ones."""
    if not hasattr(game.config_cls, "__dataclass_fields__"):
        return  # a config class that lists no options: it refuses unknown ones itself
    allowed = [*arguments, *game.option_names()]
    unknown = [name for name in options if name not in allowed]
    if unknown:
        where = what or f"the environment {game.env_name}"
        raise TypeError(f"unknown option(s) {', '.join(map(repr, unknown))} for {where}; its options are "
                        f"{', '.join(allowed)}")


class TurnBasedAECEnv(AECEnv):
    """A PettingZoo AEC environment over a registered game (its descriptor ``game``)."""

    game: GameDescriptor  # set by subclasses
    match: Match | CompiledMatch  # the game in progress, made by reset()
    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "is_parallelizable": False, "render_fps": 2}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "game" in cls.__dict__:  # a game's environment: its picture decides the render modes
            cls.metadata = {**cls.metadata, "name": cls.game.env_name, "render_modes": render_modes(cls.game)}

    def __init__(
        self,
        num_players: int = 2,
        render_mode: str | None = None,
        reward: str = "win",
        illegal_action: str = "raise",
        backend: str = "python",
        **options: Any,
    ):
        super().__init__()
        spec = self.game
        check_env_options(spec, options)
        #: ``"python"`` or ``"compiled"``: what runs the game (``"auto"`` resolved)
        self.backend = resolve_backend(spec, backend)
        self._compiled = self.backend == "compiled"
        self.config = spec.make_config(num_players=num_players, **options)
        self.reward_mode = check_reward_mode(reward)
        self._dense = self.reward_mode not in TERMINAL_MODES
        self.illegal_action = check_illegal_action(illegal_action)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self._renderer = (
            None
            if render_mode is None
            else BoardRenderer(spec, render_mode, self.metadata.get("name", "board"), self.metadata["render_fps"])
        )
        self.num_players = self.config.num_players  # a plain int, whatever integer type was given
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        self.encoder = spec.make_encoder(num_players)
        self._core = CompiledGame(spec, self.encoder) if self._compiled else None
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(spec.obs_low, spec.obs_high, (self.encoder.size,), np.float32),
                "action_mask": spaces.Box(0, 1, (spec.num_actions,), np.int8),
            }
        )
        act_space = spaces.Discrete(spec.num_actions)
        # the out-of-bounds check's bounds of this space (see AssertOutOfBoundsWrapper)
        self._action_space, self._first_action, self._action_stop = act_space, 0, spec.num_actions
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._zero_mask = np.zeros(spec.num_actions, dtype=np.int8)
        self._seeder = random.Random()
        self._seeded = False
        self.game_seed: int | None = None

    @property
    def state_(self) -> Any:
        """The game's position as the Python engine's state (``None`` before the first
        reset). On the Python backend the live state of the game; on the compiled backend
        made from the compiled row at every read, a copy: changing it does not change the
        game."""
        match: Match | CompiledMatch | None = self.__dict__.get("match")
        return None if match is None else match.state

    def _check_agent(self, agent: Any) -> int:
        """The seat of ``agent``; :class:`AgentError` (a ``KeyError``) for a name this
        environment does not have."""
        try:
            return self._seat[agent]
        except (KeyError, TypeError):
            raise AgentError(f"unknown agent {agent!r}; the agents are {', '.join(self.possible_agents)}") from None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self.possible_agents[self._check_agent(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self.possible_agents[self._check_agent(agent)]]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a game.

        ``seed`` makes it reproducible; later resets without a seed continue a sequence
        drawn from it. ``options`` may hold ``{"state": <state dict>}`` to start from an
        explicit position, or ``{"record": <record dict>, "upto": k}`` to start from the
        position after the first ``k`` actions of a game record (all of them when ``upto``
        is absent). An explicit state must have this environment's options. Unknown
        options are ignored with a warning.
        """
        spec = self.game
        seed = check_seed(seed)  # numpy integers as plain ints; anything else but None refused
        if seed is not None:
            self._seeder.seed(seed)
            self._seeded = True
        elif not self._seeded:
            self._seeder.seed(random.SystemRandom().randrange(2**63))
            self._seeded = True
        game_seed = seed if seed is not None else self._seeder.randrange(2**63)
        state = start_position(spec, self.config, check_reset_options(options))
        if state is None:
            state = spec.new_state(self.config, game_seed)
            self.game_seed = game_seed
        else:
            self.game_seed = None
        self.match = (
            CompiledMatch(self._core, state, reward=self.reward_mode, illegal_action=self.illegal_action)
            if self._core is not None
            else Match(spec, state, reward=self.reward_mode, illegal_action=self.illegal_action)
        )
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        if state.is_over:  # a finished position: every agent's final reward is due now
            self._end_game()
            self._accumulate_rewards()
        self.agent_selection = self.possible_agents[state.current_player]

    # ------------------------------------------------------------------ observe / step
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._check_agent(agent)
        if self._compiled:
            return self.match.observe(seat)  # type: ignore[union-attr]
        state = self.match.state
        obs = self.encoder.encode(self.game.live_view(state, seat))
        if seat == state.current_player and not self.match.over:
            mask = self.encoder.mask(state.legal_actions())
        else:
            mask = self._zero_mask.copy()
        return {"observation": obs, "action_mask": mask}

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        # Under "raise" the engine's error, naming the action and the reason, propagates
        # from here and nothing has changed.
        reason = None if type(action) is int else not_an_action_id(action, self.game.num_actions)
        over = self.match.step(action) if reason is None else self._refuse(action, reason)
        self._cumulative_rewards[agent] = 0.0
        if over:
            self._end_game()
            # Under "win" and "score" rewards are paid only at the end (they are all 0
            # before), so this is the only step where accumulating them changes anything.
            self._accumulate_rewards()
        elif self._dense:  # "shaped": every seat's change of potential, after every action
            for agent_name, reward in zip(self.possible_agents, self.match.take_rewards(), strict=True):
                self.rewards[agent_name] = reward
            self._accumulate_rewards()
        self.agent_selection = self.possible_agents[self.match.to_move]
        if self.render_mode == "human":
            self.render()

    def _refuse(self, action: Any, reason: str) -> bool:
        """``action``, not an action id, as the match loop treats an illegal one: under
        ``"raise"`` an :class:`ActionError` and nothing changes; under ``"terminate"`` the
        game ends with the acting seat as the offender. Returns that the game is over."""
        if self.illegal_action == "raise":
            raise ActionError(reason)
        self.match.illegal = IllegalAction(self.match.to_move, action, reason)
        return True

    def _end_game(self) -> None:
        match = self.match
        rewards = match.take_rewards()  # the final rewards ("shaped": the last change of potential)
        illegal = match.illegal
        if illegal is not None:
            EnvLogger.warn_on_illegal_move()  # PettingZoo's classic environments do the same
            info: dict[str, Any] = {
                "illegal_action": illegal.action,
                "offender": self.possible_agents[illegal.seat],
                "reason": illegal.reason,
            }
            for i, agent in enumerate(self.possible_agents):
                self.rewards[agent] = rewards[i]
                self.terminations[agent] = True
                self.truncations[agent] = False
                self.infos[agent] = dict(info)
            return
        if isinstance(match, CompiledMatch):
            scores, truncated = match.scores(), match.truncated
        else:
            scores, truncated = match.state.scores(), bool(match.state.truncated)
        for i, agent in enumerate(self.possible_agents):
            self.rewards[agent] = rewards[i]
            self.terminations[agent] = not truncated
            self.truncations[agent] = truncated
            self.infos[agent] = {"score": scores[i], "scores": list(scores)}

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the text board; ``"rgb_array"``: the picture as an (H, W, 3) uint8
        array; ``"human"``: shows the picture in a window (updated every step), or, for a
        game without a picture or where no window can open (no display, no matplotlib),
        prints the text board, warning once."""
        if self._renderer is None:
            import gymnasium

            gymnasium.logger.warn(
                f"render() was called without a render_mode; pass one of {self.metadata['render_modes']}."
            )
            return None
        return self._renderer.render(self.state_)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Everything but an open ``"human"`` window: the copy gets a renderer of its own."""
        state = self.__dict__.copy()
        renderer = self._renderer
        if renderer is not None:
            state["_renderer"] = BoardRenderer(renderer.game, renderer.mode, renderer.title, renderer.fps)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by its class where pickle finds it by name (``keltis_v0.raw_env``); the
        environment class of a game registered elsewhere (:func:`keltis_env.envs.raw_env_class`
        makes it) is found again by the game's registry name."""
        cls = type(self)
        origin: type | str = cls
        if not _importable(cls) and raw_env_class(self.game) is cls:
            origin = self.game.name
        return (_restored_env, (origin,), self.__getstate__())


def _importable(cls: type) -> bool:
    """Pickle finds ``cls`` by its module and qualified name."""
    found: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


def _restored_env(origin: type | str) -> TurnBasedAECEnv:
    """An empty environment of the class ``origin``, or of the registered game named
    ``origin``, for pickle to fill in."""
    if isinstance(origin, str):
        origin = raw_env_class(origin)
    env: TurnBasedAECEnv = origin.__new__(origin)
    return env


_RAW_ENV_CLASSES: dict[int, type[TurnBasedAECEnv]] = {}


def raw_env_class(game: str | GameDescriptor) -> type[TurnBasedAECEnv]:
    """The unwrapped environment class of ``game`` (a registry name, an environment name
    or a descriptor); one class per descriptor, so ``make_raw_env("keltis")`` is an
    instance of ``keltis_v0.raw_env``. Its instances pickle (by the game's registry name
    where the class has no importable name of its own)."""
    descriptor = game_for_env(game)
    cls = _RAW_ENV_CLASSES.get(id(descriptor))
    if cls is None or cls.game is not descriptor:
        doc = (f"{descriptor.long_name} without wrappers (illegal actions raise ``ActionError`` by default); "
               f"the environment ``{descriptor.env_name}``.")
        cls = type("raw_env", (TurnBasedAECEnv,), {"game": descriptor, "__doc__": doc, "__module__": "keltis_env.envs"})
        _RAW_ENV_CLASSES[id(descriptor)] = cls
    return cls


# PettingZoo's wrappers reach the environment's per-step attributes through __getattr__,
# one level per wrapper, dozens of times per step. These subclasses behave exactly like
# the originals (they are instances of them) but read and write those attributes on the
# raw environment directly (a C-level attrgetter: these reads are the hot path). Before
# the first reset the raw environment has none of them; the AttributeError then falls
# back to the wrapper's own __getattr__, so OrderEnforcingWrapper still refuses access
# before reset with its usual message.
_HOT_ATTRIBUTES = (
    "agent_selection", "agents", "rewards", "terminations", "truncations", "infos", "_cumulative_rewards",
)


def _forward(name: str) -> property:
    def set_(self: Any, value: Any) -> None:
        setattr(self._raw_env, name, value)

    return property(attrgetter(f"_raw_env.{name}"), set_)


def _direct(wrapper: type, **methods: Any) -> type:
    """``wrapper`` with the hot attributes read and written on the raw environment, under the
    original's name (``str(env)`` reads as PettingZoo's), in this module: it must be bound
    here under that same name, where pickle looks for it."""
    namespace: dict[str, Any] = {name: _forward(name) for name in _HOT_ATTRIBUTES}
    namespace.update(methods, __doc__=wrapper.__doc__, __module__=__name__, __qualname__=wrapper.__name__)
    return type(wrapper.__name__, (wrapper,), namespace)


def _step_passing_bools(self: Any, action: Any) -> None:
    """PettingZoo's out-of-bounds assertion, except for bools: ``True`` is in a ``Discrete``
    space by Gymnasium's test, numpy's ``True`` is not, and neither is an action id; both go
    on to the environment, which refuses them by its ``illegal_action`` option, naming them.

    A plain ``int`` (the usual action) is checked against the space's bounds directly:
    ``Discrete.contains`` builds an ``np.iinfo`` on every call, and for a plain int it
    answers exactly ``start <= action < start + n`` (every such id fits the space's dtype);
    the environment's own space (every agent's, unless replaced) has its bounds at hand.
    Everything else takes PettingZoo's own assertion, with its message."""
    if type(action) is int:
        raw = self._raw_env
        space = raw.action_spaces.get(raw.agent_selection)
        if space is raw._action_space:
            assert raw._first_action <= action < raw._action_stop, "action is not in action space"
            self.env.step(action)
            return
        if type(space) is spaces.Discrete:
            start = int(space.start)
            assert start <= action < start + int(space.n), "action is not in action space"
            self.env.step(action)
            return
    if type(action) is not int and is_bool(action):
        wrappers.BaseWrapper.step(self, action)
    else:
        wrappers.AssertOutOfBoundsWrapper.step(self, action)


# The order-enforcing wrapper's per-step calls make the same checks as PettingZoo's, with
# fewer Python frames: ``step`` goes to the next layer without BaseWrapper.step in between,
# ``observe`` and ``last`` reach the raw environment past the out-of-bounds layer (which
# passes observations on unchanged), and ``agent_iter``'s iterator makes its checks in one
# call.
def _order_step(self: Any, action: Any) -> None:
    """PettingZoo's ``OrderEnforcingWrapper.step``."""
    if not self._has_reset:
        EnvLogger.error_step_before_reset()
    elif not self.agents:
        self._has_updated = True
        EnvLogger.warn_step_after_terminated_truncated()
    else:
        self._has_updated = True
        self.env.step(action)


def _order_observe(self: Any, agent: Any) -> Any:
    """PettingZoo's ``OrderEnforcingWrapper.observe``."""
    if not self._has_reset:
        EnvLogger.error_observe_before_reset()
    return self._raw_env.observe(agent)


def _order_last(self: Any, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """PettingZoo's ``AECEnv.last`` on the order-enforcing wrapper."""
    agent = self.agent_selection
    assert agent is not None
    observation = _order_observe(self, agent) if observe else None
    raw = self._raw_env
    return observation, raw._cumulative_rewards[agent], raw.terminations[agent], raw.truncations[agent], \
        raw.infos[agent]


class _AgentIterable(order_enforcing.AECOrderEnforcingIterable):
    """PettingZoo's ``agent_iter`` iterable, with :class:`_AgentIterator`."""

    def __iter__(self) -> _AgentIterator:
        return _AgentIterator(self.env, self.max_iter)


class _AgentIterator(order_enforcing.AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing agent iterator, its checks in one call."""

    def __next__(self) -> Any:
        env = self.env
        raw = env._raw_env
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        env._has_updated = False
        return raw.agent_selection


def _order_agent_iter(self: Any, max_iter: int = 2**63) -> _AgentIterable:
    """PettingZoo's ``OrderEnforcingWrapper.agent_iter``."""
    if not self._has_reset:
        EnvLogger.error_agent_iter_before_reset()
    return _AgentIterable(self, max_iter)


AssertOutOfBoundsWrapper = _direct(wrappers.AssertOutOfBoundsWrapper, step=_step_passing_bools)
OrderEnforcingWrapper = _direct(wrappers.OrderEnforcingWrapper, step=_order_step, observe=_order_observe,
                                last=_order_last, agent_iter=_order_agent_iter)


def wrap(raw: TurnBasedAECEnv) -> AECEnv:
    """PettingZoo's classic wrapper stack: out-of-bounds assertions and order enforcing.
    Illegal actions are the raw environment's ``illegal_action`` option (the match loop
    handles them, with PettingZoo's classic rewards under ``"terminate"``)."""
    env: AECEnv = raw
    for layer in (AssertOutOfBoundsWrapper, OrderEnforcingWrapper):
        env = layer(env)
        env._raw_env = raw  # type: ignore[attr-defined]
    return env
