"""The training kit's recipe files on RLlib: ``backend: rllib`` in a file of
``python -m training.train`` (its keys: ``python -m training.train --describe``).

    .venv-distributed/bin/python -m training.train --config configs/recipes/keltis_2p_rllib.yaml

The kit's config (loaded and checked by the SB3 loader, which this package does not import:
it arrives as an object) becomes an :class:`~training.rllib.config.RLlibConfig`, run by
:func:`training.rllib.recipe.train` with its run folder, progress lines, ``progress.csv``,
TensorBoard logs, checkpoints, resume and ``report.json``. How the keys map (:func:`to_rllib`):

=========================  ====================================================================
kit key                    RLlib recipe
=========================  ====================================================================
name, seed                 name, seed (``seed`` also seeds the final evaluation: eval.seed)
total_timesteps            stop.learner_steps: decisions of ``main`` (the budget track's count)
max_minutes                stop.minutes (of the training loop; 0: none)
workers, n_envs            resources.env_runners = workers (0: sampling in the driver);
                           resources.envs_per_runner = n_envs / workers (a whole number)
torch_threads              resources.torch_threads
checkpoint_every           checkpoint_every: iterations of ppo.n_steps x n_envs steps, rounded up
init, pretrain.sharpen     warm_start.file, warm_start.sharpen (:mod:`training.rllib.warm_start`)
pretrain.anchor(_steps)    warm_start.anchor(_steps): the KL anchor (:mod:`training.rllib.learner`)
play_symmetry              model.symmetry (how the trained module plays as a bot)
relabel                    env.relabel (main's games played under relabellings drawn at the deal)
env.*                      env.game, num_players, reward (win, score, shaped), turn_cap;
                           max_turns and options: env.options
network.*                  model.hidden (net_arch), model.activation
ppo.*                      lr, train_batch (n_steps x n_envs), minibatch (batch_size),
                           epochs, gamma, lambda (gae_lambda), clip, entropy, vf_coeff, grad_clip;
                           kl_coeff 0 (the kit's PPO, SB3's, clips and has no KL penalty)
pool.weights               ``self`` (the snapshots together): league.weights.league; every
                           other key a bot of the game by name: league.bots and its weight
pool.snapshot_every        league.snapshot_every: iterations, rounded, at least 1
pool.max_snapshots         league.slots (every slot starts as the learner starts)
eval.opponents             eval.opponents; eval.final_games: eval.games; eval.warm_start
eval.every, games, best_by eval.every (learner steps), eval.select_games, eval.best_by
=========================  ====================================================================

The kit's other keys have no RLlib counterpart (:data:`UNSUPPORTED`): a file (or its base,
or ``--set``) that gives one is refused naming it, unless it gives the one value that means
what RLlib does (``ppo.target_kl: null``, ``pool.prioritize: 0``...); their SB3 defaults do not
apply. RLlib's own settings the kit has no key for keep the RLlib recipe's defaults
(``python -m training.rllib --describe``): ``league.weights.self`` (the learner against
itself) 0, ``keep_checkpoints``, ``resources.num_cpus`` (at least ``workers``).
"""

from __future__ import annotations

import math
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.config import ConfigError, apply_override, build, read_with_base, sections
from .config import RLlibConfig, validate

