"""The dense ``"shaped"`` reward (potential-based on the score margin) and the learner's
``turn_cap``: shaped rewards telescope to the ``"score"`` reward in both games for 2-4
players (also when a game is cut at its turn cap), an action that changes no score pays
nothing (a discard taken back pays 0), and a game cut at the cap can end an episode as
terminated at the standings."""

from __future__ import annotations

import numpy as np
import pytest

from keltis_env import keltis_dice_v0, keltis_v0
from keltis_env.core.game import get_game
from keltis_env.core.match import Match
from keltis_env.core.rewards import final_rewards, potentials
from keltis_env.envs.learner import KeltisLearnerEnv

MODULES = {"keltis": keltis_v0, "dice": keltis_dice_v0}
CASES = [(game, n) for game in MODULES for n in (2, 3, 4)]


def play_aec(game: str, n: int, seed: int, reward: str, **options):
    """A game of random legal moves (the moves drawn from ``seed``); every agent's return,
    the final scores, and per step the rewards and whether every score stayed the same."""
    env = MODULES[game].env(num_players=n, reward=reward, **options)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    steps = []
    while env.agents:
        agent = env.agent_selection
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        before = list(env.unwrapped.state_.scores())
        mask = env.observe(agent)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        for a in env.possible_agents:
            returns[a] += env.rewards[a]
        after = list(env.unwrapped.state_.scores())
        steps.append((dict(env.rewards), before == after))
    scores = list(env.unwrapped.state_.scores())
    return returns, scores, steps


@pytest.mark.parametrize(("game", "n"), CASES)
def test_shaped_returns_telescope_to_the_score_reward(game, n) -> None:
    for seed in range(3):
        shaped, scores, _ = play_aec(game, n, seed, "shaped")
        score, same_scores, _ = play_aec(game, n, seed, "score")
        assert same_scores == scores  # the same game
        expected = final_rewards(scores, "score")
        for i, agent in enumerate(sorted(shaped)):
            assert shaped[agent] == pytest.approx(expected[i], abs=1e-9)
            assert score[agent] == pytest.approx(expected[i], abs=1e-9)


@pytest.mark.parametrize(("game", "n"), CASES)
def test_shaped_returns_telescope_when_the_game_is_cut_at_its_turn_cap(game, n) -> None:
    shaped, scores, _ = play_aec(game, n, 5, "shaped", max_turns=7)
    expected = final_rewards(scores, "score")
    assert [shaped[a] for a in sorted(shaped)] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("game", "n"), CASES)
def test_an_action_that_changes_no_score_pays_nothing_under_shaped(game, n) -> None:
    _, _, steps = play_aec(game, n, 1, "shaped")
    unchanged = [rewards for rewards, same in steps if same]
    assert unchanged, "some actions change no score"
    assert all(all(r == 0.0 for r in rewards.values()) for rewards in unchanged)
    assert any(any(r != 0.0 for r in rewards.values()) for rewards, same in steps if not same)


def test_discards_taken_back_pay_nothing() -> None:
    # the stalling loop: each player discards and takes a card back from a discard pile
    # (the deck when none can be taken), so the draw pile lasts and no score moves
    spec = get_game("keltis")
    game = spec.record_cls
    state = spec.new_state(spec.make_config(num_players=2), 3)
    match = Match(spec, state, reward="shaped")
    paid, taken_back = [], 0
    for _ in range(12):
        discard = next(a for a in state.legal_actions() if game.action_to_string(a).startswith("discard"))
        match.step(discard)
        paid.append(match.take_rewards())
        draws = [a for a in state.legal_actions() if game.action_to_string(a).startswith("draw ")]
        back = [a for a in draws if game.action_to_string(a) != "draw deck"]
        taken_back += bool(back)
        match.step((back or draws)[0])
        paid.append(match.take_rewards())
    assert taken_back >= 5
    assert paid == [[0.0, 0.0]] * 24


def test_take_rewards_pays_each_change_once_and_due_rewards_changes_nothing() -> None:
    spec = get_game("dice")
    state = spec.new_state(spec.make_config(num_players=3), 0)
    match = Match(spec, state, reward="shaped")
    start = potentials(state.scores())
    total = [0.0, 0.0, 0.0]
    rng = np.random.default_rng(0)
    while not match.over:
        match.step(int(rng.choice(state.legal_actions())))
        due = match.due_rewards()
        assert match.due_rewards() == due  # looking changes nothing
        assert match.take_rewards() == due
        total = [t + d for t, d in zip(total, due, strict=True)]
    assert match.take_rewards() == [0.0, 0.0, 0.0]  # the end is paid once
    final = potentials(state.scores())
    assert total == pytest.approx([f - s for f, s in zip(final, start, strict=True)], abs=1e-9)


