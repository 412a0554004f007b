"""One budget from start to end (``python -m training.budget``): the checks, the seeds'
runs (each skipped when finished, resumed when stopped), their scores and the result file.

``RUNS/budget.json`` records what the runs are for (the config, its SHA-256, algorithm, budget,
overrides); ``--resume`` refuses a folder made for another budget, and a new budget refuses
a folder that already holds one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import OutputPathError, atomic_write_text, check_output_dir

from ..common.config import ConfigError
from ..common.jsonfile import finite_json
from . import RUNGS
from .results import budget_label, load_track, plot_curves, result, score_seed, track_rungs, write
from .runs import check_budget, check_trainer, read_training_config, train_seed

DEFAULT_OUT = Path("benchmarks/results/budget")
DEFAULT_RUNS = Path("runs/budget")


@dataclass
class BudgetRequest:
    """What ``python -m training.budget`` was asked for."""

    config: str
    decisions: int
    seeds: int
    out: Path = DEFAULT_OUT
    runs: Path | None = None  # default: runs/budget/NAME-BUDGET
    resume: bool = False
    quick: bool = False
    overrides: tuple[str, ...] = ()
    workers: int = 2
    protocol: Path | None = None  # the benchmark protocol's folder; default the shipped one
    curve_points: int = 4
    progress: bool = True


def plan(request: BudgetRequest) -> tuple[Any, Path, Any, Any, list[str]]:
    """The training config, the runs folder, the protocol, its track and the rungs, after every check
    (nothing written yet)."""
    check_budget(request.decisions, request.seeds)
    if request.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {request.workers}")
    if request.curve_points < 0:
        raise ConfigError(f"--curve-points must be >= 0, got {request.curve_points}")
    trained = read_training_config(request.config, request.overrides)
    check_trainer(trained)
    runs = request.runs or DEFAULT_RUNS / f"{trained.name}-{budget_label(request.decisions)}"
    try:
        check_output_dir(request.out, "the budget results folder (--out)")
        check_output_dir(runs, "the budget runs folder (--runs)")
    except OutputPathError as exc:
        raise ConfigError(str(exc)) from None
    try:
        protocol, track = load_track(trained.track, request.protocol)
    except ValueError as exc:
        raise ConfigError(f"{request.config} plays {trained.track}: {exc}") from None
    rungs = track_rungs(track, RUNGS)
    if not rungs:
        raise ConfigError(f"track {track.name} has none of the rungs {', '.join(RUNGS)}")
    check_runs_folder(runs, identity(trained, request), request.resume)
    return trained, runs, protocol, track, rungs


def identity(trained: Any, request: BudgetRequest) -> dict[str, Any]:
    return {"config_sha256": trained.sha256, "algorithm": trained.algorithm, "decisions": request.decisions,
            "overrides": list(request.overrides)}


def check_runs_folder(runs: Path, wanted: dict[str, Any], resume: bool) -> None:
    """A new budget needs a folder without one; ``--resume`` one made for the same budget."""
    path = runs / "budget.json"
    if not path.is_file():
        return
    if not resume:
        raise ConfigError(f"{runs} already holds the runs of a budget: pass --resume to go on with them, or give "
                          "another --runs folder")
    saved = json.loads(path.read_text())
    if "recipe_sha256" in saved:  # a runs folder of an earlier version, which named the config a recipe
        saved.setdefault("config_sha256", saved.pop("recipe_sha256"))
    differ = [key for key in wanted if saved.get(key) != wanted[key]]
    if differ:
        raise ConfigError(f"--resume: {runs} holds the runs of another budget ("
                          + "; ".join(f"{k}: {saved.get(k)!r} there, {wanted[k]!r} now" for k in differ) + ")")


def run_budget(request: BudgetRequest, command: str, shown: str | None = None) -> tuple[dict[str, Any], Path]:
    """Train every seed (what is not done yet), score each, write the result file and the
    picture of the curves into ``request.out``; returns the result and its path. ``command``
    goes into the runs' folders, ``shown`` (default ``command``) into the result file."""
    trained, runs, protocol, track, rungs = plan(request)
    runs.mkdir(parents=True, exist_ok=True)
    identity_file = runs / "budget.json"
    atomic_write_text(identity_file, finite_json(identity(trained, request), identity_file, indent=1) + "\n")
    overrides = list(request.overrides)
    done, cards = [], []
    for seed in range(request.seeds):
        run = train_seed(trained, request.decisions, seed, runs, overrides, command, request.curve_points,
                         request.progress)
        print(f"seed {seed}: {run.decisions_used:,} decisions; scoring {run.agent} on {', '.join(rungs)}"
              f"{' (quick)' if request.quick else ''}", flush=True)
        cards.append(score_seed(run, runs, protocol, track, rungs, request.quick, request.workers, request.progress))
        done.append(run)
    stem = f"{trained.name}-{budget_label(request.decisions)}"
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    picture = out / f"{stem}.png"
    plot_curves(done, f"{trained.path}: {request.decisions:,} decisions, {len(done)} seeds", picture)
    data = result(trained, request.decisions, done, cards, protocol, rungs, request.quick, overrides,
                  shown or command, picture.name)
    path = out / f"{stem}.json"
    write(data, path)
    return data, path


__all__ = ["DEFAULT_OUT", "DEFAULT_RUNS", "BudgetRequest", "check_runs_folder", "plan", "run_budget"]
