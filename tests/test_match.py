"""The match loop (keltis_env.core.match): controllers and outside seats, the illegal-action
option, final rewards for every seat, truncation, records; for every registered game."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keltis_env.bots import Bot, RandomBot
from keltis_env.core.errors import ActionError, RecordError
from keltis_env.core.game import game_names, get_game
from keltis_env.core.match import (
    Match,
    check_illegal_action,
    check_reset_options,
    play_game,
    start_position,
)
from keltis_env.core.rewards import final_rewards, win_shares

GAMES = game_names()


class Recorder(Bot):
    """Plays uniformly at random and keeps what it was shown."""

    name = "recorder"

    def __init__(self, seed: int = 0, live: bool = False) -> None:
        super().__init__(seed)
        self.accepts_live_view = live
        self.seen: list[tuple[int, int, type]] = []  # (view.player, view.current_player, view type)

    def act(self, view: Any) -> int:
        self.seen.append((view.player, view.current_player, type(view)))
        legal = view.legal_actions
        return legal[self.rng.randrange(len(legal))]


class Cheater(Bot):
    """Always answers with an action that is not legal."""

    name = "cheater"

    def __init__(self, num_actions: int) -> None:
        super().__init__(0)
        self.num_actions = num_actions

    def act(self, view: Any) -> int:
        legal = set(view.legal_actions)
        return next(a for a in range(self.num_actions) if a not in legal)


def new_state(name: str, seed: int, num_players: int = 2, **options: Any) -> Any:
    game = get_game(name)
    return game.new_state(game.make_config(num_players=num_players, **options), seed)


def illegal_action_of(state: Any, num_actions: int) -> int:
    legal = set(state.legal_actions())
    return next(a for a in range(num_actions) if a not in legal)


# ---------------------------------------------------------------------- controllers
@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_controllers_play_a_whole_game_and_the_result_is_the_states(name: str, num_players: int) -> None:
    bots = [Recorder(seed) for seed in range(num_players)]
    match = Match(name, new_state(name, 5, num_players), bots, record=True)
    result = match.run()
    state = match.state
    assert state.is_over and match.over and not match.needs_input()
    assert result.scores == tuple(state.scores())
    assert result.rewards == tuple(final_rewards(state.scores(), "win"))
    assert result.shares == tuple(win_shares(state.scores()))
    assert result.end == state.end.name.lower() and result.turns == state.turn and result.illegal is None
    assert sum(result.decisions) == len(result.actions) > 0
    for seat, bot in enumerate(bots):
        # every controller decided exactly its own seat's turns, on its own view
        assert len(bot.seen) == result.decisions[seat]
        assert all(player == current == seat for player, current, _ in bot.seen)
        assert result.think_seconds[seat] > 0


@pytest.mark.parametrize("name", GAMES)
def test_controllers_get_a_copy_unless_they_accept_the_live_view(name: str) -> None:
    game = get_game(name)
    copy_bot, live_bot = Recorder(1), Recorder(2, live=True)
    Match(game, new_state(name, 3), [copy_bot, live_bot]).run()
    assert {kind for _, _, kind in copy_bot.seen} == {type(game.state_cls.new_game(game.make_config(), 0).view(0))}
    live_types = {kind for _, _, kind in live_bot.seen}
    assert live_types == {type(game.live_view(new_state(name, 3), 0))}
    assert live_types != {kind for _, _, kind in copy_bot.seen}


@pytest.mark.parametrize("name", GAMES)
def test_same_seed_and_bot_seeds_give_the_same_game(name: str) -> None:
    games = []
    for _ in range(2):
        random.seed()  # global generators play no part
        np.random.seed()
        _, result = play_game(name, [RandomBot(1), RandomBot(2)], seed=9, record=True)
        games.append(result)
    assert games[0].actions == games[1].actions and games[0].scores == games[1].scores


# ---------------------------------------------------------------------- outside seats
@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("outside", [0, 1, 2])
def test_play_stops_at_an_outside_seat_and_step_takes_its_action(name: str, outside: int) -> None:
    bots: list[Any] = [Recorder(seat) for seat in range(3)]
    bots[outside] = None
    match = Match(name, new_state(name, 7, num_players=3), bots)
    rng = random.Random(0)
    outside_moves = 0
    while not match.play():
        assert match.needs_input() and match.to_move == outside and match.state.current_player == outside
        assert match.step(rng.choice(match.state.legal_actions())) is match.over
        outside_moves += 1
    assert match.over and not match.needs_input()
    result = match.result()
    assert result.decisions[outside] == outside_moves > 0 and result.think_seconds[outside] == 0.0
    assert all(len(bot.seen) == result.decisions[seat] for seat, bot in enumerate(bots) if bot is not None)


@pytest.mark.parametrize("name", GAMES)
def test_every_seat_outside_is_the_aec_case(name: str) -> None:
    match = Match(name, new_state(name, 2))
    assert match.controllers == [None, None] and match.needs_input()
    assert match.play() is False
    with pytest.raises(ValueError, match=f"seat {match.to_move} has no controller"):
        match.run()


@pytest.mark.parametrize("name", GAMES)
def test_numpy_integer_actions_are_accepted_and_recorded_as_int(name: str) -> None:
    match = Match(name, new_state(name, 4), record=True)
    action = match.state.legal_actions()[0]
    match.step(np.int64(action))
    match.step(np.array(match.state.legal_actions()[0]))
    assert match.actions[0] == action and all(type(a) is int for a in match.actions)


# ---------------------------------------------------------------------- illegal actions
@pytest.mark.parametrize("name", GAMES)
def test_raise_lets_the_engine_error_through_and_changes_nothing(name: str) -> None:
    game = get_game(name)
    match = Match(name, new_state(name, 4), illegal_action="raise", record=True)
    before = match.state.to_dict()
    action = illegal_action_of(match.state, game.num_actions)
    with pytest.raises(ActionError, match=rf"illegal action {action} \({game.action_to_string(action)}\)"):
        match.step(action)
    for bad in (True, 1.5, "draw", None, game.num_actions, -1):
        with pytest.raises(ActionError):
            match.step(bad)
    assert match.state.to_dict() == before and not match.over and match.illegal is None
    assert match.decisions == [0, 0] and match.actions == [] and match.rewards() == [0.0, 0.0]
    match.step(match.state.legal_actions()[0])  # the game goes on
    assert sum(match.decisions) == 1


@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_terminate_ends_the_game_with_minus_one_for_the_offender_only(name: str, num_players: int) -> None:
    game = get_game(name)
    state = new_state(name, 6, num_players)
    match = Match(name, state, illegal_action="terminate")
    for _ in range(5):  # a few legal moves first
        match.step(state.legal_actions()[0])
    offender = match.to_move
    before = state.to_dict()
    action = illegal_action_of(state, game.num_actions)
    assert match.step(action) is True
    assert match.over and not match.needs_input() and match.play() is True
    assert match.illegal is not None and match.illegal.seat == offender and match.illegal.action == action
    assert game.action_to_string(action) in match.illegal.reason
    assert state.to_dict() == before and not state.is_over  # the engine refused: the position is as it was
    expected = [-1.0 if seat == offender else 0.0 for seat in range(num_players)]
    assert match.rewards() == expected
    result = match.result()
    assert result.end == "illegal" and not result.truncated and list(result.rewards) == expected
    assert result.illegal == match.illegal
    with pytest.raises(RuntimeError, match="the game is over"):
        match.step(state.legal_actions()[0])


@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("mode", ["raise", "terminate"])
def test_a_controllers_illegal_action_raises_naming_its_seat_whatever_the_option(name: str, mode: str) -> None:
    game = get_game(name)
    state = new_state(name, 1)
    cheater_seat = state.current_player
    bots: list[Any] = [RandomBot(0), RandomBot(1)]
    bots[cheater_seat] = Cheater(game.num_actions)
    match = Match(name, state, bots, illegal_action=mode)
    before = state.to_dict()
    message = rf"controller of seat {cheater_seat} \(Cheater\(\)\) chose an illegal action"
    with pytest.raises(ActionError, match=message):
        match.play()
    assert state.to_dict() == before and not match.over and match.illegal is None


# ---------------------------------------------------------------------- rewards and truncation
@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("reward", ["win", "score"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), num_players=st.integers(2, 4))
def test_every_seat_gets_its_final_reward_whoever_moved_last(name: str, reward: str, seed: int,
                                                             num_players: int) -> None:
    # Outside seats: the rewards are the loop's, not the last mover's.
    match = Match(name, new_state(name, seed, num_players), reward=reward)
    rng = random.Random(seed)
    last_mover = -1
    while not match.over:
        assert match.rewards() == [0.0] * num_players  # nothing before the end
        last_mover = match.to_move
        match.step(rng.choice(match.state.legal_actions()))
    scores = match.state.scores()
    assert match.rewards() == final_rewards(scores, reward)
    assert match.to_move == last_mover  # the last mover stays "to move" once over
    assert match.result().rewards == tuple(final_rewards(scores, reward))


@pytest.mark.parametrize("name", GAMES)
def test_games_end_by_every_seat_and_rewards_do_not_depend_on_who(name: str) -> None:
    last_movers = set()
    for seed in range(12):
        state = new_state(name, seed)
        match = Match(name, state, [RandomBot(seed), RandomBot(seed + 1)])
        result = match.run()
        last_movers.add(match.to_move)
        assert result.rewards == tuple(final_rewards(state.scores(), "win"))
        assert sorted(result.rewards) in ([-1.0, 1.0], [0.0, 0.0])
    assert last_movers == {0, 1}


@pytest.mark.parametrize("name", GAMES)
def test_truncation_pays_the_standings(name: str) -> None:
    state = new_state(name, 3, max_turns=6)
    result = Match(name, state, [RandomBot(0), RandomBot(1)], reward="score").run()
    assert result.truncated and result.end == "truncated" and result.turns == 6
    assert result.rewards == tuple(final_rewards(state.scores(), "score"))


# ---------------------------------------------------------------------- records
@pytest.mark.parametrize("name", GAMES)
def test_recorded_actions_replay_to_the_same_game(name: str) -> None:
    game = get_game(name)
    config = game.make_config(num_players=3)
    match = Match(game, game.new_state(config, 21), [RandomBot(0), None, RandomBot(2)], record=True)
    rng = random.Random(1)
    while not match.play():
        match.step(rng.choice(match.state.legal_actions()))
    assert len(match.actions) == sum(match.decisions)
    record = game.record_cls(config=config, seed=21, actions=list(match.result().actions))
    assert record.replay() == match.state
    assert game.record_cls.from_dict(record.to_dict()).replay() == match.state


@pytest.mark.parametrize("name", GAMES)
def test_nothing_is_recorded_unless_asked(name: str) -> None:
    _, result = play_game(name, [RandomBot(0), RandomBot(1)], seed=0)
    assert result.actions == () and sum(result.decisions) > 0


# ---------------------------------------------------------------------- bad input
def test_bad_arguments_are_refused_by_name() -> None:
    state = new_state("keltis", 0)
    with pytest.raises(ValueError, match=r"one controller per seat \(2\), got 3"):
        Match("keltis", state, [None, None, None])
    with pytest.raises(TypeError, match="controller of seat 1 must be a bot"):
        Match("keltis", state, [None, "random"])
    with pytest.raises(ValueError, match="reward must be one of 'win', 'score'"):
        Match("keltis", state, reward="points")
    with pytest.raises(ValueError, match="illegal_action must be one of 'terminate', 'raise', got 'lose'"):
        Match("keltis", state, illegal_action="lose")
    with pytest.raises(TypeError, match="record must be True or False"):
        Match("keltis", state, record="yes")  # type: ignore[arg-type]
    other = [n for n in GAMES if n != "keltis"]
    if other:
        with pytest.raises(TypeError, match=f"a match of {other[0]!r} needs a"):
            Match(other[0], state)
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        Match("chess", state)
    with pytest.raises(RuntimeError, match="not over yet"):
        Match("keltis", state).result()
    assert check_illegal_action("raise") == "raise"


# ---------------------------------------------------------------------- reset options
@pytest.mark.parametrize("name", GAMES)
def test_start_position_reads_state_and_record_options(name: str) -> None:
    game = get_game(name)
    config = game.make_config(num_players=2)
    state, result = play_game(game, [RandomBot(0), RandomBot(1)], seed=8, record=True)
    record = game.record_cls(config=config, seed=8, actions=list(result.actions))
    assert start_position(game, config, {}) is None
    assert start_position(game, config, {"state": state.to_dict()}) == state
    assert start_position(game, config, {"record": record.to_dict()}) == state
    assert start_position(game, config, {"record": record, "upto": 0}) == game.new_state(config, 8)
    after_three = game.new_state(config, 8)
    for action in result.actions[:3]:
        after_three.apply(action)
    assert start_position(game, config, {"record": record.to_dict(), "upto": 3}) == after_three
    with pytest.raises(ValueError, match=r"either options\['state'\] or options\['record'\]"):
        start_position(game, config, {"state": state.to_dict(), "record": record.to_dict()})
    with pytest.raises(ValueError, match=r"options\['upto'\].*missing"):
        start_position(game, config, {"upto": 3})
    with pytest.raises(ValueError, match="but this environment has"):
        start_position(game, game.make_config(num_players=3), {"state": state.to_dict()})
    with pytest.raises(RecordError):
        start_position(game, config, {"record": {"format": "something else"}})


def test_unknown_reset_options_warn_and_known_ones_pass() -> None:
    assert check_reset_options(None) == {}
    with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['sead'\]; reset options are 'state'"):
        assert check_reset_options({"sead": 1, "state": {}}) == {"sead": 1, "state": {}}
    with pytest.raises(TypeError, match="reset options must be a dict"):
        check_reset_options(["state"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the AEC environments on it
def env_module(name: str) -> Any:
    """The game's environment factories, from its descriptor alone."""
    from functools import partial
    from types import SimpleNamespace

    from keltis_env.envs import make_env, raw_env_class

    return SimpleNamespace(env=partial(make_env, name), raw_env=raw_env_class(name))


