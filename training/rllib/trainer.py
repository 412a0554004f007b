"""Multi-agent self-play PPO with Ray RLlib (new API stack), for any registered game.

    python -m training.rllib --config configs/rllib/rllib_2p.yaml [--set key=value ...]
    python -m training.rllib --config configs/rllib/rllib_2p.yaml --address auto   # join a Ray cluster
    python -m training.rllib --resume runs/rllib_2p-20260101-120000 [--set stop.minutes=30]
    python -m training.rllib --describe                                      # every key

(the command line is :mod:`training.rllib.__main__`; the config :mod:`training.rllib.config`).

The learner ``main`` (:class:`keltis_env.integrations.rllib.MaskedActorCritic`) plays
against a league through the policy mapping (:class:`~training.rllib.league.LeagueMapping`):
itself, its frozen snapshots (``league.slots`` modules ``main_v0..``; every
``league.snapshot_every`` iterations the oldest slot receives the current weights; at the
start every slot holds the learner's first weights) and our bots (``league.bots``, played on
views by the environment after their seat claim). Only ``main`` is trained. With
``warm_start.file`` the learner's first weights are a policy file's network
(:mod:`training.rllib.warm_start`), else untrained ones.

A run folder (``runs/<name>-<time>/``) receives the resolved config (``config.yaml``),
the exact command of every session (``command.txt``), ``progress.csv``, TensorBoard logs
(``tb/``), algorithm checkpoints (``checkpoints/iter_NNNNN``, ``checkpoints/final``, and
``checkpoints/latest.json`` naming the newest) and, unless ``eval.games`` is 0,
``policy.zip`` (the run's policy as a policy file: the best of the selection evaluations,
``eval.every``, in ``eval.csv``; else the final weights; :mod:`training.rllib.selection`) and,
unless ``eval.games`` is 0, ``report.json``: that policy against each of ``eval.opponents``
over duplicate deals (``keltis evaluate ppo:RUN/policy.zip random`` repeats it).

``--resume RUN`` goes on from the run's newest checkpoint (weights, optimizer, snapshots,
counters) with its ``config.yaml``; ``--set`` may change only what does not change the
algorithm (``stop``, ``eval``, ``resources``, checkpointing). ``stop.env_steps`` (with the
batched sampler the decisions of ``main``; with ``per_game`` the moves of ``main`` and its
snapshots), ``stop.learner_steps`` (the decisions of ``main`` alone, in all its seats: the
budget of :mod:`training.budget`) and ``stop.iterations`` count over the whole run,
``stop.minutes`` over this session. Ctrl-C or SIGTERM during training writes a checkpoint
first, so a stopped run can be resumed.

Without ``--address`` Ray starts locally on this machine (``resources.num_cpus``);
``--address HOST:PORT`` (or ``auto``) joins a cluster started with ``ray start --head``;
every node then needs this package and the ``distributed`` extra installed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path, atomic_write_text
from keltis_env.core.recorded_paths import recorded_text

from ..common.config import ConfigError
from ..common.jsonfile import finite_json
from .config import RLlibConfig, StopSection
from .selection import Selection

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def latest_checkpoint(run_dir: str | Path) -> Path:
    """The newest checkpoint of a run: the one ``checkpoints/latest.json`` names, else
    ``final``, else the highest ``iter_NNNNN``."""
    folder = Path(run_dir) / "checkpoints"
    try:
        name = json.loads((folder / "latest.json").read_text())["checkpoint"]
        if (folder / name).is_dir():
            return folder / name
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if (folder / "final").is_dir():
        return folder / "final"
    periodic = sorted(folder.glob("iter_*")) if folder.is_dir() else []
    if not periodic:
        raise ConfigError(f"{run_dir} has no checkpoint to resume from (checkpoints/final or checkpoints/iter_NNNNN)")
    return periodic[-1]


# ---------------------------------------------------------------------- RLlib pieces
def snapshot_ids(config: RLlibConfig) -> list[str]:
    return [f"main_v{i}" for i in range(config.league.slots)] if config.league.weights.get("league", 0) > 0 else []


def env_config(config: RLlibConfig) -> dict[str, Any]:
    """The env runners' ``env_config``: the per-game adapter's keys, and ``relabel`` (the
    batched sampler's) where the games are relabelled."""
    out = {
        "game": config.env.game,
        "num_players": config.env.num_players,
        "reward": config.env.reward,
        "bots": list(config.league.bots),
        "options": dict(config.env.options),
        "turn_cap": config.env.turn_cap,
    }
    if config.env.relabel != "none":
        out["relabel"] = config.env.relabel
    return out


def build_algorithm_config(config: RLlibConfig) -> Any:
    """The ``PPOConfig`` of a run (also used by the tests)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from keltis_env.integrations.rllib import MAIN, BotSeatModule, MaskedActorCritic, TurnBasedMultiAgentEnv

    from .league import LeagueCallback, LeagueMapping
    from .learner import PPOLearner
    from .sampling import runner_options
    from .warm_start import play_symmetry

    model = {"hidden": list(config.model.hidden), "activation": config.model.activation,
             "game": config.env.game, "num_players": config.env.num_players, "symmetry": play_symmetry(config)}
    specs = {MAIN: RLModuleSpec(module_class=MaskedActorCritic, model_config=model)}
    for sid in snapshot_ids(config):
        specs[sid] = RLModuleSpec(module_class=MaskedActorCritic, model_config=model)
    for slot, bot in enumerate(config.league.bots):
        specs[bot] = RLModuleSpec(module_class=BotSeatModule, model_config={"slot": slot, "bot": bot})
    agents = [f"player_{i}" for i in range(config.env.num_players)]
    mapping = LeagueMapping(agents, config.league.weights, snapshots=snapshot_ids(config), salt=config.seed)
    p, r = config.ppo, config.resources
    return (
        PPOConfig()
        .environment(TurnBasedMultiAgentEnv, env_config=env_config(config), disable_env_checking=True)
        .env_runners(num_env_runners=r.env_runners, num_envs_per_env_runner=r.envs_per_runner,
                     num_cpus_per_env_runner=1, rollout_fragment_length="auto",
                     **runner_options(r.sampler, config.env.game))
        .learners(num_learners=0, learner_class=PPOLearner)
        .training(lr=p.lr, gamma=p.gamma, lambda_=p.lambda_, clip_param=p.clip, entropy_coeff=p.entropy,
                  vf_loss_coeff=p.vf_coeff, grad_clip=p.grad_clip, train_batch_size_per_learner=p.train_batch,
                  minibatch_size=p.minibatch, num_epochs=p.epochs, vf_clip_param=10.0,
                  use_kl_loss=p.kl_coeff > 0, kl_coeff=p.kl_coeff)
        .multi_agent(policies=set(specs), policy_mapping_fn=mapping, policies_to_train=[MAIN])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .callbacks(LeagueCallback)
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=200)
    )


def copy_main_to(algo: Any, slot: str) -> None:
    """Freeze the learner's current weights into snapshot module ``slot`` (learner and env runners)."""
    from keltis_env.integrations.rllib import MAIN

    from .sampling import push_weights

    weights = algo.learner_group.get_weights(module_ids=[MAIN])[MAIN]
    algo.set_state({"learner_group": {"learner": {"rl_module": {slot: weights}}}})
    push_weights(algo, slot, weights)  # RLlib's own sync may not reach the runners (push_weights says why)


def push_learner_weights(algo: Any, module_ids: list[str]) -> None:
    """Every env runner takes the learner's weights of ``module_ids`` now, waited for. RLlib's
    own sync after a restore is asynchronous and is dropped for a runner that has one in flight:
    the runners of a resumed run then sampled from their untrained weights (ray-project/ray
    issue #32751; ``tests/test_rllib_backend.py`` checks every runner after a resume)."""
    from .sampling import push_weights

    for module_id, weights in algo.learner_group.get_weights(module_ids=module_ids).items():
        push_weights(algo, module_id, weights)


def restore_weights(algo: Any, config: RLlibConfig, checkpoint: Path) -> None:
    """A resumed run's state from ``checkpoint`` (weights, snapshots included, optimizer,
    counters), its weights pushed to every env runner (:func:`push_learner_weights`)."""
    from keltis_env.integrations.rllib import MAIN

    algo.restore_from_path(str(Path(checkpoint).resolve()))
    push_learner_weights(algo, [MAIN, *snapshot_ids(config)])


def warm_start_anchor(config: RLlibConfig) -> dict[str, Any] | None:
    """The KL anchor's policy weights (the warm start's ``pi.*``, sharpened), or ``None``
    without an anchor (``warm_start.anchor`` 0). Made again from the config on resume."""
    if config.warm_start.anchor <= 0:
        return None
    from . import warm_start

    return {k: v for k, v in warm_start.module_state(config).items() if k.startswith("pi.")}


def start_weights(algo: Any, config: RLlibConfig) -> None:
    """A new run's first weights: the warm start's in ``main`` (``warm_start.file``; else the
    untrained ones), then ``main``'s in every snapshot slot; every env runner receives them."""
    if config.warm_start.file:
        from . import warm_start

        warm_start.apply(algo, config)
    for slot in snapshot_ids(config):
        copy_main_to(algo, slot)


# ---------------------------------------------------------------------- metrics
def _get(result: dict[str, Any], *keys: str, default: Any = None) -> Any:
    node: Any = result
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def summarise(result: dict[str, Any], elapsed: float, steps_before: int, seconds: float) -> dict[str, Any]:
    """The figures of one training iteration that the progress line, CSV and TensorBoard show."""
    from keltis_env.integrations.rllib import MAIN

    steps = int(_get(result, "env_runners", "num_env_steps_sampled_lifetime", default=0) or 0)
    sample_time = _get(result, "env_runners", "sample", default=None)
    row: dict[str, Any] = {
        "iteration": result.get("training_iteration"),
        "minutes": round(elapsed / 60, 3),
        "env_steps": steps,
        "learner_steps": int(_get(result, "env_runners", "num_module_steps_sampled_lifetime", MAIN, default=0) or 0),
        "steps_per_s": round((steps - steps_before) / seconds, 1) if seconds > 0 else 0.0,
        "main_return": _get(result, "env_runners", "module_episode_returns_mean", MAIN),
        "episodes": _get(result, "env_runners", "num_episodes_lifetime"),
        "sample_s": round(sample_time, 3) if isinstance(sample_time, (int, float)) else None,
    }
    runners = result.get("env_runners", {})
    for key, value in runners.items():
        if key.startswith("win_rate_") and isinstance(value, (int, float)) and value == value:  # no NaN
            row[key] = round(float(value), 4)
    learner = _get(result, "learners", MAIN, default={}) or {}
    for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "anchor_kl", "anchor_weight"):
        if key in learner:
            row[key] = float(learner[key])
    return row


