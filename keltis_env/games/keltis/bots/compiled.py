"""The card game's ``heuristic`` and ``planner`` bots deciding through their compiled kernels.

:class:`~keltis_env.games.keltis.bots.heuristic.HeuristicBot` and
:class:`~keltis_env.games.keltis.bots.planner.PlannerBot` take a ``backend`` option
(:data:`BACKENDS`): ``python`` (the default) always decides through the Python code;
``compiled`` through the compiled kernels (:mod:`~keltis_env.games.keltis.kernels_heuristic`,
:mod:`~keltis_env.games.keltis.kernels_planner`), refused in one line when numba (the
``fast`` extra) is missing; ``auto`` through the kernels when numba can be imported, else
through the Python code. ``python`` is the default because loading the kernels costs about
a second in every process that makes such a bot (and a first compile much more), more
than a short evaluation saves. The kernels
make the Python bots' decisions (their tests hold every decision and value equal), so the
backend changes the speed, never a move: ``heuristic:backend=python`` is the reference.

A bot sees its seat's view, never the state (R10), and so do its kernels: :func:`pack_view`
writes a kernel's state row from the view alone. What the view does not hold stays zero
in the row: the other players' hands (their sizes are public and written), the order of
the draw pile (its size is written) and, with 2 players, the cards removed from the game.
The kernels read none of these; ``tests/test_compiled_bots.py`` holds the row equal to the
full state's row everywhere else, and the decisions equal to the Python bots' whatever the
hidden cards are. Each bot keeps one row (:class:`RowWriter`) and rewrites only the parts
whose source in the view changed since its last decision: writing a whole row from Python
costs more than the kernels' decision.

The ``ismcts`` bot takes the same option (:class:`CompiledSearch`,
:func:`compiled_search`): its compiled search plays as strongly as the Python one but draws
its own random numbers, so its decisions are not the Python search's. Guided by a network
(``net=PATH``), it runs on :class:`CompiledGuidedSearch` (:func:`compiled_guided`): the
rollouts compiled stage by stage, the network's value head run by the bot's guide once a stage.

A compiled bot loads its kernels when it is made, once per process (numba's import and
its cached machine code: about a second; the first run on a machine compiles them, which
takes a minute), so that no move pays for it under a move time limit.

Only the kernel modules import numba; this module imports them inside functions, when a
compiled bot is made.
"""

from __future__ import annotations

import array
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keltis_env.games.keltis.actions import NUM_ACTIONS
from keltis_env.games.keltis.constants import (
    DARK_STONES_PER_PATH,
    END_ROW,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
)

if TYPE_CHECKING:  # numpy is loaded with the kernels: the bots run where it is missing
    import numpy as np

#: the values of the bots' ``backend`` option
BACKENDS = ("auto", "compiled", "python")


def check_backend(bot: str, backend: Any) -> str:
    """``backend`` if it is one of :data:`BACKENDS`; else a ``ValueError`` naming the bot's option."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"{bot} option backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def compiled_decider(bot: Any, backend: str) -> CompiledDecider | None:
    """The compiled decision of ``bot`` (a ``HeuristicBot`` or ``PlannerBot``, its options
    set) under the option ``backend`` (checked): ``None`` for the Python code (``python``,
    or ``auto`` without numba); ``compiled`` without numba is a ``ValueError`` naming the
    extra. Made once per process, the kernel is loaded and run on a new game first."""
    return _decider(bot.name, backend, bot)


def _decider(kind: str, backend: str, bot: Any = None, options: np.ndarray | None = None) -> CompiledDecider | None:
    """:func:`compiled_decider` for a bot named ``kind``, with its options from ``bot`` or
    given as the kernel's ``options`` (a decider being unpickled)."""
    backend = check_backend(kind, backend)
    if backend == "python":
        return None
    try:
        kernel, options_of, key_of = _load(kind)
    except ImportError as exc:
        if backend == "compiled":
            raise ValueError(f"{kind} option backend=compiled: {exc}") from None
        return None
    key = key_of(bot) if bot is not None else None
    if options is None:
        options = options_of(bot)
    _warm_up(kind, kernel, options)
    return CompiledDecider(kind, backend, kernel, options_of, key_of, key, options)


