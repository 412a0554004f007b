"""The learner view on the compiled core (``KeltisLearnerEnv(backend="compiled")``) against
the Python backend: the same seeds and the same learner actions give the same
observations (bit for bit), masks, rewards, terminations, truncations and infos over whole
episodes, and the compiled backend keeps the view's contract (checker, pickling, options)."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from subprocess_helpers import WITHOUT_NUMBA

pytest.importorskip("numba")

from gymnasium.utils.env_checker import check_env

from keltis_env.bots import Bot
from keltis_env.core.compiled_learner import CompiledLearnerMatch
from keltis_env.core.errors import ActionError
from keltis_env.core.game import GameDescriptor, get_game
from keltis_env.core.match import Match
from keltis_env.envs.learner import KeltisLearnerEnv

POLICIES = Path(__file__).resolve().parents[1] / "policies"


def same(a: Any, b: Any) -> bool:
    """Equal, numpy arrays bit for bit (dtype, shape and bytes), inside dicts and lists too."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def trace(backend: str, seed: int, episodes: int, **options: Any) -> list[Any]:
    """Every reset and step of ``episodes`` episodes from ``seed``, the learner acting
    uniformly among its legal actions (its own generator, seeded alike on both backends)."""
    env = KeltisLearnerEnv(backend=backend, mask_in_info=True, **options)
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        out.append(("reset", obs, env.action_masks(), info))
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            out.append(("step", action, obs, env.action_masks(), reward, terminated, truncated, info))
    return out


def assert_same_traces(seed: int, episodes: int, **options: Any) -> None:
    python = trace("python", seed, episodes, **options)
    compiled = trace("compiled", seed, episodes, **options)
    assert len(python) == len(compiled)
    for i, (a, b) in enumerate(zip(python, compiled, strict=True)):
        assert same(a, b), f"record {i} differs: {a[0]} {a[1] if a[0] == 'step' else ''}"


CASES = [
    pytest.param(dict(game="keltis", num_players=2, reward="win"), id="keltis-2p-win"),
    pytest.param(dict(game="keltis", num_players=3, reward="score"), id="keltis-3p-score"),
    pytest.param(dict(game="keltis", num_players=4, reward="shaped"), id="keltis-4p-shaped"),
    pytest.param(dict(game="dice", num_players=2, reward="shaped"), id="dice-2p-shaped"),
    pytest.param(dict(game="dice", num_players=3, reward="win"), id="dice-3p-win"),
    pytest.param(dict(game="dice", num_players=4, reward="score"), id="dice-4p-score"),
]


@pytest.mark.parametrize("options", CASES)
@pytest.mark.parametrize("opponents", ["random", "heuristic"])
def test_both_backends_give_the_same_episodes(options: dict[str, Any], opponents: str) -> None:
    assert_same_traces(7, 3, opponents=opponents, **options)


@pytest.mark.parametrize("game", ["keltis", "dice"])
@pytest.mark.parametrize("reward", ["win", "shaped"])
def test_a_turn_cap_that_ends_the_game_ends_it_alike_on_both_backends(game: str, reward: str) -> None:
    assert_same_traces(3, 4, game=game, num_players=3, reward=reward, turn_cap="end", max_turns=6,
                       opponents=("random", "heuristic"))
    assert_same_traces(4, 3, game=game, num_players=2, reward=reward, turn_cap="truncate", max_turns=5)


@pytest.mark.parametrize("game, policy", [("keltis", "keltis_2p.zip"), ("dice", "dice_2p.zip")])
def test_a_ppo_opponent_plays_the_same_games_on_both_backends(game: str, policy: str) -> None:
    assert_same_traces(11, 1, game=game, num_players=2, reward="shaped", opponents=f"ppo:{POLICIES / policy}")


def test_the_plan_feature_is_the_same_on_both_backends() -> None:
    assert_same_traces(5, 2, num_players=2, features=("plan",), opponents="heuristic")
    assert_same_traces(6, 1, num_players=3, features=("plan",), opponents="random", reward="shaped")


def test_the_rows_feature_is_the_same_on_both_backends() -> None:
    assert_same_traces(5, 2, num_players=2, features=("rows",), opponents="heuristic")
    assert_same_traces(6, 1, num_players=4, features=("rows", "plan"), opponents="random", reward="shaped")
    assert_same_traces(7, 1, num_players=3, features=("plan", "rows"), opponents="random")


def test_an_illegal_learner_action_ends_the_episode_alike_on_both_backends() -> None:
    results = []
    for backend in ("python", "compiled"):
        env = KeltisLearnerEnv(backend=backend, mask_in_info=True)
        env.reset(seed=2)
        illegal = int(np.flatnonzero(~env.action_masks())[0])
        results.append((env.step(illegal), env.action_masks()))
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
    assert same(results[0], results[1])
    assert results[1][0][2:4] == (True, False)
    assert not results[1][1].any()
    assert results[1][0][1] == -1.0


