"""Training (training/): configs, the vectorised environments, a smoke run end to end,
resuming, and the trained policy as a bot in the evaluation toolkit."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from training.common.config import ConfigError, apply_override
from training.sb3.config import TrainConfig, describe, from_dict, load_config, upgrade

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
SMOKE = CONFIGS / "train" / "smoke.yaml"


# ---------------------------------------------------------------------- configs
# every config of python -m training.train (configs/exit/ and configs/rllib/ are other commands', tested in
# tests/test_exit.py and tests/test_rllib_route.py)
SB3_CONFIGS = sorted(p.stem for p in (CONFIGS / "train").glob("*.yaml"))


def test_the_config_list_holds_the_jobs_configs():
    assert {"default", "smoke", "scratch"} <= set(SB3_CONFIGS)


@pytest.mark.parametrize("name", SB3_CONFIGS)
def test_shipped_configs_load(name):
    config = load_config(CONFIGS / "train" / f"{name}.yaml")
    assert isinstance(config, TrainConfig) and config.name == name
    assert from_dict(config.to_dict()) == config  # the resolved form (config.yaml of a run) round-trips


def test_the_game_comes_from_the_registry_with_its_options():
    config = load_config(SMOKE, ["env.game=dice", "env.options={bonus_layout: random}"])
    assert config.env.game == "dice"
    assert config.env.game_options() == {"max_turns": 500, "bonus_layout": "random"}
    # a resolved config of an older run, with the card game's tile_layout as its own key
    old = from_dict(upgrade({"env": {"num_players": 2, "tile_layout": "random"}}))
    assert old.env.options == {"tile_layout": "random"} and old.env.game == "keltis"


def test_a_run_folder_of_an_earlier_version_is_read_in_today_s_keys():
    """The resolved config.yaml of a run made before the keys were renamed: each old key is
    moved to its new place, the process counts become the run's workers, vec_env goes."""
    old = {"name": "old", "vec_env": "subproc", "workers": 2, "ppo": {"net_arch": [8], "activation": "relu"},
           "eval": {"workers": 1, "opponents": ["random"]},
           "pretrain": {"teacher": "heuristic", "games": 3, "soft_temperature": 0.0, "temperature": 0.5,
                        "epochs": 2, "augment": "none", "workers": 1, "anchor": 0.2}}
    config = from_dict(upgrade(old))
    assert config.network.net_arch == [8] and config.network.activation == "relu"
    assert (config.record.teacher, config.record.games, config.fit.epochs) == ("heuristic", 3, 2)
    assert (config.pretrain.sharpen, config.pretrain.anchor, config.workers) == (0.5, 0.2, 2)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.game=chess"], r"env.game must be one of .*keltis.*; got 'chess'"),
        (["env.game=dice", "env.options={tile_layout: random}"],
         r"env.options: .*tile_layout.* \(options of dice: bonus_layout\)"),
        (["env.options={tile_layout: diagonal}"],
         r"env.options: tile_layout must be .* \(options of keltis: tile_layout\)"),
        (["env.game=dice", "env.num_players=5"], r"env.num_players must be 2 to 4 for dice, got 5"),
        (["env.game=dice", "pool.weights={minimax: 1.0}"],
         r"unknown agent 'minimax'; known bots: .*the bots of dice"),
        (["env.game=dice", "eval.opponents=[ppo:policies/keltis_2p.zip]"],
         r"eval.opponents: 'ppo:policies/keltis_2p.zip': policies/keltis_2p.zip is a 2-player keltis policy; this is a "
         r"2-player dice game"),
        (["env.num_players=3", "pool.weights={ppo:policies/keltis_2p.zip: 1.0}"],
         r"is a 2-player keltis policy; this is a 3-player keltis game"),
    ],
)
def test_a_config_for_another_game_or_player_count_is_refused_at_load(overrides, message, monkeypatch):
    monkeypatch.chdir(ROOT)  # the policy paths are relative to the repository
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, overrides)


