"""Running a recipe (:mod:`training.recipe.recipe`): its stages in order, each in its folder
of the work folder, each skipped once its ``done.json`` exists and resumed from its files
when it was stopped; then the recipe's policy, ``WORK/policy.zip``, with the recipe named
in its metadata, compared with the file the recipe names (``output``)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import FolderLock, OutputPathError, atomic_write_text

from ..common.config import ConfigError, apply_override, build, check_renamed, find_file, sections
from ..common.jsonfile import finite_json
from ..exit.config import RENAMED as EXIT_RENAMED
from ..exit.config import ExitConfig
from ..exit.config import check as check_exit
from ..imitate.config import RENAMED as IMITATE_RENAMED
from ..imitate.config import ImitateConfig
from ..imitate.config import check as check_imitate
from ..sb3.config import REMOVED as TRAIN_REMOVED
from ..sb3.config import RENAMED as TRAIN_RENAMED
from ..sb3.config import TrainConfig, from_dict
from .recipe import Recipe, Stage, config_data, merged, overrides, tiny, tiny_spec

Log = Callable[[str], None]


@dataclasses.dataclass
class Context:
    """What the stages of one run of a recipe share."""

    recipe: Recipe
    work: Path
    tiny: bool
    log: Log
    progress: bool
    outputs: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def policy(self, ref: str) -> str:
        """The policy file of a stage, or the file ``ref`` names (a shipped policy by its
        repository path from any working folder: :func:`~training.common.config.find_file`)."""
        if ref in self.outputs:
            if "policy" not in self.outputs[ref]:
                raise ConfigError(f"stage {ref!r} makes no policy file")
            return str(self.outputs[ref]["policy"])
        return str(find_file(ref.removeprefix("ppo:")))

    def files(self, ref: str) -> list[str]:
        """The recordings or labels of a stage (in order), or the file ``ref`` names."""
        if ref in self.outputs:
            found = self.outputs[ref].get("recordings") or self.outputs[ref].get("labels")
            if not found:
                raise ConfigError(f"stage {ref!r} makes no recordings or labels to fit")
            return list(found)
        return [ref]


def _refs(stage: Stage, key: str) -> list[str]:
    value = stage.get(key) or []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _built(cls: type, data: dict[str, Any], items: list[str], renamed: dict[str, str], where: str,
           removed: dict[str, str] | None = None) -> Any:
    data = json.loads(json.dumps(data))
    check_renamed(data, renamed, where, removed)
    for item in items:
        apply_override(data, item)
        check_renamed(data, renamed, where, removed)
    return build(cls, data)


def imitate_config(ctx: Context, stage: Stage, extra: list[str]) -> ImitateConfig:
    data = merged(ctx.recipe.imitate, dict(stage.get("imitate") or {}))
    config: ImitateConfig = _built(ImitateConfig, data, overrides(stage.get("set")) + extra, IMITATE_RENAMED,
                                   f"stage {stage.name!r}")
    if ctx.tiny:
        config.record.teacher = tiny_spec(config.record.teacher)
    check_imitate(config)
    return config


def _spec(ctx: Context, ref: str | None) -> str | None:
    """An agent spec: ``ppo:`` the policy of a stage or file, or a bot's spec as it is."""
    if not ref:
        return ref
    return f"ppo:{ctx.policy(ref)}" if ref in ctx.outputs or ref.endswith(".zip") else ref


