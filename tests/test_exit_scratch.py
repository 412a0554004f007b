"""Expert iteration from scratch (configs/exit/exit_scratch_2p.yaml): the recipe takes no
hand-written bot into training, and one round of it runs with a tiny network of random
weights while the plan model raises if anything calls it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_rules_search import forbid_the_plan_model

from keltis_env.bots import parse_spec
from keltis_env.policy import read_policy_info
from training.exit.__main__ import main
from training.exit.config import load_config
from training.imitate.demonstrations import load_demonstrations

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "exit" / "exit_scratch_2p.yaml"
#: the game's hand-written players and the observation feature made by one of them
HAND_WRITTEN = ("heuristic", "planner")


def test_the_scratch_recipe_takes_no_hand_written_bot_into_training():
    config = load_config(CONFIG)
    name, options = parse_spec(config.search.spec)
    assert name == "ismcts" and options["model"] == "rules" and options.get("rollout", "net") in ("net", "random")
    assert options.get("leaf", "value") in ("value", "score", "both")
    assert config.search.guided and config.search.first_round_guided  # every round's teacher is the rules search
    assert config.env.features == [] and config.label.opponent == ""  # no plan feature; self-play
    assert config.gate.player == "network"  # the gate plays the run's networks against each other
    info = read_policy_info(ROOT / config.init)
    assert info.features == () and "scratch" in info.recipe  # a network learned from random weights
    recipe = (ROOT / info.recipe).read_text()
    assert "No hand-written bot takes part in its" in recipe
    assert config.eval.opponent in HAND_WRITTEN  # the bots only measure


@pytest.fixture(scope="module")
def tiny_network(tmp_path_factory) -> Path:
    """A 2-player card-game policy of random weights with one hidden layer of 16 units and a
    score-margin value head, on the observation without features."""
    from sb3_contrib import MaskablePPO

    from training.imitate.network import export_policy
    from training.sb3.collector import BatchedSelfPlayVecEnv

    path = tmp_path_factory.mktemp("tiny") / "tiny.zip"
    venv = BatchedSelfPlayVecEnv(2, ["random"], workers=0, reward="score")
    try:
        model = MaskablePPO("MlpPolicy", venv, seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
        export_policy(model, path, "keltis", 2, (), value_reward="score")
    finally:
        venv.close()
    return path


def test_one_round_of_the_scratch_recipe_runs_without_the_plan_model(tmp_path, tiny_network, monkeypatch):
    spec = re.sub(r"iterations=\d+", "iterations=4", load_config(CONFIG).search.spec)
    forbid_the_plan_model(monkeypatch)
    out = tmp_path / "run"
    overrides = [f"init={tiny_network}", "rounds=1", "workers=1", "label.games=2", "label.shard_games=1",
                 f"search.spec={spec}", "fit.epochs=1", "fit.batch_size=64", "gate.games=2", "eval.games=2"]
    sets = [a for o in overrides for a in ("--set", o)]
    assert main(["--config", str(CONFIG), "--out", str(out), "--quiet", *sets]) == 0
    report = json.loads((out / "report.json").read_text())
    (round_0,) = report["rounds"]
    assert round_0["label"]["games"] == 2 and round_0["label"]["decisions"] > 0
    assert round_0["label"]["search"] == f"{spec},net={out / 'start.zip'}"
    assert round_0["gate"]["games"] == 2 and 0.0 <= round_0["fit"]["accuracy"] <= 1.0
    info = read_policy_info(out / "round_000" / "network.zip")
    assert info.features == () and info.value_reward == "score"
    meta = load_demonstrations(next((out / "round_000" / "labels").glob("shard_*.npz")))[1]
    assert "model=rules" in meta["teacher"] and meta["opponent"] == ""
