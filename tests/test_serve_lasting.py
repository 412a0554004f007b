"""``keltis serve``'s games last: each game and replay position has an address, a person's
seats are held by a token only the browser that opened the game has (a cookie), a move
carries the step it was chosen at (a second click or a stale tab plays nothing), and the
games and replays open on a server are kept in its save folder and open again, as they
were, after a restart."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="keltis serve needs the web extra (pip install 'keltis-rl[web]')")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette's notice about httpx's successor
    from fastapi.testclient import TestClient

from test_serve import BASE_URL, hidden_leaks, make_client, play_through, session_of

from keltis_env.web.agents import HUMAN
from keltis_env.web.app import token_cookie
from keltis_env.web.records import LIVE_FOLDER, SaveFolder
from keltis_env.web.sessions import SessionStore


def restarted(client: TestClient, folder: Path, store: SessionStore | None = None) -> TestClient:
    """A new server (a new app and store) on the same save folder, asked by the same browser
    (``client``'s cookies)."""
    again = make_client(saves=SaveFolder(folder), store=store)
    again.cookies = client.cookies
    return again


def person_moves(client: TestClient, data: dict[str, Any], count: int) -> dict[str, Any]:
    for _ in range(count):
        if data["waiting"]:
            data = client.post(f"/api/games/{data['id']}/advance", json={}).json()
        data = client.post(f"/api/games/{data['id']}/act", json={"action": data["moves"][0]["id"],
                                                                 "step": data["step"]}).json()
    return data


def test_a_game_has_an_address_that_serves_the_page():
    client = make_client()
    data = client.post("/api/games", json={"game": "dice", "seats": [HUMAN, "random"]}).json()
    assert data["url"] == f"/games/{data['id']}"
    page = client.get(data["url"])
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert client.get("/api/info").json()["server"]


def test_a_persons_seats_are_held_by_the_browser_that_opened_the_game():
    client = make_client()
    data = client.post("/api/games", json={"game": "keltis", "seats": [HUMAN, "random"], "seed": 3}).json()
    key = data["id"]
    cookie = client.cookies.get(token_cookie(key))
    assert cookie and cookie not in str(data)  # the token is a cookie only, never in an answer
    other = TestClient(client.app, base_url=BASE_URL)  # another browser, with the game's address
    for method, path, body in (("GET", f"/api/games/{key}", None), ("GET", f"/api/games/{key}?seat=0", None),
                               ("GET", f"/api/games/{key}/analysis", None),
                               ("POST", f"/api/games/{key}/act", {"action": 0}),
                               ("POST", f"/api/games/{key}/advance", {}), ("POST", f"/api/games/{key}/save", None),
                               ("DELETE", f"/api/games/{key}", None)):
        reply = other.request(method, path, json=body)
        assert reply.status_code == 403 and str(key) in reply.json()["error"], (method, path, reply.text)
    forged = TestClient(client.app, base_url=BASE_URL, cookies={token_cookie(key): "guessed"})
    assert forged.get(f"/api/games/{key}").status_code == 403
    end = play_through(client, client.get(f"/api/games/{key}").json(), check=False)
    assert end["over"]
    shared = other.get(f"/api/games/{key}")  # once it is over, the address shows it to anyone
    assert shared.status_code == 200 and shared.json()["seed"] == 3 and shared.json()["yours"] is False
    assert client.get(f"/api/games/{key}").json()["yours"] is True
    assert other.delete(f"/api/games/{key}").status_code == 403


def test_a_second_click_or_a_stale_tab_plays_nothing_and_is_told_to_reload():
    client = make_client()
    data = client.post("/api/games", json={"game": "keltis", "seats": [HUMAN, HUMAN], "seed": 2}).json()
    key, move = data["id"], {"action": data["moves"][0]["id"], "seat": data["to_move"], "step": data["step"]}
    first = client.post(f"/api/games/{key}/act", json=move)
    assert first.status_code == 200 and first.json()["step"] == 1
    again = client.post(f"/api/games/{key}/act", json=move)  # the same click twice, or a tab still at step 0
    assert again.status_code == 409 and "the game has moved on" in again.json()["error"]
    assert client.get(f"/api/games/{key}").json()["step"] == 1


def test_a_game_in_progress_resumes_after_a_restart_as_the_seat_that_opened_it(tmp_path):
    folder = tmp_path / "saves"
    client = make_client(saves=SaveFolder(folder))
    data = client.post("/api/games", json={"game": "keltis", "players": 3, "seats": [HUMAN, "random", "heuristic"],
                                           "seed": 12}).json()
    key = data["id"]
    data = person_moves(client, data, 4)
    before = client.get(f"/api/games/{key}").json()
    kept = folder / LIVE_FOLDER / f"{key}.json"
    assert kept.is_file() and not list(folder.glob("*.json"))  # kept, not saved as a record
    again = restarted(client, folder)
    after = again.get(f"/api/games/{key}")
    assert after.status_code == 200
    assert after.json() == before  # the same position, seat, log and moves
    session = session_of(again, key)
    assert not hidden_leaks(after.json(), session)
    assert TestClient(again.app, base_url=BASE_URL).get(f"/api/games/{key}").status_code == 403
    end = play_through(again, after.json())
    assert end["over"] and end["seed"] == 12
    assert again.delete(f"/api/games/{key}").status_code == 200 and not kept.exists()
    assert restarted(again, folder).get(f"/api/games/{key}").status_code == 404


def test_a_replay_and_a_finished_game_are_open_again_after_a_restart(tmp_path):
    folder = tmp_path / "saves"
    client = make_client(saves=SaveFolder(folder))
    watch = client.post("/api/games", json={"game": "dice", "seats": ["random", "heuristic"], "seed": 4}).json()
    end = client.post(f"/api/games/{watch['id']}/advance", json={}).json()
    record = client.get(f"/api/games/{watch['id']}/record").json()
    replay = client.post("/api/replays/upload", json=record).json()
    assert replay["url"] == f"/games/{replay['id']}?step={replay['steps']}"
    position = client.get(f"/api/games/{replay['id']}?step=5&seat=1").json()
    assert position["url"] == f"/games/{replay['id']}?step=5"
    again = restarted(client, folder)
    shown = again.get(f"/api/games/{watch['id']}").json()
    assert shown.pop("yours") is True and shown == end
    assert again.get(f"/api/games/{replay['id']}?step=5&seat=1").json() == position


def test_an_expired_game_is_no_longer_kept(tmp_path):
    folder = tmp_path / "saves"
    now = [0.0]
    client = make_client(saves=SaveFolder(folder), store=SessionStore(4, 60.0, clock=lambda: now[0]))
    key = client.post("/api/games", json={"game": "dice", "seats": [HUMAN, "random"]}).json()["id"]
    assert (folder / LIVE_FOLDER / f"{key}.json").is_file()
    now[0] = 100.0
    assert client.get(f"/api/games/{key}").status_code == 404
    assert not (folder / LIVE_FOLDER / f"{key}.json").exists()


# ---------------------------------------------------------------------- share and export
def exported_data(text: str) -> dict[str, Any]:
    """The positions, moves and analyses a replay file holds."""
    import json

    start = text.index('<script type="application/json" id="replay-data">') + len(
        '<script type="application/json" id="replay-data">')
    return dict(json.loads(text[start:text.index("</script>", start)].replace("<\\/", "</")))


def test_a_finished_game_opens_as_a_replay_and_exports_one_html_file_with_its_analyses(tmp_path):
    import json
    import subprocess
    import sys

    from keltis_env.core.game import load_record

    client = make_client()
    data = client.post("/api/games", json={"game": "dice", "seats": [HUMAN, "random"], "seed": 5}).json()
    key = data["id"]
    assert client.get(f"/games/{key}/replay.html").status_code == 403  # a person plays: it names the deal
    assert client.post("/api/replays", json={"game": key}).status_code == 403
    end = play_through(client, data, check=False)
    record = client.get(f"/api/games/{key}/record").json()
    replay = client.post("/api/replays", json={"game": key}).json()
    assert replay["kind"] == "replay" and replay["steps"] == end["step"] and replay["source"] == f"game {key}"
    assert client.get(f"/api/games/{replay['id']}/analysis?step=3").status_code == 200
    exported = client.get(f"/games/{replay['id']}/replay.html")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/html")
    assert "attachment" in exported.headers["content-disposition"]
    held = exported_data(exported.text)
    loaded = load_record(record)
    states = loaded.states()
    assert len(held["positions"]) == len(states)
    assert [m["text"] for m in held["moves"]] == [loaded.action_to_string(a) for a in loaded.actions]
    assert held["positions"][-1]["scores"] == end["scores"] and held["seed"] == "5"
    assert set(held["analyses"]) == {"3"} and held["analyses"]["3"]["seat"] == states[3].current
    path = tmp_path / "game.json"
    path.write_text(json.dumps(record))
    out = tmp_path / "replay.html"
    done = subprocess.run([sys.executable, "-m", "keltis_env", "replay", str(path), "--html", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and "wrote the replay of" in done.stdout, done.stderr
    from keltis_env.web.export import replay_html

    assert out.read_text() == replay_html(load_record(record))  # the file the server exports, less the analyses
    assert exported_data(out.read_text())["positions"] == held["positions"]


# ---------------------------------------------------------------------- analysis that teaches
def test_a_replays_review_gives_the_policys_value_of_every_position_and_marks_every_move():
    from keltis_env.core.game import load_record

    client = make_client()
    watch = client.post("/api/games", json={"game": "dice", "players": 3, "seats": ["random", "heuristic", "random"],
                                            "seed": 8}).json()
    client.post(f"/api/games/{watch['id']}/advance", json={})
    record = load_record(client.get(f"/api/games/{watch['id']}/record").json())
    replay = client.post("/api/replays", json={"game": watch["id"]}).json()
    assert client.get(f"/api/games/{watch['id']}/review").status_code == 400  # a game: open its replay
    refused = client.get(f"/api/games/{replay['id']}/review?policy=random")
    assert refused.status_code == 400 and "ppo:policies/dice_3p.zip" in refused.json()["error"]
    review = client.get(f"/api/games/{replay['id']}/review").json()
    states = record.states()
    assert review["agent"] == "ppo:policies/dice_3p.zip" and "final" in review["value_meaning"]
    assert len(review["values"]) == len(states) and review["values"][-1] == [None] * 3
    assert all(isinstance(v, float) for row in review["values"][:-1] for v in row)
    assert len(review["moves"]) == len(record.actions)
    for k, move in enumerate(review["moves"]):
        seat = states[k].current
        assert move["seat"] == seat and move["played"] == record.action_to_string(record.actions[k])
        assert move["agrees"] == (move["played"] == move["choice"]) and 0 <= move["probability"] <= 1
        assert move["probability"] <= move["choice_probability"] + 1e-12
        if k + 1 < len(states) - 1:
            assert abs(move["lost"] - (review["values"][k][seat] - review["values"][k + 1][seat])) < 1e-9
    assert not all(m["agrees"] for m in review["moves"])  # random and heuristic seats differ from the policy
    assert all(m["search"] is None for m in review["moves"])  # no position analysed yet
    analysis = client.get(f"/api/games/{replay['id']}/analysis?step=0").json()
    assert "final" in analysis["policy"]["value_meaning"]
    first = client.get(f"/api/games/{replay['id']}/review").json()["moves"][0]["search"]
    chosen = next(m for m in analysis["search"]["moves"] if m["chosen"])
    played = next((m for m in analysis["search"]["moves"] if m["text"] == review["moves"][0]["played"]), None)
    assert first["choice"] == chosen["text"] and first["agrees"] == (chosen["text"] == review["moves"][0]["played"])
    if played is not None and played["samples"]:  # like against like: scores of survivors, else mean values
        key = "value" if played["kept"] else "mean"
        assert first["dropped"] == (not played["kept"]) and first["samples"] == played["samples"]
        assert abs(first["lost"] - (chosen[key] - played[key])) < 1e-9


def test_a_game_starts_from_a_replays_position_with_what_the_person_may_not_know_dealt_anew():
    client = make_client()
    watch = client.post("/api/games", json={"game": "keltis", "seats": ["random", "random"], "seed": 14}).json()
    client.post(f"/api/games/{watch['id']}/advance", json={})
    replay = client.post("/api/replays", json={"game": watch["id"]}).json()
    at = client.get(f"/api/games/{replay['id']}?step=20").json()
    seat = at["to_move"]
    seats = ["random", "random"]
    seats[seat] = HUMAN
    old = session_of(client, replay["id"]).states[20]
    dealt = []
    for _ in range(2):
        reply = client.post("/api/games", json={"seats": seats, "from": {"replay": replay["id"], "step": 20}})
        assert reply.status_code == 200, reply.text
        data = reply.json()
        session = session_of(client, data["id"])
        state = session.state
        assert data["kind"] == "play" and data["step"] == 0 and data["seed"] is None and not hidden_leaks(data, session)
        assert state.view(seat).hand == old.view(seat).hand and state.pos == old.pos
        assert state.scores() == old.scores() and data["to_move"] == seat
        dealt.append((sorted(state.hands[1 - seat]), list(state.deck)))
        assert client.get(f"/api/games/{data['id']}/record").status_code == 403  # it names the new deal
    assert dealt[0] != dealt[1] and (sorted(old.hands[1 - seat]), list(old.deck)) not in dealt
    first = {"replay": replay["id"], "step": 1}
    for body, status, words in (({"from": {"replay": replay["id"], "step": replay["steps"]}}, 409, "game is over"),
                                ({"from": {"replay": replay["id"]}}, 400, "from names a replay's position"),
                                ({"from": {"replay": watch["id"], "step": 1}}, 400, "not a replay"),
                                ({"from": first, "seed": 3}, 400, "has no seed"),
                                ({"from": first, "players": 3}, 400, "the position is of")):
        reply = client.post("/api/games", json=body)
        assert reply.status_code == status and words in reply.json()["error"], (body, reply.text)


def test_keltis_serve_restarted_with_the_same_save_dir_goes_on_with_the_game(tmp_path):
    import httpx
    from test_serve import ROOT, _serve, _stop

    saves = str(tmp_path / "saves")
    process, address = _serve(["--save-dir", saves], ROOT)
    try:
        browser = httpx.Client(base_url=address, timeout=60)
        data = browser.post("/api/games", json={"game": "dice", "seats": [HUMAN, "random"], "seed": 2}).json()
        data = person_moves(browser, data, 2)
        before = browser.get(f"/api/games/{data['id']}").json()
        port = address.rsplit(":", 1)[1].strip("/")
    finally:
        _stop(process)
    process, again = _serve(["--save-dir", saves, "--port", port], ROOT)
    try:
        assert again == address
        after = browser.get(f"/api/games/{data['id']}")
        assert after.status_code == 200 and after.json() == before
        assert httpx.get(f"{address}api/games/{data['id']}", timeout=60).status_code == 403  # another browser
        assert httpx.get(f"{address}api/info", headers={"host": "evil.example"}, timeout=60).status_code == 421
    finally:
        _stop(process)
