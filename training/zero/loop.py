"""The loop of expert iteration from zero: generations of self-play with the search the
network guides, the network fitted to the search's improved policies and the games'
outcomes, over and over; every stage resumable from the run folder.

Generation ``k``:

1. **self-play** (:mod:`.selfplay`): ``selfplay.games`` games of the search in every seat;
   their samples go to ``buffer/gen_<k>.npz`` and into the replay buffer (the latest
   ``fit.buffer`` samples);
2. **fit**: ``fit.reuse`` times the generation's samples in minibatches drawn uniformly
   from the buffer: cross-entropy of the network's policy over the legal moves to the
   search's improved policy, plus ``fit.value_coef`` times the squared error of its value
   to the deciding seat's final ``score`` reward (mixed with the search's value of the move
   played, by ``fit.search_value``); then ``state.pt`` (weights, optimizer,
   counters) is written, atomically: generation ``k`` is done;
3. **evaluate**, every ``eval.every`` decisions: the network as a policy file
   (``checkpoints/net_<decisions>.zip``) plays ``eval.games`` against each of
   ``eval.opponents`` on the selection deals (``eval.seed``), under the game's own turn cap
   (``env.max_turns`` cuts only the self-play games), each evaluation kept in its
   folder so that a stopped one resumes; ``evals.jsonl`` gets a line per opponent.

After every generation ``curve.jsonl`` gets its line (decisions, wall seconds of learning,
losses, game lengths) and ``report.md`` is written again; ``network.zip`` is the latest
network, ``best.zip`` the checkpoint that scored best against the last of
``eval.opponents`` on the selection deals. A run stops at its budget (``decisions``,
``minutes``), on Ctrl-C or SIGTERM (between two files), and ``--resume`` goes on from
``state.pt``: a generation that was cut is played again, the same one.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.core.output_files import atomic_path, atomic_write_text
from keltis_env.core.recorded_paths import recorded_text

from .config import ZeroConfig, torch_device
from .selfplay import play_generation


class TorchNetwork:
    """The learner's SB3 policy as the search's network (logits and values, no gradients), on
    whichever device the policy's weights are; ``seconds`` counts the time spent in its calls
    (the observations' transfer and the results' return included)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.seconds = 0.0

    def _features(self, obs: np.ndarray) -> Any:
        import torch

        p = self.policy
        return p.extract_features(torch.as_tensor(obs).to(p.device), p.features_extractor)

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        start = time.perf_counter()
        with torch.no_grad():
            logits, values = forward(self.policy, torch.as_tensor(obs).to(self.policy.device))
            out = logits.cpu().numpy(), values.cpu().numpy()
        self.seconds += time.perf_counter() - start
        return out

    def logits(self, obs: np.ndarray) -> np.ndarray:
        import torch

        start = time.perf_counter()
        p = self.policy
        with torch.no_grad():
            out: np.ndarray = p.action_net(p.mlp_extractor.forward_actor(self._features(obs))).cpu().numpy()
        self.seconds += time.perf_counter() - start
        return out

    def values(self, obs: np.ndarray) -> np.ndarray:
        import torch

        start = time.perf_counter()
        p = self.policy
        with torch.no_grad():
            out: np.ndarray = p.value_net(p.mlp_extractor.forward_critic(self._features(obs)))[:, 0].cpu().numpy()
        self.seconds += time.perf_counter() - start
        return out


def forward(policy: Any, obs: Any) -> tuple[Any, Any]:
    """An SB3 actor-critic policy's logits and values of a batch of observations."""
    features = policy.extract_features(obs, policy.features_extractor)
    latent_pi = policy.mlp_extractor.forward_actor(features)
    latent_vf = policy.mlp_extractor.forward_critic(features)
    return policy.action_net(latent_pi), policy.value_net(latent_vf)[:, 0]


