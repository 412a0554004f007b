"""The search over a whole replayed game, as work on the server apart from the requests: a
:class:`SearchJob` runs :func:`~keltis_env.web.analysis.search_game` in a thread of its
own, position after position, while the page asks how far it has come. Its answers go into
the replay's own table of searched positions as they arrive, so they stay with the replay
(its file in ``live/``, the replay file) once the job is over, and a position searched
already is never searched again.

It is bounded: one job per replay (:meth:`~keltis_env.web.sessions.ReplaySession.start_search`),
at most :attr:`JobSlots.limit` at once on a server (``keltis serve --search-jobs``), each
position under the analysis's time limit (``--analysis-seconds``; a position past it ends
the job), and a job stops between two positions when it is cancelled or its replay is
closed or expires.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from .errors import TOO_MANY, WebError


class JobSlots:
    """The jobs a server runs at once: at most ``limit``; one more is refused (429)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._running = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        with self._lock:
            if self._running >= self.limit:
                raise WebError(TOO_MANY, f"{self.limit} whole-game searches run at once on this server, its limit "
                                         "(keltis serve --search-jobs); try again when one has finished")
            self._running += 1

    def give(self) -> None:
        with self._lock:
            self._running -= 1

    @property
    def running(self) -> int:
        return self._running


class SearchJob:
    """The search ``spec`` at every decision of a game (``states``, ``actions``) not yet in
    ``results`` (position -> the search's answer there), written into ``results`` as each
    arrives; ``ended()`` is called once the job is over, however it ended. It holds one of
    ``slots`` from :meth:`start` until it is over."""

    def __init__(self, game: Any, states: Sequence[Any], actions: Sequence[int], spec: str, seconds: float,
                 results: dict[int, dict[str, Any]], slots: JobSlots, ended: Callable[[], None]) -> None:
        self.game, self.states, self.actions = game, states, actions
        self.spec, self.seconds = spec, seconds
        self.results = results
        self.slots = slots
        self.ended = ended
        self.message: str | None = None  # why the job ended before every position was searched
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="whole-game search", daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        """Take a slot (refused when every one is taken) and start the thread."""
        self.slots.take()
        try:
            self._thread.start()
        except BaseException:
            self.slots.give()
            raise

    def cancel(self, wait: float = 0.0) -> None:
        """Stop before the next position; wait at most ``wait`` seconds for the thread to end."""
        self._cancel.set()
        if wait > 0 and self._thread.is_alive():
            self._thread.join(wait)

    def _run(self) -> None:
        from .analysis import search_game

        def report(k: int, answer: dict[str, Any]) -> None:
            self.results[k] = answer

        try:
            search_game(self.game, self.states, self.actions, self.spec, self.seconds, report,
                        skip=lambda k: k in self.results, stop=self._cancel.is_set)
            if self._cancel.is_set() and len(self.results) < len(self.actions):
                self.message = f"cancelled after {len(self.results)} of {len(self.actions)} positions"
        except TimeoutError as exc:
            self.message = f"{exc} (--analysis-seconds); the job stopped there"
        except Exception as exc:  # a fault of the search: the job ends with what it has
            self.message = f"the search failed: {type(exc).__name__}: {exc}"
        finally:
            self.slots.give()
            self.ended()


__all__ = ["JobSlots", "SearchJob"]
