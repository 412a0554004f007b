"""The learning-budget track on the RLlib trainer (``python -m training.budget --config
configs/rllib/rllib_2p.yaml``): stopped by the learner's decisions (``stop.learner_steps``), each
seed's final weights scored (as a policy file), its curve from the training games. Needs the
``distributed`` extra (``make test-distributed``); skipped without Ray."""

from __future__ import annotations

import json
import signal

import pytest

pytest.importorskip("ray.rllib")

from benchmark_helpers import budget_protocol

from keltis_env.core.recorded_paths import recorded_text
from training.budget.track import BudgetRequest, run_budget

SMALL = ("resources.env_runners=0", "resources.envs_per_runner=2", "ppo.train_batch=400", "ppo.minibatch=200",
         "ppo.epochs=1", "model.hidden=[32]", "league.snapshot_every=1", "checkpoint_every=1")


@pytest.mark.slow
def test_an_rllib_budget_stops_at_the_learners_decisions_and_scores_each_seed(tmp_path):
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    budget_protocol(tmp_path / "protocol", deals=1)
    request = BudgetRequest(config="configs/rllib/rllib_2p.yaml", decisions=500, seeds=2, out=tmp_path / "out",
                            runs=tmp_path / "runs", workers=1, protocol=tmp_path / "protocol", overrides=SMALL,
                            progress=False)
    try:
        data, path = run_budget(request, "test")
    finally:
        for s, handler in saved.items():  # the run stops on SIGTERM with a checkpoint
            signal.signal(s, handler)
    assert data["algorithm"] == "rllib-ppo" and path.name == "rllib_2p-500.json"
    assert [s["seed"] for s in data["seeds"]] == [0, 1]
    for run in data["seeds"]:
        final = tmp_path / "runs" / f"seed-{run['seed']}" / "run" / "final_policy.zip"
        assert run["agent"] == recorded_text(f"ppo:{final}") and final.is_file()  # relative to the repository
        assert run["decisions"] >= 500 and run["teacher"] is None
        rows = (tmp_path / "runs" / f"seed-{run['seed']}" / "run" / "progress.csv").read_text().splitlines()
        header = rows[0].split(",")
        steps = [int(r.split(",")[header.index("learner_steps")]) for r in rows[1:]]
        env_steps = [int(r.split(",")[header.index("env_steps")]) for r in rows[1:]]
        assert steps[-1] == run["decisions"] and steps[-2] < 500, "it stopped at the first iteration past"
        assert all(s <= e for s, e in zip(steps, env_steps, strict=True)), "the learner makes some of the moves"
        for rung in data["rungs"]:
            s = run["scores"][rung]
            assert s["games"] == 2 and s["interval"][0] <= s["win_rate"] <= s["interval"][1]
    assert json.loads(path.read_text())["spread"].keys() == {"heuristic", "planner"}
