"""The batched self-play collector (training/sb3/collector.py, training/sb3/selfplay.py): the learner
view's trajectories game for game, batched neural opponents, the pool methods, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from keltis_env.envs.learner import KeltisLearnerEnv
from training.sb3.collector import BatchedSelfPlayVecEnv
from training.sb3.selfplay import GameBatch

ROOT = Path(__file__).resolve().parent.parent
# a 2-player card-game policy, a neural opponent; trained with the plan feature, so the
# collector's games that it plays in have it too (their neural opponents share their encoding)
POLICY = f"ppo:{ROOT / 'policies' / 'keltis_2p.zip'}"
FEATURES = ("plan",)


def _reference(n: int, opponents: list[str], weights: list[float], **kwargs) -> DummyVecEnv:
    """``n`` learner views in SB3's DummyVecEnv (their masks fetched by ``env_method``)."""
    def make() -> Monitor:
        return Monitor(KeltisLearnerEnv(opponents=opponents, opponent_weights=weights, mask_in_info=True, **kwargs))

    return DummyVecEnv([make for _ in range(n)])


def _same_step(ref_out, col_out, step: int) -> int:
    """Compare one step's (obs, rewards, dones, infos); returns the number of finished games."""
    (o1, r1, d1, infos1), (o2, r2, d2, infos2) = ref_out, col_out
    assert np.array_equal(o1, o2), f"observations differ at step {step}"
    assert np.array_equal(r1, r2) and np.array_equal(d1, d2), f"rewards or dones differ at step {step}"
    for i1, i2 in zip(infos1, infos2, strict=True):
        i1, i2 = dict(i1), dict(i2)
        i1.pop("action_mask", None)
        t1, t2 = i1.pop("terminal_observation", None), i2.pop("terminal_observation", None)
        assert (t1 is None) == (t2 is None) and (t1 is None or np.array_equal(t1, t2)), step
        e1, e2 = i1.pop("episode", None), i2.pop("episode", None)
        assert (e1 is None) == (e2 is None), step
        if e1 is not None:  # Monitor's episode return and length (its time differs)
            assert (e1["r"], e1["l"]) == (e2["r"], e2["l"]), step
        assert i1 == i2, f"infos differ at step {step}: {i1} != {i2}"
    return int(d1.sum())


def _play_both(ref, col, steps: int, seed: int, options=None) -> int:
    ref.seed(seed)
    col.seed(seed)
    if options is not None:  # SB3's VecEnv.set_options: for the next reset only
        ref.set_options(options)
        col.set_options(options)
    o1, o2 = ref.reset(), col.reset()
    assert np.array_equal(o1, o2)
    strip = [{k: v for k, v in info.items() if k != "action_mask"} for info in ref.reset_infos]
    assert strip == col.reset_infos
    rng = np.random.default_rng(seed)
    finished = 0
    for step in range(steps):
        masks = np.stack(ref.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(col.env_method("action_masks"))), f"masks differ at step {step}"
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        finished += _same_step(ref.step(actions), col.step(actions), step)
    return finished


@pytest.mark.parametrize(
    ("game", "num_players", "workers", "steps", "features"),
    [("keltis", 2, 0, 700, ()), ("keltis", 3, 0, 400, ()), ("dice", 2, 0, 300, ()), ("keltis", 2, 2, 300, ()),
     ("dice", 3, 2, 200, ()), ("keltis", 2, 2, 300, ("plan",))],
)
def test_the_collector_gives_the_learner_views_trajectories(game, num_players, workers, steps, features):
    """For bot opponents and the same seeds: the same observations, masks, rewards, dones
    and infos as SB3's DummyVecEnv of learner views, auto-resets included (also with
    observation features)."""
    opponents, weights = ["random", "heuristic"], [0.5, 0.5]
    kwargs = {"game": game, "num_players": num_players, "reward": "score", "features": features}
    ref = _reference(4, opponents, weights, **kwargs)
    col = BatchedSelfPlayVecEnv(4, opponents, weights, workers=workers, **kwargs)
    try:
        finished = _play_both(ref, col, steps, seed=11)
    finally:
        col.close()
    assert finished >= 4  # the comparison went through game ends and automatic resets


