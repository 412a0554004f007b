"""JSON-safe dicts of game states, and their validation.

The dict form (``format: "keltis-state"``, ``version: 1``) is readable: cards are
``"red 7"``, colours are names, tiles are ``"wish"``, ``"clover"``, ``"points1..3"``.
Piles are listed bottom first (the last element is the top). :func:`state_from_dict`
refuses any dict that breaks an invariant of the rules, naming the invariant, and any
key it does not know (a misspelt field must not pass silently).

Positions may be set up by hand, so only what the rules make impossible is refused; for
example a figure may stand ahead of the cards played on its path (bonus steps move it
without a card, R7), but never behind them (R5).

The state module calls this one (``GameState.to_dict`` and ``GameState.from_dict``, which
passes its class in), so the dependency goes one way, state -> serialize: the state
class is imported here for type checking only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from keltis_env.core.errors import ConfigError
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

from .config import GameConfig
from .constants import (
    COLORS,
    COPIES_PER_CARD,
    END_ROW,
    FIGURES_PER_PLAYER,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    HAND_SIZE,
    MAX_TILE_POINTS,
    NO_TILE,
    NUM_CARD_KINDS,
    NUM_COLORS,
    NUM_VALUES,
    NUM_WISHING_STONES,
    REMOVED_CARDS,
    TILE_CODES,
    TILE_NAMES,
    TILE_POINTS,
    TILE_SET,
    WISHING_STONE,
    EndReason,
    Phase,
    card_name,
    parse_card,
    parse_color,
    row_direction,
)

if TYPE_CHECKING:
    from .state import GameState

STATE_FORMAT = "keltis-state"
STATE_VERSION = 1
_PHASES = {"play": Phase.PLAY, "draw": Phase.DRAW, "bonus": Phase.BONUS, "over": Phase.OVER}
_PHASE_NAMES = {v: k for k, v in _PHASES.items()}
_ENDS = {None: EndReason.NONE, "goal": EndReason.GOAL, "deck": EndReason.DECK, "truncated": EndReason.TRUNCATED}
_END_NAMES = {v: k for k, v in _ENDS.items()}
#: the keys of a state dict, of a player's dict and of a figure's dict, in to_dict's order
STATE_KEYS = (
    "format",
    "version",
    "options",
    "dark_rows",
    "tiles",
    "deck",
    "removed",
    "discards",
    "players",
    "first_player",
    "current_player",
    "phase",
    "turn",
    "discarded_color",
    "end",
)
PLAYER_KEYS = ("hand", "rows", "figures", "wishing_stones", "tile_points")
FIGURE_KEYS = ("path", "row", "large")


def state_to_dict(s: GameState) -> dict[str, Any]:
    players = []
    for p in range(s.num_players):
        figures: list[dict[str, Any]] = [
            {"path": COLORS[c], "row": s.pos[p][c], "large": s.large[p] == c} for c in range(NUM_COLORS) if s.pos[p][c]
        ]
        on_start = FIGURES_PER_PLAYER - len(figures)
        figures += [{"path": None, "row": 0, "large": i == 0 and s.large[p] < 0} for i in range(on_start)]
        players.append(
            {
                "hand": [card_name(k) for k in s.hands[p]],
                "rows": {COLORS[c]: list(s.rows[p][c]) for c in range(NUM_COLORS)},
                "figures": figures,
                "wishing_stones": s.wishing[p],
                "tile_points": s.tile_points[p],
            }
        )
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "options": s.config.to_dict(),
        "dark_rows": {COLORS[c]: list(s.dark_rows[c]) for c in range(NUM_COLORS)},
        "tiles": {COLORS[c]: [TILE_NAMES.get(t) for t in s.tiles[c][1:]] for c in range(NUM_COLORS)},
        "deck": [card_name(k) for k in s.deck],
        "removed": [card_name(k) for k in s.removed],
        "discards": {COLORS[c]: [card_name(c * NUM_VALUES + v) for v in s.discards[c]] for c in range(NUM_COLORS)},
        "players": players,
        "first_player": s.first_player,
        "current_player": s.current,
        "phase": _PHASE_NAMES[s.phase],
        "turn": s.turn,
        "discarded_color": COLORS[s.discarded] if s.discarded >= 0 else None,
        "end": _END_NAMES[s.end],
    }


def state_from_dict(data: Mapping[str, Any], cls: type[GameState]) -> GameState:
    """A ``cls`` instance (the state class) rebuilt from :func:`state_to_dict`'s form."""
    return parse_state(_build, data, cls, options="options: ")


