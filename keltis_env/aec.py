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
  decided from outside): rewards only at the end (also on truncation), from
  :mod:`keltis_env.core.rewards`, and the illegal-action option ``illegal_action``:
  ``"raise"`` (the raw environment's default) lets the engine's error propagate,
  ``"terminate"`` (the default of :func:`wrap`'s users, the ``env()`` functions) ends the
  game with ``-1`` for the offending agent and ``0`` for the others, PettingZoo's
  classic convention;
* :func:`wrap` adds PettingZoo's standard wrappers (out-of-bounds assertions, order
  enforcing).
"""

from __future__ import annotations

import random
from operator import attrgetter
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from keltis_env.core.errors import AgentError
from keltis_env.core.game import GameDescriptor
from keltis_env.core.match import ILLEGAL_ACTION_MODES, Match, check_illegal_action, check_reset_options, start_position
from keltis_env.core.render import BoardRenderer, render_modes
from keltis_env.core.rewards import check_reward_mode
from keltis_env.core.validation import as_integer

__all__ = ["ILLEGAL_ACTION_MODES", "TurnBasedAECEnv", "wrap"]


class TurnBasedAECEnv(AECEnv):
    """A PettingZoo AEC environment over a registered game (its descriptor ``game``)."""

    game: GameDescriptor  # set by subclasses
    match: Match  # the game in progress, made by reset()
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
        **options: Any,
    ):
        super().__init__()
        spec = self.game
        self.config = spec.make_config(num_players=num_players, **options)
        self.reward_mode = check_reward_mode(reward)
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
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(spec.obs_low, spec.obs_high, (self.encoder.size,), np.float32),
                "action_mask": spaces.Box(0, 1, (spec.num_actions,), np.int8),
            }
        )
        act_space = spaces.Discrete(spec.num_actions)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._zero_mask = np.zeros(spec.num_actions, dtype=np.int8)
        self._seeder = random.Random()
        self._seeded = False
        self.state_: Any = None
        self.game_seed: int | None = None

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
        if seed is not None:
            integer = as_integer(seed)  # numpy integers as plain ints
            seed = seed if integer is None else integer
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
        self.state_ = state
        self.match = Match(spec, state, reward=self.reward_mode, illegal_action=self.illegal_action)
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
        state = self.state_
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
        over = self.match.step(action)
        self._cumulative_rewards[agent] = 0.0
        if over:
            self._end_game()
            # Rewards are paid only at the end (they are all 0 before), so this is the
            # only step where accumulating them changes anything.
            self._accumulate_rewards()
        self.agent_selection = self.possible_agents[self.state_.current_player]
        if self.render_mode == "human":
            self.render()

    def _end_game(self) -> None:
        match = self.match
        rewards = match.rewards()
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
        state = self.state_
        scores = state.scores()
        truncated = bool(state.truncated)
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


def _direct(wrapper: type) -> type:
    namespace: dict[str, Any] = {name: _forward(name) for name in _HOT_ATTRIBUTES}
    namespace["__doc__"] = wrapper.__doc__
    return type(wrapper.__name__, (wrapper,), namespace)


_AssertOutOfBounds = _direct(wrappers.AssertOutOfBoundsWrapper)
_OrderEnforcing = _direct(wrappers.OrderEnforcingWrapper)


def wrap(raw: TurnBasedAECEnv) -> AECEnv:
    """PettingZoo's classic wrapper stack: out-of-bounds assertions and order enforcing.
    Illegal actions are the raw environment's ``illegal_action`` option (the match loop
    handles them, with PettingZoo's classic rewards under ``"terminate"``)."""
    env: AECEnv = raw
    for layer in (_AssertOutOfBounds, _OrderEnforcing):
        env = layer(env)
        env._raw_env = raw  # type: ignore[attr-defined]
    return env
