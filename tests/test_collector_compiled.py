"""The collector on the compiled core (training/sb3/compiled_batch.py, the collector kernels of
keltis_env/games/*/kernels_batch.py): observations, masks and rewards are the Python engine's
of the same positions, neural opponents are batched, seeds fix the games, the pool methods,
the choice of engine and its refusals, a training run."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from keltis_env.core.errors import ActionError
from keltis_env.core.game import get_game
from keltis_env.core.rewards import final_rewards, potentials
from training.sb3.collector import BatchedSelfPlayVecEnv
from training.sb3.compiled_batch import CompiledGameBatch, resolve_backend

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parent.parent
POLICY = f"ppo:{ROOT / 'policies' / 'keltis_2p.zip'}"  # trained with the plan feature
FEATURES = ("plan",)


def _python_observation(batch: CompiledGameBatch, g: int, seat: int, encoder) -> np.ndarray:
    view = batch.spec.live_view(batch.position(g), seat)
    return np.asarray(encoder.encode(view), dtype=np.float32)


def _kernel_observation(batch: CompiledGameBatch, g: int, seat: int) -> np.ndarray:
    out = np.zeros((1, batch.size), np.float32)
    batch.table.observe(np.array([g]), np.array([seat]), out)
    return out[0]


@pytest.mark.parametrize(
    ("game", "num_players", "features", "reward", "opponents"),
    [("keltis", 2, FEATURES, "shaped", ["random", "heuristic", "planner", "ismcts:iterations=2"]),
     ("keltis", 3, (), "win", ["random", "heuristic:paths=3,gap=2", "planner"]),
     ("dice", 2, (), "score", ["random", "heuristic"]),
     ("dice", 3, (), "shaped", ["random", "heuristic:extra_turn_value=4"])],
)
def test_observations_masks_and_rewards_are_the_python_engines_of_the_same_positions(
        game, num_players, features, reward, opponents):
    """Every row converted to the Python engine's state: the learner's observation is the
    Python encoder's of its view (every other seat's too), its mask the engine's legal
    actions, and each reward the learner view's for the positions before and after."""
    batch = CompiledGameBatch(6, opponents, game=game, num_players=num_players, reward=reward, features=features,
                              game_options={"max_turns": 60})
    encoder = get_game(game).make_encoder(num_players, features)
    batch.reset(list(range(6)))
    rng = np.random.default_rng(1)
    ended = 0
    # the shaped reward's base: the learner's potential after its last step (at a new game
    # the deal's, before the opponents' first moves: not known here, so not checked)
    base: list[float | None] = [None] * 6
    for step in range(120):
        before = []
        for g in range(6):
            state, seat = batch.position(g), int(batch.seats[g])
            assert state.current_player == seat and not state.is_over
            assert np.flatnonzero(batch.masks[g]).tolist() == sorted(state.legal_actions()), step
            for p in range(num_players):
                expected = _python_observation(batch, g, p, encoder)
                got = batch.obs[g] if p == seat else _kernel_observation(batch, g, p)
                assert np.array_equal(got, expected), (step, g, p)
            before.append(potentials(state.scores())[seat] if base[g] is None else base[g])
        actions = [int(rng.choice(np.flatnonzero(m))) for m in batch.masks]
        rewards, dones, infos, _ = batch.step(actions)
        for g in range(6):
            seat = int(batch.seats[g]) if not dones[g] else infos[g]["seat"]
            if dones[g]:
                ended += 1
                scores = infos[g]["scores"]
                assert infos[g]["score"] == scores[seat] and infos[g]["opponents"][seat] is None
                assert infos[g]["terminal_observation"].shape == (batch.size,)
                expected = (potentials(scores)[seat] - before[g] if reward == "shaped"
                            else final_rewards(scores, reward)[seat])
                known, base[g] = base[g] is not None or reward != "shaped", None
            else:
                after = potentials(batch.position(g).scores())[seat]
                expected = after - before[g] if reward == "shaped" else 0.0
                known, base[g] = base[g] is not None or reward != "shaped", after
            if known:
                assert rewards[g] == pytest.approx(expected, abs=1e-9), (step, g)
    assert ended >= 3  # through game ends and automatic restarts


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


def test_neural_opponents_get_one_forward_pass_per_network_and_decision_round():
    batch = CompiledGameBatch(8, [POLICY], features=FEATURES)
    entries = [e for slot in batch.slots for e in slot.pool.entries]
    spy = _Spy(entries[0].bot.policy)
    for entry in entries:
        entry.bot.policy = spy
    batch.reset(list(range(8)))
    rng = np.random.default_rng(0)
    for _ in range(40):
        batch.step([int(rng.choice(np.flatnonzero(m))) for m in batch.masks])
    decisions = sum(len(c) for c in spy.calls)
    assert decisions > 3 * len(spy.calls)  # many games' decisions per forward pass, never one pass each
    widest = max(spy.calls, key=len)
    assert len({row.tobytes() for row in widest}) == len(widest)  # each row one game's own view
    assert np.allclose(spy.network(widest), np.stack([spy.network(row[None])[0] for row in widest]), atol=1e-5)


