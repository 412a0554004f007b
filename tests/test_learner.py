"""The learner's view (keltis_env.envs.learner); the trained-policy bot is tested in test_ppo.py."""

from __future__ import annotations

import copy
import pickle

import gymnasium
import numpy as np
import pytest
from conftest import make_state_dict

from keltis_env.bots import Bot
from keltis_env.core.game import game_names, get_game
from keltis_env.core.render import render_modes
from keltis_env.envs.learner import ENV_ID, KeltisLearnerEnv
from keltis_env.games.keltis import ActionError, string_to_action
from keltis_env.games.keltis.actions import DISCARD, DRAW_DECK, PASS
from keltis_env.games.keltis.encoding import ObservationEncoder
from keltis_env.games.keltis.view import LiveView


class ScriptedBot(Bot):
    """Plays the given actions in order, then discards its first card and draws from the deck."""

    name = "scripted"

    def __init__(self, *actions: str) -> None:
        super().__init__(0)
        self.script = [string_to_action(a) for a in actions]
        self.views: list = []

    def act(self, view):
        self.views.append(view)
        if self.script:
            return self.script.pop(0)
        return passive(view.legal_actions)


def passive(legal) -> int:
    """Change nothing on the board: discard, draw from the deck, pass a bonus."""
    for a in legal:
        if DISCARD <= a < DRAW_DECK or a in (DRAW_DECK, PASS):
            return a
    raise AssertionError(f"no passive action in {legal}")


def play_out(env, first_action=None):
    """Step the learner passively until the episode ends; every (reward, term, trunc, info)."""
    steps = []
    action = first_action
    while True:
        a = action if action is not None else passive(np.flatnonzero(env.action_masks()))
        action = None
        _, reward, terminated, truncated, info = env.step(a)
        steps.append((reward, terminated, truncated, info))
        if terminated or truncated:
            return steps


def scripted_env(*opponent_actions, reward="win", max_turns=500, **position):
    env = KeltisLearnerEnv(opponents=[ScriptedBot(*opponent_actions)], reward=reward, max_turns=max_turns)
    state = make_state_dict(max_turns=max_turns, **position)
    env.reset(seed=0, options={"state": state, "seat": 0})
    return env


# ---------------------------------------------------------------------- reward bookkeeping
def test_win_on_the_learners_own_last_draw():
    # The learner (seat 0, red figure on row 8: 7 - 4 = 3 points) draws the last card.
    env = scripted_env(figures={0: {"red": 8}}, rows={0: {"red": [1, 2, 3, 4, 5, 6, 7, 8]}}, deck_size=1)
    steps = play_out(env)
    assert [s[0] for s in steps] == [0.0, 1.0]
    _, terminated, truncated, info = steps[-1]
    assert terminated and not truncated
    assert info["end"] == "deck" and info["win"] == 1.0 and info["scores"] == [3, -4] and info["seat"] == 0
    assert info["opponents"] == [None, "scripted"]


def test_loss_when_an_opponents_draw_ends_the_game():
    # Two cards left: the learner draws one, the opponent draws the last one and wins
    # (its yellow figure on row 7: 6 - 4 = 2 points against -4): the loss reaches the
    # learner on its own last action.
    env = scripted_env(figures={1: {"yellow": 7}}, rows={1: {"yellow": [3, 4, 5, 6, 7, 8, 9]}}, deck_size=2)
    steps = play_out(env)
    assert [s[0] for s in steps] == [0.0, -1.0]
    _, terminated, truncated, info = steps[-1]
    assert terminated and not truncated and info["end"] == "deck" and info["win"] == 0.0
    assert env.state.current_player == 1 and env.state.is_over


