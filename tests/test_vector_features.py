"""The compiled learner step against the Python learner view (keltis_env.envs.learner), the
reference, for the learner view's options that change observations and illegal actions:
the card game's ``plan`` observation feature, computed inside the compiled step, bit for bit
the Python encoder's with the feature (and the learner view's own observation from the same
position), along games of 2, 3 and 4 players against random, heuristic and planner
opponents; whole episodes against the deterministic opponents step for step as the learner
view plays them; both ``illegal_action`` modes with the learner view's rewards, episode
ends and games; features the compiled core does not compute refused by name.

A cold run compiles the kernels (a minute or two on a busy 2-core machine); numba's cache
makes later runs load them in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from keltis_env.compiled.batch import learner_batch
from keltis_env.core.errors import ActionError
from keltis_env.core.game import get_game
from keltis_env.envs.learner import KeltisLearnerEnv
from keltis_env.envs.vector import KeltisVectorEnv
from keltis_env.games.keltis.actions import NUM_ACTIONS

ROOT = Path(__file__).resolve().parents[1]
GAME = get_game("keltis")
PLAN = 2 * NUM_ACTIONS  # plan.values and plan.choice
_ENCODERS: dict[int, Any] = {}


def plan_encoder(num_players: int) -> Any:
    """The Python encoder with the ``plan`` feature (one per player count)."""
    if num_players not in _ENCODERS:
        _ENCODERS[num_players] = GAME.make_encoder(num_players, ("plan",))
    return _ENCODERS[num_players]


def python_obs(state: Any, seat: int) -> np.ndarray:
    """``seat``'s observation of ``state`` by the Python encoder with the ``plan`` feature."""
    obs: np.ndarray = plan_encoder(state.num_players).encode(GAME.live_view(state, seat))
    return obs


def learner_view_obs(state: Any, seat: int, opponents: str) -> np.ndarray:
    """The Python learner view's observation (``features=["plan"]``) started at ``state``,
    where ``seat`` is to move."""
    config = state.config
    env = KeltisLearnerEnv(num_players=state.num_players, opponents=opponents, features=["plan"],
                           max_turns=config.max_turns, tile_layout=config.tile_layout)
    obs, _info = env.reset(seed=0, options={"state": state.to_dict(), "seat": seat})
    return obs


def pick(masks: np.ndarray, obs: np.ndarray, rng: np.random.Generator, follow: float) -> np.ndarray:
    """One action per game: the plan feature's choice with probability ``follow``, else a
    random legal one (0 where nothing is legal: that game's action is ignored)."""
    actions = np.zeros(len(masks), dtype=np.int64)
    for g, mask in enumerate(masks):
        if not mask.any():
            continue
        choice = obs[g, -NUM_ACTIONS:]
        actions[g] = int(np.argmax(choice)) if rng.random() < follow else int(rng.choice(np.flatnonzero(mask)))
    return actions


def compare_along_games(num_players: int, opponents: str, steps: int, seed: int, learner_view_every: int,
                        **game_options: Any) -> tuple[int, int]:
    """Step a vector env with the ``plan`` feature and compare every game's observation
    with the Python encoder's (and, every ``learner_view_every`` comparisons where the
    learner is to move, with the Python learner view's own); returns (positions compared,
    episodes ended)."""
    env = KeltisVectorEnv(6, num_players=num_players, opponents=opponents, features=["plan"], **game_options)
    obs, info = env.reset(seed=seed)
    rng, compared, ended = np.random.default_rng(seed), 0, 0
    for _ in range(steps):
        for g in range(env.num_envs):
            state, seat = env.position(g), g % num_players
            want = python_obs(state, seat)
            assert obs[g].shape == want.shape and np.array_equal(obs[g], want), f"game {g}, turn {state.turn}"
            if not state.is_over and compared % learner_view_every == 0:
                assert np.array_equal(obs[g], learner_view_obs(state, seat, opponents)), f"game {g}"
            compared += 1
        obs, _rewards, terminated, truncated, info = env.step(pick(info["action_mask"], obs, rng, 0.5))
        ended += int((terminated | truncated).sum())
    return compared, ended


