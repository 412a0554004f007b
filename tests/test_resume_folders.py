"""``--resume`` of ``python -m training.train`` and ``python -m training.rllib`` on a folder of
another command's run (expert iteration, a recipe, an evaluation, a ladder run, a refit, the
other trainer's run) is refused with one line that says what the folder is and which command
resumes it (:func:`training.common.folders.check_resume_folder`), exit status 2, nothing
changed in the folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _folders(root: Path) -> dict[str, tuple[Path, str]]:
    """Folders as the other commands leave them: kind -> (folder, the words that name it)."""
    from training.exit.config import load_config as load_exit
    from training.rllib.config import RLlibConfig
    from training.sb3.config import TrainConfig

    def folder(name: str, files: dict[str, str]) -> Path:
        path = root / name
        path.mkdir()
        for file, text in files.items():
            (path / file).write_text(text)
        return path

    exit_run = folder("exit", {"config.yaml": load_exit(ROOT / "configs" / "exit" / "exit_tiny.yaml").to_yaml()})
    recipe = folder("recipe", {"recipe.json": json.dumps({"recipe": "configs/recipes/dice_3p.yaml", "tiny": True})})
    games = folder("games", {"run.json": json.dumps({"kind": "keltis-evaluation-run"})})
    ladder = folder("ladder", {"run.json": json.dumps({"kind": "keltis-ladder-run"})})
    refit = folder("refit", {"fit.json": "{}", "network.zip": ""})
    sb3 = folder("sb3", {"config.yaml": TrainConfig().to_yaml()})
    rllib = folder("rllib", {"config.yaml": yaml.safe_dump(RLlibConfig().to_dict(), sort_keys=False)})
    return {
        "exit": (exit_run, f"it is an expert-iteration run; resume it with python -m training.exit "
                           f"--resume {exit_run}"),
        "recipe": (recipe, f"it is the work folder of a recipe run; resume it with python -m training.recipe "
                           f"--resume {recipe}"),
        "evaluation": (games, f"it is an evaluation's games; resume it with keltis evaluate AGENTS... "
                              f"--resume {games}"),
        "ladder": (ladder, f"it is a ladder run's games; resume it with keltis ladder AGENT --track TRACK --resume "
                           f"{ladder}"),
        "refit": (refit, "it is the network of a refit (python -m training.exit --refit); no command resumes it"),
        "sb3": (sb3, f"it is an SB3 training run; resume it with python -m training.train --resume {sb3}"),
        "rllib": (rllib, f"it is an RLlib training run; resume it with python -m training.rllib --resume {rllib}"),
    }


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("kind", ["exit", "recipe", "evaluation", "ladder", "refit", "rllib"])
def test_train_resume_of_another_commands_run_names_it_and_its_resume_command(tmp_path, capsys, kind):
    from training.train.__main__ import main

    folder, words = _folders(tmp_path)[kind]
    before = _snapshot(folder)
    assert main(["--resume", str(folder), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{folder} is not an SB3 training run, which python -m training.train --resume takes: {words}" in err, err
    assert "last.zip" not in err
    assert _snapshot(folder) == before


def test_train_resume_of_a_folder_of_no_run_says_what_it_holds(tmp_path, capsys):
    from training.train.__main__ import main

    assert main(["--resume", str(tmp_path / "nothing"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "there is no folder" in err and "python -m training.train --resume takes an SB3 training run" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--resume", str(empty), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no checkpoints/last.zip there, and it is no SB3 training run: it holds no config.yaml" in err, err


@pytest.mark.parametrize("kind", ["exit", "recipe", "evaluation", "ladder", "refit", "sb3"])
def test_rllib_resume_of_another_commands_run_names_it_instead_of_an_unknown_key(tmp_path, capsys, kind):
    from training.rllib.__main__ import main

    folder, words = _folders(tmp_path)[kind]
    before = _snapshot(folder)
    assert main(["--resume", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{folder} is not an RLlib training run, which python -m training.rllib --resume takes: {words}" in err
    assert "unknown key" not in err
    assert _snapshot(folder) == before


def test_the_folder_check_lives_in_training_common():
    import training.common.folders as folders

    assert folders.check_resume_folder.__module__ == "training.common.folders"
    assert not (ROOT / "training" / "exit" / "folders.py").exists()
