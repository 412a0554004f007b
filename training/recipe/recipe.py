"""A recipe: the one file that makes a shipped policy, as a list of stages, each resumable.

A recipe (``configs/recipes/NAME.yaml``) names the policy file it makes (``output``) and the
stages that make it, in order. Every stage has a ``name`` (its folder in the work folder)
and one kind:

``record``
    a teacher's games recorded (:mod:`training.imitate.record`), one file per seed in
    ``seeds``: ``imitate`` (an :class:`~training.imitate.config.ImitateConfig` mapping) and
    ``set`` (dotted overrides); ``teacher``, a stage whose policy (or an agent spec) is the
    teacher; with ``actor`` (a stage or agent spec) and ``round`` (one or a list), the
    DAgger rounds played by that actor.
``fit``
    a policy fitted to recordings (``python -m training.imitate fit``): ``data``, the stages
    (record stages, expert-iteration stages' labels) or files fitted, in that order;
    ``held_out_every: N``, every N-th of those files held out, or ``held_out``, stages or
    files measured, never fitted; ``init``, a stage or policy file the fit starts from.
``value``
    the value head of ``init`` fitted afresh to ``data`` (``python -m training.imitate
    value``), kept at its best epoch on ``held_out``.
``train``
    an SB3 run (``python -m training.train``): ``config``, a :class:`~training.sb3.config.TrainConfig`
    mapping (``base:`` a config file), ``init`` a stage or policy file; ``sessions``, a list
    of ``{until: DECISIONS, set: {...}}``: the run trained in sessions, each resumed with
    its ``set`` (as ``--resume RUN --set``) until its number of learner decisions.
``exit``
    expert iteration (``python -m training.exit``): ``config``, an
    :class:`~training.exit.config.ExitConfig` mapping, ``init`` a stage or policy file, and
    ``take: K``, round K's fitted network as the stage's policy (default: the network the
    run ends with). Its labels are data for a ``fit``: ``rounds`` limits which rounds'.
``zero``
    expert iteration from zero (``python -m training.zero``): ``config``, a
    :class:`~training.zero.config.ZeroConfig` mapping, ``init`` a stage or policy file to
    start from instead of random weights, and ``take``: ``best`` (default: the checkpoint
    that scored best on the run's selection deals) or ``last`` (the network it ends with).
``symmetry``
    the policy of ``of`` (a stage) playing by the mean of its logits over the game's
    relabellings ``symmetry`` (its metadata).

A stage that depends on another names it; a recipe may start from another recipe's policy
by naming that file (``init: policies/keltis_2p_value.zip``), so that the chain of recipes
rebuilds every shipped policy. A stage whose ``done.json`` exists is skipped on a rerun; a
stage stopped in the middle resumes from its files (a recording's finished seeds, an SB3
run's checkpoint, an expert-iteration run's finished files). The recipe's policy is the
last stage's, copied to ``WORK/policy.zip`` with the recipe named in its metadata.

A recipe promises what it makes: ``game`` must be a registered game and ``players`` a number
of players it takes, and every stage with a config of its own must play that game with that
many players (its ``env.game`` and ``env.num_players``, defaults included); a mismatch is
refused naming both. A ``train`` stage's ``sessions`` train on: each ``until`` (an integer;
only the last session may leave it out, to train to ``total_timesteps``) is larger than the
one before.

``tiny: true`` (``--tiny``) runs every stage at a tiny scale, to check a recipe end to end
in seconds: two seeds of two games, searches of two iterations, one epoch, a few hundred
decisions of PPO, one round of expert iteration.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.config import (
    ConfigError,
    apply_override,
    as_int,
    check_range,
    find_file,
    read_with_base,
    read_yaml_file,
    sections,
)
from ..common.sections import MAX_STEPS, EnvConfig

KINDS = ("record", "fit", "value", "train", "exit", "zero", "symmetry")
#: the keys each kind of stage takes (beside ``name`` and its kind)
STAGE_KEYS = {
    "record": {"imitate", "set", "seeds", "teacher", "actor", "round"},
    "fit": {"imitate", "set", "data", "held_out", "held_out_every", "init"},
    "value": {"imitate", "set", "data", "held_out", "init"},
    "train": {"config", "set", "init", "sessions"},
    "exit": {"config", "set", "init", "take", "rounds"},
    "zero": {"config", "set", "init", "take"},
    "symmetry": {"of", "symmetry"},
}


@dataclass
class Stage:
    name: str
    kind: str
    spec: dict[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.spec.get(key, default)


@dataclass
class Recipe:
    """A recipe file, read and checked (:func:`load_recipe`)."""

    path: Path
    output: str
    game: str
    num_players: int
    stages: list[Stage]
    imitate: dict[str, Any] = field(default_factory=dict)  # the base of every record, fit and value stage
    notes: str = ""

    @property
    def name(self) -> str:
        return self.path.stem

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)


# ---------------------------------------------------------------------- reading
def load_recipe(path: str | Path) -> Recipe:
    """The recipe in ``path``, every stage checked: known kinds and keys, unique names,
    references to earlier stages or to existing files, and each stage's config as its job
    loads it (a :class:`ConfigError` names the stage and the key). A recipe that is not in the
    working folder is the package's shipped one of that repository path (``configs/recipes/...``)."""
    path = find_file(path)
    if not path.is_file():
        raise ConfigError(f"recipe {str(path)!r} not found")
    data = read_yaml_file(path, "recipe")
    if not isinstance(data, dict):
        raise ConfigError(f"recipe {str(path)!r} must be a mapping with output, game, players and stages")
    allowed = {"output", "game", "players", "stages", "imitate", "notes"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"recipe {str(path)!r}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}")
    for key in ("output", "game", "players", "stages"):
        if key not in data:
            raise ConfigError(f"recipe {str(path)!r} has no {key!r}")
    stages_data = data["stages"]
    if not isinstance(stages_data, list) or not stages_data:
        raise ConfigError(f"recipe {str(path)!r}: stages must be a list of at least one stage")
    game, players = _game_and_players(path, data["game"], data["players"])
    recipe = Recipe(path=path, output=str(data["output"]), game=game, num_players=players,
                    stages=[_stage(path, i, s) for i, s in enumerate(stages_data)],
                    imitate=dict(data.get("imitate") or {}), notes=str(data.get("notes") or ""))
    names = [s.name for s in recipe.stages]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"recipe {str(path)!r}: stage {twice[0]!r} is named twice; give each stage its own name")
    for i, stage in enumerate(recipe.stages):
        _check_refs(recipe, i, stage)
        _check_sessions(recipe, stage)
        _check_stage_game(recipe, stage)
    return recipe


