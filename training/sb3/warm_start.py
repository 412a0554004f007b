"""Where an SB3 run's reinforcement learning starts: the weights of a policy file
(``pretrain.init``), imitation of a teacher with DAgger rounds (:mod:`training.imitation`),
the sharpened imitation and its KL anchor (:mod:`training.sb3.distill`);
``python -m training.imitate fit``: a new network, built as a run builds it, fitted to
recordings and exported as a policy file; and ``python -m training.imitate value``: the
value head of a policy file fitted afresh to recordings, its policy left as it was.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from ..common.run_config import PretrainConfig, TrainConfig
from ..imitation.demonstrations import load_recordings
from ..imitation.fit import pretrain, sharpen
from ..imitation.record import record_demonstrations
from .model import export_policy, new_model

#: The value head's layers in an SB3 policy (its state-dict keys start with these and a dot).
VALUE_LAYERS = ("mlp_extractor.value_net", "value_net")

#: DAgger rounds start only within this share of ``max_minutes`` (imitation must leave time for RL)
DAGGER_SHARE = 0.4


def _load_init(path: str) -> Any:
    """The SB3 model in the policy file ``pretrain.init``; :class:`ConfigError` if SB3
    cannot load it."""
    from sb3_contrib import MaskablePPO

    try:
        return MaskablePPO.load(path, device="cpu", print_system_info=False)
    except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
        raise ConfigError(f"pretrain.init: {path!r} cannot be loaded ({type(exc).__name__}: {exc})") from None


def _check_disjoint(data_paths: list[str], held_out_paths: Any) -> None:
    """Refuse a recording given both to fit and to hold out."""
    overlap = sorted({str(Path(p).resolve()) for p in data_paths} & {str(Path(p).resolve()) for p in held_out_paths})
    if overlap:
        raise ConfigError(f"a recording cannot be both fitted and held out: {', '.join(overlap)}")


def init_weights(model: Any, path: str, net_arch: list[int]) -> None:
    """Load the policy and value networks of the policy file ``path`` into ``model`` (the
    optimizer starts afresh)."""
    loaded = _load_init(path)
    try:
        model.policy.load_state_dict(loaded.policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(f"pretrain.init: {path!r} has another network than ppo.net_arch "
                          f"{net_arch} ({str(exc).splitlines()[0]})") from None


def imitate_teacher(model: Any, config: TrainConfig, export: Callable[[Path], None], checkpoints: Path,
                    session_start: float, progress: bool) -> dict[str, Any]:
    """Fit ``model`` to ``pretrain.teacher``'s games, then to its labels of the games of
    ``pretrain.dagger_rounds`` DAgger rounds (each played by the policy of the round
    before, exported with ``export`` into ``checkpoints`` for the workers and removed
    after); returns the statistics the report shows."""
    cfg = config.pretrain
    start = time.perf_counter()
    log = lambda text: print(text, flush=True)  # noqa: E731
    log(f"pretrain: recording {cfg.games} games of {cfg.teacher!r}")
    data = record_demonstrations(config, progress=progress)
    log(f"pretrain: {len(data):,} decisions recorded ({time.perf_counter() - start:.0f} s)")
    stats: dict[str, Any] = pretrain(model, data, config, log=log)
    rounds = 0
    limit = config.max_minutes
    for k in range(1, cfg.dagger_rounds + 1):
        if limit and time.perf_counter() - session_start > 60 * limit * DAGGER_SHARE:
            log(f"pretrain: DAgger rounds from {k} on skipped: past {DAGGER_SHARE:.0%} of max_minutes ({limit:g})")
            break
        actor = checkpoints / f"pretrain_{k - 1}.zip"
        export(actor)
        log(f"pretrain: DAgger round {k}/{cfg.dagger_rounds}, recording {cfg.dagger_games} games "
            f"({time.perf_counter() - start:.0f} s)")
        data = data + record_demonstrations(config, actor=f"ppo:{actor}", round_=k, progress=progress)
        stats = pretrain(model, data, config, log=log)
        actor.unlink()
        rounds = k
    log(f"pretrain: done ({time.perf_counter() - start:.0f} s)")
    stats.update(teacher=cfg.teacher, games=cfg.games + rounds * cfg.dagger_games,
                 dagger_rounds=rounds, decisions_recorded=len(data),
                 soft_temperature=cfg.soft_temperature, anchor=cfg.anchor,
                 seconds=round(time.perf_counter() - start, 1))
    return stats


def sharpen_and_anchor(model: Any, cfg: PretrainConfig, export: Callable[[Path], None], anchor: Path) -> None:
    """Divide the warm-started policy's logits by ``pretrain.temperature``, then freeze it
    as the anchor of reinforcement learning (exported to ``anchor``, :mod:`training.sb3.distill`)."""
    if cfg.temperature != 1.0:
        sharpen(model, cfg.temperature)
    if cfg.anchor <= 0:
        return
    from .distill import load_anchor

    export(anchor)
    model.set_anchor(load_anchor(anchor), cfg.anchor, cfg.anchor_steps, start=model.num_timesteps)


def restore_anchor(model: Any, cfg: PretrainConfig, anchor: Path) -> None:
    """A resumed run's anchor, from ``anchor`` (when the run has one)."""
    if cfg.anchor <= 0 or not anchor.is_file():
        return
    from keltis_env.policy import PolicyLoadError, load_policy

    from .distill import load_anchor

    try:
        load_policy(anchor)  # a truncated or corrupt file is named before torch reads it
    except PolicyLoadError as exc:
        raise ConfigError(f"cannot resume: the anchor policy is unusable: {exc}") from None
    start = int(getattr(model, "anchor_start", 0))
    model.set_anchor(load_anchor(anchor), cfg.anchor, cfg.anchor_steps, start=start)


