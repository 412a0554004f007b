"""The data files the package ships, so that an installed wheel runs everything the README
shows: the benchmark protocol (``benchmarks/v1/``: ``protocol.yaml``, ``calibration.json``,
the frozen policies), the shipped policies (``policies/*.zip``), the configs and recipes,
one folder per command that reads them (``configs/train/``, ``configs/exit/``,
``configs/rllib/``, ``configs/recipes/``, ``configs/zero/``), and the rules
(``docs/rules.md``, which ``keltis serve``'s page shows).

There is one copy of each in the repository, at those paths. In a checkout this folder
links to them (``benchmarks``, ``policies``, ``configs`` and ``docs`` here are symbolic links
to the repository's folders); a wheel holds copies of the files under ``keltis_env/data/``
(``pyproject.toml``'s package data). :func:`shipped` finds one by its repository path,
:func:`resolve` prefers a path as given (relative to the working folder) and falls back on
the shipped file of that name, so ``ppo:policies/keltis_2p.zip`` names the shipped policy
from any working folder once the caller resolves its path here.
"""

from __future__ import annotations

from pathlib import Path

#: where the shipped files are: this folder, whose entries mirror the repository's paths
DATA_DIR = Path(__file__).parent
#: the repository folders whose files are shipped (what their paths start with)
SHIPPED_FOLDERS = ("benchmarks", "policies", "configs", "docs")


def shipped(relative: str | Path) -> Path | None:
    """The shipped file or folder at the repository path ``relative`` (e.g.
    ``policies/keltis_2p.zip``, ``benchmarks/v1``), or None when the package ships none there."""
    parts = Path(relative).parts
    if not parts or parts[0] not in SHIPPED_FOLDERS or ".." in parts or Path(relative).is_absolute():
        return None
    path = DATA_DIR.joinpath(*parts)
    return path if path.exists() else None


def resolve(path: str | Path) -> Path:
    """``path`` when it exists (relative to the working folder, or absolute); else the shipped
    file of that repository path when there is one; else ``path`` as given, for the caller's
    "not found" message."""
    given = Path(path)
    if given.exists():
        return given
    return shipped(given) or given


__all__ = ["DATA_DIR", "SHIPPED_FOLDERS", "resolve", "shipped"]