def _game_and_players(path: Path, game: Any, players: Any) -> tuple[str, int]:
    """The recipe's ``game`` (a registered game) and ``players`` (a count that game takes)."""
    from keltis_env.core.game import game_names, get_game

    names = game_names()
    if not isinstance(game, str) or game not in names:
        raise ConfigError(f"recipe {str(path)!r}: game must be one of {', '.join(names)}, got {game!r}")
    if isinstance(players, bool) or not isinstance(players, int):
        raise ConfigError(f"recipe {str(path)!r}: players must be an integer, got {players!r}")
    try:
        get_game(game).make_config(num_players=players)
    except ValueError as exc:
        raise ConfigError(f"recipe {str(path)!r}: players: {players} is not a player count of {game!r} ({exc})") \
            from None
    return game, players


def _stage_env(recipe: Recipe, stage: Stage) -> tuple[Any, Any] | None:
    """The game and player count a stage plays (its config's ``env.game`` and
    ``env.num_players`` after its ``set``, the defaults where it leaves them out); ``None``
    for a stage without a config of its own (``symmetry``)."""
    if stage.kind in ("record", "fit", "value"):
        data = merged(recipe.imitate, dict(stage.get("imitate") or {}))
    elif stage.kind == "train":
        from ..sb3.config import TrainConfig

        data = config_data(recipe, stage, "config", sections(TrainConfig))
    elif stage.kind == "exit":
        from ..exit.config import ExitConfig

        data = config_data(recipe, stage, "config", sections(ExitConfig))
    elif stage.kind == "zero":
        from ..zero.config import ZeroConfig

        data = config_data(recipe, stage, "config", sections(ZeroConfig))
    else:
        return None
    for item in overrides(stage.get("set")):
        apply_override(data, item)
    env = data.get("env")
    env = env if isinstance(env, dict) else {}
    return env.get("game", EnvConfig.game), env.get("num_players", EnvConfig.num_players)


