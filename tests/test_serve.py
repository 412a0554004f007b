"""``keltis serve``'s JSON API (keltis_env/web), through FastAPI's TestClient: games played
over it in both games with 2-4 players, what a person may see (R10) in every response, every
refusal (a 4xx with a one-line JSON error that changes nothing), agents that fail or run out
of time, sessions, replays, analysis, the command line, and the page served from an
installed wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="keltis serve needs the web extra (pip install 'keltis-rl[web]')")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette's notice about httpx's successor
    from fastapi.testclient import TestClient

from keltis_env.core.game import get_game, load_record
from keltis_env.web.agents import HUMAN, Agents
from keltis_env.web.app import create_app
from keltis_env.web.records import MAX_UPLOAD_BYTES, RecordFiles, SaveFolder
from keltis_env.web.sessions import GameSession, SessionStore, Settings

ROOT = Path(__file__).resolve().parents[1]
#: the address the test clients ask at: the app's default, 127.0.0.1 port 8000
BASE_URL = "http://127.0.0.1:8000"
GAMES = ("keltis", "dice")
#: keys that would carry what no seat may know: other hands, the draw pile, the future dice, a record's deal
HIDDEN_KEYS = ("hands", "deck", "rolls", "removed", "setup")

_AGENTS: dict[tuple[str, ...], Agents] = {}


def agents(*specs: str) -> Agents:
    """One Agents per list of specs for the whole run (making the bundled bots takes a moment)."""
    if specs not in _AGENTS:
        _AGENTS[specs] = Agents(specs)
    return _AGENTS[specs]


#: the search's rollouts per position in these tests (a small budget: the server's default searches longer)
SEARCH_ITERATIONS = 64


def make_client(*specs: str, move_seconds: float | None = 5.0, limit: int = 32, records: RecordFiles | None = None,
                store: SessionStore | None = None, saves: SaveFolder | None = None) -> TestClient:
    settings = Settings(agents(*specs), move_seconds, analysis_seconds=20.0, search_iterations=SEARCH_ITERATIONS)
    app = create_app(settings, store if store is not None else SessionStore(limit, 1800.0), records, saves)
    return TestClient(app, base_url=BASE_URL)


@pytest.fixture
def client(tmp_path) -> TestClient:
    return make_client(saves=SaveFolder(tmp_path / "saves"))


def session_of(client: TestClient, key: str) -> Any:
    return client.app.state.store.get(key)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- what a person may see
def hidden_leaks(response: dict[str, Any], session: GameSession) -> list[str]:
    """What in ``response`` (sent while a person plays) shows more than the person's own
    seats may know: another seat's view or hand (under any key), the full state, the seed
    (as a field, a record's setup, or in a text) or the draw pile. A response that shows no
    position (a save, an error) is judged as seen by the person's first seat."""
    state = session.state
    problems = []
    viewer = response.get("viewer", session.humans[0] if "view" not in response else None)
    if viewer not in session.humans:
        problems.append(f"the response shows seat {viewer!r}, not a person's seat {session.humans}")
    others = [sorted(state.hands[p]) for p in range(state.num_players) if p != viewer and hasattr(state, "hands")]

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}.{key}"
                if key in HIDDEN_KEYS:
                    problems.append(f"{where} is hidden information")
                if key == "seed" and value is not None:
                    problems.append(f"{where} names the deal")
                own = sorted(state.hands[viewer]) if hasattr(state, "hands") and viewer in session.humans else None
                if key == "hand" and own is not None and value != own:
                    problems.append(f"{where} is not the viewer's own hand")
                walk(value, where)
        elif isinstance(node, str) and ("seed" in node.lower() and str(session.seed) in node):
            problems.append(f"{path} names the seed: {node!r}")
        elif isinstance(node, list):
            if len(node) >= 3 and any(node == hand for hand in others):
                problems.append(f"{path} holds another seat's hand {node}")
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(response, "")
    return problems


