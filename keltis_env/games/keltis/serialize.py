"""JSON-safe dicts of game states, and their validation.

The dict form (``format: "keltis-state"``, ``version: 1``) is readable: cards are
``"red 7"``, colours are names, tiles are ``"wish"``, ``"clover"``, ``"points1..3"``.
Piles are listed bottom first (the last element is the top). :func:`state_from_dict`
refuses any dict that breaks an invariant of the rules, naming the invariant.

The state module calls this one (``GameState.to_dict`` and ``GameState.from_dict``, which
passes its class in), so the dependency goes one way, state -> serialize: the state
class is imported here for type checking only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NoReturn

from keltis_env.core.errors import ConfigError, StateError

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
    try:
        return _build(data, cls)
    except StateError:
        raise
    except ConfigError as exc:
        raise StateError(f"invalid state: options: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise StateError(f"malformed state dict: {type(exc).__name__}: {exc}") from None


def _fail(message: str) -> NoReturn:
    raise StateError(f"invalid state: {message}")


def _per_color(data: Mapping[str, Any], field: str) -> list[Any]:
    value = data[field]
    if not isinstance(value, Mapping) or set(value) != set(COLORS):
        _fail(f"'{field}' must map each colour ({', '.join(COLORS)}) to a list")
    return [value[name] for name in COLORS]


def _int(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        _fail(f"'{field}' must be an integer in {lo}..{hi}, got {value!r}")
    return value


def _build(data: Mapping[str, Any], cls: type[GameState]) -> GameState:
    if not isinstance(data, Mapping):
        _fail(f"a state must be a dict, got {type(data).__name__}")
    if data.get("format") != STATE_FORMAT or data.get("version") != STATE_VERSION:
        got = f"{data.get('format')!r} version {data.get('version')!r}"
        _fail(f"expected format {STATE_FORMAT!r} version {STATE_VERSION}, got {got}")
    config = GameConfig.from_dict(data["options"])
    n = config.num_players
    s = cls.__new__(cls)
    s.config = config
    s.num_players = n

    # R1: tile layout and tiles.
    dark = tuple(tuple(rows) for rows in _per_color(data, "dark_rows"))
    try:
        GameConfig(num_players=n, tile_layout=dark)
    except ConfigError as exc:
        _fail(f"dark_rows: {exc}")
    if not isinstance(config.tile_layout, str) and config.tile_layout != tuple(tuple(sorted(r)) for r in dark):
        _fail("dark_rows differ from the explicit tile_layout option")
    if config.tile_layout == "default" and tuple(tuple(sorted(r)) for r in dark) != config.dark_rows():
        _fail("dark_rows differ from the default layout that the options name")
    s.dark_rows = tuple(tuple(sorted(r)) for r in dark)
    s.tiles = []
    for c, column in enumerate(_per_color(data, "tiles")):
        if not isinstance(column, list) or len(column) != END_ROW:
            _fail(f"tiles of the {COLORS[c]} path must list rows 1..9 (9 entries)")
        codes = [NO_TILE]
        for r, name in enumerate(column, start=1):
            if name is not None and name not in TILE_CODES:
                _fail(f"unknown tile {name!r} on {COLORS[c]} row {r}; tiles are {', '.join(TILE_CODES)} or null")
            if name is not None and r != END_ROW and r not in s.dark_rows[c]:
                _fail(f"a tile lies on {COLORS[c]} row {r}, which is not a tile stone (R1)")
            codes.append(TILE_CODES[name] if name is not None else NO_TILE)
        s.tiles.append(codes)

    # Players.
    players = data["players"]
    if not isinstance(players, list) or len(players) != n:
        _fail(f"'players' must list {n} players, as num_players says")
    s.hands, s.rows, s.last, s.direction, s.pos, s.large, s.wishing, s.tile_points = [], [], [], [], [], [], [], []
    for p, pd in enumerate(players):
        s.hands.append(sorted(parse_card(x) for x in pd["hand"]))
        rows = [list(r) for r in _per_color(pd, "rows")]
        for c, row in enumerate(rows):
            for v in row:
                _int(v, f"players[{p}].rows.{COLORS[c]}", 0, NUM_VALUES - 1)
            if not _monotone(row):
                _fail(f"player {p}'s {COLORS[c]} row {row} is neither ascending nor descending (R4)")
        s.rows.append(rows)
        s.last.append([r[-1] if r else -1 for r in rows])
        s.direction.append([row_direction(r) for r in rows])
        pos, large = _figures(pd["figures"], p)
        for c in range(NUM_COLORS):
            if rows[c] and not pos[c]:
                _fail(f"player {p} has played {COLORS[c]} cards but has no figure on the {COLORS[c]} path (R5)")
        s.pos.append(pos)
        s.large.append(large)
        s.wishing.append(_int(pd["wishing_stones"], f"players[{p}].wishing_stones", 0, NUM_WISHING_STONES))
        s.tile_points.append(_int(pd["tile_points"], f"players[{p}].tile_points", 0, MAX_TILE_POINTS))

    # R1: the tiles on the board plus the wishing stones taken are the 25 tiles.
    on_board = Counter(t for column in s.tiles for t in column if t != NO_TILE)
    on_board[WISHING_STONE] += sum(s.wishing)
    if on_board != Counter(TILE_SET):
        _fail("tiles on the board plus wishing stones held are not the 25 tiles of the game (R1)")

    # Cards: every card kind exactly twice across all places (R1), 30 removed with 2 players.
    s.deck = [parse_card(x) for x in data["deck"]]
    s.removed = sorted(parse_card(x) for x in data["removed"])
    if len(s.removed) != REMOVED_CARDS[n]:
        _fail(f"{len(s.removed)} removed cards; with {n} players exactly {REMOVED_CARDS[n]} are removed (R2)")
    s.discards = []
    for c, pile in enumerate(_per_color(data, "discards")):
        kinds = [parse_card(x) for x in pile]
        if any(k // NUM_VALUES != c for k in kinds):
            _fail(f"the {COLORS[c]} discard pile holds a card of another colour")
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
        _fail(f"card counts: each card exists exactly twice, but not {', '.join(wrong[:5])}{more}")

    # Turn structure.
    s.first_player = _int(data["first_player"], "first_player", 0, n - 1)
    s.current = _int(data["current_player"], "current_player", 0, n - 1)
    if data["phase"] not in _PHASES:
        _fail(f"phase must be one of {list(_PHASES)}, got {data['phase']!r}")
    s.phase = _PHASES[data["phase"]]
    if data["end"] not in _ENDS:
        _fail(f"end must be null, 'goal', 'deck' or 'truncated', got {data['end']!r}")
    s.end = _ENDS[data["end"]]
    s.turn = _int(data["turn"], "turn", 0, config.max_turns)
    dc = data["discarded_color"]
    s.discarded = -1 if dc is None else parse_color(dc)
    s.goal_count = sum(1 for pos in s.pos for r in pos if r >= GOAL_FIRST_ROW)

    if (s.phase == Phase.OVER) != (s.end != EndReason.NONE):
        _fail("phase 'over' goes with an end reason, and an end reason with phase 'over'")
    if s.goal_count >= GOAL_FIGURES_TO_END and s.end != EndReason.GOAL:
        _fail(f"{s.goal_count} figures are in the goal area; the game ends at {GOAL_FIGURES_TO_END} (R8)")
    if s.end == EndReason.GOAL and s.goal_count != GOAL_FIGURES_TO_END:
        _fail(f"end 'goal' needs exactly {GOAL_FIGURES_TO_END} figures in the goal area, found {s.goal_count}")
    if not s.deck and s.end != EndReason.DECK:
        _fail("the draw pile is empty, which ends the game (R8.2), but end is not 'deck'")
    if s.end == EndReason.DECK and s.deck:
        _fail("end 'deck' needs an empty draw pile")
    if s.end == EndReason.NONE and s.turn >= config.max_turns:
        _fail(f"turn {s.turn} reached max_turns {config.max_turns} but the game is not over")
    if s.discarded >= 0 and (s.phase != Phase.DRAW or not s.discards[s.discarded]):
        _fail("discarded_color is set only in the draw step after a discard onto that (non-empty) pile")
    for p in range(n):
        mid_turn = p == s.current and (s.phase in (Phase.DRAW, Phase.BONUS) or s.end == EndReason.GOAL)
        expected = HAND_SIZE - 1 if mid_turn else HAND_SIZE
        if len(s.hands[p]) != expected:
            _fail(f"player {p} holds {len(s.hands[p])} cards; in this step of the turn they hold {expected} (R3)")
    return s


def _monotone(row: list[int]) -> bool:
    return all(a <= b for a, b in pairwise(row)) or all(a >= b for a, b in pairwise(row))


def _figures(figures: Any, p: int) -> tuple[list[int], int]:
    if not isinstance(figures, list) or len(figures) != FIGURES_PER_PLAYER:
        _fail(f"player {p} must have exactly {FIGURES_PER_PLAYER} figures (R1)")
    if sum(1 for f in figures if f["large"] is True) != 1:
        _fail(f"player {p} must have exactly one large figure (R1)")
    pos = [0] * NUM_COLORS
    large = -1
    for f in figures:
        if f["path"] is None:
            if f["row"] != 0:
                _fail(f"player {p} has a figure on no path but on row {f['row']}; figures off the paths are on row 0")
            continue
        c = parse_color(f["path"])
        row = _int(f["row"], f"players[{p}].figures.row", 1, END_ROW)
        if pos[c]:
            _fail(f"player {p} has two figures on the {COLORS[c]} path; at most one per path (R5)")
        pos[c] = row
        if f["large"] is True:
            large = c
    return pos, large
