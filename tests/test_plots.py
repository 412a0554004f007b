"""The training pictures (docs/scratch_learning_curve.png, docs/exit_2p_curve.png and every
run's): legends beside the plots, never over the data; 0% lines above the axis; whole rounds."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]


def exit_data(rounds: int) -> dict[str, Any]:
    zero = {"win_rate": 0.0, "win_rate_ci": [0.0, 0.04]}
    return {"name": "x", "game": "keltis", "num_players": 2, "opponent": "ismcts", "seeds": [7],
            "baseline": {"network": {"7": zero}, "search": {"7": zero}},
            "rounds": [{"round": k, "eval": {"network": {"7": zero}, "search": {"7": zero}}, "gate": zero}
                       for k in range(rounds)]}


def legends_outside_the_plots(fig: Any) -> None:
    """Every legend of ``fig`` lies to the right of every plot area: it covers no data."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    right = max(ax.get_window_extent(renderer).x1 for ax in fig.axes)
    for legend in legends:
        assert legend.get_window_extent(renderer).x0 >= right, "a legend overlaps a plot area"


def rate_axes_show_zero_above_the_axis(axes: list[Any]) -> None:
    for ax in axes:
        low, high = ax.get_ylim()
        assert low < 0 < 1 < high, f"y-range {low, high}: a 0% or 100% line would sit on the axis"


@pytest.mark.parametrize("rounds", [1, 2, 4, 7])
def test_exit_curve_has_whole_round_ticks_a_margin_below_zero_and_its_legend_outside(rounds: int) -> None:
    from matplotlib.ticker import MaxNLocator

    from training.exit.report import curve_figure

    fig = curve_figure(exit_data(rounds))
    try:
        ax = fig.axes[0]
        assert isinstance(ax.xaxis.get_major_locator(), MaxNLocator)
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        rate_axes_show_zero_above_the_axis([ax])
        legends_outside_the_plots(fig)
    finally:
        plt.close(fig)


def test_learning_curve_of_evaluations_only_has_a_margin_below_zero_and_its_legend_outside(tmp_path: Path) -> None:
    from training.sb3.report import learning_curve_figure

    run = tmp_path / "scratch"
    run.mkdir()
    shutil.copy(ROOT / "docs" / "scratch_eval.csv", run / "eval.csv")  # the picture in docs/ is drawn from it
    fig = learning_curve_figure(run)
    try:
        assert len(fig.axes) == 1, "no empty panel where the run has no training games"
        rate_axes_show_zero_above_the_axis(fig.axes)
        legends_outside_the_plots(fig)
    finally:
        plt.close(fig)


def test_learning_curve_with_training_games_keeps_both_legends_outside(tmp_path: Path) -> None:
    from training.sb3.report import learning_curve_figure

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(ROOT / "docs" / "scratch_eval.csv", run / "eval.csv")
    rows = ["timesteps,win_rate,mean_turns,truncation_rate"] + [f"{k * 1000},{k % 2},{100 + k},{k % 3 / 2}"
                                                                  for k in range(1, 40)]
    (run / "games.csv").write_text("\n".join(rows) + "\n")
    fig = learning_curve_figure(run)
    try:
        top, _bottom, twin = fig.axes
        rate_axes_show_zero_above_the_axis([top, twin])
        legends_outside_the_plots(fig)
    finally:
        plt.close(fig)


def test_report_commands_redraw_the_pictures(tmp_path: Path) -> None:
    import json

    from training.exit.report import main as exit_main
    from training.sb3.report import main as sb3_main

    run = tmp_path / "scratch"
    run.mkdir()
    shutil.copy(ROOT / "docs" / "scratch_eval.csv", run / "eval.csv")
    assert sb3_main([str(run)]) == 0 and (run / "learning_curve.png").stat().st_size > 0
    assert sb3_main([str(tmp_path / "missing")]) == 2
    (tmp_path / "report.json").write_text(json.dumps(exit_data(2)))
    assert exit_main([str(tmp_path)]) == 0 and (tmp_path / "curve.png").stat().st_size > 0
    (tmp_path / "other.json").write_text("{}")
    assert exit_main([str(tmp_path / "other.json")]) == 2