def saved_while_playing(client: TestClient, key: str, session: GameSession) -> list[str]:
    """Ask for the record of ``key`` (refused while a person plays) and save it on the
    server; the hidden information the answers show (the record itself, or its seed)."""
    problems = []
    for reply in (client.get(f"/api/games/{key}/record"), client.post(f"/api/games/{key}/save")):
        problems += hidden_leaks(reply.json(), session)
        if reply.status_code == 200 and "saved" not in reply.json():
            problems.append(f"{reply.request.url.path} sent the record of an unfinished game")
    return problems


def play_through(client: TestClient, data: dict[str, Any], check: bool = True, analyse_every: int = 0) -> dict:
    """Play ``data``'s game to its end over the API (a person takes the first legal move),
    checking every response for hidden information, those of the record and of a save
    (every tenth move) included."""
    key = data["id"]
    session = session_of(client, key)
    responses = 0
    while not data["over"]:
        if data["waiting"]:
            reply = client.post(f"/api/games/{key}/advance", json={})
        elif data["viewer"] != data["to_move"]:  # hot-seat: the next person's turn, after the hand-over
            reply = client.get(f"/api/games/{key}?seat={data['to_move']}")
        else:
            assert data["moves"] and data["viewer"] == data["to_move"]
            assert [m["id"] for m in data["moves"]] == [a for a, on in enumerate(data["mask"]) if on]
            if analyse_every and responses % analyse_every == 0:
                analysis = client.get(f"/api/games/{key}/analysis")
                assert analysis.status_code == 200, analysis.text
                if check and session.private:
                    assert not hidden_leaks({**analysis.json(), "viewer": data["viewer"]}, session)
            reply = client.post(f"/api/games/{key}/act", json={"action": data["moves"][0]["id"],
                                                                "seat": data["to_move"]})
        assert reply.status_code == 200, reply.text
        data = reply.json()
        responses += 1
        if check and session.private:
            assert not hidden_leaks(data, session), hidden_leaks(data, session)
            polled = client.get(f"/api/games/{key}").json()
            assert not hidden_leaks(polled, session)
            if responses % 10 == 1:
                assert not saved_while_playing(client, key, session)
    return data


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("game", GAMES)
def test_no_response_holds_another_seats_hidden_cards_while_a_person_plays(client, game, players):
    seats = ["random"] * players
    seats[players - 1] = HUMAN
    data = client.post("/api/games", json={"game": game, "players": players, "seats": seats, "seed": 11}).json()
    assert data["kind"] == "play" and data["seed"] is None
    end = play_through(client, data, analyse_every=97)
    assert end["over"] and end["end"] in ("goal", "deck", "all_upper", "upper_count", "truncated")
    assert end["seed"] == 11  # once the game is over, the deal may be shown
    assert client.get(f"/api/games/{data['id']}?seat=full").status_code == 200


def test_a_person_is_refused_another_seats_view_and_the_full_state(client):
    data = client.post("/api/games", json={"game": "keltis", "players": 3, "seats": [HUMAN, "random", "random"]})
    key = data.json()["id"]
    for seat, status in (("1", 403), ("2", 403), ("full", 403), ("0", 200), ("7", 400), ("x", 400)):
        reply = client.get(f"/api/games/{key}?seat={seat}")
        assert reply.status_code == status, (seat, reply.text)


def test_hot_seat_shows_each_persons_own_seat_and_refuses_the_agents(client):
    data = client.post("/api/games", json={"game": "keltis", "players": 3, "seats": [HUMAN, HUMAN, "random"],
                                           "seed": 4}).json()
    session = session_of(client, data["id"])
    assert data["humans"] == [0, 1]
    for seat in (0, 1):
        reply = client.get(f"/api/games/{data['id']}?seat={seat}").json()
        assert reply["view"]["hand"] == sorted(session.state.hands[seat]) and not hidden_leaks(reply, session)
    assert client.get(f"/api/games/{data['id']}?seat=2").status_code == 403
    play_through(client, data)


def test_the_analysis_is_only_for_a_persons_own_seat_while_they_play(client):
    for seed in range(40):  # a deal where the agent moves first
        data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": ["random", HUMAN],
                                               "seed": seed}).json()
        if data["waiting"]:
            break
        client.delete(f"/api/games/{data['id']}")
    reply = client.get(f"/api/games/{data['id']}/analysis")
    assert reply.status_code == 403 and "your own seats" in reply.json()["error"]


