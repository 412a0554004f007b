"""The card game's network-guided ``ismcts`` search on the compiled core
(``ismcts:backend=compiled,net=PATH``: keltis_env/games/keltis/kernels_guided.py, the bot in
keltis_env/games/keltis/bots/compiled.py) beside the Python guided search.

The two draw different random numbers, so their decisions are not compared one by one
where they search; what is held equal is what the search is made of:

* the leaves: in the same sampled world, every candidate's rollout stops at the position
  where the Python rollout stops (the searcher's next decision), the network's observation
  of it is the Python encoder's bit for bit (the ``plan`` feature included), and the value
  head gives it the guide's value; a stage adds to every candidate what the Python search
  adds (the model's half with ``leaf=both``, the potential for a ``shaped`` value head);
* the search's shape: the same ranked actions, values and priors, the same budget spent in
  the same stages, the same unsearched decisions (``confident``);
* what it reads: the view only, legal moves, and a seed repeats every decision.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import random_positions

from keltis_env.bots import check_spec, make_bot
from keltis_env.core.game import get_game
from keltis_env.core.rewards import potentials
from keltis_env.games.keltis import GameConfig, GameState
from keltis_env.games.keltis.actions import NUM_ACTIONS
from keltis_env.games.keltis.bots import compiled
from keltis_env.games.keltis.state import sample_state

GAME = get_game("keltis")
ROOT = Path(__file__).resolve().parent.parent
#: per player count, a policy file with a value head and the ``plan`` feature
POLICY = {2: ROOT / "policies" / "keltis_2p_value.zip", 3: ROOT / "policies" / "keltis_3p.zip"}
#: a small budget: several candidates and stages, quick to run
SMALL = "iterations=24,top_k=4,stage=2"


def spec(num_players: int, extra: str = "", backend: str = "compiled") -> str:
    return f"ismcts:backend={backend},net={POLICY[num_players]},{SMALL}" + (f",{extra}" if extra else "")


@pytest.fixture(scope="module")
def kern() -> Any:
    """The kernel modules (loaded, and the guided search warmed up, once)."""
    pytest.importorskip("numba")
    from keltis_env.games.keltis import kernels, kernels_guided, kernels_ismcts, kernels_plan

    assert make_bot(spec(2), num_players=2).guided is not None
    return kernels, kernels_guided, kernels_ismcts, kernels_plan


def searched_positions(num_players: int, count: int, seed: int) -> list[GameState]:
    """Positions part-way through random games where the player to move has a choice."""
    return [s for s in random_positions(num_players, count, seed) if not s.is_over and len(s.legal_actions()) > 1]


class Scratch:
    """The compiled rollout's scratch arrays."""

    def __init__(self, kp: Any, k: Any, num_players: int) -> None:
        self.spi = np.zeros((num_players, kp.INT_SIZE), dtype=np.int64)
        self.spf = np.zeros((num_players, kp.FLOAT_SIZE))
        self.pi, self.pf = np.zeros(kp.INT_SIZE, dtype=np.int64), np.zeros(kp.FLOAT_SIZE)
        self.mask, self.values = np.zeros(k.NUM_ACTIONS, dtype=np.int8), np.zeros(k.NUM_ACTIONS)
        self.scores = np.zeros(4, dtype=np.int64)


def observation(kg: Any, enc: Any, row: np.ndarray, me: int) -> np.ndarray:
    """The compiled encoder's observation of ``me`` in ``row``."""
    out = np.zeros(enc.size, dtype=np.float32)
    layout, scale, offset, score_scale, counts, plan, plan_scale, plan_weights = enc.args
    kg.observe(row, me, layout, scale, offset, score_scale, counts, plan, plan_scale, plan_weights,
               np.zeros(NUM_ACTIONS, dtype=np.int8), np.zeros(NUM_ACTIONS), out)
    return out