def progress_line(row: dict[str, Any]) -> str:
    wins = "  ".join(f"{k[len('win_rate_'):]} {v:.2f}" for k, v in sorted(row.items()) if k.startswith("win_rate_"))
    ret = row.get("main_return")
    ret_text = f"{ret:+.3f}" if isinstance(ret, (int, float)) else "  n/a"
    return (f"iter {row['iteration']:>4}  {row['minutes']:6.1f} min  steps {row['env_steps']:>10,}  "
            f"{row['steps_per_s']:>7,.0f}/s  main return {ret_text}  win rate: {wins or 'n/a'}")


def init_ray(config: RLlibConfig, address: str | None) -> None:
    """Join the cluster at ``address``, or start a local Ray of ``resources.num_cpus``."""
    import ray

    env = {"env_vars": {"OMP_NUM_THREADS": "1"}}
    if address:
        ray.init(address=address, runtime_env=env)
    else:
        # "local": always a new Ray of our own, even where `ray start` left a cluster running
        ray.init(address="local", num_cpus=config.resources.num_cpus, include_dashboard=False,
                 log_to_driver=False, runtime_env=env)


# ---------------------------------------------------------------------- run
def train(config: RLlibConfig, run_dir: Path, command: str, address: str | None = None,
          progress: bool = True, resume: bool = False, sigterm_stops: bool = False) -> dict[str, Any]:
    """Train as ``config`` says into ``run_dir`` (``resume``: from its newest checkpoint,
    appending to its logs); returns the final summary (and report). ``sigterm_stops``: SIGTERM
    stops training like Ctrl-C, with a checkpoint (the command line's choice: it replaces the
    handler that Ray installs)."""
    import ray

    restore = _prepare_run_dir(config, run_dir, command, resume)
    _start(config, address, sigterm_stops)
    writer = _tensorboard(run_dir)
    algo = build_algorithm_config(config).build_algo()
    session = _Session(config, run_dir, algo, writer, progress, restore)
    try:
        final = session.run()
        policy = session.selection.policy(algo)
    finally:
        algo.stop()
        if writer is not None:
            writer.close()
        ray.shutdown()
    summary = session.summary(final)
    summary["policy"] = str(policy)
    if config.eval.games > 0:
        summary["evaluation"] = final_evaluation(config, policy, progress)
    report = run_dir / "report.json"  # a NaN there means "not measured" (no episode ended in an iteration)
    atomic_write_text(report, finite_json(summary, report, indent=1, missing_as_null=True) + "\n")
    return summary


