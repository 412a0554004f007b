"""The routes of ``keltis serve`` (FastAPI): the page and its JSON API (docs/serve.md).

Every response of ``/api`` is JSON; every refusal is a 4xx with ``{"error": "..."}``
(:class:`~keltis_env.web.errors.WebError`, and FastAPI's own refusals in the same shape).
Work that may run agents (a new game, a move, the agents' turns, an analysis) runs in the
server's worker threads, so one slow game never holds up another.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from .agents import HUMAN
from .errors import BAD_REQUEST, CONFLICT, FORBIDDEN, NOT_FOUND, TOO_LARGE, WebError
from .guard import RequestGuard, allowed_hosts
from .jobs import JobSlots
from .records import MAX_UPLOAD_BYTES, RecordFiles, SaveFolder, check_text, parse_record
from .sessions import GameSession, ReplaySession, SessionStore, Settings, load_replay, new_game

#: the largest JSON body of a request other than an upload (bytes)
MAX_BODY_BYTES = 64 * 1024
#: the rules the page shows (a shipped file, keltis_env.data)
RULES = "docs/rules.md"
#: how long a browser keeps the token of a game it opened (seconds)
TOKEN_SECONDS = 30 * 24 * 3600


def static_folder() -> Any:
    """The page's files, shipped as package data (``keltis_env/web/static``)."""
    return resources.files("keltis_env.web") / "static"


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused once it grows past ``limit`` bytes (never read whole first)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise WebError(TOO_LARGE, f"the request body is {int(declared):,} bytes; the limit is {limit:,}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise WebError(TOO_LARGE, f"the request body is over the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request) -> Any:
    """The request's JSON body (an empty body is ``{}``)."""
    data = await read_body(request, MAX_BODY_BYTES)
    if not data.strip():
        return {}
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as exc:  # a number of over 4300 digits is a ValueError too
        raise WebError(BAD_REQUEST, f"the request body is not JSON: {exc}") from None
    check_text(body, "the request body", BAD_REQUEST)
    return body


def fields(body: Any, allowed: tuple[str, ...], shape: str) -> dict[str, Any]:
    """``body`` as an object with no field but ``allowed``; else a refusal that shows ``shape``."""
    if not isinstance(body, dict):
        raise WebError(BAD_REQUEST, f"the request body must be a JSON object {shape}")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise WebError(BAD_REQUEST, f"unknown field(s) {', '.join(map(repr, unknown))[:200]}; the body is {shape}")
    return body


async def sweep(store: SessionStore) -> None:
    """Close the idle sessions (and their agents' workers) on a timer, not only when the
    next request comes."""
    while True:
        await asyncio.sleep(store.sweep_seconds)
        await run_in_threadpool(store.expire)