def _reset_options(game: str, num_players: int) -> list[dict]:
    """One game's reset options of each kind: the learner's seat and opponents by name, a
    record to start from after some actions, a state, none."""
    from keltis_env.core.game import get_game

    descriptor = get_game(game)
    record, state = descriptor.record_cls.start(descriptor.make_config(num_players=num_players), 21)
    rng = np.random.default_rng(21)
    for _ in range(9):
        legal = state.legal_actions()
        action = int(legal[rng.integers(len(legal))])
        state.apply(action)
        record.actions.append(action)
    others = ["heuristic", "random", "heuristic"][: num_players - 1]
    return [
        {"seat": num_players - 1, "opponents": others},
        {"record": record.to_dict(), "upto": 5},
        {"state": state.to_dict(), "seat": state.current_player, "opponents": others[::-1]},
        {},
    ]


@pytest.mark.parametrize(("game", "num_players", "workers"), [("keltis", 2, 0), ("keltis", 3, 2), ("dice", 2, 2)])
def test_the_collector_takes_the_learner_views_reset_options(game, num_players, workers):
    """``set_options`` then ``reset()``: the games of learner views reset with the same
    options (seat, opponents, a record or a state to start from), automatic resets after
    them without any."""
    opponents, weights = ["random", "heuristic"], [0.5, 0.5]
    kwargs = {"game": game, "num_players": num_players, "reward": "score"}
    options = _reset_options(game, num_players)
    ref = _reference(4, opponents, weights, **kwargs)
    col = BatchedSelfPlayVecEnv(4, opponents, weights, workers=workers, **kwargs)
    try:
        assert _play_both(ref, col, 300, seed=3, options=options) >= 4
        # the options were taken: the seat they name and the position of the state
        col.set_options(options)
        obs = col.reset()
        assert col.get_attr("seat", [0, 2]) == [num_players - 1, options[2]["seat"]]
        learner = KeltisLearnerEnv(opponents=opponents, **kwargs)
        assert np.array_equal(obs[2], learner.reset(options=options[2])[0])
        assert col._options == [{}] * 4  # for one reset only
    finally:
        col.close()


@pytest.mark.parametrize("policy", [POLICY, f"{POLICY},symmetry=colours_affine"])
def test_neural_opponents_play_as_the_learner_views_ppo_bots(policy):
    """A ``ppo:`` opponent decides in the batched forward pass; its moves are those of the
    learner view's PPOBot, which runs the network on each view alone (averaged over the
    relabellings it names, if any)."""
    opponents, weights = [policy, "heuristic"], [0.7, 0.3]
    ref = _reference(6, opponents, weights, reward="win", features=FEATURES)
    col = BatchedSelfPlayVecEnv(6, opponents, weights, workers=0, reward="win", features=FEATURES)
    try:
        assert _play_both(ref, col, 400, seed=5) >= 2
    finally:
        col.close()


class _Spy:
    """Stands for a network: records every batch it is given."""

    def __init__(self, network) -> None:
        self.network = network
        self.calls: list[np.ndarray] = []

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        self.calls.append(obs.copy())
        return self.network(obs)

    def sparse_logits(self, obs: np.ndarray) -> np.ndarray:  # the ppo bot's default forward pass
        self.calls.append(obs.copy())
        return self.network.sparse_logits(obs)


def _spy_on(batch: GameBatch, name: str) -> _Spy:
    entries = [e for g in batch.games for e in g.pool.entries if e.name == name]
    spy = _Spy(entries[0].bot.policy)
    for entry in entries:
        entry.bot.policy = spy
    return spy


def _run_games(seeds: list[int], steps: int, spec: str) -> tuple[list[list[np.ndarray]], _Spy, int]:
    """Play games seeded ``seeds`` (learner moves from each game's own generator); returns
    each game's observations, the network spy and the number of network decisions."""
    batch = GameBatch(len(seeds), [spec], game="keltis", num_players=2, reward="win", features=FEATURES)
    spy = _spy_on(batch, spec)
    batch.reset(seeds)
    rngs = [np.random.default_rng(s) for s in seeds]
    history = [[batch.obs[i].copy()] for i in range(len(seeds))]
    for _ in range(steps):
        actions = [int(rngs[i].choice(np.flatnonzero(batch.masks[i]))) for i in range(len(seeds))]
        _, dones, infos, _ = batch.step(actions)
        for i in range(len(seeds)):
            history[i].append(batch.obs[i].copy())
            if dones[i]:
                history[i].append(infos[i]["terminal_observation"])
    decisions = sum(g.match.decisions[1 - g.seat] for g in batch.games)
    return history, spy, decisions