class CompiledDecider:
    """One bot's decision through its kernel: the view packed as a state row
    (:func:`pack_view`), then the kernel's choice with the bot's options (read from the bot
    at every decision, so that a changed option counts). Pickled, it is made again where it
    is unpickled: the Python code there (``None``) under ``auto`` without numba."""

    def __init__(self, kind: str, backend: str, kernel: Callable[..., int], options_of: Callable[[Any], np.ndarray],
                 key_of: Callable[[Any], Any], key: Any, options: np.ndarray) -> None:
        self.kind = kind
        self.backend = backend
        self._kernel = kernel
        self._options_of = options_of
        self._key_of = key_of
        self._key = key
        self._options = options
        self._writer = RowWriter()
        import numpy as np

        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)

    def __reduce__(self) -> tuple[Any, ...]:
        return _decider, (self.kind, self.backend, None, self._options)

    def decide(self, view: Any, bot: Any) -> int:
        """The kernel's action for ``view``'s player with ``bot``'s options; -1 when that
        player is not to act (the view has no legal action)."""
        if view.player != view.current_player:
            return -1
        key = self._key_of(bot)
        if key != self._key:
            self._options = self._options_of(bot)
            self._key = key
        # The kernels only read the row; a copy keeps the writer's row right whatever they do.
        return int(self._kernel(self._writer.write(view).copy(), self._mask, self._options))


#: per kind of bot: its kernel, the kernel options of a bot, and what those options are made from
_Kernel = tuple[Callable[..., int], Callable[[Any], Any], Callable[[Any], Any]]
_KERNELS: dict[str, _Kernel] = {}
_WARM: set[str] = set()


def _load(kind: str) -> _Kernel:
    """The kernel of the bot named ``kind`` and its options; an ``ImportError`` without numba."""
    loaded = _KERNELS.get(kind)
    if loaded is not None:
        return loaded
    if kind not in ("heuristic", "planner"):
        raise ValueError(f"no compiled kernel for bot {kind!r}; there are kernels for heuristic and planner")
    if kind == "heuristic":
        from keltis_env.games.keltis import kernels_heuristic

        loaded = (kernels_heuristic.heuristic_action, kernels_heuristic.options,
                  operator.attrgetter("paths", "gap", "open_cards", "large_cards"))
    else:
        from keltis_env.games.keltis import kernels_plan, kernels_planner

        weights = operator.attrgetter(*kernels_plan.WEIGHT_NAMES)
        loaded = (kernels_planner.planner_action, kernels_planner.options, lambda bot: weights(bot.weights))
    _KERNELS[kind] = loaded
    return loaded


def _warm_up(kind: str, kernel: Callable[..., int], options: np.ndarray) -> None:
    """Run ``kernel`` once in this process (numba loads or compiles its machine code on the
    first call), so that no move pays for it."""
    if kind in _WARM:
        return
    import numpy as np

    from ..config import GameConfig
    from ..state import GameState

    view = GameState.new_game(GameConfig(num_players=2), 0).view(0)
    kernel(pack_view(view), np.zeros(NUM_ACTIONS, dtype=np.int8), options)
    _WARM.add(kind)


def pack_view(view: Any) -> np.ndarray:
    """The state row (:mod:`~keltis_env.games.keltis.kernels`) of what ``view`` shows;
    what it hides (other hands, the draw pile's order, removed cards) is zero."""
    return RowWriter().write(view).copy()


