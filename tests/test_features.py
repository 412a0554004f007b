"""Optional observation features (keltis_env/core/features.py): the card game's ``plan``
feature, encoders with features, the learner view, policy files and training with them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import random_positions

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from keltis_env.envs.learner import KeltisLearnerEnv
from keltis_env.games.keltis.actions import ACTION_RANGES, NUM_ACTIONS
from keltis_env.games.keltis.bots.planner import action_values
from keltis_env.games.keltis.constants import NUM_CARD_KINDS, NUM_COLORS, NUM_VALUES
from keltis_env.games.keltis.encoding import PLAN_SCALE
from keltis_env.games.keltis.state import Phase
from keltis_env.policy import INFO_MEMBER, PolicyLoadError, read_policy_info, write_policy_info

KELTIS = get_game("keltis")
SMOKE = str(Path(__file__).resolve().parent.parent / "configs" / "train" / "smoke.yaml")


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_plan_feature_holds_the_planners_values_and_choice(num_players):
    base = KELTIS.make_encoder(num_players)
    encoder = KELTIS.make_encoder(num_players, ["plan"])
    assert encoder.size == base.size + 2 * NUM_ACTIONS
    assert [s.name for s in encoder.segments[-2:]] == ["plan.values", "plan.choice"]
    assert encoder.segments[-1].stop == encoder.size
    checked = 0
    for state in random_positions(num_players, 30, seed=num_players):
        for seat in range(num_players):
            view = KELTIS.live_view(state, seat)
            obs = encoder.encode(view)
            assert np.array_equal(obs[: base.size], base.encode(view)), "the standard part changed"
            values, choice = obs[base.size : base.size + NUM_ACTIONS], obs[base.size + NUM_ACTIONS :]
            if state.is_over or state.current_player != seat:
                assert not values.any() and not choice.any(), "a feature for a player who is not to act"
                continue
            expected = np.zeros(NUM_ACTIONS, np.float32)
            pairs = action_values(view)
            best = max(v for _, v in pairs)
            for a, v in pairs:
                expected[a] = max(0.0, 1.0 + (v - best) / PLAN_SCALE)
            assert np.allclose(values, expected)
            planner = make_bot("planner", game="keltis")
            assert np.flatnonzero(choice).tolist() == [planner.act(view)]
            assert set(np.flatnonzero(values)) <= set(state.legal_actions())
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("num_players", [2, 4])
def test_batched_encoding_with_features_gives_the_observations_of_encode(num_players):
    states = random_positions(num_players, 16, seed=7)
    encoders = [KELTIS.make_encoder(num_players, ("plan",)) for _ in states]
    views = [KELTIS.live_view(s, (s.current_player + k) % num_players) for k, s in enumerate(states)]
    out = np.full((len(views), encoders[0].size), np.nan, np.float32)
    encoders[0].encode_into(views, out, encoders)
    assert np.array_equal(out, np.stack([e.encode(v) for e, v in zip(encoders, views, strict=True)]))


def _rows_from_the_observation(base, obs, num_players):
    """The ``rows`` feature recomputed from the standard observation alone (its rows'
    last values, directions and played cards): the feature adds no information."""
    ix = base.index
    played = sum(obs[ix[f"p{i}.played"].start:ix[f"p{i}.played"].stop] for i in range(num_players)) * 2
    out = np.zeros(3 * NUM_CARD_KINDS, np.float32)
    for i in range(num_players):
        last = obs[ix[f"p{i}.last"].start:ix[f"p{i}.last"].stop].reshape(NUM_COLORS, NUM_VALUES)
        flags = obs[ix[f"p{i}.direction"].start:ix[f"p{i}.direction"].stop].reshape(NUM_COLORS, 2)
        for c in range(NUM_COLORS):
            top = int(np.argmax(last[c])) if last[c].any() else -1
            d = 1 if flags[c, 0] else -1 if flags[c, 1] else 0
            for v in range(NUM_VALUES):
                if top >= 0 and d and (v < top if d > 0 else v > top):
                    continue  # the row does not take it (R4)
                k = c * NUM_VALUES + v
                if i:
                    out[2 * NUM_CARD_KINDS + k] += 1.0 / (num_players - 1)
                    continue
                out[k] = 1.0
                lost = [w for w in range(NUM_VALUES)
                        if (top < 0 or not d or (w >= top if d > 0 else w <= top))  # taken now
                        and top >= 0 and v != top and (w < v if v > top else w > v)]  # not after
                out[NUM_CARD_KINDS + k] = sum(2 - played[c * NUM_VALUES + w] for w in lost) / 22
    return out


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_rows_feature_is_a_function_of_the_standard_observation(num_players):
    base = KELTIS.make_encoder(num_players)
    encoder = KELTIS.make_encoder(num_players, ["rows"])
    assert encoder.size == base.size + 3 * NUM_CARD_KINDS
    assert [s.name for s in encoder.segments[-3:]] == ["rows.fits", "rows.cuts", "rows.others"]
    fits_checked = 0
    for state in random_positions(num_players, 30, seed=10 + num_players):
        for seat in range(num_players):
            view = KELTIS.live_view(state, seat)
            obs = encoder.encode(view)
            assert np.array_equal(obs[: base.size], base.encode(view)), "the standard part changed"
            feature = obs[base.size:]
            assert np.allclose(feature, _rows_from_the_observation(base, obs[: base.size], num_players))
            assert feature.min() >= 0.0 and feature.max() <= 1.0
            if state.current_player == seat and not state.is_over and state.phase == Phase.PLAY:
                # the rows that take a card are those the rules let it be played on
                plays = {a - ACTION_RANGES["play"][0] for a in state.legal_actions()
                         if ACTION_RANGES["play"][0] <= a < ACTION_RANGES["play"][1]}
                in_hand = set(view.hand)
                assert plays == {k for k in in_hand if feature[k]}
                fits_checked += 1
    assert fits_checked >= 10


def test_the_rows_feature_counts_what_a_card_cuts_off():
    from keltis_env.games.keltis.encoding import row_accepts, row_cut

    assert row_cut(-1, 0, 7) == (0, 0)  # a first card fixes nothing
    assert row_cut(4, 0, 4) == (0, 0)  # the same value: the row stays open
    assert row_cut(4, 0, 7) == (0, 7)  # 4 then 7: ascending, 0..6 lost
    assert row_cut(4, 0, 2) == (3, 11)  # 4 then 2: descending, 3..10 lost
    assert row_cut(4, 1, 9) == (4, 9)  # ascending from 4: 4..8 lost
    assert row_cut(8, -1, 3) == (4, 9)  # descending from 8: 4..8 lost
    assert row_accepts(5, 1, 5) and row_accepts(5, 1, 9) and not row_accepts(5, 1, 4)
    assert row_accepts(5, -1, 0) and not row_accepts(5, -1, 6) and row_accepts(-1, 0, 0)


def test_bad_feature_names_are_refused_naming_the_games_features():
    with pytest.raises(ValueError, match=r"feature 'cards' for game 'keltis'; its features: plan, rows"):
        KELTIS.make_encoder(2, ["cards"])
    with pytest.raises(ValueError, match="its features: none"):
        get_game("dice").make_encoder(2, ["plan"])
    with pytest.raises(ValueError, match="a list of feature names, got the string 'plan'"):
        KELTIS.make_encoder(2, "plan")
    with pytest.raises(ValueError, match="must be distinct"):
        KELTIS.make_encoder(2, ["plan", "plan"])
    with pytest.raises(ValueError, match="unknown observation feature"):
        KeltisLearnerEnv(features=["cards"])


def test_the_learner_view_with_features_passes_the_checkers():
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = KeltisLearnerEnv(opponents="planner", features=["plan"])
    assert env.observation_space.shape == (831 + 2 * NUM_ACTIONS,)
    gym_check(env, skip_render_check=True)
    sb3_check(env, warn=False)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    plain = KeltisLearnerEnv(opponents="planner")
    plain_obs, _ = plain.reset(seed=3)
    assert np.array_equal(obs[:831], plain_obs), "the features change the standard observation"
    assert obs[831 + NUM_ACTIONS :].sum() == 1.0  # the planner's choice for the learner's first decision


def _policy_zip(tmp_path, features):
    """A small untrained MaskablePPO policy for the learner view with ``features``."""
    from sb3_contrib import MaskablePPO

    env = KeltisLearnerEnv(opponents="random", features=features)
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=32, policy_kwargs={"net_arch": [16]}, seed=0,
                        device="cpu")
    path = tmp_path / f"policy_{len(features)}.zip"
    model.save(path)
    return path


def test_a_policy_file_names_its_features_and_its_bot_encodes_with_them(tmp_path):
    path = _policy_zip(tmp_path, ["plan"])
    with pytest.raises(PolicyLoadError, match="a 2-player keltis game has 831"):
        write_policy_info(path, "keltis", 2)  # the network takes the larger observation
    info = write_policy_info(path, "keltis", 2, ["plan"])
    assert info.features == ("plan",)
    assert read_policy_info(path).features == ("plan",)
    bot = make_bot(f"ppo:{path}", game="keltis", num_players=2)
    assert bot.encoder.size == 831 + 2 * NUM_ACTIONS
    state = KELTIS.new_state(KELTIS.make_config(num_players=2), 5)
    assert bot.act(KELTIS.live_view(state, state.current_player)) in state.legal_actions()
    # a policy without features keeps the metadata format it always had
    plain = _policy_zip(tmp_path, [])
    write_policy_info(plain, "keltis", 2)
    with zipfile.ZipFile(plain) as zf:
        assert "features" not in json.loads(zf.read(INFO_MEMBER))


def test_a_policy_file_naming_an_unknown_feature_is_refused(tmp_path):
    path = _policy_zip(tmp_path, ["plan"])
    write_policy_info(path, "keltis", 2, ["plan"])
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(members[INFO_MEMBER])
    meta["features"] = ["oracle"]
    members[INFO_MEMBER] = json.dumps(meta).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(PolicyLoadError, match="unknown observation feature 'oracle'"):
        read_policy_info(path)


def test_a_neural_opponent_must_take_the_learners_observation(tmp_path):
    from training.sb3.selfplay import GameBatch

    path = _policy_zip(tmp_path, [])
    write_policy_info(path, "keltis", 2)
    with pytest.raises(ValueError, match=r"trained with features \[\], the learner has \['plan'\]"):
        GameBatch(2, [f"ppo:{path}"], features=["plan"])


def test_training_with_features_imitates_and_writes_a_policy_that_plays_with_them(tmp_path):
    from training.common.config import ConfigError
    from training.sb3.config import load_config
    from training.train.__main__ import main

    with pytest.raises(ConfigError, match=r"env\.features: unknown observation feature 'cards'"):
        load_config(SMOKE, ["env.features=[cards]"])
    overrides = ["env.features=[plan]", "record.teacher=planner", "record.games=3", "record.dagger_rounds=1",
                 "record.dagger_games=2", "fit.epochs=2", "pretrain.anchor=1.0", "workers=1",
                 "total_timesteps=256", "eval.every=0", "eval.final_games=0", f"runs_dir={tmp_path}"]
    assert main(["--config", SMOKE, "--no-progress"] + [f"--set={o}" for o in overrides]) == 0
    (run,) = tmp_path.iterdir()
    stats = json.loads((run / "report.json").read_text())["pretrain"]
    assert stats["teacher"] == "planner" and stats["decisions_recorded"] > 300
    for name in ("policy.zip", "checkpoints/last.zip", "checkpoints/anchor.zip"):
        assert read_policy_info(run / name).features == ("plan",), name
    bot = make_bot(f"ppo:{run / 'policy.zip'}", game="keltis", num_players=2)
    state = KELTIS.new_state(KELTIS.make_config(num_players=2), 9)
    assert bot.act(KELTIS.live_view(state, state.current_player)) in state.legal_actions()
