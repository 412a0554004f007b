"""A third game is one package: ``toy`` (``tests/plugins/keltis_toy``) lives outside
``keltis_env`` and is found only through the entry-point group ``keltis_env.games``, as
another distribution's game would be (``conftest.py`` installs its ``dist-info``). With
nothing outside its package written for it, it has an environment (``make_env``), the
bots every game has next to its own, the conformance suite (``test_conformance.py``,
parametrized over the registry), the CLI, evaluation and training."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import install_plugin_distribution

from keltis_env.bots import COMMON_BOTS, bot_names, game_bots, make_bot
from keltis_env.core import game as registry
from keltis_env.core.errors import GamePluginError
from keltis_env.core.game import game_for_env, game_names, get_game
from keltis_env.envs import make_env, make_raw_env, raw_env_class

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A subprocess of this interpreter in the repository; it inherits PYTHONPATH (the plugin)."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def test_the_toy_game_is_found_through_its_entry_point() -> None:
    import keltis_toy

    assert "toy" in game_names() and game_names()[-1] == "toy", "after the package's own games"
    assert get_game("toy") is keltis_toy.GAME is game_for_env("toy_v0")
    assert not keltis_toy.GAME.state_cls.__module__.startswith("keltis_env")


def test_a_game_has_the_common_bots_and_its_own() -> None:
    assert set(COMMON_BOTS) == {"random", "ppo", "rllib"}
    assert bot_names("toy") == ["lowest", "ppo", "random", "rllib"]
    assert type(make_bot("lowest", seed=0, game="toy")).__name__ == "LowestBot"
    assert make_bot("random", seed=0, game="toy").name == "random"
    with pytest.raises(ValueError, match="unknown bot 'heuristic' for game 'toy'; known bots: lowest, ppo"):
        make_bot("heuristic", game="toy")


def test_a_game_bot_may_not_shadow_a_common_bot() -> None:
    shadowing = dataclasses.replace(get_game("toy"), name="shadow", bots={"ppo": "keltis_toy.bots:LowestBot"})
    with pytest.raises(ValueError, match="'shadow' registers its own bot 'ppo', a name every game already has"):
        game_bots(shadowing)
    with pytest.raises(ValueError, match="own bot 'ppo'"):
        make_bot("random", game=shadowing)


def test_make_env_takes_the_game_or_its_environment_name() -> None:
    env = make_env("toy_v0", num_players=3)
    assert type(env.unwrapped) is raw_env_class("toy") and env.unwrapped.metadata["name"] == "toy_v0"
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    raw = make_raw_env("toy", max_turns=5)
    assert raw.illegal_action == "raise" and raw.config.max_turns == 5
    assert raw.metadata["render_modes"] == ["ansi", "human"], "a game without pictures renders text"
    with pytest.raises(ValueError, match=r"unknown game or environment 'chess'.*toy \(toy_v0\)"):
        make_env("chess")


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry points read again on the next lookup; registrations undone after the test."""
    monkeypatch.setattr(registry, "_GAMES", dict(registry._GAMES))
    monkeypatch.setattr(registry, "_plugins_loaded", False)


def test_a_failing_entry_point_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> None:
    install_plugin_distribution(tmp_path, "broken_games", "2.0", {"broken": "no_such_module_here:GAME"})
    monkeypatch.syspath_prepend(str(tmp_path))
    message = r"the game entry point 'broken' = 'no_such_module_here:GAME' .*'broken_games'.* failed to load"
    with pytest.raises(GamePluginError, match=message):
        game_names()
    with pytest.raises(GamePluginError, match="'broken'"):  # again, not silently missing
        get_game("keltis")


def test_an_entry_point_naming_neither_a_descriptor_nor_a_module_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    install_plugin_distribution(tmp_path, "odd_games", "1.0", {"odd": "keltis_toy.state:VALUES"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(GamePluginError, match=r"'odd'.*names a int; it must name a GameDescriptor or a module"):
        game_names()


def test_an_entry_point_may_name_a_module_that_registers_its_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    (tmp_path / "keltis_twin.py").write_text(textwrap.dedent("""
        import dataclasses
        from keltis_env.core.game import register_game
        from keltis_toy import GAME
        register_game(dataclasses.replace(GAME, name="twin", env_name="twin_v0"))
    """))
    install_plugin_distribution(tmp_path, "keltis_twin", "1.0", {"twin": "keltis_twin"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert game_names()[-1] == "twin" and "toy" in game_names()
    assert make_env("twin_v0").unwrapped.metadata["name"] == "twin_v0"


def test_demo_plays_the_toy_game(tmp_path: Path) -> None:
    record = tmp_path / "toy.json"
    done = run("-m", "keltis_env", "demo", "--game", "toy", "--players", "3", "--record", str(record))
    assert done.returncode == 0, done.stderr
    assert "Toy race, 3 players" in done.stdout and "Game ended" in done.stdout
    assert json.loads(record.read_text())["game"] == "toy"


@pytest.fixture(scope="module")
def toy_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    done = run("-m", "training.train", "--config", "configs/train/smoke.yaml", "--set", "env.game=toy",
               "--set", "workers=1", "--set", f"runs_dir={runs}", "--no-progress", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (policy,) = runs.glob("*/policy.zip")
    return policy


@pytest.mark.slow
def test_smoke_training_on_the_batched_collector_writes_a_policy(toy_policy: Path) -> None:
    from keltis_env.policy import read_policy_info

    info = read_policy_info(toy_policy)
    assert (info.game, info.num_players) == ("toy", 2)


def evaluate_toy(spec: str, tmp_path: Path) -> dict:
    out = tmp_path / "summary.json"
    done = run("-m", "keltis_env", "evaluate", "--game", "toy", "--workers", "2", spec, "random", "--games", "8",
               "--seed", "3", "--quiet", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_evaluate_plays_the_toy_game_with_its_own_bot_and_random_in_worker_processes(tmp_path: Path) -> None:
    summary = evaluate_toy("lowest", tmp_path)
    assert summary["game"] == "toy" and summary["games"] == 8


@pytest.mark.slow
def test_evaluate_plays_the_trained_toy_policy_in_worker_processes(toy_policy: Path, tmp_path: Path) -> None:
    summary = evaluate_toy(f"ppo:{toy_policy}", tmp_path)
    assert summary["game"] == "toy" and summary["games"] == 8


def test_play_shows_the_person_their_hand_from_the_descriptor() -> None:
    done = subprocess.run([sys.executable, "-m", "keltis_env", "play", "--game", "toy", "--seed", "1"], input="quit\n",
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "Toy race, 2 players" in done.stdout
    assert "Your hand: " in done.stdout, done.stdout + done.stderr  # the descriptor's hand_text
