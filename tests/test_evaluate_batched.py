"""The evaluation's lockstep groups (several games at once, ppo agents sharing forward
passes) and its compiled bots play the games, moves and scores of the games played one at
a time through the Python bots; only the measured times differ."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from keltis_env.bots import make_bot
from keltis_env.core.game import get_game
from keltis_env.evaluation import AgentPlayError, evaluate
from keltis_env.evaluation.lockstep import GROUP_SIZE, batched_spec, group_size, play_group
from keltis_env.evaluation.play import forget_bots, make_bots, make_tasks, play_task, played_spec
from keltis_env.evaluation.workers import Watch, balanced_size

numba = pytest.importorskip("numba")  # the compiled bots' backend; the lockstep groups need none

P2, P3, P4 = "ppo:policies/keltis_2p.zip", "ppo:policies/keltis_3p.zip", "ppo:policies/keltis_4p.zip"
D2, D3, D4 = "ppo:policies/dice_2p.zip", "ppo:policies/dice_3p.zip", "ppo:policies/dice_4p.zip"


def _timeless(result: Any) -> Any:
    """A game result without its measured times (the one thing a lockstep game may change)."""
    return dataclasses.replace(result, think_seconds=())


def _tasks(specs: list[str], games: int, game: str, seed: int = 5, records: str | None = None,
           move_seconds: float | None = 60.0) -> Any:
    return make_tasks(specs, -(-games // len(specs)), seed, game, {}, records, move_seconds)


def _one_at_a_time(tasks: Any) -> list[Any]:
    """The reference: every game alone through play_task (the bots' own act, one view at a time)."""
    forget_bots()
    try:
        return [play_task(t) for t in tasks]
    finally:
        forget_bots()


def _in_lockstep(tasks: Any) -> list[Any]:
    forget_bots()
    try:
        return sorted(play_group(list(tasks)), key=lambda r: r.index)
    finally:
        forget_bots()


@pytest.mark.parametrize(("game", "specs", "games"), [
    ("keltis", [P2, "heuristic:backend=python"], 6),
    ("keltis", [P2 + ",sample=1", "random"], 4),
    ("keltis", [P3, "heuristic:backend=python", P3], 3),
    ("keltis", [P4, "random", "heuristic:backend=python", "random"], 4),
    ("dice", [D2, "heuristic"], 8),
    ("dice", [D3 + ",sample=1,temperature=2", "random", "heuristic"], 6),
    ("dice", [D4, "heuristic", D4, "random"], 8),
])
def test_games_played_in_lockstep_are_the_games_played_one_at_a_time(game: str, specs: list[str],
                                                                       games: int) -> None:
    tasks = _tasks(specs, games, game)
    alone = _one_at_a_time(tasks)
    together = _in_lockstep(tasks)
    assert [_timeless(r) for r in together] == [_timeless(r) for r in alone]
    assert all(sum(r.think_seconds) > 0 for r in together)


def test_games_in_lockstep_keep_the_records_of_games_played_alone(tmp_path: Path) -> None:
    alone, together = tmp_path / "alone", tmp_path / "together"
    alone.mkdir()
    together.mkdir()
    specs = [P2 + ",sample=1", "heuristic:backend=python"]
    _one_at_a_time(_tasks(specs, 4, "keltis", records=str(alone)))
    _in_lockstep(_tasks(specs, 4, "keltis", records=str(together)))
    names = sorted(p.name for p in alone.iterdir())
    assert names == sorted(p.name for p in together.iterdir()) and len(names) == 4
    for name in names:
        assert json.loads((alone / name).read_text()) == json.loads((together / name).read_text())


def test_an_evaluation_of_a_ppo_agent_gives_the_same_games_in_workers_as_one_at_a_time() -> None:
    specs = [P2, "heuristic:backend=python"]
    reference = _one_at_a_time(_tasks(specs, 12, "keltis", seed=3))
    result = evaluate(specs, games=12, seed=3, workers=2, progress=False)
    assert sorted((_timeless(g) for g in result.results), key=lambda r: r.index) == [_timeless(r) for r in reference]


def test_heuristic_and_planner_through_the_kernels_play_the_python_bots_games() -> None:
    python = ["heuristic:backend=python", "planner:backend=python"]
    reference = _one_at_a_time(_tasks(python, 10, "keltis", seed=2))
    tasks = make_tasks(["heuristic", "planner"], 5, 2, "keltis", {}, None, 60.0, compiled=True)
    assert [_timeless(r) for r in _one_at_a_time(tasks)] == [_timeless(r) for r in reference]


def test_an_evaluation_loads_the_kernels_only_when_enough_games_per_process_repay_it(monkeypatch: Any) -> None:
    import keltis_env.bots as bots
    from keltis_env.evaluation import play

    made: list[str] = []
    real = bots.make_bot

    def spy(spec: str, *args: Any, **kwargs: Any) -> Any:
        made.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(bots, "make_bot", spy)
    short = evaluate(["heuristic", "planner"], games=4, seed=1, workers=1, progress=False)
    assert "heuristic:backend=auto" not in made and "heuristic" in made
    assert not play.compiled_pays(199, 2) and play.compiled_pays(200, 2) and play.compiled_pays(100, 1)
    monkeypatch.setattr(play, "COMPILED_FROM_GAMES", 2)
    made.clear()
    long = evaluate(["heuristic", "planner"], games=4, seed=1, workers=1, progress=False)
    assert {"heuristic:backend=auto", "planner:backend=auto"} <= set(made)
    assert long.agent_specs == ["heuristic", "planner"]
    assert [_timeless(g) for g in long.results] == [_timeless(g) for g in short.results]


def test_the_compiled_backend_is_chosen_only_for_bots_whose_backends_decide_alike() -> None:
    assert played_spec("heuristic", "keltis") == "heuristic:backend=auto"
    assert played_spec("planner", "keltis") == "planner:backend=auto"
    assert played_spec("heuristic:paths=3", "keltis") == "heuristic:paths=3,backend=auto"
    assert played_spec("heuristic:backend=python", "keltis") == "heuristic:backend=python"
    assert played_spec("heuristic", "dice") == "heuristic"  # the dice heuristic has no backend
    for spec in ("random", "ismcts", P2):
        assert played_spec(spec, "keltis") == spec
    forget_bots()
    try:
        task = make_tasks(["heuristic", "planner:backend=python"], 1, 0, "keltis", {}, None, compiled=True)[0]
        bots = make_bots(task, None)
        assert {type(b).__name__: b.backend for b in bots} == {"HeuristicBot": "auto", "PlannerBot": "python"}
    finally:
        forget_bots()


def _views(game: str, players: int, count: int, seed: int = 0) -> list[Any]:
    """Views of random positions of several games, each the view of the player to move."""
    descriptor = get_game(game)
    rng = random.Random(seed)
    views: list[Any] = []
    deal = 0
    while len(views) < count:
        state = descriptor.new_state(descriptor.make_config(num_players=players), deal)
        deal += 1
        while not state.is_over and len(views) < count:
            view = state.view(state.current_player)
            if rng.random() < 0.3:
                views.append(view)
            state.apply(rng.choice(list(view.legal_actions)))
    return views


@pytest.mark.parametrize(("spec", "game", "players"), [(P2, "keltis", 2), (P3, "keltis", 3), (D2, "dice", 2)])
def test_each_row_of_a_batch_gets_bit_for_bit_the_logits_of_its_view_alone(spec: str, game: str,
                                                                          players: int) -> None:
    bot = make_bot(spec, game=game, num_players=players)
    views = _views(game, players, 70)
    alone = np.stack([bot.logits(v) for v in views])
    obs = np.stack([bot.encoder.encode(v) for v in views])
    for size in (1, 2, 5, 32, 70):
        for start in range(0, len(views), size):
            assert np.array_equal(bot.batch_logits_each(obs[start:start + size]), alone[start:start + size])


def test_a_twin_shares_the_network_but_keeps_its_own_random_generator_and_encoder() -> None:
    bot = make_bot(P2 + ",sample=1", game="keltis", num_players=2)
    twin = bot.twin()
    assert twin.network_key == bot.network_key and twin.policy is bot.policy
    assert twin.rng is not bot.rng and twin.encoder is not bot.encoder
    bot.seed(7)
    twin.seed(7)
    view = _views("keltis", 2, 1)[0]
    assert [bot.act(view) for _ in range(20)] == [twin.act(view) for _ in range(20)]


def test_only_ppo_spec_strings_make_games_play_in_lockstep() -> None:
    assert batched_spec(P2) and batched_spec(D3 + ",sample=1")
    assert not batched_spec("heuristic") and not batched_spec(make_bot("random"))
    assert group_size([P2, "heuristic"]) == GROUP_SIZE
    assert group_size(["heuristic", "planner"]) == 1
    assert group_size([P2, make_bot("random")]) == 1  # a bot object would be shared by the games at once


def test_groups_come_in_whole_rounds_so_that_no_worker_is_left_with_a_long_tail() -> None:
    assert balanced_size(100, 2, 32) == 25
    assert balanced_size(100, 2, 16) == 13
    assert balanced_size(1000, 2, 32) == 32
    assert balanced_size(10, 4, 32) == 3
    assert balanced_size(50, 2, 1) == 1
    for games, workers in ((100, 2), (1000, 3), (7, 2), (640, 16), (33, 1)):
        size = balanced_size(games, workers, 32)
        groups = -(-games // size)
        rounds = -(-games // (workers * 32))
        assert 1 <= size <= 32 and groups <= workers * rounds  # no more rounds than groups of 32 need


def test_a_batched_move_over_the_time_limit_loses_that_game_on_time_as_a_move_alone_does() -> None:
    specs = ["heuristic:backend=python", P2]
    tasks = _tasks(specs, 4, "keltis", move_seconds=1e-9)
    alone = _one_at_a_time(tasks)
    together = _in_lockstep(tasks)
    assert all(r.end == "time" for r in together)
    assert [_timeless(r) for r in together] == [_timeless(r) for r in alone]
    # every game is lost by its first mover; in the rotation where the ppo agent moves first, by it
    assert {r.seats[r.forfeit] for r in together} == {0, 1}


def test_a_failing_batched_agent_stops_the_group_naming_the_agent_its_seat_and_the_game(monkeypatch: Any) -> None:
    from keltis_env.bots.ppo import PPOBot

    def broken(self: Any, legal: Any, logits: Any) -> int:
        raise ValueError("no move today")

    monkeypatch.setattr(PPOBot, "choose", broken)
    tasks = _tasks(["heuristic:backend=python", P2], 4, "keltis")
    with pytest.raises(AgentPlayError) as caught:
        _in_lockstep(tasks)
    error = caught.value
    assert error.agent == 1 and "raised ValueError: no move today" in str(error)
    assert error.game in range(4) and error.seat == tasks[error.game].seats.index(1)


def test_a_watch_keeps_the_actions_and_times_of_each_game_of_a_group_apart() -> None:
    import multiprocessing

    watch = Watch.new(multiprocessing.get_context("spawn"), slots=3)
    watch.reset(3)
    watch.log(0, 1, 5, 0.5)
    watch.log(2, 0, 7, 0.25)
    watch.log(2, 0, 9)
    watch.log(0, 1, None, 0.5)  # a move that failed: its time, no action
    watch.deciding(1, 0, 2)
    assert watch.slot == 2 and watch.seat == 1 and watch.agent == 0 and watch.move_started > 0
    assert watch.actions() == [7, 9] and watch.actions(0) == [5] and watch.actions(1) == []
    assert watch.think(2, 0) == [0.0, 1.0] and watch.think(2) == [0.25, 0.0]
    watch.done()
    assert watch.seat is None and watch.move_started == 0


def test_a_game_of_a_group_whose_worker_is_stopped_over_the_limit_is_lost_on_time_and_the_others_replayed() -> None:
    stalls = f"py:{Path(__file__).parent / 'lockstep_agents.py'}:StallsOnce"
    specs = [P2, stalls]
    assert group_size(specs) == GROUP_SIZE
    # in process the stalled move is judged when it returns; in workers, its worker is
    # stopped from outside (the agent ignores the interruption): the same games either way
    one = evaluate(specs, games=4, seed=3, workers=1, progress=False, move_seconds=0.5)
    two = evaluate(specs, games=4, seed=3, workers=2, progress=False, move_seconds=0.5)
    assert [_timeless(g) for g in sorted(two.results, key=lambda g: g.index)] == [_timeless(g) for g in one.results]
    assert all(g.end == "time" and g.seats[g.forfeit] == 1 and g.turns > 0 for g in one.results)
