"""The ``gumbel`` bot: the search that knows only the rules and a network
(:class:`keltis_env.bots.gumbel.GumbelSearch`) playing the card game from a seat's view.

``gumbel:net=PATH`` searches with the network of the policy file ``PATH`` (which must have
a value head: it values the searched positions) and plays the best move it finds;
``critic=FILE`` values them instead with a critic that reads each dealt world's hidden cards
(``NAME.critic.npz``, written beside ``NAME.zip`` by ``python -m training.zero`` with
``critic: full``; then ``PATH`` needs no value head);
``simulations`` (default 32), ``top_k`` (8), ``c_visit`` (50), ``c_scale`` (0.1),
``q_range`` (0.2) and ``depth`` (0) are the search's, ``noise=1`` adds Gumbel noise at the
root as self-play does (default 0: the best move); ``replies=best`` lets the network play
its most likely move inside the simulations (default ``sample``: moves drawn from its
policy), ``temperature`` (default 1) the policy's temperature there. A policy file that
plays averaged over relabellings is read as it is, without them.

The bot packs its view as a state row (:func:`~keltis_env.games.keltis.bots.compiled.pack_view`:
what the view hides is zero) and the search deals the hidden cards afresh for every
simulation, so no decision can depend on a card the seat has not seen. It needs numba (the
``fast`` extra); its random numbers come from the bot's ``seed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.bots.base import Bot


class GumbelBot(Bot):
    """See the module."""

    name = "gumbel"

    def __init__(self, net: str | Path | None = None, simulations: int = 32, top_k: int = 8, c_visit: float = 50.0,
                 c_scale: float = 0.1, q_range: float = 0.2, depth: int = 0, noise: int = 0,
                 replies: str = "sample", temperature: float = 1.0, critic: str | Path | None = None,
                 seed: int | None = None, *,
                 game: str = "keltis", num_players: int | None = None) -> None:
        super().__init__(seed)
        from keltis_env.bots.gumbel import GumbelSearch, MLPNetwork, load_critic
        from keltis_env.policy import PolicyLoadError, load_policy

        if net is None:
            raise ValueError("gumbel needs net=PATH, a policy file with a value head (e.g. gumbel:net=policies/"
                             "keltis_2p_zero.zip)")
        if noise not in (0, 1):
            raise ValueError(f"noise must be 0 (the best move) or 1 (Gumbel noise at the root), got {noise!r}")
        if replies not in ("sample", "best"):
            raise ValueError(f"replies must be sample (moves drawn from the network's policy) or best (its most "
                             f"likely move), got {replies!r}")
        policy = load_policy(net)
        policy.info.check(game, num_players)
        features = tuple(policy.info.features)
        if critic is not None:  # the values of the dealt worlds' hidden cards, the actor's moves
            value_layers, activation = load_critic(critic, game, policy.info.num_players, features)
            if activation != policy.info.activation:
                raise ValueError(f"the critic's activation {activation!r} is not the network's "
                                 f"{policy.info.activation!r}")
            network = MLPNetwork(policy.layers, value_layers, activation)
        elif not policy.has_value:
            raise PolicyLoadError(f"{str(net)!r} holds no value head (value_net), which gumbel needs to value the "
                                  "searched positions")
        elif policy.info.value_target != "score":
            raise PolicyLoadError(f"{str(net)!r} has a value head of the {policy.info.value_target!r} reward; gumbel "
                                  "reads values as score rewards (a policy file trained with reward: score)")
        else:
            network = MLPNetwork.from_policy(policy)
        self.path = str(net)
        self.info = policy.info
        # the options checked now, when the bot is made; the search is made for the players
        self._make = lambda n: GumbelSearch(network, n, features=features, simulations=simulations, top_k=top_k,
                                            c_visit=c_visit, c_scale=c_scale, q_range=q_range, depth=depth,
                                            noise=bool(noise), sample_replies=replies == "sample",
                                            temperature=temperature, privileged=critic is not None)
        self._search: Any = self._make(policy.info.num_players)

    def act(self, view: Any) -> int:
        from .compiled import pack_view

        if len(view.legal_actions) == 1:
            return int(view.legal_actions[0])
        self.info.check("keltis", view.num_players)
        self._search.reseed(self.rng.getrandbits(63))
        result = self._search.search(pack_view(view)[None, :], np.array([view.player], np.int64))
        return int(result["action"][0])

    def __repr__(self) -> str:
        return f"GumbelBot({self.path!r})"


__all__ = ["GumbelBot"]