# ---------------------------------------------------------------------- the leaves
@pytest.mark.parametrize("num_players", [2, 3])
def test_a_rollout_stops_where_the_python_one_does_and_is_observed_and_valued_as_the_guide_does(
        kern, num_players: int) -> None:
    """In worlds sampled by the Python search, every candidate's compiled rollout reaches
    the Python rollout's position; the compiled observation of the searcher's view there is
    the Python encoder's bit for bit, and the value head's values of a batch of them are
    the guide's values of the Python observations, exactly."""
    k, kg, ki, kp = kern
    bot = make_bot(spec(num_players, backend="python", extra="leaf=both"), seed=0, num_players=num_players)
    guide, model = bot.net, bot.model
    enc = kg.Encoding(num_players, guide.info.features)
    w = kp.weights()
    rng = random.Random(num_players)
    ours, theirs, reached = [], [], 0
    for state in searched_positions(num_players, 6, 80 + num_players):
        me = state.current_player
        view = state.view(me)
        root = model.begin(view)
        clean = compiled.pack_view(view)
        root_pi, root_pf = kp.new_plan(clean, me, w)
        for _ in range(2):
            world = sample_state(view, rng)
            setups = model.prepare(view, world, root)
            row = k.pack(world)
            t = Scratch(kp, k, num_players)
            ki.world_scales(row, me, w, root_pi, root_pf, t.spi, t.spf)
            for action in state.legal_actions()[:3]:
                python = world.clone()
                python.apply(action)
                value = bot._rollout(python, me, setups, bot.depth)
                fast = row.copy()
                k.apply(fast, action)
                over = kg.guided_rollout(fast, me, bot.depth, True, w, t.spi, t.spf, t.pi, t.pf, t.mask, t.scores,
                                         t.values)
                assert np.array_equal(fast, k.pack(python)) and over == python.is_over
                if value is None:
                    ours.append(observation(kg, enc, fast, me))
                    theirs.append(guide.encode(python, me))
                    assert np.array_equal(ours[-1], theirs[-1]) and ours[-1].dtype == theirs[-1].dtype
                    reached += 1
    assert reached >= 20
    assert guide.points_of(np.stack(ours)) == guide.points_of(theirs)


def test_the_encoder_writes_the_plan_feature_only_where_the_searcher_is_to_act(kern) -> None:
    k, kg, _, _ = kern
    guide = make_bot(spec(2, backend="python"), num_players=2).net
    enc = kg.Encoding(2, guide.info.features)
    checked = 0
    for state in random_positions(2, 8, 90):
        for me in range(2):
            fast = observation(kg, enc, k.pack(state), me)
            assert np.array_equal(fast, guide.encode(state, me))
            plan = fast[enc.size - 2 * NUM_ACTIONS:]
            assert plan.any() == (not state.is_over and state.current_player == me)
            checked += 1
    assert checked == 16


@pytest.mark.parametrize(("leaf", "shaped_points"), [("value", 0.0), ("both", 0.0), ("both", 7.5), ("model", 0.0)])
def test_a_stage_adds_what_the_python_search_adds_and_writes_the_leaves_for_the_value_head(
        kern, leaf: str, shaped_points: float) -> None:
    """One world of a stage: a finished rollout adds its final margin; an unfinished one
    the model's evaluation (all of it with ``leaf=model``, half with ``both``) and, for a
    shaped value head, its share of the value scale times the searcher's potential, and its
    observation is written for the value head (none with ``leaf=model``)."""
    k, kg, ki, kp = kern
    bot = make_bot(spec(2, backend="python", extra=f"leaf={leaf}"), seed=0, num_players=2)
    model, guide = bot.model, bot.net
    enc = kg.Encoding(2, guide.info.features)
    w = kp.weights()
    rows_written = 0
    for state in searched_positions(2, 4, 95):
        me = state.current_player
        view = state.view(me)
        clean = compiled.pack_view(view)
        root_pi, root_pf = kp.new_plan(clean, me, w)
        actions = np.array(state.legal_actions()[:3], dtype=np.int64)
        live = len(actions)
        opts = ki.options(bot)
        opts[0] = live  # one world: the budget is spent after it
        totals, counts = np.zeros(live), np.zeros(live, dtype=np.int64)
        info = np.zeros(kg.INFO_SIZE, dtype=np.int64)
        obs = np.zeros((kg.MAX_ROWS, enc.size), dtype=np.float32)
        who = np.zeros(kg.MAX_ROWS, dtype=np.int64)
        seed = np.array([state.turn + 1], dtype=np.uint64)
        world = np.zeros_like(clean)
        ki.determinise(clean, me, world, np.zeros(k.NUM_CARDS, dtype=np.int64), seed.copy())
        status = kg.run_stage(clean, w, opts, kg.LEAVES.index(leaf), shaped_points, seed, actions,
                              np.arange(live), live, totals, counts, info, root_pi, root_pf, obs, who, *enc.args)
        assert status == kg.DONE and list(counts) == [1] * live and info[kg.INFO_SAMPLES] == 1
        python_world = k.unpack(world, state.config)
        setups = model.prepare(view, python_world, model.begin(view))
        expected, leaves = [], []
        for i, action in enumerate(actions):
            leaf_state = python_world.clone()
            leaf_state.apply(int(action))
            value = bot._rollout(leaf_state, me, setups, bot.depth)
            if value is not None:
                expected.append(value)
                continue
            total = shaped_points * potentials(leaf_state.scores())[me] if leaf != "model" else 0.0
            if leaf != "value":
                total += (1.0 if leaf == "model" else 0.5) * model.evaluate(leaf_state, me, setups)
            expected.append(total)
            if leaf != "model":
                leaves.append((i, guide.encode(leaf_state, me)))
        assert totals.tolist() == expected
        rows = int(info[kg.INFO_ROWS])
        assert [int(i) for i in who[:rows]] == [i for i, _ in leaves]
        assert all(np.array_equal(obs[j], row) for j, (_, row) in enumerate(leaves))
        rows_written += rows
    assert (rows_written > 0) == (leaf != "model")