def _check_stage_game(recipe: Recipe, stage: Stage) -> None:
    """A stage plays the recipe's game with its number of players."""
    found = _stage_env(recipe, stage)
    if found is None or found == (recipe.game, recipe.num_players):
        return
    game, players = found
    raise ConfigError(f"recipe {str(recipe.path)!r}, stage {stage.name!r} ({stage.kind}) plays {game!r} with {players} "
                      f"players (its env.game and env.num_players), but the recipe says game: {recipe.game}, players: "
                      f"{recipe.num_players}; make them agree")


def _check_sessions(recipe: Recipe, stage: Stage) -> None:
    """A ``train`` stage's ``sessions``: mappings of ``until`` and ``set``, ``until`` increasing."""
    sessions = stage.get("sessions")
    if sessions is None:
        return
    where = f"recipe {str(recipe.path)!r}, stage {stage.name!r}: sessions"
    if not isinstance(sessions, list) or not sessions:
        raise ConfigError(f"{where} must be a list of {{until: DECISIONS, set: {{...}}}}, got {sessions!r}")
    previous: int | None = None
    for j, session in enumerate(sessions):
        if not isinstance(session, dict) or not set(session) <= {"until", "set"}:
            raise ConfigError(f"{where}[{j}] must be a mapping of until (decisions) and set (overrides), "
                              f"got {session!r}")
        if "until" not in session:
            if j != len(sessions) - 1:
                raise ConfigError(f"{where}[{j}] has no until; only the last session may leave it out (it then "
                                  "trains to total_timesteps)")
            continue
        until = as_int(f"{where}[{j}].until", session["until"])
        check_range(f"{where}[{j}].until", until, {"lo": 1, "hi": MAX_STEPS})
        if previous is not None and until <= previous:
            raise ConfigError(f"{where}[{j}].until ({until:,}) must be larger than the session before's "
                              f"({previous:,}): each session trains on to more decisions")
        previous = until


def _stage(path: Path, i: int, data: Any) -> Stage:
    where = f"recipe {str(path)!r}, stage {i + 1}"
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping such as {{fit: {{name: policy, data: [demos]}}}}")
    kinds = [k for k in data if k in KINDS]
    if len(data) != 1 or len(kinds) != 1:
        raise ConfigError(f"{where} must name exactly one kind of stage ({', '.join(KINDS)}), got {sorted(data)}")
    kind = kinds[0]
    spec = data[kind]
    named = isinstance(spec, dict) and isinstance(spec.get("name"), str)
    if not named or not re.fullmatch(r"[\w.-]+", spec["name"]):
        raise ConfigError(f"{where} ({kind}) needs a name: a plain folder name")
    unknown = sorted(set(spec) - STAGE_KEYS[kind] - {"name"})
    if unknown:
        raise ConfigError(f"{where} ({kind} {spec['name']!r}): unknown key {unknown[0]!r}; allowed: "
                          f"{', '.join(sorted(STAGE_KEYS[kind] | {'name'}))}")
    return Stage(spec["name"], kind, dict(spec))


def _refs(stage: Stage) -> list[str]:
    """The stages and files ``stage`` reads."""
    out: list[str] = []
    for key in ("data", "held_out"):
        value = stage.get(key) or []
        out += [value] if isinstance(value, str) else list(value)
    for key in ("init", "of", "actor", "teacher"):
        if stage.get(key):
            out.append(stage.get(key))
    return [str(r) for r in out]


