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
