"""Pipelined rollouts (training/sb3/pipeline.py) on the collector's parts: the parts step the
games as whole steps do, the rollout buffer holds the games' real transitions with the
policy's values and log-probabilities, actions are drawn from the masked distribution,
and a callback that stops training leaves the collector usable."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import obs_as_tensor

from training.sb3.collector import BatchedSelfPlayVecEnv
from training.sb3.config import load_config
from training.sb3.model import new_model
from training.sb3.pipeline import PipelinedMaskablePPO

OPPONENTS, WEIGHTS = ["random", "heuristic"], [0.5, 0.5]


def _collector(n: int, game: str = "keltis", num_players: int = 2, pipeline: int = 2) -> BatchedSelfPlayVecEnv:
    return BatchedSelfPlayVecEnv(n, OPPONENTS, WEIGHTS, game=game, num_players=num_players, reward="score",
                                 workers=2, pipeline=pipeline)


def _model(venv: BatchedSelfPlayVecEnv, n_steps: int = 24) -> PipelinedMaskablePPO:
    config = load_config("configs/train/smoke.yaml", [f"n_envs={venv.num_envs}", f"ppo.n_steps={n_steps}",
                                                f"ppo.batch_size={n_steps * venv.num_envs}"])
    model = new_model(config, venv)
    assert isinstance(model, PipelinedMaskablePPO)
    return model


def test_the_collector_splits_every_workers_games_into_parts():
    col = _collector(10, pipeline=2)
    try:
        assert [p.tolist() for p in col.parts] == [[0, 1, 5, 6], [2, 3, 4, 7, 8, 9]]
        with pytest.raises(ValueError, match="part 0 has 4 games, got"):
            col.step_part_async(0, np.zeros(3, dtype=np.int64))
        with pytest.raises(RuntimeError, match="part 1 was not sent"):
            col.step_part_wait(1)
    finally:
        col.close()
    with pytest.raises(ValueError, match="pipeline must be an integer >= 1"):
        BatchedSelfPlayVecEnv(4, OPPONENTS, WEIGHTS, pipeline=0)


@pytest.mark.parametrize(("game", "num_players"), [("keltis", 2), ("dice", 3)])
def test_stepping_the_parts_gives_the_whole_steps_results(game, num_players):
    """The same seeds and actions: stepping part after part gives each game the
    observation, mask, reward, done and info that whole steps give it."""
    whole, parted = _collector(6, game, num_players), _collector(6, game, num_players, pipeline=3)
    try:
        for venv in (whole, parted):
            venv.seed(5)
        assert np.array_equal(whole.reset(), parted.reset())
        rng = np.random.default_rng(5)
        finished = 0
        for step in range(150):
            masks = np.stack(whole.env_method("action_masks"))
            assert np.array_equal(masks, np.stack(parted.env_method("action_masks"))), step
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, dones, infos = whole.step(actions)
            for p, idx in enumerate(parted.parts):  # all sent, then all waited for
                parted.step_part_async(p, actions[idx])
            for p, idx in enumerate(parted.parts):
                o, m, r, d, part_infos = parted.step_part_wait(p)
                assert np.array_equal(o, obs[idx]) and np.array_equal(m, masks_after(whole)[idx]), step
                assert np.array_equal(r, rewards[idx]) and np.array_equal(d, dones[idx]), step
                for j, info in zip(idx.tolist(), part_infos, strict=True):
                    t1, t2 = infos[j].get("terminal_observation"), info.get("terminal_observation")
                    assert (t1 is None) == (t2 is None) and (t1 is None or np.array_equal(t1, t2))
                    strip = {"terminal_observation", "episode"}
                    assert {k: v for k, v in info.items() if k not in strip} == \
                        {k: v for k, v in infos[j].items() if k not in strip}
                    assert parted.reset_infos[j] == whole.reset_infos[j]
            finished += int(dones.sum())
        assert finished >= 3
    finally:
        whole.close()
        parted.close()


def masks_after(venv: BatchedSelfPlayVecEnv) -> np.ndarray:
    return np.stack(venv.env_method("action_masks"))


def test_a_pipelined_rollout_records_the_games_transitions():
    """Replaying the buffer's actions on a fresh collector with the same seeds gives the
    buffer's observations, masks, rewards and episode starts; its values and
    log-probabilities are the policy's for those observations and actions."""
    n, steps = 6, 120
    venv = _collector(n)
    model = _model(venv, n_steps=steps)
    try:
        _, callback = model._setup_learn(steps * n, None)
        callback.on_training_start(locals(), globals())
        assert model.collect_rollouts(model.env, callback, model.rollout_buffer, steps)
    finally:
        venv.close()
    buf = model.rollout_buffer
    replay = _collector(n, pipeline=1)
    try:
        replay.seed(0)  # the smoke config's seed, which the model gave its environment
        obs = replay.reset()
        starts = np.ones(n, dtype=bool)
        ended = 0
        for t in range(steps):
            assert np.array_equal(buf.observations[t], obs), t
            assert np.array_equal(buf.action_masks[t].astype(bool), masks_after(replay)), t
            assert np.array_equal(buf.episode_starts[t].astype(bool), starts), t
            obs, rewards, dones, _ = replay.step(buf.actions[t].reshape(-1).astype(np.int64))
            assert np.allclose(buf.rewards[t], rewards), t  # no game reaches max_turns here: no bootstrap
            starts = dones
            ended += int(dones.sum())
        assert ended >= 1
    finally:
        replay.close()
    flat_obs = buf.observations.reshape(steps * n, -1)
    flat_masks = buf.action_masks.reshape(steps * n, -1)
    flat_actions = buf.actions.reshape(-1).astype(np.int64)
    with th.no_grad():
        values, log_probs, _ = model.policy.evaluate_actions(obs_as_tensor(flat_obs, "cpu"), th.as_tensor(flat_actions),
                                                             action_masks=flat_masks)
    assert np.allclose(values.numpy().reshape(steps, n), buf.values, atol=1e-5)
    assert np.allclose(log_probs.numpy().reshape(steps, n), buf.log_probs, atol=1e-5)
    assert flat_masks[np.arange(steps * n), flat_actions].all()