def _prepare_run_dir(config: RLlibConfig, run_dir: Path, command: str, resume: bool) -> Path | None:
    """Write the run's ``config.yaml`` and add ``command`` to its ``command.txt``; returns the
    checkpoint to resume from (``None`` for a new run)."""
    import yaml

    run_dir.mkdir(parents=True, exist_ok=True)
    restore = latest_checkpoint(run_dir) if resume else None
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False))
    commands = run_dir / "command.txt"
    before = commands.read_text() if resume and commands.is_file() else ""
    atomic_write_text(commands, before + recorded_text(command) + "\n")  # paths relative to the repository
    return restore


def _start(config: RLlibConfig, address: str | None, sigterm_stops: bool) -> None:
    """Torch's threads, Ray, and (``sigterm_stops``) SIGTERM as Ctrl-C."""
    import torch

    torch.set_num_threads(config.resources.torch_threads)
    init_ray(config, address)
    if sigterm_stops:
        signal.signal(signal.SIGTERM, _interrupt)


def _tensorboard(run_dir: Path) -> Any:
    """A TensorBoard writer into ``run_dir/tb``, or ``None`` without tensorboard."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        print("tensorboard is not installed: no TensorBoard logs (pip install tensorboard)", file=sys.stderr)
        return None
    return SummaryWriter(str(run_dir / "tb"))


def _steps_so_far(run_dir: Path) -> tuple[int, int]:
    """The env steps and learner steps of a resumed run's last ``progress.csv`` row (0, 0 without one)."""
    if not (run_dir / "progress.csv").is_file():
        return 0, 0
    with open(run_dir / "progress.csv", newline="") as f:
        earlier = list(csv.DictReader(f))
    if not earlier:
        return 0, 0
    return int(float(earlier[-1]["env_steps"])), int(float(earlier[-1].get("learner_steps") or 0))


