"""``keltis serve``'s page in a real browser: Debian's Chromium (``/usr/bin/chromium``)
driven by Playwright, headless, against the app served by uvicorn on a free port in a
thread of this process (so the tests can read the server's sessions for the truth).

They click through whole games against ``random`` in both games (and a hot-seat game with its
hand-over screen), watch agents with pause and step, replay a record forward and back, ask
for an analysis and bring about each error the page can meet. Every API response the page
gets while a person plays is checked before the page sees it, and the page itself after
every move: it never holds a hidden card of another seat.

Where Chromium or Playwright is missing they are skipped with a one-line reason; under
``CI=true`` that is a failure. Nothing is written into the repository (records and uploads
live in a temporary folder). ``python tests/test_serve_browser.py PICTURE`` (``make
screenshots``) drives the same browser to refresh the picture in ``docs/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
#: what a closed network and a root user need: no sandbox (root), no background requests
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-component-update", "--disable-default-apps", "--disable-sync", "--no-first-run",
                 "--metrics-recording-only"]
#: how long the page may take to answer a click (agents move between two of the person's moves)
WAIT_MS = 30_000
#: the moves the page's moves list shows: the last ones up to the position shown (app.js, drawLog)
LOG_SHOWN = 60

RAISING_AGENT = '''
class Raises:
    def act(self, observation, action_mask):
        raise ValueError("my agent is broken")
'''


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    for module in ("playwright", "fastapi", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            return f"the Python package {module} is missing (pip install 'keltis-rl[web,dev]')"
    return None


def require_browser() -> None:
    """Skip with the reason where the browser tests cannot run; under ``CI=true``, fail."""
    reason = missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the browser tests must run in CI: {reason}")
        pytest.skip(reason)


def test_a_missing_browser_skips_the_tests_but_fails_them_under_ci(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", "/no/such/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="/no/such/chromium is missing"):
        require_browser()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run in CI"):
        require_browser()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Server:
    """The app under uvicorn in a daemon thread, on a free port of 127.0.0.1."""

    def __init__(self, specs: list[str], records: Path, move_seconds: float = 5.0, port: int | None = None,
                 saves: Path | None = None, search_iterations: int = 64) -> None:
        import uvicorn

        from keltis_env.web.agents import Agents
        from keltis_env.web.app import create_app
        from keltis_env.web.guard import allowed_hosts
        from keltis_env.web.records import RecordFiles, SaveFolder
        from keltis_env.web.sessions import SessionStore, Settings

        self.saves = saves or records / "saves"
        if port is None:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        self.port = port
        settings = Settings(Agents(specs), move_seconds, 30.0, search_iterations=search_iterations)
        self.app = create_app(settings, SessionStore(64, 1800.0),
                              RecordFiles([records]), SaveFolder(self.saves), allowed_hosts("127.0.0.1", self.port))
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}/"

    def session(self, key: str) -> Any:
        return self.app.state.store.get(key)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def write_record(folder: Path, game: str = "keltis", players: int = 3, seed: int = 5) -> Path:
    """A finished game of random agents as a record file in ``folder``."""
    from keltis_env.bots import make_bot
    from keltis_env.core.game import get_game
    from keltis_env.core.match import play_game

    bots = [make_bot("random", seed=p, game=game, num_players=players) for p in range(players)]
    _, result = play_game(game, bots, seed, record=True)
    descriptor = get_game(game)
    record = descriptor.record_cls(config=descriptor.make_config(num_players=players), seed=seed,
                                   actions=list(result.actions), players=["random"] * players)
    path = folder / f"{game}-{seed}.json"
    path.write_text(json.dumps(record.to_dict()))
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("serve")
    write_record(path)
    (path / "my_agents.py").write_text(RAISING_AGENT)
    return path


@pytest.fixture(scope="module")
def server(browser, folder) -> Iterator[Server]:
    serving = Server([f"py:{folder / 'my_agents.py'}:Raises"], folder)
    yield serving
    serving.stop()


class Watched:
    """A page whose every API response about a game (its record and its refusals
    included) is checked, before the page gets it, for what a person may not see
    (:func:`test_serve.hidden_leaks`)."""

    def __init__(self, browser: Any, server: Server) -> None:
        from test_serve import hidden_leaks

        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.leaks: list[str] = []
        self.checked = 0
        self.downloads: list[Any] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("download", lambda download: self.downloads.append(download))

        def check(route: Any) -> None:
            from playwright.sync_api import Error

            try:
                response = route.fetch()
            except Error:  # the server is gone (or the page is closing): the page's request fails
                with contextlib.suppress(Error):
                    route.abort()
                return
            try:
                body = response.json()
            except Exception:  # not JSON: nothing the page could read as a game
                body = None
            path = route.request.url.split("?")[0]
            if "/api/games" in path and isinstance(body, dict):
                key = body.get("id") or path.partition("/api/games/")[2].split("/")[0]
                try:
                    session = server.session(key)
                except Exception:
                    session = None
                if session is not None and getattr(session, "private", False):
                    self.checked += 1
                    self.leaks += hidden_leaks(body, session)
            try:
                route.fulfill(response=response)
            except Error:
                return

        self.page.route("**/api/**", check)
        self.page.goto(server.url)
        self.page.wait_for_selector("#seat-1")

    def data(self) -> Any:
        return self.page.evaluate("() => S.data")

    def error(self) -> str:
        return str(self.page.inner_text("#error"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def page(browser, server) -> Iterator[Watched]:
    watched = Watched(browser, server)
    yield watched
    assert not watched.errors, f"the page raised: {watched.errors}"
    assert not watched.leaks, f"an API response showed hidden information: {watched.leaks[:5]}"
    watched.close()


def dom_leaks(watched: Watched, server: Server) -> list[str]:
    """What the page's DOM holds beyond what the shown seat may know: another hand, or more
    copies of a card than that seat's hand, the rows and the discard piles' tops show."""
    seen = watched.page.evaluate("""() => ({
        data: S.data,
        hands: [...document.querySelectorAll('.hand')].map(e => e.dataset.seat),
        cards: [...document.querySelectorAll('[data-card]')].map(e => Number(e.dataset.card)),
        own: [...document.querySelectorAll('.hand [data-card]')].map(e => Number(e.dataset.card)),
        json: document.documentElement.outerHTML.includes('"hands":'),
    })""")
    state = server.session(seen["data"]["id"]).state
    seat = seen["data"]["viewer"]
    problems = [f"a hand of seat {h} is shown to seat {seat}" for h in seen["hands"] if h != str(seat)]
    if seen["json"]:
        problems.append("the page's text holds every hand")
    if not hasattr(state, "hands") or not isinstance(seat, int):
        return problems
    view = state.view(seat)
    allowed = Counter(view.hand)
    for player_rows in view.rows:
        for colour, row in enumerate(player_rows):
            allowed.update(colour * 11 + v for v in row)
    allowed.update(colour * 11 + pile[-1] for colour, pile in enumerate(view.discards) if pile)
    problems += [f"card {k} is shown {n} times, seat {seat} may see {allowed[k]}"
                 for k, n in Counter(seen["cards"]).items() if n > allowed[k]]
    if sorted(seen["own"]) != sorted(view.hand):
        problems.append(f"the hand shown {sorted(seen['own'])} is not seat {seat}'s {sorted(view.hand)}")
    return problems


def start(watched: Watched, game: str, players: int, seats: list[str], seed: int | None = None) -> None:
    page = watched.page
    page.select_option("#game", game)
    page.select_option("#players", str(players))
    for p, name in enumerate(seats):
        page.select_option(f"#seat-{p}", name)
    if seed is not None:
        page.fill("#seed", str(seed))
    page.click("#start")
    page.wait_for_function("() => S.data !== null", timeout=WAIT_MS)


def hand_over(watched: Watched) -> None:
    """Pass the hand-over screen of a hot-seat game (it opens the game, too)."""
    page = watched.page
    page.wait_for_function("() => !document.getElementById('handover').hidden || S.data.moves.length > 0",
                           timeout=WAIT_MS)
    if not page.locator("#handover").is_hidden():
        assert page.locator(".hand").count() == 0, "the hand-over screen shows a hand"
        page.click("#handover-ready")


def wait_for_turn(watched: Watched, step: int) -> Any:
    """Wait until the game is over or a person may move at a later step than ``step`` (or
    the hand-over screen asks for the next person)."""
    watched.page.wait_for_function(
        f"""() => !document.getElementById('handover').hidden || (S.data && (S.data.over ||
             (S.data.moves.length > 0 && !S.data.waiting && S.data.step > {step})))""", timeout=WAIT_MS)
    return watched.data()


def click_a_move(watched: Watched, data: Any, turn: int) -> None:
    """Choose a move the way a person does: a card of the hand first in the card game's play
    step, dice to re-roll in the dice game's first step, else one of the move buttons."""
    page = watched.page
    if data["phase"] == "play" and data["game"] == "keltis":
        cards = page.locator("#hands button.card")
        cards.nth(turn % cards.count()).click()
        assert page.locator("#moves .move-card").count() == 1  # only the chosen card's moves
    elif data["phase"] == "reroll" and turn % 2:
        page.locator("g.die").nth(turn % 5).click()
    buttons = page.locator("#moves button.move")
    buttons.nth(turn % buttons.count()).click()


