"""The opponent pool, main-process side: snapshots of the learner, results, weights.

Every environment (in its worker process) holds the pool's entries as bots and draws an
opponent per seat and episode by weight: its :class:`keltis_env.envs.episode.OpponentPool`, the
one sampler of the learner view and the collector. :class:`PoolManager` decides those
weights and sends them, and new or dropped snapshots, to the environments with
``VecEnv.env_method`` (``add_opponent``, ``remove_opponent``, ``set_opponent_weights``):

* ``pool.weights`` gives each *group* a weight: ``self`` (all snapshots together, split
  evenly) or a fixed agent spec (``random``, ``heuristic``, ``ppo:PATH``, ...);
* with ``prioritize = k > 0`` an entry's weight is multiplied by ``(1 - w + 0.05) ** k``,
  where ``w`` is the learner's win share in its last ``window`` games against it (0.5
  before any game), so opponents the learner already beats are met less often;
* a snapshot is the learner's policy saved to ``RUN/snapshots/snap_<steps>.zip``; the
  workers load it as a ``ppo:`` bot. Only the newest ``max_snapshots`` stay in the pool;
  older files are deleted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from .config import PoolConfig

SELF = "self"
#: the entry names of the snapshots: ``snap_<steps>``
SNAPSHOT_PREFIX = "snap_"
_PRIOR_GAMES = 4  # pseudo-games at a 0.5 win share, so that a few results do not swing weights


def snapshot_name(steps: int) -> str:
    """The entry name of the snapshot taken after ``steps`` learner steps."""
    return f"{SNAPSHOT_PREFIX}{steps:09d}"


def group(name: str) -> str:
    """The group of ``pool.weights`` an entry belongs to: ``self`` for a snapshot, else its spec."""
    return SELF if name.startswith(SNAPSHOT_PREFIX) else name


def initial_opponents(config: PoolConfig) -> tuple[list[str], list[float]]:
    """The fixed opponents of ``config`` and their weights: what every environment starts
    with (snapshots are added later). A pool of snapshots only gets a placeholder
    (``random``, weight 0)."""
    specs = [spec for spec in config.weights if spec != SELF] or ["random"]
    weights = [config.weights.get(spec, 0.0) for spec in specs]
    return specs, weights


class PoolManager:
    """Snapshots, per-opponent results and sampling weights of a run's opponent pool, and
    the environments' pools kept in step with them (see the module doc). It holds no bots:
    those are the environments' (:class:`keltis_env.envs.episode.OpponentPool`)."""

    def __init__(self, config: PoolConfig, snapshot_dir: Path) -> None:
        self.config = config
        self.snapshot_dir = snapshot_dir
        self.snapshots: list[str] = []  # entry names, oldest first
        self.results: dict[str, deque[float]] = {}

    # ------------------------------------------------------------------ groups and entries
    @property
    def uses_snapshots(self) -> bool:
        return self.config.weights.get(SELF, 0.0) > 0

    def snapshot_path(self, name: str) -> Path:
        return self.snapshot_dir / f"{name}.zip"

    def initial_opponents(self) -> tuple[list[str], list[float]]:
        """The entries every environment starts with (:func:`initial_opponents`)."""
        return initial_opponents(self.config)

    def weights(self) -> dict[str, float]:
        """Current sampling weight of every entry."""
        out: dict[str, float] = {}
        for spec, weight in self.config.weights.items():
            if spec == SELF:
                for name in self.snapshots:
                    out[name] = weight / len(self.snapshots) * self._priority(name)
            else:
                out[spec] = weight * self._priority(spec)
        if sum(out.values()) <= 0:  # e.g. only snapshots wanted, none taken yet
            out = {name: 1.0 for name in out} if out else {}
        return out

    def _priority(self, name: str) -> float:
        k = self.config.prioritize
        if k == 0:
            return 1.0
        return (1.0 - self.win_rate(name) + 0.05) ** k

    def win_rate(self, name: str) -> float:
        """The learner's recent win share against ``name`` (shrunk towards 0.5)."""
        games = self.results.get(name, ())
        return (sum(games) + 0.5 * _PRIOR_GAMES) / (len(games) + _PRIOR_GAMES)

    def record(self, opponents: Sequence[str | None], win: float) -> None:
        """One finished training game: the entry names by seat (None for the learner)."""
        for name in set(opponents):
            if name is None:
                continue
            games = self.results.get(name)
            if games is None:
                games = self.results[name] = deque(maxlen=self.config.window)
            games.append(win)

    # ------------------------------------------------------------------ talking to the workers
    def push_weights(self, venv: Any) -> None:
        venv.env_method("set_opponent_weights", self.weights())

    def add_snapshot(self, venv: Any, name: str) -> list[str]:
        """Make the saved snapshot ``name`` an opponent in every environment; returns the
        names dropped to stay within ``max_snapshots``."""
        self._add_snapshot(venv, name)
        dropped = []
        while len(self.snapshots) > self.config.max_snapshots:
            old = self.snapshots.pop(0)
            venv.env_method("remove_opponent", old)
            self.results.pop(old, None)
            self.snapshot_path(old).unlink(missing_ok=True)
            dropped.append(old)
        self.push_weights(venv)
        return dropped

    def check_snapshots(self, state: dict[str, Any]) -> None:
        """Refuse to resume with a saved snapshot that is truncated or corrupt (one that is
        gone is simply left out of the pool)."""
        from keltis_env.policy import PolicyLoadError, load_policy

        for name in state.get("snapshots", []):
            path = self.snapshot_path(name)
            if path.is_file():
                try:
                    load_policy(path)
                except PolicyLoadError as exc:
                    raise ConfigError(f"cannot resume: the pool's snapshot {name} is unusable: {exc}. Delete "
                                      f"{path} to resume without it") from None

    def restore(self, venv: Any, state: dict[str, Any]) -> None:
        """Reload the pool of a resumed run (snapshot files must still be there)."""
        for name in state.get("snapshots", []):
            if self.snapshot_path(name).is_file():
                self._add_snapshot(venv, name)
        for name, games in state.get("results", {}).items():
            self.results[name] = deque(games, maxlen=self.config.window)
        self.push_weights(venv)

    def _add_snapshot(self, venv: Any, name: str) -> None:
        """The snapshot ``name`` in every environment's pool, at weight 0 until the next
        :meth:`push_weights`."""
        venv.env_method("add_opponent", f"ppo:{self.snapshot_path(name)}", 0.0, name)
        self.snapshots.append(name)

    def state_dict(self) -> dict[str, Any]:
        return {"snapshots": list(self.snapshots), "results": {k: list(v) for k, v in self.results.items()}}


__all__ = ["SELF", "SNAPSHOT_PREFIX", "PoolManager", "group", "initial_opponents", "snapshot_name"]
