"""An SB3 run's resumable checkpoint, ``checkpoints/last.zip``: the model (optimizer
included) with the run's state inside, written whole (:mod:`keltis_env.core.output_files`), and
read back only when every member is whole.

A run killed at any moment, SIGKILL included, leaves its last checkpoint whole: ``--resume``
continues from it, losing at most the steps since (one ``checkpoint_every`` interval). A
checkpoint that is nevertheless truncated or corrupt (a full disk, a copy cut short) is
refused at resume with a message saying so.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path, atomic_write_text
from keltis_env.policy import is_whole_zip, write_policy_info

from ..common.config import ConfigError
from ..common.sections import EnvConfig

STATE_MEMBER = "trainer_state.json"  # the run's state inside checkpoints/last.zip
#: the warm start's policy file in a run's checkpoints/ (the policy its RL starts from), and
#: its name among the final evaluation's opponents (eval.warm_start)
WARM_START = "warm_start.zip"
WARM_START_NAME = "warm start"
#: the slow copy of the policy (``ppo.slow_kl``) beside ``last.zip``
SLOW = "slow.pt"
_MODEL_MEMBERS = ("data", "policy.pth", "policy.optimizer.pth")


def save_checkpoint(model: Any, folder: Path, state: dict[str, Any], env: EnvConfig) -> None:
    """``folder/last.zip``: ``model`` and the run's ``state`` in one file, replaced
    atomically (``folder/state.json`` is a readable copy of the state). With a critic that
    reads hidden information (:mod:`training.common.critic`) the file is for resuming only and
    holds no policy metadata: its network takes more than a seat's observation."""
    from ..common.critic import privileged

    text = json.dumps(state, indent=1)
    with atomic_path(folder / "last.zip") as tmp:
        model.save(tmp)
        if not privileged(model):
            write_policy_info(tmp, env.game, env.num_players, env.features)
        with zipfile.ZipFile(tmp, "a") as zf:
            zf.writestr(STATE_MEMBER, text)
    atomic_write_text(folder / "state.json", text)


def save_slow(model: Any, path: Path) -> None:
    """The slow copy of the policy (``ppo.slow_kl``) at ``path``, beside ``last.zip``
    (replaced atomically); nothing without one."""
    if getattr(model, "slow_policy", None) is None:
        return
    import torch

    with atomic_path(path) as tmp:
        torch.save(model.slow_policy.state_dict(), tmp)


def restore_slow(model: Any, path: Path) -> None:
    """A resumed run's slow copy as saved at ``path``, where the run has one and the file is
    there (else it starts as the policy is now)."""
    if getattr(model, "slow_policy", None) is None or not path.is_file():
        return
    import torch

    try:
        model.slow_policy.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception as exc:  # a file that is not this network's slow copy
        raise ConfigError(f"cannot resume the slow copy of the policy from {str(path)!r} "
                          f"({type(exc).__name__}: {exc}); remove the file to start it afresh") from None


def read_checkpoint_state(path: Path) -> dict[str, Any]:
    """The run's state saved in the checkpoint ``path``, after checking that the checkpoint
    is whole (every member's checksum); :class:`ConfigError` says what is wrong. A checkpoint
    of an older run has no state inside: its ``state.json`` next to it is used."""
    where = f"cannot resume from {str(path)!r}"
    if not is_whole_zip(path):
        raise ConfigError(f"{where}: it is truncated or corrupt (not a whole zip file); expected the model zip "
                          "written by training. Restore it from a copy or start a new run")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            missing = [m for m in _MODEL_MEMBERS if m not in names]
            if missing:
                raise ConfigError(f"{where}: it lacks {', '.join(missing)}; expected a MaskablePPO checkpoint")
            bad = zf.testzip()
            if bad is not None:
                raise ConfigError(f"{where}: it is corrupt (member {bad!r} fails its checksum)")
            text = zf.read(STATE_MEMBER).decode() if STATE_MEMBER in names else None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ConfigError(f"{where}: it is corrupt ({exc})") from None
    source = f"{path}:{STATE_MEMBER}"
    if text is None:
        state_file = path.parent / "state.json"
        if not state_file.is_file():
            raise ConfigError(f"{where}: no run state inside it nor a state.json next to it")
        text, source = state_file.read_text(), str(state_file)
    try:
        state = json.loads(text)
        int(state["timesteps"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{where}: the run state {source} is unreadable ({exc})") from None
    return dict(state)


def load_checkpoint(algorithm: Any, path: Path, venv: Any) -> Any:
    """The model saved at ``path`` (a checkpoint that :func:`read_checkpoint_state` passed),
    on the environments ``venv``."""
    try:
        return algorithm.load(path, env=venv, device="cpu", print_system_info=False)
    except Exception as exc:  # a checkpoint that passed the checks but not SB3's loader
        raise ConfigError(f"cannot resume from {str(path)!r}: it cannot be loaded ({type(exc).__name__}: {exc}); "
                          "expected a MaskablePPO checkpoint of this run's network") from None


__all__ = ["SLOW", "STATE_MEMBER", "WARM_START", "WARM_START_NAME", "load_checkpoint", "read_checkpoint_state",
           "restore_slow", "save_checkpoint", "save_slow"]