def _card(value: Any, field: str) -> int:
    """The card kind of a card name, the field named when it is malformed."""
    try:
        return parse_card(value)
    except ValueError as exc:
        fail_state(f"{field}: {exc}")


def _cards(value: Any, field: str) -> list[int]:
    return [_card(x, f"{field}[{i}]") for i, x in enumerate(state_list(value, field, "cards such as 'red 7'"))]


def _color(value: Any, field: str) -> int:
    try:
        return parse_color(value)
    except ValueError as exc:
        fail_state(f"{field}: {exc}")


def _build(data: Mapping[str, Any], cls: type[GameState]) -> GameState:
    check_state_header(data, STATE_FORMAT, STATE_VERSION, STATE_KEYS)
    config = GameConfig.from_dict(data["options"])
    s = cls.__new__(cls)
    s.config = config
    s.num_players = config.num_players
    _read_tiles(s, data)
    _read_players(s, data)
    _check_all_tiles(s)
    _read_cards(s, data)
    _read_turn(s, data)
    _check_turn(s)
    return s


def _read_tiles(s: GameState, data: Mapping[str, Any]) -> None:
    """R1: the tile layout (``dark_rows``, as the options say) and the tiles on the board."""
    config = s.config
    dark_lists = per_name(data, "dark_rows", COLORS, "a list of 4 rows")
    dark = tuple(tuple(state_list(rows, f"dark_rows.{COLORS[c]}", "rows")) for c, rows in enumerate(dark_lists))
    try:
        GameConfig(num_players=s.num_players, tile_layout=dark)
    except ConfigError as exc:
        fail_state(f"dark_rows: {exc}")
    s.dark_rows = tuple(tuple(sorted(r)) for r in dark)
    if not isinstance(config.tile_layout, str) and config.tile_layout != s.dark_rows:
        fail_state("dark_rows differ from the explicit tile_layout option")
    if config.tile_layout == "default" and s.dark_rows != config.dark_rows():
        fail_state("dark_rows differ from the default layout that the options name")
    s.tiles = []
    for c, column in enumerate(per_name(data, "tiles", COLORS, "a list of 9 tiles or null")):
        if not isinstance(column, list) or len(column) != END_ROW:
            fail_state(f"tiles of the {COLORS[c]} path must list rows 1..9 (9 entries)")
        codes = [NO_TILE]
        for r, name in enumerate(column, start=1):
            if name is not None and (not isinstance(name, str) or name not in TILE_CODES):
                fail_state(f"unknown tile {name!r} on {COLORS[c]} row {r}; tiles are {', '.join(TILE_CODES)} or null")
            if name is not None and r != END_ROW and r not in s.dark_rows[c]:
                fail_state(f"a tile lies on {COLORS[c]} row {r}, which is not a tile stone (R1)")
            codes.append(TILE_CODES[name] if name is not None else NO_TILE)
        s.tiles.append(codes)


def _read_players(s: GameState, data: Mapping[str, Any]) -> None:
    """Every player's hand, rows of cards (R4), figures (R5), wishing stones and tile points."""
    n = s.num_players
    players = data["players"]
    if not isinstance(players, list) or len(players) != n:
        fail_state(f"'players' must list {n} players, as num_players says")
    s.hands, s.rows, s.last, s.direction, s.pos, s.large, s.wishing, s.tile_points = [], [], [], [], [], [], [], []
    for p, pd in enumerate(players):
        where = f"players[{p}]"
        check_keys(state_mapping(pd, where), PLAYER_KEYS, where, required=True)
        s.hands.append(sorted(_cards(pd["hand"], f"{where}.hand")))
        rows = []
        for c, row in enumerate(per_name(pd, "rows", COLORS, "a list of card values")):
            field = f"{where}.rows.{COLORS[c]}"
            values = [state_int(v, field, 0, NUM_VALUES - 1) for v in state_list(row, field, "card values")]
            if not _monotone(values):
                fail_state(f"player {p}'s {COLORS[c]} row {values} is neither ascending nor descending (R4)")
            rows.append(values)
        s.rows.append(rows)
        s.last.append([r[-1] if r else -1 for r in rows])
        s.direction.append([row_direction(r) for r in rows])
        pos, large = _figures(pd["figures"], p)
        _check_figures_follow_cards(p, pos, rows)
        s.pos.append(pos)
        s.large.append(large)
        s.wishing.append(state_int(pd["wishing_stones"], f"{where}.wishing_stones", 0, NUM_WISHING_STONES))
        s.tile_points.append(state_int(pd["tile_points"], f"{where}.tile_points", 0, MAX_TILE_POINTS))


