"""RLlib's batched sampler for the league: :class:`BatchedEnvRunner` (``resources.sampler: batched``).

An env runner that steps ``resources.envs_per_runner`` league games together on the
game's compiled core (:class:`training.rllib.games.LeagueGames`) and acts with one forward
pass per module and decision round: every game waiting on ``main`` in one batch, every game
waiting on a snapshot ``main_vK`` in one batch per snapshot; the bots play inside the kernels
(``random``, ``heuristic``, ``planner``) or on the Python engine's views (any other bot). The
policy mapping (:class:`~training.rllib.league.LeagueMapping`) seats every game, as in the
per-game adapter (:class:`keltis_env.integrations.rllib.TurnBasedMultiAgentEnv`), and the
learner's observations, masks, rewards and episode ends are that adapter's
(``tests/test_rllib_batched.py`` holds them equal on the same games).

What the learner receives: one ``SingleAgentEpisode`` per learner seat and game (or chunk of
one), mapped to ``main`` with its ``agent_id`` (``player_<seat>``) and the game as its
``multi_agent_episode_id``, as RLlib's multi-agent learner pipeline splits its
``MultiAgentEpisode`` objects. Only ``main``'s decisions are steps of these episodes, so an
env step of this sampler is a learner step (a decision of ``main``): ``ppo.train_batch``,
``stop.env_steps`` and the logged ``env_steps`` count learner steps; the opponents' moves are
played inside the runner and counted apart (``opponent_steps_sampled``).

The rest is RLlib's ``MultiAgentEnvRunner``: the module (all of ``main``, its snapshots and
the bot seats; weights synced from the learner as usual, so a snapshot copied from ``main``
reaches the runners), state, checkpoints and metrics. It logs the per-game runner's metric
keys (``num_env_steps_sampled_lifetime``, ``num_module_steps_sampled_lifetime/main``,
``module_episode_returns_mean/main``, ``episode_len_mean``) and the league's
``win_rate_<kind>`` (:class:`~training.rllib.league.LeagueCallback`'s, which this runner does
not call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
)

from keltis_env.integrations.rllib import ENV_CONFIG_KEYS, MAIN

from .games import LeagueGames, Trajectory, collector_kernels


def runner_options(sampler: str, game: str) -> dict[str, Any]:
    """The ``env_runners`` options of ``resources.sampler``: this module's runner for
    ``batched`` (a game without the compiled core's collector kernels is refused, naming
    ``per_game``), RLlib's own for ``per_game``."""
    if sampler == "per_game":
        return {}
    if sampler != "batched":
        raise ValueError(f"resources.sampler must be batched or per_game, got {sampler!r}")
    collector_kernels(game)
    return {"env_runner_cls": BatchedEnvRunner}


class _Episode:
    """What a policy mapping function reads of an episode: its id."""

    def __init__(self, key: str) -> None:
        self.id_ = key


def push_weights(algo: Any, module_id: str, weights: Mapping[str, Any]) -> None:
    """Set module ``module_id`` of every env runner (the local one included) to ``weights``, and
    wait until they all have.

    The weight sync that ``Algorithm.set_state`` starts is not enough for a snapshot copied
    from ``main``: it is asynchronous and RLlib drops it for a runner that still has a sync
    in flight (the one that follows every update), and a runner applies a module state only
    when its weights' sequence number is newer than its own, which a copy on the learner
    does not advance. Either way the runners would go on playing the snapshot's old weights.
    """
    algo.env_runner_group.foreach_env_runner(lambda runner: runner.module[module_id].set_state(weights),
                                             local_env_runner=True)


