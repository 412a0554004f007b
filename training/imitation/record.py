"""Optional warm start before reinforcement learning: imitate a teacher bot.

With ``pretrain.teacher`` set (e.g. ``heuristic``), a new run first records
``pretrain.games`` games in which the teacher plays every seat, then fits the policy
network to the teacher's decisions (cross-entropy over the legal actions) and the value
network to each decision's final reward (the run's ``env.reward``, as the environment
pays it). With ``pretrain.dagger_rounds = k``, k rounds of DAgger follow: the fitted
policy plays ``pretrain.dagger_games`` games (in every seat, or in one seat against the
teacher), the teacher labels every decision of them with what it would have played, and
the policy is fitted again on all decisions recorded so far, so that it learns to recover
from positions its own mistakes lead to. Reinforcement learning by self-play then starts
from that policy instead of from random weights; the rewards it learns from are unchanged.

Any agent spec can teach (``heuristic``, ``planner``, ``ismcts``, ``ppo:PATH``). A teacher
that gives the values behind its choice (``action_values(view)``: the planner's plan-model
values, the search's candidate scores, in points) teaches more than its move: with
``pretrain.soft_temperature = T > 0`` the target of a decision is ``softmax(value / T)``
over the actions it valued (the move it plays being the first of the highest), so the
policy also learns how much worse the other moves are. ``T`` is in the values' points: a
move 1 point worse than the best gets ``exp(-1/T)`` of its weight. With ``T = 0`` (or a
teacher without values) the target is the teacher's move alone. With ``pretrain.anchor``
reinforcement learning is then held near the imitation for a while (:mod:`training.distill`).
``pretrain.temperature`` < 1 sharpens the fitted policy first: an imitation's sampled moves
are much weaker than its most probable ones, and PPO improves the sampled policy.

The games are played by the match loop (:class:`keltis_env.core.match.Match`) of the
run's game (``env.game``, found in the registry), one recording controller per seat. The
observation and mask of a recorded decision are exactly what the learner environment gives
for that seat (the game's encoder on the seat's view).
"""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import numpy as np

from .config import TrainConfig


@dataclass
class Demonstrations:
    obs: np.ndarray  # float16 (N, obs size): exact for the encoder's values up to 1/2048
    masks: np.ndarray  # bool (N, actions)
    actions: np.ndarray  # int64 (N,)
    returns: np.ndarray  # float32 (N,): the final reward of the deciding seat
    #: float16 (N, actions): the teacher's soft targets, or (N, 0) where the move is the target
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    def __add__(self, other: Demonstrations) -> Demonstrations:
        return Demonstrations(*(np.concatenate([a, b]) for a, b in zip(self.parts(), other.parts(), strict=True)))

    def parts(self) -> tuple[np.ndarray, ...]:
        return self.obs, self.masks, self.actions, self.returns, self.targets


def soft_targets(values: list[tuple[int, float]], num_actions: int, temperature: float) -> tuple[int, np.ndarray]:
    """The teacher's move (the first of its highest values) and ``softmax(value /
    temperature)`` over the valued actions (0 for the others)."""
    actions = np.array([a for a, _ in values], dtype=np.int64)
    v = np.array([x for _, x in values], dtype=np.float64)
    best = int(actions[int(np.argmax(v))])  # argmax: the first of the highest
    z = np.exp((v - v.max()) / temperature)
    target = np.zeros(num_actions, dtype=np.float64)
    np.add.at(target, actions, z / z.sum())
    return best, target.astype(np.float16)


