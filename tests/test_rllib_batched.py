"""RLlib's batched sampler (training.rllib.games, training.rllib.sampling): the learner's
observations, masks, rewards and episode ends equal the per-game adapter's on the same games,
and the runner trains, syncs snapshot weights and counts learner steps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("numba")

from keltis_env.integrations.rllib import ENV_CONFIG_KEYS, MAIN, TurnBasedMultiAgentEnv, claim_action
from training.common.config import ConfigError
from training.rllib.games import LeagueGames, Trajectory
from training.rllib.league import LeagueMapping

AGENTS = ["player_0", "player_1"]


def random_legal(seed: int):
    rng = np.random.default_rng(seed)

    def act(module: str, obs: np.ndarray, masks: np.ndarray):
        scores = rng.random(masks.shape)
        scores[~masks] = -1.0
        return scores.argmax(1), None

    return act


def batched_games(reward: str, options: dict, turn_cap: str = "truncate", weights=None, games: int = 6,
                  wanted: int = 6, game: str = "keltis") -> tuple[LeagueGames, list[Trajectory]]:
    """Games of the batched sampler, traced, until ``wanted`` have ended; their learner trajectories."""
    weights = weights or {"self": 1.0, "league": 1.0, "heuristic": 1.0}
    mapping = LeagueMapping(AGENTS, weights, snapshots=["main_v0"], salt=3)
    batch = LeagueGames(games, mapping.matchup, game=game, reward=reward, turn_cap=turn_cap, options=options,
                        bots=["heuristic"], seed=11)
    batch.trace = []
    batch.reset()
    act = random_legal(1)
    done: list[Trajectory] = []
    while len({t.game_id for t in done}) < wanted:
        done += batch.tick(act)
    return batch, done


def replay(batch: LeagueGames, game_id: str, reward: str, options: dict, turn_cap: str,
           game: str = "keltis") -> dict[int, dict]:
    """The game ``game_id`` replayed on the per-game adapter from its first position, with the
    traced actions (the heuristic seats claimed by the adapter's Python heuristic): each seat's
    observations, masks, rewards between its decisions, and how it ended."""
    env_config = {"game": game, "reward": reward, "options": options, "bots": ["heuristic"]}
    if "turn_cap" in ENV_CONFIG_KEYS:
        env_config["turn_cap"] = turn_cap
    env = TurnBasedMultiAgentEnv(env_config)
    obs, _ = env.reset(options={"state": batch.starts[game_id]})
    moves = iter([(seat, action) for gid, seat, action in batch.trace if gid == game_id])
    modules = None
    seen: dict[int, dict] = {p: {"obs": [], "masks": [], "rewards": [], "ended": None} for p in range(2)}
    while True:
        (agent, o), = obs.items()
        p = AGENTS.index(agent)
        seen[p]["obs"].append(o["observations"])
        seen[p]["masks"].append(o["action_mask"])
        if modules is None:
            modules = next(m for gid, m in batch_modules(batch, game_id))
        if modules[p] == "heuristic":
            seen[p]["obs"].pop()
            seen[p]["masks"].pop()
            action = claim_action(0)
        else:
            seat, action = next(moves)
            assert seat == p
        obs, rewards, terminateds, truncateds, _ = env.step({agent: action})
        for a, r in rewards.items():
            q = AGENTS.index(a)
            if seen[q]["obs"] and (a in obs):
                seen[q]["rewards"].append(r)
        if terminateds["__all__"] or truncateds["__all__"]:
            for a in AGENTS:
                q = AGENTS.index(a)
                seen[q]["final"] = obs[a]
                seen[q]["ended"] = (terminateds[a], truncateds[a])
            return seen


def batch_modules(batch: LeagueGames, game_id: str):
    yield game_id, batch.module_log[game_id]


@pytest.fixture(autouse=True)
def _module_log(monkeypatch):
    """Record each game's seating (module ids per seat) by game id."""
    deal = LeagueGames._deal

    def logged(self, games):
        deal(self, games)
        log = self.__dict__.setdefault("module_log", {})
        for g in games.tolist():
            log[self.game_ids[g]] = list(self.modules[g])

    monkeypatch.setattr(LeagueGames, "_deal", logged)


CASES = [("keltis", "win", {"max_turns": 500}, "truncate"), ("keltis", "score", {"max_turns": 30}, "truncate"),
         ("keltis", "shaped", {"max_turns": 500}, "truncate"), ("keltis", "shaped", {"max_turns": 30}, "end"),
         ("dice", "shaped", {}, "truncate")]


@pytest.mark.parametrize(("game", "reward", "options", "turn_cap"), CASES)
def test_the_learners_observations_masks_rewards_and_ends_are_the_per_game_adapters(game, reward, options,
                                                                                   turn_cap):
    if turn_cap == "end" and "turn_cap" not in ENV_CONFIG_KEYS:
        pytest.skip("the per-game adapter has no turn_cap")
    batch, done = batched_games(reward, options, turn_cap, game=game)
    compared = 0
    for game_id in sorted({t.game_id for t in done}):
        seen = replay(batch, game_id, reward, options, turn_cap, game)
        for track in (t for t in done if t.game_id == game_id):
            old = seen[track.seat]
            # a learner's decisions: the same observations and masks ...
            assert len(track.actions) == len(old["obs"])
            np.testing.assert_array_equal(np.array(track.obs[:-1]), np.array(old["obs"]))
            np.testing.assert_array_equal(np.array(track.masks[:-1], np.float32), np.array(old["masks"]))
            # ... the final observation with no legal action, the rewards between decisions, and the end
            np.testing.assert_array_equal(track.obs[-1], old["final"]["observations"])
            assert not track.masks[-1].any()
            # the reward that comes with a seat's first observation is no step's (RLlib keeps it out of the steps)
            assert track.rewards == pytest.approx(old["rewards"], abs=1e-9)
            assert (track.terminated, track.truncated) == old["ended"]
            compared += 1
    assert compared >= 6


def test_a_capped_game_is_truncated_and_a_finished_one_terminated():
    _, capped = batched_games("score", {"max_turns": 30}, wanted=3)
    assert all(t.truncated and not t.terminated for t in capped)
    _, full = batched_games("win", {"max_turns": 500}, wanted=3)
    assert all(t.terminated and not t.truncated for t in full)
    assert {t.rewards[-1] for t in full} <= {0.0, 0.5, 1.0, -1.0}


def test_every_matchup_is_the_policy_mappings_and_self_play_records_both_seats():
    batch, done = batched_games("win", {"max_turns": 500}, weights={"self": 1.0}, wanted=2)
    assert all(m == [MAIN, MAIN] for m in batch.module_log.values())
    per_game: dict[str, set[int]] = {}
    for t in done:
        per_game.setdefault(t.game_id, set()).add(t.seat)
    assert all(seats == {0, 1} for seats in per_game.values())


def test_a_bot_the_kernels_lack_plays_on_the_python_engines_view():
    spec = "ismcts:iterations=2"
    mapping = LeagueMapping(AGENTS, {spec: 1.0}, salt=0)
    batch = LeagueGames(2, mapping.matchup, reward="win", options={"max_turns": 500}, bots=[spec], seed=3)
    batch.reset()
    assert all(len(bots) == 1 for bots in batch.python_bots) and not batch.who.any()
    act = random_legal(2)
    done: list[Trajectory] = []
    while not done:
        done += batch.tick(act)
    assert batch.ended[0]["modules"].count(spec) == 1 and done[0].terminated


def test_a_cut_keeps_the_pending_decision_for_the_next_chunk():
    batch, _ = batched_games("score", {"max_turns": 500}, wanted=1)
    chunks = batch.cut()
    assert chunks and all(len(c.obs) == len(c.actions) + 1 for c in chunks)
    rest = {(t.game_id, t.seat): t for tracks in batch.tracks for t in tracks.values()}
    for chunk in chunks:
        after = rest[(chunk.game_id, chunk.seat)]
        assert after.t_started == chunk.t_started + len(chunk.actions)
        assert after.pending is not None and chunk.pending is None and not after.actions
        np.testing.assert_array_equal(after.obs[0], chunk.obs[-1])


def test_an_excess_cut_leaves_steps_to_the_next_chunk_and_the_chunks_add_up_to_the_games():
    """Chunks cut every few rounds, some steps left over each time, are the uncut games' trajectories in pieces."""
    whole, done = batched_games("shaped", {"max_turns": 500}, games=4, wanted=4)
    ended = {t.game_id for t in done}
    pieces, done2 = batched_games_cut("shaped", {"max_turns": 500}, games=4, ticks=sum(1 for _ in whole.trace))
    by_track: dict[tuple[str, int], list[Trajectory]] = {}
    for t in pieces + done2:
        by_track.setdefault((t.game_id, t.seat), []).append(t)
    for t in done:
        parts = sorted(by_track[(t.game_id, t.seat)], key=lambda c: c.t_started)
        assert parts[0].t_started == 0
        for a, b in itertools.pairwise(parts):
            assert b.t_started == a.t_started + len(a)
            np.testing.assert_array_equal(a.obs[-1], b.obs[0])
        assert [x for p in parts for x in p.actions] == t.actions
        assert [x for p in parts for x in p.rewards] == pytest.approx(t.rewards)
        np.testing.assert_array_equal(np.array([o for p in parts for o in p.obs[:-1]] + [parts[-1].obs[-1]]),
                                      np.array(t.obs))
        assert (parts[-1].terminated, parts[-1].truncated) == (t.terminated, t.truncated)
    assert len(ended) >= 4


def batched_games_cut(reward: str, options: dict, games: int, ticks: int) -> tuple[list[Trajectory], list[Trajectory]]:
    """:func:`batched_games`' games, cut every 7 rounds with 5 steps left over; the chunks and the ended games."""
    mapping = LeagueMapping(AGENTS, {"self": 1.0, "league": 1.0, "heuristic": 1.0}, snapshots=["main_v0"], salt=3)
    batch = LeagueGames(games, mapping.matchup, reward=reward, options=options, bots=["heuristic"], seed=11)
    batch.trace = []
    batch.reset()
    act = random_legal(1)
    chunks: list[Trajectory] = []
    done: list[Trajectory] = []
    for k in range(ticks * 2):
        done += batch.tick(act)
        if k % 7 == 6:
            before = batch.steps_in_play()
            cut = batch.cut(excess=5)
            assert sum(len(c) for c in cut) == max(before - 5, 0)
            assert batch.steps_in_play() == min(before, 5)
            chunks += cut
        if len(batch.trace) >= ticks and len({t.game_id for t in done}) >= games:
            break
    return chunks, done


def test_a_game_without_the_compiled_collector_kernels_or_a_bad_sampler_is_refused():
    from training.rllib.config import load_config

    with pytest.raises(ConfigError, match=r"resources\.sampler must be one of batched, per_game"):
        load_config(None, ["resources.sampler=fast"])
    with pytest.raises(ValueError, match="number of games"):
        LeagueGames(0, lambda key: {}, bots=[])


def test_relabelled_games_show_main_each_game_through_its_own_relabelling(monkeypatch):
    """With ``relabel``, main's observations and masks are the per-game adapter's seen through the
    relabelling its game drew at the deal, and its actions, mapped back, are the moves played."""
    drawn: dict[str, int] = {}
    deal = LeagueGames._deal

    def logged(self, games):
        deal(self, games)
        drawn.update({self.game_ids[g]: int(self.which[g]) for g in games.tolist()})

    monkeypatch.setattr(LeagueGames, "_deal", logged)
    options = {"max_turns": 500}
    mapping = LeagueMapping(AGENTS, {"self": 1.0, "heuristic": 1.0}, salt=3)
    batch = LeagueGames(4, mapping.matchup, reward="shaped", options=options, bots=["heuristic"], seed=11,
                        relabel="colours_affine")
    batch.trace = []
    batch.reset()
    act = random_legal(1)
    done: list[Trajectory] = []
    while len({t.game_id for t in done}) < 4:
        done += batch.tick(act)
    symmetry = batch.relabel
    ended = sorted({t.game_id for t in done})
    assert len({drawn[g] for g in ended}) > 1, "the games should draw different relabellings"
    for game_id in ended:
        seen, which = replay(batch, game_id, "shaped", options, "truncate"), drawn[game_id]
        moves = [(seat, a) for gid, seat, a in batch.trace if gid == game_id]
        for track in (t for t in done if t.game_id == game_id):
            old = seen[track.seat]
            rows = np.full(len(old["obs"]), which)
            obs, masks = symmetry.relabel(rows, np.array(old["obs"]), np.array(old["masks"]))[:2]
            np.testing.assert_array_equal(np.array(track.obs[:-1]), obs)
            np.testing.assert_array_equal(np.array(track.masks[:-1], np.float32), masks)
            final = symmetry.relabel([which], old["final"]["observations"][None])[0][0]
            np.testing.assert_array_equal(track.obs[-1], final)
            played = [a for seat, a in moves if seat == track.seat]
            assert symmetry.action_source[which, track.actions].tolist() == played
            assert track.rewards == pytest.approx(old["rewards"], abs=1e-9)


def test_relabel_none_keeps_the_games_and_an_unknown_relabelling_is_refused():
    from training.rllib.config import load_config

    plain, _ = batched_games("win", {"max_turns": 500}, wanted=2)
    mapping = LeagueMapping(AGENTS, {"self": 1.0, "league": 1.0, "heuristic": 1.0}, snapshots=["main_v0"], salt=3)
    same = LeagueGames(6, mapping.matchup, reward="win", options={"max_turns": 500}, bots=["heuristic"], seed=11,
                       relabel="none")
    same.trace = []
    same.reset()
    act = random_legal(1)
    while len(same.trace) < len(plain.trace):
        same.tick(act)
    assert same.trace[:len(plain.trace)] == plain.trace
    with pytest.raises(ValueError, match="relabel must be one of none, colours, colours_affine"):
        LeagueGames(2, mapping.matchup, relabel="mirror")
    with pytest.raises(ConfigError, match=r"env\.relabel: dice has no relabelling 'colours_affine'"):
        load_config(None, ["env.game=dice", "env.relabel=colours_affine"])
    with pytest.raises(ConfigError, match=r"env\.relabel needs resources\.sampler: batched"):
        load_config(None, ["env.relabel=colours_affine", "resources.sampler=per_game"])


# ---------------------------------------------------------------------- the env runner in RLlib
def build(sampler: str = "batched", runners: int = 0):
    from training.rllib.config import load_config
    from training.rllib.trainer import build_algorithm_config

    config = load_config("configs/rllib/rllib_2p.yaml", [f"resources.env_runners={runners}",
                                                        "resources.envs_per_runner=8", f"resources.sampler={sampler}",
                                                        "ppo.train_batch=256", "ppo.minibatch=128", "ppo.epochs=1",
                                                        "model.hidden=[32]"])
    return build_algorithm_config(config).build_algo()


@pytest.fixture(scope="module")
def ray_local():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def algo(ray_local):
    algorithm = build()
    yield algorithm
    algorithm.stop()


def test_the_recipe_samples_with_the_batched_runner_and_counts_learner_steps(algo):
    from training.rllib.sampling import BatchedEnvRunner

    assert isinstance(algo.env_runner, BatchedEnvRunner)
    result = algo.train()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= 256
    assert runners["num_module_steps_sampled_lifetime"][MAIN] == runners["num_env_steps_sampled_lifetime"]
    assert MAIN in result["learners"]
    for _ in range(3):  # exactly the steps asked for: a last round's extra decisions go to the next batch
        episodes = algo.env_runner.sample(num_timesteps=100)
        assert sum(len(e) for e in episodes) == 100
        assert {e.module_id for e in episodes} == {MAIN}
        for e in episodes:
            assert len(e.get_observations()["observations"]) == len(e) + 1
            assert e.get_extra_model_outputs("action_logp").shape == (len(e),)


def test_the_learner_checks_the_gradients_once_and_updates_as_rllibs_learner(algo):
    """The fast path of :class:`training.rllib.learner.PPOLearner` makes RLlib's update; a
    gradient with nan or inf goes to RLlib's own treatment."""
    import copy

    import torch
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from training.rllib.learner import PPOLearner

    learner = algo.learner_group._learner
    assert isinstance(learner, PPOLearner)
    optimizers = [learner.get_optimizer(m, name) for m, names in learner._module_optimizers.items() for name in names]
    params = list(learner._params.values())

    def restore(saved):
        with torch.no_grad():
            for p, value in zip(params, saved[0], strict=True):
                p.copy_(value)
        for optimizer, state in zip(optimizers, saved[1], strict=True):
            optimizer.load_state_dict(copy.deepcopy(state))

    torch.manual_seed(0)
    for bad in (None, float("nan"), float("inf")):
        grads = {pid: torch.randn_like(p) for pid, p in learner._params.items()}
        if bad is not None:
            next(iter(grads.values())).view(-1)[0] = bad
        before = [p.detach().clone() for p in params]
        saved = (before, [copy.deepcopy(o.state_dict()) for o in optimizers])
        learner.apply_gradients({pid: g.clone() for pid, g in grads.items()})
        ours = [p.detach().clone() for p in params]
        restore(saved)
        PPOTorchLearner.apply_gradients(learner, {pid: g.clone() for pid, g in grads.items()})
        theirs = [p.detach().clone() for p in params]
        restore(saved)
        assert all(torch.isfinite(p).all() for p in ours)
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        assert any(not torch.equal(a, b) for a, b in zip(ours, before, strict=True))



def test_an_update_makes_epochs_times_the_learner_steps_over_the_minibatch_size_minibatches(algo, monkeypatch):
    """As SB3's update of the same batch: the step RLlib adds to every episode chunk (its
    value bootstrap, out of the loss) does not make one more minibatch."""
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner

    learner = algo.learner_group._learner
    sizes: list[int] = []
    update = TorchLearner._update

    def counted(self, batch, **kwargs):
        sizes.append(len(batch[MAIN]))
        return update(self, batch, **kwargs)

    monkeypatch.setattr(type(learner), "_update", counted)
    algo.train()
    assert sizes == [128, 128], "train_batch 256, minibatch 128, one epoch: two minibatches"


def test_the_anchor_adds_its_weighted_kl_over_the_legal_actions_to_mains_loss(algo, monkeypatch):
    """``PPOLearner``'s anchor term is ``w * KL(anchor || policy)`` over the legal actions,
    averaged over the positions its loss mask keeps; weight 0 (or no anchor) adds nothing."""
    import torch
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.columns import Columns

    from training.rllib.learner import anchor_weight

    learner = algo.learner_group._learner
    module = learner.module[MAIN].unwrapped()
    rng = np.random.default_rng(5)
    size = module.observation_space["observations"].shape[0]
    actions = module.action_space.n
    obs = (rng.random((12, size)) < 0.1).astype(np.float32)
    legal = rng.random((12, actions)) < 0.2
    legal[:, 0] = True
    batch = {Columns.OBS: {"observations": torch.as_tensor(obs),
                           "action_mask": torch.as_tensor(legal.astype(np.float32))}}
    with torch.no_grad():
        fwd = module.forward_train(batch)
    state = {f"pi.{k}": v.detach().numpy() * (1.5 if k.endswith("weight") else -1.0)
             for k, v in module.pi.state_dict().items()}

    def mlp(x):  # the anchor's logits in numpy: tanh hidden layers, linear head
        names = sorted({k.rsplit(".", 1)[0] for k in state}, key=lambda n: int(n.split(".")[1]))
        for i, name in enumerate(names):
            x = x @ state[f"{name}.weight"].T + state[f"{name}.bias"]
            x = np.tanh(x) if i < len(names) - 1 else x
        return x

    def log_softmax_legal(z):
        z = np.where(legal, z.astype(np.float64), -np.inf)
        z = z - z.max(1, keepdims=True)
        return z - np.log(np.exp(z).sum(1, keepdims=True))

    p, q = log_softmax_legal(mlp(obs)), log_softmax_legal(fwd[Columns.ACTION_DIST_INPUTS].numpy())
    p, q = np.where(legal, p, 0.0), np.where(legal, q, 0.0)
    kl = (legal * np.exp(p) * (p - q)).sum(1)
    monkeypatch.setattr(PPOTorchLearner, "compute_loss_for_module", lambda self, **kw: torch.tensor(0.0))

    def loss(b):
        return float(learner.compute_loss_for_module(module_id=MAIN, config=None, batch=b, fwd_out=fwd))

    try:
        learner.set_anchor(state, 0.0)
        assert loss(batch) == 0.0
        learner.set_anchor(None, 0.7)
        assert loss(batch) == pytest.approx(0.7 * kl.mean(), rel=1e-5)
        keep = np.arange(12) % 3 != 0
        masked = {**batch, Columns.LOSS_MASK: torch.as_tensor(keep)}
        assert loss(masked) == pytest.approx(0.7 * kl[keep].mean(), rel=1e-5)
        assert float(learner.compute_loss_for_module(module_id="main_v0", config=None, batch=batch,
                                                     fwd_out=fwd)) == 0.0, "only main is anchored"
    finally:
        learner.anchor, learner.anchor_weight = None, 0.0
    assert [anchor_weight(1.0, 300, s) for s in (0, 150, 300, 600)] == [1.0, 0.5, 0.0, 0.0]
    assert anchor_weight(0.0, 300, 0) == 0.0


@pytest.mark.parametrize(("sampler", "runners"), [("batched", 0), ("batched", 1), ("per_game", 0)])
def test_a_snapshot_copied_from_main_after_an_update_reaches_every_env_runner(ray_local, sampler, runners):
    import torch

    from training.rllib.trainer import copy_main_to

    algorithm = build(sampler, runners)
    try:
        algorithm.train()  # after an update the learner's weights carry a sequence number
        copy_main_to(algorithm, "main_v0")
        main = algorithm.learner_group.get_weights(module_ids=[MAIN])[MAIN]
        states = algorithm.env_runner_group.foreach_env_runner(
            lambda runner: runner.module["main_v0"].get_state(), local_env_runner=runners == 0)
        assert states
        for state in states:
            for key, value in main.items():
                assert torch.equal(torch.as_tensor(value), torch.as_tensor(state[key])), key
    finally:
        algorithm.stop()


def test_the_runner_draws_legal_actions_with_the_modules_log_probabilities(algo):
    import torch

    runner = algo.env_runner
    games = runner.games
    obs = np.zeros((games.n, games.size), np.float32)
    masks = np.zeros((games.n, games.num_actions), np.bool_)
    seats = games.waiting.copy()
    games.table.observe(np.arange(games.n), seats, obs, masks)
    torch.manual_seed(0)
    draws = [runner._act(MAIN, obs, masks, True) for _ in range(200)]
    logits = torch.as_tensor(draws[0][1]["action_dist_inputs"])
    expected = torch.distributions.Categorical(logits=logits)
    for actions, extras in draws:
        assert masks[np.arange(games.n), actions].all()
        np.testing.assert_allclose(extras["action_logp"], expected.log_prob(torch.as_tensor(actions)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    # the draws follow the distribution: the first game's most probable action is drawn about as often as it should be
    first = np.array([a[0] for a, _ in draws])
    best = int(expected.probs[0].argmax())
    assert abs((first == best).mean() - float(expected.probs[0, best])) < 0.12
    greedy, _ = runner._act(MAIN, obs, masks, False)
    np.testing.assert_array_equal(greedy, expected.probs.argmax(-1).numpy())
