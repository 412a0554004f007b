"""Expert iteration (``python -m training.exit``): a tiny run of two rounds and its resume
stage by stage, a run killed in the middle of labelling that resumes to the same shards as
an uninterrupted one, a gate and an evaluation stopped after their first game that resume
to the same results, a refit of a run's labels with other fit settings, and the config's
refusals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from training.common.config import ConfigError
from training.exit.__main__ import main
from training.exit.config import load_config, load_resume_config
from training.exit.label import label_round
from training.exit.loop import Run
from training.imitate.demonstrations import load_demonstrations

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "exit" / "exit_tiny.yaml"


def shards(folder: Path) -> dict[str, tuple[np.ndarray, ...]]:
    return {p.name: load_demonstrations(p)[0].parts() for p in sorted(folder.glob("shard_*.npz"))}


def test_two_tiny_rounds_then_resume_stage_by_stage(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--config", str(TINY), "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert [r["round"] for r in report["rounds"]] == [0, 1]
    for r in report["rounds"]:
        assert r["label"]["decisions"] > 0 and r["label"]["games"] == 4 and r["label"]["truncated_games"] == 0
        assert r["gate"]["games"] == 2 and r["gate"]["seed"] == 1000 + r["round"]
        finished = r["gate"]["finished"]  # the gate decides on the games that ended by the rules
        assert finished["games"] + finished["truncated_games"] == 2
        assert r["gate"]["kept"] == (finished["win_rate"] > 0.5 if finished["games"] else r["gate"]["win_rate"] > 0.5)
        assert r["eval"]["network"]["7"]["finished"]["games"] + r["eval"]["network"]["7"]["finished"][
            "truncated_games"] == 2
        assert set(r["eval"]["network"]) == {"7"}
        assert 0.0 <= r["fit"]["accuracy"] <= 1.0
        assert r["fit"]["value_loss_mean_guess"] > 0.0  # the yardstick of the value loss: wins and losses differ
    assert report["rounds"][1]["fit"]["rounds"] == [0, 1]  # the replay window: both rounds' labels
    fit = report["rounds"][1]["fit"]  # one shard of the two rounds' 8 held out whole, the rest fitted
    assert fit["held_out_shards"] == 1 and fit["shards"] == 8
    assert fit["decisions_fitted"] + fit["decisions"] == sum(r["label"]["decisions"] for r in report["rounds"])
    assert report["baseline"]["network"]["7"]["games"] == 2
    for name in ("report.md", "curve.png", "config.yaml", "command.txt", "start.zip", "round_001/network.zip"):
        assert (out / name).is_file(), name
    assert "| 1 |" in (out / "report.md").read_text()

    # a session that ended in round 1's labelling: a shard and every later stage lost
    r1 = out / "round_001"
    kept_shards = shards(out / "round_000" / "labels")
    before = {p: p.stat().st_mtime_ns for p in [out / "round_000" / "network.zip", *(out / "round_000").glob("*.json")]}
    lost = sorted((r1 / "labels").glob("shard_*.npz"))[-1]
    expected = load_demonstrations(lost)[0].parts()
    for path in [lost, r1 / "label.json", r1 / "fit.json", r1 / "gate.json", *r1.glob("eval_*.json")]:
        path.unlink()
    assert main(["--resume", str(out), "--quiet", "--set", "rounds=2"]) == 0
    assert "labelled already" in capsys.readouterr().out
    assert all(p.stat().st_mtime_ns == t for p, t in before.items()), "a finished stage of round 0 was redone"
    for a, b in zip(load_demonstrations(lost)[0].parts(), expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert kept_shards.keys() == shards(out / "round_000" / "labels").keys()
    again = json.loads((out / "report.json").read_text())
    assert [sorted(r) for r in again["rounds"]] == [sorted(r) for r in report["rounds"]]
    assert again["rounds"][1]["label"]["decisions"] == report["rounds"][1]["label"]["decisions"]


def test_games_cut_at_max_turns_give_no_labels(tmp_path):
    full = load_config(TINY, ["label.games=2"])
    totals = label_round(full, 0, full.search_spec(full.init), tmp_path / "full", progress=False)
    assert totals["truncated_games"] == 0 and totals["decisions"] > 0
    cut = load_config(TINY, ["label.games=2", "env.max_turns=3"])  # every dice game is cut at its third turn
    totals = label_round(cut, 0, cut.search_spec(cut.init), tmp_path / "cut", progress=False)
    assert totals["truncated_games"] == 2 and totals["decisions"] == 0
    for path in sorted((tmp_path / "cut").glob("shard_*.npz")):
        data, meta = load_demonstrations(path)
        assert len(data) == 0 and meta["truncated_games"] == 1
        assert data.obs.shape[1] == load_demonstrations(tmp_path / "full" / path.name)[0].obs.shape[1]


def test_a_fit_with_value_coef_0_leaves_the_value_head_as_it_was(tmp_path):
    """fit.value_coef 0 (configs/exit/exit_2p_both.yaml): the policy is fitted to the labels and
    the value head, which the search's leaves read, keeps every weight."""
    import torch
    from sb3_contrib import MaskablePPO

    from training.exit.fit import fit_round
    from training.imitate.network import VALUE_LAYERS

    config = load_config(TINY, ["label.games=2", "fit.value_coef=0.0"])
    label_round(config, 0, config.search_spec(config.init), tmp_path / "labels", progress=False)
    out = tmp_path / "fitted.zip"
    fit_round(config, 0, ROOT / config.init, sorted((tmp_path / "labels").glob("shard_*.npz")), out,
              log=lambda text: None)
    before, after = (MaskablePPO.load(p, device="cpu").policy.state_dict() for p in (ROOT / config.init, out))
    values = [name for name in before if name.startswith(tuple(f"{layer}." for layer in VALUE_LAYERS))]
    assert values and all(torch.equal(after[name], before[name]) for name in values)
    assert any(not torch.equal(after[name], value) for name, value in before.items() if name not in values)