def fit_minibatches(policy: Any, optimizer: Any, data: dict[str, np.ndarray], steps: int, batch_size: int,
                    value_coef: float, rng: np.random.Generator, symmetry: Any = None,
                    search_value: float = 0.0) -> dict[str, float]:
    """``steps`` minibatches of ``batch_size`` drawn uniformly from ``data`` (obs, mask,
    policy, value and, with ``search_value`` above 0, search_value): cross-entropy of the
    policy over the legal moves to the targets plus ``value_coef`` times the squared error of
    the value to ``(1 - search_value) * value + search_value * data["search_value"]``; the
    mean losses and the targets' entropy.
    With ``symmetry`` (a :class:`keltis_env.core.symmetry.Symmetry`) every sample is shown
    under one of its relabellings drawn from ``rng`` (data augmentation; the value target,
    a score margin, is the same under every relabelling)."""
    import torch

    size = len(data["value"])
    device = policy.device
    policy.set_training_mode(True)
    totals = np.zeros(3)
    for _ in range(steps):
        idx = rng.integers(0, size, min(batch_size, size))
        obs, mask, target = data["obs"][idx], data["mask"][idx], data["policy"][idx]
        if symmetry is not None:
            which = rng.integers(0, symmetry.size, len(idx))
            obs, mask, _, target = symmetry.relabel(which, obs, mask, per_action=target)
        obs, mask, target = (torch.as_tensor(a).to(device) for a in (obs, mask, target))
        z = data["value"][idx]
        if search_value:
            z = z + np.float32(search_value) * (data["search_value"][idx] - z)
        z = torch.as_tensor(z).to(device)
        logits, values = forward(policy, obs)
        logp = torch.log_softmax(logits.masked_fill(~mask, -1e9), dim=1)
        policy_loss = -(target * logp).sum(dim=1).mean()
        value_loss = ((values - z) ** 2).mean()
        loss = policy_loss + value_coef * value_loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        with torch.no_grad():
            entropy = -(target * torch.log(target.clamp_min(1e-12))).sum(dim=1).mean()
        totals += (policy_loss.item(), value_loss.item(), entropy.item())
    policy.set_training_mode(False)
    policy_loss, value_loss, entropy = totals / steps
    return {"fit_steps": steps, "buffer": size, "policy_loss": round(policy_loss, 4),
            "value_loss": round(value_loss, 5), "target_entropy": round(entropy, 3)}


def augment_symmetry(config: ZeroConfig) -> Any:
    """The relabellings ``fit.augment`` names for the run's players and features (None: none)."""
    if config.fit.augment in ("", "none"):
        return None
    from keltis_env.core.game import get_game

    env = config.env
    return get_game(env.game).make_symmetry(config.fit.augment, env.num_players, env.features)


def target_errors(policy: Any, data: dict[str, np.ndarray], chunk: int = 4096) -> dict[str, float]:
    """How far the network is from the samples' targets: ``kl``, the mean KL divergence of the
    search's improved policy to the network's policy over the legal moves (its cross-entropy
    less the targets' entropy: 0 for a network that plays the targets), ``agree``, the share
    of samples whose target's most likely legal move is the network's, and ``value_error``,
    the mean squared error of its value to the outcome."""
    import torch

    kl, agree, value, n = 0.0, 0, 0.0, len(data["value"])
    device = policy.device
    with torch.no_grad():
        for i in range(0, n, chunk):
            logits, values = forward(policy, torch.as_tensor(data["obs"][i:i + chunk]).to(device))
            mask = torch.as_tensor(data["mask"][i:i + chunk]).to(device)
            target = torch.as_tensor(data["policy"][i:i + chunk]).to(device)
            logp = torch.log_softmax(logits.masked_fill(~mask, -1e9), dim=1)
            kl += float((target * (torch.log(target.clamp_min(1e-12)) - logp)).sum())
            agree += int((logp.argmax(dim=1) == target.masked_fill(~mask, -1.0).argmax(dim=1)).sum())
            value += float(((values - torch.as_tensor(data["value"][i:i + chunk]).to(device)) ** 2).sum())
    return {"kl": kl / max(n, 1), "agree": agree / max(n, 1), "value_error": value / max(n, 1)}


