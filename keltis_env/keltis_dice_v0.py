"""The Keltis dice game (Reiner Knizia) as a PettingZoo AEC environment.

==================  ==========================================================
Import              ``from keltis_env import keltis_dice_v0``
Actions             Discrete(48)
Parallel API        no
Manual control      ``keltis play --game dice``
Agents              ``agents = ['player_0', ..., 'player_{n-1}']`` (2 to 4)
Action shape        ()
Action values       0..47
Observation shape   ``{"observation": (313,) float32, "action_mask": (48,) int8}``
                    (2 players; 381 with 3, 449 with 4)
Observation values  observation in [-1, 2] (scores are scaled), mask in {0, 1}
==================  ==========================================================

Players roll five dice (five colour faces and a stone face), may re-roll some of them
once, take a stone for two or more stone faces, and move one of their four clover
markers up the column of a colour shown, as many rows as dice show it; bonus squares
give stones, clover steps and extra turns. Rows score ``-4, -3, -2, 1, 2, 3, 6, 7, 10``
and stones score by a table. The rules are ``docs/rules.md`` R11; everything is public except
the future dice.

Arguments
---------
``keltis_dice_v0.env(num_players=2, render_mode=None, reward="win", illegal_action="terminate",
bonus_layout="default", max_turns=500, backend="python")``

* ``num_players``: 2, 3 or 4. The game ends when the markers in the upper zone (rows
  7..9, all players) reach 5, 7 or 8, or when one player has all 4 markers there (R11).
* ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the text board),
  ``"rgb_array"`` (``render()`` returns the picture of the board, an ``(H, W, 3)`` uint8
  array whose size depends only on the number of players; needs Pillow, the ``render``
  extra) or ``"human"`` (shows that picture in a matplotlib window, updated after every
  step; where no window can open, e.g. without a display, it warns once and prints the
  text board instead).
* ``reward``: ``"win"``, ``"score"`` or ``"shaped"``, see Rewards.
* ``illegal_action``: ``"terminate"`` (PettingZoo's classic behaviour: the game ends,
  the offending agent gets -1 and the others 0, see Rewards) or ``"raise"`` (the engine's
  ``ActionError`` propagates, naming the action and the reason, and nothing changes).
  ``raw_env`` takes the same arguments, with ``illegal_action="raise"`` by default. The
  option means the same in the learner view and the match loop
  (:mod:`keltis_env.core.match`), which this environment runs on.
* ``bonus_layout``: ``"default"`` (R11), ``"random"`` (the default's 6 stones, 5 clovers
  and 4 extra turns, 3 per column on rows 2..8, drawn from the seed), or 5 columns (red,
  yellow, green, blue, pink), each a mapping ``{row: "stone" | "clover" | "extra"}`` or a
  list of 9 such names or ``None`` for rows 1..9.
* ``max_turns``: a game is truncated after this many turns, extra turns included.
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

``reset(seed=None, options=None)``: the seed, an integer (any integer type, numpy's
included) or ``None`` (anything else raises a ``TypeError``), decides the first player, a
random bonus layout and every roll of the dice. ``options={"state": state_dict}`` starts from an
explicit position (``GameState.to_dict()``, which carries its own seed and so its future
dice); ``options={"record": record_dict, "upto": k}`` starts after the first ``k``
actions of a game record (``GameRecord``). Other options are ignored with a warning.

Observation space
-----------------
``observation`` encodes the whole public position, with seats relative to the
observer: ``p0`` is the observer, ``p1`` the next player in turn order, and so on. The
table below (2 players) is generated from the encoder's own segment list,
``keltis_env.games.dice.encoding.observation_segments``; with more players the per-player
segments repeat for ``p2``, ``p3``.

{observation_table}

Legal action mask
-----------------
``action_mask[a] == 1`` exactly when action ``a`` is legal for the agent to act
(``GameState.legal_actions()``); every other agent's mask is all zeros. It is never
empty while the game runs: when no colour can be chosen, ``pass`` is the only legal
move (R11.4).

Action space
------------
One id per decision; a turn is: keep or re-roll (R11.2), then move or pass (R11.4),
then one clover step per clover reached (R11.5). Rolling, the stone rule, stone squares
and extra turns need no decision.

{action_table}

``keep`` and ``reroll`` ids are the bit mask of the dice to re-roll (bit ``i`` for die
``i + 1``; dice are numbered 1..5 in the state's sorted order, as the text board shows
them). Colour ranges are indexed red, yellow, green, blue, pink. ``move`` advances the
marker in that column, or enters a new marker on row ``k`` when ``k`` dice show the
colour. A clover step is not optional (R11.5 applies the bonus), so a pending clover
offers no ``pass``. ``keltis_env.games.dice``'s ``action_to_string`` / ``string_to_action``
convert between ids and this text.

Rewards
-------
``"win"`` and ``"score"`` are paid once, when the game ends, to every agent, losers
included:

* ``"win"`` (default): sole winner ``+1``, everyone else ``-1``; players tied for the
  highest score share the victory and get ``0``, the others ``-1``.
* ``"score"``: own score minus the mean of the other players' scores, divided by 50.
* ``"shaped"``: paid after every action instead, to every agent: the change of its
  potential, the ``"score"`` reward it would get if the game ended now
  (potential-based shaping). The rewards of a game sum to its ``"score"`` reward exactly,
  so the best policy is the same; an action that changes no score (a discard taken back)
  pays exactly 0, and a loop of such actions pays nothing.

A game cut at ``max_turns`` sets ``truncations`` (not ``terminations``) for every agent
and pays the same rewards from the standings at that moment. ``infos[agent]`` holds
``score`` and ``scores`` once the game is over.

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
from keltis_env.games.dice import GAME

raw_env, env, action_table, __doc__ = env_module_parts(GAME, __doc__, __name__)

__all__ = ["GAME", "action_table", "env", "raw_env"]
