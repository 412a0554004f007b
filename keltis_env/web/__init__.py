"""The browser app of ``keltis serve``: play, watch and replay both games in a page, with
the agents' analysis of a move, over a JSON API on the match loop.

* :mod:`.errors`: :class:`~.errors.WebError`, a refusal with its HTTP status and one line.
* :mod:`.guard`: who may ask: the ``Host`` of the server's own address, no other site's
  ``Origin``, JSON bodies only.
* :mod:`.confine`: the seccomp filter and process group that keep an agent's worker away
  from the server and every other process.
* :mod:`.agents`: the agents a page may seat (the bundled bots, and those named on the
  command line), each made with a per-move time limit (:class:`~.agents.TimedBot`).
* :mod:`.workers`: the worker process per game in which the agents named on the command
  line play, so that one that crashes, exits or hangs ends only its own game.
* :mod:`.records`: the records a page may open (``--record``), the folder games are
  saved into (``--save-dir``), and its ``live/`` subfolder, where the open games are kept.
* :mod:`.views`: what one seat may see of a game, as JSON (R10), the legal moves and the
  full state (only where no person plays).
* :mod:`.analysis`: a policy's move probabilities and value, the search's candidates, and a
  policy's review of a whole game, and the search at every decision of one.
* :mod:`.jobs`: that whole-game search as a job on the server, beside the requests, and
  the cap on how many run at once.
* :mod:`.export`: a finished game as one self-contained HTML file (``keltis replay --html``).
* :mod:`.sessions`: a game or a replay per session, and the store that bounds them.
* :mod:`.app`: the routes (FastAPI) and the static page (``static/``, package data).

Everything but :mod:`.app` uses the standard library and the package alone, so the page's
rules (who may see what, which agents, which records) are tested without a server;
``keltis --help`` and the other commands never import FastAPI or uvicorn.
"""
