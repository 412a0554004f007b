"""Imitation on its own (``python -m training.imitate``, :mod:`training.imitate`): a recording
saved once, policies fitted to it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from training.common.config import ConfigError
from training.imitate import demonstrations, record
from training.imitate.__main__ import main as imitate_main
from training.imitate.config import load_config
from training.imitate.network import fit_policy

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SMOKE = CONFIGS / "train" / "smoke.yaml"
#: a small imitation: the planner's games with soft targets, a small network
SMALL = Path(__file__).resolve().parent / "data" / "imitate_small.yaml"
#: the same imitation as an SB3 run's warm start (configs/train/smoke.yaml)
RUN_SMALL = ["record.teacher=planner", "record.games=4", "workers=0", "fit.epochs=2", "record.target_temperature=1.0"]


def _config(*overrides: str):
    return load_config(SMALL, list(overrides))


def _rec(config, **kwargs):
    return record.record_demonstrations(config.env, config.record, config.seed, config.workers, **kwargs)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imitate") / "demos.npz"
    assert imitate_main(["record", "--config", str(SMALL), "--out", str(out), "--no-progress"]) == 0
    return out


def _same(a: demonstrations.Demonstrations, b: demonstrations.Demonstrations) -> None:
    for x, y in zip(a.parts(), b.parts(), strict=True):
        np.testing.assert_array_equal(x, y)


def test_recording_order_does_not_depend_on_how_the_work_is_cut(monkeypatch):
    """Every game depends on its seed alone, and the decisions come in the order of the
    workers' games: one worker, two, pieces of one game or of many give the same arrays."""
    whole = _rec(_config("record.games=5", "workers=2"))
    monkeypatch.setattr(record, "_PIECE", 1)
    _same(_rec(_config("record.games=5", "workers=2")), whole)
    one = _rec(_config("record.games=5"))
    assert len(one) == len(whole)
    assert sorted(map(bytes, one.obs)) == sorted(map(bytes, whole.obs))


def test_a_recording_stopped_by_ctrl_c_stops_at_once_and_leaves_no_worker(monkeypatch, python_default_signal_handlers):
    """Ctrl-C (or SIGTERM, which the jobs turn into the same interrupt) during a recording
    with worker processes stops it at once: the queued games are dropped, not played first,
    and no worker process is left behind."""
    import _thread
    import multiprocessing
    import threading
    import time

    monkeypatch.setattr(record, "_PIECE", 1)
    config = _config("record.games=400", "workers=2")  # about a minute of the planner's games
    timer = threading.Timer(3.0, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            _rec(config)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 15, "the recording played on after the interrupt"
    assert multiprocessing.active_children() == []


def test_a_recording_saves_the_run_s_demonstrations_and_what_they_were_for(recording):
    data, meta = demonstrations.load_demonstrations(recording)
    _same(data, _rec(_config()))
    assert {k: meta[k] for k in ("game", "num_players", "features", "reward", "teacher", "games", "seed",
                                 "soft_temperature")} == {
        "game": "keltis", "num_players": 2, "features": [], "reward": "win", "teacher": "planner", "games": 4,
        "seed": 0, "soft_temperature": 1.0}
    assert meta["decisions"] == len(data) > 0


def test_a_fit_from_a_recording_is_the_run_s_own_imitation(recording, tmp_path):
    """record + fit give the policy a run with the same config imitates (its anchor)."""
    import torch
    from sb3_contrib import MaskablePPO

    from training.train.__main__ import main

    overrides = [*RUN_SMALL, "pretrain.anchor=1.0", "total_timesteps=256", "eval.every=0", "eval.final_games=0",
                 f"runs_dir={tmp_path / 'runs'}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    assert imitate_main(["fit", "--config", str(SMALL), "--data", str(recording),
                         "--out", str(tmp_path / "clone.zip")]) == 0
    fitted = MaskablePPO.load(tmp_path / "clone.zip", device="cpu").policy.state_dict()
    anchor = MaskablePPO.load(run / "checkpoints" / "anchor.zip", device="cpu").policy.state_dict()
    assert fitted.keys() == anchor.keys()
    for name, value in anchor.items():
        assert torch.equal(fitted[name], value), name


