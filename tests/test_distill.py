"""Imitation from the strongest bots (training/pretrain.py: soft targets from the teacher's
action values, DAgger) and reinforcement learning with a teacher anchor (training/distill.py)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from training.common.config import ConfigError
from training.common.masked import forward
from training.imitate.fit import fit_demonstrations
from training.imitate.record import record_demonstrations as _record
from training.imitate.record import soft_targets
from training.sb3.config import load_config
from training.sb3.distill import AnchoredMaskablePPO, anchor_weight, kl_to

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "train" / "smoke.yaml"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------------- the teacher's values
def test_soft_targets_follow_the_values_and_the_teacher_plays_the_first_of_the_highest():
    label, target = soft_targets([(7, 2.0), (3, 5.0), (9, 5.0), (4, 4.0)], 12, temperature=1.0)
    assert label == 3  # the first of the two highest
    assert target.dtype == np.float16 and abs(float(target.sum()) - 1.0) < 1e-3
    assert set(np.flatnonzero(target)) == {3, 4, 7, 9}
    assert target[3] == target[9] and np.isclose(float(target[4] / target[3]), np.exp(-1.0), rtol=1e-2)
    _, sharp = soft_targets([(1, 0.0), (2, 1.0)], 3, temperature=0.1)
    assert float(sharp[2]) > 0.99


def _positions(game: str, count: int, seed: int) -> list:
    """Views of the player to move in random positions of ``game``."""
    descriptor = get_game(game)
    rng = random.Random(seed)
    views = []
    while len(views) < count:
        state = descriptor.new_state(descriptor.make_config(num_players=2), rng.randrange(10**9))
        for _ in range(rng.randrange(60)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        if not state.is_over and len(state.legal_actions()) > 1:
            views.append(state.view(state.current_player))
    return views


@pytest.mark.parametrize(("game", "spec"), [("keltis", "planner"), ("keltis", "ismcts:iterations=24"),
                                            ("dice", "ismcts:iterations=24")])
def test_a_teachers_values_lead_to_the_move_it_plays(game, spec):
    """``action_values`` gives the values ``act`` chose by (same random numbers): the move
    is the first of the highest."""
    for k, view in enumerate(_positions(game, 12, seed=3)):
        a, b = make_bot(spec, seed=k, game=game), make_bot(spec, seed=k, game=game)
        values = b.action_values(view)
        assert set(a for a, _ in values) <= set(view.legal_actions)
        best = max(v for _, v in values)
        assert a.act(view) == next(action for action, v in values if v == best)


def test_soft_targets_need_a_teacher_with_values():
    with pytest.raises(ConfigError, match=r"needs a teacher that gives action values; 'heuristic' gives only its "
                                          r"move \(teachers with values in keltis: ismcts, planner\)"):
        load_config(SMOKE, ["record.teacher=heuristic", "record.target_temperature=1"])
    with pytest.raises(ConfigError, match=r"pretrain.anchor needs record.teacher or init"):
        load_config(SMOKE, ["pretrain.anchor=0.5"])
    assert load_config(SMOKE, ["record.teacher=planner", "record.target_temperature=0.5"]).record.target_temperature


# ---------------------------------------------------------------------- imitation
def record_demonstrations(config, **kwargs):
    """The recording an SB3 run with ``config`` makes of its teacher."""
    return _record(config.env, config.record, config.seed, max(1, config.workers), **kwargs)


def _model(config):
    from training.sb3.collector import BatchedSelfPlayVecEnv
    from training.sb3.model import new_model

    venv = BatchedSelfPlayVecEnv(2, ["random"], workers=0, reward=config.env.reward)
    return new_model(config, venv), venv


def test_imitation_smoke_run_fits_the_planners_soft_targets():
    """A tiny teacher run: the planner's games with soft targets, then a fit that brings the
    policy closer to them."""
    from training.imitate.fit import validate

    config = load_config(SMOKE, ["record.teacher=planner", "record.games=6", "workers=1",
                                 "record.target_temperature=1.0", "fit.epochs=6", "fit.batch_size=64",
                                 "network.net_arch=[64]"])
    data = record_demonstrations(config)
    assert len(data) > 400 and data.targets.shape == (len(data), get_game("keltis").num_actions)
    targets = data.targets.astype(np.float32)
    assert np.allclose(targets.sum(axis=1), 1.0, atol=2e-2)
    assert not (targets * ~data.masks).any()  # no weight on illegal actions
    # the move is the most probable (to float16's precision: near-ties may round to one value)
    assert (targets[np.arange(len(data)), data.actions] >= targets.max(axis=1) - 1e-3).all()
    model, venv = _model(config)
    try:
        def loss() -> float:
            idx = np.arange(len(data))

            def batch(i):
                return (torch.as_tensor(data.obs[i].astype(np.float32)), torch.as_tensor(data.actions[i]),
                        torch.as_tensor(data.masks[i]), torch.as_tensor(data.returns[i]),
                        torch.as_tensor(data.targets[i].astype(np.float32)))

            return validate(model.policy, batch, idx)["policy_loss"]

        before = loss()
        stats = fit_demonstrations(model, data, config.fit, config.env, config.seed, log=lambda text: None)
        assert loss() < before - 0.1
        assert 0.0 <= stats["accuracy"] <= 1.0
    finally:
        venv.close()


@pytest.mark.parametrize("schedule", ["constant", "linear"])
def test_the_fit_s_step_size_follows_fit_lr_schedule(schedule, monkeypatch):
    """linear: the step size falls by equal amounts from fit.learning_rate towards 0 over
    all the fit's minibatches; constant: every step at fit.learning_rate."""
    config = load_config(SMOKE, ["record.teacher=planner", "record.games=2", "workers=1", "fit.epochs=3",
                                 "fit.batch_size=64", "fit.learning_rate=0.002", f"fit.lr_schedule={schedule}",
                                 "network.net_arch=[16]"])
    data = record_demonstrations(config)
    seen: list[float] = []

    class Recording(torch.optim.Adam):
        def step(self, closure=None):
            seen.append(self.param_groups[0]["lr"])
            return super().step(closure)

    monkeypatch.setattr(torch.optim, "Adam", Recording)
    model, venv = _model(config)
    try:
        fit_demonstrations(model, data, config.fit, config.env, config.seed, log=lambda text: None)
    finally:
        venv.close()
    fitted = len(data) - max(1, len(data) // 20)  # 5% held out
    steps = 3 * -(-fitted // 64)
    assert len(seen) == steps
    if schedule == "constant":
        assert seen == [0.002] * steps
    else:
        assert np.allclose(seen, [0.002 * (1 - k / steps) for k in range(steps)])
        assert seen[-1] > 0.0


def test_dagger_rounds_record_the_actors_games_with_the_teachers_values(tmp_path):
    config = load_config(SMOKE, ["record.teacher=planner", "record.dagger_games=3", "workers=1",
                                 "record.target_temperature=0.5", "network.net_arch=[16]"])
    model, venv = _model(config)
    try:
        from training.imitate.network import export_policy

        actor = tmp_path / "actor.zip"
        export_policy(model, actor, "keltis", 2)
        data = record_demonstrations(config, actor=f"ppo:{actor}", round_=1)
    finally:
        venv.close()
    assert len(data) > 100 and data.targets.shape[1] == get_game("keltis").num_actions
    # the labels are the planner's own choices (its most valued moves) in the positions the actor led to
    targets = data.targets.astype(np.float32)
    assert (targets[np.arange(len(data)), data.actions] >= targets.max(axis=1) - 1e-3).all()


@pytest.mark.parametrize("start", [False, True])
def test_fit_select_keeps_the_weights_of_the_best_scoring_epoch(start):
    """select scores the policy after every epoch (and before the first with select_start);
    the fit ends with the weights it had at the best-scoring epoch, the later among ties."""
    config = load_config(SMOKE, ["record.teacher=planner", "record.games=2", "workers=1", "fit.epochs=4",
                                 "fit.batch_size=64", "network.net_arch=[16]"])
    data = record_demonstrations(config)
    model, venv = _model(config)
    scores = {0: 0.5, 1: 0.2, 2: 0.7, 3: 0.7, 4: 0.1} if start else {1: 0.2, 2: 0.7, 3: 0.7, 4: 0.1}
    seen, weights = [], {}

    def select(epoch: int) -> float:
        assert not model.policy.training  # scored as it plays
        seen.append(epoch)
        weights[epoch] = {k: v.clone() for k, v in model.policy.state_dict().items()}
        return scores[epoch]

    try:
        stats = fit_demonstrations(model, data, config.fit, config.env, config.seed, log=lambda text: None,
                                   select=select, select_start=start)
    finally:
        venv.close()
    assert seen == sorted(scores)
    assert stats["selected_epoch"] == 3 and stats["selected_score"] == 0.7
    kept = model.policy.state_dict()
    assert all(torch.equal(kept[k], weights[3][k]) for k in kept)
    assert not all(torch.equal(kept[k], weights[4][k]) for k in kept)  # not the last epoch's


def test_play_selector_plays_the_policy_on_selection_deals(tmp_path):
    """fit.select_by: the exported policy plays fit.select_games games against the agent on
    the fit's selection deals; the same policy scores the same on every call."""
    from keltis_env.evaluation import evaluate
    from training.imitate.network import export_policy
    from training.imitate.select import SELECT_DEALS, play_selector

    config = load_config(SMOKE, ["fit.select_by=random", "fit.select_games=6", "network.net_arch=[16]"])
    model, venv = _model(config)
    path = tmp_path / "select.zip"
    try:
        select = play_selector(lambda p: export_policy(model, p, "keltis", 2), path, config.fit, config.env,
                               config.seed, 1, log=lambda text: None)
        assert select is not None
        first, again = select(1), select(2)
        export_policy(model, tmp_path / "same.zip", "keltis", 2)
    finally:
        venv.close()
    assert first == again and not path.exists()  # the file is removed after playing
    direct = evaluate([f"ppo:{tmp_path / 'same.zip'}", "random"], games=6, seed=config.seed * 1000 + SELECT_DEALS,
                      workers=1, progress=False)
    assert first == direct.agents[0].win_rate
    assert play_selector(lambda p: None, path, load_config(SMOKE).fit, config.env, 0, 1) is None


def test_fit_select_by_must_be_an_agent_of_the_game():
    with pytest.raises(ConfigError, match=r"fit\.select_by"):
        load_config(SMOKE, ["fit.select_by=no_such_bot"])


# ---------------------------------------------------------------------- the anchor
def test_the_anchor_weight_decays_linearly_to_zero():
    assert [anchor_weight(0.8, 1000, t) for t in (0, 250, 1000, 5000)] == [0.8, 0.6000000000000001, 0.0, 0.0]
    assert anchor_weight(0.0, 1000, 0) == 0.0


def test_kl_is_zero_for_the_same_policy_and_ignores_illegal_actions():
    logits = torch.randn(5, 7)
    masks = torch.rand(5, 7) > 0.4
    masks[:, 0] = True
    log_p = torch.log_softmax(torch.where(masks, logits, torch.tensor(-1e8)), dim=1)
    assert torch.allclose(kl_to(log_p, log_p, masks), torch.zeros(5), atol=1e-6)
    other = torch.log_softmax(torch.where(masks, torch.randn(5, 7), torch.tensor(-1e8)), dim=1)
    assert (kl_to(log_p, other, masks) > 0).all()


def _train(coef: float, anchor_from_start: bool):
    """A few updates of AnchoredMaskablePPO from the same start; returns the mean KL of the
    final policy to the initial one on fresh positions, and the model."""
    from training.sb3.collector import BatchedSelfPlayVecEnv

    venv = BatchedSelfPlayVecEnv(4, ["random"], workers=0, reward="win")
    try:
        model = AnchoredMaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=4, learning_rate=3e-3,
                                    seed=0, device="cpu", policy_kwargs={"net_arch": [32]})
        initial = AnchoredMaskablePPO("MlpPolicy", venv, seed=0, device="cpu", policy_kwargs={"net_arch": [32]}).policy
        initial.load_state_dict(model.policy.state_dict())
        if anchor_from_start:
            model.set_anchor(initial, coef, 10**6, start=0)
        model.learn(512)
        obs = torch.as_tensor(model.rollout_buffer.observations.reshape(-1, venv.observation_space.shape[0]))
        masks = torch.as_tensor(model.rollout_buffer.action_masks.reshape(obs.shape[0], -1)).bool()
        with torch.no_grad():
            _, anchor_lp, _ = forward(initial, obs, masks)
            _, lp, _ = forward(model.policy, obs, masks)
        return float(kl_to(anchor_lp, lp, masks).mean()), model
    finally:
        venv.close()


def test_a_zero_anchor_changes_nothing_and_a_strong_one_holds_the_policy():
    free, free_model = _train(0.0, anchor_from_start=False)
    _, zero_model = _train(0.0, anchor_from_start=True)
    for a, b in zip(free_model.policy.parameters(), zero_model.policy.parameters(), strict=True):
        assert torch.equal(a, b)  # weight 0: exactly the update without the term
    held, held_model = _train(5.0, anchor_from_start=True)
    assert held < 0.5 * free
    assert held_model.current_anchor_weight() == pytest.approx(5.0 * (1 - 512 / 10**6))


@pytest.mark.slow
def test_a_distilled_run_with_an_anchor_and_the_collector_resumes_with_its_anchor(tmp_path):
    """Planner imitation with soft targets, self-play against a league (a snapshot, the
    planner, the search, the heuristic) on the batched collector with the anchor, then a
    resumed session that keeps the anchor and its schedule."""
    from training.sb3.trainer import Trainer
    from training.train.__main__ import main

    overrides = ["workers=2", "record.teacher=planner", "record.games=4",
                 "record.dagger_rounds=1", "record.dagger_games=2", "fit.epochs=2", "workers=1",
                 "record.target_temperature=1.0", "pretrain.anchor=0.5", "pretrain.anchor_steps=4096",
                 "pool.weights={self: 0.4, planner: 0.3, ismcts:iterations=4: 0.1, heuristic: 0.2}",
                 "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", str(SMOKE), "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    assert (run / "checkpoints" / "anchor.zip").is_file()
    stats = json.loads((run / "report.json").read_text())["pretrain"]
    assert stats["soft_temperature"] == 1.0 and stats["anchor"] == 0.5
    with open(run / "games.csv") as f:
        header = f.readline()
    assert "mean_turns" in header and "truncation_rate" in header
    copy = tmp_path / "resumed"
    shutil.copytree(run, copy)
    trainer = Trainer.resume(copy, "test", ["total_timesteps=1536"], progress=False)
    try:
        trainer.train()
        model = trainer.model
        assert isinstance(model, AnchoredMaskablePPO) and model.anchor_policy is not None
        assert model.anchor_start == 0 and model.num_timesteps == 1536
        assert model.current_anchor_weight() == pytest.approx(0.5 * (1 - 1536 / 4096))
    finally:
        trainer.close()
    (copy / "checkpoints" / "anchor.zip").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(ConfigError, match=r"anchor policy is unusable: .*truncated or corrupt"):
        broken = Trainer.resume(copy, "test", progress=False)
        try:
            broken._build()
        finally:
            broken.close()

