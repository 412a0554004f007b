"""Other reinforcement-learning libraries driving our PettingZoo environments, with
masked random play for a few episodes of both games:

* TorchRL's ``PettingZooWrapper`` (AEC, ``use_mask=True``; one group per agent);
* Tianshou's ``PettingZooEnv`` (its observation ``{"agent_id", "obs", "mask"}``);
* RLlib's ``PettingZooEnv`` (old-style wrapper; its observations keep PettingZoo's key
  ``"observation"``, not RLlib's masking convention ``"observations"``: for RLlib's new
  API stack use ``keltis_env.integrations.rllib.TurnBasedMultiAgentEnv``);

and ``keltis bench --peers`` on PettingZoo's classic card games. The environments raise
on an illegal action (``illegal_action="raise"``), so a finished episode proves that
every action came from the mask; the rewards each client hands out must be the
environment's final rewards. Each part is skipped where its library is not installed
(the ``clients`` and ``peers`` extras, ``make test-distributed``).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from keltis_env.core.game import game_names, get_game
from keltis_env.core.rewards import final_rewards
from keltis_env.envs import make_env

GAMES = game_names()
EPISODES = 3
ROOT = Path(__file__).resolve().parents[1]
INTEGRATIONS = ROOT / "docs" / "integrations.md"


def env_module(game: str):
    return SimpleNamespace(env=partial(make_env, game))


def expected_rewards(aec) -> list[float]:
    return final_rewards(aec.unwrapped.state_.scores(), aec.unwrapped.reward_mode)


@pytest.mark.parametrize("game", GAMES)
def test_torchrl_pettingzoo_wrapper_plays_masked_random_episodes(game):
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    aec = env_module(game).env(illegal_action="raise")
    env = PettingZooWrapper(env=aec, use_mask=True, seed=0)
    agents = list(aec.possible_agents)
    assert env.group_map == {a: [a] for a in agents}, "AEC: one group per agent"
    for episode in range(EPISODES):
        env.set_seed(episode)
        rollout = env.rollout(5000, break_when_any_done=True)  # random actions drawn from the masked specs
        assert bool(rollout["next", "done"][-1]), "the episode ran to its end"
        acting = torch.stack([rollout[a, "mask"][:, 0] for a in agents], -1)
        assert (acting.sum(-1) == 1).all(), "exactly one agent acts at every step"
        for agent in agents:
            chosen = rollout[agent, "action"][:, 0].long()
            mask = rollout[agent, "action_mask"][:, 0]
            legal = mask.gather(-1, chosen[:, None])[:, 0]
            assert legal[rollout[agent, "mask"][:, 0]].all(), "the acting agent's action is in its mask"
        totals = [float(rollout["next", a, "reward"].sum()) for a in agents]
        assert totals == pytest.approx(expected_rewards(aec))


@pytest.mark.parametrize("game", GAMES)
def test_tianshou_pettingzoo_env_plays_masked_random_episodes(game):
    pytest.importorskip("tianshou")
    from tianshou.env import PettingZooEnv

    aec = env_module(game).env(illegal_action="raise")
    env = PettingZooEnv(aec)
    rng = random.Random(0)
    for episode in range(EPISODES):
        obs, _info = env.reset(seed=episode)
        steps = 0
        while True:
            assert obs["agent_id"] == aec.agent_selection
            legal = np.flatnonzero(obs["mask"])
            obs, rewards, terminated, truncated, info = env.step(int(legal[rng.randrange(len(legal))]))
            steps += 1
            if terminated or truncated:
                break
        assert steps > 1 and info["scores"] == list(aec.unwrapped.state_.scores())
        assert list(rewards) == pytest.approx(expected_rewards(aec)), "Tianshou's reward list is per seat"


@pytest.mark.parametrize("game", GAMES)
def test_rllib_pettingzoo_env_plays_masked_random_episodes(game):
    pytest.importorskip("ray.rllib")
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    aec = env_module(game).env(illegal_action="raise")
    env = PettingZooEnv(aec)
    rng = random.Random(0)
    agents = list(aec.possible_agents)
    for episode in range(EPISODES):
        obs, _infos = env.reset(seed=episode)
        totals = dict.fromkeys(agents, 0.0)
        while True:
            (agent, o), = obs.items()
            assert set(o) == {"observation", "action_mask"}, "PettingZoo's keys, passed through unchanged"
            legal = np.flatnonzero(o["action_mask"])
            obs, rewards, terminateds, truncateds, _infos = env.step({agent: int(legal[rng.randrange(len(legal))])})
            for a, r in rewards.items():
                totals[a] += r
            if terminateds["__all__"] or truncateds["__all__"]:
                break
        assert set(obs) == set(agents), "every agent sees the end"
        assert [totals[a] for a in agents] == pytest.approx(expected_rewards(aec))


def test_bench_peers_measures_the_card_games_and_ours_in_one_loop(capsys):
    pytest.importorskip("rlcard")
    from keltis_env.cli import main
    from keltis_env.cli.bench import PEERS, available_peers

    found = available_peers()
    assert {"texas_holdem_v4", "leduc_holdem_v4"} <= set(found)
    assert set(found) <= set(PEERS)
    assert main(["bench", "--peers", "--seconds", "0.2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for name in [*found, *(get_game(g).env_name for g in game_names())]:
        assert name in out
    assert "ratio" in out


# ---------------------------------------------------------------------- docs/integrations.md
def page_python_blocks(page: Path) -> list[tuple[int, str]]:
    """Every fenced ```python block of ``page``: (line of its fence, code)."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```[ \t]*$", text, re.MULTILINE | re.DOTALL)
    ]


INTEGRATION_BLOCKS = page_python_blocks(INTEGRATIONS)


def test_the_integrations_page_has_a_quick_start_for_torchrl_and_tianshou():
    codes = [code for _, code in INTEGRATION_BLOCKS]
    assert any("from torchrl" in code for code in codes), "no TorchRL quick start on docs/integrations.md"
    assert any("from tianshou" in code for code in codes), "no Tianshou quick start on docs/integrations.md"


@pytest.mark.parametrize(("line", "code"), INTEGRATION_BLOCKS,
                         ids=[f"integrations.md:{line}" for line, _ in INTEGRATION_BLOCKS])
def test_integrations_page_python_example_runs(line, code, tmp_path):
    """Each quick start runs as a reader would paste it, in a fresh interpreter, in an empty
    folder; skipped where the library it shows is not installed (the ``clients`` and
    ``puffer`` extras)."""
    for library in ("torchrl", "tianshou", "pufferlib"):
        # looked up, not imported: importing pufferlib changes this process's Ctrl-C handler
        if (re.search(rf"^(from|import) (keltis_env\.(integrations|envs)\.)?{library}\b", code, re.MULTILINE)
                and importlib.util.find_spec(library) is None):
            pytest.skip(f"{library} is not installed")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"the example at docs/integrations.md line {line} fails:\n{done.stderr[-3000:]}"