def test_a_run_stopped_in_a_gate_or_an_evaluation_plays_only_the_missing_games(tmp_path):
    out = tmp_path / "run"
    settings = ["--set", "rounds=1", "--set", "eval.baseline=false"]
    assert main(["--config", str(TINY), "--out", str(out), "--quiet", *settings]) == 0
    r0 = out / "round_000"
    results = {name: json.loads((r0 / name).read_text()) for name in ("gate.json", "eval_network_seed7.json")}
    kept = {}
    for name in results:  # the stage stopped after its first game: its result and its second game lost
        (r0 / name).unlink()
        games = r0 / name.replace(".json", "_games") / "games.jsonl"
        lines = games.read_text().splitlines(keepends=True)
        assert len(lines) == 2
        kept[name] = lines
        games.write_text(lines[0])
    assert main(["--resume", str(out), "--quiet"]) == 0
    for name, before in results.items():
        after = json.loads((r0 / name).read_text())
        for timing in ("seconds", "ms_per_decision", "opponent_ms_per_decision"):  # the second game's were taken again
            before.pop(timing, None), after.pop(timing, None)
        assert after == before, name
        games = (r0 / name.replace(".json", "_games") / "games.jsonl").read_text().splitlines(keepends=True)
        assert games[0] == kept[name][0] and len(games) == 2, "a game kept from before was played again"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_run_killed_while_labelling_resumes_to_the_same_shards(tmp_path, sig):
    out = tmp_path / "run"
    settings = ["--set", "rounds=1", "--set", "eval.baseline=false", "--set", "label.games=24",
                "--set", "workers=2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "training.exit", "--config", str(TINY), "--out", str(out),
                             "--quiet", *settings], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    labels = out / "round_000" / "labels"
    deadline = time.monotonic() + 120
    while not list(labels.glob("shard_*.npz")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    done = len(list(labels.glob("shard_*.npz")))
    assert 1 <= done < 24, f"the run was not stopped in the middle of labelling ({done} shards)"
    assert not (out / "round_000" / "label.json").exists()
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM and "--resume" in err
    assert main(["--resume", str(out), "--quiet"]) == 0
    assert not list(labels.glob(".*tmp*")), "a temporary file of an interrupted write is left"
    config = load_config(TINY, settings[1::2])
    fresh = tmp_path / "fresh"
    label_round(config, 0, Run(config, out).search_spec(out / "start.zip", 0), fresh, progress=False)
    resumed, uninterrupted = shards(labels), shards(fresh)
    assert resumed.keys() == uninterrupted.keys() and len(resumed) == 24
    for name in resumed:
        for a, b in zip(resumed[name], uninterrupted[name], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("overrides", "message"), [
    (["label.bogus=1"], "unknown key 'label.bogus'"),
    (["label.target=move"], "label.target is no longer a key; it is label.target_temperature (0: the search's move)"),
    (["label.workers=2"], "label.workers is no longer a key; it is workers now"),
    (["start=policies/dice_2p.zip"], "start is no longer a key; it is init now"),
    (["label.games=0"], "label.games must be >= 1"),
    (["label.games=1e7"], "label.games must be <= 1000000"),
    (["rounds=2.5"], "rounds must be an integer"),
    (["gate.seed=6"], "must be disjoint from the reporting seeds"),
    (["eval.seeds=[]"], "eval.seeds must list at least one"),
    (["eval.seeds=[7, 7]"], "different seeds"),
    (["init=policies/keltis_2p.zip"], "keltis policy"),
    (["init=no/such.zip"], "no policy file"),
    (["env.game=keltis", "init=policies/keltis_2p.zip", "eval.opponent=heuristic"],
     "value head estimates the 'score' reward; env.reward is 'win'"),
    (["env.game=keltis", "env.reward=score", "init=policies/keltis_2p.zip", "eval.opponent=heuristic"],
     "env.features is []"),
    (["label.opponent=nobody"], "label.opponent: unknown agent 'nobody'"),
    (["search.spec=ismcts:depth=-1"], "depth must be an integer"),
    (["label.target_temperature=-1"], "label.target_temperature must be >= 0.0"),
    (["fit.learning_rate=.nan"], "finite"),
    (["search.spec=heuristic"], "bot 'heuristic' has no option 'net'"),
    (["search.spec=heuristic", "search.guided=false"], "label.target_temperature > 0 needs a search"),
    (["fit.augment=colours"], "fit.augment: the game 'dice' has no relabelling 'colours'; it has none: give none"),
])
def test_bad_configs_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(TINY, overrides)


def test_a_resume_may_change_only_how_much_more_to_do(tmp_path, capsys):
    (tmp_path / "config.yaml").write_text(load_config(TINY).to_yaml())
    with pytest.raises(ConfigError, match=re.escape("--resume cannot change 'label.target_temperature'")):
        load_resume_config(tmp_path, ["label.target_temperature=0"])
    assert load_resume_config(tmp_path, ["rounds=5"]).rounds == 5
    with pytest.raises(ConfigError, match=r"there is no folder .*nothing; python -m training.exit --resume takes an "
                                          r"expert-iteration run"):
        load_resume_config(tmp_path / "nothing")
    assert main(["--config", str(TINY), "--out", str(tmp_path), "--set", "rounds=3", "--quiet"]) == 2
    assert "holds a run of another config" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "configs" / "exit").glob("*.yaml")))