def play_to_the_end(watched: Watched, server: Server, check_dom: bool = True) -> Any:
    page = watched.page
    data = wait_for_turn(watched, -1)
    turn = 0
    while not data["over"]:
        if not page.locator("#handover").is_hidden():
            assert page.locator(".hand").count() == 0, "the hand-over screen shows a hand"
            page.click("#handover-ready")
            data = wait_for_turn(watched, -1)
            continue
        if check_dom:
            leaks = dom_leaks(watched, server)
            assert not leaks, leaks
        if turn == 2:  # saved on the server mid-game: the answer is checked like every other
            page.click("#save")
            page.wait_for_function("() => !document.getElementById('saved').hidden", timeout=WAIT_MS)
        click_a_move(watched, data, turn)
        turn += 1
        data = wait_for_turn(watched, data["step"])
    return data


# ---------------------------------------------------------------------- play
@pytest.mark.slow
@pytest.mark.parametrize(("game", "players"), [("keltis", 2), ("dice", 3)])
def test_a_person_clicks_through_a_whole_game_against_random_and_never_sees_a_hidden_card(page, server, game,
                                                                                           players):
    start(page, game, players, ["human"] + ["random"] * (players - 1), seed=21)
    end = play_to_the_end(page, server)
    assert "game over" in page.page.inner_text("#status") and end["over"]
    assert page.checked > 20  # the responses were checked while the person played
    with page.page.expect_download() as download:
        page.page.click("#save")
    from keltis_env.core.game import load_record

    record = load_record(json.loads(Path(download.value.path()).read_text()))
    assert record.replay().scores() == end["scores"]