@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("wrapped", [True, False], ids=["env", "raw_env"])
def test_the_aec_environments_terminate_through_the_match_loop(name: str, wrapped: bool) -> None:
    game = get_game(name)
    module = env_module(name)
    env = module.env(num_players=3) if wrapped else module.raw_env(num_players=3, illegal_action="terminate")
    env.reset(seed=4)
    raw = env.unwrapped
    assert raw.illegal_action == "terminate" and raw.match.state is raw.state_
    offender = env.agent_selection
    before = raw.state_.to_dict()
    action = illegal_action_of(raw.state_, game.num_actions)
    env.step(action)  # logs PettingZoo's classic "Illegal move made" warning
    assert raw.state_.to_dict() == before and raw.match.illegal.seat == int(offender.split("_")[1])
    assert all(env.terminations.values()) and not any(env.truncations.values())
    for agent in env.agents:
        info = env.infos[agent]
        assert info["illegal_action"] == action and info["offender"] == offender
        assert game.action_to_string(action) in info["reason"]
        assert not env.observe(agent)["action_mask"].any()
    seen = {}
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        assert terminated and not truncated
        seen[agent] = reward
        env.step(None)
    assert seen == {a: (-1.0 if a == offender else 0.0) for a in raw.possible_agents}


@pytest.mark.parametrize("name", GAMES)
def test_the_raw_environments_raise_by_default(name: str) -> None:
    raw = env_module(name).raw_env()
    raw.reset(seed=1)
    assert raw.illegal_action == "raise"
    with pytest.raises(ActionError, match="illegal action"):
        raw.step(illegal_action_of(raw.state_, get_game(name).num_actions))
    with pytest.raises(ValueError, match="illegal_action must be one of 'terminate', 'raise', got 'lose'"):
        env_module(name).raw_env(illegal_action="lose")


@pytest.mark.parametrize("game", game_names())
def test_play_stops_where_asked_and_goes_on_to_the_same_game(game):
    """``play(stop=...)`` stops before the first decision at which ``stop`` holds; playing on
    gives the game an uninterrupted run gives (``keltis render --turns`` stops this way)."""
    spec = get_game(game)

    def match() -> Match:
        return Match(spec, spec.new_state(spec.make_config(num_players=3), 9),
                     [RandomBot(seed=k) for k in range(3)], record=True)

    whole = match().run()
    cut = match()
    assert cut.play(stop=lambda state: state.turn >= 6) is False
    assert cut.state.turn == 6 and not cut.over
    rest = cut.run()
    assert (rest.actions, rest.scores, rest.turns, rest.end) == (whole.actions, whole.scores, whole.turns, whole.end)
