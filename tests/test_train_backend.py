"""The training kit's ``backend`` key without Ray: ``python -m training.train`` refuses an RLlib
recipe in one line naming the command to use, and writes nothing; the kit's keys map onto
the RLlib recipe (training.rllib.kit), the keys RLlib cannot honour are refused naming them,
and so are warm-start files the RLlib adapter cannot play; the SB3 loaders refuse an RLlib
recipe. Runs in ``.venv`` (no Ray needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from training.common.config import ConfigError
from training.rllib import kit
from training.rllib.config import load_config as load_rllib
from training.sb3.config import BACKENDS, load_config

ROOT = Path(__file__).resolve().parent.parent
FILE = "policies/keltis_2p_scratch.zip"  # no observation features, [256, 256] tanh


@pytest.fixture
def kit_file(tmp_path: Path) -> Path:
    """A small kit recipe on RLlib: every key not given keeps the kit's default."""
    path = tmp_path / "kit.yaml"
    path.write_text("backend: rllib\nname: small\ntotal_timesteps: 5000\n")
    return path


def load_kit(path, overrides):
    return load_config(path, overrides, backends=BACKENDS)


def rllib_of(path: Path | str, overrides: list[str] = ()):
    return kit.from_file(path, list(overrides), load_kit)[0]


def without_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "ray" else find(name, *a))