# ---------------------------------------------------------------------- moves
def test_a_move_is_taken_by_id_or_by_text_and_an_illegal_one_is_refused_with_the_engines_reason(client):
    data = client.post("/api/games", json={"game": "keltis", "players": 2, "seats": [HUMAN, HUMAN],
                                           "seed": 3}).json()
    key = data["id"]
    before = client.get(f"/api/games/{key}?seat={data['to_move']}").json()
    reply = client.post(f"/api/games/{key}/act", json={"action": "draw deck"})
    assert reply.status_code == 422
    assert reply.json() == {"error": "illegal move 'draw deck': drawing happens in the draw step, and this is the "
                                     "play step"}
    assert client.get(f"/api/games/{key}?seat={data['to_move']}").json() == before
    text = before["moves"][0]["text"]
    after = client.post(f"/api/games/{key}/act", json={"action": text, "seat": data["to_move"]}).json()
    assert after["phase"] == "draw" and after["log"][-1]["text"] == text


def test_watching_agents_goes_one_move_at_a_time(client):
    data = client.post("/api/games", json={"game": "dice", "players": 3, "seats": ["random", "heuristic", "random"],
                                           "seed": 2}).json()
    assert data["kind"] == "watch" and data["viewer"] == "full" and data["waiting"]
    for step in (1, 2, 3):
        data = client.post(f"/api/games/{data['id']}/advance", json={"steps": 1}).json()
        assert data["step"] == step and len(data["log"]) == step
    assert client.get(f"/api/games/{data['id']}?seat=1").json()["viewer"] == 1
    data = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert data["over"] and data["message"] is None


