"""The RLlib run's league: who plays each seat, and the learner's win rates.

:class:`LeagueMapping`
    The ``policy_mapping_fn``: a deterministic function of the episode id that seats the
    learner (``"main"``) at a random seat and draws every other seat from weighted
    opponent kinds: ``"self"`` (the learner), ``"league"`` (one of its frozen snapshots)
    or a bot's module id (a :class:`~keltis_env.integrations.rllib.BotSeatModule`).

:class:`LeagueCallback`
    Logs the learner's win share per opponent kind among the env runner results.

A checkpoint pickles both by reference (in its ``class_and_ctor_args.pkl`` files, with the
algorithm config). Checkpoints written before they moved here name them
``keltis_env.integrations.rllib.LeagueMapping`` and ``...LeagueCallback``; the run
never unpickles those files (``--resume`` builds the algorithm from the run's
``config.yaml`` and restores only the state files), and the ``rllib:`` bot reads only a
module's folder, which names the module class alone. Imports Ray.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback

from keltis_env.integrations.rllib import MAIN


class LeagueMapping:
    """``policy_mapping_fn(agent_id, episode)`` for self-play against a league.

    For each episode (keyed by its id, so every agent of the episode agrees), the
    learner ``main`` takes a random seat; every other seat draws an opponent kind from
    ``weights``: ``"self"`` (``main`` again), ``"league"`` (one of ``snapshots``,
    uniformly) or a module id of a bot seat. ``"league"`` is skipped while there are no
    snapshots. The draw depends only on the episode id and ``salt``.
    """

    def __init__(
        self,
        agents: Sequence[str],
        weights: Mapping[str, float],
        snapshots: Sequence[str] = (),
        salt: int = 0,
    ) -> None:
        if not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError(f"league weights must be non-negative with a positive sum, got {dict(weights)}")
        self.agents = list(agents)
        self.snapshots = list(snapshots)
        self.kinds = [k for k, w in weights.items() if w > 0 and (k != "league" or self.snapshots)]
        self.weights = [float(weights[k]) for k in self.kinds]
        if not self.kinds:
            raise ValueError(f"no opponent kind is possible with weights {dict(weights)} and no snapshots")
        self.salt = salt
        self._last: tuple[str, dict[str, str]] | None = None

    def matchup(self, key: str) -> dict[str, str]:
        """Agent id -> module id for the episode ``key``."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        digest = hashlib.blake2b(f"{self.salt}/{key}".encode(), digest_size=8).digest()
        rng = random.Random(int.from_bytes(digest, "big"))
        learner = rng.randrange(len(self.agents))
        seats: dict[str, str] = {}
        for i, agent in enumerate(self.agents):
            if i == learner:
                seats[agent] = MAIN
                continue
            kind = rng.choices(self.kinds, self.weights)[0]
            if kind == "self":
                seats[agent] = MAIN
            elif kind == "league":
                seats[agent] = rng.choice(self.snapshots)
            else:
                seats[agent] = kind
        self._last = (key, seats)
        return seats

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        return self.matchup(str(episode.id_))[agent_id]


class LeagueCallback(RLlibCallback):
    """Logs the learner's win share per opponent kind (``win_rate_<kind>`` among the env
    runner results: ``league`` for snapshots, a bot's module id for bots; games of
    ``main`` against itself are not counted), from the final infos' ``win_share``."""

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        if metrics_logger is None:
            return
        modules = {agent: episode.module_for(agent) for agent in episode.agent_ids}
        opponents = [m for m in modules.values() if m != MAIN]
        if not opponents or MAIN not in modules.values():
            return
        kinds = {"league" if m.startswith(MAIN + "_v") else m for m in opponents}
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        infos = episode.get_infos(-1)
        for agent, module in modules.items():
            share = (infos.get(agent) or {}).get("win_share")
            if module == MAIN and share is not None:
                metrics_logger.log_value(f"win_rate_{kind}", float(share), reduce="mean", window=200)


__all__ = ["LeagueCallback", "LeagueMapping"]
