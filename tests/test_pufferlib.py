"""The vector environment as a native PufferLib environment
(:mod:`keltis_env.envs.pufferlib`) and ``examples/pufferlib_train.py``, which trains it
with PufferLib's own PPO trainer.

Conformance: PufferLib's spaces and buffers, ``reset`` and ``step`` writing in place into
the buffers handed over (and through PufferLib's ``Serial`` and ``Multiprocessing``
backends), observations, legal-action masks, rewards and ends equal to
:class:`~keltis_env.envs.vector.KeltisVectorEnv`'s for the same seed and actions (both games,
2 and 3 players), seeds reproducible, PufferLib's ``masks`` false exactly on the rows whose
action is ignored, the episode infos, the masking policy, and errors naming what is wrong.

Needs the ``puffer`` extra and numba; skipped without them, except under ``CI=true``,
where ``make install`` installs both and a missing one fails the tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = [("keltis", 2), ("keltis", 3), ("dice", 2)]


def require(module: str, reason: str) -> None:
    """Skip with ``reason`` where ``module`` does not import; under ``CI=true``, fail."""
    try:
        __import__(module)
    except ImportError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the PufferLib tests must run in CI: {reason} ({exc})")
        pytest.skip(f"{reason} ({exc})")


@pytest.fixture(scope="module")
def puffer() -> Any:
    """The adapter module. Importing PufferLib 3.0.16 makes Ctrl-C end the process at once
    and installs rich's traceback hook; the test process keeps its own handlers."""
    require("numba", "the compiled core needs numba (the fast extra)")
    handler, hook = signal.getsignal(signal.SIGINT), sys.excepthook
    try:
        require("pufferlib", "PufferLib is not installed (the puffer extra, docs/integrations.md)")
        from keltis_env.envs import pufferlib as adapter
    finally:
        signal.signal(signal.SIGINT, handler)
        sys.excepthook = hook
    return adapter


def legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One legal action per row drawn uniformly from ``masks``; 0 in a row without one."""
    return (rng.random(masks.shape) * masks).argmax(axis=1).astype(np.int32)


def test_spaces_and_buffers_are_pufferlibs(puffer):
    import pufferlib
    import pufferlib.vector

    from keltis_env.envs.vector import KeltisVectorEnv

    env = pufferlib.vector.make(puffer.KeltisPufferEnv, env_kwargs={"num_envs": 8})
    assert isinstance(env, puffer.KeltisPufferEnv), "the native backend hands back the environment itself"
    assert isinstance(env, pufferlib.PufferEnv)
    vec = KeltisVectorEnv(8)
    size, actions = vec.single_observation_space.shape[0], vec.single_action_space.n
    space = env.single_observation_space
    assert env.num_agents == 8
    assert env.single_action_space == vec.single_action_space
    assert space.shape == (size + actions,) and space.dtype == np.float32
    assert (space.low[:size] == vec.single_observation_space.low).all()
    assert (space.high[:size] == vec.single_observation_space.high).all()
    assert (space.low[size:] == 0).all() and (space.high[size:] == 1).all(), "the mask columns hold 0 or 1"
    expected = {"observations": ((8, size + actions), np.float32), "rewards": ((8,), np.float32),
                "terminals": ((8,), np.bool_), "truncations": ((8,), np.bool_), "masks": ((8,), np.bool_),
                "actions": ((8,), np.int32)}
    for name, (shape, dtype) in expected.items():
        array = getattr(env, name)
        assert (array.shape, array.dtype) == (shape, dtype), name
    assert env.observation_space.shape == (8, size + actions)


def test_reset_and_step_write_in_place_into_the_buffers_handed_over(puffer):
    env = puffer.KeltisPufferEnv(8)
    buf = {name: np.zeros_like(getattr(env, name)) for name in puffer.BUFFER_NAMES}
    env = puffer.KeltisPufferEnv(8, buf=buf)
    obs, infos = env.reset(seed=1)
    assert obs is buf["observations"] and infos == []
    assert buf["observations"].any() and buf["masks"].all()
    rng = np.random.default_rng(0)
    for _ in range(20):
        actions = legal_actions(env.action_masks(), rng)
        obs, rewards, terminals, truncations, infos = env.step(actions)
        assert obs is buf["observations"] and rewards is buf["rewards"]
        assert terminals is buf["terminals"] and truncations is buf["truncations"]
        assert (buf["actions"] == actions).all(), "the actions are written into the actions buffer"
        assert isinstance(infos, list)


@pytest.mark.parametrize(("game", "players"), CASES)
def test_observations_masks_rewards_and_ends_equal_the_vector_envs(puffer, game, players):
    from keltis_env.envs.vector import KeltisVectorEnv

    options = {"game": game, "num_players": players, "reward": "shaped", "opponents": "random"}
    env = puffer.KeltisPufferEnv(16, **options)
    vec = KeltisVectorEnv(16, **options)
    obs, _ = env.reset(seed=7)
    vec_obs, info = vec.reset(seed=7)
    rng = np.random.default_rng(1)
    ended_rows = 0
    for _ in range(400):
        part, mask = puffer.split_observation(obs, env.num_actions)
        assert (part == vec_obs).all()
        assert (mask == info["action_mask"]).all() and (env.action_masks() == vec.action_masks()).all()
        actions = legal_actions(env.action_masks(), rng)
        obs, rewards, terminals, truncations, _ = env.step(actions)
        vec_obs, vec_rewards, vec_terminated, vec_truncated, info = vec.step(actions)
        assert (rewards == vec_rewards.astype(np.float32)).all(), "PufferLib's reward buffer is float32"
        assert (terminals == vec_terminated).all() and (truncations == vec_truncated).all()
        assert (env.masks == ~(vec_terminated | vec_truncated)).all()
        ended_rows += int((~env.masks).sum())
    assert ended_rows > 0, "games ended, so the auto-reset rows were compared too"


def test_the_same_seed_gives_the_same_games_and_another_seed_others(puffer):
    def run(env: Any, seed: int | None) -> list[np.ndarray]:
        rng = np.random.default_rng(3)
        obs, _ = env.reset(seed=seed)
        seen = [obs.copy()]
        for _ in range(100):
            obs, rewards, terminals, _, _ = env.step(legal_actions(env.action_masks(), rng))
            seen += [obs.copy(), rewards.copy(), terminals.copy()]
        return seen

    first = run(puffer.KeltisPufferEnv(8), 5)
    assert all((a == b).all() for a, b in zip(first, run(puffer.KeltisPufferEnv(8), 5), strict=True))
    assert all((a == b).all() for a, b in zip(first, run(puffer.KeltisPufferEnv(8, seed=5), None), strict=True)), \
        "the constructor's seed serves the first reset that names none"
    assert not (first[0] == puffer.KeltisPufferEnv(8).reset(seed=6)[0]).all()


def test_masks_are_false_exactly_where_the_next_action_is_ignored(puffer):
    """The step after a game ends deals a new game there and ignores its action: PufferLib's
    ``masks`` marks that row, and even an illegal action there is not refused."""
    env = puffer.KeltisPufferEnv(4, illegal_action="raise")
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        env.step(legal_actions(env.action_masks(), rng))
        if not env.masks.all():
            break
    ended = ~env.masks
    assert ended.any(), "a game ended"
    assert (ended == (env.terminals | env.truncations)).all()
    assert not env.action_masks()[ended].any(), "a finished game's last observation has no legal action"
    actions = legal_actions(env.action_masks(), rng)
    actions[ended] = env.num_actions - 1 if env.num_actions > 1 else 0
    env.step(actions)  # no ActionError: those actions are ignored
    assert env.masks[ended].all() and env.action_masks()[ended].any(), "new games were dealt there"
    assert (env.rewards[ended] == 0).all()


def test_infos_give_the_return_and_length_of_the_episodes_that_ended(puffer):
    env = puffer.KeltisPufferEnv(1, reward="shaped")
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    total, steps, episodes = 0.0, 0, 0
    for _ in range(3000):
        _, rewards, terminals, truncations, infos = env.step(legal_actions(env.action_masks(), rng))
        total += float(rewards[0])
        steps += 1
        if terminals[0] or truncations[0]:
            assert infos == [{"episode_return": pytest.approx(total), "episode_length": steps}]
            episodes += 1
            assert env.step(np.zeros(1, np.int32))[4] == [], "dealing the next game is no step of it"
            total, steps = 0.0, 0
            if episodes == 2:
                break
        else:
            assert infos == []
    assert episodes == 2


def test_the_serial_backend_reads_the_environments_own_buffers(puffer):
    import pufferlib.vector

    vecenv = pufferlib.vector.make(puffer.KeltisPufferEnv, env_kwargs={"num_envs": 8},
                                   backend=pufferlib.vector.Serial, num_envs=1, seed=9)
    obs, _ = vecenv.reset(seed=9)
    assert np.shares_memory(obs, vecenv.driver_env.observations)
    assert (obs == puffer.KeltisPufferEnv(8).reset(seed=9)[0]).all()
    vecenv.send(legal_actions(vecenv.driver_env.action_masks(), np.random.default_rng(0)))
    fields = vecenv.recv()
    assert len(fields) == 8 and fields[0] is obs, "observations, rewards, terminals, truncations, " \
        "teacher actions, infos, agent ids, masks"
    vecenv.close()


def test_the_multiprocessing_backend_steps_the_environments_in_workers_over_shared_memory(puffer):
    """Two workers, each one environment of 4 games; environment ``i`` is seeded ``seed + i``."""
    import pufferlib.vector

    vecenv = pufferlib.vector.make(puffer.KeltisPufferEnv, env_kwargs={"num_envs": 4},
                                   backend=pufferlib.vector.Multiprocessing, num_envs=2, num_workers=2)
    try:
        vecenv.async_reset(seed=3)
        obs = vecenv.recv()[0]
        direct = [puffer.KeltisPufferEnv(4), puffer.KeltisPufferEnv(4)]
        expected = np.concatenate([env.reset(seed=3 + i)[0] for i, env in enumerate(direct)])
        assert obs.shape == (8, direct[0].single_observation_space.shape[0]) and (obs == expected).all()
        rng = np.random.default_rng(0)
        for _ in range(30):
            actions = legal_actions(puffer.split_observation(obs, direct[0].num_actions)[1] > 0.5, rng)
            vecenv.send(actions)
            obs, rewards, terminals = vecenv.recv()[:3]
            for i, env in enumerate(direct):
                env.step(actions[4 * i:4 * i + 4])
            assert (obs == np.concatenate([env.observations for env in direct])).all()
            assert (rewards == np.concatenate([env.rewards for env in direct])).all()
            assert (terminals == np.concatenate([env.terminals for env in direct])).all()
    finally:
        vecenv.close()


def test_wrong_buffers_and_actions_are_refused_naming_what_is_expected(puffer):
    env = puffer.KeltisPufferEnv(4)
    size = env.single_observation_space.shape[0]
    buf = {name: np.zeros_like(getattr(env, name)) for name in puffer.BUFFER_NAMES}
    with pytest.raises(ValueError, match=r"buf misses the buffers masks; a PufferEnv's buffers are observations, "):
        puffer.KeltisPufferEnv(4, buf={k: v for k, v in buf.items() if k != "masks"})
    bad = {**buf, "observations": np.zeros((4, size - 1), np.float32)}
    with pytest.raises(ValueError, match=rf"buf\['observations'\] must be a NumPy array of shape \(4, {size}\) "
                                         r"and dtype float32 \(4 games\), got shape \(4, \d+\) and dtype float32"):
        puffer.KeltisPufferEnv(4, buf=bad)
    with pytest.raises(ValueError, match=r"buf\['rewards'\] must be .* dtype float32 .*got shape \(4,\) and dtype "
                                         r"float64"):
        puffer.KeltisPufferEnv(4, buf={**buf, "rewards": np.zeros(4)})
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be 4 integer action ids .*got an array of shape \(3,\)"):
        env.step(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match=r"actions must be 4 integer action ids .*dtype float64"):
        env.step(np.zeros(4))
    with pytest.raises(RuntimeError, match="reset"):
        puffer.KeltisPufferEnv(4).step(np.zeros(4, np.int32))


def test_the_masked_policy_gives_illegal_actions_no_probability(puffer):
    import pufferlib.pytorch
    import torch

    env = puffer.KeltisPufferEnv(64)
    env.reset(seed=3)
    torch.manual_seed(0)
    policy = puffer.MaskedPolicy(env, hidden_size=32)
    rng = np.random.default_rng(0)
    for _ in range(300):
        if not env.masks.all():
            break
        env.step(legal_actions(env.action_masks(), rng))
    ended = ~env.masks
    assert ended.any(), "some rows hold a finished game's last observation"
    with torch.no_grad():
        logits, values = policy.forward_eval(torch.as_tensor(env.observations))
        actions, logprob, entropy = pufferlib.pytorch.sample_logits(logits)
    legal = torch.as_tensor(env.action_masks())
    assert values.shape == (64, 1) and logits.shape == (64, env.num_actions)
    assert (logits[~legal & ~torch.as_tensor(ended)[:, None]] == puffer.MASKED_LOGIT).all()
    assert (logits[legal] > puffer.MASKED_LOGIT).all()
    assert (logits[torch.as_tensor(ended)] > puffer.MASKED_LOGIT).all(), "no legal action: left unmasked"
    assert torch.isfinite(logprob).all() and torch.isfinite(entropy).all()
    chosen = legal[torch.arange(64), actions.long()]
    assert chosen[~torch.as_tensor(ended)].all(), "every sampled action of a live game is legal"


def test_the_example_trains_a_few_thousand_steps_with_pufferlibs_trainer(puffer, tmp_path):
    """``examples/pufferlib_train.py`` on the CPU: PuffeRL's PPO over the adapter, the games
    raising on an illegal action; the weights move, the episodes that ended reach PuffeRL's
    logs and the checkpoint loads into the policy. The dice game: its games are short
    enough (about 37 learner steps against random play) for many to end in 3,000 steps."""
    import torch

    result = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "examples/pufferlib_train.py", "--steps", "3000", "--game", "dice", "--num-envs", "32",
         "--horizon", "32", "--minibatch", "256", "--out", str(tmp_path / "run"), "--json", str(result), "--seed", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(result.read_text(encoding="utf-8"))
    assert summary["command"].startswith("python examples/pufferlib_train.py --steps 3000")
    assert summary["learner_steps"] >= 3000 and summary["epochs"] >= 3
    assert summary["largest_weight_change"] > 0
    assert all(np.isfinite(v) for v in summary["losses"].values()) and summary["losses"]
    assert summary["episode_return"] is not None, "games ended during training and were logged"
    assert "PuffeRL on dice (32 games" in done.stdout.splitlines()[-1]
    state = torch.load(summary["checkpoint"], map_location="cpu")
    policy = puffer.MaskedPolicy(puffer.KeltisPufferEnv(1, game="dice"), hidden_size=128)
    policy.load_state_dict(state)