@pytest.mark.parametrize("spec", [POLICY, f"{POLICY},sample=1,temperature=2"])
def test_batched_opponents_each_get_their_own_observation_and_action(spec):
    seeds = [3, 1, 4, 15, 9, 2, 6]
    history, spy, decisions = _run_games(seeds, 60, spec)
    # one forward pass per decision round for all the games waiting, never one per decision
    assert sum(len(c) for c in spy.calls) >= decisions > 2 * len(spy.calls)
    # each row of a batch is one game's own view: the policy's rows equal single-row passes
    batch = max(spy.calls, key=len)
    assert len(batch) > 1 and len({row.tobytes() for row in batch}) == len(batch)
    together = spy.network(batch)
    alone = np.stack([spy.network(row[None])[0] for row in batch])
    assert np.allclose(together, alone, atol=1e-5)
    # permuting the games changes no game's moves
    order = [5, 0, 6, 2, 1, 4, 3]
    permuted, _, _ = _run_games([seeds[k] for k in order], 60, spec)
    for j, k in enumerate(order):
        assert len(permuted[j]) == len(history[k])
        assert all(np.array_equal(a, b) for a, b in zip(permuted[j], history[k], strict=True))


def test_pool_methods_reach_every_game_and_snapshots_become_opponents():
    col = BatchedSelfPlayVecEnv(3, ["random"], workers=0, reward="win", features=FEATURES)
    try:
        assert col.env_method("add_opponent", POLICY, 0.0, "snap_1") == ["snap_1"] * 3
        col.env_method("set_opponent_weights", {"random": 0.0, "snap_1": 1.0})
        assert col.env_method("opponent_weights", indices=[1]) == [{"random": 0.0, "snap_1": 1.0}]
        col.seed(0)
        col.reset()
        seen = set()
        for _ in range(400):
            masks = np.stack(col.env_method("action_masks"))
            _, _, dones, infos = col.step(masks.argmax(axis=1))
            seen |= {name for i in np.flatnonzero(dones) for name in infos[i]["opponents"]}
        assert seen == {None, "snap_1"}
        assert list(col._local._networks) == [POLICY]  # loaded once for all the games
        col.env_method("remove_opponent", "snap_1")
        assert col.env_method("opponent_names") == [["random"]] * 3
        assert not col._local._networks  # no game plays it any more
    finally:
        col.close()


def test_maskable_ppo_learns_on_the_collector():
    from sb3_contrib import MaskablePPO

    col = BatchedSelfPlayVecEnv(4, ["random"], workers=0, reward="win")
    try:
        model = MaskablePPO("MlpPolicy", col, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu",
                            policy_kwargs={"net_arch": [16]})
        model.learn(256)
        assert model.num_timesteps == 256
    finally:
        col.close()


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match=r"bad opponent spec 'minimax'.*unknown bot 'minimax'"):
        BatchedSelfPlayVecEnv(2, ["minimax"], workers=2)
    with pytest.raises(ValueError, match=r"n_envs must be an integer >= 1, got 0"):
        BatchedSelfPlayVecEnv(0, ["random"])
    with pytest.raises(ValueError, match=r"weights has 1 weights for 2 opponents"):
        BatchedSelfPlayVecEnv(2, ["random", "heuristic"], [1.0], workers=0)
    col = BatchedSelfPlayVecEnv(2, ["random"], workers=0)
    try:
        with pytest.raises(AttributeError, match=r"no method 'render_board'; they have action_masks, add_opponent"):
            col.env_method("render_board")
        with pytest.raises(KeyError, match=r"no opponent named 'ghost'"):
            col.env_method("remove_opponent", "ghost")
        col.set_options({"seat": 2})
        with pytest.raises(ValueError, match=r"seat must be an integer in 0..1, got 2"):
            col.reset()
        col.set_options([{}])
        with pytest.raises(ValueError, match=r"one dict for all 2 games or a list of one per game, got a list of 1"):
            col.reset()
        col.set_options({"seat": 1, "sead": 3})
        with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['sead'\]"):
            col.reset()
        assert col.get_attr("seat") == [1, 1]
    finally:
        col.close()


def test_a_workers_error_is_raised_here_with_its_message():
    col = BatchedSelfPlayVecEnv(2, ["random"], workers=2)
    try:
        with pytest.raises(KeyError, match=r"no opponent named 'ghost'"):
            col.env_method("remove_opponent", "ghost", indices=[1])
        assert col.env_method("opponent_names") == [["random"], ["random"]]  # the workers go on
        col.set_options({"opponents": ["ghost"]})  # refused by both workers: both answers are read
        with pytest.raises(ValueError, match=r"options\['opponents'\] must name 1 pool entries .* got \['ghost'\]"):
            col.reset()
        assert col.env_method("opponent_names") == [["random"], ["random"]]
        timers = col.timers()
        assert set(timers) >= {"engine", "encoding", "opponent_bots", "opponent_networks", "waited"}
    finally:
        col.close()


