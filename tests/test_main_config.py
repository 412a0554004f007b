"""``make train``'s config (the Makefile's ``CONFIG``, ``configs/train/main.yaml``): a fixed budget of
learner decisions with ``max_minutes`` only as a safety stop, a final report of 1,000 games
against ``heuristic``, ``planner`` and the run's own warm start, and, shrunk to seconds, a run
of it end to end: the plan feature, the planner's imitation and a league whose fixed opponent
is the shipped 2-player policy (a network that sees the same feature)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def make_train_config() -> Path:
    match = re.search(r"^CONFIG \?= (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, "the Makefile names make train's config as CONFIG ?= ..."
    return ROOT / match.group(1)


def test_make_train_runs_a_fixed_budget_of_decisions_and_reports_1000_games_per_opponent():
    from training.sb3.config import load_config

    path = make_train_config()
    assert path == ROOT / "configs" / "train" / "main.yaml"
    config = load_config(path)
    assert config.total_timesteps == 2_500_000
    assert config.max_minutes >= 15, "a safety stop, beyond the budget's time on a 2-core machine"
    assert config.env.num_players == 2 and config.env.features == ["plan"]
    assert config.env.reward == "shaped", "PPO learns on the score margin's change after every move"
    assert config.record.teacher == "planner" and config.init == ""
    assert config.eval.final_games == 1000 and config.eval.warm_start
    assert config.eval.opponents == ["heuristic", "planner"] and config.eval.best_by == "planner"
    # the best checkpoint is chosen among few candidates, each on 1,000 selection games against
    # planner; heuristic, which does not choose, is played on fewer
    assert config.eval.every == 500_000 and config.eval.games == 1000
    assert config.eval.games_by == {"heuristic": 400}
    assert set(config.pool.weights) == {"planner", "ppo:policies/keltis_2p.zip", "self"}


@pytest.mark.slow
def test_make_train_config_runs_end_to_end_shrunk_to_seconds(tmp_path):
    from training.train.__main__ import main

    overrides = ["total_timesteps=1024", "n_envs=4", "ppo.n_steps=128", "ppo.batch_size=256", "workers=0",
                 "checkpoint_every=512", "pool.snapshot_every=512", "record.games=4", "fit.epochs=1",
                 "pretrain.anchor_steps=512", "eval.every=512", "eval.games=6", "eval.games_by.heuristic=4",
                 "eval.final_games=4",
                 f"runs_dir={tmp_path}"]
    assert main(["--config", str(make_train_config()), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    report = json.loads((run / "report.json").read_text())
    assert report["timesteps"] >= 1024
    assert report["config"]["pool"]["weights"]["ppo:policies/keltis_2p.zip"] == 0.2
    assert set(report["results"]) == {"heuristic", "planner", "warm start"}
    assert all(result["games"] == 4 for result in report["results"].values())
    periodic = [line.split(",") for line in (run / "eval.csv").read_text().splitlines()[1:]]
    assert {(row[2], row[3]) for row in periodic} == {("heuristic", "4"), ("planner", "6")}