def run_record(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    """One recording per seed (and DAgger round, with ``actor``); finished ones are kept."""
    from ..imitate.record import record

    seeds = stage.get("seeds") or [None]
    rounds = stage.get("round")
    rounds = rounds if isinstance(rounds, list) else [rounds]
    actor = stage.get("actor")
    actor_spec = _spec(ctx, actor)
    teacher = [f"record.teacher={json.dumps(_spec(ctx, stage.get('teacher')))}"] if stage.get("teacher") else []
    files = []
    for seed in seeds:
        for round_ in rounds:
            name = ("recording" if seed is None else f"seed_{seed}") + (f"_round_{round_}" if actor else "")
            out = folder / f"{name}.npz"
            files.append(str(out))
            if out.is_file():
                continue
            config = imitate_config(ctx, stage, teacher + ([f"seed={seed}"] if seed is not None else []))
            games = config.record.dagger_games if actor else config.record.games
            played = f", played by {actor_spec!r}" if actor else ""
            ctx.log(f"{stage.name}: recording {out.name} ({games} games of {config.record.teacher!r}{played})")
            record(config.env, config.record, config.seed, config.workers, out, progress=ctx.progress,
                   actor=actor_spec, round_=int(round_ or 1))
    return {"recordings": files}


def _split(ctx: Context, stage: Stage) -> tuple[list[str], list[str]]:
    files = [f for ref in _refs(stage, "data") for f in ctx.files(ref)]
    held = [f for ref in _refs(stage, "held_out") for f in ctx.files(ref)]
    every = int(stage.get("held_out_every") or 0)
    if every:  # every N-th file of the data, in order, is held out
        held += files[every - 1 :: every]
        files = [f for i, f in enumerate(files, 1) if i % every]
    return files, held


def run_fit(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    from ..imitate.network import fit_policy

    init = [f"init={json.dumps(ctx.policy(stage.get('init')))}"] if stage.get("init") else []
    config = imitate_config(ctx, stage, init)
    data, held = _split(ctx, stage)
    out = folder / "policy.zip"
    stats = fit_policy(config, data, out, log=ctx.log, held_out_paths=held)
    return {"policy": str(out), "stats": stats, "fitted": len(data), "held_out": len(held)}


def run_value(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    from ..imitate.network import fit_value

    init = [f"init={json.dumps(ctx.policy(stage.get('init')))}"] if stage.get("init") else []
    config = imitate_config(ctx, stage, init)
    data, held = _split(ctx, stage)
    out = folder / "policy.zip"
    stats = fit_value(config, data, held, out, log=ctx.log)
    return {"policy": str(out), "stats": stats}


def _tiny_train(config: TrainConfig) -> TrainConfig:
    pool = {(k if k == "self" else tiny_spec(k)): v for k, v in config.pool.weights.items()}
    opponents = [tiny_spec(o) for o in config.eval.opponents]
    best = tiny_spec(config.eval.best_by) if config.eval.best_by else ""
    return dataclasses.replace(
        config, pool=dataclasses.replace(config.pool, weights=pool),
        eval=dataclasses.replace(config.eval, opponents=opponents, best_by=best),
        record=dataclasses.replace(config.record, teacher=tiny_spec(config.record.teacher)))


def train_config(recipe: Recipe, stage: Stage, extra: list[str], policy: Callable[[str], str] | None = None,
                 is_tiny: bool = False) -> TrainConfig:
    """The SB3 config of the ``train`` stage ``stage``: its ``config`` (over its ``base:``
    file), its ``set``, then ``extra``; ``init`` resolved by ``policy`` (a stage's output),
    else a file."""
    data = config_data(recipe, stage, "config", sections(TrainConfig))
    init = stage.get("init")
    if init:
        if policy is None and recipe.stage(init) is not None:
            raise ConfigError(f"stage {stage.name!r} starts from the stage {init!r}: run the recipe "
                              f"(python -m training.recipe {recipe.path})")
        extra = [f"init={json.dumps(policy(init) if policy else init)}", *extra]
    built = _built(TrainConfig, data, overrides(stage.get("set")) + extra, TRAIN_RENAMED, f"stage {stage.name!r}",
                   TRAIN_REMOVED)
    config: TrainConfig = from_dict(dataclasses.asdict(_tiny_train(built) if is_tiny else built))
    return config


def _new_trainer(ctx: Context, stage: Stage, folder: Path, command: str, extra: list[str]) -> Any:
    from ..sb3.trainer import Trainer

    extra = [*extra, f"runs_dir={json.dumps(str(folder))}", f"name={stage.name}"]
    config = train_config(ctx.recipe, stage, extra, ctx.policy, ctx.tiny)
    return Trainer.new(config, command, progress=ctx.progress)


def run_train(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    """An SB3 run, in sessions where the stage lists them (each session resumed with its
    ``set`` until its number of decisions); a stopped session resumes from its checkpoint."""
    from ..sb3.trainer import Trainer

    command = shlex.join([sys.executable, "-m", "training.recipe", str(ctx.recipe.path), "--work", str(ctx.work)])
    sessions = stage.get("sessions") or [{}]
    report: dict[str, Any] = {}
    for i, session in enumerate(sessions):
        marker = folder / f"session_{i}.done"
        if marker.is_file():
            continue
        until = [f"total_timesteps={int(session['until'])}"] if "until" in session else []
        runs = sorted(p.parent for p in folder.glob("*/config.yaml"))
        if runs:
            items = (overrides(session.get("set")) if i else []) + until
            ctx.log(f"{stage.name}: session {i + 1} of {len(sessions)}, resuming {runs[-1]}")
            trainer = Trainer.resume(runs[-1], command, items, progress=ctx.progress)
        else:
            trainer = _new_trainer(ctx, stage, folder, command, until)
        try:
            trainer.train()
            report = trainer.final_report()
        finally:
            trainer.close()  # the run folder is given back too
        atomic_write_text(marker, f"{trainer.run_dir}\n")
    (run,) = sorted(p.parent for p in folder.glob("*/config.yaml"))
    return {"policy": str(run / "policy.zip"), "run": str(run),
            "report": {k: v for k, v in report.items() if k != "markdown"}}


def run_exit(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    from ..exit.loop import Run

    data = config_data(ctx.recipe, stage, "config", sections(ExitConfig))
    extra = [f"init={json.dumps(ctx.policy(stage.get('init')))}"] if stage.get("init") else []
    config: ExitConfig = _built(ExitConfig, data, overrides(stage.get("set")) + extra, EXIT_RENAMED,
                                f"stage {stage.name!r}")
    if ctx.tiny:
        config = dataclasses.replace(
            config, search=dataclasses.replace(config.search, spec=tiny_spec(config.search.spec)),
            label=dataclasses.replace(config.label, opponent=tiny_spec(config.label.opponent)),
            eval=dataclasses.replace(config.eval, opponent=tiny_spec(config.eval.opponent)))
    check_exit(config)
    run = Run(config, folder / "run", progress=ctx.progress, log=ctx.log)
    run.prepare(shlex.join([sys.executable, "-m", "training.recipe", str(ctx.recipe.path), "--work", str(ctx.work)]))
    result = run.run()
    take = stage.get("take")
    policy = run.round_dir(int(take)) / "network.zip" if take is not None else Path(result["network"])
    wanted = stage.get("rounds")
    done = sorted(p.parent for p in (folder / "run").glob("round_*/label.json"))
    labels = [str(p) for d in done if wanted is None or int(d.name.removeprefix("round_")) in wanted
              for p in sorted((d / "labels").glob("shard_*.npz"))]
    return {"policy": str(policy), "labels": labels, "run": str(folder / "run")}


def run_zero(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    from ..zero.config import ZeroConfig
    from ..zero.config import check as check_zero
    from ..zero.loop import Run as ZeroRun

    data = config_data(ctx.recipe, stage, "config", sections(ZeroConfig))
    extra = [f"init={json.dumps(ctx.policy(stage.get('init')))}"] if stage.get("init") else []
    config: ZeroConfig = _built(ZeroConfig, data, overrides(stage.get("set")) + extra, {}, f"stage {stage.name!r}")
    check_zero(config)
    take = stage.get("take") or "best"
    if take not in ("best", "last"):
        raise ConfigError(f"stage {stage.name!r}: take must be best or last, got {take!r}")
    run = ZeroRun(config, folder / "run", progress=ctx.progress, log=ctx.log)
    run.prepare(shlex.join([sys.executable, "-m", "training.recipe", str(ctx.recipe.path), "--work", str(ctx.work)]))
    result = run.run()
    best = folder / "run" / "best.zip"
    policy = best if take == "best" and best.is_file() else Path(result["network"])
    return {"policy": str(policy), "run": str(folder / "run")}


def run_symmetry(ctx: Context, stage: Stage, folder: Path) -> dict[str, Any]:
    from keltis_env.policy import read_policy_info, write_policy_info

    source = ctx.policy(stage.get("of"))
    out = folder / "policy.zip"
    shutil.copyfile(source, out)
    info = read_policy_info(out)
    write_policy_info(out, info.game, info.num_players, info.features, info.value_reward,
                      symmetry=str(stage.get("symmetry") or ""))
    return {"policy": str(out)}


RUNNERS: dict[str, Callable[[Context, Stage, Path], dict[str, Any]]] = {
    "record": run_record, "fit": run_fit, "value": run_value, "train": run_train, "exit": run_exit,
    "zero": run_zero, "symmetry": run_symmetry,
}


def run_recipe(recipe: Recipe, work: Path, is_tiny: bool = False, log: Log = print, progress: bool = True) -> Path:
    """Run every stage of ``recipe`` not done yet in ``work``; the recipe's policy file. The
    work folder is claimed while the recipe runs (:func:`~keltis_env.core.output_files.claim_folder`):
    :class:`ConfigError`, with nothing changed, while another process runs a recipe in it."""
    lock = FolderLock(work, "the recipe work folder")
    try:
        lock.acquire()
    except OutputPathError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return _run_stages(recipe, work, is_tiny, log, progress)
    finally:
        lock.release()


def _run_stages(recipe: Recipe, work: Path, is_tiny: bool, log: Log, progress: bool) -> Path:
    """:func:`run_recipe` in its claimed work folder."""
    from keltis_env.policy import read_policy_info, write_policy_info

    marker = work / "recipe.json"
    meta = {"recipe": str(recipe.path), "tiny": is_tiny}
    if marker.is_file():
        try:
            held = json.loads(marker.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{marker} is unreadable ({exc}); give another --work") from None
        if held != meta:
            raise ConfigError(f"{work} holds a run of another recipe or scale ({json.dumps(held)}); give another "
                              "--work")
    atomic_write_text(marker, json.dumps(meta) + "\n")
    ctx = Context(recipe, work, is_tiny, log, progress)
    for stage in recipe.stages:
        folder = work / stage.name
        done = folder / "done.json"
        if done.is_file():
            ctx.outputs[stage.name] = json.loads(done.read_text())
            log(f"{stage.name}: done already")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        log(f"{stage.name}: {stage.kind}")
        out = RUNNERS[stage.kind](ctx, tiny(stage) if is_tiny else stage, folder)
        atomic_write_text(done, finite_json(out, done, indent=1, default=float) + "\n")
        ctx.outputs[stage.name] = out
    final = work / "policy.zip"
    shutil.copyfile(ctx.policy(recipe.stages[-1].name), final)
    info = read_policy_info(final)
    write_policy_info(final, info.game, info.num_players, info.features, info.value_reward, symmetry=info.symmetry,
                      recipe=str(recipe.path))
    return final


def same_weights(a: str | Path, b: str | Path) -> list[str]:
    """The tensors of the policy networks of two policy files that differ ([]: the same,
    bit for bit); a missing tensor counts as different."""
    import io
    import zipfile

    import torch

    def tensors(path: str | Path) -> dict[str, Any]:
        with zipfile.ZipFile(path) as zf:
            state: dict[str, Any] = torch.load(io.BytesIO(zf.read("policy.pth")), map_location="cpu",
                                               weights_only=True)
            return state

    ta, tb = tensors(a), tensors(b)
    return sorted(k for k in set(ta) | set(tb) if k not in ta or k not in tb or ta[k].shape != tb[k].shape
                  or not torch.equal(ta[k], tb[k]))


__all__ = ["RUNNERS", "Context", "run_recipe", "same_weights", "train_config"]