# ---------------------------------------------------------------------- refusals
def _refusals(client: TestClient) -> list[tuple[str, str, Any, int, str]]:
    """(method, path, body, status, words of the error) for every kind of bad request."""
    play = client.post("/api/games", json={"game": "keltis", "players": 2, "seats": [HUMAN, "random"],
                                           "seed": 8}).json()
    if play["waiting"]:
        play = client.post(f"/api/games/{play['id']}/advance", json={}).json()
    over = client.post("/api/games", json={"game": "dice", "players": 2, "seats": ["random", "random"]}).json()
    client.post(f"/api/games/{over['id']}/advance", json={})
    key, done = play["id"], over["id"]
    record = client.get(f"/api/games/{done}/record").json()
    bad_record = {**record, "final_scores": [999, 999]}
    surrogate = json.dumps({**record, "players": ["\ud800", "random"]})  # JSON's escape of a lone surrogate
    assert "\\ud800" in surrogate
    replay = client.post("/api/replays/upload", json=record).json()["id"]
    huge = "9" * 5000
    step = play["step"]
    return [
        ("GET", "/api/games/no-such-game", None, 404, "unknown game"),
        ("POST", "/api/games/no-such-game/act", {"action": 0}, 404, "unknown game"),
        ("POST", f"/api/games/{key}/act", {"action": "fly to the moon"}, 400, "malformed action"),
        ("POST", f"/api/games/{key}/act", {"action": 9999}, 400, "malformed action"),
        ("POST", f"/api/games/{key}/act", {"action": True}, 400, "malformed action"),
        ("POST", f"/api/games/{key}/act", {"move": 1}, 400, "unknown field(s) 'move'"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "colour": "red"}, 400, "unknown field(s) 'colour'"),
        ("POST", f"/api/games/{key}/act", {}, 400, "a move names its action"),
        ("POST", f"/api/games/{key}/act", [0], 400, "must be a JSON object"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "seat": "x"}, 400, "seat must be a seat number 0..1"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "seat": 2}, 400, "seat must be a seat number 0..1"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "seat": huge}, 400, "seat must be a seat number"),
        ("POST", f"/api/games/{key}/act", f'{{"action": 0, "seat": {huge}}}', 400, "not JSON"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "step": "x"}, 400, "step must be the number of moves"),
        ("POST", f"/api/games/{key}/act", {"action": play["moves"][0]["id"], "step": step + 1}, 409,
         f"chosen at step {step + 1}, and the game is at step {step}"),
        ("POST", f"/api/games/{key}/act", '{"action": "\\udc00"}', 400, "lone surrogate (\\udc00)"),
        ("POST", f"/api/games/{key}/act", "not json", 400, "not JSON"),
        ("POST", f"/api/games/{key}/act", {"action": "draw deck"}, 422, "illegal move"),
        ("POST", f"/api/games/{key}/act", {"action": 0, "seat": 1 - play["to_move"]}, 409, "move, not seat"),
        ("POST", f"/api/games/{key}/advance", {}, 409, "a person's move"),
        ("GET", f"/api/games/{key}/record", None, 403, "only saved on the server"),
        ("POST", f"/api/games/{done}/act", {"action": 0}, 409, "game is over"),
        ("POST", f"/api/games/{done}/advance", {"steps": 1}, 409, "game is over"),
        ("POST", f"/api/games/{done}/advance", {"steps": huge}, 400, "steps must be a whole number"),
        ("POST", f"/api/games/{done}/advance", {"step": 1}, 400, "unknown field(s) 'step'"),
        ("POST", f"/api/games/{done}/advance", 3, 400, "must be a JSON object"),
        ("GET", f"/api/games/{key}?seat={huge}", None, 400, "seat must be 0..1"),
        ("GET", f"/api/games/{key}?seat=%C2%B2", None, 400, "seat must be 0..1"),
        ("GET", f"/api/games/{replay}?step={huge}", None, 400, "step must be 0.."),
        ("GET", f"/api/games/{replay}/analysis?step={huge}", None, 400, "step must be 0.."),
        ("GET", f"/api/games/{done}/analysis", None, 409, "game is over"),
        ("GET", f"/api/games/{key}?seat=full", None, 403, "hidden while a person plays"),
        ("GET", f"/api/games/{key}?step=3", None, 400, "step is for replays"),
        ("POST", "/api/games", {"game": "keltis", "seats": [HUMAN, "ppo:/etc/passwd"]}, 400, "unknown agent"),
        ("POST", "/api/games", {"game": "keltis", "seats": [HUMAN, "py:os:system"]}, 400, "unknown agent"),
        ("POST", "/api/games", {"game": "chess"}, 400, "unknown game"),
        ("POST", "/api/games", {"game": "dice", "players": 5}, 400, "players must be 2..4"),
        ("POST", "/api/games", {"game": "dice", "seed": -1}, 400, "seed must be"),
        ("POST", "/api/games", {"game": "dice", "colour": "red"}, 400, "unknown field"),
        ("POST", "/api/games", {}, 400, "a new game names its game: {\"game\": 'dice' or 'keltis'"),
        ("POST", "/api/games", {"game": "dice", "players": huge}, 400, "players must be 2..4"),
        ("POST", "/api/games", {"game": "dice", "seed": 2**53}, 400, "seed must be a whole number 0..2**53-1"),
        ("POST", "/api/games", {"game": ["dice"]}, 400, "unknown game"),
        ("POST", "/api/replays/upload", bad_record, 422, "not a valid game record"),
        ("POST", "/api/replays/upload", "{not json", 422, "not a JSON game record"),
        ("POST", "/api/replays/upload", surrogate, 422, "the upload holds a lone surrogate (\\ud800)"),
        ("POST", "/api/replays/upload", "x" * (MAX_UPLOAD_BYTES + 1), 413, "limit"),
        ("POST", "/api/replays", {"record": "../../etc/passwd"}, 404, "unknown record"),
        ("POST", "/api/replays", {"path": "/etc/passwd"}, 400, "open a record by its name"),
        ("GET", "/api/no-such-route", None, 404, "Not Found"),
    ]


