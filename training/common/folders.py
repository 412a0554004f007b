"""What kind of run a folder holds, so that a command asked to resume another command's run
says so and names the command that resumes it.

Every ``--resume`` checks its folder first (``python -m training.train``, ``training.rllib``,
``training.exit`` and ``training.recipe``): ``python -m training.exit --resume RUN`` on an SB3
run folder, ``python -m training.train --resume RUN`` on an expert-iteration run...
:func:`check_resume_folder` refuses them with a
:class:`~training.common.config.ConfigError` such as ``runs/x is not an expert-iteration
run, which python -m training.exit --resume takes: it is an SB3 training run; resume it
with python -m training.train --resume runs/x``. A folder is recognised by the files its command writes
(:data:`KINDS`): a recipe's ``recipe.json``, the top-level keys of a training run's
``config.yaml``, the ``kind`` of an evaluation's or a ladder run's ``run.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import ConfigError


@dataclass(frozen=True)
class RunKind:
    """A kind of run folder: its ``key``, what it is (``"an SB3 training run"``), the
    command that makes it and the command line that resumes one (``{folder}`` filled in;
    empty for a folder no command resumes)."""

    key: str
    what: str
    command: str
    resume: str
    recognise: Callable[[Path, dict[str, Any] | None, dict[str, Any] | None], bool]

    def resume_line(self, folder: Path | str) -> str:
        return self.resume.format(folder=folder)


def _has_keys(config: dict[str, Any] | None, *keys: str) -> bool:
    return config is not None and all(key in config for key in keys)


#: every kind of run folder that a command resumes, in the order they are recognised
KINDS = (
    RunKind("recipe", "the work folder of a recipe run", "python -m training.recipe",
            "python -m training.recipe --resume {folder}",
            lambda folder, config, run: (folder / "recipe.json").is_file()),
    RunKind("sb3", "an SB3 training run", "python -m training.train", "python -m training.train --resume {folder}",
            lambda folder, config, run: _has_keys(config, "total_timesteps")),
    RunKind("exit", "an expert-iteration run", "python -m training.exit", "python -m training.exit --resume {folder}",
            lambda folder, config, run: _has_keys(config, "rounds", "label")),
    RunKind("zero", "a run of expert iteration from zero", "python -m training.zero",
            "python -m training.zero --resume {folder}",
            lambda folder, config, run: _has_keys(config, "selfplay", "search", "decisions")),
    RunKind("rllib", "an RLlib training run", "python -m training.rllib", "python -m training.rllib --resume {folder}",
            lambda folder, config, run: _has_keys(config, "stop", "league")),
    RunKind("evaluation", "an evaluation's games", "keltis evaluate",
            "keltis evaluate AGENTS... --resume {folder} (with the run's agents, seed and games)",
            lambda folder, config, run: run is not None and run.get("kind") == "keltis-evaluation-run"),
    RunKind("ladder", "a ladder run's games", "keltis ladder", "keltis ladder AGENT --track TRACK --resume {folder}",
            lambda folder, config, run: run is not None and run.get("kind") == "keltis-ladder-run"),
    RunKind("refit", "the network of a refit (python -m training.exit --refit)", "python -m training.exit --refit", "",
            lambda folder, config, run: (folder / "fit.json").is_file() and (folder / "network.zip").is_file()),
)
_BY_KEY = {kind.key: kind for kind in KINDS}


def _read_mapping(path: Path, parse: Callable[[str], Any]) -> dict[str, Any] | None:
    """The mapping in the file ``path``; ``None`` when it is missing, unreadable or no mapping."""
    try:
        data = parse(path.read_text())
    except Exception:  # missing, unreadable, not YAML or JSON: it tells nothing
        return None
    return data if isinstance(data, dict) else None


def run_kind(folder: Path | str) -> RunKind | None:
    """The kind of run ``folder`` holds, or ``None`` when it is none of :data:`KINDS`."""
    import yaml

    folder = Path(folder)
    config = _read_mapping(folder / "config.yaml", yaml.safe_load)
    run = _read_mapping(folder / "run.json", json.loads)
    return next((kind for kind in KINDS if kind.recognise(folder, config, run)), None)


def folder_contents(folder: Path) -> str:
    """What a folder of no known kind holds, in words (``"it holds no config.yaml, ..."``)."""
    import yaml

    if (folder / "config.yaml").is_file():
        if _read_mapping(folder / "config.yaml", yaml.safe_load) is None:
            return "its config.yaml is unreadable or not a mapping of keys"
        return "its config.yaml is no training run's that a command resumes"
    found = [name for name in ("recipe.json", "run.json") if (folder / name).is_file()]
    if found:
        return f"its {found[0]} is no run's that a command resumes"
    return "it holds no config.yaml, recipe.json or run.json"


def check_resume_folder(folder: Path | str, expected: str, flag: str = "--resume") -> Path:
    """``folder`` as a path if it holds a run of the kind ``expected`` (a key of
    :data:`KINDS`: ``"exit"``, ``"sb3"``, ``"recipe"``...); else a :class:`ConfigError`
    that says what the folder is (another kind of run, with the command that resumes it, or
    no run at all) and what ``flag`` needs."""
    folder = Path(folder)
    want = _BY_KEY[expected]
    refused = f"{folder} is not {want.what}, which {want.command} {flag} takes"
    if not folder.exists():
        raise ConfigError(f"there is no folder {folder}; {want.command} {flag} takes {want.what}")
    if not folder.is_dir():
        raise ConfigError(f"{refused}: it is a file, not a folder")
    kind = run_kind(folder)
    if kind is None:
        raise ConfigError(f"{refused}: {folder_contents(folder)}")
    if kind is not want:
        resume = f"resume it with {kind.resume_line(folder)}" if kind.resume else "no command resumes it"
        raise ConfigError(f"{refused}: it is {kind.what}; {resume}")
    return folder


__all__ = ["KINDS", "RunKind", "check_resume_folder", "folder_contents", "run_kind"]