def _trajectory(seeds: list[int], opponents: list[str], steps: int, **kwargs) -> list[tuple]:
    batch = CompiledGameBatch(len(seeds), opponents, features=FEATURES, reward="shaped", **kwargs)
    batch.reset(seeds)
    rng = np.random.default_rng(7)
    out = [(batch.obs.copy(), batch.masks.copy())]
    for _ in range(steps):
        np.random.seed(int(rng.integers(100)))  # the global generators play no part
        random.random()
        rewards, dones, infos, resets = batch.step([int(rng.choice(np.flatnonzero(m))) for m in batch.masks])
        out.append((batch.obs.copy(), batch.masks.copy(), rewards, dones, [i.get("scores") for i in infos], resets))
    return out


def _same(a: list[tuple], b: list[tuple]) -> bool:
    return all(len(x) == len(y) and all(np.array_equal(np.asarray(u, dtype=object), np.asarray(v, dtype=object))
                                        for u, v in zip(x, y, strict=True)) for x, y in zip(a, b, strict=True))


def test_the_same_seeds_give_the_same_games_and_other_seeds_other_games():
    opponents = ["random", "heuristic", "planner", f"{POLICY},sample=1", "ismcts:iterations=2"]
    first = _trajectory([4, 5, 6], opponents, 80)
    assert _same(first, _trajectory([4, 5, 6], opponents, 80))
    assert not _same(first, _trajectory([4, 5, 9], opponents, 80))


def test_the_workers_and_the_pipeline_parts_step_the_same_games_as_one_process():
    """Each game draws from its own generators only: how the games are spread over processes
    and parts changes none of them."""
    opponents, weights = ["heuristic", "random", POLICY], [0.3, 0.3, 0.4]
    kwargs = {"reward": "win", "features": FEATURES, "backend": "compiled"}
    one = BatchedSelfPlayVecEnv(6, opponents, weights, workers=0, **kwargs)
    two = BatchedSelfPlayVecEnv(6, opponents, weights, workers=2, pipeline=2, **kwargs)
    try:
        assert one.backend == two.backend == "compiled"
        one.seed(3)
        two.seed(3)
        assert np.array_equal(one.reset(), two.reset()) and one.reset_infos == two.reset_infos
        rng = np.random.default_rng(3)
        ended = 0
        for step in range(150):
            masks = np.stack(one.env_method("action_masks"))
            assert np.array_equal(masks, np.stack(two.env_method("action_masks"))), step
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            o1, r1, d1, i1 = one.step(actions)
            if step % 2:  # the pipeline's parts, one after the other
                parts = [two.step_part_wait(p) for p in [two.step_part_async(p, actions[idx]) or p
                                                         for p, idx in enumerate(two.parts)]]
                o2 = np.zeros_like(o1)
                r2, d2 = np.zeros_like(r1), np.zeros_like(d1)
                i2 = [None] * 6
                for idx, (obs, _, rew, done, infos) in zip(two.parts, parts, strict=True):
                    o2[idx], r2[idx], d2[idx] = obs, rew, done
                    for k, info in zip(idx, infos, strict=True):
                        i2[k] = info
            else:
                o2, r2, d2, i2 = two.step(actions)
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2), step
            for a, b in zip(i1, i2, strict=True):
                assert a.keys() == b.keys() and a.get("scores") == b.get("scores"), step
            ended += int(d1.sum())
        assert ended >= 2
    finally:
        one.close()
        two.close()


def test_pool_methods_reach_every_game_and_new_bot_options_reach_the_kernels():
    col = BatchedSelfPlayVecEnv(3, ["random"], workers=0, reward="win", features=FEATURES, backend="compiled")
    try:
        assert col.env_method("add_opponent", POLICY, 0.0, "snap_1") == ["snap_1"] * 3
        col.env_method("add_opponent", "heuristic:paths=2", 0.0)
        col.env_method("set_opponent_weights", {"random": 0.0, "snap_1": 1.0, "heuristic:paths=2": 1.0})
        assert col.env_method("opponent_weights", indices=[1]) == [
            {"random": 0.0, "snap_1": 1.0, "heuristic:paths=2": 1.0}]
        assert set(col._local.table._players) == {None, "random", "heuristic:paths=2"}
        col.seed(0)
        col.reset()
        seen = set()
        for _ in range(300):
            masks = np.stack(col.env_method("action_masks"))
            _, _, dones, infos = col.step(masks.argmax(axis=1))
            seen |= {name for i in np.flatnonzero(dones) for name in infos[i]["opponents"]}
        assert seen == {None, "snap_1", "heuristic:paths=2"}
        assert list(col._local._networks) == [POLICY]  # loaded once for all the games
        col.env_method("remove_opponent", "snap_1")
        assert col.env_method("opponent_names") == [["random", "heuristic:paths=2"]] * 3
        assert not col._local._networks
    finally:
        col.close()


