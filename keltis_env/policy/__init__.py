"""Policy files: the format (:mod:`.format`: a Stable-Baselines3 PPO zip plus the project's
metadata), its weights read without torch (:mod:`.weights`) and its network run in numpy
(:mod:`.network`). The bot that plays one is :mod:`keltis_env.bots.ppo`.

:func:`load_policy` is the one check of a policy file: everything that loads one (``ppo:PATH``,
a search's ``net=PATH``, ``keltis policy PATH``, training's opponents and warm starts) refuses
the same files, with a :class:`PolicyLoadError` naming the file and what is wrong."""

from .format import (
    INFO_MEMBER,
    PolicyInfo,
    PolicyLoadError,
    PolicyOutputError,
    is_whole_zip,
    read_policy_info,
    write_policy_info,
)
from .network import NumpyPolicy, load_policy, unusable_logits

__all__ = [
    "INFO_MEMBER",
    "NumpyPolicy",
    "PolicyInfo",
    "PolicyLoadError",
    "PolicyOutputError",
    "is_whole_zip",
    "load_policy",
    "read_policy_info",
    "unusable_logits",
    "write_policy_info",
]