# ---------------------------------------------------------------------- the plan feature
@pytest.mark.parametrize("opponents", ["random", "heuristic", "planner"])
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_plan_features_observations_are_the_python_learner_views_bit_for_bit(num_players: int,
                                                                                opponents: str) -> None:
    compared, ended = compare_along_games(num_players, opponents, 40, num_players, 25, max_turns=24)
    assert compared == 240 and ended >= 2


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["default", "random"])
@pytest.mark.parametrize("opponents", ["random", "heuristic", "planner"])
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_whole_games_with_the_plan_feature_agree_with_the_python_encoder(num_players: int, opponents: str,
                                                                         layout: str) -> None:
    compared, ended = compare_along_games(num_players, opponents, 250, 100 + num_players, 97, tile_layout=layout)
    assert compared == 1500 and ended >= 4


@pytest.mark.parametrize(("num_players", "opponents"), [(2, "planner"), (3, "heuristic"), (4, "planner")])
def test_episodes_step_for_step_as_the_learner_view_plays_them_against_the_same_opponents(num_players: int,
                                                                                          opponents: str) -> None:
    """Deterministic opponents: the learner view started at each compiled game's first
    position and given the same actions returns the same observations (plan included),
    rewards, episode ends and masks until the episode ends."""
    env = KeltisVectorEnv(3, num_players=num_players, opponents=opponents, features=["plan"], reward="score",
                          max_turns=45)
    obs, info = env.reset(seed=num_players)
    rng = np.random.default_rng(num_players)
    views = []
    for g in range(env.num_envs):
        view = KeltisLearnerEnv(num_players=num_players, opponents=opponents, features=["plan"], reward="score",
                                max_turns=45)
        first, _ = view.reset(seed=0, options={"state": env.position(g).to_dict(), "seat": g % num_players})
        assert np.array_equal(first, obs[g])
        views.append(view)
    steps, ends = 0, {"terminated": 0, "truncated": 0}
    live = np.ones(env.num_envs, dtype=bool)
    while live.any():
        actions = pick(info["action_mask"], obs, rng, 0.7)
        obs, rewards, terminated, truncated, info = env.step(actions)
        for g in np.flatnonzero(live):
            want, reward, term, trunc, _ = views[g].step(int(actions[g]))
            assert np.array_equal(obs[g], want), f"game {g}, step {steps}"
            assert (rewards[g], terminated[g], truncated[g]) == (reward, term, trunc), f"game {g}, step {steps}"
            assert np.array_equal(info["action_mask"][g], views[g].action_masks())
            ends["terminated"] += term
            ends["truncated"] += trunc
            live[g] = not (term or trunc)
        steps += 1
    assert steps > 15 and sum(ends.values()) == env.num_envs


def test_the_plan_feature_lengthens_the_observation_and_leaves_the_standard_part_unchanged() -> None:
    plain, planned = KeltisVectorEnv(4, num_players=3), KeltisVectorEnv(4, num_players=3, features=["plan"])
    size = GAME.make_encoder(3).size
    assert plain.single_observation_space.shape == (size,)
    assert planned.single_observation_space.shape == (size + PLAN,) == (plan_encoder(3).size,)
    assert planned.features == ("plan",) and plain.features == ()
    obs, _ = plain.reset(seed=5)
    with_plan, _ = planned.reset(seed=5)
    assert np.array_equal(with_plan[:, :size], obs)
    assert (with_plan[:, size + NUM_ACTIONS:].sum(axis=1) == 1).all()  # one choice: every learner is to move


def test_the_last_observation_of_an_ended_game_has_an_empty_plan() -> None:
    env = KeltisVectorEnv(4, num_players=2, features=["plan"], max_turns=6)
    obs, info = env.reset(seed=3)
    for _ in range(10):
        obs, _rewards, terminated, truncated, info = env.step(np.argmax(info["action_mask"], axis=1))
        for g in np.flatnonzero(terminated | truncated):
            assert env.position(g).is_over and not obs[g, -PLAN:].any()
            assert np.array_equal(obs[g], python_obs(env.position(g), g % 2))


def test_the_sb3_adapter_and_the_batch_builders_take_the_plan_feature() -> None:
    pytest.importorskip("stable_baselines3")
    from keltis_env.envs.vector_sb3 import KeltisSB3VecEnv

    sb3 = KeltisSB3VecEnv(3, num_players=2, features=["plan"], opponents="planner")
    sb3.seed(4)
    obs = sb3.reset()
    assert sb3.observation_space.shape == (plan_encoder(2).size,)
    for g in range(3):
        assert np.array_equal(obs[g], python_obs(sb3.position(g), g % 2))
    learners = learner_batch("keltis", 2, features=("plan",))
    obs, _masks = learners.reset()
    assert np.array_equal(obs[1], python_obs(learners.position(1), 1))