def create_app(settings: Settings, store: SessionStore | None = None, records: RecordFiles | None = None,
               saves: SaveFolder | None = None, hosts: frozenset[str] | None = None) -> FastAPI:
    """The app: the page at ``/``, its files at ``/static``, the JSON API at ``/api``. Games
    are saved into ``saves`` (``None``: saving is refused). It answers only requests
    addressed to one of ``hosts`` (default: this machine's names on port 8000;
    :func:`~keltis_env.web.guard.allowed_hosts`) from its own pages (:mod:`.guard`)."""
    store = store if store is not None else SessionStore()
    records = records if records is not None else RecordFiles()
    hosts = hosts if hosts is not None else allowed_hosts("127.0.0.1", 8000)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(sweep(store))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            store.close_all()  # the server stops: so do the agents' worker processes

    app = FastAPI(title="keltis serve", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.add_middleware(RequestGuard, hosts=hosts)
    if saves is not None and store.live is None:  # the games kept before a restart are open again
        for problem in store.restore(settings, saves.live()):
            print(f"keltis serve: warning: kept game {problem}", file=sys.stderr)
    folder = static_folder()
    app.mount("/static", StaticFiles(directory=str(folder)), name="static")
    app.state.store, app.state.settings, app.state.records = store, settings, records
    app.state.jobs = JobSlots(settings.search_jobs)  # the whole-game searches running now, of every replay
    app.state.instance = secrets.token_hex(8)  # tells a page that the server restarted

    _handlers(app)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(folder / "index.html"), media_type="text/html")

    @app.get("/games/{key}", include_in_schema=False)
    def game_page(key: str) -> FileResponse:  # a game's address: the page opens the game
        return FileResponse(str(folder / "index.html"), media_type="text/html")

    @app.get("/games/{key}/replay.html", include_in_schema=False)
    def exported(key: str, request: Request) -> HTMLResponse:  # the replay file: a finished game, offline
        session = _game(store, key, request)
        with session.using():
            text = session.export()
        name = session.save_name().removesuffix(".json") + ".html"
        return HTMLResponse(text, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    ratings = leaderboard_ratings()

    @app.get("/api/info")
    def info() -> dict[str, Any]:
        return {**describe_server(settings, store, records), "server": app.state.instance, "ratings": ratings}

    @app.get("/api/rules")
    def rules() -> dict[str, Any]:
        from keltis_env.data import shipped

        path = shipped(RULES)
        if path is None:
            raise WebError(NOT_FOUND, f"this installation ships no {RULES}")
        return {"text": path.read_text(encoding="utf-8")}

    _game_routes(app, settings, store, saves)
    _replay_routes(app, settings, store, records)
    _search_routes(app, store, app.state.jobs)
    return app


def _handlers(app: FastAPI) -> None:
    """Every refusal as ``{"error": ...}``: the app's own, FastAPI's, and (a fault of the server) a 500 in JSON."""

    @app.exception_handler(WebError)
    async def refused(request: Request, exc: WebError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    @app.exception_handler(HTTPException)
    async def http_refused(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse({"error": f"bad request: {where}: {first.get('msg', 'invalid')}"}, status_code=400)

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:  # a fault of the server, still in JSON
        return JSONResponse({"error": f"the server failed on this request: {type(exc).__name__}"}, status_code=500)


def leaderboard_ratings() -> dict[str, dict[str, dict[str, Any]]]:
    """The leaderboard's rating of each agent, by ``"<game>-<n>p"`` and agent spec:
    ``{"rating", "ci", "track", "quick"}`` from the scorecards of ``benchmarks/results/``
    (a checkout's; an installed wheel has none, and then no agent has a rating). A rating of
    a policy file that has changed since it was scored is left out."""
    import hashlib

    from keltis_env.benchmark.leaderboard import RESULTS_DIR, load_scorecards
    from keltis_env.benchmark.protocol import BenchmarkError
    from keltis_env.data import resolve

    out: dict[str, dict[str, dict[str, Any]]] = {}
    if not RESULTS_DIR.is_dir():
        return out
    try:
        cards = load_scorecards(RESULTS_DIR)
    except (BenchmarkError, OSError):
        return out
    for _, card in cards:
        if card.rating is None or card.custom_protocol:
            continue
        if card.agent_sha256 and ":" in card.agent:  # a file's agent: rated only while the file is the one scored
            path = resolve(card.agent.split(":", 1)[1].split(",")[0])
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() != card.agent_sha256:
                    continue
            except OSError:
                continue
        rating = card.rating.to_dict()
        out.setdefault(f"{card.game}-{card.players}p", {})[card.agent] = {
            "rating": round(float(rating["value"])), "ci": [round(float(v)) for v in rating["ci"]],
            "track": card.track, "quick": card.quick}
    return out


def describe_server(settings: Settings, store: SessionStore, records: RecordFiles) -> dict[str, Any]:
    """The games, the agents a page may seat in each, the records and the limits."""
    from keltis_env.core.game import game_names, get_game

    games = []
    for name in game_names():
        game = get_game(name)
        counts = range(game.min_players, game.max_players + 1)
        games.append({"name": name, "long_name": game.long_name, "min_players": game.min_players,
                      "max_players": game.max_players, "num_actions": game.num_actions,
                      "agents": {str(n): settings.agents.offered(name, n) for n in counts},
                      "default_agent": {str(n): settings.agents.default(name, n) for n in counts}})
    return {"games": games, "human": HUMAN, "records": records.names(), "move_seconds": settings.move_seconds,
            "limits": {"games": store.limit, "idle_seconds": store.idle_seconds, "upload_bytes": MAX_UPLOAD_BYTES,
                       "body_bytes": MAX_BODY_BYTES}}


def token_cookie(key: str) -> str:
    """The cookie that holds the token of session ``key`` (sent only with that game's requests)."""
    return f"keltis_{key}"


def hand_token(response: Response, session: GameSession | ReplaySession) -> None:
    """Give the browser that opened ``session`` its token: a cookie no script of the page reads."""
    if session.token is not None:
        response.set_cookie(token_cookie(session.id), session.token, max_age=TOKEN_SECONDS,
                            path=f"/api/games/{session.id}", httponly=True, samesite="strict")


def _game(store: SessionStore, key: str, request: Request | None = None,
          change: str | None = None) -> GameSession | ReplaySession:
    """The session ``key`` for ``request``: one that would ``change`` it (a move, the agents'
    moves, a save, closing it) needs the session's token, and so does any request while a
    person plays it; a watched game, a replay or a finished game may be seen by any page."""
    session = store.get(key)
    assert isinstance(session, (GameSession, ReplaySession))
    if request is None or session.holds(request.cookies.get(token_cookie(key))):
        return session
    if change is not None:
        raise WebError(FORBIDDEN, f"only the browser that opened game {key} may {change}")
    if session.private:
        raise WebError(FORBIDDEN, f"game {key} is played in the browser that opened it: only that browser "
                                  "sees it until it is over (then its address shows it to anyone)")
    return session


def _game_routes(app: FastAPI, settings: Settings, store: SessionStore, saves: SaveFolder | None) -> None:
    @app.post("/api/games")
    async def create(request: Request, response: Response) -> dict[str, Any]:
        body = await read_json(request)
        start = _position(store, request, body.get("from")) if isinstance(body, dict) and "from" in body else None
        store.check_room()  # before agents are made and warmed up
        session = await run_in_threadpool(new_game, settings, body, start)
        data = store.keep(session, session.describe)
        hand_token(response, session)
        return data

    @app.get("/api/games/{key}")
    def state(key: str, request: Request, seat: str | None = None, step: str | None = None) -> dict[str, Any]:
        session = _game(store, key, request)
        yours = session.holds(request.cookies.get(token_cookie(key)))  # this browser opened it: it may change it
        with session.using():
            if isinstance(session, ReplaySession):
                return {**session.describe(seat, step), "yours": yours}
            if step is not None:
                raise WebError(BAD_REQUEST, "step is for replays; a game in progress is at its last step")
            return {**session.describe(seat), "yours": yours}

    @app.post("/api/games/{key}/act")
    async def act(key: str, request: Request) -> dict[str, Any]:
        shape = '{"action": ID or TEXT, "seat": SEAT, "step": STEP} (seat and step optional)'
        body = fields(await read_json(request), ("action", "seat", "step"), shape)
        session = _live(store, key, request, "act")
        if "action" not in body:
            raise WebError(BAD_REQUEST, f"a move names its action: {shape}")
        return await run_in_threadpool(_changing, store, session, session.act, body["action"], body.get("seat"),
                                       body.get("step"))

    @app.post("/api/games/{key}/advance")
    async def advance(key: str, request: Request) -> dict[str, Any]:
        body = fields(await read_json(request), ("steps",), '{"steps": N} (N optional: until a person is to move)')
        session = _live(store, key, request, "advance")
        return await run_in_threadpool(_changing, store, session, session.advance, body.get("steps"))

    @app.get("/api/games/{key}/analysis")
    async def analysis(key: str, request: Request, step: str | None = None) -> dict[str, Any]:
        session = _game(store, key, request)
        if isinstance(session, ReplaySession):
            answer: dict[str, Any] = await run_in_threadpool(_locked, session, session.analysis, step)
            store.keep_live(session)  # its search's answer is kept with the replay
            return answer
        if step is not None:
            raise WebError(BAD_REQUEST, "step is for replays; a game in progress is analysed at its last step")
        return await run_in_threadpool(_locked, session, session.analysis)

    @app.get("/api/games/{key}/review")
    async def reviewed(key: str, request: Request, policy: str | None = None) -> dict[str, Any]:
        session = _game(store, key, request)
        if not isinstance(session, ReplaySession):
            raise WebError(BAD_REQUEST, f"game {key} is not a replay; the review of a whole game is for replays "
                                        "(a finished game opens as one: POST /api/replays {\"game\": ID})")
        return await run_in_threadpool(_locked, session, session.review, policy)

    @app.get("/api/games/{key}/record")
    def record(key: str, request: Request) -> JSONResponse:
        session = _game(store, key, request)
        with session.using():
            data = session.downloadable()
        name = session.save_name()
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @app.post("/api/games/{key}/save")
    def save(key: str, request: Request) -> dict[str, Any]:
        session = _game(store, key, request, "save it")
        if saves is None:
            raise WebError(FORBIDDEN, "this server saves no records (start it with --save-dir FOLDER)")
        with session.using():
            return {"saved": saves.save(session.save_name(), session.record_dict())}

    @app.delete("/api/games/{key}")
    def close(key: str, request: Request) -> dict[str, Any]:
        _game(store, key, request, "close it")
        store.remove(key)
        return {"closed": key}


def _position(store: SessionStore, request: Request, origin: Any) -> tuple[Any, Any]:
    """The game and the position a new game starts from: ``{"replay": ID, "step": K}``."""
    if not isinstance(origin, dict) or set(origin) != {"replay", "step"} or not isinstance(origin["replay"], str):
        raise WebError(BAD_REQUEST, 'from names a replay\'s position: {"replay": ID, "step": K}')
    session = _game(store, origin["replay"], request)
    if not isinstance(session, ReplaySession):
        raise WebError(BAD_REQUEST, f"game {session.id} is not a replay; a game starts from a replay's position")
    with session.using():
        state = session.states[session.position(origin["step"])]
    if state.is_over:
        raise WebError(CONFLICT, "the game is over at this step; choose an earlier position to play from")
    return session.game, state.clone()


def _live(store: SessionStore, key: str, request: Request, what: str) -> GameSession:
    session = _game(store, key, request, f"{what} in it")
    if not isinstance(session, GameSession):
        raise WebError(BAD_REQUEST, f"game {key} is a replay; {what} is for games in progress")
    return session


def _locked(session: GameSession | ReplaySession, work: Any, *args: Any) -> Any:
    with session.using():
        return work(*args)


def _changing(store: SessionStore, session: GameSession, work: Any, *args: Any) -> Any:
    """``work(*args)`` on ``session``, which is then kept as it now is (a restart resumes it)."""
    with session.using():
        try:
            return work(*args)
        finally:
            store.keep_live(session)


def _replay_routes(app: FastAPI, settings: Settings, store: SessionStore, records: RecordFiles) -> None:
    @app.get("/api/records")
    def listed() -> dict[str, Any]:
        return {"records": records.names()}

    @app.post("/api/replays")
    async def open_record(request: Request, response: Response) -> dict[str, Any]:
        body = await read_json(request)
        if not isinstance(body, dict) or set(body) not in ({"record"}, {"game"}):
            raise WebError(BAD_REQUEST, "open a record by its name, {\"record\": NAME} (GET /api/records lists them), "
                                        "or a finished game of this server, {\"game\": ID}")
        if "game" in body:
            if not isinstance(body["game"], str):
                raise WebError(BAD_REQUEST, f"a game is named by its id, got {str(body['game'])[:40]!r}")
            game = _game(store, body["game"], request)
            with game.using():
                data, source = game.downloadable(), f"game {game.id}"
        else:
            data, source = records.read(body["record"]), body["record"]
        store.check_room()
        session = await run_in_threadpool(load_replay, settings, data, source)
        answer = store.keep(session, session.describe)
        hand_token(response, session)
        return answer

    @app.post("/api/replays/upload")
    async def upload(request: Request, response: Response) -> dict[str, Any]:
        data = parse_record(await read_body(request, MAX_UPLOAD_BYTES), "the upload")
        store.check_room()
        session = await run_in_threadpool(load_replay, settings, data, "upload")
        answer = store.keep(session, session.describe)
        hand_token(response, session)
        return answer


def _search_routes(app: FastAPI, store: SessionStore, jobs: JobSlots) -> None:
    """A replay's search of every decision, as a job on the server (:mod:`.jobs`): started
    and cancelled by the browser that opened the replay, its progress seen by any page that
    sees the replay."""

    def replay(key: str, request: Request, change: str | None = None) -> ReplaySession:
        session = _game(store, key, request, change)
        if not isinstance(session, ReplaySession):
            raise WebError(BAD_REQUEST, f"game {key} is not a replay; the search of a whole game is for replays "
                                        "(a finished game opens as one: POST /api/replays {\"game\": ID})")
        return session

    @app.get("/api/games/{key}/search")
    def progress(key: str, request: Request) -> dict[str, Any]:
        return replay(key, request).search_status()  # never busy: the job runs beside the requests

    @app.post("/api/games/{key}/search")
    async def start(key: str, request: Request) -> dict[str, Any]:
        fields(await read_json(request), (), "{} (empty): the search's budget is the server's")
        session = replay(key, request, "start its search")

        def ended() -> None:
            store.keep_live(session)  # its answers are kept with the replay

        return await run_in_threadpool(_locked, session, session.start_search, jobs, ended)

    @app.delete("/api/games/{key}/search")
    async def cancel(key: str, request: Request) -> dict[str, Any]:
        session = replay(key, request, "cancel its search")
        return await run_in_threadpool(_locked, session, session.cancel_search)


__all__ = ["MAX_BODY_BYTES", "RULES", "TOKEN_SECONDS", "create_app", "describe_server", "fields", "hand_token",
           "leaderboard_ratings", "read_body", "static_folder", "token_cookie"]
