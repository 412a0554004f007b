"""Expert iteration from zero (python -m training.zero): a tiny run end to end, a stopped run
resumed ends where an unstopped one does, no bot takes part in training, and bad configs
are refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from training.common.config import ConfigError
from training.zero.__main__ import main
from training.zero.config import load_config

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "zero" / "tiny.yaml")
MAIN = ROOT / "configs" / "zero" / "keltis_2p.yaml"


def _weights(run: Path) -> dict[str, np.ndarray]:
    import torch

    state = torch.load(run / "state.pt", weights_only=False)
    return {k: v.numpy() for k, v in state["policy"].items()}


def test_a_tiny_run_learns_writes_its_curve_and_exports_a_playable_network(tmp_path):
    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet"]) == 0
    curve = [json.loads(line) for line in (run / "curve.jsonl").read_text().splitlines()]
    assert curve and curve[-1]["decisions"] >= 600
    assert [c["generation"] for c in curve] == list(range(len(curve)))
    evals = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert evals[0]["decisions"] == 0 and evals[-1]["decisions"] == curve[-1]["decisions"]
    assert (run / "best.zip").is_file() and "expert iteration from zero" in (run / "report.md").read_text()
    assert (run / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from keltis_env.bots import make_bot
    from keltis_env.games.keltis import GameConfig, GameState
    from keltis_env.policy import read_policy_info

    info = read_policy_info(run / "network.zip")
    assert info.value_reward == "score" and info.features == () and info.num_players == 2
    bot = make_bot(f"ppo:{run / 'network.zip'}", num_players=2)
    state = GameState.new_game(GameConfig(num_players=2), seed=1)
    assert bot.act(state.view(state.current_player)) in state.legal_actions()
    gumbel = make_bot(f"gumbel:net={run / 'network.zip'},simulations=4", num_players=2)
    assert gumbel.act(state.view(state.current_player)) in state.legal_actions()


def test_each_line_of_a_quiet_run_is_flushed_as_it_is_written(tmp_path, monkeypatch):
    events: list[str] = []

    class Stream:  # stdout as a file or a pipe: nothing is seen until it is flushed
        def write(self, text):
            events.append(text)

        def flush(self):
            events.append("<flush>")

    monkeypatch.setattr("sys.stdout", Stream())
    assert main(["--config", TINY, "--out", str(tmp_path / "run"), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=50"]) == 0
    at = next(i for i, e in enumerate(events) if e.startswith("generation 0:"))
    assert "<flush>" in events[at + 1:at + 3]


def test_the_samples_hold_the_search_targets_and_the_outcomes(tmp_path):
    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=100"]) == 0
    with np.load(run / "buffer" / "gen_00000.npz") as data:
        policy, mask, value, seat, game = data["policy"], data["mask"], data["value"], data["seat"], data["game"]
    assert np.allclose(policy.sum(axis=1), 1.0, atol=1e-5) and np.all(policy[~mask] == 0)
    for g in np.unique(game):  # a game's two seats end with opposite score rewards (two players)
        ends = {int(s): float(value[(game == g) & (seat == s)][0]) for s in np.unique(seat[game == g])}
        assert len(ends) == 2 and ends[0] == pytest.approx(-ends[1])
        assert all(np.all(value[(game == g) & (seat == s)] == v) for s, v in ends.items())


def test_each_generation_reports_the_value_error_on_its_games_before_the_fit(tmp_path):
    """Generation 0's games against the network it started with (the config's fresh
    weights): the mean squared error of its values against the outcomes."""
    import torch

    from training.zero.loop import forward, fresh_model

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=100"]) == 0
    line = json.loads((run / "curve.jsonl").read_text().splitlines()[0])
    with np.load(run / "buffer" / "gen_00000.npz") as data:
        obs, value = data["obs"], data["value"]
    start = fresh_model(load_config(TINY)).policy
    with torch.no_grad():
        predicted = forward(start, torch.as_tensor(obs))[1].numpy()
    assert line["new_games_value_loss"] == pytest.approx(float(((predicted - value) ** 2).mean()), abs=1e-5)
    assert line["new_games_value_loss"] > 0
    assert "value loss, new games" in (run / "report.md").read_text()


def test_a_full_critic_fits_on_the_true_hidden_cards_and_exports_the_actor_alone(tmp_path):
    from keltis_env.games.keltis import GameConfig, GameState
    from keltis_env.policy import read_policy_info
    from training.common.critic import PrivilegedCriticPolicy
    from training.zero.loop import Run

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set", "decisions=100",
                 "--set", "critic=full"]) == 0
    with np.load(run / "buffer" / "gen_00000.npz") as data:
        obs = data["obs"]
    assert obs.shape[1] == 831 + 110  # the observation, then the other hand and the removed cards
    assert np.all(obs[:, 831:].sum(axis=1) * 2 == 30 + 8)  # 2 players: 30 cards removed, 8 in the other hand
    info = read_policy_info(run / "network.zip")
    assert info.observation_size == 831 and not info.value_head
    from keltis_env.bots import make_bot

    bot = make_bot(f"ppo:{run / 'network.zip'}", num_players=2)
    state = GameState.new_game(GameConfig(num_players=2), seed=1)
    assert bot.act(state.view(state.current_player)) in state.legal_actions()
    from keltis_env.bots.gumbel import load_critic

    layers, _ = load_critic(run / "network.critic.npz", "keltis", 2, ())  # the critic beside the actor
    assert layers[0][0].shape[0] == 941
    with pytest.raises(ValueError, match="no value head"):
        make_bot(f"gumbel:net={run / 'network.zip'}", num_players=2)
    spec = f"gumbel:net={run / 'network.zip'},critic={run / 'network.critic.npz'},simulations=4"
    search, again = make_bot(spec, num_players=2, seed=5), make_bot(spec, num_players=2, seed=5)
    assert search._search.hidden_size == 110
    view = state.view(state.current_player)
    assert search.act(view) in state.legal_actions() and again.act(view) == search.act(view)
    resumed = Run(load_config(run / "config.yaml"), run, log=lambda *a: None, progress=False)
    resumed.prepare("test")
    assert isinstance(resumed.policy, PrivilegedCriticPolicy) and resumed.search.hidden_size == 110


def test_a_stopped_run_resumed_ends_where_an_unstopped_one_does(tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    common = ["--quiet", "--set", "eval.every=0"]
    assert main(["--config", TINY, "--out", str(whole), *common]) == 0
    assert main(["--config", TINY, "--out", str(parts), *common, "--set", "decisions=300"]) == 0
    assert main(["--resume", str(parts), "--quiet", "--set", "decisions=600"]) == 0
    a, b = _weights(whole), _weights(parts)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    strip = ("seconds", "minutes", "selfplay_seconds", "fit_seconds")
    lines = [[{k: v for k, v in json.loads(x).items() if k not in strip}
              for x in (r / "curve.jsonl").read_text().splitlines()] for r in (whole, parts)]
    assert lines[0] == lines[1]


def test_training_makes_no_bot(tmp_path, monkeypatch):
    """With no evaluation, nothing of a run makes a bot: the search and the network alone
    play every game (the bots only score checkpoints)."""
    import keltis_env.bots as bots

    def refused(*args, **kwargs):
        raise AssertionError(f"a bot was made in training: {args}")

    monkeypatch.setattr(bots, "make_bot", refused)
    monkeypatch.setattr(bots, "bot_factory", refused)
    assert main(["--config", TINY, "--out", str(tmp_path / "run"), "--quiet", "--set", "eval.every=0", "--set",
                 "eval.opponents=[]", "--set", "decisions=200"]) == 0


def test_the_from_zero_config_uses_only_the_rules():
    config = load_config(MAIN)
    assert config.init == "" and "plan" not in config.env.features
    assert set(config.eval.opponents) <= {"heuristic", "planner"} or all(":" in o for o in config.eval.opponents)


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "zero").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_config_loads_and_only_a_trained_start_reads_the_plan_feature(path):
    config = load_config(path)
    assert config.name.startswith("zero_") or path.stem == "tiny"
    assert config.init or "plan" not in config.env.features


@pytest.mark.parametrize("override, message", [
    ("env.features=[plan]", "'plan' is computed by a hand-written model of the game"),
    ("env.game=dice", "worlds for the card game only"),
    ("env.reward=win", "env.reward: the search's values are score rewards"),
    ("selfplay.parallel=9", "selfplay.parallel \\(9\\) must be at most selfplay.games \\(4\\)"),
    ("search.top_k=1", "search.top_k"),
    ("symmetry=mirror", "symmetry: the game 'keltis' has no relabelling 'mirror'; give none or one of"),
    ("fit.augment=mirror", "fit.augment: the game 'keltis' has no relabelling 'mirror'; give none or one of"),
])
def test_bad_configs_are_refused_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(TINY, [override])


def test_augmentation_refuses_a_critic_that_reads_the_hidden_cards():
    with pytest.raises(ConfigError, match=r"fit\.augment: the relabellings map the seat's observation"):
        load_config(TINY, ["fit.augment=colours_affine", "critic=full"])
    assert load_config(TINY, ["fit.augment=none", "critic=full"]).fit.augment == "none"


def test_an_augmented_fit_teaches_every_relabelling_of_a_position_its_relabelled_target():
    import torch

    from keltis_env.core.game import get_game
    from keltis_env.games.keltis import GameConfig, GameState
    from training.zero.loop import augment_symmetry, fit_minibatches, forward, fresh_model

    game = get_game("keltis")
    state = GameState.new_game(GameConfig(num_players=2), seed=5)
    obs = np.asarray(game.make_encoder(2, ()).encode(state.view(state.current_player)), np.float32)[None]
    mask = np.zeros((1, game.num_actions), bool)
    mask[0, state.legal_actions()] = True
    target = np.zeros((1, game.num_actions), np.float32)
    action = int(np.flatnonzero(mask[0])[-1])
    target[0, action] = 1.0
    data = {"obs": obs, "mask": mask, "policy": target, "value": np.zeros(1, np.float32)}
    plain_config = load_config(TINY, ["seed=3"])
    assert augment_symmetry(plain_config) is None
    config = load_config(TINY, ["seed=3", "fit.augment=colours_affine"])
    symmetry = augment_symmetry(config)
    assert symmetry.size > 1
    which = np.arange(symmetry.size)
    views, masks, _, _ = symmetry.relabel(which, np.repeat(obs, len(which), 0), np.repeat(mask, len(which), 0))
    expected = symmetry.action_target[which, action]

    def argmax_moves(symmetry_or_none, steps):
        torch.manual_seed(0)
        policy = fresh_model(config).policy
        optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
        fit_minibatches(policy, optimizer, data, steps, 8, 0.0, np.random.default_rng(0), symmetry_or_none)
        with torch.no_grad():
            logits = forward(policy, torch.as_tensor(views))[0].masked_fill(~torch.as_tensor(masks), -1e9)
        return logits.argmax(dim=1).numpy()

    assert np.array_equal(argmax_moves(symmetry, 1500), expected)
    # without relabelling only the position as seen is taught
    assert not np.array_equal(argmax_moves(None, 300), expected)


def test_the_files_written_play_averaged_over_the_relabellings_the_config_names(tmp_path):
    from keltis_env.policy import read_policy_info

    run = tmp_path / "run"
    opponent = f"ppo:{ROOT / 'policies' / 'keltis_2p_scratch.zip'}"  # a spec with slashes names its games' folder
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "decisions=50", "--set",
                 f"eval.opponents=[{opponent}]", "--set", "symmetry=colours_affine"]) == 0
    for name in ("network.zip", "best.zip"):
        assert read_policy_info(run / name).symmetry == "colours_affine"
    assert len(list((run / "eval_games").iterdir())) == 2  # the start network and the last one
    plain = tmp_path / "plain"
    assert main(["--config", TINY, "--out", str(plain), "--quiet", "--set", "decisions=50", "--set",
                 "eval.every=0"]) == 0
    assert read_policy_info(plain / "network.zip").symmetry == ""


def test_a_resumed_run_may_change_only_its_budgets(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=50"]) == 0
    assert main(["--resume", str(run), "--set", "search.simulations=8"]) == 2
    assert "a resumed run may change only decisions, minutes" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path / "nothing")]) == 2


def test_a_recipe_stage_of_expert_iteration_from_zero_runs_at_a_tiny_scale(tmp_path):
    from keltis_env.policy import read_policy_info
    from training.recipe.__main__ import main as recipe_main

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"output: {tmp_path / 'out.zip'}\ngame: keltis\nplayers: 2\nstages:\n"
                      f"  - zero: {{name: zero, config: {{base: {MAIN}}}, set: {{eval.opponents: [random]}}}}\n")
    work = tmp_path / "work"
    assert recipe_main([str(recipe), "--tiny", "--work", str(work), "--no-progress"]) == 0
    info = read_policy_info(work / "policy.zip")
    assert info.features == ("rows",) and info.value_reward == "score"
    assert (work / "zero" / "run" / "best.zip").is_file()


def test_refit_holds_out_the_newest_generation_and_writes_a_playable_policy(tmp_path, capsys):
    from keltis_env.bots import make_bot
    from keltis_env.games.keltis import GameConfig, GameState
    from training.zero.refit import main as refit_main

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set",
                 "decisions=700"]) == 0
    capsys.readouterr()
    sizes = []
    for path in sorted((run / "buffer").glob("gen_*.npz")):
        with np.load(path) as data:
            sizes.append(len(data["value"]))
    assert len(sizes) == 2
    out = tmp_path / "refit.zip"
    assert refit_main([str(run), "--out", str(out), "--held", "1", "--passes", "8", "--learning-rate", "3e-3"]) == 0
    text = capsys.readouterr().out
    assert f"({sizes[0]:,} samples), held out 1-1 ({sizes[1]:,})" in text
    lines = [line for line in text.splitlines() if line.startswith("step ")]
    assert len(lines) == 5 and lines[0].startswith("step 0: held out KL ")
    kl = [float(line.rsplit("KL ", 1)[1]) for line in lines[1:]]
    assert kl[-1] < kl[0], "fitting lowers the KL of the fitted samples' targets to the network"
    state = GameState.new_game(GameConfig(num_players=2), seed=3)
    assert make_bot(f"ppo:{out}", num_players=2).act(state.view(state.current_player)) in state.legal_actions()
    assert refit_main([str(run), "--out", str(tmp_path / "again.zip"), "--held", "2"]) == 2
    assert "--held must be from 1 to 1" in capsys.readouterr().err and not (tmp_path / "again.zip").exists()
    assert refit_main([str(run), "--out", str(tmp_path / "again.zip"), "--augment", "mirror"]) == 2
    assert "fit.augment: the game 'keltis' has no relabelling 'mirror'" in capsys.readouterr().err
    assert not (tmp_path / "again.zip").exists()
    assert refit_main([str(run), "--out", str(tmp_path / "relabelled.zip"), "--augment", "colours_affine",
                       "--passes", "1"]) == 0
    assert (tmp_path / "relabelled.zip").is_file()
    assert refit_main([str(run), "--out", str(tmp_path / "again.zip"), "--sharpen", "1.5"]) == 2
    assert "--sharpen must be from 0 (the most likely move) to 1" in capsys.readouterr().err
    capsys.readouterr()
    assert refit_main([str(run), "--out", str(tmp_path / "moves.zip"), "--sharpen", "0", "--passes", "64",
                       "--learning-rate", "3e-3"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    agreed = [float(line.split("fitted samples' moves agreed ")[1].split("%")[0]) for line in lines[1:]]
    assert agreed[-1] > 90.0, "fitted on the targets' most likely moves, the network plays them"


def test_a_widened_network_computes_what_the_start_does():
    import torch

    from training.imitate.network import load_model
    from training.zero.loop import forward
    from training.zero.refit import widened

    config = load_config(TINY)  # the observation of keltis_2p_scratch.zip: no features
    start = load_model(str(ROOT / "policies" / "keltis_2p_scratch.zip"))
    wide = widened(start, 300, config)
    assert [m.out_features for m in wide.policy.mlp_extractor.policy_net if hasattr(m, "out_features")] == [300, 300]
    obs = torch.as_tensor(np.random.default_rng(0).random((16, start.observation_space.shape[0]), np.float32))
    with torch.no_grad():
        (a, va), (b, vb) = forward(start.policy, obs), forward(wide.policy, obs)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)
    with pytest.raises(ConfigError, match="--widen must be at least the start's widest hidden layer"):
        widened(start, 8, config)


def test_sharpened_targets_keep_the_legal_moves_and_their_order():
    from training.zero.refit import sharpened

    mask = np.array([[True, True, True, False], [True, False, True, True]])
    policy = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.0, 0.1, 0.8]], np.float32)
    data = {"policy": policy, "mask": mask}
    assert sharpened(data, 1.0) is data
    half = sharpened(data, 0.5)["policy"]
    assert np.allclose(half.sum(axis=1), 1.0) and np.all(half[~mask] == 0)
    assert np.allclose(half[0, :3], np.array([25, 9, 4]) / 38, atol=1e-6)
    assert np.array_equal(sharpened(data, 0.0)["policy"], np.array([[1, 0, 0, 0], [0, 0, 0, 1]], np.float32))


def test_the_targets_probe_is_seeded_and_a_search_that_barely_moves_gains_nothing(tmp_path, capsys):
    from training.zero.targets import main as targets_main

    args = ["policies/keltis_2p_scratch.zip", "--positions", "8", "--rollouts", "4", "--candidates", "4",
            "--search", "simulations=8,depth=2", "--search", "simulations=8,depth=2,c_scale=1e-6"]
    rows, positions = [], 0
    for name in ("a.json", "b.json"):
        assert targets_main([*args, "--json", str(tmp_path / name)]) == 0
        data = json.loads((tmp_path / name).read_text())
        rows.append([{k: v for k, v in row.items() if k != "seconds"} for row in data["rows"]])
        positions = data["positions"]
    assert rows[0] == rows[1], "the same seed gives the same positions, judged values and searches"
    searching, still = rows[0]
    assert searching["search"] == "simulations=8,depth=2" and searching["moved"] > 0.01 and searching["noise"] > 0
    assert still["moved"] < 1e-4 and still["noise"] < 1e-4 and abs(still["target_gain"]) < 1e-3
    assert still["moves_counted"] == positions > 0 and still["move_gain"] == 0.0  # it plays the network's first
    assert still["agree_network"] == 1.0 and still["agree_repeat"] == 1.0
    assert 0.0 <= searching["agree_network"] <= 1.0 and 0.0 <= searching["agree_repeat"] <= 1.0
    out = capsys.readouterr().out
    assert "positions; judging 4 candidates by 4 rollouts each" in out and "target gain" in out


@pytest.mark.parametrize("extra, message", [
    (["--search", "sims=8"], "unknown option 'sims'; allowed: simulations, top_k"),
    (["--search", "simulations=0"], "simulations must be an integer >= 1"),
    (["--search", "replies=all"], "replies must be sample or best"),
    (["--repeats", "1"], "--repeats must be from 2"),
])
def test_the_targets_probe_refuses_bad_options_before_any_work(extra, message, capsys):
    from training.zero.targets import main as targets_main

    assert targets_main(["policies/keltis_2p_scratch.zip", "--positions", "4", *extra]) == 2
    err = capsys.readouterr()
    assert message in err.err and "positions; judging" not in err.out
