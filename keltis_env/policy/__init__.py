"""Policy files: the format (:mod:`.format`: a Stable-Baselines3 PPO zip plus the project's
metadata), its weights read without torch (:mod:`.weights`) and its network run in numpy
(:mod:`.network`). The bot that plays one is :mod:`keltis_env.bots.ppo`."""

from .format import INFO_MEMBER, PolicyInfo, PolicyLoadError, is_whole_zip, read_policy_info, write_policy_info
from .network import NumpyPolicy, load_policy

__all__ = [
    "INFO_MEMBER",
    "NumpyPolicy",
    "PolicyInfo",
    "PolicyLoadError",
    "is_whole_zip",
    "load_policy",
    "read_policy_info",
    "write_policy_info",
]