def test_loss_when_an_opponents_move_puts_the_fifth_figure_into_the_goal():
    goal_rows = {"red": [1, 2, 3, 4, 5, 6, 7], "yellow": [1, 2, 3, 4, 5, 6, 7], "green": [1, 2, 3, 4, 5, 6, 7],
                 "blue": [1, 2, 3, 4, 5, 6, 7], "pink": [0, 1, 2, 3, 4, 5]}
    env = scripted_env(
        "play pink 6",
        figures={1: {"red": 7, "yellow": 7, "green": 7, "blue": 7, "pink": 6}},
        large={1: "red"},
        rows={1: goal_rows},
        hands={1: ["pink 6"]},
    )
    steps = play_out(env)
    assert len(steps) == 2 and steps[-1][:3] == (-1.0, True, False)
    assert steps[-1][3]["end"] == "goal"


def test_tie_shares_the_victory():
    # Nobody plays a card: both score -4 (no wishing stone) when the deck runs out.
    env = scripted_env(deck_size=3)
    steps = play_out(env)
    assert steps[-1][:3] == (0.0, True, False)
    assert steps[-1][3]["win"] == 0.5 and steps[-1][3]["scores"] == [-4, -4]


def test_truncation_pays_the_standings():
    env = scripted_env(figures={0: {"red": 8}}, rows={0: {"red": [1, 2, 3, 4, 5, 6, 7, 8]}}, max_turns=6, turn=3)
    steps = play_out(env)
    assert [s[0] for s in steps[:-1]] == [0.0] * (len(steps) - 1)
    reward, terminated, truncated, info = steps[-1]
    assert (reward, terminated, truncated) == (1.0, False, True)
    assert info["end"] == "truncated" and info["turns"] == 6


def test_score_reward_is_the_margin_over_the_opponent():
    env = scripted_env(figures={0: {"red": 8}}, rows={0: {"red": [1, 2, 3, 4, 5, 6, 7, 8]}}, deck_size=2,
                       reward="score")
    steps = play_out(env)
    assert steps[-1][0] == pytest.approx((3 - -4) / 50)


# ---------------------------------------------------------------------- stepping and errors
def test_illegal_learner_action_raises_and_changes_nothing():
    env = KeltisLearnerEnv(illegal_action="raise")
    env.reset(seed=3)
    before = env.state.to_dict()
    with pytest.raises(ActionError, match=rf"illegal action 165 \(draw deck\) for player {env.seat}: drawing happens"):
        env.step(DRAW_DECK)
    assert env.state.to_dict() == before
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(ActionError, match=f"illegal action {illegal} "):
        env.step(np.int64(illegal))
    assert env.state.to_dict() == before
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # the episode goes on


def test_illegal_action_terminate_mode_ends_the_episode_with_minus_one():
    env = KeltisLearnerEnv(illegal_action="terminate", mask_in_info=True)
    env.reset(seed=3)
    before = env.state.to_dict()
    _, reward, terminated, truncated, info = env.step(np.int64(DRAW_DECK))
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] == DRAW_DECK and type(info["illegal_action"]) is int
    assert "draw deck" in info["reason"] and "drawing happens in the draw step" in info["reason"]
    assert info["seat"] == env.seat and not info["action_mask"].any() and not env.action_masks().any()
    assert env.state.to_dict() == before  # the engine refused the action; the episode ended on it
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(DRAW_DECK)
    env.reset(seed=4)
    assert env.action_masks().any()


@pytest.mark.parametrize("mode", ["lose", "ignore"])
def test_illegal_action_names_are_those_of_every_runner(mode):
    with pytest.raises(ValueError, match=f"illegal_action must be one of 'terminate', 'raise', got '{mode}'"):
        KeltisLearnerEnv(illegal_action=mode)


def test_an_opponents_illegal_action_raises_naming_it():
    class Cheater(Bot):
        name = "cheater"

        def act(self, view):
            return next(a for a in range(187) if a not in view.legal_actions)

    env = KeltisLearnerEnv(opponents=[Cheater(0)], illegal_action="terminate", seat=1)
    with pytest.raises(ActionError, match=r"controller of seat 0 .* chose an illegal action"):
        env.reset(seed=0)  # raises here when the opponent moves first, else once the learner's turn is over
        for _ in range(5):
            env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_observation_and_mask_are_the_learners_own():
    env = KeltisLearnerEnv(num_players=3, opponents=["random"], mask_in_info=True)
    encoder = ObservationEncoder(3)
    obs, info = env.reset(seed=11)
    for _ in range(40):
        seat = env.seat
        assert env.state.current_player == seat
        np.testing.assert_array_equal(obs, encoder.encode(LiveView(env.state, seat)))
        legal = env.state.legal_actions()
        assert np.flatnonzero(env.action_masks()).tolist() == legal
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        assert env.observation_space.contains(obs)
        obs, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, info = env.reset()


