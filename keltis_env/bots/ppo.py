"""A trained policy (a Stable-Baselines3 / sb3-contrib PPO zip) as a bot, for every game.

``make_bot("ppo:policies/keltis_2p.zip", game="keltis", num_players=2)`` loads the policy
saved by ``training`` (or by ``MaskablePPO.save``); options follow the path:
``ppo:PATH,sample=1,temperature=0.5``. The file's format, its weights and its numpy
network are :mod:`keltis_env.policy`'s.

Game and players are checked when the bot is made
    A policy plays only the game and the number of players it was trained for: anything
    else raises :class:`~keltis_env.policy.PolicyLoadError` naming both
    ("policies/keltis_2p.zip is a 2-player keltis policy; this is a 3-player dice game").
    Callers that know the player count pass ``num_players`` (evaluation, ``keltis play``,
    the learner environment, training); without it the count is checked at the first
    :meth:`PPOBot.act`.

The bot encodes its view with the game's encoder (``get_game(game).make_encoder(n,
features)``, the observation the policy was trained on, with the optional features its
metadata names), masks the illegal actions and plays the most
probable legal action, or samples one from the masked distribution with ``sample=1`` (its
randomness from the bot's ``rng``).

``symmetry=NAME`` (one of the game's relabellings, :meth:`~keltis_env.core.game.GameDescriptor.make_symmetry`:
``colours`` or ``colours_affine`` for the card game) plays by the mean of the policy's logits
over the relabellings of the view (:meth:`keltis_env.core.symmetry.Symmetry.symmetrize`), one
forward pass for all: a policy that is exactly equivariant to them, made from any network
(best one fitted under those relabellings, ``fit.augment``). Without the option the bot
plays as the file's metadata says (:attr:`~keltis_env.policy.PolicyInfo.symmetry`);
``symmetry=none`` plays the network's own logits.

``forward=sparse`` (the default) computes the network's first layer over each observation's
non-zero inputs, row by row (:meth:`keltis_env.policy.NumpyPolicy.sparse_logits`: a compiled
kernel where numba is installed, numpy otherwise, the same bits), so a row's logits never
depend on the rows computed beside it and playing many games at once costs a third of the
first layer's dense product; ``forward=dense`` is numpy's BLAS product of the whole layer, the
forward pass of protocols v1 and v2 (:mod:`keltis_env.benchmark.protocol`), whose games it
plays again exactly. The two differ in the last bits of the logits, so a move decided by
rounding (two legal actions of equal logits) may differ.

The file is checked by :func:`keltis_env.policy.load_policy`, the check ``keltis policy PATH``
runs too: a file with NaN or infinite weights, or whose metadata its game's encoder does not
fit, is refused when the bot is made. Logits of the legal actions that choose nothing at
play time (NaN, +inf or all -inf: finite weights that overflow) raise
:class:`~keltis_env.policy.PolicyOutputError` naming the bot, never a silent move.
"""

from __future__ import annotations

import copy
import random
from math import isfinite
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.core.game import get_game
from keltis_env.policy import PolicyOutputError, load_policy, unusable_logits

from .base import Bot

#: the forward passes the bot plays by (its ``forward`` option), the default first
FORWARDS = ("sparse", "dense")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
        return value.lower() in _TRUE
    raise ValueError(f"option {name} must be 0/1 or true/false, got {value!r}")