def test_every_bad_request_gets_a_4xx_with_a_one_line_json_error_and_changes_nothing(client):
    store = client.app.state.store  # type: ignore[attr-defined]
    for method, path, body, status, words in _refusals(client):
        games = {k: json.dumps(client.get(f"/api/games/{k}").json(), sort_keys=True) for k in list(store._sessions)}
        content = body if isinstance(body, str) else None
        payload = None if isinstance(body, str) else body
        headers = {"content-type": "application/json"} if content is not None else {}
        reply = client.request(method, path, json=payload, content=content, headers=headers)
        assert reply.status_code == status, (method, path, reply.status_code, reply.text)
        assert reply.headers["content-type"] == "application/json"
        error = reply.json()["error"]
        assert words in error and "\n" not in error and len(error) < 600, (path, error)
        after = {k: json.dumps(client.get(f"/api/games/{k}").json(), sort_keys=True) for k in games}
        assert after == games, f"{method} {path} changed a game"
        assert sorted(store._sessions) == sorted(games), f"{method} {path} left a session behind"


def test_too_many_games_are_refused_and_an_idle_game_expires():
    now = [0.0]
    store = SessionStore(limit=2, idle_seconds=60.0, clock=lambda: now[0])
    client = make_client(store=store)
    first = client.post("/api/games", json={"game": "dice"}).json()["id"]
    client.post("/api/games", json={"game": "dice"})
    reply = client.post("/api/games", json={"game": "dice"})
    assert reply.status_code == 429 and "limit 2" in reply.json()["error"]
    now[0] = 30.0
    assert client.get(f"/api/games/{first}").status_code == 200  # used: its idle time starts again
    now[0] = 80.0
    assert client.post("/api/games", json={"game": "dice"}).status_code == 200  # the second one expired
    assert client.get(f"/api/games/{first}").status_code == 200
    now[0] = 200.0
    assert client.get(f"/api/games/{first}").status_code == 404


def test_a_request_on_a_game_that_is_being_served_is_refused_as_busy(client):
    key = client.post("/api/games", json={"game": "dice"}).json()["id"]
    session = session_of(client, key)
    with session.using():
        reply = client.get(f"/api/games/{key}")
    assert reply.status_code == 409 and "busy" in reply.json()["error"]
    assert client.get(f"/api/games/{key}").status_code == 200


# ---------------------------------------------------------------------- agents
AGENT_CODE = '''
import time

import numpy as np


class Raises:
    def act(self, observation, action_mask):
        raise ValueError("my agent is broken")


class Slow:
    def act(self, observation, action_mask):
        time.sleep(3)
        return int(np.flatnonzero(action_mask)[0])
'''


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("agents") / "my_agents.py"
    path.write_text(AGENT_CODE)
    return path


def test_an_agent_that_raises_ends_its_game_with_a_message_and_the_server_goes_on(agent_file):
    spec = f"py:{agent_file}:Raises"
    client = make_client(spec)
    data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [spec, "random"]}).json()
    data = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert data["over"] and "raised ValueError: my agent is broken" in data["message"]
    assert client.post(f"/api/games/{data['id']}/advance", json={}).status_code == 409
    other = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"]}).json()
    assert client.post(f"/api/games/{other['id']}/advance", json={}).json()["over"]


def test_an_agent_over_the_time_limit_loses_its_game_on_time_and_the_server_goes_on(agent_file):
    spec = f"py:{agent_file}:Slow"
    client = make_client(spec, move_seconds=0.3)
    data = client.post("/api/games", json={"game": "keltis", "players": 2, "seats": [spec, HUMAN]}).json()
    if not data["waiting"]:
        data = client.post(f"/api/games/{data['id']}/act", json={"action": data["moves"][0]["id"]}).json()
        while not data["waiting"]:
            data = client.post(f"/api/games/{data['id']}/act", json={"action": data["moves"][0]["id"]}).json()
    t0 = time.perf_counter()
    data = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert time.perf_counter() - t0 < 2.0, "the server waited for the agent past its limit"
    assert data["over"] and "over the limit of 0.3 s" in data["message"] and "loses the game on time" in data["message"]
    other = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"]}).json()
    assert client.post(f"/api/games/{other['id']}/advance", json={}).json()["over"]