class BatchedEnvRunner(MultiAgentEnvRunner):
    """RLlib env runner over :class:`~training.rllib.games.LeagueGames` (see the module doc)."""

    def make_env(self) -> None:
        """The per-game adapter once (for the spaces and RLlib's connectors) and the batched games."""
        config = self.config
        games, env_config = config.num_envs_per_env_runner, dict(config.env_config)
        config.num_envs_per_env_runner = 1
        config.env_config = {k: v for k, v in env_config.items() if k in ENV_CONFIG_KEYS}
        try:
            super().make_env()
        finally:
            config.num_envs_per_env_runner, config.env_config = games, env_config
        agents = list(self.env.envs[0].unwrapped.possible_agents)
        mapping = config.policy_mapping_fn
        self.games = LeagueGames(
            games, lambda key: {a: mapping(a, _Episode(key)) for a in agents},
            game=env_config.get("game", "keltis"), num_players=env_config.get("num_players", 2),
            reward=env_config.get("reward", "win"), turn_cap=env_config.get("turn_cap", "truncate"),
            options=env_config.get("options") or {}, bots=env_config.get("bots", ()),
            seed=self._seed if self._seed is not None else int(np.random.SeedSequence().entropy % 2**63),
            name=f"w{self.worker_index or 0}", relabel=env_config.get("relabel", "none"))
        self._games_ready = False
        self._observation_space = self.env.envs[0].unwrapped.observation_spaces[agents[0]]
        self._action_space = self.env.envs[0].unwrapped.action_spaces[agents[0]]

    # ------------------------------------------------------------------ sampling
    def sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None, explore: bool | None = None,
               random_actions: bool = False, force_reset: bool = False) -> list[SingleAgentEpisode]:
        """At least ``num_timesteps`` learner steps (default: the rollout fragment times the
        games), as the learner seats' episodes and chunks of episodes."""
        if num_episodes is not None or random_actions:
            raise ValueError("the batched sampler samples timesteps (num_timesteps) with the modules' actions; "
                             "num_episodes and random_actions are the per-game sampler's (resources.sampler: per_game)")
        if num_timesteps is None:
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * self.games.n
        explore = self.config.explore if explore is None else explore
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # small forward passes; in the driver (env_runners: 0) the update gets them back
        try:
            with self.metrics.log_time(SAMPLE_TIMER):
                if force_reset or not self._games_ready:
                    self.games.reset()
                    self._games_ready = True
                episodes = self._sample(num_timesteps, bool(explore))
        finally:
            torch.set_num_threads(threads)
        return episodes

    def _sample(self, num_timesteps: int, explore: bool) -> list[SingleAgentEpisode]:
        """Tick the games until ``num_timesteps`` learner decisions were made; returns the
        ended trajectories and the chunks of those in play as episodes."""
        done: list[Trajectory] = []
        self._decisions = {MAIN: 0}

        def act(module_id: str, obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            self._decisions[module_id] = self._decisions.get(module_id, 0) + len(obs)
            return self._act(module_id, obs, masks, explore)

        # a step is a completed decision: those pending now complete in this call, those pending at the end in the
        # next; the games in play may hold steps left over from the last batch
        waiting, carried = self.games.pending(), self.games.steps_in_play()
        while self._decisions[MAIN] + waiting + carried < num_timesteps or (
                self._decisions[MAIN] + waiting + carried - self.games.pending() < num_timesteps):
            done += self.games.tick(act)
        # the last round may overshoot: its extra decisions go to the next batch
        excess = sum(len(t) for t in done) + self.games.steps_in_play() - num_timesteps
        chunks = self.games.cut(excess=max(excess, 0))
        episodes = [self._episode(t) for t in done + chunks]
        self._log(episodes)
        return episodes

    @torch.no_grad()
    def _act(self, module_id: str, obs: np.ndarray, masks: np.ndarray, explore: bool
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One forward pass of module ``module_id`` for every row: the actions drawn from the
        categorical distribution over its (masked) logits, or the most probable one without
        ``explore``, their log-probabilities and the logits (what RLlib's runner stores). The
        module's own forward pass (``_forward_exploration`` / ``_forward_inference``), without
        RLlib's per-call switch of the module to eval mode, which costs more than the network
        at these batch sizes."""
        module = self.module[module_id]
        batch = {Columns.OBS: {"observations": torch.from_numpy(obs), "action_mask": torch.from_numpy(masks).float()}}
        out = module._forward_exploration(batch) if explore else module._forward_inference(batch)
        logits = out[Columns.ACTION_DIST_INPUTS]
        logp_all = torch.log_softmax(logits, dim=-1)
        if explore:  # Gumbel-max: a draw from the categorical distribution
            noise = -torch.log(-torch.log(torch.rand_like(logp_all).clamp_(min=1e-20)))
            actions = (logp_all + noise).argmax(dim=-1)
        else:
            actions = logp_all.argmax(dim=-1)
        logp = logp_all.gather(-1, actions[:, None])[:, 0]
        return actions.numpy(), {Columns.ACTION_LOGP: logp.numpy(), Columns.ACTION_DIST_INPUTS: logits.numpy()}

    def _episode(self, t: Trajectory) -> SingleAgentEpisode:
        """A learner trajectory as the single-agent episode RLlib's multi-agent pipeline makes of it."""
        obs = [{"observations": o, "action_mask": m.astype(np.float32)} for o, m in zip(t.obs, t.masks, strict=True)]
        extras = {k: list(v) for k, v in t.extras.items()}
        episode = SingleAgentEpisode(
            id_=f"{t.uid}@{t.t_started}", observations=obs, actions=list(t.actions), rewards=list(t.rewards),
            infos=[{} for _ in obs], extra_model_outputs=extras, terminated=t.terminated, truncated=t.truncated,
            observation_space=self._observation_space, action_space=self._action_space, t_started=t.t_started,
            len_lookback_buffer=0, agent_id=f"player_{t.seat}", module_id=MAIN, multi_agent_episode_id=t.game_id)
        return episode.to_numpy()

    # ------------------------------------------------------------------ metrics
    def _log(self, episodes: list[SingleAgentEpisode]) -> None:
        """The sampled steps and the ended games' figures, under the per-game runner's keys."""
        steps = sum(len(e) for e in episodes)
        self.num_env_steps_sampled_lifetime += steps
        log = self.metrics.log_value
        log(NUM_ENV_STEPS_SAMPLED, steps, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum", with_throughput=True)
        log((NUM_MODULE_STEPS_SAMPLED, MAIN), steps, reduce="sum")
        log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, MAIN), steps, reduce="lifetime_sum")
        log((NUM_AGENT_STEPS_SAMPLED, MAIN), steps, reduce="sum")
        log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, MAIN), steps, reduce="lifetime_sum")
        others = sum(n for m, n in self._decisions.items() if m != MAIN)
        log("opponent_steps_sampled_lifetime", others, reduce="lifetime_sum")
        ended, self.games.ended = self.games.ended, []
        if ended:
            log(NUM_EPISODES, len(ended), reduce="sum")
            log(NUM_EPISODES_LIFETIME, len(ended), reduce="lifetime_sum")
        for game in ended:
            self._log_game(game)

    def _log_game(self, game: Mapping[str, Any]) -> None:
        """One ended game: its learner return and length, and the learner's win share per opponent kind."""
        returns = game["returns"]
        total = float(sum(returns.values()))
        length = int(sum(game["steps"].values()))
        agents = {f"player_{p}": r for p, r in returns.items()}
        self._log_episode_metrics(length, total, 0.0, agents, {MAIN: total},
                                  {f"player_{p}": n for p, n in game["steps"].items()})
        opponents = [m for m in game["modules"] if m != MAIN]
        if not opponents:
            return
        kinds = {"league" if m.startswith(MAIN + "_v") else m for m in opponents}
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        for p in returns:
            self.metrics.log_value(f"win_rate_{kind}", float(game["win_shares"][p]), reduce="mean", window=200)

    def stop(self) -> None:
        super().stop()
        self._games_ready = False


__all__ = ["BatchedEnvRunner", "push_weights", "runner_options"]