def test_a_shaped_value_head_adds_the_leaf_potential_in_the_compiled_search_as_in_python(kern, tmp_path,
                                                                                      monkeypatch) -> None:
    """With a value head that says 0 everywhere, a ``"score"`` network values every leaf at
    0 and a ``"shaped"`` one at the leaf's potential in points, in the compiled search as in
    the Python one (early positions: no rollout ends the game)."""
    from keltis_env.bots.net_guide import NetGuide
    from keltis_env.policy.format import write_policy_info

    monkeypatch.setattr(NetGuide, "points_of", lambda self, rows: [0.0] * len(rows))
    means: dict[tuple[str, str], list[float]] = {}
    early = [s for s in searched_positions(2, 40, 150) if s.turn < 20][:4]
    assert early
    for reward in ("score", "shaped"):
        path = tmp_path / f"{reward}.zip"
        path.write_bytes(POLICY[2].read_bytes())
        write_policy_info(path, "keltis", 2, features=("plan",), value_reward=reward)
        for backend in ("compiled", "python"):
            bot = make_bot(f"ismcts:backend={backend},net={path},leaf=value,{SMALL}", seed=1, num_players=2)
            means[reward, backend] = [c.mean for s in early for c in bot.analyse(s.view(s.current_player)).candidates
                                      if c.samples]
    assert means["score", "compiled"] and all(m == 0.0 for m in means["score", "compiled"] + means["score", "python"])
    assert any(m != 0.0 for m in means["shaped", "compiled"]) and any(m != 0.0 for m in means["shaped", "python"])


# ---------------------------------------------------------------------- the search's shape
@pytest.mark.parametrize(("num_players", "extra"), [(2, "leaf=both"), (2, "leaf=value,margin=6,prior=2"),
                                                    (3, "leaf=both"), (2, "leaf=model")])
def test_the_search_ranks_and_spends_its_budget_as_the_python_guided_search(kern, num_players: int,
                                                                           extra: str) -> None:
    """The same ranked actions with the same values and priors, the same worlds, rollouts
    and survivors; every survivor rolled out in every world."""
    searched = 0
    for state in searched_positions(num_players, 4, 100 + num_players):
        view = state.view(state.current_player)
        fast = make_bot(spec(num_players, extra), seed=1, num_players=num_players).analyse(view)
        slow = make_bot(spec(num_players, extra, "python"), seed=1, num_players=num_players).analyse(view)
        assert [(c.action, c.rank, c.prior) for c in fast.candidates if c.samples == 0] == [
            (c.action, c.rank, c.prior) for c in slow.candidates if c.samples == 0]
        assert sorted((c.action, c.rank, c.prior) for c in fast.candidates) == sorted(
            (c.action, c.rank, c.prior) for c in slow.candidates)
        assert (fast.samples, fast.rollouts) == (slow.samples, slow.rollouts)
        survivors = [c for c in fast.candidates if c.score is not None]
        assert len(survivors) == len([c for c in slow.candidates if c.score is not None])
        assert all(c.samples == fast.samples for c in survivors)
        if fast.rollouts:
            assert fast.action in [c.action for c in survivors]
            searched += 1
    assert searched >= 2


def test_a_sure_policy_decides_unsearched_as_the_python_search_does(kern) -> None:
    sure = 0
    for state in searched_positions(2, 12, 110):
        view = state.view(state.current_player)
        fast = make_bot(spec(2, "confident=0.5"), seed=1, num_players=2).analyse(view)
        if fast.sure:
            slow = make_bot(spec(2, "confident=0.5", "python"), seed=1, num_players=2).analyse(view)
            assert fast == slow and fast.rollouts == 0
            sure += 1
    assert sure >= 1


