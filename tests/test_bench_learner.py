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
