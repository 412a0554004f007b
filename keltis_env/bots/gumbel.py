"""The search that knows only the rules and a network: Gumbel root selection with
sequential halving (Danihelka, Guez, Schrittwieser and Silver, *Policy improvement by
planning with Gumbel*, ICLR 2022) over worlds sampled from the seat's view, on the
compiled core, many roots at once.

For each root (a state row and the seat ``me`` to move in it):

1. **Prior.** The network reads ``me``'s observation: its logits over the legal actions
   (the prior ``log pi``) and its value ``v``.
2. **Candidates.** ``g`` is Gumbel noise per legal action (zero with ``noise=False``); the
   ``top_k`` actions of largest ``g + log pi`` are searched (all of them when fewer are
   legal; one legal action is played unsearched).
3. **Simulations.** Sequential halving spends ``simulations`` a move over
   ``ceil(log2 k)`` phases: in each, every surviving candidate gets
   ``max(1, simulations // (phases * survivors))`` simulations, then the better half
   (by ``g + log pi + sigma(q)``) survives. A simulation of action ``a`` deals a world from
   what ``me`` may know (the game's ``worlds`` kernels: the unseen cards dealt at random; the
   v-th world of a phase is the same for every candidate, so that their values differ by
   the moves, not the deals),
   plays ``a``, lets the network play the other seats (a move drawn from its policy on
   that seat's view of the world, at ``temperature``) until ``me`` is to move again (after
   ``depth`` more moves of ``me``'s, played the same way; at most :data:`MAX_MOVES` moves of all seats
   after ``a``) or the game is over, and is worth the network's value of ``me``'s view
   there, or the final ``score`` reward.
   The network's calls are batched over every simulation of every root.
4. **Result.** The move is the survivor of largest ``g + log pi + sigma(q)``. The improved
   policy (the target expert iteration fits) is ``softmax(log pi + sigma(q_completed))``
   over the legal actions: an unsearched action's ``q`` is the mix of ``v`` and the
   searched ``q`` (the paper's ``v_mix``); ``sigma(q) = (c_visit + max visits) * c_scale *
   q``, with ``q`` rescaled to [0, 1] over the root's completed values (over at least
   ``q_range``).

With ``privileged=True`` the value head reads, after ``me``'s observation, what ``me`` does
not see *in the simulated world* (the game's
:meth:`~keltis_env.core.game.GameDescriptor.make_privileged` block: for the card game the
other hands of that world's deal), as perfect-information Monte Carlo evaluates a
determinised world; a critic trained on the true hidden cards of self-play games
(``python -m training.zero`` with ``critic: full``). The root's own value is then the mean
of its simulations' values, never the critic on the real position.

Nothing here reads a card ``me`` has not seen: roots are cleared of the hidden cards
before any world is dealt, and the network reads a seat's view only (with ``privileged``,
plus a dealt world's cards, which ``me`` does not know either). No plan model, no
heuristic and no rollout policy but the network take part. The same ``seed`` makes the same
decisions. The network is a :class:`Network` (logits and values of observations, together
or apart): :class:`MLPNetwork` holds a policy file's or an SB3 policy's weights.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from keltis_env.core.game import get_game


class Network(Protocol):
    """What the search calls: the logits (``[N, actions]``) and values (``[N]``) of
    observations (``float32[N, size]``), together or apart."""

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def logits(self, obs: np.ndarray) -> np.ndarray: ...

    def values(self, obs: np.ndarray) -> np.ndarray: ...

#: a simulation plays at most this many moves of all seats after the candidate, then reads
#: the value head where it stopped (with ``depth`` 0 the seat is to move again long before;
#: with a large ``depth`` a simulation is a rollout of at most this length, about half a game)
MAX_MOVES = 65


class MLPNetwork:
    """An actor-critic multilayer perceptron in numpy, as the search calls it: the actor
    alone (:meth:`logits`, for the other seats' replies), the critic alone (:meth:`values`,
    at the leaves) or both (a call). Each first layer is computed over the non-zero inputs
    only (:func:`keltis_env.policy.network.sparse_rows`: observations are mostly zeros).
    ``layers``/``value_layers``: ``(weight (in, out), bias)`` pairs, the hidden layers (each
    followed by ``activation``, ``"Tanh"`` or ``"ReLU"``) then the head."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]],
                 value_layers: list[tuple[np.ndarray, np.ndarray]], activation: str = "Tanh") -> None:
        self.layers = [(np.ascontiguousarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
        self.value_layers = [(np.ascontiguousarray(w, np.float32), np.asarray(b, np.float32))
                             for w, b in value_layers]
        if activation not in ("Tanh", "ReLU"):
            raise ValueError(f"activation must be 'Tanh' or 'ReLU', got {activation!r}")
        self.activation = activation

    @classmethod
    def from_policy(cls, policy: Any) -> MLPNetwork:
        """The network of a policy file (:class:`keltis_env.policy.network.NumpyPolicy`),
        which must have a value head."""
        if policy.value_layers is None:
            raise ValueError(f"{policy.info.path!r} holds no value head (value_net), which the search needs")
        return cls(policy.layers, policy.value_layers, policy.info.activation)

    @classmethod
    def from_sb3(cls, policy: Any) -> MLPNetwork:
        """The weights of an SB3 actor-critic MLP policy (torch) now, copied."""
        import torch

        def linears(*modules: Any) -> list[tuple[np.ndarray, np.ndarray]]:
            out = []
            for module in modules:
                for m in module.modules():  # nn.Linear, or a layer of the same weight and bias computed otherwise
                    weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
                    if isinstance(weight, torch.Tensor) and weight.dim() == 2 and isinstance(bias, torch.Tensor):
                        out.append((weight.detach().cpu().numpy().T.copy(), bias.detach().cpu().numpy().copy()))
            return out

        extractor = policy.mlp_extractor
        act = type(next(m for m in extractor.policy_net if getattr(m, "weight", None) is None)).__name__
        return cls(linears(extractor.policy_net, policy.action_net), linears(extractor.value_net, policy.value_net),
                   act)

    def _run(self, layers: list[tuple[np.ndarray, np.ndarray]], obs: np.ndarray) -> np.ndarray:
        from keltis_env.policy.network import sparse_rows

        (w, b), rest = layers[0], layers[1:]
        x = sparse_rows(np.ascontiguousarray(obs, np.float32), w) + b
        for w, b in rest:
            x = (np.tanh(x) if self.activation == "Tanh" else np.maximum(x, 0.0)) @ w + b
        return x

    def logits(self, obs: np.ndarray) -> np.ndarray:
        return self._run(self.layers, obs)

    def values(self, obs: np.ndarray) -> np.ndarray:
        out: np.ndarray = self._run(self.value_layers, obs)[:, 0]
        return out

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.logits(obs), self.values(obs)


#: the format name of a critic file (:func:`save_critic`)
CRITIC_FORMAT = "keltis-critic-1"


def save_critic(path: Any, value_layers: list[tuple[np.ndarray, np.ndarray]], *, game: str, num_players: int,
                features: tuple[str, ...], activation: str) -> None:
    """Write a value head that reads the hidden block after the observation (``critic:
    full``) as a ``.npz`` of plain arrays: its layers ``(weight (in, out), bias)`` and what it
    is for (game, players, features, the observation's and the hidden block's sizes,
    activation). :func:`load_critic` reads it back with every shape checked."""
    descriptor = get_game(game)
    seat = int(descriptor.make_encoder(num_players, features).size)
    hidden = int(descriptor.make_privileged(num_players).size)
    arrays: dict[str, np.ndarray] = {
        "format": np.array(CRITIC_FORMAT), "game": np.array(descriptor.name), "num_players": np.array(num_players),
        "features": np.array(",".join(features)), "seat_size": np.array(seat), "hidden_size": np.array(hidden),
        "activation": np.array(activation), "layers": np.array(len(value_layers))}
    for i, (w, b) in enumerate(value_layers):
        arrays[f"w{i}"], arrays[f"b{i}"] = np.asarray(w, np.float32), np.asarray(b, np.float32)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_critic(path: Any, game: str, num_players: int, features: tuple[str, ...]
                ) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The value layers and activation of the critic file ``path`` (:func:`save_critic`),
    refused with what is wrong unless it is a critic for ``num_players`` of ``game`` with
    ``features`` whose layers chain from the observation and hidden block to one value."""
    where = f"critic file {str(path)!r}"
    try:
        with np.load(path, allow_pickle=False) as data:
            items = {k: data[k] for k in data.files if k in ("format", "game", "num_players", "features", "seat_size",
                                                              "hidden_size", "activation", "layers")}
            count = int(items["layers"]) if "layers" in items else -1
            if not 1 <= count <= 16:
                raise ValueError(f"{where}: expected 1 to 16 layers, found {count}")
            layers = [(data[f"w{i}"].astype(np.float32), data[f"b{i}"].astype(np.float32)) for i in range(count)]
    except (OSError, KeyError, ValueError, EOFError) as exc:
        text = str(exc) if str(exc).startswith(where) else f"{where} cannot be read ({type(exc).__name__}: {exc})"
        raise ValueError(text) from None
    if str(items.get("format")) != CRITIC_FORMAT:
        raise ValueError(f"{where}: not a critic file of format {CRITIC_FORMAT!r}")
    descriptor = get_game(game)
    seat = int(descriptor.make_encoder(num_players, features).size)
    hidden = int(descriptor.make_privileged(num_players).size)
    said = (str(items["game"]), int(items["num_players"]), str(items["features"]), int(items["seat_size"]),
            int(items["hidden_size"]))
    wanted = (descriptor.name, num_players, ",".join(features), seat, hidden)
    if said != wanted:
        raise ValueError(f"{where} is for (game, players, features, observation, hidden block) {said}; this search "
                         f"needs {wanted}")
    width = seat + hidden
    for i, (w, b) in enumerate(layers):
        if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
            raise ValueError(f"{where}: layer {i} has weight {w.shape} and bias {b.shape}; expected ({width}, n), (n,)")
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError(f"{where}: layer {i} holds values that are not finite")
        width = w.shape[1]
    if width != 1:
        raise ValueError(f"{where}: the last layer has {width} outputs; expected 1 (the value)")
    activation = str(items["activation"])
    if activation not in ("Tanh", "ReLU"):
        raise ValueError(f"{where}: activation must be 'Tanh' or 'ReLU', got {activation!r}")
    return layers, activation


def numpy_network(policy: Any) -> MLPNetwork:
    """A policy file's network (:class:`keltis_env.policy.network.NumpyPolicy`) as the
    search's network."""
    return MLPNetwork.from_policy(policy)


def _log_softmax(logits: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Log-probabilities over the legal actions (``-inf`` elsewhere), row by row."""
    x = np.where(masks, logits.astype(np.float64), -np.inf)
    top = x.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    z = np.log(np.exp(x - top).sum(axis=1, keepdims=True))
    out: np.ndarray = x - top - z
    return out


class GumbelSearch:
    """The search of the module for ``num_players`` of ``game``, with ``network`` reading
    observations with ``features``; ``simulations`` a move, ``top_k`` candidates,
    ``c_visit``/``c_scale`` of ``sigma``, ``q_range`` the least range of values ``q`` is
    rescaled over (in value units: 0.2 is 10 points of score margin, so that differences of
    a point or two, mostly the deals' noise, are not stretched to the whole range), ``depth``
    moves of the root's seat played on by the network (as the other seats' are) before the
    value head is read (0: at its next decision; :data:`MAX_MOVES` moves in all at most), Gumbel
    ``noise`` at the root (self-play) or
    none (play the best), replies of the other seats drawn from the network's policy (or
    its best move with ``sample_replies=False``; ``temperature`` below 1 draws them from a
    sharper policy, ``softmax(logits / temperature)``, nearer the best move that a player
    of the network plays); ``privileged``: a value head that reads the
    simulated world's hidden cards after the observation (see the module doc)."""

    def __init__(self, network: Network, num_players: int, *, game: str = "keltis", features: tuple[str, ...] = (),
                 simulations: int = 16, top_k: int = 8, c_visit: float = 50.0, c_scale: float = 0.1,
                 q_range: float = 0.2, depth: int = 0, noise: bool = True, sample_replies: bool = True,
                 temperature: float = 1.0, privileged: bool = False, seed: int = 0) -> None:
        for name, value, least in (("simulations", simulations, 1), ("top_k", top_k, 2), ("depth", depth, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        for name, x in (("c_visit", c_visit), ("c_scale", c_scale), ("q_range", q_range),
                        ("temperature", temperature)):
            if isinstance(x, bool) or not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
        self.game = get_game(game)
        worlds = self.game.compiled_module("worlds")
        if worlds is None:
            raise ValueError(f"the game {self.game.name!r} has no compiled worlds for the network-guided search")
        self.worlds = worlds
        self.batch = self.game.compiled_module("batch")
        self.current = int(self.game.compiled_module("kernels").CURRENT)
        self.network = network
        self.num_players = int(num_players)
        self.features = tuple(features)
        self.size, self.encoding = self.batch.encoding_args(self.num_players, self.features)
        #: with ``privileged``, the values the value head reads after the observation (0: none)
        self.hidden_size = int(self.game.make_privileged(self.num_players).size) if privileged else 0
        self.num_actions = int(self.game.num_actions)
        self.simulations = int(simulations)
        self.top_k = int(top_k)
        self.c_visit = float(c_visit)
        self.c_scale = float(c_scale)
        self.q_range = float(q_range)
        self.depth = int(depth)
        self.noise = bool(noise)
        self.sample_replies = bool(sample_replies)
        self.temperature = float(temperature)
        self.reseed(seed)
        self.network_rows = 0  # observations the network has read (all calls)

    def reseed(self, seed: int) -> None:
        """Draw every later random number from ``seed``."""
        self.np_rng = np.random.default_rng(np.random.SeedSequence([int(seed) & (2**63 - 1), 0x6A]))

    # ------------------------------------------------------------------ the network
    def _run(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.network_rows += len(obs)
        logits, values = self.network(obs)
        return np.asarray(logits, np.float64), np.asarray(values, np.float64).reshape(len(obs))

    def _logits(self, obs: np.ndarray) -> np.ndarray:
        self.network_rows += len(obs)
        return np.asarray(self.network.logits(obs), np.float64)

    def _values(self, obs: np.ndarray) -> np.ndarray:
        self.network_rows += len(obs)
        return np.asarray(self.network.values(obs), np.float64).reshape(len(obs))

    def observe(self, states: np.ndarray, mes: np.ndarray, masks: bool = True,
                which: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Seat ``mes[j]``'s observation of row ``states[which[j]]`` (``which``: every row by
        default) and the legal actions of the seat to move."""
        which = np.arange(len(states), dtype=np.int64) if which is None else which
        n = len(which)
        obs = np.zeros((n, self.size), np.float32)
        legal = np.zeros((n, self.num_actions), np.bool_)
        self.batch.observe_games(states, which, np.asarray(mes, np.int64), np.arange(n, dtype=np.int64), masks, obs,
                                 legal, *self.encoding)
        return obs, legal

    def leaf_rows(self, states: np.ndarray, mes: np.ndarray, which: np.ndarray) -> np.ndarray:
        """The value head's rows of seat ``mes[j]`` in world ``states[which[j]]``: the
        observation, then with ``privileged`` what the seat does not see in that world."""
        obs = np.zeros((len(which), self.size + self.hidden_size), np.float32)
        rows = np.arange(len(which), dtype=np.int64)
        mes = np.asarray(mes, np.int64)
        legal = np.zeros((1, self.num_actions), np.bool_)
        self.batch.observe_games(states, which, mes, rows, False, obs, legal, *self.encoding)
        if self.hidden_size:
            self.batch.privileged_games(states, which, mes, rows, self.size, obs)
        return obs

    # ------------------------------------------------------------------ simulations
    def simulate(self, roots: np.ndarray, mes: np.ndarray, of_root: np.ndarray, actions: np.ndarray,
                 seeds: np.ndarray) -> np.ndarray:
        """The value for its root's seat of each simulation ``(of_root[i], actions[i])`` in
        the world dealt from ``seeds[i]``."""
        w = self.worlds
        n = len(of_root)
        worlds = np.empty((n, roots.shape[1]), roots.dtype)
        w.sample_worlds(roots, mes, of_root, actions, seeds.astype(np.uint64), worlds)
        values = np.zeros(n)
        live = np.arange(n, dtype=np.int64)
        own = np.zeros(n, np.int64)  # the root seat's own moves played in each world
        for _ in range(MAX_MOVES):
            if not len(live):
                break
            k = np.empty(len(live), np.int64)
            s = np.empty(len(live), np.int64)
            ended = np.zeros(len(live))
            w.classify(worlds, live, mes, of_root, k, s, ended)
            over = k == w.OVER
            values[live[over]] = ended[over]
            # the root seat moves on by the network's policy until it has made ``depth`` moves
            leaf = (k == w.LEAF) & (own[live] >= self.depth)
            if leaf.any():
                values[live[leaf]] = self._values(self.leaf_rows(worlds, s[leaf], live[leaf]))
            going = ~over & ~leaf
            if not going.any():
                break
            movers = live[going]
            obs, legal = self.observe(worlds, s[going], which=movers)
            logp = _log_softmax(self._logits(obs), legal)
            if self.sample_replies:  # the Gumbel-max draw from softmax(logits / temperature)
                moves = np.argmax(logp / self.temperature + self.np_rng.gumbel(size=logp.shape), axis=1)
            else:
                moves = np.argmax(logp, axis=1)
            own[movers] += k[going] == w.LEAF
            w.play(worlds, movers, moves.astype(np.int64))
            live = movers
        else:  # MAX_MOVES moves played: the network's value where it stopped
            values[live] = self._values(self.leaf_rows(worlds, mes[of_root[live]], live))
        return values

    # ------------------------------------------------------------------ one move of every root
    def _sigma(self, q: np.ndarray, visits: np.ndarray) -> np.ndarray:
        return (self.c_visit + visits.max(axis=1, keepdims=True)) * self.c_scale * q

    def _completed(self, logp: np.ndarray, masks: np.ndarray, value: np.ndarray, total: np.ndarray,
                   visits: np.ndarray) -> np.ndarray:
        """Each legal action's ``q`` rescaled to [0, 1] per root (over at least ``q_range``),
        ``v_mix`` where unvisited."""
        seen = visits > 0
        q = np.where(seen, total / np.maximum(visits, 1), 0.0)
        prior = np.where(masks, np.exp(logp), 0.0)
        seen_prior = (prior * seen).sum(axis=1)
        weighted = np.where(seen_prior > 0, (prior * seen * q).sum(axis=1) / np.maximum(seen_prior, 1e-12), value)
        n = visits.sum(axis=1)
        mix = (value + n * weighted) / (1 + n)
        completed = np.where(seen, q, mix[:, None])
        lo = np.where(masks, completed, np.inf).min(axis=1, keepdims=True)
        hi = np.where(masks, completed, -np.inf).max(axis=1, keepdims=True)
        scaled: np.ndarray = np.where(masks, (completed - lo) / np.maximum(hi - lo, self.q_range), 0.0)
        return scaled

    def search(self, roots: np.ndarray, mes: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """One move of the seat to move in every row of ``roots`` (``mes``: those seats, read
        from the rows by default, for callers that know them): ``action``, the improved
        ``policy`` (``[roots, actions]``, zero off the legal moves), the network's ``prior``
        and ``value`` at the root, the root ``obs`` and legal ``mask``, ``visits``, and ``q``:
        each action's mean simulated value for the root's seat (NaN where it has no visit)."""
        roots = np.ascontiguousarray(roots)
        b = len(roots)
        if mes is None:
            mes = roots[:, self.current].astype(np.int64)
        mes = np.asarray(mes, np.int64)
        obs, masks = self.observe(roots, mes)
        if not masks.any(axis=1).all() or np.any(roots[:, self.current] != mes):
            raise ValueError("every root must be a position where its seat is to move")
        if self.hidden_size:  # the critic reads hidden cards: at the root, the mean of the simulations
            logits, value = self._logits(obs), np.zeros(b)
        else:
            logits, value = self._run(obs)
        logp = _log_softmax(logits, masks)
        a = self.num_actions
        g = self.np_rng.gumbel(size=(b, a)) if self.noise else np.zeros((b, a))
        base = np.where(masks, g + logp, -np.inf)
        legal_count = masks.sum(axis=1)
        m = np.minimum(self.top_k, legal_count)
        order = np.argsort(-base, axis=1, kind="stable")
        alive = np.zeros((b, a), np.bool_)
        rows = np.arange(b)
        for j in range(int(m.max())):
            take = m > j
            alive[rows[take], order[take, j]] = True
        total = np.zeros((b, a))
        visits = np.zeros((b, a))
        phases = np.where(m > 1, np.ceil(np.log2(np.maximum(m, 2))).astype(np.int64), 0)
        for phase in range(int(phases.max(initial=0))):
            survivors = alive.sum(axis=1)
            searching = (phases > phase) & (survivors > 1)
            if not searching.any():
                break
            each = np.maximum(1, self.simulations // np.maximum(phases * survivors, 1))
            rr, aa = np.nonzero(alive & searching[:, None])
            reps = each[rr]
            of_root = np.repeat(rr, reps).astype(np.int64)
            acts = np.repeat(aa, reps).astype(np.int64)
            # the v-th world of a root in this phase is the same for all its candidates
            visit = np.arange(len(of_root)) - np.repeat(np.cumsum(reps) - reps, reps)
            world_seeds = self.np_rng.integers(0, 2**63, size=(b, int(each.max())), dtype=np.int64)
            vals = self.simulate(roots, mes, of_root, acts, world_seeds[of_root, visit])
            np.add.at(total, (of_root, acts), vals)
            np.add.at(visits, (of_root, acts), 1.0)
            if self.hidden_size:
                value = np.where(visits.sum(axis=1) > 0, total.sum(axis=1) / np.maximum(visits.sum(axis=1), 1), 0.0)
            q = self._completed(logp, masks, value, total, visits)
            score = np.where(alive, base + self._sigma(q, visits), -np.inf)
            keep = np.ceil(survivors / 2).astype(np.int64)
            ranked = np.argsort(-score, axis=1, kind="stable")
            for r in np.nonzero(searching)[0]:
                alive[r] = False
                alive[r, ranked[r, :keep[r]]] = True
        q = self._completed(logp, masks, value, total, visits)
        score = np.where(alive, base + self._sigma(q, visits), -np.inf)
        action = np.argmax(score, axis=1)
        improved = np.where(masks, logp + self._sigma(q, visits), -np.inf)
        improved = np.exp(improved - improved.max(axis=1, keepdims=True))
        improved /= improved.sum(axis=1, keepdims=True)
        return {"action": action.astype(np.int64), "policy": improved.astype(np.float32),
                "prior": np.where(masks, np.exp(logp), 0.0).astype(np.float32), "value": value, "obs": obs,
                "mask": masks, "visits": visits,
                "q": np.where(visits > 0, total / np.maximum(visits, 1), np.nan)}


__all__ = ["CRITIC_FORMAT", "MAX_MOVES", "GumbelSearch", "Network", "load_critic", "numpy_network", "save_critic"]