def test_the_shipped_configs_load_with_a_guided_search(name):
    config = load_config(ROOT / "configs" / "exit" / f"{name}.yaml")
    assert config.name == name and config.search.guided
    assert config.gate.games >= 400 or name == "exit_tiny"
    assert config.search_spec(config.init).startswith(config.search.spec)
    assert config.search_spec(config.init).endswith(f"net={config.init}")


def test_the_curve_marks_whole_rounds_only():
    from training.exit.report import curve_figure

    point = {"win_rate": 0.5, "win_rate_ci": [0.45, 0.55]}
    data = {"name": "x", "game": "keltis", "num_players": 2, "opponent": "ismcts", "seeds": [7],
            "baseline": {"network": {"7": point}},
            "rounds": [{"round": k, "eval": {"network": {"7": point}}, "gate": point} for k in range(2)]}
    fig = curve_figure(data)
    try:
        ax = fig.axes[0]
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_a_refit_fits_the_start_network_to_every_labelled_round_with_other_fit_settings(tmp_path, capsys):
    """``--refit RUN --out DIR``: the run's start network fitted afresh to the labels of all its
    labelled rounds (the loop's held-out shards), with fit settings the run did not use; the
    same settings make the same network, and what would change the labels is refused."""
    import torch
    from sb3_contrib import MaskablePPO

    run = tmp_path / "run"
    assert main(["--config", str(TINY), "--out", str(run), "--quiet", "--set", "rounds=1",
                 "--set", "label.games=2"]) == 0
    labelled = json.loads((run / "round_000" / "label.json").read_text())["decisions"]
    args = ["--refit", str(run), "--set", "fit.epochs=2", "--set", "fit.learning_rate=1e-3", "--set", "seed=5"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "refitted on rounds [0]" in capsys.readouterr().out
    fit = json.loads((tmp_path / "a" / "fit.json").read_text())
    assert fit["rounds"] == [0] and fit["seed"] == 5 and fit["fit"]["epochs"] == 2
    assert fit["fit"]["learning_rate"] == 1e-3 and fit["from"] == str(run / "start.zip")
    assert fit["decisions_fitted"] + fit["decisions"] == labelled and fit["held_out_shards"] == 1
    start, a = (MaskablePPO.load(p, device="cpu").policy.state_dict()
                for p in (run / "start.zip", tmp_path / "a" / "network.zip"))
    assert any(not torch.equal(a[name], value) for name, value in start.items())
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    b = MaskablePPO.load(tmp_path / "b" / "network.zip", device="cpu").policy.state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)

    refusals = [
        (["--refit", str(run), "--out", str(tmp_path / "c"), "--set", "label.games=3"], "cannot change 'label.games'"),
        (["--refit", str(run), "--out", str(tmp_path / "a")], "holds a refit already"),
        (["--refit", str(run), "--out", str(run / "round_000")], "lies in the run folder"),
        (["--refit", str(run)], "needs --out"),
        (["--refit", str(tmp_path / "a"), "--out", str(tmp_path / "d")],
         "is not an expert-iteration run, which python -m training.exit --refit takes: it is the network of a refit "
         "(python -m training.exit --refit); no command resumes it"),
        (["--refit", str(run), "--config", str(TINY), "--out", str(tmp_path / "e")], "one of --config"),
    ]
    for argv, message in refusals:
        assert main(argv) == 2
        assert message in capsys.readouterr().err, message
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()
    assert json.loads((tmp_path / "a" / "fit.json").read_text()) == fit