class _Recorder:
    """The controller of one seat in a recorded game (:class:`keltis_env.core.match.Match`):
    at every decision it notes the observation, the mask and the teacher's choice (with its
    soft target when ``temperature > 0``), and plays that choice, or the actor's when the
    actor has this seat."""

    def __init__(self, seat: int, teacher: Any, actor: Any, encoder: Any, sink: list[tuple[Any, ...]],
                 temperature: float = 0.0, num_actions: int = 0) -> None:
        self.seat = seat
        self.teacher = teacher
        self.actor = actor  # None: the teacher's move is played
        self.encoder = encoder
        self.sink = sink
        self.temperature = temperature
        self.num_actions = num_actions

    def act(self, view: Any) -> int:
        target: np.ndarray | None = None
        if self.temperature > 0:
            label, target = soft_targets(self.teacher.action_values(view), self.num_actions, self.temperature)
        else:
            label = int(self.teacher.act(view))
        self.sink.append((self.encoder.encode(view).astype(np.float16), self.encoder.mask(view.legal_actions)
                          .astype(bool), label, self.seat, target))
        return label if self.actor is None else int(self.actor.act(view))


def _record(
    game: str, teacher: str, num_players: int, reward: str, options: dict[str, Any], seeds: list[int],
    actor: str | None = None, temperature: float = 0.0, features: tuple[str, ...] = (),
) -> tuple[Any, ...]:
    """The teacher's decision in every position of the games of ``seeds``; the moves are
    the teacher's, or with ``actor`` (an agent spec) the actor's in all seats (half of the
    games) or in one random seat."""
    from keltis_env.bots import make_bot
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    descriptor = get_game(game)
    config = descriptor.make_config(num_players=num_players, **options)
    encoder = descriptor.make_encoder(num_players, features)
    bots = [make_bot(teacher, seed=i, game=game, num_players=num_players) for i in range(num_players)]
    actor_bot = make_bot(actor, seed=0, game=game, num_players=num_players) if actor else None
    obs, masks, actions, returns, targets = [], [], [], [], []
    for seed in seeds:
        for i, bot in enumerate(bots):
            bot.seed(seed * 10 + i)
        game_rng = random.Random(seed)
        acting = set(range(num_players)) if game_rng.random() < 0.5 else {game_rng.randrange(num_players)}
        if actor_bot is None:
            acting = set()
        decisions: list[tuple[Any, ...]] = []
        seats = [_Recorder(p, bots[p], actor_bot if p in acting else None, encoder, decisions, temperature,
                           descriptor.num_actions) for p in range(num_players)]
        match = Match(descriptor, descriptor.new_state(config, seed), seats, reward=reward)
        final = match.run().rewards
        for o, m, a, p, t in decisions:
            obs.append(o)
            masks.append(m)
            actions.append(a)
            returns.append(final[p])
            if t is not None:
                targets.append(t)
    width = descriptor.num_actions if temperature > 0 else 0
    soft = np.stack(targets) if targets else np.zeros((len(actions), width), np.float16)
    return np.stack(obs), np.stack(masks), np.array(actions), np.array(returns, dtype=np.float32), soft


def record_demonstrations(config: TrainConfig, actor: str | None = None, round_: int = 0,
                          progress: bool = False) -> Demonstrations:
    """The teacher's labels (see the module doc), recorded by ``pretrain.workers``
    processes: its own games, or with ``actor`` the games of DAgger round ``round_``.
    Every game depends on its seed alone; the decisions come in the same order for any
    number of pieces the work is cut into (``progress``: a bar counting games)."""
    from tqdm import tqdm

    p = config.pretrain
    rng = random.Random(f"pretrain/{config.seed}/{round_}")
    seeds = [rng.randrange(2**62) for _ in range(p.dagger_games if actor else p.games)]
    env = config.env
    # worker i's games are seeds[i::workers], in pieces of at most _PIECE games, each piece a task
    pieces = [chunk[k : k + _PIECE] for i in range(p.workers) for chunk in [seeds[i :: p.workers]]
              for k in range(0, len(chunk), _PIECE)]
    args = [(env.game, p.teacher, env.num_players, env.reward, env.game_options(), c, actor, p.soft_temperature,
             tuple(env.features)) for c in pieces]
    with tqdm(total=len(seeds), desc=f"record {p.teacher}", unit="game", disable=not progress, leave=False) as bar:
        if p.workers == 1:
            parts = []
            for a in args:
                parts.append(_record(*a))
                bar.update(len(a[5]))
        else:
            with ProcessPoolExecutor(min(p.workers, len(args)), mp_context=get_context("forkserver")) as pool:
                futures = {pool.submit(_record, *a): len(a[5]) for a in args}  # in the order of the work
                for done in as_completed(futures):
                    bar.update(futures[done])
                parts = [f.result() for f in futures]
    return Demonstrations(*(np.concatenate([part[k] for part in parts]) for k in range(5)))


