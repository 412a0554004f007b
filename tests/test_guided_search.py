"""The search guided by a policy file (``ismcts:net=PATH``, keltis_env/bots/search.py) and
the value head it reads (keltis_env/policy): options checked when the bot is made, the
same decisions for a seed, decisions from the view alone, every candidate's statistics,
a critic that predicts outcomes better than their mean, and the metadata saying what the
value estimates."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import numpy as np
import pytest

from keltis_env.bots import make_bot
from keltis_env.bots.search import SearchBot
from keltis_env.core.game import get_game
from keltis_env.core.rewards import final_rewards
from keltis_env.games import dice, keltis
from keltis_env.policy import INFO_MEMBER, PolicyLoadError, load_policy, read_policy_info, write_policy_info
from keltis_env.policy.format import DEFAULT_VALUE_REWARD, INFO_FORMAT

ROOT = Path(__file__).resolve().parent.parent
POLICY = {"keltis": ROOT / "policies" / "keltis_2p.zip", "dice": ROOT / "policies" / "dice_2p.zip"}
#: small budgets: enough candidates and samples to search, quick to run
SMALL = {"keltis": "iterations=12,top_k=3", "dice": "iterations=24,top_k=4"}


def guided(game: str, extra: str = "", seed: int = 0) -> SearchBot:
    spec = f"ismcts:net={POLICY[game]},{SMALL[game]}" + (f",{extra}" if extra else "")
    bot = make_bot(spec, seed=seed, game=game, num_players=2)
    assert isinstance(bot, SearchBot)
    return bot


def positions(game: str, seed: int, count: int) -> list:
    """``count`` positions of a 2-player game between heuristic bots where the player to
    act has a choice."""
    descriptor = get_game(game)
    state = descriptor.new_state(descriptor.make_config(2), seed)
    bot = make_bot("heuristic", seed=seed, game=game)
    found = []
    while not state.is_over and len(found) < count:
        if len(state.legal_actions()) > 2 and state.turn % 3 == 0:
            found.append(state.clone())
        state.apply(bot.act(state.view(state.current_player)))
    return found


# ---------------------------------------------------------------------- options
@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_net_and_its_options_are_checked_when_the_bot_is_made(game, tmp_path):
    other = POLICY["dice" if game == "keltis" else "keltis"]
    with pytest.raises(PolicyLoadError, match="no policy file"):
        make_bot(f"ismcts:net={tmp_path / 'missing.zip'}", game=game, num_players=2)
    cut = tmp_path / "cut.zip"
    cut.write_bytes(POLICY[game].read_bytes()[:5000])
    with pytest.raises(PolicyLoadError, match="truncated or corrupt"):
        make_bot(f"ismcts:net={cut}", game=game, num_players=2)
    with pytest.raises(PolicyLoadError, match=f"is a 2-player {'dice' if game == 'keltis' else 'keltis'} policy"):
        make_bot(f"ismcts:net={other}", game=game, num_players=2)
    with pytest.raises(PolicyLoadError, match=f"this is a 3-player {game} game"):
        make_bot(f"ismcts:net={POLICY[game]}", game=game, num_players=3)
    for option, message in (("leaf=deep", "leaf must be one of value, model, both"),
                            ("rollout=planner", "rollout must be one of model, net"),
                            ("policy_weight=-1", "policy_weight must be a finite number >= 0"),
                            ("value_scale=-2", "value_scale must be a finite number >= 0"),
                            ("confident=0", "confident must be a finite number > 0 and <= 1"),
                            ("confident=1.5", "confident must be a finite number > 0 and <= 1")):
        with pytest.raises(ValueError, match=message):
            make_bot(f"ismcts:net={POLICY[game]},{option}", game=game, num_players=2)
        with pytest.raises(ValueError, match="needs a network: give net=PATH"):
            make_bot(f"ismcts:{option}", game=game)


def test_without_a_player_count_the_first_decision_checks_it():
    bot = make_bot(f"ismcts:net={POLICY['dice']}", game="dice")
    state = positions("dice", 1, 1)[0]
    three = get_game("dice").new_state(get_game("dice").make_config(3), 1)
    assert bot.act(state.view(state.current_player)) in state.legal_actions()
    with pytest.raises(PolicyLoadError, match="this is a 3-player dice game"):
        bot.act(three.view(three.current_player))


# ---------------------------------------------------------------------- determinism
@pytest.mark.parametrize("game", ["keltis", "dice"])
@pytest.mark.parametrize("extra", ["", "rollout=net", "leaf=model,depth=0", "leaf=both"])
def test_same_seed_same_decisions_and_statistics(game, extra):
    """Two guided bots with one seed analyse positions alike, whatever the global random
    generators do in between; the result's statistics agree with its rollouts."""
    found = positions(game, 3, 3)
    a, b = guided(game, extra, seed=5), guided(game, extra, seed=5)
    for state in found:
        view = state.view(state.current_player)
        first = a.analyse(view)
        random.random()
        np.random.rand(3)
        second = b.analyse(view)
        assert first == second
        assert first.action in state.legal_actions()
        assert sum(c.samples for c in first.candidates) == first.rollouts > 0
        assert first.values == [(c.action, c.score) for c in first.candidates if c.score is not None]
        assert first.action == max(first.values, key=lambda av: av[1])[0]
        assert abs(sum(c.prior for c in first.candidates) - 1.0) < 0.05  # the policy's mass is on the ranked
        target = first.policy_target(get_game(game).num_actions)
        assert abs(sum(target) - 1.0) < 1e-9 and all(target[c.action] > 0 for c in first.candidates if c.samples)
    assert a.act(found[0].view(found[0].current_player)) == b.act(found[0].view(found[0].current_player))


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_leaf_both_values_a_leaf_at_the_mean_of_the_value_head_and_the_evaluator(game):
    """Without halving (fewer sampled worlds than a stage) the three leaves see the same
    worlds and rollouts, so every candidate's mean with ``leaf=both`` is the mean of its
    means with ``leaf=value`` and ``leaf=model``."""
    compared = 0
    for state in positions(game, 6, 10):
        view = state.view(state.current_player)
        value, model, both = (guided(game, f"leaf={leaf},stage=100", seed=3).analyse(view)
                              for leaf in ("value", "model", "both"))
        for v, m, b in zip(value.candidates, model.candidates, both.candidates, strict=True):
            assert v.action == m.action == b.action and v.samples == m.samples == b.samples
            if b.mean is not None:
                assert b.mean == pytest.approx((v.mean + m.mean) / 2, abs=1e-9)
                compared += 1
    assert compared >= 4


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_a_sure_policy_plays_its_own_move_unsearched(game):
    """With ``confident=P`` a decision whose most probable legal action has probability
    >= P is the policy's move without a rollout; below P the decision is searched as
    without the option, drawing the same random numbers."""
    sure = unsure = 0
    for state in positions(game, 8, 8):
        view = state.view(state.current_player)
        plain = guided(game, "leaf=both", seed=4).analyse(view)
        if not plain.rollouts:
            continue
        top = max(c.prior for c in plain.candidates)
        below, above = top - 1e-6, min(top + 1e-6, 1.0)
        taken = guided(game, f"leaf=both,confident={below!r}", seed=4).analyse(view)
        first = min(c.action for c in plain.candidates if c.prior == top)
        assert taken.sure and taken.rollouts == 0 and taken.action == first
        assert taken.values == [(first, next(c.rank for c in taken.candidates if c.action == first))]
        sure += 1
        if above > top:
            searched = guided(game, f"leaf=both,confident={above!r}", seed=4).analyse(view)
            assert searched == plain and not searched.sure
            unsure += 1
    assert sure >= 3 and unsure >= 3