_ANY = object()
#: kit keys RLlib does not honour: key -> (the one value that means what RLlib does, or
#: ``_ANY`` for none; why). A section's name stands for all its keys.
UNSUPPORTED: dict[str, tuple[Any, str]] = {
    "pipeline": (_ANY, "the SB3 collector's overlap of games and updates; RLlib's env runners sample on their own"),
    "collector_backend": (_ANY, "the SB3 collector's engine; RLlib's env runners step the Python engine"),
    "env.features": ([], "the RLlib environment adapter observes without optional features"),
    "ppo.lr_schedule": ("constant", "the RLlib recipe's learning rate is constant"),
    "ppo.target_kl": (None, "RLlib's PPO does not stop an update early on its KL"),
    "pool.prioritize": (0, "the RLlib league draws its opponents by their weights alone"),
    "eval.games_by": ({}, "the RLlib recipe plays eval.games against every opponent"),
    "pool.window": (_ANY, "the RLlib league keeps no per-opponent win rates for prioritising"),
    "record": (_ANY, "imitation of a teacher runs in the SB3 kit: make its warm start there (checkpoints/"
               "warm_start.zip) and give it as init"),
    "fit": (_ANY, "imitation of a teacher runs in the SB3 kit"),
}
#: the kit keys :func:`to_rllib` carries over (the module doc's table)
MAPPED = ("name", "backend", "seed", "total_timesteps", "max_minutes", "n_envs", "workers", "torch_threads",
          "checkpoint_every", "runs_dir", "init", "play_symmetry", "relabel", "env.game", "env.num_players",
          "env.reward", "env.max_turns", "env.turn_cap", "env.options", "network.net_arch", "network.activation",
          "ppo.learning_rate", "ppo.n_steps", "ppo.batch_size", "ppo.n_epochs", "ppo.gamma", "ppo.gae_lambda",
          "ppo.clip_range", "ppo.ent_coef", "ppo.vf_coef", "ppo.max_grad_norm", "pool.weights",
          "pool.snapshot_every", "pool.max_snapshots", "eval.opponents", "eval.final_games", "eval.warm_start",
          "eval.every", "eval.games", "eval.best_by",
          "pretrain.sharpen", "pretrain.anchor", "pretrain.anchor_steps")
#: the kit's resolved config in the run folder of a kit recipe on RLlib
KIT_FILE = "kit.yaml"
#: ``--set`` keys of the kit that a resumed RLlib run takes, and the RLlib keys they are
RESUME_KEYS = {"total_timesteps": "stop.learner_steps", "max_minutes": "stop.minutes",
               "eval.final_games": "eval.games", "eval.opponents": "eval.opponents"}


def given_keys(path: str | Path, overrides: list[str] | tuple[str, ...], kit: Any) -> dict[str, Any]:
    """Every key the file ``path`` (with its bases) and ``overrides`` give, with its value: a
    section's name and its keys (``ppo``, ``ppo.n_steps``), a mapping value (``pool.weights``)
    as one key."""
    section_keys = sections(type(kit))
    data = read_with_base(Path(path), section_keys)
    for item in overrides:
        apply_override(data, item)
    out: dict[str, Any] = {}
    for key, value in data.items():
        out[str(key)] = value
        if key in section_keys and isinstance(value, Mapping):
            out.update({f"{key}.{inner}": v for inner, v in value.items()})
    return out


def refuse_unsupported(given: Mapping[str, Any], kit: Any) -> None:
    """A :class:`ConfigError` for the first key of :data:`UNSUPPORTED` that ``given`` holds
    with another value than RLlib's, or for a key neither mapped nor listed there (a kit key
    this module does not know yet is refused, never ignored)."""
    for key in given:
        section = key.split(".")[0]
        if key not in MAPPED and section not in UNSUPPORTED and key not in UNSUPPORTED and \
                not any(m.startswith(key + ".") for m in (*MAPPED, *UNSUPPORTED)):
            raise ConfigError(f"{key}: backend rllib does not know how to honour it (training.rllib.kit maps the "
                              "kit's keys onto RLlib); leave it out")
    for key, (allowed, why) in UNSUPPORTED.items():
        if key not in given or (allowed is not _ANY and _value(kit, key) == allowed):
            continue
        fix = "leave it out" if allowed is _ANY else f"give {allowed!r} or leave it out"
        raise ConfigError(f"{key}: backend rllib cannot honour it ({why}); {fix}")


def _value(kit: Any, key: str) -> Any:
    node = kit
    for part in key.split("."):
        node = getattr(node, part)
    return node