class _Session:
    """One session of a run: the training loop over a built algorithm, its logs (progress
    lines, ``progress.csv``, TensorBoard), the league's snapshots and the checkpoints."""

    def __init__(self, config: RLlibConfig, run_dir: Path, algo: Any, writer: Any, progress: bool,
                 restore: Path | None) -> None:
        self.config, self.run_dir, self.algo, self.writer, self.progress = config, run_dir, algo, writer, progress
        self.checkpoints = run_dir / "checkpoints"
        self.slots = snapshot_ids(config)
        if restore is not None:  # weights (snapshots included), optimizer and counters
            restore_weights(algo, config, restore)
            if progress:
                print(f"resumed from {restore} (iteration {algo.iteration})", flush=True)
        else:
            start_weights(algo, config)
        self.anchor = warm_start_anchor(config)
        self.selection = Selection(config, run_dir, progress)
        self.periodic = sorted(self.checkpoints.glob("iter_*")) if restore is not None else []
        self.rows: list[dict[str, Any]] = []
        self.start = self.last = time.perf_counter()
        # env steps so far (updated every iteration); the learner's steps when the session started
        self.env_steps, self.learner_steps = _steps_so_far(run_dir) if restore is not None else (0, 0)
        self.main_steps = self.learner_steps  # main's decisions so far (updated every iteration)
        every = config.league.snapshot_every
        self.next_slot = algo.iteration // every if every else 0  # snapshots taken so far
        if self.anchor is not None:
            state = self.anchor
            algo.learner_group.foreach_learner(lambda learner: learner.set_anchor(state, 0.0))

    def run(self) -> Path:
        """Train until a stop condition holds; returns the final checkpoint. Ctrl-C (or
        SIGTERM as Ctrl-C) writes a checkpoint of the last finished update first."""
        try:
            if self.selection.due(self.main_steps):  # the start competes (a warm start, or a resumed run's)
                self.selection.evaluate(self.algo, self.main_steps, time.perf_counter() - self.start)
            done = _done(self.config.stop, self.algo.iteration, self.env_steps, self.learner_steps, 0.0)
            while not done:
                done = self.iterate()
            if self.selection.on and self.selection.last < self.main_steps:  # so does the end
                self.selection.evaluate(self.algo, self.main_steps, time.perf_counter() - self.start)
        except KeyboardInterrupt:
            self.interrupted()
            raise
        return self.save("final", self.algo.iteration)

    def iterate(self) -> bool:
        """One training iteration, logged, with its snapshot and checkpoint where they fall
        due; returns whether the run has reached a stop condition."""
        if self.anchor is not None:  # the anchor's weight for this iteration's update, as the SB3 trainer decays it
            from .learner import anchor_weight

            w = anchor_weight(self.config.warm_start.anchor, self.config.warm_start.anchor_steps, self.main_steps)
            self.algo.learner_group.foreach_learner(lambda learner: learner.set_anchor(None, w))
        result = self.algo.train()
        now = time.perf_counter()
        row = summarise(result, now - self.start, self.env_steps, now - self.last)
        self.env_steps, self.last, self.main_steps = row["env_steps"], now, row["learner_steps"]
        self.log(row)
        it = int(row["iteration"])
        if self.selection.due(self.main_steps):
            self.selection.evaluate(self.algo, self.main_steps, now - self.start)
        every = self.config.league.snapshot_every
        if self.slots and every and it % every == 0:
            copy_main_to(self.algo, self.slots[self.next_slot % len(self.slots)])
            self.next_slot += 1
        if self.config.checkpoint_every and it % self.config.checkpoint_every == 0:
            self.periodic.append(self.save(f"iter_{it:05d}", it))
            while len(self.periodic) > self.config.keep_checkpoints:
                shutil.rmtree(self.periodic.pop(0), ignore_errors=True)
        return _done(self.config.stop, it, row["env_steps"], row["learner_steps"], now - self.start)

    def log(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        _append_csv(self.run_dir / "progress.csv", row)
        if self.writer is not None:
            for key, value in row.items():
                if isinstance(value, (int, float)) and key != "iteration":
                    self.writer.add_scalar(key, value, row["env_steps"])
            self.writer.flush()
        if self.progress:
            print(progress_line(row), flush=True)

    def save(self, name: str, it: int) -> Path:
        path = self.checkpoints / name
        shutil.rmtree(path, ignore_errors=True)
        self.algo.save_to_path(str(path.resolve()))  # pyarrow takes a relative path for a URI and refuses it
        atomic_write_text(self.checkpoints / "latest.json", json.dumps({"checkpoint": name, "iteration": it}) + "\n")
        return path

    def interrupted(self) -> None:
        """Checkpoint the weights of the last finished update (an interrupted one changes none)."""
        it = self.algo.iteration
        try:
            where = f"checkpoint {self.save(f'iter_{it:05d}', it)}"
        except Exception as exc:  # Ray may be going down with us
            where = f"no new checkpoint ({type(exc).__name__}: {exc}); the newest earlier one stays"
        print(f"\ninterrupted at iteration {it}: {where}; resume with: python -m training.rllib --resume "
              f"{self.run_dir}", file=sys.stderr, flush=True)

    def summary(self, final: Path) -> dict[str, Any]:
        return {"checkpoint": str(final), "iterations": self.algo.iteration, "session_iterations": len(self.rows),
                "train_minutes": round((time.perf_counter() - self.start) / 60, 2),
                "last": self.rows[-1] if self.rows else None}


def _done(stop: StopSection, iteration: int, env_steps: int, learner_steps: int, seconds: float) -> bool:
    """Whether the run has reached a stop condition (steps and iterations: the whole run's)."""
    return bool((stop.minutes and seconds >= stop.minutes * 60)
                or (stop.env_steps and env_steps >= stop.env_steps)
                or (stop.learner_steps and learner_steps >= stop.learner_steps)
                or (stop.iterations and iteration >= stop.iterations))


def final_evaluation(config: RLlibConfig, policy: Path, progress: bool) -> list[dict[str, Any]]:
    """The run's policy file (``policy.zip``: the best checkpoint where the run selects one, else
    the final weights) against each of ``eval.opponents`` (and its warm start)."""
    from keltis_env.evaluation import evaluate

    out = []
    opponents = list(config.eval.opponents)
    if config.eval.warm_start:  # head to head: what training added to the warm start
        opponents.append(f"ppo:{config.warm_start.file}")
    for opponent in opponents:
        specs = [f"ppo:{policy}"] + [opponent] * (config.env.num_players - 1)
        result = evaluate(specs, games=config.eval.games, seed=config.eval.seed, workers=config.eval.workers,
                          game=config.env.game, progress=progress, options=dict(config.env.options))
        agent = result.agents[0]
        lo, hi = agent.win_rate_ci
        out.append({"opponent": opponent, "games": agent.games, "win_rate": agent.win_rate, "interval": [lo, hi]})
        print(f"final policy vs {opponent}: wins {agent.win_rate:.1%} [{lo:.1%}, {hi:.1%}] of {agent.games} games",
              flush=True)
    return out


def _append_csv(path: Path, row: dict[str, Any]) -> None:
    rows: list[dict[str, Any]] = []
    fields = list(row)
    if path.is_file():
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            fields = list(reader.fieldnames or []) + [k for k in row if k not in (reader.fieldnames or [])]
    # rewritten whole: a new column (a new opponent) changes the header
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows([*rows, row])


# ---------------------------------------------------------------------- sampling speed
def sampling_rate(config: RLlibConfig, seconds: float, address: str | None = None) -> dict[str, Any]:
    """Env steps per second of sampling alone (no learning) with ``resources.env_runners``
    runners, all sampling at once: the runners' ``sample()`` in a loop for ``seconds``."""
    import ray

    init_ray(config, address)
    algo = build_algorithm_config(config).build_algo()
    chunk = config.ppo.train_batch // max(config.resources.env_runners, 1)
    local = config.resources.env_runners == 0

    def sample(runner: Any) -> tuple[int, int]:
        episodes = runner.sample(num_timesteps=chunk, explore=True)
        return sum(e.env_steps() for e in episodes), sum(1 for e in episodes if e.is_done)

    try:
        algo.env_runner_group.foreach_env_runner(sample, local_env_runner=local)  # warm-up
        steps = done = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for s, d in algo.env_runner_group.foreach_env_runner(sample, local_env_runner=local):
                steps += s
                done += d
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
        ray.shutdown()
    return {"env_runners": config.resources.env_runners, "envs_per_runner": config.resources.envs_per_runner,
            "env_steps": steps, "seconds": round(elapsed, 2), "env_steps_per_s": round(steps / elapsed, 1),
            "episodes_per_s": round(done / elapsed, 2)}


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


__all__ = ["build_algorithm_config", "env_config", "final_evaluation", "latest_checkpoint", "progress_line",
           "push_learner_weights", "restore_weights", "sampling_rate", "snapshot_ids", "start_weights", "summarise",
           "train"]
