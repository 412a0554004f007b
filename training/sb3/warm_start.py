"""Where an SB3 run's reinforcement learning starts: the weights of a policy file
(``init``), imitation of a teacher with DAgger rounds (:mod:`training.imitate`),
the sharpened imitation and its KL anchor (:mod:`training.sb3.distill`);
``python -m training.imitate fit``: a new network, built as a run builds it, fitted to
recordings and exported as a policy file; and ``python -m training.imitate value``: the
value head of a policy file fitted afresh to recordings, its policy left as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from ..imitate.config import ImitateConfig
from ..imitate.demonstrations import load_recordings
from ..imitate.fit import fit_demonstrations, sharpen
from ..imitate.record import record_demonstrations
from ..imitate.select import play_selector
from .config import PretrainConfig, TrainConfig
from .model import export_policy, policy_model

#: The value head's layers in an SB3 policy (its state-dict keys start with these and a dot).
VALUE_LAYERS = ("mlp_extractor.value_net", "value_net")

#: DAgger rounds start only within this share of ``max_minutes`` (imitation must leave time for RL)
DAGGER_SHARE = 0.4


def _load_init(path: str) -> Any:
    """The SB3 model in the policy file ``init``; :class:`ConfigError` if SB3 cannot load it."""
    from sb3_contrib import MaskablePPO

    try:
        return MaskablePPO.load(path, device="cpu", print_system_info=False)
    except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
        raise ConfigError(f"init: {path!r} cannot be loaded ({type(exc).__name__}: {exc})") from None


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
        raise ConfigError(f"init: {path!r} has another network than network.net_arch "
                          f"{net_arch} ({str(exc).splitlines()[0]})") from None


def imitate_teacher(model: Any, config: TrainConfig, export: Callable[[Path], None], checkpoints: Path,
                    session_start: float, progress: bool) -> dict[str, Any]:
    """Fit ``model`` to ``record.teacher``'s games, then to its labels of the games of
    ``record.dagger_rounds`` DAgger rounds (each played by the policy of the round
    before, exported with ``export`` into ``checkpoints`` for the workers and removed
    after); returns the statistics the report shows."""
    cfg, env, seed = config.record, config.env, config.seed
    start = time.perf_counter()
    log = lambda text: print(text, flush=True)  # noqa: E731
    log(f"pretrain: recording {cfg.games} games of {cfg.teacher!r}")
    data = record_demonstrations(env, cfg, seed, config.workers, progress=progress)
    log(f"pretrain: {len(data):,} decisions recorded ({time.perf_counter() - start:.0f} s)")
    select = play_selector(export, checkpoints / "fit_select.zip", config.fit, env, seed, config.workers, log=log)
    stats: dict[str, Any] = fit_demonstrations(model, data, config.fit, env, seed, log=log, select=select)
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
        data = data + record_demonstrations(env, cfg, seed, config.workers, actor=f"ppo:{actor}", round_=k,
                                            progress=progress)
        stats = fit_demonstrations(model, data, config.fit, env, seed, log=log, select=select, select_start=True)
        actor.unlink()
        rounds = k
    log(f"pretrain: done ({time.perf_counter() - start:.0f} s)")
    stats.update(teacher=cfg.teacher, games=cfg.games + rounds * cfg.dagger_games,
                 dagger_rounds=rounds, decisions_recorded=len(data),
                 soft_temperature=cfg.target_temperature, anchor=config.pretrain.anchor,
                 seconds=round(time.perf_counter() - start, 1))
    return stats


def sharpen_and_anchor(model: Any, cfg: PretrainConfig, export: Callable[[Path], None], anchor: Path) -> None:
    """Divide the warm-started policy's logits by ``pretrain.sharpen``, then freeze it
    as the anchor of reinforcement learning (exported to ``anchor``, :mod:`training.sb3.distill`)."""
    if cfg.sharpen != 1.0:
        sharpen(model, cfg.sharpen)
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


def fit_policy(config: ImitateConfig, data_paths: list[str], out: str | Path, log: Any = print,
               held_out_paths: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    """Fit a new policy (or, with ``init``, that file's) to the recordings (``python -m
    training.imitate fit``) and export it to ``out``; the held-out statistics: on the
    recordings ``held_out_paths`` (whole games never fitted) when given, else on a random 5%
    of the fitted decisions."""
    import torch

    _check_disjoint(data_paths, held_out_paths)
    env, fit = config.env, config.fit
    data = load_recordings(env, data_paths, fit.target_temperature)
    held_out = load_recordings(env, list(held_out_paths), fit.target_temperature) if held_out_paths else None
    torch.set_num_threads(config.torch_threads)
    model = policy_model(env, config.network, config.seed)  # the network as a run builds it
    if config.init:  # a warm start: the file's policy and value networks
        init_weights(model, config.init, config.network.net_arch)
    width = model.observation_space.shape[0]
    if data.obs.shape[1] != width or data.masks.shape[1] != model.action_space.n:
        raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                          f"{data.masks.shape[1]} actions; this config's network takes {width} and "
                          f"{model.action_space.n}")
    kept = f", {len(held_out):,} held out" if held_out is not None else ""
    start = f", from {config.init}" if config.init else ""
    log(f"fit: {len(data):,} decisions of {len(data_paths)} recording(s){kept}, {fit.epochs} epochs{start}")
    out = Path(out)

    def export(path: Path) -> None:
        export_policy(model, path, env.game, env.num_players, env.features, value_reward=env.reward)

    select = play_selector(export, out.with_name(f".{out.stem}.select.zip"), fit, env, config.seed, config.workers,
                           log=log)
    stats = fit_demonstrations(model, data, fit, env, config.seed, log=log, held_out=held_out, select=select,
                               select_start=bool(config.init))
    export(out)
    return stats


def fit_value(config: ImitateConfig, data_paths: list[str], held_out_paths: list[str], out: str | Path,
              log: Any = print) -> dict[str, float]:
    """Fit the value head of the policy file ``init`` afresh to the final rewards
    (``env.reward``) of the recordings at ``data_paths``, and export it to ``out`` with its
    policy untouched (``python -m training.imitate value``). The value layers start from new
    weights; only they are trained, for ``fit.epochs`` passes of minibatches of
    ``fit.batch_size`` at ``fit.learning_rate``, and the head kept is the one of
    the epoch with the least squared error on the held-out recordings (whole games never
    fitted: the decisions of one game share its outcome). Returns the held-out statistics:
    ``value_loss`` (the kept epoch's), ``value_loss_mean_guess`` (always guessing the mean
    reward of the fitted part), ``value_loss_before`` (the file's own head), ``epoch``."""
    import numpy as np
    import torch

    path, data, held_out = _value_recordings(config, data_paths, held_out_paths)
    env = config.env
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    model = _load_init(path)
    policy = model.policy
    layers = [policy.get_submodule(name) for name in VALUE_LAYERS]
    p = config.fit
    stats = {"value_loss_before": _held_out_loss(policy, held_out),
             "value_loss_mean_guess": float(np.mean((held_out.returns - data.returns.mean()) ** 2)),
             "decisions_fitted": float(len(data)), "decisions_held_out": float(len(held_out))}
    for module in (m for layer in layers for m in layer.modules()):
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    log(f"value: fitting {len(data):,} decisions of {len(data_paths)} recording(s), {len(held_out):,} held out, "
        f"{p.epochs} epochs; held-out squared error of {path!r}'s head {stats['value_loss_before']:.4f}, of "
        f"guessing the mean {stats['value_loss_mean_guess']:.4f}")
    loss, epoch, best = _fit_value_layers(policy, layers, data, held_out, p, config.seed,
                                          stats["value_loss_mean_guess"], log)
    for layer, state in zip(layers, best, strict=True):
        layer.load_state_dict(state)
    policy.set_training_mode(False)
    export_policy(model, Path(out), env.game, env.num_players, env.features, value_reward=env.reward)
    stats.update(value_loss=loss, epoch=float(epoch))
    return stats


def _value_recordings(config: ImitateConfig, data_paths: list[str], held_out_paths: list[str]) -> tuple[str, Any, Any]:
    """:func:`fit_value`'s policy file (``init``), fitted recordings and held-out recordings,
    checked against each other."""
    from keltis_env.policy import PolicyLoadError, read_policy_info

    path = config.init
    if not path:
        raise ConfigError("init: give the policy file whose value head is fitted (e.g. --set "
                          "init=policies/keltis_2p.zip)")
    if not held_out_paths:
        raise ConfigError("give --held-out NPZ: the value head is kept at its best epoch on games never fitted")
    _check_disjoint(data_paths, held_out_paths)
    env = config.env
    try:  # the config checked the file's game, players and features (init)
        info = read_policy_info(path)
    except PolicyLoadError as exc:
        raise ConfigError(f"init: {exc}") from None
    data = load_recordings(env, data_paths, 0.0)  # the rewards are fitted, never the policy targets
    held_out = load_recordings(env, held_out_paths, 0.0)
    if data.obs.shape[1] != info.observation_size or data.masks.shape[1] != info.num_actions:
        raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                          f"{data.masks.shape[1]} actions; {path!r} takes {info.observation_size} and "
                          f"{info.num_actions}")
    return path, data, held_out


