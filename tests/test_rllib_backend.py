"""The RLlib run's warm start (training.rllib.warm_start): a warm-started module gives the
policy file's masked logits on the learner and on every env runner, snapshots included; the
trained module plays averaged over the file's relabellings; configs/rllib/rllib_warm_2p.yaml
trains, reports and resumes through ``python -m training.rllib``; the adapter's turn cap and
shaped reward. Needs the ``distributed`` extra (``make test-distributed``); skipped without Ray."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from keltis_env.core.rewards import final_rewards  # noqa: E402
from keltis_env.integrations.rllib import MAIN, MASKED_LOGIT, RLlibBot, TurnBasedMultiAgentEnv  # noqa: E402
from keltis_env.policy import load_policy, write_policy_info  # noqa: E402
from training.rllib.config import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: a policy file without observation features, network [256, 256] tanh
FILE = ROOT / "policies" / "keltis_2p_scratch.zip"
SHARPEN = 0.5
WARM = ["stop.iterations=1", "resources.env_runners=2", "resources.envs_per_runner=1", "resources.num_cpus=2",
        "ppo.train_batch=200", "ppo.minibatch=100", "ppo.epochs=1", "model.hidden=[256, 256]", "league.slots=2",
        "eval.games=0", f"warm_start.file={FILE}", f"warm_start.sharpen={SHARPEN}"]
#: configs/rllib/rllib_warm_2p.yaml run small: the learner's 300 decisions, 2 games in the driver, 400-step updates
SMALL_WARM = ["stop.learner_steps=300", "stop.minutes=0", "resources.env_runners=0", "resources.envs_per_runner=2",
              "ppo.train_batch=400", "ppo.minibatch=200", "ppo.epochs=1",
              "league.weights={league: 0.5, heuristic: 0.5}", "league.bots=[heuristic]", "league.snapshot_every=1",
              "league.slots=1", "checkpoint_every=1", "eval.opponents=[random]", "eval.games=2",
              "eval.select_games=2", "eval.every=400", "eval.best_by=random", f"warm_start.file={FILE}"]


def observations(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` observations and masks of random legal play."""
    env = TurnBasedMultiAgentEnv({"game": "keltis"})
    rng = random.Random(seed)
    obs, _ = env.reset(seed=seed)
    rows, masks = [], []
    while len(rows) < n:
        (agent, o), = obs.items()
        rows.append(o["observations"])
        masks.append(o["action_mask"])
        legal = np.flatnonzero(o["action_mask"])
        obs, _r, term, trunc, _i = env.step({agent: int(legal[rng.randrange(len(legal))])})
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset(seed=rng.randrange(2**31))
    return np.stack(rows), np.stack(masks)


def module_logits(module_id: str, obs: np.ndarray, masks: np.ndarray):
    """A function of a learner or env runner: ``module_id``'s inference logits on ``obs``."""

    def run(worker):
        batch = {"obs": {"observations": torch.as_tensor(obs), "action_mask": torch.as_tensor(masks)}}
        with torch.no_grad():
            return worker.module[module_id].forward_inference(batch)["action_dist_inputs"].numpy()

    return run


def test_a_warm_started_module_gives_the_files_masked_logits_on_the_learner_and_every_env_runner():
    import ray

    from training.rllib.trainer import build_algorithm_config, snapshot_ids, start_weights

    config = load_config("configs/rllib/rllib_2p.yaml", WARM)
    obs, masks = observations(40)
    expected = np.where(masks > 0.5, load_policy(FILE)(obs) / SHARPEN, MASKED_LOGIT)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_algorithm_config(config).build_algo()
        untrained = algo.env_runner_group.foreach_env_runner(module_logits(MAIN, obs, masks), local_env_runner=False)
        assert not np.allclose(untrained[0], expected, atol=1e-3), "the test must see the weights change"
        start_weights(algo, config)
        for module_id in [MAIN, *snapshot_ids(config)]:
            learner = [r.get() for r in algo.learner_group.foreach_learner(module_logits(module_id, obs, masks))]
            runners = algo.env_runner_group.foreach_env_runner(module_logits(module_id, obs, masks),
                                                              local_env_runner=False)
            assert len(runners) == 2 and len(learner) == 1
            for got in [*learner, *runners]:
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        algo.stop()
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_resumed_warm_started_run_samples_with_its_checkpoints_weights_on_every_env_runner(tmp_path):
    import ray

    from training.rllib.trainer import build_algorithm_config, latest_checkpoint, restore_weights, train

    config = load_config("configs/rllib/rllib_2p.yaml", WARM)
    train(config, tmp_path, "first", progress=False)
    obs, masks = observations(20)
    warm = np.where(masks > 0.5, load_policy(FILE)(obs) / SHARPEN, MASKED_LOGIT)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_algorithm_config(config).build_algo()
        restore_weights(algo, config, latest_checkpoint(tmp_path))  # as a resumed session restores it
        (learner,) = [r.get() for r in algo.learner_group.foreach_learner(module_logits(MAIN, obs, masks))]
        assert not np.allclose(learner, warm, rtol=0, atol=1e-6), "an update changed the warm start"
        runners = algo.env_runner_group.foreach_env_runner(module_logits(MAIN, obs, masks), local_env_runner=False)
        assert len(runners) == 2
        for got in runners:
            np.testing.assert_allclose(got, learner, rtol=1e-5, atol=1e-5)
        algo.stop()
    finally:
        ray.shutdown()


