"""The card game's colour relabellings (keltis_env/games/keltis/symmetry.py, keltis_env/core/symmetry.py):
checked against the engine, averaged into an equivariant policy, and used to augment a fit."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import random_positions

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from keltis_env.core.symmetry import Symmetry
from keltis_env.games.keltis.symmetry import AFFINE_PERMUTATIONS, COLOUR_PERMUTATIONS, relabel_state
from keltis_env.policy import INFO_MEMBER

KELTIS = get_game("keltis")
#: a policy file that names no relabellings (the shipped keltis_2p.zip plays averaged over 20)
POLICY = "policies/keltis_2p_value.zip"


def _segment(encoder, name: str) -> slice:
    seg = next(s for s in encoder.segments if s.name == name)
    return slice(seg.start, seg.start + seg.size)


def _plan_tie(obs: np.ndarray, encoder) -> bool:
    """Whether the planner's best value is shared (its choice is then the lowest id, which a
    relabelling need not keep)."""
    values = obs[_segment(encoder, "plan.values")]
    return bool(values.any()) and int((values == values.max()).sum()) > 1


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_encoding_a_relabelled_state_gives_the_relabelled_observation(num_players):
    encoder = KELTIS.make_encoder(num_players, ["plan", "rows"])
    symmetry = KELTIS.make_symmetry("colours", num_players, ["plan", "rows"])
    choice = _segment(encoder, "plan.choice")
    rng = random.Random(num_players)
    compared = ties = 0
    for state in random_positions(num_players, 12, seed=10 + num_players):
        g = rng.randrange(symmetry.size)
        relabelled = relabel_state(state, COLOUR_PERMUTATIONS[g])
        for seat in range(num_players):
            obs = encoder.encode(state.view(seat))
            expected = encoder.encode(relabelled.view(seat))
            got = obs[symmetry.obs_source[g]]
            if _plan_tie(obs, encoder):
                ties += 1  # everything but the planner's pick among equals must match
                keep = np.ones(encoder.size, bool)
                keep[choice] = False
                np.testing.assert_array_equal(got[keep], expected[keep])
            else:
                np.testing.assert_array_equal(got, expected)
            compared += 1
    assert compared >= 12 * num_players and ties < compared


@pytest.mark.parametrize("num_players", [2, 4])
def test_legal_actions_and_steps_commute_with_a_relabelling(num_players):
    symmetry = KELTIS.make_symmetry("colours", num_players)
    rng = random.Random(5)
    for state in random_positions(num_players, 6, seed=20 + num_players):
        g = rng.randrange(1, symmetry.size)
        perm = COLOUR_PERMUTATIONS[g]
        relabelled = relabel_state(state, perm)
        for _ in range(40):
            if state.is_over:
                break
            legal = state.legal_actions()
            assert sorted(symmetry.action_target[g][legal].tolist()) == sorted(relabelled.legal_actions())
            action = rng.choice(legal)
            state.apply(action)
            relabelled.apply(int(symmetry.action_target[g][action]))
            assert relabel_state(state, perm).to_dict() == relabelled.to_dict()
        assert relabelled.is_over == state.is_over
        if state.is_over:
            assert relabelled.scores() == state.scores()


def test_the_relabellings_form_groups_with_the_identity_first():
    full = KELTIS.make_symmetry("colours", 2, ["plan"])
    affine = KELTIS.make_symmetry("colours_affine", 2, ["plan"])
    assert (full.size, affine.size) == (120, 20)
    assert len(set(COLOUR_PERMUTATIONS)) == 120 and set(AFFINE_PERMUTATIONS) <= set(COLOUR_PERMUTATIONS)
    # closed under composition: the mean over them is exactly equivariant
    for perms in (COLOUR_PERMUTATIONS, AFFINE_PERMUTATIONS):
        group = set(perms)
        assert all(tuple(p[q[c]] for c in range(5)) in group for p in perms for q in perms)
    for s in (full, affine):
        assert (s.action_target[0] == np.arange(s.action_target.shape[1])).all()
        for g in range(s.size):
            assert (s.action_source[g][s.action_target[g]] == np.arange(s.action_target.shape[1])).all()


def test_a_relabelled_batch_keeps_every_move_legal_and_every_row_its_own_relabelling():
    symmetry = KELTIS.make_symmetry("colours", 2)
    encoder = KELTIS.make_encoder(2)
    rng = random.Random(3)
    states = [s for s in random_positions(2, 20, seed=30) if not s.is_over]
    obs = np.stack([encoder.encode(s.view(s.current_player)) for s in states])
    masks = np.stack([encoder.mask(s.legal_actions()) for s in states])
    actions = np.array([rng.choice(s.legal_actions()) for s in states])
    which = np.array([rng.randrange(symmetry.size) for _ in states])
    r_obs, r_masks, r_actions, r_soft = symmetry.relabel(which, obs, masks, actions, per_action=masks)
    assert r_masks[np.arange(len(states)), r_actions].all()
    np.testing.assert_array_equal(r_soft, r_masks)
    for i, (state, g) in enumerate(zip(states, which, strict=True)):
        other = relabel_state(state, COLOUR_PERMUTATIONS[g])
        np.testing.assert_array_equal(r_obs[i], encoder.encode(other.view(other.current_player)))
        np.testing.assert_array_equal(r_masks[i], encoder.mask(other.legal_actions()))


@pytest.mark.parametrize("name", ["colours", "colours_affine"])
def test_averaging_over_a_group_makes_any_network_equivariant(name):
    symmetry = KELTIS.make_symmetry(name, 2)
    encoder = KELTIS.make_encoder(2)
    weights = np.random.default_rng(0).normal(size=(encoder.size, symmetry.action_target.shape[1]))

    def net(x):
        return np.tanh(x @ weights)

    state = next(s for s in random_positions(2, 5, seed=40) if not s.is_over)
    obs = encoder.encode(state.view(0))[None]
    assert not np.allclose(net(obs[:, symmetry.obs_source[3]])[0][symmetry.action_target[3]], net(obs)[0])
    mean = symmetry.symmetrize(net, obs)[0]
    for g in range(symmetry.size):
        relabelled = symmetry.symmetrize(net, obs[:, symmetry.obs_source[g]])[0]
        np.testing.assert_allclose(relabelled[symmetry.action_target[g]], mean, rtol=1e-5, atol=1e-6)


def test_the_ppo_bot_averages_over_relabellings_and_still_plays_legal_moves():
    plain = make_bot(f"ppo:{POLICY}", seed=0, game="keltis", num_players=2)
    averaged = make_bot(f"ppo:{POLICY},symmetry=colours_affine", seed=0, game="keltis", num_players=2)
    assert "symmetry=colours_affine" in repr(averaged)
    symmetry = KELTIS.make_symmetry("colours_affine", 2, ["plan"])
    differ = 0
    for state in random_positions(2, 10, seed=50):
        if state.is_over:
            continue
        view = state.view(state.current_player)
        obs = plain.encoder.encode(view)[None]
        np.testing.assert_allclose(averaged.logits(view), symmetry.symmetrize(plain.policy.sparse_logits, obs)[0],
                                   rtol=1e-5)
        assert averaged.act(view) in state.legal_actions()
        differ += not np.allclose(averaged.logits(view), plain.logits(view))
    assert differ


def test_an_unknown_relabelling_is_refused_naming_the_game_s():
    with pytest.raises(ValueError, match="no relabelling 'shapes'; its relabellings: colours, colours_affine"):
        KELTIS.make_symmetry("shapes", 2)
    with pytest.raises(ValueError, match="'dice' has no relabelling 'colours'; its relabellings: none"):
        get_game("dice").make_symmetry("colours", 2)
    with pytest.raises(ValueError, match="no relabelling 'shapes'"):
        make_bot(f"ppo:{POLICY},symmetry=shapes", seed=0, game="keltis", num_players=2)
    with pytest.raises(ValueError, match="perm must order the colour indices"):
        relabel_state(random_positions(2, 1, seed=1)[0], [0, 0, 1, 2, 3])


def test_maps_that_are_not_permutations_or_lack_the_identity_are_refused():
    ident_obs, ident_act = np.arange(4)[None], np.arange(3)[None]
    with pytest.raises(ValueError, match="permutation of the action ids"):
        Symmetry("bad", ident_obs, np.array([[0, 0, 2]]))
    with pytest.raises(ValueError, match="permutation of the observation's positions"):
        Symmetry("bad", np.array([[0, 1, 1, 3]]), ident_act)
    with pytest.raises(ValueError, match="relabelling 0 must be the identity"):
        Symmetry("bad", ident_obs, np.array([[1, 0, 2]]))
    assert Symmetry("ok", np.stack([np.arange(4), [1, 0, 2, 3]]), np.stack([np.arange(3), [2, 1, 0]])).size == 2


def _metadata(path) -> dict:
    return json.loads(zipfile.ZipFile(path).read(INFO_MEMBER))


def test_a_policy_file_may_say_it_plays_averaged_over_relabellings(tmp_path):
    from keltis_env.policy import read_policy_info, write_policy_info

    path = tmp_path / "p.zip"
    path.write_bytes(Path(POLICY).read_bytes())
    plain = read_policy_info(path)
    info = write_policy_info(path, "keltis", 2, plain.features, plain.value_reward, symmetry="colours_affine")
    assert read_policy_info(path) == info and info.symmetry == "colours_affine"
    assert _metadata(path)["format"] == 3 and _metadata(path)["symmetry"] == "colours_affine"
    default = make_bot(f"ppo:{path}", seed=0, game="keltis", num_players=2)
    named = make_bot(f"ppo:{POLICY},symmetry=colours_affine", seed=0, game="keltis", num_players=2)
    alone = make_bot(f"ppo:{path},symmetry=none", seed=0, game="keltis", num_players=2)
    original = make_bot(f"ppo:{POLICY}", seed=0, game="keltis", num_players=2)
    assert default.symmetry is not None and alone.symmetry is None and original.symmetry is None
    state = next(s for s in random_positions(2, 5, seed=60) if not s.is_over)
    view = state.view(state.current_player)
    np.testing.assert_array_equal(default.logits(view), named.logits(view))
    np.testing.assert_array_equal(alone.logits(view), original.logits(view))
    # back to a file without relabellings: format 2 again, the metadata as before
    write_policy_info(path, "keltis", 2, plain.features, plain.value_reward)
    assert read_policy_info(path) == plain and "symmetry" not in _metadata(path) and _metadata(path)["format"] == 2


def test_a_policy_file_naming_relabellings_its_game_lacks_is_refused(tmp_path):
    from keltis_env.policy import PolicyLoadError, read_policy_info, write_policy_info

    path = tmp_path / "p.zip"
    path.write_bytes(Path(POLICY).read_bytes())
    before = path.read_bytes()
    with pytest.raises(PolicyLoadError, match="symmetry: the game 'keltis' has no relabelling 'shapes'"):
        write_policy_info(path, "keltis", 2, ["plan"], symmetry="shapes")
    assert path.read_bytes() == before

    def rewrite(meta: dict) -> None:
        items = [(i, zipfile.ZipFile(path).read(i.filename)) for i in zipfile.ZipFile(path).infolist()
                 if i.filename != INFO_MEMBER]
        with zipfile.ZipFile(path, "w") as out:
            for item, data in items:
                out.writestr(item, data)
            out.writestr(INFO_MEMBER, json.dumps(meta))

    meta = _metadata(path)
    rewrite({**meta, "format": 3, "symmetry": "shapes"})
    with pytest.raises(PolicyLoadError, match=r"relabellings 'shapes', which the game does not have "
                                              r"\(its relabellings: colours, colours_affine"):
        read_policy_info(path)
    rewrite({**meta, "format": 2, "symmetry": "colours"})
    with pytest.raises(PolicyLoadError, match=r"symmetry must name relabellings of the game \(metadata format 3\)"):
        read_policy_info(path)


def test_a_search_guided_by_a_file_that_plays_relabelled_ranks_as_the_file_plays(tmp_path):
    from keltis_env.bots.net_guide import NetGuide
    from keltis_env.policy import read_policy_info, write_policy_info

    path = tmp_path / "p.zip"
    path.write_bytes(Path(POLICY).read_bytes())
    plain = read_policy_info(path)
    write_policy_info(path, "keltis", 2, plain.features, plain.value_reward, symmetry="colours_affine")
    guide, alone = NetGuide(path, "keltis", 2, 10.0), NetGuide(POLICY, "keltis", 2, 10.0)
    bot = make_bot(f"ppo:{path}", seed=0, game="keltis", num_players=2)
    differ = 0
    for state in random_positions(2, 8, seed=70):
        if state.is_over:
            continue
        view = state.view(state.current_player)
        prior = guide.log_prior(view)
        assert max(prior, key=prior.get) == bot.act(view) == guide.act(state)
        differ += prior != alone.log_prior(view)
    assert differ


def test_keltis_policy_shows_a_file_and_sets_the_relabellings_it_plays_averaged_over(tmp_path, capsys):
    from keltis_env.cli import main
    from keltis_env.policy import read_policy_info

    path = tmp_path / "p.zip"
    path.write_bytes(Path(POLICY).read_bytes())
    assert main(["policy", str(path), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["game"], facts["num_players"], facts["features"]) == ("keltis", 2, ["plan"])
    assert (facts["symmetry"], facts["relabellings"]) == ("none", 1)
    assert main(["policy", str(path), "--symmetry", "colours_affine"]) == 0
    assert "mean of its logits over 20 relabellings (colours_affine)" in capsys.readouterr().out
    assert read_policy_info(path).symmetry == "colours_affine"
    before = path.read_bytes()
    assert main(["policy", str(path), "--symmetry", "shapes"]) == 2
    assert "no relabelling 'shapes'; its relabellings: colours, colours_affine" in capsys.readouterr().err
    assert path.read_bytes() == before, "a refused change leaves the file as it was"
    assert main(["policy", str(path), "--symmetry", "none"]) == 0
    assert read_policy_info(path).symmetry == "" and _metadata(path)["format"] == 2
    assert main(["policy", str(tmp_path / "missing.zip")]) == 2
    assert "no policy file" in capsys.readouterr().err