@pytest.mark.parametrize(
    ("text", "value"),
    [("3e6", 3_000_000), ("3E+6", 3_000_000), ("3_000_000", 3_000_000), ("3.0e6", 3_000_000),
     ("'3_000_000'", 3_000_000), ("2.5e5", 250_000), ("1024", 1024), ("1024.0", 1024)],
)
def test_integers_in_exponent_or_underscore_form_are_accepted(text, value, tmp_path):
    assert load_config(SMOKE, [f"total_timesteps={text}"]).total_timesteps == value
    (tmp_path / "exp.yaml").write_text(f"base: {SMOKE}\ntotal_timesteps: {text}\n")
    assert load_config(tmp_path / "exp.yaml").total_timesteps == value


def test_the_readme_command_line_loads():
    """training/README.md's example, copied: --set total_timesteps=3e6."""
    readme = (ROOT / "training" / "README.md").read_text()
    line = next(x for x in readme.splitlines() if "--set total_timesteps=3e6" in x)
    config_file = re.search(r"--config (\S+)", line).group(1)
    assert load_config(ROOT / config_file, ["total_timesteps=3e6"]).total_timesteps == 3_000_000


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("total_timesteps=3.5", r"total_timesteps must be an integer, got 3.5: it is not a whole number"),
        ("total_timesteps=3.5e0", r"total_timesteps must be an integer, got '3.5e0': it is not a whole number"),
        ("n_envs=1e-3", r"n_envs must be an integer, got '1e-3': it is not a whole number"),
        ("n_envs=many", r"n_envs must be an integer \(e.g. 3000000, 3_000_000 or 3e6\), got 'many'"),
        ("n_envs=true", r"n_envs must be an integer, got True"),
        ("n_envs=.inf", r"n_envs must be an integer \(e.g. 3000000, 3_000_000 or 3e6\), got inf"),
        ("checkpoint_every=0e3", r"checkpoint_every must be >= 1, got 0"),
    ],
)
def test_numbers_that_are_not_whole_are_refused_for_integer_keys(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, [override])


