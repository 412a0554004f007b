"""A replay's search of every move (``/api/games/ID/search``): a job on the server that
searches every decision of the game, every seat's, with the analysis's search, while the
page asks how far it has come. Its answers are the analysis's at each position (the same
search, budget and seed), they stay with the replay (a reload, another page, a restart of
the server, the replay file, ``keltis replay --html --search``), and the job is bounded:
one per replay, a cap per server, cancellable, refused in JSON when asked wrongly.

The searches here are small (a few rollouts per position), so each whole game takes a
second or two; a slow search (many rollouts) stands in for a job still running."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="keltis serve needs the web extra (pip install 'keltis-rl[web]')")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette's notice about httpx's successor
    from fastapi.testclient import TestClient

from test_serve import BASE_URL, agents, session_of
from test_serve_lasting import exported_data

from keltis_env.web.app import create_app
from keltis_env.web.records import SaveFolder
from keltis_env.web.sessions import SessionStore, Settings

#: rollouts per position: small, so that a whole game is searched in a second or two
SMALL = 16
#: rollouts per position of a search that is still running when the test looks (the dice game in Python)
SLOW = 2048
#: how long a test waits for a job to finish (seconds)
WAIT = 120.0


def make_client(iterations: int = SMALL, jobs: int = 2, saves: SaveFolder | None = None,
                store: SessionStore | None = None) -> TestClient:
    settings = Settings(agents(), 5.0, analysis_seconds=30.0, search_iterations=iterations, search_jobs=jobs)
    return TestClient(create_app(settings, store or SessionStore(16, 1800.0), saves=saves), base_url=BASE_URL)


def finished_replay(client: TestClient, game: str = "dice", seed: int = 4) -> dict[str, Any]:
    """A replay (held by ``client``) of a finished game between random agents."""
    watch = client.post("/api/games", json={"game": game, "players": 2, "seats": ["random", "random"],
                                            "seed": seed}).json()
    client.post(f"/api/games/{watch['id']}/advance", json={})
    replay = client.post("/api/replays", json={"game": watch["id"]})
    assert replay.status_code == 200, replay.text
    return dict(replay.json())


def finished(client: TestClient, key: str) -> dict[str, Any]:
    """The job's status once it no longer runs; ``done`` never goes back on the way."""
    deadline = time.monotonic() + WAIT
    seen = []
    while True:
        status = client.get(f"/api/games/{key}/search").json()
        seen.append(status["done"])
        assert 0 <= status["done"] <= status["total"]
        if status["state"] != "running":
            assert seen == sorted(seen), f"the progress went back: {seen}"
            return dict(status)
        assert time.monotonic() < deadline, f"the search did not finish in {WAIT} s: {status['done']} done"
        time.sleep(0.05)