class PPOBot(Bot):
    """Plays a trained PPO policy. See the module documentation."""

    name = "ppo"
    #: it only reads view fields, so the learner environment may pass a zero-copy LiveView
    accepts_live_view = True

    def __init__(
        self,
        path: str | Path | None = None,
        seed: int | None = None,
        sample: Any = False,
        temperature: float = 1.0,
        symmetry: str | None = None,
        forward: str = "sparse",
        *,
        game: str = "keltis",
        num_players: int | None = None,
    ) -> None:
        super().__init__(seed)
        if path is None:
            raise ValueError("the ppo bot needs a policy file: 'ppo:PATH', e.g. ppo:policies/keltis_2p.zip")
        self.sample = _flag("sample", sample)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"option temperature must be a number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        if forward not in FORWARDS:
            raise ValueError(f"option forward must be one of {', '.join(FORWARDS)}, got {forward!r}")
        self.forward = forward
        self.path = str(path)
        self.policy = load_policy(path)  # the file checked as keltis policy PATH checks it: fits its game's encoder
        self.info = self.policy.info
        self.info.check(game, num_players)
        self.encoder = get_game(game).make_encoder(self.info.num_players, self.info.features)
        if symmetry is not None and not isinstance(symmetry, str):
            raise ValueError(f"option symmetry must name a relabelling of the game or none, got {symmetry!r}")
        self.symmetry = self.info.play_symmetry(symmetry)  # without the option: the file's own

    def load_kernels(self) -> None:
        """Load the sparse forward pass's compiled kernel (numba, compiled on a machine's first
        use) now rather than in the first move's time; the evaluation calls it when it makes
        the bot in the process that plays."""
        if self.forward == "sparse":
            zeros = np.zeros((1, self.info.observation_size), dtype=np.float32)
            self.policy.sparse_logits(zeros)  # one view alone
            self.batch_logits_each(zeros)  # many at once (through the relabellings' kernel)

    @property
    def _network(self) -> Any:
        """The forward pass the bot plays by (its ``forward`` option), of its loaded network."""
        return self.policy.sparse_logits if self.forward == "sparse" else self.policy

    def logits(self, view: Any) -> np.ndarray:
        """The policy's unmasked action logits for ``view``."""
        if view.num_players != self.info.num_players:
            self.info.check(self.info.game, view.num_players)
        return self.batch_logits(self.encoder.encode(view))

    def batch_logits(self, obs: np.ndarray) -> np.ndarray:
        """The logits :meth:`logits` gives, for encoded views (rows; or one vector): a batched
        caller (the training collector) passes its opponents' observations through this."""
        if self.symmetry is not None:
            return self.symmetry.symmetrize(self._network, obs)
        result: np.ndarray = self._network(obs)
        return result

    def batch_logits_each(self, obs: np.ndarray) -> np.ndarray:
        """The logits of each row of ``obs`` (encoded views), each bit for bit what
        :meth:`logits` gives for that row's view alone, whatever the other rows.

        A matrix product of many rows may round a row differently than a product of that
        row alone (BLAS splits the rows among kernels by their number), and a move decided
        by rounding (two actions of equal logits) would then change. So the first layer runs
        row by row (``forward=sparse``; ``dense``: one product per row) and the later layers
        one product per row (of its relabellings' rows, as :meth:`logits` runs them), all in
        one call on the rows stacked: playing many games at once plays each game's moves.
        The evaluation's lockstep games use this; :meth:`batch_logits` is the faster product
        over all rows, for callers that need no such equality."""
        obs = np.asarray(obs)
        rows = len(obs)
        if self.symmetry is None:
            logits: np.ndarray = self._network(obs[:, None, :])[:, 0, :]
            return logits
        if self.forward == "sparse":  # each row's relabelled rows made inside the kernel
            return self.symmetry.average(self.policy.sparse_logits_gathered(obs, self.symmetry.obs_source))
        k = self.symmetry.size
        per_row = self._network  # each row's k relabelled rows: one (k, size) product, as one view alone gets

        def stacked(views: np.ndarray) -> np.ndarray:
            out: np.ndarray = per_row(views.reshape(rows, k, views.shape[1])).reshape(rows * k, -1)
            return out

        result: np.ndarray = self.symmetry.symmetrize(stacked, obs)
        return result

    def logits_of_moves(self, obs: np.ndarray, legal_lists: Any) -> list[np.ndarray | None]:
        """For each row of ``obs`` (a move, its legal actions in ``legal_lists``), the logits
        :meth:`batch_logits_each` gives it, or ``None`` for a move with one legal action,
        which :meth:`choose` plays without them: one forward pass for the moves that need one."""
        needed = [i for i, legal in enumerate(legal_lists) if len(legal) != 1]
        logits: list[np.ndarray | None] = [None] * len(legal_lists)
        if needed:
            for i, row in zip(needed, self.batch_logits_each(obs[needed]), strict=True):
                logits[i] = row
        return logits

    def twin(self) -> PPOBot:
        """A bot that plays with this bot's loaded network and options (the same
        :attr:`network_key`, so the two may share a forward pass) but keeps its own random
        generator and its own encoder (whose caches follow one game): one per game played
        at the same time."""
        twin = copy.copy(self)
        twin.rng = random.Random()
        twin.encoder = copy.deepcopy(self.encoder)
        return twin

    @property
    def network_key(self) -> tuple[int, str, str]:
        """What decides this bot's logits: its loaded network, relabellings and forward pass
        (bots with the same key may share a forward pass)."""
        return id(self.policy), self.symmetry.name if self.symmetry is not None else "", self.forward

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("PPOBot.act called for a view with no legal action (not this player's turn)")
        if len(legal) == 1:  # forced: the network is not asked
            if view.num_players != self.info.num_players:
                self.info.check(self.info.game, view.num_players)
            return self.choose(legal, None)
        return self.choose(legal, self.logits(view))

    def choose(self, legal: Any, logits: np.ndarray | None) -> int:
        """The action this bot plays among ``legal`` given the policy's ``logits`` for the
        view (a batched caller computes the logits of many views in one forward pass).
        ``None`` for a move with one legal action: it is played without the network's logits
        (sampling, the bot's generator draws as it would with them), so a batched caller
        skips forced moves' rows (:meth:`logits_of_moves`)."""
        if logits is None:
            if len(legal) != 1:
                raise ValueError(f"the ppo bot needs the network's logits to choose among {len(legal)} legal actions")
            if self.sample:
                return int(self.rng.choices(list(legal), weights=[1.0])[0])
            return int(legal[0])
        legal_logits = logits[list(legal)]
        if not self.sample:
            best = int(np.argmax(legal_logits))  # a NaN or +inf is the argmax, so checking it checks them all
            if not isfinite(legal_logits[best]):
                raise self._unusable(legal_logits)
            return int(legal[best])
        z = legal_logits.astype(np.float64) / self.temperature
        top = z.max()
        if not isfinite(top):
            raise self._unusable(legal_logits)
        weights = np.exp(z - top)
        return int(self.rng.choices(legal, weights=weights.tolist())[0])

    def _unusable(self, legal_logits: np.ndarray) -> PolicyOutputError:
        """The error for logits of the legal actions that choose nothing (NaN, +inf or all -inf)."""
        return PolicyOutputError(
            f"ppo:{self.path}: the network's logits of the {legal_logits.size} legal actions "
            f"{unusable_logits(legal_logits)}, so it cannot choose (its weights are finite: the network overflows "
            "on this observation); a usable policy gives finite logits"
        )

    def __repr__(self) -> str:
        extra = f", sample=1, temperature={self.temperature:g}" if self.sample else ""
        extra += f", symmetry={self.symmetry.name}" if self.symmetry is not None else ""
        extra += f", forward={self.forward}" if self.forward != FORWARDS[0] else ""
        return f"PPOBot({self.path!r}{extra})"


__all__ = ["FORWARDS", "PPOBot"]