def test_the_callback_does_not_import_the_trainer():
    """No import cycle training.sb3.trainer <-> training.sb3.callbacks, not even for type checking."""
    import ast

    tree = ast.parse((ROOT / "training" / "sb3" / "callbacks.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not imported & {"trainer", "training.sb3.trainer", "training.sb3"}


def test_one_loader_and_one_error_for_the_sb3_and_rllib_configs(tmp_path):
    """The RLlib config (no Ray needed to load it) reads ``base:``, exact integers in any
    notation and ``--set`` as the SB3 config does, and refuses the same way."""
    from keltis_env.core.errors import KeltisError
    from training.rllib.config import load_config as load_rllib

    assert issubclass(ConfigError, KeltisError)
    (tmp_path / "base.yaml").write_text("stop: {env_steps: 3e6, minutes: 0}\nppo: {lr: 1e-3}\n")
    (tmp_path / "exp.yaml").write_text("base: base.yaml\nname: exp\nstop: {iterations: 3_000}\n")
    config = load_rllib(tmp_path / "exp.yaml", ["ppo.train_batch=8e3", "ppo.lambda=0.9"])
    assert (config.name, config.stop.env_steps, config.stop.iterations) == ("exp", 3_000_000, 3000)
    assert (config.ppo.lr, config.ppo.train_batch, config.ppo.lambda_) == (1e-3, 8000, 0.9)
    assert config.to_dict()["ppo"]["lambda"] == 0.9
    with pytest.raises(ConfigError, match=r"stop\.env_steps must be an integer, got 3\.5"):
        load_rllib(tmp_path / "exp.yaml", ["stop.env_steps=3.5"])
    with pytest.raises(ConfigError, match=r"unknown key 'ppo\.nope' in ppo"):
        load_rllib(None, ["ppo.nope=1"])
    with pytest.raises(ConfigError, match=r"model\.hidden\[0\] must be >= 1"):
        load_rllib(None, ["model.hidden=[0]"])


@pytest.mark.parametrize(("override", "message"), [
    ("seed=4294967296", r"seed must be from 0 to 4,294,967,295, got 4294967296"),
    ("seed=-1", r"seed must be from 0 to"),
    ("resources.envs_per_runner=100000000000", r"resources.envs_per_runner must be from 1 to 4,096"),
    ("eval.games=1e9", r"eval.games must be from 0 to 1,000,000"),
    ("ppo.lr=.inf", r"ppo.lr"),
])
def test_the_rllib_config_refuses_seeds_and_counts_out_of_range(override, message):
    from training.rllib.config import load_config as load_rllib

    with pytest.raises(ConfigError, match=message):
        load_rllib(None, [override])


def test_base_files_and_overrides(tmp_path):
    (tmp_path / "base.yaml").write_text("total_timesteps: 5000\nppo: {n_steps: 64, batch_size: 64}\n")
    (tmp_path / "exp.yaml").write_text("base: base.yaml\nname: exp\nppo: {learning_rate: 1e-3}\n")
    config = load_config(tmp_path / "exp.yaml", ["ppo.n_epochs=2", "pool.weights={self: 1.0}", "env.reward=score"])
    assert (config.name, config.total_timesteps) == ("exp", 5000)
    assert (config.ppo.n_steps, config.ppo.learning_rate, config.ppo.n_epochs) == (64, 1e-3, 2)
    assert config.pool.weights == {"self": 1.0} and config.env.reward == "score"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("ppo.lerning_rate=0.1", r"unknown key 'ppo.lerning_rate' in ppo; allowed keys: learning_rate, lr_schedule"),
        ("totl_timesteps=5", r"unknown key 'totl_timesteps' in the config; allowed keys: name, seed, total_timesteps"),
        ("env.reward=points", r"env.reward must be one of win, score, shaped; got 'points'"),
        ("env.num_players=5", r"env.num_players must be 2 to 4 for keltis, got 5"),
        ("ppo.n_steps=1.5", r"ppo.n_steps must be an integer, got 1.5"),
        ("ppo.learning_rate=0", r"ppo.learning_rate must be > 0.0, got 0.0"),
        ("ppo.batch_size=100000", r"ppo.batch_size \(100000\) must be at most ppo.n_steps x n_envs"),
        ("network.net_arch=[64, -1]", r"network.net_arch\[1\] must be >= 1, got -1"),
        ("pool.weights={nobody: 1.0}", r"pool.weights: unknown agent 'nobody'; known bots: "),
        ("pool.weights={random: -1}", r"pool.weights.random must be >= 0.0"),
        ("eval.opponents=[ppo:nowhere.zip]", r"no policy file at 'nowhere.zip'"),
        ("eval.opponents=[py:no_such_module_xyz:agent]", r"eval.opponents: agent spec 'py:no_such_module_xyz:agent': "
                                                          r".*no module named 'no_such_module_xyz'"),
        ("ppo=3", r"ppo must be a mapping, got 3"),
        ("vec_env=subproc", r"vec_env is no longer a key: the batched self-play collector .* is the one vectoriser"),
        ("pretrain.teacher=planner", r"pretrain.teacher is no longer a key; it is record.teacher now"),
        ("ppo.net_arch=[64]", r"ppo.net_arch is no longer a key; it is network.net_arch now"),
        ("eval.workers=1", r"eval.workers is no longer a key; it is workers now"),
        ("eval.games_by={planner: 100}", r"eval.games_by names 'planner', which is not one of eval.opponents "
                                         r"\(random\)"),
        ("eval.games_by={random: 1}", r"eval.games_by.random must be from 2 to 1,000,000 games, got 1"),
        ("eval.games_by={random: 2.5}", r"eval.games_by.random must be an integer, got 2.5"),
    ],
)
def test_bad_configs_fail_fast_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, [override])


