"""LEADERBOARD.md: up to date with the committed scorecards, and how it renders rows,
quick marks and the learning-budget track."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from benchmark_helpers import tiny_protocol

from keltis_env.benchmark import BenchmarkError, score
from keltis_env.benchmark.leaderboard import COMMAND, LEADERBOARD, render
from keltis_env.core.recorded_paths import recorded_path


def test_leaderboard_is_up_to_date() -> None:
    assert LEADERBOARD.read_text(encoding="utf-8") == render(), f"LEADERBOARD.md is out of date: run {COMMAND}"


def test_rows_and_budget_section(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=2)
    results = tmp_path / "results"
    (results / "dice-2p").mkdir(parents=True)
    text = render(folder, results)
    assert "## dice-2p" in text and "No scorecards yet." in text
    assert "## Learning-budget track" in text and "No learning-budget results yet" in text

    quick = score("heuristic", "dice-2p", quick=True, protocol=folder, workers=1, progress=False,
                  command="keltis ladder heuristic --track dice-2p --quick")
    quick.write_json(results / "dice-2p" / "heuristic.quick.json")
    full = score("random", "dice-2p", protocol=folder, workers=1, progress=False)
    full.write_json(results / "dice-2p" / "random.json")
    budget = {
        "kind": "keltis-budget-result", "schema": 2, "config": "configs/train/scratch.yaml", "algorithm": "sb3-ppo",
        "track": "dice-2p", "budget_decisions": 2e6, "command": "python -m training.budget --config x --seeds 2",
        "seeds": [{"seed": s, "decisions": 2000000, "teacher_decisions": 1000, "scorecard": card.to_dict()}
                  for s, card in ((0, quick), (1, full))],
    }
    (results / "budget").mkdir()
    (results / "budget" / "scratch.json").write_text(json.dumps(budget))
    assert "learning curve" not in render(folder, results)
    (results / "budget" / "scratch.png").write_bytes(b"")  # the curves training.budget draws next to the result
    text = render(folder, results)
    # outside the repository, linked relative to it all the same
    assert f"- each seed's learning curve: [scratch.png]({recorded_path(results / 'budget' / 'scratch.png')})" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `heuristic` *quick* |") and "`keltis ladder heuristic --track dice-2p --quick`" \
        in rows[0]
    assert rows[1].startswith("| `random` |") and "(the Python API)" in rows[1]
    assert "### configs/train/scratch.yaml on dice-2p, 2,000,000 decisions (sb3-ppo)" in text
    # the comparison table: one line per result, the means over its seeds
    summary = [line for line in text.splitlines() if line.startswith("| dice-2p | 2,000,000 |")]
    means = [f"{50 * (quick.rung(r.rung).win_rate + full.rung(r.rung).win_rate):.1f}%" for r in quick.rungs]
    values = [quick.rating.value, full.rating.value] if quick.rating and full.rating else []
    rating = f"{sum(values) / 2:.0f}" if values and None not in values else "; ".join(
        c.rating.text() if c.rating else "not rated" for c in (quick, full))
    assert summary == [f"| dice-2p | 2,000,000 | `configs/train/scratch.yaml` | 2 | 1,000 | {' | '.join(means)} | "
                       f"{rating} |"]
    assert "2,000,000 decisions of the learning policy per seed; 2 seeds; teacher/imitation decisions 2,000" in text
    assert "| heuristic |" in text and "seed 0: " in text and "seed 1: " in text

    for schema in (1, 3):  # 1 named the training config "recipe"
        (results / "budget" / "scratch.json").write_text(json.dumps({**budget, "schema": schema}))
        with pytest.raises(BenchmarkError, match=f"not a learning-budget result of schema 2 .*schema {schema}"):
            render(folder, results)
    shutil.rmtree(results / "budget")
    other = tiny_protocol(tmp_path / "q", deals=3)  # another protocol file: its scorecards cannot be mixed
    with pytest.raises(BenchmarkError, match="was made under another protocol file"):
        render(other, results)