@pytest.mark.parametrize(("game", "n"), CASES)
def test_the_learners_shaped_return_is_its_score_reward(game, n) -> None:
    returns = {}
    for reward in ("shaped", "score"):
        env = KeltisLearnerEnv(num_players=n, game=game, reward=reward, opponents="random", seat=n - 1)
        env.reset(seed=4)
        rng = np.random.default_rng(4)
        total, done = 0.0, False
        while not done:
            legal = np.flatnonzero(env.action_masks())
            _, r, terminated, truncated, info = env.step(int(rng.choice(legal)))
            total += r
            done = terminated or truncated
        returns[reward] = (total, info["scores"])
    assert returns["shaped"][1] == returns["score"][1]
    assert returns["shaped"][0] == pytest.approx(returns["score"][0], abs=1e-9)


def test_turn_cap_end_ends_the_episode_as_terminated_at_the_standings() -> None:
    for turn_cap, expected in (("truncate", (False, True)), ("end", (True, False))):
        env = KeltisLearnerEnv(opponents="random", seat=0, max_turns=3, turn_cap=turn_cap)
        env.reset(seed=0)
        terminated = truncated = False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        assert (terminated, truncated) == expected and info["end"] == "truncated"
        assert reward == final_rewards(info["scores"], "win")[0]
    with pytest.raises(ValueError, match="turn_cap must be one of 'truncate', 'end'"):
        KeltisLearnerEnv(turn_cap="bootstrap")


def test_a_search_leaf_adds_the_potential_to_a_shaped_value_head(tmp_path, monkeypatch) -> None:
    """A value head trained on ``"shaped"`` estimates the return still to come: the search
    values a leaf at the potential so far plus that estimate (in score points). With a value
    head that says 0 everywhere, a ``"score"`` network values every leaf at 0 and a
    ``"shaped"`` one at the leaf's score margin."""
    from pathlib import Path

    from keltis_env.bots import make_bot
    from keltis_env.bots.net_guide import NetGuide
    from keltis_env.policy.format import write_policy_info

    monkeypatch.setattr(NetGuide, "points_of", lambda self, rows: [0.0] * len(rows))
    source = Path(__file__).resolve().parent.parent / "policies" / "dice_2p.zip"
    searches = {}
    for reward in ("score", "shaped"):
        path = tmp_path / f"{reward}.zip"
        path.write_bytes(source.read_bytes())
        write_policy_info(path, "dice", 2, value_reward=reward)
        searches[reward] = make_bot(f"ismcts:net={path},leaf=value,iterations=24,top_k=4,stage=100", seed=1,
                                    game="dice", num_players=2)
    spec = get_game("dice")
    state = spec.new_state(spec.make_config(num_players=2), 2)
    bot = make_bot("heuristic", seed=0, game="dice")
    means: dict[str, list[float]] = {"score": [], "shaped": []}
    while not state.is_over and len(means["shaped"]) < 20:
        view = state.view(state.current_player)
        for reward, search in searches.items():
            means[reward] += [c.mean for c in search.analyse(view).candidates if c.samples]
        state.apply(bot.act(view))
    assert means["score"] and all(m == 0.0 for m in means["score"])
    assert any(m != 0.0 for m in means["shaped"])


@pytest.mark.slow
def test_the_stock_trainer_example_trains_on_the_learner_options_and_reports_a_win_rate(tmp_path) -> None:
    """examples/stock_maskable_ppo.py, the measurement of what a user's own trainer reaches,
    at the smallest scale: one rollout of stock MaskablePPO (8 x 2048 steps), then 4 games."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "stock.json"
    done = subprocess.run([sys.executable, "examples/stock_maskable_ppo.py", "--steps", "64", "--games", "4",
                           "--game", "dice", "--json", str(out)], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert (record["reward"], record["turn_cap"], record["games"]) == ("shaped", "end", 4)
    assert 0.0 <= record["win_rate"] <= 1.0 and "against heuristic over 4 games" in done.stdout
