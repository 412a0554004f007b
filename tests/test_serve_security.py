"""``keltis serve`` against other sites and hostile agents (keltis_env/web/guard.py,
confine.py, workers.py): only requests addressed to the server (``Host``) from its own page
(``Origin``) with JSON bodies are served, and each refusal leaves nothing behind; random
deals and the agents' seeds tell nothing of each other; an agent named with ``--agent`` runs
in a process group of its own that cannot signal the server, and ends with everything it
started; idle games close on a timer with their workers; a shipped policy's first move in a
new server process is in time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
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

from test_serve import BASE_URL, agents, make_client, session_of
from test_serve_agents import running

from keltis_env.web.agents import HUMAN
from keltis_env.web.app import create_app
from keltis_env.web.confine import abi
from keltis_env.web.guard import allowed_hosts, machine_names, refusal
from keltis_env.web.sessions import MAX_CHOSEN_SEED, SEED_BITS, SessionStore, Settings

ROOT = Path(__file__).resolve().parents[1]
confinable = pytest.mark.skipif(abi() is None, reason="process confinement is for Linux on x86-64 and AArch64")


# ---------------------------------------------------------------------- who may ask
def test_a_request_addressed_to_another_host_is_refused_everywhere():
    client = make_client()
    for path in ("/", "/static/app.js", "/api/info", "/api/records"):
        assert client.get(path).status_code == 200
        for host in ("evil.example:8000", "127.0.0.1:9999", "localhost.evil.example:8000", ""):
            reply = client.get(path, headers={"host": host})
            assert reply.status_code == 421, (path, host)
            assert "answers only at its own address" in reply.json()["error"]
    assert client.get("/api/info", headers={"host": "localhost:8000"}).status_code == 200
    assert client.get("/api/info", headers={"host": "[::1]:8000"}).status_code == 200


def test_a_cross_site_request_makes_no_game_and_a_body_must_be_json():
    client = make_client()
    store = client.app.state.store  # type: ignore[attr-defined]
    game = {"game": "dice", "seats": ["random", "random"]}
    for headers, status, words in (
        ({"origin": "http://evil.example"}, 403, "a request from another site ('http://evil.example')"),
        ({"origin": "null"}, 403, "another site"),
        ({"origin": "http://127.0.0.1:9999"}, 403, "another site"),
        ({"sec-fetch-site": "cross-site"}, 403, "Sec-Fetch-Site: cross-site"),
        ({"sec-fetch-site": "same-site"}, 403, "Sec-Fetch-Site: same-site"),
    ):
        reply = client.post("/api/games", json=game, headers=headers)
        assert reply.status_code == status and words in reply.json()["error"], (headers, reply.text)
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        headers = {"content-type": kind} if kind else {}
        body = '{"game": "dice", "seats": ["random", "random"]}'
        reply = client.post("/api/games", content=body, headers=headers)
        assert reply.status_code == 415 and "Content-Type: application/json" in reply.json()["error"], kind
        upload = client.post("/api/replays/upload", content="{}", headers=headers)
        assert upload.status_code == 415, kind
    assert len(store) == 0, "a refused request left a game behind"
    same = client.post("/api/games", json=game, headers={"origin": "http://127.0.0.1:8000",
                                                         "sec-fetch-site": "same-origin"})
    assert same.status_code == 200 and len(store) == 1
    key = same.json()["id"]
    assert client.post(f"/api/games/{key}/save").status_code == 403  # an empty body needs no type (no save folder)


def test_the_server_answers_at_its_bound_address_and_the_local_names():
    hosts = allowed_hosts("127.0.0.1", 8123)
    assert {"127.0.0.1:8123", "localhost:8123", "[::1]:8123"} <= hosts and "127.0.0.1:8000" not in hosts
    assert "[::1]:80" in allowed_hosts("::1", 80) and "localhost" in allowed_hosts("::1", 80)
    assert "192.0.2.7:8000" in allowed_hosts("192.0.2.7", 8000)
    everywhere = allowed_hosts("0.0.0.0", 8000)  # every address: this machine's names and addresses too
    assert {f"{name.lower()}:8000" for name in machine_names()} <= everywhere and "localhost:8000" in everywhere
    assert refusal("GET", {"host": "LOCALHOST:8123"}, hosts) is None
    assert refusal("POST", {"host": "localhost:8123", "content-length": "0"}, hosts) is None
    status, message = refusal("GET", {"host": "x" * 500}, hosts) or (0, "")
    assert status == 421 and len(message) < 300


# ---------------------------------------------------------------------- seeds
def test_a_random_deal_comes_from_128_bits_and_a_chosen_seed_is_kept():
    client = make_client()
    seeds = set()
    for _ in range(4):
        data = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"]}).json()
        seeds.add(session_of(client, data["id"]).seed)
    assert SEED_BITS == 128 and len(seeds) == 4 and all(0 <= s < 2**128 for s in seeds)
    assert max(seeds) > 2**64  # all four below 2**64 has a chance of 2**-256
    chosen = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"], "seed": MAX_CHOSEN_SEED})
    assert session_of(client, chosen.json()["id"]).seed == MAX_CHOSEN_SEED


SEED_AGENT = '''
class TellsItsSeed:
    def __init__(self, seed):
        self.seed = seed

    def act(self, observation, action_mask):
        raise ValueError(f"my seed is {self.seed}")
'''


def test_agents_get_seeds_of_their_own_from_which_the_deal_cannot_be_rebuilt(tmp_path):
    path = tmp_path / "seed_agent.py"
    path.write_text(SEED_AGENT)
    spec = f"py:{path}:TellsItsSeed"
    client = make_client(spec)
    told = []
    for _ in range(2):  # the same chosen deal twice
        data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [spec, "random"],
                                               "seed": 7}).json()
        session = session_of(client, data["id"])
        bundled = session.bots[1].bot
        end = client.post(f"/api/games/{data['id']}/advance", json={}).json()
        told.append(int(re.search(r"my seed is (\d+)", end["message"]).group(1)))
        assert getattr(bundled, "seed", None) not in (7, 701)
    assert told[0] != told[1] and not {7, 700, 701} & set(told)


# ---------------------------------------------------------------------- hostile agents
HOSTILE_AGENTS = '''
import os
import signal
import subprocess
import sys
import time

import numpy as np

PIDS = {pids!r}


class SignalsTheServer:
    """Tries every way to signal the server's process, then answers if all were refused."""

    def act(self, observation, action_mask):
        server = os.getppid()
        refused = []
        for name, attack in (("kill", lambda: os.kill(server, signal.SIGTERM)),
                             ("killpg", lambda: os.killpg(os.getpgid(server), signal.SIGTERM)),
                             ("kill SIGKILL", lambda: os.kill(server, signal.SIGKILL)),
                             ("setsid", os.setsid)):
            try:
                attack()
            except PermissionError:
                refused.append(name)
        raise ValueError("refused: " + ", ".join(refused))