def fresh_model(config: ZeroConfig, critic: str | None = None) -> Any:
    """A MaskablePPO model of ``config.network`` with fresh weights seeded by ``config.seed``,
    for the learner's observation (``env.features``) and actions: made on the spaces alone,
    with no environment and no opponent. With ``critic`` (default ``config.critic``) ``full``
    its critic reads the observation and the hidden block after it
    (:class:`training.common.critic.PrivilegedCriticPolicy`)."""
    import gymnasium as gym
    import torch
    from sb3_contrib import MaskablePPO

    from keltis_env.core.game import get_game

    env = config.env
    game = get_game(env.game)
    seat = size = game.make_encoder(env.num_players, tuple(env.features)).size
    full = (critic or config.critic) == "full"
    if full:
        size += game.make_privileged(env.num_players).size

    class Spaces(gym.Env):  # type: ignore[type-arg]
        observation_space = gym.spaces.Box(game.obs_low, game.obs_high, (size,), np.float32)
        action_space = gym.spaces.Discrete(game.num_actions)

    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.network.activation]
    arch = list(config.network.net_arch)
    kwargs: dict[str, Any] = {"net_arch": {"pi": arch, "vf": arch}, "activation_fn": activation}
    policy: Any = "MlpPolicy"
    if full:
        from ..common.critic import PrivilegedCriticPolicy

        policy, kwargs["seat_size"] = PrivilegedCriticPolicy, seat
    return MaskablePPO(policy, Spaces(), policy_kwargs=kwargs, seed=config.seed, device="cpu", verbose=0)


def critic_path(policy_file: Path) -> Path:
    """Where a run with ``critic: full`` writes the critic of the policy file ``policy_file``:
    beside it, ``NAME.critic.npz`` (:func:`keltis_env.bots.gumbel.save_critic`; the search
    reads it with ``gumbel:net=NAME.zip,critic=NAME.critic.npz``)."""
    return policy_file.with_name(policy_file.stem + ".critic.npz")


#: what a sample holds for the fits: observation, legal moves, the search's improved policy, outcome,
#: the search's value of the move played
SAMPLE_KEYS = ("obs", "mask", "policy", "value", "search_value")


def sample_arrays(data: Any) -> dict[str, np.ndarray]:
    """The arrays of :data:`SAMPLE_KEYS` of a generation's samples (a dict or an open ``.npz``);
    ``search_value`` is the final reward in a generation written before it was recorded."""
    names = set(data.keys() if isinstance(data, dict) else data.files)
    return {k: data[k] if k in names else data["value"] for k in SAMPLE_KEYS}