def test_actions_are_drawn_from_the_masked_distribution():
    venv = _collector(4)
    model = _model(venv)
    try:
        obs = venv.reset()[:1]
        masks = masks_after(venv)[:1]
    finally:
        venv.close()
    k = 20_000
    th.manual_seed(0)
    actions, values, log_probs = model.sample_actions(np.repeat(obs, k, axis=0), np.repeat(masks, k, axis=0))
    with th.no_grad():
        dist = model.policy.get_distribution(obs_as_tensor(obs, "cpu"), action_masks=masks)
        probs = dist.distribution.probs[0].numpy()
        value = model.policy.predict_values(obs_as_tensor(obs, "cpu"))[0, 0].item()
    counts = np.bincount(actions.numpy(), minlength=len(probs)) / k
    assert masks[0][actions.numpy()].all()
    assert np.abs(counts - probs).max() < 0.02
    assert np.allclose(log_probs.numpy(), np.log(probs[actions.numpy()]), atol=1e-5)
    assert np.allclose(values.numpy(), value, atol=1e-6)


def test_a_callback_that_stops_training_leaves_the_collector_usable():
    class StopAt(BaseCallback):
        def __init__(self, at: int) -> None:
            super().__init__()
            self.at = at

        def _on_step(self) -> bool:
            return self.num_timesteps < self.at

    venv = _collector(6)
    model = _model(venv, n_steps=16)
    try:
        model.learn(10_000, callback=StopAt(5 * 6))
        assert model.num_timesteps == 5 * 6
        assert all(sent is None for sent in venv._part_sent) and not venv.waiting
        model.learn(16 * 6, reset_num_timesteps=False)  # goes on from the kept observations
        assert model.num_timesteps == 5 * 6 + 16 * 6
    finally:
        venv.close()


def test_the_installed_sb3_releases_are_the_pinned_ones_the_update_was_copied_from():
    """pyproject's train extra pins the releases whose ``MaskablePPO.train`` the update copies."""
    import re
    from pathlib import Path

    import sb3_contrib
    import stable_baselines3

    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    pins = dict(re.findall(r'"(stable-baselines3|sb3-contrib)==([0-9.]+)"', pyproject))
    assert pins == {"stable-baselines3": stable_baselines3.__version__, "sb3-contrib": sb3_contrib.__version__}


def test_the_update_is_sb3_contribs_update():
    """The same rollout, the same minibatches: PipelinedMaskablePPO's update (masked
    log-probabilities and entropy without distribution objects) moves the weights as
    sb3-contrib's ``MaskablePPO.train`` does, with the same logged losses."""
    import copy

    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    venv = BatchedSelfPlayVecEnv(4, OPPONENTS, WEIGHTS, workers=0, reward="score")
    kwargs = {"n_steps": 64, "batch_size": 64, "n_epochs": 2, "learning_rate": 3e-3, "ent_coef": 0.01, "seed": 0,
              "device": "cpu", "policy_kwargs": {"net_arch": [32]}}
    try:
        ours = PipelinedMaskablePPO("MlpPolicy", venv, **kwargs)
        stock = MaskablePPO("MlpPolicy", venv, **kwargs)
        stock.policy.load_state_dict(ours.policy.state_dict())
        stock.policy.optimizer.load_state_dict(ours.policy.optimizer.state_dict())
        _, callback = ours._setup_learn(256, None)
        callback.on_training_start(locals(), globals())
        assert ours.collect_rollouts(venv, callback, ours.rollout_buffer, 64)
    finally:
        venv.close()
    stock.rollout_buffer = copy.deepcopy(ours.rollout_buffer)
    logged = []
    for model in (ours, stock):
        model.set_logger(configure(None, []))
        np.random.seed(3)  # the rollout buffer's minibatch permutation
        model.train()
        logged.append(dict(model.logger.name_to_value))
    for a, b in zip(ours.policy.parameters(), stock.policy.parameters(), strict=True):
        assert torch_allclose(a, b)
    for key in ("train/policy_gradient_loss", "train/value_loss", "train/entropy_loss", "train/approx_kl"):
        assert logged[0][key] == pytest.approx(logged[1][key], rel=1e-4, abs=1e-6), key


def torch_allclose(a: th.Tensor, b: th.Tensor) -> bool:
    return bool(th.allclose(a, b, atol=1e-5, rtol=1e-4))