def fit_policy(config: TrainConfig, data_paths: list[str], out: str | Path, log: Any = print,
               held_out_paths: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    """Fit a new policy to the recordings (``python -m training.imitate fit``) and export it
    to ``out``; the held-out statistics: on the recordings ``held_out_paths`` (whole games
    never fitted) when given, else on a random 5% of the fitted decisions."""
    import torch

    from .envs import make_vec_env

    _check_disjoint(data_paths, held_out_paths)
    data = load_recordings(config, data_paths)
    held_out = load_recordings(config, list(held_out_paths)) if held_out_paths else None
    # the network as a run builds it: one learner game in this process is enough for its spaces
    built = dataclasses.replace(config, vec_env="dummy", n_envs=1,
                                ppo=dataclasses.replace(config.ppo, n_steps=config.ppo.batch_size))
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(built, ["random"], [1.0])
    try:
        model = new_model(built, venv)
        if config.pretrain.init:  # a warm start: the file's policy and value networks
            init_weights(model, config.pretrain.init, config.ppo.net_arch)
        width = model.observation_space.shape[0]
        if data.obs.shape[1] != width or data.masks.shape[1] != model.action_space.n:
            raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                              f"{data.masks.shape[1]} actions; this config's network takes {width} and "
                              f"{model.action_space.n}")
        kept = f", {len(held_out):,} held out" if held_out is not None else ""
        start = f", from {config.pretrain.init}" if config.pretrain.init else ""
        log(f"fit: {len(data):,} decisions of {len(data_paths)} recording(s){kept}, {config.pretrain.epochs} epochs"
            f"{start}")
        stats = pretrain(model, data, config, log=log, held_out=held_out)
        env = config.env
        export_policy(model, Path(out), env.game, env.num_players, env.features, value_reward=env.reward)
    finally:
        venv.close()
    return stats


