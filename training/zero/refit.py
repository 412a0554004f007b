"""Refit a network on a run's replay buffer, its newest generations held out: how close a
network comes to the search's targets on positions it was not fitted on, and the policy file
it makes (a probe of whether a run's fits are too light or its network's reach is the bound).

    python -m training.zero.refit runs/zero_2p_selfplay_s0 --start policies/keltis_2p.zip --out runs/refit.zip

The samples are the generations whose files are in ``RUN/buffer/`` (the run's replay buffer);
the newest ``--held`` are held out. The fit is the run's (:func:`.loop.fit_minibatches`: its
batch size, value weight and weight decay) for ``--passes`` times the fitted samples, with
``--learning-rate``; before it and after every quarter of it a line gives the KL of the
held-out targets to the network (:func:`.loop.target_errors`), the share of held-out
positions where the network's most likely move is the targets', the value's squared error
there, and the same KL and share on the fitted samples. ``--sharpen T`` fits the targets
raised to the power ``1/T`` and renormalised (0: the targets' most likely move alone), a
probe of whether the targets' choices, rather than their weights, carry what the network
can learn; the KLs and shares are always those of the targets as the search gave them.
``--widen N`` starts from the file's network with every hidden layer N units wide and the
same function (the new units' outgoing weights zero): whether a larger network comes
closer to the targets on new positions. ``--out`` is written as the run's files are (its
observation features and relabellings).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..common.cli import print_error_line, quiet_threads
from ..common.config import ConfigError

quiet_threads()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.zero.refit", description=__doc__.split("\n\n")[0])
    p.add_argument("run", metavar="RUN_DIR", help="a run folder of python -m training.zero")
    p.add_argument("--start", metavar="POLICY", help="the policy file fitted (default RUN_DIR/network.zip)")
    p.add_argument("--out", required=True, metavar="PATH", help="the policy file written after the fit")
    p.add_argument("--held", type=int, default=1, metavar="N", help="newest generations held out (default 1)")
    p.add_argument("--passes", type=float, default=4.0, help="samples fitted, in passes over the rest (default 4)")
    p.add_argument("--learning-rate", type=float, default=3e-4, help="Adam's step size (default 3e-4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the minibatches (default 0)")
    p.add_argument("--sharpen", type=float, default=1.0, metavar="T", help="fit the targets sharpened: raised to "
                   "the power 1/T and renormalised, 0 for their most likely move alone (default 1: as they are)")
    p.add_argument("--widen", type=int, metavar="N", help="widen every hidden layer of the start to N units, "
                   "its function kept (new units' outgoing weights zero)")
    p.add_argument("--augment", metavar="NAME", help="the game's relabellings the samples are shown under, one drawn "
                   "at random each time (default: the run's fit.augment; none: no relabelling)")
    return p


def split_buffer(run: Path, held: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[int]]:
    """The fitted and the held-out samples of ``run``'s buffer files, and the generations read."""
    from .loop import SAMPLE_KEYS, sample_arrays

    files = sorted((run / "buffer").glob("gen_*.npz"))
    if held < 1 or len(files) <= held:
        raise ConfigError(f"--held must be from 1 to {len(files) - 1} ({run / 'buffer'} holds {len(files)} "
                          f"generations' files), got {held}")
    parts = []
    for path in files:
        with np.load(path) as data:
            parts.append(sample_arrays(data))

    def join(chosen: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {k: np.concatenate([p[k] for p in chosen]) for k in SAMPLE_KEYS}

    generations = [int(p.stem.removeprefix("gen_")) for p in files]
    return join(parts[:-held]), join(parts[-held:]), generations


def sharpened(data: dict[str, np.ndarray], temperature: float) -> dict[str, np.ndarray]:
    """``data`` with its policy targets raised to the power ``1 / temperature`` over the legal
    moves and renormalised; ``temperature`` 0: all on each target's most likely legal move."""
    if temperature == 1:
        return data
    p = np.where(data["mask"], data["policy"].astype(np.float64), 0.0)
    if temperature == 0:
        q = np.zeros_like(p)
        q[np.arange(len(p)), np.where(data["mask"], p, -1.0).argmax(axis=1)] = 1.0
    else:
        q = (p / np.maximum(p.max(axis=1, keepdims=True), 1e-300)) ** (1.0 / temperature)
        q /= q.sum(axis=1, keepdims=True)
    return {**data, "policy": q.astype(np.float32)}


def widened(model: Any, width: int, config: Any) -> Any:
    """A model of ``config``'s spaces whose hidden layers are ``width`` units wide, computing
    what ``model`` computes: each layer's old weights in its first rows and columns, the new
    units' incoming weights and biases as a fresh network of ``config.seed`` draws them, and
    every weight that reads a new unit zero."""
    import torch

    from .loop import fresh_model

    old = model.policy.state_dict()
    sizes = [int(v.shape[0]) for k, v in old.items() if k.startswith("mlp_extractor.policy_net.") and v.ndim == 2]
    if not width >= max(sizes):
        raise ConfigError(f"--widen must be at least the start's widest hidden layer ({max(sizes)}), got {width}")
    activation = "relu" if any(isinstance(m, torch.nn.ReLU) for m in model.policy.mlp_extractor.modules()) else "tanh"
    network = dataclasses.replace(config.network, net_arch=[width] * len(sizes), activation=activation)
    wide = fresh_model(dataclasses.replace(config, network=network))
    state = wide.policy.state_dict()
    with torch.no_grad():
        for key, value in old.items():
            new = state[key].clone()
            if value.ndim == 2 and new.shape[1] != value.shape[1]:
                new[:, value.shape[1]:] = 0.0  # reads the new units
            new[tuple(slice(0, n) for n in value.shape)] = value
            state[key] = new
    wide.policy.load_state_dict(state)
    return wide


def refit(args: argparse.Namespace, log: Any = print) -> dict[str, float]:
    import torch

    from ..common.sections import check_policy_file
    from ..imitate.network import export_policy, load_model
    from .config import check, load_resume_config
    from .loop import augment_symmetry, fit_minibatches, target_errors

    run = Path(args.run)
    config = load_resume_config(run)
    if config.critic == "full":
        raise ConfigError(f"{run} fits a critic that reads the hidden cards; refit takes runs with critic: seat")
    start = args.start or str(run / "network.zip")
    check_policy_file(start, config.env, "--start", value_head=True)
    if not (args.passes > 0 and args.learning_rate > 0 and math.isfinite(args.passes * args.learning_rate)):
        raise ConfigError(f"--passes and --learning-rate must be positive, got {args.passes}, {args.learning_rate}")
    if not 0 <= args.sharpen <= 1:
        raise ConfigError(f"--sharpen must be from 0 (the most likely move) to 1 (the targets as they are), "
                          f"got {args.sharpen}")
    out = Path(args.out)
    if out.suffix != ".zip" or not out.parent.is_dir():
        raise ConfigError(f"--out must be a .zip file in an existing folder, got {args.out!r}")
    if args.augment is not None:
        config = dataclasses.replace(config, fit=dataclasses.replace(config.fit, augment=args.augment))
        check(config)
    symmetry = augment_symmetry(config)
    fitted, held, generations = split_buffer(run, args.held)
    torch.manual_seed(args.seed)
    model = load_model(start)
    if args.widen is not None:
        model = widened(model, args.widen, config)
    policy = model.policy
    policy.set_training_mode(False)
    fit = config.fit
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, weight_decay=fit.weight_decay)
    steps = max(1, math.ceil(args.passes * len(fitted["value"]) / fit.batch_size))
    log(f"{start}: fitted on generations {generations[0]}-{generations[-1 - args.held]} "
        f"({len(fitted['value']):,} samples), held out {generations[-args.held]}-{generations[-1]} "
        f"({len(held['value']):,}); {steps:,} steps of {fit.batch_size}")
    rng = np.random.default_rng([args.seed, 0x5A])
    shown = sharpened(fitted, args.sharpen)
    done, errors = 0, target_errors(policy, held)
    log(f"step 0: held out KL {errors['kl']:.4f}, moves agreed {errors['agree']:.1%}, value error "
        f"{errors['value_error']:.5f}")
    for quarter in range(1, 5):
        todo = steps * quarter // 4 - done
        if todo:
            fit_minibatches(policy, optimizer, shown, todo, fit.batch_size, fit.value_coef, rng, symmetry,
                            fit.search_value)
            done += todo
        errors = target_errors(policy, held)
        on_fitted = target_errors(policy, fitted)
        errors["fitted_kl"], errors["fitted_agree"] = on_fitted["kl"], on_fitted["agree"]
        log(f"step {done:,}: held out KL {errors['kl']:.4f}, moves agreed {errors['agree']:.1%}, value error "
            f"{errors['value_error']:.5f}; fitted samples' moves agreed {errors['fitted_agree']:.1%}, KL "
            f"{errors['fitted_kl']:.4f}")
    env = config.env
    export_policy(model, out, env.game, env.num_players, env.features, value_reward=env.reward,
                  symmetry=config.symmetry)
    log(f"wrote {args.out}")
    return errors


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        refit(args)
    except ConfigError as exc:
        print_error_line(f"python -m training.zero.refit: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
