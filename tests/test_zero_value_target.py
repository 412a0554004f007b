"""The search's value of the move played as a value target (``fit.search_value``): the search
reports each move's mean simulated value, self-play records that of the move it chose, the
fit learns the mix the key names, and a buffer written before the value was recorded still
loads and resumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from training.common.config import ConfigError
from training.zero.__main__ import main
from training.zero.config import load_config

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "zero" / "tiny.yaml")


def test_the_search_reports_each_moves_mean_simulated_value_and_nan_where_unvisited(monkeypatch):
    from test_gumbel_search import positions, rows, search

    gumbel = search(seed=4, simulations=16)
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    simulate = gumbel.simulate

    def recorded(roots, mes, of_root, actions, seeds):
        values = simulate(roots, mes, of_root, actions, seeds)
        seen.append((of_root.copy(), actions.copy(), values.copy()))
        return values

    monkeypatch.setattr(gumbel, "simulate", recorded)
    states = positions(6)
    result = gumbel.search(rows(states))
    total = np.zeros_like(result["q"])
    count = np.zeros_like(result["q"])
    for of_root, actions, values in seen:
        np.add.at(total, (of_root, actions), values)
        np.add.at(count, (of_root, actions), 1.0)
    assert np.array_equal(count, result["visits"])
    visited = count > 0
    assert np.allclose(result["q"][visited], total[visited] / count[visited])
    assert np.all(np.isnan(result["q"][~visited]))
    chosen = result["q"][np.arange(len(states)), result["action"]]
    assert np.all(np.isfinite(chosen))  # every root had two legal moves or more: its move was simulated


def test_self_play_records_the_search_value_of_every_move_it_chose(tmp_path):
    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0",
                 "--set", "decisions=100"]) == 0
    with np.load(run / "buffer" / "gen_00000.npz") as data:
        value, searched, mask = data["value"], data["search_value"], data["mask"]
    assert searched.shape == value.shape and np.all(np.isfinite(searched))
    forced = mask.sum(axis=1) == 1  # nothing simulated: the final reward stands in
    assert np.array_equal(searched[forced], value[forced])
    free = ~forced
    assert free.sum() > 10
    # the search's estimates, not the outcomes: they vary within a seat's game, the outcome does not
    assert not np.array_equal(searched[free], value[free])
    assert np.all(np.abs(searched) <= 2.0)


@pytest.mark.parametrize("weight, expected", [(0.0, 0.5), (1.0, -0.5), (0.5, 0.0)])
def test_the_value_head_learns_the_mix_of_outcome_and_search_value_the_key_names(weight, expected):
    import torch

    from training.zero.loop import fit_minibatches, forward, fresh_model

    config = load_config(TINY, ["seed=2", f"fit.search_value={weight}"])
    rng = np.random.default_rng(0)
    n = 64
    obs = rng.random((n, fresh_model(config).observation_space.shape[0])).astype(np.float32)
    mask = np.ones((n, 187), bool)
    data = {"obs": obs, "mask": mask, "policy": np.full((n, 187), 1 / 187, np.float32),
            "value": np.full(n, 0.5, np.float32), "search_value": np.full(n, -0.5, np.float32)}
    torch.manual_seed(0)
    policy = fresh_model(config).policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    fit_minibatches(policy, optimizer, data, 400, 32, 1.0, np.random.default_rng(1), None, config.fit.search_value)
    with torch.no_grad():
        values = forward(policy, torch.as_tensor(obs))[1].numpy()
    assert np.allclose(values, expected, atol=0.05)


def test_a_buffer_written_before_the_search_value_resumes_with_the_final_reward(tmp_path):
    from training.zero.loop import sample_arrays

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0",
                 "--set", "decisions=100"]) == 0
    path = run / "buffer" / "gen_00000.npz"
    with np.load(path) as data:
        old = {k: data[k] for k in data.files if k != "search_value"}
    with open(path, "wb") as f:
        np.savez(f, **old)
    with np.load(path) as data:
        arrays = sample_arrays(data)
    assert np.array_equal(arrays["search_value"], old["value"])
    assert main(["--resume", str(run), "--quiet", "--set", "decisions=900"]) == 0
    with np.load(run / "buffer" / "gen_00001.npz") as data:
        assert "search_value" in data.files


@pytest.mark.parametrize("value", ["-0.1", "1.5"])
def test_a_search_value_weight_outside_zero_to_one_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"fit\.search_value"):
        load_config(TINY, [f"fit.search_value={value}"])


def test_the_search_value_weight_is_part_of_the_run_and_not_changed_on_resume(tmp_path):
    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=50", "--set", "fit.search_value=0.5"]) == 0
    assert load_config(run / "config.yaml").fit.search_value == 0.5
    with pytest.raises(ConfigError, match=r"fit\.search_value"):
        from training.zero.config import load_resume_config

        load_resume_config(run, ["fit.search_value=0"])