def test_the_page_chooses_among_the_offered_agents_only():
    spec = "ppo:policies/keltis_2p.zip"
    client = make_client(spec)
    games = {g["name"]: g for g in client.get("/api/info").json()["games"]}
    assert spec in games["keltis"]["agents"]["2"] and spec not in games["keltis"]["agents"]["3"]
    assert {"random", "heuristic", "ismcts"} <= set(games["dice"]["agents"]["2"])
    assert not any(name in ("ppo", "rllib") for g in games.values() for names in g["agents"].values()
                   for name in names)
    assert client.post("/api/games", json={"game": "keltis", "seats": [HUMAN, spec]}).status_code == 200
    reply = client.post("/api/games", json={"game": "keltis", "players": 3, "seats": [HUMAN, spec, "random"]})
    assert reply.status_code == 400 and "unknown agent" in reply.json()["error"]


def test_an_agent_spec_that_fits_no_game_is_refused_when_the_server_starts():
    with pytest.raises(ValueError, match="fits no game"):
        Agents(["ppo:no/such/policy.zip"])
    done = subprocess.run([sys.executable, "-m", "keltis_env", "serve", "--agent", "bogus"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "fits no game" in done.stderr


# ---------------------------------------------------------------------- records, replay, analysis
def test_a_record_saved_from_a_game_replays_forward_and_back_with_any_seats_view(client, tmp_path):
    data = client.post("/api/games", json={"game": "keltis", "players": 3, "seats": ["random"] * 3,
                                           "seed": 5}).json()
    client.post(f"/api/games/{data['id']}/advance", json={})
    record = client.get(f"/api/games/{data['id']}/record")
    assert "attachment" in record.headers["content-disposition"]
    (tmp_path / "game.json").write_text(record.text)
    replayed = load_record(record.json())
    assert replayed.replay().scores() == client.get(f"/api/games/{data['id']}").json()["scores"]
    served = make_client(records=RecordFiles([tmp_path]))
    assert served.get("/api/records").json() == {"records": ["game.json"]}
    opened = served.post("/api/replays", json={"record": "game.json"}).json()
    assert opened["kind"] == "replay" and opened["step"] == opened["steps"] == len(replayed.actions)
    key = opened["id"]
    states = replayed.states()
    for step in (0, 1, 7, 6, 0):
        seen = served.get(f"/api/games/{key}?step={step}&seat=full").json()
        assert seen["view"]["hands"] == [sorted(h) for h in states[step].hands] and seen["step"] == step
        mine = served.get(f"/api/games/{key}?step={step}&seat=1").json()
        assert mine["view"]["hand"] == sorted(states[step].hands[1]) and "hands" not in mine["view"]
    assert served.get(f"/api/games/{key}?step={len(states)}").status_code == 400
    analysis = served.get(f"/api/games/{key}/analysis?step=7").json()
    assert analysis["seat"] == states[7].current


def test_saving_an_unfinished_game_never_sends_its_seed(client, tmp_path):
    seed = 987654321
    data = client.post("/api/games", json={"game": "keltis", "players": 2, "seats": [HUMAN, "random"],
                                           "seed": seed}).json()
    key, session = data["id"], session_of(client, data["id"])
    refused = client.get(f"/api/games/{key}/record")
    assert refused.status_code == 403 and str(seed) not in refused.text
    assert "POST /api/games/" in refused.json()["error"] and "/save" in refused.json()["error"]
    for _ in range(2):  # saving again replaces the game's file
        saved = client.post(f"/api/games/{key}/save")
        assert saved.status_code == 200 and saved.json() == {"saved": f"keltis-{key}.json"}
        assert str(seed) not in saved.text and not hidden_leaks(saved.json(), session)
    (path,) = (tmp_path / "saves").glob("*.json")
    record = load_record(json.loads(path.read_text()))
    assert path.name == f"keltis-{key}.json" and record.seed == seed and record.actions == session.match.actions
    end = play_through(client, client.get(f"/api/games/{key}").json())
    downloaded = client.get(f"/api/games/{key}/record")  # the game is over: the deal may be shown
    assert end["over"] and downloaded.status_code == 200 and downloaded.json()["setup"] == {"seed": seed}


def test_the_leak_check_finds_a_record_and_a_seed_in_any_answer(client):
    data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [HUMAN, "random"],
                                           "seed": 424242}).json()
    session = session_of(client, data["id"])
    assert not hidden_leaks({"saved": "dice-x.json"}, session)
    assert any("hidden information" in p for p in hidden_leaks(session.record_dict(), session))
    assert any("names the seed" in p for p in hidden_leaks({"error": "the seed is 424242"}, session))