def fit_value(config: TrainConfig, data_paths: list[str], held_out_paths: list[str], out: str | Path,
              log: Any = print) -> dict[str, float]:
    """Fit the value head of the policy file ``pretrain.init`` afresh to the final rewards
    (``env.reward``) of the recordings at ``data_paths``, and export it to ``out`` with its
    policy untouched (``python -m training.imitate value``). The value layers start from new
    weights; only they are trained, for ``pretrain.epochs`` passes of minibatches of
    ``pretrain.batch_size`` at ``pretrain.learning_rate``, and the head kept is the one of
    the epoch with the least squared error on the held-out recordings (whole games never
    fitted: the decisions of one game share its outcome). Returns the held-out statistics:
    ``value_loss`` (the kept epoch's), ``value_loss_mean_guess`` (always guessing the mean
    reward of the fitted part), ``value_loss_before`` (the file's own head), ``epoch``."""
    import copy

    import numpy as np
    import torch

    from keltis_env.policy import PolicyLoadError, read_policy_info

    path = config.pretrain.init
    if not path:
        raise ConfigError("pretrain.init: give the policy file whose value head is fitted (e.g. --set "
                          "pretrain.init=policies/keltis_2p.zip)")
    if not held_out_paths:
        raise ConfigError("give --held-out NPZ: the value head is kept at its best epoch on games never fitted")
    _check_disjoint(data_paths, held_out_paths)
    env = config.env
    try:  # the config checked the file's game, players and features (pretrain.init)
        info = read_policy_info(path)
    except PolicyLoadError as exc:
        raise ConfigError(f"pretrain.init: {exc}") from None
    data = load_recordings(config, data_paths)
    held_out = load_recordings(config, held_out_paths)
    if data.obs.shape[1] != info.observation_size or data.masks.shape[1] != info.num_actions:
        raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                          f"{data.masks.shape[1]} actions; {path!r} takes {info.observation_size} and "
                          f"{info.num_actions}")
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    model = _load_init(path)
    policy = model.policy
    layers = [policy.get_submodule(name) for name in VALUE_LAYERS]
    params = [q for layer in layers for q in layer.parameters()]
    p = config.pretrain

    def held_loss() -> float:
        policy.set_training_mode(False)
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(held_out), 4096):
                obs = torch.as_tensor(held_out.obs[start : start + 4096].astype(np.float32))
                values = policy.predict_values(obs).flatten()
                total += float(((values - torch.as_tensor(held_out.returns[start : start + 4096])) ** 2).sum())
        return total / len(held_out)

    stats = {"value_loss_before": held_loss(),
             "value_loss_mean_guess": float(np.mean((held_out.returns - data.returns.mean()) ** 2)),
             "decisions_fitted": float(len(data)), "decisions_held_out": float(len(held_out))}
    for module in (m for layer in layers for m in layer.modules()):
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    optimizer = torch.optim.Adam(params, lr=p.learning_rate)
    rng = np.random.default_rng(config.seed)
    log(f"value: fitting {len(data):,} decisions of {len(data_paths)} recording(s), {len(held_out):,} held out, "
        f"{p.epochs} epochs; held-out squared error of {path!r}'s head {stats['value_loss_before']:.4f}, of "
        f"guessing the mean {stats['value_loss_mean_guess']:.4f}")
    best: tuple[float, int, Any] | None = None
    for epoch in range(1, p.epochs + 1):
        policy.set_training_mode(True)
        order = rng.permutation(len(data))
        for start in range(0, len(order), p.batch_size):
            idx = np.sort(order[start : start + p.batch_size])
            values = policy.predict_values(torch.as_tensor(data.obs[idx].astype(np.float32))).flatten()
            loss = torch.nn.functional.mse_loss(values, torch.as_tensor(data.returns[idx]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        loss_now = held_loss()
        log(f"value epoch {epoch}/{p.epochs}: held-out squared error {loss_now:.4f} "
            f"({loss_now / max(stats['value_loss_mean_guess'], 1e-12):.3f} of guessing the mean)")
        if best is None or loss_now < best[0]:
            best = (loss_now, epoch, copy.deepcopy([layer.state_dict() for layer in layers]))
    assert best is not None
    for layer, state in zip(layers, best[2], strict=True):
        layer.load_state_dict(state)
    policy.set_training_mode(False)
    export_policy(model, Path(out), env.game, env.num_players, env.features, value_reward=env.reward)
    stats.update(value_loss=best[0], epoch=float(best[1]))
    return stats


__all__ = ["DAGGER_SHARE", "VALUE_LAYERS", "fit_policy", "fit_value", "imitate_teacher", "init_weights",
           "restore_anchor", "sharpen_and_anchor"]
