"""An evaluation whose every agent is a card-game bot with a kernel plays its games whole
inside the kernels (:mod:`keltis_env.evaluation.compiled_games`), and they are the games
the match loop plays with the Python bots: the same moves, scores, ends and records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from keltis_env.bots import make_bot
from keltis_env.evaluation import compiled_games, evaluate
from keltis_env.evaluation.lockstep import COMPILED_GROUP_SIZE, GROUP_SIZE, play_group, task_group_size
from keltis_env.evaluation.play import forget_bots, make_tasks, play_task

numba = pytest.importorskip("numba")

P2 = "ppo:policies/keltis_2p.zip"


def _timeless(result: Any) -> Any:
    """A game result without its measured times (which no two runs share)."""
    return dataclasses.replace(result, think_seconds=())


def _python(spec: str) -> str:
    """``spec`` deciding through the Python code (the reference)."""
    return f"{spec},backend=python" if ":" in spec else f"{spec}:backend=python"


def _tasks(specs: list[str], deals: int, compiled: bool, seed: int = 4, records: str | None = None,
           move_seconds: float | None = 60.0, **options: Any) -> Any:
    return make_tasks(specs, deals, seed, "keltis", options, records, move_seconds, compiled=compiled)


def _reference(specs: list[str], deals: int, **kw: Any) -> list[Any]:
    """The games played one at a time by the match loop with the Python bots."""
    forget_bots()
    try:
        return [play_task(t) for t in _tasks([_python(s) for s in specs], deals, False, **kw)]
    finally:
        forget_bots()


def _whole(specs: list[str], deals: int, **kw: Any) -> list[Any]:
    forget_bots()
    try:
        return list(play_group(list(_tasks(specs, deals, True, **kw))))
    finally:
        forget_bots()


@pytest.mark.parametrize(("specs", "deals", "options"), [
    (["heuristic", "planner"], 8, {}),
    (["planner", "heuristic:paths=3,gap=3"], 4, {}),
    (["heuristic", "planner", "heuristic:open_cards=2"], 3, {}),
    (["planner", "heuristic", "planner", "heuristic"], 2, {}),
    (["heuristic", "planner"], 3, {"max_turns": 12}),
    (["heuristic", "planner"], 3, {"tile_layout": "random"}),
])
def test_games_played_whole_by_the_kernels_are_the_match_loops_games_with_the_python_bots(
        specs: list[str], deals: int, options: dict[str, Any]) -> None:
    reference = _reference(specs, deals, **options)
    whole = _whole(specs, deals, **options)
    assert [r.index for r in whole] == list(range(len(reference)))
    assert [_timeless(r) for r in whole] == [_timeless(r) for r in reference]
    if options.get("max_turns"):
        assert all(r.truncated and r.end == "truncated" for r in whole)
    for r in whole:  # a game's time shared by decisions
        assert sum(r.think_seconds) > 0
        assert all(abs(t / sum(r.think_seconds) - d / sum(r.decisions)) < 1e-9
                   for t, d in zip(r.think_seconds, r.decisions, strict=True))


def test_games_played_whole_keep_the_match_loops_records(tmp_path: Path) -> None:
    specs = ["heuristic", "planner"]
    alone, whole = tmp_path / "alone", tmp_path / "whole"
    alone.mkdir()
    whole.mkdir()
    forget_bots()
    try:  # the same agents, their records naming them alike, one at a time under the match loop
        for task in _tasks(specs, 3, True, records=str(alone)):
            play_task(task)
    finally:
        forget_bots()
    _whole(specs, 3, records=str(whole))
    names = sorted(p.name for p in alone.iterdir())
    assert len(names) == 6 and names == sorted(p.name for p in whole.iterdir())
    for name in names:
        assert json.loads((alone / name).read_text()) == json.loads((whole / name).read_text())


def test_a_game_that_took_longer_than_a_move_may_is_played_again_by_the_match_loop_which_judges_each_move() -> None:
    specs = ["heuristic", "planner"]
    reference = _reference(specs, 2, move_seconds=1e-9)
    whole = _whole(specs, 2, move_seconds=1e-9)
    assert all(r.end == "time" and r.turns == 0 for r in whole)
    assert [_timeless(r) for r in whole] == [_timeless(r) for r in reference]


def test_without_the_kernels_the_games_are_played_by_the_match_loop(monkeypatch: Any) -> None:
    import importlib

    real = importlib.import_module

    def no_kernels(name: str, *args: Any) -> Any:
        if name.endswith(".kernels_match"):
            raise ImportError("the compiled kernels need numba")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_kernels)
    monkeypatch.setattr(compiled_games, "_TABLES", {})
    played: list[int] = []
    real_play = compiled_games.play_task

    def spy(task: Any, *args: Any) -> Any:
        played.append(task.index)
        return real_play(task, *args)

    monkeypatch.setattr(compiled_games, "play_task", spy)
    whole = _whole(["heuristic", "planner"], 2)
    assert played == [0, 1, 2, 3]
    assert [_timeless(r) for r in whole] == [_timeless(r) for r in _reference(["heuristic", "planner"], 2)]


def test_only_evaluations_of_kernel_bots_playing_through_their_kernels_are_played_whole() -> None:
    def whole(specs: list[Any], compiled: bool = True, game: str = "keltis") -> bool:
        return compiled_games.playable(make_tasks(specs, 1, 0, game, {}, None, compiled=compiled)[0])

    assert whole(["heuristic", "planner"]) and whole(["planner:backend=compiled", "heuristic:paths=2", "planner"])
    assert not whole(["heuristic", "planner"], compiled=False)  # too few games to load the kernels
    assert not whole(["heuristic:backend=python", "planner"])  # the Python code asked for
    assert not whole(["heuristic", "random"]) and not whole(["heuristic", "ismcts"]) and not whole([P2, "heuristic"])
    assert not whole(["heuristic", make_bot("planner")])  # a bot object plays as it is
    assert not whole(["heuristic", "planner"], game="dice")
    assert not whole(["heuristic", "planner:a=1,a=2"])  # a malformed spec fails where the bot is made
    tasks = make_tasks(["heuristic", "planner"], 1, 0, "keltis", {}, None, compiled=True)
    assert task_group_size(tasks[0]) == COMPILED_GROUP_SIZE
    assert task_group_size(make_tasks([P2, "heuristic"], 1, 0, "keltis", {}, None, compiled=True)[0]) == GROUP_SIZE
    assert task_group_size(make_tasks(["heuristic", "planner"], 1, 0, "keltis", {}, None)[0]) == 1


def test_an_evaluation_in_workers_plays_the_kernels_games_whole_and_they_are_the_python_bots_games(
        monkeypatch: Any) -> None:
    from keltis_env.evaluation import play

    python = evaluate([_python("heuristic"), _python("planner")], games=8, seed=6, workers=1, progress=False)
    monkeypatch.setattr(play, "COMPILED_FROM_GAMES", 2)
    for workers in (1, 2):
        result = evaluate(["heuristic", "planner"], games=8, seed=6, workers=workers, progress=False)
        assert result.agent_specs == ["heuristic", "planner"]
        got = sorted(result.results, key=lambda g: g.index)
        assert [_timeless(g) for g in got] == [_timeless(g) for g in python.results]


# ---------------------------------------------------------------------- ppo agents on the compiled core
P3, P4 = "ppo:policies/keltis_3p.zip", "ppo:policies/keltis_4p.zip"


def _reference_ppo(specs: list[str], deals: int, **kw: Any) -> list[Any]:
    """The games played one at a time by the match loop, the bots through the Python code."""
    return _reference(specs, deals, **kw) if not any(s.startswith("ppo") for s in specs) else _alone(
        [s if s.startswith("ppo") else _python(s) for s in specs], deals, **kw)


def _alone(specs: list[str], deals: int, **kw: Any) -> list[Any]:
    forget_bots()
    try:
        return [play_task(t) for t in _tasks(specs, deals, False, **kw)]
    finally:
        forget_bots()


def _compiled_group(specs: list[str], deals: int, watch: Any = None, **kw: Any) -> list[Any]:
    forget_bots()
    try:
        return sorted(play_group(list(_tasks(specs, deals, True, **kw)), watch), key=lambda r: r.index)
    finally:
        forget_bots()


@pytest.mark.parametrize(("specs", "deals", "options"), [
    ([P2, "heuristic"], 6, {}),
    ([P2 + ",sample=1", "planner"], 4, {}),
    (["planner", P2 + ",sample=1,temperature=2"], 3, {"max_turns": 15}),
    ([P3, "heuristic:paths=3", "planner"], 2, {}),
    ([P4, "heuristic", P4, "planner"], 1, {}),
])
def test_ppo_games_on_the_compiled_core_are_the_match_loops_games(specs: list[str], deals: int,
                                                                  options: dict[str, Any]) -> None:
    from keltis_env.evaluation.compiled_lockstep import lockstep_playable

    tasks = _tasks(specs, deals, True, **options)
    assert lockstep_playable(tasks[0])
    reference = _reference_ppo(specs, deals, **options)
    together = _compiled_group(specs, deals, **options)
    assert [_timeless(r) for r in together] == [_timeless(r) for r in reference]
    assert all(sum(r.think_seconds) > 0 for r in together)


def test_the_compiled_core_gives_the_network_the_python_encoders_observations_bit_for_bit(monkeypatch: Any) -> None:
    import numpy as np

    from keltis_env.bots.ppo import PPOBot
    from keltis_env.evaluation.lockstep import _play_matches

    seen: list[bytes] = []
    real = PPOBot.batch_logits_each

    def spy(self: Any, obs: Any) -> Any:
        seen.extend(np.asarray(obs, dtype=np.float32).tobytes(order="C")[i:i + obs.shape[1] * 4]
                    for i in range(0, obs.size * 4, obs.shape[1] * 4))
        return real(self, obs)

    monkeypatch.setattr(PPOBot, "batch_logits_each", spy)
    specs = [P2, "heuristic"]
    _compiled_group(specs, 3)
    compiled = sorted(seen)
    seen.clear()
    forget_bots()
    try:  # the same games under the match loops, the Python encoder observing
        list(_play_matches(list(_tasks(specs, 3, True)), None))
    finally:
        forget_bots()
    assert len(compiled) > 100 and compiled == sorted(seen)


def test_a_ppo_share_over_the_limit_loses_that_game_on_time_as_the_move_alone_does(monkeypatch: Any) -> None:
    import time

    from keltis_env.bots.ppo import PPOBot

    slow_each, slow = PPOBot.batch_logits_each, PPOBot.batch_logits

    def each(self: Any, obs: Any) -> Any:
        time.sleep(0.05)
        return slow_each(self, obs)

    def alone(self: Any, obs: Any) -> Any:
        time.sleep(0.05)
        return slow(self, obs)

    monkeypatch.setattr(PPOBot, "batch_logits_each", each)
    monkeypatch.setattr(PPOBot, "batch_logits", alone)
    specs = [P2, "heuristic"]
    reference = _reference_ppo(specs, 2, move_seconds=0.01)
    together = _compiled_group(specs, 2, move_seconds=0.01)
    assert all(r.end == "time" and r.seats[r.forfeit] == 0 for r in together)
    assert [_timeless(r) for r in together] == [_timeless(r) for r in reference]


def test_a_kernel_call_longer_than_a_move_may_take_sends_the_games_to_the_match_loop() -> None:
    specs = [P2, "heuristic"]
    reference = _reference_ppo(specs, 2, move_seconds=1e-9)
    together = _compiled_group(specs, 2, move_seconds=1e-9)
    assert all(r.end == "time" and r.turns == 0 for r in together)
    assert [_timeless(r) for r in together] == [_timeless(r) for r in reference]


def test_a_failing_ppo_agent_on_the_compiled_core_is_named_with_its_seat_and_game(monkeypatch: Any) -> None:
    from keltis_env.bots.ppo import PPOBot
    from keltis_env.evaluation import AgentPlayError

    def broken(self: Any, legal: Any, logits: Any) -> int:
        raise ValueError("no move today")

    monkeypatch.setattr(PPOBot, "choose", broken)
    tasks = _tasks(["heuristic", P2], 2, True)
    with pytest.raises(AgentPlayError) as caught:
        _compiled_group(["heuristic", P2], 2)
    error = caught.value
    assert error.agent == 1 and "raised ValueError: no move today" in str(error)
    assert error.game in range(4) and error.seat == tasks[error.game].seats.index(1)


def test_the_watch_gets_every_action_of_each_ppo_game_as_its_record_holds_them(tmp_path: Path) -> None:
    import multiprocessing

    from keltis_env.core.game import get_game
    from keltis_env.evaluation.workers import Watch

    watch = Watch.new(multiprocessing.get_context("spawn"), slots=4)
    results = _compiled_group([P2, "planner"], 2, watch=watch, records=str(tmp_path))
    for slot, r in enumerate(results):
        data = json.loads((tmp_path / f"game_{r.index:05d}.json").read_text())
        actions = get_game("keltis").record_cls.from_dict(data).actions
        assert watch.actions(slot) == actions and len(actions) == sum(r.decisions)


def test_only_ppo_agents_with_kernel_bots_playing_through_their_kernels_go_on_the_compiled_core() -> None:
    from keltis_env.evaluation.compiled_lockstep import lockstep_playable

    def on_core(specs: list[Any], compiled: bool = True) -> bool:
        return lockstep_playable(make_tasks(specs, 1, 0, "keltis", {}, None, compiled=compiled)[0])

    assert on_core([P2, "heuristic"]) and on_core([P3, "planner", P3]) and on_core(["heuristic:paths=2", P2])
    assert not on_core([P2, "heuristic"], compiled=False)
    assert not on_core([P2, "heuristic:backend=python"]) and not on_core([P2, "random"])
    assert not on_core(["heuristic", "planner"])  # no network: played whole by the kernels
    assert not on_core([P2, make_bot("heuristic")])
    assert not lockstep_playable(make_tasks(["ppo:policies/dice_2p.zip", "heuristic"], 1, 0, "dice", {}, None,
                                            compiled=True)[0])


def test_an_evaluation_of_a_ppo_agent_in_workers_plays_the_python_bots_games(monkeypatch: Any) -> None:
    from keltis_env.evaluation import play

    reference = _reference_ppo([P2, "heuristic"], 5, seed=3)
    monkeypatch.setattr(play, "COMPILED_FROM_GAMES", 2)
    result = evaluate([P2, "heuristic"], games=10, seed=3, workers=2, progress=False)
    got = sorted(result.results, key=lambda g: g.index)
    assert [_timeless(g) for g in got] == [_timeless(r) for r in reference]
