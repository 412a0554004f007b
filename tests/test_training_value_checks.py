"""Every training value is checked for range when the config is loaded, before a run folder
is made: an absurd step count, a network the machine cannot hold or a backend that cannot
run is refused with exit status 2 and one line, and nothing is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from training.common.config import MAX_INTEGER
from training.common.sections import MAX_LAYER_WIDTH, MAX_STEPS, MAX_TURNS
from training.sb3.config import load_config
from training.train.__main__ import main as train_main


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A config of every default, whose runs go to ``tmp_path / 'runs'``."""
    path = tmp_path / "c.yaml"
    path.write_text(f"name: checked\nruns_dir: {tmp_path / 'runs'}\n")
    return path


def _refused(config: Path, capsys: pytest.CaptureFixture[str], *overrides: str) -> str:
    argv = ["--config", str(config), "--no-progress"]
    for item in overrides:
        argv += ["--set", item]
    code = train_main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not (config.parent / "runs").exists(), "no run folder is made"
    return err


def test_total_timesteps_1e400_is_refused_before_a_run_folder_is_made(
        config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(config, capsys, "total_timesteps=1e400")
    assert f"total_timesteps must be <= {MAX_STEPS}" in err


@pytest.mark.parametrize("key", ["checkpoint_every", "pool.snapshot_every", "eval.every", "pretrain.anchor_steps"])
def test_step_periods_past_a_trillion_are_refused(config: Path, key: str) -> None:
    with pytest.raises(ValueError, match=f"{key} must be <= {MAX_STEPS}"):
        load_config(config, [f"{key}=1e13"])


def test_any_integer_key_past_64_bits_is_refused(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(config, capsys, "ppo.batch_size=1e400")
    assert f"ppo.batch_size must be <= {MAX_INTEGER}" in err


def test_max_turns_past_the_kernels_range_is_refused(config: Path) -> None:
    with pytest.raises(ValueError, match=f"env.max_turns must be <= {MAX_TURNS}"):
        load_config(config, ["env.max_turns=1e12"])


def test_network_layer_of_a_billion_units_is_refused_before_a_run_folder_is_made(
        config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(config, capsys, "network.net_arch=[1000000000]")
    assert f"a hidden layer may have at most {MAX_LAYER_WIDTH:,}" in err


def test_network_larger_than_the_machine_is_refused(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(config, capsys, f"network.net_arch={[MAX_LAYER_WIDTH] * 40}")  # 10 TiB of weights and state
    assert "GiB for its weights, gradients and optimiser state" in err and "use smaller layers" in err


def test_compiled_collector_without_numba_is_refused_before_a_run_folder_is_made(
        config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # importlib finds no numba
    err = _refused(config, capsys, "collector_backend=compiled")
    assert "collector_backend: compiled cannot run this config" in err and "numba" in err


def test_usual_values_still_pass(config: Path) -> None:
    loaded = load_config(config, ["total_timesteps=3e6", "network.net_arch=[256, 256]", "env.max_turns=500"])
    assert loaded.total_timesteps == 3_000_000 and loaded.network.net_arch == [256, 256]
