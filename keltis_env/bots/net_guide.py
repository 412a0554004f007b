"""A policy file guiding a search (:class:`~keltis_env.bots.search.SearchBot` with
``net=PATH``): the network's policy ranks the candidates and may play the rollouts, its
value head values the positions where the rollouts stop. The network reads a player's
view only, never the real state."""

from __future__ import annotations

from math import isfinite, log
from pathlib import Path
from typing import Any

from keltis_env.core.game import get_game


class NetGuide:
    """A policy file (:mod:`keltis_env.policy`) guiding a search of ``game``: its policy
    ranks the root's candidates and may play the rollouts, its value head evaluates the
    positions where rollouts stop.

    The network reads only a player's view: of the searcher's view at the root, and of
    a *sampled* world (``sample_state``) in the rollouts, never of the real state.
    ``points``: search points (score difference, win bonus included) per unit of the
    value head's output. The file is checked when the guide is made: missing, corrupt,
    another game or player count (when ``num_players`` is given; else at the first
    decision), a value head missing when ``needs_value``. A file that plays averaged over
    relabellings (:attr:`~keltis_env.policy.PolicyInfo.symmetry`) ranks and plays so too; its
    value head is read as it is.

    The file is checked by :func:`keltis_env.policy.load_policy` (NaN or infinite weights are
    refused there). Output that is unusable at play time (finite weights can overflow: logits
    of the legal actions that are NaN, +inf or all -inf, a NaN or infinite value) raises
    :class:`~keltis_env.policy.PolicyOutputError` naming ``owner`` (the bot, e.g. ``ismcts``)
    and the file, so a search never runs on numbers that are not numbers."""

    def __init__(self, path: str | Path, game: str, num_players: int | None, points: float,
                 needs_value: bool = True, owner: str = "the search") -> None:
        from keltis_env.policy import PolicyLoadError, load_policy

        self.path = str(path)
        self.owner = owner
        self.policy = load_policy(path)  # the file checked as keltis policy PATH checks it: fits its game's encoder
        self.info = self.policy.info
        self.info.check(game, num_players)
        if needs_value and not self.policy.has_value:
            raise PolicyLoadError(f"{self.path!r} holds no value head (value_net), which the search's leaf=value "
                                  "needs; give leaf=model to evaluate with the game's model instead")
        descriptor = get_game(game)
        self.encoder = descriptor.make_encoder(self.info.num_players, self.info.features)
        self.live_view = descriptor.live_view
        self.points = points
        self.symmetry = self.info.play_symmetry()

    def _logits(self, obs: Any) -> Any:
        return self.policy(obs) if self.symmetry is None else self.symmetry.symmetrize(self.policy, obs)

    def check_players(self, num_players: int) -> None:
        if num_players != self.info.num_players:
            self.info.check(self.info.game, num_players)

    def encode(self, state: Any, player: int) -> Any:
        """The observation of ``player``'s view of ``state`` (a sampled world)."""
        return self.encoder.encode(self.live_view(state, player))

    def log_prior(self, view: Any) -> dict[int, float]:
        """The policy's log-probability of each legal action of ``view``."""
        import numpy as np  # imported where used: the engines run without numpy, and a guide pickles

        logits = self._logits(self.encoder.encode(view)).astype(np.float64)
        legal = [int(a) for a in view.legal_actions]
        z = logits[legal]
        top = z.max()
        if not isfinite(top):  # NaN and +inf are the max; all -inf too
            raise self._unusable(z, "no usable prior for this decision")
        z = z - top
        z = z - log(float(np.exp(z).sum()))
        return dict(zip(legal, z.tolist(), strict=True))

    def act(self, state: Any) -> int:
        """The policy's most probable legal action for the current player of ``state``."""
        import numpy as np  # imported where used: the engines run without numpy, and a guide pickles

        player = state.current
        legal = state.legal_actions()
        logits = self._logits(self.encode(state, player))[list(legal)]
        best = int(np.argmax(logits))
        if not isfinite(logits[best]):  # a NaN or +inf is the argmax; all -inf too
            raise self._unusable(logits, "no usable move in a rollout (rollout=net)")
        return int(legal[best])

    def points_of(self, rows: list[Any]) -> list[float]:
        """The value head's worth, in search points, of a batch of observations."""
        import numpy as np  # imported where used: the engines run without numpy, and a guide pickles

        # One numpy call per layer, as a stack of vector-matrix products: a product of a
        # few rows by a wide layer is where OpenBLAS starts threads, and on busy cores
        # those made a batch of 36 rows some fifty times slower than the rows one by one.
        values = self.policy.values(np.stack(rows)[:, None, :])[:, 0]
        bad = int((~np.isfinite(values)).sum())
        if bad:
            from keltis_env.policy import PolicyOutputError

            raise PolicyOutputError(
                f"{self.owner}: the value head of {self.path!r} gave NaN or infinite values for {bad} of "
                f"{len(values)} positions (its weights are finite: the network overflows on them); a search "
                "needs finite values (leaf=model evaluates with the game's model instead)"
            )
        return [self.points * float(v) for v in values]

    def _unusable(self, logits: Any, what: str) -> Exception:
        """The error for logits of the legal actions that choose nothing (NaN, +inf or all -inf)."""
        from keltis_env.policy import PolicyOutputError, unusable_logits

        return PolicyOutputError(
            f"{self.owner}: the network {self.path!r} gave {what}: its logits of the {len(logits)} legal actions "
            f"{unusable_logits(logits)} (its weights are finite: the network overflows on this view); a guided "
            "search needs finite logits"
        )


__all__ = ["NetGuide"]