def test_saving_an_unfinished_game_in_the_page_keeps_its_deal_on_the_server(page, server):
    start(page, "keltis", 2, ["human", "random"], seed=31)
    data = wait_for_turn(page, -1)
    checked = page.checked
    page.page.click("#save")
    page.page.wait_for_function("() => !document.getElementById('saved').hidden", timeout=WAIT_MS)
    name = f"keltis-{data['id']}.json"
    assert f"Saved on the server as {name}" in page.page.inner_text("#saved")
    assert page.checked > checked and not page.downloads  # the answer was checked; nothing came to the page
    from keltis_env.core.game import load_record

    record = load_record(json.loads((server.saves / name).read_text()))
    assert record.seed == 31 and len(record.actions) == data["step"]


@pytest.mark.slow
def test_hot_seat_play_hands_over_between_the_persons_seats(page, server):
    start(page, "keltis", 3, ["human", "human", "random"], seed=8)
    seen, step = set(), -1
    for turn in range(12):
        data = wait_for_turn(page, step)
        if not page.page.locator("#handover").is_hidden():
            assert page.page.locator(".hand").count() == 0, "the hand-over screen shows a hand"
            page.page.click("#handover-ready")
            continue
        seen.add(data["viewer"])
        assert not dom_leaks(page, server)
        click_a_move(page, data, turn)
        step = data["step"]
    assert seen == {0, 1}


def test_the_page_check_finds_another_seats_hand_in_the_page(page, server):
    start(page, "keltis", 2, ["human", "random"], seed=4)
    wait_for_turn(page, -1)
    assert not dom_leaks(page, server)
    other = sorted(server.session(page.data()["id"]).state.hands[1])
    page.page.evaluate("cards => document.getElementById('hands').append(KB.hand(cards, 1, 'theirs'))", other)
    assert any("a hand of seat 1" in problem for problem in dom_leaks(page, server))


def test_the_card_games_turn_shows_its_step_and_the_chosen_cards_moves(page, server):
    start(page, "keltis", 2, ["human", "human"], seed=3)
    hand_over(page)
    data = wait_for_turn(page, -1)
    assert "Step 1 of your turn" in page.page.inner_text("#turn-help")
    first = page.page.locator("#hands button.card").first
    first.click()
    card = int(first.get_attribute("data-card") or -1)
    from keltis_env.games.keltis.constants import card_name

    texts = page.page.eval_on_selector_all("#moves button.move", "els => els.map(e => e.title)")
    assert texts and all(card_name(card) in t for t in texts)
    page.page.locator("#moves button.move").first.click()
    page.page.wait_for_function(f"() => S.data.step > {data['step']}", timeout=WAIT_MS)
    assert "Step 2 of your turn" in page.page.inner_text("#turn-help")
    assert page.page.locator("#moves button.move", has_text="draw deck").count() == 1