class CompiledSearch:
    """The ``ismcts`` bot's decision through its kernel
    (:func:`~keltis_env.games.keltis.kernels_ismcts.search`): the view packed as a state row
    (:class:`RowWriter`), then the whole search in one call, with the bot's settings and
    plan weights (read from the bot at every decision, so that a changed option counts) and
    a seed drawn from the bot's ``rng`` (so that a seeded bot decides the same every time).
    Pickled, it is made again where it is unpickled: the Python code there (``None``) under
    ``auto`` without numba."""

    def __init__(self, backend: str) -> None:
        import numpy as np

        from keltis_env.games.keltis import kernels_ismcts, kernels_plan

        self.backend = backend
        self._kernels = kernels_ismcts
        self._weights_of = kernels_plan.weights
        self._weight_names = operator.attrgetter(*kernels_plan.WEIGHT_NAMES)
        self._key: Any = None
        self._options = self._weights = np.zeros(0)
        self._writer = RowWriter()
        self._rng = np.zeros(1, dtype=np.uint64)
        self._actions = np.zeros(NUM_ACTIONS, dtype=np.int64)
        self._ranks = np.zeros(NUM_ACTIONS)
        self._counts = np.zeros(NUM_ACTIONS, dtype=np.int64)
        self._means = np.zeros(NUM_ACTIONS)
        self._scores = np.zeros(NUM_ACTIONS)
        self._info = np.zeros(kernels_ismcts.INFO_SIZE, dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        return compiled_search, (self.backend,)

    def decide(self, view: Any, bot: Any) -> tuple[int, list[tuple[int, float, int, float | None, float | None]],
                                                   int, int]:
        """The search's decision at ``view`` with ``bot``'s settings (an ``ISMCTSBot`` with a
        budget in iterations): the action, every legal action as ``(action, ranker value,
        rollouts, mean value or None, score or None)`` (survivors first, in the order they
        were scored, then the others best-ranked first), the sampled worlds and the rollouts."""
        kern = self._kernels
        key = (bot.iterations, bot.top_k, bot.depth, bot.stage, bot.prior, bot.win_bonus, bot.margin,
               bot.rollouts_per_candidate, self._weight_names(bot.weights))
        if key != self._key:
            self._options, self._weights, self._key = kern.options(bot), self._weights_of(bot.weights), key
        self._rng[0] = bot.rng.getrandbits(64)
        # The kernel copies the row before it clears anything: the writer's row stays right.
        action = int(kern.search(self._writer.write(view), self._weights, self._options, self._rng, self._actions,
                                 self._ranks, self._counts, self._means, self._scores, self._info))
        count = int(self._info[kern.INFO_RANKED])
        rows = [(int(a), float(r), int(c), None if m != m else float(m), None if s != s else float(s))
                for a, r, c, m, s in zip(self._actions[:count].tolist(), self._ranks[:count].tolist(),
                                         self._counts[:count].tolist(), self._means[:count].tolist(),
                                         self._scores[:count].tolist(), strict=True)]
        return action, rows, int(self._info[kern.INFO_SAMPLES]), int(self._info[kern.INFO_ROLLOUTS])


def compiled_search(backend: str) -> CompiledSearch | None:
    """The ``ismcts`` bot's compiled search under the option ``backend`` (checked): ``None``
    for the Python code (``python``, or ``auto`` without numba); ``compiled`` without numba
    is a ``ValueError`` naming the extra. The kernel is loaded, and run on a new game, once
    per process."""
    backend = check_backend("ismcts", backend)
    if backend == "python":
        return None
    try:
        decider = CompiledSearch(backend)
    except ImportError as exc:
        if backend == "compiled":
            raise ValueError(f"ismcts option backend=compiled: {exc}") from None
        return None
    if "ismcts" not in _WARM:
        from keltis_env.bots import make_bot

        from ..config import GameConfig
        from ..state import GameState

        view = GameState.new_game(GameConfig(num_players=2), 0).view(0)
        decider.decide(view, make_bot("ismcts:iterations=16", seed=0))
        _WARM.add("ismcts")
    return decider


class CompiledGuidedSearch:
    """The ``ismcts`` bot's search guided by a network (``net=PATH``, ``rollout=model``) on the
    compiled core (:mod:`~keltis_env.games.keltis.kernels_guided`): the view packed as a state
    row with what it hides cleared (:meth:`root`), its legal actions ranked by the plan
    model's kernel (:meth:`rank`), then the rollouts of each stage in one call, the
    positions they stopped at valued by the bot's guide in one batch (:meth:`search`). The
    network's observations (``num_players`` players, its ``features``) are written by the
    compiled encoder; features it does not write are refused in one line. Pickled, it is
    made again where it is unpickled (``None`` under ``auto`` without numba)."""

    def __init__(self, backend: str, num_players: int, features: tuple[str, ...]) -> None:
        import numpy as np

        from keltis_env.games.keltis import kernels_guided, kernels_ismcts, kernels_plan

        kernels_guided.check_features(features, "ismcts")
        self.backend, self.num_players, self.features = backend, num_players, features
        self._guided, self._ismcts = kernels_guided, kernels_ismcts
        self._encoding = kernels_guided.Encoding(num_players, features)
        self._weights_of = kernels_plan.weights
        self._weight_names = operator.attrgetter(*kernels_plan.WEIGHT_NAMES)
        self._key: Any = None
        self._weights = np.zeros(0)
        self._writer = RowWriter()
        self._rng = np.zeros(1, dtype=np.uint64)
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._values = np.zeros(NUM_ACTIONS)
        self._ranked = np.zeros(NUM_ACTIONS, dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        return compiled_guided, (self.backend, self.num_players, self.features)

    def _plan_weights(self, weights: Any) -> np.ndarray:
        """The plan model's ``weights`` as the kernels take them (converted when they change)."""
        key = self._weight_names(weights)
        if key != self._key:
            self._weights, self._key = self._weights_of(weights), key
        return self._weights

    def root(self, view: Any) -> np.ndarray:
        """The state row of ``view`` (a new array) with what its player may not see cleared."""
        row = self._writer.write(view).copy()
        self._ismcts.clear_hidden(row, view.player)
        return row

    def rank(self, root: np.ndarray, weights: Any) -> list[tuple[int, float]]:
        """Every legal action of the player to move in ``root`` with its plan-model value
        (``weights``), best first, the lowest id first among equals."""
        count = int(self._ismcts.rank(root, self._plan_weights(weights), self._mask, self._values, self._ranked))
        actions = self._ranked[:count].tolist()
        return list(zip(actions, self._values[actions].tolist(), strict=True))

    def search(self, root: np.ndarray, cands: list[tuple[int, float]], bot: Any) -> Any:
        """The rollouts of ``cands`` at ``root`` with ``bot``'s settings, network and leaf
        values (an ``ISMCTSBot`` with a budget in iterations), as the generic search's tally
        (:meth:`~keltis_env.bots.search.SearchBot._search`); the seed is drawn from ``bot.rng``."""
        from keltis_env.bots.search import Tally

        guide = bot.net
        share = 0.5 if bot.leaf == "both" else 1.0
        shaped = share * guide.points if bot.leaf != "model" and guide.info.value_target == "shaped" else 0.0
        self._rng[0] = bot.rng.getrandbits(64)
        tally = self._guided.guided_search(root, self._plan_weights(bot.weights), self._ismcts.options(bot), bot.leaf,
                                           shaped, self._rng, [a for a, _ in cands], self._encoding, guide.points_of,
                                           share)
        return Tally(*tally)


def compiled_guided(backend: str, num_players: int, features: tuple[str, ...]) -> CompiledGuidedSearch | None:
    """The ``ismcts`` bot's compiled search guided by a network of ``num_players`` players and
    observation ``features``, under the option ``backend`` (checked): ``None`` for the Python
    search (``python``, or ``auto`` without numba or with features the compiled encoder does
    not write); ``compiled`` without them is a ``ValueError`` naming what is missing. Its
    kernels are loaded, and run on a new game, once per process."""
    backend = check_backend("ismcts", backend)
    if backend == "python":
        return None
    try:
        decider = CompiledGuidedSearch(backend, num_players, tuple(features))
    except (ImportError, ValueError) as exc:
        if backend == "compiled":
            raise ValueError(f"ismcts option backend=compiled: {exc}" if isinstance(exc, ImportError)
                             else str(exc)) from None
        return None
    if f"ismcts-guided-{num_players}" not in _WARM:
        _warm_guided(decider, num_players)
        _WARM.add(f"ismcts-guided-{num_players}")
    return decider


def _warm_guided(decider: CompiledGuidedSearch, num_players: int) -> None:
    """One small guided search on a new game (numba loads or compiles the kernels on the
    first call), its positions valued at zero."""
    import numpy as np

    from ..config import GameConfig
    from ..state import GameState
    from .plan import Weights

    state = GameState.new_game(GameConfig(num_players=num_players), 0)
    root = decider.root(state.view(state.current_player))
    weights = decider._plan_weights(Weights())
    cands = [a for a, _ in decider.rank(root, Weights())[:2]]
    # the settings of kernels_ismcts.OPTION_NAMES: 8 rollouts of 2 candidates, depth 1, stages of 2 worlds
    opts = np.array([8, 2, 1, 2, 8.0, 10.0, 3.0, 8], dtype=np.float64)
    rng = np.zeros(1, dtype=np.uint64)
    decider._guided.guided_search(root, weights, opts, "both", 0.0, rng, cands, decider._encoding,
                                  lambda rows: [0.0] * len(rows), 0.5)


class _Layout:
    """The offsets of a state row, read once from the kernels module (loaded on demand)."""

    def __init__(self) -> None:
        from keltis_env.games.keltis import kernels as k

        scalars = (k.NUM_PLAYERS, k.CURRENT, k.FIRST, k.PHASE, k.END, k.TURN, k.MAX_TURNS, k.GOAL, k.CLOSED,
                   k.DECK_SIZE, k.RANDOM_LAYOUT)
        if scalars != tuple(range(len(scalars))) or k.PILE_SIZES != k.PILE + NUM_COLORS * MAX_PILE:
            raise ImportError("the kernels' state row changed its layout; keltis_env.games.keltis.bots.compiled "
                              "writes the old one")
        self.size, self.scalars = k.STATE_SIZE, len(scalars)
        self.hand, self.hand_sizes, self.pile, self.pile_sizes = k.HAND, k.HAND_SIZES, k.PILE, k.PILE_SIZES
        self.played, self.last, self.direction, self.pos = k.PLAYED, k.LAST, k.DIRECTION, k.POS
        self.large, self.wishing, self.tile_points = k.LARGE, k.WISHING, k.TILE_POINTS_AT
        self.tiles, self.dark = k.TILES, k.DARK


#: a discard pile's entries in a row, as the kernels lay them out
MAX_PILE = NUM_CARDS // NUM_COLORS
_ROW_LEN = END_ROW + 1
_LAYOUT: list[_Layout] = []


def _snapshot(value: Any) -> Any:
    """A copy of ``value`` (a view's field: numbers, or lists and tuples of them, nested)
    that later changes to ``value`` leave alone, of the same types, so that ``==`` compares
    it with a later value. Tuples of numbers are kept as they are (they cannot change)."""
    kind = type(value)
    if kind is not list and kind is not tuple:
        return value
    if not value or type(value[0]) is int:  # a field's sequence holds one kind of item
        return value if kind is tuple else value[:]
    inner = [_snapshot(x) for x in value]
    return inner if kind is list else tuple(inner)


class RowWriter:
    """Writes views as state rows into the one row it keeps (:attr:`row`), rewriting only
    the parts whose source in the view differs from the last view written: a move changes
    a few of them, and turning every part of a view into numbers costs more than the
    kernels' decision. A part is rewritten from its source alone (the number of players
    and the viewer's seat aside, which clear the row or the old hand), so the row is
    always the row of the last view written, as :func:`pack_view` writes it anew.

    The row lives in an ``array.array`` (item writes from Python cost a fraction of
    numpy's); :attr:`row` is a numpy view of the same memory.
    """

    def __init__(self) -> None:
        if not _LAYOUT:
            _LAYOUT.append(_Layout())
        self.at = _LAYOUT[0]
        self.buf = array.array("i", bytes(4 * self.at.size))
        if self.buf.itemsize != 4:
            raise ImportError("the state row needs 4-byte C integers (array type 'i')")
        import numpy as np

        self.row = np.frombuffer(self.buf, dtype=np.int32)
        self._clear(0)

    def _clear(self, n: int) -> None:
        """An empty row for ``n`` players: nothing written, every source unknown."""
        self.buf[:] = array.array("i", bytes(4 * self.at.size))
        self.n, self.me = n, -1
        unknown = [None] * NUM_COLORS
        self.hand: Any = ()
        self.sizes: Any = None
        self.piles: list[Any] = unknown[:]
        self.rows: list[Any] = [None] * n
        self.directions: list[Any] = [None] * n
        self.positions: list[Any] = [None] * n
        self.figures: Any = None
        self.tiles: list[Any] = unknown[:]
        self.dark: Any = None

    def write(self, view: Any) -> np.ndarray:
        """The row of ``view`` (the kept row: copy it to keep it)."""
        n = view.num_players
        if n != self.n:
            self._clear(n)
        s = self.buf
        config = view.config
        s[0], s[1], s[2], s[3], s[4], s[5] = (n, view.current_player, view.first_player, view.phase, view.end,
                                              view.turn)
        s[6], s[7], s[8], s[9], s[10] = (config.max_turns, view.goal_count, view.discarded_color, view.deck_size,
                                         config.tile_layout == "random")
        self._write_hand(view)
        self._write_piles(view.discards)
        self._write_rows(view)
        self._write_board(view)
        return self.row

    def _write_hand(self, view: Any) -> None:
        """The viewer's hand as counts of each kind (every other hand stays zero), and the hand sizes."""
        s, at, me, hand = self.buf, self.at, view.player, view.hand
        if me != self.me or hand != self.hand:
            if self.me >= 0:
                start = at.hand + self.me * NUM_CARD_KINDS
                for card in self.hand:
                    s[start + card] -= 1
            start = at.hand + me * NUM_CARD_KINDS
            for card in hand:
                s[start + card] += 1
            self.me, self.hand = me, _snapshot(hand)
        sizes = view.hand_sizes
        if sizes != self.sizes:
            for q in range(self.n):
                s[at.hand_sizes + q] = sizes[q]
            self.sizes = _snapshot(sizes)

    def _write_piles(self, piles: Any) -> None:
        """Each discard pile's values, bottom first, and its size."""
        s, at = self.buf, self.at
        for c in range(NUM_COLORS):
            pile = piles[c]
            if pile != self.piles[c]:
                start = at.pile + c * MAX_PILE
                s[start:start + MAX_PILE] = _ZEROS[:MAX_PILE]
                for i, v in enumerate(pile):
                    s[start + i] = v
                s[at.pile_sizes + c] = len(pile)
                self.piles[c] = _snapshot(pile)

    def _write_rows(self, view: Any) -> None:
        """Every player's rows (each value's count and the last card, -1 for none), row
        directions and figures."""
        s, at = self.buf, self.at
        rows, directions, positions = view.rows, view.directions, view.positions
        for q in range(self.n):
            player_rows, known = rows[q], self.rows[q]
            if player_rows != known:
                for c in range(NUM_COLORS):
                    row = player_rows[c]
                    if known is not None and row == known[c]:
                        continue
                    start = at.played + q * NUM_CARD_KINDS + c * NUM_VALUES
                    s[start:start + NUM_VALUES] = _ZEROS[:NUM_VALUES]
                    for v in row:
                        s[start + v] += 1
                    s[at.last + q * NUM_COLORS + c] = row[-1] if row else -1
                self.rows[q] = _snapshot(player_rows)
            if directions[q] != self.directions[q]:
                _put(s, at.direction + q * NUM_COLORS, directions[q])
                self.directions[q] = _snapshot(directions[q])
            if positions[q] != self.positions[q]:
                _put(s, at.pos + q * NUM_COLORS, positions[q])
                self.positions[q] = _snapshot(positions[q])

    def _write_board(self, view: Any) -> None:
        """Large figures, wishing stones, tile points, the tiles left on the paths and the dark stones."""
        s, at = self.buf, self.at
        figures = (view.large, view.wishing, view.tile_points)
        if figures != self.figures:
            _put(s, at.large, figures[0])
            _put(s, at.wishing, figures[1])
            _put(s, at.tile_points, figures[2])
            self.figures = _snapshot(figures)
        tiles = view.tiles
        for c in range(NUM_COLORS):
            if tiles[c] != self.tiles[c]:
                _put(s, at.tiles + c * _ROW_LEN, tiles[c])
                self.tiles[c] = _snapshot(tiles[c])
        dark = view.dark_rows
        if dark != self.dark:
            for c in range(NUM_COLORS):
                _put(s, at.dark + c * DARK_STONES_PER_PATH, dark[c])
            self.dark = _snapshot(dark)


#: zeros to clear parts of a row with
_ZEROS = array.array("i", bytes(4 * max(MAX_PILE, NUM_VALUES)))


def _put(s: array.array[int], start: int, values: Any) -> None:
    """``values`` into ``s`` from ``start`` on."""
    for i, v in enumerate(values):
        s[start + i] = v


__all__ = ["BACKENDS", "CompiledDecider", "CompiledGuidedSearch", "CompiledSearch", "RowWriter", "check_backend",
           "compiled_decider", "compiled_guided", "compiled_search", "pack_view"]