#: Games per recording task: small enough for a progress bar that moves, large enough that
#: building the bots of a task (a ``ppo:`` policy loads its network) costs little.
_PIECE = 25


def pretrain(model: Any, data: Demonstrations, config: TrainConfig, log: Any = print) -> dict[str, float]:
    """Fit ``model.policy`` to the demonstrations (cross-entropy to the teacher's soft
    targets where recorded, to its moves otherwise); returns the held-out accuracy (the
    teacher's move is the policy's most probable) and losses."""
    import torch

    from .distill import forward

    p = config.pretrain
    policy = model.policy
    rng = np.random.default_rng(config.seed)
    order = rng.permutation(len(data))
    n_val = max(1, len(data) // 20)
    val, train = order[:n_val], order[n_val:]
    optimizer = torch.optim.Adam(policy.parameters(), lr=p.learning_rate)
    policy.set_training_mode(True)

    soft = data.targets.shape[1] > 0

    def batch(idx: np.ndarray) -> tuple[Any, ...]:
        return (
            torch.as_tensor(data.obs[idx].astype(np.float32)),
            torch.as_tensor(data.actions[idx]),
            torch.as_tensor(data.masks[idx]),
            torch.as_tensor(data.returns[idx]),
            torch.as_tensor(data.targets[idx].astype(np.float32)) if soft else None,
        )

    stats: dict[str, float] = {}
    for epoch in range(p.epochs):
        rng.shuffle(train)
        for start in range(0, len(train), p.batch_size):
            obs, actions, masks, returns, targets = batch(train[start : start + p.batch_size])
            values, log_probs, _ = forward(policy, obs, masks)
            loss = _policy_loss(log_probs, masks, actions, targets) + p.value_coef * torch.nn.functional.mse_loss(
                values.flatten(), returns)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
        stats = _validate(policy, batch, val)
        log(f"pretrain epoch {epoch + 1}/{p.epochs}: teacher's action {stats['accuracy']:.1%} of held-out decisions, "
            f"policy loss {stats['policy_loss']:.3f}, value loss {stats['value_loss']:.3f}")
    policy.set_training_mode(False)
    return stats


def _policy_loss(log_probs: Any, masks: Any, actions: Any, targets: Any) -> Any:
    """Mean cross-entropy to the soft targets (legal actions only), or to the moves."""
    import torch

    if targets is None:
        return -log_probs.gather(1, actions[:, None]).mean()
    return -torch.where(masks, targets * log_probs, torch.zeros_like(log_probs)).sum(dim=1).mean()


def sharpen(model: Any, temperature: float) -> None:
    """Divide the policy's logits by ``temperature``: the output layer's weights and bias
    (masked actions stay masked, the most probable action stays the same)."""
    import torch

    with torch.no_grad():
        model.policy.action_net.weight.div_(temperature)
        model.policy.action_net.bias.div_(temperature)


def _validate(policy: Any, batch: Any, val: np.ndarray) -> dict[str, float]:
    import torch

    from .distill import forward

    hits = policy_loss = value_loss = 0.0
    with torch.no_grad():
        for start in range(0, len(val), 4096):
            obs, actions, masks, returns, targets = batch(val[start : start + 4096])
            values, log_probs, _ = forward(policy, obs, masks)
            values = values.flatten()
            hits += float((log_probs.argmax(dim=1) == actions).sum())
            policy_loss += float(_policy_loss(log_probs, masks, actions, targets)) * len(actions)
            value_loss += float(((values - returns) ** 2).sum())
    n = len(val)
    return {"accuracy": hits / n, "policy_loss": policy_loss / n, "value_loss": value_loss / n, "decisions": n}


__all__ = ["Demonstrations", "pretrain", "record_demonstrations", "sharpen", "soft_targets"]