def test_seat_and_opponents_are_random_and_seeded():
    env = KeltisLearnerEnv(opponents=["random", "heuristic"], opponent_weights=[1.0, 3.0])
    seats, opponents = [], []
    for seed in range(60):
        _, info = env.reset(seed=seed)
        seats.append(info["seat"])
        opponents.append(next(e.name for e in env.episode.seat_entries if e is not None))
    assert set(seats) == {0, 1} and set(opponents) == {"random", "heuristic"}
    assert opponents.count("heuristic") > opponents.count("random")
    again = KeltisLearnerEnv(opponents=["random", "heuristic"], opponent_weights=[1.0, 3.0])
    for seed in (5, 17):
        a, _ = env.reset(seed=seed)
        b, _ = again.reset(seed=seed)
        np.testing.assert_array_equal(a, b)
        assert env.state.to_dict() == again.state.to_dict()


def test_opponent_pool_can_change_between_episodes():
    env = KeltisLearnerEnv(opponents=["random"])
    assert env.add_opponent("heuristic", weight=0.0) == "heuristic"
    env.set_opponent_weights({"random": 0.0, "heuristic": 2.0})
    env.reset(seed=0)
    assert [e.name for e in env.episode.seat_entries if e] == ["heuristic"]
    env.reset(seed=0, options={"opponents": ["random"]})
    assert [e.name for e in env.episode.seat_entries if e] == ["random"]
    env.remove_opponent("heuristic")
    assert env.opponent_names() == ["random"]
    with pytest.raises(KeyError, match="no opponent named 'nobody'"):
        env.set_opponent_weights({"nobody": 1.0})
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        env.set_opponent_weights({"random": -1})
    with pytest.raises(ValueError, match="cannot remove the last opponent"):
        env.remove_opponent("random")


# ---------------------------------------------------------------------- reset options
def seeded_record(seed=6, actions=12):
    """A record of the first ``actions`` random decisions of a seeded 2-player game."""
    from keltis_env.games.keltis import GameConfig, GameRecord

    record, state = GameRecord.start(GameConfig(), seed)
    rng = np.random.default_rng(seed)
    for _ in range(actions):
        legal = state.legal_actions()
        action = int(legal[rng.integers(len(legal))])
        state.apply(action)
        record.actions.append(action)
    return record


@pytest.mark.parametrize("upto", [0, 5, 12])
def test_reset_from_a_record_upto_k_is_the_aec_envs_position(upto):
    from keltis_env import keltis_v0

    record = seeded_record().to_dict()
    aec = keltis_v0.env()
    aec.reset(options={"record": record, "upto": upto})
    expected = aec.unwrapped.state_
    env = KeltisLearnerEnv()
    _, info = env.reset(options={"record": record, "upto": upto, "seat": expected.current_player})
    assert env.state == expected and info["seat"] == expected.current_player
    np.testing.assert_array_equal(np.flatnonzero(env.action_masks()), expected.legal_actions())


def test_reset_from_a_record_lets_the_opponents_move_first():
    record = seeded_record()
    position = record.replay(12)
    learner = 1 - position.current_player
    env = KeltisLearnerEnv(opponents=[ScriptedBot()])
    env.reset(options={"record": record.to_dict(), "upto": 12, "seat": learner})
    assert env.state.current_player == learner and env.state.turn > position.turn