def test_the_unguided_search_reports_what_it_played():
    """Without a network the result carries no priors and ``search`` still returns the
    action with the survivors' scores."""
    state = positions("keltis", 4, 1)[0]
    view = state.view(state.current_player)
    bot, again = make_bot("ismcts:iterations=24", seed=2), make_bot("ismcts:iterations=24", seed=2)
    result = bot.analyse(view)
    assert all(c.prior is None for c in result.candidates)
    assert again.search(view) == (result.action, result.values)


# ---------------------------------------------------------------------- views only
def test_guided_card_search_decides_from_the_view_not_the_hidden_cards():
    """The real state and one that differs only in what player 0 cannot see (the other
    hand, the draw pile, the removed cards, dealt anew) give the same analysis."""
    compared = 0
    for state in positions("keltis", 12, 12):
        if state.current_player != 0:
            continue
        other = keltis.sample_state(state.view(0), random.Random(state.turn))
        assert other.hands[1] != state.hands[1] and other.view(0) == state.view(0)
        results = [guided("keltis", seed=4).analyse(s.view(0)) for s in (state, other)]
        assert results[0] == results[1]
        compared += 1
    assert compared >= 3


def test_guided_dice_search_decides_from_the_view_not_the_future_dice():
    """Two games in one position whose future dice differ give the same analysis."""
    from dice_helpers import position

    markers = {0: {"red": 3, "blue": 5}, 1: {"green": 4, "yellow": 2}}
    states = [position(markers=markers, stones={0: 1}, phase="reroll", dice=("red", "red", "blue", "pink", "stone"),
                       turn=8, seed=s) for s in (1, 2)]
    assert states[0].view(0) == states[1].view(0)
    futures = [s.clone() for s in states]
    for s in futures:
        s.apply(dice.string_to_action("reroll 1,2,3,4,5"))
    assert futures[0].dice != futures[1].dice
    results = [guided("dice", "rollout=net", seed=6).analyse(s.view(0)) for s in states]
    assert results[0] == results[1]


