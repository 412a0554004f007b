"""Every registered game on Ray RLlib's new API stack (RLlib 2.60, torch).

:class:`TurnBasedMultiAgentEnv`
    The PettingZoo AEC environment of a game (:func:`keltis_env.envs.make_env`) as
    an RLlib ``MultiAgentEnv``. Only the agent to act receives an observation, in RLlib's
    masking convention ``{"observations": float32 vector, "action_mask": float32 0/1}``
    (PettingZoo's key is ``"observation"`` and its mask is int8). When the game ends,
    *every* agent receives its final observation, its own final reward (losers included,
    whoever made the last move) and ``terminateds`` (or ``truncateds`` when the game was
    cut at ``max_turns``, unless ``turn_cap`` is ``"end"``), with ``"__all__"`` set.
    Rewards paid while an agent waits are held back and handed over with its next
    observation, so nothing is lost and nothing is credited to the wrong agent.

:class:`MaskedActorCritic`
    A torch ``RLModule`` for PPO: a policy MLP whose logits of illegal actions are
    pushed to ``-1e9`` (probability 0; never ``-inf``, so an all-zero mask on a final
    observation stays finite) and a separate value MLP (``ValueFunctionAPI``). Its
    ``model_config`` records the game and the number of players, so a checkpoint says
    what it plays, and the relabellings it plays averaged over as a bot (``symmetry``).

:class:`BotSeatModule`, bot seats
    Our bots act on a player's view, not on tensors, so they cannot run inside an
    RLModule. The policy mapping (the RLlib trainer's is
    ``training.rllib.league.LeagueMapping``) still decides who plays every seat: an agent
    mapped to a bot's module answers its first decision with the *seat claim*
    ``-1 - slot``, where ``slot`` is the bot's index in the environment's ``bots`` list.
    The environment then makes that bot (:func:`keltis_env.bots.make_bot`, seeded from the
    game) and plays the seat's turns itself until the game ends; the agent reappears only
    with its final observation and reward. A claim is the only negative action the
    environment accepts.

:class:`RLlibBot`
    ``make_bot("rllib:CHECKPOINT")``: a trained module as a bot for ``keltis evaluate``,
    ``keltis play`` and the evaluation toolkit (one of the bots every game has,
    :data:`keltis_env.bots.COMMON_BOTS`).

RLlib's environment checker steps an unmasked random action, which the engine rightly
refuses (ray-project/ray issue #54600, open), so configurations built on this module pass
``disable_env_checking=True``. RLlib's own ``PettingZooEnv`` wrapper runs our AEC
environments too (``tests/test_clients.py``), but passes PettingZoo's ``"observation"`` key
through, so RLlib's masking modules, which read ``"observations"``, cannot use it as is.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    import gymnasium as gym
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis import ValueFunctionAPI
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.core.rl_module.torch import TorchRLModule
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"keltis_env.integrations.rllib needs Ray RLlib and torch ({exc.name} is missing); install the "
        "distributed extra: pip install -c constraints.txt -e '.[train,distributed]'"
    ) from exc

from keltis_env.bots import Bot, make_bot
from keltis_env.core.game import get_game
from keltis_env.core.learner_game import TURN_CAPS, LearnerGame
from keltis_env.core.rewards import win_shares
from keltis_env.envs import make_env
from keltis_env.envs.aec import check_seed

#: logit given to illegal actions: probability 0 after the softmax, yet finite
MASKED_LOGIT = -1e9
#: the learner's module id
MAIN = "main"
ENV_CONFIG_KEYS = ("game", "num_players", "reward", "illegal_action", "bots", "options", "turn_cap")


def claim_action(slot: int) -> int:
    """The action by which an agent hands its seat to the bot at ``slot`` of the env's ``bots``."""
    return -1 - slot


