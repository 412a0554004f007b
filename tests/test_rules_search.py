"""The card game's rules-only search (``ismcts:model=rules,net=PATH``,
keltis_env/games/keltis/bots/rules_model.py): it never calls the plan model, the network's
policy alone ranks the candidates, the score-margin leaf and the random rollouts, the same
decisions for a seed, and one-line refusals of every option that would need the plan model."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from keltis_env.games.keltis.bots import ismcts, plan, planner
from keltis_env.games.keltis.bots.ismcts import ISMCTSBot
from keltis_env.games.keltis.bots.rules_model import RulesSearchModel

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "policies" / "keltis_2p_scratch.zip"
RULES = f"ismcts:model=rules,net={SCRATCH}"
#: every rules-only setting of leaves and rollouts
SETTINGS = ["", "rollout=random", "leaf=score", "rollout=random,leaf=score,depth=2", "leaf=both"]


def rules_bot(extra: str = "", seed: int = 0, budget: str = "iterations=16,top_k=3,margin=8") -> ISMCTSBot:
    bot = make_bot(",".join(x for x in (RULES, budget, extra) if x), seed=seed, num_players=2)
    assert isinstance(bot, ISMCTSBot)
    return bot


def positions(seed: int, count: int) -> list:
    """``count`` positions of a 2-player card game between heuristic bots where the player
    to act has at least 3 legal actions."""
    descriptor = get_game("keltis")
    state = descriptor.new_state(descriptor.make_config(2), seed)
    bot = make_bot("heuristic", seed=seed)
    found = []
    while not state.is_over and len(found) < count:
        if len(state.legal_actions()) > 2 and state.turn % 3 == 0:
            found.append(state.clone())
        state.apply(bot.act(state.view(state.current_player)))
    return found


def forbid_the_plan_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every entry into the plan model (its planner, values, ranker, rollout choice and
    the compiled searches built on it) raise."""
    def called(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the plan model was called")

    monkeypatch.setattr(plan.Planner, "__init__", called)
    monkeypatch.setattr(plan.Planner, "value", called)
    for module in (planner, ismcts):
        monkeypatch.setattr(module, "action_values", called)
        monkeypatch.setattr(module, "choose", called)
    monkeypatch.setattr(ismcts, "compiled_search", called)
    monkeypatch.setattr(ismcts, "compiled_guided", called)


# ---------------------------------------------------------------------- no plan model
@pytest.mark.parametrize("extra", SETTINGS)
def test_model_rules_never_calls_the_plan_model(monkeypatch, extra):
    found = positions(3, 8)
    forbid_the_plan_model(monkeypatch)
    with pytest.raises(RuntimeError, match="the plan model was called"):  # the trap springs for the plan model
        trap = make_bot(f"ismcts:net={SCRATCH},iterations=16", seed=0, num_players=2)
        trap.act(found[0].view(found[0].current_player))
    bot = rules_bot(extra, budget="iterations=24,top_k=4,margin=8,backend=auto")
    searched = 0
    for state in found:
        result = bot.analyse(state.view(state.current_player))
        assert result.action in state.legal_actions()
        searched += result.rollouts > 0
    assert searched >= 2
    # and a whole game against random, every decision of the search's seat made without it
    descriptor = get_game("keltis")
    state = descriptor.new_state(descriptor.make_config(2), 11)
    other = make_bot("random", seed=1)
    while not state.is_over and state.turn < 400:
        view = state.view(state.current_player)
        state.apply((bot if state.current_player == 0 else other).act(view))
    assert state.is_over


# ---------------------------------------------------------------------- the ranker
def test_the_policy_alone_ranks_the_candidates():
    """Every legal action is ranked at policy_weight times its log-probability, best first;
    with no budget the policy's most probable action is played; the searched candidates are
    the most probable ones within the margin."""
    for state in positions(5, 4):
        view = state.view(state.current_player)
        legal = state.legal_actions()
        ranked = rules_bot("policy_weight=2", budget="iterations=0").analyse(view)
        assert sorted(c.action for c in ranked.candidates) == sorted(legal)
        for c in ranked.candidates:
            assert c.rank == pytest.approx(2.0 * math.log(c.prior), abs=1e-9)
        priors = [c.prior for c in ranked.candidates]
        assert priors == sorted(priors, reverse=True) and ranked.action == ranked.candidates[0].action
        assert ranked.rollouts == 0
        result = rules_bot(budget="iterations=48,top_k=3,margin=3").analyse(view)
        if not result.rollouts:
            continue
        top = sorted(result.candidates, key=lambda c: -c.prior)
        searched = {c.action for c in result.candidates if c.samples}
        assert searched <= {c.action for c in top[:3]}
        assert all(math.log(c.prior) >= math.log(top[0].prior) - 3 - 1e-9
                   for c in result.candidates if c.samples)


def test_the_rules_model_lists_every_legal_action_at_zero_points():
    state = positions(2, 1)[0]
    view = state.view(state.current_player)
    assert RulesSearchModel().candidates(view, None) == [(int(a), 0.0) for a in view.legal_actions]


# ---------------------------------------------------------------------- leaves and rollouts
def test_the_score_leaf_is_the_margin_if_the_game_ended_now():
    model = RulesSearchModel()
    checked = 0
    for state in positions(7, 6):
        scores = state.scores()
        for player in range(2):
            assert model.evaluate(state, player, None) == scores[player] - scores[1 - player]
            checked += scores[player] != scores[1 - player]
    assert checked >= 2  # positions where the margin is not 0


def test_leaf_both_is_the_mean_of_the_value_head_and_the_score_margin():
    """With random rollouts of one round and no halving the three leaves see the same worlds
    and moves and stop at the same positions (the searcher's next turn), so every mean with
    ``leaf=both`` is the mean of its means with ``leaf=value`` and ``leaf=score``."""
    compared = 0
    for state in positions(6, 6):
        view = state.view(state.current_player)
        value, score, both = (rules_bot(f"rollout=random,leaf={leaf},stage=100,depth=1", seed=3).analyse(view)
                              for leaf in ("value", "score", "both"))
        for v, s, b in zip(value.candidates, score.candidates, both.candidates, strict=True):
            assert v.action == s.action == b.action and v.samples == s.samples == b.samples
            if b.mean is not None:
                assert b.mean == pytest.approx((v.mean + s.mean) / 2, abs=1e-9)
                compared += 1
    assert compared >= 4


def test_random_rollouts_play_uniform_legal_moves_from_the_given_generator():
    state = positions(4, 1)[0]
    legal = state.legal_actions()
    model = RulesSearchModel()
    model.rng = random.Random(9)
    drawn = [model.policy(state, None) for _ in range(40 * len(legal))]
    assert set(drawn) == set(legal)
    model.rng = random.Random(9)
    assert [model.policy(state, None) for _ in range(len(drawn))] == drawn


@pytest.mark.parametrize("extra", ["rollout=random", "rollout=random,leaf=score", ""])
def test_same_seed_same_decisions_whatever_the_global_generators_do(extra):
    found = positions(8, 4)
    a, b = rules_bot(extra, seed=5), rules_bot(extra, seed=5)
    for state in found:
        view = state.view(state.current_player)
        first = a.analyse(view)
        random.random()
        np.random.rand(3)
        assert b.analyse(view) == first
        assert sum(c.samples for c in first.candidates) == first.rollouts


def test_random_rollouts_draw_from_the_bots_seed():
    """Reseeding the bot replays its decisions; another seed draws other rollouts."""
    found = positions(9, 4)
    bot = rules_bot("rollout=random,leaf=score")
    results = {}
    for seed in (1, 2, 1):
        bot.seed(seed)
        results.setdefault(seed, []).append([bot.analyse(s.view(s.current_player)) for s in found])
    assert results[1][0] == results[1][1]
    assert results[1][0] != results[2][0]


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize(("extra", "message"), [
    ("leaf=model", "leaf=model is the plan model's, which model=rules never calls; give leaf=value or score or both"),
    ("rollout=model", "rollout=model is the plan model's, which model=rules never calls; give rollout=net or random"),
    ("backend=compiled", "backend=compiled cannot run model=rules"),
    ("policy_weight=0", "policy_weight must be > 0 with model=rules"),
    ("leaf=deep", "leaf must be one of value, score, both with model=rules, got 'deep'"),
    ("rollout=planner", "rollout must be one of net, random with model=rules, got 'planner'"),
])
def test_options_that_need_the_plan_model_are_refused_in_one_line(extra, message):
    with pytest.raises(ValueError, match=message) as info:
        make_bot(f"{RULES},{extra}", num_players=2)
    assert "\n" not in str(info.value)


def test_model_rules_needs_a_network_and_the_plan_search_refuses_its_options():
    with pytest.raises(ValueError, match="model=rules needs a network, whose policy ranks the candidates"):
        make_bot("ismcts:model=rules")
    with pytest.raises(ValueError, match="model must be one of plan, rules, got 'planner'"):
        make_bot(f"ismcts:model=planner,net={SCRATCH}")
    for extra in ("leaf=score", "rollout=random"):
        with pytest.raises(ValueError, match=f"{extra} is the rules model's: give model=rules too"):
            make_bot(f"ismcts:net={SCRATCH},{extra}", num_players=2)


def test_backend_auto_searches_in_python_and_the_bot_says_its_model():
    bot = rules_bot("rollout=random,leaf=score,backend=auto")
    assert bot.compiled is None and bot.guided is None and bot.backend == "python"
    assert isinstance(bot.model, RulesSearchModel)
    assert repr(bot).endswith("leaf=score, rollout=random, model=rules)")
    with pytest.raises(ValueError, match="model=rules has no plan model"):
        bot.weights  # noqa: B018
    plain = make_bot(f"ismcts:net={SCRATCH}", num_players=2)
    assert "model=" not in repr(plain) and not isinstance(plain.model, RulesSearchModel)