# ---------------------------------------------------------------------- illegal actions
def illegal_ids(mask: np.ndarray) -> list[int]:
    """An illegal action id in range and two out of range."""
    return [int(np.flatnonzero(~mask)[0]), NUM_ACTIONS, -1]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_terminate_ends_the_episode_with_minus_one_as_the_learner_view_does(which: int) -> None:
    env = KeltisVectorEnv(3, num_players=3, features=["plan"], opponents="heuristic")
    obs, info = env.reset(seed=8)
    before = env.position(1)
    view = KeltisLearnerEnv(num_players=3, opponents="heuristic", features=["plan"])
    view.reset(seed=0, options={"state": before.to_dict(), "seat": 1})
    actions = np.argmax(info["action_mask"], axis=1)
    actions[1] = illegal_ids(info["action_mask"][1])[which]
    obs, rewards, terminated, truncated, info = env.step(actions)
    want, reward, term, trunc, view_info = view.step(int(actions[1]))
    assert view_info["illegal_action"] == actions[1]
    assert (rewards[1], terminated[1], truncated[1]) == (reward, term, trunc) == (-1.0, True, False)
    assert np.array_equal(obs[1], want)  # the unchanged position, its plan included
    assert env.position(1).to_dict() == before.to_dict()  # the game is abandoned as it was
    assert not info["action_mask"][1].any() and not view.action_masks().any()
    assert not terminated[[0, 2]].any()
    obs, rewards, terminated, _trunc, info = env.step(np.zeros(3, dtype=np.int64))
    assert rewards[1] == 0 and not terminated[1] and info["action_mask"][1].any()  # a new game was dealt
    assert env.position(1).to_dict() != before.to_dict()


@pytest.mark.parametrize("which", [0, 1, 2])
def test_raise_names_the_game_and_the_action_and_changes_nothing(which: int) -> None:
    env = KeltisVectorEnv(4, num_players=2, features=["plan"], illegal_action="raise")
    assert env.illegal_action == "raise"
    obs, info = env.reset(seed=6)
    positions = [env.position(g).to_dict() for g in range(4)]
    obs, masks, rng = obs.copy(), info["action_mask"].copy(), env._batch.rng.copy()
    actions = np.argmax(masks, axis=1)
    actions[2] = illegal_ids(masks[2])[which]
    with pytest.raises(ActionError, match=rf"illegal action {actions[2]} in game 2: .*no game was stepped"):
        env.step(actions)
    assert [env.position(g).to_dict() for g in range(4)] == positions
    assert np.array_equal(env._batch.obs, obs) and np.array_equal(env.action_masks(), masks)
    assert np.array_equal(env._batch.rng, rng)
    view = KeltisLearnerEnv(num_players=2, features=["plan"], illegal_action="raise")
    view.reset(seed=0, options={"state": positions[2], "seat": 0})
    with pytest.raises(ActionError):  # the learner view raises as well, and its game goes on
        view.step(int(actions[2]))
    actions[2] = np.argmax(masks[2])
    _obs, rewards, terminated, _truncated, _info = env.step(actions)  # legal actions step as usual
    assert not terminated.any() and (rewards == 0).all()


def test_raise_ignores_the_action_of_a_game_that_is_dealt_again() -> None:
    env = KeltisVectorEnv(2, num_players=2, illegal_action="raise", max_turns=4)
    _obs, info = env.reset(seed=2)
    ended = np.zeros(2, dtype=bool)
    while not ended.any():
        _obs, _rewards, terminated, truncated, info = env.step(np.argmax(info["action_mask"], axis=1))
        ended = terminated | truncated
    actions = np.where(ended, NUM_ACTIONS + 5, np.argmax(info["action_mask"], axis=1))
    _obs, rewards, *_rest, info = env.step(actions)  # the ended games' actions are ignored, not judged
    assert (rewards[ended] == 0).all() and info["action_mask"][ended].any()


