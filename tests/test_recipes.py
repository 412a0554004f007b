"""Recipes (``configs/recipes/``, ``python -m training.recipe``): every shipped policy is the
output of exactly one recipe, the chain of recipes starts from files that recipes make, and
every recipe runs end to end at a tiny scale, its policy naming the recipe that made it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from training.common.config import ConfigError
from training.recipe.__main__ import main
from training.recipe.recipe import inputs, load_recipe

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted((ROOT / "configs" / "recipes").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # recipes name files from the project root


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _outputs() -> dict[str, list[str]]:
    made: dict[str, list[str]] = {}
    for path in RECIPES:
        made.setdefault(load_recipe(path.relative_to(ROOT)).output, []).append(path.name)
    return made


def test_every_shipped_policy_is_the_output_of_exactly_one_recipe():
    made = _outputs()
    for policy in sorted((ROOT / "policies").glob("*.zip")):
        name = str(policy.relative_to(ROOT))
        assert len(made.get(name, [])) == 1, f"{name} is made by {made.get(name, [])}: it needs exactly one recipe"
    assert all(len(recipes) == 1 for recipes in made.values()), made
    assert all((ROOT / output).is_file() for output in made), "a recipe names a file that is not shipped"


def test_every_frozen_ladder_policy_has_a_recipe_or_is_a_shipped_policy():
    made = _outputs()
    shipped = {_sha(p) for p in (ROOT / "policies").glob("*.zip")}
    for policy in sorted((ROOT / "benchmarks" / "v1" / "policies").glob("*.zip")):
        name = str(policy.relative_to(ROOT))
        assert name in made or _sha(policy) in shipped, f"{name}: no recipe makes it, nor is it a shipped policy"


def test_the_chain_of_recipes_starts_from_files_recipes_make():
    """A policy file a recipe starts from (init, a teacher, a search's network) is another
    recipe's output: the chain rebuilds everything from the rules and the bots."""
    made = _outputs()
    for path in RECIPES:
        recipe = load_recipe(path.relative_to(ROOT))
        for needed in inputs(recipe):
            if needed.endswith(".zip"):
                assert needed in made and needed != recipe.output, f"{path.name} starts from {needed}: no recipe"
        text = path.read_text()
        for policy in made:  # policies named inside agent specs too (ismcts:net=PATH)
            if f"net={policy}" in text:
                assert policy != recipe.output


def test_keltis_policy_shows_the_recipe_of_a_shipped_policy(capsys):
    from keltis_env.cli import main as keltis

    assert keltis(["policy", "policies/keltis_3p.zip", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"] == "configs/recipes/keltis_3p.yaml"


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_recipe_runs_end_to_end_at_a_tiny_scale(path, tmp_path, capsys):
    from keltis_env.policy import read_policy_info

    recipe = path.relative_to(ROOT)
    work = tmp_path / "work"
    assert main([str(recipe), "--tiny", "--work", str(work), "--no-progress"]) == 0
    info = read_policy_info(work / "policy.zip")
    made = load_recipe(recipe)
    assert info.recipe == str(recipe) and (info.game, info.num_players) == (made.game, made.num_players)
    shipped = read_policy_info(made.output)
    assert (info.features, info.symmetry) == (shipped.features, shipped.symmetry)
    for stage in made.stages:
        assert (work / stage.name / "done.json").is_file()
    # a rerun skips every finished stage
    capsys.readouterr()
    assert main([str(recipe), "--tiny", "--work", str(work), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert all(f"{stage.name}: done already" in out for stage in made.stages)


def test_a_stopped_recording_resumes_with_the_seeds_it_lacks(tmp_path, capsys):
    recipe = "configs/recipes/keltis_3p.yaml"
    work = tmp_path / "work"
    assert main([recipe, "--tiny", "--work", str(work), "--no-progress"]) == 0
    first = (work / "demos" / "seed_10.npz").read_bytes()
    (work / "demos" / "seed_11.npz").unlink()
    for stage in ("demos", "policy"):
        (work / stage / "done.json").unlink()
    assert main(["--resume", str(work), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "recording seed_11.npz" in out and "recording seed_10.npz" not in out.split("policy: fit")[-1]
    assert (work / "demos" / "seed_10.npz").read_bytes() == first


def test_bad_recipes_are_refused_naming_what_is_wrong(tmp_path, capsys):
    def refused(text: str, message: str) -> None:
        path = tmp_path / "r.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_recipe(path)

    head = "output: x.zip\ngame: keltis\nplayers: 2\n"
    refused(head + "stages: []\n", "at least one stage")
    refused(head + "stages:\n  - bake: {name: a}\n", r"exactly one kind of stage \(record, fit")
    refused(head + "stages:\n  - fit: {name: a, data: [b]}\n", "'b' is neither an earlier stage nor a file")
    refused(head + "stages:\n  - fit: {name: a, data: [b]}\n  - record: {name: b}\n", "a later stage")
    refused(head + "stages:\n  - record: {name: a, epochs: 3}\n", "unknown key 'epochs'")
    refused(head + "stages:\n  - record: {name: a}\n  - fit: {name: a, data: [a]}\n", "named twice")
    refused("game: keltis\nplayers: 2\nstages: [{record: {name: a}}]\n", "has no 'output'")
    path = tmp_path / "old.yaml"
    path.write_text(head + "stages:\n  - record: {name: a, set: {pretrain.games: 3}}\n")
    assert main([str(path), "--tiny", "--work", str(tmp_path / "w"), "--no-progress"]) == 2
    assert "pretrain.games is no longer a key; it is record.games now" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path)]) == 2
    assert "not the work folder of a recipe run" in capsys.readouterr().err


def test_the_budget_track_takes_a_recipe_file_by_its_sb3_run():
    from training.budget.runs import read_training_config

    trained = read_training_config("configs/recipes/dice_3p.yaml")
    assert (trained.algorithm, trained.name, trained.game, trained.players) == ("sb3", "dice_3p", "dice", 3)
    with pytest.raises(ConfigError, match=r"has no train stage: the budget track trains an SB3 run"):
        read_training_config("configs/recipes/keltis_3p.yaml")
