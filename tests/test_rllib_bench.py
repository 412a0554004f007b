"""python -m training.bench.rllib: the SB3 side is measured with the RLlib trainer's network,
batch sizes, reward and opponents, and the command refuses what it cannot measure."""

from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3")

from training.bench.rllib import main, process_cpu, sb3_config
from training.common.config import ConfigError
from training.rllib.config import load_config


def test_the_sb3_side_has_the_recipes_network_batch_sizes_reward_and_opponents():
    rllib = load_config("configs/rllib/rllib_2p.yaml", ["model.hidden=[64, 32]", "model.activation=relu",
                                                  "ppo.train_batch=2048", "ppo.minibatch=512", "ppo.epochs=2",
                                                  "env.reward=shaped"])
    sb3 = sb3_config(rllib, "configs/train/default.yaml", [])
    assert sb3.network.net_arch == [64, 32] and sb3.network.activation == "relu"
    assert sb3.ppo.n_steps * sb3.n_envs == 2048 and sb3.ppo.batch_size == 512 and sb3.ppo.n_epochs == 2
    assert sb3.env.reward == "shaped" and sb3.env.max_turns == rllib.env.options["max_turns"]
    league = rllib.league.weights
    assert sb3.pool.weights == pytest.approx({"self": league["self"] + league["league"], "random": league["random"],
                                              "heuristic": league["heuristic"]})
    assert sb3.relabel == "none"


def test_a_train_batch_that_does_not_split_into_the_sb3_envs_is_refused():
    rllib = load_config("configs/rllib/rllib_2p.yaml", ["ppo.train_batch=1000"])
    with pytest.raises(ConfigError, match=r"ppo\.train_batch \(1000\) must be a multiple of .* n_envs \(64\)"):
        sb3_config(rllib, "configs/train/default.yaml", [])


def test_the_cpu_split_counts_this_process_as_the_driver():
    cpu = process_cpu()
    assert set(cpu) == {"driver", "env_runners", "ray_processes"}
    assert cpu["driver"] > 0


@pytest.mark.parametrize(("args", "message"), [(["--seconds", "0"], "--seconds must be > 0"),
                                               (["--runs", "0"], "--runs must be from 1 to 100")])
def test_bad_arguments_are_refused_naming_them(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
