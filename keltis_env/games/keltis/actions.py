"""The integer action codec (docs/rules.md R3, R5, R7) and its readable form.

Every decision of the game is one integer in ``0 .. NUM_ACTIONS - 1``. The ids form
named, contiguous ranges, declared in :data:`ACTION_RANGES`:

=========================  =========  ===============================  ==================
range                      ids        readable form                    step
=========================  =========  ===============================  ==================
``play``                   0..54      ``play red 7``                   play or discard
``play_large``             55..109    ``play red 7 large``             play or discard
``discard``                110..164   ``discard red 7``                play or discard
``draw_deck``              165        ``draw deck``                    draw
``draw_discard``           166..170   ``draw red``                     draw
``bonus_advance``          171..175   ``bonus advance red``            bonus step
``bonus_open_small``       176..180   ``bonus open red small``         bonus step
``bonus_open_large``       181..185   ``bonus open red large``         bonus step
``pass``                   186        ``pass``                         bonus step
=========================  =========  ===============================  ==================

Within a card range the offset is the card kind ``colour * 11 + value``; within a
colour range it is the colour index (red, yellow, green, blue, pink).

``play`` advances the player's figure on that path, or, for the first figure on the
path, opens it with a small figure; ``play ... large`` opens the path with the large
figure (R5). ``pass`` declines the optional bonus step (R7).
"""

from __future__ import annotations

from typing import Final

from keltis_env.core.errors import ActionError
from keltis_env.core.validation import as_action_id as _as_action_id

from .constants import COLORS, NUM_CARD_KINDS, NUM_COLORS, card_name, parse_card, parse_color

_FORMS: Final = (
    "'play red 7', 'play red 7 large', 'discard red 7', 'draw deck', 'draw red', 'bonus advance red', "
    "'bonus open red small|large', 'pass'"
)

PLAY: Final = 0
PLAY_LARGE: Final = PLAY + NUM_CARD_KINDS
DISCARD: Final = PLAY_LARGE + NUM_CARD_KINDS
DRAW_DECK: Final = DISCARD + NUM_CARD_KINDS
DRAW_DISCARD: Final = DRAW_DECK + 1
BONUS_ADVANCE: Final = DRAW_DISCARD + NUM_COLORS
BONUS_OPEN_SMALL: Final = BONUS_ADVANCE + NUM_COLORS
BONUS_OPEN_LARGE: Final = BONUS_OPEN_SMALL + NUM_COLORS
PASS: Final = BONUS_OPEN_LARGE + NUM_COLORS
NUM_ACTIONS: Final = PASS + 1

#: Named, half-open id ranges ``(start, stop)``, in id order.
ACTION_RANGES: Final = {
    "play": (PLAY, PLAY_LARGE),
    "play_large": (PLAY_LARGE, DISCARD),
    "discard": (DISCARD, DRAW_DECK),
    "draw_deck": (DRAW_DECK, DRAW_DISCARD),
    "draw_discard": (DRAW_DISCARD, BONUS_ADVANCE),
    "bonus_advance": (BONUS_ADVANCE, BONUS_OPEN_SMALL),
    "bonus_open_small": (BONUS_OPEN_SMALL, BONUS_OPEN_LARGE),
    "bonus_open_large": (BONUS_OPEN_LARGE, PASS),
    "pass": (PASS, NUM_ACTIONS),
}


def as_action_id(action: object) -> int:
    """``action`` as a plain int: any integer type is accepted (numpy's included), but
    not bools, floats or strings."""
    return _as_action_id(action, NUM_ACTIONS)


def action_to_string(action: int) -> str:
    """Readable form of an action id, e.g. ``play red 7 large`` or ``draw green``."""
    action = as_action_id(action)
    if not 0 <= action < NUM_ACTIONS:
        raise ActionError(f"action id {action!r} is out of range; ids are 0..{NUM_ACTIONS - 1}")
    if action < PLAY_LARGE:
        return f"play {card_name(action)}"
    if action < DISCARD:
        return f"play {card_name(action - PLAY_LARGE)} large"
    if action < DRAW_DECK:
        return f"discard {card_name(action - DISCARD)}"
    if action == DRAW_DECK:
        return "draw deck"
    if action < BONUS_ADVANCE:
        return f"draw {COLORS[action - DRAW_DISCARD]}"
    if action < BONUS_OPEN_SMALL:
        return f"bonus advance {COLORS[action - BONUS_ADVANCE]}"
    if action < BONUS_OPEN_LARGE:
        return f"bonus open {COLORS[action - BONUS_OPEN_SMALL]} small"
    if action < PASS:
        return f"bonus open {COLORS[action - BONUS_OPEN_LARGE]} large"
    return "pass"


def string_to_action(text: str) -> int:
    """Action id of a readable action; the inverse of :func:`action_to_string`."""
    if not isinstance(text, str):
        raise ActionError(f"cannot read action {text!r}: not a string; forms are {_FORMS}")
    words = text.strip().lower().split()
    try:
        if words == ["pass"]:
            return PASS
        if words == ["draw", "deck"]:
            return DRAW_DECK
        if len(words) == 2 and words[0] == "draw":
            return DRAW_DISCARD + parse_color(words[1])
        if words[:1] == ["play"] and len(words) in (3, 4):
            kind = parse_card(" ".join(words[1:3]))
            if len(words) == 3:
                return PLAY + kind
            if words[3] == "large":
                return PLAY_LARGE + kind
        if words[:1] == ["discard"] and len(words) == 3:
            return DISCARD + parse_card(" ".join(words[1:3]))
        if words[:2] == ["bonus", "advance"] and len(words) == 3:
            return BONUS_ADVANCE + parse_color(words[2])
        if words[:2] == ["bonus", "open"] and len(words) == 4 and words[3] in ("small", "large"):
            base = BONUS_OPEN_SMALL if words[3] == "small" else BONUS_OPEN_LARGE
            return base + parse_color(words[2])
    except ValueError as exc:
        raise ActionError(f"cannot read action {text!r}: {exc}") from None
    raise ActionError(f"cannot read action {text!r}; forms are {_FORMS}")
