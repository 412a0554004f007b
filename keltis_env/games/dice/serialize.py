"""JSON-safe dicts of dice-game states, and their validation (docs/rules.md R11).

The dict form (``format: "keltis-dice-state"``, ``version: 1``) is readable: faces and
columns are colour names (``"stone"`` for the stone face), bonus symbols are
``"stone"``, ``"clover"``, ``"extra"``, and every marker is listed by column with its
row (0: no marker). The ``seed`` and the number of ``rolls`` made decide the future dice
(see :mod:`keltis_env.games.dice.state`). :func:`state_from_dict` refuses any dict that breaks
an invariant of the rules, naming the invariant, and any key it does not know; errors are
the shared :class:`~keltis_env.core.errors.StateError`, so callers handle both games alike.

The bonus squares must be the layout the options name; for ``"random"`` they must have
that layout's shape (the default's symbols, 3 per column on rows 2..8) but need not be
the seed's draw, so that positions can be set up by hand. The first player is not
checked against the seed either.

The state module calls this one (``GameState.to_dict`` and ``GameState.from_dict``, which
passes its class in), so the dependency goes one way, state -> serialize: the state
class is imported here for type checking only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from keltis_env.core.errors import ConfigError, StateError
from keltis_env.core.validation import (
    check_keys,
    check_state_header,
    fail_state,
    parse_state,
    per_name,
    state_bool,
    state_int,
    state_list,
    state_mapping,
    state_name,
)

from .config import GameConfig, layout_to_lists, parse_layout
from .constants import (
    BONUS_SYMBOLS,
    BONUSES_PER_COLUMN,
    CLOVER,
    COLORS,
    FACE_NAMES,
    MARKERS_PER_PLAYER,
    MAX_STONES_PER_TURN,
    NO_BONUS,
    NUM_DICE,
    RANDOM_BONUS_ROWS,
    TOP_ROW,
    UPPER_FIRST_ROW,
    UPPER_MARKERS_TO_END,
    EndReason,
    Phase,
)

if TYPE_CHECKING:
    from .state import GameState

STATE_FORMAT = "keltis-dice-state"
STATE_VERSION = 1
_PHASES = {"reroll": Phase.REROLL, "move": Phase.MOVE, "bonus": Phase.BONUS, "over": Phase.OVER}
_PHASE_NAMES = {v: k for k, v in _PHASES.items()}
_ENDS = {
    None: EndReason.NONE,
    "all_upper": EndReason.ALL_UPPER,
    "upper_count": EndReason.UPPER_COUNT,
    "truncated": EndReason.TRUNCATED,
}
_END_NAMES = {v: k for k, v in _ENDS.items()}
#: the keys of a state dict and of a player's dict, in to_dict's order
STATE_KEYS = (
    "format",
    "version",
    "options",
    "seed",
    "rolls",
    "bonus_squares",
    "dice",
    "players",
    "first_player",
    "current_player",
    "phase",
    "turn",
    "extra_turn",
    "end",
)
PLAYER_KEYS = ("markers", "stones")


def state_to_dict(s: GameState) -> dict[str, Any]:
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "options": s.config.to_dict(),
        "seed": s.seed,
        "rolls": s.rolls,
        "bonus_squares": dict(zip(COLORS, layout_to_lists(s.bonus), strict=True)),
        "dice": [FACE_NAMES[f] for f in s.dice],
        "players": [
            {"markers": dict(zip(COLORS, s.pos[p], strict=True)), "stones": s.stones[p]} for p in range(s.num_players)
        ],
        "first_player": s.first_player,
        "current_player": s.current,
        "phase": _PHASE_NAMES[s.phase],
        "turn": s.turn,
        "extra_turn": s.extra_turn,
        "end": _END_NAMES[s.end],
    }


def state_from_dict(data: Mapping[str, Any], cls: type[GameState]) -> GameState:
    """A ``cls`` instance (the state class) rebuilt from :func:`state_to_dict`'s form."""
    return parse_state(_build, data, cls, what="dice state")