# ---------------------------------------------------------------------- environment
class TurnBasedMultiAgentEnv(MultiAgentEnv):
    """A registered game's AEC environment as an RLlib ``MultiAgentEnv`` (see the module doc).

    ``config`` (RLlib's ``env_config``): ``game`` (registry name, default ``"keltis"``),
    ``num_players`` (2), ``reward`` (``"win"``, ``"score"`` or ``"shaped"``), ``illegal_action``
    (``"raise"``, the default, or ``"terminate"``, as in the PettingZoo environment),
    ``bots`` (bot specs that may claim seats, e.g. ``["random", "heuristic"]``),
    ``options`` (the game's own options, e.g. ``{"max_turns": 500}``) and ``turn_cap``
    (:data:`TURN_CAPS`: ``"truncate"``, the default, or ``"end"``).
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(config or {})
        unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
        if unknown:
            raise ValueError(f"unknown env_config key(s) {unknown}; the keys are {', '.join(ENV_CONFIG_KEYS)}")
        self.game = get_game(config.get("game", "keltis"))
        bots = config.get("bots", ())
        if isinstance(bots, str) or not all(isinstance(b, str) for b in bots):
            raise ValueError(
                f"env_config['bots'] must be a list of bot specs such as ['random', 'heuristic'], got {bots!r}"
            )
        self.bot_specs: list[str] = list(bots)
        for spec in self.bot_specs:  # fail now, not in the middle of a training run
            make_bot(spec, seed=0, game=self.game.name)
        options = config.get("options") or {}
        if not isinstance(options, Mapping):
            raise ValueError(f"env_config['options'] must be a mapping of game options, got {options!r}")
        given = {key: config[key] for key in ("num_players", "reward", "turn_cap", "illegal_action") if key in config}
        #: the learner game's arguments, checked; a refusal names the env_config key
        self.learner = LearnerGame.named({key: f"env_config[{key!r}]" for key in (*given, "options")},
                                         game=self.game.name, **{"illegal_action": "raise", **given}, options=options)
        self.turn_cap = self.learner.turn_cap
        self.aec = make_env(
            self.game,
            num_players=self.learner.num_players,
            reward=self.learner.reward,
            illegal_action=self.learner.illegal_action,
            **options,
        )
        self.raw = self.aec.unwrapped
        self.possible_agents = list(self.aec.possible_agents)
        self.agents = list(self.possible_agents)
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        inner = self.aec.observation_space(self.possible_agents[0])["observation"]
        n = self.game.num_actions
        space = gym.spaces.Dict(
            {
                "observations": gym.spaces.Box(inner.low, inner.high, inner.shape, np.float32),
                "action_mask": gym.spaces.Box(0.0, 1.0, (n,), np.float32),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = dict.fromkeys(self.possible_agents, gym.spaces.Discrete(n))
        self._pending: dict[str, float] = {}
        self._bots: dict[int, Bot] = {}
        self._bot_seeds = random.Random()
        self._game_seed: int | None = None

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        seed = check_seed(seed)  # refused before anything is seeded: the AEC env's message, not random's
        if seed is not None:
            self._bot_seeds.seed(seed)
        self.aec.reset(seed=seed, options=options)
        if self._over():
            raise ValueError("the environment was reset to a finished position; RLlib needs a game to play")
        self._pending = dict.fromkeys(self.possible_agents, 0.0)
        self._bots = {}
        self._game_seed = self._bot_seeds.randrange(2**63)
        agent = self.aec.agent_selection
        return {agent: self._observe(agent)}, {agent: {}}

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        agent = self.aec.agent_selection
        if set(action_dict) != {agent}:
            raise ValueError(f"it is {agent}'s turn alone: the action dict must hold one action, for {agent}; "
                             f"got actions for {sorted(action_dict)}")
        action = int(action_dict[agent])
        if action < 0:
            slot = -1 - action
            if slot >= len(self.bot_specs):
                raise ValueError(
                    f"{agent} sent {action}: a negative action claims the seat for a bot (-1 - slot), but this "
                    f"environment's bots are {self.bot_specs} "
                    f"(claims {[claim_action(i) for i in range(len(self.bot_specs))]})"
                )
            seat = self._seat[agent]
            self._bots[seat] = make_bot(self.bot_specs[slot], seed=self._game_seed + seat, game=self.game.name)
        else:
            self._apply(action)
        self._play_bots()
        if self._over():
            return self._final()
        nxt = self.aec.agent_selection
        reward = self._pending[nxt]
        self._pending[nxt] = 0.0
        return {nxt: self._observe(nxt)}, {nxt: reward}, {"__all__": False}, {"__all__": False}, {nxt: {}}

    def render(self) -> Any:
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()

    # ------------------------------------------------------------------ internals
    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = self.aec.observe(agent)
        return {"observations": obs["observation"], "action_mask": obs["action_mask"].astype(np.float32)}

    def _apply(self, action: int) -> None:
        self.aec.step(action)
        # AEC rewards are those of the last step, for every agent: collect them all
        for agent, reward in self.aec.rewards.items():
            self._pending[agent] += reward

    def _over(self) -> bool:
        return all(self.aec.terminations[a] or self.aec.truncations[a] for a in self.possible_agents)

    def _play_bots(self) -> None:
        while not self._over():
            seat = self._seat[self.aec.agent_selection]
            bot = self._bots.get(seat)
            if bot is None:
                return
            state = self.raw.state_
            live = getattr(bot, "accepts_live_view", False)
            view = self.game.live_view(state, seat) if live else state.view(seat)
            self._apply(bot.act(view))

    def _final(self) -> tuple[dict, dict, dict, dict, dict]:
        agents = self.possible_agents
        end = self.turn_cap == "end"  # a cut game ends at its standings: terminated, nothing bootstrapped
        terminated = {a: bool(self.aec.terminations[a]) or end for a in agents}
        truncated = {a: bool(self.aec.truncations[a]) and not terminated[a] for a in agents}
        infos: dict[str, Any] = {a: dict(self.aec.infos[a]) for a in agents}
        scores = infos[agents[0]].get("scores")
        if scores is not None:
            for agent, share in zip(agents, win_shares(scores), strict=True):
                infos[agent]["win_share"] = share
        terminated["__all__"] = all(terminated[a] for a in agents)
        truncated["__all__"] = not terminated["__all__"]
        obs = {a: self._observe(a) for a in agents}
        rewards = dict(self._pending)
        self._pending = dict.fromkeys(agents, 0.0)
        return obs, rewards, terminated, truncated, infos


# ---------------------------------------------------------------------- modules
def _mlp(sizes: Sequence[int], activation: str) -> torch.nn.Sequential:
    acts = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
    if activation not in acts:
        raise ValueError(f"activation must be one of {', '.join(acts)}, got {activation!r}")
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(acts[activation]())
    return torch.nn.Sequential(*layers)


class MaskedActorCritic(TorchRLModule, ValueFunctionAPI):
    """Policy and value MLPs over ``observations``; illegal logits set to ``MASKED_LOGIT``.

    ``model_config``: ``hidden`` (layer sizes, default ``[256, 256]``), ``activation``
    (``"tanh"`` or ``"relu"``), and, for the record, ``game``, ``num_players`` and
    ``symmetry`` (a relabelling group of the game that :class:`RLlibBot` averages the logits
    over; ``""``: none). Its forward passes, in training too, are the network's own.
    """

    def setup(self) -> None:
        config = dict(self.model_config or {})
        space = self.observation_space
        if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != {"observations", "action_mask"}:
            raise ValueError(
                "MaskedActorCritic needs a Dict observation space with 'observations' and 'action_mask' "
                f"(RLlib's masking convention), got {space}"
            )
        hidden = [int(h) for h in config.get("hidden", [256, 256])]
        activation = config.get("activation", "tanh")
        size = int(space["observations"].shape[0])
        self.pi = _mlp([size, *hidden, int(self.action_space.n)], activation)
        self.vf = _mlp([size, *hidden, 1], activation)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        logits = self.pi(obs["observations"])
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(obs["action_mask"] < 0.5, MASKED_LOGIT)}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.vf(batch[Columns.OBS]["observations"]).squeeze(-1)


class BotSeatModule(RLModule):
    """Answers every decision with the seat claim of its bot (``model_config["slot"]``);
    the environment then plays the seat with that bot. Never trained."""

    def setup(self) -> None:
        config = dict(self.model_config or {})
        if "slot" not in config:
            raise ValueError("BotSeatModule needs model_config={'slot': index of the bot in the env's 'bots'}")
        self.claim = claim_action(int(config["slot"]))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        rows = len(batch[Columns.OBS]["action_mask"])
        return {Columns.ACTIONS: np.full(rows, self.claim, dtype=np.int64)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("a bot seat is not trained: leave its module out of policies_to_train")

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to compile (torch learners call this on every module)."""