def test_a_save_folder_holds_a_bounded_number_of_records_and_a_server_without_one_saves_nothing(tmp_path):
    client = make_client(saves=SaveFolder(tmp_path, limit=1))
    first, second = (client.post("/api/games", json={"game": "dice"}).json()["id"] for _ in range(2))
    assert client.post(f"/api/games/{first}/save").status_code == 200
    assert client.post(f"/api/games/{first}/save").status_code == 200  # the same game's file is replaced
    refused = client.post(f"/api/games/{second}/save")
    assert refused.status_code == 429 and "holds 1 records, its limit" in refused.json()["error"]
    assert [p.name for p in tmp_path.glob("*.json")] == [f"dice-{first}.json"]
    unsaved = make_client()
    key = unsaved.post("/api/games", json={"game": "dice"}).json()["id"]
    reply = unsaved.post(f"/api/games/{key}/save")
    assert reply.status_code == 403 and "--save-dir" in reply.json()["error"]


def test_a_save_folder_that_cannot_be_written_is_refused_when_the_server_starts(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run([sys.executable, "-m", "keltis_env", "serve", "--save-dir", str(blocker)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--save-dir" in done.stderr, done.stderr


@pytest.mark.parametrize("game", GAMES)
def test_the_analysis_gives_the_policys_probabilities_and_value_and_the_searchs_values(client, game):
    data = client.post("/api/games", json={"game": game, "players": 2, "seats": [HUMAN, HUMAN], "seed": 1}).json()
    analysis = client.get(f"/api/games/{data['id']}/analysis").json()
    legal = {m["id"] for m in data["moves"]}
    policy, search = analysis["policy"], analysis["search"]
    assert policy["agent"] == f"ppo:policies/{game}_2p.zip" and {m["id"] for m in policy["moves"]} == legal
    assert abs(sum(m["probability"] for m in policy["moves"]) - 1) < 1e-6
    assert isinstance(policy["value"], float) and policy["value_target"]
    assert search["agent"] == client.app.state.settings.search_spec(game)
    assert search["moves"] and {m["id"] for m in search["moves"]} <= legal
    kept = [m["value"] for m in search["moves"] if m["kept"]]
    assert kept and kept == sorted(kept, reverse=True) and search["moves"][: len(kept)] == [
        m for m in search["moves"] if m["kept"]]  # the survivors first, best first
    assert sum(m["chosen"] for m in search["moves"]) == 1 and all(m["samples"] >= 0 for m in search["moves"])
    if search["rollouts"]:  # every candidate it considered, with its visits, not only the survivors
        assert any(m["samples"] > 0 for m in search["moves"]) and any(m["kept"] for m in search["moves"])


def test_a_record_named_on_the_command_line_must_exist():
    with pytest.raises(ValueError, match="no such file or folder"):
        RecordFiles(["no/such/record.json"])


# ---------------------------------------------------------------------- the command
def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_keltis_help_and_the_other_commands_never_import_the_web_stack():
    code = """
import contextlib, io, sys
from keltis_env.cli import main
for argv in (["--help"], ["serve", "--help"], ["demo", "--every", "end", "--seed", "1"]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("fastapi", "uvicorn", "starlette"))
    assert not loaded, (argv, loaded)
print("clean")
"""
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "clean", done.stderr[-2000:]


def _serve(args: list[str], cwd: Path, env: dict[str, str] | None = None, command: list[str] | None = None
           ) -> tuple[subprocess.Popen, str]:
    """Start ``keltis serve`` on a free port; returns the process and the address it printed."""
    command = command or [sys.executable, "-m", "keltis_env"]
    process = subprocess.Popen([*command, "serve", "--port", "0", *args], cwd=cwd, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = process.stdout.readline() if process.stdout else ""
    if "http://" not in line:
        process.kill()
        err = process.stderr.read() if process.stderr else ""
        raise AssertionError(f"keltis serve printed {line!r}; stderr: {err}")
    return process, line.split("open ")[1].split()[0]


def _stop(process: subprocess.Popen) -> str:
    process.terminate()
    try:
        _, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return err


def test_keltis_serve_binds_this_machine_by_default_and_warns_when_it_binds_beyond():
    import httpx

    process, address = _serve([], ROOT)
    try:
        assert address.startswith("http://127.0.0.1:")
        assert httpx.get(address + "api/info", timeout=30).status_code == 200
    finally:
        err = _stop(process)
    assert "warning" not in err
    process, address = _serve(["--host", "0.0.0.0"], ROOT)
    try:
        assert address.startswith("http://127.0.0.1:")  # 0.0.0.0 binds every interface; a browser here opens this
    finally:
        err = _stop(process)
    assert "warning: listening on 0.0.0.0: anyone who can reach port" in err


@pytest.mark.slow
def test_an_installed_wheel_serves_the_page_from_its_package_data(tmp_path):
    import httpx

    source = tmp_path / "source"  # a copy, so that building writes nothing into the checkout
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("keltis_env", "training", "policies", "configs", "benchmarks"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=skip)
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md", "MANIFEST.in", "constraints.txt"):
        shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist)], check=True, capture_output=True, timeout=600)
    (wheel,) = dist.glob("keltis_rl-*.whl")
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for page in ("index.html", "app.js", "board.js", "style.css"):
        assert f"keltis_env/web/static/{page}" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=600)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME",)}
    env["PYTHONPATH"] = os.pathsep.join([str(target), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p and Path(p).resolve() != ROOT]])
    where = subprocess.run([sys.executable, "-c", "import keltis_env.web; print(keltis_env.web.__file__)"],
                           cwd=outside, env=env, capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).is_relative_to(target), where  # the wheel's copy, not this checkout
    process, address = _serve([], outside, env)
    try:
        page = httpx.get(address, timeout=30)
        assert page.status_code == 200 and "/static/app.js" in page.text
        for name in ("app.js", "board.js", "style.css"):
            served = httpx.get(f"{address}static/{name}", timeout=30)
            assert served.status_code == 200 and served.text == (target / "keltis_env/web/static" / name).read_text()
    finally:
        _stop(process)


