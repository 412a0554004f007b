"""A critic that reads what the seat does not see, in training only (training/common/critic.py),
and the regulariser toward a slow copy of the policy (training/sb3/pipeline.py)."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from keltis_env.games.keltis.constants import NUM_CARD_KINDS
from keltis_env.policy import INFO_MEMBER, read_policy_info
from training.common.config import ConfigError
from training.common.critic import PrivilegedCriticPolicy, copy_actor, init_from
from training.common.masked import forward
from training.sb3.collector import BatchedSelfPlayVecEnv
from training.sb3.compiled_batch import make_game_batch
from training.sb3.config import load_config
from training.sb3.model import new_model
from training.sb3.trainer import Trainer

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "train" / "smoke.yaml"
KELTIS = get_game("keltis")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _played_state(num_players: int, seed: int, moves: int):
    rng = random.Random(seed)
    state = KELTIS.new_state(KELTIS.make_config(num_players=num_players), seed)
    for _ in range(moves):
        if state.is_over:
            break
        state.apply(rng.choice(state.legal_actions()))
    return state


# ---------------------------------------------------------------------- what the seat does not see
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_privileged_block_holds_the_other_hands_in_turn_order_then_the_removed_cards(num_players):
    state = _played_state(num_players, 11, 9)
    encoder = KELTIS.make_privileged(num_players)
    assert encoder.size == num_players * NUM_CARD_KINDS
    for seat in range(num_players):
        out = np.full(encoder.size, 9.0, np.float32)
        encoder.encode(state, seat, out)
        blocks = out.reshape(num_players, NUM_CARD_KINDS)
        for i in range(1, num_players):
            expected = np.bincount(state.hands[(seat + i) % num_players], minlength=NUM_CARD_KINDS) / 2
            assert np.array_equal(blocks[i - 1], expected)
        assert np.array_equal(blocks[-1], np.bincount(state.removed, minlength=NUM_CARD_KINDS) / 2)
        assert blocks[-1].any() == (num_players == 2)  # cards are removed in the 2-player game only
        # nothing of the seat's own hand
        own = set(state.hands[seat]) - {k for p in range(num_players) if p != seat for k in state.hands[p]}
        own -= set(state.removed)
        assert not any(blocks[:, k].any() for k in own)


def test_a_game_that_hides_nothing_has_no_privileged_block():
    with pytest.raises(ValueError, match="hides nothing"):
        get_game("dice").make_privileged(2)


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_collector_rows_are_the_seat_observation_then_the_hidden_block_of_the_true_state(backend):
    if backend == "compiled":
        pytest.importorskip("numba")
    kwargs = {"opponents": ["random"], "game": "keltis", "num_players": 2, "reward": "score", "backend": backend,
              "game_options": {"max_turns": 30}}  # games that end within the test
    plain = make_game_batch(3, **kwargs)
    full = make_game_batch(3, privileged=True, **kwargs)
    hidden = KELTIS.make_privileged(2)
    assert full.obs.shape == (3, plain.size + hidden.size) and full.size == plain.size
    plain.reset(seeds=[5, 6, 7])
    full.reset(seeds=[5, 6, 7])
    ended = 0
    rng = np.random.default_rng(0)
    for _ in range(120):
        assert np.array_equal(full.obs[:, :full.size], plain.obs) and np.array_equal(full.masks, plain.masks)
        for i in range(3):
            state = full.position(i) if backend == "compiled" else full.games[i].match.state
            expected = np.zeros(hidden.size, np.float32)
            hidden.encode(state, full._seat(i), expected)
            assert np.array_equal(full.obs[i, full.size:], expected)
        actions = [int(rng.choice(np.flatnonzero(plain.masks[i]))) for i in range(3)]
        _, dones, infos, _ = plain.step(actions)
        _, dones_full, infos_full, _ = full.step(actions)
        assert dones == dones_full
        for i in np.flatnonzero(dones):
            terminal = infos_full[i]["terminal_observation"]
            assert terminal.shape == (full.obs.shape[1],)
            assert np.array_equal(terminal[:full.size], infos[i]["terminal_observation"])
            ended += 1
    assert ended  # the terminal rows were checked


@pytest.mark.skipif(not get_game("keltis").compiled, reason="no compiled core")
def test_compiled_privileged_kernel_equals_the_python_encoder_for_every_player_count():
    pytest.importorskip("numba")
    from keltis_env.compiled.table import GameTable

    for n in (2, 3, 4):
        states = [_played_state(n, 100 + s, 7 * s) for s in range(6)]
        table = GameTable("keltis", KELTIS.make_config(num_players=n), len(states))
        for g, state in enumerate(states):
            table.load(g, state)
        hidden = KELTIS.make_privileged(n)
        seats = np.array([g % n for g in range(len(states))], np.int64)
        out = np.full((len(states), 3 + hidden.size), -1.0, np.float32)
        table.privileged(np.arange(len(states), dtype=np.int64), seats, out, 3)
        for g, state in enumerate(states):
            expected = np.zeros(hidden.size, np.float32)
            hidden.encode(state, int(seats[g]), expected)
            assert np.array_equal(out[g, 3:], expected) and (out[g, :3] == -1).all()


def test_collector_refuses_privileged_rows_with_a_relabelling():
    with pytest.raises(ValueError, match="relabel"):
        BatchedSelfPlayVecEnv(2, ["random"], workers=0, privileged=True, relabel="colours")


# ---------------------------------------------------------------------- the actor reads the seat's view only
def _model(overrides=()):
    config = load_config(SMOKE, ["critic=full", *overrides])
    venv = BatchedSelfPlayVecEnv(2, ["random"], workers=0, privileged=True)
    return new_model(config, venv), venv


@pytest.mark.parametrize("first_layer", ["dense", "sparse"])
def test_actor_inputs_are_the_seat_view_only(first_layer):
    if first_layer == "sparse":
        pytest.importorskip("numba")
    model, venv = _model([f"first_layer={first_layer}"])
    policy = model.policy
    assert isinstance(policy, PrivilegedCriticPolicy) and policy.seat_size == venv.seat_size == 831
    assert policy.mlp_extractor.policy_net[0].in_features == 831
    assert policy.mlp_extractor.value_net[0].in_features == 941
    rng = np.random.default_rng(0)
    obs = torch.as_tensor(rng.random((5, 941), dtype=np.float32))
    other = obs.clone()
    other[:, 831:] = torch.as_tensor(rng.random((5, 110), dtype=np.float32))
    masks = np.ones((5, 187), bool)
    values, log_probs, _ = forward(policy, obs, masks)
    values_other, log_probs_other, _ = forward(policy, other, masks)
    assert torch.equal(log_probs, log_probs_other)  # the actor cannot tell the hidden parts apart
    assert not torch.allclose(values, values_other)  # the critic can
    x = obs.clone().requires_grad_(True)
    _, log_probs, _ = forward(policy, x, masks)
    log_probs[:, :10].sum().backward()
    assert x.grad is not None and x.grad[:, 831:].abs().max() == 0 and x.grad[:, :831].abs().max() > 0
    venv.close()


def test_played_file_is_the_actor_for_the_seat_view_and_declares_no_value_head(tmp_path):
    config = load_config(SMOKE, ["critic=full", f"runs_dir={tmp_path}", "total_timesteps=512", "eval.final_games=0"])
    trainer = Trainer.new(config, "test", progress=False)
    trainer.train()
    trainer.final_report()  # writes policy.zip
    trainer.close()
    run = next(p for p in tmp_path.iterdir() if p.is_dir())
    info = read_policy_info(run / "policy.zip")
    assert info.observation_size == 831 and info.value_reward is None and not info.value_head
    from keltis_env.policy.network import load_policy

    assert not load_policy(run / "policy.zip").has_value  # nothing reads its untrained value layers
    with pytest.raises(ValueError, match="no value head"):
        make_bot(f"gumbel:net={run / 'policy.zip'}", game="keltis", num_players=2)
    from sb3_contrib import MaskablePPO

    trainer.export(tmp_path / "actor.zip")
    played = MaskablePPO.load(tmp_path / "actor.zip", device="cpu")
    assert isinstance(trainer.model.policy, PrivilegedCriticPolicy)
    model_state = trainer.model.policy.state_dict()
    for key, value in played.policy.state_dict().items():
        if key.startswith(("mlp_extractor.policy_net.", "action_net.")):
            assert torch.equal(value, model_state[key]), key
    last = MaskablePPO.load(run / "checkpoints" / "last.zip", device="cpu")
    assert isinstance(last.policy, PrivilegedCriticPolicy)
    with zipfile.ZipFile(run / "checkpoints" / "last.zip") as zf:  # for resuming only: no policy metadata
        assert INFO_MEMBER not in zf.namelist()
    with zipfile.ZipFile(run / "policy.zip") as zf:
        assert INFO_MEMBER in zf.namelist()


def test_init_from_a_played_file_starts_the_critic_as_its_value_head(tmp_path):
    model, venv = _model()
    played, _ = _model()
    from training.imitate.network import policy_model

    source = policy_model(load_config(SMOKE).env, load_config(SMOKE).network, seed=3)
    init_from(model, source)
    rng = np.random.default_rng(1)
    obs = rng.random((4, 941), dtype=np.float32)
    masks = np.ones((4, 187), bool)
    values, log_probs, _ = forward(model.policy, torch.as_tensor(obs), masks)
    values_src, log_probs_src, _ = forward(source.policy, torch.as_tensor(obs[:, :831]), masks)
    assert torch.allclose(values, values_src, atol=1e-6) and torch.allclose(log_probs, log_probs_src, atol=1e-6)
    copy_actor(model, played)
    assert torch.equal(forward(played.policy, torch.as_tensor(obs), masks)[1], log_probs)
    venv.close()


@pytest.mark.parametrize("override, match", [
    (["env.game=dice", "pool.weights={self: 1.0}", "eval.opponents=[random]"], "hides nothing"),
    (["relabel=colours"], "relabel"),
    (["record.teacher=heuristic"], "record.teacher"),
])
def test_config_refuses_a_full_critic_where_it_cannot_work(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(SMOKE, ["critic=full", *override])


# ---------------------------------------------------------------------- the slow copy
def test_slow_copy_starts_as_the_policy_follows_it_by_tau_and_adds_the_kl_term():
    model, venv = _model(["ppo.slow_kl=0.5", "ppo.slow_tau=0.25"])
    model.set_slow(0.5, 0.25)
    slow = model.slow_policy
    for key, value in model.policy.state_dict().items():
        assert torch.equal(slow.state_dict()[key], value)
    assert all(not p.requires_grad for p in slow.parameters())
    before = {k: v.clone() for k, v in slow.state_dict().items()}
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(1.0)
    model._follow()
    now = model.policy.state_dict()
    for key, value in slow.state_dict().items():
        assert torch.allclose(value, 0.75 * before[key] + 0.25 * now[key], atol=1e-6), key
    model.set_slow(0.0, 0.25)
    assert model.slow_policy is None
    venv.close()


def test_slow_copy_is_saved_with_the_run_and_resumed(tmp_path):
    config = load_config(SMOKE, [f"runs_dir={tmp_path}", "total_timesteps=512", "eval.final_games=0", "eval.every=0",
                                 "ppo.slow_kl=1.0", "ppo.slow_tau=0.5"])
    trainer = Trainer.new(config, "test", progress=False)
    trainer.train()
    saved = {k: v.clone() for k, v in trainer.model.slow_policy.state_dict().items()}
    policy = trainer.model.policy.state_dict()
    assert any(not torch.equal(saved[k], policy[k]) for k in saved)  # it lags behind the policy
    trainer.close()
    run = next(tmp_path.iterdir())
    assert (run / "checkpoints" / "slow.pt").is_file()
    resumed = Trainer.resume(run, "test", ["total_timesteps=512"], progress=False)
    resumed._build()
    for key, value in resumed.model.slow_policy.state_dict().items():
        assert torch.equal(value, saved[key]), key
    resumed.close()
