"""The card game's bots inside its compiled core play whole games as the Python bots do
(numba, the ``fast`` extra): the evaluation's games when every agent is a bot with a
kernel (``heuristic``, ``planner``), and the learner view's kernel opponents.

The players are the batch module's (:func:`~.kernels_batch.bot_action`: the heuristic of
:mod:`.kernels_heuristic`, the planner of :mod:`.kernels_planner`), moved by the one
driver's table (:class:`keltis_env.compiled.table.GameTable`: ``advance`` and ``act``,
which count each seat's decisions and log the actions). The kernels read only what the
player to move may see (their modules say so, and their tests hold their decisions equal
to the Python bots' on a view's row whatever the hidden cards are), so a full state's row
gives the moves of the match loop's bots. The game's descriptor names this module as its
compiled core's ``match`` part: the evaluation plays the kernels' games whole only for a
game that declares one.
"""

from __future__ import annotations

from .kernels_batch import HEURISTIC, PLANNER, bot_action, opponent_tables

__all__ = ["HEURISTIC", "PLANNER", "bot_action", "opponent_tables"]