def _check_all_tiles(s: GameState) -> None:
    """R1: the tiles on the board plus the wishing stones taken are the 25 tiles; R6: no
    player holds more tile points than their figures can have scored."""
    on_board = Counter(t for column in s.tiles for t in column if t != NO_TILE)
    on_board[WISHING_STONE] += sum(s.wishing)
    if on_board != Counter(TILE_SET):
        fail_state("tiles on the board plus wishing stones held are not the 25 tiles of the game (R1)")
    for p in range(s.num_players):
        _check_tile_points(s.tiles, p, s.pos[p], s.tile_points[p])


def _read_cards(s: GameState, data: Mapping[str, Any]) -> None:
    """The draw pile, the removed cards and the discard piles; every card kind exactly
    twice across all places (R1), 30 removed with 2 players (R2)."""
    n = s.num_players
    s.deck = _cards(data["deck"], "deck")
    s.removed = sorted(_cards(data["removed"], "removed"))
    if len(s.removed) != REMOVED_CARDS[n]:
        fail_state(f"{len(s.removed)} removed cards; with {n} players exactly {REMOVED_CARDS[n]} are removed (R2)")
    s.discards = []
    for c, pile in enumerate(per_name(data, "discards", COLORS, "a list of cards")):
        kinds = _cards(pile, f"discards.{COLORS[c]}")
        if any(k // NUM_VALUES != c for k in kinds):
            fail_state(f"the {COLORS[c]} discard pile holds a card of another colour")
        s.discards.append([k % NUM_VALUES for k in kinds])
    counts = Counter(s.deck) + Counter(s.removed)
    for h in s.hands:
        counts += Counter(h)
    for c in range(NUM_COLORS):
        counts += Counter(c * NUM_VALUES + v for v in s.discards[c])
        for p in range(n):
            counts += Counter(c * NUM_VALUES + v for v in s.rows[p][c])
    wrong = [card_name(k) for k in range(NUM_CARD_KINDS) if counts[k] != COPIES_PER_CARD]
    if wrong:
        more = " ..." if len(wrong) > 5 else ""
        fail_state(f"card counts: each card exists exactly twice, but not {', '.join(wrong[:5])}{more}")


def _read_turn(s: GameState, data: Mapping[str, Any]) -> None:
    """The turn structure: first and current player, step, end, turn count, the colour
    just discarded, and the figures in the goal area."""
    n = s.num_players
    s.first_player = state_int(data["first_player"], "first_player", 0, n - 1)
    s.current = state_int(data["current_player"], "current_player", 0, n - 1)
    s.phase = state_name(data["phase"], "phase", _PHASES)
    s.end = state_name(data["end"], "end", _ENDS)
    s.turn = state_int(data["turn"], "turn", 0, s.config.max_turns)
    dc = data["discarded_color"]
    s.discarded = -1 if dc is None else _color(dc, "discarded_color")
    s.goal_count = sum(1 for pos in s.pos for r in pos if r >= GOAL_FIRST_ROW)


def _check_turn(s: GameState) -> None:
    """The step of the turn, the end of the game and the hands agree (R3, R8)."""
    max_turns = s.config.max_turns
    if (s.phase == Phase.OVER) != (s.end != EndReason.NONE):
        fail_state("phase 'over' goes with an end reason, and an end reason with phase 'over'")
    if s.goal_count >= GOAL_FIGURES_TO_END and s.end != EndReason.GOAL:
        fail_state(f"{s.goal_count} figures are in the goal area; the game ends at {GOAL_FIGURES_TO_END} (R8)")
    if s.end == EndReason.GOAL:
        if s.goal_count != GOAL_FIGURES_TO_END:
            fail_state(f"end 'goal' needs exactly {GOAL_FIGURES_TO_END} figures in the goal area, found {s.goal_count}")
        if GOAL_FIRST_ROW not in s.pos[s.current]:
            fail_state(
                f"end 'goal': the last mover, player {s.current}, moved the fifth figure into the goal area, "
                f"so one of their figures is on row {GOAL_FIRST_ROW} (R8.1)"
            )
        if s.turn >= max_turns:
            fail_state(f"end 'goal' happens within a turn, so turn {s.turn} is below max_turns {max_turns}")
    if not s.deck and s.end != EndReason.DECK:
        fail_state("the draw pile is empty, which ends the game (R8.2), but end is not 'deck'")
    if s.end == EndReason.DECK and s.deck:
        fail_state("end 'deck' needs an empty draw pile")
    if s.end == EndReason.NONE and s.turn >= max_turns:
        fail_state(f"turn {s.turn} reached max_turns {max_turns} but the game is not over")
    if s.end == EndReason.TRUNCATED and s.turn != max_turns:
        fail_state(f"end 'truncated' needs turn == max_turns ({max_turns}), got turn {s.turn} (R8)")
    if s.discarded >= 0 and (s.phase != Phase.DRAW or not s.discards[s.discarded]):
        fail_state("discarded_color is set only in the draw step after a discard onto that (non-empty) pile")
    for p in range(s.num_players):
        mid_turn = p == s.current and (s.phase in (Phase.DRAW, Phase.BONUS) or s.end == EndReason.GOAL)
        expected = HAND_SIZE - 1 if mid_turn else HAND_SIZE
        if len(s.hands[p]) != expected:
            fail_state(f"player {p} holds {len(s.hands[p])} cards; in this step of the turn they hold {expected} (R3)")


def _monotone(row: list[int]) -> bool:
    return all(a <= b for a, b in pairwise(row)) or all(a >= b for a, b in pairwise(row))


def _figures(figures: Any, p: int) -> tuple[list[int], int]:
    """(row per path, path of the large figure or -1) of player ``p``'s five figures."""
    if not isinstance(figures, list) or len(figures) != FIGURES_PER_PLAYER:
        fail_state(f"player {p} must have exactly {FIGURES_PER_PLAYER} figures (R1)")
    pos = [0] * NUM_COLORS
    large = -1
    larges = 0
    for i, f in enumerate(figures):
        where = f"players[{p}].figures[{i}]"
        check_keys(state_mapping(f, where), FIGURE_KEYS, where, required=True)
        is_large = state_bool(f["large"], f"{where}.large")
        larges += is_large
        if f["path"] is None:
            if f["row"] != 0:
                fail_state(
                    f"player {p} has a figure on no path but on row {f['row']!r}; figures off the paths are on row 0"
                )
            continue
        c = _color(f["path"], f"{where}.path")
        row = state_int(f["row"], f"{where}.row", 1, END_ROW)
        if pos[c]:
            fail_state(f"player {p} has two figures on the {COLORS[c]} path; at most one per path (R5)")
        pos[c] = row
        if is_large:
            large = c
    if larges != 1:
        fail_state(f"player {p} must have exactly one large figure (R1), got {larges}")
    return pos, large


def _check_figures_follow_cards(p: int, pos: list[int], rows: list[list[int]]) -> None:
    """R5: the first card of a colour puts a figure on row 1 of that path (unless a bonus
    step opened it already) and every later card moves it one stone, except on the end
    stone, where cards are still played and the figure stays. Bonus steps (R7) move a
    figure without a card. So ``k`` cards played put the figure on row ``min(k, 9)`` or
    beyond, never behind."""
    for c, row in enumerate(rows):
        k = len(row)
        if k and not pos[c]:
            fail_state(f"player {p} has played {COLORS[c]} cards but has no figure on the {COLORS[c]} path (R5)")
        least = min(k, END_ROW)
        if pos[c] < least:
            fail_state(
                f"player {p} has played {k} {COLORS[c]} cards, but their {COLORS[c]} figure is on row {pos[c]}: "
                f"the first card puts it on row 1 and each later one moves it one stone until the end stone, "
                f"so it is on row {least} or beyond (R5)"
            )


def _check_tile_points(tiles: list[list[int]], p: int, pos: list[int], points: int) -> None:
    """R6: points are scored only by arriving on a point tile, and point tiles stay on
    their stones; a figure on row ``r`` has arrived on rows 1..r of its path, each once.
    So a player's tile points are at most those of the point tiles on the stones their
    figures have reached (less only after the game's ending move, which triggers no tile).
    Play keeps this: an arrival adds a tile's points to both sides."""
    reached = sum(TILE_POINTS.get(tiles[c][r], 0) for c in range(NUM_COLORS) for r in range(1, pos[c] + 1))
    if points > reached:
        fail_state(
            f"player {p} has {points} tile points, but the point tiles on the stones their figures have reached "
            f"are worth {reached}: points are scored only on arrival, once per stone (R6)"
        )