def test_raise_in_the_dice_game_and_the_sb3_adapter() -> None:
    dice = KeltisVectorEnv(3, game="dice", num_players=2, illegal_action="raise")
    _obs, info = dice.reset(seed=1)
    actions = np.argmax(info["action_mask"], axis=1)
    actions[0] = 10**6
    with pytest.raises(ActionError, match=r"illegal action 1000000 in game 0: out of range"):
        dice.step(actions)
    pytest.importorskip("stable_baselines3")
    from keltis_env.envs.vector_sb3 import KeltisSB3VecEnv

    sb3 = KeltisSB3VecEnv(2, num_players=2, illegal_action="raise")
    sb3.seed(1)
    sb3.reset()
    before = [sb3.position(g).to_dict() for g in range(2)]
    sb3.step_async(np.array([NUM_ACTIONS, 0]))
    with pytest.raises(ActionError, match="in game 0"):
        sb3.step_wait()
    assert [sb3.position(g).to_dict() for g in range(2)] == before
    _obs, _rewards, dones, _infos = sb3.step(np.argmax(sb3.action_masks(), axis=1))
    assert not dones.any()


def test_the_learner_batch_under_raise_refuses_actions_that_are_not_integers() -> None:
    learners = learner_batch("keltis", 2, illegal_action="raise")
    learners.reset()
    for bad in (np.array([0.0, 1.0]), np.array([True, False]), np.zeros(3, dtype=np.int64)):
        with pytest.raises(ValueError, match="actions must be 2 integer action ids"):
            learners.step(bad)


@pytest.mark.parametrize("mode", ["ignore", "Raise", None])
def test_an_unknown_illegal_action_mode_is_refused_naming_the_modes(mode: Any) -> None:
    for game in ("keltis", "dice"):
        with pytest.raises(ValueError, match="illegal_action must be one of 'terminate', 'raise'"):
            KeltisVectorEnv(2, game=game, illegal_action=mode)


# ---------------------------------------------------------------------- features refused
@pytest.mark.parametrize(("game", "features", "message"), [
    ("keltis", ["plans"], r"unknown observation feature 'plans' for game 'keltis'; its features: plan, rows$"),
    ("keltis", ["plan", 3], r"unknown observation feature 3 for game 'keltis'; its features: plan, rows$"),
    ("keltis", "plan", r"features must be a list of feature names, got the string 'plan'"),
    ("keltis", ["plan", "plan"], "observation features must be distinct"),
    ("dice", ["plan"], r"unknown observation feature 'plan' for game 'dice'; its features: none$"),
])
def test_features_the_game_does_not_have_are_refused_in_one_line(game: str, features: Any, message: str) -> None:
    for make in (lambda: KeltisVectorEnv(2, game=game, features=features),
                 lambda: learner_batch(game, 2, features=features)):
        with pytest.raises(ValueError, match=message) as error:
            make()
        assert "\n" not in str(error.value)


# ---------------------------------------------------------------------- bounds checking
@pytest.mark.slow
def test_the_plan_feature_and_raise_run_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache: a learner
    batch with the ``plan`` feature against planner opponents steps (every index in range)
    and its observations are the Python encoder's."""
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_vector_features as t\n"
        "from keltis_env.games.keltis import kernels as kern\n"
        "try:\n"
        "    kern.score(np.zeros(4, dtype=np.int32), 0)\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "learners = t.learner_batch('keltis', 4, t.GAME.make_config(num_players=3, max_turns=30),\n"
        "                           opponents='planner', features=('plan',), autoreset='next-step',\n"
        "                           illegal_action='raise')\n"
        "obs, masks = learners.reset()\n"
        "for _ in range(80):\n"
        "    for g in range(4):\n"
        "        assert np.array_equal(obs[g], t.python_obs(learners.position(g), g % 3))\n"
        "    obs, _r, _te, _tr, masks = learners.step(np.argmax(masks, axis=1))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.parametrize(("features", "supported", "message"), [
    (["rows"], ("plan",), r"does not compute the observation feature 'rows'; it computes: 'plan'$"),
    (["plan"], (), r"does not compute the observation feature 'plan'; it computes: none$"),
    ("plan", ("plan",), r"a list of observation feature names \(the compiled core computes: 'plan'\)"),
])
def test_features_a_compiled_core_does_not_compute_are_refused_in_one_line(features: Any, supported: Any,
                                                                          message: str) -> None:
    from keltis_env.core.kernels import compiled_features

    with pytest.raises(ValueError, match=message) as error:
        compiled_features(features, supported)
    assert "\n" not in str(error.value)
