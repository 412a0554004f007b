"""User errors that once ended in a traceback end in one line naming the problem: a game
record nested too deeply, an agent the environment does not have, training without
tensorboard installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from keltis_env import keltis_dice_v0, keltis_v0
from keltis_env.cli import main as keltis_main
from keltis_env.core.errors import AgentError, RecordError
from keltis_env.core.game import load_record
from keltis_env.core.record import Record

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def deep_record(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    depth = 100_000
    path.write_text('{"format": "keltis-record", "setup": ' + "[" * depth + "]" * depth + "}")
    return path


def test_deeply_nested_record_is_refused_without_recursion_error(deep_record: Path) -> None:
    with pytest.raises(RecordError, match="nested too deeply"):
        load_record(deep_record)
    with pytest.raises(RecordError, match="nested too deeply"):
        Record.load(deep_record)


def test_replay_of_deeply_nested_record_prints_one_line(deep_record: Path, capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert keltis_main(["replay", str(deep_record)]) == 2
    err = capsys.readouterr().err
    assert err == f"keltis replay: error: {deep_record} is not a game record: its JSON is nested too deeply\n"


@pytest.mark.parametrize("module", [keltis_v0, keltis_dice_v0])
@pytest.mark.parametrize("method", ["observe", "action_space", "observation_space"])
def test_unknown_agent_is_named_with_the_agents_that_exist(module: object, method: str) -> None:
    env = module.env(num_players=3)  # type: ignore[attr-defined]
    env.reset(seed=1)
    for target in (env, env.unwrapped):
        with pytest.raises(AgentError) as info:
            getattr(target, method)("player_9")
        assert str(info.value) == "unknown agent 'player_9'; the agents are player_0, player_1, player_2"
        # still what a dict of agents raises, and what PettingZoo's classic envs raise (ValueError)
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    env.observe("player_2")  # the agents that exist still work


def test_training_without_tensorboard_says_which_extra_before_making_a_run_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("stable_baselines3")
    from training.train.__main__ import main

    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    runs = tmp_path / "runs"
    smoke = ROOT / "configs" / "train" / "smoke.yaml"
    code = main(["--config", str(smoke), "--set", f"runs_dir={runs}", "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs tensorboard: pip install 'keltis-rl[train]'" in err
    assert not runs.exists()  # nothing made
    run = tmp_path / "old-run"
    (run / "checkpoints").mkdir(parents=True)
    assert main(["--resume", str(run), "--no-progress"]) == 2
    assert "needs tensorboard" in capsys.readouterr().err
    assert [p.name for p in run.rglob("*")] == ["checkpoints"]  # nothing changed