def test_reset_options_are_read_like_the_aec_envs():
    record = seeded_record()
    env = KeltisLearnerEnv()
    with pytest.raises(ValueError, match="either options"):
        env.reset(options={"state": record.replay().to_dict(), "record": record.to_dict()})
    with pytest.raises(ValueError, match="upto"):
        env.reset(options={"upto": 3})
    with pytest.raises(ValueError, match="but this environment has"):
        KeltisLearnerEnv(num_players=3).reset(options={"record": record.to_dict()})
    from keltis_env.core.errors import RecordError

    with pytest.raises(RecordError, match="not 'keltis'"):
        env.reset(options={"record": {**record.to_dict(), "game": "dice"}})
    with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['sead'\]; reset options are 'state', "
                      r"'record', 'upto', 'seat', 'opponents'"):
        env.reset(seed=0, options={"sead": 1})
    assert env.action_masks().any()  # the unknown option changed nothing else


def test_action_space_samples_legal_actions_and_pickles_plain():
    env = KeltisLearnerEnv()
    env.reset(seed=1)
    env.action_space.seed(0)
    for _ in range(20):
        assert env.action_masks()[env.action_space.sample()]
    for copied in (pickle.loads(pickle.dumps(env.action_space)), copy.deepcopy(env.action_space)):
        assert type(copied) is gymnasium.spaces.Discrete and copied == env.action_space