def _other_runs(root: Path) -> dict[str, tuple[Path, str]]:
    """Folders of the other commands' runs, as each command leaves them: kind -> (folder, the
    words that name it and the command that resumes it)."""
    import yaml

    from training.rllib.config import RLlibConfig
    from training.sb3.config import TrainConfig

    made = {}
    sb3 = root / "sb3-20250101-120000"
    (sb3 / "checkpoints").mkdir(parents=True)
    (sb3 / "config.yaml").write_text(TrainConfig().to_yaml())
    made["sb3"] = (sb3, f"it is an SB3 training run; resume it with python -m training.train --resume {sb3}")
    rllib = root / "rllib"
    rllib.mkdir()
    (rllib / "config.yaml").write_text(yaml.safe_dump(RLlibConfig().to_dict(), sort_keys=False))
    made["rllib"] = (rllib, f"it is an RLlib training run; resume it with python -m training.rllib --resume {rllib}")
    recipe = root / "recipe"
    recipe.mkdir()
    (recipe / "recipe.json").write_text(json.dumps({"recipe": "configs/recipes/dice_3p.yaml", "tiny": True}))
    made["recipe"] = (recipe, f"it is the work folder of a recipe run; resume it with python -m training.recipe "
                              f"--resume {recipe}")
    games = root / "games"
    games.mkdir()
    (games / "run.json").write_text(json.dumps({"kind": "keltis-evaluation-run", "agents": ["random", "random"]}))
    made["evaluation"] = (games, f"it is an evaluation's games; resume it with keltis evaluate AGENTS... --resume "
                                 f"{games}")
    empty = root / "empty"
    empty.mkdir()
    made["empty"] = (empty, "it holds no config.yaml, recipe.json or run.json")
    imitation = root / "imitation"
    imitation.mkdir()
    (imitation / "config.yaml").write_text("seed: 0\nfit: {epochs: 2}\n")
    made["other config"] = (imitation, "its config.yaml is no training run's that a command resumes")
    broken = root / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text("rounds: [1\n")
    made["broken config"] = (broken, "its config.yaml is unreadable or not a mapping of keys")
    a_file = root / "a_file"
    a_file.write_text("x")
    made["a file"] = (a_file, "it is a file, not a folder")
    return made