def _build(data: Mapping[str, Any], cls: type[GameState]) -> GameState:
    check_state_header(data, STATE_FORMAT, STATE_VERSION, STATE_KEYS)
    config = GameConfig.from_dict(data["options"])
    n = config.num_players
    s = cls.__new__(cls)
    s.config = config
    s.num_players = n
    seed = data["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        fail_state(f"'seed' must be an integer, got {seed!r}")
    s._set_seed(seed)
    s.rolls = state_int(data["rolls"], "rolls", 0)

    # R11 board: the bonus squares the options name.
    columns = per_name(data, "bonus_squares", COLORS, "a list of 9 symbols or null")
    try:
        board = parse_layout([state_list(column, f"bonus_squares.{COLORS[c]}") for c, column in enumerate(columns)])
    except ConfigError as exc:
        fail_state(f"bonus_squares: {exc}")
    layout = config.bonus_layout
    if layout == "random":
        rows = [[r for r in range(1, TOP_ROW + 1) if column[r] != NO_BONUS] for column in board]
        symbols = sorted(code for column in board for code in column if code != NO_BONUS)
        if any(len(r) != BONUSES_PER_COLUMN or not set(r) <= set(RANDOM_BONUS_ROWS) for r in rows) or symbols != list(
            BONUS_SYMBOLS
        ):
            fail_state(
                "bonus_squares do not have the random layout's shape: the default's symbols, "
                f"{BONUSES_PER_COLUMN} per column on rows {RANDOM_BONUS_ROWS[0]}..{RANDOM_BONUS_ROWS[-1]}"
            )
    elif board != config.bonus_squares():
        fail_state(
            f"bonus_squares differ from the {'default' if layout == 'default' else 'explicit'} layout of the options"
        )
    s.bonus = board

    # Dice: five faces, kept sorted (dice are interchangeable).
    dice = data["dice"]
    if not isinstance(dice, list) or len(dice) != NUM_DICE or any(f not in FACE_NAMES for f in dice):
        fail_state(f"'dice' must list {NUM_DICE} faces, each one of {', '.join(FACE_NAMES)}, got {dice!r}")
    s._set_dice([FACE_NAMES.index(f) for f in dice])

    # Players.
    players = data["players"]
    if not isinstance(players, list) or len(players) != n:
        fail_state(f"'players' must list {n} players, as num_players says")
    s.pos, s.markers, s.upper, s.stones = [], [], [], []
    max_stones = MAX_STONES_PER_TURN * config.max_turns
    for p, pd in enumerate(players):
        where = f"players[{p}]"
        check_keys(state_mapping(pd, where), PLAYER_KEYS, where, required=True)
        rows = per_name(pd, "markers", COLORS, "a row 0..9")
        pos = [state_int(r, f"{where}.markers.{COLORS[c]}", 0, TOP_ROW) for c, r in enumerate(rows)]
        on_board = sum(1 for r in pos if r)
        if on_board > MARKERS_PER_PLAYER:
            fail_state(f"player {p} has {on_board} markers on the board; each player has {MARKERS_PER_PLAYER} (R11)")
        s.pos.append(pos)
        s.markers.append(on_board)
        s.upper.append(sum(1 for r in pos if r >= UPPER_FIRST_ROW))
        s.stones.append(state_int(pd["stones"], f"{where}.stones", 0, max_stones))
    s.upper_total = sum(s.upper)
    s.upper_to_end = UPPER_MARKERS_TO_END[n]

    # Turn structure.
    s.first_player = state_int(data["first_player"], "first_player", 0, n - 1)
    s.current = state_int(data["current_player"], "current_player", 0, n - 1)
    s.phase = state_name(data["phase"], "phase", _PHASES)
    s.end = state_name(data["end"], "end", _ENDS)
    s.turn = state_int(data["turn"], "turn", 0, config.max_turns)
    s.extra_turn = state_bool(data["extra_turn"], "extra_turn")
    _check_turn(s)
    return s


def _check_turn(s: GameState) -> None:
    """R11 end: the conditions hold exactly when the game says it ended by them, the
    last mover made the ending move, and a pending clover lies under a moved marker."""
    n, max_turns, p = s.num_players, s.config.max_turns, s.current
    end = _END_NAMES[s.end]
    all_upper = [q for q in range(n) if s.upper[q] == MARKERS_PER_PLAYER]
    if (s.phase == Phase.OVER) != (s.end != EndReason.NONE):
        fail_state("phase 'over' goes with an end reason, and an end reason with phase 'over'")
    if s.upper_total > s.upper_to_end:
        fail_state(f"{s.upper_total} markers are in the upper zone; with {n} players the game ends at {s.upper_to_end}")
    if s.end != EndReason.ALL_UPPER and all_upper:
        fail_state(f"player {all_upper[0]} has all {MARKERS_PER_PLAYER} markers in the upper zone, which ends the game")
    if s.end == EndReason.ALL_UPPER and all_upper != [p]:
        fail_state(
            f"end 'all_upper': the last mover, player {p}, is the one player with all {MARKERS_PER_PLAYER} "
            f"markers in the upper zone (R11 end); players with all of them up: {all_upper}"
        )
    if (s.end == EndReason.UPPER_COUNT) != (s.upper_total == s.upper_to_end and not all_upper):
        fail_state(
            f"end 'upper_count' goes with exactly {s.upper_to_end} markers in the upper zone "
            f"({s.upper_total} there, end {end!r})"
        )
    if s.end == EndReason.UPPER_COUNT and not s.upper[p]:
        fail_state(
            f"end 'upper_count': the last mover, player {p}, moved the marker that ended the game into the upper "
            "zone (R11 end), but has none there"
        )
    if s.end == EndReason.TRUNCATED and s.turn != max_turns:
        fail_state(f"end 'truncated' needs turn == max_turns ({max_turns}), got turn {s.turn}")
    if s.end != EndReason.TRUNCATED and s.turn >= max_turns:
        fail_state(f"turn {s.turn} reached max_turns {max_turns}, which truncates the game")
    # R11.3 and R11.5: a turn gives at most one stone from the roll and one from the
    # square where it ends; a turn past its roll (and not yet over) has given at most one.
    in_turn = s.phase in (Phase.MOVE, Phase.BONUS) or s.end in (EndReason.ALL_UPPER, EndReason.UPPER_COUNT)
    most = MAX_STONES_PER_TURN * s.turn + in_turn
    if sum(s.stones) > most:
        fail_state(
            f"the players hold {sum(s.stones)} stones in all after {s.turn} turns; a turn gives at most "
            f"{MAX_STONES_PER_TURN} (one by the roll, R11.3, one by a stone square, R11.5), so at most {most} here"
        )
    if s.extra_turn and s.phase == Phase.OVER:
        fail_state("'extra_turn' (the current turn is an extra turn) is false once the game is over")
    if s.phase == Phase.BONUS:
        if not any(s.bonus[c][r] == CLOVER for c, r in enumerate(s.pos[p]) if r):
            fail_state(
                f"phase 'bonus': a clover step is pending because player {p}'s move ended on a clover square "
                "(R11.5), but none of their markers is on one"
            )
        if not s._legal_bonus():
            fail_state(f"phase 'bonus', but player {p} has no clover step to make")


__all__ = ["STATE_FORMAT", "STATE_VERSION", "StateError", "state_from_dict", "state_to_dict"]