def test_a_non_action_is_refused_alike_on_both_backends() -> None:
    for backend in ("python", "compiled"):
        env = KeltisLearnerEnv(backend=backend, illegal_action="raise")
        env.reset(seed=1)
        before = env.episode.observe()
        with pytest.raises(Exception, match="action ids are integers"):
            env.step("3")
        assert same(env.episode.observe(), before)


def test_gymnasiums_checker_passes_on_the_compiled_backend() -> None:
    check_env(KeltisLearnerEnv(backend="compiled"), skip_render_check=True)
    check_env(KeltisLearnerEnv(backend="compiled", game="dice", num_players=3), skip_render_check=True)


def test_a_compiled_environment_pickled_mid_episode_goes_on_like_the_original() -> None:
    env = KeltisLearnerEnv(backend="compiled", num_players=3, reward="shaped", opponents=("random", "heuristic"),
                           features=("plan",))
    env.reset(seed=9)
    for _ in range(5):
        env.step(int(env.action_space.sample()))
    copy = pickle.loads(pickle.dumps(env))
    assert copy.backend == "compiled"
    rng = np.random.default_rng(0)
    while True:
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        a, b = env.step(action), copy.step(action)
        assert same(a, b)
        if a[2] or a[3]:
            break


def test_the_state_and_match_are_readable_on_the_compiled_backend() -> None:
    env = KeltisLearnerEnv(backend="compiled", render_mode="ansi")
    assert env.state is None and env.match is None
    env.reset(seed=4)
    reference = KeltisLearnerEnv(backend="python", render_mode="ansi")
    reference.reset(seed=4)
    assert isinstance(env.match, CompiledLearnerMatch) and isinstance(reference.match, Match)
    assert env.state.to_dict() == reference.state.to_dict()
    assert env.render() == reference.render()
    env.state.apply(int(np.flatnonzero(env.action_masks())[0]))  # a copy: the game does not move
    assert env.state.to_dict() == reference.state.to_dict()


@pytest.mark.parametrize("bad", ["numba", "Compiled", None, 1])
def test_a_bad_backend_is_refused_naming_the_allowed_ones(bad: Any) -> None:
    with pytest.raises(ValueError, match="backend must be one of 'python', 'compiled', 'auto'"):
        KeltisLearnerEnv(backend=bad)


def test_auto_runs_the_card_and_dice_games_on_the_compiled_core() -> None:
    assert KeltisLearnerEnv(backend="auto").backend == "compiled"
    assert KeltisLearnerEnv(backend="auto", game="dice").backend == "compiled"
    assert KeltisLearnerEnv().backend == "python"


