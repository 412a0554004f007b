"""Both games in OpenSpiel (keltis_env.integrations.openspiel; the ``openspiel`` extra).

OpenSpiel's own checks (``random_sim_test``) for 2 to 4 players in both games; a replay
of OpenSpiel games through our engine, rebuilt from state dicts at every step, that must
agree on every legal action and on the final scores; the observation tensor against the
AEC environment's observation; resampling; the declared game facts; and every algorithm
the documentation says runs (ISMCTS, MCTS with a resampler, NFSP, policy gradient,
``evaluate_bots``). Skipped where OpenSpiel is not installed (Python 3.10).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from math import isclose

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (the openspiel extra, Python 3.11+)")

from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402

from keltis_env.core.game import get_game  # noqa: E402
from keltis_env.core.rewards import final_rewards  # noqa: E402
from keltis_env.integrations import openspiel as osp  # noqa: E402

SHORT = 12  # max_turns of the games the search and learning tests play (full games, truncated early)


def play_random(game, seed: int):
    """One OpenSpiel game with random decisions and chance drawn by its probabilities:
    the final state and the events (player, action, action text, legal actions and the
    engine's state dict at a decision)."""
    rng = random.Random(seed)
    state = game.new_initial_state()
    events = []
    while not state.is_terminal():
        player = state.current_player()
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            action = rng.choices(outcomes, probs)[0]
            legal = None
            snapshot = None
        else:
            legal = state.legal_actions()
            action = rng.choice(legal)
            snapshot = state.engine_state.to_dict()
        events.append((player, action, state.action_to_string(player, action), legal, snapshot))
        state.apply_action(action)
    return state, events


# ---------------------------------------------------------------------- registration and facts
def test_every_game_with_a_chance_model_is_registered_under_its_environment_name() -> None:
    assert {"python_keltis", "python_keltis_dice"} <= set(pyspiel.registered_names())
    assert osp.GAMES["python_keltis"] == "keltis" and osp.GAMES["python_keltis_dice"] == "dice"
    # the test plugin game declares no chance model, so it has no OpenSpiel form
    assert "python_toy" not in osp.GAMES
    with pytest.raises(ValueError, match="'toy' declares no chance model"):
        osp.load("toy")
    game = pyspiel.load_game("python_keltis(players=3)")
    assert game.num_players() == 3 and game.new_initial_state().num_players() == 3


@pytest.mark.parametrize("name", ["keltis", "dice"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_game_type_and_info_are_declared_truthfully(name: str, players: int) -> None:
    descriptor = get_game(name)
    for reward in ("win", "score"):
        game = osp.load(name, players=players, reward=reward)
        kind, info = game.get_type(), game
        zero_sum = reward == "score" or players == 2
        assert kind.utility == (pyspiel.GameType.Utility.ZERO_SUM if zero_sum else pyspiel.GameType.Utility.GENERAL_SUM)
        assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL
        assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
        perfect = pyspiel.GameType.Information.PERFECT_INFORMATION
        assert (kind.information == perfect) == (name == "dice")
        assert (info.utility_sum() == 0.0) if zero_sum else info.utility_sum() is None
        bound = 1.0 if reward == "win" else (descriptor.max_score - descriptor.min_score) / 50
        assert (info.min_utility(), info.max_utility()) == (-bound, bound)
        assert info.max_game_length() == descriptor.max_game_length(descriptor.make_config(players))
        assert info.num_distinct_actions() == descriptor.num_actions
    # the registered type declares the defaults: 2 players, "win", zero-sum
    registered = next(t for t in pyspiel.registered_games() if t.short_name == osp.openspiel_name(name))
    assert registered.parameter_specification["reward"] == "win" and registered.parameter_specification["players"] == 2
    assert registered.utility == pyspiel.GameType.Utility.ZERO_SUM


def test_bad_parameters_are_refused_naming_what_is_allowed() -> None:
    with pytest.raises(Exception, match=r"keltis is for 2 to 4 players, got num_players=5"):
        pyspiel.load_game("python_keltis(players=5)")
    with pytest.raises(Exception, match="reward must be one of 'win', 'score'"):
        osp.load("dice", reward="points")
    with pytest.raises(Exception, match="reward 'shaped' pays after every action; an OpenSpiel game of this package "
                                        "pays at the end"):
        osp.load("keltis", reward="shaped")
    with pytest.raises(Exception, match=r"Unknown parameter 'colour'\. Available parameters are: max_turns, players"):
        osp.load("keltis", colour="red")
    with pytest.raises(Exception, match="tile_layout must be 'default', 'random'"):
        osp.load("keltis", tile_layout="spiral")


# ---------------------------------------------------------------------- OpenSpiel's own checks
@pytest.mark.parametrize("name", ["python_keltis", "python_keltis_dice"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_random_sim_test(name: str, players: int) -> None:
    game = pyspiel.load_game(f"{name}(players={players})")
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)


@pytest.mark.parametrize("name", ["python_keltis(tile_layout=random)", "python_keltis_dice(bonus_layout=random)"])
def test_random_sim_test_with_random_layouts(name: str) -> None:
    pyspiel.random_sim_test(pyspiel.load_game(name), num_sims=1, serialize=False, verbose=False)


# ---------------------------------------------------------------------- exact chance
def test_chance_probabilities_are_exact() -> None:
    dice = osp.load("dice")
    state = dice.new_initial_state()
    assert state.chance_outcomes() == [(0, 0.5), (1, 0.5)]  # the first player
    state.apply_action(1)
    roll = dict(state.chance_outcomes())  # 252 multisets of 5 dice
    assert len(roll) == 252 and isclose(sum(roll.values()), 1.0)
    texts = {state.action_to_string(pyspiel.PlayerId.CHANCE, a): p for a, p in roll.items()}
    assert isclose(texts["roll red red red red red"], 1 / 6**5)
    assert isclose(texts["roll red yellow green blue pink"], 120 / 6**5)
    assert isclose(texts["roll red red yellow yellow stone"], 30 / 6**5)

    keltis = osp.load("keltis", players=2)
    state = keltis.new_initial_state()
    while state.is_chance_node() and "draws" not in str(state.chance_outcomes()):
        node = state._play.chance.node()
        if node.what == "remove a card unseen":
            break
        state.apply_action(state.chance_outcomes()[0][0])
    # the first card removed: every card kind has 2 copies out of 110
    assert state.chance_outcomes() == [(k, 2 / 110) for k in range(55)]


def test_a_draw_from_the_pile_follows_the_cards_not_yet_seen_by_anyone() -> None:
    from keltis_env.games.keltis.actions import DRAW_DECK

    game = osp.load("keltis", players=3)
    state = game.new_initial_state()
    rng = random.Random(4)
    while not (state.is_chance_node() and "draws from the pile" in state._play.chance.node().what):
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            legal = state.legal_actions()
            state.apply_action(DRAW_DECK if DRAW_DECK in legal else rng.choice(legal))
    deck = state.engine_state.deck
    assert len(deck) == 110 - 3 * 8
    assert state.chance_outcomes() == [(k, c / len(deck)) for k, c in sorted(Counter(deck).items())]


# ---------------------------------------------------------------------- replay through the engine
def _replay_keltis(game, events, final) -> None:
    from keltis_env.games.keltis import GameState
    from keltis_env.games.keltis.constants import COLORS, TILE_NAMES, card_name, parse_card

    config = game.config
    n = config.num_players
    start = GameState.new_game(config, seed=0).to_dict()
    tiles = {c: [None] * 9 for c in COLORS}
    hands = [[] for _ in range(n)]
    removed, drawn = [], []
    first = None
    for player, _, text, _, _ in events:
        if player != pyspiel.PlayerId.CHANCE:
            continue
        if m := re.fullmatch(r"player (\d) starts", text):
            first = int(m[1])
        elif m := re.fullmatch(r"(\w+) on (\w+) row (\d)", text):
            assert m[1] in TILE_NAMES.values()
            tiles[m[2]][int(m[3]) - 1] = m[1]
        elif m := re.fullmatch(r"remove (\w+ \d+)", text):
            removed.append(m[1])
        elif m := re.fullmatch(r"deal (\w+ \d+) to player (\d)", text):
            hands[int(m[2])].append(m[1])
        elif m := re.fullmatch(r"player \d draws (\w+ \d+)", text):
            drawn.append(m[1])
        else:
            raise AssertionError(f"unexpected chance event {text!r}")
    pool = Counter({card_name(k): 2 for k in range(55)})
    pool.subtract(removed + drawn + [c for h in hands for c in h])
    start.update(tiles=tiles, removed=removed, first_player=first, current_player=first,
                 deck=sorted(pool.elements(), key=parse_card) + drawn[::-1])  # the top is the last card
    for p in range(n):
        start["players"][p]["hand"] = hands[p]
    state = GameState.from_dict(start)
    decisions = 0
    for player, action, _, legal, snapshot in events:
        if player == pyspiel.PlayerId.CHANCE:
            continue
        data = state.to_dict()
        assert {**data, "deck": None} == {**snapshot, "deck": None}  # the pile's order is decided by its draws
        state = GameState.from_dict(data)  # every step from its state dict
        assert state.current == player and state.legal_actions() == legal
        state.apply(action)
        decisions += 1
    assert decisions > 0 and state.is_over
    assert state.scores() == final.engine_state.scores()
    assert final.returns() == final_rewards(state.scores(), "win")
    assert state.to_dict()["players"] == final.engine_state.to_dict()["players"]


def _seed_for(roll_faces, rolls: int, faces: list[int]) -> int:
    """A dice seed whose roll number ``rolls`` shows ``faces`` (as a multiset)."""
    wanted = sorted(faces)
    for seed in range(10**7):
        if sorted(roll_faces(seed, rolls, len(faces))) == wanted:
            return seed
    raise AssertionError(f"no seed rolls {faces}")


def _replay_dice(game, events, final) -> None:
    from keltis_env.games.dice import GameState
    from keltis_env.games.dice.constants import FACE_NAMES
    from keltis_env.games.dice.state import roll_faces

    faces_of = {name: f for f, name in enumerate(FACE_NAMES)}
    chance = [(i, text) for i, (player, _, text, _, _) in enumerate(events) if player == pyspiel.PlayerId.CHANCE]
    first = int(re.fullmatch(r"player (\d) starts", chance[0][1])[1])
    first_roll = re.fullmatch(r"roll (.+)", chance[1][1])[1].split()
    start = GameState.new_game(game.config, seed=0).to_dict()
    start.update(first_player=first, current_player=first)
    start["dice"] = sorted(first_roll, key=faces_of.__getitem__)
    state = GameState.from_dict(start)
    rolls = {i: [faces_of[f] for f in re.fullmatch(r"(?:re-)?roll (.+)", text)[1].split()] for i, text in chance[2:]}
    random_parts = {"seed": None, "rolls": None}  # what decides the engine's future dice
    for i, (player, action, _, legal, snapshot) in enumerate(events):
        if player == pyspiel.PlayerId.CHANCE:
            continue
        data = state.to_dict()
        assert {**data, **random_parts} == {**snapshot, **random_parts}
        if i + 1 in rolls:  # the engine rolls next: a seed whose next roll shows OpenSpiel's dice
            data["seed"] = _seed_for(roll_faces, data["rolls"], rolls[i + 1])
        state = GameState.from_dict(data)  # every step from its state dict
        assert state.current == player and state.legal_actions() == legal
        state.apply(action)
    assert state.is_over
    assert state.scores() == final.engine_state.scores()
    assert final.returns() == final_rewards(state.scores(), "win")


@pytest.mark.parametrize("name", ["keltis", "dice"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_openspiel_games_replay_through_the_engine_with_the_same_legal_actions_and_scores(name, players) -> None:
    game = osp.load(name, players=players)
    for seed in range(2):
        final, events = play_random(game, seed=100 * players + seed)
        (_replay_keltis if name == "keltis" else _replay_dice)(game, events, final)


# ---------------------------------------------------------------------- observers
def _decision_states(game, seed: int, every: int = 23):
    rng = random.Random(seed)
    state = game.new_initial_state()
    steps = 0
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rng.choices(outcomes, probs)[0])
            continue
        if steps % every == 0:
            yield state
        state.apply_action(rng.choice(state.legal_actions()))
        steps += 1
    yield state


@pytest.mark.parametrize("name", ["keltis", "dice"])
@pytest.mark.parametrize("players", [2, 4])
def test_the_observation_tensor_is_the_aec_environments_observation(name: str, players: int) -> None:
    from keltis_env.envs import make_env

    game = osp.load(name, players=players)
    env = make_env(name, num_players=players)
    assert game.observation_tensor_shape() == [env.observation_space("player_0")["observation"].shape[0]]
    checked = 0
    for state in _decision_states(game, seed=players):
        env.reset(options={"state": state.engine_state.to_dict()})
        for seat in range(players):
            expected = env.observe(f"player_{seat}")["observation"]
            assert np.array_equal(np.asarray(state.observation_tensor(seat), dtype=np.float32), expected)
        checked += 1
    assert checked > 3
    env.close()


def test_strings_show_each_seat_its_own_information_with_perfect_recall() -> None:
    game = osp.load("keltis", players=2)
    state = next(s for i, s in enumerate(_decision_states(game, seed=5, every=7)) if i == 3)
    engine = state.engine_state
    for seat in (0, 1):
        other = 1 - seat
        info = state.information_state_string(seat)
        own_deals = re.findall(rf"deal (\w+ \d+) to player {seat}$", info, re.M)
        assert len(own_deals) == 8 and f"deal a card to player {seat}" not in info
        assert len(re.findall(rf"^deal a card to player {other}$", info, re.M)) == 8
        assert not re.search(rf"deal \w+ \d+ to player {other}|^remove \w+ \d+$", info, re.M)
        assert info.count("remove a card unseen") == 30
        # every decision so far, in order, and the seat's hand now
        decisions = [line for line in info.splitlines() if re.match(r"player \d: ", line)]
        assert len(decisions) == len([step for step in state.full_history() if step.player >= 0])
        observation = state.observation_string(seat)
        assert f"hand={tuple(engine.hands[seat])}" in observation and str(tuple(engine.hands[other])) not in observation
    for a in state.legal_actions():
        assert state.action_to_string(state.current_player(), a) == get_game("keltis").action_to_string(a)


@pytest.mark.parametrize("name", ["keltis", "dice"])
def test_resampling_keeps_the_seats_information_and_never_reveals_what_it_hides(name: str) -> None:
    game = osp.load(name, players=3)
    resample = osp.resampler(seed=0)
    for state in _decision_states(game, seed=11, every=31):
        if state.is_terminal():
            continue
        seat = state.current_player()
        true_hands = getattr(state.engine_state, "hands", None)
        samples = [resample(state, seat) for _ in range(4)]
        for sample in samples:
            assert sample.current_player() == seat
            assert sample.information_state_string(seat) == state.information_state_string(seat)
            assert sample.observation_tensor(seat) == state.observation_tensor(seat)
            assert sample.legal_actions() == state.legal_actions()
            for other in range(3):
                if other != seat:  # another seat's hidden events are public parts only
                    assert not re.search(rf"deal \w+ \d+ to player {other}|player {other} draws \w+ \d",
                                         sample.information_state_string(other))
        if true_hands is not None:  # the hidden hands are dealt anew
            others = {tuple(map(tuple, s.engine_state.hands)) for s in samples}
            assert len(others) > 1
        sample = samples[0].resample_from_infostate(seat, pyspiel.UniformProbabilitySampler(0.0, 1.0))
        assert sample.information_state_string(seat) == state.information_state_string(seat)


# ---------------------------------------------------------------------- bots and algorithms
def _check_returns(game, returns) -> None:
    assert len(returns) == 2 and sorted(returns) in ([-1.0, 1.0], [0.0, 0.0])
    assert game.min_utility() <= min(returns) and max(returns) <= game.max_utility()


def test_openspiel_ismcts_plays_random_and_our_heuristic_plays_openspiel_ismcts() -> None:
    game = osp.load("keltis", players=2, max_turns=SHORT)
    rng = np.random.RandomState(0)
    for g in range(2):
        bots = [osp.ismcts_bot(game, simulations=10, seed=g), pyspiel.make_uniform_random_bot(1, g)]
        _check_returns(game, evaluate_bots(game.new_initial_state(), bots, rng))
    for g in range(2):
        heuristic, ismcts = osp.EngineBot(game, "heuristic", seed=g), osp.ismcts_bot(game, simulations=10, seed=g)
        bots = [heuristic, ismcts] if g == 0 else [ismcts, heuristic]
        _check_returns(game, evaluate_bots(game.new_initial_state(), bots, rng))


def test_openspiel_ismcts_is_reproducible_with_its_seed() -> None:
    game = osp.load("keltis", players=2, max_turns=4)
    state = next(s for i, s in enumerate(_decision_states(game, seed=1, every=3)) if i == 2)
    moves = {osp.ismcts_bot(game, simulations=10, seed=7).step(state.clone()) for _ in range(2)}
    assert len(moves) == 1 and moves <= set(state.legal_actions())


@pytest.mark.parametrize("name", ["keltis", "dice"])
def test_mcts_with_a_resampler_and_our_bots_play_full_games(name: str) -> None:
    game = osp.load(name, players=2, max_turns=SHORT)
    rng = np.random.RandomState(1)
    search = osp.mcts_bot(game, simulations=10, seed=0)
    assert isinstance(search, osp.ResampledMCTSBot) == (name == "keltis")  # plain MCTS on the dice game
    ours = osp.EngineBot(game, "ismcts:iterations=10", 1)
    _check_returns(game, evaluate_bots(game.new_initial_state(), [search, ours], rng))


SEARCH_BOTS = [pytest.param(osp.ismcts_bot, id="ismcts_bot"), pytest.param(osp.mcts_bot, id="mcts_bot")]


@pytest.mark.parametrize("simulations", [1, 0, -1, -100, True, False, 1.5, 10.0, "10", None, np.float64(3), [10],
                                         np.array(3)],
                         ids=repr)
@pytest.mark.parametrize("make", [*SEARCH_BOTS, pytest.param(osp.search_bot, id="search_bot")])
def test_search_bots_refuse_simulations_too_few_to_choose_up_front(make, simulations) -> None:
    game = osp.load("keltis", players=2, max_turns=4)
    with pytest.raises(ValueError, match=rf"{make.__name__}: simulations must be an integer >= 2 \(searches per "
                                         rf"decision; .*\), got {re.escape(repr(simulations))}"):
        make(game, simulations=simulations)


@pytest.mark.parametrize("seed", [-1, 2**32, 2**70, True, 1.0, "7", np.float64(1), [1]], ids=repr)
@pytest.mark.parametrize("make", [*SEARCH_BOTS, pytest.param(osp.search_bot, id="search_bot")])
def test_search_bots_refuse_a_seed_numpy_cannot_take_up_front(make, seed) -> None:
    game = osp.load("keltis", players=2, max_turns=4)
    with pytest.raises(ValueError, match=rf"{make.__name__}: seed must be None or an integer from 0 to 4294967295"):
        make(game, simulations=2, seed=seed)


@pytest.mark.parametrize("uct_c", [-0.5, float("nan"), float("inf"), True, "2", None], ids=repr)
@pytest.mark.parametrize("make", SEARCH_BOTS)
def test_search_bots_refuse_an_exploration_constant_that_is_not_a_finite_number_up_front(make, uct_c) -> None:
    game = osp.load("keltis", players=2, max_turns=4)
    with pytest.raises(ValueError, match=rf"{make.__name__}: uct_c must be a finite number >= 0"):
        make(game, simulations=2, uct_c=uct_c)


@pytest.mark.parametrize("make", [*SEARCH_BOTS, pytest.param(osp.search_bot, id="search_bot")])
def test_search_bots_refuse_a_game_that_is_not_ours_in_openspiel(make) -> None:
    for game in ("keltis", get_game("keltis"), pyspiel.load_game("kuhn_poker")):
        with pytest.raises(ValueError, match=rf"{make.__name__}: game must be one of our games in OpenSpiel"):
            make(game, simulations=2)


def test_ismcts_bot_refuses_a_perfect_information_game_naming_the_bots_that_search_it() -> None:
    game = osp.load("dice", players=2, max_turns=4)
    with pytest.raises(ValueError, match="ISMCTS searches games of imperfect information; 'dice' has perfect "
                                         "information: use mcts_bot or search_bot"):
        osp.ismcts_bot(game, simulations=2)
    assert not isinstance(osp.search_bot(game, 2, seed=0), osp.ResampledMCTSBot)  # plain MCTS instead


@pytest.mark.parametrize("make", SEARCH_BOTS)
def test_search_bots_take_numpy_integers_and_the_edge_values(make) -> None:
    game = osp.load("keltis", players=2, max_turns=4)
    state = next(iter(_decision_states(game, seed=1, every=3)))
    for simulations, seed, uct_c in ((np.int64(2), np.uint32(2**32 - 1), 0), (3, 0, np.float32(1.5)), (2, None, 2)):
        bot = make(game, simulations=simulations, seed=seed, uct_c=uct_c)
        assert bot.step(state.clone()) in state.legal_actions()


def test_a_shipped_policy_plays_as_a_pyspiel_bot() -> None:
    pytest.importorskip("torch")
    game = osp.load("dice", players=2, max_turns=SHORT)
    bots = [osp.EngineBot(game, "ppo:policies/dice_2p.zip", 0), pyspiel.make_uniform_random_bot(1, 0)]
    _check_returns(game, evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(0)))
    with pytest.raises(ValueError, match="is a 2-player dice policy; this is a 3-player dice game"):
        osp.EngineBot(osp.load("dice", players=3), "ppo:policies/dice_2p.zip", 0)


def _train(agents, env, episodes: int) -> None:
    for _ in range(episodes):
        time_step = env.reset()
        while not time_step.last():
            player = time_step.observations["current_player"]
            time_step = env.step([agents[player].step(time_step).action])
        for agent in agents:
            agent.step(time_step)


def _parameters(agent) -> list[np.ndarray]:
    import torch

    modules = [m for m in vars(agent).values() if isinstance(m, torch.nn.Module)]
    return [p.detach().numpy().copy() for m in modules for p in m.parameters()]


def test_nfsp_trains_on_the_observation_tensor() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tree", reason="OpenSpiel's PyTorch NFSP needs dm-tree (in the openspiel extra)")
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import nfsp

    env = rl_environment.Environment(osp.load("dice", players=2, max_turns=6))
    env.seed(0)
    size = env.observation_spec()["info_state"][0]
    assert size == osp.load("dice").observation_tensor_size()
    # anticipatory_param=1: always the best-response policy, whose moves fill the reservoir that
    # the average policy learns from, so that it learns within a few episodes
    agents = [nfsp.NFSP(p, size, env.action_spec()["num_actions"], [16], reservoir_buffer_capacity=200,
                        anticipatory_param=1.0, batch_size=8, min_buffer_size_to_learn=8, learn_every=8, seed=p)
              for p in range(2)]
    _train(agents, env, episodes=4)
    sl_loss, _ = agents[0].loss
    assert sl_loss is not None and np.isfinite(sl_loss)


def test_policy_gradient_trains_on_the_observation_tensor() -> None:
    pytest.importorskip("torch")
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import policy_gradient

    env = rl_environment.Environment(osp.load("keltis", players=2, max_turns=4))
    env.seed(0)
    size = env.observation_spec()["info_state"][0]
    agents = [policy_gradient.PolicyGradient(p, size, env.action_spec()["num_actions"], loss_str="a2c",
                                             hidden_layers_sizes=[16], batch_size=4) for p in range(2)]
    before = _parameters(agents[0])
    _train(agents, env, episodes=8)
    critic, pi = agents[0].loss
    assert critic is not None and np.isfinite(critic.item()) and np.isfinite(pi.item())
    assert any(not np.array_equal(a, b) for a, b in zip(before, _parameters(agents[0]), strict=True))


# ---------------------------------------------------------------------- commands
def test_bench_measures_openspiel_next_to_the_aec_loop(capsys: pytest.CaptureFixture[str]) -> None:
    from keltis_env.cli import main

    assert main(["bench", "--game", "dice", "--players", "2", "--loops", "aec", "openspiel",
                 "--seconds", "0.2", "--repeats", "1"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("dice")]
    assert [r[2] for r in rows] == ["aec", "openspiel"] and all(float(r[3].replace(",", "")) > 0 for r in rows)
    assert main(["bench", "--game", "toy", "--loops", "openspiel", "--seconds", "0.1", "--repeats", "1"]) == 2
    assert "no OpenSpiel form" in capsys.readouterr().err


def test_the_strength_command_plays_every_pairing(capsys: pytest.CaptureFixture[str]) -> None:
    assert osp.main(["--game", "dice", "--games", "2", "--simulations", "4", "--max-turns", "4"]) == 0
    out = capsys.readouterr().out
    assert "OpenSpiel MCTS (4 simulations)" in out and "ours: heuristic" in out
    with pytest.raises(SystemExit):
        osp.main(["--games", "0"])


@pytest.mark.parametrize(("argv", "message"), [
    (["--simulations", "1"], "--simulations must be at least 2, got 1"),
    (["--seed", "-3"], "--seed must be from 0 to 4294967286 (game g's bots take seed + g"),
    (["--seed", str(2**32 - 1), "--games", "3"], "--seed must be from 0 to 4294967293"),
])
def test_the_strength_command_refuses_simulations_and_seeds_its_searches_cannot_take(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as raised:
        osp.main(argv)
    assert raised.value.code == 2 and message in capsys.readouterr().err
