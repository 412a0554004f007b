"""The integer action codec of the dice game (docs/rules.md R11) and its readable form.

Every decision is one integer in ``0 .. NUM_ACTIONS - 1``, in named, contiguous ranges
(:data:`ACTION_RANGES`):

=================  =======  =================================  ===================
range              ids      readable form                      step (R11)
=================  =======  =================================  ===================
``keep``           0        ``keep``                           2: keep the roll
``reroll``         1..31    ``reroll 1,3,4``                   2: re-roll dice
``move``           32..36   ``move green``                     4: move a marker
``pass``           37       ``pass``                           4: no colour possible
``bonus_advance``  38..42   ``bonus advance red``              5: clover bonus
``bonus_enter``    43..47   ``bonus enter blue``               5: clover bonus
=================  =======  =================================  ===================

``keep`` and ``reroll`` share one encoding: the id is the bit mask of the dice to
re-roll, bit ``i`` for die ``i + 1`` (``keep`` is the empty mask). Dice are numbered 1..5
in the order the state lists them (sorted by face). Within a colour range the offset is
the colour index (red, yellow, green, blue, pink). ``move`` advances the player's marker
in that column or enters a new one there; ``pass`` is legal only when no colour can be
chosen (R11.4). The clover bonus is applied, not offered (R11.5: "apply it"; the source:
"applique immédiatement"), so a pending clover has no ``pass``; it always has an option,
since a player who just moved has a marker below row 9 or a marker off the board and a
free column (all four on row 9 would have ended the game).
"""

from __future__ import annotations

from typing import Final

from keltis_env.core.errors import ActionError
from keltis_env.core.validation import as_integer, parse_name

from .constants import COLORS, NUM_COLORS, NUM_DICE

KEEP: Final = 0
REROLL: Final = 1
MOVE: Final = 1 << NUM_DICE  # 32
PASS: Final = MOVE + NUM_COLORS
BONUS_ADVANCE: Final = PASS + 1
BONUS_ENTER: Final = BONUS_ADVANCE + NUM_COLORS
NUM_ACTIONS: Final = BONUS_ENTER + NUM_COLORS  # 48

#: Named, half-open id ranges ``(start, stop)``, in id order.
ACTION_RANGES: Final = {
    "keep": (KEEP, REROLL),
    "reroll": (REROLL, MOVE),
    "move": (MOVE, PASS),
    "pass": (PASS, BONUS_ADVANCE),
    "bonus_advance": (BONUS_ADVANCE, BONUS_ENTER),
    "bonus_enter": (BONUS_ENTER, NUM_ACTIONS),
}

_FORMS = "'keep', 'reroll 1,3,4' (dice 1..5), 'move red', 'pass', 'bonus advance red', 'bonus enter red'"


def reroll_action(dice: list[int] | tuple[int, ...] | set[int]) -> int:
    """The action that re-rolls the given dice (numbered 1..5); ``keep`` for none."""
    mask = 0
    for d in dice:
        die = as_integer(d)
        if die is None or not 1 <= die <= NUM_DICE:
            raise ActionError(f"dice are numbered 1..{NUM_DICE}, got {d!r}")
        mask |= 1 << (die - 1)
    return mask


def rerolled_dice(action: int) -> list[int]:
    """The dice (numbered 1..5) a ``keep``/``reroll`` action re-rolls."""
    return [i + 1 for i in range(NUM_DICE) if action >> i & 1]


def action_to_string(action: int) -> str:
    """Readable form of an action id, e.g. ``reroll 1,3,4`` or ``bonus enter blue``."""
    value = as_integer(action)
    if value is None or not 0 <= value < NUM_ACTIONS:
        raise ActionError(f"action id {action!r} is out of range; ids are 0..{NUM_ACTIONS - 1}")
    action = value
    if action == KEEP:
        return "keep"
    if action < MOVE:
        return "reroll " + ",".join(map(str, rerolled_dice(action)))
    if action < PASS:
        return f"move {COLORS[action - MOVE]}"
    if action == PASS:
        return "pass"
    if action < BONUS_ENTER:
        return f"bonus advance {COLORS[action - BONUS_ADVANCE]}"
    return f"bonus enter {COLORS[action - BONUS_ENTER]}"


def string_to_action(text: str) -> int:
    """Action id of a readable action; the inverse of :func:`action_to_string`.

    ``reroll`` also accepts dice separated by spaces or commas in any order
    (``reroll 4 1``); every die at most once.
    """
    if not isinstance(text, str):
        raise ActionError(f"cannot read action {text!r}: not a string; forms are {_FORMS}")
    words = text.strip().lower().split(maxsplit=1)
    head = words[0] if words else ""
    rest = words[1] if len(words) > 1 else ""
    try:
        if head in ("keep", "pass") and not rest:
            return KEEP if head == "keep" else PASS
        if head == "reroll" and rest:
            items = rest.replace(",", " ").split()
            if not all(item.isascii() and item.isdigit() for item in items):
                raise ValueError(f"dice are numbers 1..{NUM_DICE}, got {rest!r}")
            dice = [int(item) for item in items]
            if len(set(dice)) != len(dice):
                raise ValueError(f"a die is named twice in {rest!r}")
            return reroll_action(dice)
        if head == "move" and rest:
            return MOVE + parse_name(rest, COLORS, "colour")
        if head == "bonus":
            kind, _, color = rest.partition(" ")
            if kind == "advance" and color:
                return BONUS_ADVANCE + parse_name(color, COLORS, "colour")
            if kind == "enter" and color:
                return BONUS_ENTER + parse_name(color, COLORS, "colour")
    except ValueError as exc:
        raise ActionError(f"cannot read action {text!r}: {exc}") from None
    raise ActionError(f"cannot read action {text!r}; forms are {_FORMS}")


__all__ = [
    "ACTION_RANGES",
    "BONUS_ADVANCE",
    "BONUS_ENTER",
    "KEEP",
    "MOVE",
    "NUM_ACTIONS",
    "PASS",
    "REROLL",
    "ActionError",
    "action_to_string",
    "reroll_action",
    "rerolled_dice",
    "string_to_action",
]