@pytest.mark.slow
def test_your_own_agent_is_an_opponent_in_the_pool_and_the_evaluations(tmp_path):
    from training.train.__main__ import main

    own = f"py:{ROOT / 'examples' / 'my_agent.py'}:EpsilonFirst,epsilon=0.2"
    overrides = [f'pool.weights={{"{own}": 0.5, self: 0.5}}', f'eval.opponents=[random, "{own}"]',
                 "workers=2", "n_envs=4", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    with open(run / "eval.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["opponent"] for r in rows} == {"random", own} and all(int(r["games"]) == 4 for r in rows)
    pool = json.loads((run / "checkpoints" / "state.json").read_text())["pool"]
    assert pool["results"].get(own), "the pool seated the agent against the learner"


def test_config_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ConfigError, match="form a cycle"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping of keys to values"):
        load_config(tmp_path / "list.yaml")
    with pytest.raises(ConfigError, match="expected key=value"):
        apply_override({}, "ppo.n_steps")
    assert "ppo.learning_rate = 0.0003" in describe()


def test_cli_config_error_exit_code(capsys):
    from training.train.__main__ import main

    assert main(["--config", str(SMOKE), "--set", "ppo.gamma=2"]) == 2
    assert "config error: ppo.gamma must be <= 1.0, got 2.0" in capsys.readouterr().err


# ---------------------------------------------------------------------- a run end to end
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from training.train.__main__ import main

    runs = tmp_path_factory.mktemp("runs")
    code = main(["--config", str(SMOKE), "--set", f"runs_dir={runs}", "--no-progress"])
    assert code == 0
    (run,) = runs.iterdir()
    return run


@pytest.mark.slow
def test_smoke_run_folder(smoke_run):
    for name in ("config.yaml", "command.txt", "run.json", "checkpoints/last.zip", "checkpoints/best.zip",
                 "checkpoints/state.json", "eval.csv", "games.csv", "learning_curve.png", "report.md",
                 "report.json", "policy.zip"):
        assert (smoke_run / name).is_file(), name
    assert re.fullmatch(r"smoke-\d{8}-\d{6}", smoke_run.name)
    assert load_config(smoke_run / "config.yaml").seed == 0
    assert "-m training.train --config" in (smoke_run / "command.txt").read_text()
    meta = json.loads((smoke_run / "run.json").read_text())
    assert meta["seed"] == 0 and meta["timesteps"] == 1024
    assert list((smoke_run / "logs").glob("events.out.tfevents.*"))
    snapshots = sorted(p.name for p in (smoke_run / "snapshots").iterdir())
    assert snapshots == ["snap_000000512.zip", "snap_000001024.zip"]  # max_snapshots 2: the first two are gone
    with open(smoke_run / "eval.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["timesteps"]) for r in rows] == [512, 1024] and {r["opponent"] for r in rows} == {"random"}
    report = json.loads((smoke_run / "report.json").read_text())
    result = report["results"]["random"]
    assert result["games"] == 8 and 0 <= result["win_rate_ci"][0] <= result["win_rate"] <= result["win_rate_ci"][1]
    assert {"mean_turns", "truncation_rate", "mean_score"} <= set(result)
    assert report["timesteps"] == 1024 and report["learning_steps_per_s"] > 0
    assert "| random | 8 |" in (smoke_run / "report.md").read_text()


@pytest.mark.slow
def test_trained_policy_plays_in_the_evaluation_toolkit(smoke_run):
    from keltis_env.evaluation import evaluate

    result = evaluate([f"ppo:{smoke_run / 'policy.zip'}", "random"], games=4, seed=1, workers=1, progress=False)
    stats = result.to_dict()["agents"][0]
    assert stats["games"] == 4 and 0.0 <= stats["win_rate"] <= 1.0


@pytest.mark.slow
def test_resume_continues_from_the_last_checkpoint(smoke_run, tmp_path):
    import shutil

    from training.train.__main__ import main

    run = tmp_path / smoke_run.name
    shutil.copytree(smoke_run, run)
    assert main(["--resume", str(run), "--set", "total_timesteps=1536", "--no-progress"]) == 0
    state = json.loads((run / "checkpoints" / "state.json").read_text())
    assert state["timesteps"] == 1536
    assert state["pool"]["snapshots"] == ["snap_000001024", "snap_000001536"]
    assert load_config(run / "config.yaml").total_timesteps == 1536
    commands = (run / "command.txt").read_text()
    assert "--config" in commands and "--resume" in commands
    with open(run / "eval.csv") as f:
        assert [int(r["timesteps"]) for r in csv.DictReader(f)] == [512, 1024, 1536]
    with pytest.raises(ConfigError, match="keeps its network"):
        from training.sb3.trainer import Trainer

        Trainer.resume(run, "test", ["network.net_arch=[8]"], progress=False)
    with pytest.raises(ConfigError, match=r"no checkpoints/last\.zip"):
        Trainer.resume(tmp_path, "test", progress=False)


@pytest.mark.slow
def test_max_minutes_stops_a_session_early(tmp_path):
    from training.train.__main__ import main

    overrides = ["max_minutes=0.0001", "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["stopped_by_time_limit"] and meta["timesteps"] < 1024
    assert "stopped by max_minutes" in (run / "report.md").read_text()


@pytest.mark.slow
def test_warm_start_imitates_the_teacher_with_dagger(tmp_path):
    from training.train.__main__ import main

    overrides = ["record.teacher=heuristic", "record.games=3", "record.dagger_rounds=1",
                 "record.dagger_games=2", "fit.epochs=2", "workers=1", "total_timesteps=256",
                 "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    stats = json.loads((run / "report.json").read_text())["pretrain"]
    assert stats["teacher"] == "heuristic" and stats["games"] == 5 and stats["dagger_rounds"] == 1
    assert stats["decisions_recorded"] > 300 and 0.0 <= stats["accuracy"] <= 1.0
    assert "warm start: imitated `heuristic`" in (run / "report.md").read_text()
    assert not list((run / "checkpoints").glob("pretrain_*.zip"))


@pytest.mark.slow
def test_warm_start_keeps_the_fit_epoch_that_plays_best(tmp_path):
    """fit.select_by: each fit's epochs (the DAgger round's fit starting from the first's
    choice) are played on selection deals, the best kept, and the report says which."""
    from training.train.__main__ import main

    overrides = ["record.teacher=heuristic", "record.games=3", "record.dagger_rounds=1",
                 "record.dagger_games=2", "fit.epochs=2", "workers=1", "total_timesteps=256",
                 "fit.select_by=random", "fit.select_games=4",
                 "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    stats = json.loads((run / "report.json").read_text())["pretrain"]
    assert stats["selected_epoch"] in (0, 1, 2) and 0.0 <= stats["selected_score"] <= 1.0
    assert f"the fit's epoch {stats['selected_epoch']:.0f} kept" in (run / "report.md").read_text()
    assert not list((run / "checkpoints").glob("fit_select*.zip"))


def test_sharpen_divides_the_logits_and_keeps_the_best_action():
    import torch
    from sb3_contrib import MaskablePPO

    from keltis_env.envs.learner import KeltisLearnerEnv
    from training.imitate.fit import sharpen

    env = KeltisLearnerEnv()
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, policy_kwargs={"net_arch": [8]},
                        device="cpu")
    obs, _ = env.reset(seed=0)
    mask = env.action_masks()

    def logits():
        with torch.no_grad():
            return model.policy.get_distribution(torch.as_tensor(obs[None]), action_masks=mask[None]) \
                .distribution.logits[0].numpy()

    before = logits()
    sharpen(model, 0.5)
    after = logits()
    legal = np.flatnonzero(mask)
    assert np.argmax(after[legal]) == np.argmax(before[legal])
    # masked log-probabilities are shifted logits: differences between legal actions double
    np.testing.assert_allclose(np.diff(after[legal]), 2 * np.diff(before[legal]), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- faults
def _write_tiny_dice_config(folder: Path) -> Path:
    """A dice run of a few seconds per thousand steps, checkpointing often."""
    path = folder / "tiny.yaml"
    path.write_text(
        f"base: {SMOKE}\n"
        "name: tiny\n"
        "total_timesteps: 1e6\n"
        "checkpoint_every: 256\n"
        "env: {game: dice}\n"
        "ppo: {n_steps: 64, batch_size: 64}\n"
        "pool: {weights: {self: 0.5, random: 0.5}, snapshot_every: 256, max_snapshots: 2}\n"
        "eval: {every: 0, final_games: 0}\n"
        f"runs_dir: {folder / 'runs'}\n"
    )
    return path


def _csv_steps(path: Path) -> list[int]:
    with open(path, newline="") as f:
        return [int(r["timesteps"]) for r in csv.DictReader(f)]


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_losing_at_most_one_checkpoint_interval(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    import zipfile

    from keltis_env.policy import read_policy_info
    from training.sb3.checkpoints import STATE_MEMBER

    config = _write_tiny_dice_config(tmp_path)
    command = [sys.executable, "-m", "training.train", "--config", str(config), "--no-progress"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    runs = tmp_path / "runs"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            state_file = next(runs.glob("*/checkpoints/state.json"), None)
            if state_file is not None and json.loads(state_file.read_text() or "{}").get("timesteps", 0) >= 768:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        time.sleep(0.7)  # somewhere in the middle of training, checkpoints included
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    (run,) = runs.iterdir()
    reached = _csv_steps(run / "games.csv")[-1]  # the last rollout logged before the kill
    with zipfile.ZipFile(run / "checkpoints" / "last.zip") as zf:
        assert zf.testzip() is None  # whole, whatever the moment of the kill
        saved = json.loads(zf.read(STATE_MEMBER))["timesteps"]
    assert reached - 256 <= saved <= reached, "lost more than one checkpoint interval"
    assert read_policy_info(run / "checkpoints" / "last.zip").game == "dice"

    total = saved + 512
    out = subprocess.run([sys.executable, "-m", "training.train", "--resume", str(run), "--set",
                          f"total_timesteps={total}", "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    state = json.loads((run / "checkpoints" / "state.json").read_text())
    assert state["timesteps"] == total
    steps = _csv_steps(run / "games.csv")
    assert steps == sorted(set(steps)) and steps[-1] == total  # rows after the checkpoint were played again
    assert "(resume)" in (run / "command.txt").read_text()
    info = read_policy_info(run / "policy.zip")
    assert (info.game, info.num_players, info.inferred) == ("dice", 2, False)


@pytest.mark.slow
def test_a_truncated_or_corrupt_checkpoint_is_refused_at_resume(smoke_run, tmp_path):
    import shutil
    import zipfile

    from training.sb3.trainer import Trainer

    def broken(name: str, change) -> Path:
        run = tmp_path / name
        shutil.copytree(smoke_run, run)
        last = run / "checkpoints" / "last.zip"
        last.write_bytes(change(last.read_bytes(), last))
        return run

    def cut(data: bytes, _: Path) -> bytes:
        return data[: len(data) // 2]

    def flip(data: bytes, path: Path) -> bytes:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("policy.pth")
        at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]

    with pytest.raises(ConfigError, match=r"last.zip'?: it is truncated or corrupt \(not a whole zip file\)"):
        Trainer.resume(broken("cut", cut), "test", progress=False)
    with pytest.raises(ConfigError, match=r"it is corrupt \(member 'policy.pth' fails its checksum\)"):
        Trainer.resume(broken("flipped", flip), "test", progress=False)
    run = broken("bad_snapshot", lambda data, _: data)
    snapshot = run / "snapshots" / "snap_000001024.zip"
    snapshot.write_bytes(snapshot.read_bytes()[:-100])
    with pytest.raises(ConfigError, match=r"snapshot snap_000001024 is unusable: .* is a truncated or corrupt zip"):
        Trainer.resume(run, "test", progress=False)
    run = broken("bad_config", lambda data, _: data)
    (run / "config.yaml").write_text("env: [unclosed\n")
    with pytest.raises(ConfigError, match=r"its config\.yaml is unreadable"):
        Trainer.resume(run, "test", progress=False)


@pytest.mark.slow
def test_a_run_exports_policies_that_know_their_game(smoke_run):
    from keltis_env.policy import read_policy_info

    for name in ("policy.zip", "checkpoints/best.zip", "checkpoints/last.zip"):
        info = read_policy_info(smoke_run / name)
        assert (info.game, info.num_players, info.inferred) == ("keltis", 2, False), name


@pytest.mark.slow
def test_a_run_starts_from_the_weights_of_init(smoke_run, tmp_path):
    """``init``: RL starts from a policy file's weights (its anchor is that policy,
    sharpened by ``pretrain.sharpen``)."""
    import torch
    from sb3_contrib import MaskablePPO

    from training.train.__main__ import main

    start = smoke_run / "policy.zip"
    overrides = [f"init={start}", "pretrain.anchor=1.0", "pretrain.sharpen=0.5", "total_timesteps=256",
                 "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    before = MaskablePPO.load(start, device="cpu").policy.state_dict()
    anchor = MaskablePPO.load(run / "checkpoints" / "anchor.zip", device="cpu").policy.state_dict()
    for name, value in before.items():
        expected = value / 0.5 if name.startswith("action_net.") else value
        assert torch.allclose(anchor[name], expected), name
    assert json.loads((run / "report.json").read_text())["init"] == str(start)


@pytest.mark.slow
def test_a_run_from_an_init_that_plays_averaged_over_relabellings_plays_so_too(smoke_run, tmp_path):
    """An ``init`` whose metadata says it plays averaged over the colour relabellings gives
    policies (snapshots, best, the run's policy) that play so too; its weights are the run's."""
    import shutil

    from keltis_env.policy import read_policy_info, write_policy_info
    from training.train.__main__ import main

    start = tmp_path / "start.zip"
    shutil.copyfile(smoke_run / "policy.zip", start)
    info = read_policy_info(start)
    write_policy_info(start, info.game, info.num_players, info.features, info.value_reward, symmetry="colours")
    runs = tmp_path / "runs"
    overrides = [f"init={start}", "total_timesteps=512", "eval.every=0", "eval.final_games=0", f"runs_dir={runs}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = runs.iterdir()
    played = [run / "policy.zip", *sorted((run / "snapshots").iterdir())]
    assert len(played) > 1
    assert {read_policy_info(p).symmetry for p in played} == {"colours"}
    plain = tmp_path / "plain"
    overrides = [f"init={smoke_run / 'policy.zip'}", "total_timesteps=256", "eval.every=0", "eval.final_games=0",
                 f"runs_dir={plain}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = plain.iterdir()
    assert read_policy_info(run / "policy.zip").symmetry == ""


@pytest.mark.slow
def test_play_symmetry_makes_every_policy_file_of_a_run_play_averaged_and_none_overrides_the_inits(
        smoke_run, tmp_path):
    """``play_symmetry: colours_affine`` gives a run from random weights policy files that
    play averaged over those relabellings; ``none`` drops an ``init``'s symmetry."""
    import shutil

    from keltis_env.policy import read_policy_info, write_policy_info
    from training.train.__main__ import main

    runs = tmp_path / "runs"
    overrides = ["play_symmetry=colours_affine", "total_timesteps=512", "eval.every=0", "eval.final_games=0",
                 f"runs_dir={runs}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = runs.iterdir()
    played = [run / "policy.zip", *sorted((run / "snapshots").iterdir())]
    assert len(played) > 1
    assert {read_policy_info(p).symmetry for p in played} == {"colours_affine"}
    start = tmp_path / "start.zip"
    shutil.copyfile(smoke_run / "policy.zip", start)
    info = read_policy_info(start)
    write_policy_info(start, info.game, info.num_players, info.features, info.value_reward, symmetry="colours")
    plain = tmp_path / "plain"
    overrides = [f"init={start}", "play_symmetry=none", "total_timesteps=256", "eval.every=0", "eval.final_games=0",
                 f"runs_dir={plain}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = plain.iterdir()
    assert read_policy_info(run / "policy.zip").symmetry == ""


def test_relabel_plays_the_learners_games_under_the_relabellings_it_names():
    from training.common.config import ConfigError
    from training.sb3.config import load_config
    from training.sb3.envs import make_vec_env

    config = load_config(SMOKE, ["relabel=colours_affine", "workers=0", "n_envs=8"])
    venv = make_vec_env(config, ["random"], [1.0])
    try:
        assert venv.relabel is not None and venv.relabel.size == 20
        venv.reset()
        assert (venv._which != 0).any()
    finally:
        venv.close()
    plain = make_vec_env(load_config(SMOKE, ["workers=0"]), ["random"], [1.0])
    assert plain.relabel is None
    plain.close()
    with pytest.raises(ConfigError, match=r"relabel: .*no relabelling 'mirror'.*colours"):
        load_config(SMOKE, ["relabel=mirror"])


@pytest.mark.slow
def test_a_run_with_relabelled_games_trains_to_its_budget(tmp_path):
    from training.train.__main__ import main

    runs = tmp_path / "runs"
    overrides = ["relabel=colours_affine", "total_timesteps=512", "eval.every=0", "eval.final_games=0",
                 f"runs_dir={runs}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = runs.iterdir()
    assert (run / "policy.zip").is_file()


def test_a_play_symmetry_the_game_does_not_have_is_refused_naming_the_games_relabellings():
    from training.common.config import ConfigError
    from training.sb3.config import load_config

    with pytest.raises(ConfigError, match=r"play_symmetry: .*no relabelling 'mirror'.*colours"):
        load_config(SMOKE, ["play_symmetry=mirror"])


@pytest.mark.slow
def test_the_final_report_plays_the_policy_against_its_warm_start_head_to_head(smoke_run, tmp_path):
    """``eval.warm_start``: the policy RL started from is kept (checkpoints/warm_start.zip,
    the init's weights) and the final evaluation plays the run's policy against it."""
    import torch
    from sb3_contrib import MaskablePPO

    from training.train.__main__ import main

    start = smoke_run / "policy.zip"
    overrides = [f"init={start}", "pretrain.sharpen=0.5", "total_timesteps=512", "eval.every=0",
                 "eval.final_games=8", "eval.warm_start=true", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    kept = MaskablePPO.load(run / "checkpoints" / "warm_start.zip", device="cpu").policy.state_dict()
    for name, value in MaskablePPO.load(start, device="cpu").policy.state_dict().items():
        assert torch.equal(kept[name], value), name  # as it plays: not sharpened
    report = json.loads((run / "report.json").read_text())
    assert list(report["results"]) == ["random", "warm start"]
    assert report["results"]["warm start"]["games"] == 8
    text = (run / "report.md").read_text()
    assert "| warm start | 8 |" in text and f"ppo:{run / 'checkpoints' / 'warm_start.zip'}" in text


def test_eval_warm_start_is_refused_without_a_warm_start_or_a_final_evaluation():
    smoke = SMOKE
    with pytest.raises(ConfigError, match=r"eval.warm_start needs a warm start to play against: set init or"):
        load_config(smoke, ["eval.warm_start=true"])
    with pytest.raises(ConfigError, match=r"eval.warm_start plays in the final evaluation: set eval.final_games"):
        load_config(smoke, ["eval.warm_start=true", "record.teacher=heuristic", "eval.final_games=0"])


def test_a_bad_init_is_refused_naming_it(smoke_run, tmp_path):
    smoke = SMOKE
    with pytest.raises(ConfigError, match=r"init: no policy file at"):
        load_config(smoke, [f"init={tmp_path / 'missing.zip'}"])
    with pytest.raises(ConfigError, match=r"init: .* is a 2-player keltis policy; this is a 3-player"):
        load_config(smoke, [f"init={smoke_run / 'policy.zip'}", "env.num_players=3"])
    with pytest.raises(ConfigError, match=r"trained with observation features \[\]; env.features is"):
        load_config(smoke, [f"init={smoke_run / 'policy.zip'}", "env.features=[plan]"])
    from training.sb3.trainer import Trainer

    config = load_config(smoke, [f"init={smoke_run / 'policy.zip'}", "network.net_arch=[8]",
                                 f"runs_dir={tmp_path}"])
    trainer = Trainer.new(config, "test", progress=False)
    with pytest.raises(ConfigError, match=r"has another network than network.net_arch \[8\]"):
        trainer.train()
    trainer.close()


@pytest.mark.slow
def test_a_run_evaluates_on_the_game_options_it_trains_on(tmp_path, monkeypatch):
    """Periodic and final evaluations play the games of ``env.options`` (here random tile
    layouts), not the game's default ones."""
    import training.sb3.trainer
    from training.train.__main__ import main

    seen = []
    real = training.sb3.trainer.evaluate_policy

    def spy(*args, **kwargs):
        seen.append(kwargs["options"])
        return real(*args, **kwargs)

    monkeypatch.setattr(training.sb3.trainer, "evaluate_policy", spy)
    overrides = ["env.options={tile_layout: random}", "total_timesteps=512", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    assert len(seen) >= 2 and all(o == {"tile_layout": "random"} for o in seen)


def test_stop_on_signals_stops_with_a_stop_request_and_puts_back_the_handlers_it_found() -> None:
    import os
    import signal
    import time

    from keltis_env.core.errors import StopRequest
    from training.common.cli import stop_on_signals

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(StopRequest), stop_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted at once
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