def test_a_game_without_kernels_is_refused_under_compiled_and_runs_on_python_under_auto(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import keltis_env.core.compiled_match as compiled_match

    real = compiled_match.compiled_kernels

    def none_for_dice(game: GameDescriptor) -> Any:
        return None if game.name == "dice" else real(game)

    monkeypatch.setattr(compiled_match, "compiled_kernels", none_for_dice)
    with pytest.raises(ValueError, match="the game 'dice' has no compiled core") as refused:
        KeltisLearnerEnv(game="dice", backend="compiled")
    assert "\n" not in str(refused.value)
    env = KeltisLearnerEnv(game="dice", backend="auto")
    assert env.backend == "python"
    env.reset(seed=0)
    assert get_game("dice").name == env.game


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_kernel_bots_make_the_moves_of_their_python_bots(num_players: int) -> None:
    opponents = ("heuristic", "planner", "heuristic:paths=3,gap=3", "heuristic:backend=python", "random")
    assert_same_traces(13, 3, num_players=num_players, reward="shaped", opponents=opponents)


def test_the_card_games_heuristic_and_planner_move_inside_the_kernels_unless_timed() -> None:
    env = KeltisLearnerEnv(backend="compiled", num_players=4, opponents=("heuristic", "planner", "random"))
    env.reset(seed=0, options={"seat": 0, "opponents": ["heuristic", "planner", "random"]})
    assert [bot is not None for bot in env.match.kernel_bots] == [False, True, True, False]
    assert env.match.legal_only == [False, False, False, True]
    timed = KeltisLearnerEnv(backend="compiled", opponents="heuristic", move_seconds=30)
    timed.reset(seed=0)
    assert timed.match.kernel_bots == [None, None]


def test_a_time_limit_is_kept_alike_on_both_backends() -> None:
    assert_same_traces(8, 2, num_players=3, opponents=("heuristic", "random"), move_seconds=30)


class SlowAfterThree(Bot):
    """Plays its first legal action; from its fourth move on it sleeps past any short limit."""

    name = "slow-after-three"

    def __init__(self) -> None:
        super().__init__(0)
        self.moves = 0

    def act(self, view: Any) -> int:
        self.moves += 1
        if self.moves > 3:
            time.sleep(0.5)
        return int(view.legal_actions[0])


def test_an_opponent_over_its_time_limit_loses_alike_on_both_backends() -> None:
    ends = []
    for backend in ("python", "compiled"):
        env = KeltisLearnerEnv(backend=backend, opponents=SlowAfterThree(), seat=0, move_seconds=0.1)
        env.reset(seed=0)
        done = False
        steps = []
        while not done:
            obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
            done = terminated or truncated
            steps.append((obs, env.action_masks(), reward, terminated, truncated, info))
        ends.append(steps)
    assert same(ends[0], ends[1])
    last = ends[1][-1]
    assert last[3] and last[5]["end"] == "time" and last[5]["forfeit"] == 1 and last[2] == 0.0


def test_reset_options_start_the_same_game_on_both_backends() -> None:
    env = KeltisLearnerEnv(num_players=3, opponents=("random", "heuristic"))
    env.reset(seed=21)
    for _ in range(6):
        env.step(int(env.action_space.sample()))
    position = env.state.to_dict()
    options_list: list[dict[str, Any]] = [
        {"state": position, "seat": 1, "opponents": ["heuristic", "random"]},
        {"state": position, "seat": 2, "opponents": ["random", "random"]},
    ]
    for options in options_list:
        games = []
        for backend in ("python", "compiled"):
            env = KeltisLearnerEnv(backend=backend, num_players=3, opponents=("random", "heuristic"), mask_in_info=True)
            obs, info = env.reset(seed=3, options=options)
            steps: list[Any] = [(obs, info)]
            rng = np.random.default_rng(1)
            done = False
            while not done:
                out = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
                done = out[2] or out[3]
                steps.append(out)
            games.append(steps)
        assert same(games[0], games[1])


def test_the_opponent_pool_changes_the_same_way_on_both_backends() -> None:
    traces = []
    for backend in ("python", "compiled"):
        env = KeltisLearnerEnv(backend=backend, num_players=3, opponents="random")
        env.add_opponent("heuristic", 2.0)
        env.add_opponent("planner", 1.0)
        env.set_opponent_weights({"random": 0.5})
        env.remove_opponent("planner")
        rng = np.random.default_rng(2)
        out: list[Any] = [env.opponent_weights()]
        for episode in range(4):
            out.append(env.reset(seed=5 if episode == 0 else None))
            done = False
            while not done:
                step = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
                done = step[2] or step[3]
                out.append(step)
        traces.append(out)
    assert same(traces[0], traces[1])


def test_an_illegal_action_under_raise_changes_nothing_on_the_compiled_backend() -> None:
    env = KeltisLearnerEnv(backend="compiled", illegal_action="raise")
    env.reset(seed=6)
    before, mask, state = env.episode.observe(), env.action_masks(), env.state.to_dict()
    illegal = int(np.flatnonzero(~mask)[0])
    with pytest.raises(ActionError, match=str(illegal)):
        env.step(illegal)
    assert same(env.episode.observe(), before) and same(env.action_masks(), mask)
    assert env.state.to_dict() == state


def test_the_picture_is_the_same_on_both_backends() -> None:
    pictures = []
    for backend in ("python", "compiled"):
        env = KeltisLearnerEnv(backend=backend, render_mode="rgb_array")
        env.reset(seed=8)
        env.step(int(np.flatnonzero(env.action_masks())[0]))
        pictures.append(env.render())
    assert same(pictures[0], pictures[1])


def test_gymnasium_make_takes_the_backend() -> None:
    import gymnasium

    env = gymnasium.make("keltis_env/KeltisLearner-v0", backend="compiled", game="dice")
    assert env.unwrapped.backend == "compiled"
    env.reset(seed=0)


def test_without_numba_auto_runs_on_python_and_compiled_names_the_extra() -> None:
    import subprocess
    import sys

    code = WITHOUT_NUMBA + (
        "from keltis_env.envs.learner import KeltisLearnerEnv\n"
        "env = KeltisLearnerEnv(backend='auto', features=['plan'])\n"
        "env.reset(seed=0)\n"
        "env.step(int(env.action_space.sample()))\n"
        "print(env.backend)\n"
        "KeltisLearnerEnv(backend='compiled')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "python"
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1] == (
        "ImportError: the compiled kernels need numba (the 'fast' extra): pip install 'keltis-rl[fast]'")