def test_every_game_can_be_set_up_from_the_info_the_page_gets(client):
    info = client.get("/api/info").json()
    assert info["human"] == HUMAN and info["move_seconds"] == 5.0
    for game in info["games"]:
        descriptor = get_game(game["name"])
        assert game["min_players"] == descriptor.min_players and game["max_players"] == descriptor.max_players
        for n, names in game["agents"].items():
            assert game["default_agent"][n] in names


def test_the_rules_and_the_leaderboards_ratings_are_served(client):
    rules = client.get("/api/rules").json()["text"]
    assert rules == (ROOT / "docs" / "rules.md").read_text()
    ratings = client.get("/api/info").json()["ratings"]
    if (ROOT / "benchmarks" / "results").is_dir():
        rated = ratings["keltis-2p"]["heuristic"]
        assert rated["track"] == "keltis-2p" and rated["ci"][0] <= rated["rating"] <= rated["ci"][1]


def test_the_leak_check_finds_another_seats_hand_and_the_full_state(client):
    data = client.post("/api/games", json={"game": "keltis", "players": 2, "seats": [HUMAN, HUMAN], "seed": 6}).json()
    session = session_of(client, data["id"])
    mine = client.get(f"/api/games/{data['id']}?seat=0").json()
    assert not hidden_leaks(mine, session)
    theirs = {**mine, "extra": {"cards": sorted(session.state.hands[1])}}
    assert any("another seat's hand" in p for p in hidden_leaks(theirs, session))
    from keltis_env.web.views import full_view

    assert any("hidden information" in p for p in hidden_leaks({**mine, "view": full_view(session.state)}, session))
    assert any("not a person's seat" in p for p in hidden_leaks({**mine, "viewer": "full"}, session))