def to_rllib(kit: Any, given: Mapping[str, Any]) -> RLlibConfig:
    """The RLlib recipe's config of the kit's config ``kit`` (see the module doc), checked."""
    refuse_unsupported(given, kit)
    workers = max(kit.workers, 1)
    if kit.n_envs % workers:
        raise ConfigError(f"n_envs ({kit.n_envs}) must be a multiple of workers ({kit.workers}) with backend rllib: "
                          "each of the workers env runners steps n_envs / workers games")
    batch = kit.ppo.n_steps * kit.n_envs
    league, bots = _league(kit)
    data = {
        "name": kit.name, "seed": kit.seed, "checkpoint_every": max(1, math.ceil(kit.checkpoint_every / batch)),
        "env": {"game": kit.env.game, "num_players": kit.env.num_players, "reward": kit.env.reward,
                "turn_cap": kit.env.turn_cap, "options": kit.env.game_options(), "relabel": kit.relabel},
        "stop": {"minutes": kit.max_minutes, "learner_steps": kit.total_timesteps},
        "resources": {"num_cpus": max(2, kit.workers), "env_runners": kit.workers,
                      "envs_per_runner": kit.n_envs // workers, "torch_threads": kit.torch_threads},
        "ppo": {"lr": kit.ppo.learning_rate, "gamma": kit.ppo.gamma, "lambda": kit.ppo.gae_lambda,
                "clip": kit.ppo.clip_range, "entropy": kit.ppo.ent_coef, "vf_coeff": kit.ppo.vf_coef,
                "grad_clip": kit.ppo.max_grad_norm, "train_batch": batch, "minibatch": kit.ppo.batch_size,
                "epochs": kit.ppo.n_epochs, "kl_coeff": 0.0},  # the kit's PPO (SB3's) has no KL penalty
        "model": {"hidden": list(kit.network.net_arch), "activation": kit.network.activation,
                  "symmetry": kit.play_symmetry},
        "league": {"weights": league, "bots": bots, "slots": kit.pool.max_snapshots,
                   "snapshot_every": max(1, round(kit.pool.snapshot_every / batch))},
        "eval": {"games": kit.eval.final_games, "opponents": list(kit.eval.opponents), "workers": workers,
                 "seed": kit.seed, "warm_start": kit.eval.warm_start, "every": kit.eval.every,
                 "select_games": kit.eval.games, "best_by": kit.eval.best_by},
        "warm_start": {"file": kit.init, "sharpen": kit.pretrain.sharpen,
                       "anchor": kit.pretrain.anchor if kit.init else 0.0, "anchor_steps": kit.pretrain.anchor_steps},
    }
    return validate(build(RLlibConfig, data))


def from_file(path: str | Path, overrides: list[str] | tuple[str, ...], load_kit: Any) -> tuple[RLlibConfig, Any]:
    """The RLlib recipe's config of the kit recipe ``path`` with ``overrides`` (kit keys), and
    the kit's config: ``load_kit(path, overrides)`` is the kit's loader
    (``training.sb3.config.load_config`` taking both backends, which this package does not
    import). A recipe that does not name ``backend: rllib`` is refused."""
    kit = load_kit(path, list(overrides))
    if kit.backend != "rllib":
        raise ConfigError(f"{path} names backend {kit.backend!r}; an RLlib run needs backend: rllib")
    return to_rllib(kit, given_keys(path, list(overrides), kit)), kit


def _league(kit: Any) -> tuple[dict[str, float], list[str]]:
    """``pool.weights`` as the league's weights and bots: ``self`` (the snapshots) is
    ``league``; every other key must be a bot that plays by name."""
    from keltis_env.bots import bot_names

    names = set(bot_names(kit.env.game)) - {"ppo", "rllib"}
    weights: dict[str, float] = {}
    bots: list[str] = []
    for spec, weight in kit.pool.weights.items():
        if spec == "self":
            weights["league"] = float(weight)
        elif spec in names:
            weights[spec] = float(weight)
            bots.append(spec)
        else:
            raise ConfigError(f"pool.weights: {spec!r} cannot sit in the RLlib league, which seats self (the "
                              f"snapshots) and bots by name alone: {', '.join(sorted(names))}")
    return weights, bots


def resume_overrides(overrides: list[str] | tuple[str, ...]) -> list[str]:
    """A resumed RLlib run's ``--set`` items with the kit's keys of :data:`RESUME_KEYS` in
    their RLlib names (the RLlib recipe's own resumable keys pass as they are)."""
    out = []
    for item in overrides:
        key, eq, value = item.partition("=")
        out.append(f"{RESUME_KEYS[key.strip()]}{eq}{value}" if key.strip() in RESUME_KEYS else item)
    return out


def ray_command(argv: list[str]) -> str:
    """The command line that runs ``python -m training.train ARGV`` in an environment with
    Ray (the Makefile's ``.venv-distributed`` where it is built)."""
    python = ".venv-distributed/bin/python" if Path(".venv-distributed/bin/python").is_file() else "python"
    return shlex.join([python, "-m", "training.train", *argv])


def ray_missing(argv: list[str]) -> str | None:
    """``None`` where Ray RLlib imports; else the one line that refuses the run and names
    the command to use."""
    import importlib.util

    if importlib.util.find_spec("ray") is not None and importlib.util.find_spec("ray.rllib") is not None:
        return None
    where = ("" if Path(".venv-distributed/bin/python").is_file() else
             " in an environment with Ray (make test-distributed builds .venv-distributed; or pip install -c "
             "constraints.txt -e '.[train,distributed]')")
    return f"backend: rllib needs Ray RLlib, which {sys.executable} lacks: run {ray_command(argv)}{where}"


def is_kit_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` is an RLlib run that ``python -m training.train`` made (it holds
    :data:`KIT_FILE`), which that command also resumes."""
    return (Path(run_dir) / KIT_FILE).is_file()


def run(config: RLlibConfig, run_dir: Path, command: str, progress: bool, resume: bool, kit_yaml: str = "") -> int:
    """Train ``config`` into ``run_dir`` as :func:`training.rllib.recipe.train` does (SIGTERM
    and Ctrl-C stop with a checkpoint); prints the run folder and the final checkpoint. A new
    run's folder first receives ``kit_yaml``, the kit's resolved config, as :data:`KIT_FILE`
    (beside the RLlib recipe's ``config.yaml``, which a resume reads)."""
    from keltis_env.core.output_files import atomic_write_text

    from .recipe import train

    if not resume:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / KIT_FILE, kit_yaml)
    print(f"run folder: {run_dir} (backend rllib)", flush=True)
    try:
        summary = train(config, run_dir, command, progress=progress, resume=resume, sigterm_stops=True)
    except KeyboardInterrupt:
        print(f"interrupted; resume with: python -m training.train --resume {run_dir}", file=sys.stderr)
        return 130
    for row in summary.get("evaluation", []):
        lo, hi = row["interval"]
        print(f"vs {row['opponent']}: {row['win_rate']:.1%} [{lo:.1%}, {hi:.1%}] of {row['games']} games")
    print(f"run folder: {run_dir}\nfinal checkpoint: {summary['checkpoint']}\npolicy: {summary['policy']} "
          f"(keltis evaluate --game {config.env.game} ppo:{summary['policy']} random)")
    return 0


def describe_mapping() -> str:
    """The kit keys of :data:`UNSUPPORTED` with what they need under ``backend: rllib``."""
    lines = []
    for key, (allowed, why) in UNSUPPORTED.items():
        need = "leave it out" if allowed is _ANY else f"{allowed!r} or left out"
        lines.append(f"{key}: {need} ({why})")
    return "\n".join(lines)


__all__ = ["KIT_FILE", "MAPPED", "RESUME_KEYS", "UNSUPPORTED", "describe_mapping", "from_file", "given_keys",
           "is_kit_run",
           "ray_command", "ray_missing",
           "refuse_unsupported", "resume_overrides", "run", "to_rllib"]