# ---------------------------------------------------------------------- standard entry points
def test_gymnasium_make_after_importing_the_package_in_a_fresh_interpreter():
    import subprocess
    import sys

    code = (
        "import gymnasium, keltis_env\n"
        "env = gymnasium.make('keltis_env/KeltisLearner-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(env.spec.id, obs.shape, type(env.unwrapped).__name__, env.unwrapped.illegal_action)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["keltis_env/KeltisLearner-v0", "(831,)", "KeltisLearnerEnv", "terminate"]


@pytest.mark.parametrize("game", game_names())
def test_gymnasium_and_sb3_env_checkers_pass_with_default_arguments(game, monkeypatch):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from keltis_env.core.render_image import ImageWindow

    shown = []
    monkeypatch.setattr(ImageWindow, "show", lambda self, image: shown.append(image))  # no window in tests
    env = gymnasium.make(ENV_ID) if game == "keltis" else gymnasium.make(ENV_ID, game=game)
    assert env.spec.id == "keltis_env/KeltisLearner-v0"
    # Gymnasium's determinism check steps an action sampled before a seeded reset, so it
    # may be illegal in the new position: the default "terminate" ends that episode.
    check_env(env.unwrapped)  # also makes and renders the env in every declared render mode
    sb3_check_env(env.unwrapped)
    assert env.unwrapped.metadata["render_modes"] == render_modes(get_game(game))
    assert (len(shown) > 0) == get_game(game).has_pictures  # "human" showed the picture
    env.close()


def test_sb3_make_vec_env_with_its_rgb_array_default():
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(ENV_ID, n_envs=2, seed=0)
    assert venv.render_mode == "rgb_array"
    obs = venv.reset()
    assert obs.shape == (2, 831)
    for _ in range(30):
        masks = np.stack(venv.env_method("action_masks"))
        obs, _, _, infos = venv.step(np.array([np.flatnonzero(m)[0] for m in masks]))
        assert not any("illegal_action" in info for info in infos)
    images = venv.get_images()
    assert len(images) == 2 and all(img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3 for img in images)
    venv.close()


@pytest.mark.parametrize("game", [g for g in game_names() if get_game(g).has_pictures])
def test_render_modes_are_the_games(game, monkeypatch):
    from keltis_env.core.render_image import ImageWindow

    descriptor = get_game(game)
    env = KeltisLearnerEnv(game=game, render_mode="rgb_array")
    env.reset(seed=2)
    np.testing.assert_array_equal(env.render(), descriptor.board_image(env.state))
    ansi = KeltisLearnerEnv(game=game, render_mode="ansi")
    ansi.reset(seed=2)
    assert ansi.render() == descriptor.board_text(ansi.state)
    shown = []
    monkeypatch.setattr(ImageWindow, "show", lambda self, image: shown.append(image))
    human = KeltisLearnerEnv(game=game, render_mode="human")
    human.reset(seed=2)
    human.step(int(np.flatnonzero(human.action_masks())[0]))
    assert len(shown) == 2  # after the reset and after the step
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        KeltisLearnerEnv(game=game, render_mode="rgb_array_list")


def test_a_game_without_pictures_has_no_rgb_array_mode():
    import dataclasses

    from keltis_env.bots import RandomBot

    plain = dataclasses.replace(get_game("keltis"), name="nopicture", painter=None)
    env = KeltisLearnerEnv(game=plain, opponents=[RandomBot(0)], render_mode="ansi")
    assert env.metadata["render_modes"] == ["ansi", "human"]
    assert "rgb_array" in KeltisLearnerEnv.metadata["render_modes"]  # the class lists every game's modes
    with pytest.raises(ValueError, match=r"one of \['ansi', 'human'\] for the game 'nopicture', got 'rgb_array'"):
        KeltisLearnerEnv(game=plain, opponents=[RandomBot(0)], render_mode="rgb_array")


def test_a_single_opponent_spec_or_bot_is_a_pool_of_one():
    from keltis_env.bots import RandomBot

    assert KeltisLearnerEnv(opponents="heuristic").opponent_names() == ["heuristic"]
    assert KeltisLearnerEnv(opponents="random", opponent_weights=[2.0]).opponent_weights() == {"random": 2.0}
    assert KeltisLearnerEnv(opponents=RandomBot(0)).opponent_names() == ["random"]
    with pytest.raises(ValueError, match=r"bad opponent spec 'rnd:x=1': unknown bot 'rnd'"):
        KeltisLearnerEnv(opponents="rnd:x=1")
    with pytest.raises(ValueError, match=r"bad opponent spec 'heuristic:depth=3': bot 'heuristic' has no option"):
        KeltisLearnerEnv(opponents=["random", "heuristic:depth=3"])
    with pytest.raises(TypeError, match="an opponent is an agent spec"):
        KeltisLearnerEnv(opponents=[3])
    with pytest.raises(ValueError, match="at least one opponent"):
        KeltisLearnerEnv(opponents=[])


@pytest.mark.parametrize(("game", "opponents", "options"), [
    ("keltis", ["random", "heuristic"], {"num_players": 3}),
    ("keltis", ["planner"], {"features": ("plan",), "render_mode": "ansi"}),
    ("dice", ["heuristic", "ppo:policies/dice_3p.zip"], {"num_players": 3, "mask_in_info": True}),
    ("dice", ["random"], {"render_mode": "rgb_array"}),
], ids=["keltis-3p-bots", "keltis-plan-features", "dice-3p-ppo", "dice-rgb"])
def test_the_learner_pickles_mid_episode_with_bot_opponents_and_goes_on_identically(game, opponents, options):
    env = KeltisLearnerEnv(game=game, opponents=opponents, **options)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(4):
        env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    clone = pickle.loads(pickle.dumps(env))
    assert clone.state is not env.state and clone.state == env.state
    for _episode in range(2):
        steps = 0
        while True:
            mask = env.action_masks()
            assert np.array_equal(mask, clone.action_masks())
            action = int(rng.choice(np.flatnonzero(mask)))
            mine, theirs = env.step(action), clone.step(action)
            assert np.array_equal(mine[0], theirs[0]) and mine[1:4] == theirs[1:4]
            assert mine[4].keys() == theirs[4].keys()
            for key, value in mine[4].items():
                assert np.array_equal(value, theirs[4][key]) if key == "action_mask" else value == theirs[4][key]
            steps += 1
            if mine[2] or mine[3]:
                break
        assert steps > 1
        if options.get("render_mode") == "ansi":
            assert clone.render() == env.render()
        # the next episodes draw the same seat, opponents and deal (the generators were copied)
        assert np.array_equal(env.reset()[0], clone.reset()[0]) and env.seat == clone.seat