def test_close_after_an_interrupt_between_two_workers_answers_reads_only_what_is_owed():
    """An interrupt (Ctrl-C, SIGTERM) may stop the collector after it read one worker's
    answer to a step and before the other's: closing then reads only the answer still
    owed, and the workers end, instead of waiting for an answer that never comes."""
    import threading

    col = BatchedSelfPlayVecEnv(4, ["random"], workers=2, pipeline=2)
    processes = list(col.processes)
    col.reset()
    masks = np.stack(col.env_method("action_masks"))
    col.step_part_async(0, masks[col.parts[0]].argmax(1))  # a legal action in each game of part 0
    col._answers([0])  # worker 0's answer read; the interrupt lands before worker 1's
    closer = threading.Thread(target=col.close, daemon=True)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "close() is waiting for an answer no worker owes"
    assert not any(process.is_alive() for process in processes)


@pytest.mark.slow
def test_the_training_benchmark_measures_both_and_their_ratio(tmp_path):
    import json

    from training.bench.__main__ import main

    out = tmp_path / "bench.json"
    smoke = ROOT / "configs" / "train" / "smoke.yaml"
    assert main(["--config", str(smoke), "--set", "workers=1", "--seconds", "1",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["steps_per_s"] > 0 and report["baseline_steps_per_s"] > 0
    assert report["ratio"] == pytest.approx(report["steps_per_s"] / report["baseline_steps_per_s"])
    collector = report["collector"]
    assert set(collector["split"]) == {"update", "learner_inference", "environments"}
    assert set(collector["worker_split"]) == {"engine", "encoding", "opponent_bots", "opponent_networks", "idle"}
    # whole rollouts of 2 envs x 128 steps after the warm-up one, at least one however slow the machine
    assert collector["steps"] >= 256 and collector["steps"] % 256 == 0 and len(collector["load_before"]) == 3


def _games_with_batched_encoding() -> list[str]:
    from keltis_env.core.game import game_names, get_game, load_object

    return [g for g in game_names() if callable(getattr(load_object(get_game(g).encoder), "encode_into", None))]


@pytest.mark.parametrize("game", _games_with_batched_encoding())
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_batched_encoding_gives_the_observations_of_encode(game, num_players):
    """Each game's ``encode_into`` (one numpy pass for many views, each game's own
    encoder and caches) writes exactly what ``encode`` returns view by view."""
    import random

    from keltis_env.core.game import get_game

    descriptor = get_game(game)
    config = descriptor.make_config(num_players=num_players)
    rng = random.Random(num_players)
    states = []
    for k in range(24):
        state = descriptor.new_state(config, k)
        for _ in range(rng.randrange(150)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        states.append(state)
    encoders = [descriptor.make_encoder(num_players) for _ in states]
    for _ in range(2):  # the second time through the encoders' caches
        views = [descriptor.live_view(s, (s.current_player + k) % num_players) for k, s in enumerate(states)]
        out = np.full((len(views), encoders[0].size), np.nan, np.float32)
        encoders[0].encode_into(views, out, encoders)
        assert np.array_equal(out, np.stack([e.encode(v) for e, v in zip(encoders, views, strict=True)]))


@pytest.mark.parametrize(("game", "workers", "turn_cap"), [("keltis", 0, "truncate"), ("dice", 2, "end")])
def test_the_collector_pays_the_shaped_reward_and_ends_capped_games_as_the_learner_view_does(game, workers, turn_cap):
    """Under ``reward="shaped"`` (paid after every action) and both ``turn_cap`` settings,
    with a turn cap that cuts some games: the learner views' trajectories exactly."""
    opponents, weights = ["random", "heuristic"], [0.5, 0.5]
    kwargs = {"game": game, "num_players": 2, "reward": "shaped", "turn_cap": turn_cap, "max_turns": 30}
    ref = _reference(4, opponents, weights, **kwargs)
    col_kwargs = {k: v for k, v in kwargs.items() if k != "max_turns"}
    col = BatchedSelfPlayVecEnv(4, opponents, weights, workers=workers, game_options={"max_turns": 30}, **col_kwargs)
    try:
        assert _play_both(ref, col, 300, seed=5) >= 4
    finally:
        col.close()