def test_a_fitted_policy_plays_and_starts_a_run(recording, tmp_path):
    from keltis_env.bots import make_bot
    from keltis_env.evaluation import evaluate
    from keltis_env.policy import read_policy_info

    out = tmp_path / "clone.zip"
    fit_policy(_config(), [str(recording)], out, log=lambda text: None)
    assert read_policy_info(out).game == "keltis"
    make_bot(f"ppo:{out}")
    assert len(evaluate([f"ppo:{out}", "random"], 2, seed=0, workers=1, progress=False).results) == 2
    config = _config(f"init={out}", "record.teacher=")  # accepted as a fit's starting point
    assert config.init == str(out)


def test_soft_targets_are_re_tempered_as_if_recorded_at_the_new_temperature(recording):
    data, meta = demonstrations.load_demonstrations(recording)
    at_two = demonstrations.targets_at(data, meta["soft_temperature"], 2.0, "x").targets.astype(np.float64)
    direct = _rec(_config("record.target_temperature=2.0")).targets.astype(np.float64)
    np.testing.assert_allclose(at_two, direct, atol=2e-3)
    assert demonstrations.targets_at(data, 1.0, 1.0, "x") is data
    assert demonstrations.targets_at(data, 1.0, 0.0, "x").targets.shape == (len(data), 0)  # the moves alone


def test_two_recordings_are_fitted_together(recording, tmp_path):
    logs: list[str] = []
    fit_policy(_config(), [str(recording), str(recording)], tmp_path / "two.zip", log=logs.append)
    data, _ = demonstrations.load_demonstrations(recording)
    assert f"fit: {2 * len(data):,} decisions of 2 recording(s)" in logs[0]