class ReplayBuffer:
    """The latest ``capacity`` samples (observation, mask, policy target, final reward, the
    search's value of the move played: the final reward in a generation written before it
    was recorded)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, part: dict[str, np.ndarray]) -> None:
        self.parts.append(sample_arrays(part))
        while sum(len(p["value"]) for p in self.parts[1:]) >= self.capacity:
            self.parts.pop(0)

    def __len__(self) -> int:
        return min(self.capacity, sum(len(p["value"]) for p in self.parts))

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.concatenate([p[k] for p in self.parts])[-self.capacity:] for k in SAMPLE_KEYS}


def _flushed_print(line: str) -> None:
    """A line out at once, even into a file or a pipe (a run's log read while it runs)."""
    print(line, flush=True)


def start_model(config: ZeroConfig) -> Any:
    """The SB3 model a run starts from, on the CPU: ``init``'s network (with ``critic: full``,
    its actor, and its critic reading the seat's part as before), else fresh weights."""
    from ..imitate.network import load_model

    if config.init and config.critic == "full":
        from ..common.critic import init_from

        model = fresh_model(config)
        init_from(model, load_model(config.init))
        return model
    if config.init:
        return load_model(config.init)
    return fresh_model(config)


def place_policy(policy: Any, config: ZeroConfig) -> Any:
    """``policy`` moved to the config's ``device``, its first layers made sparse where
    ``first_layer`` says so; returned (the same object)."""
    policy = policy.to(torch_device(config.device))
    if config.first_layer == "sparse":
        from ..common.sparse import sparsify

        sparsify(policy)
    return policy


def make_search(config: ZeroConfig, policy: Any) -> Any:
    """The run's search (:class:`keltis_env.bots.gumbel.GumbelSearch`, with noise) over the
    SB3 policy ``policy`` (:class:`TorchNetwork`), seeded by ``config.seed``."""
    from keltis_env.bots.gumbel import GumbelSearch

    s = config.search
    return GumbelSearch(TorchNetwork(policy), config.env.num_players, features=tuple(config.env.features),
                        simulations=s.simulations, top_k=s.top_k, c_visit=s.c_visit, c_scale=s.c_scale,
                        q_range=s.q_range, depth=s.depth, noise=True, sample_replies=s.replies == "sample",
                        temperature=s.temperature, privileged=config.critic == "full", seed=config.seed)


class Run:
    """A run of ``config`` in the folder ``folder``; ``log`` prints a line."""

    def __init__(self, config: ZeroConfig, folder: Path, log: Any = None, progress: bool = True) -> None:
        self.config = config
        self.folder = folder
        self.log = log or _flushed_print
        self.progress = progress
        self.generation = 0
        self.decisions = 0
        self.seconds = 0.0
        self.next_eval = config.eval.every if config.eval.every else math.inf

    # ------------------------------------------------------------------ set-up
    def prepare(self, command: str) -> None:
        """The run folder's config and command (first start) or the state it stopped in."""
        import torch

        c = self.config
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "buffer").mkdir(exist_ok=True)
        (self.folder / "checkpoints").mkdir(exist_ok=True)
        config_file = self.folder / "config.yaml"
        if not config_file.is_file():
            atomic_write_text(config_file, c.to_yaml())
        with open(self.folder / "command.txt", "a") as f:
            f.write(recorded_text(command) + "\n")
        torch.set_num_threads(c.torch_threads)
        self.model = start_model(c)
        self.policy = place_policy(self.model.policy, c)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=c.fit.learning_rate,
                                          weight_decay=c.fit.weight_decay)
        state_file = self.folder / "state.pt"
        self.buffer = ReplayBuffer(c.fit.buffer)
        if state_file.is_file():
            state = torch.load(state_file, weights_only=False, map_location="cpu")
            self.policy.load_state_dict(state["policy"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.generation, self.decisions, self.seconds = state["generation"], state["decisions"], state["seconds"]
            self.next_eval = state["next_eval"]
            torch.set_rng_state(state["torch_rng"])
            for k in self._buffer_generations():
                with np.load(self.folder / "buffer" / f"gen_{k:05d}.npz") as data:
                    self.buffer.add(sample_arrays(data))
            self.log(f"resuming at generation {self.generation}: {self.decisions:,} decisions, "
                     f"{self.seconds / 60:.1f} min of learning, {len(self.buffer):,} samples in the buffer")
        self.search = make_search(c, self.policy)
        from keltis_env.games.keltis import GameConfig

        self.game_config = GameConfig(num_players=c.env.num_players, **c.env.game_options())

    def _buffer_generations(self) -> list[int]:
        """The generations whose samples fill the buffer, oldest first (those on disk)."""
        done = sorted(int(p.stem.removeprefix("gen_")) for p in (self.folder / "buffer").glob("gen_*.npz"))
        return [k for k in done if k < self.generation]

    # ------------------------------------------------------------------ the loop
    def run(self) -> dict[str, Any]:
        c = self.config
        budget_seconds = c.minutes * 60 if c.minutes else math.inf
        if c.eval.every and self.decisions == 0:
            self.evaluate()  # the curve's first point: the start network (done ones are skipped)
        while True:
            if self.decisions >= self.next_eval:  # also one a stopped run left pending
                self.evaluate()
                while self.next_eval <= self.decisions:
                    self.next_eval += c.eval.every
                self.save_state()
            if self.decisions >= c.decisions or self.seconds >= budget_seconds:
                break
            self.step()
            self.report()
        if c.eval.every and self._evaluated_at() != self.decisions:
            self.evaluate()
        self.report()
        return {"network": str(self.folder / "network.zip"), "decisions": self.decisions}

    def step(self) -> None:
        """One generation: self-play, fit, state."""
        c = self.config
        k = self.generation
        t0 = time.perf_counter()
        self.policy.set_training_mode(False)
        data = play_generation(self.search, self.game_config, c.selfplay.games, c.selfplay.parallel, c.seed, k,
                               hidden=c.critic == "full")
        stats = data.pop("stats")
        unseen = self.value_error(data)
        with atomic_path(self.folder / "buffer" / f"gen_{k:05d}.npz") as tmp, open(tmp, "wb") as f:
            np.savez(f, **data)
        self.buffer.add(data)
        t1 = time.perf_counter()
        new = stats["decisions"]
        fit = self.fit(new)
        t2 = time.perf_counter()
        self.generation += 1
        self.decisions += new
        self.seconds += t2 - t0
        self.export(self.folder / "network.zip")
        self.save_state()
        self._drop_old_buffers()
        stats["new_decisions"] = stats.pop("decisions")
        line = {"generation": k, **stats, "decisions": self.decisions, "minutes": round(self.seconds / 60, 2),
                "selfplay_seconds": round(t1 - t0, 1), "fit_seconds": round(t2 - t1, 1), **fit,
                "new_games_value_loss": round(unseen, 5),
                "network_rows_per_decision": round(self.search.network_rows / max(new, 1), 1)}
        self.search.network_rows = 0
        with open(self.folder / "curve.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        self.log(f"generation {k}: {self.decisions:,} decisions, {self.seconds / 60:.1f} min; self-play "
                 f"{new / max(t1 - t0, 1e-9):,.0f} decisions/s, game {stats['mean_length']:.0f} moves, "
                 f"{stats['truncated']} cut; fit {fit['policy_loss']:.3f} policy, {fit['value_loss']:.4f} value "
                 f"({unseen:.4f} on the new games before the fit), target entropy {fit['target_entropy']:.2f}")

    def value_error(self, data: dict[str, np.ndarray]) -> float:
        """The network's squared value error on a new generation's positions, before it is
        fitted on them: its error on games it has not seen, beside the fit's on the buffer
        (a value head that learns the buffer's games rather than their positions shows as a
        gap between the two)."""
        return target_errors(self.policy, data)["value_error"]

    def fit(self, new: int) -> dict[str, float]:
        c = self.config.fit
        data = self.buffer.arrays()
        steps = max(1, math.ceil(c.reuse * new / c.batch_size))
        rng = np.random.default_rng([self.config.seed, self.generation, 0x5A])
        return fit_minibatches(self.policy, self.optimizer, data, steps, c.batch_size, c.value_coef, rng,
                               augment_symmetry(self.config), c.search_value)

    # ------------------------------------------------------------------ files
    def save_state(self) -> None:
        import torch

        state = {"policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "generation": self.generation, "decisions": self.decisions, "seconds": self.seconds,
                 "next_eval": self.next_eval, "torch_rng": torch.get_rng_state()}
        with atomic_path(self.folder / "state.pt") as tmp:
            torch.save(state, tmp)

    def _drop_old_buffers(self) -> None:
        """Remove the generations' files whose samples have left the buffer."""
        kept = len(self.buffer.parts)
        for k in self._buffer_generations()[:-kept]:
            (self.folder / "buffer" / f"gen_{k:05d}.npz").unlink(missing_ok=True)

    def export(self, path: Path) -> None:
        """The network as a policy file at ``path``, written from the CPU (the same file on every device)."""
        device = self.policy.device
        self.policy.to("cpu")
        try:
            self._export(path)
        finally:
            self.policy.to(device)

    def _export(self, path: Path) -> None:
        from ..imitate.network import export_policy

        env = self.config.env
        if self.config.critic == "full":  # the actor alone, for the seat's view, and the critic beside it
            from keltis_env.bots.gumbel import MLPNetwork, save_critic

            from ..common.critic import copy_actor

            played = fresh_model(self.config, critic="seat")
            copy_actor(self.model, played)
            export_policy(played, path, env.game, env.num_players, env.features, value_head=False,
                          symmetry=self.config.symmetry)
            network = MLPNetwork.from_sb3(self.policy)
            with atomic_path(critic_path(path)) as tmp:
                save_critic(tmp, network.value_layers, game=env.game, num_players=env.num_players,
                            features=tuple(env.features), activation=network.activation)
            return
        export_policy(self.model, path, env.game, env.num_players, env.features, value_reward=env.reward,
                      symmetry=self.config.symmetry)

    # ------------------------------------------------------------------ evaluations
    def _evals(self) -> list[dict[str, Any]]:
        path = self.folder / "evals.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def _evaluated_at(self) -> int | None:
        evals = self._evals()
        return evals[-1]["decisions"] if evals else None

    def evaluate(self) -> None:
        """The network now against every opponent on the selection deals."""
        from keltis_env.evaluation import evaluate

        c = self.config
        checkpoint = self.folder / "checkpoints" / f"net_{self.decisions:010d}.zip"
        if not checkpoint.is_file():
            self.export(checkpoint)
        done = {(e["decisions"], e["opponent"]) for e in self._evals()}
        for opponent in c.eval.opponents:
            if (self.decisions, opponent) in done:
                continue
            out = self.folder / "eval_games" / f"{self.decisions:010d}_{re.sub(r'[^A-Za-z0-9._-]', '_', opponent)}"
            out.parent.mkdir(exist_ok=True)
            start = time.perf_counter()
            result = evaluate([f"ppo:{checkpoint}"] + [opponent] * (c.env.num_players - 1), c.eval.games,
                              c.eval.seed, workers=c.eval.workers, game=c.env.game, progress=self.progress,
                              options=dict(c.env.options), out=out, resume=(out / "run.json").is_file())
            stats = result.agents[0]
            line = {"decisions": self.decisions, "minutes": round(self.seconds / 60, 2), "generation": self.generation,
                    "opponent": opponent, "games": stats.games, "win_rate": stats.win_rate,
                    "win_rate_ci": list(stats.win_rate_ci), "checkpoint": str(checkpoint.relative_to(self.folder)),
                    "seconds": round(time.perf_counter() - start, 1)}
            with open(self.folder / "evals.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")
            low, high = stats.win_rate_ci
            self.log(f"at {self.decisions:,} decisions: {stats.win_rate:.1%} [{low:.1%}, {high:.1%}] against "
                     f"{opponent} ({stats.games} games, selection deals)")
        self._choose_best()

    def _choose_best(self) -> None:
        """``best.zip``: the checkpoint of the best win rate against the last opponent."""
        import shutil

        last = self.config.eval.opponents[-1] if self.config.eval.opponents else None
        scored = [e for e in self._evals() if e["opponent"] == last]
        if not scored:
            return
        best = max(scored, key=lambda e: (e["win_rate"], e["decisions"]))
        with atomic_path(self.folder / "best.zip") as tmp:
            shutil.copyfile(self.folder / best["checkpoint"], tmp)
        critic = critic_path(self.folder / best["checkpoint"])
        if critic.is_file():
            with atomic_path(critic_path(self.folder / "best.zip")) as tmp:
                shutil.copyfile(critic, tmp)
        atomic_write_text(self.folder / "best.json", json.dumps(best, indent=1) + "\n")

    # ------------------------------------------------------------------ report
    def report(self) -> None:
        from .report import write_report

        write_report(self.folder, self.config)


__all__ = ["SAMPLE_KEYS", "ReplayBuffer", "Run", "TorchNetwork", "augment_symmetry", "critic_path", "fit_minibatches",
           "forward", "make_search", "place_policy", "start_model", "target_errors"]
