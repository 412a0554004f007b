"""The search that knows only the rules and a network (keltis_env.bots.gumbel): it reads no
card its seat has not seen, the same seed makes the same decisions, its improved policy is a
distribution over the legal moves, it uses no hand-written model of the game, and its
values steer its choice."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from keltis_env.bots import make_bot
from keltis_env.bots.gumbel import GumbelSearch, MLPNetwork
from keltis_env.games.keltis import GameConfig, GameState, kernels, sample_state
from keltis_env.policy import load_policy

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "policies" / "keltis_2p_scratch.zip"


def network() -> MLPNetwork:
    return MLPNetwork.from_policy(load_policy(SCRATCH))


def positions(count: int, seed: int = 3, players: int = 2) -> list[GameState]:
    """Positions of random games with at least two legal moves, some deep into the game."""
    rng = random.Random(seed)
    found = []
    for g in range(count):
        state = GameState.new_game(GameConfig(num_players=players), seed=seed * 100 + g)
        for _ in range(rng.randrange(0, 120)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        if not state.is_over and len(state.legal_actions()) > 1:
            found.append(state)
    return found


def search(seed: int = 0, **options) -> GumbelSearch:
    return GumbelSearch(network(), 2, simulations=options.pop("simulations", 16), seed=seed, **options)


def rows(states: list[GameState]) -> np.ndarray:
    return np.stack([kernels.pack(s) for s in states])


def test_the_improved_policy_is_a_distribution_over_the_legal_moves():
    states = positions(12)
    result = search().search(rows(states))
    for j, state in enumerate(states):
        legal = np.zeros(187, bool)
        legal[state.legal_actions()] = True
        p = result["policy"][j]
        assert np.all(p >= 0) and np.all(p[~legal] == 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-5)
        assert result["action"][j] in state.legal_actions()
        assert np.array_equal(result["mask"][j], legal)
        assert result["visits"][j].sum() > 0 and np.all(result["visits"][j][~legal] == 0)


def test_the_same_seed_makes_the_same_decisions_and_another_seed_other_noise():
    states = positions(10)
    a = search(seed=5).search(rows(states))
    b = search(seed=5).search(rows(states))
    for key in ("action", "policy", "visits", "value"):
        assert np.array_equal(a[key], b[key]), key
    c = search(seed=6).search(rows(states))
    assert not np.array_equal(a["policy"], c["policy"])


def test_it_reads_no_card_its_seat_has_not_seen():
    """Roots that differ only in what the seat to move cannot see (the other hands, the
    draw pile's order, the removed cards) give the same decisions, bit for bit."""
    states = positions(8)
    rng = random.Random(11)
    others = []
    for state in states:
        other = sample_state(state.view(state.current_player), rng)
        assert kernels.pack(other).tolist() != kernels.pack(state).tolist()  # the hidden cards differ
        others.append(other)
    a = search(seed=2).search(rows(states))
    b = search(seed=2).search(rows(others))
    for key in ("action", "policy", "visits", "value", "obs"):
        assert np.array_equal(a[key], b[key]), key


def test_one_legal_move_is_played_unsearched():
    state = next(s for s in positions(60, seed=4) if True)
    while len(state.legal_actions()) > 1:
        state.apply(state.legal_actions()[0])
        if state.is_over:
            pytest.skip("no position with one legal move")
    s = search()
    result = s.search(rows([state]))
    assert result["action"][0] == state.legal_actions()[0]
    assert result["policy"][0][state.legal_actions()[0]] == pytest.approx(1.0)
    assert result["visits"].sum() == 0


class ScoreNetwork:
    """Uniform logits; the value is the seat's score in its observation: a search guided by
    it should prefer moves that score."""

    def __init__(self, index: int, scale: float) -> None:
        self.index, self.scale = index, scale

    def logits(self, obs):
        return np.zeros((len(obs), 187), np.float32)

    def values(self, obs):
        return obs[:, self.index] * self.scale

    def __call__(self, obs):
        return self.logits(obs), self.values(obs)


def test_its_values_steer_its_choice():
    """With uniform priors and a value that is the seat's score, the search's move scores at
    least as much as the average legal move, and strictly more on the whole."""
    from keltis_env.games.keltis.encoding import ObservationEncoder

    enc = ObservationEncoder(2)
    net = ScoreNetwork(enc.index["p0.score"].start, 1.0)
    states = positions(40, seed=9)
    s = GumbelSearch(net, 2, simulations=64, top_k=16, noise=False, seed=1)
    result = s.search(rows(states))
    gained, mean_gained = [], []
    for j, state in enumerate(states):
        me = state.current_player

        def after(a, state=state, me=me):
            t = state.clone()
            t.apply(a)
            return t.scores()[me]

        base = [after(a) for a in state.legal_actions()]
        gained.append(after(int(result["action"][j])))
        mean_gained.append(float(np.mean(base)))
    assert np.mean(gained) > np.mean(mean_gained)


@pytest.mark.parametrize("options, message", [
    ({"simulations": 0}, "simulations must be an integer >= 1, got 0"),
    ({"top_k": 1}, "top_k must be an integer >= 2, got 1"),
    ({"c_visit": float("nan")}, "c_visit must be a finite number > 0, got nan"),
    ({"c_scale": -1.0}, "c_scale must be a finite number > 0, got -1.0"),
])
def test_bad_settings_are_refused_with_what_is_allowed(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        search(**options)


def test_a_root_where_nobody_of_it_is_to_move_is_refused():
    state = positions(1)[0]
    with pytest.raises(ValueError, match="every root must be a position where its seat is to move"):
        search().search(rows([state]), np.array([1 - state.current_player]))


def test_the_search_uses_no_hand_written_model():
    """The search and its worlds import nothing of the plan model, the heuristic or the
    planner, and the two kernels they borrow from the ismcts module call none of them."""
    from keltis_env.games.keltis import kernels_ismcts

    banned = ("plan", "heuristic", "planner", "guided")
    for path in ("keltis_env/bots/gumbel.py", "keltis_env/games/keltis/kernels_gumbel.py",
                 "keltis_env/games/keltis/bots/gumbel.py"):
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                names = [a.name for a in node.names]
                assert not any(b in module.rsplit(".", 1)[-1] for b in banned), (path, module)
                if module == "kernels_ismcts" or module.endswith(".kernels_ismcts"):
                    assert set(names) <= {"clear_hidden", "determinise"}, (path, names)
    for fn in (kernels_ismcts.clear_hidden, kernels_ismcts.determinise):
        called = set(fn.py_func.__code__.co_names)
        assert called <= {"range", "unseen_cards", "shuffle", "ValueError", "_K", "_REMOVED", "NUM_PLAYERS", "HAND",
                          "HAND_SIZES", "REMOVED", "DECK", "DECK_SIZE", "NUM_CARDS", "PLAYED", "PILE", "PILE_SIZES",
                          "_C", "_V", "_MAX_PILE", "COPIES_PER_CARD", "np", "empty", "int64"}, called


def test_the_gumbel_bot_plays_legal_moves_from_views_and_is_seeded():
    bot = make_bot(f"gumbel:net={SCRATCH},simulations=8", seed=3, num_players=2)
    other = make_bot(f"gumbel:net={SCRATCH},simulations=8", seed=3, num_players=2)
    for state in positions(5, seed=7):
        view = state.view(state.current_player)
        a = bot.act(view)
        assert a in state.legal_actions() and other.act(view) == a


@pytest.mark.parametrize("spec, message", [
    ("gumbel", "gumbel needs net=PATH"),
    (f"gumbel:net={SCRATCH},noise=2", "noise must be 0"),
    (f"gumbel:net={SCRATCH},replies=random", "replies must be sample .* or best"),
    (f"gumbel:net={SCRATCH},simulations=0", "simulations must be an integer >= 1"),
    ("gumbel:net=policies/dice_2p.zip", "dice"),
])
def test_the_gumbel_bot_refuses_bad_options(spec, message):
    with pytest.raises(Exception, match=message):
        make_bot(spec, seed=0, num_players=2)


def test_a_deeper_simulation_reads_the_value_later_and_stays_legal_and_seeded():
    states = positions(8, seed=5)
    shallow = search(seed=4)
    deep = search(seed=4, depth=3)
    shallow.search(rows(states))
    b = deep.search(rows(states))
    assert deep.network_rows > shallow.network_rows  # the searching seat's own moves ask the network too
    for j, state in enumerate(states):
        assert b["action"][j] in state.legal_actions()
        assert b["policy"][j].sum() == pytest.approx(1.0, abs=1e-5)
    again = search(seed=4, depth=3).search(rows(states))
    assert np.array_equal(again["policy"], b["policy"]) and np.array_equal(again["action"], b["action"])
    with pytest.raises(ValueError, match="depth must be an integer >= 0, got -1"):
        search(depth=-1)


class CountingNetwork:
    """The scratch network, counting its actor's and critic's calls."""

    def __init__(self) -> None:
        self.net = network()
        self.calls = {"logits": 0, "values": 0}

    def logits(self, obs):
        self.calls["logits"] += 1
        return self.net.logits(obs)

    def values(self, obs):
        self.calls["values"] += 1
        return self.net.values(obs)

    def __call__(self, obs):
        return self.net(obs)


def test_a_rollout_stops_after_max_moves_and_reads_the_value_there(monkeypatch):
    import keltis_env.bots.gumbel as gumbel

    monkeypatch.setattr(gumbel, "MAX_MOVES", 6)
    counting = CountingNetwork()
    deep = GumbelSearch(counting, 2, simulations=1, depth=64, seed=1)
    root = rows([GameState.new_game(GameConfig(num_players=2), seed=8)])  # a game far from its end
    legal = np.flatnonzero(deep.observe(root, np.array([0]))[1][0])
    values = deep.simulate(root, np.array([0]), np.array([0]), legal[:1], np.array([3], np.uint64))
    assert counting.calls == {"logits": 6, "values": 1}  # six moves after the candidate, then the value head
    assert -2.0 < values[0] < 2.0


def test_best_replies_make_a_simulation_depend_on_its_world_alone():
    root = rows([GameState.new_game(GameConfig(num_players=2), seed=8)])
    me = np.array([0])

    def values(sample: bool, seed: int) -> np.ndarray:
        s = GumbelSearch(network(), 2, simulations=1, depth=64, sample_replies=sample, seed=seed)
        legal = np.flatnonzero(s.observe(root, me)[1][0])[:3]
        worlds = np.array([5, 5, 5, 9, 9, 9], np.uint64)
        return s.simulate(root, me, np.zeros(6, np.int64), np.tile(legal, 2), worlds)

    best = values(False, 1)
    assert np.array_equal(best, values(False, 2))  # the network's most likely moves: no random numbers
    assert not np.array_equal(values(True, 1), values(True, 2))  # drawn moves differ with the seed


def test_a_low_temperature_draws_the_replies_near_the_most_likely_move():
    root = rows([GameState.new_game(GameConfig(num_players=2), seed=8)])
    me = np.array([0])

    def values(seed: int, **options) -> np.ndarray:
        s = GumbelSearch(network(), 2, simulations=1, depth=64, seed=seed, **options)
        legal = np.flatnonzero(s.observe(root, me)[1][0])[:3]
        worlds = np.array([5, 5, 5, 9, 9, 9], np.uint64)
        return s.simulate(root, me, np.zeros(6, np.int64), np.tile(legal, 2), worlds)

    best = values(1, sample_replies=False)
    for seed in (1, 2):  # near zero the draw is the most likely move whatever the random numbers
        assert np.array_equal(values(seed, temperature=1e-6), best)
    assert not np.array_equal(values(1, temperature=1.0), best)  # at 1 the draws leave it
    assert np.array_equal(values(3, temperature=0.5), values(3, temperature=0.5))  # seeded


@pytest.mark.parametrize("temperature", [0, -1.0, float("nan"), float("inf"), True])
def test_the_search_refuses_a_temperature_that_is_not_a_positive_number(temperature):
    with pytest.raises(ValueError, match=r"temperature must be a finite number > 0"):
        search(temperature=temperature)
    with pytest.raises(ValueError, match=r"temperature must be a finite number > 0|temperature=.* is not a finite"):
        make_bot(f"gumbel:net={SCRATCH},temperature={temperature}", seed=0, num_players=2)


class HiddenNetwork:
    """A value head that reads the hidden block after the observation: it counts the hidden
    cards the world dealt to the other seat (so its values differ from world to world)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.rows: list[np.ndarray] = []

    def logits(self, obs):
        assert obs.shape[1] == self.size  # the actor's rows: the seat's view only
        return np.zeros((len(obs), 187), np.float32)

    def values(self, obs):
        assert obs.shape[1] > self.size
        self.rows.append(obs.copy())
        return obs[:, self.size:self.size + 55] @ np.arange(55, dtype=np.float32) / 200.0

    def __call__(self, obs):
        raise AssertionError("the root's value is never read with a privileged critic")


def test_a_privileged_critic_reads_the_dealt_worlds_hidden_cards_never_the_real_ones():
    states = positions(6)
    size = 831
    a_net, b_net = HiddenNetwork(size), HiddenNetwork(size)
    others = [sample_state(s.view(s.current_player), random.Random(9)) for s in states]
    a = GumbelSearch(a_net, 2, simulations=16, seed=4, privileged=True).search(rows(states))
    b = GumbelSearch(b_net, 2, simulations=16, seed=4, privileged=True).search(rows(others))
    for key in ("action", "policy", "visits", "value"):  # the real hidden cards change nothing
        assert np.array_equal(a[key], b[key]), key
    leaves = np.concatenate(a_net.rows)
    assert leaves.shape[1] == size + 110
    # the worlds' hidden blocks vary (dealt per world), and each holds a whole other hand
    assert len({row[size:].tobytes() for row in leaves}) > len(states)
    assert np.all(leaves[:, size:size + 55].sum(axis=1) * 2 <= 8)
    # the root value is the mean of its simulations' values
    for j in range(len(states)):
        seen = a["visits"][j] > 0
        assert seen.any() and np.isfinite(a["value"][j])


def _critic_layers(width: int = 831 + 110) -> list:
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(width, 8)).astype(np.float32), np.zeros(8, np.float32)),
            (rng.normal(size=(8, 1)).astype(np.float32), np.zeros(1, np.float32))]


def test_a_critic_file_round_trips_and_is_checked_against_the_search(tmp_path):
    from keltis_env.bots.gumbel import load_critic, save_critic

    path = tmp_path / "c.critic.npz"
    layers = _critic_layers()
    save_critic(path, layers, game="keltis", num_players=2, features=(), activation="Tanh")
    loaded, activation = load_critic(path, "keltis", 2, ())
    assert activation == "Tanh" and all(np.array_equal(a, b) for (a, _), (b, _) in zip(loaded, layers, strict=True))
    with pytest.raises(ValueError, match=r"is for .* this search needs"):
        load_critic(path, "keltis", 3, ())
    bad = tmp_path / "bad.npz"
    save_critic(bad, _critic_layers(831), game="keltis", num_players=2, features=(), activation="Tanh")
    with pytest.raises(ValueError, match=r"layer 0 has weight \(831, 8\)"):
        load_critic(bad, "keltis", 2, ())
    nan = _critic_layers()
    nan[1][0][0, 0] = np.nan
    save_critic(bad, nan, game="keltis", num_players=2, features=(), activation="Tanh")
    with pytest.raises(ValueError, match="not finite"):
        load_critic(bad, "keltis", 2, ())
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot be read"):
        load_critic(bad, "keltis", 2, ())
    np.savez(bad, x=np.zeros(3))
    with pytest.raises(ValueError, match="expected 1 to 16 layers"):
        load_critic(bad, "keltis", 2, ())
