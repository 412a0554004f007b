"""``keltis serve`` plays the agents named with ``--agent`` in a worker process per game
(keltis_env/web/workers.py): an agent that kills its process, crashes, hangs, ignores the
interruption of its move, raises or cannot be made ends only its own game, with a message
naming it, its seat and what happened; its process is never left behind, and the server
answers other requests meanwhile. The misbehaving agents live in tests/misbehaving_agents.py
and tests/crashing_agents.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
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

from keltis_env.web.agents import HUMAN, Agents
from keltis_env.web.app import create_app
from keltis_env.web.sessions import SessionStore, Settings

HERE = Path(__file__).resolve().parent
#: the address the test clients ask at: the app's default, 127.0.0.1 port 8000
BASE_URL = "http://127.0.0.1:8000"
ROOT = HERE.parent


def spec(name: str) -> str:
    """The ``py:`` spec of a misbehaving agent by its class name."""
    where = "crashing_agents.py" if name in ("Segfaults", "RaisesWhenMade", "DiesWhenMade") else "misbehaving_agents.py"
    return f"py:{HERE / where}:{name}"


def client_for(*names: str, move_seconds: float | None = 1.0) -> TestClient:
    agents = Agents([spec(n) for n in names])
    return TestClient(create_app(Settings(agents, move_seconds, 10.0), SessionStore(16, 1800.0)), base_url=BASE_URL)


def worker_processes() -> set[int]:
    """The live (not zombie) worker processes this process started (``spawn``'s children)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"spawn_main" in cmdline:
            found.add(int(entry.name))
    return found


def gone(pid: int | None, seconds: float = 10.0) -> bool:
    """``pid`` has ended and been reaped (or ends within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while pid is not None and pid in worker_processes():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def agent_game(client: TestClient, name: str, game: str = "dice") -> tuple[dict[str, Any], Any]:
    """A new game of ``name`` (at seat 0) against ``random``, and its session."""
    data = client.post("/api/games", json={"game": game, "players": 2, "seats": [spec(name), "random"],
                                           "seed": 3}).json()
    return data, client.app.state.store.get(data["id"])  # type: ignore[attr-defined]


def other_game_finishes(client: TestClient) -> bool:
    other = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"]}).json()
    return bool(client.post(f"/api/games/{other['id']}/advance", json={}).json()["over"])


@pytest.mark.parametrize(("name", "what"), [
    ("Dies", "failed: its process ended (exit status 7) while it decided"),
    ("Segfaults", "failed: its process was killed by SIGSEGV while it decided"),
    ("Exits", "called sys.exit(0)"),
    ("RaisesHuge", "raised ValueError: boom boom"),
    ("RaisesUnpicklable", "raised TwoArgumentError: 1/2"),
    ("HostileAnswer", "chose an illegal action"),
])
def test_an_agent_that_kills_its_process_or_raises_ends_only_its_own_game(name, what):
    client = client_for(name)
    data, session = agent_game(client, name)
    pid = session.worker.pid
    assert pid in worker_processes() and data["waiting"]
    end = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert end["over"] and end["message"].startswith(f"player 0 ({spec(name)}) ")
    assert what in end["message"] and end["message"].endswith("the game ends here"), end["message"]
    assert gone(pid), "the agent's worker process was left behind"
    assert other_game_finishes(client) and client.get("/api/info").status_code == 200


@pytest.mark.parametrize("name", ["Sleeps", "IgnoresTheLimit"])
def test_an_agent_that_hangs_is_killed_at_the_move_limit_while_the_server_answers_others(name):
    client = client_for(name, move_seconds=4.0)
    data, session = agent_game(client, name)
    pid = session.worker.pid
    box: dict[str, Any] = {}
    waiting = threading.Thread(target=lambda: box.update(
        end=client.post(f"/api/games/{data['id']}/advance", json={}).json()))
    t0 = time.monotonic()
    waiting.start()
    time.sleep(0.5)
    assert client.get("/api/info").status_code == 200 and other_game_finishes(client)
    assert waiting.is_alive() and pid in worker_processes(), "the other requests were not served meanwhile"
    assert client.get(f"/api/games/{data['id']}").status_code == 409  # busy: its agent is deciding
    waiting.join(60)
    end = box["end"]
    assert end["over"] and time.monotonic() - t0 < 4.0 + 10.0
    assert end["message"].startswith(f"player 0 ({spec(name)}) took ") and "over the limit of 4 s" in end["message"]
    assert end["message"].endswith("it loses the game on time; its process was stopped"), end["message"]
    assert gone(pid, 1.0), "the hanging agent's worker process was left behind"


def test_closing_a_game_stops_its_agents_process_even_without_a_move_limit():
    client = client_for("Sleeps", move_seconds=None)
    data, session = agent_game(client, "Sleeps")
    pid = session.worker.pid
    box: dict[str, Any] = {}
    waiting = threading.Thread(target=lambda: box.update(
        end=client.post(f"/api/games/{data['id']}/advance", json={}).json()))
    waiting.start()
    time.sleep(0.5)
    assert client.delete(f"/api/games/{data['id']}").status_code == 200
    waiting.join(30)
    assert not waiting.is_alive() and gone(pid, 1.0)
    assert "its process was stopped (the game was closed) while it decided" in box["end"]["message"]


@pytest.mark.parametrize(("name", "what"), [
    ("RaisesWhenMade", "could not be made for the game: raised ExternalAgentError: agent spec"),
    ("DiesWhenMade", "could not be made for the game: its process ended (exit status 5) while its agents were made"),
])
def test_an_agent_that_cannot_be_made_in_its_process_ends_its_game_at_the_start(name, what):
    client = client_for(name)
    data = client.post("/api/games", json={"game": "keltis", "players": 3,
                                           "seats": [HUMAN, "random", spec(name)]}).json()
    assert data["over"] and data["message"].startswith(f"player 2 ({spec(name)}) {what}"), data["message"]
    assert data["message"].endswith("; the game ends here") and "\n" not in data["message"]
    assert gone(client.app.state.store.get(data["id"]).worker.pid)  # type: ignore[attr-defined]
    assert other_game_finishes(client)


def test_a_well_behaved_agent_plays_whole_games_in_its_process_and_the_bundled_ones_in_the_servers():
    client = client_for("Fine")
    data, session = agent_game(client, "Fine", game="keltis")
    assert session.worker is not None and set(session.worker.agents) == {0}
    end = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert end["over"] and end["message"] is None and end["end"] != "time"
    assert gone(session.worker.pid)  # the game is over: its worker too
    bundled = client.post("/api/games", json={"game": "dice", "seats": [HUMAN, "heuristic"]}).json()
    assert client.app.state.store.get(bundled["id"]).worker is None  # type: ignore[attr-defined]


def test_the_servers_agent_processes_stop_with_the_server():
    app = create_app(Settings(Agents([spec("Fine")]), 1.0, 10.0), SessionStore(16, 1800.0))
    with TestClient(app, base_url=BASE_URL) as client:  # the app's lifespan: started, then stopped
        data = client.post("/api/games", json={"game": "keltis", "seats": [HUMAN, spec("Fine")]}).json()
        pid = app.state.store.get(data["id"]).worker.pid
        assert pid in worker_processes()
    assert gone(pid)


def test_an_agents_process_ends_by_itself_when_the_server_is_killed():
    code = f"""
import os, sys
from keltis_env.web.workers import AgentWorker
if __name__ == "__main__":
    worker = AgentWorker("dice", 2, {{0: ({spec("Sleeps")!r}, 1)}})
    worker.start()
    print(worker.pid, flush=True)
    os._exit(0)  # no chance to stop the worker
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(pid), "the agent's process outlived the server"


def running(pid: int) -> bool:
    """``pid`` runs (a zombie left for a parent that does not reap it has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
