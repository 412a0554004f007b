"""``python -m training.imitate value`` (:func:`training.imitate.network.fit_value`): the value
head of a policy file fitted afresh to recorded final rewards, its policy left as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from training.common.config import ConfigError
from training.imitate import demonstrations
from training.imitate import record as record_module
from training.imitate.__main__ import main as imitate_main
from training.imitate.config import load_config
from training.imitate.network import VALUE_LAYERS, fit_policy, fit_value

SMALL_FILE = Path(__file__).resolve().parent / "data" / "imitate_small.yaml"
SMALL = ["record.games=6", "record.target_temperature=0", "env.reward=score"]
VALUE_KEYS = tuple(f"{name}." for name in VALUE_LAYERS)


def _config(*overrides: str):
    return load_config(SMALL_FILE, [*SMALL, *overrides])


class record:  # noqa: N801  (the recording of a config, as the tests use it)
    @staticmethod
    def record(config, out, progress=False):
        record_module.record(config.env, config.record, config.seed, config.workers, out, progress=progress)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A policy file fitted to the planner's games (reward ``score``), the recording of those
    games, a copy of it, and a recording of other games."""
    root = tmp_path_factory.mktemp("value")
    out = {"data": root / "data.npz", "copy": root / "copy.npz", "other": root / "other.npz",
           "policy": root / "policy.zip"}
    record.record(_config(), out["data"], progress=False)
    shutil.copy(out["data"], out["copy"])
    record.record(_config("seed=1"), out["other"], progress=False)
    fit_policy(_config(), [str(out["data"])], out["policy"], log=lambda text: None)
    return out


def _state(path: Path) -> dict:
    from sb3_contrib import MaskablePPO

    return MaskablePPO.load(path, device="cpu").policy.state_dict()


def test_the_value_fit_keeps_the_policy_and_replaces_the_value_head(files, tmp_path):
    import torch

    from keltis_env.policy import read_policy_info

    out = tmp_path / "valued.zip"
    stats = fit_value(_config(f"init={files['policy']}"), [str(files["data"])], [str(files["other"])],
                      out, log=lambda text: None)
    before, after = _state(files["policy"]), _state(out)
    assert before.keys() == after.keys()
    for name, value in before.items():
        if name.startswith(VALUE_KEYS):
            assert not torch.equal(after[name], value), name
        else:
            assert torch.equal(after[name], value), name  # the policy, weight for weight
    info = read_policy_info(out)
    assert (info.game, info.num_players, info.value_reward) == ("keltis", 2, "score")
    held, _ = demonstrations.load_demonstrations(files["other"])
    assert stats["decisions_held_out"] == len(held)


def test_the_head_kept_is_the_best_epoch_on_the_held_out_games(files, tmp_path):
    import torch

    logs: list[str] = []
    out = tmp_path / "valued.zip"
    stats = fit_value(_config(f"init={files['policy']}", "fit.epochs=4"), [str(files["data"])],
                      [str(files["other"])], out, log=logs.append)
    losses = [float(line.split("squared error ")[1].split()[0]) for line in logs if line.startswith("value epoch")]
    assert len(losses) == 4
    assert stats["epoch"] == 1 + int(np.argmin(losses))
    assert stats["value_loss"] == pytest.approx(min(losses), abs=1e-4)
    # the exported head gives that loss on the held-out games
    from sb3_contrib import MaskablePPO

    held, _ = demonstrations.load_demonstrations(files["other"])
    policy = MaskablePPO.load(out, device="cpu").policy
    with torch.no_grad():
        values = policy.predict_values(torch.as_tensor(held.obs.astype(np.float32))).flatten().numpy()
    assert float(np.mean((values - held.returns) ** 2)) == pytest.approx(stats["value_loss"], rel=1e-4)


def test_the_value_head_learns_the_returns_it_is_fitted_to(files, tmp_path):
    """Measured on a copy of the fitted games, the head does far better than guessing the mean."""
    stats = fit_value(_config(f"init={files['policy']}", "fit.epochs=30", "fit.batch_size=64",
                              "fit.learning_rate=0.003"),
                      [str(files["data"])], [str(files["copy"])], tmp_path / "v.zip", log=lambda text: None)
    assert stats["value_loss"] < 0.5 * stats["value_loss_mean_guess"]


def test_bad_input_is_refused_naming_it_and_writes_nothing(files, tmp_path, capsys):
    out = tmp_path / "x.zip"
    with pytest.raises(ConfigError, match=r"init: give the policy file whose value head is fitted"):
        fit_value(_config(), [str(files["data"])], [str(files["other"])], out)
    with pytest.raises(ConfigError, match=r"give --held-out"):
        fit_value(_config(f"init={files['policy']}"), [str(files["data"])], [], out)
    with pytest.raises(ConfigError, match=r"cannot be both fitted and held out"):
        fit_value(_config(f"init={files['policy']}"), [str(files["data"])], [str(files["data"])], out)
    with pytest.raises(ConfigError, match=r"init: no policy file at"):
        fit_value(_config(f"init={tmp_path / 'none.zip'}"), [str(files["data"])], [str(files["other"])], out)
    with pytest.raises(ConfigError, match=r"observation features \[\]; env\.features is \[.plan.\]"):
        fit_value(_config(f"init={files['policy']}", "env.features=[plan]"), [str(files["data"])],
                  [str(files["other"])], out)
    with pytest.raises(ConfigError, match=r"a 2-player keltis policy; this is a 3-player"):
        fit_value(_config(f"init={files['policy']}", "env.num_players=3"), [str(files["data"])],
                  [str(files["other"])], out)
    # recorded for the win, fitted for the score
    with pytest.raises(ConfigError, match=r"reward"):
        fit_value(_config(f"init={files['policy']}", "env.reward=win"), [str(files["data"])],
                  [str(files["other"])], out)
    assert not out.exists()
    base = ["value", "--config", str(SMALL_FILE), *[f"--set={o}" for o in SMALL],
            f"--set=init={files['policy']}", "--data", str(files["data"]), "--out", str(out)]
    with pytest.raises(SystemExit):
        imitate_main(base)  # --held-out is required
    assert "--held-out" in capsys.readouterr().err
    assert imitate_main([*base, "--held-out", str(tmp_path / "none.npz")]) == 2
    assert "python -m training.imitate value: demonstrations" in capsys.readouterr().err
    assert not out.exists()
    assert imitate_main([*base, "--held-out", str(files["other"])]) == 0
    assert "its value head's held-out squared error" in capsys.readouterr().out
    assert out.is_file()