def test_the_trained_module_plays_averaged_over_the_warm_starts_relabellings(tmp_path):
    from keltis_env.bots import make_bot
    from keltis_env.integrations.rllib import MaskedActorCritic
    from training.rllib.warm_start import module_state, play_symmetry

    file = tmp_path / "symmetric.zip"
    shutil.copy(FILE, file)
    write_policy_info(file, "keltis", 2, value_reward="score", symmetry="colours_affine")
    config = load_config("configs/rllib/rllib_2p.yaml", ["model.hidden=[256, 256]", f"warm_start.file={file}"])
    assert play_symmetry(config) == "colours_affine"
    assert play_symmetry(load_config("configs/rllib/rllib_2p.yaml", [
        "model.hidden=[256, 256]", f"warm_start.file={file}", "model.symmetry=none"])) == ""
    env = TurnBasedMultiAgentEnv({"game": "keltis"})
    module = MaskedActorCritic(observation_space=env.observation_spaces["player_0"],
                               action_space=env.action_spaces["player_0"],
                               model_config={"hidden": [256, 256], "game": "keltis", "num_players": 2,
                                             "symmetry": play_symmetry(config)})
    module.set_state({k: torch.as_tensor(v) for k, v in module_state(config).items()})
    module.save_to_path(tmp_path / "module")
    bot, plain = make_bot(f"rllib:{tmp_path / 'module'}"), make_bot(f"rllib:{tmp_path / 'module'},symmetry=none")
    ppo = make_bot(f"ppo:{file}", game="keltis", num_players=2)
    obs, _ = observations(6)
    np.testing.assert_allclose(np.stack([bot.logits(o) for o in obs]), ppo.batch_logits(obs), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.stack([plain.logits(o) for o in obs]), load_policy(file)(obs), rtol=1e-4,
                               atol=1e-4)
    assert not np.allclose(bot.logits(obs[0]), plain.logits(obs[0]), atol=1e-3)
    assert isinstance(bot, RLlibBot)


def test_the_exported_policy_file_plays_the_modules_network_with_its_relabellings(tmp_path):
    """``training.rllib.selection.export_policy``: a policy file (``ppo:``) whose actor and
    critic are the module's ``pi`` and ``vf``, with the run's relabellings and reward."""
    from training.rllib.selection import export_policy
    from training.rllib.warm_start import module_state

    file = tmp_path / "symmetric.zip"
    shutil.copy(FILE, file)
    write_policy_info(file, "keltis", 2, value_reward="score", symmetry="colours_affine")
    config = load_config("configs/rllib/rllib_2p.yaml", ["model.hidden=[256, 256]", f"warm_start.file={file}",
                                                   f"warm_start.sharpen={SHARPEN}", "env.reward=win"])
    out = tmp_path / "out" / "policy.zip"
    export_policy({k: torch.as_tensor(v) for k, v in module_state(config).items()}, config, out)
    exported, original = load_policy(out), load_policy(file)
    assert (exported.info.symmetry, exported.info.value_reward, exported.info.game, exported.info.num_players) == \
           ("colours_affine", "win", "keltis", 2)
    obs, _ = observations(8)
    np.testing.assert_allclose(exported(obs), original(obs) / SHARPEN, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exported.values(obs), original.values(obs), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"do not make SB3's MlpPolicy \[64\]"):
        export_policy(module_state(config), load_config("configs/rllib/rllib_2p.yaml", ["model.hidden=[64]"]),
                      tmp_path / "bad.zip")


