"""The network imitation fits, outside a run and inside one: a MaskablePPO model of the
``network`` section with fresh weights, a policy file's model loaded, a model exported as a
policy file (``ppo:PATH`` plays it); ``python -m training.imitate fit``: a new network,
built as a run builds it, fitted to recordings and exported as a policy file; and
``python -m training.imitate value``: the value head of a policy file fitted afresh to
recordings, its policy left as it was.

The SB3 runs (:mod:`training.sb3`) build on these; this module imports nothing of them, so
the dependency between imitation and the SB3 runs goes one way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path
from keltis_env.policy import write_policy_info

from ..common.config import ConfigError
from ..common.sections import EnvConfig
from .config import ImitateConfig, NetworkConfig
from .demonstrations import load_recordings
from .fit import fit_demonstrations
from .select import play_selector

#: The value head's layers in an SB3 policy (its state-dict keys start with these and a dot).
VALUE_LAYERS = ("mlp_extractor.value_net", "value_net")


def load_model(path: str) -> Any:
    """The SB3 model in the policy file ``path`` (``init``); :class:`ConfigError` if SB3 cannot load it."""
    from sb3_contrib import MaskablePPO

    try:
        return MaskablePPO.load(path, device="cpu", print_system_info=False)
    except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
        raise ConfigError(f"init: {path!r} cannot be loaded ({type(exc).__name__}: {exc})") from None


def init_weights(model: Any, path: str, net_arch: list[int]) -> None:
    """Load the policy and value networks of the policy file ``path`` into ``model`` (the
    optimizer starts afresh)."""
    loaded = load_model(path)
    try:
        model.policy.load_state_dict(loaded.policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(f"init: {path!r} has another network than network.net_arch "
                          f"{net_arch} ({str(exc).splitlines()[0]})") from None


def policy_model(env: EnvConfig, network: NetworkConfig, seed: int) -> Any:
    """A MaskablePPO model with fresh weights (seeded by ``seed``) of ``network`` for the
    learner's observation and actions in the game of ``env``: the network a run builds from
    the same seed, for fits outside a run (``python -m training.imitate fit``)."""
    import torch
    from sb3_contrib import MaskablePPO

    from keltis_env.envs.learner import KeltisLearnerEnv

    learner = KeltisLearnerEnv(num_players=env.num_players, opponents=["random"], reward=env.reward, game=env.game,
                               features=env.features, **env.game_options())
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[network.activation]
    return MaskablePPO("MlpPolicy", learner, policy_kwargs={
        "net_arch": {"pi": list(network.net_arch), "vf": list(network.net_arch)}, "activation_fn": activation},
        seed=seed, device="cpu", verbose=0)


def export_policy(model: Any, path: Path, game: str, num_players: int, features: Any = (),
                  value_reward: str | None = None, symmetry: str = "", value_head: bool = True) -> None:
    """Save ``model`` for playing (``ppo:PATH``) in ``game`` with ``num_players`` (and the
    observation ``features`` it was trained with): a normal
    MaskablePPO zip, still loadable by ``MaskablePPO.load``, with the policy's metadata
    (:func:`keltis_env.policy.write_policy_info`; ``value_reward``: the reward mode its
    value head was trained on) and a fresh optimizer, so without Adam's
    moment estimates (two thirds of a full checkpoint); ``symmetry``: the game's relabellings
    it plays averaged over ("" none); ``value_head=False``: its value layers are not to be
    read (an actor whose critic read hidden information). Written atomically."""
    policy = model.policy
    optimizer = policy.optimizer
    policy.optimizer = type(optimizer)(policy.parameters(), **optimizer.defaults)
    try:
        with atomic_path(path) as tmp:
            model.save(tmp)
            write_policy_info(tmp, game, num_players, features, value_reward=value_reward, symmetry=symmetry,
                              value_head=value_head)
    finally:
        policy.optimizer = optimizer


def _check_disjoint(data_paths: list[str], held_out_paths: Any) -> None:
    """Refuse a recording given both to fit and to hold out."""
    overlap = sorted({str(Path(p).resolve()) for p in data_paths} & {str(Path(p).resolve()) for p in held_out_paths})
    if overlap:
        raise ConfigError(f"a recording cannot be both fitted and held out: {', '.join(overlap)}")


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
    model = load_model(path)
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


__all__ = ["VALUE_LAYERS", "export_policy", "fit_policy", "fit_value", "init_weights", "load_model",
           "policy_model"]
