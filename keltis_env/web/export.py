"""A finished game as one self-contained HTML file: the board's drawing and look (the page's
``board.js`` and ``style.css``), every position as the full state, the moves, the
analyses computed for it and the search's answers where its positions were searched (each
move marked against the search's choice), with a small viewer (``replay.js``: buttons, a slider, the arrow
keys). It opens offline, with no server. ``keltis serve`` gives it for a finished game or a
replay, and ``keltis replay RECORD --html FILE`` writes the same file (standard library only).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from .views import full_view

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{style}
#log li {{ cursor: pointer; }}
#log li.current {{ color: var(--text); font-weight: bold; }}
</style>
</head>
<body>
<header><h1 id="title"></h1></header>
<main id="game-area">
  <div id="status"></div>
  <div id="result" hidden></div>
  <div class="play">
    <div class="board-column"><div id="board"></div><div id="hands"></div></div>
    <aside>
      <div class="row">
        <button id="first" type="button" title="first position (Home)">|&#x25C0;</button>
        <button id="back" type="button" title="one move back (left arrow)">&#x25C0;</button>
        <input id="scrub" type="range" min="0" max="0" value="0">
        <button id="forward" type="button" title="one move forward (right arrow)">&#x25B6;</button>
        <button id="last" type="button" title="last position (End)">&#x25B6;|</button>
      </div>
      <div id="next"></div>
      <div id="analysis"></div>
      <h3>Moves</h3>
      <ol id="log"></ol>
    </aside>
  </div>
</main>
<script type="application/json" id="replay-data">{data}</script>
<script>
{board}
</script>
<script>
{viewer}
</script>
</body>
</html>
"""


def _static(name: str) -> str:
    return (resources.files("keltis_env.web") / "static" / name).read_text(encoding="utf-8")


def replay_data(record: Any, analyses: Mapping[int, dict[str, Any]] | None = None,
                searches: Mapping[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the viewer shows of ``record``: every position (the full state), the moves (each
    with the search's mark, :func:`~keltis_env.web.analysis.search_mark`, ``null`` where its
    position was not searched), ``analyses`` (position -> the analysis of the seat to move
    there) and ``searches`` (position -> the search's answer there)."""
    from keltis_env.core.game import get_game

    from .analysis import search_mark

    game = get_game(record.GAME)
    states = record.states()
    n = record.config.num_players
    names = list(record.players or [f"player {p}" for p in range(n)])
    positions = []
    for state in states:
        over = bool(state.is_over)
        positions.append({"view": full_view(state), "to_move": int(state.current), "turn": int(state.turn),
                          "phase": state.phase.name.lower(), "over": over,
                          "end": state.end.name.lower() if over else None, "scores": list(state.scores())})
    searched = dict(searches or {})
    moves = []
    for i, a in enumerate(record.actions):
        text = game.action_to_string(a)
        moves.append({"step": i + 1, "seat": int(states[i].current), "text": text,
                      "search": search_mark(searched.get(i), text)})
    seed = None if record.seed is None else str(record.seed)  # as text: 128 bits are more than a JS number holds
    return {"game": game.name, "names": names, "seed": seed, "positions": positions, "moves": moves,
            "analyses": {str(k): v for k, v in sorted((analyses or {}).items())},
            "searches": {str(k): v for k, v in sorted(searched.items())}}


def replay_html(record: Any, analyses: Mapping[int, dict[str, Any]] | None = None,
                searches: Mapping[int, dict[str, Any]] | None = None) -> str:
    """The replay file of ``record`` (see the module), as text."""
    data = replay_data(record, analyses, searches)
    # the JSON sits in a <script> element: "</" would end it, so it is written as "<\\/"
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = f"{data['game']}: {' · '.join(data['names'])}"
    return _PAGE.format(title=html.escape(title), style=_static("style.css"), data=text, board=_static("board.js"),
                        viewer=_static("replay.js"))


__all__ = ["replay_data", "replay_html"]