# ---------------------------------------------------------------------- watch
@pytest.mark.slow
def test_watching_agents_runs_at_the_chosen_speed_and_pauses_and_steps(page, server):
    p = page.page
    p.select_option("#game", "dice")
    p.select_option("#players", "2")
    p.click("#all-agents")
    p.select_option("#seat-0", "random")
    p.select_option("#seat-1", "random")
    p.click("#start")
    p.wait_for_function("() => S.data !== null", timeout=WAIT_MS)
    p.fill("#speed", "50")
    p.dispatch_event("#speed", "input")
    assert p.inner_text("#speed-text") == "0.05 s a move"
    p.wait_for_function("() => S.data && S.data.step >= 4", timeout=WAIT_MS)
    assert not p.locator("#watch-controls").is_hidden() and p.locator("#move-form").is_hidden()
    p.click("#pause")
    p.wait_for_timeout(300)
    paused = page.data()["step"]
    p.wait_for_timeout(600)
    assert page.data()["step"] == paused
    p.click("#step")
    p.wait_for_function(f"() => S.data.step === {paused + 1}", timeout=WAIT_MS)
    p.click("#pause")  # play on
    p.wait_for_function("() => S.data.over", timeout=60_000)
    assert "game over" in p.inner_text("#status")


def test_an_agent_that_raises_ends_the_watched_game_with_a_message(page, server, folder):
    spec = f"py:{folder / 'my_agents.py'}:Raises"
    p = page.page
    p.select_option("#game", "keltis")
    p.select_option("#players", "2")
    p.select_option("#seat-0", spec)
    p.select_option("#seat-1", "random")
    p.click("#start")
    p.wait_for_function("() => S.data && S.data.over", timeout=WAIT_MS)
    assert "raised ValueError: my agent is broken" in p.inner_text("#message")


# ---------------------------------------------------------------------- replay and analysis
def test_a_record_replays_forward_and_back_with_one_seats_view_or_the_full_state(page, server, folder):
    p = page.page
    p.click("#tab-replay")
    p.select_option("#record-select", "keltis-5.json")
    p.click("#open-record")
    p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
    last = page.data()["steps"]
    assert page.data()["step"] == last and p.locator(".hand").count() == 3  # the full state: every hand
    for button, expected in (("#back", last - 1), ("#back", last - 2), ("#forward", last - 1), ("#first", 0),
                             ("#forward", 1), ("#last", last)):
        p.click(button)
        p.wait_for_function(f"() => S.data.step === {expected}", timeout=WAIT_MS)
        assert f"position {expected} of {last}" in p.inner_text("#status")
    p.fill("#scrub", "10")
    p.dispatch_event("#scrub", "change")
    p.wait_for_function("() => S.data.step === 10", timeout=WAIT_MS)
    p.select_option("#viewer", "1")
    p.wait_for_function("() => S.data.viewer === 1", timeout=WAIT_MS)
    assert p.eval_on_selector_all(".hand", "els => els.map(e => e.dataset.seat)") == ["1"]
    p.select_option("#viewer", "full")
    p.wait_for_function("() => S.data.viewer === 'full'", timeout=WAIT_MS)
    assert p.locator(".hand").count() == 3
    p.click("#analyse")
    p.wait_for_selector("#analysis .analysis-search", timeout=WAIT_MS)
    assert f"Analysis for player {page.data()['to_move']}" in p.inner_text("#analysis")


def test_the_analysis_of_the_persons_move_shows_the_policys_probabilities_and_the_searchs_values(page, server):
    start(page, "keltis", 2, ["human", "random"], seed=4)
    wait_for_turn(page, -1)
    page.page.click("#analyse")
    page.page.wait_for_selector("#analysis .analysis-policy table", timeout=WAIT_MS)
    text = page.page.inner_text("#analysis")
    assert "Policy (ppo:policies/keltis_2p.zip)" in text and "value" in text and "Search (ismcts:" in text
    assert "%" in page.page.inner_text("#analysis .analysis-policy")