@pytest.mark.slow
def test_the_warm_config_trains_reports_and_resumes_through_the_rllib_command(tmp_path, capsys):
    import csv

    import yaml

    from training.rllib.__main__ import main

    run = tmp_path / "run"
    assert main(["--config", "configs/rllib/rllib_warm_2p.yaml", "--quiet", *(f"--set={s}" for s in SMALL_WARM),
                 "--out", str(run)]) == 0
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["stop"]["learner_steps"] == 300 and config["warm_start"]["file"] == str(FILE)
    assert config["eval"]["warm_start"] is True and config["league"]["weights"] == {"league": 0.5, "heuristic": 0.5}
    report = yaml.safe_load((run / "report.json").read_text())
    assert [r["opponent"] for r in report["evaluation"]] == ["random", f"ppo:{FILE}"]
    rows = list(csv.DictReader((run / "progress.csv").open()))
    assert int(rows[-1]["learner_steps"]) >= 300 and any((run / "tb").iterdir())
    # the recipe's KL anchor to the warm start (weight 1 decaying over 300,000 steps) is in the loss
    assert float(rows[0]["anchor_weight"]) == 1.0 and float(rows[0]["anchor_kl"]) >= 0.0
    assert (run / "checkpoints" / "final").is_dir()
    assert "final checkpoint" in capsys.readouterr().out
    # the selection evaluations: the warm start and the end compete; the best is the run's policy.zip
    selected = list(csv.DictReader((run / "eval.csv").open()))
    assert [int(r["timesteps"]) for r in selected] == [0, int(rows[-1]["learner_steps"])]
    assert all(r["opponent"] == "random" and int(r["games"]) == 2 for r in selected)
    best = yaml.safe_load((run / "checkpoints" / "best.json").read_text())
    assert best["timesteps"] in (0, int(rows[-1]["learner_steps"])) and best["opponent"] == "random"
    assert report["policy"] == str(run / "policy.zip") and load_policy(run / "policy.zip").info.symmetry == \
           load_policy(FILE).info.symmetry

    assert main(["--resume", str(run), "--quiet", "--set", "stop.learner_steps=700"]) == 0
    more = list(csv.DictReader((run / "progress.csv").open()))
    assert len(more) > len(rows) and int(more[-1]["learner_steps"]) >= 700
    assert [int(r["iteration"]) for r in more] == list(range(1, len(more) + 1)), "the counters go on"
    steps = [int(r["timesteps"]) for r in csv.DictReader((run / "eval.csv").open())]
    assert steps[:2] == [0, int(rows[-1]["learner_steps"])] and steps[-1] == int(more[-1]["learner_steps"])
    assert len(steps) == len(set(steps)) >= 3, "a resumed run goes on selecting, never twice at one step"
    assert len((run / "command.txt").read_text().splitlines()) == 2


def test_a_game_cut_at_its_turn_cap_ends_terminated_under_turn_cap_end():
    for turn_cap, ended in (("truncate", False), ("end", True)):
        env = TurnBasedMultiAgentEnv({"game": "keltis", "options": {"max_turns": 3}, "turn_cap": turn_cap})
        rng = random.Random(0)
        obs, _ = env.reset(seed=0)
        while True:
            (agent, o), = obs.items()
            legal = np.flatnonzero(o["action_mask"])
            obs, _r, term, trunc, _i = env.step({agent: int(legal[rng.randrange(len(legal))])})
            if term["__all__"] or trunc["__all__"]:
                break
        assert term["__all__"] is ended and trunc["__all__"] is not ended
        assert all(term[a] is ended and trunc[a] is not ended for a in env.possible_agents)
    with pytest.raises(ValueError, match=r"turn_cap.*'truncate', 'end'"):
        TurnBasedMultiAgentEnv({"turn_cap": "stop"})


def test_the_shaped_reward_pays_during_the_game_and_sums_to_the_score_reward():
    env = TurnBasedMultiAgentEnv({"game": "keltis", "reward": "shaped"})
    rng = random.Random(1)
    obs, _ = env.reset(seed=1)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    paid_before_the_end = False
    while True:
        (agent, o), = obs.items()
        legal = np.flatnonzero(o["action_mask"])
        obs, rewards, term, trunc, _i = env.step({agent: int(legal[rng.randrange(len(legal))])})
        for a, r in rewards.items():
            totals[a] += r
        if term["__all__"] or trunc["__all__"]:
            break
        paid_before_the_end |= any(r != 0 for r in rewards.values())
    assert paid_before_the_end
    expected = final_rewards(env.raw.state_.scores(), "score")
    assert [totals[a] for a in env.possible_agents] == pytest.approx(expected, abs=1e-6)
