"""The trained-policy bot (keltis_env.bots.ppo): the numpy forward pass against SB3's own,
policies that know their game and player count, and files that are missing, truncated or
corrupt."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from keltis_env.bots import make_bot, parse_spec
from keltis_env.core.game import game_names, get_game
from keltis_env.envs.learner import KeltisLearnerEnv
from keltis_env.policy import INFO_MEMBER, PolicyLoadError, load_policy, read_policy_info, write_policy_info
from keltis_env.policy import format as policy_format

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "policies" / "keltis_2p.zip"
GAMES = tuple(game_names())


def _model(game: str, num_players: int = 2, net_arch=(16,), activation: str = "tanh"):
    import torch
    from sb3_contrib import MaskablePPO

    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[activation]
    env = KeltisLearnerEnv(game=game, num_players=num_players)
    return MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu",
                       policy_kwargs={"net_arch": list(net_arch), "activation_fn": act})


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """Per game: a 2-player policy exported by training (with metadata) and the same model
    saved by SB3 alone (without); and a 3-player dice policy with ReLU and two layers."""
    from training.imitate.network import export_policy

    folder = tmp_path_factory.mktemp("policies")
    out = {}
    for game in GAMES:
        model = _model(game)
        export_policy(model, folder / f"{game}_2p.zip", game, 2)
        model.save(folder / f"{game}_2p_plain.zip")
        out[game] = (model, folder / f"{game}_2p.zip", folder / f"{game}_2p_plain.zip")
    model = _model("dice", 3, net_arch=(32, 8), activation="relu")
    export_policy(model, folder / "dice_3p.zip", "dice", 3)
    out["dice3"] = (model, folder / "dice_3p.zip", None)
    return out


def _sb3_logits(model, obs):
    import torch

    with torch.no_grad():
        return model.policy.get_distribution(torch.as_tensor(obs[None])).distribution.logits[0].numpy()


def _play(game: str, num_players: int, seed: int, steps: int):
    """Views of the first ``steps`` decisions of a game played by legal_actions()[-1]."""
    descriptor = get_game(game)
    state = descriptor.new_state(descriptor.make_config(num_players=num_players), seed)
    for _ in range(steps):
        if state.is_over:
            return
        yield state.view(state.current_player)
        state.apply(state.legal_actions()[-1])


# ---------------------------------------------------------------------- the forward pass
@pytest.mark.parametrize("which", ["keltis", "dice", "dice3"])
def test_numpy_logits_equal_sb3_and_the_bot_plays_the_most_probable_legal_action(policies, which):
    model, path, _ = policies[which]
    info = read_policy_info(path)
    bot = make_bot(f"ppo:{path}", seed=0, game=info.game, num_players=info.num_players)
    encoder = get_game(info.game).make_encoder(info.num_players)
    for view in _play(info.game, info.num_players, seed=4, steps=30):
        logits = bot.logits(view)
        expected = _sb3_logits(model, encoder.encode(view))
        np.testing.assert_allclose(logits - logits.max(), expected - expected.max(), atol=1e-4)
        assert bot.act(view) == max(view.legal_actions, key=lambda a: logits[a])


def test_sampling_is_legal_and_seeded(policies):
    _, path, _ = policies["dice"]
    spec = f"ppo:{path},sample=1,temperature=2"
    assert parse_spec(spec) == ("ppo", {"path": str(path), "sample": 1, "temperature": 2})
    a, b = make_bot(spec, seed=7, game="dice"), make_bot(spec, seed=7, game="dice")
    for view in _play("dice", 2, seed=9, steps=40):
        action = a.act(view)
        assert action == b.act(view) and action in view.legal_actions


def test_the_shipped_policy_plays_as_sb3_computes_it():
    from sb3_contrib import MaskablePPO

    info = read_policy_info(SHIPPED)
    # trained with the plan feature: 831 standard values + 2 x 187 (README, "Optional observation features")
    assert (info.game, info.num_players, info.observation_size, info.num_actions) == ("keltis", 2, 1205, 187)
    assert info.features == ("plan",)
    assert not info.inferred, "policies/keltis_2p.zip carries its metadata"
    # it plays by the mean over the 20 affine colour relabellings (its metadata says so); the
    # network alone (symmetry=none) is what SB3 computes, and the mean is that network's
    assert info.symmetry == "colours_affine"
    model = MaskablePPO.load(SHIPPED, device="cpu")
    alone = make_bot(f"ppo:{SHIPPED},symmetry=none", game="keltis", num_players=2)
    bot = make_bot(f"ppo:{SHIPPED}", game="keltis", num_players=2)
    encoder = get_game("keltis").make_encoder(2, ("plan",))
    symmetry = get_game("keltis").make_symmetry("colours_affine", 2, ("plan",))
    for view in _play("keltis", 2, seed=11, steps=20):
        obs = encoder.encode(view)
        logits, expected = alone.logits(view), _sb3_logits(model, obs)
        np.testing.assert_allclose(logits - logits.max(), expected - expected.max(), atol=1e-4)
        relabelled = np.stack([_sb3_logits(model, obs[symmetry.obs_source[g]])[symmetry.action_target[g]]
                               for g in range(symmetry.size)])
        mean, averaged = relabelled.mean(axis=0), bot.logits(view)  # SB3's are log-probabilities: up to a constant
        np.testing.assert_allclose(averaged - averaged.max(), mean - mean.max(), atol=1e-4)


def test_a_process_that_plays_a_policy_never_imports_torch(policies):
    _, path, _ = policies["dice"]
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'stable_baselines3', 'sb3_contrib'):\n"
        "            raise ImportError(f'{name} is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from keltis_env.evaluation import evaluate\n"
        f"r = evaluate(['ppo:{path}', 'heuristic'], games=2, seed=0, workers=1, game='dice', progress=False)\n"
        "print(r.games, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "False"]


# ---------------------------------------------------------------------- game and players
def test_exported_policies_record_their_game_and_players(policies):
    for which, game, n in (("keltis", "keltis", 2), ("dice", "dice", 2), ("dice3", "dice", 3)):
        info = read_policy_info(policies[which][1])
        assert (info.game, info.num_players, info.inferred) == (game, n, False)
        assert info.observation_size == get_game(game).make_encoder(n).size
    meta = json.loads(zipfile.ZipFile(policies["dice3"][1]).read(INFO_MEMBER))
    assert meta == {"format": 2, "game": "dice", "num_players": 3, "observation_size": 381, "num_actions": 48,
                    "activation": "ReLU"}


@pytest.mark.parametrize(
    ("which", "game", "players", "message"),
    [
        ("keltis", "keltis", 3, "is a 2-player keltis policy; this is a 3-player keltis game"),
        ("keltis", "dice", 2, "is a 2-player keltis policy; this is a 2-player dice game"),
        ("dice3", "dice", 2, "is a 3-player dice policy; this is a 2-player dice game"),
        ("dice", "keltis", None, "is a 2-player dice policy; this is a keltis game"),
    ],
)
def test_a_policy_for_another_game_or_player_count_is_refused_when_the_bot_is_made(
    policies, which, game, players, message
):
    path = policies[which][1]
    with pytest.raises(PolicyLoadError, match=f"^{path}{message}$".replace(str(path), ".*")):
        make_bot(f"ppo:{path}", game=game, num_players=players)


def test_without_a_player_count_the_first_act_checks_it(policies):
    bot = make_bot(f"ppo:{policies['dice'][1]}", game="dice")  # the caller did not say
    view = next(_play("dice", 3, seed=0, steps=1))
    with pytest.raises(PolicyLoadError, match="is a 2-player dice policy; this is a 3-player dice game"):
        bot.act(view)


def test_evaluation_play_and_the_learner_refuse_a_mismatched_policy(policies):
    from keltis_env.cli.play import Console, PlaySession
    from keltis_env.evaluation import EvaluationError, evaluate

    path = policies["keltis"][1]
    with pytest.raises(EvaluationError, match="is a 2-player keltis policy; this is a 3-player keltis game"):
        evaluate([f"ppo:{path}", "random", "random"], games=3, seed=0, workers=1, progress=False)
    with pytest.raises(EvaluationError, match="is a 2-player keltis policy; this is a 2-player dice game"):
        evaluate([f"ppo:{path}", "random"], games=2, seed=0, workers=1, game="dice", progress=False)
    with pytest.raises(PolicyLoadError, match="is a 2-player keltis policy; this is a 3-player keltis game"):
        KeltisLearnerEnv(num_players=3, opponents=[f"ppo:{path}"])
    with pytest.raises(PolicyLoadError, match="is a 2-player keltis policy; this is a 2-player dice game"):
        KeltisLearnerEnv(game="dice", opponents=["random"]).add_opponent(f"ppo:{path}")
    with pytest.raises(PolicyLoadError, match="is a 2-player keltis policy; this is a 3-player keltis game"):
        PlaySession("keltis", 3, [f"ppo:{path}", "random"], seat=0, seed=0, console=Console())
    # the right game and count are accepted everywhere
    assert evaluate([f"ppo:{path}", "random"], games=2, seed=0, workers=1, progress=False).games == 2
    KeltisLearnerEnv(opponents=[f"ppo:{path}"]).reset(seed=0)


def test_game_and_players_are_not_spec_options(policies):
    with pytest.raises(ValueError, match="'game' is not a bot option"):
        make_bot(f"ppo:{policies['dice'][1]},game=dice", game="dice")
    with pytest.raises(ValueError, match="'num_players' is not a bot option"):
        make_bot("heuristic:num_players=2", game="dice")


def test_a_file_without_metadata_is_what_its_observation_size_implies(policies, monkeypatch):
    for game in GAMES:
        info = read_policy_info(policies[game][2])
        assert (info.game, info.num_players, info.inferred) == (game, 2, True)
    plain = policies["keltis"][2]
    with pytest.raises(PolicyLoadError, match="is a 2-player keltis policy; this is a 2-player dice game"):
        make_bot(f"ppo:{plain}", game="dice", num_players=2)
    # a second registered game with the same observation size and actions makes it ambiguous
    keltis = get_game("keltis")
    twin = SimpleNamespace(name="twin", num_actions=keltis.num_actions, min_players=2, max_players=2,
                           make_encoder=keltis.make_encoder)
    monkeypatch.setattr(policy_format, "game_names", lambda: ["keltis", "dice", "twin"])
    monkeypatch.setattr(policy_format, "get_game", lambda name: twin if name == "twin" else get_game(name))
    with pytest.raises(PolicyLoadError, match=r"has no metadata .* it could be 2-player keltis or 2-player twin"):
        read_policy_info(plain)
    assert read_policy_info(policies["keltis"][1]).game == "keltis"  # metadata settles it


def test_write_policy_info_adds_metadata_and_keeps_every_other_member(policies, tmp_path):
    source = policies["dice"][2]
    path = tmp_path / "p.zip"
    path.write_bytes(source.read_bytes())
    with pytest.raises(PolicyLoadError, match="a 2-player keltis game has 831 and 187"):
        write_policy_info(path, "keltis", 2)
    with pytest.raises(PolicyLoadError, match="a 3-player dice game has 381"):
        write_policy_info(path, "dice", 3)
    assert write_policy_info(path, "dice", 2).game == "dice"
    write_policy_info(path, "dice", 2)  # again: replaced, not duplicated
    before, after = zipfile.ZipFile(source), zipfile.ZipFile(path)
    assert after.namelist().count(INFO_MEMBER) == 1
    for name in before.namelist():
        assert after.read(name) == before.read(name)
    assert not read_policy_info(path).inferred


def test_a_file_may_declare_its_value_head_unreadable(policies, tmp_path):
    path = tmp_path / "actor.zip"
    path.write_bytes(policies["keltis"][2].read_bytes())
    write_policy_info(path, "keltis", 2, value_head=False)
    info = read_policy_info(path)
    assert not info.value_head and info.value_reward is None
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read(INFO_MEMBER))
    assert meta["value"] is False and meta["format"] >= 3
    from keltis_env.policy.network import load_policy

    assert not load_policy(path).has_value  # the layers are in the file; nothing reads them
    write_policy_info(path, "keltis", 2, value_reward="score")
    assert read_policy_info(path).value_head and load_policy(path).has_value


# ---------------------------------------------------------------------- broken files
def _copy_with(tmp_path: Path, source: Path, name: str, change) -> Path:
    path = tmp_path / name
    path.write_bytes(change(source.read_bytes()))
    return path


def test_missing_truncated_and_corrupt_files_are_named_as_such(policies, tmp_path):
    good = policies["keltis"][1]
    with pytest.raises(PolicyLoadError, match="no policy file at"):
        load_policy(tmp_path / "missing.zip")
    with pytest.raises(PolicyLoadError, match="is not a policy zip"):
        load_policy(_copy_with(tmp_path, good, "text.zip", lambda b: b"not a zip at all"))
    # cut anywhere, also just before the end where the zip nested in it (policy.pth) ends
    for keep in (-1, -100, -5000, good.stat().st_size * 2 // 3, good.stat().st_size // 3):
        truncated = _copy_with(tmp_path, good, f"cut{keep}.zip", lambda b, keep=keep: b[:keep])
        with pytest.raises(PolicyLoadError, match=r"is a truncated or corrupt zip .* expected a whole policy zip"):
            load_policy(truncated)
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("policy.pth")
        offset = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2

    def flip(data: bytes) -> bytes:
        return data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :]

    with pytest.raises(PolicyLoadError, match=r"is corrupt: its member 'policy.pth' cannot be read \(Bad CRC"):
        load_policy(_copy_with(tmp_path, good, "flipped.zip", flip))
    no_weights = tmp_path / "no_weights.zip"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(no_weights, "w") as dst:
        for item in src.infolist():
            if item.filename != "policy.pth":
                dst.writestr(item, src.read(item.filename))
    with pytest.raises(PolicyLoadError, match=r"holds no 'policy\.pth': not a policy zip"):
        load_policy(no_weights)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("data", "{}")
    with pytest.raises(PolicyLoadError, match="its 'data' member is not SB3's description"):
        load_policy(empty)
    with pytest.raises(ValueError, match="needs a policy file"):
        make_bot("ppo")


def test_weights_the_reader_does_not_know_fall_back_to_torch_or_say_why(policies, tmp_path):
    """A pickle naming anything but tensors is never run by the reader: torch's safe loader
    gets it, and refuses what is not weights."""
    import io
    import pickle

    import torch

    model, good, _ = policies["dice"]
    state = {k: v.clone() for k, v in model.policy.state_dict().items()}

    def repack(weights: bytes) -> Path:
        path = tmp_path / f"repacked{len(list(tmp_path.iterdir()))}.zip"
        with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w") as dst:
            for item in src.infolist():
                dst.writestr(item, weights if item.filename == "policy.pth" else src.read(item.filename))
        return path

    buffer = io.BytesIO()
    torch.save({"weights": state}, buffer)  # a plain dict nested in a dict: not a state dict
    with pytest.raises(PolicyLoadError, match=r"its weights \(policy.pth\) are not a tensor dictionary"):
        load_policy(repack(buffer.getvalue()))

    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    buffer = io.BytesIO()
    torch.save({"x": Evil()}, buffer, pickle_module=pickle)
    refused = r"cannot be read: the pickle names (__builtin__|builtins)\.print; torch: UnpicklingError"
    with pytest.raises(PolicyLoadError, match=refused):
        load_policy(repack(buffer.getvalue()))


def test_a_policy_whose_game_observation_changed_since_training_is_refused(policies, monkeypatch):
    """The one check every loader shares (keltis_env.policy.format.check_fits_game) compares
    the file's observation size with what the game's encoder makes now."""
    dice = get_game("dice")

    class Grown:
        def __getattr__(self, name):
            return getattr(dice, name)

        def make_encoder(self, n, features=()):
            return SimpleNamespace(size=dice.make_encoder(n, features).size + 5)

    monkeypatch.setattr(policy_format, "get_game", lambda name: Grown() if name == "dice" else get_game(name))
    with pytest.raises(PolicyLoadError, match="taking observations of size 313, but this dice encoder makes 318"):
        make_bot(f"ppo:{policies['dice'][1]}", game="dice", num_players=2)


def test_every_shipped_policy_is_the_game_and_player_count_its_name_and_recipe_say():
    from training.recipe.recipe import load_recipe

    recipes = {load_recipe(p).output: load_recipe(p) for p in sorted((ROOT / "configs" / "recipes").glob("*.yaml"))}
    names = sorted(p.stem for p in (ROOT / "policies").glob("*.zip"))
    assert {f"{game}_{n}p" for game in ("keltis", "dice") for n in (2, 3, 4)} <= set(names)
    for name in names:
        info = read_policy_info(ROOT / "policies" / f"{name}.zip")
        named = re.fullmatch(r"([a-z]+)_([234])p(?:_[a-z]+)?", name)  # GAME_Np, or GAME_Np_VARIANT
        assert named is not None, f"{name}.zip: policy files are named GAME_Np.zip or GAME_Np_VARIANT.zip"
        assert (info.game, info.num_players) == (named[1], int(named[2])), name
        assert not info.inferred, f"{name}.zip carries its metadata"
        recipe = recipes[f"policies/{name}.zip"]
        assert (recipe.game, recipe.num_players) == (info.game, info.num_players), name
        assert (ROOT / "policies" / f"{name}.eval.csv").stat().st_size > 0, name


@pytest.mark.slow
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_shipped_dice_policies_beat_the_dice_heuristic(players):
    from keltis_env.evaluation import evaluate

    agents = [f"ppo:{ROOT / 'policies' / f'dice_{players}p.zip'}"] + ["heuristic"] * (players - 1)
    result = evaluate(agents, games=60 * players, seed=11, workers=1, game="dice", progress=False)
    assert result.agents[0].win_rate_ci[0] > 1 / players


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ([], "expected a JSON object, got list"),
        ({"format": 99}, "format 99 is not one this version reads"),
        ({"format": True}, "format True is not one this version reads"),
        ({"num_players": "2"}, "num_players must be a positive integer, got '2'"),
        ({"observation_size": 1.5}, "observation_size must be a positive integer"),
        ({"game": 3}, "game must be a game's name, got 3"),
        ({"features": "plan"}, "features must be a list of names"),
        ({"format": 2, "value": False}, "value: false .* needs metadata format 3"),
        ({"format": 3, "value": True}, "value must be"),
    ],
)
def test_policy_metadata_of_the_wrong_shape_is_refused_naming_the_field(policies, tmp_path, meta, message):
    source = policies["keltis"][1]
    with zipfile.ZipFile(source) as zf:
        good = json.loads(zf.read(INFO_MEMBER))
        members = [(item, zf.read(item.filename)) for item in zf.infolist() if item.filename != INFO_MEMBER]
    bad = meta if isinstance(meta, list) else {**good, **meta}
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as out:
        for item, data in members:
            out.writestr(item, data)
        out.writestr(INFO_MEMBER, json.dumps(bad))
    with pytest.raises(PolicyLoadError, match=message):
        read_policy_info(path)


@pytest.mark.parametrize(("bad", "problem"), [(np.nan, "hold NaN values"), (np.inf, r"hold \+inf values"),
                                              (-np.inf, "are all -inf")])
@pytest.mark.parametrize("sample", [0, 1])
def test_logits_that_overflow_at_play_time_raise_naming_the_bot_not_play_a_move(bad, problem, sample):
    """Finite weights (NaN or infinite ones are refused when the bot is made) can still
    overflow on a view: the bot says so instead of playing the first legal action."""
    from keltis_env.policy import PolicyOutputError

    path = ROOT / "policies" / "dice_2p.zip"
    bot = make_bot(f"ppo:{path},sample={sample}", seed=0, game="dice", num_players=2)
    bot.batch_logits = lambda obs: np.full(get_game("dice").num_actions, bad)
    state = get_game("dice").new_state(get_game("dice").make_config(2), 0)
    view = state.view(state.current_player)
    with pytest.raises(PolicyOutputError, match=rf"ppo:.*dice_2p\.zip: the network's logits of the \d+ legal actions "
                                                rf"{problem}.*, so it cannot choose"):
        bot.act(view)