# ---------------------------------------------------------------------- errors
def test_each_error_the_page_meets_is_shown_in_one_line(page, server, folder, tmp_path):
    p = page.page
    start(page, "keltis", 2, ["human", "human"], seed=3)
    hand_over(page)
    wait_for_turn(page, -1)
    for typed, words in (("draw deck", "illegal move 'draw deck': drawing happens in the draw step"),
                         ("fly to the moon", "malformed action")):
        p.fill("#move-text", typed)
        p.click("#move-submit")
        p.wait_for_function("words => document.getElementById('error').textContent.includes(words)", arg=words,
                            timeout=WAIT_MS)
        assert page.data()["step"] == 0
    server.app.state.store.remove(page.data()["id"])  # closed meanwhile (it expired, or another tab closed it)
    p.locator("#moves button.move").first.click()
    p.wait_for_function("() => document.getElementById('error').textContent.includes('unknown game')",
                        timeout=WAIT_MS)
    p.click("#close")
    p.evaluate("() => { const o = document.querySelector('#seat-1 option[value=random]'); "
               "o.value = 'ppo:/etc/passwd'; document.getElementById('seat-1').value = 'ppo:/etc/passwd'; }")
    p.click("#start")
    p.wait_for_function("() => document.getElementById('error').textContent.includes('unknown agent')",
                        timeout=WAIT_MS)
    record = json.loads((folder / "keltis-5.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**record, "final_scores": [1, 2, 3]}))
    p.click("#tab-replay")
    p.set_input_files("#upload", str(bad))
    p.wait_for_function("() => document.getElementById('error').textContent.includes('not a valid game record')",
                        timeout=WAIT_MS)
    big = tmp_path / "big.json"
    big.write_text(" " * (2 * 1024 * 1024))
    p.set_input_files("#upload", str(big))
    p.wait_for_function("() => document.getElementById('error').textContent.includes('the limit is')",
                        timeout=WAIT_MS)
    assert "\n" not in page.error()


# ---------------------------------------------------------------------- games that last
def test_a_reload_back_and_a_second_tab_return_to_the_game(page, server):
    p = page.page
    assert "A chosen seed reveals the deal" in p.inner_text("#seed-note")
    start(page, "keltis", 2, ["human", "random"])
    data = wait_for_turn(page, -1)
    assert p.url == server.url + data["url"][1:]
    click_a_move(page, data, 0)
    data = wait_for_turn(page, data["step"])
    p.reload()
    p.wait_for_function(f"() => S.data && S.data.step === {data['step']} && S.data.moves.length > 0",
                        timeout=WAIT_MS)
    assert page.data()["id"] == data["id"] and page.data()["viewer"] == 0 and page.error() == ""
    p.click("#tab-new")
    assert p.url == server.url and not p.locator("#setup").is_hidden() and p.locator("#game-area").is_hidden()
    p.go_back()
    p.wait_for_function(f"() => S.data && S.data.id === {data['id']!r}", timeout=WAIT_MS)
    second = page.context.new_page()
    second.goto(server.url + data["url"][1:])
    second.wait_for_function(f"() => S.data && S.data.step === {data['step']} && S.data.moves.length > 0",
                             timeout=WAIT_MS)
    click_a_move(page, data, 1)  # a move in the first tab
    moved = wait_for_turn(page, data["step"])
    second.locator("#moves button.move").first.click()  # the second tab has not seen it
    second.wait_for_function(f"() => S.data.step === {moved['step']}", timeout=WAIT_MS)
    assert "moved on" in second.inner_text("#saved") and second.inner_text("#error") == ""
    assert page.data()["step"] == moved["step"] == len(server.session(data["id"]).match.actions)
    second.close()


def test_a_watched_games_link_in_another_browser_only_looks_at_it(page, server, browser):
    p = page.page
    p.select_option("#game", "dice")
    p.select_option("#players", "2")
    p.click("#all-agents")
    p.select_option("#seat-0", "random")
    p.select_option("#seat-1", "random")
    p.click("#start")
    p.wait_for_function("() => S.data !== null && S.data.kind === 'watch'", timeout=WAIT_MS)
    p.click("#pause")
    url = p.url
    other = browser.new_context()
    try:
        friend = other.new_page()
        friend.goto(url)
        friend.wait_for_function("() => S.data !== null", timeout=WAIT_MS)
        friend.wait_for_timeout(1500)
        assert friend.evaluate("() => S.yours") is False and friend.locator("#watch-controls").is_hidden()
        assert "Another browser runs this game" in friend.inner_text("#saved")
        assert friend.inner_text("#error") == ""
    finally:
        other.close()
    assert page.data()["id"] in server.app.state.store._sessions  # the friend's Close would not close it


def test_one_click_plays_one_move_and_step_clicks_queue(page, server):
    p = page.page
    start(page, "keltis", 2, ["human", "human"], seed=3)
    hand_over(page)
    wait_for_turn(page, -1)
    p.locator("#moves button.move").first.dblclick()
    p.wait_for_function("() => S.data.step === 1", timeout=WAIT_MS)
    p.wait_for_timeout(500)
    assert page.data()["step"] == 1 and page.error() == ""
    assert len(server.session(page.data()["id"]).match.actions) == 1
    p.fill("#move-text", "draw deck")  # the typed move's button waited for the click's move, and is back
    p.click("#move-submit")
    p.wait_for_function("() => S.data.step === 2", timeout=WAIT_MS)
    hand_over(page)  # the next person's turn
    p.click("#tab-replay")  # the tabs leave a game that is shown
    assert not p.locator("#replay-setup").is_hidden() and p.locator("#game-area").is_hidden()
    p.click("#tab-new")
    p.select_option("#game", "dice")
    p.select_option("#players", "2")
    p.click("#all-agents")
    p.select_option("#seat-0", "random")
    p.select_option("#seat-1", "random")
    p.click("#start")
    p.wait_for_function("() => S.data !== null && S.data.kind === 'watch'", timeout=WAIT_MS)
    p.click("#pause")
    p.wait_for_timeout(300)
    paused = page.data()["step"]
    for _ in range(3):
        p.click("#step")
    p.wait_for_function(f"() => S.data.step === {paused + 3}", timeout=WAIT_MS)
    p.wait_for_timeout(500)
    assert page.data()["step"] == paused + 3 and page.error() == ""


def test_a_replay_steps_with_the_arrow_keys_and_drops_the_analysis_of_the_position_left(page, server):
    p = page.page
    p.click("#tab-replay")
    p.select_option("#record-select", "keltis-5.json")
    p.click("#open-record")
    p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
    last = page.data()["steps"]
    assert p.inner_text("#first") == "|\u25c0" and p.inner_text("#last") == "\u25b6|"
    for key, expected in (("ArrowLeft", last - 1), ("Home", 0), ("ArrowRight", 1), ("End", last)):
        p.keyboard.press(key)
        p.wait_for_function(f"() => S.data.step === {expected}", timeout=WAIT_MS)
        assert p.url.endswith(f"?step={expected}")
    p.keyboard.press("Home")
    p.wait_for_function("() => S.data.step === 0", timeout=WAIT_MS)
    p.click("#analyse")
    p.wait_for_selector("#analysis .analysis-search", timeout=WAIT_MS)
    p.keyboard.press("ArrowRight")
    p.wait_for_function("() => S.data.step === 1", timeout=WAIT_MS)
    assert p.inner_text("#analysis") == ""
    p.reload()  # the position's address
    p.wait_for_function("() => S.data && S.data.step === 1", timeout=WAIT_MS)


def test_a_request_the_server_does_not_answer_is_retried_and_a_restart_is_named(browser, folder, tmp_path):
    saves = tmp_path / "saves"
    first = Server([], folder, saves=saves)
    watched = Watched(browser, first)
    second = None
    try:
        p = watched.page
        start(watched, "keltis", 2, ["human", "random"], seed=9)
        data = wait_for_turn(watched, -1)
        first.stop()
        click_a_move(watched, data, 0)
        p.wait_for_function("() => document.getElementById('error').textContent.includes('cannot be reached')",
                            timeout=WAIT_MS)
        second = Server([], folder, port=first.port, saves=saves)  # the same address and save folder
        wait_for_turn(watched, data["step"])
        p.wait_for_function("() => document.getElementById('saved').textContent.includes('server was restarted')",
                            timeout=WAIT_MS)
        assert watched.error() == "" and len(second.session(data["id"]).match.actions) > data["step"]
    finally:
        watched.close()
        if second is not None:
            second.stop()


# ---------------------------------------------------------------------- for players
def test_the_end_shows_the_winner_and_each_players_score_by_path_tiles_and_stones(page, server, folder):
    from keltis_env.core.game import load_record
    from keltis_env.games.keltis.constants import ROW_VALUES

    p = page.page
    p.click("#tab-replay")
    p.select_option("#record-select", "keltis-5.json")
    p.click("#open-record")
    p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
    end = load_record(json.loads((folder / "keltis-5.json").read_text())).replay()
    assert not p.locator("#result").is_hidden()
    rows = p.eval_on_selector_all("#result tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert rows[0] == ["player", "paths", "point tiles", "wishing stones", "total"] and len(rows) == 4
    best = max(end.scores())
    winners = [q for q in range(3) if end.scores()[q] == best]
    assert (f"Winner: player {winners[0]} (random) with {best} points" if len(winners) == 1 else
            "shared victory") in p.inner_text("#result .winner")
    for q, row in enumerate(rows[1:]):
        paths = sum(ROW_VALUES[r] for r in end.pos[q]) + (ROW_VALUES[end.pos[q][end.large[q]]] if end.large[q] >= 0
                                                          else 0)
        assert row[0] == f"player {q} (random)" and int(row[1]) == paths and int(row[2]) == end.tile_points[q]
        assert row[3].endswith(f"({end.wishing[q]} held)") and int(row[4]) == end.scores()[q]
        assert int(row[1]) + int(row[2]) + int(row[3].split()[0]) == int(row[4])
    p.keyboard.press("Home")
    p.wait_for_function("() => S.data.step === 0", timeout=WAIT_MS)
    assert p.locator("#result").is_hidden()


def test_the_rules_the_legend_and_the_agents_ratings_are_one_click_away(page, server):
    p = page.page
    p.select_option("#game", "keltis")
    p.select_option("#players", "2")
    options = p.eval_on_selector_all("#seat-1 option", "os => os.map(o => [o.value, o.textContent])")
    named = dict(options)
    assert "rating" in named["ppo:policies/keltis_2p.zip"] and "keltis-2p leaderboard" in named["heuristic"]
    p.click("#rules-open")
    p.wait_for_function("() => !document.getElementById('rules').hidden", timeout=WAIT_MS)
    assert "R9 Scoring" in p.inner_text("#rules-text") and "R11.5 Bonus squares" in p.inner_text("#rules-text")
    p.click("#rules-close")
    assert p.locator("#rules").is_hidden()
    start(page, "keltis", 2, ["human", "random"], seed=4)
    wait_for_turn(page, -1)
    p.click("#legend summary")
    assert "wishing stone" in p.inner_text("#legend") and p.locator("#legend [data-game=dice]").is_hidden()


def test_on_a_phone_the_moves_sit_right_under_the_hand(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        p = context.new_page()
        p.goto(server.url)
        p.wait_for_selector("#seat-1")
        p.select_option("#game", "keltis")
        p.select_option("#players", "2")
        p.select_option("#seat-1", "random")
        p.fill("#seed", "4")
        p.click("#start")
        p.wait_for_function("() => S.data && S.data.moves.length > 0", timeout=WAIT_MS)
        hand = p.locator("#hands .hand").bounding_box()
        moves = p.locator("#moves").bounding_box()
        assert hand and moves and 0 <= moves["y"] - (hand["y"] + hand["height"]) < 120, (hand, moves)
        assert p.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1  # nothing wider than the phone
    finally:
        context.close()


# ---------------------------------------------------------------------- analysis that teaches
def test_a_replays_review_draws_the_value_graph_and_marks_the_moves_and_the_analysis_the_move_played(
        page, server, folder, tmp_path):
    p = page.page
    record = write_record(tmp_path, game="dice", players=2, seed=3)
    p.click("#tab-replay")
    p.set_input_files("#upload", str(record))
    p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
    p.click("#review-game")
    p.wait_for_selector("#review svg.value-graph", timeout=WAIT_MS)
    assert p.locator("#review svg path[data-seat]").count() == 2
    assert "final reward" in p.inner_text("#review") or "final score" in p.inner_text("#review")
    marks = p.eval_on_selector_all("#log li", "els => els.map(e => e.className)")
    assert marks and all(m in ("agrees", "differs") for m in marks) and "differs" in marks
    p.keyboard.press("Home")
    p.wait_for_function("() => S.data.step === 0", timeout=WAIT_MS)
    p.click("#analyse")
    p.wait_for_selector("#analysis .analysis-search", timeout=WAIT_MS)
    played = page.data()["next"]
    assert p.locator("#analysis tr.played").count() >= 1
    assert f"{played} \u2190 played" in p.inner_text("#analysis .analysis-policy")
    assert "The value is" in p.inner_text("#analysis")


def test_play_from_here_starts_a_game_at_the_replays_position(page, server):
    p = page.page
    p.click("#tab-replay")
    p.select_option("#record-select", "keltis-5.json")
    p.click("#open-record")
    p.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
    p.fill("#scrub", "10")
    p.dispatch_event("#scrub", "change")
    p.wait_for_function("() => S.data.step === 10", timeout=WAIT_MS)
    seat = page.data()["to_move"]
    turn = page.data()["turn"]
    assert p.inner_text("#play-from-here") == f"Play from here (you: player {seat})"
    p.click("#play-from-here")
    p.wait_for_function("() => S.data.kind === 'play' && S.data.moves.length > 0", timeout=WAIT_MS)
    data = page.data()
    assert data["humans"] == [seat] and data["turn"] == turn and p.url == server.url + data["url"][1:]
    assert not dom_leaks(page, server)


# ---------------------------------------------------------------------- share and export
def test_a_finished_game_is_shared_replayed_and_exported_to_a_file_that_opens_offline(page, server, browser,
                                                                                      tmp_path):
    p = page.page
    p.select_option("#game", "dice")
    p.select_option("#players", "2")
    p.click("#all-agents")
    p.select_option("#seat-0", "random")
    p.select_option("#seat-1", "heuristic")
    p.fill("#seed", "6")
    p.click("#start")
    p.wait_for_function("() => S.data !== null", timeout=WAIT_MS)
    p.fill("#speed", "50")
    p.dispatch_event("#speed", "input")
    p.wait_for_function("() => S.data.over", timeout=60_000)
    game = page.data()
    assert not p.locator("#share").is_hidden() and p.input_value("#share-link") == server.url + game["url"][1:]
    with p.expect_download() as download:
        p.click("#export")
    saved = tmp_path / "replay.html"
    download.value.save_as(saved)
    p.click("#open-replay")
    p.wait_for_function("() => S.data.kind === 'replay'", timeout=WAIT_MS)
    assert page.data()["steps"] == game["step"] and p.url.endswith(f"?step={game['step']}")
    offline = browser.new_context(offline=True)  # no server, no network: the file alone
    try:
        viewer = offline.new_page()
        errors: list[str] = []
        viewer.on("pageerror", lambda exc: errors.append(str(exc)))
        viewer.goto(saved.as_uri())
        viewer.wait_for_selector("#board svg")
        assert f"position {game['step']} of {game['step']}" in viewer.inner_text("#status")
        assert "Winner" in viewer.inner_text("#result") or "shared victory" in viewer.inner_text("#result")
        viewer.keyboard.press("Home")
        assert "position 0 of" in viewer.inner_text("#status") and viewer.locator("#result").is_hidden()
        viewer.click("#forward")
        assert "position 1 of" in viewer.inner_text("#status")
        assert not errors, errors
    finally:
        offline.close()


# ---------------------------------------------------------------------- pictures for the docs
def screenshot(target: Path) -> None:
    """Play a few moves of a 3-player card game and save the page as ``target``; then a
    reviewed replay as ``<target>_replay.png`` and a phone's game as ``<target>_phone.png``."""
    import tempfile

    from playwright.sync_api import sync_playwright

    reason = missing()
    if reason is not None:
        raise SystemExit(f"cannot take the screenshot: {reason}")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        write_record(Path(tmp), game="dice", players=3, seed=5)
        serving = Server([], Path(tmp))
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 820})
            page.goto(serving.url)
            page.wait_for_selector("#seat-1")
            page.select_option("#players", "3")
            page.select_option("#seat-1", "heuristic")
            page.select_option("#seat-2", "random")
            page.fill("#seed", "12")
            page.click("#start")
            for turn in range(14):
                page.wait_for_function("() => S.data && S.data.moves.length > 0 && !S.data.waiting", timeout=WAIT_MS)
                step = page.evaluate("() => S.data.step")
                moves = page.locator("#moves button.move")
                moves.nth(turn % moves.count()).click()
                page.wait_for_function(f"() => S.data.step > {step}", timeout=WAIT_MS)
            page.wait_for_function("() => S.data.moves.length > 0 && !S.data.waiting", timeout=WAIT_MS)
            page.locator("#hands button.card").nth(2).click()
            page.click("#analyse")
            page.wait_for_selector("#analysis .analysis-search", timeout=WAIT_MS)
            page.screenshot(path=str(target), full_page=False)
            page.click("#tab-replay")
            page.select_option("#record-select", "dice-5.json")
            page.click("#open-record")
            page.wait_for_function("() => S.data && S.data.kind === 'replay'", timeout=WAIT_MS)
            page.click("#review-game")
            page.wait_for_selector("#review svg.value-graph", timeout=WAIT_MS)
            page.fill("#scrub", "30")
            page.dispatch_event("#scrub", "change")
            page.wait_for_function("() => S.data.step === 30", timeout=WAIT_MS)
            page.click("#analyse")
            page.wait_for_selector("#analysis .analysis-search", timeout=WAIT_MS)
            page.screenshot(path=str(target.with_name(f"{target.stem}_replay.png")), full_page=False)
            phone = chromium.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            phone.goto(serving.url)
            phone.wait_for_selector("#seat-1")
            phone.select_option("#seat-1", "heuristic")
            phone.fill("#seed", "12")
            phone.click("#start")
            phone.wait_for_function("() => S.data && S.data.moves.length > 0", timeout=WAIT_MS)
            phone.locator("#hands button.card").nth(1).click()
            phone.locator("#board").scroll_into_view_if_needed()
            phone.evaluate("() => window.scrollTo(0, document.getElementById('hands').offsetTop - 420)")
            phone.screenshot(path=str(target.with_name(f"{target.stem}_phone.png")), full_page=False)
        finally:
            serving.stop()
            chromium.close()
    print(f"wrote {target} and its _replay and _phone pictures")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/serve.png"))
