"""``keltis bench --learner``: learner steps/s of the Python learner view and of the compiled
batched step (the ``fast`` extra), measured in the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("numba")


def test_keltis_bench_learner_measures_both_engines_in_one_run(tmp_path: Path) -> None:
    from keltis_env.cli import main

    out = tmp_path / "learner.json"
    args = ["bench", "--learner", "--players", "2", "--repeats", "1", "--seconds", "0.2", "--games", "4"]
    assert main([*args, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert sorted(row["game"] for row in rows) == ["dice", "keltis"]
    for row in rows:
        assert row["players"] == 2 and row["games"] == 4
        assert row["python_steps_per_s"] > 0 and row["compiled_steps_per_s"] > 0
        assert row["ratio"] == pytest.approx(row["compiled_steps_per_s"] / row["python_steps_per_s"])


def test_the_compiled_sampler_draws_every_legal_action_and_nothing_else(tmp_path: Path) -> None:
    import numpy as np

    from keltis_env.cli import main
    from keltis_env.core.kernels import random_legal, seed_generators

    masks = np.zeros((3, 6), np.bool_)
    masks[0, [1, 4]] = True
    masks[1, 5] = True  # row 2: nothing legal
    rng, out, seen = seed_generators(7, 3), np.zeros(3, np.int64), set()
    for _ in range(200):
        random_legal(masks, rng, out)
        assert masks[0, out[0]] and out[1] == 5 and out[2] == -1
        seen.add(int(out[0]))
    assert seen == {1, 4}
    out_json = tmp_path / "learner.json"
    assert main(["bench", "--learner", "--game", "keltis", "--players", "2", "--repeats", "1", "--seconds", "0.2",
                 "--games", "4", "--sampler", "compiled", "--json", str(out_json)]) == 0
    row, = json.loads(out_json.read_text())
    assert row["sampler"] == "compiled" and row["compiled_steps_per_s"] > 0


def test_a_game_without_a_compiled_core_runs_on_python_alone_and_is_skipped_by_name(capsys) -> None:
    from keltis_env.cli import main
    from keltis_env.compiled import has_core

    assert not has_core("toy")  # the test session's plugin game declares no compiled core
    assert main(["bench", "--learner", "--game", "toy", "--repeats", "1", "--seconds", "0.1"]) == 0
    assert "skipped toy: no compiled core (it runs on the Python engine alone)" in capsys.readouterr().out


def test_keltis_bench_learner_without_numba_names_the_extra_and_exits_2(monkeypatch, capsys) -> None:
    import sys

    from keltis_env.cli import main

    for name in [m for m in sys.modules if m.split(".")[-1] in ("kernels", "kernels_batch")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "numba", None)  # an import of numba fails
    assert main(["bench", "--learner", "--repeats", "1", "--seconds", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "keltis bench --learner: the compiled kernels need numba (the 'fast' extra): " \
                  "pip install 'keltis-rl[fast]'"


def test_keltis_bench_learner_against_heuristic_opponents_times_both_compiled_games(tmp_path: Path, capsys) -> None:
    from keltis_env.cli import main

    out = tmp_path / "heuristic.json"
    args = ["bench", "--learner", "--opponents", "heuristic", "--players", "3", "--repeats", "1", "--seconds", "0.2",
            "--games", "4", "--json", str(out)]
    assert main(args) == 0
    rows = json.loads(out.read_text())
    assert sorted(row["game"] for row in rows) == ["dice", "keltis"]
    for row in rows:
        assert row["opponents"] == "heuristic" and row["players"] == 3 and row["compiled_steps_per_s"] > 0
    assert "skipped keltis" not in capsys.readouterr().out


def test_keltis_bench_learner_baseline_alternates_two_checkouts_and_gives_their_ratio(tmp_path: Path) -> None:
    """``--baseline DIR`` times the same loop in DIR (here this checkout itself) and here, in
    separate processes, and writes both medians and their ratio."""
    from keltis_env.cli import main

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "ab.json"
    args = ["bench", "--learner", "--baseline", str(root), "--game", "dice", "--players", "2", "--games", "4",
            "--repeats", "2", "--seconds", "0.2", "--json", str(out)]
    assert main(args) == 0
    (row,) = json.loads(out.read_text())
    assert row["game"] == "dice" and row["players"] == 2 and row["repeats"] == 2
    assert row["baseline_steps_per_s"] > 0 and row["steps_per_s"] > 0
    assert row["ratio_of_medians"] == pytest.approx(row["steps_per_s"] / row["baseline_steps_per_s"])
    assert row["ratio_min"] <= row["ratio_max"]


def test_a_baseline_that_is_not_a_checkout_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    from keltis_env.cli import main

    assert main(["bench", "--learner", "--baseline", str(tmp_path), "--repeats", "1", "--seconds", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "is not a checkout of this project" in err and err.count("\n") == 1
