"""Play stays exactly as the golden files pinned it: the bots', the search's and every shipped
policy's decisions, the scores and the evaluation summary (``tests/golden/make_golden.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
from make_golden import CASES, play  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_play_matches_the_golden_file(case, monkeypatch):
    stem, game, specs, games, seed, options = case
    monkeypatch.chdir(GOLDEN.parents[1])  # the specs name policies/... from the project root
    expected = json.loads((GOLDEN / f"{stem}.json").read_text())
    got = play(game, specs, games, seed, options)
    for want, have in zip(expected["games"], got["games"], strict=True):
        assert have["actions"] == want["actions"], f"{stem}: game {want['index']} took other actions"
        assert have == want
    assert got["summary"] == expected["summary"]


def test_golden_evaluation_is_the_same_with_two_workers(monkeypatch):
    from keltis_env.evaluation import evaluate

    monkeypatch.chdir(GOLDEN.parents[1])
    stem, game, specs, games, seed, options = CASES[7]  # a shipped policy against a bot
    expected = json.loads((GOLDEN / f"{stem}.json").read_text())
    result = evaluate(specs, games=games, seed=seed, workers=2, game=game, progress=False, options=dict(options))
    assert [list(r.scores) for r in result.results] == [g["scores"] for g in expected["games"]]
    assert [a.wins for a in result.agents] == [a["wins"] for a in expected["summary"]["agents"]]