def _check_refs(recipe: Recipe, i: int, stage: Stage) -> None:
    earlier = {s.name: s for s in recipe.stages[:i]}
    for ref in _refs(stage):
        if ref in earlier or ref in {s.name for s in recipe.stages[i:]}:
            if ref not in earlier:
                raise ConfigError(f"recipe {str(recipe.path)!r}, stage {stage.name!r} reads {ref!r}, a later stage; "
                                  "a stage reads the stages before it")
            continue
        if stage.kind == "record" and ref in (stage.get("actor"), stage.get("teacher")) and not ref.endswith(".zip"):
            continue  # a bot's spec
        if not find_file(ref.removeprefix("ppo:")).is_file():  # a shipped policy by its repository path too
            raise ConfigError(f"recipe {str(recipe.path)!r}, stage {stage.name!r}: {ref!r} is neither an earlier "
                              "stage nor a file")
    if stage.kind == "symmetry" and not stage.get("of"):
        raise ConfigError(f"recipe {str(recipe.path)!r}, stage {stage.name!r}: give of: the stage whose policy plays "
                          "averaged")


def inputs(recipe: Recipe) -> list[str]:
    """The files (policy files first of all) a recipe reads that no stage of it makes."""
    names = {s.name for s in recipe.stages}
    return sorted({r.removeprefix("ppo:") for s in recipe.stages for r in _refs(s) if r not in names})


def overrides(mapping: dict[str, Any] | None) -> list[str]:
    """``{a.b: value}`` as ``--set`` items."""
    return [f"{k}={json.dumps(v)}" for k, v in (mapping or {}).items()]


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(base))
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def config_data(recipe: Recipe, stage: Stage, key: str, section_keys: tuple[str, ...]) -> dict[str, Any]:
    """The stage's config mapping: a ``base:`` file (a repository path: from the working folder,
    else the package's shipped one) under its keys."""
    data = dict(stage.get(key) or {})
    base = data.pop("base", None)
    if base is None:
        return data
    return merged(read_with_base(Path(base), section_keys), data)


# ---------------------------------------------------------------------- the tiny scale
_ITER = re.compile(r"iterations=\d+")


def tiny_spec(spec: str) -> str:
    """An agent spec with its search budget cut to two iterations."""
    if not spec.startswith("ismcts"):
        return spec
    if _ITER.search(spec):
        return _ITER.sub("iterations=2", spec)
    return spec + ("," if ":" in spec else ":") + "iterations=2"


def tiny(stage: Stage) -> Stage:
    """``stage`` at the tiny scale of ``--tiny``."""
    spec = json.loads(json.dumps(stage.spec))
    sets = dict(spec.get("set") or {})
    if stage.kind == "record":
        if spec.get("seeds"):
            spec["seeds"] = list(spec["seeds"])[:2]
        sets.update({"record.games": 2, "record.dagger_games": 2, "workers": 1})
    elif stage.kind in ("fit", "value"):
        sets.update({"fit.epochs": 1})
    elif stage.kind == "train":
        spec.pop("sessions", None)
        sets.update({"total_timesteps": 256, "n_envs": 2, "workers": 1, "ppo.n_steps": 128, "ppo.batch_size": 128,
                     "ppo.n_epochs": 1, "pool.snapshot_every": 128, "eval.every": 0, "eval.final_games": 2,
                     "checkpoint_every": 256, "record.games": 2, "record.dagger_games": 2, "max_minutes": 0,
                     "fit.epochs": 1})
    elif stage.kind == "exit":
        sets.update({"rounds": 1, "label.games": 2, "label.shard_games": 1, "gate.games": 2, "eval.games": 2,
                     "eval.seeds": [7], "eval.baseline": False, "eval.search": False, "workers": 1, "fit.epochs": 1})
        spec["take"] = None
    elif stage.kind == "zero":
        sets.update({"decisions": 400, "minutes": 0, "selfplay.games": 2, "selfplay.parallel": 2,
                     "search.simulations": 2, "search.top_k": 2, "eval.games": 2, "eval.every": 200,
                     "eval.workers": 1, "torch_threads": 1, "env.max_turns": 40})
    spec["set"] = sets
    return Stage(stage.name, stage.kind, spec)


__all__ = ["KINDS", "STAGE_KEYS", "Recipe", "Stage", "config_data", "inputs", "load_recipe", "merged", "overrides",
           "tiny", "tiny_spec"]