def test_a_file_that_plays_averaged_ranks_the_root_as_the_python_search_does(kern) -> None:
    """A policy that plays averaged over relabellings (``keltis_2p.zip``) ranks the root's
    actions with its averaged priors: unsearched (``iterations=0``), the decision and every
    candidate's rank and prior are the Python search's."""
    averaged = ROOT / "policies" / "keltis_2p.zip"
    compared = 0
    for state in searched_positions(2, 4, 115):
        view = state.view(state.current_player)
        fast, slow = (make_bot(f"ismcts:backend={b},net={averaged},iterations=0", seed=1, num_players=2).analyse(view)
                      for b in ("compiled", "python"))
        assert fast == slow and len(fast.candidates) > 1
        compared += 1
    assert compared >= 3


# ---------------------------------------------------------------------- legality, seeds, views
def test_the_guided_compiled_search_plays_a_whole_game_with_legal_moves_from_the_live_view(kern) -> None:
    bot = make_bot(spec(2, "confident=0.7"), seed=2, num_players=2)
    state = GameState.new_game(GameConfig(num_players=2), 61)
    moves = 0
    while not state.is_over:
        action = bot.act(GAME.live_view(state, state.current_player))
        assert action in state.legal_actions()
        state.apply(action)
        moves += 1
    assert moves > 50


def test_a_seed_repeats_every_decision_whatever_else_draws_random_numbers(kern) -> None:
    positions = searched_positions(2, 6, 120)
    runs = []
    for seed in (5, 5, 6):
        bot = make_bot(spec(2, "leaf=both"), seed=seed, num_players=2)
        results = []
        for state in positions:
            random.random(), np.random.random()  # the global generators are not the bot's
            results.append(bot.analyse(state.view(state.current_player)))
        runs.append(results)
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]  # another seed samples other worlds


def test_a_decision_depends_on_the_view_only_not_the_hidden_cards(kern) -> None:
    rng = random.Random(3)
    compared = 0
    for state in searched_positions(2, 5, 130):
        seat = state.current_player
        view = state.view(seat)
        other = sample_state(view, rng)
        assert other.view(seat) == view and (other.hands != state.hands or other.deck != state.deck)
        choices = [make_bot(spec(2), seed=3, num_players=2).analyse(GAME.live_view(s, seat)) for s in (state, other)]
        assert choices[0] == choices[1]
        compared += 1
    assert compared >= 3


def test_a_guided_compiled_bot_pickles_and_searches_compiled_again(kern) -> None:
    bot = make_bot(spec(2), seed=4, num_players=2)
    copy = pickle.loads(pickle.dumps(bot))
    assert copy.guided is not None and repr(copy) == repr(bot)
    view = searched_positions(2, 3, 140)[0]
    view = view.view(view.current_player)
    assert copy.analyse(view) == bot.analyse(view)


# ---------------------------------------------------------------------- refused options
REFUSED = [
    (f"ismcts:backend=compiled,net={POLICY[2]},rollout=net",
     "ismcts option rollout=net cannot run on backend=compiled: its rollouts play the plan model (rollout=model, the "
     "default); give backend=python for rollout=net"),
    (f"ismcts:backend=compiled,net={POLICY[2]},seconds=0.1",
     "ismcts option backend=compiled takes its budget in iterations, not seconds: give iterations=N"),
    (f"ismcts:backend=compiled,net={POLICY[2]},leaf=rollout", "ismcts option leaf must be one of value, model, both"),
]


@pytest.mark.parametrize(("bad", "message"), REFUSED)
def test_an_option_the_compiled_guided_search_cannot_run_is_refused_in_one_line(bad: str, message: str) -> None:
    for check in (make_bot, check_spec):
        with pytest.raises(ValueError) as info:
            check(bad, num_players=2) if check is make_bot else check(bad, "keltis", 2)
        assert "\n" not in str(info.value) and message in str(info.value)


def test_features_the_compiled_encoder_does_not_write_are_refused_naming_them(kern) -> None:
    _, kg, _, _ = kern
    with pytest.raises(ValueError) as info:
        kg.check_features(("plan", "history"), "ismcts")
    assert str(info.value) == ("ismcts option backend=compiled encodes the observation features plan, rows only; the "
                               "network reads history too: give backend=python")
    kg.check_features(("plan",), "ismcts")
    kg.check_features(("rows", "plan"), "ismcts")
    kg.check_features((), "ismcts")


def test_auto_searches_compiled_with_a_network_and_in_python_with_rollout_net(kern) -> None:
    assert make_bot(spec(2, backend="auto"), num_players=2).guided is not None
    assert make_bot(spec(2, "rollout=net", backend="auto"), num_players=2).guided is None
    assert make_bot(spec(2, backend="python"), num_players=2).guided is None
