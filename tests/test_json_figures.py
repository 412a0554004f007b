"""The training jobs write standard JSON: a NaN or an infinity among the measured figures
(a budget's result, a run's record) is refused with one line naming the file and the key,
and no file is written, rather than a bare ``NaN`` that strict JSON readers refuse."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from training.common.jsonfile import finite_json


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan"), np.float64("inf")])
def test_a_budget_result_with_a_nan_figure_is_refused_naming_the_key_and_not_written(tmp_path, bad):
    from training.budget.results import write

    data = {"kind": "keltis-budget", "seeds": [{"seed": 0, "scores": {"random": {"win_rate": 0.5}}},
                                                {"seed": 1, "scores": {"random": {"win_rate": bad}}}]}
    path = tmp_path / "result.json"
    with pytest.raises(ValueError) as caught:
        write(data, path)
    message = str(caught.value)
    assert "\n" not in message
    assert f"cannot write {path}: seeds[1].scores.random.win_rate is {float(bad)!r}" in message
    assert "finite numbers only" in message
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_a_budget_result_of_finite_figures_is_written_as_before(tmp_path):
    from training.budget.results import write

    data = {"seeds": [{"win_rate": 0.25, "games": 8, "ok": True, "none": None}], "mean": np.float64(0.5).item()}
    write(data, tmp_path / "result.json")
    assert json.loads((tmp_path / "result.json").read_text()) == data


def test_a_run_record_with_a_nan_timing_is_refused_and_the_old_record_kept(tmp_path):
    from training.sb3.run_folder import finish_meta

    (tmp_path / "run.json").write_text('{"seed": 0}')
    with pytest.raises(ValueError, match=r"learning_s is nan, and JSON holds finite numbers only"):
        finish_meta(tmp_path, learning_s=math.nan)
    assert json.loads((tmp_path / "run.json").read_text()) == {"seed": 0}


def test_numpy_figures_that_json_converts_are_checked_too():
    assert finite_json({"x": np.float32(0.5)}, "f", default=float) == '{"x": 0.5}'
    with pytest.raises(ValueError, match=r"cannot write f: x\[2\] is nan"):
        finite_json({"x": [1, 2.0, np.float32("nan")]}, "f", default=float)


def test_a_runs_report_writes_a_figure_that_was_not_measured_as_null():
    """RLlib reports a NaN mean return for an iteration in which no episode ended: the run's
    report says null there instead of stopping the run."""
    from training.common.jsonfile import finite_json

    text = finite_json({"last": {"main_return": float("nan"), "steps": 3}, "curve": [1.0, float("inf")]}, "report",
                       missing_as_null=True)
    assert json.loads(text) == {"last": {"main_return": None, "steps": 3}, "curve": [1.0, None]}