@pytest.mark.parametrize("game", ["dice", "keltis"])
def test_the_search_of_every_move_runs_as_a_job_and_gives_each_position_the_analysiss_answer(game):
    from keltis_env.core.game import load_record
    from keltis_env.web.analysis import search_mark

    client = make_client()
    replay = finished_replay(client, game)
    key = replay["id"]
    before = client.get(f"/api/games/{key}/search").json()
    assert before["state"] == "idle" and before["done"] == 0 and before["total"] == replay["steps"]
    assert all(m["search"] is None for m in before["marks"])
    started = client.post(f"/api/games/{key}/search", json={})
    assert started.status_code == 200 and started.json()["state"] in ("running", "done")
    status = finished(client, key)
    assert status["state"] == "done" and status["done"] == status["total"] == replay["steps"]
    assert status["message"] is None and status["agent"] == client.app.state.settings.search_spec(game)
    record = load_record(client.get(f"/api/games/{key}/record").json())
    states = record.states()
    assert [m["played"] for m in status["marks"]] == [record.action_to_string(a) for a in record.actions]
    assert [m["seat"] for m in status["marks"]] == [states[k].current for k in range(len(record.actions))]
    marks = [m["search"] for m in status["marks"]]
    assert all(m is not None and m["agrees"] == (m["choice"] == played["played"])
               for m, played in zip(marks, status["marks"], strict=True))
    assert not all(m["agrees"] for m in marks)  # random agents: the search prefers other moves
    assert any(m["lost"] is not None and m["lost"] > 0 for m in marks)
    # a survivor of the halving never beats the choice's score; a dropped move is measured by its mean
    assert all(m["lost"] >= 0 for m in marks if m["lost"] is not None and not m["dropped"])
    assert all(m["samples"] > 0 for m in marks if m["lost"] is not None)
    # a second replay of the same game, never searched: its analysis of a position is the job's answer there
    other = client.post("/api/replays", json={"game": replay["source"].removeprefix("game ")}).json()
    searched = session_of(client, key).searches
    for k in (0, len(marks) // 2, len(marks) - 1):
        analysis = client.get(f"/api/games/{other['id']}/analysis?step={k}").json()
        assert analysis["search"] == searched[k]
        assert search_mark(analysis["search"], status["marks"][k]["played"]) == marks[k]
    # the review marks every move against the policy's choice and the search's
    review = client.get(f"/api/games/{key}/review").json()
    assert [m["search"] for m in review["moves"]] == marks


def test_the_answers_stay_with_the_replay_its_file_and_a_restart_and_keltis_replay_html_search_gives_them_too(
        tmp_path):
    import json
    import subprocess
    import sys

    from keltis_env.web.analysis import SEARCH_BOT

    client = make_client(saves=SaveFolder(tmp_path / "saves"))
    replay = finished_replay(client, seed=6)
    key = replay["id"]
    client.post(f"/api/games/{key}/search", json={})
    status = finished(client, key)
    session = session_of(client, key)
    job = session.job
    # asked again, by this page or one that only looks: nothing is searched again
    again = client.post(f"/api/games/{key}/search", json={}).json()
    assert again["state"] == "done" and session.job is job
    looking = TestClient(client.app, base_url=BASE_URL)
    assert looking.get(f"/api/games/{key}/search").json() == status
    assert looking.get(f"/api/games/{key}/analysis?step=2").json()["search"] == session.searches[2]
    # a restart of the server on the same save folder opens the replay with its answers
    restarted = make_client(saves=SaveFolder(tmp_path / "saves"))
    restarted.cookies = client.cookies
    assert restarted.get(f"/api/games/{key}/search").json() == status
    assert session_of(restarted, key).searches == session.searches
    # the replay file holds every answer and marks every move
    held = exported_data(client.get(f"/games/{key}/replay.html").text)
    assert [m["search"] for m in held["moves"]] == [m["search"] for m in status["marks"]]
    assert held["searches"] == {str(k): v for k, v in sorted(session.searches.items())}
    # keltis replay --html --search: the same search at the same budget and seed, the same marks
    path = tmp_path / "game.json"
    path.write_text(json.dumps(client.get(f"/api/games/{key}/record").json()))
    out = tmp_path / "replay.html"
    done = subprocess.run([sys.executable, "-m", "keltis_env", "replay", str(path), "--html", str(out), "--search",
                           "--search-iterations", str(SMALL)], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert f"the search ({SEARCH_BOT}:iterations={SMALL}) at {status['total']} positions took" in done.stdout
    written = exported_data(out.read_text())
    assert written["moves"] == held["moves"] and written["searches"] == held["searches"]
    refused = subprocess.run([sys.executable, "-m", "keltis_env", "replay", str(path), "--search"],
                             capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert refused.returncode == 2 and "--html" in refused.stderr


def test_a_job_is_cancelled_between_two_positions_and_resumes_where_it_stopped():
    client = make_client(iterations=SLOW)
    replay = finished_replay(client)
    key = replay["id"]
    assert client.post(f"/api/games/{key}/search", json={}).json()["state"] == "running"
    cancelled = client.delete(f"/api/games/{key}/search")
    assert cancelled.status_code == 200
    status = cancelled.json()
    assert status["state"] == "idle" and status["done"] < status["total"]
    assert status["message"] == f"cancelled after {status['done']} of {status['total']} positions"
    assert client.app.state.jobs.running == 0  # its slot is free again
    assert client.delete(f"/api/games/{key}/search").status_code == 409  # nothing runs now
    done = status["done"]
    assert client.post(f"/api/games/{key}/search", json={}).json()["done"] >= done  # nothing is searched twice
    client.delete(f"/api/games/{key}/search")
    # closing the replay stops its job
    client.post(f"/api/games/{key}/search", json={})
    job = session_of(client, key).job
    client.delete(f"/api/games/{key}")
    deadline = time.monotonic() + WAIT
    while job.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.app.state.jobs.running == 0


def test_one_job_per_replay_and_at_most_the_servers_cap_at_once():
    client = make_client(iterations=SLOW, jobs=1)
    first, second = finished_replay(client, seed=1), finished_replay(client, seed=2)
    client.post(f"/api/games/{first['id']}/search", json={})
    job = session_of(client, first["id"]).job
    assert client.post(f"/api/games/{first['id']}/search", json={}).json()["state"] == "running"
    assert session_of(client, first["id"]).job is job  # the same job, not a second one
    refused = client.post(f"/api/games/{second['id']}/search", json={})
    assert refused.status_code == 429 and "1 whole-game searches run at once" in refused.json()["error"]
    assert client.get(f"/api/games/{second['id']}/search").json()["state"] == "idle"
    client.delete(f"/api/games/{first['id']}/search")
    assert client.post(f"/api/games/{second['id']}/search", json={}).json()["state"] == "running"
    client.delete(f"/api/games/{second['id']}/search")


def test_a_bad_request_for_a_search_is_refused_in_json():
    client = make_client()
    replay = finished_replay(client)
    key = replay["id"]
    game = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"], "seed": 1}).json()
    cases = [
        (client.post(f"/api/games/{key}/search", json={"iterations": 100000}), 400, "unknown field"),
        (client.post(f"/api/games/{key}/search", json=[1]), 400, "JSON object"),
        (client.post(f"/api/games/{key}/search", content=b"{", headers={"content-type": "application/json"}),
         400, "not JSON"),
        (client.post(f"/api/games/{key}/search", content=b"{}", headers={"content-type": "text/plain"}), 415,
         "application/json"),
        (client.post(f"/api/games/{game['id']}/search", json={}), 400, "not a replay"),
        (client.get(f"/api/games/{game['id']}/search"), 400, "not a replay"),
        (client.post("/api/games/nosuchgame/search", json={}), 404, "unknown game"),
        (client.delete(f"/api/games/{key}/search"), 409, "no search"),
        (TestClient(client.app, base_url=BASE_URL).post(f"/api/games/{key}/search", json={}), 403,
         "only the browser that opened"),
        (TestClient(client.app, base_url=BASE_URL).delete(f"/api/games/{key}/search"), 403,
         "only the browser that opened"),
    ]
    for response, status, words in cases:
        assert response.status_code == status, (response.status_code, response.text)
        assert words in response.json()["error"]
    assert session_of(client, key).job is None and client.app.state.jobs.running == 0


# ---------------------------------------------------------------------- in the page
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's chromium under Playwright, as tests/test_serve_browser.py drives it (or a skip)."""
    from test_serve_browser import CHROMIUM, CHROMIUM_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def small_server(chromium: Any, tmp_path_factory: Any) -> Iterator[Any]:
    from test_serve_browser import Server

    serving = Server([], tmp_path_factory.mktemp("review"), search_iterations=SMALL)
    yield serving
    serving.stop()


def test_the_page_searches_every_move_with_one_click_and_marks_each_one(chromium, small_server, tmp_path):
    from test_serve_browser import LOG_SHOWN, WAIT_MS, Watched, write_record

    watched = Watched(chromium, small_server)
    p = watched.page
    try:
        p.click("#tab-replay")
        p.set_input_files("#upload", str(write_record(tmp_path, game="dice", players=2, seed=3)))
        p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
        steps = watched.data()["steps"]
        assert p.locator("#log .search-note").count() == 0
        p.click("#search-game")
        p.wait_for_function("() => S.search && S.search.data.state === 'done'", timeout=WAIT_MS)
        assert f"{steps} of {steps} positions" in p.inner_text("#search-progress")
        assert p.is_hidden("#search-game") and p.is_hidden("#search-cancel")

        def marked() -> list[tuple[int, str, str]]:
            return [(int(li["step"]), li["cls"], li["note"]) for li in p.eval_on_selector_all(
                "#log li", "els => els.map(e => ({step: e.value, cls: e.className, "
                           "note: (e.querySelector('.search-note') || {}).textContent || ''}))")]

        seen = {}
        for step in (steps, min(steps, LOG_SHOWN)):  # the moves list shows the last moves up to the position
            p.eval_on_selector("#scrub", "(e, k) => { e.value = String(k); e.dispatchEvent(new Event('change')); }",
                               step)
            p.wait_for_function(f"() => S.data.step === {step}", timeout=WAIT_MS)
            seen.update({k: (cls, note) for k, cls, note in marked()})
        assert sorted(seen) == list(range(1, steps + 1))  # every move, each with its mark
        assert all(cls in ("search-agrees", "search-differs") and note for cls, note in seen.values())
        assert any("lost" in note and "points" in note for _, note in seen.values())
        p.reload()  # the answers stay with the replay: the page shows them again, nothing searched anew
        p.wait_for_function("() => S.search && S.search.data.state === 'done'", timeout=WAIT_MS)
        assert p.locator("#log .search-note").count() == p.locator("#log li").count() > 0
        assert not watched.errors, watched.errors
        # the replay file, offline: every move with its mark, and a searched position's answer
        exported = p.request.get(f"{small_server.url}games/{watched.data()['id']}/replay.html").text()
        p.route("**/*", lambda route: route.abort())  # nothing from a server
        p.set_content(exported)
        assert p.locator("#log li").count() == steps == p.locator("#log li .search-note").count()
        p.keyboard.press("Home")
        assert "Search (ismcts:" in p.inner_text("#analysis")
    finally:
        watched.close()