def test_reset_options_start_from_the_given_position_seat_and_opponents():
    descriptor = get_game("keltis")
    _, state = descriptor.record_cls.start(descriptor.make_config(num_players=2), 21)
    seat = state.current_player
    batch = CompiledGameBatch(2, ["random", "heuristic"])
    infos = batch.reset([1, 2], [{"state": state.to_dict(), "seat": seat, "opponents": ["heuristic"]}, None])
    assert infos[0] == {"seat": seat}
    assert batch.position(0).to_dict() == state.to_dict()
    assert [e.name if e else None for e in batch.slots[0].entries][1 - seat] == "heuristic"
    over = descriptor.record_cls.start(descriptor.make_config(num_players=2), 3)[1]
    while not over.is_over:
        over.apply(over.legal_actions()[0])
    with pytest.raises(ValueError, match="over before the learner's first decision"):
        batch.reset([1, 2], [{"state": over.to_dict()}, None])


def test_an_illegal_action_ends_the_episode_or_raises_the_engines_error_and_changes_nothing():
    batch = CompiledGameBatch(2, ["heuristic"])
    batch.reset([0, 1])
    illegal = int(np.flatnonzero(~batch.masks[0])[0])
    engine_message = ""
    try:
        batch.position(0).apply(illegal)
    except ActionError as exc:
        engine_message = str(exc)
    rewards, dones, infos, _ = batch.step([illegal, int(np.flatnonzero(batch.masks[1])[0])])
    assert rewards[0] == -1.0 and dones[0] and not dones[1]
    assert infos[0]["illegal_action"] == illegal and infos[0]["reason"] == engine_message
    strict = CompiledGameBatch(2, ["heuristic"], illegal_action="raise")
    strict.reset([0, 1])
    states = strict.states.copy()
    legal = int(np.flatnonzero(strict.masks[0])[0])
    with pytest.raises(ActionError):
        strict.step([legal, int(np.flatnonzero(~strict.masks[1])[0])])
    assert np.array_equal(states, strict.states)  # no game moved


def test_auto_is_compiled_where_it_can_be_and_compiled_is_refused_where_it_cannot(monkeypatch):
    assert resolve_backend("auto", "keltis", FEATURES) == "compiled"
    assert resolve_backend("auto", "dice", ()) == "compiled"
    assert resolve_backend("auto", "toy", ()) == "python"  # a plugin game: no kernels
    with pytest.raises(ValueError, match="backend 'compiled' cannot run this collector: the game 'toy' has no"):
        BatchedSelfPlayVecEnv(2, ["random"], game="toy", workers=0, backend="compiled")
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'compiled', 'python', got 'fast'"):
        BatchedSelfPlayVecEnv(2, ["random"], workers=0, backend="fast")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numba" else real(name, *a))
    assert resolve_backend("auto", "keltis", ()) == "python"
    with pytest.raises(ValueError, match="needs numba"):
        resolve_backend("compiled", "keltis", ())


def test_maskable_ppo_trains_on_the_compiled_collector_in_workers_with_the_pipeline():
    from training.sb3.pipeline import PipelinedMaskablePPO

    col = BatchedSelfPlayVecEnv(4, ["random", "planner"], workers=2, pipeline=2, reward="win", backend="compiled")
    try:
        model = PipelinedMaskablePPO("MlpPolicy", col, n_steps=32, batch_size=64, n_epochs=1, seed=0,
                                     device="cpu", policy_kwargs={"net_arch": [16]})
        model.learn(256)
        assert model.num_timesteps == 256
        assert col.timers()["opponent_bots"] > 0
    finally:
        col.close()


@pytest.mark.slow
def test_a_training_run_on_the_compiled_collector(tmp_path, monkeypatch):
    """``collector_backend: compiled``: the run's games are stepped by the compiled batch
    (spied on), and the run ends with its policy."""
    from training.sb3 import compiled_batch
    from training.train.__main__ import main

    made = []
    original = compiled_batch.CompiledGameBatch.__init__

    def spy(self, *args, **kwargs):
        made.append(args[0])
        original(self, *args, **kwargs)

    monkeypatch.setattr(compiled_batch.CompiledGameBatch, "__init__", spy)
    smoke = ROOT / "configs" / "train" / "smoke.yaml"  # its games run in this process (workers: 0)
    code = main(["--config", str(smoke), "--set", f"runs_dir={tmp_path}", "--set", "collector_backend=compiled",
                 "--set", "eval.every=0", "--set", "eval.final_games=4", "--no-progress"])
    assert code == 0
    assert made  # the collector's games ran on the compiled core
    (run,) = tmp_path.iterdir()
    assert (run / "policy.zip").exists()
    assert "collector_backend: compiled" in (run / "config.yaml").read_text()