def test_fit_select_by_keeps_the_epoch_that_plays_best(recording, tmp_path):
    """python -m training.imitate fit with fit.select_by: every epoch plays its selection
    games, the exported file is the best epoch's (the later among ties), no scratch file stays."""
    logs: list[str] = []
    stats = fit_policy(_config("fit.epochs=3", "fit.select_by=random", "fit.select_games=4"), [str(recording)],
                       tmp_path / "sel.zip", log=logs.append)
    played = [line for line in logs if "selection games" in line]
    assert [line.split(":")[0] for line in played] == ["fit epoch 1", "fit epoch 2", "fit epoch 3"]
    rates = [float(line.split(": ")[1].split("%")[0]) / 100 for line in played]
    best = max(range(3), key=lambda i: (rates[i], i))
    assert stats["selected_epoch"] == best + 1 and stats["selected_score"] == pytest.approx(rates[best], abs=1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sel.zip"]


def test_a_held_out_recording_measures_the_fit_on_whole_games_it_never_fitted(recording, tmp_path, capsys):
    """--held-out: the statistics come from every decision of that recording, the fitted
    part is all of --data, and a file cannot be both."""
    other = tmp_path / "other.npz"
    c = _config("seed=1")
    record.record(c.env, c.record, c.seed, c.workers, other, progress=False)
    held, _ = demonstrations.load_demonstrations(other)
    data, _ = demonstrations.load_demonstrations(recording)
    assert not np.array_equal(held.actions[:20], data.actions[:20])  # other games
    logs: list[str] = []
    stats = fit_policy(_config(), [str(recording)], tmp_path / "a.zip", log=logs.append, held_out_paths=[str(other)])
    assert f"fit: {len(data):,} decisions of 1 recording(s), {len(held):,} held out" in logs[0]
    assert stats["decisions"] == len(held)
    assert stats["value_loss_mean_guess"] == pytest.approx(float(np.mean((held.returns - data.returns.mean()) ** 2)))
    without = fit_policy(_config(), [str(recording)], tmp_path / "b.zip", log=lambda text: None)
    assert without["decisions"] == max(1, len(data) // 20)  # a random 5% of the fitted decisions
    assert imitate_main(["fit", "--config", str(SMALL), "--data", str(recording), "--held-out", str(recording),
                         "--out", str(tmp_path / "c.zip")]) == 2
    assert "cannot be both fitted and held out" in capsys.readouterr().err
    assert not (tmp_path / "c.zip").exists()


def test_a_recording_for_another_setting_is_refused_naming_what_differs(recording, tmp_path):
    with pytest.raises(ConfigError, match=r"recorded for another setting: features \[\] \(the config's: \['plan'\]\)"):
        fit_policy(_config("env.features=[plan]"), [str(recording)], tmp_path / "x.zip")
    with pytest.raises(ConfigError, match=r"num_players 2 \(the config's: 3\)"):
        fit_policy(_config("env.num_players=3"), [str(recording)], tmp_path / "x.zip")
    assert not (tmp_path / "x.zip").exists()


def test_a_moves_only_recording_cannot_give_soft_targets(tmp_path, capsys):
    out = tmp_path / "moves.npz"
    c = _config("record.target_temperature=0", "record.games=1")
    record.record(c.env, c.record, c.seed, c.workers, out, progress=False)
    with pytest.raises(ConfigError, match=r"holds the teacher's moves only"):
        fit_policy(_config("fit.target_temperature=1.0"), [str(out)], tmp_path / "x.zip")
    fit_policy(_config("fit.target_temperature=0"), [str(out)], tmp_path / "x.zip", log=lambda text: None)
    fit_policy(_config(), [str(out)], tmp_path / "y.zip", log=lambda text: None)  # as recorded: the moves


def test_missing_corrupt_or_foreign_files_are_refused_with_a_clear_error(tmp_path, recording, capsys):
    with pytest.raises(ConfigError, match=r"no such file"):
        demonstrations.load_demonstrations(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match=r"is not a recording written by `python -m training.imitate record`"):
        demonstrations.load_demonstrations(tmp_path / "junk.npz")
    np.savez(tmp_path / "other.npz", obs=np.zeros((2, 3)))
    with pytest.raises(ConfigError, match=r"is not a recording .*KeyError"):
        demonstrations.load_demonstrations(tmp_path / "other.npz")
    data, meta = demonstrations.load_demonstrations(recording)
    demonstrations.save_demonstrations(tmp_path / "future.npz", data, {**meta, "format": 99})
    with pytest.raises(ConfigError, match=r"unknown format 99"):
        demonstrations.load_demonstrations(tmp_path / "future.npz")
    demonstrations.save_demonstrations(tmp_path / "short.npz", demonstrations.Demonstrations(
        data.obs, data.masks, data.actions[:-1], data.returns, data.targets), meta)
    with pytest.raises(ConfigError, match=r"arrays disagree in length"):
        demonstrations.load_demonstrations(tmp_path / "short.npz")
    assert imitate_main(["fit", "--config", str(SMALL), "--data", str(tmp_path / "junk.npz"),
                         "--out", str(tmp_path / "x.zip")]) == 2
    assert "python -m training.imitate fit: demonstrations" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"record needs record\.teacher"):
        c = _config("record.teacher=")
        record.record(c.env, c.record, c.seed, c.workers, tmp_path / "y.npz")
    assert json.loads(json.dumps(meta)) == meta


def test_a_dagger_round_played_by_another_agent_is_recorded_as_a_run_would(tmp_path):
    out = tmp_path / "dagger.npz"
    c = _config("record.dagger_games=3")
    assert imitate_main(["record", "--config", str(SMALL), "--out", str(out), "--no-progress",
                         "--actor", "heuristic", "--round", "2", "--set=record.dagger_games=3"]) == 0
    data, meta = demonstrations.load_demonstrations(out)
    _same(data, _rec(c, actor="heuristic", round_=2))
    assert (meta["actor"], meta["round"], meta["games"]) == ("heuristic", 2, 3)
    teacher_only = _rec(_config("record.games=3"))
    assert len(data) != len(teacher_only) or not np.array_equal(data.obs, teacher_only.obs)
    with pytest.raises(ConfigError, match=r"--actor: unknown agent 'nobody'"):
        record.record(c.env, c.record, c.seed, c.workers, tmp_path / "x.npz", actor="nobody")
    with pytest.raises(ConfigError, match=r"--round must be a positive integer"):
        record.record(c.env, c.record, c.seed, c.workers, tmp_path / "x.npz", actor="heuristic", round_=0)


def test_a_fit_under_colour_relabellings_fits_each_decision_relabelled(recording, tmp_path, monkeypatch):
    """fit.augment=colours: every fitted row is a recorded decision under a colour
    relabelling (its observation a permutation of the recorded one), with the move still legal."""
    from training.imitate import fit as fit_module

    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    loss = fit_module._policy_loss

    def spy(log_probs, masks, actions, targets):
        if log_probs.requires_grad:  # the fitted minibatches, not the held-out statistics
            seen.append((masks.numpy().copy(), actions.numpy().copy(), spy.obs))
        return loss(log_probs, masks, actions, targets)

    forward = fit_module.forward

    def forward_spy(policy, obs, masks):
        spy.obs = obs.numpy().copy()
        return forward(policy, obs, masks)

    monkeypatch.setattr(fit_module, "_policy_loss", spy)
    monkeypatch.setattr(fit_module, "forward", forward_spy)
    fit_policy(_config("fit.augment=colours"), [str(recording)], tmp_path / "aug.zip", log=lambda text: None)
    data, _ = demonstrations.load_demonstrations(recording)
    recorded = {tuple(np.sort(row)) for row in data.obs.astype(np.float32)}
    originals = {row.tobytes() for row in data.obs.astype(np.float32)}
    masks, actions, obs = (np.concatenate(parts) for parts in zip(*seen, strict=True))
    assert masks[np.arange(len(actions)), actions].all(), "a relabelled move must stay legal"
    assert all(tuple(np.sort(row)) in recorded for row in obs), "a fitted row must be a recorded one relabelled"
    assert sum(row.tobytes() not in originals for row in obs) > len(obs) // 2, "most rows are relabelled"
    with pytest.raises(ConfigError, match=r"fit\.augment: the game 'keltis' has no relabelling 'shapes'; give "
                                          r"none or one of: colours, colours_affine"):
        _config("fit.augment=shapes")


def test_a_fit_with_init_starts_from_that_file_s_weights(recording, tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    first = tmp_path / "first.zip"
    fit_policy(_config(), [str(recording)], first, log=lambda text: None)
    logs: list[str] = []
    # a step too small to move the weights: the fitted network is the file it started from
    fit_policy(_config(f"init={first}", "fit.learning_rate=1e-12"), [str(recording)],
               tmp_path / "warm.zip", log=logs.append)
    fit_policy(_config("fit.learning_rate=1e-12", "seed=5"), [str(recording)], tmp_path / "cold.zip",
               log=lambda text: None)
    assert f"from {first}" in logs[0]
    start = MaskablePPO.load(first, device="cpu").policy.state_dict()
    warm = MaskablePPO.load(tmp_path / "warm.zip", device="cpu").policy.state_dict()
    cold = MaskablePPO.load(tmp_path / "cold.zip", device="cpu").policy.state_dict()
    assert all(torch.allclose(warm[k], start[k], atol=1e-6) for k in start)
    assert not all(torch.allclose(cold[k], start[k], atol=1e-6) for k in start)


def test_a_key_of_the_earlier_config_is_refused_naming_the_new_one():
    with pytest.raises(ConfigError, match=r"pretrain\.games is no longer a key; it is record\.games now"):
        _config("pretrain.games=3")
    with pytest.raises(ConfigError, match=r"pretrain\.augment is no longer a key; it is fit\.augment now"):
        _config("pretrain.augment=colours")


def test_describe_lists_every_key_of_the_imitation_config(capsys):
    assert imitate_main(["--describe"]) == 0
    out = capsys.readouterr().out
    for key in ("record.teacher", "record.target_temperature", "fit.epochs", "fit.target_temperature",
                "fit.augment", "network.net_arch", "init", "workers"):
        assert f"\n{key} = " in "\n" + out
