"""The training commands find the shipped configs, recipes and policies by their repository
paths from any working folder (an installed wheel's users have no checkout): ``--config
configs/train/smoke.yaml``, a config's ``base: configs/train/default.yaml``, a recipe file and a policy
path such as expert iteration's ``init: policies/keltis_2p.zip`` (its default included) are the
package's shipped files when the working folder has none (:func:`keltis_env.data.resolve`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from keltis_env.data import shipped
from training.common.config import MOVED, READERS, ConfigError, moved_to

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working folder outside the repository, with no configs/ or policies/."""
    monkeypatch.chdir(tmp_path)
    assert not Path("configs").exists() and not Path("policies").exists()
    return tmp_path


def test_a_shipped_config_loads_by_its_repository_path_from_another_working_folder(elsewhere):
    from training.rllib.config import load_config as load_rllib
    from training.sb3.config import load_config

    config = load_config("configs/train/smoke.yaml", ["total_timesteps=512"])
    assert config.name == "smoke" and config.total_timesteps == 512
    assert load_rllib("configs/rllib/rllib_2p.yaml").env.game == "keltis"


def test_the_train_command_takes_a_shipped_config_from_another_working_folder(elsewhere, capsys):
    from training.train.__main__ import main

    assert main(["--config", "configs/train/smoke.yaml", "--set", "ppo.gamma=2"]) == 2  # loaded, then this key refused
    err = capsys.readouterr().err
    assert "not found" not in err and "ppo.gamma" in err


def test_a_base_file_is_found_beside_the_config_else_by_its_repository_path(elsewhere):
    from training.sb3.config import load_config

    (elsewhere / "mine.yaml").write_text("base: configs/train/smoke.yaml\ntotal_timesteps: 768\n")
    config = load_config("mine.yaml")
    assert config.name == "smoke" and config.total_timesteps == 768
    (elsewhere / "smoke.yaml").write_text("name: beside\ntotal_timesteps: 256\n")
    (elsewhere / "near.yaml").write_text("base: smoke.yaml\n")
    assert load_config("near.yaml").name == "beside"  # relative to the file comes first
    (elsewhere / "lost.yaml").write_text("base: configs/nothing.yaml\n")
    with pytest.raises(ConfigError, match=r"its base file 'configs/nothing.yaml' is not found \(looked for "):
        load_config("lost.yaml")


def test_a_recipe_file_and_its_base_configs_load_from_another_working_folder(elsewhere):
    from training.common.config import sections
    from training.exit.config import ExitConfig
    from training.recipe.recipe import config_data, load_recipe

    recipe = load_recipe("configs/recipes/keltis_2p.yaml")
    assert recipe.path == shipped("configs/recipes/keltis_2p.yaml") and recipe.stages
    exit_stage = next(s for s in recipe.stages if s.kind == "exit")
    assert config_data(recipe, exit_stage, "config", sections(ExitConfig))["rounds"] >= 1
    with pytest.raises(ConfigError, match="not found"):
        load_recipe("configs/recipes/nothing.yaml")


def test_an_exit_config_with_a_shipped_init_policy_resolves_from_another_working_folder(elsewhere):
    from training.exit.config import load_config

    (elsewhere / "exit.yaml").write_text("base: configs/exit/exit_2p_both.yaml\ninit: policies/keltis_2p.zip\n")
    config = load_config("exit.yaml")
    assert Path(config.init) == shipped("policies/keltis_2p.zip") and Path(config.init).is_file()
    default = load_config(None, ["env.reward=score", "env.features=[plan]"])  # init's default is that file too
    assert Path(default.init) == shipped("policies/keltis_2p.zip")
    assert Path(load_config("configs/exit/exit_tiny.yaml").init) == shipped("policies/dice_2p.zip")
    with pytest.raises(ConfigError, match=r"init: no policy file at 'policies/nothing.zip'"):
        load_config("exit.yaml", ["init=policies/nothing.zip"])


def test_in_the_repository_the_paths_stay_as_written(monkeypatch):
    from training.exit.config import load_config

    monkeypatch.chdir(ROOT)
    config = load_config("configs/exit/exit_2p_both.yaml", ["init=policies/keltis_2p.zip"])
    assert config.init == "policies/keltis_2p.zip"


def test_a_recipe_stage_starting_from_a_shipped_policy_gets_the_shipped_file_from_another_folder(elsewhere):
    from training.recipe.recipe import load_recipe
    from training.recipe.run import Context

    recipe = load_recipe("configs/recipes/keltis_2p.yaml")  # its stages start from policies/keltis_2p_value.zip
    ctx = Context(recipe, elsewhere / "work", False, print, False)
    for ref in ("policies/keltis_2p_value.zip", "ppo:policies/keltis_2p_value.zip"):
        assert Path(ctx.policy(ref)) == shipped("policies/keltis_2p_value.zip")


def test_every_config_lives_in_the_folder_of_the_command_that_reads_it():
    loose = sorted(p.name for p in (ROOT / "configs").glob("*.yaml"))
    assert not loose, f"configs/ holds no config of its own, only one folder per command: {loose}"
    assert sorted(p.name for p in (ROOT / "configs").iterdir()) == sorted(READERS) == ["exit", "recipes", "rllib",
                                                                                       "train", "zero"]


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_config_at_its_earlier_path_is_refused_naming_where_it_is_now(name, elsewhere):
    from training.sb3.config import load_config

    new = f"configs/{MOVED[name]}/{name}"
    assert moved_to(f"configs/{name}") == new and shipped(new) is not None and (ROOT / new).is_file()
    reader = {"train": "training.train", "exit": "training.exit", "rllib": "training.rllib"}[MOVED[name]]
    with pytest.raises(ConfigError, match=f"^config file 'configs/{name}' has moved: it is {new} now, which "
                                          f"python -m {reader} reads$"):
        load_config(f"configs/{name}")
    (elsewhere / "mine.yaml").write_text(f"base: configs/{name}\n")
    with pytest.raises(ConfigError, match=f"its base file 'configs/{name}' has moved: it is {new} now, which "):
        load_config("mine.yaml")


def test_the_commands_refuse_an_earlier_config_path_on_one_line(elsewhere, capsys):
    from training.exit.__main__ import main as exit_main
    from training.train.__main__ import main as train_main

    assert train_main(["--config", "configs/main.yaml"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "'configs/main.yaml' has moved: it is configs/train/main.yaml now, which python -m training.train reads")
    assert exit_main(["--config", "../configs/exit_2p.yaml"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "'../configs/exit_2p.yaml' has moved: it is ../configs/exit/exit_2p.yaml now, which python -m training.exit "
        "reads")


def test_a_file_of_ones_own_at_an_earlier_path_is_read_as_it_is(elsewhere):
    from training.sb3.config import load_config

    (elsewhere / "configs").mkdir()
    (elsewhere / "configs" / "main.yaml").write_text("name: mine\n")
    assert load_config("configs/main.yaml").name == "mine"