def test_an_rllib_recipe_without_ray_is_refused_in_one_line_naming_the_command_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    from training.train.__main__ import main

    without_ray(monkeypatch)
    monkeypatch.chdir(ROOT)
    runs = tmp_path / "runs"
    argv = ["--config", "configs/train/rllib_warm_2p.yaml", "--set", f"init={FILE}", "--set", f"runs_dir={runs}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs Ray RLlib" in err
    assert f"-m training.train --config configs/train/rllib_warm_2p.yaml --set init={FILE} --set runs_dir={runs}" in err
    if (ROOT / ".venv-distributed" / "bin" / "python").is_file():
        assert "run .venv-distributed/bin/python -m training.train" in err
    assert not runs.exists(), "nothing is written"


def test_a_kit_rllib_run_resumes_through_training_train_and_a_plain_rllib_run_stays_refused(
        tmp_path, monkeypatch, capsys):
    import yaml

    from training.rllib.config import RLlibConfig
    from training.train.__main__ import main

    without_ray(monkeypatch)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(RLlibConfig().to_dict(), sort_keys=False))
    assert main(["--resume", str(run), "--no-progress"]) == 2
    assert "resume it with python -m training.rllib --resume" in capsys.readouterr().err
    (run / kit.KIT_FILE).write_text("backend: rllib\n")
    assert main(["--resume", str(run), "--set", "max_minutes=3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"-m training.train --resume {run} --set max_minutes=3" in err
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", kit.KIT_FILE], "nothing is written"


def test_the_rllib_command_sends_a_kit_recipe_to_training_train(capsys):
    from training.rllib.__main__ import main

    assert main(["--config", "configs/train/rllib_warm_2p.yaml"]) == 2
    assert capsys.readouterr().err == ("config error: configs/train/rllib_warm_2p.yaml is a recipe of the training kit "
                                       "(it names backend): run it with python -m training.train --config "
                                       "configs/train/rllib_warm_2p.yaml\n")


def test_a_bad_rllib_recipe_is_named_before_ray_is_asked_for(tmp_path, monkeypatch, capsys, kit_file):
    from training.train.__main__ import main

    without_ray(monkeypatch)
    assert main(["--config", str(kit_file), "--set", "ppo.target_kl=0.03"]) == 2
    assert capsys.readouterr().err.startswith("config error: ppo.target_kl: backend rllib cannot honour it")


def test_the_kits_keys_map_onto_the_rllib_recipe(kit_file):
    config = rllib_of(kit_file, ["seed=3", "max_minutes=7", "workers=2", "n_envs=8", "torch_threads=2",
                                 "ppo.n_steps=100", "ppo.batch_size=200", "ppo.learning_rate=1e-4", "ppo.n_epochs=2",
                                 "ppo.gae_lambda=0.9", "ppo.clip_range=0.1", "ppo.ent_coef=0.001",
                                 "ppo.vf_coef=0.25", "ppo.max_grad_norm=0.7", "ppo.gamma=0.99",
                                 "env.reward=shaped", "env.turn_cap=end", "env.max_turns=300",
                                 "network.net_arch=[64, 32]", "network.activation=relu",
                                 "pool.weights={self: 0.3, planner: 0.7}", "pool.snapshot_every=4000",
                                 "pool.max_snapshots=3", "checkpoint_every=1000", "eval.opponents=[heuristic]",
                                 "eval.final_games=50", f"init={FILE}", "network.net_arch=[256, 256]",
                                 "network.activation=tanh", "pretrain.sharpen=0.2", "play_symmetry=colours_affine",
                                 "eval.warm_start=true", "relabel=colours_affine", "pretrain.anchor=0.5",
                                 "pretrain.anchor_steps=9000", "eval.every=3000", "eval.games=40",
                                 "eval.best_by=heuristic"])
    assert (config.name, config.seed, config.eval.seed) == ("small", 3, 3)
    assert (config.stop.learner_steps, config.stop.minutes, config.stop.env_steps, config.stop.iterations) == \
           (5000, 7.0, 0, 0)
    r = config.resources
    assert (r.env_runners, r.envs_per_runner, r.torch_threads, r.num_cpus) == (2, 4, 2, 2)
    p = config.ppo
    assert (p.train_batch, p.minibatch, p.lr, p.epochs, p.lambda_, p.clip, p.entropy, p.vf_coeff, p.grad_clip,
            p.gamma) == (800, 200, 1e-4, 2, 0.9, 0.1, 0.001, 0.25, 0.7, 0.99)
    assert p.kl_coeff == 0.0, "the kit's PPO (SB3's) clips and has no KL penalty"
    assert load_rllib("configs/rllib/rllib_2p.yaml").ppo.kl_coeff == 0.2, "the RLlib recipe keeps RLlib's default"
    assert (config.env.reward, config.env.turn_cap, config.env.options) == ("shaped", "end", {"max_turns": 300})
    assert (config.model.hidden, config.model.activation, config.model.symmetry) == ([256, 256], "tanh",
                                                                                     "colours_affine")
    assert config.league.weights == {"league": 0.3, "planner": 0.7} and config.league.bots == ["planner"]
    assert (config.league.slots, config.league.snapshot_every, config.checkpoint_every) == (3, 5, 2)
    assert (config.eval.opponents, config.eval.games, config.eval.workers, config.eval.warm_start) == \
           (["heuristic"], 50, 2, True)
    assert (config.warm_start.file, config.warm_start.sharpen) == (FILE, 0.2)
    assert (config.warm_start.anchor, config.warm_start.anchor_steps, config.env.relabel) == \
           (0.5, 9000, "colours_affine")
    assert (config.eval.every, config.eval.select_games, config.eval.best_by) == (3000, 40, "heuristic")


@pytest.mark.parametrize(("override", "key"), [
    ("ppo.target_kl=0.03", "ppo.target_kl"),
    ("ppo.lr_schedule=linear", "ppo.lr_schedule"), ("record.teacher=planner", "record"),
    ("fit.epochs=2", "fit"), ("pool.prioritize=1", "pool.prioritize"), ("pool.window=50", "pool.window"),
    ("pipeline=2", "pipeline"), ("eval.games_by={heuristic: 20}", "eval.games_by"),
    ("collector_backend=python", "collector_backend"), ("env.features=[plan]", "env.features"),
])
def test_kit_keys_rllib_cannot_honour_are_refused_naming_the_key(kit_file, override, key):
    with pytest.raises(ConfigError, match=rf"^{key}: backend rllib cannot honour it \(.+\); (give|leave)"):
        rllib_of(kit_file, [override])


@pytest.mark.parametrize("override", ["relabel=none", "ppo.target_kl=null", "pool.prioritize=0", "eval.every=0",
                                      "pretrain.anchor=0", "ppo.lr_schedule=constant", "env.features=[]",
                                      "eval.games_by={}"])
def test_kit_keys_given_with_the_value_rllib_honours_are_taken(kit_file, override):
    assert rllib_of(kit_file, [override]).name == "small"


def test_a_kit_recipe_based_on_an_sb3_recipe_is_refused_naming_its_first_sb3_key(tmp_path):
    path = tmp_path / "on_default.yaml"
    path.write_text(f"base: {ROOT / 'configs' / 'train' / 'default.yaml'}\nbackend: rllib\n")
    with pytest.raises(ConfigError, match=r"^ppo\.target_kl: backend rllib cannot honour it"):
        rllib_of(path)


def test_opponents_and_counts_the_league_cannot_hold_are_refused(kit_file):
    with pytest.raises(ConfigError, match=r"pool\.weights: 'ismcts:iterations=4' cannot sit in the RLlib league"):
        rllib_of(kit_file, ["pool.weights={self: 1, 'ismcts:iterations=4': 1}"])
    with pytest.raises(ConfigError, match=r"pool\.weights: 'ppo:policies/keltis_2p_scratch.zip' cannot sit"):
        rllib_of(kit_file, [f"pool.weights={{'ppo:{FILE}': 1}}"])
    with pytest.raises(ConfigError, match=r"n_envs \(15\) must be a multiple of workers \(2\)"):
        rllib_of(kit_file, ["n_envs=15"])
    assert rllib_of(kit_file, ["workers=0", "n_envs=5"]).resources.env_runners == 0


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


def test_the_sb3_loaders_refuse_an_rllib_recipe_naming_the_command_that_runs_it(kit_file):
    with pytest.raises(ConfigError, match=rf"^backend: 'rllib' recipes are run by python -m training\.train "
                                          rf"--config {kit_file}"):
        load_config(kit_file)
    with pytest.raises(ConfigError, match=r"backend must be one of sb3, rllib; got 'jax'"):
        load_config(kit_file, ["backend=jax"], backends=BACKENDS)
    assert load_config("configs/train/default.yaml").backend == "sb3"


def test_every_kit_key_is_carried_to_rllib_or_refused_never_ignored(kit_file):
    import dataclasses
    import typing

    from training.sb3.config import TrainConfig

    def keys(cls, prefix=""):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(hints[f.name]):
                yield from keys(hints[f.name], f"{prefix}{f.name}.")
            else:
                yield prefix + f.name.rstrip("_")

    unsupported = set(kit.UNSUPPORTED)
    for key in keys(TrainConfig):
        covered = key in kit.MAPPED or key in unsupported or key.split(".")[0] in unsupported
        assert covered, f"the kit key {key} is neither carried over nor refused by training.rllib.kit"
    with pytest.raises(ConfigError, match=r"^future: backend rllib does not know how to honour it"):
        kit.refuse_unsupported({"future": 1}, load_config(kit_file, backends=BACKENDS))


def test_from_file_refuses_a_recipe_that_does_not_name_backend_rllib():
    with pytest.raises(ConfigError, match=r"default\.yaml names backend 'sb3'; an RLlib run needs backend: rllib"):
        kit.from_file("configs/train/default.yaml", [], load_kit)


def test_a_resumed_rllib_run_takes_the_kits_stop_and_evaluation_keys():
    assert kit.resume_overrides(["total_timesteps=9000", "max_minutes=5", "eval.final_games=10",
                                 "eval.opponents=[random]", "stop.iterations=4"]) == \
           ["stop.learner_steps=9000", "stop.minutes=5", "eval.games=10", "eval.opponents=[random]",
            "stop.iterations=4"]


def test_describe_names_the_backend_and_what_rllib_refuses(capsys):
    from training.train.__main__ import main

    assert main(["--describe"]) == 0
    out = capsys.readouterr().out
    assert "backend = 'sb3' [sb3, rllib]" in out
    assert all(f"\n{key}: " in out for key in kit.UNSUPPORTED)