def _held_out_loss(policy: Any, held_out: Any) -> float:
    """The mean squared error of ``policy``'s values on the final rewards of ``held_out``."""
    import numpy as np
    import torch

    policy.set_training_mode(False)
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(held_out), 4096):
            obs = torch.as_tensor(held_out.obs[start : start + 4096].astype(np.float32))
            values = policy.predict_values(obs).flatten()
            total += float(((values - torch.as_tensor(held_out.returns[start : start + 4096])) ** 2).sum())
    return total / len(held_out)


def _fit_value_layers(policy: Any, layers: list[Any], data: Any, held_out: Any, p: Any, seed: int,
                      mean_guess: float, log: Any) -> tuple[float, int, list[Any]]:
    """Train ``layers`` (the value layers of ``policy``) on the final rewards of ``data`` for
    ``p.epochs`` epochs (``p``: the ``fit`` section); returns the held-out loss, the number
    and the layers' states of the epoch with the least held-out loss."""
    import copy

    import numpy as np
    import torch

    params = [q for layer in layers for q in layer.parameters()]
    optimizer = torch.optim.Adam(params, lr=p.learning_rate)
    rng = np.random.default_rng(seed)
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
        loss_now = _held_out_loss(policy, held_out)
        log(f"value epoch {epoch}/{p.epochs}: held-out squared error {loss_now:.4f} "
            f"({loss_now / max(mean_guess, 1e-12):.3f} of guessing the mean)")
        if best is None or loss_now < best[0]:
            best = (loss_now, epoch, copy.deepcopy([layer.state_dict() for layer in layers]))
    assert best is not None
    return best


__all__ = ["DAGGER_SHARE", "VALUE_LAYERS", "fit_policy", "fit_value", "imitate_teacher", "init_weights",
           "restore_anchor", "sharpen_and_anchor"]