# ---------------------------------------------------------------------- the bot
def find_module_dir(path: str | Path, module: str = MAIN) -> Path:
    """The folder of RLModule ``module`` in an algorithm checkpoint (or that folder itself)."""
    path = Path(path)
    for candidate in (
        path / "learner_group" / "learner" / "rl_module" / module,
        path / "rl_module" / module,
        path / module,
        path,
    ):
        if (candidate / "class_and_ctor_args.pkl").is_file():
            return candidate
    raise ValueError(
        f"no RLlib module {module!r} under {str(path)!r}: give an algorithm checkpoint folder (it holds "
        f"learner_group/learner/rl_module/{module}) or a module folder (it holds class_and_ctor_args.pkl)"
    )


class RLlibBot(Bot):
    """A module trained with RLlib as a bot: ``rllib:CHECKPOINT[,module=main,sample=1,symmetry=NAME]``.

    It encodes its view with the game's observation encoder, masks the illegal actions and
    plays the most probable legal one (or samples with ``sample=1``, from its ``rng``). The
    logits are the mean over the relabellings its module's ``model_config`` names
    (``symmetry``, as a policy file's metadata does for ``ppo:``), or over ``symmetry=NAME``
    where given (``none``: the network's own logits).
    A checkpoint holds pickled Python objects: load only files you trust.
    """

    name = "rllib"
    accepts_live_view = True

    def __init__(self, path: str | None = None, seed: int | None = None, module: str = MAIN, sample: int = 0,
                 symmetry: str | None = None) -> None:
        super().__init__(seed)
        if path is None:
            raise ValueError(
                "the rllib bot needs a checkpoint: 'rllib:PATH', e.g. rllib:runs/rllib_2p-.../checkpoints/final"
            )
        if sample not in (0, 1):
            raise ValueError(f"option sample must be 0 or 1, got {sample!r}")
        self.path = str(path)
        self.sample = bool(sample)
        # RLlib reads a checkpoint by URI: a relative path must be made absolute first.
        self.module = RLModule.from_checkpoint(os.path.abspath(find_module_dir(path, module)))
        self.module.eval()
        config = dict(self.module.model_config or {})
        self.game = get_game(config.get("game", "keltis"))
        self.num_players = int(config.get("num_players", 2))
        self.encoder = self.game.make_encoder(self.num_players)
        expected = int(self.module.observation_space["observations"].shape[0])
        if self.encoder.size != expected:
            raise ValueError(f"the module at {self.path!r} takes observations of size {expected}, but "
                             f"{self.game.name} with {self.num_players} players has {self.encoder.size}")
        name = symmetry if symmetry is not None else (config.get("symmetry") or "none")
        if not isinstance(name, str):
            raise ValueError(f"option symmetry must name a relabelling of the game or none, got {name!r}")
        self.symmetry = None if name == "none" else self.game.make_symmetry(name, self.num_players, ())

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("RLlibBot.act called for a view with no legal action (not this player's turn)")
        if view.num_players != self.num_players:
            raise ValueError(f"the module at {self.path!r} plays {self.num_players}-player games, "
                             f"this game has {view.num_players} players")
        logits = self.logits(self.encoder.encode(view))
        legal_logits = logits[list(legal)].astype(np.float64)
        if not self.sample:
            return int(legal[int(np.argmax(legal_logits))])
        weights = np.exp(legal_logits - legal_logits.max())
        return int(self.rng.choices(legal, weights=weights.tolist())[0])

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The module's logits for the encoded view ``obs`` (unmasked), averaged over the
        bot's relabellings where it has them."""

        def network(rows: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                out: np.ndarray = self.module.pi(torch.as_tensor(rows, dtype=torch.float32)).numpy()
            return out

        if self.symmetry is None:
            return network(obs[None])[0]
        averaged: np.ndarray = self.symmetry.symmetrize(network, obs)
        return averaged

    def __repr__(self) -> str:
        return f"RLlibBot({self.path!r})"


__all__ = [
    "MAIN",
    "MASKED_LOGIT",
    "TURN_CAPS",
    "BotSeatModule",
    "MaskedActorCritic",
    "RLlibBot",
    "TurnBasedMultiAgentEnv",
    "claim_action",
    "find_module_dir",
]
