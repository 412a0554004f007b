"""Ray RLlib (keltis_env.integrations.rllib, training.rllib): the MultiAgentEnv's
observations and credit assignment, bot seats, the recipe's league mapping, the masking
module, the recipe's config and command line, a few training iterations in local mode whose
checkpoint plays through ``keltis evaluate`` as ``rllib:CHECKPOINT``, and a checkpoint
written when the league lived in keltis_env.integrations.rllib, which still plays and
resumes. Needs the ``distributed`` extra (``make test-distributed``); skipped without Ray."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

from keltis_env.core.game import game_names, get_game  # noqa: E402
from keltis_env.core.rewards import final_rewards  # noqa: E402
from keltis_env.integrations.rllib import (  # noqa: E402
    MAIN,
    MASKED_LOGIT,
    MaskedActorCritic,
    RLlibBot,
    TurnBasedMultiAgentEnv,
    claim_action,
    find_module_dir,
)
from training.common.config import ConfigError  # noqa: E402
from training.rllib.config import load_config  # noqa: E402
from training.rllib.league import LeagueMapping  # noqa: E402

GAMES = game_names()
#: a run folder of training.rllib written when LeagueMapping and LeagueCallback were
#: keltis_env.integrations.rllib's: one iteration of configs/rllib/rllib_2p.yaml with
#: model.hidden=[4], league.slots=1, ppo.train_batch=200, resources.env_runners=0 (Ray 2.60)
OLD_RUN = Path(__file__).parent / "data" / "rllib_old_layout"
#: the settings of the quick runs below
SMALL = ["stop.minutes=0", "resources.env_runners=0", "resources.envs_per_runner=2", "ppo.train_batch=400",
         "ppo.minibatch=200", "ppo.epochs=1", "model.hidden=[32]", "league.snapshot_every=1", "checkpoint_every=1",
         "keep_checkpoints=1", "eval.games=0"]


def random_legal(obs: dict, rng: random.Random) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.randrange(len(legal))])


def play(env: TurnBasedMultiAgentEnv, seed: int, claim: dict[str, int] | None = None):
    """Random legal play to the end; returns every step's returns, the reward each agent
    received in total and the agent that made the last move."""
    rng = random.Random(seed)
    obs, infos = env.reset(seed=seed)
    steps, totals = [], Counter()
    claim = dict(claim or {})
    while True:
        assert len(obs) == 1, "a turn-based game observes one agent at a time"
        (agent, o), = obs.items()
        action = claim.pop(agent) if agent in claim else random_legal(o, rng)
        obs, rewards, terminateds, truncateds, infos = env.step({agent: action})
        totals.update(rewards)
        steps.append((obs, rewards, terminateds, truncateds, infos))
        if terminateds["__all__"] or truncateds["__all__"]:
            return steps, totals, agent


# ---------------------------------------------------------------------- environment
@pytest.mark.parametrize("game", GAMES)
def test_observations_follow_rllibs_masking_convention(game):
    env = TurnBasedMultiAgentEnv({"game": game})
    obs, infos = env.reset(seed=3)
    (agent, o), = obs.items()
    assert agent == env.aec.agent_selection and set(infos) == {agent}
    assert set(o) == {"observations", "action_mask"}
    assert o["action_mask"].dtype == np.float32 and o["observations"].dtype == np.float32
    assert env.observation_spaces[agent].contains(o)
    legal = env.raw.state_.legal_actions()
    assert np.flatnonzero(o["action_mask"]).tolist() == sorted(legal)
    assert env.action_spaces[agent].n == get_game(game).num_actions


@pytest.mark.parametrize("seed", [[1, 2], (1, 2), "7", 1.5, True, {1: 2}, np.array([1, 2])])
def test_reset_with_a_bad_seed_gives_the_environments_seed_message_not_randoms(seed):
    env = TurnBasedMultiAgentEnv({"game": "keltis", "bots": ["random"]})
    env.reset(seed=3)
    before = env._bot_seeds.getstate()
    with pytest.raises(TypeError, match=r"^seed must be an integer or None, got ") as info:
        env.reset(seed=seed)
    assert "\n" not in str(info.value)
    assert env._bot_seeds.getstate() == before  # nothing was seeded


def test_reset_takes_numpy_integer_seeds_as_the_same_plain_int():
    env = TurnBasedMultiAgentEnv({"game": "keltis", "bots": ["random"]})
    plain, _ = env.reset(seed=11)
    games = env._game_seed
    numpy_seeded, _ = env.reset(seed=np.int64(11))
    assert env._game_seed == games
    assert [o["observations"].tolist() for o in plain.values()] == \
           [o["observations"].tolist() for o in numpy_seeded.values()]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("reward", ["win", "score"])
def test_every_agent_receives_its_own_final_reward_and_terminated(game, reward):
    env = TurnBasedMultiAgentEnv({"game": game, "reward": reward})
    for seed in range(4):
        steps, totals, _ = play(env, seed)
        obs, rewards, terminateds, truncateds, infos = steps[-1]
        agents = env.possible_agents
        assert set(obs) == set(rewards) == set(agents), "the last step must reach every agent, losers included"
        assert all(terminateds[a] for a in agents) and terminateds["__all__"] and not truncateds["__all__"]
        scores = env.raw.state_.scores()
        assert [totals[a] for a in agents] == pytest.approx(final_rewards(scores, reward))
        assert [infos[a]["scores"] for a in agents] == [list(scores)] * len(agents)
        assert sum(infos[a]["win_share"] for a in agents) == pytest.approx(1.0)
        for before in steps[:-1]:  # nothing is paid, to anyone, before the end
            assert all(r == 0.0 for r in before[1].values())


@pytest.mark.parametrize("game", GAMES)
def test_the_agents_that_did_not_move_last_are_credited_too(game):
    env = TurnBasedMultiAgentEnv({"game": game, "reward": "win", "num_players": 3})
    waiting_losers = waiting_winners = 0
    for seed in range(12):
        steps, _totals, last = play(env, seed)
        _, rewards, terminateds, _, _ = steps[-1]
        expected = final_rewards(env.raw.state_.scores(), "win")
        for seat, agent in enumerate(env.possible_agents):
            assert rewards[agent] == expected[seat] and terminateds[agent]
            if agent != last:
                waiting_losers += expected[seat] < 0
                waiting_winners += expected[seat] > 0
    assert waiting_losers and waiting_winners


def test_a_game_cut_at_max_turns_sets_truncateds_for_every_agent():
    env = TurnBasedMultiAgentEnv({"game": "keltis", "options": {"max_turns": 3}})
    steps, totals, _ = play(env, 0)
    _, _rewards, terminateds, truncateds, _ = steps[-1]
    agents = env.possible_agents
    assert truncateds["__all__"] and not terminateds["__all__"]
    assert all(truncateds[a] and not terminateds[a] for a in agents)
    assert [totals[a] for a in agents] == pytest.approx(final_rewards(env.raw.state_.scores(), "win"))


@pytest.mark.parametrize("game", GAMES)
def test_a_claimed_seat_is_played_by_the_bot_until_the_end(game):
    from keltis_env.bots import bot_names

    second = "heuristic" if "heuristic" in bot_names(game) else "random"  # a game's own bot where it has one
    env = TurnBasedMultiAgentEnv({"game": game, "bots": ["random", second]})
    obs, _ = env.reset(seed=5)
    (first, _o), = obs.items()
    steps, totals, _ = play(env, 5, claim={first: claim_action(1)})
    observed = [next(iter(o)) for o, *_ in steps[:-1]]
    assert first not in observed, "a claimed seat is not asked again"
    assert set(steps[-1][0]) == set(env.possible_agents)
    assert totals[first] == pytest.approx(final_rewards(env.raw.state_.scores(), "win")[env._seat[first]])


def test_bad_actions_and_configs_are_refused_naming_what_is_allowed():
    env = TurnBasedMultiAgentEnv({"game": "keltis", "bots": ["random"]})
    obs, _ = env.reset(seed=1)
    (agent, o), = obs.items()
    other = next(a for a in env.possible_agents if a != agent)
    with pytest.raises(ValueError, match=f"it is {agent}'s turn"):
        env.step({other: 0})
    with pytest.raises(ValueError, match=r"bots are \['random'\]"):
        env.step({agent: claim_action(1)})
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    with pytest.raises(Exception, match=str(illegal) + "|illegal|not legal"):
        env.step({agent: illegal})
    with pytest.raises(ValueError, match="unknown env_config key"):
        TurnBasedMultiAgentEnv({"game": "keltis", "players": 2})
    with pytest.raises(ValueError, match="unknown game"):
        TurnBasedMultiAgentEnv({"game": "chess"})
    with pytest.raises(ValueError, match="unknown bot"):
        TurnBasedMultiAgentEnv({"bots": ["grandmaster"]})


# ---------------------------------------------------------------------- league
def test_the_league_mapping_is_one_matchup_per_episode_following_the_weights():
    agents = ["player_0", "player_1"]
    mapping = LeagueMapping(agents, {"self": 1, "league": 1, "random": 2}, snapshots=["main_v0", "main_v1"])
    kinds = Counter()
    learner_seats = Counter()

    class Episode:
        def __init__(self, id_: str) -> None:
            self.id_ = id_

    for i in range(4000):
        ep = Episode(f"episode-{i}")
        seats = [mapping(a, ep) for a in agents]
        assert seats == [mapping(a, ep) for a in reversed(agents)][::-1], "every agent of an episode agrees"
        assert MAIN in seats
        learner_seats[seats.index(MAIN)] += 1
        other = seats[1 - seats.index(MAIN)] if seats.count(MAIN) == 1 else MAIN
        kinds["self" if other == MAIN else "league" if other.startswith("main_v") else other] += 1
    assert abs(kinds["random"] / 4000 - 0.5) < 0.03 and abs(kinds["league"] / 4000 - 0.25) < 0.03
    assert abs(learner_seats[0] / 4000 - 0.5) < 0.05 + 0.25  # "self" games put main in both seats
    assert LeagueMapping(agents, {"league": 1, "random": 1}).kinds == ["random"], "no snapshots: no league"
    with pytest.raises(ValueError, match="non-negative"):
        LeagueMapping(agents, {"random": -1})


# ---------------------------------------------------------------------- module
def make_module(game: str = "keltis") -> MaskedActorCritic:
    env = TurnBasedMultiAgentEnv({"game": game})
    agent = env.possible_agents[0]
    return MaskedActorCritic(
        observation_space=env.observation_spaces[agent], action_space=env.action_spaces[agent],
        model_config={"hidden": [32], "game": game, "num_players": 2},
    )


def test_the_masking_module_gives_illegal_actions_no_probability():
    env = TurnBasedMultiAgentEnv({"game": "keltis"})
    module = make_module()
    rng = random.Random(0)
    obs, _ = env.reset(seed=2)
    for _ in range(50):
        (agent, o), = obs.items()
        batch = {"obs": {k: torch.as_tensor(v[None]) for k, v in o.items()}}
        logits = module.forward_exploration(batch)["action_dist_inputs"]
        dist = module.get_exploration_action_dist_cls().from_logits(logits)
        for _ in range(20):
            assert o["action_mask"][int(dist.sample()[0])] == 1.0
        assert torch.all(logits[0][torch.as_tensor(o["action_mask"]) == 0] == MASKED_LOGIT)
        obs, *_ = env.step({agent: random_legal(o, rng)})
    observations = batch["obs"]["observations"]
    zero = {"obs": {"observations": observations, "action_mask": torch.zeros_like(batch["obs"]["action_mask"])}}
    out = module.forward_train(zero)["action_dist_inputs"]  # a final observation's all-zero mask
    assert torch.isfinite(torch.log_softmax(out, -1)).all() and torch.isfinite(module.compute_values(zero)).all()


# ---------------------------------------------------------------------- recipe
def test_the_recipe_config_loads_and_bad_keys_are_named():
    config = load_config("configs/rllib/rllib_2p.yaml")
    assert config.env.game == "keltis" and config.league.bots == ["random", "heuristic"]
    with pytest.raises(ConfigError, match=r"unknown key.*ppo\.learning_rate"):
        load_config("configs/rllib/rllib_2p.yaml", ["ppo.learning_rate=1e-3"])
    with pytest.raises(ConfigError, match=r"league\.weights: unknown opponent kind 'ismcts2'"):
        load_config("configs/rllib/rllib_2p.yaml", ["league.weights={ismcts2: 1}"])
    with pytest.raises(ConfigError, match=r"env\.num_players must be 2 to 4 for keltis, got 5"):
        load_config("configs/rllib/rllib_2p.yaml", ["env.num_players=5"])
    with pytest.raises(ConfigError, match=r"ppo\.kl_coeff must be >= 0 \(0: no KL penalty\), got -0\.1"):
        load_config("configs/rllib/rllib_2p.yaml", ["ppo.kl_coeff=-0.1"])


def test_the_rllib_bot_names_a_missing_checkpoint(tmp_path):
    from keltis_env.bots import make_bot

    with pytest.raises(ValueError, match="no RLlib module 'main'"):
        make_bot(f"rllib:{tmp_path}")
    with pytest.raises(ValueError, match="needs a checkpoint"):
        make_bot("rllib")


@pytest.mark.slow
def test_a_few_training_iterations_in_local_mode_give_a_checkpoint_that_plays(tmp_path, monkeypatch):
    from keltis_env.bots import make_bot
    from keltis_env.evaluation import evaluate
    from training.rllib.trainer import train

    config = load_config("configs/rllib/rllib_2p.yaml", [*SMALL, "stop.iterations=2"])
    summary = train(config, tmp_path, "test", progress=False)
    assert summary["iterations"] == 2 and summary["last"]["env_steps"] >= 800
    assert (tmp_path / "progress.csv").read_text().count("\n") == 3
    assert any((tmp_path / "tb").iterdir()), "TensorBoard events are written"
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["final", "iter_00002", "latest.json"]
    final = tmp_path / "checkpoints" / "final"
    assert find_module_dir(final).name == MAIN
    # the league is the recipe's, the module the library's: the bot needs no training package
    assert b"training.rllib.league" in (final / "class_and_ctor_args.pkl").read_bytes()
    assert b"training" not in (find_module_dir(final) / "class_and_ctor_args.pkl").read_bytes()
    bot = make_bot(f"rllib:{final}", seed=0)
    assert isinstance(bot, RLlibBot) and bot.game.name == "keltis"
    result = evaluate([f"rllib:{final}", "random"], games=4, seed=0, workers=1, progress=False)
    assert result.games == 4 and sum(a.wins for a in result.agents) == pytest.approx(4)
    # a checkpoint named by a path relative to the working folder (RLlib itself wants a URI)
    monkeypatch.chdir(tmp_path)
    assert make_bot("rllib:checkpoints/final", seed=0).game.name == "keltis"


def test_a_run_resumes_from_its_newest_checkpoint_with_its_counters(tmp_path, monkeypatch):
    from training.rllib.config import load_resume_config
    from training.rllib.trainer import latest_checkpoint, train

    # a run folder named relative to the working folder, as the commands name it (RLlib's checkpoints want a URI)
    monkeypatch.chdir(tmp_path)
    run = Path("run")
    first = train(load_config("configs/rllib/rllib_2p.yaml", [*SMALL, "stop.iterations=1"]), run, "first",
                  progress=False)
    assert first["iterations"] == 1
    assert latest_checkpoint(run).name == "final"
    steps_after_first = first["last"]["env_steps"]

    config = load_resume_config(run, ["stop.iterations=3"])
    assert config.model.hidden == [32], "the run's own config is used"
    second = train(config, run, "second", progress=False, resume=True)
    # the iteration and step counters go on from the checkpoint: 2 more iterations, not 3
    assert second["iterations"] == 3 and second["session_iterations"] == 2
    assert second["last"]["env_steps"] >= steps_after_first + 800
    rows = (run / "progress.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in rows[1:]] == [1, 2, 3]
    assert (run / "command.txt").read_text() == "first\nsecond\n"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["final", "iter_00003", "latest.json"]


def test_resume_refuses_algorithm_changes_and_runs_without_checkpoints(tmp_path):
    from training.rllib.config import load_resume_config
    from training.rllib.trainer import latest_checkpoint

    with pytest.raises(ConfigError, match=r"no config\.yaml"):
        load_resume_config(tmp_path)
    (tmp_path / "config.yaml").write_text("name: x\n")  # no run's config: refused as such
    with pytest.raises(ConfigError, match=r"is not an RLlib training run"):
        load_resume_config(tmp_path)
    (tmp_path / "config.yaml").write_text("name: x\nstop: {}\nleague: {}\n")  # an RLlib run's sections
    with pytest.raises(ConfigError, match=r"cannot change 'ppo.lr'.*stop, eval"):
        load_resume_config(tmp_path, ["ppo.lr=1e-3"])
    assert load_resume_config(tmp_path, ["stop.minutes=3"]).stop.minutes == 3
    with pytest.raises(ConfigError, match="no checkpoint to resume from"):
        latest_checkpoint(tmp_path)
    (tmp_path / "checkpoints" / "iter_00002").mkdir(parents=True)
    (tmp_path / "checkpoints" / "iter_00010").mkdir()
    assert latest_checkpoint(tmp_path).name == "iter_00010"
    (tmp_path / "checkpoints" / "final").mkdir()
    assert latest_checkpoint(tmp_path).name == "final"
    (tmp_path / "checkpoints" / "latest.json").write_text('{"checkpoint": "iter_00010", "iteration": 10}')
    assert latest_checkpoint(tmp_path).name == "iter_00010"


def test_a_checkpoint_from_before_the_league_moved_still_plays_and_resumes(tmp_path):
    from keltis_env.evaluation import evaluate
    from training.rllib.config import load_resume_config
    from training.rllib.trainer import train

    old = (OLD_RUN / "checkpoints" / "final" / "class_and_ctor_args.pkl").read_bytes()
    assert b"keltis_env.integrations.rllib" in old and b"LeagueMapping" in old and b"LeagueCallback" in old
    run = tmp_path / "run"
    shutil.copytree(OLD_RUN, run)
    final = run / "checkpoints" / "final"
    result = evaluate([f"rllib:{final}", "random"], games=2, seed=0, workers=1, progress=False)
    assert result.games == 2 and sum(a.wins for a in result.agents) == pytest.approx(2)

    summary = train(load_resume_config(run, ["stop.iterations=2"]), run, "resume", progress=False, resume=True)
    assert summary["iterations"] == 2 and summary["session_iterations"] == 1
    assert [r.split(",")[0] for r in (run / "progress.csv").read_text().splitlines()[1:]] == ["1", "2"]
    assert b"training.rllib.league" in (final / "class_and_ctor_args.pkl").read_bytes()


# ---------------------------------------------------------------------- command line
def test_the_command_line_takes_config_resume_set_and_describe(tmp_path, capsys):
    from training.rllib.__main__ import build_parser, main

    parser = build_parser()
    args = parser.parse_args(["--config", "configs/rllib/rllib_2p.yaml", "--set", "stop.minutes=1", "--set", "seed=3"])
    assert args.config == "configs/rllib/rllib_2p.yaml" and args.overrides == ["stop.minutes=1", "seed=3"]
    assert parser.parse_args(["--resume", "runs/x"]).resume == "runs/x"
    with pytest.raises(SystemExit):
        parser.parse_args(["--config", "configs/rllib/rllib_2p.yaml", "--resume", "runs/x"])
    assert main(["--describe"]) == 0
    assert "snapshot_every: 10" in capsys.readouterr().out
    assert main(["--resume", str(tmp_path), "--set", "ppo.lr=1e-3"]) == 2
    assert "config error" in capsys.readouterr().err


# ---------------------------------------------------------------------- changelog
def test_the_changelog_names_where_the_league_moved():
    import importlib
    import re

    import keltis_env.integrations.rllib as integration

    changelog = (Path(__file__).parent.parent / "CHANGELOG.md").read_text()
    moves = re.findall(r"`(keltis_env\.integrations\.rllib\.\w+)` -> `(training\.rllib\.\w+)\.(\w+)`", changelog)
    assert {new for *_, new in moves} == {"LeagueMapping", "LeagueCallback"}
    for old, module, name in moves:
        assert getattr(importlib.import_module(module), name).__name__ == old.rsplit(".", 1)[1] == name
        assert not hasattr(integration, name), "no second way to import it"