@pytest.mark.parametrize("flag", ["--resume", "--refit"])
def test_exit_resume_on_a_folder_that_is_not_an_expert_iteration_run_says_what_it_is(tmp_path, capsys, flag):
    for kind, (folder, words) in _other_runs(tmp_path).items():
        argv = [flag, str(folder), "--quiet"] + (["--out", str(tmp_path / "refit")] if flag == "--refit" else [])
        assert main(argv) == 2, kind
        err = capsys.readouterr().err
        assert f"{folder} is not an expert-iteration run, which python -m training.exit {flag} takes: {words}" in err
        assert "unknown key" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "refit").exists()


def test_exit_resume_still_takes_an_expert_iteration_run_folder(tmp_path):
    from training.common.folders import check_resume_folder, run_kind

    (tmp_path / "config.yaml").write_text(load_config(TINY).to_yaml())
    assert run_kind(tmp_path).key == "exit" and check_resume_folder(tmp_path, "exit") == tmp_path
    assert load_resume_config(tmp_path).rounds == load_config(TINY).rounds


def test_recipe_resume_on_a_folder_that_is_not_a_recipe_run_says_what_it_is(tmp_path, capsys):
    from training.recipe.__main__ import main as recipe_main

    exit_run = tmp_path / "exit_run"
    exit_run.mkdir()
    (exit_run / "config.yaml").write_text(load_config(TINY).to_yaml())
    cases = {kind: found for kind, found in _other_runs(tmp_path).items() if kind != "recipe"}
    cases["exit"] = (exit_run, f"it is an expert-iteration run; resume it with python -m training.exit --resume "
                               f"{exit_run}")
    for kind, (folder, words) in cases.items():
        assert recipe_main(["--resume", str(folder), "--no-progress"]) == 2, kind
        err = capsys.readouterr().err
        assert f"{folder} is not the work folder of a recipe run, which python -m training.recipe --resume takes: " \
               f"{words}" in err, err
    assert recipe_main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "there is no folder" in capsys.readouterr().err


@pytest.mark.parametrize(("marker", "message"), [
    ("{", "recipe.json is unreadable"),
    ('{"recipe": 3, "tiny": false}', "is not a recipe run's: it must hold the recipe file"),
    ('{"recipe": "configs/recipes/dice_3p.yaml"}', "is not a recipe run's"),
    ("[1, 2]", "is not a recipe run's"),
])
def test_recipe_resume_with_a_broken_recipe_json_names_the_file(tmp_path, capsys, marker, message):
    from training.recipe.__main__ import main as recipe_main

    (tmp_path / "recipe.json").write_text(marker)
    assert recipe_main(["--resume", str(tmp_path), "--no-progress"]) == 2
    assert message in capsys.readouterr().err