# ---------------------------------------------------------------------- the value head
def test_the_value_head_predicts_outcomes_better_than_their_mean():
    """On held-out positions of games the critic never saw (heuristic against heuristic,
    fresh seeds), the shipped dice critic's squared error on the final ``win`` reward of
    the player to act is below that of always guessing the mean reward of other games."""
    policy = load_policy(POLICY["dice"])
    descriptor = get_game("dice")
    encoder = descriptor.make_encoder(2, policy.info.features)
    bots = [make_bot("heuristic", seed=s, game="dice") for s in (0, 1)]

    def play(seed: int) -> tuple[list, list[float]]:
        state = descriptor.new_state(descriptor.make_config(2), seed)
        rows, seats = [], []
        while not state.is_over:
            p = state.current_player
            if len(state.legal_actions()) > 1:
                rows.append(encoder.encode(state.view(p)))
                seats.append(p)
            state.apply(bots[p].act(state.view(p)))
        rewards = final_rewards(state.scores(), "win")
        return rows, [rewards[p] for p in seats]

    fit = [r for seed in range(1000, 1030) for r in play(seed)[1]]
    held = [play(seed) for seed in range(2000, 2030)]
    rows = [row for r, _ in held for row in r]
    outcomes = np.array([o for _, game in held for o in game], dtype=np.float64)
    values = policy.values(np.stack(rows)).astype(np.float64)
    mean = float(np.mean(fit))
    assert values.shape == outcomes.shape
    assert np.mean((values - outcomes) ** 2) < 0.9 * np.mean((mean - outcomes) ** 2)


@pytest.mark.slow
def test_the_numpy_value_is_sb3s():
    """The critic run in numpy gives SB3's own value of the same observations."""
    torch = pytest.importorskip("torch")
    sb3 = pytest.importorskip("sb3_contrib")
    model = sb3.MaskablePPO.load(POLICY["dice"], device="cpu")
    policy = load_policy(POLICY["dice"])
    obs = np.stack([get_game("dice").make_encoder(2).encode(s.view(s.current_player))
                    for s in positions("dice", 9, 6)])
    with torch.no_grad():
        expected = model.policy.predict_values(torch.as_tensor(obs)).numpy()[:, 0]
    assert np.allclose(policy.values(obs), expected, atol=1e-5)
    # a batch, its rows one by one, and the stack of rows the search uses: one network
    assert np.allclose(policy(obs), np.stack([policy(row) for row in obs]), rtol=1e-5, atol=1e-4)
    assert np.allclose(policy.values(obs[:, None, :])[:, 0], expected, atol=1e-5)


# ---------------------------------------------------------------------- metadata
def test_the_metadata_records_what_the_value_estimates(tmp_path):
    path = tmp_path / "p.zip"
    path.write_bytes(POLICY["dice"].read_bytes())
    old = read_policy_info(path)  # a format-1 file: the win reward is assumed
    assert (old.value_recorded, old.value_target) == (False, DEFAULT_VALUE_REWARD) == (False, "win")
    info = write_policy_info(path, "dice", 2, value_reward="score")
    meta = json.loads(zipfile.ZipFile(path).read(INFO_MEMBER))
    assert meta["format"] == 2 < INFO_FORMAT and meta["value"] == {"reward": "score"}  # 3 only names relabellings
    assert read_policy_info(path) == info and info.value_target == "score"
    with pytest.raises(ValueError, match="reward must be one of 'win', 'score'"):
        write_policy_info(path, "dice", 2, value_reward="margin")
    # the search converts a score value with the score scale, a win value with win_bonus + value_points
    assert make_bot(f"ismcts:net={path}", game="dice", num_players=2).value_scale == 50.0
    bot = make_bot(f"ismcts:net={POLICY['dice']},win_bonus=4", game="dice", num_players=2)
    assert bot.value_scale == 4 + type(bot).value_points


@pytest.mark.parametrize(("value", "version"), [({"reward": "margin"}, 2), ("win", 2), ({"reward": "win"}, 1)])
def test_a_value_entry_of_the_wrong_shape_is_refused(tmp_path, value, version):
    with zipfile.ZipFile(POLICY["dice"]) as zf:
        meta = json.loads(zf.read(INFO_MEMBER))
        members = [(item, zf.read(item.filename)) for item in zf.infolist() if item.filename != INFO_MEMBER]
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as out:
        for item, data in members:
            out.writestr(item, data)
        out.writestr(INFO_MEMBER, json.dumps({**meta, "format": version, "value": value}))
    with pytest.raises(PolicyLoadError, match="value must be"):
        read_policy_info(path)


# ---------------------------------------------------------------------- unusable network output
#: sampled worlds a test search may draw before it counts as running away (its budgets need far fewer)
RUNAWAY = 500