class StartsAChild:
    """Starts a long-lived child (which tries to leave the group), notes its pid, then hangs."""

    def act(self, observation, action_mask):
        child = subprocess.Popen([sys.executable, "-c", "import os, time\\n"
                                  "try:\\n    os.setsid()\\nexcept PermissionError:\\n    pass\\n"
                                  "time.sleep(600)"])
        with open(PIDS, "a") as out:
            out.write(f"{{child.pid}}\\n")
        time.sleep(600)
        return int(np.flatnonzero(action_mask)[0])


class StartsAChildAndDies(StartsAChild):
    def act(self, observation, action_mask):
        child = subprocess.Popen(["sleep", "600"])
        with open(PIDS, "a") as out:
            out.write(f"{{child.pid}}\\n")
        os._exit(3)
'''


@pytest.fixture
def hostile(tmp_path) -> tuple[Path, Path]:
    pids = tmp_path / "children.txt"
    path = tmp_path / "hostile_agents.py"
    path.write_text(textwrap.dedent(HOSTILE_AGENTS.format(pids=str(pids))))
    return path, pids


def _children(pids: Path, seconds: float = 30.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def _ended(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@confinable
def test_an_agent_that_signals_the_server_is_refused_and_the_server_goes_on(hostile):
    path, _ = hostile
    spec = f"py:{path}:SignalsTheServer"
    client = make_client(spec)
    data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [spec, "random"]}).json()
    end = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    assert end["over"] and "raised ValueError: refused: kill, killpg, kill SIGKILL, setsid" in end["message"]
    other = client.post("/api/games", json={"game": "dice", "seats": ["random", "random"]}).json()
    assert client.post(f"/api/games/{other['id']}/advance", json={}).json()["over"]


@confinable
@pytest.mark.parametrize("how", ["closed", "timed out", "died"])
def test_what_an_agent_starts_ends_with_its_worker(hostile, how):
    path, pids = hostile
    spec = f"py:{path}:{'StartsAChildAndDies' if how == 'died' else 'StartsAChild'}"
    client = make_client(spec, move_seconds=None if how == "closed" else 8.0)
    data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [spec, "random"]}).json()
    session = session_of(client, data["id"])
    worker = session.worker.pid
    if how == "closed":
        mover = threading.Thread(target=lambda: client.post(f"/api/games/{data['id']}/advance", json={}))
        mover.start()
        (child,) = _children(pids)
        assert running(child) and os.getpgid(child) == worker  # in the worker's group, setsid refused
        assert client.delete(f"/api/games/{data['id']}").status_code == 200
        mover.join(30)
    else:
        end = client.post(f"/api/games/{data['id']}/advance", json={}).json()
        assert end["over"] and ("loses the game on time" if how == "timed out" else "exit status 3") in end["message"]
        (child,) = _children(pids)
    assert _ended(child), f"the agent's child outlived its worker ({how})"
    assert _ended(worker)


def test_an_idle_game_closes_on_the_timer_with_its_worker(tmp_path):
    from test_serve_agents import spec as misbehaving

    fine = misbehaving("Fine")
    store = SessionStore(8, idle_seconds=0.5)
    app = create_app(Settings(agents(fine), 5.0, 10.0), store)
    with TestClient(app, base_url=BASE_URL) as client:  # the app's lifespan runs its timer
        data = client.post("/api/games", json={"game": "dice", "players": 2, "seats": [fine, HUMAN]}).json()
        worker = store._sessions[data["id"]].worker.pid  # type: ignore[union-attr]
        assert running(worker)
        deadline = time.monotonic() + 10
        while len(store) and time.monotonic() < deadline:  # no request meanwhile
            time.sleep(0.1)
        assert len(store) == 0 and _ended(worker)
        assert client.get(f"/api/games/{data['id']}").status_code == 404


# ---------------------------------------------------------------------- the first move
FIRST_MOVE = """
import time, warnings
from fastapi.testclient import TestClient
from keltis_env.web.agents import Agents
from keltis_env.web.app import create_app
from keltis_env.web.sessions import SessionStore, Settings

client = TestClient(create_app(Settings(Agents([]), 1.0, 10.0), SessionStore(8, 600.0)),
                    base_url="http://127.0.0.1:8000")
for game in ("keltis", "dice"):
    policy = f"ppo:policies/{game}_2p.zip"
    data = client.post("/api/games", json={"game": game, "seats": [policy, "random"], "seed": 1}).json()
    data = client.post(f"/api/games/{data['id']}/advance", json={}).json()
    print(game, data["over"], data["end"], data["message"])
"""


def test_the_shipped_policys_first_move_in_a_new_server_process_is_in_time_under_a_1_s_limit():
    done = subprocess.run([sys.executable, "-c", FIRST_MOVE], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    lines: list[Any] = done.stdout.split("\n")[:2]
    for game, line in zip(("keltis", "dice"), lines, strict=True):
        assert line.startswith(f"{game} True") and line.endswith("None") and "time" not in line, done.stdout
