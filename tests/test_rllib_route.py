"""One route to RLlib: ``python -m training.rllib`` with its own config (``configs/rllib/``).
``python -m training.train`` trains with SB3 alone and refuses the ``backend`` key of its
earlier version naming the RLlib command; the RLlib command refuses a training config
naming its own format; the RLlib config of the earlier ``backend: rllib`` file holds the
settings that file ran with; warm-start files the RLlib module cannot play are refused
naming why. Runs in ``.venv`` (no Ray needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.common.config import ConfigError
from training.rllib.config import load_config as load_rllib
from training.sb3.config import load_config

ROOT = Path(__file__).resolve().parent.parent
FILE = "policies/keltis_2p_scratch.zip"  # no observation features, [256, 256] tanh


def test_the_train_command_refuses_backend_naming_the_rllib_command(tmp_path, monkeypatch, capsys):
    from training.train.__main__ import main

    path = tmp_path / "warm.yaml"
    path.write_text(f"base: {ROOT / 'configs' / 'train' / 'default.yaml'}\nbackend: rllib\n")
    with pytest.raises(ConfigError, match=r"backend is no longer a key: python -m training\.train trains with SB3 "
                                          r"alone; an RLlib run is python -m training\.rllib --config configs/rllib/"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"--set backend: backend is no longer a key"):
        load_config("configs/train/smoke.yaml", ["backend=sb3"])
    runs = tmp_path / "runs"
    assert main(["--config", str(path), "--set", f"runs_dir={runs}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "configs/rllib/rllib_warm_2p.yaml" in err
    assert not runs.exists(), "nothing is written"


def test_an_sb3_run_folder_that_names_its_backend_resumes_without_it():
    from training.sb3.config import from_dict, upgrade

    saved = load_config("configs/train/smoke.yaml").to_dict()
    assert from_dict(upgrade({**saved, "backend": "sb3"})) == from_dict(saved)


def test_the_train_command_sends_an_rllib_run_to_the_rllib_command(tmp_path, capsys):
    import yaml

    from training.rllib.config import RLlibConfig
    from training.train.__main__ import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(RLlibConfig().to_dict(), sort_keys=False))
    assert main(["--resume", str(run), "--no-progress"]) == 2
    assert "resume it with python -m training.rllib --resume" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml"], "nothing is written"


def test_the_rllib_command_refuses_a_training_config_naming_its_own_keys(tmp_path, capsys):
    from training.rllib.__main__ import main

    path = tmp_path / "kit.yaml"
    path.write_text("backend: rllib\nname: kit\n")
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"config error: {path} is a config of python -m training.train (it names backend); this "
                          "command reads its own keys (python -m training.rllib --describe)")
    assert err.count("\n") == 1
    assert main(["--config", "configs/train/default.yaml"]) == 2
    assert "unknown key" in capsys.readouterr().err


def test_the_warm_rllib_config_holds_the_settings_of_the_earlier_backend_rllib_file():
    """configs/rllib/rllib_warm_2p.yaml is what the earlier configs/rllib_warm_2p.yaml (a file of
    python -m training.train naming backend: rllib) ran with on RLlib, key for key."""
    config = load_rllib("configs/rllib/rllib_warm_2p.yaml", [f"warm_start.file={FILE}"])
    assert (config.name, config.seed, config.checkpoint_every) == ("rllib_warm_2p", 0, 62)
    assert (config.env.game, config.env.num_players, config.env.reward, config.env.options, config.env.turn_cap,
            config.env.relabel) == ("keltis", 2, "win", {"max_turns": 500}, "truncate", "colours_affine")
    assert (config.stop.minutes, config.stop.learner_steps, config.stop.env_steps, config.stop.iterations) == \
           (30.0, 750_000, 0, 0)
    r = config.resources
    assert (r.num_cpus, r.env_runners, r.envs_per_runner, r.torch_threads, r.sampler) == (2, 0, 64, 2, "batched")
    p = config.ppo
    assert (p.lr, p.gamma, p.lambda_, p.clip, p.entropy, p.vf_coeff, p.grad_clip, p.train_batch, p.minibatch,
            p.epochs, p.kl_coeff) == (1e-4, 0.999, 0.95, 0.1, 0.0, 0.5, 0.5, 4096, 1024, 3, 0.0)
    assert (config.model.hidden, config.model.activation, config.model.symmetry) == ([256, 256], "tanh", "")
    assert config.league.weights == {"league": 0.3, "planner": 0.4, "heuristic": 0.3}
    assert (config.league.bots, config.league.slots, config.league.snapshot_every) == (["planner", "heuristic"], 6, 61)
    e = config.eval
    assert (e.games, e.opponents, e.workers, e.seed, e.warm_start, e.every, e.select_games, e.best_by) == \
           (1000, ["heuristic", "planner"], 1, 0, True, 250_000, 200, "planner")
    w = config.warm_start
    assert (w.file, w.sharpen, w.anchor, w.anchor_steps) == (FILE, 0.15, 1.0, 300_000)


def test_warm_start_files_the_rllib_module_cannot_take_are_refused_naming_why():
    base = ["model.hidden=[256, 256]"]
    with pytest.raises(ConfigError, match=r"warm_start\.file: policies/keltis_2p\.zip .* observing the features plan"):
        load_rllib("configs/rllib/rllib_2p.yaml", [*base, "warm_start.file=policies/keltis_2p.zip"])
    with pytest.raises(ConfigError, match=r"hidden layers \[256, 256\] \(tanh\); model\.hidden is \[64\] \(tanh\)"):
        load_rllib("configs/rllib/rllib_2p.yaml", ["model.hidden=[64]", f"warm_start.file={FILE}"])
    with pytest.raises(ConfigError, match=r"\(relu\): give the file's network"):
        load_rllib("configs/rllib/rllib_2p.yaml", [*base, "model.activation=relu", f"warm_start.file={FILE}"])
    with pytest.raises(ConfigError, match=r"warm_start\.file: .*2-player dice policy; this is a 2-player keltis"):
        load_rllib("configs/rllib/rllib_2p.yaml", [*base, "warm_start.file=policies/dice_2p.zip"])
    with pytest.raises(ConfigError, match=r"warm_start\.file: no policy file at 'nothing\.zip'"):
        load_rllib("configs/rllib/rllib_2p.yaml", [*base, "warm_start.file=nothing.zip"])
    with pytest.raises(ConfigError, match=r"warm_start\.sharpen must be > 0"):
        load_rllib("configs/rllib/rllib_2p.yaml", [*base, f"warm_start.file={FILE}", "warm_start.sharpen=0"])
    with pytest.raises(ConfigError, match=r"model\.symmetry: keltis has no relabelling 'mirror'"):
        load_rllib("configs/rllib/rllib_2p.yaml", ["model.symmetry=mirror"])
    with pytest.raises(ConfigError, match=r"eval\.warm_start needs a warm start"):
        load_rllib("configs/rllib/rllib_2p.yaml", ["eval.warm_start=true"])
    assert load_rllib("configs/rllib/rllib_2p.yaml", [*base, f"warm_start.file={FILE}"]).warm_start.file == FILE