def bounded(bot: SearchBot) -> list[int]:
    """Count the bot's sampled worlds (the search loop draws one per pass), failing the test
    past :data:`RUNAWAY`: a loop that would spin forever ends here instead of hanging."""
    drawn = [0]
    sample = bot.sample_state

    def counted(view, rng):
        drawn[0] += 1
        assert drawn[0] <= RUNAWAY, f"the search drew {drawn[0]} worlds on a budget of a few: it would spin forever"
        return sample(view, rng)

    bot.sample_state = counted
    return drawn


def decision(game: str):
    """A view where the player to act has a choice."""
    state = positions(game, 3, 1)[0]
    return state.view(state.current_player)


@pytest.mark.parametrize("game", ["keltis", "dice"])
@pytest.mark.parametrize(("bad", "problem"), [(np.nan, "hold NaN values"), (np.inf, r"hold \+inf values"),
                                              (-np.inf, "are all -inf")])
@pytest.mark.parametrize("budget", ["iterations=12", "seconds=30"])
def test_nan_priors_at_run_time_stop_the_guided_search_with_an_error_not_a_hang(game, bad, problem, budget):
    """Finite weights can still overflow: priors that are not numbers left no candidate and
    the search loop spun forever (with seconds=, until the limit, then an IndexError)."""
    from keltis_env.policy import PolicyOutputError

    bot = make_bot(f"ismcts:net={POLICY[game]},{budget},top_k=3", seed=0, game=game, num_players=2)
    drawn = bounded(bot)
    actions = get_game(game).num_actions
    bot.net._logits = lambda obs: np.full(actions, bad)
    message = rf"ismcts: the network '.*{POLICY[game].name}' gave no usable prior for this decision: its logits of " \
              rf"the \d+ legal actions {problem}"
    with pytest.raises(PolicyOutputError, match=message):
        bot.act(decision(game))
    assert drawn == [0], "refused before any rollout"


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_a_network_that_overflows_on_a_view_is_named_not_played(game):
    """Finite weights scaled past float32's range give infinite logits on a real view."""
    from keltis_env.policy import PolicyOutputError

    bot = guided(game)
    drawn = bounded(bot)
    w, b = bot.net.policy.layers[-1]
    huge = (w / np.abs(w).max() * np.float32(3e38)).astype(np.float32)
    assert np.isfinite(huge).all()
    bot.net.policy.layers[-1] = (huge, b)
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(PolicyOutputError, match="gave no usable prior for this decision"):
        bot.act(decision(game))
    assert drawn == [0]


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_nan_values_at_the_leaves_stop_the_search_naming_the_value_head(game):
    from keltis_env.policy import PolicyOutputError

    bot = guided(game)
    drawn = bounded(bot)
    bot.net.policy.values = lambda obs: np.full(obs.shape[:-1], np.nan)
    with pytest.raises(PolicyOutputError, match=r"ismcts: the value head of '.*' gave NaN or infinite values for \d+"):
        bot.act(decision(game))
    assert 1 <= drawn[0] <= RUNAWAY


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_nan_logits_in_net_rollouts_stop_the_search_not_play_a_random_move(game):
    """rollout=net: the root's prior is usable, the rollouts' logits are NaN."""
    from keltis_env.policy import PolicyOutputError

    bot = guided(game, "rollout=net,leaf=model")
    drawn = bounded(bot)
    real, calls = bot.net._logits, [0]

    def first_real_then_nan(obs):
        calls[0] += 1
        return real(obs) if calls[0] == 1 else np.full(get_game(game).num_actions, np.nan)

    bot.net._logits = first_real_then_nan
    with pytest.raises(PolicyOutputError, match=r"gave no usable move in a rollout \(rollout=net\): .* hold NaN"):
        bot.act(decision(game))
    assert 1 <= drawn[0] <= RUNAWAY


@pytest.mark.parametrize("game", ["keltis", "dice"])
@pytest.mark.parametrize("budget", ["iterations=24", "seconds=30"])
def test_ranked_values_that_are_not_numbers_stop_the_search_instead_of_spinning(game, budget):
    """Without a network too: a ranker whose values are NaN leaves no candidate to search."""
    bot = make_bot(f"ismcts:{budget}", seed=0, game=game, num_players=2)
    drawn = bounded(bot)
    bot.model.candidates = lambda view, root: [(int(a), float("nan")) for a in view.legal_actions]
    with pytest.raises(ValueError, match=r"ismcts: no candidate to search: the ranked values of the legal actions "
                                         r"are not numbers \(\d+: nan"):
        bot.act(decision(game))
    assert drawn == [0]
    with pytest.raises(ValueError, match="a search needs at least one candidate, got none"):
        bot._search(decision(game), None, [])
    assert drawn == [0]
