"""Keltis for reinforcement learning: rules engine, PettingZoo environments, bots.

``from keltis_env import keltis_v0`` gives the card game's AEC environment
(``keltis_v0.env()``); ``keltis_env.engine`` is the plain-Python rules engine.
``keltis_dice_v0`` and ``keltis_env.dice`` are the same for the dice game (RULES.md R11).
"""

__version__ = "0.1.0"
