"""Keltis, the card game (Reiner Knizia, 2008), as a PettingZoo AEC environment.

==================  ==========================================================
Import              ``from keltis_env import keltis_v0``
Actions             Discrete(187)
Parallel API        no
Manual control      ``keltis play``
Agents              ``agents = ['player_0', ..., 'player_{n-1}']`` (2 to 4)
Action shape        ()
Action values       0..186
Observation shape   ``{"observation": (831,) float32, "action_mask": (187,) int8}``
                    (2 players; 1016 with 3, 1201 with 4)
Observation values  observation in [-1, 2] (scores are scaled), mask in {0, 1}
==================  ==========================================================

Players play cards in ascending or descending rows, one row per colour, and every card
moves their figure one stone along that colour's path; tiles on the paths give points,
clovers (bonus steps) and wishing stones. The rules are ``docs/rules.md`` R1-R10.

Arguments
---------
``keltis_v0.env(num_players=2, render_mode=None, reward="win", illegal_action="terminate",
tile_layout="default", max_turns=500, backend="python")``

* ``num_players``: 2, 3 or 4. With 2 players 30 cards are removed unseen (R2).
* ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the text board),
  ``"rgb_array"`` (``render()`` returns the picture of the board, an ``(H, W, 3)`` uint8
  array whose size depends only on the number of players; needs Pillow, the ``render``
  extra) or ``"human"`` (shows that picture in a matplotlib window, updated after every
  step; where no window can open, e.g. without a display, it warns once and prints the
  text board instead). Both board forms show the hand of the player to act only.
* ``reward``: ``"win"``, ``"score"`` or ``"shaped"``, see Rewards.
* ``illegal_action``: ``"terminate"`` (PettingZoo's classic behaviour: the game ends,
  the offending agent gets -1 and the others 0, see Rewards) or ``"raise"`` (the engine's
  ``ActionError`` propagates, naming the action and the reason, and nothing changes).
  ``raw_env`` takes the same arguments, with ``illegal_action="raise"`` by default. The
  option means the same in the learner view and the match loop
  (:mod:`keltis_env.core.match`), which this environment runs on.
* ``tile_layout``: ``"default"`` (R1), ``"random"`` (drawn from the seed) or 5 lists of 4
  distinct rows in 1..8, the dark tile stones of each path.
* ``max_turns``: a game is truncated after this many turns (R8).
* ``backend``: what runs the game: ``"python"`` (the default: the Python engine),
  ``"compiled"`` (the game's compiled core, numba, the ``fast`` extra; several times as
  many decisions per second, see docs/speed.md) or ``"auto"`` (compiled where numba is
  installed, else the Python engine). Both deal with the Python engine, so a seed (or a
  reset option's position) and the same actions give exactly the same observations,
  masks, rewards, terminations, truncations and infos; every other argument works on
  both. On the compiled backend ``env.unwrapped.state_`` is the position as a Python
  state made when read, a copy: changing it does not change the game. ``"compiled"``
  without numba raises an ``ImportError`` naming the extra; any other value raises a
  ``ValueError`` naming the three.

Any other keyword raises a ``TypeError`` that names it and lists these arguments. The
environment pickles, wrapped or not, at any point of a game (e.g. for vectorisers that
start processes), and the copy goes on exactly like the original.

``reset(seed=None, options=None)``: ``seed`` is an integer (any integer type, numpy's
included) or ``None``; anything else raises a ``TypeError``. ``options={"state":
state_dict}`` starts from an explicit position (``GameState.to_dict()``);
``options={"record": record_dict, "upto": k}`` starts after the first ``k`` actions of a
game record. Together with seeds this makes
scenarios and duplicate deals reproducible. Other options are ignored with a warning.

Observation space
-----------------
``observation`` encodes what the observing player may know (R10), with seats relative
to the observer: ``p0`` is the observer, ``p1`` the next player in turn order, and so on.
The table below (2 players) is generated from the encoder's own segment list,
``keltis_env.games.keltis.encoding.observation_segments``; with more players the per-player segments
repeat for ``p2``, ``p3``.

{observation_table}

Legal action mask
-----------------
``action_mask[a] == 1`` exactly when action ``a`` is legal for the agent to act
(``GameState.legal_actions()``); every other agent's mask is all zeros.

Action space
------------
One id per decision; the steps of a turn are separate AEC steps: play or discard, then
any bonus steps (R7), then the draw.

{action_table}

Card ids inside a card range are ``colour * 11 + value`` with colours red, yellow,
green, blue, pink; colour ranges are indexed in the same order. ``play`` advances the
figure on that path or opens the path with a small figure; ``play ... large`` opens it
with the large figure (R5). ``pass`` declines a bonus step (R7). ``keltis_env.games.keltis``'s
``action_to_string`` / ``string_to_action`` convert between ids and this text.

Rewards
-------
``"win"`` and ``"score"`` are paid once, when the game ends (R8), to every agent, losers
included:

* ``"win"`` (default): sole winner ``+1``, everyone else ``-1``; players tied for the
  highest score share the victory (R9) and get ``0``, the others ``-1``.
* ``"score"``: own score minus the mean of the other players' scores, divided by 50.
* ``"shaped"``: paid after every action instead, to every agent: the change of its
  potential, the ``"score"`` reward it would get if the game ended now
  (potential-based shaping). The rewards of a game sum to its ``"score"`` reward exactly,
  so the best policy is the same; an action that changes no score (a discard taken back)
  pays exactly 0, and a loop of such actions pays nothing.

A game cut at ``max_turns`` sets ``truncations`` (not ``terminations``) for every agent
and pays the same rewards from the standings at that moment, so stalling never pays
better than playing on. ``infos[agent]`` holds ``score`` and ``scores`` once the game is
over.

An illegal action under ``illegal_action="terminate"`` ends the game at once: every agent
is terminated, the offender gets ``-1`` and every other agent ``0``, and every
``infos[agent]`` holds ``illegal_action`` (the action), ``offender`` (its agent) and
``reason`` (the engine's message naming the action and why it is illegal).

Version history
---------------
* v0: initial release.
"""

from __future__ import annotations

from keltis_env.envs import env_module_parts
from keltis_env.games.keltis import GAME

raw_env, env, action_table, __doc__ = env_module_parts(GAME, __doc__, __name__)

__all__ = ["GAME", "action_table", "env", "raw_env"]
